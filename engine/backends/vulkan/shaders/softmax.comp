// SOFTMAX and LOG_SOFTMAX on F32 along one axis: one invocation per row (outer * inner rows of
// `len` elements, `inner` apart), max-subtracted, the sum accumulated in float (the CPU reference
// accumulates in double: engine/backends/cpu/ref/elementwise.c, softmax_run).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer X { STORE x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { STORE y[]; };

// Must match pc_softmax in backend.c.
layout(push_constant) uniform P {
    uint count; // rows: outer * inner
    uint len, inner;
    int log_softmax;
    float beta;
} p;

#include "act.glsl"

void main() {
    uint i = ks_index();
    if (i >= p.count) return;
    uint base = (i / p.inner) * p.len * p.inner + i % p.inner;
    float mx = uintBitsToFloat(0xff800000u); // -inf
    for (uint k = 0u; k < p.len; k++) {
        float v = float(x[base + k * p.inner]);
        if (v > mx) mx = v;
    }
    float sum = 0.0;
    for (uint k = 0u; k < p.len; k++)
        sum += exp((float(x[base + k * p.inner]) - mx) * p.beta);
    float log_sum = log(sum), inv_sum = 1.0 / sum;
    for (uint k = 0u; k < p.len; k++) {
        float v = (float(x[base + k * p.inner]) - mx) * p.beta;
        y[base + k * p.inner] = STORE(p.log_softmax != 0 ? v - log_sum : exp(v) * inv_sum);
    }
}
