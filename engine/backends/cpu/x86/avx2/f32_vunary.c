/* Vectorized fp32 unary activations and math: RELU RELU6 RELU_N1_TO_1 LEAKY_RELU SIGMOID TANH
 * HARD_SWISH EXP ELU CLIP SQRT ABS NEG. x86/avx512/f32_vunary.c includes this file.
 *
 * Clamps, ABS, NEG and SQRT are bitwise equal to the reference (including NaN, infinities and
 * signed zeros); EXP, ELU, SIGMOID and TANH use the polynomial approximations of f32_vsimd.h,
 * within a few ulp of libm everywhere (relative error < 1e-6), with libm's results at +-inf,
 * NaN and overflow.
 */
#include "f32_vsimd.h"

#define V_UN_LOOP(EXPR)                                                                            \
    for (; i + V_N <= n; i += V_N) {                                                               \
        vf x = v_load(src + i);                                                                    \
        v_store(dst + i, EXPR);                                                                    \
    }                                                                                              \
    if (i < n) {                                                                                   \
        vf x = v_loadn(src + i, n - i);                                                            \
        v_storen(dst + i, EXPR, n - i);                                                            \
    }                                                                                              \
    break;

static void vunary_block(uint32_t op, const float *fp, float *dst, const float *src, size_t n) {
    size_t i = 0;
    const vf p0 = v_set1(fp[0]), p1 = v_set1(fp[1]);
    switch (op) {
    case KS_OP_RELU:
        V_UN_LOOP(v_max(x, v_zero()))
    case KS_OP_RELU6:
        V_UN_LOOP(v_clamp(x, v_zero(), v_set1(6.0f)))
    case KS_OP_RELU_N1_TO_1:
        V_UN_LOOP(v_clamp(x, v_set1(-1.0f), v_set1(1.0f)))
    case KS_OP_LEAKY_RELU:
        V_UN_LOOP(v_leaky(x, p0))
    case KS_OP_SIGMOID:
        V_UN_LOOP(v_sigmoid(x))
    case KS_OP_TANH:
        V_UN_LOOP(v_tanh(x))
    case KS_OP_HARD_SWISH:
        V_UN_LOOP(v_hard_swish(x))
    case KS_OP_EXP:
        V_UN_LOOP(v_exp(x))
    case KS_OP_ELU:
        V_UN_LOOP(v_sel(v_ge(x, v_zero()), x, v_mul(p0, v_expm1(x))))
    case KS_OP_CLIP:
        V_UN_LOOP(v_clamp(x, p0, p1))
    case KS_OP_SQRT:
        V_UN_LOOP(v_sqrt(x))
    case KS_OP_ABS:
        V_UN_LOOP(v_abs(x))
    case KS_OP_NEG:
        V_UN_LOOP(v_neg(x))
    default:
        break;
    }
}

typedef struct vunary_job {
    uint32_t op;
    const float *fp;
    const float *x;
    float *y;
    size_t n;
} vunary_job;

static void vunary_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const vunary_job *j = (const vunary_job *)arg;
    size_t i0 = begin * V_BLOCK, i1 = end * V_BLOCK < j->n ? end * V_BLOCK : j->n;
    vunary_block(j->op, j->fp, j->y + i0, j->x + i0, i1 - i0);
}

static ks_status vunary_run(ks__kernel_ctx *ctx) {
    vunary_job j = {ctx->node->op, ctx->node->fp, (const float *)ctx->in[0]->data,
                    (float *)ctx->out[0]->data, (size_t)ks__rt_numel(ctx->out[0])};
    size_t blocks = (j.n + V_BLOCK - 1) / V_BLOCK;
    ks__parallel_for(ctx->pool, blocks, V_MIN_PARALLEL / V_BLOCK, vunary_range, &j);
    return KS_STATUS_OK;
}

/* Relative per-element work: the transcendental ones cost ~10x a clamp. */
static double vunary_cost(const ks__kernel_ctx *ctx) {
    double n = ks__vunary_numel(ctx);
    if (n < 0) return -1.0;
    if (ctx->node->op == KS_OP_CLIP && !(ctx->node->fp[0] <= ctx->node->fp[1])) return -1.0;
    switch (ctx->node->op) {
    case KS_OP_SIGMOID:
    case KS_OP_TANH:
    case KS_OP_EXP:
    case KS_OP_ELU:
        return 1.0 + 10.0 * n / V_N;
    default:
        return 1.0 + n / V_N;
    }
}

static ks_status vunary_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    (void)ctx;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

#define V_UN_IMPL(base, OP)                                                                        \
    const ks__impl V_SYM(base) = {V_NAME(base), OP,   V_ISA,     vunary_cost,                      \
                                  vunary_plan,  NULL, vunary_run};

V_UN_IMPL(vrelu, KS_OP_RELU)
V_UN_IMPL(vrelu6, KS_OP_RELU6)
V_UN_IMPL(vrelu_n1_to_1, KS_OP_RELU_N1_TO_1)
V_UN_IMPL(vleaky_relu, KS_OP_LEAKY_RELU)
V_UN_IMPL(vsigmoid, KS_OP_SIGMOID)
V_UN_IMPL(vtanh, KS_OP_TANH)
V_UN_IMPL(vhard_swish, KS_OP_HARD_SWISH)
V_UN_IMPL(vexp, KS_OP_EXP)
V_UN_IMPL(velu, KS_OP_ELU)
V_UN_IMPL(vclip, KS_OP_CLIP)
V_UN_IMPL(vsqrt, KS_OP_SQRT)
V_UN_IMPL(vabs, KS_OP_ABS)
V_UN_IMPL(vneg, KS_OP_NEG)
