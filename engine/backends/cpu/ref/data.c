/* Reference kernels for data-movement and shape ops: RESHAPE, TRANSPOSE, CONCAT, SPLIT, SLICE,
 * PAD, PACK, UNPACK, GATHER, GATHER_ND, SHAPE, SQUEEZE, UNSQUEEZE, EXPAND, TILE.
 *
 * Every op moves whole elements, so the kernels work on bytes (element size from the dtype) and
 * are dtype-agnostic. The only arithmetic is CONCAT's requantization and fused activation, and
 * PAD's constant value.
 *
 * Most ops reduce to one strided copy: an N-d walk over the output region with independent
 * element strides for source and destination (negative strides for reversed slices, zero strides
 * for broadcast). TILE uses the same walk on a 2*rank view. Geometry is computed by one function
 * per op (engine/src/shape_data.h) that the core's shape inference and run() both call, so the
 * two cannot disagree; run() re-checks that the output shape it is handed is the one the
 * geometry produces.
 *
 * Where ONNX and TFLite differ, these kernels accept the superset:
 * - SLICE clamps starts/ends with ONNX rules also when TFLite masks are set (only an out-of-range
 *   start with a negative step differs from TFLite, which yields an empty axis there);
 * - SPLIT without sizes allows an uneven split (last part smaller, ONNX opset 18);
 * - EXPAND broadcasts both ways (ONNX Expand); TRANSPOSE with ip0 == 0 reverses the axes;
 * - PAD reflect/symmetric wider than the axis folds again (numpy); negative pads crop (ONNX);
 * - GATHER wraps negative indices, GATHER_ND does not (TFLite rejects them).
 */
#include "../cpu_kernel.h"
#include "../op_enabled.h"
#include "src/shape_data.h"

#include <math.h>
#include <string.h>

/* Walks use up to 2*KS_MAX_RANK axes (TILE splits each axis into repeat x extent). */
#define WALK_MAX_RANK (2 * KS_MAX_RANK)

/* ---------------------------------------------------------------------------------------------
 * Common helpers
 * ------------------------------------------------------------------------------------------- */

/* run(): the output must still have the planned shape and a large enough buffer. */
static ks_status check_out_run(ks__kernel_ctx *ctx, uint32_t i, int32_t rank, const int64_t *dims) {
    const ks__rt_tensor *o = ctx->out[i];
    bool same = o->rank == rank;
    for (int32_t d = 0; same && d < rank; d++)
        same = o->dims[d] == dims[d];
    int64_t n = ks__numel(rank, dims);
    if (!same || n < 0 || (uint64_t)n * ks_dtype_size(o->dtype) > o->size_bytes ||
        (n > 0 && !o->data)) {
        char want[160], got[160];
        ks__format_dims(want, sizeof(want), rank, dims);
        ks__format_dims(got, sizeof(got), o->rank, o->dims);
        return ks__kernel_error(ctx, KS_STATUS_INVALID_STATE,
                                "output '%s' is %s (%zu bytes) at run, planned %s; reshape first",
                                ks__rt_name(o), got, o->size_bytes, want);
    }
    return KS_STATUS_OK;
}

static void contiguous_strides(int32_t rank, const int64_t *dims, int64_t *strides) {
    int64_t s = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        strides[d] = s;
        s *= dims[d];
    }
}

/* N-d walk with two element offsets (a: destination, b: source). */
typedef struct nd_walk {
    int32_t rank;
    int64_t dims[WALK_MAX_RANK];
    int64_t idx[WALK_MAX_RANK];
    int64_t stride_a[WALK_MAX_RANK], stride_b[WALK_MAX_RANK];
    int64_t off_a, off_b;
} nd_walk;

static void walk_init(nd_walk *w, int32_t rank, const int64_t *dims, const int64_t *stride_a,
                      const int64_t *stride_b) {
    w->rank = rank;
    for (int32_t d = 0; d < rank; d++) {
        w->dims[d] = dims[d];
        w->idx[d] = 0;
        w->stride_a[d] = stride_a[d];
        w->stride_b[d] = stride_b[d];
    }
    w->off_a = 0;
    w->off_b = 0;
}

static void walk_next(nd_walk *w) {
    for (int32_t d = w->rank - 1; d >= 0; d--) {
        w->off_a += w->stride_a[d];
        w->off_b += w->stride_b[d];
        if (++w->idx[d] < w->dims[d]) return;
        w->off_a -= w->stride_a[d] * w->dims[d];
        w->off_b -= w->stride_b[d] * w->dims[d];
        w->idx[d] = 0;
    }
}

/* Copies the region `dims` from src (element strides src_strides) to dst (dst_strides). dst and
 * src point at the region's first element; strides may be negative or zero. */
static void copy_strided(uint8_t *dst, const int64_t *dst_strides, const uint8_t *src,
                         const int64_t *src_strides, int32_t rank, const int64_t *dims,
                         size_t elem_size) {
    int64_t n = ks__numel(rank, dims);
    if (n <= 0) return;
    /* Innermost axis contiguous on both sides: copy whole rows. */
    int64_t row = 1;
    int32_t outer_rank = rank;
    if (rank > 0 && dst_strides[rank - 1] == 1 && src_strides[rank - 1] == 1) {
        row = dims[rank - 1];
        outer_rank = rank - 1;
    }
    nd_walk w;
    walk_init(&w, outer_rank, dims, dst_strides, src_strides);
    size_t row_bytes = (size_t)row * elem_size;
    for (int64_t r = 0, num_rows = n / row; r < num_rows; r++) {
        memcpy(dst + (ptrdiff_t)w.off_a * (ptrdiff_t)elem_size,
               src + (ptrdiff_t)w.off_b * (ptrdiff_t)elem_size, row_bytes);
        walk_next(&w);
    }
}

/* Stores v as one element of dtype dt; integers are rounded and saturated (a model-provided pad
 * value must not trigger undefined float->int conversion). */
static void store_scalar(ks_dtype dt, void *dst, double v) {
    if (dt == KS_DTYPE_F32 || dt == KS_DTYPE_F16) {
        ks__rt_tensor tmp = {.dtype = dt, .data = dst};
        ks__rt_set_f64(&tmp, 0, v);
        return;
    }
    const int64_t lo = ks__dtype_min(dt), hi = ks__dtype_max(dt);
    double r = isnan(v) ? 0.0 : round(v);
    int64_t q;
    if (r <= (double)lo)
        q = lo;
    else if (r >= (double)hi)
        q = hi;
    else
        q = (int64_t)r;
    switch (dt) {
    case KS_DTYPE_I32:
        *(int32_t *)dst = (int32_t)q;
        break;
    case KS_DTYPE_I64:
        *(int64_t *)dst = q;
        break;
    case KS_DTYPE_U8:
        *(uint8_t *)dst = (uint8_t)q;
        break;
    case KS_DTYPE_I8:
        *(int8_t *)dst = (int8_t)q;
        break;
    case KS_DTYPE_I16:
        *(int16_t *)dst = (int16_t)q;
        break;
    case KS_DTYPE_BOOL:
        *(uint8_t *)dst = (uint8_t)(q != 0);
        break;
    default:
        break;
    }
}

static int64_t load_qint(ks_dtype dt, const uint8_t *p) {
    switch (dt) {
    case KS_DTYPE_U8:
        return *p;
    case KS_DTYPE_I8:
        return *(const int8_t *)p;
    case KS_DTYPE_I16: {
        int16_t v;
        memcpy(&v, p, sizeof(v));
        return v;
    }
    default:
        return 0;
    }
}

static void store_qint(ks_dtype dt, uint8_t *p, int64_t v) {
    switch (dt) {
    case KS_DTYPE_U8:
        *p = (uint8_t)v;
        break;
    case KS_DTYPE_I8:
        *(int8_t *)p = (int8_t)v;
        break;
    case KS_DTYPE_I16: {
        int16_t s = (int16_t)v;
        memcpy(p, &s, sizeof(s));
        break;
    }
    default:
        break;
    }
}

/* Run for ops whose output bytes equal the input bytes (the session may alias them). */
static ks_status run_copy_view(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    int64_t n = ks__rt_numel(x);
    ks_status st = check_out_run(ctx, 0, y->rank, y->dims);
    if (st) return st;
    if (n < 0 || ks__rt_numel(y) != n)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_STATE,
                                "output '%s' has %lld elements at run, input '%s' has %lld",
                                ks__rt_name(y), (long long)ks__rt_numel(y), ks__rt_name(x),
                                (long long)n);
    size_t bytes = (size_t)n * ks_dtype_size(x->dtype);
    if (bytes && y->data != x->data) memmove(y->data, x->data, bytes);
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * SHAPE
 * ------------------------------------------------------------------------------------------- */

static ks_status shape_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    int64_t dims[1] = {x->rank};
    ks_status st = check_out_run(ctx, 0, 1, dims);
    if (st) return st;
    for (int32_t d = 0; d < x->rank; d++) {
        if (y->dtype == KS_DTYPE_I32) {
            if (x->dims[d] > INT32_MAX)
                return ks__kernel_error(ctx, KS_STATUS_LIMIT_EXCEEDED,
                                        "dim %d of input '%s' (%lld) does not fit output '%s' i32",
                                        d, ks__rt_name(x), (long long)x->dims[d], ks__rt_name(y));
            ((int32_t *)y->data)[d] = (int32_t)x->dims[d];
        } else {
            ((int64_t *)y->data)[d] = x->dims[d];
        }
    }
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * TRANSPOSE
 * ------------------------------------------------------------------------------------------- */

static ks_status transpose_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    int32_t perm[KS_MAX_RANK];
    int64_t dims[KS_MAX_RANK], in_strides[KS_MAX_RANK], src_strides[KS_MAX_RANK],
        dst_strides[KS_MAX_RANK];
    ks_status st = ks__transpose_geometry(ctx, perm, dims);
    if (st || (st = check_out_run(ctx, 0, x->rank, dims))) return st;
    contiguous_strides(x->rank, x->dims, in_strides);
    contiguous_strides(x->rank, dims, dst_strides);
    for (int32_t d = 0; d < x->rank; d++)
        src_strides[d] = in_strides[perm[d]];
    copy_strided(y->data, dst_strides, x->data, src_strides, x->rank, dims,
                 ks_dtype_size(x->dtype));
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * CONCAT
 * ------------------------------------------------------------------------------------------- */

/* TFLite reference ConcatenationWithScaling: q_out = round(q_in * s + bias) + zp_out with
 * s = s_in / s_out and bias = -zp_in * s, computed in float like the reference. */
static void concat_requant(uint8_t *dst, const int64_t *dst_strides, const ks__rt_tensor *x,
                           const ks__rt_tensor *y, int64_t lo, int64_t hi) {
    size_t es = ks_dtype_size(x->dtype);
    const float scale = x->quant->scales[0] * (1.0f / y->quant->scales[0]);
    const float bias = -(float)ks__rt_qzp(x) * scale;
    const int64_t zp_out = ks__rt_qzp(y);
    int64_t src_strides[KS_MAX_RANK];
    contiguous_strides(x->rank, x->dims, src_strides);
    nd_walk w;
    walk_init(&w, x->rank, x->dims, dst_strides, src_strides);
    const uint8_t *src = x->data;
    for (int64_t i = 0, n = ks__rt_numel(x); i < n; i++) {
        float r = roundf((float)load_qint(x->dtype, src + w.off_b * (int64_t)es) * scale + bias);
        /* Clamp in double: an extreme scale ratio must not overflow the integer conversion. */
        double v = (double)r + (double)zp_out;
        int64_t q = v <= (double)lo ? lo : (v >= (double)hi ? hi : (int64_t)v);
        store_qint(x->dtype, dst + w.off_a * (int64_t)es, q);
        walk_next(&w);
    }
}

static void apply_act_inplace(ks__rt_tensor *y, int32_t act, float alpha, int64_t lo, int64_t hi) {
    int64_t n = ks__rt_numel(y);
    uint8_t *p = y->data;
    size_t es = ks_dtype_size(y->dtype);
    for (int64_t i = 0; i < n; i++) {
        if (y->dtype == KS_DTYPE_F32) {
            float *f = (float *)(void *)(p + i * (int64_t)es);
            *f = ks__act_apply(*f, act, alpha);
        } else if (y->dtype == KS_DTYPE_F16) {
            uint16_t *h = (uint16_t *)(void *)(p + i * (int64_t)es);
            *h = ks__f32_to_f16(ks__act_apply(ks__f16_to_f32(*h), act, alpha));
        } else {
            int64_t v = load_qint(y->dtype, p + i * (int64_t)es);
            store_qint(y->dtype, p + i * (int64_t)es, v < lo ? lo : (v > hi ? hi : v));
        }
    }
}

static ks_status concat_run(ks__kernel_ctx *ctx) {
    ks__concat_geom p;
    ks_status st = ks__concat_geometry(ctx, &p);
    if (st || (st = check_out_run(ctx, 0, p.rank, p.out_dims))) return st;
    if ((st = ks__concat_check_act(ctx))) return st;
    ks__rt_tensor *y = ctx->out[0];
    size_t es = ks_dtype_size(y->dtype);
    int32_t act = ctx->node->ip[1];
    int64_t lo = 0, hi = 0;
    if (ks__dtype_is_qint(y->dtype) && y->quant->count == 1) {
        ks__concat_act_range(act, y, &lo, &hi);
    } else {
        lo = ks__dtype_min(y->dtype);
        hi = ks__dtype_max(y->dtype);
    }
    int64_t out_strides[KS_MAX_RANK], in_strides[KS_MAX_RANK];
    contiguous_strides(p.rank, p.out_dims, out_strides);
    int64_t offset = 0;
    for (uint32_t i = 0; i < ctx->num_inputs; i++) {
        const ks__rt_tensor *x = ctx->in[i];
        uint8_t *dst = (uint8_t *)y->data + offset * out_strides[p.axis] * (int64_t)es;
        ks__concat_path path;
        if ((st = ks__concat_quant_path(ctx, x, y, &path))) return st;
        if (path == KS__CONCAT_REQUANT) {
            /* Requantization clamps to the activation range itself. */
            concat_requant(dst, out_strides, x, y, lo, hi);
        } else {
            contiguous_strides(x->rank, x->dims, in_strides);
            copy_strided(dst, out_strides, x->data, in_strides, x->rank, x->dims, es);
        }
        offset += x->dims[p.axis];
    }
    if (act != KS_ACT_NONE) apply_act_inplace(y, act, ctx->node->fp[0], lo, hi);
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * SPLIT
 * ------------------------------------------------------------------------------------------- */

static ks_status split_run(ks__kernel_ctx *ctx) {
    ks__split_geom p;
    ks_status st = ks__split_geometry(ctx, &p);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    size_t es = ks_dtype_size(x->dtype);
    int64_t dims[KS_MAX_RANK], in_strides[KS_MAX_RANK], out_strides[KS_MAX_RANK];
    memcpy(dims, x->dims, sizeof(dims[0]) * (size_t)x->rank);
    contiguous_strides(x->rank, x->dims, in_strides);
    int64_t offset = 0;
    for (uint32_t i = 0; i < ctx->num_outputs; i++) {
        dims[p.axis] = p.sizes[i];
        if ((st = check_out_run(ctx, i, x->rank, dims))) return st;
        contiguous_strides(x->rank, dims, out_strides);
        const uint8_t *src = (const uint8_t *)x->data + offset * in_strides[p.axis] * (int64_t)es;
        copy_strided(ctx->out[i]->data, out_strides, src, in_strides, x->rank, dims, es);
        offset += p.sizes[i];
    }
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * PACK / UNPACK
 * ------------------------------------------------------------------------------------------- */

/* Strides of `full` (rank r+1, contiguous) with axis `axis` removed. */
static void strides_without_axis(int32_t full_rank, const int64_t *full_dims, int32_t axis,
                                 int64_t *strides, int64_t *axis_stride) {
    int64_t s[KS_MAX_RANK];
    contiguous_strides(full_rank, full_dims, s);
    for (int32_t d = 0, k = 0; d < full_rank; d++) {
        if (d == axis)
            *axis_stride = s[d];
        else
            strides[k++] = s[d];
    }
}

static ks_status pack_run(ks__kernel_ctx *ctx) {
    int32_t axis;
    int64_t dims[KS_MAX_RANK], dst_strides[KS_MAX_RANK], src_strides[KS_MAX_RANK], axis_stride = 0;
    ks_status st = ks__pack_geometry(ctx, &axis, dims);
    if (st) return st;
    int32_t rank = ctx->in[0]->rank;
    if ((st = check_out_run(ctx, 0, rank + 1, dims))) return st;
    size_t es = ks_dtype_size(ctx->in[0]->dtype);
    strides_without_axis(rank + 1, dims, axis, dst_strides, &axis_stride);
    for (uint32_t i = 0; i < ctx->num_inputs; i++) {
        const ks__rt_tensor *x = ctx->in[i];
        contiguous_strides(rank, x->dims, src_strides);
        uint8_t *dst = (uint8_t *)ctx->out[0]->data + (int64_t)i * axis_stride * (int64_t)es;
        copy_strided(dst, dst_strides, x->data, src_strides, rank, x->dims, es);
    }
    return KS_STATUS_OK;
}

static ks_status unpack_run(ks__kernel_ctx *ctx) {
    int32_t axis;
    int64_t dims[KS_MAX_RANK], dst_strides[KS_MAX_RANK], src_strides[KS_MAX_RANK], axis_stride = 0;
    ks_status st = ks__unpack_geometry(ctx, &axis, dims);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    int32_t rank = x->rank - 1;
    size_t es = ks_dtype_size(x->dtype);
    strides_without_axis(x->rank, x->dims, axis, src_strides, &axis_stride);
    contiguous_strides(rank, dims, dst_strides);
    for (uint32_t i = 0; i < ctx->num_outputs; i++) {
        if ((st = check_out_run(ctx, i, rank, dims))) return st;
        const uint8_t *src = (const uint8_t *)x->data + (int64_t)i * axis_stride * (int64_t)es;
        copy_strided(ctx->out[i]->data, dst_strides, src, src_strides, rank, dims, es);
    }
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * SLICE (ONNX Slice + TFLite StridedSlice masks)
 * ------------------------------------------------------------------------------------------- */

static ks_status slice_run(ks__kernel_ctx *ctx) {
    ks__slice_geom p;
    ks_status st = ks__slice_geometry(ctx, &p);
    if (st || (st = check_out_run(ctx, 0, p.out_rank, p.out_dims))) return st;
    const ks__rt_tensor *x = ctx->in[0];
    size_t es = ks_dtype_size(x->dtype);
    int64_t in_strides[KS_MAX_RANK], src_strides[KS_MAX_RANK], dst_strides[KS_MAX_RANK];
    contiguous_strides(x->rank, x->dims, in_strides);
    contiguous_strides(x->rank, p.count, dst_strides); /* shrunk axes have count 1 */
    int64_t base = 0;
    for (int32_t d = 0; d < x->rank; d++) {
        base += p.start[d] * in_strides[d];
        src_strides[d] = p.step[d] * in_strides[d];
    }
    if (ks__numel(x->rank, p.count) == 0) return KS_STATUS_OK;
    copy_strided(ctx->out[0]->data, dst_strides, (const uint8_t *)x->data + base * (int64_t)es,
                 src_strides, x->rank, p.count, es);
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * PAD
 * ------------------------------------------------------------------------------------------- */

/* Maps coordinate i (relative to the input, may lie outside [0, n)) into the input. n >= 1. */
static int64_t pad_map(int64_t i, int64_t n, int32_t mode) {
    if (i >= 0 && i < n) return i;
    if (mode == KS__PAD_FILL_EDGE || n == 1) return i < 0 ? 0 : n - 1;
    /* Reflection repeats with period 2(n-1) (reflect) or 2n (symmetric); folding by the period
     * matches numpy for pads wider than the axis. */
    int64_t period = mode == KS__PAD_FILL_REFLECT ? 2 * (n - 1) : 2 * n;
    int64_t m = i % period;
    if (m < 0) m += period;
    if (m >= n) m = mode == KS__PAD_FILL_REFLECT ? period - m : period - 1 - m;
    return m;
}

static void pad_fill_value(ks__kernel_ctx *ctx, uint8_t *fill) {
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    const ks__rt_tensor *value = ks__kernel_input(ctx, 2);
    if (value && value->data) {
        if (value->dtype == x->dtype)
            memcpy(fill, value->data, ks_dtype_size(x->dtype));
        else
            store_scalar(x->dtype, fill, ks__rt_get_f64(value, 0));
        return;
    }
    double v = ctx->node->fp[0];
    const ks__quant *q = y->quant;
    if (ks__dtype_is_qint(x->dtype) && q->count > 0 && q->scales && q->scales[0] > 0.0f)
        v = ks__rt_qzp(y) + round(v / q->scales[0]); /* real 0 -> the zero point */
    store_scalar(x->dtype, fill, v);
}

static ks_status pad_run(ks__kernel_ctx *ctx) {
    ks__pad_geom p;
    ks_status st = ks__pad_geometry(ctx, &p);
    const ks__rt_tensor *x = ctx->in[0];
    if (st || (st = check_out_run(ctx, 0, x->rank, p.out_dims))) return st;
    uint8_t *out = ctx->out[0]->data;
    size_t es = ks_dtype_size(x->dtype);
    int64_t n_out = ks__numel(x->rank, p.out_dims);
    int64_t in_strides[KS_MAX_RANK], out_strides[KS_MAX_RANK];
    contiguous_strides(x->rank, x->dims, in_strides);
    contiguous_strides(x->rank, p.out_dims, out_strides);
    if (p.mode == KS__PAD_FILL_CONSTANT) {
        uint8_t fill[8] = {0};
        pad_fill_value(ctx, fill);
        for (int64_t i = 0; i < n_out; i++)
            memcpy(out + i * (int64_t)es, fill, es);
        /* Copy the part of the input that survives (negative pads crop). */
        int64_t region[KS_MAX_RANK], src_off = 0, dst_off = 0;
        for (int32_t d = 0; d < x->rank; d++) {
            int64_t src0 = p.before[d] < 0 ? -p.before[d] : 0;
            int64_t dst0 = p.before[d] > 0 ? p.before[d] : 0;
            int64_t len = x->dims[d] - src0;
            if (len > p.out_dims[d] - dst0) len = p.out_dims[d] - dst0;
            region[d] = len > 0 ? len : 0;
            src_off += src0 * in_strides[d];
            dst_off += dst0 * out_strides[d];
        }
        if (ks__numel(x->rank, region) > 0)
            copy_strided(out + dst_off * (int64_t)es, out_strides,
                         (const uint8_t *)x->data + src_off * (int64_t)es, in_strides, x->rank,
                         region, es);
        return KS_STATUS_OK;
    }
    int64_t idx[KS_MAX_RANK] = {0};
    const uint8_t *in = x->data;
    for (int64_t i = 0; i < n_out; i++) {
        int64_t src = 0;
        for (int32_t d = 0; d < x->rank; d++)
            src += pad_map(idx[d] - p.before[d], x->dims[d], p.mode) * in_strides[d];
        memcpy(out + i * (int64_t)es, in + src * (int64_t)es, es);
        for (int32_t d = x->rank - 1; d >= 0; d--) {
            if (++idx[d] < p.out_dims[d]) break;
            idx[d] = 0;
        }
    }
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * GATHER / GATHER_ND
 * ------------------------------------------------------------------------------------------- */

static ks_status gather_run(ks__kernel_ctx *ctx) {
    int32_t axis = 0, rank = 0;
    int64_t dims[KS_MAX_RANK];
    ks_status st = ks__gather_geometry(ctx, &axis, &rank, dims);
    if (st || (st = check_out_run(ctx, 0, rank, dims))) return st;
    const ks__rt_tensor *x = ctx->in[0], *ind = ctx->in[1];
    int64_t outer = 1, inner = 1, axis_dim = x->dims[axis];
    for (int32_t d = 0; d < axis; d++)
        outer *= x->dims[d];
    for (int32_t d = axis + 1; d < x->rank; d++)
        inner *= x->dims[d];
    int64_t num_idx = ks__rt_numel(ind);
    /* Validate every index before writing so a bad index leaves no half-written output. */
    for (int64_t j = 0; j < num_idx; j++) {
        int64_t v = ks__rt_get_int(ind, j);
        if (v < -axis_dim || v >= axis_dim)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_ARGUMENT,
                                    "index %lld at position %lld of indices '%s' is out of range "
                                    "for axis %d of size %lld",
                                    (long long)v, (long long)j, ks__rt_name(ind), axis,
                                    (long long)axis_dim);
    }
    size_t es = ks_dtype_size(x->dtype);
    size_t block_bytes = (size_t)inner * es;
    if (block_bytes == 0 || outer == 0) return KS_STATUS_OK; /* data may be NULL when empty */
    const uint8_t *src = x->data;
    uint8_t *dst = ctx->out[0]->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j = 0; j < num_idx; j++) {
            int64_t v = ks__rt_get_int(ind, j);
            if (v < 0) v += axis_dim;
            memcpy(dst + ((o * num_idx + j) * inner) * (int64_t)es,
                   src + ((o * axis_dim + v) * inner) * (int64_t)es, block_bytes);
        }
    }
    return KS_STATUS_OK;
}

static ks_status gather_nd_run(ks__kernel_ctx *ctx) {
    int32_t rank;
    int64_t dims[KS_MAX_RANK];
    ks_status st = ks__gather_nd_geometry(ctx, &rank, dims);
    if (st || (st = check_out_run(ctx, 0, rank, dims))) return st;
    const ks__rt_tensor *x = ctx->in[0], *ind = ctx->in[1];
    int32_t k = (int32_t)ind->dims[ind->rank - 1];
    int64_t num_slices = ks__numel(ind->rank - 1, ind->dims);
    int64_t slice = ks__numel(x->rank - k, x->dims + k);
    /* TFLite rejects out-of-range indices (no negative wrap); check all before writing. */
    for (int64_t s = 0; s < num_slices; s++) {
        for (int32_t j = 0; j < k; j++) {
            int64_t v = ks__rt_get_int(ind, s * k + j);
            if (v < 0 || v >= x->dims[j])
                return ks__kernel_error(ctx, KS_STATUS_INVALID_ARGUMENT,
                                        "index %lld (entry %d of index tuple %lld in '%s') is out "
                                        "of range for dim %d of params '%s' (size %lld)",
                                        (long long)v, j, (long long)s, ks__rt_name(ind), j,
                                        ks__rt_name(x), (long long)x->dims[j]);
        }
    }
    size_t es = ks_dtype_size(x->dtype);
    const uint8_t *src = x->data;
    uint8_t *dst = ctx->out[0]->data;
    if (slice == 0) return KS_STATUS_OK; /* data may be NULL when empty */
    for (int64_t s = 0; s < num_slices; s++) {
        int64_t off = 0;
        for (int32_t j = 0; j < k; j++)
            off = off * x->dims[j] + ks__rt_get_int(ind, s * k + j);
        memcpy(dst + s * slice * (int64_t)es, src + off * slice * (int64_t)es, (size_t)slice * es);
    }
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * EXPAND / TILE
 * ------------------------------------------------------------------------------------------- */

static ks_status expand_run(ks__kernel_ctx *ctx) {
    int32_t rank;
    int64_t dims[KS_MAX_RANK], in_strides[KS_MAX_RANK], src_strides[KS_MAX_RANK],
        dst_strides[KS_MAX_RANK];
    ks_status st = ks__expand_geometry(ctx, &rank, dims);
    if (st || (st = check_out_run(ctx, 0, rank, dims))) return st;
    const ks__rt_tensor *x = ctx->in[0];
    contiguous_strides(x->rank, x->dims, in_strides);
    contiguous_strides(rank, dims, dst_strides);
    for (int32_t d = 0; d < rank; d++) {
        int32_t dx = d - (rank - x->rank);
        src_strides[d] = (dx >= 0 && x->dims[dx] != 1) ? in_strides[dx] : 0;
    }
    copy_strided(ctx->out[0]->data, dst_strides, x->data, src_strides, rank, dims,
                 ks_dtype_size(x->dtype));
    return KS_STATUS_OK;
}

static ks_status tile_run(ks__kernel_ctx *ctx) {
    int64_t reps[KS_MAX_RANK], dims[KS_MAX_RANK], in_strides[KS_MAX_RANK];
    ks_status st = ks__tile_geometry(ctx, reps, dims);
    const ks__rt_tensor *x = ctx->in[0];
    if (st || (st = check_out_run(ctx, 0, x->rank, dims))) return st;
    /* Output axis d of size reps*n is the row-major pair (repeat, position): a 2*rank walk with
     * source stride 0 over the repeat axis. */
    int64_t wdims[WALK_MAX_RANK], src_strides[WALK_MAX_RANK], dst_strides[WALK_MAX_RANK];
    contiguous_strides(x->rank, x->dims, in_strides);
    for (int32_t d = 0; d < x->rank; d++) {
        wdims[2 * d] = reps[d];
        wdims[2 * d + 1] = x->dims[d];
        src_strides[2 * d] = 0;
        src_strides[2 * d + 1] = in_strides[d];
    }
    contiguous_strides(2 * x->rank, wdims, dst_strides);
    copy_strided(ctx->out[0]->data, dst_strides, x->data, src_strides, 2 * x->rank, wdims,
                 ks_dtype_size(x->dtype));
    return KS_STATUS_OK;
}

/* --------------------------------------------------------------------------------------------- */

void ks__ref_register_data(ks__kernel_table *t) {
    KS__REF_REG(t, RESHAPE, NULL, run_copy_view);
    KS__REF_REG(t, SQUEEZE, NULL, run_copy_view);
    KS__REF_REG(t, UNSQUEEZE, NULL, run_copy_view);
    KS__REF_REG(t, SHAPE, NULL, shape_run);
    KS__REF_REG(t, TRANSPOSE, NULL, transpose_run);
    KS__REF_REG(t, CONCAT, NULL, concat_run);
    KS__REF_REG(t, SPLIT, NULL, split_run);
    KS__REF_REG(t, PACK, NULL, pack_run);
    KS__REF_REG(t, UNPACK, NULL, unpack_run);
    KS__REF_REG(t, SLICE, NULL, slice_run);
    KS__REF_REG(t, PAD, NULL, pad_run);
    KS__REF_REG(t, GATHER, NULL, gather_run);
    KS__REF_REG(t, GATHER_ND, NULL, gather_nd_run);
    KS__REF_REG(t, EXPAND, NULL, expand_run);
    KS__REF_REG(t, TILE, NULL, tile_run);
}
