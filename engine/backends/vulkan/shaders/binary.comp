// ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM on F32 with numpy broadcasting up to rank 4, then the
// node's fused activation. One invocation per output element (NHWC as stored on the host).
// Each operand is read through per-dimension element strides (0 along a broadcast dimension).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer A { STORE a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { STORE b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { STORE y[]; };

// Must match pc_binary in backend.c.
layout(push_constant) uniform P {
    uint count;      // output elements
    uint op;         // 0 add 1 sub 2 mul 3 div 4 maximum 5 minimum
    int act;
    float alpha;
    uint d1, d2, d3; // output dims 1..3 (rank padded to 4 on the left)
    uint sa0, sa1, sa2, sa3;
    uint sb0, sb1, sb2, sb3;
} p;

#include "act.glsl"

void main() {
    uint i = ks_index();
    if (i >= p.count) return;
    uint i3 = i % p.d3;
    uint r = i / p.d3;
    uint i2 = r % p.d2;
    r /= p.d2;
    uint i1 = r % p.d1;
    uint i0 = r / p.d1;
    AF va = AF(a[i0 * p.sa0 + i1 * p.sa1 + i2 * p.sa2 + i3 * p.sa3]);
    AF vb = AF(b[i0 * p.sb0 + i1 * p.sb1 + i2 * p.sb2 + i3 * p.sb3]);
    AF v;
    switch (p.op) {
    case 0u:
        v = va + vb;
        break;
    case 1u:
        v = va - vb;
        break;
    case 2u:
        v = va * vb;
        break;
    case 3u:
        v = va / vb;
        break;
    case 4u: // NaN in a wins, as on the CPU
        v = (va > vb || isnan(va)) ? va : vb;
        break;
    default:
        v = (va < vb || isnan(va)) ? va : vb;
        break;
    }
    y[i] = STORE(ks_act(v, p.act, AF(p.alpha)));
}
