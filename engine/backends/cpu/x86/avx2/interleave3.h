/* Three 8-float vectors interleaved into 24 floats, a0 b0 c0 a1 b1 c1 ...: each output vector
 * takes its lanes from the three inputs by lane permutes and two blends. Shared by the image
 * sampler's NHWC RGB store (imgproc_avx2.c) and the planar-to-interleaved transpose
 * (f32_perf_copy.c). AVX2; not a published API. */
#ifndef KESTREL_X86_AVX2_INTERLEAVE3_H
#define KESTREL_X86_AVX2_INTERLEAVE3_H

#include <immintrin.h>

static inline __attribute__((always_inline)) void ks_avx2_interleave3(float *dst, __m256 a,
                                                                      __m256 b, __m256 c) {
    const __m256i ia0 = _mm256_setr_epi32(0, 0, 0, 1, 0, 0, 2, 0);
    const __m256i ib0 = _mm256_setr_epi32(0, 0, 0, 0, 1, 0, 0, 2);
    const __m256i ic0 = _mm256_setr_epi32(0, 0, 0, 0, 0, 1, 0, 0);
    const __m256i ia1 = _mm256_setr_epi32(0, 3, 0, 0, 4, 0, 0, 5);
    const __m256i ib1 = _mm256_setr_epi32(0, 0, 3, 0, 0, 4, 0, 0);
    const __m256i ic1 = _mm256_setr_epi32(2, 0, 0, 3, 0, 0, 4, 0);
    const __m256i ia2 = _mm256_setr_epi32(0, 0, 6, 0, 0, 7, 0, 0);
    const __m256i ib2 = _mm256_setr_epi32(5, 0, 0, 6, 0, 0, 7, 0);
    const __m256i ic2 = _mm256_setr_epi32(0, 5, 0, 0, 6, 0, 0, 7);
    /* v0: lanes 0, 3, 6 from a; 1, 4, 7 from b (blend mask 0x92); 2, 5 from c (0x24) */
    __m256 v0 =
        _mm256_blend_ps(_mm256_permutevar8x32_ps(a, ia0), _mm256_permutevar8x32_ps(b, ib0), 0x92);
    v0 = _mm256_blend_ps(v0, _mm256_permutevar8x32_ps(c, ic0), 0x24);
    /* v1: lanes 0, 3, 6 from c; 1, 4, 7 from a; 2, 5 from b */
    __m256 v1 =
        _mm256_blend_ps(_mm256_permutevar8x32_ps(c, ic1), _mm256_permutevar8x32_ps(a, ia1), 0x92);
    v1 = _mm256_blend_ps(v1, _mm256_permutevar8x32_ps(b, ib1), 0x24);
    /* v2: lanes 0, 3, 6 from b; 1, 4, 7 from c; 2, 5 from a */
    __m256 v2 =
        _mm256_blend_ps(_mm256_permutevar8x32_ps(b, ib2), _mm256_permutevar8x32_ps(c, ic2), 0x92);
    v2 = _mm256_blend_ps(v2, _mm256_permutevar8x32_ps(a, ia2), 0x24);
    _mm256_storeu_ps(dst, v0);
    _mm256_storeu_ps(dst + 8, v1);
    _mm256_storeu_ps(dst + 16, v2);
}

#endif /* KESTREL_X86_AVX2_INTERLEAVE3_H */
