// POOL2D with a large window (global pooling, e.g. the squeeze-and-excitation blocks of
// MobileNetV3-style models): pool2d.comp's geometry and arithmetic, but one work group of 256
// per output element instead of one invocation, its window's pixels split among the 256 (each
// with four independent partial sums, so that four loads are in flight at once) and the
// partials combined. pool2d.comp walks the whole window in one invocation: on an H100 selfie
// segmentation's ten global poolings took 1.38 of its 2.26 ms; with a group of 64 and one
// partial per invocation, 0.104 ms, 0.038 of it the 128x128 window, a chain of 256 loads per
// invocation (docs/vulkan.md, "Subgroup reductions").
//
// Built twice (engine/CMakeLists.txt): pool2d_wide combines the partials in shared memory (a
// tree of 8 steps), pool2d_wide_sg (-DKS_SUBGROUP) within each subgroup first
// (subgroupAdd / subgroupMax: GL_KHR_shader_subgroup_arithmetic), then the subgroups' results in
// shared memory; backend.c takes it where the device lists subgroup arithmetic for compute
// shaders. The sums' order differs between the two, not their arithmetic (fp32 in every mode).
// p.count is the number of outputs; backend.c dispatches that many groups.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"
#ifdef KS_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

const uint WG = 256u;
layout(local_size_x = 256) in;

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

shared float part_sum[WG]; // per invocation, or (KS_SUBGROUP) per subgroup
shared float part_max[WG];

void main() {
    uint i = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (i >= p.count) return; // the whole group leaves
    uint t = gl_LocalInvocationID.x;
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
    int vw = max(vx1 - vx0, 0);
    int valid = max(vy1 - vy0, 0) * vw;
    int padded = (py1 - py0) * (px1 - px0);
    const float NEG_INF = uintBitsToFloat(0xff800000u);
    vec4 sum = vec4(0.0), mx = vec4(NEG_INF);
    // pixel k of the window, or (past its end) nothing: 0 to the sum, -inf to the maximum
    for (int k = int(t); k < valid; k += 4 * int(WG)) {
        vec4 v = vec4(0.0), m = vec4(NEG_INF);
        for (int j = 0; j < 4; j++) {
            int kj = k + j * int(WG);
            if (kj < valid) {
                int iy = vy0 + kj / vw, ix = vx0 + kj % vw;
                v[j] = float(x[uint(((n * p.ih + iy) * p.iw + ix) * p.c + ch)]);
                m[j] = v[j];
            }
        }
        sum += v;
        // a NaN never wins, as on the CPU: max() of a NaN operand is not defined in GLSL
        for (int j = 0; j < 4; j++)
            if (m[j] > mx[j]) mx[j] = m[j];
    }
    float s = (sum.x + sum.y) + (sum.z + sum.w);
    float mm = max(max(mx.x, mx.y), max(mx.z, mx.w)); // no NaN here
#ifdef KS_SUBGROUP
    s = subgroupAdd(s);
    mm = subgroupMax(mm);
    if (subgroupElect()) {
        part_sum[gl_SubgroupID] = s;
        part_max[gl_SubgroupID] = mm;
    }
    barrier();
    if (t != 0u) return;
    for (uint g = 1u; g < gl_NumSubgroups; g++) {
        s += part_sum[g];
        mm = max(mm, part_max[g]);
    }
#else
    part_sum[t] = s;
    part_max[t] = mm;
    barrier();
    for (uint h = WG / 2u; h > 0u; h >>= 1) {
        if (t < h) {
            part_sum[t] += part_sum[t + h];
            part_max[t] = max(part_max[t], part_max[t + h]);
        }
        barrier();
    }
    if (t != 0u) return;
    s = part_sum[0];
    mm = part_max[0];
#endif
    float res = 0.0;
    if (valid > 0) res = p.kind == 0 ? mm : s / float(p.count_include_pad != 0 ? padded : valid);
    y[i] = ks_act_store(res, p.act, p.alpha);
}
