// Unary ops on F32: y = f(x). op: a ks__act code (RELU, RELU_N1_TO_1, RELU6, TANH, SIGMOID,
// LEAKY_RELU with slope alpha, HARD_SWISH) or one of the UN_* codes below, as the CPU reference
// computes them (engine/backends/cpu/ref/elementwise.c, unary_f).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer X { STORE x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { STORE y[]; };

// Must match pc_unary in backend.c.
layout(push_constant) uniform P {
    uint count;
    int op;
    float alpha; // LEAKY_RELU / ELU: alpha; CLIP: min; HARD_SIGMOID: alpha
    float beta;  // CLIP: max; HARD_SIGMOID: beta
} p;

#include "act.glsl"

// Must match UN_* in backend.c.
const int UN_EXP = 16;
const int UN_SQRT = 17;
const int UN_RSQRT = 18;
const int UN_ABS = 19;
const int UN_NEG = 20;
const int UN_FLOOR = 21;
const int UN_CEIL = 22;
const int UN_LOG = 23;
const int UN_CLIP = 24;
const int UN_ELU = 25;
const int UN_HARD_SIGMOID = 26;

void main() {
    uint i = ks_index();
    if (i >= p.count) return;
    // float: these are transcendental or exact (floor, abs...); only the fused-activation
    // branch (ks_act) uses fp16 arithmetic in that variant
    float v = float(x[i]), r;
    switch (p.op) {
    case UN_EXP:
        r = exp(v);
        break;
    case UN_SQRT:
        r = sqrt(v);
        break;
    case UN_RSQRT:
        r = 1.0 / sqrt(v);
        break;
    case UN_ABS:
        r = abs(v);
        break;
    case UN_NEG:
        r = -v;
        break;
    case UN_FLOOR:
        r = floor(v);
        break;
    case UN_CEIL:
        r = ceil(v);
        break;
    case UN_LOG:
        r = log(v);
        break;
    case UN_CLIP: // NaN passes through, as on the CPU
        r = v < p.alpha ? p.alpha : v;
        r = r > p.beta ? p.beta : r;
        break;
    case UN_ELU:
        r = v >= 0.0 ? v : p.alpha * (exp(v) - 1.0);
        break;
    case UN_HARD_SIGMOID:
        r = clamp(p.alpha * v + p.beta, 0.0, 1.0);
        break;
    default:
        r = float(ks_act(AF(v), p.op, AF(p.alpha)));
        break;
    }
    y[i] = STORE(r);
}
