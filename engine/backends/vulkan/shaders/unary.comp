// RELU, RELU6, SIGMOID, TANH, HARD_SWISH on F32: y = act(x), the op given as its ks__act code.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };

// Must match pc_unary in backend.c.
layout(push_constant) uniform P {
    uint count;
    int act;
    float alpha;
} p;

#include "act.glsl"

void main() {
    uint i = ks_index();
    if (i >= p.count) return;
    y[i] = ks_act(x[i], p.act, p.alpha);
}
