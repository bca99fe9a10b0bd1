/* TRANSPOSE of 1-byte tensors (U8/I8/BOOL; quantized ones keep their codes, as the reference
 * copies bytes), SLICE of 1- and 4-byte tensors and constant PAD of U8/I8 tensors, portable C.
 *
 * PAD: only the form ks-quant emits is taken: no fill input and fill 0.0, which the reference
 * turns into the output zero point (real 0), or a plain 0 byte for unquantized bytes. The output
 * is filled with it, then the surviving input rows are copied with memcpy.
 *
 * TRANSPOSE: The permutation is described with the shared gather geometry
 * (perf.h, written for 4-byte elements; only dims and strides are used here), collapsed, then
 * copied row by row: contiguous rows with memcpy, strided rows with a byte loop over 8 rows at a
 * time so each cache line read serves eight outputs.
 */
#include <string.h>

#include "impl.h"
#include "perf.h"
#include "vec.h"

/* The kernels here are registered for x86-64 and AArch64 only (impls_quant.inc); on other
 * targets (the WebAssembly build of the editor) this file compiles to nothing. */
#if defined(__x86_64__) || defined(__aarch64__)

enum { ROW_BLOCK = 8 };

static int byte_dtype(ks_dtype d) {
    return d == KS_DTYPE_U8 || d == KS_DTYPE_I8 || d == KS_DTYPE_BOOL;
}

/* The geometry of the same node on 4-byte stand-ins of the tensors. */
static int describe(const ks__kernel_ctx *ctx, ks__gather_geom *g) {
    if (ctx->node->op != KS_OP_TRANSPOSE || ctx->num_inputs != 1 || ctx->num_outputs != 1)
        return -1;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (!x || !y || !byte_dtype(x->dtype) || y->dtype != x->dtype) return -1;
    static const ks__quant no_quant;
    ks__rt_tensor xs = *x, ys = *y;
    xs.dtype = ys.dtype = KS_DTYPE_I32;
    xs.quant = ys.quant = &no_quant;
    ks__rt_tensor *ins[1] = {&xs}, *outs[1] = {&ys};
    ks__kernel_ctx sub = *ctx;
    sub.in = ins, sub.out = outs;
    if (!ks__gather_geom_transpose(&sub, g) || g->rank < 1) return -1;
    return 0;
}

typedef struct tjob {
    const ks__gather_geom *g;
    const uint8_t *x;
    uint8_t *y;
    int64_t rows; /* product of all dims but the last */
    size_t es;    /* element bytes: 1 or 4 */
} tjob;

/* Rows [begin, end) of the output (each dims[rank-1] bytes long). */
static void rows_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const tjob *j = (const tjob *)arg;
    const ks__gather_geom *g = j->g;
    const int32_t last = g->rank - 1;
    const int64_t len = g->dims[last], step = g->in_stride[last];
    const size_t es = j->es;
    (void)thread;
    size_t r = begin;
    while (r < end) {
        /* input offset of row r */
        int64_t rem = (int64_t)r, off = g->base;
        for (int32_t d = last - 1; d >= 0; d--) {
            off += (rem % g->dims[d]) * g->in_stride[d];
            rem /= g->dims[d];
        }
        uint8_t *dst = j->y + r * (size_t)len * es;
        if (step == 1) {
            memcpy(dst, j->x + (size_t)off * es, (size_t)len * es);
            r++;
            continue;
        }
        /* Rows that follow r inside the innermost outer dim advance by a fixed input stride. */
        int64_t in_dim = last >= 1 ? g->dims[last - 1] : 1;
        int64_t row_step = last >= 1 ? g->in_stride[last - 1] : 0;
        int64_t pos = last >= 1 ? (int64_t)r % in_dim : 0;
        size_t nb = (size_t)(in_dim - pos);
        if (nb > ROW_BLOCK) nb = ROW_BLOCK;
        if (nb > end - r) nb = end - r;
        if (es == 1) {
            for (int64_t k = 0; k < len; k++) {
                const uint8_t *src = j->x + off + k * step;
                for (size_t b = 0; b < nb; b++)
                    dst[b * (size_t)len + (size_t)k] = src[(int64_t)b * row_step];
            }
        } else {
            const uint32_t *x32 = (const uint32_t *)(const void *)j->x;
            uint32_t *d32 = (uint32_t *)(void *)dst;
            for (int64_t k = 0; k < len; k++) {
                const uint32_t *src = x32 + off + k * step;
                for (size_t b = 0; b < nb; b++)
                    d32[b * (size_t)len + (size_t)k] = src[(int64_t)b * row_step];
            }
        }
        r += nb;
    }
}

static double cost(const ks__kernel_ctx *ctx) {
    ks__gather_geom g;
    if (describe(ctx, &g)) return -1.0;
    return 1.0 + (double)g.numel / 4.0;
}

static ks_status plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    (void)ctx;
    *packed_bytes_out = 0;
    return KS_STATUS_OK;
}

static ks_status run(ks__kernel_ctx *ctx) {
    ks__gather_geom g;
    if (describe(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "x8 transpose cannot run this node");
    if (g.numel <= 0) return KS_STATUS_OK;
    tjob j = {&g, (const uint8_t *)ctx->in[0]->data, (uint8_t *)ctx->out[0]->data, 1, 1};
    for (int32_t d = 0; d < g.rank - 1; d++)
        j.rows *= g.dims[d];
    int64_t len = g.dims[g.rank - 1];
    size_t grain = (size_t)(16384 / (len > 0 ? len : 1)) + 1;
    ks__parallel_for(ctx->pool, (size_t)j.rows, grain, rows_range, &j);
    return KS_STATUS_OK;
}

/* ---- SLICE ----
 * ONNX Slice with TFLite's begin/end/shrink masks (ops.inc), positive steps only, for 1-byte and
 * 4-byte elements (the codes or bits are copied, as the reference does). The window is described
 * as a gather geometry and copied like a transpose. Infer has already validated the node; the
 * plan here must give exactly the output dims infer set, else the node is left to the reference. */

static size_t slice_elem_size(const ks__rt_tensor *x, const ks__rt_tensor *y) {
    if (!x || !y || x->dtype != y->dtype) return 0;
    if (x->dtype == KS_DTYPE_U8 || x->dtype == KS_DTYPE_I8 || x->dtype == KS_DTYPE_BOOL) return 1;
    if (x->dtype == KS_DTYPE_F32 || x->dtype == KS_DTYPE_I32) return 4;
    return 0;
}

static int slice_ints(const ks__rt_tensor *t, int64_t *vals, int32_t *count) {
    if (!t || !t->data || (t->dtype != KS_DTYPE_I32 && t->dtype != KS_DTYPE_I64) || t->rank > 1)
        return -1;
    int64_t n = ks__rt_numel(t);
    if (n < 0 || n > KS_MAX_RANK) return -1;
    for (int64_t i = 0; i < n; i++)
        vals[i] = ks__rt_get_int(t, i);
    *count = (int32_t)n;
    return 0;
}

static int slice_describe(const ks__kernel_ctx *ctx, ks__gather_geom *g, size_t *es) {
    if (ctx->node->op != KS_OP_SLICE || ctx->num_inputs < 3 || ctx->num_outputs != 1) return -1;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    *es = slice_elem_size(x, y);
    if (!*es || x->rank < 1 || x->rank > KS_MAX_RANK) return -1;
    int64_t vals[4][KS_MAX_RANK];
    int32_t n = 0, cnt = 0;
    if (slice_ints(ctx->in[1], vals[0], &n) || slice_ints(ctx->in[2], vals[1], &cnt) || cnt != n)
        return -1;
    const ks__rt_tensor *axes = ctx->num_inputs > 3 ? ctx->in[3] : NULL;
    const ks__rt_tensor *steps = ctx->num_inputs > 4 ? ctx->in[4] : NULL;
    if (axes && (slice_ints(axes, vals[2], &cnt) || cnt != n)) return -1;
    if (steps && (slice_ints(steps, vals[3], &cnt) || cnt != n)) return -1;
    if (n > x->rank) return -1;
    const int32_t rank = x->rank, *ip = ctx->node->ip;
    int64_t start[KS_MAX_RANK], step[KS_MAX_RANK], count[KS_MAX_RANK], xs[KS_MAX_RANK];
    int seen[KS_MAX_RANK] = {0}, shrink[KS_MAX_RANK] = {0};
    for (int32_t d = 0; d < rank; d++)
        start[d] = 0, step[d] = 1, count[d] = x->dims[d];
    for (int32_t i = 0; i < n; i++) {
        int64_t a = axes ? vals[2][i] : i;
        if (a < 0) a += rank;
        if (a < 0 || a >= rank || seen[a]) return -1;
        seen[a] = 1;
        int64_t dim = x->dims[a], st = steps ? vals[3][i] : 1;
        if (st <= 0) return -1; /* negative steps: reference */
        int64_t b = vals[0][i], e = vals[1][i];
        if ((ip[2] >> i) & 1) { /* shrink: one element, axis dropped */
            b = ((ip[0] >> i) & 1) ? 0 : (b < 0 ? b + dim : b);
            if (b < 0 || b >= dim) return -1;
            start[a] = b, step[a] = 1, count[a] = 1, shrink[a] = 1;
            continue;
        }
        if ((ip[0] >> i) & 1) {
            b = 0;
        } else {
            if (b < 0) b += dim;
            b = b < 0 ? 0 : (b > dim ? dim : b);
        }
        if ((ip[1] >> i) & 1) {
            e = dim;
        } else {
            if (e < 0) e += dim;
            e = e < 0 ? 0 : (e > dim ? dim : e);
        }
        int64_t c = e > b ? 1 + (e - b - 1) / st : 0;
        start[a] = c > 0 ? b : 0;
        step[a] = c > 1 ? st : 1;
        count[a] = c;
    }
    int32_t r = 0;
    for (int32_t d = 0; d < rank; d++) {
        if (shrink[d]) continue;
        if (r >= y->rank || y->dims[r] != count[d]) return -1;
        r++;
    }
    if (r != y->rank) return -1;
    int64_t stride = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        xs[d] = stride;
        stride *= x->dims[d];
    }
    g->rank = rank;
    g->base = 0;
    for (int32_t d = 0; d < rank; d++) {
        g->dims[d] = count[d];
        g->in_stride[d] = step[d] * xs[d];
        g->base += start[d] * xs[d];
    }
    ks__gather_collapse(g);
    return 0;
}

static double slice_cost(const ks__kernel_ctx *ctx) {
    ks__gather_geom g;
    size_t es;
    if (slice_describe(ctx, &g, &es)) return -1.0;
    return 1.0 + (double)g.numel / 4.0;
}

static ks_status slice_run(ks__kernel_ctx *ctx) {
    ks__gather_geom g;
    size_t es;
    if (slice_describe(ctx, &g, &es))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "slice copy cannot run this node");
    if (g.numel <= 0) return KS_STATUS_OK;
    tjob j = {&g, (const uint8_t *)ctx->in[0]->data, (uint8_t *)ctx->out[0]->data, 1, es};
    for (int32_t d = 0; d < g.rank - 1; d++)
        j.rows *= g.dims[d];
    int64_t len = g.dims[g.rank - 1];
    size_t grain = (size_t)(16384 / (len > 0 ? len : 1)) + 1;
    ks__parallel_for(ctx->pool, (size_t)j.rows, grain, rows_range, &j);
    return KS_STATUS_OK;
}

/* ---- PAD ---- */

static int pad_describe(const ks__kernel_ctx *ctx, ks__vpad_geom *g, uint8_t *fill) {
    if (ctx->node->op != KS_OP_PAD || ctx->num_inputs < 2 || ctx->num_outputs != 1) return -1;
    if ((ctx->num_inputs > 2 && ctx->in[2]) || ctx->node->fp[0] != 0.0f) return -1;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (!x || !y || (x->dtype != KS_DTYPE_U8 && x->dtype != KS_DTYPE_I8) || y->dtype != x->dtype)
        return -1;
    const ks__quant *q = y->quant;
    int32_t zp = 0;
    if (q && q->count > 0) {
        if (q->count != 1 || !q->scales || !q->zero_points || !(q->scales[0] > 0.0f)) return -1;
        zp = q->zero_points[0];
        if (zp < (x->dtype == KS_DTYPE_U8 ? 0 : -128) || zp > (x->dtype == KS_DTYPE_U8 ? 255 : 127))
            return -1;
    }
    *fill = (uint8_t)zp;
    static const ks__quant no_quant;
    ks__rt_tensor xs = *x, ys = *y;
    xs.dtype = ys.dtype = KS_DTYPE_F32;
    xs.quant = ys.quant = &no_quant;
    ks__rt_tensor *ins[2] = {&xs, ctx->in[1]}, *outs[1] = {&ys};
    ks__kernel_ctx sub = *ctx;
    sub.in = ins, sub.num_inputs = 2, sub.out = outs;
    if (!ks__vpad_geom_make(&sub, g, false)) return -1;
    for (int32_t d = 0; d < g->rank; d++)
        if (g->out_dims[d] < 0 || g->in_dims[d] < 0) return -1;
    return 0;
}

typedef struct pad_job {
    const ks__vpad_geom *g;
    const uint8_t *x;
    uint8_t *y;
    uint8_t fill;
    int64_t out_row, in_row, rows; /* bytes per last-dim row; output rows */
} pad_job;

/* Output rows [begin, end): fill, then copy the input row that lands there, if any. */
static void pad_rows(void *arg, size_t begin, size_t end, uint32_t thread) {
    const pad_job *j = (const pad_job *)arg;
    const ks__vpad_geom *g = j->g;
    const int32_t last = g->rank - 1;
    (void)thread;
    int64_t b = g->before[last];
    int64_t src0 = b < 0 ? -b : 0, dst0 = b > 0 ? b : 0;
    int64_t len = g->in_dims[last] - src0;
    if (len > g->out_dims[last] - dst0) len = g->out_dims[last] - dst0;
    for (size_t r = begin; r < end; r++) {
        uint8_t *dst = j->y + r * (size_t)j->out_row;
        memset(dst, j->fill, (size_t)j->out_row);
        if (len <= 0) continue;
        /* the input row of output row r, or none */
        int64_t rem = (int64_t)r, in_off = 0, in_stride = g->in_dims[last];
        int ok = 1;
        for (int32_t d = last - 1; d >= 0; d--) {
            int64_t od = rem % g->out_dims[d];
            rem /= g->out_dims[d];
            int64_t id = od - g->before[d];
            if (id < 0 || id >= g->in_dims[d]) {
                ok = 0;
                break;
            }
            in_off += id * in_stride;
            in_stride *= g->in_dims[d];
        }
        if (ok) memcpy(dst + dst0, j->x + in_off + src0, (size_t)len);
    }
}

static double pad_cost(const ks__kernel_ctx *ctx) {
    ks__vpad_geom g;
    uint8_t fill;
    if (pad_describe(ctx, &g, &fill)) return -1.0;
    return 1.0 + (double)ks__rt_numel(ctx->out[0]) / 16.0;
}

static ks_status pad_run(ks__kernel_ctx *ctx) {
    ks__vpad_geom g;
    uint8_t fill;
    if (pad_describe(ctx, &g, &fill))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "x8 pad cannot run this node");
    pad_job j = {&g, (const uint8_t *)ctx->in[0]->data, (uint8_t *)ctx->out[0]->data, fill, 0, 0,
                 1};
    j.out_row = g.out_dims[g.rank - 1];
    j.in_row = g.in_dims[g.rank - 1];
    for (int32_t d = 0; d < g.rank - 1; d++)
        j.rows *= g.out_dims[d];
    if (j.rows <= 0 || j.out_row <= 0) return KS_STATUS_OK;
    ks__parallel_for(ctx->pool, (size_t)j.rows, (size_t)(16384 / j.out_row) + 1, pad_rows, &j);
    return KS_STATUS_OK;
}

#if defined(__x86_64__)
const ks__impl ks_x8_transpose__avx2 = {
    "ks_x8_transpose__avx2", KS_OP_TRANSPOSE, KS_ISA_AVX2, cost, plan, NULL, run};
const ks__impl ks_q8_pad__avx2 = {
    "ks_q8_pad__avx2", KS_OP_PAD, KS_ISA_AVX2, pad_cost, plan, NULL, pad_run};
const ks__impl ks_x8x32_slice__avx2 = {
    "ks_x8x32_slice__avx2", KS_OP_SLICE, KS_ISA_AVX2, slice_cost, plan, NULL, slice_run};
#elif defined(__aarch64__)
const ks__impl ks_x8_transpose__neon = {
    "ks_x8_transpose__neon", KS_OP_TRANSPOSE, KS_ISA_NEON, cost, plan, NULL, run};
const ks__impl ks_q8_pad__neon = {
    "ks_q8_pad__neon", KS_OP_PAD, KS_ISA_NEON, pad_cost, plan, NULL, pad_run};
const ks__impl ks_x8x32_slice__neon = {
    "ks_x8x32_slice__neon", KS_OP_SLICE, KS_ISA_NEON, slice_cost, plan, NULL, slice_run};
#endif

#endif /* x86-64 or AArch64 */
