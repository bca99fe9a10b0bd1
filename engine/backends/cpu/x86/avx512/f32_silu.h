/* AVX-512 SiLU (KS_ACT_SILU) shared by this directory's f32 epilogues (compiled with this
 * directory's flags only). Not a published API. */
#ifndef KESTREL_X86_AVX512_F32_SILU_H
#define KESTREL_X86_AVX512_F32_SILU_H

#include <immintrin.h>

/* x * sigmoid(x) as the reference computes it, x / (1 + e^-x), but through e = e^-|x| so that
 * nothing overflows: x / (1 + e) for x >= 0 and x * e / (1 + e) below. e^t for t <= 0: Cody-Waite
 * reduction t = n ln2 + r (n rounded by adding 1.5 * 2^23), the degree-5 polynomial of
 * ks_avx2_silu for e^r, 2^n by scalef (exact); t < -87.3 gives 0. Same error bound as
 * ks_avx2_silu (< 1e-6 relative, test_fused_act.c). */
static inline __attribute__((always_inline)) __m512 ks_avx512_silu(__m512 x) {
    const __m512 min_t = _mm512_set1_ps(-87.3f);
    __m512 t = _mm512_castsi512_ps(
        _mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int32_t)0x80000000u)));
    __mmask16 keep = _mm512_cmp_ps_mask(t, min_t, _CMP_NLT_UQ);
    t = _mm512_max_ps(t, min_t);
    const __m512 magic = _mm512_set1_ps(12582912.0f); /* 1.5 * 2^23: adding it rounds */
    __m512 n =
        _mm512_sub_ps(_mm512_fmadd_ps(t, _mm512_set1_ps(1.44269504088896341f), magic), magic);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), t);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(8.2902722061e-3f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1898161173e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6667638719e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.9999147654e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(9.9999970198e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __m512 e = _mm512_maskz_scalef_ps(keep, p, n);
    __m512 q = _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
    __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_NGE_UQ);
    return _mm512_mask_mul_ps(q, neg, q, e);
}

#endif /* KESTREL_X86_AVX512_F32_SILU_H */
