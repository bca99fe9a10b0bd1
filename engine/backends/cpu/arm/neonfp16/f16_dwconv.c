/* ARMv8.2 fp16-arithmetic depthwise CONV2D on F16 activations (FEAT_FP16 / HWCAP_ASIMDHP), for
 * the graphs of the fp16 pass (precision.h: KS_PRECISION_FP16 stores the tensors between fp16
 * nodes in fp16). One output row per work item; per block of 8 channels the kernel's taps stay
 * in registers (3x3 and 5x5 are unrolled) and each output pixel takes one fp16 FMLA per tap.
 *
 * Numbers: weights and bias are rounded to fp16 at pack time; the KH x KW products are summed
 * in fp16 in two chains (even and odd taps) from zero, then the bias is added (at most
 * KS_F16_DW_MAX_TAPS taps: 25 for 5x5, against the GEMM's blocks of 16 k-steps); the residual add
 * and the clamping activations (NONE, RELU, RELU6, RELU_N1_TO_1) and LEAKY_RELU are fp16 too; the
 * others (HARD_SWISH, SILU, PRELU and the scalar ones) follow in a pass over the output that widens
 * to fp32 (f16_post.h).
 *
 * Layout: the input is first copied into a padded buffer (the scratch: zeros around it and past
 * the last channel up to a multiple of 8), so that every output pixel reads its taps at fixed
 * offsets from its window's corner, with no edge tests: a copy costs about 2 instructions per 8
 * input values, a tap 2 (a load and an FMLA) per 8 outputs. Packed: per 8-channel block, KH*KW
 * vectors of 8 fp16 weights, then 8 fp16 biases (zero past the last channel).
 */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "../../ref/conv_internal.h"
#include "../neon/neon_util.h"
#include "f16_post.h"

#define CB 8
#define KS_F16_DW_MAX_TAPS 64

typedef struct dw16 {
    size_t n, ih, iw, c, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
    int32_t act;
    float alpha;
    bool res;
    const float *slope;
} dw16;

static size_t one_if_zero(int32_t v) {
    return v <= 0 ? 1 : (size_t)v;
}

static bool is_act16(const ks__rt_tensor *t) {
    return t && t->dtype == KS_DTYPE_F16 && (!t->quant || t->quant->count == 0);
}

static bool is_graph_const(const ks__rt_tensor *t) {
    return t && t->data && t->def && (t->def->flags & KS__TENSOR_CONST);
}

static bool dw_supported(const ks__kernel_ctx *ctx, dw16 *g) {
    memset(g, 0, sizeof(*g));
    if (ctx->node->op != KS_OP_CONV2D || ctx->num_inputs < 2 || ctx->num_outputs < 1) return false;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1], *y = ctx->out[0];
    const ks__rt_tensor *b = ctx->num_inputs > 2 ? ctx->in[2] : NULL;
    const ks__rt_tensor *res = ctx->num_inputs > 3 ? ctx->in[3] : NULL;
    const ks__rt_tensor *slope = ctx->num_inputs > 4 ? ctx->in[4] : NULL;
    const int32_t *ip = ctx->node->ip;
    if (!is_act16(x) || !is_act16(y) || x->rank != 4 || y->rank != 4 || !w || w->rank != 4)
        return false;
    if (!is_graph_const(w) || (w->quant && w->quant->count) ||
        (w->dtype != KS_DTYPE_F32 && w->dtype != KS_DTYPE_F16))
        return false;
    for (int i = 0; i < 4; i++)
        if (x->dims[i] < 1 || y->dims[i] < 1 || w->dims[i] < 1) return false;
    g->c = (size_t)x->dims[3];
    if (one_if_zero(ip[9]) != g->c || (size_t)w->dims[0] != g->c || w->dims[3] != 1 ||
        (size_t)y->dims[3] != g->c || y->dims[0] != x->dims[0])
        return false;
    if (b && (!is_graph_const(b) || (b->dtype != KS_DTYPE_F32 && b->dtype != KS_DTYPE_F16) ||
              (b->quant && b->quant->count) || ks__rt_numel(b) != (int64_t)g->c))
        return false;
    if (res && (!is_act16(res) || ks__rt_numel(res) != ks__rt_numel(y) || ip[12] != 0))
        return false;
    g->act = ip[10];
    if (g->act == KS_ACT_TABLE) return false;
    if (g->act == KS_ACT_PRELU) {
        if (!slope || slope->dtype != KS_DTYPE_F32 || !slope->data ||
            ks__rt_numel(slope) != (int64_t)g->c)
            return false;
        g->slope = (const float *)slope->data;
    } else if (slope) {
        return false;
    }
    g->n = (size_t)x->dims[0], g->ih = (size_t)x->dims[1], g->iw = (size_t)x->dims[2];
    g->oh = (size_t)y->dims[1], g->ow = (size_t)y->dims[2];
    g->kh = (size_t)w->dims[1], g->kw = (size_t)w->dims[2];
    if (g->kh * g->kw > KS_F16_DW_MAX_TAPS) return false;
    g->sh = one_if_zero(ip[0]), g->sw = one_if_zero(ip[1]);
    g->dh = one_if_zero(ip[2]), g->dw = one_if_zero(ip[3]);
    g->pt = (size_t)ks__conv_lead_pad(ip[8], ip[4], (int64_t)g->ih, (int64_t)g->oh,
                                      (int64_t)((g->kh - 1) * g->dh + 1), (int64_t)g->sh);
    g->pl = (size_t)ks__conv_lead_pad(ip[8], ip[5], (int64_t)g->iw, (int64_t)g->ow,
                                      (int64_t)((g->kw - 1) * g->dw + 1), (int64_t)g->sw);
    g->alpha = ctx->node->fp[0];
    g->res = res != NULL;
    return true;
}

static size_t blocks(const dw16 *g) {
    return (g->c + CB - 1) / CB;
}

static size_t block_halves(const dw16 *g) {
    return (g->kh * g->kw + 1) * CB;
}

static size_t packed_bytes(const dw16 *g) {
    return blocks(g) * block_halves(g) * sizeof(float16_t);
}

/* The padded input: every window of every output pixel inside it, channels rounded up to
 * blocks of 8 (zeros past the last). */
static size_t pad_h(const dw16 *g) {
    return (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1;
}

static size_t pad_w(const dw16 *g) {
    return (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1;
}

/* Scratch bytes for the padded input, 0 when absurd. */
static size_t pad_bytes(const dw16 *g) {
    size_t hw = pad_h(g) * pad_w(g), per = blocks(g) * CB * sizeof(float16_t);
    if (hw > ((size_t)1 << 28) / per / g->n) return 0; /* 256 MB */
    return (g->n * hw * per + 63) / 64 * 64;
}

static double dw_cost(const ks__kernel_ctx *ctx) {
    dw16 g;
    if (!dw_supported(ctx, &g) || !pad_bytes(&g)) return -1.0;
    /* one fp16 FMLA and one load per tap and 8 channels, about 4 more per pixel */
    return (double)(g.n * g.oh * g.ow) * (double)blocks(&g) * (2.0 * (double)(g.kh * g.kw) + 4.0);
}

static ks_status dw_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    dw16 g;
    if (!dw_supported(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "fp16 depthwise cannot run this node");
    f16_post_plan(g.act);
    ctx->scratch_bytes = pad_bytes(&g);
    if (!ctx->scratch_bytes)
        return ks__kernel_error(ctx, KS_STATUS_LIMIT_EXCEEDED, "fp16 depthwise: input too large");
    *packed_bytes_out = packed_bytes(&g);
    return KS_STATUS_OK;
}

static ks_status dw_pack(ks__kernel_ctx *ctx) {
    dw16 g;
    if (!dw_supported(ctx, &g) || !ctx->packed || ctx->packed_bytes < packed_bytes(&g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "fp16 depthwise pack: bad plan");
    const ks__rt_tensor *w = ctx->in[1], *b = ctx->num_inputs > 2 ? ctx->in[2] : NULL;
    float16_t *p = (float16_t *)ctx->packed;
    memset(p, 0, ctx->packed_bytes);
    const size_t taps = g.kh * g.kw;
    for (size_t c = 0; c < g.c; c++) {
        float16_t *blk = p + (c / CB) * block_halves(&g);
        for (size_t t = 0; t < taps; t++)
            blk[t * CB + c % CB] =
                (float16_t)ks__conv_load_f(w, (int64_t)(c * taps + t), (int64_t)c);
        blk[taps * CB + c % CB] = b ? (float16_t)ks__conv_load_f(b, (int64_t)c, (int64_t)c) : 0;
    }
    return KS_STATUS_OK;
}

typedef struct dw_job {
    dw16 g;
    ks__arm_act act;
    float16x8_t lo, hi; /* the activation's clamp (NONE, RELU, RELU6, RELU_N1_TO_1; else none) */
    bool leaky;         /* LEAKY_RELU, in fp16 in the store */
    float16x8_t alpha;
    const float16_t *x, *w, *res;
    float16_t *y, *pad; /* pad: the padded input (pad_bytes) */
    size_t ph, pw, cp;  /* its rows, columns, channels */
} dw_job;

/* One row of the padded input: zeros, the input row's pixels (channels padded to cp), zeros. */
static void pad_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const dw_job *j = (const dw_job *)arg;
    const dw16 *g = &j->g;
    const size_t cp = j->cp, c = g->c;
    for (size_t item = begin; item < end; item++) {
        size_t img = item / j->ph, py = item % j->ph;
        float16_t *dst = j->pad + item * j->pw * cp;
        if (py < g->pt || py - g->pt >= g->ih) {
            memset(dst, 0, j->pw * cp * sizeof(float16_t));
            continue;
        }
        const float16_t *src = j->x + (img * g->ih + py - g->pt) * g->iw * c;
        size_t x0 = g->pl < j->pw ? g->pl : j->pw;
        size_t nx = g->iw < j->pw - x0 ? g->iw : j->pw - x0; /* input columns kept */
        memset(dst, 0, x0 * cp * sizeof(float16_t));
        if (cp == c) {
            memcpy(dst + x0 * cp, src, nx * c * sizeof(float16_t));
        } else {
            for (size_t px = 0; px < nx; px++) {
                float16_t *d = dst + (x0 + px) * cp;
                memcpy(d, src + px * c, c * sizeof(float16_t));
                memset(d + c, 0, (cp - c) * sizeof(float16_t));
            }
        }
        memset(dst + (x0 + nx) * cp, 0, (j->pw - x0 - nx) * cp * sizeof(float16_t));
    }
}

/* The epilogue of 8 channels: + residual, the clamp in fp16, store (nc lanes; 8 = whole vector).
 * The other activations follow in one pass over the output (f16_post.h). */
static inline void finish8(const dw_job *j, float16x8_t acc, const float16_t *res, float16_t *y,
                           size_t nc) {
    if (res) {
        if (nc == CB) {
            acc = vaddq_f16(acc, vld1q_f16(res));
        } else {
            float16_t t[CB] = {0};
            memcpy(t, res, nc * sizeof(float16_t));
            acc = vaddq_f16(acc, vld1q_f16(t));
        }
    }
    acc = vminq_f16(vmaxq_f16(acc, j->lo), j->hi);
    if (j->leaky) acc = vbslq_f16(vcgeq_f16(acc, vdupq_n_f16(0)), acc, vmulq_f16(acc, j->alpha));
    if (nc == CB) {
        vst1q_f16(y, acc);
    } else {
        float16_t t[CB];
        vst1q_f16(t, acc);
        memcpy(y, t, nc * sizeof(float16_t));
    }
}

/* The products of each output pixel sum in two fp16 chains (even and odd taps) from zero, then
 * the bias: shorter fp16 sums than one chain from the bias, and two FMLA dependency chains. */
#define LD(ky, kx) vld1q_f16(r##ky + (kx)*tap)
#define W(t) const float16x8_t w##t = vld1q_f16(w + (t)*CB);
#define FMA(acc, t, ky, kx) acc = vfmaq_f16(acc, LD(ky, kx), w##t)

/* One output row of one block: 3x3 taps, the weights in registers. */
static void row3x3(const dw_job *j, const float16_t *r0, const float16_t *r1, const float16_t *r2,
                   const float16_t *w, float16_t *y, const float16_t *res, size_t nc) {
    const size_t step = j->g.sw * j->cp, tap = j->g.dw * j->cp, c = j->g.c, ow = j->g.ow;
    W(0);
    W(1);
    W(2);
    W(3);
    W(4);
    W(5);
    W(6);
    W(7);
    W(8);
    const float16x8_t bias = vld1q_f16(w + 9 * CB);
    size_t ox = 0;
    if (step == tap && step == j->cp) {
        /* stride 1, no dilation: two pixels share 2 of the 3 columns of each kernel row, 12
         * loads for both instead of 18; each pixel's sums as below */
        for (; ox + 2 <= ow; ox += 2) {
            float16x8_t a, b, p, q, v0, v1, v2, v3;
#define PAIR_ROW(R, W0, W1, W2, FIRST)                                                             \
    v0 = vld1q_f16(R), v1 = vld1q_f16(R + tap), v2 = vld1q_f16(R + 2 * tap),                       \
    v3 = vld1q_f16(R + 3 * tap);                                                                   \
    if (FIRST) {                                                                                   \
        a = vmulq_f16(v0, W0), b = vmulq_f16(v1, W1), a = vfmaq_f16(a, v2, W2);                    \
        p = vmulq_f16(v1, W0), q = vmulq_f16(v2, W1), p = vfmaq_f16(p, v3, W2);                    \
    } else {                                                                                       \
        a = vfmaq_f16(a, v0, W0), b = vfmaq_f16(b, v1, W1), a = vfmaq_f16(a, v2, W2);              \
        p = vfmaq_f16(p, v1, W0), q = vfmaq_f16(q, v2, W1), p = vfmaq_f16(p, v3, W2);              \
    }
            PAIR_ROW(r0, w0, w1, w2, 1)
            PAIR_ROW(r1, w3, w4, w5, 0)
            PAIR_ROW(r2, w6, w7, w8, 0)
#undef PAIR_ROW
            finish8(j, vaddq_f16(vaddq_f16(a, b), bias), res ? res + ox * c : NULL, y + ox * c, nc);
            finish8(j, vaddq_f16(vaddq_f16(p, q), bias), res ? res + (ox + 1) * c : NULL,
                    y + (ox + 1) * c, nc);
            r0 += 2 * step, r1 += 2 * step, r2 += 2 * step;
        }
    }
    for (; ox < ow; ox++) {
        float16x8_t a = vmulq_f16(LD(0, 0), w0), b = vmulq_f16(LD(0, 1), w1);
        FMA(a, 2, 0, 2);
        FMA(b, 3, 1, 0);
        FMA(a, 4, 1, 1);
        FMA(b, 5, 1, 2);
        FMA(a, 6, 2, 0);
        FMA(b, 7, 2, 1);
        FMA(a, 8, 2, 2);
        finish8(j, vaddq_f16(vaddq_f16(a, b), bias), res ? res + ox * c : NULL, y + ox * c, nc);
        r0 += step, r1 += step, r2 += step;
    }
}

/* The same for 5x5 (25 weights and 2 sums in registers). */
static void row5x5(const dw_job *j, const float16_t *const *rows, const float16_t *w, float16_t *y,
                   const float16_t *res, size_t nc) {
    const size_t step = j->g.sw * j->cp, tap = j->g.dw * j->cp, c = j->g.c, ow = j->g.ow;
    const float16_t *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3], *r4 = rows[4];
    W(0);
    W(1);
    W(2);
    W(3);
    W(4);
    W(5);
    W(6);
    W(7);
    W(8);
    W(9);
    W(10);
    W(11);
    W(12);
    W(13);
    W(14);
    W(15);
    W(16);
    W(17);
    W(18);
    W(19);
    W(20);
    W(21);
    W(22);
    W(23);
    W(24);
    for (size_t ox = 0; ox < ow; ox++) {
        float16x8_t a = vmulq_f16(LD(0, 0), w0), b = vmulq_f16(LD(0, 1), w1);
        FMA(a, 2, 0, 2);
        FMA(b, 3, 0, 3);
        FMA(a, 4, 0, 4);
        FMA(b, 5, 1, 0);
        FMA(a, 6, 1, 1);
        FMA(b, 7, 1, 2);
        FMA(a, 8, 1, 3);
        FMA(b, 9, 1, 4);
        FMA(a, 10, 2, 0);
        FMA(b, 11, 2, 1);
        FMA(a, 12, 2, 2);
        FMA(b, 13, 2, 3);
        FMA(a, 14, 2, 4);
        FMA(b, 15, 3, 0);
        FMA(a, 16, 3, 1);
        FMA(b, 17, 3, 2);
        FMA(a, 18, 3, 3);
        FMA(b, 19, 3, 4);
        FMA(a, 20, 4, 0);
        FMA(b, 21, 4, 1);
        FMA(a, 22, 4, 2);
        FMA(b, 23, 4, 3);
        FMA(a, 24, 4, 4);
        const float16x8_t bias = vld1q_f16(w + 25 * CB);
        finish8(j, vaddq_f16(vaddq_f16(a, b), bias), res ? res + ox * c : NULL, y + ox * c, nc);
        r0 += step, r1 += step, r2 += step, r3 += step, r4 += step;
    }
}
#undef LD
#undef W
#undef FMA

/* Any KH x KW: the weights from memory. */
static void row_any(const dw_job *j, const float16_t *const *rows, const float16_t *w, float16_t *y,
                    const float16_t *res, size_t nc) {
    const dw16 *g = &j->g;
    const size_t step = g->sw * j->cp, tap = g->dw * j->cp, taps = g->kh * g->kw;
    const float16x8_t bias = vld1q_f16(w + taps * CB);
    for (size_t ox = 0; ox < g->ow; ox++) {
        float16x8_t a = vdupq_n_f16(0), b = a;
        for (size_t t = 0; t < taps; t++) {
            float16x8_t v = vld1q_f16(rows[t / g->kw] + ox * step + (t % g->kw) * tap);
            if (t % 2 == 0)
                a = vfmaq_f16(a, v, vld1q_f16(w + t * CB));
            else
                b = vfmaq_f16(b, v, vld1q_f16(w + t * CB));
        }
        finish8(j, vaddq_f16(vaddq_f16(a, b), bias), res ? res + ox * g->c : NULL, y + ox * g->c,
                nc);
    }
}

static void dw_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const dw_job *j = (const dw_job *)arg;
    const dw16 *g = &j->g;
    const size_t nb = blocks(g), taps = g->kh * g->kw;
    const float16_t *rows[KS_F16_DW_MAX_TAPS];
    for (size_t item = begin; item < end; item++) {
        size_t img = item / g->oh, oy = item % g->oh;
        size_t yo = item * g->ow * g->c;
        for (size_t blk = 0; blk < nb; blk++) {
            size_t c0 = blk * CB, nc = g->c - c0 < CB ? g->c - c0 : CB;
            for (size_t ky = 0; ky < g->kh; ky++)
                rows[ky] = j->pad + ((img * j->ph + oy * g->sh + ky * g->dh) * j->pw) * j->cp + c0;
            const float16_t *w = j->w + blk * (taps + 1) * CB;
            float16_t *y = j->y + yo + c0;
            const float16_t *res = j->res ? j->res + yo + c0 : NULL;
            if (g->kh == 3 && g->kw == 3)
                row3x3(j, rows[0], rows[1], rows[2], w, y, res, nc);
            else if (g->kh == 5 && g->kw == 5)
                row5x5(j, rows, w, y, res, nc);
            else
                row_any(j, rows, w, y, res, nc);
        }
    }
}

static ks_status dw_run(ks__kernel_ctx *ctx) {
    dw_job j;
    memset(&j, 0, sizeof(j));
    if (!dw_supported(ctx, &j.g) || !ctx->packed || ctx->packed_bytes < packed_bytes(&j.g) ||
        !ctx->scratch || ctx->scratch_bytes < pad_bytes(&j.g) || !pad_bytes(&j.g))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "fp16 depthwise run: not planned");
    const dw16 *g = &j.g;
    ks__arm_act_init(&j.act, g->slope ? KS_ACT_NONE : g->act, g->alpha);
    j.lo = vdupq_n_f16((float16_t)(j.act.lo < -65504.0f ? -INFINITY : j.act.lo));
    j.hi = vdupq_n_f16((float16_t)(j.act.hi > 65504.0f ? INFINITY : j.act.hi));
    j.leaky = j.act.post == KS_ACT_LEAKY_RELU;
    j.alpha = vdupq_n_f16((float16_t)j.act.alpha);
    j.x = (const float16_t *)ctx->in[0]->data;
    j.y = (float16_t *)ctx->out[0]->data;
    j.res = g->res ? (const float16_t *)ctx->in[3]->data : NULL;
    j.w = (const float16_t *)ctx->packed;
    j.pad = (float16_t *)ctx->scratch;
    j.ph = pad_h(g), j.pw = pad_w(g), j.cp = blocks(g) * CB;
    ks__parallel_for(ctx->pool, g->n * j.ph, 1, pad_range, &j);
    ks__parallel_for(ctx->pool, g->n * g->oh, 1, dw_range, &j);
    ks__arm_act rest = j.act;
    if (j.leaky) rest.post = KS_ACT_NONE;
    ks__f16_post_run(ctx->pool, &rest, g->slope, g->c, j.y, g->n * g->oh * g->ow * g->c);
    return KS_STATUS_OK;
}

const ks__impl ks_f16_dwconv__neonfp16_c8 = {"ks_f16_dwconv__neonfp16_c8",
                                             KS_OP_CONV2D,
                                             KS_ISA_NEON | KS_ISA_NEON_FP16,
                                             dw_cost,
                                             dw_plan,
                                             dw_pack,
                                             dw_run};
