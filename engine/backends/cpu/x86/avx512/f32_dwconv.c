/* Depthwise fp32 convolution, AVX-512: 16 channels per vector, 4 output pixels per step.
 * The 3x3 and 5x5 kernels keep the block's taps in registers across the whole pixel run. */
#include "f32_dw_simd.h"

/* One channel block of 16 for all pixels. `wregs` != 0 preloads the taps (num_taps is then a
 * compile-time constant of the caller). */
KS_INLINE void dw_block(size_t num_px, size_t channels, size_t c0, size_t num_taps, int wregs,
                        const float *const *taps, const float *w, float *out, __m512 lo, __m512 hi,
                        const ks__f32_act *act) {
    __mmask16 m = ks_avx512_mask(channels - c0);
    __m512 bias = _mm512_load_ps(w);
    __m512 wv[25];
    if (wregs) {
#pragma GCC unroll 25
        for (size_t t = 0; t < num_taps; t++)
            wv[t] = _mm512_load_ps(w + 16 * (t + 1));
    }
    const float *const *tp = taps;
    size_t px = 0;
    for (; px + 4 <= num_px; px += 4, tp += 4 * num_taps) {
        /* Zero start, bias added after the taps: see f32_gemm_avx512.c. */
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(),
               a3 = _mm512_setzero_ps();
#pragma GCC unroll 25
        for (size_t t = 0; t < num_taps; t++) {
            __m512 k = wregs ? wv[t] : _mm512_load_ps(w + 16 * (t + 1));
            a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, tp[t] + c0), k, a0);
            a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, tp[num_taps + t] + c0), k, a1);
            a2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, tp[2 * num_taps + t] + c0), k, a2);
            a3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, tp[3 * num_taps + t] + c0), k, a3);
        }
        float *o = out + px * channels + c0;
        _mm512_mask_storeu_ps(o, m, ks_avx512_act(_mm512_add_ps(a0, bias), lo, hi, act));
        _mm512_mask_storeu_ps(o + channels, m, ks_avx512_act(_mm512_add_ps(a1, bias), lo, hi, act));
        _mm512_mask_storeu_ps(o + 2 * channels, m,
                              ks_avx512_act(_mm512_add_ps(a2, bias), lo, hi, act));
        _mm512_mask_storeu_ps(o + 3 * channels, m,
                              ks_avx512_act(_mm512_add_ps(a3, bias), lo, hi, act));
    }
    for (; px < num_px; px++, tp += num_taps) {
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
        size_t t = 0;
        for (; t + 2 <= num_taps; t += 2) {
            __m512 k0 = wregs ? wv[t] : _mm512_load_ps(w + 16 * (t + 1));
            __m512 k1 = wregs ? wv[t + 1] : _mm512_load_ps(w + 16 * (t + 2));
            a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, tp[t] + c0), k0, a0);
            a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, tp[t + 1] + c0), k1, a1);
        }
        if (t < num_taps) {
            __m512 k0 = wregs ? wv[t] : _mm512_load_ps(w + 16 * (t + 1));
            a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, tp[t] + c0), k0, a0);
        }
        _mm512_mask_storeu_ps(
            out + px * channels + c0, m,
            ks_avx512_act(_mm512_add_ps(_mm512_add_ps(a0, a1), bias), lo, hi, act));
    }
}

KS_INLINE void dw_all(size_t num_px, size_t channels, size_t num_taps, int wregs,
                      const float *const *taps, const float *packed, float *out,
                      const ks__f32_act *act) {
    __m512 lo = _mm512_set1_ps(act->lo), hi = _mm512_set1_ps(act->hi);
    for (size_t c0 = 0; c0 < channels; c0 += 16)
        dw_block(num_px, channels, c0, num_taps, wregs, taps, packed + c0 * (1 + num_taps), out, lo,
                 hi, act);
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
    dw_all(num_px, channels, 25, 1, taps, packed, out, act);
}

static const ks__f32_dw_config k_cfg = {16, dw_generic, dw_3x3, dw_5x5};

static double cost(const ks__kernel_ctx *ctx) {
    return ks__f32_dw_cost(ctx, 16);
}
static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__f32_dw_plan(ctx, 16, packed_bytes_out);
}
static ks_status pack(ks__kernel_ctx *ctx) {
    return ks__f32_dw_pack(ctx, 16);
}
static ks_status run(ks__kernel_ctx *ctx) {
    return ks__f32_dw_run(ctx, &k_cfg);
}

const ks__impl ks_f32_dwconv__avx512_c16 = {
    "ks_f32_dwconv__avx512_c16", KS_OP_CONV2D, KS_ISA_AVX512, cost, plan, pack, run,
};
