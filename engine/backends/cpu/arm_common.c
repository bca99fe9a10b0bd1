/* Portable drivers of the AArch64 NEON fp32 variants (arm_common.h).
 *
 * FULLY_CONNECTED is run as a 1x1 conv over a [1, 1, rows, in_size] image, so one indirection
 * path serves both ops; with a single tap the indirection is one pointer per row and costs next to
 * nothing against the K x NR work of a tile.
 */
#include "arm_common.h"

#include <math.h>
#include <string.h>

#include "ref/conv_internal.h"

/* Packed buffers larger than this many floats mean a corrupt or absurd model. */
#define ARM_MAX_PACKED_FLOATS ((size_t)1 << 31)
/* Output channels per GEMM work item, in panels: keeps a tile's row pointers hot while bounding
 * the weights it streams through. */
#define ARM_GEMM_PANELS_PER_ITEM 8
/* Output pixels per depthwise microkernel call (bounds the per-thread pointer scratch). */
#define ARM_DW_PX_PER_CALL 16
/* Elements per elementwise work item. */
#define ARM_ELEMENTWISE_GRAIN 8192

static size_t round_up(size_t v, size_t m) {
    return (v + m - 1) / m * m;
}

static size_t max_threads(const ks__kernel_ctx *ctx) {
    return ctx->num_threads > 0 ? ctx->num_threads : 1;
}

static int is_plain_f32(const ks__rt_tensor *t) {
    return t && t->dtype == KS_DTYPE_F32 && (!t->quant || t->quant->count == 0);
}

/* Graph constants only: at plan time a computed tensor may already point into the arena before
 * its value exists, so a non-NULL data pointer alone does not mean the value can be packed. */
static int is_graph_const(const ks__rt_tensor *t) {
    return t && t->data && (!t->def || (t->def->flags & KS__TENSOR_CONST));
}

/* Weights the float reference path accepts, constant at reshape. */
static int is_const_float_weights(const ks__rt_tensor *t) {
    return is_graph_const(t) &&
           (t->dtype == KS_DTYPE_F32 || t->dtype == KS_DTYPE_F16 || ks__conv_is_quant(t));
}

static const ks__rt_tensor *opt_input(const ks__kernel_ctx *ctx, uint32_t idx) {
    return idx < ctx->num_inputs ? ctx->in[idx] : NULL;
}

void ks__arm_act_init(ks__arm_act *a, int32_t act, float alpha) {
    a->lo = -INFINITY;
    a->hi = INFINITY;
    a->post = KS_ACT_NONE;
    a->alpha = alpha;
    a->scalar_act = KS_ACT_NONE;
    a->res = NULL;
    a->res_stride = 0;
    a->slope = NULL;
    switch (act) {
    case KS_ACT_NONE:
        break;
    case KS_ACT_RELU:
        a->lo = 0.0f;
        break;
    case KS_ACT_RELU6:
        a->lo = 0.0f, a->hi = 6.0f;
        break;
    case KS_ACT_RELU_N1_TO_1:
        a->lo = -1.0f, a->hi = 1.0f;
        break;
    case KS_ACT_LEAKY_RELU:
    case KS_ACT_HARD_SWISH:
    case KS_ACT_SILU:
        a->post = act;
        break;
    default:
        a->scalar_act = act;
        break;
    }
}

void ks__arm_act_scalar(float *x, size_t n, const ks__arm_act *a) {
    if (a->scalar_act == KS_ACT_NONE) return;
    for (size_t i = 0; i < n; i++)
        x[i] = ks__act_apply(x[i], a->scalar_act, a->alpha);
}

ks_status ks__arm_plan_nothing(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    ctx->scratch_bytes = 0;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Conv geometry (after shape inference has set the output shape)                             */

typedef struct arm_conv {
    size_t n, ih, iw, ic, oh, ow, oc, kh, kw, sh, sw, dh, dw, pt, pl;
    int32_t act;
    float alpha;
    const float *slope; /* KS_ACT_PRELU: one slope per output channel (CONV2D input 4) */
    int has_res;        /* a fused residual add (CONV2D input 3), before the activation */
} arm_conv;

static size_t one_if_zero(int32_t v) {
    return v <= 0 ? 1 : (size_t)v;
}

static size_t leading_pad(int32_t mode, int32_t explicit_pad, size_t in, size_t out, size_t k,
                          size_t stride, size_t dil) {
    size_t k_eff = (k - 1) * dil + 1;
    size_t need = (out - 1) * stride + k_eff;
    size_t total = need > in ? need - in : 0;
    switch (mode) {
    case KS_PAD_EXPLICIT:
        return explicit_pad > 0 ? (size_t)explicit_pad : 0;
    case KS_PAD_SAME_UPPER:
        return total / 2;
    case KS_PAD_SAME_LOWER:
        return total - total / 2;
    default:
        return 0;
    }
}

/* 0 on success; -1 when the node is not a float conv/FC this file handles. `groups_out` gets
 * the conv's group count (1 for FC). */
/* act: the dtype of x, y and the residual (F32; F16 for the fp16 variants' probe). */
static int conv_geometry_dt(const ks__kernel_ctx *ctx, arm_conv *g, size_t *groups_out,
                            ks_dtype act) {
    memset(g, 0, sizeof(*g));
    if (ctx->num_inputs < 2 || !ctx->in[0] || !ctx->in[1] || ctx->num_outputs < 1) return -1;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1], *y = ctx->out[0];
    const int32_t *ip = ctx->node->ip;
    if (ctx->node->op == KS_OP_FULLY_CONNECTED) {
        if (w->rank != 2 || y->rank < 1 || w->dims[0] < 1 || w->dims[1] < 1) return -1;
        int64_t numel = ks__rt_numel(x);
        if (numel < 1 || numel % w->dims[1] != 0) return -1;
        g->n = 1, g->ih = 1, g->oh = 1;
        g->iw = g->ow = (size_t)(numel / w->dims[1]);
        g->ic = (size_t)w->dims[1];
        g->oc = (size_t)w->dims[0];
        g->kh = g->kw = g->sh = g->sw = g->dh = g->dw = 1;
        g->act = ip[0];
        g->alpha = ctx->node->fp[0];
        if (g->act == KS_ACT_PRELU) return -1; /* CONV2D only */
        *groups_out = 1;
        return 0;
    }
    if (ctx->node->op != KS_OP_CONV2D || x->rank != 4 || w->rank != 4 || y->rank != 4) return -1;
    /* A fused float residual add (4th input: y = act(conv + bias + res)): the microkernels run
     * without the activation and residual_act_row adds and activates each stored row. Refusing
     * it sent every such conv to the scalar reference kernel: 16 of BlazeFace's 37 convs, 15x
     * its instructions under qemu (docs/benchmarks-arm.md). The quantized fused forms are not
     * float kernels. */
    const ks__rt_tensor *res = opt_input(ctx, 3);
    if (res) {
        if (!res || res->dtype != act || (res->quant && res->quant->count) ||
            ks__rt_numel(res) != ks__rt_numel(y) || ip[12] != 0)
            return -1;
        g->has_res = 1;
    }
    /* PRELU slopes (5th input): the GEMM applies them after the microkernel; depthwise refuses */
    const ks__rt_tensor *slope = opt_input(ctx, 4);
    g->slope = NULL;
    if (ip[10] == KS_ACT_PRELU) {
        if (!is_plain_f32(slope) || !slope->data || ks__rt_numel(slope) != y->dims[3]) return -1;
        g->slope = (const float *)slope->data;
    } else if (slope) {
        return -1;
    }
    for (int i = 0; i < 4; i++)
        if (x->dims[i] < 1 || w->dims[i] < 1 || y->dims[i] < 1) return -1;
    g->n = (size_t)x->dims[0], g->ih = (size_t)x->dims[1], g->iw = (size_t)x->dims[2];
    g->ic = (size_t)x->dims[3];
    g->oh = (size_t)y->dims[1], g->ow = (size_t)y->dims[2], g->oc = (size_t)y->dims[3];
    g->kh = (size_t)w->dims[1], g->kw = (size_t)w->dims[2];
    g->sh = one_if_zero(ip[0]), g->sw = one_if_zero(ip[1]);
    g->dh = one_if_zero(ip[2]), g->dw = one_if_zero(ip[3]);
    g->pt = leading_pad(ip[8], ip[4], g->ih, g->oh, g->kh, g->sh, g->dh);
    g->pl = leading_pad(ip[8], ip[5], g->iw, g->ow, g->kw, g->sw, g->dw);
    g->act = ip[10];
    g->alpha = ctx->node->fp[0];
    *groups_out = one_if_zero(ip[9]);
    if ((size_t)w->dims[0] != g->oc || (size_t)y->dims[0] != g->n) return -1;
    if ((size_t)w->dims[3] * *groups_out != g->ic) return -1;
    return 0;
}

/* Pointer to channel 0 of the input pixel under tap (ky, kx) of output pixel (n, oy, ox), or
 * `zero` when the tap falls into the padding. */
static const float *tap_pointer(const arm_conv *g, const float *x, const float *zero, size_t n,
                                size_t oy, size_t ox, size_t ky, size_t kx) {
    /* Unsigned wrap-around turns a negative coordinate into a huge one, caught by the < test. */
    size_t iy = oy * g->sh + ky * g->dh - g->pt;
    size_t ix = ox * g->sw + kx * g->dw - g->pl;
    if (oy * g->sh + ky * g->dh < g->pt || iy >= g->ih) return zero;
    if (ox * g->sw + kx * g->dw < g->pl || ix >= g->iw) return zero;
    return x + ((n * g->ih + iy) * g->iw + ix) * g->ic;
}

/* ------------------------------------------------------------------------------------------ */
/* GEMM: CONV2D (groups 1) and FULLY_CONNECTED                                                 */

static int conv_geometry(const ks__kernel_ctx *ctx, arm_conv *g, size_t *groups_out) {
    return conv_geometry_dt(ctx, g, groups_out, KS_DTYPE_F32);
}

/* A plain float activation of dtype act. */
static int is_plain_act(const ks__rt_tensor *t, ks_dtype act) {
    return t && t->dtype == act && (!t->quant || t->quant->count == 0);
}

static int gemm_supported_dt(const ks__kernel_ctx *ctx, arm_conv *g, ks_dtype act) {
    size_t groups = 0;
    if (conv_geometry_dt(ctx, g, &groups, act) != 0 || groups != 1) return 0;
    if (!is_plain_act(ctx->in[0], act) || !is_plain_act(ctx->out[0], act)) return 0;
    if (!is_const_float_weights(ctx->in[1])) return 0;
    const ks__rt_tensor *b = opt_input(ctx, 2);
    if (b && (!is_graph_const(b) || (b->dtype != KS_DTYPE_F32 && b->dtype != KS_DTYPE_F16) ||
              ks__rt_numel(b) != (int64_t)g->oc))
        return 0;
    return 1;
}

static int gemm_supported(const ks__kernel_ctx *ctx, arm_conv *g) {
    return gemm_supported_dt(ctx, g, KS_DTYPE_F32);
}

int ks__arm_gemm_accepts(const ks__kernel_ctx *ctx, ks_dtype act) {
    arm_conv g;
    return gemm_supported_dt(ctx, &g, act);
}

/* Floats of the packed buffer: panels, then the zero vector. 0 when too large. */
static size_t gemm_packed_floats(const arm_conv *g, const ks__arm_gemm_config *cfg,
                                 size_t *panel_floats_out) {
    size_t k = g->kh * g->kw * g->ic;
    size_t num_panels = (g->oc + cfg->nr - 1) / cfg->nr;
    if (k > ARM_MAX_PACKED_FLOATS / cfg->nr) return 0;
    size_t panel_floats = cfg->nr * (1 + k);
    if (num_panels > ARM_MAX_PACKED_FLOATS / panel_floats) return 0;
    *panel_floats_out = panel_floats;
    return num_panels * panel_floats + round_up(g->ic, 16);
}

double ks__arm_gemm_cost(const ks__kernel_ctx *ctx, const ks__arm_gemm_config *cfg) {
    arm_conv g;
    if (!gemm_supported(ctx, &g)) return -1.0;
    size_t panel_floats;
    if (gemm_packed_floats(&g, cfg, &panel_floats) == 0) return -1.0;
    /* MACs of the padded tiles, at MR*NR MACs per step. */
    double m = (double)round_up(g.n * g.oh * g.ow, cfg->mr);
    double n = (double)round_up(g.oc, cfg->nr);
    return m * n * (double)(g.kh * g.kw * g.ic) / (double)(cfg->mr * cfg->nr);
}

ks_status ks__arm_gemm_plan(ks__kernel_ctx *ctx, const ks__arm_gemm_config *cfg,
                            size_t *packed_bytes_out) {
    arm_conv g;
    if (!gemm_supported(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "NEON GEMM cannot run this node");
    size_t panel_floats;
    size_t floats = gemm_packed_floats(&g, cfg, &panel_floats);
    if (floats == 0)
        return ks__kernel_error(ctx, KS_STATUS_LIMIT_EXCEEDED,
                                "packed weights too large (%zu x %zu x %zu x %zu)", g.oc, g.kh,
                                g.kw, g.ic);
    size_t ptr_bytes = round_up(g.kh * g.kw * cfg->mr * sizeof(const float *), 64);
    ctx->scratch_bytes = ptr_bytes * max_threads(ctx);
    *packed_bytes_out = floats * sizeof(float);
    return KS_STATUS_OK;
}

ks_status ks__arm_gemm_pack(ks__kernel_ctx *ctx, const ks__arm_gemm_config *cfg) {
    arm_conv g;
    size_t panel_floats;
    if (!gemm_supported(ctx, &g) || !ctx->packed ||
        ctx->packed_bytes < gemm_packed_floats(&g, cfg, &panel_floats) * sizeof(float))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "NEON GEMM pack: bad plan");
    const ks__rt_tensor *w = ctx->in[1], *b = opt_input(ctx, 2);
    const size_t nr = cfg->nr, k = g.kh * g.kw * g.ic;
    float *packed = (float *)ctx->packed;
    memset(packed, 0, ctx->packed_bytes);
    for (size_t co = 0; co < g.oc; co++) {
        float *panel = packed + (co / nr) * panel_floats;
        size_t j = co % nr;
        panel[j] = b ? ks__conv_load_f(b, (int64_t)co, (int64_t)co) : 0.0f;
        if (w->dtype == KS_DTYPE_F32) {
            const float *src = (const float *)w->data + co * k;
            for (size_t i = 0; i < k; i++)
                panel[nr + i * nr + j] = src[i];
        } else {
            for (size_t i = 0; i < k; i++)
                panel[nr + i * nr + j] = ks__conv_load_f(w, (int64_t)(co * k + i), (int64_t)co);
        }
    }
    return KS_STATUS_OK;
}

typedef struct gemm_job {
    const ks__arm_gemm_config *cfg;
    arm_conv g;
    ks__arm_act act;
    const float *x, *packed, *zero, *res;
    float *y;
    char *scratch;
    size_t scratch_stride, panel_floats, num_panels, num_chunks, num_pixels;
    int direct; /* one tap whose pointer is the output pixel's own input row (no index math) */
} gemm_job;

/* A fused residual add and the activation on one stored output row while it is in L1, as the
 * reference kernel computes them (conv + bias, + res, then the activation); slope: PRELU's per
 * channel, else NULL. The common activations are loops the compiler vectorizes. */
static void residual_act_row(float *y, const float *r, size_t n, int32_t act, float alpha,
                             const float *slope) {
    switch (act) {
    case KS_ACT_NONE:
        for (size_t i = 0; i < n; i++)
            y[i] += r[i];
        break;
    case KS_ACT_RELU:
        for (size_t i = 0; i < n; i++) {
            float v = y[i] + r[i];
            y[i] = v > 0.0f ? v : 0.0f;
        }
        break;
    case KS_ACT_RELU6:
        for (size_t i = 0; i < n; i++) {
            float v = y[i] + r[i];
            y[i] = v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v);
        }
        break;
    case KS_ACT_PRELU:
        for (size_t i = 0; i < n; i++) {
            float v = y[i] + r[i];
            y[i] = v >= 0.0f ? v : slope[i] * v;
        }
        break;
    default:
        for (size_t i = 0; i < n; i++)
            y[i] = ks__act_apply(y[i] + r[i], act, alpha);
        break;
    }
}

/* Per-channel PRELU on one stored output row while it is in L1 (the compiler vectorizes it). */
static void prelu_row(float *y, const float *slope, size_t n) {
    for (size_t i = 0; i < n; i++)
        y[i] = y[i] >= 0.0f ? y[i] : slope[i] * y[i];
}

static void gemm_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const gemm_job *j = (const gemm_job *)arg;
    const arm_conv *g = &j->g;
    const size_t mr_max = j->cfg->mr, nr = j->cfg->nr, ks = g->kh * g->kw;
    const float **a = (const float **)(void *)(j->scratch + (size_t)thread * j->scratch_stride);
    size_t built_tile = (size_t)-1;
    for (size_t item = begin; item < end; item++) {
        size_t tile = item / j->num_chunks, chunk = item % j->num_chunks;
        size_t p0 = tile * mr_max;
        size_t mr = j->num_pixels - p0 < mr_max ? j->num_pixels - p0 : mr_max;
        if (tile != built_tile) {
            if (j->direct) { /* 1x1, stride 1, no padding, FC: output pixel p reads input row p */
                for (size_t r = 0; r < mr; r++)
                    a[r] = j->x + (p0 + r) * g->ic;
            } else {
                /* one division per tile, then (n, oy, ox) stepped; per tap, the row test once
                 * per ky and the column test once per kx (tap_pointer's tests, hoisted: the
                 * per-tap form was 6 % of BlazeFace's instructions, its 5x5 stem 200 taps per
                 * tile) */
                size_t ox = p0 % g->ow, oy = (p0 / g->ow) % g->oh, n = p0 / (g->ow * g->oh);
                /* a tile inside one output row whose every tap is inside the image: the pointers
                 * of a tap are an arithmetic series over the tile's pixels (2 instructions per
                 * pointer instead of ~13: BlazePose lite built 737 K per inference) */
                const size_t y0 = oy * g->sh, x0 = ox * g->sw;
                if (mr == mr_max && ox + mr <= g->ow && y0 >= g->pt &&
                    y0 - g->pt + (g->kh - 1) * g->dh < g->ih && x0 >= g->pl &&
                    x0 - g->pl + (mr - 1) * g->sw + (g->kw - 1) * g->dw < g->iw) {
                    const float *img = j->x + n * g->ih * g->iw * g->ic;
                    const size_t step = g->sw * g->ic;
                    for (size_t ky = 0; ky < g->kh; ky++) {
                        const float *row = img + (y0 - g->pt + ky * g->dh) * g->iw * g->ic;
                        for (size_t kx = 0; kx < g->kw; kx++) {
                            const float *px = row + (x0 - g->pl + kx * g->dw) * g->ic;
                            const float **at = a + (ky * g->kw + kx) * mr_max;
                            for (size_t r = 0; r < mr_max; r++, px += step)
                                at[r] = px;
                        }
                    }
                } else {
                    for (size_t r = 0; r < mr; r++) {
                        if (r > 0 && ++ox == g->ow) {
                            ox = 0;
                            if (++oy == g->oh) oy = 0, n++;
                        }
                        const float *img = j->x + n * g->ih * g->iw * g->ic;
                        for (size_t ky = 0; ky < g->kh; ky++) {
                            /* unsigned wrap-around turns a negative coordinate into a huge one */
                            size_t iy = oy * g->sh + ky * g->dh - g->pt;
                            int row_ok = oy * g->sh + ky * g->dh >= g->pt && iy < g->ih;
                            const float *xrow = row_ok ? img + iy * g->iw * g->ic : img;
                            const float **at = a + ky * g->kw * mr_max + r;
                            for (size_t kx = 0; kx < g->kw; kx++, at += mr_max) {
                                size_t ix = ox * g->sw + kx * g->dw - g->pl;
                                int ok = row_ok && ox * g->sw + kx * g->dw >= g->pl && ix < g->iw;
                                *at = ok ? xrow + ix * g->ic : j->zero;
                            }
                        }
                    }
                }
            }
            for (size_t t = 0; t < ks; t++)
                for (size_t r = mr; r < mr_max; r++)
                    a[t * mr_max + r] = a[t * mr_max];
            built_tile = tile;
        }
        size_t pan0 = chunk * ARM_GEMM_PANELS_PER_ITEM;
        size_t pan1 = pan0 + ARM_GEMM_PANELS_PER_ITEM;
        if (pan1 > j->num_panels) pan1 = j->num_panels;
        for (size_t pan = pan0; pan < pan1; pan++) {
            size_t c0 = pan * nr, nc = g->oc - c0 < nr ? g->oc - c0 : nr;
            float *c = j->y + p0 * g->oc + c0;
            if (j->cfg->fused && (g->has_res || g->slope)) {
                ks__arm_act act = j->act;
                act.res = g->has_res ? j->res + p0 * g->oc + c0 : NULL;
                act.res_stride = g->oc;
                act.slope = g->slope ? g->slope + c0 : NULL;
                j->cfg->ukernel(mr, nc, g->ic, ks, a, j->packed + pan * j->panel_floats, c, g->oc,
                                &act);
                if (act.scalar_act != KS_ACT_NONE)
                    for (size_t r = 0; r < mr; r++)
                        ks__arm_act_scalar(c + r * g->oc, nc, &act);
                continue;
            }
            j->cfg->ukernel(mr, nc, g->ic, ks, a, j->packed + pan * j->panel_floats, c, g->oc,
                            &j->act);
            if (g->has_res) {
                for (size_t r = 0; r < mr; r++)
                    residual_act_row(c + r * g->oc, j->res + (p0 + r) * g->oc + c0, nc, g->act,
                                     g->alpha, g->slope ? g->slope + c0 : NULL);
                continue;
            }
            if (j->act.scalar_act != KS_ACT_NONE)
                for (size_t r = 0; r < mr; r++)
                    ks__arm_act_scalar(c + r * g->oc, nc, &j->act);
            if (g->slope)
                for (size_t r = 0; r < mr; r++)
                    prelu_row(c + r * g->oc, g->slope + c0, nc);
        }
    }
}

ks_status ks__arm_gemm_run(ks__kernel_ctx *ctx, const ks__arm_gemm_config *cfg) {
    gemm_job j;
    memset(&j, 0, sizeof(j));
    if (!gemm_supported(ctx, &j.g) || !ctx->packed ||
        ctx->packed_bytes < gemm_packed_floats(&j.g, cfg, &j.panel_floats) * sizeof(float))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "NEON GEMM run: not planned");
    j.scratch_stride = round_up(j.g.kh * j.g.kw * cfg->mr * sizeof(const float *), 64);
    if (!ctx->scratch || ctx->scratch_bytes < j.scratch_stride * ks__pool_threads(ctx->pool))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "NEON GEMM run: scratch too small");
    j.cfg = cfg;
    /* Fused microkernels clamp (and post-activate) after adding the residual; PRELU is their
     * slope step, not an activation. */
    if (cfg->fused)
        ks__arm_act_init(&j.act, j.g.slope ? KS_ACT_NONE : j.g.act, j.g.alpha);
    else
        ks__arm_act_init(&j.act, j.g.slope || j.g.has_res ? KS_ACT_NONE : j.g.act, j.g.alpha);
    j.x = (const float *)ctx->in[0]->data;
    j.res = j.g.has_res ? (const float *)ctx->in[3]->data : NULL;
    j.y = (float *)ctx->out[0]->data;
    j.packed = (const float *)ctx->packed;
    j.num_panels = (j.g.oc + cfg->nr - 1) / cfg->nr;
    j.zero = j.packed + j.num_panels * j.panel_floats;
    j.scratch = (char *)ctx->scratch;
    j.num_chunks = (j.num_panels + ARM_GEMM_PANELS_PER_ITEM - 1) / ARM_GEMM_PANELS_PER_ITEM;
    j.num_pixels = j.g.n * j.g.oh * j.g.ow;
    j.direct = j.g.kh == 1 && j.g.kw == 1 && j.g.sh == 1 && j.g.sw == 1 && j.g.pt == 0 &&
               j.g.pl == 0 && j.g.ih == j.g.oh && j.g.iw == j.g.ow;
    size_t num_tiles = (j.num_pixels + cfg->mr - 1) / cfg->mr;
    ks__parallel_for(ctx->pool, num_tiles * j.num_chunks, 1, gemm_range, &j);
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Depthwise CONV2D                                                                            */

static int dw_supported(const ks__kernel_ctx *ctx, arm_conv *g) {
    size_t groups = 0;
    if (ctx->node->op != KS_OP_CONV2D || conv_geometry(ctx, g, &groups) != 0) return 0;
    if (groups != g->ic || g->oc != g->ic || ctx->in[1]->dims[3] != 1 || g->slope) return 0;
    if (!is_plain_f32(ctx->in[0]) || !is_plain_f32(ctx->out[0])) return 0;
    if (!is_const_float_weights(ctx->in[1])) return 0;
    const ks__rt_tensor *b = opt_input(ctx, 2);
    if (b && (!is_graph_const(b) || (b->dtype != KS_DTYPE_F32 && b->dtype != KS_DTYPE_F16) ||
              ks__rt_numel(b) != (int64_t)g->oc))
        return 0;
    /* Taps bounded so the per-thread pointer scratch stays small. */
    return g->kh * g->kw <= 256;
}

static size_t dw_packed_floats(const arm_conv *g) {
    return round_up(g->oc, 4) * (g->kh * g->kw + 2);
}

double ks__arm_dw_cost(const ks__kernel_ctx *ctx) {
    arm_conv g;
    if (!dw_supported(ctx, &g)) return -1.0;
    return (double)(g.n * g.oh * g.ow) * (double)round_up(g.oc, 4) * (double)(g.kh * g.kw) / 4.0;
}

ks_status ks__arm_dw_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    arm_conv g;
    if (!dw_supported(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "NEON depthwise cannot run this node");
    size_t ptr_bytes = round_up(ARM_DW_PX_PER_CALL * g.kh * g.kw * sizeof(const float *), 64);
    ctx->scratch_bytes = ptr_bytes * max_threads(ctx);
    *packed_bytes_out = dw_packed_floats(&g) * sizeof(float);
    return KS_STATUS_OK;
}

ks_status ks__arm_dw_pack(ks__kernel_ctx *ctx) {
    arm_conv g;
    if (!dw_supported(ctx, &g) || !ctx->packed ||
        ctx->packed_bytes < dw_packed_floats(&g) * sizeof(float))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "NEON depthwise pack: bad plan");
    const ks__rt_tensor *w = ctx->in[1], *b = opt_input(ctx, 2);
    const size_t cp = round_up(g.oc, 4), taps = g.kh * g.kw;
    float *packed = (float *)ctx->packed;
    memset(packed, 0, ctx->packed_bytes);
    for (size_t c = 0; c < g.oc; c++) {
        packed[c] = b ? ks__conv_load_f(b, (int64_t)c, (int64_t)c) : 0.0f;
        for (size_t t = 0; t < taps; t++) /* weights [C, KH, KW, 1] */
            packed[cp * (1 + t) + c] = ks__conv_load_f(w, (int64_t)(c * taps + t), (int64_t)c);
    }
    return KS_STATUS_OK;
}

typedef struct dw_job {
    arm_conv g;
    ks__arm_act act;
    ks__arm_dw_ukernel ukernel;
    const float *x, *packed, *zero, *res;
    float *y;
    char *scratch;
    size_t scratch_stride, cp;
    /* Offsets (floats) of each tap from the window's top-left tap, for windows inside the image;
     * NULL for windows of more than DW_MAX_FAST_TAPS taps (then every tap is bounds-checked). */
    const size_t *tap_offset;
} dw_job;
#define DW_MAX_FAST_TAPS 64

static void dw_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const dw_job *j = (const dw_job *)arg;
    const arm_conv *g = &j->g;
    const size_t taps = g->kh * g->kw;
    const float **ptrs = (const float **)(void *)(j->scratch + (size_t)thread * j->scratch_stride);
    for (size_t row = begin; row < end; row++) { /* row = n * oh + oy */
        size_t n = row / g->oh, oy = row % g->oh;
        const int row_inside = j->tap_offset && oy * g->sh >= g->pt &&
                               oy * g->sh - g->pt + (g->kh - 1) * g->dh < g->ih;
        for (size_t ox0 = 0; ox0 < g->ow; ox0 += ARM_DW_PX_PER_CALL) {
            size_t num_px = g->ow - ox0 < ARM_DW_PX_PER_CALL ? g->ow - ox0 : ARM_DW_PX_PER_CALL;
            for (size_t px = 0; px < num_px; px++) {
                size_t ox = ox0 + px;
                if (row_inside && ox * g->sw >= g->pl &&
                    ox * g->sw - g->pl + (g->kw - 1) * g->dw < g->iw) {
                    /* The whole window is inside the image: its taps are fixed offsets from
                     * the top-left one (no per-tap bounds checks). */
                    const float *base =
                        j->x +
                        ((n * g->ih + (oy * g->sh - g->pt)) * g->iw + (ox * g->sw - g->pl)) * g->ic;
                    for (size_t t = 0; t < taps; t++)
                        ptrs[px * taps + t] = base + j->tap_offset[t];
                    continue;
                }
                for (size_t ky = 0; ky < g->kh; ky++)
                    for (size_t kx = 0; kx < g->kw; kx++)
                        ptrs[px * taps + ky * g->kw + kx] =
                            tap_pointer(g, j->x, j->zero, n, oy, ox, ky, kx);
            }
            float *out = j->y + (row * g->ow + ox0) * g->oc;
            j->ukernel(num_px, g->oc, j->cp, taps, ptrs, j->packed, out, &j->act);
            if (g->has_res)
                residual_act_row(out, j->res + (row * g->ow + ox0) * g->oc, num_px * g->oc, g->act,
                                 g->alpha, NULL);
            else
                ks__arm_act_scalar(out, num_px * g->oc, &j->act);
        }
    }
}

ks_status ks__arm_dw_run(ks__kernel_ctx *ctx, ks__arm_dw_ukernel ukernel) {
    dw_job j;
    memset(&j, 0, sizeof(j));
    if (!dw_supported(ctx, &j.g) || !ctx->packed ||
        ctx->packed_bytes < dw_packed_floats(&j.g) * sizeof(float))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "NEON depthwise run: not planned");
    j.scratch_stride = round_up(ARM_DW_PX_PER_CALL * j.g.kh * j.g.kw * sizeof(const float *), 64);
    if (!ctx->scratch || ctx->scratch_bytes < j.scratch_stride * ks__pool_threads(ctx->pool))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "NEON depthwise run: scratch too small");
    ks__arm_act_init(&j.act, j.g.has_res ? KS_ACT_NONE : j.g.act, j.g.alpha);
    j.res = j.g.has_res ? (const float *)ctx->in[3]->data : NULL;
    j.ukernel = ukernel;
    j.cp = round_up(j.g.oc, 4);
    j.x = (const float *)ctx->in[0]->data;
    j.y = (float *)ctx->out[0]->data;
    j.packed = (const float *)ctx->packed;
    j.zero = j.packed + j.cp * (1 + j.g.kh * j.g.kw);
    j.scratch = (char *)ctx->scratch;
    size_t tap_offset[DW_MAX_FAST_TAPS];
    if (j.g.kh * j.g.kw <= DW_MAX_FAST_TAPS) {
        for (size_t ky = 0; ky < j.g.kh; ky++)
            for (size_t kx = 0; kx < j.g.kw; kx++)
                tap_offset[ky * j.g.kw + kx] = (ky * j.g.dh * j.g.iw + kx * j.g.dw) * j.g.ic;
        j.tap_offset = tap_offset;
    }
    ks__parallel_for(ctx->pool, j.g.n * j.g.oh, 1, dw_range, &j);
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Elementwise                                                                                 */

enum { OPERAND_OTHER = 0, OPERAND_FULL, OPERAND_SCALAR, OPERAND_CHANNEL };

static int operand_kind(const ks__rt_tensor *t, const ks__rt_tensor *y) {
    int64_t numel = ks__rt_numel(t), out_numel = ks__rt_numel(y);
    /* Inference checked that t broadcasts to y, so equal sizes mean equal dims. */
    if (numel == out_numel) return OPERAND_FULL;
    if (numel == 1) return OPERAND_SCALAR;
    if (y->rank >= 1 && t->rank >= 1 && numel == y->dims[y->rank - 1] &&
        t->dims[t->rank - 1] == numel)
        return OPERAND_CHANNEL;
    return OPERAND_OTHER;
}

double ks__arm_binary_cost(const ks__kernel_ctx *ctx) {
    uint32_t op = ctx->node->op;
    if ((op != KS_OP_ADD && op != KS_OP_MUL) || ctx->num_inputs != 2 || ctx->num_outputs != 1)
        return -1.0;
    const ks__rt_tensor *a = ctx->in[0], *b = ctx->in[1], *y = ctx->out[0];
    if (!is_plain_f32(a) || !is_plain_f32(b) || !is_plain_f32(y)) return -1.0;
    int ka = operand_kind(a, y), kb = operand_kind(b, y);
    if (ka != OPERAND_FULL && kb != OPERAND_FULL) return -1.0;
    if (ka == OPERAND_OTHER || kb == OPERAND_OTHER) return -1.0;
    return (double)ks__rt_numel(y) / 4.0;
}

typedef struct binary_job {
    const ks__arm_binary_config *cfg;
    ks__arm_act act;
    const float *a, *b; /* a full-size; b per kind */
    float *y;
    int kind;
    size_t row_len; /* OPERAND_CHANNEL: elements per row; else ARM_ELEMENTWISE_GRAIN */
    size_t numel;
} binary_job;

static void binary_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const binary_job *j = (const binary_job *)arg;
    (void)thread;
    for (size_t item = begin; item < end; item++) {
        size_t i0 = item * j->row_len;
        size_t n = j->numel - i0 < j->row_len ? j->numel - i0 : j->row_len;
        const float *b = j->kind == OPERAND_FULL ? j->b + i0 : j->b;
        if (j->kind == OPERAND_SCALAR)
            j->cfg->scalar(n, j->a + i0, b, j->y + i0, &j->act);
        else
            j->cfg->same(n, j->a + i0, b, j->y + i0, &j->act);
        ks__arm_act_scalar(j->y + i0, n, &j->act);
    }
}

ks_status ks__arm_binary_run(ks__kernel_ctx *ctx, const ks__arm_binary_config *cfg) {
    if (ks__arm_binary_cost(ctx) < 0)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "NEON binary cannot run this node");
    const ks__rt_tensor *a = ctx->in[0], *b = ctx->in[1], *y = ctx->out[0];
    binary_job j;
    memset(&j, 0, sizeof(j));
    j.cfg = cfg;
    ks__arm_act_init(&j.act, ctx->node->ip[0], ctx->node->fp[0]);
    j.numel = (size_t)ks__rt_numel(y);
    if (j.numel == 0) return KS_STATUS_OK;
    int ka = operand_kind(a, y);
    if (ka == OPERAND_FULL) { /* broadcast operand (if any) second: ADD/MUL commute */
        j.a = (const float *)a->data, j.b = (const float *)b->data, j.kind = operand_kind(b, y);
    } else {
        j.a = (const float *)b->data, j.b = (const float *)a->data, j.kind = ka;
    }
    j.y = (float *)y->data;
    j.row_len = j.kind == OPERAND_CHANNEL ? (size_t)y->dims[y->rank - 1] : ARM_ELEMENTWISE_GRAIN;
    size_t items = (j.numel + j.row_len - 1) / j.row_len;
    /* Short channel rows: give each work item many rows' worth of elements. */
    size_t grain =
        j.kind == OPERAND_CHANNEL ? (ARM_ELEMENTWISE_GRAIN + j.row_len - 1) / j.row_len : 1;
    ks__parallel_for(ctx->pool, items, grain, binary_range, &j);
    return KS_STATUS_OK;
}

double ks__arm_unary_cost(const ks__kernel_ctx *ctx, uint32_t op) {
    if (ctx->node->op != op || ctx->num_inputs != 1 || ctx->num_outputs != 1) return -1.0;
    if (!is_plain_f32(ctx->in[0]) || !is_plain_f32(ctx->out[0])) return -1.0;
    if (ks__rt_numel(ctx->in[0]) != ks__rt_numel(ctx->out[0])) return -1.0;
    return (double)ks__rt_numel(ctx->out[0]) / 4.0;
}

typedef struct unary_job {
    ks__arm_unary_ukernel ukernel;
    const float *x;
    float *y;
    size_t numel;
} unary_job;

static void unary_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const unary_job *j = (const unary_job *)arg;
    (void)thread;
    size_t i0 = begin * ARM_ELEMENTWISE_GRAIN, i1 = end * ARM_ELEMENTWISE_GRAIN;
    if (i1 > j->numel) i1 = j->numel;
    j->ukernel(i1 - i0, j->x + i0, j->y + i0);
}

ks_status ks__arm_unary_run(ks__kernel_ctx *ctx, ks__arm_unary_ukernel ukernel) {
    if (ks__arm_unary_cost(ctx, ctx->node->op) < 0)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "NEON unary cannot run this node");
    unary_job j = {ukernel, (const float *)ctx->in[0]->data, (float *)ctx->out[0]->data,
                   (size_t)ks__rt_numel(ctx->out[0])};
    size_t items = (j.numel + ARM_ELEMENTWISE_GRAIN - 1) / ARM_ELEMENTWISE_GRAIN;
    ks__parallel_for(ctx->pool, items, 1, unary_range, &j);
    return KS_STATUS_OK;
}
