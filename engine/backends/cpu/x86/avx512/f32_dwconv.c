/* Depthwise fp32 convolution, AVX-512: 16 channels per vector.
 *
 * Two schedules (the driver, dwconv.c, picks per output pixel):
 *   - indirect: per-tap input pointers, 4 output pixels per step; any window, stride, dilation,
 *     and the border pixels of the row kernels. The 3x3 and 5x5 kernels keep the block's taps
 *     in registers across the whole pixel run.
 *   - row: 3x3 / 5x5 windows, dilation 1, horizontal stride 1 or 2, interior pixels of rows
 *     whose window rows are all inside the input. 8 (3x3) or 4 (5x5) output pixels x 16
 *     channels of accumulators; each input vector of a window row is loaded once and feeds every
 *     pixel whose window covers it. Why: with few channels (16..48) a pixel is one to three
 *     vectors, so the indirect schedule's per-pixel pointer setup cost more than the FMAs.
 * Both sum the taps from zero in (ky, kx) order per output and add the bias after them (see
 * f32_gemm_avx512.c), then the residual, then the activation.
 */
#include "f32_dw_simd.h"

/* Loads / stores of one channel block. `tail` (a compile-time constant of every caller) selects
 * the masked forms for the last, partial block only. Why not always masked: sanitizer builds
 * check a masked access lane by lane, which made this file take minutes to compile. */
KS_INLINE __m512 ld(int tail, __mmask16 m, const float *p) {
    return tail ? _mm512_maskz_loadu_ps(m, p) : _mm512_loadu_ps(p);
}

KS_INLINE void st(int tail, __mmask16 m, float *p, __m512 v) {
    if (tail)
        _mm512_mask_storeu_ps(p, m, v);
    else
        _mm512_storeu_ps(p, v);
}

/* First epilogue step, inlined per pixel: + bias, + residual, clamp to [lo, hi] (all the RELU
 * family needs; +-inf otherwise). The other activations (and PRELU, which has no clamp) follow
 * in act_rest over the stored pixels, so their code exists once per kernel, not once per pixel
 * of the unrolled tiles. */
KS_INLINE __m512 out_clamped(int tail, __mmask16 m, __m512 acc, __m512 bias, const float *res,
                             size_t o, __m512 lo, __m512 hi) {
    acc = _mm512_add_ps(acc, bias);
    if (res) acc = _mm512_add_ps(acc, ld(tail, m, res + o));
    return _mm512_min_ps(hi, _mm512_max_ps(lo, acc));
}

/* Applies act->act (LEAKY_RELU, HARD_SWISH, SILU or PRELU; nothing for NONE) in place to
 * num_px stored pixels (stride cs floats) of the block. */
KS_INLINE void act_rest(int tail, __mmask16 m, size_t num_px, size_t cs, float *out, __m512 slope,
                        const ks__f32_act *act) {
    if (act->act == KS_ACT_NONE) return;
    __m512 lo = _mm512_set1_ps(-INFINITY), hi = _mm512_set1_ps(INFINITY);
    KS_DW_UNROLL(1)
    for (size_t p = 0; p < num_px; p++) {
        float *o = out + p * cs;
        __m512 v = ld(tail, m, o);
        if (act->act == 9 /* KS_ACT_PRELU */) {
            __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
            v = _mm512_mask_mul_ps(v, neg, v, slope);
        } else {
            v = ks_avx512_act(v, lo, hi, act);
        }
        st(tail, m, o, v);
    }
}

/* ---- indirect schedule ---- */

/* One channel block of 16 for all pixels. `wregs` != 0 preloads the taps (num_taps is then a
 * compile-time constant of the caller). */
KS_INLINE void dw_block(int tail, size_t num_px, size_t channels, size_t c0, size_t num_taps,
                        int wregs, const float *const *taps, const float *w, float *out,
                        const float *res, __m512 lo, __m512 hi, const ks__f32_act *act) {
    __mmask16 m = ks_avx512_mask(channels - c0);
    __m512 bias = _mm512_load_ps(w), slope = _mm512_load_ps(w + 16 * (num_taps + 1));
    __m512 wv[25];
    if (wregs) {
        KS_DW_UNROLL(25)
        for (size_t t = 0; t < num_taps; t++)
            wv[t] = _mm512_load_ps(w + 16 * (t + 1));
    }
    const float *const *tp = taps;
    size_t px = 0;
    for (; px + 4 <= num_px; px += 4, tp += 4 * num_taps) {
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(),
               a3 = _mm512_setzero_ps();
        KS_DW_UNROLL(25)
        for (size_t t = 0; t < num_taps; t++) {
            __m512 k = wregs ? wv[t] : _mm512_load_ps(w + 16 * (t + 1));
            a0 = _mm512_fmadd_ps(ld(tail, m, tp[t] + c0), k, a0);
            a1 = _mm512_fmadd_ps(ld(tail, m, tp[num_taps + t] + c0), k, a1);
            a2 = _mm512_fmadd_ps(ld(tail, m, tp[2 * num_taps + t] + c0), k, a2);
            a3 = _mm512_fmadd_ps(ld(tail, m, tp[3 * num_taps + t] + c0), k, a3);
        }
        size_t o = px * channels + c0;
        st(tail, m, out + o, out_clamped(tail, m, a0, bias, res, o, lo, hi));
        st(tail, m, out + o + channels, out_clamped(tail, m, a1, bias, res, o + channels, lo, hi));
        st(tail, m, out + o + 2 * channels,
           out_clamped(tail, m, a2, bias, res, o + 2 * channels, lo, hi));
        st(tail, m, out + o + 3 * channels,
           out_clamped(tail, m, a3, bias, res, o + 3 * channels, lo, hi));
    }
    for (; px < num_px; px++, tp += num_taps) {
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
        size_t t = 0;
        for (; t + 2 <= num_taps; t += 2) {
            __m512 k0 = wregs ? wv[t] : _mm512_load_ps(w + 16 * (t + 1));
            __m512 k1 = wregs ? wv[t + 1] : _mm512_load_ps(w + 16 * (t + 2));
            a0 = _mm512_fmadd_ps(ld(tail, m, tp[t] + c0), k0, a0);
            a1 = _mm512_fmadd_ps(ld(tail, m, tp[t + 1] + c0), k1, a1);
        }
        if (t < num_taps) {
            __m512 k0 = wregs ? wv[t] : _mm512_load_ps(w + 16 * (t + 1));
            a0 = _mm512_fmadd_ps(ld(tail, m, tp[t] + c0), k0, a0);
        }
        size_t o = px * channels + c0;
        st(tail, m, out + o, out_clamped(tail, m, _mm512_add_ps(a0, a1), bias, res, o, lo, hi));
    }
    act_rest(tail, m, num_px, channels, out + c0, slope, act);
}

KS_INLINE void dw_all(size_t num_px, size_t channels, size_t num_taps, int wregs,
                      const float *const *taps, const float *packed, float *out, const float *res,
                      const ks__f32_act *act_in) {
    /* a local copy: the stores may alias *act_in, which would reload act per pixel */
    const ks__f32_act a = *act_in, *act = &a;
    __m512 lo = _mm512_set1_ps(act->lo), hi = _mm512_set1_ps(act->hi);
    const size_t block = KS__F32_DW_BLOCK_FLOATS(16, num_taps);
    size_t c0 = 0;
    for (; c0 + 16 <= channels; c0 += 16)
        dw_block(0, num_px, channels, c0, num_taps, wregs, taps, packed + c0 / 16 * block, out, res,
                 lo, hi, act);
    if (c0 < channels)
        dw_block(1, num_px, channels, c0, num_taps, wregs, taps, packed + c0 / 16 * block, out, res,
                 lo, hi, act);
}

static void dw_generic(size_t num_px, size_t channels, size_t num_taps, const float *const *taps,
                       const float *packed, float *out, const float *res, const ks__f32_act *act) {
    dw_all(num_px, channels, num_taps, 0, taps, packed, out, res, act);
}

static void dw_3x3(size_t num_px, size_t channels, size_t num_taps, const float *const *taps,
                   const float *packed, float *out, const float *res, const ks__f32_act *act) {
    (void)num_taps;
    dw_all(num_px, channels, 9, 1, taps, packed, out, res, act);
}

static void dw_5x5(size_t num_px, size_t channels, size_t num_taps, const float *const *taps,
                   const float *packed, float *out, const float *res, const ks__f32_act *act) {
    (void)num_taps;
    dw_all(num_px, channels, 25, 1, taps, packed, out, res, act);
}

/* ---- row schedule ---- */

/* Window sums of NPX output pixels whose first taps start `off` floats into each window row
 * (pixel stride `cs` floats, horizontal stride SW). Input vector i of a window row is tap
 * kx = i - p * SW of pixel p: one load for every pixel that uses it, and per pixel the taps still
 * arrive in (ky, kx) order. */
KS_INLINE void row_sums(int tail, __mmask16 m, int KH, int KW, int SW, int NPX, size_t cs,
                        const float *const *r, size_t off, const __m512 *wv, __m512 *acc) {
    KS_DW_UNROLL(8)
    for (int p = 0; p < NPX; p++)
        acc[p] = _mm512_setzero_ps();
    KS_DW_UNROLL(5)
    for (int ky = 0; ky < KH; ky++) {
        const float *rp = r[ky] + off;
        KS_DW_UNROLL(24)
        for (int i = 0; i < (NPX - 1) * SW + KW; i++) {
            __m512 v = ld(tail, m, rp + (size_t)i * cs);
            KS_DW_UNROLL(8)
            for (int p = 0; p < NPX; p++) {
                int kx = i - p * SW;
                if (kx >= 0 && kx < KW) acc[p] = _mm512_fmadd_ps(v, wv[ky * KW + kx], acc[p]);
            }
        }
    }
}

/* NPX pixels starting at pixel px of the run. */
KS_INLINE void row_tile(int tail, __mmask16 m, int KH, int KW, int SW, int NPX, size_t px,
                        size_t cs, size_t c0, const float *const *r, const __m512 *wv, __m512 bias,
                        float *out, const float *res, __m512 lo, __m512 hi) {
    __m512 acc[8];
    row_sums(tail, m, KH, KW, SW, NPX, cs, r, px * (size_t)SW * cs + c0, wv, acc);
    KS_DW_UNROLL(8)
    for (int p = 0; p < NPX; p++) {
        size_t o = (px + (size_t)p) * cs + c0;
        st(tail, m, out + o, out_clamped(tail, m, acc[p], bias, res, o, lo, hi));
    }
}

/* Channels [c0, c0 + 16) of num_px pixels; cs is the channel count (a constant when inlined
 * for the common C == 16, so every address is base + immediate). */
KS_INLINE void row_block(int tail, int KH, int KW, int SW, int NPX, size_t num_px, size_t cs,
                         size_t c0, const float *const *r, const float *w, float *out,
                         const float *res, __m512 lo, __m512 hi, const ks__f32_act *act) {
    __mmask16 m = ks_avx512_mask(cs - c0);
    __m512 wv[25];
    KS_DW_UNROLL(25)
    for (int t = 0; t < KH * KW; t++)
        wv[t] = _mm512_load_ps(w + 16 * (t + 1));
    __m512 bias = _mm512_load_ps(w), slope = _mm512_load_ps(w + 16 * (KH * KW + 1));
    size_t px = 0;
    for (; px + (size_t)NPX <= num_px; px += (size_t)NPX)
        row_tile(tail, m, KH, KW, SW, NPX, px, cs, c0, r, wv, bias, out, res, lo, hi);
    /* the last < NPX pixels: a group of 4 first (a lone accumulator waits on FMA latency, which
     * shows on short rows), then one at a time; the masked tail block keeps only the latter */
    if (!tail && NPX > 4 && px + 4 <= num_px) {
        row_tile(tail, m, KH, KW, SW, 4, px, cs, c0, r, wv, bias, out, res, lo, hi);
        px += 4;
    }
    for (; px < num_px; px++)
        row_tile(tail, m, KH, KW, SW, 1, px, cs, c0, r, wv, bias, out, res, lo, hi);
    act_rest(tail, m, num_px, cs, out + c0, slope, act);
}

KS_INLINE void row_all(int KH, int KW, int SW, int NPX, size_t num_px, size_t channels,
                       const float *const *rows, const float *packed, float *out, const float *res,
                       const ks__f32_act *act_in) {
    const ks__f32_act a = *act_in, *act = &a; /* see dw_all */
    __m512 lo = _mm512_set1_ps(act->lo), hi = _mm512_set1_ps(act->hi);
    if (channels == 16) {
        row_block(0, KH, KW, SW, NPX, num_px, 16, 0, rows, packed, out, res, lo, hi, act);
        return;
    }
    const size_t block = KS__F32_DW_BLOCK_FLOATS(16, KH * KW);
    size_t c0 = 0;
    for (; c0 + 16 <= channels; c0 += 16)
        row_block(0, KH, KW, SW, NPX, num_px, channels, c0, rows, packed + c0 / 16 * block, out,
                  res, lo, hi, act);
    if (c0 < channels)
        row_block(1, KH, KW, SW, NPX, num_px, channels, c0, rows, packed + c0 / 16 * block, out,
                  res, lo, hi, act);
}

#define ROW_KERNEL(name, K, S, NPX)                                                                \
    static void name(size_t num_px, size_t channels, const float *const *rows,                     \
                     const float *packed, float *out, const float *res, const ks__f32_act *act) {  \
        row_all(K, K, S, NPX, num_px, channels, rows, packed, out, res, act);                      \
    }
ROW_KERNEL(dw_row_3x3s1, 3, 1, 8)
ROW_KERNEL(dw_row_3x3s2, 3, 2, 8)
ROW_KERNEL(dw_row_5x5s1, 5, 1, 4)
ROW_KERNEL(dw_row_5x5s2, 5, 2, 4)

static const ks__f32_dw_config k_cfg = {
    16, dw_generic, dw_3x3, dw_5x5, {{dw_row_3x3s1, dw_row_3x3s2}, {dw_row_5x5s1, dw_row_5x5s2}}};

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
