/* fp32 helpers shared by the depthwise / pool / transpose-conv / small-channel conv microkernels
 * of x86/avx2 and x86/avx512 (x86/avx512/f32_dw_simd.h includes this file), and by the
 * depthwise microkernels' AArch64 NEON build (arm/neon/f32_dwconv.c). The including directory's
 * compile flags select the branch: AVX-512 (16 lanes, __mmask16 channel-tail masks,
 * ks_avx512_*), AVX2 + FMA (8 lanes, maskload/maskstore masks, ks_avx2_*) or NEON's 4 lanes
 * (the tail mask is a lane count, ks_v4_*); vf is f32_vsimd.h's vector of that width. Not a
 * published API. */
#ifndef KESTREL_X86_F32_DW_SIMD_H
#define KESTREL_X86_F32_DW_SIMD_H

#if !defined(__aarch64__)
#include <immintrin.h>
#endif
#include <math.h>

#include "../../dwconv.h"
#include "f32_vsimd.h"

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

/* Per ISA: the channel-tail mask (ks_avx2_mask / ks_avx512_mask, as ks_dw_mask_of), masked
 * loads (lanes outside the mask read as zero) and stores, aligned loads of packed blocks, and
 * v < 0 ? v * s : v. */
#if defined(__AVX512F__)
#include "../avx512/f32_silu.h"

#define KS_DW_SYM(base) ks_avx512_##base
typedef __mmask16 ks_dw_mask;

/* Mask of the first n (< 16 or >= 16 => all) lanes. */
KS_INLINE __mmask16 ks_avx512_mask(size_t n) {
    return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u);
}
KS_INLINE vf ks_dw_loadm(ks_dw_mask m, const float *p) {
    return _mm512_maskz_loadu_ps(m, p);
}
KS_INLINE void ks_dw_storem(ks_dw_mask m, float *p, vf v) {
    _mm512_mask_storeu_ps(p, m, v);
}
KS_INLINE vf ks_dw_load_a(const float *p) {
    return _mm512_load_ps(p);
}
KS_INLINE vf ks_dw_mul_neg(vf v, vf s) {
    return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, s);
}

#elif defined(__aarch64__)
#define KS_DW_SYM(base) ks_v4_##base
typedef size_t ks_dw_mask; /* lanes of the block: 1..4 */

KS_INLINE ks_dw_mask ks_v4_mask(size_t n) {
    return n >= 4 ? 4 : n;
}
/* v_loadn / v_storen touch only the first m floats (nothing past the channels) */
KS_INLINE vf ks_dw_loadm(ks_dw_mask m, const float *p) {
    return v_loadn(p, m);
}
KS_INLINE void ks_dw_storem(ks_dw_mask m, float *p, vf v) {
    v_storen(p, v, m);
}
KS_INLINE vf ks_dw_load_a(const float *p) {
    return v_load(p);
}
KS_INLINE vf ks_dw_mul_neg(vf v, vf s) {
    return v_sel(v_lt(v, v_zero()), v_mul(v, s), v);
}
KS_INLINE vf ks_v4_silu(vf x) {
    return v_mul(x, v_sigmoid(x));
}

#else /* AVX2 + FMA */
#include "f32_silu.h"

#define KS_DW_SYM(base) ks_avx2_##base
typedef __m256i ks_dw_mask;

/* Lane mask of the first n (1..8) lanes, for maskload/maskstore of channel tails. */
KS_INLINE __m256i ks_avx2_mask(size_t n) {
    static const int32_t tab[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(const void *)(tab + 8 - (n > 8 ? 8 : n)));
}
KS_INLINE vf ks_dw_loadm(ks_dw_mask m, const float *p) {
    return _mm256_maskload_ps(p, m);
}
KS_INLINE void ks_dw_storem(ks_dw_mask m, float *p, vf v) {
    _mm256_maskstore_ps(p, m, v);
}
KS_INLINE vf ks_dw_load_a(const float *p) {
    return _mm256_load_ps(p);
}
KS_INLINE vf ks_dw_mul_neg(vf v, vf s) {
    return _mm256_blendv_ps(v, _mm256_mul_ps(v, s),
                            _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
}
#endif

#define ks_dw_mask_of KS_DW_SYM(mask)

/* Loads / stores of one channel block. `tail` (a compile-time constant of every caller) selects
 * the masked forms for the last, partial block only. Why not always masked: sanitizer builds
 * check a masked access lane by lane, which made the depthwise file take minutes to compile;
 * and AVX2's vmaskmovps is slow. */
KS_INLINE vf ks_dw_ld(int tail, ks_dw_mask m, const float *p) {
    return tail ? ks_dw_loadm(m, p) : v_load(p);
}
KS_INLINE void ks_dw_st(int tail, ks_dw_mask m, float *p, vf v) {
    if (tail)
        ks_dw_storem(m, p, v);
    else
        v_store(p, v);
}

/* The fused activation (ks_avx2_act / ks_avx512_act); max(lo, v) / min(hi, v) keep NaN inputs
 * NaN like the reference. */
KS_INLINE vf KS_DW_SYM(act)(vf v, vf lo, vf hi, const ks__f32_act *a) {
    v = v_min(hi, v_max(lo, v));
    if (a->act == 6 /* KS_ACT_LEAKY_RELU */) {
        v = ks_dw_mul_neg(v, v_set1(a->alpha));
    } else if (a->act == 7 /* KS_ACT_HARD_SWISH */) {
        vf r = v_add(v, v_set1(3.0f));
        r = v_min(v_max(r, v_zero()), v_set1(6.0f));
        v = v_div(v_mul(v, r), v_set1(6.0f));
    } else if (a->act == 8 /* KS_ACT_SILU */) {
        v = KS_DW_SYM(silu)(v);
    }
    return v;
}
#define ks_dw_act KS_DW_SYM(act)

#endif /* KESTREL_X86_F32_DW_SIMD_H */
