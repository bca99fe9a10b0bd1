/* Vectorized fp32 binary arithmetic (ADD SUB MUL DIV MAXIMUM MINIMUM, fused activation) and
 * PRELU with numpy broadcasting. x86/avx512/f32_vbinary.c includes this file: the vector width
 * comes from the directory's compile flags (f32_vsimd.h).
 *
 * Broadcasting is collapsed once per run (ks__vbin_geom_make), which turns the patterns models
 * use into one inner loop each: same shape is a single contiguous run, a scalar operand is a run
 * against a splat, a per-channel vector is rows of run-against-run, and anything else iterates
 * rows of its innermost contiguous run. Results are bitwise those of the reference for every
 * op; only the TANH/SIGMOID activations round differently (within a few ulp).
 */
#include "f32_vsimd.h"

/* One loop per op and operand pattern (sa, sb are 0 for a splat, 1 for a run). */
#define V_BIN_BODY(EXPR)                                                                           \
    for (; i + V_N <= n; i += V_N) {                                                               \
        vf va = sa ? v_load(a + i) : a0, vb = sb ? v_load(b + i) : b0;                             \
        v_store(y + i, EXPR);                                                                      \
    }                                                                                              \
    if (i < n) {                                                                                   \
        vf va = sa ? v_loadn(a + i, n - i) : a0, vb = sb ? v_loadn(b + i, n - i) : b0;             \
        v_storen(y + i, EXPR, n - i);                                                              \
    }

/* The loops over `rows` rows of n elements, the operands' rows ra and rb floats apart (0: the
 * same row for every output row; a single run is one row). Why rows: a per-channel operand (a
 * squeeze-excitation scale, [1,H,W,C] x [1,1,1,C]) makes rows of C = 16..128 floats, and the
 * per-row work item (index division, row offsets, an indirect call, the activation call) cost 3x
 * the arithmetic: selfie segmentation's 128x128x16 multiply took 0.19 ms against 0.06 ms for an add
 * of that size. */
#define V_BIN_ROWS_DEF(NAME, EXPR)                                                                 \
    static void NAME##_rows(float *y, const float *a, int64_t sa, int64_t ra, const float *b,      \
                            int64_t sb, int64_t rb, size_t n, size_t rows) {                       \
        for (size_t r = 0; r < rows; r++, y += n, a += ra, b += rb) {                              \
            const vf a0 = v_set1(a[0]), b0 = v_set1(b[0]);                                         \
            size_t i = 0;                                                                          \
            if (sa && sb) {                                                                        \
                V_BIN_BODY(EXPR)                                                                   \
            } else if (sa) {                                                                       \
                V_BIN_BODY(EXPR)                                                                   \
            } else if (sb) {                                                                       \
                V_BIN_BODY(EXPR)                                                                   \
            } else {                                                                               \
                V_BIN_BODY(EXPR)                                                                   \
            }                                                                                      \
        }                                                                                          \
    }

typedef void (*vbin_rows_fn)(float *y, const float *a, int64_t sa, int64_t ra, const float *b,
                             int64_t sb, int64_t rb, size_t n, size_t rows);

/* MAXIMUM/MINIMUM propagate a NaN from either side: the instruction already returns b when
 * either is NaN, so only a NaN in a needs patching. */
V_BIN_ROWS_DEF(vbin_add, v_add(va, vb))
V_BIN_ROWS_DEF(vbin_sub, v_sub(va, vb))
V_BIN_ROWS_DEF(vbin_mul, v_mul(va, vb))
V_BIN_ROWS_DEF(vbin_div, v_div(va, vb))
V_BIN_ROWS_DEF(vbin_max, v_sel(v_isnan(va), va, v_max(va, vb)))
V_BIN_ROWS_DEF(vbin_min, v_sel(v_isnan(va), va, v_min(va, vb)))
V_BIN_ROWS_DEF(vbin_prelu, v_sel(v_ge(va, v_zero()), va, v_mul(va, vb)))

static vbin_rows_fn vbin_rows_for_op(uint32_t op) {
    switch (op) {
    case KS_OP_ADD:
        return vbin_add_rows;
    case KS_OP_SUB:
        return vbin_sub_rows;
    case KS_OP_MUL:
        return vbin_mul_rows;
    case KS_OP_DIV:
        return vbin_div_rows;
    case KS_OP_MAXIMUM:
        return vbin_max_rows;
    case KS_OP_MINIMUM:
        return vbin_min_rows;
    case KS_OP_PRELU:
        return vbin_prelu_rows;
    default:
        return NULL;
    }
}

typedef struct vbin_job {
    ks__vbin_geom g;
    vbin_rows_fn rows_fn;
    const float *a, *b;
    float *y;
    int32_t act;
    float alpha;
    int64_t len;        /* innermost run */
    int64_t num_blocks; /* work items per row */
} vbin_job;

static void vbin_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const vbin_job *j = (const vbin_job *)arg;
    const int64_t sa = j->g.stride_a[j->g.rank - 1], sb = j->g.stride_b[j->g.rank - 1];
    if (j->g.rank == 2 && j->num_blocks == 1) {
        /* rows of one block each: items are rows, the operands' rows a fixed stride apart */
        const int64_t ra = j->g.stride_a[0], rb = j->g.stride_b[0], r0 = (int64_t)begin;
        float *y = j->y + r0 * j->len;
        j->rows_fn(y, j->a + r0 * ra, sa, ra, j->b + r0 * rb, sb, rb, (size_t)j->len, end - begin);
        if (j->act != KS_ACT_NONE)
            v_act_inplace(y, (size_t)((int64_t)(end - begin) * j->len), j->act, j->alpha);
        return;
    }
    for (size_t it = begin; it < end; it++) {
        int64_t row = (int64_t)it / j->num_blocks, blk = (int64_t)it % j->num_blocks;
        int64_t oa, ob;
        ks__vbin_row_offsets(&j->g, row, &oa, &ob);
        int64_t c0 = blk * V_BLOCK, c1 = c0 + V_BLOCK < j->len ? c0 + V_BLOCK : j->len;
        float *y = j->y + row * j->len + c0;
        j->rows_fn(y, j->a + oa + c0 * sa, sa, 0, j->b + ob + c0 * sb, sb, 0, (size_t)(c1 - c0), 1);
        if (j->act != KS_ACT_NONE) v_act_inplace(y, (size_t)(c1 - c0), j->act, j->alpha);
    }
}

static ks_status vbin_run(ks__kernel_ctx *ctx) {
    vbin_job j;
    const bool prelu = ctx->node->op == KS_OP_PRELU;
    if (!ks__vbin_geom_make(ctx->in[0], ctx->in[1], ctx->out[0], &j.g) ||
        !(j.rows_fn = vbin_rows_for_op(ctx->node->op)))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "shapes changed after planning");
    if (j.g.numel == 0) return KS_STATUS_OK;
    j.a = (const float *)ctx->in[0]->data;
    j.b = (const float *)ctx->in[1]->data;
    j.y = (float *)ctx->out[0]->data;
    j.act = prelu ? KS_ACT_NONE : ctx->node->ip[0];
    j.alpha = ctx->node->fp[0];
    j.len = j.g.dims[j.g.rank - 1];
    j.num_blocks = (j.len + V_BLOCK - 1) / V_BLOCK;
    int64_t rows = j.g.numel / j.len;
    int64_t per_item = j.len < V_BLOCK ? j.len : V_BLOCK;
    size_t grain = (size_t)(V_MIN_PARALLEL / per_item) + 1;
    ks__parallel_for(ctx->pool, (size_t)(rows * j.num_blocks), grain, vbin_range, &j);
    return KS_STATUS_OK;
}

static double vbin_cost(const ks__kernel_ctx *ctx) {
    double n = ks__vbin_numel(ctx, false);
    return n < 0 ? -1.0 : 1.0 + n / V_N;
}

static double vprelu_cost(const ks__kernel_ctx *ctx) {
    double n = ks__vbin_numel(ctx, true);
    return n < 0 ? -1.0 : 1.0 + n / V_N;
}

static ks_status vbin_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    (void)ctx;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

#define V_BIN_IMPL(base, OP, cost)                                                                 \
    const ks__impl V_SYM(base) = {V_NAME(base), OP, V_ISA, cost, vbin_plan, NULL, vbin_run};

V_BIN_IMPL(vadd, KS_OP_ADD, vbin_cost)
V_BIN_IMPL(vsub, KS_OP_SUB, vbin_cost)
V_BIN_IMPL(vmul, KS_OP_MUL, vbin_cost)
V_BIN_IMPL(vdiv, KS_OP_DIV, vbin_cost)
V_BIN_IMPL(vmax, KS_OP_MAXIMUM, vbin_cost)
V_BIN_IMPL(vmin, KS_OP_MINIMUM, vbin_cost)
V_BIN_IMPL(vprelu, KS_OP_PRELU, vprelu_cost)
