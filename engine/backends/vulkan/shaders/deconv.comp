// CONV2D_TRANSPOSE on F32: NHWC input, weights [Co, KH, KW, Ci], any stride and padding mode,
// optional bias [Co] and residual (y's shape), then the fused activation. Written as a gather over
// the input pixels that reach each output pixel, as the CPU reference kernel does
// (engine/backends/cpu/ref/conv.c, tconv_run); the geometry is the core's (ks__tconv_geometry).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"
// Weights and bias are float in every variant, as in conv2d.comp.

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer X { STORE x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { float w[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, set = 0, binding = 3) readonly buffer Res { STORE res[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { STORE y[]; };

// Must match pc_conv in backend.c (dilations and groups unused: 1).
layout(push_constant) uniform P {
    uint count; // n * oh * ow * oc
    int ih, iw, ic, oh, ow, oc;
    int kh, kw, icg, ocg;
    int sh, sw, dh, dw, pt, pl;
    int act;
    uint flags; // 1 bias, 2 residual
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
    float acc = 0.0;
    for (int ky = 0; ky < p.kh; ky++) {
        int ty = oy + p.pt - ky; // == iy * stride_h
        if (ty < 0 || ty % p.sh != 0 || ty / p.sh >= p.ih) continue;
        int iy = ty / p.sh;
        for (int kx = 0; kx < p.kw; kx++) {
            int tx = ox + p.pl - kx;
            if (tx < 0 || tx % p.sw != 0 || tx / p.sw >= p.iw) continue;
            int ix = tx / p.sw;
            uint xi = uint(((n * p.ih + iy) * p.iw + ix) * p.ic);
            uint wi = uint(((co * p.kh + ky) * p.kw + kx) * p.icg);
            for (int c = 0; c < p.ic; c++)
                acc += float(x[xi + uint(c)]) * w[wi + uint(c)];
        }
    }
    if ((p.flags & 1u) != 0u) acc += bias[co];
    if ((p.flags & 2u) != 0u) acc += float(res[i]);
    y[i] = ks_act_store(acc, p.act, p.alpha);
}
