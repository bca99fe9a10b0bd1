// POOL2D with a large window (global pooling, e.g. the squeeze-and-excitation blocks of
// MobileNetV3-style models): pool2d.comp's geometry and arithmetic, but one work group of 64 per
// output element instead of one invocation, its window's pixels split among the 64 and the
// partial sums and maxima combined in shared memory. pool2d.comp walks the whole window in one
// invocation: on an H100 selfie segmentation's ten global poolings took 1.38 of its 2.26 ms
// (0.80 ms for one of them; `ks-bench --profile-nodes`); this shader is not timed on a GPU yet.
// p.count is the number of outputs; backend.c dispatches that many groups.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer X { STORE x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { STORE y[]; };

// Must match pc_pool in backend.c.
layout(push_constant) uniform P {
    uint count; // n * oh * ow * c
    int ih, iw, c, oh, ow, kh, kw, sh, sw, pt, pl, pb, pr;
    int kind; // 0 max, 1 average
    int count_include_pad;
    int act;
    float alpha;
} p;

#include "act.glsl"

shared float part_sum[64];
shared float part_max[64];

void main() {
    uint i = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (i >= p.count) return; // the whole group leaves
    uint t = gl_LocalInvocationID.x;
    int ch = int(i % uint(p.c));
    uint r = i / uint(p.c);
    int ox = int(r % uint(p.ow));
    r /= uint(p.ow);
    int oy = int(r % uint(p.oh));
    int n = int(r / uint(p.oh));
    int y0 = oy * p.sh - p.pt, x0 = ox * p.sw - p.pl;
    int py0 = max(y0, -p.pt), py1 = min(y0 + p.kh, p.ih + p.pb);
    int px0 = max(x0, -p.pl), px1 = min(x0 + p.kw, p.iw + p.pr);
    int vy0 = max(y0, 0), vy1 = min(y0 + p.kh, p.ih);
    int vx0 = max(x0, 0), vx1 = min(x0 + p.kw, p.iw);
    int vw = max(vx1 - vx0, 0);
    int valid = max(vy1 - vy0, 0) * vw;
    int padded = (py1 - py0) * (px1 - px0);
    float sum = 0.0, mx = uintBitsToFloat(0xff800000u); // -inf
    for (int k = int(t); k < valid; k += 64) {
        int iy = vy0 + k / vw, ix = vx0 + k % vw;
        float v = float(x[uint(((n * p.ih + iy) * p.iw + ix) * p.c + ch)]);
        sum += v;
        if (v > mx) mx = v; // a NaN never wins, as on the CPU
    }
    part_sum[t] = sum;
    part_max[t] = mx;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
        if (t < s) {
            part_sum[t] += part_sum[t + s];
            if (part_max[t + s] > part_max[t]) part_max[t] = part_max[t + s];
        }
        barrier();
    }
    if (t != 0u) return;
    float res = 0.0;
    if (valid > 0)
        res = p.kind == 0 ? part_max[0]
                          : part_sum[0] / float(p.count_include_pad != 0 ? padded : valid);
    y[i] = ks_act_store(res, p.act, p.alpha);
}
