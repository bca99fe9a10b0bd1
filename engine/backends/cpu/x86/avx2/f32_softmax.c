/* Vectorized fp32 SOFTMAX and LOG_SOFTMAX over the last axis. x86/avx512/f32_softmax.c includes
 * this file.
 *
 * As in the reference, the row maximum ignores NaN, exponentials are summed in double and the
 * result is e * (float)(1 / sum) (or (x - max) * beta - (float)log(sum)); the exponentials come
 * from v_exp (a few ulp from expf). Softmax stores them in y on the summing pass so x is read
 * twice, not three times.
 */
#include <math.h>

#include "f32_vsimd.h"

typedef struct vsoftmax_job {
    const float *x;
    float *y;
    size_t len;
    float beta;
    bool log_sm;
} vsoftmax_job;

static void softmax_row(const float *x, float *y, size_t len, float beta, bool log_sm) {
    size_t i = 0;
    vf vmx = v_set1(-INFINITY);
    for (; i + V_N <= len; i += V_N)
        vmx = v_max(v_load(x + i), vmx);
    float mx = v_hmax(vmx);
    for (; i < len; i++)
        mx = x[i] > mx ? x[i] : mx;

    const vf vm_ = v_set1(mx), vb = v_set1(beta);
    vd s0 = v_dzero(), s1 = v_dzero();
    for (i = 0; i + V_N <= len; i += V_N) {
        vf e = v_exp(v_mul(v_sub(v_load(x + i), vm_), vb));
        if (!log_sm) v_store(y + i, e);
        s0 = v_dadd(s0, v_dlo(e));
        s1 = v_dadd(s1, v_dhi(e));
    }
    if (i < len) {
        vf e = v_exp(v_mul(v_sub(v_loadn(x + i, len - i), vm_), vb));
        e = v_sel(v_tail(len - i), e, v_zero());
        if (!log_sm) v_storen(y + i, e, len - i);
        s0 = v_dadd(s0, v_dlo(e));
        s1 = v_dadd(s1, v_dhi(e));
    }
    const double sum = v_dsum(v_dadd(s0, s1));

    if (log_sm) {
        const vf ls = v_set1((float)log(sum));
        for (i = 0; i + V_N <= len; i += V_N)
            v_store(y + i, v_sub(v_mul(v_sub(v_load(x + i), vm_), vb), ls));
        if (i < len)
            v_storen(y + i, v_sub(v_mul(v_sub(v_loadn(x + i, len - i), vm_), vb), ls), len - i);
        return;
    }
    const vf inv = v_set1((float)(1.0 / sum));
    for (i = 0; i + V_N <= len; i += V_N)
        v_store(y + i, v_mul(v_load(y + i), inv));
    if (i < len) v_storen(y + i, v_mul(v_loadn(y + i, len - i), inv), len - i);
}

static void vsoftmax_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const vsoftmax_job *j = (const vsoftmax_job *)arg;
    for (size_t r = begin; r < end; r++)
        softmax_row(j->x + r * j->len, j->y + r * j->len, j->len, j->beta, j->log_sm);
}

static ks_status vsoftmax_run(ks__kernel_ctx *ctx) {
    int64_t rows, len;
    if (!ks__vsoftmax_shape(ctx, &rows, &len))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "shapes changed after planning");
    if (rows == 0 || len == 0) return KS_STATUS_OK;
    vsoftmax_job j = {(const float *)ctx->in[0]->data, (float *)ctx->out[0]->data, (size_t)len,
                      ctx->node->fp[0] != 0.0f ? ctx->node->fp[0] : 1.0f,
                      ctx->node->op == KS_OP_LOG_SOFTMAX};
    ks__parallel_for(ctx->pool, (size_t)rows, (size_t)(V_MIN_PARALLEL / len) + 1, vsoftmax_range,
                     &j);
    return KS_STATUS_OK;
}

static double vsoftmax_cost(const ks__kernel_ctx *ctx) {
    int64_t rows, len;
    if (!ks__vsoftmax_shape(ctx, &rows, &len)) return -1.0;
    return 1.0 + 12.0 * (double)rows * (double)len / V_N;
}

static ks_status vsoftmax_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    (void)ctx;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

const ks__impl V_SYM(vsoftmax) = {V_NAME(vsoftmax), KS_OP_SOFTMAX, V_ISA,       vsoftmax_cost,
                                  vsoftmax_plan,    NULL,          vsoftmax_run};
const ks__impl V_SYM(vlog_softmax) = {V_NAME(vlog_softmax), KS_OP_LOG_SOFTMAX, V_ISA,
                                      vsoftmax_cost,        vsoftmax_plan,     NULL,
                                      vsoftmax_run};
