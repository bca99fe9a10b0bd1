// CONV2D with few outputs and a long reduction (K = KH * KW * Ci of 512 or more, at most 1024
// output elements, one tile of conv2d_gemm.comp: the heads that read a small map of many channels, e.g. UltraFace's
// last 3x3 convolutions over 256 channels at 4x5, K = 2304 for 120 and 240 outputs): conv2d.comp's
// geometry and arithmetic, but one work group of 64 per output element, its K products split
// among the 64 (consecutive channels, so neighbouring invocations read neighbouring values) and
// the partial sums combined in shared memory. The tiled GEMM (conv2d_gemm.comp) gives such a node
// one or two groups that walk K alone: on an H100 those two took 0.107 ms each, a quarter of
// UltraFace's GPU time (bench/gpu/results/2026-12-07-s29a-h100-profiles). Any groups (ci0 is the
// output channel's group's first input channel). p.count is the number of outputs; backend.c
// dispatches that many groups.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer X { STORE x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { float w[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, set = 0, binding = 3) readonly buffer Res { STORE res[]; };
layout(std430, set = 0, binding = 4) readonly buffer Slope { float slope[]; };
layout(std430, set = 0, binding = 5) writeonly buffer Y { STORE y[]; };

// Must match pc_conv in backend.c.
layout(push_constant) uniform P {
    uint count; // n * oh * ow * oc
    int ih, iw, ic, oh, ow, oc;
    int kh, kw, icg, ocg;
    int sh, sw, dh, dw, pt, pl;
    int act;
    uint flags; // 1 bias, 2 residual, 4 slopes
    float alpha;
} p;

#include "act.glsl"

shared float part[64];

void main() {
    uint i = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (i >= p.count) return; // the whole group leaves
    uint t = gl_LocalInvocationID.x;
    int co = int(i % uint(p.oc));
    uint r = i / uint(p.oc);
    int ox = int(r % uint(p.ow));
    r /= uint(p.ow);
    int oy = int(r % uint(p.oh));
    int n = int(r / uint(p.oh));
    int ci0 = (co / p.ocg) * p.icg;
    int k_total = p.kh * p.kw * p.icg;
    float acc = 0.0;
    for (int k = int(t); k < k_total; k += 64) {
        int tap = k / p.icg, c = k - tap * p.icg;
        int ky = tap / p.kw, kx = tap - ky * p.kw;
        int iy = oy * p.sh - p.pt + ky * p.dh, ix = ox * p.sw - p.pl + kx * p.dw;
        if (iy < 0 || iy >= p.ih || ix < 0 || ix >= p.iw) continue;
        acc += float(x[uint(((n * p.ih + iy) * p.iw + ix) * p.ic + ci0 + c)]) *
               w[uint(co * k_total + k)];
    }
    part[t] = acc;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
        if (t < s) part[t] += part[t + s];
        barrier();
    }
    if (t != 0u) return;
    float sum = part[0];
    if ((p.flags & 1u) != 0u) sum += bias[co];
    if ((p.flags & 2u) != 0u) sum += float(res[i]);
    float al = (p.flags & 4u) != 0u ? slope[co] : p.alpha;
    y[i] = ks_act_store(sum, p.act, al);
}
