// CONV2D on F32, direct: NHWC input, OHWI weights [Co, KH, KW, Ci/groups], any stride, dilation,
// leading pads and groups (depthwise included), optional bias [Co], optional residual (y's
// shape, added before the activation) and the fused activation (PRELU with per-channel slopes).
// One invocation per output element; the geometry is the core's (ks__conv_geometry), computed
// on the host, so it matches the CPU reference kernel (engine/backends/cpu/ref/conv.c).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"
// Weights, bias and slopes are float in every variant (constants kept in fp32 by backend.c): BN
// folding leaves weights up to ~100 whose fp16 rounding alone moved yolox_nano's outputs by
// 0.4 % (image-like input) to 11 % (random input) relative L2. The products and sums are float.

layout(local_size_x = 64) in;

#ifdef KS_VEC4
layout(std430, set = 0, binding = 0) readonly buffer X { STORE4 x4[]; };
#else
layout(std430, set = 0, binding = 0) readonly buffer X { STORE x[]; };
#endif
layout(std430, set = 0, binding = 1) readonly buffer W { float w[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { float bias[]; };
#ifdef KS_VEC4
layout(std430, set = 0, binding = 3) readonly buffer Res { STORE4 res4[]; };
#else
layout(std430, set = 0, binding = 3) readonly buffer Res { STORE res[]; };
#endif
layout(std430, set = 0, binding = 4) readonly buffer Slope { float slope[]; };
#ifdef KS_VEC4
layout(std430, set = 0, binding = 5) writeonly buffer Y { STORE4 y4[]; };
#else
layout(std430, set = 0, binding = 5) writeonly buffer Y { STORE y[]; };
#endif

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

#ifdef KS_VEC4
// conv2d_dw4 (this file with -DKS_VEC4): depthwise with one channel per group (icg = ocg = 1) and
// channels a multiple of 4 (backend.c checks; tensors start 16-byte aligned on the device). One
// invocation computes four neighbouring channels of one output pixel: one vector load of x per
// tap instead of four, and the pixel's index arithmetic once for the four. The same taps in the
// same order per channel.
void main() {
    uint i = ks_index(); // (pixel, group of four channels)
    int c4 = p.oc / 4;
    if (i >= p.count / 4u) return;
    int cq = int(i % uint(c4));
    uint r = i / uint(c4);
    int ox = int(r % uint(p.ow));
    r /= uint(p.ow);
    int oy = int(r % uint(p.oh));
    int n = int(r / uint(p.oh));
    int co = 4 * cq, taps = p.kh * p.kw;
    vec4 acc = vec4(0.0);
    for (int ky = 0; ky < p.kh; ky++) {
        int iy = oy * p.sh - p.pt + ky * p.dh;
        if (iy < 0 || iy >= p.ih) continue;
        for (int kx = 0; kx < p.kw; kx++) {
            int ix = ox * p.sw - p.pl + kx * p.dw;
            if (ix < 0 || ix >= p.iw) continue;
            vec4 v = vec4(x4[uint(((n * p.ih + iy) * p.iw + ix) * c4 + cq)]);
            int t = ky * p.kw + kx;
            acc += v * vec4(w[co * taps + t], w[(co + 1) * taps + t], w[(co + 2) * taps + t],
                            w[(co + 3) * taps + t]);
        }
    }
    if ((p.flags & 1u) != 0u) acc += vec4(bias[co], bias[co + 1], bias[co + 2], bias[co + 3]);
    if ((p.flags & 2u) != 0u) acc += vec4(res4[i]);
    vec4 al = (p.flags & 4u) != 0u
                  ? vec4(slope[co], slope[co + 1], slope[co + 2], slope[co + 3])
                  : vec4(p.alpha);
    vec4 o;
    for (int e = 0; e < 4; e++) // as ks_act_store per channel (fp16 vectors take only vectors)
        o[e] = float(ks_act(AF(acc[e]), p.act, AF(al[e])));
    y4[i] = STORE4(o);
}
#else
void main() {
    uint i = ks_index();
    if (i >= p.count) return;
    int co = int(i % uint(p.oc));
    uint r = i / uint(p.oc);
    int ox = int(r % uint(p.ow));
    r /= uint(p.ow);
    int oy = int(r % uint(p.oh));
    int n = int(r / uint(p.oh));
    int ci0 = (co / p.ocg) * p.icg; // first input channel of the group
    float acc = 0.0;
    for (int ky = 0; ky < p.kh; ky++) {
        int iy = oy * p.sh - p.pt + ky * p.dh;
        if (iy < 0 || iy >= p.ih) continue;
        for (int kx = 0; kx < p.kw; kx++) {
            int ix = ox * p.sw - p.pl + kx * p.dw;
            if (ix < 0 || ix >= p.iw) continue;
            uint xi = uint(((n * p.ih + iy) * p.iw + ix) * p.ic + ci0);
            uint wi = uint(((co * p.kh + ky) * p.kw + kx) * p.icg);
            for (int c = 0; c < p.icg; c++)
                acc += float(x[xi + uint(c)]) * w[wi + uint(c)];
        }
    }
    if ((p.flags & 1u) != 0u) acc += bias[co];
    if ((p.flags & 2u) != 0u) acc += float(res[i]);
    float al = (p.flags & 4u) != 0u ? slope[co] : p.alpha;
    y[i] = ks_act_store(acc, p.act, al);
}
#endif
