/* The quantized ADD's input rescale in 32-bit lanes, for the AVX2 fused residual (q8_gemm.c) and
 * ADD/SUB kernel (q8_vadd.c): ks__quant_mul(v << 20, m, shift) for |v| <= 255 and no left shift
 * (the rescales' real multipliers are at most 1/2).
 *
 * SRDHM(v 2^20, m) = floor((v m 2^20 + 2^30) / 2^31) = floor((v m + 2^10) / 2^11), and with
 * m = mh 2^11 + ml (0 <= ml < 2^11) that is v mh + floor((v ml + 2^10) / 2^11): |v mh| < 2^28 and
 * |v ml + 2^10| < 2^20, so two 32-bit multiplies and an arithmetic shift give it exactly, instead
 * of two 64-bit products and their shuffles; then the reference's rounding right shift (rem >
 * mask / 2 + [h < 0] rounds up). Checked against the reference for every v and 200 000
 * multipliers (docs/kernels.md). */
#ifndef KESTREL_CPU_X86_AVX2_Q8_RESCALE_H
#define KESTREL_CPU_X86_AVX2_Q8_RESCALE_H

#include <immintrin.h>
#include <stdint.h>

typedef struct ks__q8_rescale {
    __m256i mh, ml, mask, half, right;
} ks__q8_rescale;

/* The constants of multiplier m (>= 0) and right shift r (0..31). */
static inline ks__q8_rescale ks__q8_rescale_make(int32_t m, int32_t r) {
    ks__q8_rescale q;
    int32_t mask = (int32_t)((1LL << r) - 1);
    q.mh = _mm256_set1_epi32(m >> 11);
    q.ml = _mm256_set1_epi32(m & 2047);
    q.mask = _mm256_set1_epi32(mask);
    q.half = _mm256_set1_epi32(mask >> 1);
    q.right = _mm256_set1_epi32(r);
    return q;
}

static inline __attribute__((always_inline)) __m256i ks__q8_rescale_apply(__m256i v,
                                                                          const ks__q8_rescale *q) {
    __m256i lowp = _mm256_add_epi32(_mm256_mullo_epi32(v, q->ml), _mm256_set1_epi32(1 << 10));
    __m256i high = _mm256_add_epi32(_mm256_mullo_epi32(v, q->mh), _mm256_srai_epi32(lowp, 11));
    __m256i rem = _mm256_and_si256(high, q->mask);
    __m256i thr = _mm256_sub_epi32(q->half, _mm256_srai_epi32(high, 31));
    __m256i res = _mm256_srav_epi32(high, q->right);
    return _mm256_sub_epi32(res, _mm256_cmpgt_epi32(rem, thr));
}

#endif /* KESTREL_CPU_X86_AVX2_Q8_RESCALE_H */
