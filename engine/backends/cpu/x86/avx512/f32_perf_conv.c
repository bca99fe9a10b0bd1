/* CONV2D with few output channels (prediction heads, segmentation outputs: Cout 1..~6), AVX-512.
 *
 * Why: the indirect GEMM pads Cout to its 32-wide panel, so a Cout=1 conv does 32x the work.
 * Here each output pixel is a dot product along the reduction axis instead: with NHWC input and
 * OHWI weights, the taps of one kernel row (kx, ci) are contiguous in both the input row and the
 * weights (for dilation 1), so a pixel costs KH spans of KW*Cin floats, 16 lanes at a time with a
 * masked tail, and one horizontal sum per output channel. The cost model keeps the GEMM where the
 * horizontal sums dominate (many output channels, short spans such as Cin=3 stems).
 *
 * Summation order per output: lane-wise over the spans, then a fixed lane tree, then bias; it
 * does not depend on the thread count (work is split by output rows).
 */
#include <immintrin.h>

#include "../../perf.h"

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
} smallco_job;

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
        ypx[c0 + c] = g->act == KS_ACT_NONE ? v : ks__act_apply(v, g->act, g->alpha);
    }
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
    }
}

static double smallco_cost(const ks__kernel_ctx *ctx) {
    ks__smallconv_geom g;
    if (!ks__smallconv_geom_make(ctx, &g)) return -1.0;
    if (g.oc > 16) return -1.0;
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
    (void)ctx;
    *packed_bytes_out = 0;
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
    ks__parallel_for(ctx->pool, (size_t)rows, (size_t)(32768 / (work_per_row + 1)) + 1,
                     smallco_rows, &j);
    return KS_STATUS_OK;
}

const ks__impl ks_f32_conv2d_smallco__avx512 = {"ks_f32_conv2d_smallco__avx512",
                                                KS_OP_CONV2D,
                                                KS_ISA_AVX512,
                                                smallco_cost,
                                                smallco_plan,
                                                NULL,
                                                smallco_run};
