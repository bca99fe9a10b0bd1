/* Inline NEON helpers of the quantized kernels (arm/neon/q8_*.c, arm/neondot/q8_gemm.c): the
 * requantization and the clamped byte store. Not a published API; baseline AArch64 Advanced SIMD
 * only, so any arm/ directory may include it.
 *
 * The requantization is TFLite's MultiplyByQuantizedMultiplier, bit-exact:
 *   - the left shift wraps like the reference's int32 product;
 *   - SQRDMULH is gemmlowp's SaturatingRoundingDoublingHighMul: it computes
 *     sat((2 * x * m + 2^31) >> 32) = floor((x * m + 2^30) / 2^31), and gemmlowp's
 *     (x * m + nudge) / 2^31 with nudge 1 - 2^30 for negative products, truncated toward zero,
 *     is the same integer (for a negative numerator n, trunc(n / d) = floor((n + d - 1) / d));
 *     both saturate only INT32_MIN * INT32_MIN;
 *   - RoundingDivideByPOT rounds half away from zero, not half up as SRSHL does, so it is spelled
 *     out: x >> e plus one when the remainder x & mask exceeds (mask >> 1) + (x < 0).
 */
#ifndef KESTREL_CPU_ARM_NEON_Q8_NEON_H
#define KESTREL_CPU_ARM_NEON_Q8_NEON_H

#include <arm_neon.h>
#include <string.h>

#include "../../qgemm.h"

#define KS_Q8_INLINE static inline __attribute__((always_inline))

/* Per-lane requantization constants of 4 columns / channels: hdr points at the first lane's
 * header word, rows `stride` int32 apart (qgemm.h KS_Q8_HDR_*). */
KS_Q8_INLINE int32x4_t ks_q8_neon_requant(int32x4_t v, const int32_t *hdr, size_t stride) {
    const int32x4_t mult = vld1q_s32(hdr + KS_Q8_HDR_MULT * stride);
    const int32x4_t lsh = vld1q_s32(hdr + KS_Q8_HDR_LSHIFT * stride);
    const int32x4_t rsh = vld1q_s32(hdr + KS_Q8_HDR_RSHIFT * stride);
    const int32x4_t mask = vld1q_s32(hdr + KS_Q8_HDR_RMASK * stride);
    v = vshlq_s32(v, lsh);
    const int32x4_t high = vqrdmulhq_s32(v, mult);
    const int32x4_t rem = vandq_s32(high, mask);
    const int32x4_t thr = vsubq_s32(vshrq_n_s32(mask, 1), vshrq_n_s32(high, 31));
    const int32x4_t res = vshlq_s32(high, vnegq_s32(rsh));
    return vsubq_s32(res, vreinterpretq_s32_u32(vcgtq_s32(rem, thr)));
}

/* Adds the output zero point, clamps to [lo, hi] (inside the output dtype, so the narrowing below
 * is exact for U8 and I8 alike) and returns the 16 low bytes of v0..v3. */
KS_Q8_INLINE uint8x16_t ks_q8_neon_pack16(int32x4_t v0, int32x4_t v1, int32x4_t v2, int32x4_t v3,
                                          const ks__q8_epilogue *ep) {
    const int32x4_t zp = vdupq_n_s32(ep->out_zp);
    const int32x4_t lo = vdupq_n_s32(ep->lo), hi = vdupq_n_s32(ep->hi);
    v0 = vminq_s32(vmaxq_s32(vaddq_s32(v0, zp), lo), hi);
    v1 = vminq_s32(vmaxq_s32(vaddq_s32(v1, zp), lo), hi);
    v2 = vminq_s32(vmaxq_s32(vaddq_s32(v2, zp), lo), hi);
    v3 = vminq_s32(vmaxq_s32(vaddq_s32(v3, zp), lo), hi);
    const int16x8_t h01 = vcombine_s16(vmovn_s32(v0), vmovn_s32(v1));
    const int16x8_t h23 = vcombine_s16(vmovn_s32(v2), vmovn_s32(v3));
    return vreinterpretq_u8_s8(vcombine_s8(vmovn_s16(h01), vmovn_s16(h23)));
}

/* Same for 8 lanes. */
KS_Q8_INLINE uint8x8_t ks_q8_neon_pack8(int32x4_t v0, int32x4_t v1, const ks__q8_epilogue *ep) {
    const int32x4_t zp = vdupq_n_s32(ep->out_zp);
    const int32x4_t lo = vdupq_n_s32(ep->lo), hi = vdupq_n_s32(ep->hi);
    v0 = vminq_s32(vmaxq_s32(vaddq_s32(v0, zp), lo), hi);
    v1 = vminq_s32(vmaxq_s32(vaddq_s32(v1, zp), lo), hi);
    return vreinterpret_u8_s8(vmovn_s16(vcombine_s16(vmovn_s32(v0), vmovn_s32(v1))));
}

/* Stores the first n (<= 16) bytes of b. */
KS_Q8_INLINE void ks_q8_neon_store16(void *dst, uint8x16_t b, size_t n) {
    if (n == 16) {
        vst1q_u8((uint8_t *)dst, b);
    } else {
        uint8_t tmp[16];
        vst1q_u8(tmp, b);
        memcpy(dst, tmp, n);
    }
}

/* Stores the first n (<= 8) bytes of b. */
KS_Q8_INLINE void ks_q8_neon_store8(void *dst, uint8x8_t b, size_t n) {
    if (n == 8) {
        vst1_u8((uint8_t *)dst, b);
    } else {
        uint8_t tmp[8];
        vst1_u8(tmp, b);
        memcpy(dst, tmp, n);
    }
}

#endif /* KESTREL_CPU_ARM_NEON_Q8_NEON_H */
