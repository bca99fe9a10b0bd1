/* Vectorized fp32 SOFTMAX and LOG_SOFTMAX over the last axis. x86/avx512/f32_softmax.c includes
 * this file.
 *
 * As in the reference, the row maximum ignores NaN, exponentials are summed in double and the
 * result is e * (float)(1 / sum) (or (x - max) * beta - (float)log(sum)); the exponentials come
 * from v_exp (a few ulp from expf). Softmax stores them in y on the summing pass so x is read
 * twice, not three times.
 *
 * Short rows (softmax over 2..8 classes per anchor, as detectors' score heads do) go V_N rows at
 * a time, one row per lane: a row-per-call loop spends most of its time on horizontal max/sum
 * and tail masks for a handful of values (UltraFace: 4420 rows of 2 took 46 us). There the sum
 * is in float, not double: at most 8 terms in [0, 1] with one of them 1, so the difference is
 * a rounding of the last bit.
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

#define SHORT_ROW_MAX 8

/* Softmax of rows [0, num_groups * V_N) of length len <= SHORT_ROW_MAX, one row per lane. */
static void softmax_short_rows(const float *x, float *y, size_t num_groups, size_t len,
                               float beta) {
    float col[SHORT_ROW_MAX][V_N];
    vf e[SHORT_ROW_MAX];
    const vf vb = v_set1(beta), one = v_set1(1.0f);
    for (size_t gidx = 0; gidx < num_groups; gidx++) {
        const float *xg = x + gidx * V_N * len;
        float *yg = y + gidx * V_N * len;
        for (size_t r = 0; r < V_N; r++)
            for (size_t k = 0; k < len; k++)
                col[k][r] = xg[r * len + k];
        vf mx = v_set1(-INFINITY);
        for (size_t k = 0; k < len; k++)
            mx = v_max(v_load(col[k]), mx); /* NaN in the first operand is ignored */
        vf sum = v_zero();
        for (size_t k = 0; k < len; k++) {
            e[k] = v_exp(v_mul(v_sub(v_load(col[k]), mx), vb));
            sum = v_add(sum, e[k]);
        }
        const vf inv = v_div(one, sum);
        for (size_t k = 0; k < len; k++)
            v_store(col[k], v_mul(e[k], inv));
        for (size_t r = 0; r < V_N; r++)
            for (size_t k = 0; k < len; k++)
                yg[r * len + k] = col[k][r];
    }
}

static void vsoftmax_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const vsoftmax_job *j = (const vsoftmax_job *)arg;
    size_t r = begin;
    if (!j->log_sm && j->len >= 2 && j->len <= SHORT_ROW_MAX && end - begin >= V_N) {
        size_t groups = (end - begin) / V_N;
        softmax_short_rows(j->x + r * j->len, j->y + r * j->len, groups, j->len, j->beta);
        r += groups * V_N;
    }
    for (; r < end; r++)
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
