// FULLY_CONNECTED and MATMUL on F32: y[b, i, j] = act(sum_k a[.] * w[.] + bias[j]), one
// invocation per output element. The operands are read through element strides (transposes,
// 1-D operands and FULLY_CONNECTED's [O, I] weights) and per batch dim offsets (0 along a
// broadcast dim), from the core's geometry (ks__matmul_geometry) as in the CPU reference kernel
// (engine/backends/cpu/ref/conv.c, fc_run and matmul_run).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer A { STORE a[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { STORE w[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { STORE bias[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { STORE y[]; };

// Must match pc_matmul in backend.c.
layout(push_constant) uniform P {
    uint count; // batches * m * n
    int m, n, k;
    int as_m, as_k, bs_k, bs_n;
    int batch_rank;
    uint flags; // 1 bias
    int act;
    float alpha;
    int bdims[4]; // per batch dim: extent, a's and w's element strides (0: broadcast)
    int as_b[4];
    int bs_b[4];
} p;

#include "act.glsl"

void main() {
    uint i = ks_index();
    if (i >= p.count) return;
    int j = int(i % uint(p.n));
    uint r = i / uint(p.n);
    int row = int(r % uint(p.m));
    uint bi = r / uint(p.m);
    int ao = row * p.as_m, bo = j * p.bs_n;
    for (int d = p.batch_rank - 1; d >= 0; d--) {
        int idx = int(bi % uint(p.bdims[d]));
        bi /= uint(p.bdims[d]);
        ao += idx * p.as_b[d];
        bo += idx * p.bs_b[d];
    }
    float acc = 0.0;
    for (int kk = 0; kk < p.k; kk++)
        acc += float(AF(a[ao + kk * p.as_k]) * AF(w[bo + kk * p.bs_k]));
    if ((p.flags & 1u) != 0u) acc += float(bias[j]);
    y[i] = ks_act_store(acc, p.act, p.alpha);
}
