// MediaPipe's TransformLandmarks (MP_TRANSFORM_LANDMARKS, engine/src/ops.inc) on F32: one
// invocation per landmark of D values, x' = m0 x + m1 y + m3 s, y' = m4 x + m5 y + m7 s, z' = z,
// in the CPU reference's operation order (engine/backends/cpu/ref/mediapipe.c dot4), each step
// rounded to float (`precise`: no fused multiply-add). fp32 mode only (backend.c plan_mp: the
// 4x4 matrix's translation would lose its fraction in fp16).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer X { STORE x[]; };
layout(std430, set = 0, binding = 1) readonly buffer M { STORE m[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { STORE y[]; };

// Must match pc_mp in backend.c.
layout(push_constant) uniform P {
    uint count; // landmarks
    int d;      // values per landmark (2 or 3)
    int ih, iw, c, oh, ow, half_pixel; // (TransformTensorBilinear's; unused here)
    float scale;
} p;

void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (i >= p.count) return;
    uint b = i * uint(p.d);
    float lx = float(x[b]), ly = float(x[b + 1u]);
    precise float tx = float(m[3]) * p.scale, ty = float(m[7]) * p.scale;
    precise float ox = float(m[0]) * lx + float(m[1]) * ly + float(m[2]) * 0.0 + tx * 1.0;
    precise float oy = float(m[4]) * lx + float(m[5]) * ly + float(m[6]) * 0.0 + ty * 1.0;
    y[b] = STORE(ox);
    y[b + 1u] = STORE(oy);
    if (p.d == 3) y[b + 2u] = x[b + 2u];
}
