/* Quantized GEMM microkernel for AArch64 with FEAT_DotProd (qgemm.h): the 4 x 16 indirect GEMM
 * behind quantized CONV2D (groups 1) and FULLY_CONNECTED, U8 and I8, bit-exact with the
 * reference.
 *
 * The driver's KR == 4 format is u8 A x s8 W, which SDOT cannot multiply (USDOT needs
 * FEAT_I8MM). So each 16-byte A load is flipped back to s8 (eor 0x80, i.e. a - 128) and SDOT
 * takes s8 x s8 products; ks__q8_gemm_pack_s8a folds the missing 128 * sum(W) into the colterm.
 * SDOT adds 4 products into each 32-bit lane without saturating, so the accumulators wrap like
 * the reference's exact sum modulo 2^32 (cost() refuses nodes whose true sum leaves int32).
 *
 * Why 4 x 16: 16 accumulators + 4 A vectors + the weight vectors in flight fit the 32 NEON
 * registers with room to spare, and one 16-byte A load per row feeds 4 k groups through
 * lane-indexed SDOT (vdotq_laneq_s32). Per 16 k of a tile: 4 A loads + 4 eor + 16 weight loads
 * + 64 SDOT (1024 MACs), about 0.086 instructions per MAC.
 */
#include "../neon/q8_neon.h"

#define MR 4
#define NR 16

/* Keeps each k step's 4 weight loads next to their SDOTs: hoisted all at once (GCC 12 does that
 * to all 16 of an unrolled 16-k step) they need 16 registers and push accumulators to the stack. */
#define KS_SCHED_BARRIER() __asm__ __volatile__("" ::: "memory")

#if defined(__clang__)
#define KS_UNROLL _Pragma("unroll")
#else
#define KS_UNROLL _Pragma("GCC unroll 16")
#endif

static void ks_q8_igemm__neondot_4x16(size_t mr, size_t nc, size_t kb, size_t ks,
                                      const void *const *a, const void *w, void *c, size_t c_stride,
                                      const int32_t *rowsum, const ks__q8_epilogue *ep) {
    int32x4_t acc[MR][4];
    KS_UNROLL for (int r = 0; r < MR; r++) {
        KS_UNROLL for (int v = 0; v < 4; v++) acc[r][v] = vdupq_n_s32(0);
    }
    const int8x16_t flip = vdupq_n_s8(INT8_MIN);
    const int32_t *hdr = (const int32_t *)w;
    const int8_t *wp = (const int8_t *)w + KS_Q8_HDR_ROWS * NR * 4;
    for (size_t t = 0; t < ks; t++) {
        const int8_t *ar[MR];
        KS_UNROLL for (int r = 0; r < MR; r++) ar[r] = (const int8_t *)a[t * MR + r];
        size_t k = kb;
        for (; k >= 4; k -= 4) {
            int8x16_t va[MR];
            KS_UNROLL for (int r = 0; r < MR; r++) {
                va[r] = veorq_s8(vld1q_s8(ar[r]), flip);
                ar[r] += 16;
            }
#define KS_DOT_STEP(l)                                                                             \
    {                                                                                              \
        const int8x16_t w0 = vld1q_s8(wp), w1 = vld1q_s8(wp + 16);                                 \
        const int8x16_t w2 = vld1q_s8(wp + 32), w3 = vld1q_s8(wp + 48);                            \
        wp += 64;                                                                                  \
        KS_SCHED_BARRIER();                                                                        \
        KS_UNROLL for (int r = 0; r < MR; r++) {                                                   \
            acc[r][0] = vdotq_laneq_s32(acc[r][0], w0, va[r], l);                                  \
            acc[r][1] = vdotq_laneq_s32(acc[r][1], w1, va[r], l);                                  \
            acc[r][2] = vdotq_laneq_s32(acc[r][2], w2, va[r], l);                                  \
            acc[r][3] = vdotq_laneq_s32(acc[r][3], w3, va[r], l);                                  \
        }                                                                                          \
    }
            KS_DOT_STEP(0)
            KS_DOT_STEP(1)
            KS_DOT_STEP(2)
            KS_DOT_STEP(3)
#undef KS_DOT_STEP
        }
        /* k tail, one 4-byte group at a time (rows hold exactly kb groups: no over-read). */
        for (; k > 0; k--) {
            int8x8_t va[MR];
            KS_UNROLL for (int r = 0; r < MR; r++) {
                int32_t word;
                memcpy(&word, ar[r], sizeof(word));
                va[r] = veor_s8(vreinterpret_s8_s32(vdup_n_s32(word)), vget_low_s8(flip));
                ar[r] += 4;
            }
            const int8x16_t w0 = vld1q_s8(wp), w1 = vld1q_s8(wp + 16);
            const int8x16_t w2 = vld1q_s8(wp + 32), w3 = vld1q_s8(wp + 48);
            wp += 64;
            KS_UNROLL for (int r = 0; r < MR; r++) {
                acc[r][0] = vdotq_lane_s32(acc[r][0], w0, va[r], 0);
                acc[r][1] = vdotq_lane_s32(acc[r][1], w1, va[r], 0);
                acc[r][2] = vdotq_lane_s32(acc[r][2], w2, va[r], 0);
                acc[r][3] = vdotq_lane_s32(acc[r][3], w3, va[r], 0);
            }
        }
    }
    int32x4_t bias[4], rowmul[4];
    KS_UNROLL for (int v = 0; v < 4; v++) {
        bias[v] = vld1q_s32(hdr + KS_Q8_HDR_BIAS * NR + v * 4);
        rowmul[v] = vld1q_s32(hdr + KS_Q8_HDR_ROWMUL * NR + v * 4);
    }
    KS_UNROLL for (int r = 0; r < MR; r++) {
        if ((size_t)r >= mr) break;
        int32x4_t y[4];
        KS_UNROLL for (int v = 0; v < 4; v++) {
            y[v] = vaddq_s32(acc[r][v], bias[v]);
            if (ep->use_rowsum) y[v] = vmlaq_n_s32(y[v], rowmul[v], rowsum[r]);
            y[v] = ks_q8_neon_requant(y[v], hdr + v * 4, NR);
        }
        ks_q8_neon_store16((char *)c + (size_t)r * c_stride,
                           ks_q8_neon_pack16(y[0], y[1], y[2], y[3], ep), nc);
    }
}

static const ks__q8_gemm_arch k_gemm = {
    .mr = MR,
    .nr = NR,
    .kr = 4,
    .macs_per_cycle = 32.0,
    .ukernel = ks_q8_igemm__neondot_4x16,
    .fused = ks__q8_fused_apply_scalar /* fused epilogues: the driver's scalar pass per tile */
};

static double gemm_cost(const ks__kernel_ctx *ctx) {
    return ks__q8_gemm_cost(ctx, &k_gemm);
}
static ks_status gemm_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__q8_gemm_plan(ctx, &k_gemm, packed_bytes_out);
}
static ks_status gemm_pack(ks__kernel_ctx *ctx) {
    return ks__q8_gemm_pack_s8a(ctx, &k_gemm);
}
static ks_status gemm_run(ks__kernel_ctx *ctx) {
    return ks__q8_gemm_run(ctx, &k_gemm);
}

const ks__impl ks_q8_conv2d__neondot_4x16 = {"ks_q8_conv2d__neondot_4x16",
                                             KS_OP_CONV2D,
                                             KS_ISA_NEON | KS_ISA_NEON_DOT,
                                             gemm_cost,
                                             gemm_plan,
                                             gemm_pack,
                                             gemm_run};
const ks__impl ks_q8_fc__neondot_4x16 = {"ks_q8_fc__neondot_4x16",
                                         KS_OP_FULLY_CONNECTED,
                                         KS_ISA_NEON | KS_ISA_NEON_DOT,
                                         gemm_cost,
                                         gemm_plan,
                                         gemm_pack,
                                         gemm_run};
