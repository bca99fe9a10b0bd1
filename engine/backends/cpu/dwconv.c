/* Portable drivers of the fast fp32 depthwise conv, pooling and transpose conv (dwconv.h).
 *
 * Why indirection (per-pixel input pointers) rather than padded copies: padding then costs one
 * pointer to a shared zero vector, every pad mode / stride / dilation is the same microkernel,
 * and the input is read exactly once per tap from where it already is. The pointers for a tile
 * of one output row are rebuilt per tile in per-thread scratch (a few KB), which is cheap next to
 * the channel loop they feed.
 */
#include "dwconv.h"

#include <math.h>
#include <string.h>

#include "ref/conv_internal.h"

#define DW_TILE_PX 64       /* output pixels per indirection tile */
#define DW_ROW_MIN_PX 8     /* shortest interior run worth the row kernel (dw_interior) */
#define DW_SPAN_BYTES 16384 /* the row kernel's working set per call: half of a 32 KB L1 */
#define DW_SPAN_MIN_PX 8    /* and its shortest span (a multiple of every row tile) */
#define DW_SPAN_MIN_C 64    /* fewer channels: whole rows (dw_span) */
#define DW_MAX_TAPS 1024    /* larger windows are left to the reference kernel */
#define POOL_TILE_PX 64
#define DECONV_MAX_TAPS 64 /* per phase; the tap pointers live on the stack */
#define DECONV_MAX_PHASES 64
#define DECONV_MAX_MR 16

static int64_t param_or_one(int32_t v) {
    return v == 0 ? 1 : v;
}

static size_t round_up(size_t v, size_t m) {
    return (v + m - 1) / m * m;
}

/* Leading pad of one axis for SAME/VALID/explicit modes, given the output size infer() chose. */
static int64_t lead_pad(int32_t mode, int64_t explicit_lo, int64_t in, int64_t out, int64_t k_eff,
                        int64_t stride) {
    if (mode == KS_PAD_EXPLICIT) return explicit_lo;
    if (mode == KS_PAD_VALID) return 0;
    int64_t total = (out - 1) * stride + k_eff - in;
    if (total < 0) total = 0;
    return mode == KS_PAD_SAME_UPPER ? total / 2 : total - total / 2;
}

/* Float activation split into clamp + vector op (+ a scalar post pass for tanh/sigmoid).
 * Returns 0 for unknown activations, and for PRELU unless allow_prelu. */
static int act_split(int32_t act, float alpha, int allow_prelu, ks__f32_act *a, int *post) {
    a->lo = -INFINITY, a->hi = INFINITY, a->act = KS_ACT_NONE, a->alpha = alpha;
    *post = 0;
    switch (act) {
    case KS_ACT_NONE:
        return 1;
    case KS_ACT_RELU:
        a->lo = 0.0f;
        return 1;
    case KS_ACT_RELU6:
        a->lo = 0.0f, a->hi = 6.0f;
        return 1;
    case KS_ACT_RELU_N1_TO_1:
        a->lo = -1.0f, a->hi = 1.0f;
        return 1;
    case KS_ACT_LEAKY_RELU:
    case KS_ACT_HARD_SWISH:
    case KS_ACT_SILU:
        a->act = act;
        return 1;
    case KS_ACT_PRELU:
        a->act = act;
        return allow_prelu;
    case KS_ACT_TANH:
    case KS_ACT_SIGMOID:
        *post = 1;
        return 1;
    default:
        return 0;
    }
}

static int is_plain_f32(const ks__rt_tensor *t) {
    return t && t->dtype == KS_DTYPE_F32 && (!t->quant || t->quant->count == 0);
}

/* Weights/bias the packers can read (ks__conv_load_f): F32, F16 or quantized 8-bit. */
static int is_float_weight(const ks__rt_tensor *t) {
    return t && t->data &&
           (t->dtype == KS_DTYPE_F32 || t->dtype == KS_DTYPE_F16 || ks__conv_is_quant(t));
}

static const ks__rt_tensor *opt_in(const ks__kernel_ctx *ctx, uint32_t i) {
    return i < ctx->num_inputs ? ctx->in[i] : NULL;
}

static ks_status check_scratch(ks__kernel_ctx *ctx, size_t per_thread_bytes) {
    size_t threads = ks__pool_threads(ctx->pool);
    if (per_thread_bytes && (!ctx->scratch || ctx->scratch_bytes / per_thread_bytes < threads))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL,
                                "scratch of %zu bytes is too small for %zu threads",
                                ctx->scratch_bytes, threads);
    return KS_STATUS_OK;
}

static void post_act(float *y, size_t count, int32_t act, float alpha) {
    for (size_t i = 0; i < count; i++)
        y[i] = ks__act_apply(y[i], act, alpha);
}

/* ========================================================================================== */
/* Depthwise CONV2D                                                                            */

typedef struct dw_geom {
    int64_t n, ih, iw, c, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
    ks__f32_act act;
    int32_t post_act;
    const ks__rt_tensor *res, *slope; /* optional inputs 3 and 4 */
} dw_geom;

/* 1 when ctx is a float depthwise conv (multiplier 1) this driver handles. */
static int dw_geom_get(const ks__kernel_ctx *ctx, dw_geom *g) {
    const ks__node *nd = ctx->node;
    if (nd->op != KS_OP_CONV2D || ctx->num_inputs < 2 || ctx->num_outputs < 1) return 0;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1], *b = opt_in(ctx, 2);
    const ks__rt_tensor *y = ctx->out[0];
    if (!is_plain_f32(x) || !is_plain_f32(y) || x->rank != 4 || y->rank != 4) return 0;
    if (!w || w->rank != 4 || !is_float_weight(w)) return 0;
    if (b && (!b->data || (b->dtype != KS_DTYPE_F32 && b->dtype != KS_DTYPE_F16))) return 0;
    const int32_t *ip = nd->ip;
    memset(g, 0, sizeof(*g));
    g->n = x->dims[0], g->ih = x->dims[1], g->iw = x->dims[2], g->c = x->dims[3];
    g->kh = w->dims[1], g->kw = w->dims[2];
    g->oh = y->dims[1], g->ow = y->dims[2];
    g->sh = param_or_one(ip[0]), g->sw = param_or_one(ip[1]);
    g->dh = param_or_one(ip[2]), g->dw = param_or_one(ip[3]);
    if (g->c < 1 || param_or_one(ip[9]) != g->c || w->dims[0] != g->c || w->dims[3] != 1) return 0;
    if (y->dims[0] != g->n || y->dims[3] != g->c || g->n < 1 || g->ih < 1 || g->iw < 1 ||
        g->oh < 1 || g->ow < 1)
        return 0;
    if (g->kh < 1 || g->kw < 1 || g->kh * g->kw > DW_MAX_TAPS || g->sh < 1 || g->sw < 1 ||
        g->dh < 1 || g->dw < 1)
        return 0;
    if (b && ks__rt_numel(b) != g->c) return 0;
    if (ip[8] < 0 || ip[8] >= KS_PAD_MODE_COUNT) return 0;
    g->pt = lead_pad(ip[8], ip[4], g->ih, g->oh, (g->kh - 1) * g->dh + 1, g->sh);
    g->pl = lead_pad(ip[8], ip[5], g->iw, g->ow, (g->kw - 1) * g->dw + 1, g->sw);
    int post = 0;
    if (!act_split(ip[10], nd->fp[0], 1, &g->act, &post)) return 0;
    g->post_act = post ? ip[10] : KS_ACT_NONE;
    g->res = opt_in(ctx, 3);
    if (g->res) {
        if (!is_plain_f32(g->res) || !g->res->data || g->res->rank != 4) return 0;
        for (int i = 0; i < 4; i++)
            if (g->res->dims[i] != y->dims[i]) return 0;
    }
    g->slope = opt_in(ctx, 4);
    if (ip[10] == KS_ACT_PRELU) {
        if (!is_plain_f32(g->slope) || !g->slope->data || ks__rt_numel(g->slope) != g->c) return 0;
    } else if (g->slope) {
        return 0;
    }
    return 1;
}

/* Output columns [lo, hi) that the row kernel computes: those whose whole window row lies
 * inside the input, if there are at least DW_ROW_MIN_PX of them (else lo == hi == 0). Why the
 * minimum: a short interior (maps of 3..7 columns) would split each row into three microkernel
 * calls for a handful of pixels, which costs more than the pointers it saves. */
static void dw_interior(const dw_geom *g, int64_t *lo, int64_t *hi) {
    *lo = g->pl > 0 ? (g->pl + g->sw - 1) / g->sw : 0;
    int64_t last = g->iw - 1 + g->pl - (g->kw - 1) * g->dw; /* largest ox * sw allowed */
    *hi = last < 0 ? 0 : last / g->sw + 1;
    if (*hi > g->ow) *hi = g->ow;
    if (*hi - *lo < DW_ROW_MIN_PX) *lo = *hi = 0;
}

/* Output pixels per call of the row kernel. The kernel walks one channel block at a time along
 * its pixels, so a call's window rows and output (KH input spans and one output span) are read
 * and written once per block: spans that fit DW_SPAN_BYTES keep them in L1 across the blocks, and
 * the walk through memory stays sequential, pixel after pixel. Whole rows did not fit with many
 * channels: 56x56x128 3x3 0.28 -> 0.17 ms (Zen 3, medians of paired rounds); 160x160x64 and
 * 320x320x16 moved within the noise, 96x96x32 5x5 (a 60 KB window, L2) did not move. */
static size_t dw_span(const dw_geom *g) {
    /* below 64 channels whole rows: no gain measured there, and each span costs another call
     * (+0.5-1 % instructions on NEON's few-channel models, bench/arm/count-kestrel) */
    if (g->c < DW_SPAN_MIN_C) return (size_t)g->ow;
    size_t px_bytes = (size_t)g->c * sizeof(float) * (size_t)(g->kh * g->sw + 1);
    size_t span = DW_SPAN_BYTES / (px_bytes ? px_bytes : 1);
    span = span < DW_SPAN_MIN_PX ? DW_SPAN_MIN_PX : span / DW_SPAN_MIN_PX * DW_SPAN_MIN_PX;
    return span;
}

/* Number of output rows whose window rows all lie inside the input (the row kernel's rows). */
static int64_t dw_full_rows(const dw_geom *g) {
    int64_t lo = g->pt > 0 ? (g->pt + g->sh - 1) / g->sh : 0;
    int64_t last = g->ih - 1 + g->pt - (g->kh - 1) * g->dh;
    int64_t hi = last < 0 ? 0 : last / g->sh + 1;
    if (hi > g->oh) hi = g->oh;
    return hi > lo ? hi - lo : 0;
}

static int dw_row_shape(const dw_geom *g) {
    return g->dh == 1 && g->dw == 1 && g->kh == g->kw && (g->kh == 3 || g->kh == 5) && g->sw <= 2;
}

/* The row microkernel (dwconv.h) for g, or NULL. */
static ks__f32_dw_row_ukernel dw_row_kernel(const dw_geom *g, const ks__f32_dw_config *cfg) {
    return dw_row_shape(g) ? cfg->row[g->kh == 5][g->sw == 2] : NULL;
}

double ks__f32_dw_cost(const ks__kernel_ctx *ctx, uint32_t cb) {
    dw_geom g;
    if (cb == 0 || !dw_geom_get(ctx, &g)) return -1.0;
    double blocks = (double)((g.c + cb - 1) / cb);
    /* vector FMAs plus one pointer per tap and pixel; the row kernels (3x3 / 5x5, stride 1 or 2)
     * build no pointers for interior pixels */
    double px = (double)(g.n * g.oh * g.ow), row_px = 0.0;
    if (dw_row_shape(&g)) {
        int64_t lo, hi;
        dw_interior(&g, &lo, &hi);
        row_px = (double)(g.n * dw_full_rows(&g) * (hi - lo));
    }
    return (double)(g.kh * g.kw) * (px * blocks + (px - row_px) * 0.5 + row_px * 0.1);
}

static size_t dw_tap_bytes(const dw_geom *g) {
    return (size_t)DW_TILE_PX * (size_t)(g->kh * g->kw) * sizeof(const float *);
}

static size_t dw_packed_floats(const dw_geom *g, uint32_t cb) {
    size_t cpad = round_up((size_t)g->c, cb);
    return cpad / cb * KS__F32_DW_BLOCK_FLOATS(cb, g->kh * g->kw) + cpad;
}

ks_status ks__f32_dw_plan(ks__kernel_ctx *ctx, uint32_t cb, size_t *packed_bytes_out) {
    dw_geom g;
    if (cb == 0 || !dw_geom_get(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "not a float depthwise conv");
    uint32_t threads = ctx->num_threads ? ctx->num_threads : 1;
    ctx->scratch_bytes = dw_tap_bytes(&g) * threads;
    *packed_bytes_out = dw_packed_floats(&g, cb) * sizeof(float);
    return KS_STATUS_OK;
}

ks_status ks__f32_dw_pack(ks__kernel_ctx *ctx, uint32_t cb) {
    dw_geom g;
    if (cb == 0 || !dw_geom_get(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "not a float depthwise conv");
    const ks__rt_tensor *w = ctx->in[1], *b = opt_in(ctx, 2);
    size_t cpad = round_up((size_t)g.c, cb), taps = (size_t)(g.kh * g.kw);
    size_t need = dw_packed_floats(&g, cb) * sizeof(float);
    if (!ctx->packed || ctx->packed_bytes < need)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "packed buffer of %zu bytes, need %zu",
                                ctx->packed_bytes, need);
    float *p = (float *)ctx->packed;
    const float *slope = g.act.act == KS_ACT_PRELU ? (const float *)g.slope->data : NULL;
    memset(p, 0, need);
    for (size_t c0 = 0; c0 < cpad; c0 += cb) {
        float *blk = p + c0 / cb * KS__F32_DW_BLOCK_FLOATS(cb, taps);
        for (size_t j = 0; j < cb && c0 + j < (size_t)g.c; j++) {
            int64_t c = (int64_t)(c0 + j);
            blk[j] = b ? ks__conv_load_f(b, c, c) : 0.0f;
            for (size_t t = 0; t < taps; t++)
                blk[(1 + t) * cb + j] = ks__conv_load_f(w, c * (int64_t)taps + (int64_t)t, c);
            if (slope) blk[(1 + taps) * cb + j] = slope[c];
        }
    }
    return KS_STATUS_OK;
}

typedef struct dw_job {
    const dw_geom *g;
    ks__f32_dw_ukernel uk;
    ks__f32_dw_row_ukernel row_uk; /* NULL: indirect path only */
    int64_t ox_lo, ox_hi;          /* interior columns (row_uk) */
    size_t span;                   /* output pixels per row_uk call (dw_span) */
    const float *x, *res, *packed, *zero;
    float *y;
    uint8_t *scratch;
    size_t scratch_per_thread;
} dw_job;

/* Output pixels [ox0, ox1) of output row oy (image img) through per-tap pointers. */
static void dw_indirect(const dw_job *j, const float **taps, const float *img, int64_t oy,
                        int64_t ox0, int64_t ox1, float *yrow, const float *rrow) {
    const dw_geom *g = j->g;
    size_t num_taps = (size_t)(g->kh * g->kw), c = (size_t)g->c;
    for (int64_t t0 = ox0; t0 < ox1; t0 += DW_TILE_PX) {
        int64_t npx = ox1 - t0 < DW_TILE_PX ? ox1 - t0 : DW_TILE_PX;
        const float **tp = taps;
        for (int64_t ox = t0; ox < t0 + npx; ox++) {
            for (int64_t ky = 0; ky < g->kh; ky++) {
                int64_t iy = oy * g->sh - g->pt + ky * g->dh;
                int row_ok = iy >= 0 && iy < g->ih;
                for (int64_t kx = 0; kx < g->kw; kx++) {
                    int64_t ix = ox * g->sw - g->pl + kx * g->dw;
                    *tp++ = row_ok && ix >= 0 && ix < g->iw ? img + (size_t)(iy * g->iw + ix) * c
                                                            : j->zero;
                }
            }
        }
        float *out = yrow + (size_t)t0 * c;
        j->uk((size_t)npx, c, num_taps, taps, j->packed, out, rrow ? rrow + (size_t)t0 * c : NULL,
              &g->act);
        if (g->post_act) post_act(out, (size_t)npx * c, g->post_act, g->act.alpha);
    }
}

static void dw_rows(void *arg, size_t begin, size_t end, uint32_t thread) {
    const dw_job *j = (const dw_job *)arg;
    const dw_geom *g = j->g;
    const float **taps = (const float **)(void *)(j->scratch + j->scratch_per_thread * thread);
    size_t c = (size_t)g->c;
    for (size_t row = begin; row < end; row++) {
        int64_t n = (int64_t)row / g->oh, oy = (int64_t)row % g->oh;
        const float *img = j->x + (size_t)(n * g->ih * g->iw) * c;
        size_t row_off = (size_t)row * (size_t)g->ow * c;
        float *yrow = j->y + row_off;
        const float *rrow = j->res ? j->res + row_off : NULL;
        int64_t iy0 = oy * g->sh - g->pt;
        /* rows with a padded window row stay on the indirect path: a few per image */
        if (!j->row_uk || iy0 < 0 || iy0 + g->kh > g->ih) {
            dw_indirect(j, taps, img, oy, 0, g->ow, yrow, rrow);
            continue;
        }
        dw_indirect(j, taps, img, oy, 0, j->ox_lo, yrow, rrow);
        const float *rows[5];
        for (int64_t ky = 0; ky < g->kh; ky++)
            rows[ky] = img + (size_t)((iy0 + ky) * g->iw + j->ox_lo * g->sw - g->pl) * c;
        size_t num_px = (size_t)(j->ox_hi - j->ox_lo);
        float *out = yrow + (size_t)j->ox_lo * c;
        for (size_t s0 = 0; s0 < num_px; s0 += j->span) {
            size_t np = num_px - s0 < j->span ? num_px - s0 : j->span;
            const float *sr[5];
            for (int64_t ky = 0; ky < g->kh; ky++)
                sr[ky] = rows[ky] + s0 * (size_t)g->sw * c;
            j->row_uk(np, c, sr, j->packed, out + s0 * c,
                      rrow ? rrow + ((size_t)j->ox_lo + s0) * c : NULL, &g->act);
        }
        if (g->post_act) post_act(out, num_px * c, g->post_act, g->act.alpha);
        dw_indirect(j, taps, img, oy, j->ox_hi, g->ow, yrow, rrow);
    }
}

ks_status ks__f32_dw_run(ks__kernel_ctx *ctx, const ks__f32_dw_config *cfg) {
    dw_geom g;
    if (!dw_geom_get(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "not a float depthwise conv");
    size_t cpad = round_up((size_t)g.c, cfg->cb), num_taps = (size_t)(g.kh * g.kw);
    size_t packed_floats = dw_packed_floats(&g, cfg->cb);
    if (!ctx->packed || ctx->packed_bytes < packed_floats * sizeof(float))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "packed weights missing");
    ks_status st = check_scratch(ctx, dw_tap_bytes(&g));
    if (st) return st;
    dw_job j = {.g = &g, .uk = cfg->generic};
    if (num_taps == 9 && cfg->k3x3) j.uk = cfg->k3x3;
    if (num_taps == 25 && cfg->k5x5) j.uk = cfg->k5x5;
    j.row_uk = dw_row_kernel(&g, cfg);
    dw_interior(&g, &j.ox_lo, &j.ox_hi);
    if (j.ox_hi <= j.ox_lo) j.row_uk = NULL;
    j.span = dw_span(&g);
    j.x = (const float *)ctx->in[0]->data;
    j.res = g.res ? (const float *)g.res->data : NULL;
    j.y = (float *)ctx->out[0]->data;
    j.packed = (const float *)ctx->packed;
    j.zero = j.packed + packed_floats - cpad;
    j.scratch = (uint8_t *)ctx->scratch;
    j.scratch_per_thread = dw_tap_bytes(&g);
    size_t rows = (size_t)(g.n * g.oh);
    size_t row_work = (size_t)g.ow * num_taps * cpad;
    size_t grain = row_work >= 32768 ? 1 : 32768 / (row_work + 1) + 1;
    ks__parallel_for(ctx->pool, rows, grain, dw_rows, &j);
    return KS_STATUS_OK;
}

/* ========================================================================================== */
/* POOL2D                                                                                      */

typedef struct pool_geom {
    int64_t n, ih, iw, c, oh, ow, kh, kw, sh, sw, pt, pl, pb, pr;
    int32_t kind, count_include_pad;
    ks__f32_act act;
    int32_t post_act;
} pool_geom;

static int pool_geom_get(const ks__kernel_ctx *ctx, pool_geom *g) {
    const ks__node *nd = ctx->node;
    if (nd->op != KS_OP_POOL2D || ctx->num_inputs < 1 || ctx->num_outputs < 1) return 0;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (!is_plain_f32(x) || !is_plain_f32(y) || x->rank != 4 || y->rank != 4) return 0;
    const int32_t *ip = nd->ip;
    memset(g, 0, sizeof(*g));
    g->n = x->dims[0], g->ih = x->dims[1], g->iw = x->dims[2], g->c = x->dims[3];
    g->oh = y->dims[1], g->ow = y->dims[2];
    g->kind = ip[9], g->count_include_pad = ip[10];
    if (g->kind != 0 && g->kind != 1) return 0;
    if (g->n < 1 || g->ih < 1 || g->iw < 1 || g->c < 1 || g->oh < 1 || g->ow < 1 ||
        y->dims[0] != g->n || y->dims[3] != g->c)
        return 0;
    int32_t mode = ip[8];
    if (ip[0] == 0 && ip[1] == 0) {
        g->kh = g->ih, g->kw = g->iw, g->sh = 1, g->sw = 1;
        mode = KS_PAD_VALID;
    } else {
        g->kh = ip[0], g->kw = ip[1];
        g->sh = param_or_one(ip[2]), g->sw = param_or_one(ip[3]);
    }
    if (g->kh < 1 || g->kw < 1 || g->sh < 1 || g->sw < 1 || mode < 0 || mode >= KS_PAD_MODE_COUNT ||
        g->kh > (1 << 20) || g->kw > (1 << 20))
        return 0;
    if (mode == KS_PAD_EXPLICIT && (ip[4] < 0 || ip[5] < 0 || ip[6] < 0 || ip[7] < 0)) return 0;
    g->pt = lead_pad(mode, ip[4], g->ih, g->oh, g->kh, g->sh);
    g->pl = lead_pad(mode, ip[5], g->iw, g->ow, g->kw, g->sw);
    if (mode == KS_PAD_EXPLICIT) {
        g->pb = ip[6], g->pr = ip[7];
    } else {
        g->pb = (g->oh - 1) * g->sh + g->kh - g->ih - g->pt;
        g->pr = (g->ow - 1) * g->sw + g->kw - g->iw - g->pl;
        if (g->pb < 0) g->pb = 0;
        if (g->pr < 0) g->pr = 0;
    }
    int post = 0;
    if (!act_split(ip[11], nd->fp[0], 0, &g->act, &post)) return 0;
    g->post_act = post ? ip[11] : KS_ACT_NONE;
    return 1;
}

double ks__f32_pool_cost(const ks__kernel_ctx *ctx, uint32_t cb) {
    pool_geom g;
    if (cb == 0 || !pool_geom_get(ctx, &g)) return -1.0;
    double blocks = (double)((g.c + cb - 1) / cb);
    return (double)(g.n * g.oh * g.ow) * (double)(g.kh * g.kw) * blocks;
}

ks_status ks__f32_pool_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    pool_geom g;
    if (!pool_geom_get(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "not a float pool");
    ctx->scratch_bytes = 0;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

typedef struct pool_job {
    const pool_geom *g;
    const ks__f32_pool_config *cfg;
    const float *x;
    float *y;
    size_t chunk_c, num_chunks;
} pool_job;

/* Items are (image, output row, channel chunk): global pooling has one output row per image,
 * so channels are what parallelizes there. */
static void pool_items(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const pool_job *j = (const pool_job *)arg;
    const pool_geom *g = j->g;
    size_t c = (size_t)g->c;
    const float *in[POOL_TILE_PX];
    uint32_t rows[POOL_TILE_PX], cols[POOL_TILE_PX];
    float scale[POOL_TILE_PX];
    for (size_t item = begin; item < end; item++) {
        size_t row = item / j->num_chunks, chunk = item % j->num_chunks;
        size_t c0 = chunk * j->chunk_c;
        size_t nc = c - c0 < j->chunk_c ? c - c0 : j->chunk_c;
        int64_t n = (int64_t)row / g->oh, oy = (int64_t)row % g->oh;
        int64_t y0 = oy * g->sh - g->pt;
        int64_t py0 = y0 < -g->pt ? -g->pt : y0;
        int64_t py1 = y0 + g->kh > g->ih + g->pb ? g->ih + g->pb : y0 + g->kh;
        int64_t vy0 = y0 < 0 ? 0 : y0, vy1 = y0 + g->kh > g->ih ? g->ih : y0 + g->kh;
        int64_t vrows = vy1 > vy0 ? vy1 - vy0 : 0;
        const float *img = j->x + (size_t)(n * g->ih * g->iw) * c + c0;
        float *yrow = j->y + (size_t)row * (size_t)g->ow * c + c0;
        for (int64_t ox0 = 0; ox0 < g->ow; ox0 += POOL_TILE_PX) {
            int64_t npx = g->ow - ox0 < POOL_TILE_PX ? g->ow - ox0 : POOL_TILE_PX;
            for (int64_t i = 0; i < npx; i++) {
                int64_t x0 = (ox0 + i) * g->sw - g->pl;
                int64_t px0 = x0 < -g->pl ? -g->pl : x0;
                int64_t px1 = x0 + g->kw > g->iw + g->pr ? g->iw + g->pr : x0 + g->kw;
                int64_t vx0 = x0 < 0 ? 0 : x0, vx1 = x0 + g->kw > g->iw ? g->iw : x0 + g->kw;
                int64_t vcols = vx1 > vx0 ? vx1 - vx0 : 0;
                int64_t count = g->count_include_pad ? (py1 - py0) * (px1 - px0) : vrows * vcols;
                rows[i] = (uint32_t)vrows;
                cols[i] = (uint32_t)vcols;
                in[i] = vrows && vcols ? img + (size_t)(vy0 * g->iw + vx0) * c : img;
                scale[i] = count > 0 ? (float)(1.0 / (double)count) : 0.0f;
            }
            float *out = yrow + (size_t)ox0 * c;
            j->cfg->ukernel((size_t)npx, nc, in, rows, cols, c, (size_t)g->iw * c, g->kind, scale,
                            out, c, &g->act);
            if (g->post_act)
                for (int64_t i = 0; i < npx; i++)
                    post_act(out + (size_t)i * c, nc, g->post_act, g->act.alpha);
        }
    }
}

ks_status ks__f32_pool_run(ks__kernel_ctx *ctx, const ks__f32_pool_config *cfg) {
    pool_geom g;
    if (!pool_geom_get(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "not a float pool");
    pool_job j = {.g = &g, .cfg = cfg};
    j.x = (const float *)ctx->in[0]->data;
    j.y = (float *)ctx->out[0]->data;
    size_t rows = (size_t)(g.n * g.oh), threads = ks__pool_threads(ctx->pool);
    j.chunk_c = (size_t)g.c;
    if (rows < threads * 4 && g.c > (int64_t)cfg->cb) {
        size_t want = threads * 4 / rows + 1;
        size_t chunk = round_up(((size_t)g.c + want - 1) / want, cfg->cb);
        j.chunk_c = chunk < (size_t)g.c ? chunk : (size_t)g.c;
    }
    j.num_chunks = ((size_t)g.c + j.chunk_c - 1) / j.chunk_c;
    size_t item_work = (size_t)(g.ow * g.kh * g.kw) * j.chunk_c;
    size_t grain = item_work >= 32768 ? 1 : 32768 / (item_work + 1) + 1;
    ks__parallel_for(ctx->pool, rows * j.num_chunks, grain, pool_items, &j);
    return KS_STATUS_OK;
}

/* ========================================================================================== */
/* CONV2D_TRANSPOSE                                                                            */

typedef struct deconv_geom {
    int64_t n, ih, iw, ci, oh, ow, co, kh, kw, sh, sw, pt, pl;
    ks__f32_act act;
    int32_t post_act;
} deconv_geom;

static int deconv_geom_get(const ks__kernel_ctx *ctx, deconv_geom *g) {
    const ks__node *nd = ctx->node;
    if (nd->op != KS_OP_CONV2D_TRANSPOSE || ctx->num_inputs < 2 || ctx->num_outputs < 1) return 0;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1], *b = opt_in(ctx, 2);
    const ks__rt_tensor *y = ctx->out[0];
    if (!is_plain_f32(x) || !is_plain_f32(y) || x->rank != 4 || y->rank != 4) return 0;
    if (!w || w->rank != 4 || !is_float_weight(w)) return 0;
    if (b && (!b->data || (b->dtype != KS_DTYPE_F32 && b->dtype != KS_DTYPE_F16))) return 0;
    const int32_t *ip = nd->ip;
    memset(g, 0, sizeof(*g));
    g->n = x->dims[0], g->ih = x->dims[1], g->iw = x->dims[2], g->ci = x->dims[3];
    g->co = w->dims[0], g->kh = w->dims[1], g->kw = w->dims[2];
    g->oh = y->dims[1], g->ow = y->dims[2];
    g->sh = param_or_one(ip[0]), g->sw = param_or_one(ip[1]);
    if (w->dims[3] != g->ci || g->ci < 1 || g->co < 1 || g->kh < 1 || g->kw < 1) return 0;
    if (g->n < 1 || g->ih < 1 || g->iw < 1 || g->oh < 1 || g->ow < 1 || y->dims[0] != g->n ||
        y->dims[3] != g->co)
        return 0;
    if (g->sh < 1 || g->sw < 1 || g->sh * g->sw > DECONV_MAX_PHASES) return 0;
    /* taps per phase: ceil(kh / sh) * ceil(kw / sw) */
    if (((g->kh + g->sh - 1) / g->sh) * ((g->kw + g->sw - 1) / g->sw) > DECONV_MAX_TAPS) return 0;
    if (b && ks__rt_numel(b) != g->co) return 0;
    int32_t mode = ip[6];
    if (mode < 0 || mode >= KS_PAD_MODE_COUNT) return 0;
    if (mode == KS_PAD_EXPLICIT && (ip[2] < 0 || ip[3] < 0)) return 0;
    /* transpose conv SAME pads come from the "forward" relation in = ceil(out / s) reversed */
    if (mode == KS_PAD_EXPLICIT) {
        g->pt = ip[2], g->pl = ip[3];
    } else if (mode == KS_PAD_VALID) {
        g->pt = 0, g->pl = 0;
    } else {
        int64_t th = (g->ih - 1) * g->sh + g->kh - g->oh, tw = (g->iw - 1) * g->sw + g->kw - g->ow;
        if (th < 0) th = 0;
        if (tw < 0) tw = 0;
        g->pt = mode == KS_PAD_SAME_UPPER ? th / 2 : th - th / 2;
        g->pl = mode == KS_PAD_SAME_UPPER ? tw / 2 : tw - tw / 2;
    }
    int post = 0;
    if (!act_split(ip[7], nd->fp[0], 0, &g->act, &post)) return 0;
    g->post_act = post ? ip[7] : KS_ACT_NONE;
    return 1;
}

/* Number of kernel positions k < ksize with k == r (mod s). */
static int64_t phase_taps(int64_t ksize, int64_t r, int64_t s) {
    return r < ksize ? (ksize - r + s - 1) / s : 0;
}

/* Floats of one phase's packed block set. */
static size_t deconv_phase_floats(const deconv_geom *g, int64_t ry, int64_t rx, size_t nr) {
    size_t taps = (size_t)(phase_taps(g->kh, ry, g->sh) * phase_taps(g->kw, rx, g->sw));
    size_t blocks = ((size_t)g->co + nr - 1) / nr;
    return blocks * nr * (1 + taps * (size_t)g->ci);
}

static size_t deconv_packed_floats(const deconv_geom *g, size_t nr) {
    size_t total = 0;
    for (int64_t ry = 0; ry < g->sh; ry++)
        for (int64_t rx = 0; rx < g->sw; rx++)
            total += deconv_phase_floats(g, ry, rx, nr);
    return total + round_up((size_t)g->ci, 16);
}

double ks__f32_deconv_cost(const ks__kernel_ctx *ctx, uint32_t mr, uint32_t nr) {
    deconv_geom g;
    if (mr == 0 || mr > DECONV_MAX_MR || nr == 0 || !deconv_geom_get(ctx, &g)) return -1.0;
    double blocks = (double)((g.co + nr - 1) / nr);
    double taps = (double)(g.kh * g.kw) / (double)(g.sh * g.sw);
    if (taps < 1.0) taps = 1.0;
    return (double)(g.n * g.oh * g.ow) * taps * (double)g.ci * blocks;
}

ks_status ks__f32_deconv_plan(ks__kernel_ctx *ctx, uint32_t mr, uint32_t nr,
                              size_t *packed_bytes_out) {
    deconv_geom g;
    if (mr == 0 || mr > DECONV_MAX_MR || nr == 0 || !deconv_geom_get(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "not a float transpose conv");
    ctx->scratch_bytes = 0;
    *packed_bytes_out = deconv_packed_floats(&g, nr) * sizeof(float);
    return KS_STATUS_OK;
}

ks_status ks__f32_deconv_pack(ks__kernel_ctx *ctx, uint32_t nr) {
    deconv_geom g;
    if (nr == 0 || !deconv_geom_get(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "not a float transpose conv");
    size_t need = deconv_packed_floats(&g, nr) * sizeof(float);
    if (!ctx->packed || ctx->packed_bytes < need)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "packed buffer of %zu bytes, need %zu",
                                ctx->packed_bytes, need);
    const ks__rt_tensor *w = ctx->in[1], *b = opt_in(ctx, 2);
    float *p = (float *)ctx->packed;
    memset(p, 0, need);
    for (int64_t ry = 0; ry < g.sh; ry++) {
        for (int64_t rx = 0; rx < g.sw; rx++) {
            int64_t nky = phase_taps(g.kh, ry, g.sh), nkx = phase_taps(g.kw, rx, g.sw);
            size_t taps = (size_t)(nky * nkx);
            for (int64_t co0 = 0; co0 < g.co; co0 += nr) {
                for (int64_t j = 0; j < (int64_t)nr && co0 + j < g.co; j++) {
                    int64_t co = co0 + j;
                    p[j] = b ? ks__conv_load_f(b, co, co) : 0.0f;
                    for (int64_t ty = 0; ty < nky; ty++) {
                        for (int64_t tx = 0; tx < nkx; tx++) {
                            int64_t ky = ry + ty * g.sh, kx = rx + tx * g.sw;
                            size_t t = (size_t)(ty * nkx + tx);
                            for (int64_t ci = 0; ci < g.ci; ci++) {
                                int64_t wi = ((co * g.kh + ky) * g.kw + kx) * g.ci + ci;
                                p[nr + (t * (size_t)g.ci + (size_t)ci) * nr + (size_t)j] =
                                    ks__conv_load_f(w, wi, co);
                            }
                        }
                    }
                }
                p += nr * (1 + taps * (size_t)g.ci);
            }
        }
    }
    return KS_STATUS_OK;
}

typedef struct deconv_job {
    const deconv_geom *g;
    const ks__f32_deconv_config *cfg;
    const float *x, *packed, *zero;
    float *y;
} deconv_job;

static void deconv_rows(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const deconv_job *j = (const deconv_job *)arg;
    const deconv_geom *g = j->g;
    size_t mr = j->cfg->mr, nr = j->cfg->nr, ci = (size_t)g->ci, co = (size_t)g->co;
    const float *taps[DECONV_MAX_MR * DECONV_MAX_TAPS];
    float *outs[DECONV_MAX_MR];
    for (size_t row = begin; row < end; row++) {
        int64_t n = (int64_t)row / g->oh, oy = (int64_t)row % g->oh;
        int64_t ry = (oy + g->pt) % g->sh, nky = phase_taps(g->kh, ry, g->sh);
        const float *img = j->x + (size_t)(n * g->ih * g->iw) * ci;
        float *yrow = j->y + (size_t)row * (size_t)g->ow * co;
        /* packed data of phase (ry, 0) */
        const float *phase_w = j->packed;
        for (int64_t r = 0; r < ry * g->sw; r++)
            phase_w += deconv_phase_floats(g, r / g->sw, r % g->sw, nr);
        for (int64_t rx = 0; rx < g->sw; rx++) {
            int64_t nkx = phase_taps(g->kw, rx, g->sw);
            size_t num_taps = (size_t)(nky * nkx);
            /* first ox with (ox + pl) % sw == rx */
            int64_t ox_first = ((rx - g->pl) % g->sw + g->sw) % g->sw;
            for (int64_t ox0 = ox_first; ox0 < g->ow; ox0 += (int64_t)mr * g->sw) {
                size_t npx = 0;
                for (int64_t ox = ox0; ox < g->ow && npx < mr; ox += g->sw, npx++)
                    outs[npx] = yrow + (size_t)ox * co;
                /* Exact divisions (the phase makes them so), hoisted: consecutive pixels of a
                 * phase read consecutive input columns. */
                for (int64_t ty = 0; ty < nky; ty++) {
                    int64_t yy = oy + g->pt - ry - ty * g->sh, iy = yy / g->sh;
                    int row_ok = yy >= 0 && iy < g->ih;
                    for (int64_t tx = 0; tx < nkx; tx++) {
                        int64_t ix = (ox0 + g->pl - rx - tx * g->sw) / g->sw;
                        size_t t = (size_t)(ty * nkx + tx);
                        for (size_t m = 0; m < npx; m++, ix++)
                            taps[m * num_taps + t] = row_ok && ix >= 0 && ix < g->iw
                                                         ? img + (size_t)(iy * g->iw + ix) * ci
                                                         : j->zero;
                    }
                }
                /* unused rows repeat pixel 0 so the microkernel reads valid memory */
                for (size_t m = npx; m < mr; m++) {
                    memcpy(taps + m * num_taps, taps, num_taps * sizeof(*taps));
                    outs[m] = outs[0];
                }
                const float *wblk = phase_w;
                for (size_t c0 = 0; c0 < co; c0 += nr) {
                    size_t nc = co - c0 < nr ? co - c0 : nr;
                    float *o[DECONV_MAX_MR];
                    for (size_t m = 0; m < mr; m++)
                        o[m] = outs[m] + c0;
                    j->cfg->ukernel(npx, nc, num_taps, ci, taps, wblk, o, &g->act);
                    if (g->post_act)
                        for (size_t m = 0; m < npx; m++)
                            post_act(o[m], nc, g->post_act, g->act.alpha);
                    wblk += nr * (1 + num_taps * ci);
                }
            }
            phase_w += deconv_phase_floats(g, ry, rx, nr);
        }
    }
}

ks_status ks__f32_deconv_run(ks__kernel_ctx *ctx, const ks__f32_deconv_config *cfg) {
    deconv_geom g;
    if (cfg->mr == 0 || cfg->mr > DECONV_MAX_MR || !deconv_geom_get(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "not a float transpose conv");
    size_t packed_floats = deconv_packed_floats(&g, cfg->nr);
    if (!ctx->packed || ctx->packed_bytes < packed_floats * sizeof(float))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "packed weights missing");
    deconv_job j = {.g = &g, .cfg = cfg};
    j.x = (const float *)ctx->in[0]->data;
    j.y = (float *)ctx->out[0]->data;
    j.packed = (const float *)ctx->packed;
    j.zero = j.packed + packed_floats - round_up((size_t)g.ci, 16);
    size_t row_work = (size_t)(g.ow * g.kh * g.kw / (g.sh * g.sw) + g.ow) * (size_t)(g.ci * g.co);
    size_t grain = row_work >= 65536 ? 1 : 65536 / (row_work + 1) + 1;
    ks__parallel_for(ctx->pool, (size_t)(g.n * g.oh), grain, deconv_rows, &j);
    return KS_STATUS_OK;
}
