/* Depthwise fp32 convolution: one channel block per vector (AVX2 + FMA: 8 channels, AVX-512: 16,
 * AArch64 NEON: 4). x86/avx512/f32_dwconv.c and arm/neon/f32_dwconv.c include this file;
 * f32_dw_simd.h holds the per-ISA loads, stores and masks, f32_vsimd.h the vector arithmetic.
 *
 * Two schedules (the driver, dwconv.c, picks per output pixel):
 *   - indirect: per-tap input pointers, 4 output pixels per step; any window, stride, dilation,
 *     and the border pixels of the row kernels. The 3x3 kernel keeps the block's taps in
 *     registers across the pixel run, and so does 5x5 with AVX-512 (25 taps do not fit in the 16
 *     ymm registers; AVX2 streams them from L1).
 *   - row: 3x3 / 5x5 windows, dilation 1, horizontal stride 1 or 2, interior pixels of rows
 *     whose window rows are all inside the input. Up to DW_NPX_MAX output pixels x one channel
 *     block of accumulators (4; AVX-512: 8 for 3x3); each input vector of a window row is loaded
 *     once and feeds every pixel whose window covers it. Why: with few channels (16..48) a pixel
 *     is one to six vectors, so the indirect schedule's per-pixel pointer setup cost more than
 *     the FMAs.
 * Both sum the taps from zero in (ky, kx) order per output and add the bias after them (see
 * f32_gemm_avx2.c), then the residual, then the activation.
 */
#include "f32_dw_simd.h"

#define LANES V_N

/* DW_WREG_TAPS: most taps held in registers; DW_NPX_MAX: most pixels of a row tile, and
 * DW_ROW_NPX3 the pixels of the 3x3 row tiles; DW_ROW_SPAN: most input vectors of a tile's
 * window row ((NPX - 1) * SW + KW). All literals: they are unroll counts. */
#if defined(__AVX512F__) || defined(__aarch64__)
/* 32 vector registers (AVX-512 zmm, AArch64 v0-v31) */
#define DW_WREG_TAPS 25
#define DW_NPX_MAX 8
#define DW_ROW_NPX3 8
#define DW_ROW_SPAN 24
#elif defined(__wasm_simd128__) && defined(KS_DW_WASM_TRY)
#define DW_WREG_TAPS 1
#define DW_NPX_MAX 4
#define DW_ROW_NPX3 4
#define DW_ROW_SPAN 16
#else /* 16 ymm registers */
#define DW_WREG_TAPS 9
#define DW_NPX_MAX 8
#define DW_ROW_NPX3 4
#define DW_ROW_NPX5S1 8
#define DW_ROW_SPAN 16
#endif
#ifndef DW_ROW_NPX5S1
#define DW_ROW_NPX5S1 4
#endif
/* DW_ROW_C16: a copy of the row kernels for exactly 16 channels, with constant addresses. One
 * channel block on AVX-512, two on AVX2; on NEON it would be four more inlined copies of every
 * row kernel (about 50 KB of the AArch64 library, docs/size.md) for a few address additions per
 * tile, so NEON takes the general loop. */
#if defined(__aarch64__)
#define DW_ROW_C16 0
#else
#define DW_ROW_C16 1
#endif

/* First epilogue step, inlined per pixel: + bias, + residual, clamp to [lo, hi] (all the RELU
 * family needs; +-inf otherwise). The other activations (and PRELU, which has no clamp) follow
 * in act_rest over the stored pixels, so their code exists once per kernel, not once per pixel
 * of the unrolled tiles. */
KS_INLINE vf out_clamped(int tail, ks_dw_mask m, vf acc, vf bias, const float *res, size_t o, vf lo,
                         vf hi) {
    acc = v_add(acc, bias);
    if (res) acc = v_add(acc, ks_dw_ld(tail, m, res + o));
    return v_min(hi, v_max(lo, acc));
}

/* Applies act->act (LEAKY_RELU, HARD_SWISH, SILU or PRELU; nothing for NONE) in place to
 * num_px stored pixels (stride cs floats) of the block. */
KS_INLINE void act_rest(int tail, ks_dw_mask m, size_t num_px, size_t cs, float *out, vf slope,
                        const ks__f32_act *act) {
    if (act->act == KS_ACT_NONE) return;
    vf lo = v_set1(-INFINITY), hi = v_set1(INFINITY);
    KS_DW_UNROLL(1)
    for (size_t p = 0; p < num_px; p++) {
        float *o = out + p * cs;
        vf v = ks_dw_ld(tail, m, o);
        if (act->act == 9 /* KS_ACT_PRELU */)
            v = ks_dw_mul_neg(v, slope);
        else
            v = ks_dw_act(v, lo, hi, act);
        ks_dw_st(tail, m, o, v);
    }
}

/* ---- indirect schedule ---- */

/* One channel block for all pixels. `wregs` != 0 preloads the taps (num_taps is then a
 * compile-time constant of the caller, at most DW_WREG_TAPS). */
KS_INLINE void dw_block(int tail, size_t num_px, size_t channels, size_t c0, size_t num_taps,
                        int wregs, const float *const *taps, const float *w, float *out,
                        const float *res, vf lo, vf hi, const ks__f32_act *act) {
    ks_dw_mask m = ks_dw_mask_of(channels - c0);
    vf bias = ks_dw_load_a(w), slope = ks_dw_load_a(w + LANES * (num_taps + 1));
    vf wv[DW_WREG_TAPS];
    if (wregs) {
        KS_DW_UNROLL(DW_WREG_TAPS)
        for (size_t t = 0; t < num_taps; t++)
            wv[t] = ks_dw_load_a(w + LANES * (t + 1));
    }
    const float *const *tp = taps;
    size_t px = 0;
    for (; px + 4 <= num_px; px += 4, tp += 4 * num_taps) {
        vf a0 = v_zero(), a1 = v_zero(), a2 = v_zero(), a3 = v_zero();
        KS_DW_UNROLL(25)
        for (size_t t = 0; t < num_taps; t++) {
            vf k = wregs ? wv[t] : ks_dw_load_a(w + LANES * (t + 1));
            a0 = v_fmadd(ks_dw_ld(tail, m, tp[t] + c0), k, a0);
            a1 = v_fmadd(ks_dw_ld(tail, m, tp[num_taps + t] + c0), k, a1);
            a2 = v_fmadd(ks_dw_ld(tail, m, tp[2 * num_taps + t] + c0), k, a2);
            a3 = v_fmadd(ks_dw_ld(tail, m, tp[3 * num_taps + t] + c0), k, a3);
        }
        size_t o = px * channels + c0;
        ks_dw_st(tail, m, out + o, out_clamped(tail, m, a0, bias, res, o, lo, hi));
        ks_dw_st(tail, m, out + o + channels,
                 out_clamped(tail, m, a1, bias, res, o + channels, lo, hi));
        ks_dw_st(tail, m, out + o + 2 * channels,
                 out_clamped(tail, m, a2, bias, res, o + 2 * channels, lo, hi));
        ks_dw_st(tail, m, out + o + 3 * channels,
                 out_clamped(tail, m, a3, bias, res, o + 3 * channels, lo, hi));
    }
    for (; px < num_px; px++, tp += num_taps) {
        vf a0 = v_zero(), a1 = v_zero();
        size_t t = 0;
        for (; t + 2 <= num_taps; t += 2) {
            vf k0 = wregs ? wv[t] : ks_dw_load_a(w + LANES * (t + 1));
            vf k1 = wregs ? wv[t + 1] : ks_dw_load_a(w + LANES * (t + 2));
            a0 = v_fmadd(ks_dw_ld(tail, m, tp[t] + c0), k0, a0);
            a1 = v_fmadd(ks_dw_ld(tail, m, tp[t + 1] + c0), k1, a1);
        }
        if (t < num_taps) {
            vf k0 = wregs ? wv[t] : ks_dw_load_a(w + LANES * (t + 1));
            a0 = v_fmadd(ks_dw_ld(tail, m, tp[t] + c0), k0, a0);
        }
        size_t o = px * channels + c0;
        ks_dw_st(tail, m, out + o, out_clamped(tail, m, v_add(a0, a1), bias, res, o, lo, hi));
    }
    act_rest(tail, m, num_px, channels, out + c0, slope, act);
}

KS_INLINE void dw_all(size_t num_px, size_t channels, size_t num_taps, int wregs,
                      const float *const *taps, const float *packed, float *out, const float *res,
                      const ks__f32_act *act_in) {
    /* a local copy: the stores may alias *act_in, which would reload act per pixel */
    const ks__f32_act a = *act_in, *act = &a;
    vf lo = v_set1(act->lo), hi = v_set1(act->hi);
    const size_t block = KS__F32_DW_BLOCK_FLOATS(LANES, num_taps);
    size_t c0 = 0;
    for (; c0 + LANES <= channels; c0 += LANES)
        dw_block(0, num_px, channels, c0, num_taps, wregs, taps, packed + c0 / LANES * block, out,
                 res, lo, hi, act);
    if (c0 < channels)
        dw_block(1, num_px, channels, c0, num_taps, wregs, taps, packed + c0 / LANES * block, out,
                 res, lo, hi, act);
}

static void dw_generic(size_t num_px, size_t channels, size_t num_taps, const float *const *taps,
                       const float *packed, float *out, const float *res, const ks__f32_act *act) {
    dw_all(num_px, channels, num_taps, 0, taps, packed, out, res, act);
}

#if defined(KS_DW_NO_TAP_KERNELS)
/* (arm/neon/f32_dwconv.c) the tap-pointer pixels (the borders of the row schedule's layers) take
 * the generic kernel: 17 KB less of the AArch64 library for one weight load per tap and 4 pixels */
#define dw_3x3 dw_generic
#define dw_5x5 dw_generic
#else
static void dw_3x3(size_t num_px, size_t channels, size_t num_taps, const float *const *taps,
                   const float *packed, float *out, const float *res, const ks__f32_act *act) {
    (void)num_taps;
    dw_all(num_px, channels, 9, DW_WREG_TAPS >= 9, taps, packed, out, res, act);
}

static void dw_5x5(size_t num_px, size_t channels, size_t num_taps, const float *const *taps,
                   const float *packed, float *out, const float *res, const ks__f32_act *act) {
    (void)num_taps;
    dw_all(num_px, channels, 25, DW_WREG_TAPS >= 25, taps, packed, out, res, act);
}
#endif

/* ---- row schedule ---- */

/* Window sums of NPX output pixels whose first taps start `off` floats into each window row
 * (pixel stride `cs` floats, horizontal stride SW). Input vector i of a window row is tap
 * kx = i - p * SW of pixel p: one load for every pixel that uses it, and per pixel the taps still
 * arrive in (ky, kx) order. wregs 1: every tap's weights in registers (wv); 0: FMA memory
 * operands; 2: the window row's KW weights loaded into registers per row (AVX2 5x5 stride 1 with
 * 8 pixels: 8 accumulators + 5 weights + 1 input fit the 16 ymm registers, and the loads per FMA
 * drop from 1.4 to 0.4, so the tile is FMA-bound instead of load-bound). */
KS_INLINE void row_sums(int tail, ks_dw_mask m, int KH, int KW, int SW, int NPX, int wregs,
                        size_t cs, const float *const *r, size_t off, const vf *wv, const float *w,
                        vf *acc) {
    KS_DW_UNROLL(DW_NPX_MAX)
    for (int p = 0; p < NPX; p++)
        acc[p] = v_zero();
    KS_DW_UNROLL(5)
    for (int ky = 0; ky < KH; ky++) {
        const float *rp = r[ky] + off;
        vf wk[5];
        if (wregs == 2) {
            KS_DW_UNROLL(5)
            for (int kx = 0; kx < KW; kx++)
                wk[kx] = ks_dw_load_a(w + LANES * (ky * KW + kx + 1));
        }
        KS_DW_UNROLL(DW_ROW_SPAN)
        for (int i = 0; i < (NPX - 1) * SW + KW; i++) {
            vf v = ks_dw_ld(tail, m, rp + (size_t)i * cs);
            KS_DW_UNROLL(DW_NPX_MAX)
            for (int p = 0; p < NPX; p++) {
                int kx = i - p * SW;
                if (kx >= 0 && kx < KW) {
                    int t = ky * KW + kx;
                    vf k = wregs == 1   ? wv[t]
                           : wregs == 2 ? wk[kx]
                                        : ks_dw_load_a(w + LANES * (t + 1));
                    acc[p] = v_fmadd(v, k, acc[p]);
                }
            }
        }
    }
}

/* NPX pixels starting at pixel px of the run. */
KS_INLINE void row_tile(int tail, ks_dw_mask m, int KH, int KW, int SW, int NPX, int wregs,
                        size_t px, size_t cs, size_t c0, const float *const *r, const vf *wv,
                        const float *w, vf bias, float *out, const float *res, vf lo, vf hi) {
    vf acc[DW_NPX_MAX];
    row_sums(tail, m, KH, KW, SW, NPX, wregs, cs, r, px * (size_t)SW * cs + c0, wv, w, acc);
    KS_DW_UNROLL(DW_NPX_MAX)
    for (int p = 0; p < NPX; p++) {
        size_t o = (px + (size_t)p) * cs + c0;
        ks_dw_st(tail, m, out + o, out_clamped(tail, m, acc[p], bias, res, o, lo, hi));
    }
}

/* Channels [c0, c0 + LANES) of num_px pixels; cs is the channel count (a constant when inlined
 * for the common C == 16, so every address is base + immediate). */
KS_INLINE void row_block(int tail, int KH, int KW, int SW, int NPX, size_t num_px, size_t cs,
                         size_t c0, const float *const *r, const float *w, float *out,
                         const float *res, vf lo, vf hi, const ks__f32_act *act) {
    const int wregs = KH * KW <= DW_WREG_TAPS ? 1 : NPX >= 8 ? 2 : 0;
    ks_dw_mask m = ks_dw_mask_of(cs - c0);
    vf wv[DW_WREG_TAPS];
    if (wregs == 1) {
        KS_DW_UNROLL(DW_WREG_TAPS)
        for (int t = 0; t < KH * KW; t++)
            wv[t] = ks_dw_load_a(w + LANES * (t + 1));
    }
    vf bias = ks_dw_load_a(w), slope = ks_dw_load_a(w + LANES * (KH * KW + 1));
    size_t px = 0;
    for (; px + (size_t)NPX <= num_px; px += (size_t)NPX)
        row_tile(tail, m, KH, KW, SW, NPX, wregs, px, cs, c0, r, wv, w, bias, out, res, lo, hi);
    /* the last < NPX pixels: a group of 4 first (a lone accumulator waits on FMA latency, which
     * shows on short rows), then one at a time; the masked tail block keeps only the latter */
    const int wregs_short = wregs == 2 ? 0 : wregs;
    if (!tail && NPX > 4 && px + 4 <= num_px) {
        row_tile(tail, m, KH, KW, SW, 4, wregs_short, px, cs, c0, r, wv, w, bias, out, res, lo, hi);
        px += 4;
    }
    for (; px < num_px; px++)
        row_tile(tail, m, KH, KW, SW, 1, wregs_short, px, cs, c0, r, wv, w, bias, out, res, lo, hi);
    act_rest(tail, m, num_px, cs, out + c0, slope, act);
}

KS_INLINE void row_all(int KH, int KW, int SW, int NPX, size_t num_px, size_t channels,
                       const float *const *rows, const float *packed, float *out, const float *res,
                       const ks__f32_act *act_in) {
    const ks__f32_act a = *act_in, *act = &a; /* see dw_all */
    vf lo = v_set1(act->lo), hi = v_set1(act->hi);
    const size_t block = KS__F32_DW_BLOCK_FLOATS(LANES, KH * KW);
    if (DW_ROW_C16 && channels == 16) {
        /* the common small-channel case with constant addresses */
        KS_DW_UNROLL(4)
        for (size_t c0 = 0; c0 < 16; c0 += LANES)
            row_block(0, KH, KW, SW, NPX, num_px, 16, c0, rows, packed + c0 / LANES * block, out,
                      res, lo, hi, act);
        return;
    }
    size_t c0 = 0;
    for (; c0 + LANES <= channels; c0 += LANES)
        row_block(0, KH, KW, SW, NPX, num_px, channels, c0, rows, packed + c0 / LANES * block, out,
                  res, lo, hi, act);
    if (c0 < channels)
        row_block(1, KH, KW, SW, NPX, num_px, channels, c0, rows, packed + c0 / LANES * block, out,
                  res, lo, hi, act);
}

#define ROW_KERNEL(name, K, S, NPX)                                                                \
    static void name(size_t num_px, size_t channels, const float *const *rows,                     \
                     const float *packed, float *out, const float *res, const ks__f32_act *act) {  \
        row_all(K, K, S, NPX, num_px, channels, rows, packed, out, res, act);                      \
    }
ROW_KERNEL(dw_row_3x3s1, 3, 1, DW_ROW_NPX3)
ROW_KERNEL(dw_row_3x3s2, 3, 2, DW_ROW_NPX3)
ROW_KERNEL(dw_row_5x5s1, 5, 1, DW_ROW_NPX5S1)
ROW_KERNEL(dw_row_5x5s2, 5, 2, 4)

static const ks__f32_dw_config k_cfg = {
    LANES,
    dw_generic,
    dw_3x3,
    dw_5x5,
    {{dw_row_3x3s1, dw_row_3x3s2}, {dw_row_5x5s1, dw_row_5x5s2}}};

static double cost(const ks__kernel_ctx *ctx) {
    return ks__f32_dw_cost(ctx, LANES);
}
static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    return ks__f32_dw_plan(ctx, LANES, packed_bytes_out);
}
static ks_status pack(ks__kernel_ctx *ctx) {
    return ks__f32_dw_pack(ctx, LANES);
}
static ks_status run(ks__kernel_ctx *ctx) {
    return ks__f32_dw_run(ctx, &k_cfg);
}

#if defined(__AVX512F__)
const ks__impl ks_f32_dwconv__avx512_c16 = {
    "ks_f32_dwconv__avx512_c16", KS_OP_CONV2D, KS_ISA_AVX512, cost, plan, pack, run,
};
#elif defined(__aarch64__)
const ks__impl ks_f32_dwconv__neon_c4 = {
    "ks_f32_dwconv__neon_c4", KS_OP_CONV2D, KS_ISA_NEON, cost, plan, pack, run,
};
#else
const ks__impl ks_f32_dwconv__avx2_c8 = {
    "ks_f32_dwconv__avx2_c8", KS_OP_CONV2D, KS_ISA_AVX2, cost, plan, pack, run,
};
#endif
