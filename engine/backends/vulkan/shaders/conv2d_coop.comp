// CONV2D with one group as an implicit GEMM on cooperative matrices (VK_NV_cooperative_matrix:
// the tensor cores of NVIDIA GPUs), for the fp16 arithmetic mode only (built only as the _f16
// variant). A candidate of measured tuning (backend.c tune_steps) beside conv2d_gemm.comp and
// conv2d.comp where the device reports 16 x 8 x 16 fp16 products with fp32 sums in subgroups of
// 32; not the cost model's pick (docs/vulkan.md, "Cooperative matrices").
//
// The tiling of conv2d_gemm.comp: a group of 64 invocations (two subgroups) per 32 x 32 output
// tile (pixels x channels), K in chunks of 16 staged in shared memory, the same operands, push
// constants and epilogue. The chunk is staged as fp16: the im2col rows row-major (A, 32 x 16) and
// the weights column-major (B, 16 x 32), both written by neighbouring invocations at neighbouring
// k. Each subgroup then multiplies its 16 rows of A with the four 16 x 8 column blocks of B into
// four fp32 accumulators (coopMatMulAddNV). The products of fp16 values are exact in fp32 and
// every sum stays fp32 (docs/vulkan.md, "Precision"); the weights are rounded to fp16 on staging,
// as the fp16 arithmetic mode allows. At the end the accumulators go through shared memory to the
// per-element epilogue: bias, residual, fused activation, one store per element, neighbouring
// invocations writing neighbouring channels.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#include "prec.glsl"

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer X { STORE x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { float w[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, set = 0, binding = 3) readonly buffer Res { STORE res[]; };
layout(std430, set = 0, binding = 4) readonly buffer Slope { float slope[]; };
layout(std430, set = 0, binding = 5) writeonly buffer Y { STORE y[]; };

// Must match pc_conv in backend.c.
layout(push_constant) uniform P {
    uint count; // n * oh * ow * oc
    int ih, iw, ic, oh, ow, oc;
    int kh, kw, icg, ocg;
    int sh, sw, dh, dw, pt, pl;
    int act;
    uint flags; // 1 bias, 2 residual, 4 slopes
    float alpha;
} p;

#include "act.glsl"

const int TM = 32; // pixels per tile
const int TN = 32; // output channels per tile
const int KC = 16; // k per chunk
shared float16_t xs[TM * KC]; // A: row m at m * KC
shared float16_t ws[TN * KC]; // B column-major: column n at n * KC
shared float cs[TM * TN];     // the tile's sums, row-major

void main() {
    int tid = int(gl_LocalInvocationID.x);
    int m_total = int(p.count / uint(p.oc));
    int tiles_n = (p.oc + TN - 1) / TN;
    uint tile = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    int m0 = int(tile / uint(tiles_n)) * TM, n0 = int(tile % uint(tiles_n)) * TN;
    if (m0 >= m_total) return; // the dispatch's spare groups: the whole group leaves

    // Staging: invocation tid loads k = k0 + kl of rows rl + 4s (s = 0..7) of both tiles.
    int kl = tid % KC, rl = tid / KC;
    int oy0[8], ox0[8], nrow[8]; // per staged pixel: its window's corner; nrow -1: past M
    for (int s = 0; s < 8; s++) {
        int m = m0 + rl + 4 * s;
        nrow[s] = -1;
        if (m < m_total) {
            int ox = m % p.ow, r = m / p.ow;
            oy0[s] = (r % p.oh) * p.sh - p.pt;
            ox0[s] = ox * p.sw - p.pl;
            nrow[s] = (r / p.oh) * p.ih;
        }
    }
    int k_total = p.kh * p.kw * p.icg;
    uint sg = uint(tid) / 32u; // this subgroup's 16 rows of the tile
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> acc[4];
    for (int j = 0; j < 4; j++)
        acc[j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);

    for (int k0 = 0; k0 < k_total; k0 += KC) {
        int k = k0 + kl;
        bool kin = k < k_total;
        int c = k % p.icg, t = k / p.icg;
        int dy = (t / p.kw) * p.dh, dx = (t % p.kw) * p.dw;
        for (int s = 0; s < 8; s++) {
            float16_t v = float16_t(0.0);
            int iy = oy0[s] + dy, ix = ox0[s] + dx;
            if (kin && nrow[s] >= 0 && iy >= 0 && iy < p.ih && ix >= 0 && ix < p.iw)
                v = float16_t(x[uint(((nrow[s] + iy) * p.iw + ix) * p.ic + c)]);
            xs[(rl + 4 * s) * KC + kl] = v;
            int co = n0 + rl + 4 * s;
            ws[(rl + 4 * s) * KC + kl] =
                kin && co < p.oc ? float16_t(w[uint(co * k_total + k)]) : float16_t(0.0);
        }
        barrier();
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a;
        coopMatLoadNV(a, xs, sg * 16u * uint(KC), uint(KC), false);
        for (int j = 0; j < 4; j++) {
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> b;
            coopMatLoadNV(b, ws, uint(j * 8 * KC), uint(KC), true);
            acc[j] = coopMatMulAddNV(a, b, acc[j]);
        }
        barrier();
    }
    for (int j = 0; j < 4; j++)
        coopMatStoreNV(acc[j], cs, sg * 16u * uint(TN) + uint(j * 8), uint(TN), false);
    barrier();

    for (int i = 0; i < (TM * TN) / 64; i++) {
        int e = tid + 64 * i;
        int m = m0 + e / TN, co = n0 + e % TN;
        if (m >= m_total || co >= p.oc) continue;
        uint o = uint(m) * uint(p.oc) + uint(co);
        float v = cs[e];
        if ((p.flags & 1u) != 0u) v += bias[co];
        if ((p.flags & 2u) != 0u) v += float(res[o]);
        float al = (p.flags & 4u) != 0u ? slope[co] : p.alpha;
        y[o] = ks_act_store(v, p.act, al);
    }
}
