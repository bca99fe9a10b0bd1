/* AVX-512 helpers shared by the f32 depthwise / pool / transpose-conv microkernels of this
 * directory (compiled with this directory's flags only). Not a published API. */
#ifndef KESTREL_X86_AVX512_F32_DW_SIMD_H
#define KESTREL_X86_AVX512_F32_DW_SIMD_H

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

/* Mask of the first n (< 16 or >= 16 => all) lanes. */
KS_INLINE __mmask16 ks_avx512_mask(size_t n) {
    return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u);
}

/* The fused activation; max(lo, v) / min(hi, v) keep NaN inputs NaN like the reference. */
KS_INLINE __m512 ks_avx512_act(__m512 v, __m512 lo, __m512 hi, const ks__f32_act *a) {
    v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
    if (a->act == 6 /* KS_ACT_LEAKY_RELU */) {
        __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
        v = _mm512_mask_mul_ps(v, neg, v, _mm512_set1_ps(a->alpha));
    } else if (a->act == 7 /* KS_ACT_HARD_SWISH */) {
        __m512 r = _mm512_add_ps(v, _mm512_set1_ps(3.0f));
        r = _mm512_min_ps(_mm512_max_ps(r, _mm512_setzero_ps()), _mm512_set1_ps(6.0f));
        v = _mm512_div_ps(_mm512_mul_ps(v, r), _mm512_set1_ps(6.0f));
    } else if (a->act == 8 /* KS_ACT_SILU */) {
        v = ks_avx512_silu(v);
    }
    return v;
}

#endif /* KESTREL_X86_AVX512_F32_DW_SIMD_H */
