/* Reference kernels for data-movement and shape ops: RESHAPE, TRANSPOSE, CONCAT, SPLIT, SLICE,
 * PAD, PACK, UNPACK, GATHER, GATHER_ND, SHAPE, SQUEEZE, UNSQUEEZE, EXPAND, TILE.
 *
 * Every op moves whole elements, so the kernels work on bytes (element size from the dtype) and
 * are dtype-agnostic. The only arithmetic is CONCAT's requantization and fused activation, and
 * PAD's constant value.
 *
 * Most ops reduce to one strided copy: an N-d walk over the output region with independent
 * element strides for source and destination (negative strides for reversed slices, zero strides
 * for broadcast). TILE uses the same walk on a 2*rank view. Geometry is computed by one "plan"
 * function per op that both infer() and run() call, so the two cannot disagree; run() re-checks
 * that the output shape it is handed is the one the plan produces.
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

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Walks use up to 2*KS_MAX_RANK axes (TILE splits each axis into repeat x extent). */
#define WALK_MAX_RANK (2 * KS_MAX_RANK)
/* SPLIT sizes / outputs and CONCAT / PACK inputs are bounded by the op arity (ops.inc: 64). */
#define MAX_PARTS 64

/* ---------------------------------------------------------------------------------------------
 * Common helpers
 * ------------------------------------------------------------------------------------------- */

static const char *tname(const ks__rt_tensor *t) {
    return (t && t->def && t->def->name) ? t->def->name : "?";
}

static void format_dims(char *buf, size_t cap, int32_t rank, const int64_t *dims) {
    size_t n = 0;
    if (cap == 0) return;
    buf[0] = '\0';
    int w = snprintf(buf, cap, "[");
    if (w < 0) return;
    n = (size_t)w;
    for (int32_t i = 0; i < rank && n < cap; i++) {
        w = snprintf(buf + n, cap - n, i ? ",%lld" : "%lld", (long long)dims[i]);
        if (w < 0) return;
        n += (size_t)w;
    }
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* Strides are products of dims, so even an empty tensor must have a product of its non-zero dims
 * that fits (ks__numel accepts [0, INT64_MAX]). Same bound as ks__numel. */
static bool shape_fits(int32_t rank, const int64_t *dims) {
    int64_t n = 1;
    for (int32_t d = 0; d < rank; d++) {
        if (dims[d] < 0) return false;
        if (dims[d] == 0) continue;
        if (n > INT64_MAX / 4 / dims[d]) return false;
        n *= dims[d];
    }
    return true;
}

static ks__rt_tensor *input_at(const ks__kernel_ctx *ctx, uint32_t i) {
    return i < ctx->num_inputs ? ctx->in[i] : NULL;
}

/* Normalizes a possibly negative axis against `rank` (valid range [-rank, rank-1]). */
static ks_status norm_axis(ks__kernel_ctx *ctx, int64_t axis, int32_t rank, const char *what,
                           int32_t *axis_out) {
    if (axis < -(int64_t)rank || axis >= (int64_t)rank)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "%s %lld is out of range for rank %d (valid: %d..%d)", what,
                                (long long)axis, rank, -rank, rank - 1);
    *axis_out = (int32_t)(axis < 0 ? axis + rank : axis);
    return KS_STATUS_OK;
}

/* Checks that a data input exists and has a sane, fully known shape. */
static ks_status check_input(ks__kernel_ctx *ctx, uint32_t i, const char *role) {
    const ks__rt_tensor *t = input_at(ctx, i);
    if (!t) return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "missing %s input %u", role, i);
    if (ks_dtype_size(t->dtype) == 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "%s input '%s' has invalid dtype %d",
                                role, tname(t), (int)t->dtype);
    if (t->rank < 0 || t->rank > KS_MAX_RANK)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "%s input '%s' has rank %d (supported: 0..%d)", role, tname(t),
                                t->rank, KS_MAX_RANK);
    for (int32_t d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "%s input '%s' has unknown or negative dim %d (%lld)", role,
                                    tname(t), d, (long long)t->dims[d]);
    }
    if (!shape_fits(t->rank, t->dims))
        return ks__kernel_error(ctx, KS_STATUS_LIMIT_EXCEEDED,
                                "%s input '%s' has too many elements", role, tname(t));
    return KS_STATUS_OK;
}

static ks_status check_num_outputs(ks__kernel_ctx *ctx, uint32_t min, uint32_t max) {
    if (ctx->num_outputs < min || ctx->num_outputs > max)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "has %u outputs, expected %u..%u",
                                ctx->num_outputs, min, max);
    for (uint32_t i = 0; i < ctx->num_outputs; i++) {
        if (!ctx->out[i])
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "output %u is missing", i);
    }
    return KS_STATUS_OK;
}

/* The session pre-fills output dtypes from the graph; data ops must not change the dtype. */
static ks_status set_out_dtype(ks__kernel_ctx *ctx, uint32_t i, ks_dtype want) {
    ks__rt_tensor *o = ctx->out[i];
    if (o->dtype == KS_DTYPE_INVALID) o->dtype = want;
    if (o->dtype != want)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "output '%s' has dtype %s but the op produces %s", tname(o),
                                ks_dtype_string(o->dtype), ks_dtype_string(want));
    return KS_STATUS_OK;
}

static ks_status set_out_shape(ks__kernel_ctx *ctx, uint32_t i, int32_t rank, const int64_t *dims) {
    ks__rt_tensor *o = ctx->out[i];
    if (rank < 0 || rank > KS_MAX_RANK)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "output '%s' would have rank %d (supported: 0..%d)", tname(o), rank,
                                KS_MAX_RANK);
    if (!shape_fits(rank, dims)) {
        char buf[160];
        format_dims(buf, sizeof(buf), rank, dims);
        return ks__kernel_error(ctx, KS_STATUS_LIMIT_EXCEEDED,
                                "output '%s' shape %s is invalid or too large", tname(o), buf);
    }
    ks__rt_set_shape(o, o->dtype, rank, dims);
    return KS_STATUS_OK;
}

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
        format_dims(want, sizeof(want), rank, dims);
        format_dims(got, sizeof(got), o->rank, o->dims);
        return ks__kernel_error(ctx, KS_STATUS_INVALID_STATE,
                                "output '%s' is %s (%zu bytes) at run, planned %s; reshape first",
                                tname(o), got, o->size_bytes, want);
    }
    return KS_STATUS_OK;
}

/* Reads a 0-D/1-D I32/I64 parameter tensor whose value must be known now. In infer() that is
 * only the case for constants and values computed at reshape time. */
static ks_status read_ints(ks__kernel_ctx *ctx, const ks__rt_tensor *t, const char *role,
                           int64_t max_count, int64_t *vals, int32_t *count_out) {
    if (t->dtype != KS_DTYPE_I32 && t->dtype != KS_DTYPE_I64)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "%s input '%s' must be i32 or i64, got %s", role, tname(t),
                                ks_dtype_string(t->dtype));
    if (t->rank > 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "%s input '%s' must be 1-D, has rank %d", role, tname(t), t->rank);
    int64_t n = ks__rt_numel(t);
    if (n < 0 || n > max_count)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "%s input '%s' has %lld entries, at most %lld allowed", role,
                                tname(t), (long long)n, (long long)max_count);
    if (!t->data && n > 0)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "%s input '%s' is only known at run time; it must be a constant or "
                                "computable at reshape",
                                role, tname(t));
    for (int64_t i = 0; i < n; i++)
        vals[i] = ks__rt_get_int(t, i);
    *count_out = (int32_t)n;
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

static bool is_quantized_int(ks_dtype dt) {
    return dt == KS_DTYPE_U8 || dt == KS_DTYPE_I8 || dt == KS_DTYPE_I16;
}

static void int_range(ks_dtype dt, int64_t *lo, int64_t *hi) {
    switch (dt) {
    case KS_DTYPE_U8:
        *lo = 0;
        *hi = 255;
        break;
    case KS_DTYPE_I8:
        *lo = -128;
        *hi = 127;
        break;
    case KS_DTYPE_I16:
        *lo = INT16_MIN;
        *hi = INT16_MAX;
        break;
    case KS_DTYPE_I32:
        *lo = INT32_MIN;
        *hi = INT32_MAX;
        break;
    case KS_DTYPE_BOOL:
        *lo = 0;
        *hi = 1;
        break;
    default:
        *lo = INT64_MIN;
        *hi = INT64_MAX;
        break;
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
    int64_t lo, hi;
    int_range(dt, &lo, &hi);
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

static int32_t quant_zp(const ks__quant *q) {
    return q->zero_points ? q->zero_points[0] : 0;
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
                                tname(y), (long long)ks__rt_numel(y), tname(x), (long long)n);
    size_t bytes = (size_t)n * ks_dtype_size(x->dtype);
    if (bytes && y->data != x->data) memmove(y->data, x->data, bytes);
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * RESHAPE
 * ------------------------------------------------------------------------------------------- */

static ks_status reshape_infer(ks__kernel_ctx *ctx) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, 1))) return st;
    const ks__rt_tensor *x = ctx->in[0];
    const ks__rt_tensor *shape = input_at(ctx, 1);
    const int32_t *ip = ctx->node->ip;
    int64_t req[KS_MAX_RANK], dims[KS_MAX_RANK];
    int32_t rank = 0;
    if (shape) {
        if ((st = read_ints(ctx, shape, "shape", KS_MAX_RANK, req, &rank))) return st;
    } else {
        if (ip[0] < 0 || ip[0] > KS_MAX_RANK)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                    "target rank param is %d (supported: 0..%d)", ip[0],
                                    KS_MAX_RANK);
        rank = ip[0];
        for (int32_t i = 0; i < rank; i++)
            req[i] = ip[1 + i];
    }
    bool allow_zero = ip[9] != 0;
    int32_t infer_at = -1;
    bool has_zero = false;
    int64_t known = 1;
    for (int32_t i = 0; i < rank; i++) {
        int64_t v = req[i];
        if (v == -1) {
            if (infer_at >= 0)
                return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                        "target shape has more than one -1 (entries %d and %d)",
                                        infer_at, i);
            infer_at = i;
            dims[i] = 1;
            continue;
        }
        if (v == 0 && !allow_zero) {
            if (i >= x->rank)
                return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                        "target shape entry %d is 0 (copy input dim) but input "
                                        "'%s' has rank %d",
                                        i, tname(x), x->rank);
            v = x->dims[i];
        }
        if (v < 0)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "target shape entry %d is %lld",
                                    i, (long long)v);
        if (v == 0) has_zero = true;
        dims[i] = v;
        if (v != 0 && known > INT64_MAX / 4 / v)
            return ks__kernel_error(ctx, KS_STATUS_LIMIT_EXCEEDED, "target shape is too large");
        known *= v;
    }
    int64_t numel = ks__rt_numel(x);
    if (infer_at >= 0) {
        if (allow_zero && has_zero)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                    "target shape mixes -1 and a literal 0 (allowzero)");
        if (known == 0 || numel % known != 0) {
            char buf[160];
            format_dims(buf, sizeof(buf), rank, req);
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "element count mismatch: input '%s' has %lld elements, which "
                                    "target shape %s cannot hold",
                                    tname(x), (long long)numel, buf);
        }
        dims[infer_at] = numel / known;
    } else if (known != numel) {
        char in_buf[160], out_buf[160];
        format_dims(in_buf, sizeof(in_buf), x->rank, x->dims);
        format_dims(out_buf, sizeof(out_buf), rank, dims);
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "element count mismatch: input '%s' %s has %lld elements, target "
                                "shape %s has %lld",
                                tname(x), in_buf, (long long)numel, out_buf, (long long)known);
    }
    if ((st = set_out_dtype(ctx, 0, x->dtype))) return st;
    return set_out_shape(ctx, 0, rank, dims);
}

/* ---------------------------------------------------------------------------------------------
 * SQUEEZE / UNSQUEEZE
 * ------------------------------------------------------------------------------------------- */

static ks_status squeeze_infer(ks__kernel_ctx *ctx) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, 1))) return st;
    const ks__rt_tensor *x = ctx->in[0];
    const int32_t *ip = ctx->node->ip;
    bool drop[KS_MAX_RANK] = {false};
    if (ip[0] < 0 || ip[0] > KS_MAX_RANK)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "num_axes param is %d (max %d)",
                                ip[0], KS_MAX_RANK);
    if (ip[0] == 0) {
        for (int32_t d = 0; d < x->rank; d++)
            drop[d] = x->dims[d] == 1;
    } else {
        for (int32_t i = 0; i < ip[0]; i++) {
            int32_t a = 0;
            if ((st = norm_axis(ctx, ip[1 + i], x->rank, "squeeze axis", &a))) return st;
            if (x->dims[a] != 1)
                return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                        "cannot squeeze axis %d of input '%s': size is %lld, not 1",
                                        a, tname(x), (long long)x->dims[a]);
            drop[a] = true;
        }
    }
    int64_t dims[KS_MAX_RANK];
    int32_t rank = 0;
    for (int32_t d = 0; d < x->rank; d++) {
        if (!drop[d]) dims[rank++] = x->dims[d];
    }
    if ((st = set_out_dtype(ctx, 0, x->dtype))) return st;
    return set_out_shape(ctx, 0, rank, dims);
}

static ks_status unsqueeze_infer(ks__kernel_ctx *ctx) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, 1))) return st;
    const ks__rt_tensor *x = ctx->in[0];
    const int32_t *ip = ctx->node->ip;
    if (ip[0] < 1 || ip[0] > KS_MAX_RANK)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "num_axes param is %d (1..%d)", ip[0],
                                KS_MAX_RANK);
    int32_t rank = x->rank + ip[0];
    if (rank > KS_MAX_RANK)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "unsqueezing input '%s' of rank %d by %d axes exceeds rank %d",
                                tname(x), x->rank, ip[0], KS_MAX_RANK);
    bool ins[KS_MAX_RANK] = {false};
    for (int32_t i = 0; i < ip[0]; i++) {
        int32_t a;
        if ((st = norm_axis(ctx, ip[1 + i], rank, "unsqueeze axis", &a))) return st;
        if (ins[a])
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                    "unsqueeze axis %d is listed twice", a);
        ins[a] = true;
    }
    int64_t dims[KS_MAX_RANK];
    for (int32_t d = 0, src = 0; d < rank; d++)
        dims[d] = ins[d] ? 1 : x->dims[src++];
    if ((st = set_out_dtype(ctx, 0, x->dtype))) return st;
    return set_out_shape(ctx, 0, rank, dims);
}

/* ---------------------------------------------------------------------------------------------
 * SHAPE
 * ------------------------------------------------------------------------------------------- */

static ks_status shape_infer(ks__kernel_ctx *ctx) {
    /* Only the input's dims are needed (its data may be NULL even at run). */
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, 1))) return st;
    ks__rt_tensor *y = ctx->out[0];
    if (y->dtype == KS_DTYPE_INVALID) y->dtype = KS_DTYPE_I64;
    if (y->dtype != KS_DTYPE_I32 && y->dtype != KS_DTYPE_I64)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "output '%s' has dtype %s; shape produces i32 or i64", tname(y),
                                ks_dtype_string(y->dtype));
    int64_t dims[1] = {ctx->in[0]->rank};
    return set_out_shape(ctx, 0, 1, dims);
}

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
                                        d, tname(x), (long long)x->dims[d], tname(y));
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

static ks_status transpose_plan(ks__kernel_ctx *ctx, int32_t *perm, int64_t *out_dims) {
    const ks__rt_tensor *x = ctx->in[0];
    const int32_t *ip = ctx->node->ip;
    if (ip[0] == 0) {
        /* No perm given: ONNX default, reverse the axes. */
        for (int32_t d = 0; d < x->rank; d++)
            perm[d] = x->rank - 1 - d;
    } else {
        if (ip[0] != x->rank)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "perm has %d entries but input '%s' has rank %d", ip[0],
                                    tname(x), x->rank);
        bool seen[KS_MAX_RANK] = {false};
        for (int32_t d = 0; d < x->rank; d++) {
            int32_t p = ip[1 + d];
            if (p < 0 || p >= x->rank || seen[p])
                return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                        "perm entry %d is %d: not a permutation of 0..%d", d, p,
                                        x->rank - 1);
            seen[p] = true;
            perm[d] = p;
        }
    }
    for (int32_t d = 0; d < x->rank; d++)
        out_dims[d] = x->dims[perm[d]];
    return KS_STATUS_OK;
}

static ks_status transpose_infer(ks__kernel_ctx *ctx) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, 1))) return st;
    int32_t perm[KS_MAX_RANK];
    int64_t dims[KS_MAX_RANK];
    if ((st = transpose_plan(ctx, perm, dims))) return st;
    if ((st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    return set_out_shape(ctx, 0, ctx->in[0]->rank, dims);
}

static ks_status transpose_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    int32_t perm[KS_MAX_RANK];
    int64_t dims[KS_MAX_RANK], in_strides[KS_MAX_RANK], src_strides[KS_MAX_RANK],
        dst_strides[KS_MAX_RANK];
    ks_status st = transpose_plan(ctx, perm, dims);
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

typedef enum quant_path { QP_COPY, QP_REQUANT } quant_path;

/* Decides how input i reaches the output: a byte copy when the quantization matches (or
 * neither side is quantized), otherwise TFLite-style requantization (per-tensor only). */
static ks_status concat_quant_path(ks__kernel_ctx *ctx, const ks__rt_tensor *x,
                                   const ks__rt_tensor *y, quant_path *path) {
    const ks__quant *qi = x->quant, *qo = y->quant;
    *path = QP_COPY;
    if (!is_quantized_int(x->dtype) || qi->count == 0 || qo->count == 0) {
        if (is_quantized_int(x->dtype) && (qi->count != 0) != (qo->count != 0))
            return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                    "input '%s' is %squantized but output '%s' is %squantized",
                                    tname(x), qi->count ? "" : "not ", tname(y),
                                    qo->count ? "" : "not ");
        return KS_STATUS_OK;
    }
    if (!qi->scales || !qo->scales)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "quantized input '%s' or output '%s' lacks scales", tname(x),
                                tname(y));
    bool same = qi->count == qo->count;
    for (uint32_t c = 0; same && c < qi->count; c++) {
        same = qi->scales[c] == qo->scales[c] && (qi->zero_points ? qi->zero_points[c] : 0) ==
                                                     (qo->zero_points ? qo->zero_points[c] : 0);
    }
    if (same) return KS_STATUS_OK;
    if (qi->count != 1 || qo->count != 1)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "per-channel quantized input '%s' differs from output '%s'; only "
                                "per-tensor requantization is supported",
                                tname(x), tname(y));
    if (!(qo->scales[0] > 0.0f) || !isfinite(qo->scales[0]) || !isfinite(qi->scales[0]))
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "cannot requantize input '%s' (scale %g) to output '%s' (scale %g)",
                                tname(x), (double)qi->scales[0], tname(y), (double)qo->scales[0]);
    *path = QP_REQUANT;
    return KS_STATUS_OK;
}

/* Clamp bounds of a fused activation in the quantized domain (TFLite
 * CalculateActivationRangeQuantized). Returns false for activations that are not clamps. */
static bool quant_act_range(int32_t act, ks_dtype dt, const ks__quant *q, int64_t *lo,
                            int64_t *hi) {
    int_range(dt, lo, hi);
    if (act == KS_ACT_NONE) return true;
    if (q->count == 0 || !q->scales) return false;
    double s = q->scales[0];
    if (!(s > 0.0) || !isfinite(s)) return false;
    double zp = quant_zp(q), fmin = 0.0, fmax = INFINITY;
    switch (act) {
    case KS_ACT_RELU:
        break;
    case KS_ACT_RELU6:
        fmax = 6.0;
        break;
    case KS_ACT_RELU_N1_TO_1:
        fmin = -1.0;
        fmax = 1.0;
        break;
    default:
        return false;
    }
    /* Compared in double so a tiny scale cannot overflow an integer conversion. */
    double qmin = zp + round(fmin / s), qmax = zp + round(fmax / s);
    if (qmin > (double)*lo) *lo = qmin < (double)*hi ? (int64_t)qmin : *hi;
    if (qmax < (double)*hi) *hi = qmax > (double)*lo ? (int64_t)qmax : *lo;
    return true;
}

typedef struct concat_plan {
    int32_t axis;
    int32_t rank;
    int64_t out_dims[KS_MAX_RANK];
} concat_plan;

static ks_status concat_plan_make(ks__kernel_ctx *ctx, concat_plan *p) {
    ks_status st;
    if (ctx->num_inputs < 1 || ctx->num_inputs > MAX_PARTS)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "has %u inputs (1..%d)",
                                ctx->num_inputs, MAX_PARTS);
    if ((st = check_num_outputs(ctx, 1, 1))) return st;
    for (uint32_t i = 0; i < ctx->num_inputs; i++) {
        if ((st = check_input(ctx, i, "data"))) return st;
    }
    const ks__rt_tensor *x0 = ctx->in[0];
    p->rank = x0->rank;
    if (p->rank == 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input '%s' is a scalar; concat needs rank >= 1", tname(x0));
    if ((st = norm_axis(ctx, ctx->node->ip[0], p->rank, "axis", &p->axis))) return st;
    for (int32_t d = 0; d < p->rank; d++)
        p->out_dims[d] = x0->dims[d];
    p->out_dims[p->axis] = 0;
    for (uint32_t i = 0; i < ctx->num_inputs; i++) {
        const ks__rt_tensor *x = ctx->in[i];
        if (x->dtype != x0->dtype)
            return ks__kernel_error(
                ctx, KS_STATUS_INVALID_MODEL, "input %u '%s' has dtype %s, input 0 '%s' has %s", i,
                tname(x), ks_dtype_string(x->dtype), tname(x0), ks_dtype_string(x0->dtype));
        if (x->rank != p->rank)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "input %u '%s' has rank %d, input 0 '%s' has rank %d", i,
                                    tname(x), x->rank, tname(x0), p->rank);
        for (int32_t d = 0; d < p->rank; d++) {
            if (d != p->axis && x->dims[d] != x0->dims[d])
                return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                        "input %u '%s' has dim %d = %lld, input 0 '%s' has %lld "
                                        "(only axis %d may differ)",
                                        i, tname(x), d, (long long)x->dims[d], tname(x0),
                                        (long long)x0->dims[d], p->axis);
        }
        p->out_dims[p->axis] += x->dims[p->axis];
    }
    return KS_STATUS_OK;
}

static ks_status concat_check_act(ks__kernel_ctx *ctx, ks_dtype dt, const ks__quant *q) {
    int32_t act = ctx->node->ip[1];
    if (act == KS_ACT_NONE) return KS_STATUS_OK;
    if (act < 0 || act >= KS_ACT_COUNT || act == KS_ACT_PRELU || act == KS_ACT_TABLE)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "unknown fused activation %d", act);
    if (dt == KS_DTYPE_F32 || dt == KS_DTYPE_F16) return KS_STATUS_OK;
    int64_t lo, hi;
    if (is_quantized_int(dt) && q->count == 1 && quant_act_range(act, dt, q, &lo, &hi))
        return KS_STATUS_OK;
    return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                            "fused activation %d is not supported for dtype %s%s", act,
                            ks_dtype_string(dt), q->count ? " (quantized)" : "");
}

static ks_status concat_infer(ks__kernel_ctx *ctx) {
    concat_plan p;
    ks_status st = concat_plan_make(ctx, &p);
    if (st || (st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    for (uint32_t i = 0; i < ctx->num_inputs; i++) {
        quant_path path;
        if ((st = concat_quant_path(ctx, ctx->in[i], ctx->out[0], &path))) return st;
    }
    if ((st = concat_check_act(ctx, ctx->out[0]->dtype, ctx->out[0]->quant))) return st;
    return set_out_shape(ctx, 0, p.rank, p.out_dims);
}

/* TFLite reference ConcatenationWithScaling: q_out = round(q_in * s + bias) + zp_out with
 * s = s_in / s_out and bias = -zp_in * s, computed in float like the reference. */
static void concat_requant(uint8_t *dst, const int64_t *dst_strides, const ks__rt_tensor *x,
                           const ks__quant *qo, int64_t lo, int64_t hi) {
    const ks__quant *qi = x->quant;
    size_t es = ks_dtype_size(x->dtype);
    const float scale = qi->scales[0] * (1.0f / qo->scales[0]);
    const float bias = -(float)quant_zp(qi) * scale;
    const int64_t zp_out = quant_zp(qo);
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
    concat_plan p;
    ks_status st = concat_plan_make(ctx, &p);
    if (st || (st = check_out_run(ctx, 0, p.rank, p.out_dims))) return st;
    if ((st = concat_check_act(ctx, ctx->out[0]->dtype, ctx->out[0]->quant))) return st;
    ks__rt_tensor *y = ctx->out[0];
    size_t es = ks_dtype_size(y->dtype);
    int32_t act = ctx->node->ip[1];
    int64_t lo = 0, hi = 0;
    if (is_quantized_int(y->dtype) && y->quant->count == 1)
        quant_act_range(act, y->dtype, y->quant, &lo, &hi);
    else
        int_range(y->dtype, &lo, &hi);
    int64_t out_strides[KS_MAX_RANK], in_strides[KS_MAX_RANK];
    contiguous_strides(p.rank, p.out_dims, out_strides);
    int64_t offset = 0;
    for (uint32_t i = 0; i < ctx->num_inputs; i++) {
        const ks__rt_tensor *x = ctx->in[i];
        uint8_t *dst = (uint8_t *)y->data + offset * out_strides[p.axis] * (int64_t)es;
        quant_path path;
        if ((st = concat_quant_path(ctx, x, y, &path))) return st;
        if (path == QP_REQUANT) {
            /* Requantization clamps to the activation range itself. */
            concat_requant(dst, out_strides, x, y->quant, lo, hi);
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

typedef struct split_plan {
    int32_t axis;
    int64_t sizes[MAX_PARTS];
} split_plan;

static ks_status split_plan_make(ks__kernel_ctx *ctx, split_plan *p) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, MAX_PARTS))) return st;
    const ks__rt_tensor *x = ctx->in[0];
    if (x->rank == 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input '%s' is a scalar; split needs rank >= 1", tname(x));
    if ((st = norm_axis(ctx, ctx->node->ip[0], x->rank, "axis", &p->axis))) return st;
    int64_t dim = x->dims[p->axis];
    uint32_t n = ctx->num_outputs;
    const ks__rt_tensor *sizes = input_at(ctx, 1);
    if (!sizes) {
        /* Equal parts; an uneven split gives the last output the remainder (ONNX opset 18). */
        int64_t chunk = (dim + (int64_t)n - 1) / (int64_t)n;
        int64_t last = dim - chunk * (int64_t)(n - 1);
        if (last < 0)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "axis %d of input '%s' (size %lld) cannot be split into %u "
                                    "parts",
                                    p->axis, tname(x), (long long)dim, n);
        for (uint32_t i = 0; i < n; i++)
            p->sizes[i] = i + 1 < n ? chunk : last;
        return KS_STATUS_OK;
    }
    int32_t count;
    if ((st = read_ints(ctx, sizes, "sizes", MAX_PARTS, p->sizes, &count))) return st;
    if ((uint32_t)count != n)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "sizes input '%s' has %d entries for %u outputs", tname(sizes),
                                count, n);
    int32_t infer_at = -1;
    int64_t sum = 0;
    for (int32_t i = 0; i < count; i++) {
        int64_t v = p->sizes[i];
        if (v == -1 && infer_at < 0) {
            infer_at = i;
            continue;
        }
        if (v < 0 || v > dim)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                    "sizes entry %d is %lld (axis %d has size %lld; -1 allowed "
                                    "once)",
                                    i, (long long)v, p->axis, (long long)dim);
        sum += v;
    }
    if (infer_at >= 0) {
        if (sum > dim)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "sizes sum to %lld, more than axis %d size %lld",
                                    (long long)sum, p->axis, (long long)dim);
        p->sizes[infer_at] = dim - sum;
    } else if (sum != dim) {
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "sizes sum to %lld but axis %d of input '%s' has size %lld",
                                (long long)sum, p->axis, tname(x), (long long)dim);
    }
    return KS_STATUS_OK;
}

static ks_status split_infer(ks__kernel_ctx *ctx) {
    split_plan p;
    ks_status st = split_plan_make(ctx, &p);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    int64_t dims[KS_MAX_RANK];
    memcpy(dims, x->dims, sizeof(dims[0]) * (size_t)x->rank);
    for (uint32_t i = 0; i < ctx->num_outputs; i++) {
        dims[p.axis] = p.sizes[i];
        if ((st = set_out_dtype(ctx, i, x->dtype))) return st;
        if ((st = set_out_shape(ctx, i, x->rank, dims))) return st;
    }
    return KS_STATUS_OK;
}

static ks_status split_run(ks__kernel_ctx *ctx) {
    split_plan p;
    ks_status st = split_plan_make(ctx, &p);
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

static ks_status pack_plan(ks__kernel_ctx *ctx, int32_t *axis, int64_t *out_dims) {
    ks_status st;
    if (ctx->num_inputs < 1 || ctx->num_inputs > MAX_PARTS)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "has %u inputs (1..%d)",
                                ctx->num_inputs, MAX_PARTS);
    if ((st = check_num_outputs(ctx, 1, 1))) return st;
    for (uint32_t i = 0; i < ctx->num_inputs; i++) {
        if ((st = check_input(ctx, i, "data"))) return st;
    }
    const ks__rt_tensor *x0 = ctx->in[0];
    if (x0->rank >= KS_MAX_RANK)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "packing inputs of rank %d exceeds rank %d", x0->rank, KS_MAX_RANK);
    int32_t rank = x0->rank + 1;
    if ((st = norm_axis(ctx, ctx->node->ip[0], rank, "axis", axis))) return st;
    for (uint32_t i = 1; i < ctx->num_inputs; i++) {
        const ks__rt_tensor *x = ctx->in[i];
        bool same = x->dtype == x0->dtype && x->rank == x0->rank;
        for (int32_t d = 0; same && d < x->rank; d++)
            same = x->dims[d] == x0->dims[d];
        if (!same) {
            char a[160], b[160];
            format_dims(a, sizeof(a), x->rank, x->dims);
            format_dims(b, sizeof(b), x0->rank, x0->dims);
            return ks__kernel_error(
                ctx, KS_STATUS_INVALID_SHAPE, "input %u '%s' is %s %s, input 0 '%s' is %s %s", i,
                tname(x), ks_dtype_string(x->dtype), a, tname(x0), ks_dtype_string(x0->dtype), b);
        }
    }
    for (int32_t d = 0, src = 0; d < rank; d++)
        out_dims[d] = d == *axis ? (int64_t)ctx->num_inputs : x0->dims[src++];
    return KS_STATUS_OK;
}

static ks_status pack_infer(ks__kernel_ctx *ctx) {
    int32_t axis;
    int64_t dims[KS_MAX_RANK];
    ks_status st = pack_plan(ctx, &axis, dims);
    if (st || (st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    return set_out_shape(ctx, 0, ctx->in[0]->rank + 1, dims);
}

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
    ks_status st = pack_plan(ctx, &axis, dims);
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

static ks_status unpack_plan(ks__kernel_ctx *ctx, int32_t *axis, int64_t *out_dims) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, MAX_PARTS))) return st;
    const ks__rt_tensor *x = ctx->in[0];
    if (x->rank == 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input '%s' is a scalar; unpack needs rank >= 1", tname(x));
    if ((st = norm_axis(ctx, ctx->node->ip[0], x->rank, "axis", axis))) return st;
    if (x->dims[*axis] != (int64_t)ctx->num_outputs)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "axis %d of input '%s' has size %lld but the op has %u outputs",
                                *axis, tname(x), (long long)x->dims[*axis], ctx->num_outputs);
    for (int32_t d = 0, k = 0; d < x->rank; d++) {
        if (d != *axis) out_dims[k++] = x->dims[d];
    }
    return KS_STATUS_OK;
}

static ks_status unpack_infer(ks__kernel_ctx *ctx) {
    int32_t axis;
    int64_t dims[KS_MAX_RANK];
    ks_status st = unpack_plan(ctx, &axis, dims);
    if (st) return st;
    for (uint32_t i = 0; i < ctx->num_outputs; i++) {
        if ((st = set_out_dtype(ctx, i, ctx->in[0]->dtype))) return st;
        if ((st = set_out_shape(ctx, i, ctx->in[0]->rank - 1, dims))) return st;
    }
    return KS_STATUS_OK;
}

static ks_status unpack_run(ks__kernel_ctx *ctx) {
    int32_t axis;
    int64_t dims[KS_MAX_RANK], dst_strides[KS_MAX_RANK], src_strides[KS_MAX_RANK], axis_stride = 0;
    ks_status st = unpack_plan(ctx, &axis, dims);
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

typedef struct slice_plan {
    int64_t start[KS_MAX_RANK];
    int64_t step[KS_MAX_RANK];
    int64_t count[KS_MAX_RANK]; /* elements taken per input axis */
    int32_t out_rank;
    int64_t out_dims[KS_MAX_RANK]; /* count without the shrunk axes */
} slice_plan;

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

static ks_status slice_plan_make(ks__kernel_ctx *ctx, slice_plan *p) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, 1))) return st;
    const ks__rt_tensor *x = ctx->in[0];
    const int32_t *ip = ctx->node->ip;
    const char *roles[4] = {"starts", "ends", "axes", "steps"};
    int64_t vals[4][KS_MAX_RANK];
    int32_t n = 0;
    for (uint32_t k = 0; k < 4; k++) {
        const ks__rt_tensor *t = input_at(ctx, 1 + k);
        int32_t count;
        if (!t) {
            if (k < 2)
                return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "missing %s input", roles[k]);
            continue;
        }
        if ((st = read_ints(ctx, t, roles[k], KS_MAX_RANK, vals[k], &count))) return st;
        if (k == 0)
            n = count;
        else if (count != n)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                    "%s input '%s' has %d entries, starts has %d", roles[k],
                                    tname(t), count, n);
    }
    if (n > x->rank)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "starts has %d entries but input '%s' has rank %d", n, tname(x),
                                x->rank);
    bool has_axes = input_at(ctx, 3) != NULL, has_steps = input_at(ctx, 4) != NULL;
    bool shrink[KS_MAX_RANK] = {false}, seen[KS_MAX_RANK] = {false};
    for (int32_t d = 0; d < x->rank; d++) {
        p->start[d] = 0;
        p->step[d] = 1;
        p->count[d] = x->dims[d];
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t a = i;
        if (has_axes && (st = norm_axis(ctx, vals[2][i], x->rank, "slice axis", &a))) return st;
        if (seen[a])
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "slice axis %d is listed twice",
                                    a);
        seen[a] = true;
        int64_t dim = x->dims[a];
        int64_t step = has_steps ? vals[3][i] : 1;
        if (step == 0)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "step for axis %d is 0", a);
        bool begin_bit = (ip[0] >> i) & 1, end_bit = (ip[1] >> i) & 1,
             shrink_bit = (ip[2] >> i) & 1;
        int64_t s = vals[0][i], e = vals[1][i];
        /* INT64_MIN/MAX are common "to the end" sentinels; adding dim (>= 0) to a negative
         * value cannot overflow. */
        if (shrink_bit) {
            s = begin_bit ? (step > 0 ? 0 : dim - 1) : (s < 0 ? s + dim : s);
            if (s < 0 || s >= dim)
                return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                        "shrink index %lld is out of range for axis %d of size "
                                        "%lld",
                                        (long long)vals[0][i], a, (long long)dim);
            p->start[a] = s;
            p->step[a] = 1;
            p->count[a] = 1;
            shrink[a] = true;
            continue;
        }
        if (begin_bit) {
            s = step > 0 ? 0 : dim - 1;
        } else {
            if (s < 0) s += dim;
            s = step > 0 ? clamp64(s, 0, dim) : clamp64(s, 0, dim - 1);
        }
        if (end_bit) {
            e = step > 0 ? dim : -1;
        } else {
            if (e < 0) e += dim;
            e = step > 0 ? clamp64(e, 0, dim) : clamp64(e, -1, dim - 1);
        }
        int64_t count;
        if (step > 0)
            count = e > s ? 1 + (e - s - 1) / step : 0;
        else if (step == INT64_MIN)
            count = s > e ? 1 : 0;
        else
            count = s > e ? 1 + (s - e - 1) / -step : 0;
        p->start[a] = count > 0 ? s : 0;
        /* With <= 1 element the step never applies; keep it small so strides cannot overflow. */
        p->step[a] = count > 1 ? step : 1;
        p->count[a] = count;
    }
    p->out_rank = 0;
    for (int32_t d = 0; d < x->rank; d++) {
        if (!shrink[d]) p->out_dims[p->out_rank++] = p->count[d];
    }
    return KS_STATUS_OK;
}

static ks_status slice_infer(ks__kernel_ctx *ctx) {
    slice_plan p;
    ks_status st = slice_plan_make(ctx, &p);
    if (st || (st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    return set_out_shape(ctx, 0, p.out_rank, p.out_dims);
}

static ks_status slice_run(ks__kernel_ctx *ctx) {
    slice_plan p;
    ks_status st = slice_plan_make(ctx, &p);
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

enum { PAD_CONSTANT = 0, PAD_REFLECT = 1, PAD_EDGE = 2, PAD_SYMMETRIC = 3 };

typedef struct pad_plan {
    int32_t mode;
    int64_t before[KS_MAX_RANK];
    int64_t out_dims[KS_MAX_RANK];
} pad_plan;

static ks_status pad_plan_make(ks__kernel_ctx *ctx, pad_plan *p) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, 1))) return st;
    const ks__rt_tensor *x = ctx->in[0];
    const ks__rt_tensor *pads = input_at(ctx, 1);
    if (!pads) return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "missing pads input");
    p->mode = ctx->node->ip[0];
    if (p->mode < PAD_CONSTANT || p->mode > PAD_SYMMETRIC)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "pad mode %d is unknown (0 constant, 1 reflect, 2 edge, 3 "
                                "symmetric)",
                                p->mode);
    if (pads->dtype != KS_DTYPE_I32 && pads->dtype != KS_DTYPE_I64)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "pads input '%s' must be i32 or i64, got %s", tname(pads),
                                ks_dtype_string(pads->dtype));
    if (pads->rank != 2 || pads->dims[0] != x->rank || pads->dims[1] != 2) {
        char buf[160];
        format_dims(buf, sizeof(buf), pads->rank, pads->dims);
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "pads input '%s' has shape %s, expected [%d,2] for input '%s'",
                                tname(pads), buf, x->rank, tname(x));
    }
    if (!pads->data && x->rank > 0)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "pads input '%s' is only known at run time; it must be a constant "
                                "or computable at reshape",
                                tname(pads));
    for (int32_t d = 0; d < x->rank; d++) {
        int64_t b = ks__rt_get_int(pads, 2 * d), a = ks__rt_get_int(pads, 2 * d + 1);
        int64_t dim = x->dims[d];
        /* Negative pads crop (ONNX); bound them so the sum below cannot overflow. */
        if (b < -dim || a < -dim || b > INT32_MAX || a > INT32_MAX || b + a + dim < 0)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                    "pads (%lld, %lld) are invalid for axis %d of size %lld",
                                    (long long)b, (long long)a, d, (long long)dim);
        p->before[d] = b;
        p->out_dims[d] = dim + b + a;
        if (p->mode != PAD_CONSTANT && dim == 0 && p->out_dims[d] > 0)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "cannot %s-pad empty axis %d of input '%s'",
                                    p->mode == PAD_REFLECT ? "reflect"
                                    : p->mode == PAD_EDGE  ? "edge"
                                                           : "symmetric",
                                    d, tname(x));
    }
    return KS_STATUS_OK;
}

static ks_status pad_infer(ks__kernel_ctx *ctx) {
    pad_plan p;
    ks_status st = pad_plan_make(ctx, &p);
    if (st || (st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    const ks__rt_tensor *value = input_at(ctx, 2);
    if (value && ks__rt_numel(value) < 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "value input '%s' is empty",
                                tname(value));
    if (value && ks_dtype_size(value->dtype) == 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "value input '%s' has bad dtype",
                                tname(value));
    return set_out_shape(ctx, 0, ctx->in[0]->rank, p.out_dims);
}

/* Maps coordinate i (relative to the input, may lie outside [0, n)) into the input. n >= 1. */
static int64_t pad_map(int64_t i, int64_t n, int32_t mode) {
    if (i >= 0 && i < n) return i;
    if (mode == PAD_EDGE || n == 1) return i < 0 ? 0 : n - 1;
    /* Reflection repeats with period 2(n-1) (reflect) or 2n (symmetric); folding by the period
     * matches numpy for pads wider than the axis. */
    int64_t period = mode == PAD_REFLECT ? 2 * (n - 1) : 2 * n;
    int64_t m = i % period;
    if (m < 0) m += period;
    if (m >= n) m = mode == PAD_REFLECT ? period - m : period - 1 - m;
    return m;
}

static void pad_fill_value(ks__kernel_ctx *ctx, uint8_t *fill) {
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    const ks__rt_tensor *value = input_at(ctx, 2);
    if (value && value->data) {
        if (value->dtype == x->dtype)
            memcpy(fill, value->data, ks_dtype_size(x->dtype));
        else
            store_scalar(x->dtype, fill, ks__rt_get_f64(value, 0));
        return;
    }
    double v = ctx->node->fp[0];
    const ks__quant *q = y->quant;
    if (is_quantized_int(x->dtype) && q->count > 0 && q->scales && q->scales[0] > 0.0f)
        v = quant_zp(q) + round(v / q->scales[0]); /* real 0 -> the zero point */
    store_scalar(x->dtype, fill, v);
}

static ks_status pad_run(ks__kernel_ctx *ctx) {
    pad_plan p;
    ks_status st = pad_plan_make(ctx, &p);
    const ks__rt_tensor *x = ctx->in[0];
    if (st || (st = check_out_run(ctx, 0, x->rank, p.out_dims))) return st;
    uint8_t *out = ctx->out[0]->data;
    size_t es = ks_dtype_size(x->dtype);
    int64_t n_out = ks__numel(x->rank, p.out_dims);
    int64_t in_strides[KS_MAX_RANK], out_strides[KS_MAX_RANK];
    contiguous_strides(x->rank, x->dims, in_strides);
    contiguous_strides(x->rank, p.out_dims, out_strides);
    if (p.mode == PAD_CONSTANT) {
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

static ks_status check_index_dtype(ks__kernel_ctx *ctx, const ks__rt_tensor *t) {
    if (t->dtype != KS_DTYPE_I32 && t->dtype != KS_DTYPE_I64)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "indices input '%s' must be i32 or i64, got %s", tname(t),
                                ks_dtype_string(t->dtype));
    return KS_STATUS_OK;
}

static ks_status gather_plan(ks__kernel_ctx *ctx, int32_t *axis, int32_t *out_rank,
                             int64_t *out_dims) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_input(ctx, 1, "indices")) || (st = check_num_outputs(ctx, 1, 1)))
        return st;
    const ks__rt_tensor *x = ctx->in[0], *ind = ctx->in[1];
    if ((st = check_index_dtype(ctx, ind))) return st;
    if (x->rank == 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input '%s' is a scalar; gather needs rank >= 1", tname(x));
    if ((st = norm_axis(ctx, ctx->node->ip[0], x->rank, "axis", axis))) return st;
    *out_rank = x->rank - 1 + ind->rank;
    if (*out_rank > KS_MAX_RANK)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "output rank %d exceeds %d (input '%s' rank %d, indices '%s' "
                                "rank %d)",
                                *out_rank, KS_MAX_RANK, tname(x), x->rank, tname(ind), ind->rank);
    int32_t k = 0;
    for (int32_t d = 0; d < *axis; d++)
        out_dims[k++] = x->dims[d];
    for (int32_t d = 0; d < ind->rank; d++)
        out_dims[k++] = ind->dims[d];
    for (int32_t d = *axis + 1; d < x->rank; d++)
        out_dims[k++] = x->dims[d];
    return KS_STATUS_OK;
}

static ks_status gather_infer(ks__kernel_ctx *ctx) {
    int32_t axis = 0, rank = 0;
    int64_t dims[KS_MAX_RANK];
    ks_status st = gather_plan(ctx, &axis, &rank, dims);
    if (st || (st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    return set_out_shape(ctx, 0, rank, dims);
}

static ks_status gather_run(ks__kernel_ctx *ctx) {
    int32_t axis = 0, rank = 0;
    int64_t dims[KS_MAX_RANK];
    ks_status st = gather_plan(ctx, &axis, &rank, dims);
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
                                    (long long)v, (long long)j, tname(ind), axis,
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

static ks_status gather_nd_plan(ks__kernel_ctx *ctx, int32_t *out_rank, int64_t *out_dims) {
    ks_status st = check_input(ctx, 0, "params");
    if (st || (st = check_input(ctx, 1, "indices")) || (st = check_num_outputs(ctx, 1, 1)))
        return st;
    const ks__rt_tensor *x = ctx->in[0], *ind = ctx->in[1];
    if ((st = check_index_dtype(ctx, ind))) return st;
    if (ind->rank < 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "indices '%s' must have rank >= 1",
                                tname(ind));
    int64_t k = ind->dims[ind->rank - 1];
    if (k > x->rank)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "index depth %lld (last dim of indices '%s') exceeds rank %d of "
                                "params '%s'",
                                (long long)k, tname(ind), x->rank, tname(x));
    *out_rank = ind->rank - 1 + x->rank - (int32_t)k;
    if (*out_rank > KS_MAX_RANK)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "output rank %d exceeds %d",
                                *out_rank, KS_MAX_RANK);
    int32_t n = 0;
    for (int32_t d = 0; d < ind->rank - 1; d++)
        out_dims[n++] = ind->dims[d];
    for (int32_t d = (int32_t)k; d < x->rank; d++)
        out_dims[n++] = x->dims[d];
    return KS_STATUS_OK;
}

static ks_status gather_nd_infer(ks__kernel_ctx *ctx) {
    int32_t rank;
    int64_t dims[KS_MAX_RANK];
    ks_status st = gather_nd_plan(ctx, &rank, dims);
    if (st || (st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    return set_out_shape(ctx, 0, rank, dims);
}

static ks_status gather_nd_run(ks__kernel_ctx *ctx) {
    int32_t rank;
    int64_t dims[KS_MAX_RANK];
    ks_status st = gather_nd_plan(ctx, &rank, dims);
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
                                        (long long)v, j, (long long)s, tname(ind), j, tname(x),
                                        (long long)x->dims[j]);
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

/* Output shape of EXPAND: bidirectional numpy broadcast of x's shape and the shape input. */
static ks_status expand_plan(ks__kernel_ctx *ctx, int32_t *out_rank, int64_t *out_dims) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, 1))) return st;
    const ks__rt_tensor *x = ctx->in[0], *shape = input_at(ctx, 1);
    if (!shape) return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "missing shape input");
    int64_t req[KS_MAX_RANK];
    int32_t n;
    if ((st = read_ints(ctx, shape, "shape", KS_MAX_RANK, req, &n))) return st;
    int32_t rank = n > x->rank ? n : x->rank;
    for (int32_t d = 0; d < rank; d++) {
        int32_t dx = d - (rank - x->rank), ds = d - (rank - n);
        int64_t a = dx >= 0 ? x->dims[dx] : 1, b = ds >= 0 ? req[ds] : 1;
        if (b < 0)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "shape entry %d is %lld", ds,
                                    (long long)b);
        if (a != b && a != 1 && b != 1)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "cannot broadcast dim %d of input '%s' (%lld) to %lld", dx,
                                    tname(x), (long long)a, (long long)b);
        out_dims[d] = a == 1 ? b : a;
    }
    *out_rank = rank;
    return KS_STATUS_OK;
}

static ks_status expand_infer(ks__kernel_ctx *ctx) {
    int32_t rank;
    int64_t dims[KS_MAX_RANK];
    ks_status st = expand_plan(ctx, &rank, dims);
    if (st || (st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    return set_out_shape(ctx, 0, rank, dims);
}

static ks_status expand_run(ks__kernel_ctx *ctx) {
    int32_t rank;
    int64_t dims[KS_MAX_RANK], in_strides[KS_MAX_RANK], src_strides[KS_MAX_RANK],
        dst_strides[KS_MAX_RANK];
    ks_status st = expand_plan(ctx, &rank, dims);
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

static ks_status tile_plan(ks__kernel_ctx *ctx, int64_t *reps, int64_t *out_dims) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, 1))) return st;
    const ks__rt_tensor *x = ctx->in[0], *mult = input_at(ctx, 1);
    if (!mult) return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "missing multiples input");
    int32_t n;
    if ((st = read_ints(ctx, mult, "multiples", KS_MAX_RANK, reps, &n))) return st;
    if (n != x->rank)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "multiples input '%s' has %d entries but input '%s' has rank %d",
                                tname(mult), n, tname(x), x->rank);
    for (int32_t d = 0; d < n; d++) {
        if (reps[d] < 0 || (x->dims[d] > 0 && reps[d] > INT64_MAX / 4 / x->dims[d]))
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                    "multiples entry %d is %lld (axis size %lld)", d,
                                    (long long)reps[d], (long long)x->dims[d]);
        out_dims[d] = x->dims[d] * reps[d];
    }
    return KS_STATUS_OK;
}

static ks_status tile_infer(ks__kernel_ctx *ctx) {
    int64_t reps[KS_MAX_RANK], dims[KS_MAX_RANK];
    ks_status st = tile_plan(ctx, reps, dims);
    if (st || (st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    return set_out_shape(ctx, 0, ctx->in[0]->rank, dims);
}

static ks_status tile_run(ks__kernel_ctx *ctx) {
    int64_t reps[KS_MAX_RANK], dims[KS_MAX_RANK], in_strides[KS_MAX_RANK];
    ks_status st = tile_plan(ctx, reps, dims);
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
    KS__REF_REG(t, RESHAPE, reshape_infer, run_copy_view);
    KS__REF_REG(t, SQUEEZE, squeeze_infer, run_copy_view);
    KS__REF_REG(t, UNSQUEEZE, unsqueeze_infer, run_copy_view);
    KS__REF_REG(t, SHAPE, shape_infer, shape_run);
    KS__REF_REG(t, TRANSPOSE, transpose_infer, transpose_run);
    KS__REF_REG(t, CONCAT, concat_infer, concat_run);
    KS__REF_REG(t, SPLIT, split_infer, split_run);
    KS__REF_REG(t, PACK, pack_infer, pack_run);
    KS__REF_REG(t, UNPACK, unpack_infer, unpack_run);
    KS__REF_REG(t, SLICE, slice_infer, slice_run);
    KS__REF_REG(t, PAD, pad_infer, pad_run);
    KS__REF_REG(t, GATHER, gather_infer, gather_run);
    KS__REF_REG(t, GATHER_ND, gather_nd_infer, gather_nd_run);
    KS__REF_REG(t, EXPAND, expand_infer, expand_run);
    KS__REF_REG(t, TILE, tile_infer, tile_run);
}
