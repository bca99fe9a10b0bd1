// MediaPipe's TransformTensorBilinear (MP_TRANSFORM_TENSOR_BILINEAR, engine/src/ops.inc) on F32
// NHWC, batch 1: one invocation per output element. The source point of output pixel (ox, oy) is
// (m0 ox + m1 oy + m3, m4 ox + m5 oy + m7), with MediaPipe v2's pixel-centre correction of the
// translation when half_pixel is set; outside [0, W-1] x [0, H-1] the output is 0, else the
// bilinear mix of the four neighbours (a neighbour past the edge reads 0). The CPU reference
// (engine/backends/cpu/ref/mediapipe.c) forms the correction and the mix in double; here they are
// float (`precise`), which moves results by an ulp or so. fp32 mode only (backend.c plan_mp).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer X { STORE x[]; };
layout(std430, set = 0, binding = 1) readonly buffer M { STORE m[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { STORE y[]; };

// Must match pc_mp in backend.c.
layout(push_constant) uniform P {
    uint count; // oh * ow * c
    int d;      // (TransformLandmarks'; unused here)
    int ih, iw, c, oh, ow, half_pixel;
    float scale;
} p;

void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (i >= p.count) return;
    int ch = int(i % uint(p.c));
    int pix = int(i / uint(p.c));
    int ox = pix % p.ow, oy = pix / p.ow;
    float x0 = float(m[0]), x1 = float(m[1]), x2 = float(m[2]);
    float y0 = float(m[4]), y1 = float(m[5]), y2 = float(m[6]);
    precise float x3 = float(m[3]), y3 = float(m[7]);
    if (p.half_pixel != 0) {
        precise float cx = x0 * 0.5 + x1 * 0.5 - 0.5;
        precise float cy = y0 * 0.5 + y1 * 0.5 - 0.5;
        x3 = x3 + cx;
        y3 = y3 + cy;
    }
    precise float tx = x0 * float(ox) + x1 * float(oy) + x2 * 0.0 + x3 * 1.0;
    precise float ty = y0 * float(ox) + y1 * float(oy) + y2 * 0.0 + y3 * 1.0;
    if (!(tx >= 0.0 && tx <= float(p.iw - 1) && ty >= 0.0 && ty <= float(p.ih - 1))) {
        y[i] = STORE(0.0);
        return;
    }
    float fx = floor(tx), fy = floor(ty);
    int xa = int(fx), ya = int(fy);
    precise float right = tx - fx, lower = ty - fy;
    float q[4];
    for (int k = 0; k < 4; k++) {
        int yy = ya + (k >> 1), xx = xa + (k & 1);
        q[k] = (yy < p.ih && xx < p.iw) ? float(x[uint((yy * p.iw + xx) * p.c + ch)]) : 0.0;
    }
    precise float upper_v = (1.0 - right) * q[0] + right * q[1];
    precise float lower_v = (1.0 - right) * q[2] + right * q[3];
    precise float v = lower * lower_v + (1.0 - lower) * upper_v;
    y[i] = STORE(v);
}
