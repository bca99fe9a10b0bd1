/* Depthwise CONV2D with 1, 2, 4 or 8 channels, horizontal stride 1, AVX-512 ("dwrow").
 *
 * Why: the channel-blocked dwconv kernel puts one pixel's channels in a vector, so 8 channels
 * fill half a zmm and 1 channel a sixteenth, and it pays a pointer per tap and pixel. With C
 * dividing 16 and stride 1, an NHWC output row is one flat array in which element f = ox*C + c
 * needs input element f + (kx - pad_left)*C of each kernel row, times w[c] where c = f mod C; the
 * weight pattern repeats every 16 lanes. So each 16-float chunk of the output row is KH*KW FMAs
 * with a broadcast-tiled weight vector. The KH input rows are first copied into zero-padded
 * per-thread row buffers so borders need no special case.
 *
 * Summation order per output: bias, then taps in (ky, kx) order, like the reference; results do
 * not depend on the thread count (rows are split over threads).
 */
#include <immintrin.h>
#include <string.h>

#include "../../perf.h"

#define MAX_TAPS 64

typedef struct dwrow_job {
    ks__smallconv_geom g;
    const float *x, *w, *bias;
    float *y;
    float *scratch;
    size_t scratch_floats_per_thread;
    int64_t row_floats; /* padded input row buffer length */
} dwrow_job;

static bool dwrow_geom(const ks__kernel_ctx *ctx, ks__smallconv_geom *g) {
    if (!ks__smalldw_geom_make(ctx, g)) return false;
    if (g->ic != 1 && g->ic != 2 && g->ic != 4 && g->ic != 8) return false;
    if (g->sw != 1 || g->dw != 1 || g->kh * g->kw > MAX_TAPS) return false;
    if (g->act != KS_ACT_NONE && g->act != KS_ACT_RELU && g->act != KS_ACT_RELU6 &&
        g->act != KS_ACT_RELU_N1_TO_1)
        return false;
    return true;
}

static int64_t padded_row_floats(const ks__smallconv_geom *g) {
    /* output columns plus the kernel's reach, rounded up to whole vectors, plus one vector of
     * slack so the last chunk's shifted loads stay inside */
    int64_t f = (g->ow + g->kw) * g->ic;
    return (f + 15) / 16 * 16 + 16;
}

static void dwrow_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const dwrow_job *j = (const dwrow_job *)arg;
    const ks__smallconv_geom *g = &j->g;
    const int64_t c = g->ic, taps = g->kh * g->kw, rf = j->row_floats;
    float *bufs = j->scratch + (size_t)thread * j->scratch_floats_per_thread;
    /* tiled weights: wv[t] lane l = w[l mod C, tap t]; bias likewise */
    __m512 wv[MAX_TAPS];
    float lanes[16];
    for (int64_t t = 0; t < taps; t++) {
        for (int l = 0; l < 16; l++)
            lanes[l] = j->w[(l % c) * taps + t];
        wv[t] = _mm512_loadu_ps(lanes);
    }
    for (int l = 0; l < 16; l++)
        lanes[l] = j->bias ? j->bias[l % c] : 0.0f;
    const __m512 bv = _mm512_loadu_ps(lanes);
    const float lo = g->act == KS_ACT_RELU_N1_TO_1 ? -1.0f : 0.0f;
    const float hi = g->act == KS_ACT_RELU6 ? 6.0f : 1.0f;
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    const bool clamp_lo = g->act != KS_ACT_NONE;
    const bool clamp_hi = g->act == KS_ACT_RELU6 || g->act == KS_ACT_RELU_N1_TO_1;
    const int64_t out_floats = g->ow * c;
    const int64_t in_row = g->iw * c;

    for (size_t row = begin; row < end; row++) {
        const int64_t n = (int64_t)row / g->oh, oy = (int64_t)row % g->oh;
        const float *xn = j->x + n * g->ih * in_row;
        float *yrow = j->y + (int64_t)row * out_floats;
        /* buffer ky holds input row iy with pl zero columns in front: output column ox, tap kx
         * reads buffer column ox + kx */
        bool valid[MAX_TAPS];
        for (int64_t ky = 0; ky < g->kh; ky++) {
            const int64_t iy = oy * g->sh - g->pt + ky * g->dh;
            valid[ky] = iy >= 0 && iy < g->ih;
            if (!valid[ky]) continue;
            float *b = bufs + ky * rf;
            /* columns of the buffer: [0, pl) zero, [pl, pl + iw) input, rest zero; clipped to
             * the buffer when the input is wider than what the output reads */
            int64_t lead = g->pl > 0 ? g->pl : 0;
            int64_t skip = g->pl < 0 ? -g->pl : 0; /* input columns never read */
            int64_t cols = (rf / c) - lead;
            int64_t avail = g->iw - skip;
            if (avail < 0) avail = 0;
            int64_t ncopy = avail < cols ? avail : cols;
            memset(b, 0, (size_t)(lead * c) * sizeof(float));
            memcpy(b + lead * c, xn + iy * in_row + skip * c, (size_t)(ncopy * c) * sizeof(float));
            memset(b + (lead + ncopy) * c, 0, (size_t)(rf - (lead + ncopy) * c) * sizeof(float));
        }
        int64_t f = 0;
        /* four independent chunks per step: one accumulator chain would wait on FMA latency */
        for (; f + 64 <= out_floats; f += 64) {
            __m512 a0 = bv, a1 = bv, a2 = bv, a3 = bv;
            for (int64_t ky = 0; ky < g->kh; ky++) {
                if (!valid[ky]) continue;
                const float *b = bufs + ky * rf + f;
                const __m512 *wk = wv + ky * g->kw;
                for (int64_t kx = 0; kx < g->kw; kx++) {
                    const float *p = b + kx * c;
                    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(p), wk[kx], a0);
                    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(p + 16), wk[kx], a1);
                    a2 = _mm512_fmadd_ps(_mm512_loadu_ps(p + 32), wk[kx], a2);
                    a3 = _mm512_fmadd_ps(_mm512_loadu_ps(p + 48), wk[kx], a3);
                }
            }
            if (clamp_lo) {
                a0 = _mm512_max_ps(a0, vlo), a1 = _mm512_max_ps(a1, vlo);
                a2 = _mm512_max_ps(a2, vlo), a3 = _mm512_max_ps(a3, vlo);
            }
            if (clamp_hi) {
                a0 = _mm512_min_ps(a0, vhi), a1 = _mm512_min_ps(a1, vhi);
                a2 = _mm512_min_ps(a2, vhi), a3 = _mm512_min_ps(a3, vhi);
            }
            _mm512_storeu_ps(yrow + f, a0);
            _mm512_storeu_ps(yrow + f + 16, a1);
            _mm512_storeu_ps(yrow + f + 32, a2);
            _mm512_storeu_ps(yrow + f + 48, a3);
        }
        for (; f < out_floats; f += 16) {
            __m512 acc = bv;
            for (int64_t ky = 0; ky < g->kh; ky++) {
                if (!valid[ky]) continue;
                const float *b = bufs + ky * rf + f;
                const __m512 *wk = wv + ky * g->kw;
                for (int64_t kx = 0; kx < g->kw; kx++)
                    acc = _mm512_fmadd_ps(_mm512_loadu_ps(b + kx * c), wk[kx], acc);
            }
            if (clamp_lo) acc = _mm512_max_ps(acc, vlo);
            if (clamp_hi) acc = _mm512_min_ps(acc, vhi);
            if (f + 16 <= out_floats) {
                _mm512_storeu_ps(yrow + f, acc);
            } else {
                __mmask16 m = (__mmask16)((1u << (out_floats - f)) - 1u);
                _mm512_mask_storeu_ps(yrow + f, m, acc);
            }
        }
    }
}

static size_t scratch_floats(const ks__smallconv_geom *g) {
    return (size_t)(g->kh * padded_row_floats(g) + 16);
}

static double dwrow_cost(const ks__kernel_ctx *ctx) {
    ks__smallconv_geom g;
    if (!dwrow_geom(ctx, &g)) return -1.0;
    /* same unit as ks__f32_dw_cost (per output pixel: taps x (blocks + 0.5)): chunks x taps
     * FMAs plus the row copies, per row */
    const double chunks = (double)((g.ow * g.ic + 15) / 16);
    const double per_row = chunks * (double)(g.kh * g.kw) + (double)g.kh * chunks * 2.0;
    return per_row * (double)(g.n * g.oh);
}

static ks_status dwrow_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    ks__smallconv_geom g;
    if (!dwrow_geom(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "not a small depthwise conv");
    uint32_t threads = ctx->num_threads ? ctx->num_threads : 1;
    ctx->scratch_bytes = scratch_floats(&g) * sizeof(float) * threads;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

static ks_status dwrow_run(ks__kernel_ctx *ctx) {
    dwrow_job j;
    if (!dwrow_geom(ctx, &j.g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "shapes changed after planning");
    j.scratch_floats_per_thread = scratch_floats(&j.g);
    uint32_t threads = ctx->num_threads ? ctx->num_threads : 1;
    if (!ctx->scratch || ctx->scratch_bytes < j.scratch_floats_per_thread * sizeof(float) * threads)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "scratch smaller than planned");
    j.x = (const float *)ctx->in[0]->data;
    j.w = (const float *)ctx->in[1]->data;
    j.bias = ctx->num_inputs > 2 && ctx->in[2] ? (const float *)ctx->in[2]->data : NULL;
    j.y = (float *)ctx->out[0]->data;
    j.scratch = (float *)ctx->scratch;
    j.row_floats = padded_row_floats(&j.g);
    const int64_t rows = j.g.n * j.g.oh;
    if (rows == 0 || j.g.ow == 0) return KS_STATUS_OK;
    const int64_t work_per_row = j.g.ow * j.g.ic * j.g.kh * j.g.kw;
    ks__parallel_for(ctx->pool, (size_t)rows, (size_t)(32768 / (work_per_row + 1)) + 1, dwrow_range,
                     &j);
    return KS_STATUS_OK;
}

const ks__impl ks_f32_dwconv__avx512_dwrow = {"ks_f32_dwconv__avx512_dwrow",
                                              KS_OP_CONV2D,
                                              KS_ISA_AVX512,
                                              dwrow_cost,
                                              dwrow_plan,
                                              NULL,
                                              dwrow_run};
