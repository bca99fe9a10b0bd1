/* CONV2D with few output channels (prediction heads, segmentation outputs: Cout 1..~6), AVX-512.
 *
 * Why: the indirect GEMM pads Cout to its 32-wide panel, so a Cout=1 conv does 32x the work.
 * Here each output pixel is a dot product along the reduction axis instead: with NHWC input and
 * OHWI weights, the taps of one kernel row (kx, ci) are contiguous in both the input row and the
 * weights (for dilation 1), so a pixel costs KH spans of KW*Cin floats, 16 lanes at a time with a
 * masked tail, and one horizontal sum per output channel. The cost model keeps the GEMM where the
 * horizontal sums dominate (many output channels, short spans such as Cin=3 stems).
 *
 * With Cout <= 4 and Cin 1, 2, 4 or 8 (unit horizontal stride) or a multiple of 16 (any stride),
 * a "pixel-packed" path runs instead: spans of Cin < 16 floats would leave most lanes empty, and
 * a horizontal sum per pixel costs more than the taps themselves (BlazePose's 3x3 8->1
 * segmentation head at 256x256 went from 0.86 to ~0.11 ms; YOLOX's 1x1 64->1 objectness heads
 * about 3x). There, 16 output pixels are computed together: for Cin < 16 one zmm holds 16/Cin
 * neighbouring pixels' channels, so a tap is Cin loads and FMAs against a weight vector
 * replicated at pack time; for Cin = 16m each pixel has its own accumulator and a tap is m
 * chunks. The 16 pixels' lane groups are then folded by one shared permute tree (log2 of the
 * lanes per pixel levels) instead of 16 separate horizontal sums, and the activation runs over
 * the finished output row with the shared vector activations (f32_vsimd.h).
 *
 * Summation order per output: lane-wise over the spans (taps), then a fixed lane tree, then bias;
 * it does not depend on the thread count (work is split by output rows).
 */
#include <immintrin.h>

#include "../../perf.h"
#include "../avx2/f32_vsimd.h" /* v_act_inplace: vector activations, 16 lanes here */

#define CO_BLOCK 4

static inline float hsum16(__m512 v) {
    __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    b = _mm_add_ps(b, _mm_movehl_ps(b, b));
    b = _mm_add_ss(b, _mm_movehdup_ps(b));
    return _mm_cvtss_f32(b);
}

typedef struct smallco_job {
    ks__smallconv_geom g;
    const float *x, *w, *bias;
    float *y;
    /* pixel-packed path only */
    const float *wrep;  /* [oc][kh][kw][16]: w[co][ky][kx][0..ic) repeated 16/ic times */
    __m512i lane_pix;   /* lane -> pixel offset within its vector (lane / ic) */
    __m512i fold_lo[5]; /* by log2 of lanes per pixel group: permutes of one fold level */
    __m512i fold_hi[5];
} smallco_job;

/* Up to CO_BLOCK output channels: each one re-reads the tile's inputs (from L1), which beats the
 * GEMM's padded panels only while the channels are few. */
static bool pix_path(const ks__smallconv_geom *g) {
    if (g->oc > CO_BLOCK) return false;
    if (g->ic % 16 == 0) return true; /* a vector per pixel: any stride */
    return g->sw == 1 && (g->ic == 1 || g->ic == 2 || g->ic == 4 || g->ic == 8);
}

/* Floats per tap in the packed weights: 16 (Cin repeated) below 16 channels, else Cin. */
static int64_t pix_tap_floats(const ks__smallconv_geom *g) {
    return g->ic < 16 ? 16 : g->ic;
}

/* acc[0..nco) += span(x, len) . span(w + c * wstride, len). Always inlined with a constant nco
 * so that the accumulators live in registers. */
static inline __attribute__((always_inline)) void
dot_spans(__m512 *acc, int nco, const float *x, const float *w, int64_t wstride, int64_t len) {
    int64_t i = 0;
    for (; i + 16 <= len; i += 16) {
        __m512 xv = _mm512_loadu_ps(x + i);
        for (int c = 0; c < nco; c++)
            acc[c] = _mm512_fmadd_ps(xv, _mm512_loadu_ps(w + c * wstride + i), acc[c]);
    }
    if (i < len) {
        __mmask16 m = (__mmask16)((1u << (len - i)) - 1u);
        __m512 xv = _mm512_maskz_loadu_ps(m, x + i);
        for (int c = 0; c < nco; c++)
            acc[c] = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(m, w + c * wstride + i), acc[c]);
    }
}

/* One output pixel, output channels [c0, c0 + nco); nco is a constant after inlining. */
static inline __attribute__((always_inline)) void pixel_block(const smallco_job *j, const float *xn,
                                                              int64_t oy, int64_t ix0, int64_t kx0,
                                                              int64_t kx1, int64_t c0, int nco,
                                                              float *ypx) {
    const ks__smallconv_geom *g = &j->g;
    const int64_t wstride = g->kh * g->kw * g->ic; /* floats per output channel */
    __m512 acc[CO_BLOCK];
    for (int c = 0; c < CO_BLOCK; c++)
        acc[c] = _mm512_setzero_ps();
    for (int64_t ky = 0; ky < g->kh && kx0 < kx1; ky++) {
        const int64_t iy = oy * g->sh - g->pt + ky * g->dh;
        if (iy < 0 || iy >= g->ih) continue;
        const float *xr = xn + iy * g->iw * g->ic;
        const float *wr = j->w + c0 * wstride + ky * g->kw * g->ic;
        if (g->dw == 1) {
            dot_spans(acc, nco, xr + (ix0 + kx0) * g->ic, wr + kx0 * g->ic, wstride,
                      (kx1 - kx0) * g->ic);
        } else {
            for (int64_t kx = kx0; kx < kx1; kx++)
                dot_spans(acc, nco, xr + (ix0 + kx * g->dw) * g->ic, wr + kx * g->ic, wstride,
                          g->ic);
        }
    }
    for (int c = 0; c < nco; c++) {
        float v = hsum16(acc[c]);
        if (j->bias) v += j->bias[c0 + c];
        ypx[c0 + c] = v; /* the activation runs over the whole row (smallco_rows) */
    }
}

/* The three taps of one kernel row for Cin 8, 16 output pixels from input pixel e on (all inside
 * the row). A vector holds two pixels, so every other tap's vectors start at an odd pixel: with
 * 64-byte aligned rows those loads would straddle cache lines. Instead the pixel pairs starting
 * at even pixels are loaded once and the odd-start vectors are made from neighbours by one
 * 256-bit lane shuffle. Same products, same order as the generic tap loop. */
static inline __attribute__((always_inline)) void row3_c8(__m512 *acc, const float *xr, int64_t e,
                                                          const float *w) {
    const int off = (int)(e & 1);
    const float *xa = xr + (e - off) * 8; /* pixel pair j covers pixels e - off + 2j, +1 */
    __m512 a[10], sh[9];
    /* the first pair's first pixel (e - 1) and the last pair's second pixel (e + 18) may lie
     * outside the row and are never used */
    a[0] = off ? _mm512_maskz_loadu_ps(0xFF00, xa) : _mm512_loadu_ps(xa);
#pragma GCC unroll 8
    for (int q = 1; q < 9; q++)
        a[q] = _mm512_loadu_ps(xa + 16 * q);
    a[9] = off ? _mm512_maskz_loadu_ps(0x00FF, xa + 144) : _mm512_setzero_ps();
#pragma GCC unroll 9
    for (int q = 0; q < 9; q++)
        sh[q] = _mm512_shuffle_f32x4(a[q], a[q + 1], _MM_SHUFFLE(1, 0, 3, 2));
    const __m512 w0 = _mm512_load_ps(w), w1 = _mm512_load_ps(w + 16), w2 = _mm512_load_ps(w + 32);
    if (off) {
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            acc[k] = _mm512_fmadd_ps(sh[k], w0, acc[k]);
            acc[k] = _mm512_fmadd_ps(a[k + 1], w1, acc[k]);
            acc[k] = _mm512_fmadd_ps(sh[k + 1], w2, acc[k]);
        }
    } else {
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            acc[k] = _mm512_fmadd_ps(a[k], w0, acc[k]);
            acc[k] = _mm512_fmadd_ps(sh[k], w1, acc[k]);
            acc[k] = _mm512_fmadd_ps(a[k + 1], w2, acc[k]);
        }
    }
}

/* One level of the fold tree: vectors 2i and 2i+1 (pixel groups of L lanes) -> vector i (groups
 * of L/2 lanes, the pixels of 2i then those of 2i+1). */
static inline __attribute__((always_inline)) void fold_level(__m512 *acc, const int pairs,
                                                             __m512i lo, __m512i hi) {
#pragma GCC unroll 8
    for (int i = 0; i < pairs; i++)
        acc[i] = _mm512_add_ps(_mm512_permutex2var_ps(acc[2 * i], lo, acc[2 * i + 1]),
                               _mm512_permutex2var_ps(acc[2 * i], hi, acc[2 * i + 1]));
}

/* One output row on the pixel-packed path; v (== Cin, or 16 when Cin is a multiple of 16) is a
 * constant after inlining. Tiles of 16 output pixels: vector k of a tap holds input pixels
 * [ix + k*16/v, ix + (k+1)*16/v), whole (Cin < 16, unit stride), or one chunk of 16 channels of
 * output pixel k's input pixel. */
static inline __attribute__((always_inline)) void
pix_row(const smallco_job *j, const int v, const float *xn, int64_t oy, float *yrow) {
    const ks__smallconv_geom *g = &j->g;
    const int64_t ppv = 16 / v;             /* pixels per vector */
    const int64_t pstride = ppv * g->sw;    /* input pixels between vectors */
    const int64_t chunks = g->ic / v;       /* vectors per pixel and tap: Cin / 16, or 1 */
    const int64_t tapf = pix_tap_floats(g); /* packed floats per tap */
    const int64_t taps = g->kh * g->kw;
    const __m512i iw = _mm512_set1_epi32((int32_t)g->iw);
    for (int64_t ox0 = 0; ox0 < g->ow; ox0 += 16) {
        const int64_t npx = g->ow - ox0 < 16 ? g->ow - ox0 : 16;
        const bool interior =
            ox0 * g->sw - g->pl >= 0 && (ox0 + 15) * g->sw + (g->kw - 1) * g->dw - g->pl < g->iw;
        for (int64_t co = 0; co < g->oc; co++) {
            __m512 acc[16];
#pragma GCC unroll 16
            for (int k = 0; k < v; k++)
                acc[k] = _mm512_setzero_ps();
            const float *wp = j->wrep + co * taps * tapf;
            for (int64_t ky = 0; ky < g->kh; ky++) {
                const int64_t iy = oy * g->sh - g->pt + ky * g->dh;
                if (iy < 0 || iy >= g->ih) continue;
                const float *xr = xn + iy * g->iw * g->ic;
                if (v == 8 && interior && g->kw == 3 && g->dw == 1) {
                    row3_c8(acc, xr, ox0 - g->pl, wp + ky * 3 * 16);
                    continue;
                }
                for (int64_t kx = 0; kx < g->kw; kx++) {
                    const int64_t ix = ox0 * g->sw + kx * g->dw - g->pl;
                    for (int64_t c = 0; c < chunks; c++) {
                        const __m512 wv = _mm512_load_ps(wp + (ky * g->kw + kx) * tapf + c * 16);
                        const float *xc = xr + c * 16;
                        if (interior) {
#pragma GCC unroll 16
                            for (int k = 0; k < v; k++)
                                acc[k] = _mm512_fmadd_ps(
                                    _mm512_loadu_ps(xc + (ix + k * pstride) * g->ic), wv, acc[k]);
                        } else {
                            /* lanes of pixels outside the row read nothing (zero padding) */
#pragma GCC unroll 16
                            for (int k = 0; k < v; k++) {
                                const int64_t ixk = ix + k * pstride;
                                const __mmask16 m = _mm512_cmplt_epu32_mask(
                                    _mm512_add_epi32(j->lane_pix, _mm512_set1_epi32((int32_t)ixk)),
                                    iw);
                                if (m)
                                    acc[k] = _mm512_fmadd_ps(
                                        _mm512_maskz_loadu_ps(m, xc + ixk * g->ic), wv, acc[k]);
                            }
                        }
                    }
                }
            }
            if (v >= 16) fold_level(acc, 8, j->fold_lo[4], j->fold_hi[4]);
            if (v >= 8) fold_level(acc, 4, j->fold_lo[3], j->fold_hi[3]);
            if (v >= 4) fold_level(acc, 2, j->fold_lo[2], j->fold_hi[2]);
            if (v >= 2) fold_level(acc, 1, j->fold_lo[1], j->fold_hi[1]);
            __m512 r = acc[0];
            if (j->bias) r = _mm512_add_ps(r, _mm512_set1_ps(j->bias[co]));
            if (g->oc == 1) {
                _mm512_mask_storeu_ps(yrow + ox0, (__mmask16)((1u << npx) - 1u), r);
            } else {
                _Alignas(64) float tmp[16];
                _mm512_store_ps(tmp, r);
                for (int64_t p = 0; p < npx; p++)
                    yrow[(ox0 + p) * g->oc + co] = tmp[p];
            }
        }
    }
    if (g->act != KS_ACT_NONE) v_act_inplace(yrow, (size_t)(g->ow * g->oc), g->act, g->alpha);
}

static void pix_rows(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const smallco_job *j = (const smallco_job *)arg;
    const ks__smallconv_geom *g = &j->g;
    for (size_t row = begin; row < end; row++) {
        const int64_t n = (int64_t)row / g->oh, oy = (int64_t)row % g->oh;
        const float *xn = j->x + n * g->ih * g->iw * g->ic;
        float *yrow = j->y + (int64_t)row * g->ow * g->oc;
        switch (g->ic) {
        case 1:
            pix_row(j, 1, xn, oy, yrow);
            break;
        case 2:
            pix_row(j, 2, xn, oy, yrow);
            break;
        case 4:
            pix_row(j, 4, xn, oy, yrow);
            break;
        case 8:
            pix_row(j, 8, xn, oy, yrow);
            break;
        default: /* multiples of 16 */
            pix_row(j, 16, xn, oy, yrow);
            break;
        }
    }
}

/* Index vectors of one fold level (L lanes per pixel group -> L/2) and lane -> pixel offsets. */
static void pix_consts(smallco_job *j) {
    _Alignas(64) int32_t lo[16], hi[16];
    for (int lvl = 1; lvl <= 4; lvl++) {
        const int L = 1 << lvl, half = L / 2, groups = 16 / L;
        for (int o = 0; o < 16; o++) {
            const int q = o / half, i = o % half;
            lo[o] = q < groups ? q * L + i : 16 + (q - groups) * L + i;
            hi[o] = lo[o] + half;
        }
        j->fold_lo[lvl] = _mm512_load_si512(lo);
        j->fold_hi[lvl] = _mm512_load_si512(hi);
    }
    j->fold_lo[0] = j->fold_hi[0] = _mm512_setzero_si512();
    for (int l = 0; l < 16; l++)
        lo[l] = j->g.ic < 16 ? l / (int)j->g.ic : 0;
    j->lane_pix = _mm512_load_si512(lo);
}

static void smallco_rows(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const smallco_job *j = (const smallco_job *)arg;
    const ks__smallconv_geom *g = &j->g;
    for (size_t row = begin; row < end; row++) {
        const int64_t n = (int64_t)row / g->oh, oy = (int64_t)row % g->oh;
        const float *xn = j->x + n * g->ih * g->iw * g->ic;
        float *yrow = j->y + (int64_t)row * g->ow * g->oc;
        for (int64_t ox = 0; ox < g->ow; ox++) {
            const int64_t ix0 = ox * g->sw - g->pl;
            /* kx range whose input column is inside the row */
            int64_t kx0 = 0, kx1 = g->kw;
            while (kx0 < kx1 && ix0 + kx0 * g->dw < 0)
                kx0++;
            while (kx1 > kx0 && ix0 + (kx1 - 1) * g->dw >= g->iw)
                kx1--;
            float *ypx = yrow + ox * g->oc;
            for (int64_t c0 = 0; c0 < g->oc; c0 += CO_BLOCK) {
                switch (g->oc - c0 < CO_BLOCK ? g->oc - c0 : CO_BLOCK) {
                case 1:
                    pixel_block(j, xn, oy, ix0, kx0, kx1, c0, 1, ypx);
                    break;
                case 2:
                    pixel_block(j, xn, oy, ix0, kx0, kx1, c0, 2, ypx);
                    break;
                case 3:
                    pixel_block(j, xn, oy, ix0, kx0, kx1, c0, 3, ypx);
                    break;
                default:
                    pixel_block(j, xn, oy, ix0, kx0, kx1, c0, 4, ypx);
                    break;
                }
            }
        }
        if (g->act != KS_ACT_NONE) v_act_inplace(yrow, (size_t)(g->ow * g->oc), g->act, g->alpha);
    }
}

static double smallco_cost(const ks__kernel_ctx *ctx) {
    ks__smallconv_geom g;
    if (!ks__smallconv_geom_make(ctx, &g)) return -1.0;
    if (g.oc > 16) return -1.0;
    if (pix_path(&g)) {
        /* per output channel and tile of 16 pixels: a load and an FMA per tap and vector, the
         * fold tree (two permutes and an add per fold), bias, activation and the store */
        const int64_t v = g.ic < 16 ? g.ic : 16;
        const double per_tile = (double)(g.kh * g.kw * g.ic) + 1.5 * (double)(v - 1) + 8.0;
        return per_tile * (double)g.oc * (double)(g.n * g.oh * ((g.ow + 15) / 16));
    }
    const double span = g.dw == 1 ? (double)(g.kw * g.ic) : (double)g.ic;
    const double spans = g.dw == 1 ? (double)g.kh : (double)(g.kh * g.kw);
    const double chunks = spans * (double)(((int64_t)span + 15) / 16);
    /* per pixel: loads (two per cycle) feeding one FMA per output channel and chunk, a
     * horizontal sum, bias and activation per output, and the pixel's own bookkeeping; same unit
     * as the GEMM's cost (cycles at peak) */
    const double per_px = chunks * ((double)g.oc + 1.0) / 2.0 + 6.0 * (double)g.oc + 4.0;
    return per_px * (double)(g.n * g.oh * g.ow);
}

static ks_status smallco_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    ks__smallconv_geom g;
    *packed_bytes_out = 0;
    if (!ks__smallconv_geom_make(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "not a small-output-channel conv");
    if (pix_path(&g))
        *packed_bytes_out = (size_t)(g.oc * g.kh * g.kw * pix_tap_floats(&g)) * sizeof(float);
    return KS_STATUS_OK;
}

static ks_status smallco_pack(ks__kernel_ctx *ctx) {
    ks__smallconv_geom g;
    if (!ks__smallconv_geom_make(ctx, &g) || !pix_path(&g)) return KS_STATUS_OK;
    const int64_t tapf = pix_tap_floats(&g);
    const size_t need = (size_t)(g.oc * g.kh * g.kw * tapf) * sizeof(float);
    if (!ctx->packed || ctx->packed_bytes < need)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "packed weights missing");
    const float *w = (const float *)ctx->in[1]->data;
    float *dst = (float *)ctx->packed;
    for (int64_t t = 0; t < g.oc * g.kh * g.kw; t++)
        for (int64_t l = 0; l < tapf; l++)
            dst[t * tapf + l] = w[t * g.ic + l % g.ic];
    return KS_STATUS_OK;
}

static ks_status smallco_run(ks__kernel_ctx *ctx) {
    smallco_job j;
    if (!ks__smallconv_geom_make(ctx, &j.g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "shapes changed after planning");
    j.x = (const float *)ctx->in[0]->data;
    j.w = (const float *)ctx->in[1]->data;
    j.bias = ctx->num_inputs > 2 && ctx->in[2] ? (const float *)ctx->in[2]->data : NULL;
    j.y = (float *)ctx->out[0]->data;
    const int64_t rows = j.g.n * j.g.oh;
    if (rows == 0 || j.g.ow == 0) return KS_STATUS_OK;
    const int64_t work_per_row = j.g.ow * j.g.oc * j.g.kh * j.g.kw * j.g.ic;
    const size_t grain = (size_t)(32768 / (work_per_row + 1)) + 1;
    if (pix_path(&j.g)) {
        if (!ctx->packed ||
            ctx->packed_bytes <
                (size_t)(j.g.oc * j.g.kh * j.g.kw * pix_tap_floats(&j.g)) * sizeof(float))
            return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "packed weights missing");
        j.wrep = (const float *)ctx->packed;
        pix_consts(&j);
        ks__parallel_for(ctx->pool, (size_t)rows, grain, pix_rows, &j);
        return KS_STATUS_OK;
    }
    ks__parallel_for(ctx->pool, (size_t)rows, grain, smallco_rows, &j);
    return KS_STATUS_OK;
}

const ks__impl ks_f32_conv2d_smallco__avx512 = {"ks_f32_conv2d_smallco__avx512",
                                                KS_OP_CONV2D,
                                                KS_ISA_AVX512,
                                                smallco_cost,
                                                smallco_plan,
                                                smallco_pack,
                                                smallco_run};
