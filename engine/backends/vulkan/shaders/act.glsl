// Fused activations (ks__act, engine/src/ir.h), as the CPU reference computes them
// (ks__act_apply, engine/backends/cpu/ref/registry.c). Included by the compute shaders.

const int KS_ACT_NONE = 0;
const int KS_ACT_RELU = 1;
const int KS_ACT_RELU_N1_TO_1 = 2;
const int KS_ACT_RELU6 = 3;
const int KS_ACT_TANH = 4;
const int KS_ACT_SIGMOID = 5;
const int KS_ACT_LEAKY_RELU = 6;
const int KS_ACT_HARD_SWISH = 7;
const int KS_ACT_SILU = 8;
const int KS_ACT_PRELU = 9;

// alpha: LEAKY_RELU's slope, or PRELU's slope of the output channel. In AF (prec.glsl): float,
// or float16_t in the fp16-arithmetic variant.
AF ks_act(AF x, int act, AF alpha) {
    const AF zero = AF(0.0), one = AF(1.0), six = AF(6.0);
    switch (act) {
    case KS_ACT_RELU:
        return x > zero ? x : zero;
    case KS_ACT_RELU_N1_TO_1:
        return x < -one ? -one : (x > one ? one : x);
    case KS_ACT_RELU6:
        return x < zero ? zero : (x > six ? six : x);
    // The transcendental ones evaluate in float in every variant: fp16's exp overflows beyond
    // 11.1, which would make sigmoid(-12) 0 instead of 6e-6 (a detector's empty anchors).
    case KS_ACT_TANH:
        // Drivers may build tanh from exponentials that overflow to inf/inf; |tanh| rounds to
        // 1 in float beyond 9.02 anyway.
        return AF(tanh(clamp(float(x), -10.0, 10.0)));
    case KS_ACT_SIGMOID:
        return AF(1.0 / (1.0 + exp(-float(x))));
    case KS_ACT_LEAKY_RELU:
    case KS_ACT_PRELU:
        return x >= zero ? x : alpha * x;
    case KS_ACT_HARD_SWISH: {
        AF r = x + AF(3.0);
        r = r < zero ? zero : (r > six ? six : r);
        return x * r / six;
    }
    case KS_ACT_SILU:
        return AF(float(x) / (1.0 + exp(-float(x))));
    default:
        return x;
    }
}

// The fused activation of a float result (a sum), as STORE: the common tail of the shaders. A
// macro: a function returning float16_t would need the Float16 capability, which the
// storage-only variant must not declare (16-bit storage allows loads, stores and conversions).
#define ks_act_store(v, act, alpha) STORE(ks_act(AF(v), act, AF(alpha)))

// The flat invocation index of a dispatch of (gx, gy, 1) groups of 64 (backend.c splits large
// dispatches over y: x is limited to maxComputeWorkGroupCount[0]).
uint ks_index() {
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
           gl_LocalInvocationID.x;
}
