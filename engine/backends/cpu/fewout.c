/* Few-output direct convolution driver (fewout.h): node description, cost, weight packing, rows
 * and tiles. Portable C; the ISA files supply the cores and the store.
 *
 * Packed data: the bias per output (rounded up to 16 floats), then per output and kernel row
 * w_row_floats weights: SPAN: the row's KW * Cin weights, zero-filled to whole vectors; PACKED:
 * per tap one vector of the tap's Cin weights repeated lanes / Cin times.
 */
#include "fewout.h"

#include <string.h>

#include "ref/conv_internal.h"

#define MAX_KH 16

typedef struct fewout_problem {
    bool deconv;
    /* the conv that runs (a transpose conv: the 1x1 conv to bkh * bkw * co outputs) */
    int64_t n, ih, iw, ic, oh, ow, kh, kw, sh, sw, dh, pt, pl;
    int64_t num_out;      /* outputs per pixel */
    int64_t groups, q;    /* stores per tile (the block's rows), outputs per store */
    int64_t co, bkh, bkw; /* transpose conv: output channels and the block (kernel) */
    int packed;           /* 0: SPAN, else Cin (1, 2 or 4) */
    int64_t span, chunks, tail, sx;
    int64_t w_row_floats; /* packed weights per output and kernel row */
    int64_t reach;        /* floats a tile reads per kernel row from its first input float */
    int32_t act;
    float alpha;
    const ks__rt_tensor *w, *bias, *res, *slope;
} fewout_problem;

static int64_t round_up(int64_t v, int64_t a) {
    return (v + a - 1) / a * a;
}

static bool describe_conv(const ks__kernel_ctx *ctx, fewout_problem *p) {
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1], *y = ctx->out[0];
    const int32_t *ip = ctx->node->ip;
    if (!ks__rt_float_plain(x) || !ks__rt_float_plain(y) || !ks__rt_const_weights(w) ||
        x->rank != 4 || w->rank != 4 || y->rank != 4)
        return false;
    p->n = x->dims[0], p->ih = x->dims[1], p->iw = x->dims[2], p->ic = x->dims[3];
    p->co = w->dims[0], p->kh = w->dims[1], p->kw = w->dims[2];
    p->oh = y->dims[1], p->ow = y->dims[2];
    if (p->n < 1 || p->ih < 1 || p->iw < 1 || p->ic < 1 || p->co < 1 || p->kh < 1 || p->kw < 1 ||
        p->oh < 1 || p->ow < 1 || p->kh > MAX_KH || p->co > KS_FEWOUT_MAX_OUT)
        return false;
    if (w->dims[3] != p->ic || y->dims[3] != p->co || y->dims[0] != p->n) return false;
    if (ks__ip_or_one(ip[9]) != 1 || ks__ip_or_one(ip[3]) != 1)
        return false; /* groups, dilation w */
    if (ip[8] < KS_PAD_EXPLICIT || ip[8] > KS_PAD_VALID) return false;
    p->sh = ks__ip_or_one(ip[0]), p->sw = ks__ip_or_one(ip[1]), p->dh = ks__ip_or_one(ip[2]);
    if (p->sh < 1 || p->sw < 1 || p->dh < 1) return false;
    p->pt = ks__conv_lead_pad(ip[8], ip[4], p->ih, p->oh, (p->kh - 1) * p->dh + 1, p->sh);
    p->pl = ks__conv_lead_pad(ip[8], ip[5], p->iw, p->ow, p->kw, p->sw);
    p->act = ip[10];
    p->alpha = ctx->node->fp[0];
    if (p->act < 0 || p->act > KS_ACT_PRELU) return false; /* not TABLE */
    p->w = w;
    p->bias = ks__kernel_input(ctx, 2);
    if (p->bias && (!ks__rt_const_weights(p->bias) || ks__rt_numel(p->bias) != p->co)) return false;
    p->res = ks__kernel_input(ctx, 3);
    if (p->res) {
        if (!ks__rt_float_plain(p->res) || p->res->rank != 4) return false;
        for (int i = 0; i < 4; i++)
            if (p->res->dims[i] != y->dims[i]) return false;
    }
    p->slope = ks__kernel_input(ctx, 4);
    if (p->act == KS_ACT_PRELU) {
        if (!ks__rt_float_plain(p->slope) || !p->slope->data || ks__rt_numel(p->slope) != p->co)
            return false;
    } else if (p->slope) {
        return false;
    }
    p->num_out = p->co, p->groups = 1, p->q = p->co;
    return true;
}

/* kernel == stride, no padding: every input pixel owns a bkh x bkw block of the output */
static bool describe_deconv(const ks__kernel_ctx *ctx, fewout_problem *p) {
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1], *y = ctx->out[0];
    const int32_t *ip = ctx->node->ip;
    if (!ks__rt_float_plain(x) || !ks__rt_float_plain(y) || !ks__rt_const_weights(w) ||
        x->rank != 4 || w->rank != 4 || y->rank != 4 || ks__kernel_input(ctx, 3))
        return false;
    p->n = x->dims[0], p->ih = x->dims[1], p->iw = x->dims[2], p->ic = x->dims[3];
    p->co = w->dims[0], p->bkh = w->dims[1], p->bkw = w->dims[2];
    if (p->n < 1 || p->ih < 1 || p->iw < 1 || p->ic < 1 || p->co < 1 || p->bkh < 1 || p->bkw < 1 ||
        w->dims[3] != p->ic || p->co * p->bkh * p->bkw > KS_FEWOUT_MAX_OUT)
        return false;
    if (ip[0] != p->bkh || ip[1] != p->bkw || ip[8] != 0 || ip[9] != 0) return false;
    if (ip[6] == KS_PAD_EXPLICIT && (ip[2] || ip[3] || ip[4] || ip[5])) return false;
    if (y->dims[0] != p->n || y->dims[1] != p->ih * p->bkh || y->dims[2] != p->iw * p->bkw ||
        y->dims[3] != p->co)
        return false;
    p->act = ip[7];
    p->alpha = ctx->node->fp[0];
    if (p->act < 0 || p->act > KS_ACT_SILU) return false; /* no PRELU, no TABLE */
    p->w = w;
    p->bias = ks__kernel_input(ctx, 2);
    if (p->bias && (!ks__rt_const_weights(p->bias) || ks__rt_numel(p->bias) != p->co)) return false;
    p->oh = p->ih, p->ow = p->iw, p->kh = p->kw = 1;
    p->sh = p->sw = p->dh = 1, p->pt = p->pl = 0;
    p->num_out = p->co * p->bkh * p->bkw, p->groups = p->bkh, p->q = p->bkw * p->co;
    p->deconv = true;
    return true;
}

static bool describe(const ks__kernel_ctx *ctx, const ks__fewout_arch *arch, fewout_problem *p) {
    memset(p, 0, sizeof(*p));
    if (ctx->num_inputs < 2 || ctx->num_outputs != 1) return false;
    bool ok = ctx->node->op == KS_OP_CONV2D             ? describe_conv(ctx, p)
              : ctx->node->op == KS_OP_CONV2D_TRANSPOSE ? describe_deconv(ctx, p)
                                                        : false;
    if (!ok) return false;
    const int64_t lanes = arch->lanes;
    p->span = p->kw * p->ic;
    if (p->sw == 1 && (p->ic == 1 || p->ic == 2 || p->ic == 4) && lanes % p->ic == 0 &&
        arch->packed[p->ic == 4 ? 2 : p->ic - 1]) {
        p->packed = (int)p->ic;
        p->chunks = p->kw;
        p->w_row_floats = p->kw * lanes;
        p->reach = (p->kw - 1 + lanes) * p->ic;
    } else {
        p->chunks = (p->span + lanes - 1) / lanes;
        p->tail = p->span % lanes;
        p->sx = p->sw * p->ic;
        p->w_row_floats = p->chunks * lanes;
        p->reach = (lanes - 1) * p->sx + p->chunks * lanes;
    }
    return true;
}

static int64_t bias_floats(const fewout_problem *p) {
    return round_up(p->num_out, 16);
}

static int64_t packed_floats(const fewout_problem *p) {
    return bias_floats(p) + p->num_out * p->kh * p->w_row_floats;
}

static int64_t window_floats(const fewout_problem *p) {
    return round_up(p->reach, 16);
}

/* Per thread: the kernel rows' windows, then one row of tiles' sums. */
static int64_t scratch_floats(const fewout_problem *p, const ks__fewout_arch *arch) {
    const int64_t tiles = (p->ow + arch->lanes - 1) / arch->lanes;
    return p->kh * window_floats(p) + round_up(tiles * p->num_out * arch->lanes, 16);
}

/* Whether the tile starting at output column ox0 reads a zero-filled window. */
static bool needs_window(const fewout_problem *p, int64_t ox0) {
    const int64_t start = (ox0 * p->sw - p->pl) * p->ic;
    return start < 0 || start + p->reach > p->iw * p->ic;
}

/* ---- cost ----
 * Cycles at the ISA's FMA peak, the unit of the GEMM's and smallc's models: per tile and output
 * the core's vector FMAs (each with one input load; two loads per cycle keep up with them) and
 * the fold, per tile the store (lane shuffles, residual, activation store; the activation itself
 * is left out as in the other models), the zero-filled windows at the row ends, and per call and
 * row the bookkeeping. */
double ks__fewout_cost(const ks__kernel_ctx *ctx, const ks__fewout_arch *arch) {
    fewout_problem p;
    if (!describe(ctx, arch, &p)) return -1.0;
    const int64_t lanes = arch->lanes;
    /* kernel rows inside the image, averaged over the output rows */
    int64_t rows_in = 0;
    for (int64_t oy = 0; oy < p.oh; oy++)
        for (int64_t ky = 0; ky < p.kh; ky++) {
            const int64_t iy = oy * p.sh - p.pt + ky * p.dh;
            rows_in += iy >= 0 && iy < p.ih;
        }
    const double rows_k = (double)rows_in / (double)p.oh;
    double per_row_fma, fold;
    if (p.packed) {
        per_row_fma = (double)(p.kw * p.packed);
        fold = arch->fold_cycles[p.packed == 4 ? 3 : p.packed];
    } else {
        per_row_fma = (double)(p.chunks * lanes) * (p.tail ? 1.0 + 0.5 / (double)p.chunks : 1.0);
        fold = arch->fold_cycles[0];
    }
    const double per_out = rows_k * per_row_fma / arch->fma_per_cycle + fold + 2.0;
    const double tile = (double)p.num_out * (per_out + 3.0) + 12.0;
    int64_t tiles = 0, windows = 0;
    for (int64_t ox0 = 0; ox0 < p.ow; ox0 += lanes) {
        tiles++;
        windows += needs_window(&p, ox0);
    }
    const double row =
        (double)tiles * tile + (double)windows * rows_k * (double)p.reach / 4.0 + 20.0;
    return row * (double)(p.n * p.oh) + 200.0;
}

ks_status ks__fewout_plan(ks__kernel_ctx *ctx, const ks__fewout_arch *arch,
                          size_t *packed_bytes_out) {
    fewout_problem p;
    if (!describe(ctx, arch, &p))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "fewout conv cannot run this node");
    *packed_bytes_out = (size_t)packed_floats(&p) * sizeof(float);
    const uint32_t threads = ctx->num_threads ? ctx->num_threads : 1;
    const size_t per_thread = (size_t)scratch_floats(&p, arch) * sizeof(float);
    if (per_thread * threads > ctx->scratch_bytes) ctx->scratch_bytes = per_thread * threads;
    return KS_STATUS_OK;
}

static float weight_at(const ks__rt_tensor *w, int64_t i, int64_t channel) {
    if (w->dtype == KS_DTYPE_F32) return ((const float *)w->data)[i];
    return ks__conv_load_f(w, i, channel);
}

ks_status ks__fewout_pack(ks__kernel_ctx *ctx, const ks__fewout_arch *arch) {
    fewout_problem p;
    if (!describe(ctx, arch, &p))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "fewout conv cannot run this node");
    const size_t need = (size_t)packed_floats(&p) * sizeof(float);
    if (!ctx->packed || ctx->packed_bytes < need)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "packed buffer too small");
    float *dst = (float *)ctx->packed;
    memset(dst, 0, need);
    const int64_t lanes = arch->lanes;
    for (int64_t l = 0; l < p.num_out; l++) {
        /* output l: a conv's channel l; a transpose conv's lane (a * bkw + b) * co + o */
        const int64_t o = l % p.co;
        const int64_t wbase = p.deconv ? (o * p.bkh * p.bkw + l / p.co) * p.ic : l * p.kh * p.span;
        if (p.bias) dst[l] = weight_at(p.bias, o, o);
        float *wl = dst + bias_floats(&p) + l * p.kh * p.w_row_floats;
        for (int64_t ky = 0; ky < p.kh; ky++) {
            float *wr = wl + ky * p.w_row_floats;
            const int64_t src = wbase + ky * p.span;
            if (p.packed) {
                for (int64_t kx = 0; kx < p.kw; kx++)
                    for (int64_t j = 0; j < lanes; j++)
                        wr[kx * lanes + j] = weight_at(p.w, src + kx * p.ic + j % p.ic, o);
            } else {
                for (int64_t j = 0; j < p.span; j++)
                    wr[j] = weight_at(p.w, src + j, o);
            }
        }
    }
    return KS_STATUS_OK;
}

/* ---- run ---- */

typedef struct fewout_job {
    const fewout_problem *p;
    const ks__fewout_arch *arch;
    const float *x, *packed, *res;
    const float *slope; /* PRELU: the slopes of one tile's outputs, lanes * co floats */
    float *y;
    float *scratch;
    size_t scratch_floats; /* per thread */
} fewout_job;

/* dst[0, len) = src[start, start + len), zeros outside [0, end). */
static void fill_window(float *dst, const float *src, int64_t start, int64_t len, int64_t end) {
    int64_t lo = start < 0 ? -start : 0;
    if (lo > len) lo = len;
    int64_t hi = end - start;
    if (hi > len) hi = len;
    if (hi < lo) hi = lo;
    memset(dst, 0, (size_t)lo * sizeof(float));
    if (hi > lo) memcpy(dst + lo, src + start + lo, (size_t)(hi - lo) * sizeof(float));
    memset(dst + hi, 0, (size_t)(len - hi) * sizeof(float));
}

static void fewout_rows(void *arg, size_t begin, size_t end, uint32_t thread) {
    const fewout_job *j = (const fewout_job *)arg;
    const fewout_problem *p = j->p;
    const int64_t lanes = j->arch->lanes, row_floats = p->iw * p->ic;
    const int64_t win_floats = window_floats(p);
    const int64_t tiles = (p->ow + lanes - 1) / lanes, tile_sums = p->num_out * lanes;
    float *win = j->scratch + (size_t)thread * j->scratch_floats;
    float *sums = win + p->kh * win_floats;
    const float *xrow[MAX_KH], *xt[MAX_KH], *wt[MAX_KH];
    const float *wbase = j->packed + bias_floats(p);
    ks__fewout_tile t = {.tile_step = (size_t)(lanes * (p->packed ? p->packed : p->sx)),
                         .x = xt,
                         .w = wt,
                         .w_out_stride = (size_t)(p->kh * p->w_row_floats),
                         .sx = (size_t)p->sx,
                         .chunks = (size_t)p->chunks,
                         .tail = (size_t)p->tail,
                         .num_out = (size_t)p->num_out};
    /* SPAN folds whole output pixels when q divides the lanes; PACKED folds one output */
    const size_t q_block = !p->packed && (p->q == 1 || p->q == 2 || p->q == 4) ? (size_t)p->q : 1;
    t.q_block = q_block;
    const ks__fewout_core_fn core =
        p->packed ? j->arch->packed[p->packed == 4 ? 2 : p->packed - 1]
                  : j->arch->span((size_t)p->sx, (size_t)p->chunks, (size_t)p->tail, q_block);
    /* floats of one output row (of a transpose conv: one of the block's rows) */
    const int64_t y_row_floats = p->ow * p->q;
    for (size_t row = begin; row < end; row++) {
        const int64_t n = (int64_t)row / p->oh, oy = (int64_t)row % p->oh;
        size_t nrows = 0;
        for (int64_t ky = 0; ky < p->kh; ky++) {
            const int64_t iy = oy * p->sh - p->pt + ky * p->dh;
            if (iy < 0 || iy >= p->ih) continue;
            xrow[nrows] = j->x + (n * p->ih + iy) * row_floats;
            wt[nrows++] = wbase + ky * p->w_row_floats;
        }
        t.num_rows = nrows;
        /* tiles that read the image in place run in one call, the others one by one */
        for (int64_t i = 0; i < tiles;) {
            const int64_t start = (i * lanes * p->sw - p->pl) * p->ic;
            int64_t k = i + 1;
            if (!needs_window(p, i * lanes)) {
                while (k < tiles && !needs_window(p, k * lanes))
                    k++;
                for (size_t r = 0; r < nrows; r++)
                    xt[r] = xrow[r] + start;
            } else {
                for (size_t r = 0; r < nrows; r++) {
                    float *wd = win + (int64_t)r * win_floats;
                    fill_window(wd, xrow[r], start, p->reach, row_floats);
                    xt[r] = wd;
                }
            }
            t.num_tiles = (size_t)(k - i);
            t.sums = sums + i * tile_sums;
            core(&t);
            i = k;
        }
        /* the first output row this input row (transpose conv) or output row (conv) writes */
        float *yrow = j->y + (int64_t)row * p->groups * y_row_floats;
        for (int64_t g = 0; g < p->groups; g++) {
            ks__fewout_store st = {.sums = sums + g * p->q * lanes,
                                   .sums_stride = (size_t)tile_sums,
                                   .pixel_major = q_block == (size_t)p->q,
                                   .q = (size_t)p->q,
                                   .num_px = (size_t)p->ow,
                                   .bias = j->packed + g * p->q,
                                   .res = j->res ? j->res + (int64_t)row * y_row_floats : NULL,
                                   .slope = j->slope,
                                   .act = p->act,
                                   .alpha = p->alpha,
                                   .y = yrow + g * y_row_floats};
            j->arch->store(&st);
        }
    }
}

ks_status ks__fewout_run(ks__kernel_ctx *ctx, const ks__fewout_arch *arch) {
    fewout_problem p;
    if (!describe(ctx, arch, &p))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "fewout conv cannot run this node");
    const size_t per_thread = (size_t)scratch_floats(&p, arch);
    const uint32_t threads = ks__pool_threads(ctx->pool);
    if (!ctx->packed || ctx->packed_bytes < (size_t)packed_floats(&p) * sizeof(float) ||
        !ctx->scratch || ctx->scratch_bytes < per_thread * threads * sizeof(float))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL,
                                "fewout: packed/scratch buffers missing or planned for fewer "
                                "than %u threads",
                                threads);
    _Alignas(64) float slope[KS_FEWOUT_MAX_OUT * KS_FEWOUT_MAX_PX];
    const float *slope_data = p.slope ? (const float *)p.slope->data : NULL;
    for (int64_t i = 0; slope_data && i < p.co * (int64_t)arch->lanes; i++)
        slope[i] = slope_data[i % p.co];
    fewout_job j = {&p,
                    arch,
                    (const float *)ctx->in[0]->data,
                    (const float *)ctx->packed,
                    p.res ? (const float *)p.res->data : NULL,
                    slope_data ? slope : NULL,
                    (float *)ctx->out[0]->data,
                    (float *)ctx->scratch,
                    per_thread};
    const int64_t rows = p.n * p.oh;
    const int64_t work_per_row = p.ow * p.num_out * p.kh * (p.span > 8 ? p.span : 8);
    ks__parallel_for(ctx->pool, (size_t)rows, (size_t)(65536 / (work_per_row + 1)) + 1, fewout_rows,
                     &j);
    return KS_STATUS_OK;
}
