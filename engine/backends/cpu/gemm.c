/* f32 GEMM / indirect-GEMM driver (gemm.h): problem description, weight packing, tiling and
 * threading. Portable C; the ISA files supply the microkernels.
 *
 * Why an indirect GEMM rather than im2col: im2col copies every input pixel KH*KW times into a
 * scratch matrix (9x the input for 3x3, i.e. 9 * 56*56*64 * 4 = 7 MB at 56x56x64), which costs
 * memory bandwidth that the FMA units then wait for; the indirection needs MR*KH*KW pointers per
 * tile and reads the input in place. Padding costs nothing (pointers to a zero vector) and 1x1
 * convs, FC and MATMUL are the ks == 1 case of the same kernel.
 *
 * Work split: items are (group, NR-panel, MR-tile). With large weights the tile index runs
 * fastest, so a thread's contiguous chunk sweeps one weight panel (K x NR floats, up to a few
 * hundred KB: L2-resident) over many pixel tiles; with small weights the panel index runs fastest
 * so a tile's input rows stay in L1 across panels. Each item writes a disjoint output tile with a
 * fixed summation order, so results do not depend on the thread count.
 */
#include "gemm.h"

#include <string.h>

#include "ref/conv_internal.h"

typedef struct gemm_problem {
    int64_t m;           /* output rows (pixels) */
    int64_t kc, ks;      /* floats per tap, taps */
    int64_t groups, ocg; /* groups, output channels per group */
    int64_t ldc;         /* output row stride in floats (all output channels) */
    int64_t w_sn, w_sk;  /* weight (n, k) of group 0 is at n * w_sn + k * w_sk */
    int conv;            /* row pointers from conv geometry; else row r at x + r * lda */
    int64_t lda;         /* input row stride in floats when !conv */
    int64_t ih, iw, ic, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
    const ks__rt_tensor *w, *bias, *residual;
    ks__gemm_epilogue ep;
} gemm_problem;

static int describe_conv(const ks__kernel_ctx *ctx, gemm_problem *p) {
    const ks__rt_tensor *x = ks__kernel_input(ctx, 0), *w = ks__kernel_input(ctx, 1),
                        *y = ctx->out[0];
    const int32_t *ip = ctx->node->ip;
    if (!ks__rt_float_plain(x) || !ks__rt_float_plain(y) || !ks__rt_const_weights(w) ||
        x->rank != 4 || w->rank != 4 || y->rank != 4)
        return -1;
    p->groups = ks__ip_or_one(ip[9]);
    p->ic = x->dims[3];
    p->kc = w->dims[3];
    p->kh = w->dims[1], p->kw = w->dims[2];
    int64_t oc = w->dims[0];
    if (p->groups < 1 || p->kc < 1 || p->kh < 1 || p->kw < 1 || oc < 1 || oc % p->groups ||
        p->kc * p->groups != p->ic || y->dims[3] != oc || y->dims[0] != x->dims[0])
        return -1;
    p->ocg = oc / p->groups;
    if (p->groups > 1 && (p->kc < 8 || p->ocg < 8)) return -1;
    if (ip[8] < KS_PAD_EXPLICIT || ip[8] > KS_PAD_VALID) return -1;
    p->ih = x->dims[1], p->iw = x->dims[2], p->oh = y->dims[1], p->ow = y->dims[2];
    p->sh = ks__ip_or_one(ip[0]), p->sw = ks__ip_or_one(ip[1]);
    p->dh = ks__ip_or_one(ip[2]), p->dw = ks__ip_or_one(ip[3]);
    if (p->sh < 1 || p->sw < 1 || p->dh < 1 || p->dw < 1) return -1;
    p->pt = ks__conv_lead_pad(ip[8], ip[4], p->ih, p->oh, (p->kh - 1) * p->dh + 1, p->sh);
    p->pl = ks__conv_lead_pad(ip[8], ip[5], p->iw, p->ow, (p->kw - 1) * p->dw + 1, p->sw);
    p->ks = p->kh * p->kw;
    p->m = y->dims[0] * p->oh * p->ow;
    p->ldc = oc;
    p->w_sn = p->ks * p->kc, p->w_sk = 1;
    /* 1x1, stride 1, no padding: the input rows are the GEMM rows (no indirection). */
    p->conv = !(p->ks == 1 && p->sh == 1 && p->sw == 1 && p->pt == 0 && p->pl == 0 &&
                p->oh == p->ih && p->ow == p->iw);
    p->lda = p->ic;
    p->ep.act = ip[10];
    p->ep.alpha = ctx->node->fp[0];
    const ks__rt_tensor *slope = ks__kernel_input(ctx, 4);
    if (p->ep.act == KS_ACT_PRELU) {
        if (!ks__rt_float_plain(slope) || !slope->data || ks__rt_numel(slope) != oc) return -1;
        p->ep.slope = (const float *)slope->data;
    } else if (slope) {
        return -1;
    }
    p->residual = ks__kernel_input(ctx, 3);
    if (p->residual) {
        const ks__rt_tensor *r = p->residual;
        if (!ks__rt_float_plain(r) || r->rank != 4) return -1;
        for (int i = 0; i < 4; i++)
            if (r->dims[i] != y->dims[i]) return -1;
    }
    return 0;
}

static int describe_fc(const ks__kernel_ctx *ctx, gemm_problem *p) {
    const ks__rt_tensor *x = ks__kernel_input(ctx, 0), *w = ks__kernel_input(ctx, 1),
                        *y = ctx->out[0];
    if (!ks__rt_float_plain(x) || !ks__rt_float_plain(y) || !ks__rt_const_weights(w) ||
        w->rank != 2)
        return -1;
    int64_t o = w->dims[0], in_size = w->dims[1], numel = ks__rt_numel(x);
    if (o < 1 || in_size < 1 || numel < 0 || numel % in_size) return -1;
    if (ks__rt_numel(y) != numel / in_size * o) return -1;
    p->groups = 1, p->ocg = o, p->ldc = o;
    p->m = numel / in_size, p->kc = in_size, p->ks = 1, p->lda = in_size;
    p->w_sn = in_size, p->w_sk = 1;
    p->ep.act = ctx->node->ip[0];
    p->ep.alpha = ctx->node->fp[0];
    return 0;
}

static int describe_matmul(const ks__kernel_ctx *ctx, gemm_problem *p) {
    const ks__rt_tensor *a = ks__kernel_input(ctx, 0), *b = ks__kernel_input(ctx, 1),
                        *y = ctx->out[0];
    if (!ks__rt_float_plain(a) || !ks__rt_float_plain(y) || !ks__rt_const_weights(b) ||
        b->rank != 2 || a->rank < 1 || ctx->node->ip[0] != 0)
        return -1;
    int tb = ctx->node->ip[1] != 0;
    int64_t k = tb ? b->dims[1] : b->dims[0], n = tb ? b->dims[0] : b->dims[1];
    int64_t numel = ks__rt_numel(a);
    if (k < 1 || n < 1 || a->dims[a->rank - 1] != k || numel < 0) return -1;
    p->groups = 1, p->ocg = n, p->ldc = n;
    p->m = numel / k, p->kc = k, p->ks = 1, p->lda = k;
    if (ks__rt_numel(y) != p->m * n) return -1;
    p->w_sn = tb ? k : 1, p->w_sk = tb ? 1 : n;
    return 0;
}

static int describe(const ks__kernel_ctx *ctx, gemm_problem *p) {
    memset(p, 0, sizeof(*p));
    if (ctx->num_outputs != 1 || ctx->num_inputs < 2) return -1;
    int r;
    switch (ctx->node->op) {
    case KS_OP_CONV2D:
        r = describe_conv(ctx, p);
        break;
    case KS_OP_FULLY_CONNECTED:
        r = describe_fc(ctx, p);
        break;
    case KS_OP_MATMUL:
        r = describe_matmul(ctx, p);
        break;
    default:
        r = -1;
        break;
    }
    if (r) return r;
    p->w = ctx->in[1];
    if (ctx->node->op != KS_OP_MATMUL) {
        const ks__rt_tensor *b = ks__kernel_input(ctx, 2);
        if (b && (!ks__rt_const_weights(b) || ks__rt_numel(b) != p->groups * p->ocg)) return -1;
        p->bias = b;
    }
    if (p->ep.act < 0 || p->ep.act >= KS_ACT_COUNT || p->m < 1) return -1;
    if (p->ep.act == KS_ACT_PRELU && !p->ep.slope) return -1; /* PRELU is CONV2D only */
    return 0;
}

/* ---- sizes ---- */

static size_t round_up(size_t v, size_t a) {
    return (v + a - 1) / a * a;
}

static size_t num_panels(const gemm_problem *p, const ks__f32_gemm_arch *arch) {
    return ((size_t)p->ocg + arch->nr - 1) / arch->nr;
}

static size_t panel_floats(const gemm_problem *p, const ks__f32_gemm_arch *arch) {
    return arch->nr + (size_t)(p->ks * p->kc) * arch->nr;
}

static size_t zero_bytes(const gemm_problem *p) {
    return round_up((size_t)p->kc * sizeof(float), 64);
}

static size_t per_thread_scratch(const gemm_problem *p, const ks__f32_gemm_arch *arch) {
    return round_up((size_t)arch->mr * (size_t)p->ks * sizeof(const float *), 64);
}

/* Cycles: the padded MACs at the peak, plus what each MR x NR tile costs beyond its FMAs (the
 * call, the epilogue's loads and stores, and for convs the row pointers of every kernel tap).
 * Measured: YuNet's 3->16 stem ran at 1/3 of the MAC-only estimate and YOLOX-nano's 12->16 3x3
 * at 0.45, i.e. ~50 cycles per tap of an 8-row tile and ~40 per tile (smallc.c used to scale its
 * own cost by this); BlazePose's 1x1 8->8 convs at 256x256 (K = 8: 48 MACs per row and tile) ran
 * at 1/3.4 of the estimate even with unmasked stores. Large-K layers are unaffected (+1 % at
 * 3x3x64). A last panel of at most narrow_nr columns costs narrow_nr columns. */
#define GEMM_TILE_CYCLES 40.0
#define GEMM_TAP_CYCLES_PER_ROW 6.25

double ks__f32_gemm_cost(const ks__kernel_ctx *ctx, const ks__f32_gemm_arch *arch) {
    gemm_problem p;
    if (describe(ctx, &p)) return -1.0;
    const double mtiles = (double)((p.m + arch->mr - 1) / arch->mr);
    const size_t panels = num_panels(&p, arch), rest = (size_t)p.ocg % arch->nr;
    double columns = (double)(panels * arch->nr);
    if (arch->narrow_nr && rest > 0 && rest <= arch->narrow_nr)
        columns -= (double)(arch->nr - arch->narrow_nr);
    const double macs = mtiles * arch->mr * columns * (double)p.groups * (double)(p.ks * p.kc);
    const double tiles = mtiles * (double)panels * (double)p.groups;
    const double per_tile =
        GEMM_TILE_CYCLES + (p.conv ? GEMM_TAP_CYCLES_PER_ROW * arch->mr * (double)p.ks : 0.0);
    return macs / arch->macs_per_cycle + tiles * per_tile;
}

ks_status ks__f32_gemm_plan(ks__kernel_ctx *ctx, const ks__f32_gemm_arch *arch,
                            size_t *packed_bytes_out) {
    gemm_problem p;
    if (describe(ctx, &p))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "f32 gemm cannot run this node");
    /* Weights are already bounded by their (validated) tensor size; panel padding adds < NR
     * channels per group, so this cannot overflow on 64-bit size_t. */
    size_t panels = (size_t)p.groups * num_panels(&p, arch);
    size_t bytes = zero_bytes(&p) + panels * panel_floats(&p, arch) * sizeof(float);
    uint32_t threads = ctx->num_threads ? ctx->num_threads : 1;
    size_t scratch = per_thread_scratch(&p, arch) * threads;
    if (scratch > ctx->scratch_bytes) ctx->scratch_bytes = scratch;
    *packed_bytes_out = bytes;
    return KS_STATUS_OK;
}

static float weight_at(const ks__rt_tensor *w, int64_t i, int64_t channel) {
    if (w->dtype == KS_DTYPE_F32) return ((const float *)w->data)[i];
    return ks__conv_load_f(w, i, channel);
}

ks_status ks__f32_gemm_pack(ks__kernel_ctx *ctx, const ks__f32_gemm_arch *arch) {
    gemm_problem p;
    if (describe(ctx, &p))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "f32 gemm cannot run this node");
    size_t np = num_panels(&p, arch), pf = panel_floats(&p, arch), nr = arch->nr;
    size_t need = zero_bytes(&p) + (size_t)p.groups * np * pf * sizeof(float);
    if (!ctx->packed || ctx->packed_bytes < need)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "packed buffer too small");
    memset(ctx->packed, 0, zero_bytes(&p));
    float *dst = (float *)((char *)ctx->packed + zero_bytes(&p));
    int64_t k_total = p.ks * p.kc;
    for (int64_t g = 0; g < p.groups; g++) {
        for (size_t pn = 0; pn < np; pn++, dst += pf) {
            for (size_t j = 0; j < nr; j++) {
                int64_t n = (int64_t)(pn * nr + j), co = g * p.ocg + n;
                dst[j] = (n < p.ocg && p.bias) ? weight_at(p.bias, co, co) : 0.0f;
            }
            float *wp = dst + nr;
            for (size_t j = 0; j < nr; j++) {
                int64_t n = (int64_t)(pn * nr + j), co = g * p.ocg + n;
                if (n >= p.ocg) {
                    for (int64_t k = 0; k < k_total; k++)
                        wp[(size_t)k * nr + j] = 0.0f;
                    continue;
                }
                /* Group g's weights start co rows down (conv: OHWI rows are per output channel). */
                int64_t base = co * p.w_sn;
                for (int64_t k = 0; k < k_total; k++)
                    wp[(size_t)k * nr + j] = weight_at(p.w, base + k * p.w_sk, co);
            }
        }
    }
    return KS_STATUS_OK;
}

/* ---- run ---- */

typedef struct gemm_job {
    const gemm_problem *p;
    const ks__f32_gemm_arch *arch;
    const float *x, *zero, *w;
    const float *res;
    float *y;
    size_t panels, mtiles, panel_floats, ptrs_per_thread;
    int tile_major; /* items ordered tile-first (weights small) instead of panel-first */
    const float **ptrs;
} gemm_job;

/* Row pointers of tile rows [m0, m0 + mr): a[t * MR + r]. Rows past mr repeat the last row so
 * the microkernel never reads through an unset pointer. */
static void build_rows(const gemm_job *j, size_t m0, size_t mr, const float **a) {
    const gemm_problem *p = j->p;
    size_t MR = j->arch->mr;
    if (!p->conv) {
        for (size_t r = 0; r < MR; r++)
            a[r] = j->x + (int64_t)(m0 + (r < mr ? r : mr - 1)) * p->lda;
        return;
    }
    /* One division for the tile, then step through (b, oy, ox). */
    int64_t plane = p->oh * p->ow;
    int64_t b = (int64_t)m0 / plane, rem = (int64_t)m0 % plane;
    int64_t oy = rem / p->ow, ox = rem % p->ow;
    for (size_t r = 0; r < MR; r++) {
        if (r > 0 && r < mr && ++ox == p->ow) {
            ox = 0;
            if (++oy == p->oh) oy = 0, b++;
        }
        const float *img = j->x + b * p->ih * p->iw * p->ic;
        for (int64_t ky = 0; ky < p->kh; ky++) {
            int64_t iy = oy * p->sh - p->pt + ky * p->dh;
            int row_ok = iy >= 0 && iy < p->ih;
            for (int64_t kx = 0; kx < p->kw; kx++) {
                int64_t ix = ox * p->sw - p->pl + kx * p->dw;
                size_t t = (size_t)(ky * p->kw + kx);
                a[t * MR + r] =
                    (row_ok && ix >= 0 && ix < p->iw) ? img + (iy * p->iw + ix) * p->ic : j->zero;
            }
        }
    }
}

static void gemm_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const gemm_job *j = (const gemm_job *)arg;
    const gemm_problem *p = j->p;
    size_t MR = j->arch->mr, NR = j->arch->nr;
    const float **a = j->ptrs + (size_t)thread * j->ptrs_per_thread;
    size_t built = (size_t)-1;
    for (size_t i = begin; i < end; i++) {
        size_t mt, gp;
        if (j->tile_major) {
            size_t np = j->panels * (size_t)p->groups;
            mt = i / np, gp = i % np;
        } else {
            mt = i % j->mtiles, gp = i / j->mtiles;
        }
        size_t g = gp / j->panels, pn = gp % j->panels;
        size_t m0 = mt * MR;
        size_t mr = (size_t)p->m - m0 < MR ? (size_t)p->m - m0 : MR;
        if (mt != built) {
            build_rows(j, m0, mr, a);
            built = mt;
        }
        size_t n0 = pn * NR;
        size_t nc = (size_t)p->ocg - n0 < NR ? (size_t)p->ocg - n0 : NR;
        size_t col = g * (size_t)p->ocg + n0, ldc = (size_t)p->ldc;
        ks__gemm_epilogue ep = p->ep;
        if (ep.slope) ep.slope += col;
        j->arch->ukernel(mr, nc, (size_t)p->kc, (size_t)p->ks, a, g * (size_t)p->kc, j->zero,
                         j->w + gp * j->panel_floats, j->y + m0 * ldc + col, ldc,
                         j->res ? j->res + m0 * ldc + col : NULL, ldc, &ep);
    }
}

ks_status ks__f32_gemm_run(ks__kernel_ctx *ctx, const ks__f32_gemm_arch *arch) {
    gemm_problem p;
    if (describe(ctx, &p))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "f32 gemm cannot run this node");
    size_t per_thread = per_thread_scratch(&p, arch);
    uint32_t threads = ks__pool_threads(ctx->pool);
    if (!ctx->packed || !ctx->scratch || ctx->scratch_bytes < per_thread * threads)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL,
                                "gemm: packed/scratch buffers missing or planned for fewer than %u "
                                "threads",
                                threads);
    gemm_job j;
    memset(&j, 0, sizeof(j));
    j.p = &p;
    j.arch = arch;
    j.x = (const float *)ctx->in[0]->data;
    j.zero = (const float *)ctx->packed;
    j.w = (const float *)((const char *)ctx->packed + zero_bytes(&p));
    j.res = p.residual ? (const float *)p.residual->data : NULL;
    j.y = (float *)ctx->out[0]->data;
    j.panels = num_panels(&p, arch);
    j.mtiles = ((size_t)p.m + arch->mr - 1) / arch->mr;
    j.panel_floats = panel_floats(&p, arch);
    j.ptrs_per_thread = per_thread / sizeof(const float *);
    j.ptrs = (const float **)ctx->scratch;
    size_t items = (size_t)p.groups * j.panels * j.mtiles;
    /* Small weights stay cache-resident anyway: sweep every panel over one pixel tile while its
     * input rows are in L1. Large weights: sweep one panel over many tiles (L2-resident panel). */
    j.tile_major = (size_t)p.groups * j.panels * j.panel_floats * sizeof(float) <= (256u << 10);
    ks__parallel_for(ctx->pool, items, 1, gemm_range, &j);
    return KS_STATUS_OK;
}

void ks__gemm_act_scalar(float *x, size_t n, const ks__gemm_epilogue *ep) {
    for (size_t i = 0; i < n; i++)
        x[i] = ks__act_apply(x[i], ep->act, ep->slope ? ep->slope[i] : ep->alpha);
}
