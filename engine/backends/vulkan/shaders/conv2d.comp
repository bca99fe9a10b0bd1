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
