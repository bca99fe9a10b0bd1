/* AVX2 + FMA SiLU (KS_ACT_SILU) shared by this directory's f32 epilogues (compiled with this
 * directory's flags only). Not a published API. */
#ifndef KESTREL_X86_AVX2_F32_SILU_H
#define KESTREL_X86_AVX2_F32_SILU_H

#include <immintrin.h>

/* x * sigmoid(x) as the reference computes it, x / (1 + e^-x), but through e = e^-|x| so that
 * nothing overflows: x / (1 + e) for x >= 0 and x * e / (1 + e) below. e^t for t <= 0: Cody-Waite
 * reduction t = n ln2 + r (ln2 in two parts, n * ln2_hi exact), Cephes' degree-6 minimax
 * polynomial for e^r, 2^n through the exponent bits; t < -87.3 (2^n subnormal) gives 0.
 * Measured max relative error vs the expf-based reference: see test_silu.c (< 1e-6). NaN stays
 * NaN (the x >= 0 compare fails and q * e carries the NaN of q = x / d). */
static inline __attribute__((always_inline)) __m256 ks_avx2_silu(__m256 x) {
    const __m256 sign = _mm256_set1_ps(-0.0f), min_t = _mm256_set1_ps(-87.3f);
    __m256 t = _mm256_or_ps(x, sign); /* -|x| */
    __m256 tiny = _mm256_cmp_ps(t, min_t, _CMP_LT_OQ);
    t = _mm256_max_ps(t, min_t);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), t);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
    p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
    __m256i bits =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 e = _mm256_andnot_ps(tiny, _mm256_mul_ps(p, _mm256_castsi256_ps(bits)));
    __m256 q = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_NGE_UQ);
    return _mm256_blendv_ps(q, _mm256_mul_ps(q, e), neg);
}

#endif /* KESTREL_X86_AVX2_F32_SILU_H */
