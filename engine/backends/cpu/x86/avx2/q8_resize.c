/* Quantized (U8 / I8) bilinear RESIZE for AVX2, byte-identical with the reference
 * (ref/conv_resize.c, after TFLite's reference kernels): U8 interpolates the codes in float, each
 * tap's weight the product (1 - dy) * (1 - dx) and so on, summed in the reference's order and
 * truncated after adding 0.5; I8 (asymmetric, align-corners and half-pixel coordinates) is
 * TFLite's 10-bit fixed-point kernel, exact in 32-bit lanes (a tap is at most 128 * 1280 * 1280
 * in magnitude). The per-row and per-column taps and weights are computed once at reshape by the
 * reference's own coordinate functions (conv_internal.h) into the packed area; run vectorizes
 * over channels, 8 at a time, and the last C % 8 of a pixel as the pixel's last 8 channels
 * (overlapping the step before; with C < 8 through a small buffer), so that nothing past the
 * tensors is read or written. The other 8-bit cases (I8 in the other coordinate modes,
 * nearest mode) stay with the reference.
 *
 * Why: deeplabv3's uint8 upsampling of its 21 class maps to 513 x 513 took 66-73 ms of its
 * 115-170 ms on the reference kernel (12 ns per value); movenet's three int8 upsamplings 1 ms.
 */
#include <immintrin.h>
#include <string.h>

#include "../../impl.h"
#include "../../ref/conv_internal.h"

typedef struct axis_tap {
    int32_t lo, hi;
    float frac; /* U8: source - lo, as the reference computes it (may be < 0 or > 1) */
    int32_t w;  /* I8: the 10-bit weight of `hi`: source * 1024 - lo * 1024 */
} axis_tap;

typedef struct rs_hdr {
    int64_t n, ih, iw, c, oh, ow;
    int32_t i8; /* 1: the I8 fixed-point kernel, 0: U8 in float */
    int32_t pad[3];
} rs_hdr;

/* Whether this kernel computes ctx's node exactly as the reference does. */
static int takes(const ks__kernel_ctx *ctx, ks__resize_geom *g) {
    if (ctx->num_inputs < 1 || ctx->num_outputs != 1) return 0;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (!x || !y || x->dtype != y->dtype || x->rank != 4 || y->rank != 4) return 0;
    if (x->dtype != KS_DTYPE_U8 && x->dtype != KS_DTYPE_I8) return 0;
    if (ks__resize_geometry((ks__kernel_ctx *)ctx, g) != KS_STATUS_OK || g->mode != 1) return 0;
    if (x->dtype == KS_DTYPE_I8 && g->coord != KS_RESIZE_ASYMMETRIC &&
        g->coord != KS_RESIZE_ALIGN_CORNERS && g->coord != KS_RESIZE_HALF_PIXEL)
        return 0;
    return g->c >= 1 && g->oh <= INT32_MAX && g->ow <= INT32_MAX && g->ih <= INT32_MAX &&
           g->iw <= INT32_MAX;
}

static size_t table_bytes(const ks__resize_geom *g) {
    return sizeof(rs_hdr) + (size_t)(g->oh + g->ow) * sizeof(axis_tap);
}

static double cost(const ks__kernel_ctx *ctx) {
    ks__resize_geom g;
    if (!takes(ctx, &g)) return -1.0;
    return (double)(g.n * g.oh * g.ow) * (double)((g.c + 7) / 8 + 2);
}

static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    ks__resize_geom g;
    *packed_bytes_out = takes(ctx, &g) ? table_bytes(&g) : 0;
    return KS_STATUS_OK;
}

/* One axis: the reference's taps and weights for every output index. */
static void make_axis(axis_tap *t, int64_t in, int64_t out, float ratio, int32_t coord, int i8) {
    int64_t s10 = ks__resize_int_scale(in, out, coord == KS_RESIZE_ALIGN_CORNERS);
    for (int64_t o = 0; o < out; o++) {
        int64_t lo, hi, src = 0;
        if (i8) {
            ks__resize_int_coord(o, s10, coord == KS_RESIZE_HALF_PIXEL, in, &src, &lo, &hi);
            t[o].w = (int32_t)(src - (1 << 10) * lo);
            t[o].frac = 0.0f;
        } else {
            float f = ks__resize_source_coord(o, out, ratio, coord);
            ks__resize_tfl_bounds(f, in, &lo, &hi);
            t[o].frac = f - (float)lo;
            t[o].w = 0;
        }
        t[o].lo = (int32_t)lo;
        t[o].hi = (int32_t)hi;
    }
}

static ks_status pack(ks__kernel_ctx *ctx) {
    ks__resize_geom g;
    if (!takes(ctx, &g) || !ctx->packed || ctx->packed_bytes < table_bytes(&g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 resize: the table does not fit");
    rs_hdr h = {g.n, g.ih, g.iw, g.c, g.oh, g.ow, ctx->in[0]->dtype == KS_DTYPE_I8, {0, 0, 0}};
    memcpy(ctx->packed, &h, sizeof(h));
    axis_tap *rows = (axis_tap *)(void *)((uint8_t *)ctx->packed + sizeof(rs_hdr));
    make_axis(rows, g.ih, g.oh, g.ratio_h, g.coord, h.i8);
    make_axis(rows + g.oh, g.iw, g.ow, g.ratio_w, g.coord, h.i8);
    return KS_STATUS_OK;
}

typedef struct rs_job {
    rs_hdr h;
    const axis_tap *ry, *rx;
    const uint8_t *x;
    uint8_t *y;
} rs_job;

static __m256 load8_u8(const uint8_t *p) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p)));
}

static __m256i load8_i8(const uint8_t *p) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}

/* 8 channels of one output pixel: U8 in float, in the reference's operation order. */
static void pixel8_u8(const uint8_t *p00, const uint8_t *p01, const uint8_t *p10,
                      const uint8_t *p11, __m256 a, __m256 b, __m256 c, __m256 d, uint8_t *out) {
    __m256 t00 = _mm256_mul_ps(_mm256_mul_ps(load8_u8(p00), a), c);
    __m256 t10 = _mm256_mul_ps(_mm256_mul_ps(load8_u8(p10), b), c);
    __m256 t01 = _mm256_mul_ps(_mm256_mul_ps(load8_u8(p01), a), d);
    __m256 t11 = _mm256_mul_ps(_mm256_mul_ps(load8_u8(p11), b), d);
    __m256 v = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(t00, t10), t01), t11);
    __m256i q = _mm256_cvttps_epi32(_mm256_add_ps(v, _mm256_set1_ps(0.5f)));
    q = _mm256_min_epi32(_mm256_max_epi32(q, _mm256_setzero_si256()), _mm256_set1_epi32(255));
    __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64((__m128i *)(void *)out, _mm_packus_epi16(w, w));
}

/* 8 channels of one output pixel: I8 in 10-bit fixed point, rounded half away from zero and
 * divided with truncation, as the reference's int64 arithmetic. */
static void pixel8_i8(const uint8_t *p00, const uint8_t *p01, const uint8_t *p10,
                      const uint8_t *p11, __m256i w00, __m256i w01, __m256i w10, __m256i w11,
                      uint8_t *out) {
    __m256i acc = _mm256_mullo_epi32(load8_i8(p00), w00);
    acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(load8_i8(p10), w10));
    acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(load8_i8(p01), w01));
    acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(load8_i8(p11), w11));
    __m256i pos = _mm256_cmpgt_epi32(acc, _mm256_setzero_si256());
    __m256i r = _mm256_add_epi32(
        acc, _mm256_blendv_epi8(_mm256_set1_epi32(-(1 << 19)), _mm256_set1_epi32(1 << 19), pos));
    /* r / 2^20 toward zero: add 2^20 - 1 to negative r before the arithmetic shift */
    __m256i neg = _mm256_srai_epi32(r, 31);
    __m256i q = _mm256_srai_epi32(
        _mm256_add_epi32(r, _mm256_and_si256(neg, _mm256_set1_epi32((1 << 20) - 1))), 20);
    q = _mm256_min_epi32(_mm256_max_epi32(q, _mm256_set1_epi32(-128)), _mm256_set1_epi32(127));
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64((__m128i *)(void *)out, _mm_packs_epi16(w, w));
}

static void rows_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const rs_job *j = (const rs_job *)arg;
    (void)thread;
    const rs_hdr *h = &j->h;
    size_t c = (size_t)h->c;
    for (size_t r = begin; r < end; r++) { /* r = n * oh + oy */
        size_t n = r / (size_t)h->oh, oy = r % (size_t)h->oh;
        const axis_tap *ty = &j->ry[oy];
        const uint8_t *row0 =
            j->x + ((size_t)n * (size_t)h->ih + (size_t)ty->lo) * (size_t)h->iw * c;
        const uint8_t *row1 =
            j->x + ((size_t)n * (size_t)h->ih + (size_t)ty->hi) * (size_t)h->iw * c;
        uint8_t *out = j->y + r * (size_t)h->ow * c;
        float dy = ty->frac;
        __m256 a = _mm256_set1_ps(1 - dy), b = _mm256_set1_ps(dy);
        int32_t wy = ty->w;
        for (size_t ox = 0; ox < (size_t)h->ow; ox++, out += c) {
            const axis_tap *tx = &j->rx[ox];
            const uint8_t *p00 = row0 + (size_t)tx->lo * c, *p01 = row0 + (size_t)tx->hi * c;
            const uint8_t *p10 = row1 + (size_t)tx->lo * c, *p11 = row1 + (size_t)tx->hi * c;
            __m256i w00 = _mm256_setzero_si256(), w01 = w00, w10 = w00, w11 = w00;
            __m256 cc = _mm256_setzero_ps(), d = cc;
            if (h->i8) {
                int32_t wx = tx->w;
                w00 = _mm256_set1_epi32(((1 << 10) - wy) * ((1 << 10) - wx));
                w10 = _mm256_set1_epi32(wy * ((1 << 10) - wx));
                w01 = _mm256_set1_epi32(((1 << 10) - wy) * wx);
                w11 = _mm256_set1_epi32(wy * wx);
            } else {
                cc = _mm256_set1_ps(1 - tx->frac);
                d = _mm256_set1_ps(tx->frac);
            }
            if (c >= 8) {
                /* whole steps, then the last 8 channels of the pixel (overlapping the step before
                 * it: those channels are computed twice, identically) instead of the buffered
                 * tail below; deeplabv3's 21 class maps spent most of their resize there */
                for (size_t k = 0;; k += 8) {
                    if (k + 8 > c) k = c - 8;
                    if (h->i8)
                        pixel8_i8(p00 + k, p01 + k, p10 + k, p11 + k, w00, w01, w10, w11, out + k);
                    else
                        pixel8_u8(p00 + k, p01 + k, p10 + k, p11 + k, a, b, cc, d, out + k);
                    if (k + 8 >= c) break;
                }
                continue;
            }
            for (size_t k = 0; k < c; k += 8) {
                const uint8_t *q[4] = {p00 + k, p01 + k, p10 + k, p11 + k};
                uint8_t in[4][8], res[8], *dst = out + k;
                size_t m = c - k < 8 ? c - k : 8; /* channels in this step */
                if (m < 8) { /* the last C % 8 through buffers: nothing past the tensors */
                    for (int t = 0; t < 4; t++) {
                        memset(in[t], 0, sizeof(in[t]));
                        memcpy(in[t], q[t], m);
                        q[t] = in[t];
                    }
                    dst = res;
                }
                if (h->i8)
                    pixel8_i8(q[0], q[1], q[2], q[3], w00, w01, w10, w11, dst);
                else
                    pixel8_u8(q[0], q[1], q[2], q[3], a, b, cc, d, dst);
                if (m < 8) memcpy(out + k, res, m);
            }
        }
    }
}

static ks_status run(ks__kernel_ctx *ctx) {
    rs_job j;
    if (!ctx->packed || ctx->packed_bytes < sizeof(rs_hdr))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 resize: no table");
    memcpy(&j.h, ctx->packed, sizeof(j.h));
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (x->dims[0] != j.h.n || x->dims[1] != j.h.ih || x->dims[2] != j.h.iw ||
        x->dims[3] != j.h.c || y->dims[1] != j.h.oh || y->dims[2] != j.h.ow)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 resize: shapes changed since reshape");
    j.ry = (const axis_tap *)(const void *)((const uint8_t *)ctx->packed + sizeof(rs_hdr));
    j.rx = j.ry + j.h.oh;
    j.x = (const uint8_t *)x->data;
    j.y = (uint8_t *)y->data;
    size_t rows = (size_t)(j.h.n * j.h.oh);
    size_t grain = (size_t)(4096 / (j.h.ow * j.h.c + 1)) + 1;
    ks__parallel_for(ctx->pool, rows, grain, rows_range, &j);
    return KS_STATUS_OK;
}

const ks__impl ks_q8_resize__avx2 = {
    "ks_q8_resize__avx2", KS_OP_RESIZE, KS_ISA_AVX2, cost, plan, pack, run};
