/* Small-channel direct CONV2D driver (smallc.h): node description, cost, weight packing, rows and
 * tiles. Portable C; the ISA files supply the cores and the epilogue.
 *
 * Why not the indirect GEMM: its tile is 8 pixels x 32 channels (AVX-512) and every kernel tap
 * costs it a round of row-pointer set-up, so a 16-channel conv runs half-empty lanes and a stem
 * with 3 input channels spends more time on taps than on FMAs (37 GFLOP/s on YuNet's 3->16
 * stem). Here the channel block fills the vectors and the pixel count fills the registers, and a
 * kernel row's KW * Cin taps are one contiguous run of the input row.
 */
#include "smallc.h"

#include <math.h>
#include <string.h>

#include "ref/conv_internal.h"

#define MAX_KH 16

typedef struct smallc_problem {
    int64_t n, ih, iw, ic, oh, ow, oc, kh, kw, sh, sw, pt, pl;
    int64_t span; /* taps per kernel row: kw * ic */
    int32_t act;
    float alpha;
    const ks__rt_tensor *w, *bias, *res, *slope;
} smallc_problem;

typedef struct smallc_blocks {
    uint32_t num;               /* channel blocks */
    uint32_t nv_full;           /* vectors of every block but the last (<= arch->max_nv) */
    uint32_t nv_last;           /* vectors of the last block */
    uint32_t px;                /* tile pixels (of the widest block) */
    int64_t window_floats;      /* one kernel row's input window of a tile */
    int64_t bias_floats;        /* packed bias area */
    int64_t block_floats;       /* packed weights of a full block */
    ks__smallc_core_fn core[2]; /* full block, last block */
} smallc_blocks;

static bool describe(const ks__kernel_ctx *ctx, smallc_problem *p) {
    memset(p, 0, sizeof(*p));
    if (ctx->node->op != KS_OP_CONV2D || ctx->num_inputs < 2 || ctx->num_outputs != 1) return false;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1], *y = ctx->out[0];
    const int32_t *ip = ctx->node->ip;
    if (!ks__rt_float_plain(x) || !ks__rt_float_plain(y) || !ks__rt_const_weights(w) ||
        x->rank != 4 || w->rank != 4 || y->rank != 4)
        return false;
    p->n = x->dims[0], p->ih = x->dims[1], p->iw = x->dims[2], p->ic = x->dims[3];
    p->oc = w->dims[0], p->kh = w->dims[1], p->kw = w->dims[2];
    p->oh = y->dims[1], p->ow = y->dims[2];
    if (p->n < 1 || p->ih < 1 || p->iw < 1 || p->ic < 1 || p->oc < 1 || p->kh < 1 || p->kw < 1 ||
        p->oh < 1 || p->ow < 1 || p->kh > MAX_KH)
        return false;
    if (w->dims[3] != p->ic || y->dims[3] != p->oc || y->dims[0] != p->n) return false;
    if (ks__ip_or_one(ip[9]) != 1 || ks__ip_or_one(ip[2]) != 1 || ks__ip_or_one(ip[3]) != 1)
        return false;
    if (ip[8] < KS_PAD_EXPLICIT || ip[8] > KS_PAD_VALID) return false;
    p->sh = ks__ip_or_one(ip[0]), p->sw = ks__ip_or_one(ip[1]);
    if (p->sh < 1 || p->sw < 1) return false;
    p->pt = ks__conv_lead_pad(ip[8], ip[4], p->ih, p->oh, p->kh, p->sh);
    p->pl = ks__conv_lead_pad(ip[8], ip[5], p->iw, p->ow, p->kw, p->sw);
    p->span = p->kw * p->ic;
    p->act = ip[10];
    p->alpha = ctx->node->fp[0];
    if (p->act < 0 || p->act > KS_ACT_PRELU) return false; /* the epilogues' set (no TABLE) */
    p->w = w;
    p->bias = ks__kernel_input(ctx, 2);
    if (p->bias && (!ks__rt_const_weights(p->bias) || ks__rt_numel(p->bias) != p->oc)) return false;
    p->res = ks__kernel_input(ctx, 3);
    if (p->res) {
        if (!ks__rt_float_plain(p->res) || p->res->rank != 4) return false;
        for (int i = 0; i < 4; i++)
            if (p->res->dims[i] != y->dims[i]) return false;
    }
    p->slope = ks__kernel_input(ctx, 4);
    if (p->act == KS_ACT_PRELU) {
        if (!ks__rt_float_plain(p->slope) || !p->slope->data || ks__rt_numel(p->slope) != p->oc)
            return false;
    } else if (p->slope) {
        return false;
    }
    return true;
}

static int64_t round_up(int64_t v, int64_t a) {
    return (v + a - 1) / a * a;
}

static bool make_blocks_of(const smallc_problem *p, const ks__smallc_arch *arch, uint32_t nv_full,
                           smallc_blocks *b) {
    const int64_t lanes = arch->lanes, bw = (int64_t)nv_full * lanes;
    b->num = (uint32_t)((p->oc + bw - 1) / bw);
    b->nv_full = nv_full;
    int64_t rest = p->oc - (int64_t)(b->num - 1) * bw;
    b->nv_last = (uint32_t)((rest + lanes - 1) / lanes);
    uint32_t nv_first = b->num > 1 ? nv_full : b->nv_last;
    b->core[0] = arch->core(p->sw * p->ic, nv_first);
    b->core[1] = arch->core(p->sw * p->ic, b->nv_last);
    if (!b->core[0] || !b->core[1]) return false;
    b->px = arch->px[nv_first - 1];
    if (arch->px[b->nv_last - 1] > b->px) b->px = arch->px[b->nv_last - 1];
    b->window_floats = round_up(((int64_t)(b->px - 1) * p->sw + p->kw) * p->ic, 16);
    b->bias_floats = round_up(p->oc, 16);
    b->block_floats = p->kh * p->span * bw;
    return true;
}

static double block_cycles(const smallc_problem *p, const ks__smallc_arch *arch, uint32_t nv,
                           uint32_t px);

/* Cycles of one output row with these blocks. */
static double row_cycles(const smallc_problem *p, const ks__smallc_arch *arch,
                         const smallc_blocks *b) {
    return (double)(b->num - 1) * block_cycles(p, arch, b->nv_full, arch->px[b->nv_full - 1]) +
           block_cycles(p, arch, b->nv_last, arch->px[b->nv_last - 1]);
}

/* The block width (1 to arch->max_nv vectors, at least 2 where the arch has 2) whose row costs
 * least: AVX2's 4 x 3-vector tile serves 24 channels in one block instead of 16 + 8. */
static bool make_blocks(const smallc_problem *p, const ks__smallc_arch *arch, smallc_blocks *b) {
    bool found = false;
    double best = 0.0;
    const uint32_t lo = arch->max_nv >= 2 ? 2 : 1;
    for (uint32_t nv = arch->max_nv; nv >= lo; nv--) {
        smallc_blocks c;
        if (!make_blocks_of(p, arch, nv, &c)) continue;
        double cyc = row_cycles(p, arch, &c);
        if (!found || cyc < best) *b = c, best = cyc, found = true;
    }
    return found;
}

/* ---- cost ----
 * Cycles of this kernel, from the FMA and load counts of the cores plus per-tile overheads: the
 * unit of the GEMM's cost (its padded MACs at peak). Like the other variants' models it leaves
 * out memory traffic, which bounds the 16-channel 1x1 convs on large images for every kernel.
 *
 * The GEMM's model counts its per-tile overheads (gemm.c), which is what brings stems with few
 * input channels and narrow 1x1 convs here. */

static double block_cycles(const smallc_problem *p, const ks__smallc_arch *arch, uint32_t nv,
                           uint32_t px) {
    const double tiles = (double)((p->ow + px - 1) / px);
    /* per tap: px * nv FMAs, px broadcasts and nv weight loads (two loads per cycle) */
    const double per_tap = ((double)px * nv / arch->fma_per_cycle > ((double)px + nv) / 2.0)
                               ? (double)px * nv / arch->fma_per_cycle
                               : ((double)px + nv) / 2.0;
    double rows_k = (double)p->kh; /* kernel rows inside the image, on average */
    if (p->kh > 1) {
        double skipped = (double)(p->pt > 0 ? p->pt : 0) / (double)p->sh;
        rows_k -= skipped * 2.0 / (double)p->oh;
        if (rows_k < 1.0) rows_k = 1.0;
    }
    double core = tiles * (rows_k * (double)p->span * per_tap + 30.0);
    /* bias and store per output vector; the activation itself costs every kernel the same and,
     * as in the GEMM's model, is left out (counting it here kept SiLU layers on the GEMM that
     * runs them 1.7x slower) */
    double epi = (double)p->ow * nv;
    /* zero-filled windows of the tiles at the row ends */
    double edges = (p->pl > 0 ? 1.0 : 0.0) + 1.0;
    double win =
        edges * (double)p->kh * (double)(((int64_t)px - 1) * p->sw + p->kw) * (double)p->ic / 4.0;
    return core + epi + win + 20.0;
}

double ks__smallc_cost(const ks__kernel_ctx *ctx, const ks__smallc_arch *arch) {
    smallc_problem p;
    smallc_blocks b;
    if (!describe(ctx, &p) || !make_blocks(&p, arch, &b)) return -1.0;
    return row_cycles(&p, arch, &b) * (double)(p.n * p.oh);
}

ks_status ks__smallc_plan(ks__kernel_ctx *ctx, const ks__smallc_arch *arch,
                          size_t *packed_bytes_out) {
    smallc_problem p;
    smallc_blocks b;
    if (!describe(ctx, &p) || !make_blocks(&p, arch, &b))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "smallc conv cannot run this node");
    /* weights are bounded by their (validated) tensor size; block padding adds < max_nv * lanes
     * channels, so this cannot overflow on 64-bit size_t */
    *packed_bytes_out = (size_t)(b.bias_floats + (int64_t)b.num * b.block_floats) * sizeof(float);
    uint32_t threads = ctx->num_threads ? ctx->num_threads : 1;
    size_t per_thread = (size_t)(p.kh * b.window_floats) * sizeof(float);
    if (per_thread * threads > ctx->scratch_bytes) ctx->scratch_bytes = per_thread * threads;
    return KS_STATUS_OK;
}

static float weight_at(const ks__rt_tensor *w, int64_t i, int64_t channel) {
    if (w->dtype == KS_DTYPE_F32) return ((const float *)w->data)[i];
    return ks__conv_load_f(w, i, channel);
}

ks_status ks__smallc_pack(ks__kernel_ctx *ctx, const ks__smallc_arch *arch) {
    smallc_problem p;
    smallc_blocks b;
    if (!describe(ctx, &p) || !make_blocks(&p, arch, &b))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "smallc conv cannot run this node");
    size_t need = (size_t)(b.bias_floats + (int64_t)b.num * b.block_floats) * sizeof(float);
    if (!ctx->packed || ctx->packed_bytes < need)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "packed buffer too small");
    float *dst = (float *)ctx->packed;
    memset(dst, 0, need);
    for (int64_t c = 0; c < p.oc && p.bias; c++)
        dst[c] = weight_at(p.bias, c, c);
    const int64_t lanes = arch->lanes, taps = p.kh * p.span;
    for (uint32_t bi = 0; bi < b.num; bi++) {
        const int64_t nvl = (int64_t)(bi + 1 < b.num ? b.nv_full : b.nv_last) * lanes;
        const int64_t c0 = (int64_t)bi * (int64_t)b.nv_full * lanes;
        float *wb = dst + b.bias_floats + (int64_t)bi * b.block_floats;
        for (int64_t c = 0; c < nvl && c0 + c < p.oc; c++)
            for (int64_t k = 0; k < taps; k++)
                wb[k * nvl + c] = weight_at(p.w, (c0 + c) * taps + k, c0 + c);
    }
    return KS_STATUS_OK;
}

/* ---- run ---- */

typedef struct smallc_job {
    const smallc_problem *p;
    const smallc_blocks *b;
    const ks__smallc_arch *arch;
    const float *x, *packed, *res, *slope;
    float *y;
    float *scratch;
    size_t scratch_floats; /* per thread */
} smallc_job;

/* dst = input columns [col0, col0 + num_cols) of row `src`, zeros outside [0, iw). */
static void fill_window(float *dst, const float *src, int64_t col0, int64_t num_cols, int64_t iw,
                        int64_t ic) {
    int64_t lo = col0 < 0 ? -col0 : 0;
    if (lo > num_cols) lo = num_cols;
    int64_t hi = iw - col0;
    if (hi > num_cols) hi = num_cols;
    if (hi < lo) hi = lo;
    memset(dst, 0, (size_t)(lo * ic) * sizeof(float));
    if (hi > lo)
        memcpy(dst + lo * ic, src + (col0 + lo) * ic, (size_t)((hi - lo) * ic) * sizeof(float));
    memset(dst + hi * ic, 0, (size_t)((num_cols - hi) * ic) * sizeof(float));
}

static void smallc_rows(void *arg, size_t begin, size_t end, uint32_t thread) {
    const smallc_job *j = (const smallc_job *)arg;
    const smallc_problem *p = j->p;
    const smallc_blocks *b = j->b;
    const int64_t lanes = j->arch->lanes;
    float *win = j->scratch + (size_t)thread * j->scratch_floats;
    _Alignas(64) float acc[KS_SMALLC_MAX_ACC];
    const float *xrow[MAX_KH], *xt[MAX_KH], *wt[MAX_KH];
    int64_t kys[MAX_KH];
    for (size_t row = begin; row < end; row++) {
        const int64_t n = (int64_t)row / p->oh, oy = (int64_t)row % p->oh;
        size_t nrows = 0;
        for (int64_t ky = 0; ky < p->kh; ky++) {
            const int64_t iy = oy * p->sh - p->pt + ky;
            if (iy < 0 || iy >= p->ih) continue;
            xrow[nrows] = j->x + ((n * p->ih + iy) * p->iw) * p->ic;
            kys[nrows++] = ky;
        }
        float *yrow = j->y + (int64_t)row * p->ow * p->oc;
        const float *rrow = j->res ? j->res + (int64_t)row * p->ow * p->oc : NULL;
        for (uint32_t bi = 0; bi < b->num; bi++) {
            const int last = bi + 1 == b->num;
            const uint32_t nv = last ? b->nv_last : b->nv_full;
            const uint32_t px = j->arch->px[nv - 1];
            const int64_t c0 = (int64_t)bi * (int64_t)b->nv_full * lanes;
            const int64_t nc = p->oc - c0 < (int64_t)nv * lanes ? p->oc - c0 : (int64_t)nv * lanes;
            const float *wb = j->packed + b->bias_floats + (int64_t)bi * b->block_floats;
            for (size_t t = 0; t < nrows; t++)
                wt[t] = wb + kys[t] * p->span * (int64_t)nv * lanes;
            ks__smallc_epilogue ep = {p->act, p->alpha, j->slope ? j->slope + c0 : NULL,
                                      p->bias ? j->packed + c0 : NULL};
            const ks__smallc_core_fn core = b->core[last];
            ks__smallc_store st = {.bias = ep.bias,
                                   .slope = ep.slope,
                                   .res = NULL,
                                   .y_stride = (size_t)p->oc,
                                   .num_ch = (size_t)nc,
                                   .kind = KS_SMALLC_STORE_CLAMP,
                                   .alpha = p->alpha};
            bool in_core = true;
            switch (p->act) {
            case KS_ACT_NONE:
                st.kind = KS_SMALLC_STORE_PLAIN;
                break;
            case KS_ACT_RELU:
                st.lo = 0.0f, st.hi = INFINITY;
                break;
            case KS_ACT_RELU6:
                st.lo = 0.0f, st.hi = 6.0f;
                break;
            case KS_ACT_RELU_N1_TO_1:
                st.lo = -1.0f, st.hi = 1.0f;
                break;
            case KS_ACT_PRELU:
            case KS_ACT_LEAKY_RELU:
                st.kind = KS_SMALLC_STORE_SLOPE;
                break;
            default:
                in_core = false;
                break;
            }
            const int64_t win_cols = ((int64_t)px - 1) * p->sw + p->kw;
            for (int64_t ox0 = 0; ox0 < p->ow; ox0 += px) {
                /* A last tile that would run past the row starts earlier instead, overlapping
                 * its predecessor (whose pixels it recomputes but does not store again, so an
                 * output that aliases the residual stays right): it then usually reads the
                 * image in place rather than a zero-filled window. */
                int64_t x0 = ox0, skip = 0;
                if (ox0 + (int64_t)px > p->ow && p->ow >= (int64_t)px) {
                    x0 = p->ow - (int64_t)px;
                    skip = ox0 - x0;
                }
                const int64_t col0 = x0 * p->sw - p->pl;
                const int64_t np = p->ow - x0 < (int64_t)px ? p->ow - x0 : (int64_t)px;
                if (col0 >= 0 && col0 + win_cols <= p->iw) {
                    for (size_t t = 0; t < nrows; t++)
                        xt[t] = xrow[t] + col0 * p->ic;
                } else {
                    /* the tile reaches into the padding or past the row: read zero-filled
                     * copies (the pixels past ow are computed and dropped) */
                    for (size_t t = 0; t < nrows; t++) {
                        float *wd = win + (int64_t)t * b->window_floats;
                        fill_window(wd, xrow[t], col0, win_cols, p->iw, p->ic);
                        xt[t] = wd;
                    }
                }
                const int64_t out0 = (x0 + skip) * p->oc + c0;
                if (in_core && skip == 0 && np == (int64_t)px) {
                    st.y = yrow + x0 * p->oc + c0;
                    st.res = rrow ? rrow + x0 * p->oc + c0 : NULL;
                    core(nrows, xt, wt, (size_t)p->span, acc, &st);
                } else {
                    core(nrows, xt, wt, (size_t)p->span, acc, NULL);
                    j->arch->epilogue(acc + skip * (int64_t)nv * lanes, nv, (size_t)(np - skip),
                                      (size_t)nc, &ep, rrow ? rrow + out0 : NULL, yrow + out0,
                                      (size_t)p->oc);
                }
            }
        }
    }
}

ks_status ks__smallc_run(ks__kernel_ctx *ctx, const ks__smallc_arch *arch) {
    smallc_problem p;
    smallc_blocks b;
    if (!describe(ctx, &p) || !make_blocks(&p, arch, &b))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "smallc conv cannot run this node");
    const size_t per_thread = (size_t)(p.kh * b.window_floats);
    const uint32_t threads = ks__pool_threads(ctx->pool);
    if (!ctx->packed || !ctx->scratch || ctx->scratch_bytes < per_thread * threads * sizeof(float))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL,
                                "smallc: packed/scratch buffers missing or planned for fewer than "
                                "%u threads",
                                threads);
    smallc_job j = {&p,
                    &b,
                    arch,
                    (const float *)ctx->in[0]->data,
                    (const float *)ctx->packed,
                    p.res ? (const float *)p.res->data : NULL,
                    p.slope ? (const float *)p.slope->data : NULL,
                    (float *)ctx->out[0]->data,
                    (float *)ctx->scratch,
                    per_thread};
    const int64_t rows = p.n * p.oh;
    const int64_t work_per_row = p.ow * p.oc * p.kh * p.span;
    ks__parallel_for(ctx->pool, (size_t)rows, (size_t)(65536 / (work_per_row + 1)) + 1, smallc_rows,
                     &j);
    return KS_STATUS_OK;
}
