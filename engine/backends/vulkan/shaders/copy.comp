// Data movement on F32, up to 6 index dims: y[dst] = act(x[src]) for every index i of `dims`,
// src = sbase + sum(i_d * ss_d), dst = dbase + sum(i_d * ds_d) (element strides; a source stride
// is negative for a slice that steps backwards). backend.c builds TRANSPOSE, SLICE, CONCAT and
// PACK (one dispatch per input), SPLIT and UNPACK (one per output), DEPTH_TO_SPACE and
// SPACE_TO_DEPTH from it, with strides from the core's geometry functions (shape_data.h).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer X { STORE x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { STORE y[]; };

// Must match pc_copy in backend.c.
layout(push_constant) uniform P {
    uint count;
    int rank, sbase, dbase, act;
    float alpha;
    int dims[6];
    int ss[6];
    int ds[6];
} p;

#include "act.glsl"

void main() {
    uint i = ks_index();
    if (i >= p.count) return;
    uint r = i;
    int s = p.sbase, t = p.dbase;
    for (int d = p.rank - 1; d >= 0; d--) {
        int k = int(r % uint(p.dims[d]));
        r /= uint(p.dims[d]);
        s += k * p.ss[d];
        t += k * p.ds[d];
    }
    // a plain copy stays a copy (no conversion); a select of 16-bit values would need Float16
    if (p.act == KS_ACT_NONE)
        y[t] = x[s];
    else
        y[t] = ks_act_store(float(x[s]), p.act, p.alpha);
}
