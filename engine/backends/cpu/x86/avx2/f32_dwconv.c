/* Depthwise fp32 convolution, AVX2 + FMA: 8 channels per vector, 4 output pixels per step.
 * The 3x3 kernel keeps the block's taps in registers across the pixel run (5x5 does not fit
 * in 16 ymm registers and streams them from L1). Channel tails use maskload/maskstore. */
#include "f32_dw_simd.h"

KS_INLINE __m256 ld(int tail, __m256i m, const float *p) {
    return tail ? _mm256_maskload_ps(p, m) : _mm256_loadu_ps(p);
}

KS_INLINE void st(int tail, __m256i m, float *p, __m256 v) {
    if (tail)
        _mm256_maskstore_ps(p, m, v);
    else
        _mm256_storeu_ps(p, v);
}

KS_INLINE void dw_block(int tail, size_t num_px, size_t channels, size_t c0, size_t num_taps,
                        int wregs, const float *const *taps, const float *w, float *out, __m256 lo,
                        __m256 hi, const ks__f32_act *act) {
    __m256i m = ks_avx2_mask(channels - c0);
    __m256 bias = _mm256_load_ps(w);
    __m256 wv[9];
    if (wregs) {
#pragma GCC unroll 9
        for (size_t t = 0; t < num_taps; t++)
            wv[t] = _mm256_load_ps(w + 8 * (t + 1));
    }
    const float *const *tp = taps;
    size_t px = 0;
    for (; px + 4 <= num_px; px += 4, tp += 4 * num_taps) {
        /* Zero start, bias added after the taps: see f32_gemm_avx2.c. */
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(),
               a3 = _mm256_setzero_ps();
#pragma GCC unroll 25
        for (size_t t = 0; t < num_taps; t++) {
            __m256 k = wregs ? wv[t] : _mm256_load_ps(w + 8 * (t + 1));
            a0 = _mm256_fmadd_ps(ld(tail, m, tp[t] + c0), k, a0);
            a1 = _mm256_fmadd_ps(ld(tail, m, tp[num_taps + t] + c0), k, a1);
            a2 = _mm256_fmadd_ps(ld(tail, m, tp[2 * num_taps + t] + c0), k, a2);
            a3 = _mm256_fmadd_ps(ld(tail, m, tp[3 * num_taps + t] + c0), k, a3);
        }
        float *o = out + px * channels + c0;
        st(tail, m, o, ks_avx2_act(_mm256_add_ps(a0, bias), lo, hi, act));
        st(tail, m, o + channels, ks_avx2_act(_mm256_add_ps(a1, bias), lo, hi, act));
        st(tail, m, o + 2 * channels, ks_avx2_act(_mm256_add_ps(a2, bias), lo, hi, act));
        st(tail, m, o + 3 * channels, ks_avx2_act(_mm256_add_ps(a3, bias), lo, hi, act));
    }
    for (; px < num_px; px++, tp += num_taps) {
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
        size_t t = 0;
        for (; t + 2 <= num_taps; t += 2) {
            __m256 k0 = wregs ? wv[t] : _mm256_load_ps(w + 8 * (t + 1));
            __m256 k1 = wregs ? wv[t + 1] : _mm256_load_ps(w + 8 * (t + 2));
            a0 = _mm256_fmadd_ps(ld(tail, m, tp[t] + c0), k0, a0);
            a1 = _mm256_fmadd_ps(ld(tail, m, tp[t + 1] + c0), k1, a1);
        }
        if (t < num_taps) {
            __m256 k0 = wregs ? wv[t] : _mm256_load_ps(w + 8 * (t + 1));
            a0 = _mm256_fmadd_ps(ld(tail, m, tp[t] + c0), k0, a0);
        }
        st(tail, m, out + px * channels + c0,
           ks_avx2_act(_mm256_add_ps(_mm256_add_ps(a0, a1), bias), lo, hi, act));
    }
}

KS_INLINE void dw_all(size_t num_px, size_t channels, size_t num_taps, int wregs,
                      const float *const *taps, const float *packed, float *out,
                      const ks__f32_act *act) {
    __m256 lo = _mm256_set1_ps(act->lo), hi = _mm256_set1_ps(act->hi);
    size_t c0 = 0;
    for (; c0 + 8 <= channels; c0 += 8)
        dw_block(0, num_px, channels, c0, num_taps, wregs, taps, packed + c0 * (1 + num_taps), out,
                 lo, hi, act);
    if (c0 < channels)
        dw_block(1, num_px, channels, c0, num_taps, wregs, taps, packed + c0 * (1 + num_taps), out,
                 lo, hi, act);
}

static void dw_generic(size_t num_px, size_t channels, size_t num_taps, const float *const *taps,
                       const float *packed, float *out, const ks__f32_act *act) {
    dw_all(num_px, channels, num_taps, 0, taps, packed, out, act);
}

static void dw_3x3(size_t num_px, size_t channels, size_t num_taps, const float *const *taps,
                   const float *packed, float *out, const ks__f32_act *act) {
    (void)num_taps;
    dw_all(num_px, channels, 9, 1, taps, packed, out, act);
}

static void dw_5x5(size_t num_px, size_t channels, size_t num_taps, const float *const *taps,
                   const float *packed, float *out, const ks__f32_act *act) {
    (void)num_taps;
    dw_all(num_px, channels, 25, 0, taps, packed, out, act);
}

static const ks__f32_dw_config k_cfg = {8, dw_generic, dw_3x3, dw_5x5};

static double cost(const ks__kernel_ctx *ctx) {
    return ks__f32_dw_cost(ctx, 8);
}
static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__f32_dw_plan(ctx, 8, packed_bytes_out);
}
static ks_status pack(ks__kernel_ctx *ctx) {
    return ks__f32_dw_pack(ctx, 8);
}
static ks_status run(ks__kernel_ctx *ctx) {
    return ks__f32_dw_run(ctx, &k_cfg);
}

const ks__impl ks_f32_dwconv__avx2_c8 = {
    "ks_f32_dwconv__avx2_c8", KS_OP_CONV2D, KS_ISA_AVX2, cost, plan, pack, run,
};
