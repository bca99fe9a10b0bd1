/* Depthwise fp32 convolution, AVX2 + FMA: 8 channels per vector. Channel tails use
 * maskload/maskstore.
 *
 * Two schedules (the driver, dwconv.c, picks per output pixel):
 *   - indirect: per-tap input pointers, 4 output pixels per step; any window, stride, dilation,
 *     and the border pixels of the row kernels. The 3x3 kernel keeps the block's taps in
 *     registers across the pixel run (5x5 does not fit in 16 ymm registers and streams them from
 *     L1).
 *   - row: 3x3 / 5x5 windows, dilation 1, horizontal stride 1 or 2, interior pixels of rows
 *     whose window rows are all inside the input; 4 output pixels x 8 channels of accumulators,
 *     each input vector of a window row loaded once for every pixel that uses it. Why: with few
 *     channels a pixel is one to six vectors, so per-pixel pointer setup cost more than the FMAs.
 * Both sum the taps from zero in (ky, kx) order per output and add the bias after them (see
 * f32_gemm_avx2.c), then the residual, then the activation.
 */
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

/* First epilogue step, inlined per pixel: + bias, + residual, clamp to [lo, hi] (all the RELU
 * family needs; +-inf otherwise). The other activations (and PRELU, which has no clamp) follow
 * in act_rest over the stored pixels, so their code exists once per kernel, not once per pixel
 * of the unrolled tiles. */
KS_INLINE __m256 out_clamped(int tail, __m256i m, __m256 acc, __m256 bias, const float *res,
                             size_t o, __m256 lo, __m256 hi) {
    acc = _mm256_add_ps(acc, bias);
    if (res) acc = _mm256_add_ps(acc, ld(tail, m, res + o));
    return _mm256_min_ps(hi, _mm256_max_ps(lo, acc));
}

/* Applies act->act (LEAKY_RELU, HARD_SWISH, SILU or PRELU; nothing for NONE) in place to
 * num_px stored pixels (stride cs floats) of the block. */
KS_INLINE void act_rest(int tail, __m256i m, size_t num_px, size_t cs, float *out, __m256 slope,
                        const ks__f32_act *act) {
    if (act->act == KS_ACT_NONE) return;
    __m256 lo = _mm256_set1_ps(-INFINITY), hi = _mm256_set1_ps(INFINITY);
    KS_DW_UNROLL(1)
    for (size_t p = 0; p < num_px; p++) {
        float *o = out + p * cs;
        __m256 v = ld(tail, m, o);
        if (act->act == 9 /* KS_ACT_PRELU */) {
            __m256 neg = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ);
            v = _mm256_blendv_ps(v, _mm256_mul_ps(v, slope), neg);
        } else {
            v = ks_avx2_act(v, lo, hi, act);
        }
        st(tail, m, o, v);
    }
}

/* ---- indirect schedule ---- */

KS_INLINE void dw_block(int tail, size_t num_px, size_t channels, size_t c0, size_t num_taps,
                        int wregs, const float *const *taps, const float *w, float *out,
                        const float *res, __m256 lo, __m256 hi, const ks__f32_act *act) {
    __m256i m = ks_avx2_mask(channels - c0);
    __m256 bias = _mm256_load_ps(w), slope = _mm256_load_ps(w + 8 * (num_taps + 1));
    __m256 wv[9];
    if (wregs) {
        KS_DW_UNROLL(9)
        for (size_t t = 0; t < num_taps; t++)
            wv[t] = _mm256_load_ps(w + 8 * (t + 1));
    }
    const float *const *tp = taps;
    size_t px = 0;
    for (; px + 4 <= num_px; px += 4, tp += 4 * num_taps) {
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(),
               a3 = _mm256_setzero_ps();
        KS_DW_UNROLL(25)
        for (size_t t = 0; t < num_taps; t++) {
            __m256 k = wregs ? wv[t] : _mm256_load_ps(w + 8 * (t + 1));
            a0 = _mm256_fmadd_ps(ld(tail, m, tp[t] + c0), k, a0);
            a1 = _mm256_fmadd_ps(ld(tail, m, tp[num_taps + t] + c0), k, a1);
            a2 = _mm256_fmadd_ps(ld(tail, m, tp[2 * num_taps + t] + c0), k, a2);
            a3 = _mm256_fmadd_ps(ld(tail, m, tp[3 * num_taps + t] + c0), k, a3);
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
        size_t o = px * channels + c0;
        st(tail, m, out + o, out_clamped(tail, m, _mm256_add_ps(a0, a1), bias, res, o, lo, hi));
    }
    act_rest(tail, m, num_px, channels, out + c0, slope, act);
}

KS_INLINE void dw_all(size_t num_px, size_t channels, size_t num_taps, int wregs,
                      const float *const *taps, const float *packed, float *out, const float *res,
                      const ks__f32_act *act_in) {
    /* a local copy: the stores may alias *act_in, which would reload act per pixel */
    const ks__f32_act a = *act_in, *act = &a;
    __m256 lo = _mm256_set1_ps(act->lo), hi = _mm256_set1_ps(act->hi);
    const size_t block = KS__F32_DW_BLOCK_FLOATS(8, num_taps);
    size_t c0 = 0;
    for (; c0 + 8 <= channels; c0 += 8)
        dw_block(0, num_px, channels, c0, num_taps, wregs, taps, packed + c0 / 8 * block, out, res,
                 lo, hi, act);
    if (c0 < channels)
        dw_block(1, num_px, channels, c0, num_taps, wregs, taps, packed + c0 / 8 * block, out, res,
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
    dw_all(num_px, channels, 25, 0, taps, packed, out, res, act);
}

/* ---- row schedule ---- */

/* Window sums of NPX output pixels whose first taps start `off` floats into each window row
 * (pixel stride `cs` floats, horizontal stride SW). Input vector i of a window row is tap
 * kx = i - p * SW of pixel p; per pixel the taps still arrive in (ky, kx) order. With wregs 0
 * the weights are FMA memory operands (5x5: 25 taps do not fit in 16 registers). */
KS_INLINE void row_sums(int tail, __m256i m, int KH, int KW, int SW, int NPX, int wregs, size_t cs,
                        const float *const *r, size_t off, const __m256 *wv, const float *w,
                        __m256 *acc) {
    KS_DW_UNROLL(4)
    for (int p = 0; p < NPX; p++)
        acc[p] = _mm256_setzero_ps();
    KS_DW_UNROLL(5)
    for (int ky = 0; ky < KH; ky++) {
        const float *rp = r[ky] + off;
        KS_DW_UNROLL(16)
        for (int i = 0; i < (NPX - 1) * SW + KW; i++) {
            __m256 v = ld(tail, m, rp + (size_t)i * cs);
            KS_DW_UNROLL(4)
            for (int p = 0; p < NPX; p++) {
                int kx = i - p * SW;
                if (kx >= 0 && kx < KW) {
                    int t = ky * KW + kx;
                    __m256 k = wregs ? wv[t] : _mm256_load_ps(w + 8 * (t + 1));
                    acc[p] = _mm256_fmadd_ps(v, k, acc[p]);
                }
            }
        }
    }
}

/* NPX pixels starting at pixel px of the run. */
KS_INLINE void row_tile(int tail, __m256i m, int KH, int KW, int SW, int NPX, int wregs, size_t px,
                        size_t cs, size_t c0, const float *const *r, const __m256 *wv,
                        const float *w, __m256 bias, float *out, const float *res, __m256 lo,
                        __m256 hi) {
    __m256 acc[4];
    row_sums(tail, m, KH, KW, SW, NPX, wregs, cs, r, px * (size_t)SW * cs + c0, wv, w, acc);
    KS_DW_UNROLL(4)
    for (int p = 0; p < NPX; p++) {
        size_t o = (px + (size_t)p) * cs + c0;
        st(tail, m, out + o, out_clamped(tail, m, acc[p], bias, res, o, lo, hi));
    }
}

KS_INLINE void row_block(int tail, int KH, int KW, int SW, int NPX, size_t num_px, size_t cs,
                         size_t c0, const float *const *r, const float *w, float *out,
                         const float *res, __m256 lo, __m256 hi, const ks__f32_act *act) {
    const int wregs = KH * KW <= 9;
    __m256i m = ks_avx2_mask(cs - c0);
    __m256 wv[9];
    if (wregs) {
        KS_DW_UNROLL(9)
        for (int t = 0; t < KH * KW; t++)
            wv[t] = _mm256_load_ps(w + 8 * (t + 1));
    }
    __m256 bias = _mm256_load_ps(w), slope = _mm256_load_ps(w + 8 * (KH * KW + 1));
    size_t px = 0;
    for (; px + (size_t)NPX <= num_px; px += (size_t)NPX)
        row_tile(tail, m, KH, KW, SW, NPX, wregs, px, cs, c0, r, wv, w, bias, out, res, lo, hi);
    for (; px < num_px; px++)
        row_tile(tail, m, KH, KW, SW, 1, wregs, px, cs, c0, r, wv, w, bias, out, res, lo, hi);
    act_rest(tail, m, num_px, cs, out + c0, slope, act);
}

KS_INLINE void row_all(int KH, int KW, int SW, int NPX, size_t num_px, size_t channels,
                       const float *const *rows, const float *packed, float *out, const float *res,
                       const ks__f32_act *act_in) {
    const ks__f32_act a = *act_in, *act = &a; /* see dw_all */
    __m256 lo = _mm256_set1_ps(act->lo), hi = _mm256_set1_ps(act->hi);
    const size_t block = KS__F32_DW_BLOCK_FLOATS(8, KH * KW);
    if (channels == 16) {
        /* the common small-channel case with constant addresses */
        row_block(0, KH, KW, SW, NPX, num_px, 16, 0, rows, packed, out, res, lo, hi, act);
        row_block(0, KH, KW, SW, NPX, num_px, 16, 8, rows, packed + block, out, res, lo, hi, act);
        return;
    }
    size_t c0 = 0;
    for (; c0 + 8 <= channels; c0 += 8)
        row_block(0, KH, KW, SW, NPX, num_px, channels, c0, rows, packed + c0 / 8 * block, out, res,
                  lo, hi, act);
    if (c0 < channels)
        row_block(1, KH, KW, SW, NPX, num_px, channels, c0, rows, packed + c0 / 8 * block, out, res,
                  lo, hi, act);
}

#define ROW_KERNEL(name, K, S, NPX)                                                                \
    static void name(size_t num_px, size_t channels, const float *const *rows,                     \
                     const float *packed, float *out, const float *res, const ks__f32_act *act) {  \
        row_all(K, K, S, NPX, num_px, channels, rows, packed, out, res, act);                      \
    }
ROW_KERNEL(dw_row_3x3s1, 3, 1, 4)
ROW_KERNEL(dw_row_3x3s2, 3, 2, 4)
ROW_KERNEL(dw_row_5x5s1, 5, 1, 4)
ROW_KERNEL(dw_row_5x5s2, 5, 2, 4)

static const ks__f32_dw_config k_cfg = {
    8, dw_generic, dw_3x3, dw_5x5, {{dw_row_3x3s1, dw_row_3x3s2}, {dw_row_5x5s1, dw_row_5x5s2}}};

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
