/* A thin fp32 vector layer so the elementwise/softmax/resize/copy kernels are written once and
 * compiled per ISA: the files in x86/avx512/, arm/neon/ and wasm/simd128/ include their x86/avx2/
 * twins, and the compiler flags of each directory select the branch here: AVX-512 (16 lanes),
 * AArch64 NEON (4 lanes), WebAssembly SIMD128 (4 lanes) or AVX2 (8 lanes). Not a published API;
 * include only from ISA sources.
 *
 * Comparison semantics follow the x86 instructions: v_max(a, b) is `a > b ? a : b` and v_min(a,
 * b) is `a < b ? a : b` (the second operand wins on NaN and on equal zeros), which is exactly
 * what the reference kernels' C expressions compute when the operands are ordered with care.
 */
#ifndef KESTREL_X86_F32_VSIMD_H
#define KESTREL_X86_F32_VSIMD_H

#if defined(__aarch64__)
#include <arm_neon.h>
#elif defined(__wasm_simd128__)
#include <wasm_simd128.h>
#else
#include <immintrin.h>
#endif
#include <stddef.h>
#include <stdint.h>

#include "../../vec.h"

#if defined(__AVX512F__)
#define V_N 16
#define V_ISA KS_ISA_AVX512
#define V_SYM(base) ks_f32_##base##__avx512
#define V_NAME(base) "ks_f32_" #base "__avx512"

typedef __m512 vf;
typedef __mmask16 vm;
typedef __m512d vd;

static inline vm v_tail(size_t n) {
    return (vm)((1u << n) - 1u);
}
static inline vf v_load(const float *p) {
    return _mm512_loadu_ps(p);
}
static inline void v_store(float *p, vf v) {
    _mm512_storeu_ps(p, v);
}
static inline vf v_loadn(const float *p, size_t n) {
    return _mm512_maskz_loadu_ps(v_tail(n), p);
}
static inline void v_storen(float *p, vf v, size_t n) {
    _mm512_mask_storeu_ps(p, v_tail(n), v);
}
static inline vf v_set1(float x) {
    return _mm512_set1_ps(x);
}
static inline vf v_add(vf a, vf b) {
    return _mm512_add_ps(a, b);
}
static inline vf v_sub(vf a, vf b) {
    return _mm512_sub_ps(a, b);
}
static inline vf v_mul(vf a, vf b) {
    return _mm512_mul_ps(a, b);
}
static inline vf v_div(vf a, vf b) {
    return _mm512_div_ps(a, b);
}
static inline vf v_fmadd(vf a, vf b, vf c) {
    return _mm512_fmadd_ps(a, b, c);
}
static inline vf v_fnmadd(vf a, vf b, vf c) {
    return _mm512_fnmadd_ps(a, b, c);
}
static inline vf v_max(vf a, vf b) {
    return _mm512_max_ps(a, b);
}
static inline vf v_min(vf a, vf b) {
    return _mm512_min_ps(a, b);
}
static inline vf v_sqrt(vf a) {
    return _mm512_sqrt_ps(a);
}
static inline vf v_sel(vm m, vf t, vf f) {
    return _mm512_mask_blend_ps(m, f, t);
}
static inline vm v_lt(vf a, vf b) {
    return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ);
}
static inline vm v_ge(vf a, vf b) {
    return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ);
}
static inline vm v_isnan(vf a) {
    return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
}
static inline vf v_and(vf a, vf b) {
    return _mm512_and_ps(a, b);
}
static inline vf v_xor(vf a, vf b) {
    return _mm512_xor_ps(a, b);
}
static inline vf v_or(vf a, vf b) {
    return _mm512_or_ps(a, b);
}
static inline vf v_andnot(vf a, vf b) {
    return _mm512_andnot_ps(a, b);
}
static inline vf v_round(vf a) {
    return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* p * 2^n for integral n in [-150, 128]. */
static inline vf v_ldexp(vf p, vf n) {
    return _mm512_scalef_ps(p, n);
}
static inline float v_hmax(vf a) {
    return _mm512_reduce_max_ps(a);
}
static inline vd v_dzero(void) {
    return _mm512_setzero_pd();
}
static inline vd v_dadd(vd a, vd b) {
    return _mm512_add_pd(a, b);
}
static inline vd v_dlo(vf a) {
    return _mm512_cvtps_pd(_mm512_castps512_ps256(a));
}
static inline vd v_dhi(vf a) {
    return _mm512_cvtps_pd(_mm512_extractf32x8_ps(a, 1));
}
static inline double v_dsum(vd a) {
    return _mm512_reduce_add_pd(a);
}
static inline vd v_dmul(vd a, vd b) {
    return _mm512_mul_pd(a, b);
}
static inline vd v_dset1(double x) {
    return _mm512_set1_pd(x);
}
/* Rounds two double vectors (lanes 0..V_N/2-1 and the rest) into one float vector. */
static inline vf v_from_d(vd lo, vd hi) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
}

#elif defined(__aarch64__)
/* AArch64 Advanced SIMD, 4 lanes. Every op reproduces the x86 semantics above rather than the
 * natural NEON instruction where the two differ: FMAX/FMIN propagate NaN and order -0 < +0, so
 * v_max/v_min are compare + select; masked loads/stores of tails go through a stack buffer so
 * nothing past p[n - 1] is touched; v_ldexp is the two-step scaling of the AVX2 branch. */
#define V_N 4
#define V_ISA KS_ISA_NEON
#define V_SYM(base) ks_f32_##base##__neon
#define V_NAME(base) "ks_f32_" #base "__neon"

typedef float32x4_t vf;
typedef uint32x4_t vm;
typedef float64x2_t vd;

static inline vm v_tail(size_t n) {
    static const uint32_t k_lane[4] = {0, 1, 2, 3};
    return vcltq_u32(vld1q_u32(k_lane), vdupq_n_u32((uint32_t)(n < V_N ? n : V_N)));
}
static inline vf v_load(const float *p) {
    return vld1q_f32(p);
}
static inline void v_store(float *p, vf v) {
    vst1q_f32(p, v);
}
/* Lanes n.. are zero, as with the x86 masked loads. */
static inline vf v_loadn(const float *p, size_t n) {
    float buf[V_N] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (size_t k = 0; k < n && k < V_N; k++)
        buf[k] = p[k];
    return vld1q_f32(buf);
}
static inline void v_storen(float *p, vf v, size_t n) {
    float buf[V_N];
    vst1q_f32(buf, v);
    for (size_t k = 0; k < n && k < V_N; k++)
        p[k] = buf[k];
}
static inline vf v_set1(float x) {
    return vdupq_n_f32(x);
}
static inline vf v_add(vf a, vf b) {
    return vaddq_f32(a, b);
}
static inline vf v_sub(vf a, vf b) {
    return vsubq_f32(a, b);
}
static inline vf v_mul(vf a, vf b) {
    return vmulq_f32(a, b);
}
static inline vf v_div(vf a, vf b) {
    return vdivq_f32(a, b);
}
/* a * b + c, one rounding */
static inline vf v_fmadd(vf a, vf b, vf c) {
    return vfmaq_f32(c, a, b);
}
/* c - a * b, one rounding */
static inline vf v_fnmadd(vf a, vf b, vf c) {
    return vfmsq_f32(c, a, b);
}
static inline vf v_max(vf a, vf b) {
    return vbslq_f32(vcgtq_f32(a, b), a, b);
}
static inline vf v_min(vf a, vf b) {
    return vbslq_f32(vcltq_f32(a, b), a, b);
}
static inline vf v_sqrt(vf a) {
    return vsqrtq_f32(a);
}
static inline vf v_sel(vm m, vf t, vf f) {
    return vbslq_f32(m, t, f);
}
static inline vm v_lt(vf a, vf b) {
    return vcltq_f32(a, b);
}
static inline vm v_ge(vf a, vf b) {
    return vcgeq_f32(a, b);
}
static inline vm v_isnan(vf a) {
    return vmvnq_u32(vceqq_f32(a, a));
}
static inline vf v_and(vf a, vf b) {
    return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(a), vreinterpretq_u32_f32(b)));
}
static inline vf v_xor(vf a, vf b) {
    return vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(a), vreinterpretq_u32_f32(b)));
}
static inline vf v_or(vf a, vf b) {
    return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(a), vreinterpretq_u32_f32(b)));
}
/* ~a & b, as _mm256_andnot_ps */
static inline vf v_andnot(vf a, vf b) {
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(b), vreinterpretq_u32_f32(a)));
}
/* to nearest, ties to even (FRINTN), as _MM_FROUND_TO_NEAREST_INT */
static inline vf v_round(vf a) {
    return vrndnq_f32(a);
}
/* p * 2^n for integral n in [-150, 128], in the two steps of the AVX2 branch (same results). */
static inline vf v_ldexp(vf p, vf n) {
    int32x4_t k = vcvtnq_s32_f32(n);
    int32x4_t k1 = vshrq_n_s32(k, 1);
    int32x4_t k2 = vsubq_s32(k, k1);
    int32x4_t bias = vdupq_n_s32(127);
    vf s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(k1, bias), 23));
    vf s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(k2, bias), 23));
    return vmulq_f32(vmulq_f32(p, s1), s2);
}
static inline float v_hmax(vf a) {
    vf m = v_max(a, vextq_f32(a, a, 2));
    m = v_max(m, vextq_f32(m, m, 1));
    return vgetq_lane_f32(m, 0);
}
static inline vd v_dzero(void) {
    return vdupq_n_f64(0.0);
}
static inline vd v_dadd(vd a, vd b) {
    return vaddq_f64(a, b);
}
static inline vd v_dlo(vf a) {
    return vcvt_f64_f32(vget_low_f32(a));
}
static inline vd v_dhi(vf a) {
    return vcvt_high_f64_f32(a);
}
static inline double v_dsum(vd a) {
    return vgetq_lane_f64(a, 0) + vgetq_lane_f64(a, 1);
}
static inline vd v_dmul(vd a, vd b) {
    return vmulq_f64(a, b);
}
static inline vd v_dset1(double x) {
    return vdupq_n_f64(x);
}
static inline vf v_from_d(vd lo, vd hi) {
    return vcvt_high_f32_f64(vcvt_f32_f64(lo), hi);
}

#elif defined(__wasm_simd128__)
/* WebAssembly SIMD128, 4 lanes. The x86 semantics as in the NEON branch: v_max/v_min are
 * compare + select (wasm's f32x4.max/min propagate NaN), masked tails go through a stack buffer.
 * The baseline has no fused multiply-add (relaxed SIMD is not assumed), so v_fmadd/v_fnmadd round
 * twice: results are within the kernels' tolerances of the reference, not bit-identical to x86. */
#define V_N 4
#define V_ISA KS_ISA_WASM_SIMD128
#define V_SYM(base) ks_f32_##base##__simd128
#define V_NAME(base) "ks_f32_" #base "__simd128"

typedef v128_t vf;
typedef v128_t vm;
typedef v128_t vd;

static inline vm v_tail(size_t n) {
    uint32_t k = (uint32_t)(n < V_N ? n : V_N);
    return wasm_u32x4_lt(wasm_u32x4_make(0, 1, 2, 3), wasm_u32x4_splat(k));
}
static inline vf v_load(const float *p) {
    return wasm_v128_load(p);
}
static inline void v_store(float *p, vf v) {
    wasm_v128_store(p, v);
}
/* Lanes n.. are zero, as with the x86 masked loads. */
static inline vf v_loadn(const float *p, size_t n) {
    float buf[V_N] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (size_t k = 0; k < n && k < V_N; k++)
        buf[k] = p[k];
    return wasm_v128_load(buf);
}
static inline void v_storen(float *p, vf v, size_t n) {
    float buf[V_N];
    wasm_v128_store(buf, v);
    for (size_t k = 0; k < n && k < V_N; k++)
        p[k] = buf[k];
}
static inline vf v_set1(float x) {
    return wasm_f32x4_splat(x);
}
static inline vf v_add(vf a, vf b) {
    return wasm_f32x4_add(a, b);
}
static inline vf v_sub(vf a, vf b) {
    return wasm_f32x4_sub(a, b);
}
static inline vf v_mul(vf a, vf b) {
    return wasm_f32x4_mul(a, b);
}
static inline vf v_div(vf a, vf b) {
    return wasm_f32x4_div(a, b);
}
/* a * b + c (two roundings: no FMA in baseline SIMD128) */
static inline vf v_fmadd(vf a, vf b, vf c) {
    return wasm_f32x4_add(wasm_f32x4_mul(a, b), c);
}
/* c - a * b (two roundings) */
static inline vf v_fnmadd(vf a, vf b, vf c) {
    return wasm_f32x4_sub(c, wasm_f32x4_mul(a, b));
}
static inline vf v_max(vf a, vf b) {
    return wasm_v128_bitselect(a, b, wasm_f32x4_gt(a, b));
}
static inline vf v_min(vf a, vf b) {
    return wasm_v128_bitselect(a, b, wasm_f32x4_lt(a, b));
}
static inline vf v_sqrt(vf a) {
    return wasm_f32x4_sqrt(a);
}
static inline vf v_sel(vm m, vf t, vf f) {
    return wasm_v128_bitselect(t, f, m);
}
static inline vm v_lt(vf a, vf b) {
    return wasm_f32x4_lt(a, b);
}
static inline vm v_ge(vf a, vf b) {
    return wasm_f32x4_ge(a, b);
}
static inline vm v_isnan(vf a) {
    return wasm_f32x4_ne(a, a);
}
static inline vf v_and(vf a, vf b) {
    return wasm_v128_and(a, b);
}
static inline vf v_xor(vf a, vf b) {
    return wasm_v128_xor(a, b);
}
static inline vf v_or(vf a, vf b) {
    return wasm_v128_or(a, b);
}
/* ~a & b, as _mm256_andnot_ps */
static inline vf v_andnot(vf a, vf b) {
    return wasm_v128_andnot(b, a);
}
/* to nearest, ties to even, as _MM_FROUND_TO_NEAREST_INT */
static inline vf v_round(vf a) {
    return wasm_f32x4_nearest(a);
}
/* p * 2^n for integral n in [-150, 128], in the two steps of the AVX2 branch. */
static inline vf v_ldexp(vf p, vf n) {
    v128_t k = wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_nearest(n));
    v128_t k1 = wasm_i32x4_shr(k, 1);
    v128_t k2 = wasm_i32x4_sub(k, k1);
    v128_t bias = wasm_i32x4_splat(127);
    vf s1 = wasm_i32x4_shl(wasm_i32x4_add(k1, bias), 23);
    vf s2 = wasm_i32x4_shl(wasm_i32x4_add(k2, bias), 23);
    return wasm_f32x4_mul(wasm_f32x4_mul(p, s1), s2);
}
static inline float v_hmax(vf a) {
    vf m = v_max(a, wasm_i32x4_shuffle(a, a, 2, 3, 0, 1));
    m = v_max(m, wasm_i32x4_shuffle(m, m, 1, 0, 3, 2));
    return wasm_f32x4_extract_lane(m, 0);
}
static inline vd v_dzero(void) {
    return wasm_f64x2_splat(0.0);
}
static inline vd v_dadd(vd a, vd b) {
    return wasm_f64x2_add(a, b);
}
static inline vd v_dlo(vf a) {
    return wasm_f64x2_promote_low_f32x4(a);
}
static inline vd v_dhi(vf a) {
    return wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(a, a, 2, 3, 0, 1));
}
static inline double v_dsum(vd a) {
    return wasm_f64x2_extract_lane(a, 0) + wasm_f64x2_extract_lane(a, 1);
}
static inline vd v_dmul(vd a, vd b) {
    return wasm_f64x2_mul(a, b);
}
static inline vd v_dset1(double x) {
    return wasm_f64x2_splat(x);
}
static inline vf v_from_d(vd lo, vd hi) {
    vf l = wasm_f32x4_demote_f64x2_zero(lo), h = wasm_f32x4_demote_f64x2_zero(hi);
    return wasm_i32x4_shuffle(l, h, 0, 1, 4, 5);
}

#else /* AVX2 + FMA */
#define V_N 8
#define V_ISA KS_ISA_AVX2
#define V_SYM(base) ks_f32_##base##__avx2
#define V_NAME(base) "ks_f32_" #base "__avx2"

typedef __m256 vf;
typedef __m256 vm;
typedef __m256d vd;

static const int32_t k_v_tail_bits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

static inline __m256i v_tail_i(size_t n) {
    return _mm256_loadu_si256((const __m256i *)(const void *)(k_v_tail_bits + 8 - n));
}
static inline vm v_tail(size_t n) {
    return _mm256_castsi256_ps(v_tail_i(n));
}
static inline vf v_load(const float *p) {
    return _mm256_loadu_ps(p);
}
static inline void v_store(float *p, vf v) {
    _mm256_storeu_ps(p, v);
}
static inline vf v_loadn(const float *p, size_t n) {
    return _mm256_maskload_ps(p, v_tail_i(n));
}
static inline void v_storen(float *p, vf v, size_t n) {
    _mm256_maskstore_ps(p, v_tail_i(n), v);
}
static inline vf v_set1(float x) {
    return _mm256_set1_ps(x);
}
static inline vf v_add(vf a, vf b) {
    return _mm256_add_ps(a, b);
}
static inline vf v_sub(vf a, vf b) {
    return _mm256_sub_ps(a, b);
}
static inline vf v_mul(vf a, vf b) {
    return _mm256_mul_ps(a, b);
}
static inline vf v_div(vf a, vf b) {
    return _mm256_div_ps(a, b);
}
static inline vf v_fmadd(vf a, vf b, vf c) {
    return _mm256_fmadd_ps(a, b, c);
}
static inline vf v_fnmadd(vf a, vf b, vf c) {
    return _mm256_fnmadd_ps(a, b, c);
}
static inline vf v_max(vf a, vf b) {
    return _mm256_max_ps(a, b);
}
static inline vf v_min(vf a, vf b) {
    return _mm256_min_ps(a, b);
}
static inline vf v_sqrt(vf a) {
    return _mm256_sqrt_ps(a);
}
static inline vf v_sel(vm m, vf t, vf f) {
    return _mm256_blendv_ps(f, t, m);
}
static inline vm v_lt(vf a, vf b) {
    return _mm256_cmp_ps(a, b, _CMP_LT_OQ);
}
static inline vm v_ge(vf a, vf b) {
    return _mm256_cmp_ps(a, b, _CMP_GE_OQ);
}
static inline vm v_isnan(vf a) {
    return _mm256_cmp_ps(a, a, _CMP_UNORD_Q);
}
static inline vf v_and(vf a, vf b) {
    return _mm256_and_ps(a, b);
}
static inline vf v_xor(vf a, vf b) {
    return _mm256_xor_ps(a, b);
}
static inline vf v_or(vf a, vf b) {
    return _mm256_or_ps(a, b);
}
static inline vf v_andnot(vf a, vf b) {
    return _mm256_andnot_ps(a, b);
}
static inline vf v_round(vf a) {
    return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* p * 2^n for integral n in [-150, 128]: two steps, so that each factor 2^k is a normal float
 * (k in [-75, 64]) and denormal or overflowing results round once, at the last multiply. */
static inline vf v_ldexp(vf p, vf n) {
    __m256i k = _mm256_cvtps_epi32(n);
    __m256i k1 = _mm256_srai_epi32(k, 1);
    __m256i k2 = _mm256_sub_epi32(k, k1);
    __m256i bias = _mm256_set1_epi32(127);
    vf s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
    vf s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}
static inline float v_hmax(vf a) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}
static inline vd v_dzero(void) {
    return _mm256_setzero_pd();
}
static inline vd v_dadd(vd a, vd b) {
    return _mm256_add_pd(a, b);
}
static inline vd v_dlo(vf a) {
    return _mm256_cvtps_pd(_mm256_castps256_ps128(a));
}
static inline vd v_dhi(vf a) {
    return _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1));
}
static inline double v_dsum(vd a) {
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
}
static inline vd v_dmul(vd a, vd b) {
    return _mm256_mul_pd(a, b);
}
static inline vd v_dset1(double x) {
    return _mm256_set1_pd(x);
}
static inline vf v_from_d(vd lo, vd hi) {
    return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
}
#endif

static inline vf v_zero(void) {
    return v_set1(0.0f);
}
/* Clears the sign bit (abs of NaN stays NaN). */
static inline vf v_abs(vf a) {
    return v_andnot(v_set1(-0.0f), a);
}
static inline vf v_neg(vf a) {
    return v_xor(a, v_set1(-0.0f));
}
/* |mag| with the sign of sgn. */
static inline vf v_copysign(vf mag, vf sgn) {
    return v_or(v_abs(mag), v_and(sgn, v_set1(-0.0f)));
}

/* ---- transcendental functions ----
 * exp: x = n ln2 + r with |r| <= ln2/2 (Cody-Waite split of ln2, exact for |n| < 2^15), e^r by
 * its degree-7 Taylor polynomial (truncation < 6e-9 relative) and 2^n applied exactly. Inputs
 * are clamped to [-104, 89], past which expf is 0 or +inf anyway; NaN is passed through. The
 * result is within ~2 ulp of expf. */
static inline vf v_exp(vf x) {
    vf xc = v_min(v_max(x, v_set1(-104.0f)), v_set1(89.0f));
    vf n = v_round(v_mul(xc, v_set1(1.44269504088896341f)));
    vf r = v_fnmadd(n, v_set1(0.693359375f), xc);
    r = v_fnmadd(n, v_set1(-2.12194440e-4f), r);
    vf p = v_set1(1.0f / 5040.0f);
    p = v_fmadd(p, r, v_set1(1.0f / 720.0f));
    p = v_fmadd(p, r, v_set1(1.0f / 120.0f));
    p = v_fmadd(p, r, v_set1(1.0f / 24.0f));
    p = v_fmadd(p, r, v_set1(1.0f / 6.0f));
    p = v_fmadd(p, r, v_set1(0.5f));
    p = v_fmadd(p, r, v_set1(1.0f));
    p = v_fmadd(p, r, v_set1(1.0f));
    return v_sel(v_isnan(x), x, v_ldexp(p, n));
}

/* e^x - 1 without cancellation near 0: the degree-8 Taylor series for |x| < ln2/2 (truncation
 * < 1e-9 relative), exp(x) - 1 elsewhere (where the subtraction loses under 2 bits). */
static inline vf v_expm1(vf x) {
    vf q = v_set1(1.0f / 40320.0f);
    q = v_fmadd(q, x, v_set1(1.0f / 5040.0f));
    q = v_fmadd(q, x, v_set1(1.0f / 720.0f));
    q = v_fmadd(q, x, v_set1(1.0f / 120.0f));
    q = v_fmadd(q, x, v_set1(1.0f / 24.0f));
    q = v_fmadd(q, x, v_set1(1.0f / 6.0f));
    q = v_fmadd(q, x, v_set1(0.5f));
    vf small = v_fmadd(v_mul(x, x), q, x);
    vf big = v_sub(v_exp(x), v_set1(1.0f));
    return v_sel(v_lt(v_abs(x), v_set1(0.34657359f)), small, big);
}

/* tanh(x) = -expm1(-2|x|) / (expm1(-2|x|) + 2) with the sign of x: no overflow, no
 * cancellation, exact sign and -0. */
static inline vf v_tanh(vf x) {
    vf e = v_expm1(v_mul(v_abs(x), v_set1(-2.0f)));
    vf t = v_div(v_neg(e), v_add(e, v_set1(2.0f)));
    return v_copysign(t, x);
}

/* 1 / (1 + e^-x), evaluated through e^-|x| so that nothing overflows, and with e^-|x| computed
 * at |x| <= 87 so that nothing is subnormal either: below x = -87 the result is 0 instead of
 * e^x < 1.7e-38 (so -inf still gives 0, and SiLU's -inf * 0 NaN). Subnormal operands and results
 * cost ~100 cycles each on many x86 cores (Zen 1: a segmentation head whose logits are mostly very
 * negative ran its sigmoid 3x slower). */
static inline vf v_sigmoid(vf x) {
    const vf lo = v_set1(-87.0f);
    vf e = v_exp(v_max(lo, v_neg(v_abs(x)))); /* NaN stays NaN */
    vf s = v_div(v_set1(1.0f), v_add(v_set1(1.0f), e));
    vf neg = v_sel(v_lt(x, lo), v_zero(), v_mul(e, s));
    return v_sel(v_ge(x, v_zero()), s, neg);
}

/* The clamps keep the reference's NaN behaviour: v_max(lo, x) is x for NaN. */
static inline vf v_clamp(vf x, vf lo, vf hi) {
    return v_min(hi, v_max(lo, x));
}

static inline vf v_hard_swish(vf x) {
    vf r = v_clamp(v_add(x, v_set1(3.0f)), v_zero(), v_set1(6.0f));
    return v_div(v_mul(x, r), v_set1(6.0f));
}

static inline vf v_leaky(vf x, vf alpha) {
    return v_sel(v_ge(x, v_zero()), x, v_mul(alpha, x));
}

/* Applies a fused activation (ks__act) in place to y[0..n), as ks__act_apply does. */
static inline void v_act_inplace(float *y, size_t n, int32_t act, float alpha) {
    size_t i = 0;
#define V_ACT_LOOP(EXPR)                                                                           \
    for (; i + V_N <= n; i += V_N) {                                                               \
        vf x = v_load(y + i);                                                                      \
        v_store(y + i, EXPR);                                                                      \
    }                                                                                              \
    if (i < n) {                                                                                   \
        vf x = v_loadn(y + i, n - i);                                                              \
        v_storen(y + i, EXPR, n - i);                                                              \
    }
    switch (act) {
    case KS_ACT_RELU:
        V_ACT_LOOP(v_max(x, v_zero()))
        break;
    case KS_ACT_RELU_N1_TO_1:
        V_ACT_LOOP(v_clamp(x, v_set1(-1.0f), v_set1(1.0f)))
        break;
    case KS_ACT_RELU6:
        V_ACT_LOOP(v_clamp(x, v_zero(), v_set1(6.0f)))
        break;
    case KS_ACT_TANH:
        V_ACT_LOOP(v_tanh(x))
        break;
    case KS_ACT_SIGMOID:
        V_ACT_LOOP(v_sigmoid(x))
        break;
    case KS_ACT_LEAKY_RELU:
        V_ACT_LOOP(v_leaky(x, v_set1(alpha)))
        break;
    case KS_ACT_HARD_SWISH:
        V_ACT_LOOP(v_hard_swish(x))
        break;
    case KS_ACT_SILU:
        V_ACT_LOOP(v_mul(x, v_sigmoid(x)))
        break;
    default:
        break;
    }
#undef V_ACT_LOOP
}

/* Elements per parallel work item, and the least work worth handing to another thread. */
#define V_BLOCK 4096
#define V_MIN_PARALLEL 65536

#endif /* KESTREL_X86_F32_VSIMD_H */
