// POOL2D on F32, NHWC: max or average (count_include_pad or not), global pooling included, then
// the fused activation. The geometry is the core's (ks__pool_geometry); the window is clipped as
// in the CPU reference kernel (engine/backends/cpu/ref/conv.c, pool_run): to the padded input
// for what count_include_pad counts, to the real input for what is read. A window that reads
// nothing gives 0.
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

void main() {
    uint i = ks_index();
    if (i >= p.count) return;
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
    int valid = max(vy1 - vy0, 0) * max(vx1 - vx0, 0);
    int padded = (py1 - py0) * (px1 - px0);
    float sum = 0.0, mx = uintBitsToFloat(0xff800000u); // -inf
    for (int iy = vy0; iy < vy1; iy++) {
        uint row = uint(((n * p.ih + iy) * p.iw) * p.c + ch);
        for (int ix = vx0; ix < vx1; ix++) {
            float v = float(x[row + uint(ix * p.c)]);
            sum += v;
            if (v > mx) mx = v; // a NaN never wins, as on the CPU
        }
    }
    float res = 0.0;
    if (valid > 0) res = p.kind == 0 ? mx : sum / float(p.count_include_pad != 0 ? padded : valid);
    y[i] = ks_act_store(res, p.act, p.alpha);
}
