/* Quantized GEMM microkernel for baseline AArch64 NEON, for cores without FEAT_DotProd such as
 * Cortex-A53 (qgemm.h): the 4 x 8 indirect GEMM behind quantized CONV2D (groups 1) and
 * FULLY_CONNECTED, U8 and I8, bit-exact with the reference.
 *
 * Why int16 (the driver's KR == 2 format: A = x - x_zp and W = w - w_zp as int16) and not
 * SMULL.8B + SADALP on bytes: products of 16-bit values are exact in the 32-bit SMLAL lanes, no
 * zero-point terms remain afterwards, and nothing saturates (two s8 x s8 products summed in an
 * int16 can reach 2 * 128 * 128, one past INT16_MAX). The instruction count is the same: each
 * SMLAL/SMLAL2 does 4 MACs either way.
 *
 * Layout: a k group is 2 int16 of A (one 32-bit broadcast) against 8 columns x 2 int16 of W
 * (2 vectors). SMLAL of the broadcast pair [a0 a1 a0 a1] with [w0k0 w0k1 w1k0 w1k1] accumulates
 * per-column even/odd k partial sums, which one ADDP per 4 columns joins at the end.
 * 16 accumulators + 4 A vectors + 2 weight vectors + 4 broadcasts: no spills. Per 4 k groups
 * of a tile: 4 A loads + 16 DUP + 8 weight loads + 64 SMLAL(2) for 256 MACs, about 0.36
 * instructions per MAC.
 */
#include "q8_neon.h"

#define MR 4
#define NR 8

#if defined(__clang__)
#define KS_UNROLL _Pragma("unroll")
#else
#define KS_UNROLL _Pragma("GCC unroll 16")
#endif

static void ks_q8_igemm__neon_4x8(size_t mr, size_t nc, size_t kb, size_t ks, const void *const *a,
                                  const void *w, void *c, size_t c_stride, const int32_t *rowsum,
                                  const ks__q8_epilogue *ep) {
    (void)rowsum; /* the int16 format has the zero points subtracted already */
    int32x4_t acc[MR][4];
    KS_UNROLL for (int r = 0; r < MR; r++) {
        KS_UNROLL for (int v = 0; v < 4; v++) acc[r][v] = vdupq_n_s32(0);
    }
    const int32_t *hdr = (const int32_t *)w;
    const int16_t *wp = (const int16_t *)((const char *)w + KS_Q8_HDR_ROWS * NR * 4);
    for (size_t t = 0; t < ks; t++) {
        const int16_t *ar[MR];
        KS_UNROLL for (int r = 0; r < MR; r++) ar[r] = (const int16_t *)a[t * MR + r];
#define KS_MLAL_GROUP(r, x)                                                                        \
    acc[r][0] = vmlal_s16(acc[r][0], vget_low_s16(w0), vget_low_s16(x));                           \
    acc[r][1] = vmlal_high_s16(acc[r][1], w0, x);                                                  \
    acc[r][2] = vmlal_s16(acc[r][2], vget_low_s16(w1), vget_low_s16(x));                           \
    acc[r][3] = vmlal_high_s16(acc[r][3], w1, x);
        size_t k = 0;
        /* 4 k groups per step: one 16-byte A load per row, each pair broadcast by DUP. */
        for (; k + 4 <= kb; k += 4) {
            int32x4_t va[MR];
            KS_UNROLL for (int r = 0; r < MR; r++) va[r] =
                vreinterpretq_s32_s16(vld1q_s16(ar[r] + 2 * k));
#define KS_MLAL_STEP(l)                                                                            \
    {                                                                                              \
        const int16x8_t w0 = vld1q_s16(wp), w1 = vld1q_s16(wp + 8);                                \
        wp += 16;                                                                                  \
        KS_UNROLL for (int r = 0; r < MR; r++) {                                                   \
            const int16x8_t x = vreinterpretq_s16_s32(vdupq_laneq_s32(va[r], l));                  \
            KS_MLAL_GROUP(r, x)                                                                    \
        }                                                                                          \
    }
            KS_MLAL_STEP(0)
            KS_MLAL_STEP(1)
            KS_MLAL_STEP(2)
            KS_MLAL_STEP(3)
#undef KS_MLAL_STEP
        }
        for (; k < kb; k++) {
            const int16x8_t w0 = vld1q_s16(wp), w1 = vld1q_s16(wp + 8);
            wp += 16;
            KS_UNROLL for (int r = 0; r < MR; r++) {
                /* LD1R of the k group's int16 pair (rows are 4-byte aligned: kcp is even). */
                const int16x8_t x =
                    vreinterpretq_s16_s32(vld1q_dup_s32((const int32_t *)(ar[r] + 2 * k)));
                KS_MLAL_GROUP(r, x)
            }
        }
#undef KS_MLAL_GROUP
    }
    const int32x4_t bias0 = vld1q_s32(hdr + KS_Q8_HDR_BIAS * NR);
    const int32x4_t bias1 = vld1q_s32(hdr + KS_Q8_HDR_BIAS * NR + 4);
    KS_UNROLL for (int r = 0; r < MR; r++) {
        if ((size_t)r >= mr) break;
        int32x4_t y0 = vaddq_s32(vpaddq_s32(acc[r][0], acc[r][1]), bias0);
        int32x4_t y1 = vaddq_s32(vpaddq_s32(acc[r][2], acc[r][3]), bias1);
        y0 = ks_q8_neon_requant(y0, hdr, NR);
        y1 = ks_q8_neon_requant(y1, hdr + 4, NR);
        ks_q8_neon_store8((char *)c + (size_t)r * c_stride, ks_q8_neon_pack8(y0, y1, ep), nc);
    }
}

static const ks__q8_gemm_arch k_gemm = {
    .mr = MR,
    .nr = NR,
    .kr = 2,
    .macs_per_cycle = 8.0,
    .ukernel = ks_q8_igemm__neon_4x8,
    .fused = ks__q8_fused_apply_scalar /* fused epilogues: the driver's scalar pass per tile */
};

static double gemm_cost(const ks__kernel_ctx *ctx) {
    return ks__q8_gemm_cost(ctx, &k_gemm);
}
static ks_status gemm_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__q8_gemm_plan(ctx, &k_gemm, packed_bytes_out);
}
static ks_status gemm_pack(ks__kernel_ctx *ctx) {
    return ks__q8_gemm_pack(ctx, &k_gemm);
}
static ks_status gemm_run(ks__kernel_ctx *ctx) {
    return ks__q8_gemm_run(ctx, &k_gemm);
}

const ks__impl ks_q8_conv2d__neon_4x8 = {
    "ks_q8_conv2d__neon_4x8", KS_OP_CONV2D, KS_ISA_NEON, gemm_cost, gemm_plan, gemm_pack, gemm_run};
const ks__impl ks_q8_fc__neon_4x8 = {"ks_q8_fc__neon_4x8",
                                     KS_OP_FULLY_CONNECTED,
                                     KS_ISA_NEON,
                                     gemm_cost,
                                     gemm_plan,
                                     gemm_pack,
                                     gemm_run};
