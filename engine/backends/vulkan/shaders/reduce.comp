// REDUCE on F32 (mean, sum, max, min, prod) over any set of axes: one invocation per output
// element, which walks the reduced dims (up to 6 kept and 6 reduced index dims, extent-1 dims
// dropped). Accumulates in float (the CPU reference in double:
// engine/backends/cpu/ref/elementwise.c, reduce_run); NaN wins max and min, as there.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer X { STORE x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { STORE y[]; };

// Must match pc_reduce in backend.c.
layout(push_constant) uniform P {
    uint count; // output elements: the product of the kept dims
    int kind;   // 0 mean, 1 sum, 2 max, 3 min, 4 prod
    int nk, nr;
    int rcount; // elements per reduction
    int kdims[6];
    int ks[6];
    int rdims[6];
    int rs[6];
} p;

#include "act.glsl"

void main() {
    uint i = ks_index();
    if (i >= p.count) return;
    uint r = i;
    int base = 0;
    for (int d = p.nk - 1; d >= 0; d--) {
        base += int(r % uint(p.kdims[d])) * p.ks[d];
        r /= uint(p.kdims[d]);
    }
    float acc = p.kind == 4 ? 1.0
                : p.kind == 2 ? uintBitsToFloat(0xff800000u)
                : p.kind == 3 ? uintBitsToFloat(0x7f800000u)
                              : 0.0;
    for (int t = 0; t < p.rcount; t++) {
        int off = base, q = t;
        for (int d = p.nr - 1; d >= 0; d--) {
            off += (q % p.rdims[d]) * p.rs[d];
            q /= p.rdims[d];
        }
        float v = float(x[off]);
        if (p.kind == 2)
            acc = (v > acc || isnan(v)) ? v : acc;
        else if (p.kind == 3)
            acc = (v < acc || isnan(v)) ? v : acc;
        else if (p.kind == 4)
            acc *= v;
        else
            acc += v;
    }
    y[i] = STORE(p.kind == 0 ? acc / float(p.rcount) : acc);
}
