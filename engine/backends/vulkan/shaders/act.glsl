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

// alpha: LEAKY_RELU's slope, or PRELU's slope of the output channel.
float ks_act(float x, int act, float alpha) {
    switch (act) {
    case KS_ACT_RELU:
        return x > 0.0 ? x : 0.0;
    case KS_ACT_RELU_N1_TO_1:
        return x < -1.0 ? -1.0 : (x > 1.0 ? 1.0 : x);
    case KS_ACT_RELU6:
        return x < 0.0 ? 0.0 : (x > 6.0 ? 6.0 : x);
    case KS_ACT_TANH:
        // Drivers may build tanh from exponentials that overflow to inf/inf; |tanh| rounds to
        // 1 in float beyond 9.02 anyway.
        return tanh(clamp(x, -10.0, 10.0));
    case KS_ACT_SIGMOID:
        return 1.0 / (1.0 + exp(-x));
    case KS_ACT_LEAKY_RELU:
    case KS_ACT_PRELU:
        return x >= 0.0 ? x : alpha * x;
    case KS_ACT_HARD_SWISH: {
        float r = x + 3.0;
        r = r < 0.0 ? 0.0 : (r > 6.0 ? 6.0 : r);
        return x * r / 6.0;
    }
    case KS_ACT_SILU:
        return x / (1.0 + exp(-x));
    default:
        return x;
    }
}

// The flat invocation index of a dispatch of (gx, gy, 1) groups of 64 (backend.c splits large
// dispatches over y: x is limited to maxComputeWorkGroupCount[0]).
uint ks_index() {
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
           gl_LocalInvocationID.x;
}
