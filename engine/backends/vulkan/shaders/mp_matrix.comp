// MediaPipe's Landmarks2TransformMatrix v2 (MP_LANDMARKS_TO_MATRIX, engine/src/ops.inc): one
// invocation computes the 4x4 crop matrix from the landmarks, step by step as the CPU reference
// (engine/backends/cpu/ref/mediapipe.c): the rotation from the two rotation landmarks, the
// bounding box of the landmark subset (a bitmask in the push constants) in the rotated frame, its
// centre rotated back, then shift * rotation * scale * shift. GLSL's atan, cos and sin are not
// libm's, so the matrix may differ from the CPU's in its last bits. fp32 mode only.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer X { STORE lm[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { STORE y[]; };

const int MAX_WORDS = 20;

// Must match pc_mp_matrix in backend.c.
layout(push_constant) uniform P {
    uint count; // 1
    int left, right, oh, ow, words;
    float target_rotation, scale_x, scale_y;
    uint bits[MAX_WORDS];
} p;

vec3 mat3_apply(float c, float s, vec3 v) { // rows (c, -s, 0), (s, c, 0), (0, 0, 1)
    precise float a = c * v.x + -s * v.y + 0.0 * v.z;
    precise float b = s * v.x + c * v.y + 0.0 * v.z;
    return vec3(a, b, v.z);
}

void mat4_mul(inout float a[16], float b[16]) {
    float r[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            precise float sum = 0.0;
            for (int k = 0; k < 4; k++)
                sum = sum + a[i * 4 + k] * b[k * 4 + j];
            r[i * 4 + j] = sum;
        }
    a = r;
}

void main() {
    if (gl_GlobalInvocationID.x != 0u) return;
    uint l = uint(3 * p.left), r = uint(3 * p.right);
    precise float dy = float(lm[r + 1u]) - float(lm[l + 1u]);
    precise float dx = float(lm[r]) - float(lm[l]);
    precise float rotation = p.target_rotation - atan(dy, dx);
    float c = cos(rotation), s = sin(rotation);
    float mx = 0.0, my = 0.0, nx = 0.0, ny = 0.0;
    bool first = true;
    for (int w = 0; w < p.words; w++) {
        uint bits = p.bits[w];
        for (int b = 0; b < 32; b++) {
            if ((bits & (1u << uint(b))) == 0u) continue;
            uint q = uint(3 * (32 * w + b));
            vec3 t = mat3_apply(c, s, vec3(float(lm[q]), float(lm[q + 1u]), 1.0));
            if (first) {
                mx = nx = t.x;
                my = ny = t.y;
                first = false;
            }
            mx = max(mx, t.x);
            my = max(my, t.y);
            nx = min(nx, t.x);
            ny = min(ny, t.y);
        }
    }
    precise float crop_w = mx - nx, crop_h = my - ny;
    precise float cx = (nx + mx) / 2.0, cy = (ny + my) / 2.0;
    vec3 crop = mat3_apply(cos(-rotation), sin(-rotation), vec3(cx, cy, 1.0));
    float t[16] = float[16](1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1);
    mat4_mul(t, float[16](1, 0, 0, crop.x, 0, 1, 0, crop.y, 0, 0, 1, 0, 0, 0, 0, 1));
    float nr = -rotation, cn = cos(nr), sn = sin(nr);
    mat4_mul(t, float[16](cn, -sn, 0, 0, sn, cn, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1));
    precise float sx = p.scale_x * crop_w / float(p.ow);
    precise float sy = p.scale_y * crop_h / float(p.oh);
    mat4_mul(t, float[16](sx, 0, 0, 0, 0, sy, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1));
    float shx = -(float(p.ow) / 2.0), shy = -(float(p.oh) / 2.0);
    mat4_mul(t, float[16](1, 0, 0, shx, 0, 1, 0, shy, 0, 0, 1, 0, 0, 0, 0, 1));
    for (int k = 0; k < 16; k++)
        y[k] = STORE(t[k]);
}
