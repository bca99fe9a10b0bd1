/* ARMv8.2 fp16-arithmetic kernels for the F16 activations of the fp16 pass's graphs
 * (precision.h, KS_PRECISION_FP16): CAST between F32 and F16 (where an fp16 node meets another),
 * ADD and MUL of two tensors of one shape, and max / average POOL2D.
 *
 * Numbers: ADD and MUL round once, as fp16 hardware does; their clamping activations are fp16,
 * the others follow in f16_post.h's pass (a table or a widening to fp32). Max pooling is exact;
 * average pooling sums the window in fp32 and rounds the mean once. CAST rounds to nearest even
 * (FCVTN), as the reference's ks__f32_to_f16.
 */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "../../ref/conv_internal.h"
#include "../neon/neon_util.h"
#include "f16_post.h"

#define CB 8

static bool plain(const ks__rt_tensor *t, ks_dtype d) {
    return t && t->dtype == d && (!t->quant || t->quant->count == 0);
}

/* Elements per work item of the streaming kernels. */
#define CHUNK 4096

/* ---- CAST F32 <-> F16 ---- */

typedef struct cast_job {
    const void *x;
    void *y;
    size_t n;
    bool to16;
} cast_job;

static void cast_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const cast_job *j = (const cast_job *)arg;
    size_t i = begin * CHUNK, e = end * CHUNK < j->n ? end * CHUNK : j->n;
    if (j->to16) {
        const float *x = (const float *)j->x;
        float16_t *y = (float16_t *)j->y;
        for (; i + 8 <= e; i += 8)
            vst1q_f16(y + i, vcombine_f16(vcvt_f16_f32(vld1q_f32(x + i)),
                                          vcvt_f16_f32(vld1q_f32(x + i + 4))));
        for (; i < e; i++)
            y[i] = (float16_t)x[i];
    } else {
        const float16_t *x = (const float16_t *)j->x;
        float *y = (float *)j->y;
        for (; i + 8 <= e; i += 8) {
            float16x8_t h = vld1q_f16(x + i);
            vst1q_f32(y + i, vcvt_f32_f16(vget_low_f16(h)));
            vst1q_f32(y + i + 4, vcvt_high_f32_f16(h));
        }
        for (; i < e; i++)
            y[i] = (float)x[i];
    }
}

static double cast_cost(const ks__kernel_ctx *ctx) {
    if (ctx->num_inputs != 1 || ctx->num_outputs != 1) return -1.0;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    bool ok = (plain(x, KS_DTYPE_F32) && plain(y, KS_DTYPE_F16)) ||
              (plain(x, KS_DTYPE_F16) && plain(y, KS_DTYPE_F32));
    return ok ? (double)ks__rt_numel(y) / 8.0 : -1.0;
}

/* No packed data; the activation's table (ADD / MUL ip 0, POOL2D ip 11) built now, not in run. */
static ks_status act_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    uint32_t op = ctx->node->op;
    f16_post_plan(op == KS_OP_POOL2D ? ctx->node->ip[11]
                  : op == KS_OP_CAST ? KS_ACT_NONE
                                     : ctx->node->ip[0]);
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

static ks_status cast_run(ks__kernel_ctx *ctx) {
    cast_job j = {ctx->in[0]->data, ctx->out[0]->data, (size_t)ks__rt_numel(ctx->out[0]),
                  ctx->out[0]->dtype == KS_DTYPE_F16};
    ks__parallel_for(ctx->pool, (j.n + CHUNK - 1) / CHUNK, 1, cast_range, &j);
    return KS_STATUS_OK;
}

/* ---- ADD / MUL of one shape ---- */

typedef struct bin_job {
    const float16_t *a, *b;
    float16_t *y;
    size_t n;
    bool mul;
    float16x8_t lo, hi;
    ks__arm_act act;
} bin_job;

/* The clamp of the activation in fp16 (NONE, RELU, RELU6, RELU_N1_TO_1; no-op for the others,
 * which f16_post.h's pass applies after the node). */
static inline float16x8_t clamp8(float16x8_t lo, float16x8_t hi, float16x8_t v) {
    return vminq_f16(vmaxq_f16(v, lo), hi);
}

static void bin_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const bin_job *j = (const bin_job *)arg;
    size_t i = begin * CHUNK, e = end * CHUNK < j->n ? end * CHUNK : j->n;
    for (; i < e; i += 8) {
        size_t nc = e - i < 8 ? e - i : 8;
        float16x8_t a, b;
        if (nc == 8) {
            a = vld1q_f16(j->a + i), b = vld1q_f16(j->b + i);
        } else {
            float16_t ta[8] = {0}, tb[8] = {0};
            memcpy(ta, j->a + i, nc * sizeof(float16_t));
            memcpy(tb, j->b + i, nc * sizeof(float16_t));
            a = vld1q_f16(ta), b = vld1q_f16(tb);
        }
        float16x8_t v = j->mul ? vmulq_f16(a, b) : vaddq_f16(a, b);
        v = clamp8(j->lo, j->hi, v);
        if (nc == 8) {
            vst1q_f16(j->y + i, v);
        } else {
            float16_t t[8];
            vst1q_f16(t, v);
            memcpy(j->y + i, t, nc * sizeof(float16_t));
        }
    }
}

static double bin_cost(const ks__kernel_ctx *ctx) {
    if (ctx->num_inputs != 2 || ctx->num_outputs != 1) return -1.0;
    const ks__rt_tensor *a = ctx->in[0], *b = ctx->in[1], *y = ctx->out[0];
    if (!plain(a, KS_DTYPE_F16) || !plain(b, KS_DTYPE_F16) || !plain(y, KS_DTYPE_F16) ||
        ctx->node->ip[0] == KS_ACT_PRELU || ctx->node->ip[0] == KS_ACT_TABLE)
        return -1.0;
    int64_t n = ks__rt_numel(y);
    if (ks__rt_numel(a) != n || ks__rt_numel(b) != n) return -1.0; /* no broadcasting */
    return (double)n / 8.0;
}

static void init_act(int32_t act, float alpha, ks__arm_act *a, float16x8_t *lo, float16x8_t *hi) {
    ks__arm_act_init(a, act, alpha);
    *lo = vdupq_n_f16((float16_t)(a->lo < -65504.0f ? -INFINITY : a->lo));
    *hi = vdupq_n_f16((float16_t)(a->hi > 65504.0f ? INFINITY : a->hi));
}

static ks_status bin_run(ks__kernel_ctx *ctx) {
    bin_job j;
    memset(&j, 0, sizeof(j));
    j.a = (const float16_t *)ctx->in[0]->data;
    j.b = (const float16_t *)ctx->in[1]->data;
    j.y = (float16_t *)ctx->out[0]->data;
    j.n = (size_t)ks__rt_numel(ctx->out[0]);
    j.mul = ctx->node->op == KS_OP_MUL;
    init_act(ctx->node->ip[0], ctx->node->fp[0], &j.act, &j.lo, &j.hi);
    ks__parallel_for(ctx->pool, (j.n + CHUNK - 1) / CHUNK, 1, bin_range, &j);
    ks__f16_post_run(ctx->pool, &j.act, NULL, 1, j.y, j.n);
    return KS_STATUS_OK;
}

/* ---- POOL2D ---- */

typedef struct pool_job {
    ks__pool_geom g;
    const float16_t *x;
    float16_t *y;
    float16x8_t lo, hi;
    ks__arm_act act;
} pool_job;

static void pool_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const pool_job *j = (const pool_job *)arg;
    const ks__pool_geom *g = &j->g;
    const size_t c = (size_t)g->c;
    for (size_t item = begin; item < end; item++) {
        int64_t n = (int64_t)item / g->oh, oy = (int64_t)item % g->oh;
        int64_t y0 = oy * g->sh - g->pt;
        int64_t py0 = y0 < -g->pt ? -g->pt : y0;
        int64_t py1 = y0 + g->kh > g->ih + g->pb ? g->ih + g->pb : y0 + g->kh;
        int64_t vy0 = y0 < 0 ? 0 : y0, vy1 = y0 + g->kh > g->ih ? g->ih : y0 + g->kh;
        for (int64_t ox = 0; ox < g->ow; ox++) {
            int64_t x0 = ox * g->sw - g->pl;
            int64_t px0 = x0 < -g->pl ? -g->pl : x0;
            int64_t px1 = x0 + g->kw > g->iw + g->pr ? g->iw + g->pr : x0 + g->kw;
            int64_t vx0 = x0 < 0 ? 0 : x0, vx1 = x0 + g->kw > g->iw ? g->iw : x0 + g->kw;
            int64_t valid = (vy1 > vy0 ? vy1 - vy0 : 0) * (vx1 > vx0 ? vx1 - vx0 : 0);
            int64_t count = g->count_include_pad ? (py1 - py0) * (px1 - px0) : valid;
            const float scale = count > 0 ? 1.0f / (float)count : 0.0f;
            float16_t *out =
                j->y + (((size_t)n * (size_t)g->oh + (size_t)oy) * (size_t)g->ow + (size_t)ox) * c;
            for (size_t c0 = 0; c0 < c; c0 += CB) {
                size_t nc = c - c0 < CB ? c - c0 : CB;
                float16x8_t mx = vdupq_n_f16(-INFINITY);
                float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0;
                for (int64_t iy = vy0; iy < vy1; iy++)
                    for (int64_t ix = vx0; ix < vx1; ix++) {
                        const float16_t *p =
                            j->x +
                            (((size_t)n * (size_t)g->ih + (size_t)iy) * (size_t)g->iw +
                             (size_t)ix) *
                                c +
                            c0;
                        float16x8_t v;
                        if (nc == CB) {
                            v = vld1q_f16(p);
                        } else {
                            float16_t t[CB] = {0};
                            memcpy(t, p, nc * sizeof(float16_t));
                            v = vld1q_f16(t);
                        }
                        if (g->kind == 0) {
                            /* the reference's v > max ? v : max: NaN inputs are skipped */
                            mx = vbslq_f16(vcgtq_f16(v, mx), v, mx);
                        } else {
                            s0 = vaddq_f32(s0, vcvt_f32_f16(vget_low_f16(v)));
                            s1 = vaddq_f32(s1, vcvt_high_f32_f16(v));
                        }
                    }
                float16x8_t r;
                if (valid == 0) {
                    r = vdupq_n_f16(0);
                } else if (g->kind == 0) {
                    r = mx;
                } else {
                    const float32x4_t vs = vdupq_n_f32(scale);
                    r = vcombine_f16(vcvt_f16_f32(vmulq_f32(s0, vs)),
                                     vcvt_f16_f32(vmulq_f32(s1, vs)));
                }
                r = clamp8(j->lo, j->hi, r);
                if (nc == CB) {
                    vst1q_f16(out + c0, r);
                } else {
                    float16_t t[CB];
                    vst1q_f16(t, r);
                    memcpy(out + c0, t, nc * sizeof(float16_t));
                }
            }
        }
    }
}

static double pool_cost(const ks__kernel_ctx *ctx) {
    if (ctx->num_inputs != 1 || ctx->num_outputs != 1 || !plain(ctx->in[0], KS_DTYPE_F16) ||
        !plain(ctx->out[0], KS_DTYPE_F16))
        return -1.0;
    ks__pool_geom g;
    if (ks__pool_geometry((ks__kernel_ctx *)(uintptr_t)ctx, &g) != KS_STATUS_OK) return -1.0;
    if (g.act == KS_ACT_PRELU || g.act == KS_ACT_TABLE) return -1.0;
    return (double)(g.n * g.oh * g.ow) * (double)((g.c + CB - 1) / CB) * (double)(g.kh * g.kw);
}

static ks_status pool_run(ks__kernel_ctx *ctx) {
    pool_job j;
    memset(&j, 0, sizeof(j));
    ks_status st = ks__pool_geometry(ctx, &j.g);
    if (st) return st;
    j.x = (const float16_t *)ctx->in[0]->data;
    j.y = (float16_t *)ctx->out[0]->data;
    init_act(j.g.act, ctx->node->fp[0], &j.act, &j.lo, &j.hi);
    ks__parallel_for(ctx->pool, (size_t)(j.g.n * j.g.oh), 1, pool_range, &j);
    ks__f16_post_run(ctx->pool, &j.act, NULL, (size_t)j.g.c, j.y,
                     (size_t)(j.g.n * j.g.oh * j.g.ow * j.g.c));
    return KS_STATUS_OK;
}

#define F16_IMPL(sym, op, cost, run)                                                               \
    const ks__impl sym = {#sym, op, KS_ISA_NEON | KS_ISA_NEON_FP16, cost, act_plan, NULL, run};
F16_IMPL(ks_f16_cast__neonfp16, KS_OP_CAST, cast_cost, cast_run)
F16_IMPL(ks_f16_add__neonfp16, KS_OP_ADD, bin_cost, bin_run)
F16_IMPL(ks_f16_mul__neonfp16, KS_OP_MUL, bin_cost, bin_run)
F16_IMPL(ks_f16_pool2d__neonfp16, KS_OP_POOL2D, pool_cost, pool_run)
#undef F16_IMPL
