/* AVX2 + FMA helpers shared by the f32 depthwise / pool / transpose-conv microkernels of this
 * directory (compiled with this directory's flags only). Not a published API. */
#ifndef KESTREL_X86_AVX2_F32_DW_SIMD_H
#define KESTREL_X86_AVX2_F32_DW_SIMD_H

#include <immintrin.h>
#include <math.h>

#include "../../dwconv.h"
#include "f32_silu.h"

#define KS_INLINE static inline __attribute__((always_inline))

/* Loop unrolling of the depthwise microkernels. Sanitizer builds do not force it: their per-
 * access checks on the fully unrolled tiles took clang over ten minutes for one file (13 s
 * without). The loops, addresses and summation order are the same either way. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer) ||             \
    __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define KS_DW_NO_UNROLL 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KS_DW_NO_UNROLL 1
#endif
#define KS_DW_PRAGMA(x) _Pragma(#x)
#ifdef KS_DW_NO_UNROLL
#define KS_DW_UNROLL(n) KS_DW_PRAGMA(GCC unroll 1)
#else
#define KS_DW_UNROLL(n) KS_DW_PRAGMA(GCC unroll n)
#endif

/* Lane mask of the first n (1..8) lanes, for maskload/maskstore of channel tails. */
KS_INLINE __m256i ks_avx2_mask(size_t n) {
    static const int32_t tab[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(const void *)(tab + 8 - (n > 8 ? 8 : n)));
}

/* The fused activation; max(lo, v) / min(hi, v) keep NaN inputs NaN like the reference. */
KS_INLINE __m256 ks_avx2_act(__m256 v, __m256 lo, __m256 hi, const ks__f32_act *a) {
    v = _mm256_min_ps(hi, _mm256_max_ps(lo, v));
    if (a->act == 6 /* KS_ACT_LEAKY_RELU */) {
        __m256 neg = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ);
        v = _mm256_blendv_ps(v, _mm256_mul_ps(v, _mm256_set1_ps(a->alpha)), neg);
    } else if (a->act == 7 /* KS_ACT_HARD_SWISH */) {
        __m256 r = _mm256_add_ps(v, _mm256_set1_ps(3.0f));
        r = _mm256_min_ps(_mm256_max_ps(r, _mm256_setzero_ps()), _mm256_set1_ps(6.0f));
        v = _mm256_div_ps(_mm256_mul_ps(v, r), _mm256_set1_ps(6.0f));
    } else if (a->act == 8 /* KS_ACT_SILU */) {
        v = ks_avx2_silu(v);
    }
    return v;
}

#endif /* KESTREL_X86_AVX2_F32_DW_SIMD_H */
