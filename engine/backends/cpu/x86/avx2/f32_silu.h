/* AVX2 + FMA SiLU (KS_ACT_SILU) shared by this directory's f32 epilogues (compiled with this
 * directory's flags only). Not a published API. */
#ifndef KESTREL_X86_AVX2_F32_SILU_H
#define KESTREL_X86_AVX2_F32_SILU_H

#include <immintrin.h>

/* x * sigmoid(x) as the reference computes it, x / (1 + e^-x), but through e = e^-|x| so that
 * nothing overflows: x / (1 + e) for x >= 0 and x * e / (1 + e) below. e^t for t <= 0: Cody-Waite
 * reduction t = n ln2 + r (ln2 in two parts, n * ln2_hi exact), with n rounded by adding
 * 1.5 * 2^23 + 127 (which leaves n + 127 in the sum's low mantissa bits: 2^n is that sum shifted
 * left by 23), a degree-5 polynomial for e^r on [-ln2/2, ln2/2] (fitted here for minimal relative
 * error, 9.2e-8), 2^n through the exponent bits; t < -87.3 (2^n subnormal) gives 0. The sign bit
 * of x picks e or 1 as the numerator's factor (blendv reads only that bit). About 19 vector
 * operations against the 26 of Cephes' degree-6 form with a rounding instruction and a
 * conversion. Measured max relative error vs the expf-based reference: test_fused_act.c
 * (< 1e-6). NaN stays NaN (x is a factor). */
static inline __attribute__((always_inline)) __m256 ks_avx2_silu(__m256 x) {
    const __m256 min_t = _mm256_set1_ps(-87.3f), one = _mm256_set1_ps(1.0f);
    const __m256 magic = _mm256_set1_ps(12583039.0f);  /* 1.5 * 2^23 + 127 */
    __m256 t = _mm256_or_ps(x, _mm256_set1_ps(-0.0f)); /* -|x| */
    __m256 tiny = _mm256_cmp_ps(t, min_t, _CMP_LT_OQ);
    t = _mm256_max_ps(t, min_t);
    __m256 j = _mm256_fmadd_ps(t, _mm256_set1_ps(1.44269504088896341f), magic);
    __m256 n = _mm256_sub_ps(j, magic);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), t);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(8.2902722061e-3f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1898161173e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6667638719e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.9999147654e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(9.9999970198e-1f));
    p = _mm256_fmadd_ps(p, r, one);
    __m256 s = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(j), 23));
    __m256 e = _mm256_andnot_ps(tiny, _mm256_mul_ps(p, s));
    __m256 num = _mm256_blendv_ps(one, e, x);
    return _mm256_div_ps(_mm256_mul_ps(x, num), _mm256_add_ps(one, e));
}

#endif /* KESTREL_X86_AVX2_F32_SILU_H */
