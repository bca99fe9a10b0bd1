/* Shape inference of the data-movement and shape ops (shape_data.h): RESHAPE, TRANSPOSE, CONCAT,
 * SPLIT, SLICE, PAD, PACK, UNPACK, GATHER, GATHER_ND, SHAPE, SQUEEZE, UNSQUEEZE, EXPAND, TILE.
 *
 * Every op keeps its input's dtype (SHAPE makes I32/I64); an output dtype the graph gives must
 * agree. Where ONNX and TFLite differ, the shapes follow the superset the reference kernels
 * accept: SLICE clamps with ONNX rules also under TFLite masks, SPLIT without sizes allows an
 * uneven split (last part smaller, ONNX opset 18), EXPAND broadcasts both ways, TRANSPOSE without
 * a perm reverses the axes, PAD's negative pads crop.
 */
#include <math.h>
#include <string.h>

#include "shape_data.h"

/* ---------------------------------------------------------------------------------------------
 * Common checks
 * ------------------------------------------------------------------------------------------- */

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
    const ks__rt_tensor *t = ks__kernel_input(ctx, i);
    if (!t) return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "missing %s input %u", role, i);
    if (ks_dtype_size(t->dtype) == 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "%s input '%s' has invalid dtype %d",
                                role, ks__rt_name(t), (int)t->dtype);
    if (t->rank < 0 || t->rank > KS_MAX_RANK)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "%s input '%s' has rank %d (supported: 0..%d)", role,
                                ks__rt_name(t), t->rank, KS_MAX_RANK);
    for (int32_t d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "%s input '%s' has unknown or negative dim %d (%lld)", role,
                                    ks__rt_name(t), d, (long long)t->dims[d]);
    }
    if (!shape_fits(t->rank, t->dims))
        return ks__kernel_error(ctx, KS_STATUS_LIMIT_EXCEEDED,
                                "%s input '%s' has too many elements", role, ks__rt_name(t));
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
                                "output '%s' has dtype %s but the op produces %s", ks__rt_name(o),
                                ks_dtype_string(o->dtype), ks_dtype_string(want));
    return KS_STATUS_OK;
}

static ks_status set_out_shape(ks__kernel_ctx *ctx, uint32_t i, int32_t rank, const int64_t *dims) {
    ks__rt_tensor *o = ctx->out[i];
    if (rank < 0 || rank > KS_MAX_RANK)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "output '%s' would have rank %d (supported: 0..%d)", ks__rt_name(o),
                                rank, KS_MAX_RANK);
    if (!shape_fits(rank, dims)) {
        char buf[160];
        ks__format_dims(buf, sizeof(buf), rank, dims);
        return ks__kernel_error(ctx, KS_STATUS_LIMIT_EXCEEDED,
                                "output '%s' shape %s is invalid or too large", ks__rt_name(o),
                                buf);
    }
    ks__rt_set_shape(o, o->dtype, rank, dims);
    return KS_STATUS_OK;
}

/* Reads a 0-D/1-D I32/I64 parameter tensor whose value must be known now. In infer() that is
 * only the case for constants and values computed at reshape time. */
static ks_status read_ints(ks__kernel_ctx *ctx, const ks__rt_tensor *t, const char *role,
                           int64_t max_count, int64_t *vals, int32_t *count_out) {
    if (t->dtype != KS_DTYPE_I32 && t->dtype != KS_DTYPE_I64)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "%s input '%s' must be i32 or i64, got %s", role, ks__rt_name(t),
                                ks_dtype_string(t->dtype));
    if (t->rank > 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "%s input '%s' must be 1-D, has rank %d", role, ks__rt_name(t),
                                t->rank);
    int64_t n = ks__rt_numel(t);
    if (n < 0 || n > max_count)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "%s input '%s' has %lld entries, at most %lld allowed", role,
                                ks__rt_name(t), (long long)n, (long long)max_count);
    if (!t->data && n > 0)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "%s input '%s' is only known at run time; it must be a constant or "
                                "computable at reshape",
                                role, ks__rt_name(t));
    for (int64_t i = 0; i < n; i++)
        vals[i] = ks__rt_get_int(t, i);
    *count_out = (int32_t)n;
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * RESHAPE
 * ------------------------------------------------------------------------------------------- */

ks_status ks__infer_reshape(ks__kernel_ctx *ctx) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, 1))) return st;
    const ks__rt_tensor *x = ctx->in[0];
    const ks__rt_tensor *shape = ks__kernel_input(ctx, 1);
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
                                        i, ks__rt_name(x), x->rank);
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
            ks__format_dims(buf, sizeof(buf), rank, req);
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "element count mismatch: input '%s' has %lld elements, which "
                                    "target shape %s cannot hold",
                                    ks__rt_name(x), (long long)numel, buf);
        }
        dims[infer_at] = numel / known;
    } else if (known != numel) {
        char in_buf[160], out_buf[160];
        ks__format_dims(in_buf, sizeof(in_buf), x->rank, x->dims);
        ks__format_dims(out_buf, sizeof(out_buf), rank, dims);
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "element count mismatch: input '%s' %s has %lld elements, target "
                                "shape %s has %lld",
                                ks__rt_name(x), in_buf, (long long)numel, out_buf,
                                (long long)known);
    }
    if ((st = set_out_dtype(ctx, 0, x->dtype))) return st;
    return set_out_shape(ctx, 0, rank, dims);
}

/* ---------------------------------------------------------------------------------------------
 * SQUEEZE / UNSQUEEZE
 * ------------------------------------------------------------------------------------------- */

ks_status ks__infer_squeeze(ks__kernel_ctx *ctx) {
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
                                        a, ks__rt_name(x), (long long)x->dims[a]);
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

ks_status ks__infer_unsqueeze(ks__kernel_ctx *ctx) {
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
                                ks__rt_name(x), x->rank, ip[0], KS_MAX_RANK);
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

ks_status ks__infer_shape(ks__kernel_ctx *ctx) {
    /* Only the input's dims are needed (its data may be NULL even at run). */
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, 1))) return st;
    ks__rt_tensor *y = ctx->out[0];
    if (y->dtype == KS_DTYPE_INVALID) y->dtype = KS_DTYPE_I64;
    if (y->dtype != KS_DTYPE_I32 && y->dtype != KS_DTYPE_I64)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "output '%s' has dtype %s; shape produces i32 or i64",
                                ks__rt_name(y), ks_dtype_string(y->dtype));
    int64_t dims[1] = {ctx->in[0]->rank};
    return set_out_shape(ctx, 0, 1, dims);
}

/* ---------------------------------------------------------------------------------------------
 * TRANSPOSE
 * ------------------------------------------------------------------------------------------- */

ks_status ks__transpose_geometry(ks__kernel_ctx *ctx, int32_t *perm, int64_t *out_dims) {
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
                                    ks__rt_name(x), x->rank);
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

ks_status ks__infer_transpose(ks__kernel_ctx *ctx) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, 1))) return st;
    int32_t perm[KS_MAX_RANK];
    int64_t dims[KS_MAX_RANK];
    if ((st = ks__transpose_geometry(ctx, perm, dims))) return st;
    if ((st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    return set_out_shape(ctx, 0, ctx->in[0]->rank, dims);
}

/* ---------------------------------------------------------------------------------------------
 * CONCAT
 * ------------------------------------------------------------------------------------------- */

/* Decides how input i reaches the output: a byte copy when the quantization matches (or
 * neither side is quantized), otherwise TFLite-style requantization (per-tensor only). */
ks_status ks__concat_quant_path(ks__kernel_ctx *ctx, const ks__rt_tensor *x, const ks__rt_tensor *y,
                                ks__concat_path *path) {
    const ks__quant *qi = x->quant, *qo = y->quant;
    *path = KS__CONCAT_COPY;
    if (!ks__dtype_is_qint(x->dtype) || qi->count == 0 || qo->count == 0) {
        if (ks__dtype_is_qint(x->dtype) && (qi->count != 0) != (qo->count != 0))
            return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                    "input '%s' is %squantized but output '%s' is %squantized",
                                    ks__rt_name(x), qi->count ? "" : "not ", ks__rt_name(y),
                                    qo->count ? "" : "not ");
        return KS_STATUS_OK;
    }
    if (!qi->scales || !qo->scales)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "quantized input '%s' or output '%s' lacks scales", ks__rt_name(x),
                                ks__rt_name(y));
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
                                ks__rt_name(x), ks__rt_name(y));
    if (!(qo->scales[0] > 0.0f) || !isfinite(qo->scales[0]) || !isfinite(qi->scales[0]))
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "cannot requantize input '%s' (scale %g) to output '%s' (scale %g)",
                                ks__rt_name(x), (double)qi->scales[0], ks__rt_name(y),
                                (double)qo->scales[0]);
    *path = KS__CONCAT_REQUANT;
    return KS_STATUS_OK;
}

/* Clamp bounds of a fused activation in the quantized domain (TFLite
 * CalculateActivationRangeQuantized). Returns false for activations that are not clamps. */
bool ks__concat_act_range(int32_t act, const ks__rt_tensor *y, int64_t *lo, int64_t *hi) {
    const ks__quant *q = y->quant;
    *lo = ks__dtype_min(y->dtype);
    *hi = ks__dtype_max(y->dtype);
    if (act == KS_ACT_NONE) return true;
    if (q->count == 0 || !q->scales) return false;
    double s = q->scales[0];
    if (!(s > 0.0) || !isfinite(s)) return false;
    double zp = ks__rt_qzp(y), fmin = 0.0, fmax = INFINITY;
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

ks_status ks__concat_geometry(ks__kernel_ctx *ctx, ks__concat_geom *p) {
    ks_status st;
    if (ctx->num_inputs < 1 || ctx->num_inputs > KS__MAX_PARTS)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "has %u inputs (1..%d)",
                                ctx->num_inputs, KS__MAX_PARTS);
    if ((st = check_num_outputs(ctx, 1, 1))) return st;
    for (uint32_t i = 0; i < ctx->num_inputs; i++) {
        if ((st = check_input(ctx, i, "data"))) return st;
    }
    const ks__rt_tensor *x0 = ctx->in[0];
    p->rank = x0->rank;
    if (p->rank == 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input '%s' is a scalar; concat needs rank >= 1", ks__rt_name(x0));
    if ((st = norm_axis(ctx, ctx->node->ip[0], p->rank, "axis", &p->axis))) return st;
    for (int32_t d = 0; d < p->rank; d++)
        p->out_dims[d] = x0->dims[d];
    p->out_dims[p->axis] = 0;
    for (uint32_t i = 0; i < ctx->num_inputs; i++) {
        const ks__rt_tensor *x = ctx->in[i];
        if (x->dtype != x0->dtype)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                    "input %u '%s' has dtype %s, input 0 '%s' has %s", i,
                                    ks__rt_name(x), ks_dtype_string(x->dtype), ks__rt_name(x0),
                                    ks_dtype_string(x0->dtype));
        if (x->rank != p->rank)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "input %u '%s' has rank %d, input 0 '%s' has rank %d", i,
                                    ks__rt_name(x), x->rank, ks__rt_name(x0), p->rank);
        for (int32_t d = 0; d < p->rank; d++) {
            if (d != p->axis && x->dims[d] != x0->dims[d])
                return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                        "input %u '%s' has dim %d = %lld, input 0 '%s' has %lld "
                                        "(only axis %d may differ)",
                                        i, ks__rt_name(x), d, (long long)x->dims[d],
                                        ks__rt_name(x0), (long long)x0->dims[d], p->axis);
        }
        p->out_dims[p->axis] += x->dims[p->axis];
    }
    return KS_STATUS_OK;
}

ks_status ks__concat_check_act(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *y = ctx->out[0];
    const ks_dtype dt = y->dtype;
    const ks__quant *q = y->quant;
    int32_t act = ctx->node->ip[1];
    if (act == KS_ACT_NONE) return KS_STATUS_OK;
    if (act < 0 || act >= KS_ACT_COUNT || act == KS_ACT_PRELU || act == KS_ACT_TABLE)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "unknown fused activation %d", act);
    if (dt == KS_DTYPE_F32 || dt == KS_DTYPE_F16) return KS_STATUS_OK;
    int64_t lo, hi;
    if (ks__dtype_is_qint(dt) && q->count == 1 && ks__concat_act_range(act, y, &lo, &hi))
        return KS_STATUS_OK;
    return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                            "fused activation %d is not supported for dtype %s%s", act,
                            ks_dtype_string(dt), q->count ? " (quantized)" : "");
}

ks_status ks__infer_concat(ks__kernel_ctx *ctx) {
    ks__concat_geom p;
    ks_status st = ks__concat_geometry(ctx, &p);
    if (st || (st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    for (uint32_t i = 0; i < ctx->num_inputs; i++) {
        ks__concat_path path;
        if ((st = ks__concat_quant_path(ctx, ctx->in[i], ctx->out[0], &path))) return st;
    }
    if ((st = ks__concat_check_act(ctx))) return st;
    return set_out_shape(ctx, 0, p.rank, p.out_dims);
}

/* ---------------------------------------------------------------------------------------------
 * SPLIT
 * ------------------------------------------------------------------------------------------- */

ks_status ks__split_geometry(ks__kernel_ctx *ctx, ks__split_geom *p) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, KS__MAX_PARTS))) return st;
    const ks__rt_tensor *x = ctx->in[0];
    if (x->rank == 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input '%s' is a scalar; split needs rank >= 1", ks__rt_name(x));
    if ((st = norm_axis(ctx, ctx->node->ip[0], x->rank, "axis", &p->axis))) return st;
    int64_t dim = x->dims[p->axis];
    uint32_t n = ctx->num_outputs;
    const ks__rt_tensor *sizes = ks__kernel_input(ctx, 1);
    if (!sizes) {
        /* Equal parts; an uneven split gives the last output the remainder (ONNX opset 18). */
        int64_t chunk = (dim + (int64_t)n - 1) / (int64_t)n;
        int64_t last = dim - chunk * (int64_t)(n - 1);
        if (last < 0)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "axis %d of input '%s' (size %lld) cannot be split into %u "
                                    "parts",
                                    p->axis, ks__rt_name(x), (long long)dim, n);
        for (uint32_t i = 0; i < n; i++)
            p->sizes[i] = i + 1 < n ? chunk : last;
        return KS_STATUS_OK;
    }
    int32_t count;
    if ((st = read_ints(ctx, sizes, "sizes", KS__MAX_PARTS, p->sizes, &count))) return st;
    if ((uint32_t)count != n)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "sizes input '%s' has %d entries for %u outputs",
                                ks__rt_name(sizes), count, n);
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
                                (long long)sum, p->axis, ks__rt_name(x), (long long)dim);
    }
    return KS_STATUS_OK;
}

ks_status ks__infer_split(ks__kernel_ctx *ctx) {
    ks__split_geom p;
    ks_status st = ks__split_geometry(ctx, &p);
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

/* ---------------------------------------------------------------------------------------------
 * PACK / UNPACK
 * ------------------------------------------------------------------------------------------- */

ks_status ks__pack_geometry(ks__kernel_ctx *ctx, int32_t *axis, int64_t *out_dims) {
    ks_status st;
    if (ctx->num_inputs < 1 || ctx->num_inputs > KS__MAX_PARTS)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "has %u inputs (1..%d)",
                                ctx->num_inputs, KS__MAX_PARTS);
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
            ks__format_dims(a, sizeof(a), x->rank, x->dims);
            ks__format_dims(b, sizeof(b), x0->rank, x0->dims);
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "input %u '%s' is %s %s, input 0 '%s' is %s %s", i,
                                    ks__rt_name(x), ks_dtype_string(x->dtype), a, ks__rt_name(x0),
                                    ks_dtype_string(x0->dtype), b);
        }
    }
    for (int32_t d = 0, src = 0; d < rank; d++)
        out_dims[d] = d == *axis ? (int64_t)ctx->num_inputs : x0->dims[src++];
    return KS_STATUS_OK;
}

ks_status ks__infer_pack(ks__kernel_ctx *ctx) {
    int32_t axis;
    int64_t dims[KS_MAX_RANK];
    ks_status st = ks__pack_geometry(ctx, &axis, dims);
    if (st || (st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    return set_out_shape(ctx, 0, ctx->in[0]->rank + 1, dims);
}

ks_status ks__unpack_geometry(ks__kernel_ctx *ctx, int32_t *axis, int64_t *out_dims) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, KS__MAX_PARTS))) return st;
    const ks__rt_tensor *x = ctx->in[0];
    if (x->rank == 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input '%s' is a scalar; unpack needs rank >= 1", ks__rt_name(x));
    if ((st = norm_axis(ctx, ctx->node->ip[0], x->rank, "axis", axis))) return st;
    if (x->dims[*axis] != (int64_t)ctx->num_outputs)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "axis %d of input '%s' has size %lld but the op has %u outputs",
                                *axis, ks__rt_name(x), (long long)x->dims[*axis], ctx->num_outputs);
    for (int32_t d = 0, k = 0; d < x->rank; d++) {
        if (d != *axis) out_dims[k++] = x->dims[d];
    }
    return KS_STATUS_OK;
}

ks_status ks__infer_unpack(ks__kernel_ctx *ctx) {
    int32_t axis;
    int64_t dims[KS_MAX_RANK];
    ks_status st = ks__unpack_geometry(ctx, &axis, dims);
    if (st) return st;
    for (uint32_t i = 0; i < ctx->num_outputs; i++) {
        if ((st = set_out_dtype(ctx, i, ctx->in[0]->dtype))) return st;
        if ((st = set_out_shape(ctx, i, ctx->in[0]->rank - 1, dims))) return st;
    }
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * SLICE (ONNX Slice + TFLite StridedSlice masks)
 * ------------------------------------------------------------------------------------------- */

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

ks_status ks__slice_geometry(ks__kernel_ctx *ctx, ks__slice_geom *p) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, 1))) return st;
    const ks__rt_tensor *x = ctx->in[0];
    const int32_t *ip = ctx->node->ip;
    const char *roles[4] = {"starts", "ends", "axes", "steps"};
    int64_t vals[4][KS_MAX_RANK];
    int32_t n = 0;
    for (uint32_t k = 0; k < 4; k++) {
        const ks__rt_tensor *t = ks__kernel_input(ctx, 1 + k);
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
                                    ks__rt_name(t), count, n);
    }
    if (n > x->rank)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "starts has %d entries but input '%s' has rank %d", n,
                                ks__rt_name(x), x->rank);
    bool has_axes = ks__kernel_input(ctx, 3) != NULL, has_steps = ks__kernel_input(ctx, 4) != NULL;
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

ks_status ks__infer_slice(ks__kernel_ctx *ctx) {
    ks__slice_geom p;
    ks_status st = ks__slice_geometry(ctx, &p);
    if (st || (st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    return set_out_shape(ctx, 0, p.out_rank, p.out_dims);
}

/* ---------------------------------------------------------------------------------------------
 * PAD
 * ------------------------------------------------------------------------------------------- */

ks_status ks__pad_geometry(ks__kernel_ctx *ctx, ks__pad_geom *p) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, 1))) return st;
    const ks__rt_tensor *x = ctx->in[0];
    const ks__rt_tensor *pads = ks__kernel_input(ctx, 1);
    if (!pads) return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "missing pads input");
    p->mode = ctx->node->ip[0];
    if (p->mode < KS__PAD_FILL_CONSTANT || p->mode > KS__PAD_FILL_SYMMETRIC)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "pad mode %d is unknown (0 constant, 1 reflect, 2 edge, 3 "
                                "symmetric)",
                                p->mode);
    if (pads->dtype != KS_DTYPE_I32 && pads->dtype != KS_DTYPE_I64)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "pads input '%s' must be i32 or i64, got %s", ks__rt_name(pads),
                                ks_dtype_string(pads->dtype));
    if (pads->rank != 2 || pads->dims[0] != x->rank || pads->dims[1] != 2) {
        char buf[160];
        ks__format_dims(buf, sizeof(buf), pads->rank, pads->dims);
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "pads input '%s' has shape %s, expected [%d,2] for input '%s'",
                                ks__rt_name(pads), buf, x->rank, ks__rt_name(x));
    }
    if (!pads->data && x->rank > 0)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "pads input '%s' is only known at run time; it must be a constant "
                                "or computable at reshape",
                                ks__rt_name(pads));
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
        if (p->mode != KS__PAD_FILL_CONSTANT && dim == 0 && p->out_dims[d] > 0)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "cannot %s-pad empty axis %d of input '%s'",
                                    p->mode == KS__PAD_FILL_REFLECT ? "reflect"
                                    : p->mode == KS__PAD_FILL_EDGE  ? "edge"
                                                                    : "symmetric",
                                    d, ks__rt_name(x));
    }
    return KS_STATUS_OK;
}

ks_status ks__infer_pad(ks__kernel_ctx *ctx) {
    ks__pad_geom p;
    ks_status st = ks__pad_geometry(ctx, &p);
    if (st || (st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    const ks__rt_tensor *value = ks__kernel_input(ctx, 2);
    if (value && ks__rt_numel(value) < 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "value input '%s' is empty",
                                ks__rt_name(value));
    if (value && ks_dtype_size(value->dtype) == 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "value input '%s' has bad dtype",
                                ks__rt_name(value));
    return set_out_shape(ctx, 0, ctx->in[0]->rank, p.out_dims);
}

/* ---------------------------------------------------------------------------------------------
 * GATHER / GATHER_ND
 * ------------------------------------------------------------------------------------------- */

static ks_status check_index_dtype(ks__kernel_ctx *ctx, const ks__rt_tensor *t) {
    if (t->dtype != KS_DTYPE_I32 && t->dtype != KS_DTYPE_I64)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "indices input '%s' must be i32 or i64, got %s", ks__rt_name(t),
                                ks_dtype_string(t->dtype));
    return KS_STATUS_OK;
}

ks_status ks__gather_geometry(ks__kernel_ctx *ctx, int32_t *axis, int32_t *out_rank,
                              int64_t *out_dims) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_input(ctx, 1, "indices")) || (st = check_num_outputs(ctx, 1, 1)))
        return st;
    const ks__rt_tensor *x = ctx->in[0], *ind = ctx->in[1];
    if ((st = check_index_dtype(ctx, ind))) return st;
    if (x->rank == 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input '%s' is a scalar; gather needs rank >= 1", ks__rt_name(x));
    if ((st = norm_axis(ctx, ctx->node->ip[0], x->rank, "axis", axis))) return st;
    *out_rank = x->rank - 1 + ind->rank;
    if (*out_rank > KS_MAX_RANK)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "output rank %d exceeds %d (input '%s' rank %d, indices '%s' "
                                "rank %d)",
                                *out_rank, KS_MAX_RANK, ks__rt_name(x), x->rank, ks__rt_name(ind),
                                ind->rank);
    int32_t k = 0;
    for (int32_t d = 0; d < *axis; d++)
        out_dims[k++] = x->dims[d];
    for (int32_t d = 0; d < ind->rank; d++)
        out_dims[k++] = ind->dims[d];
    for (int32_t d = *axis + 1; d < x->rank; d++)
        out_dims[k++] = x->dims[d];
    return KS_STATUS_OK;
}

ks_status ks__infer_gather(ks__kernel_ctx *ctx) {
    int32_t axis = 0, rank = 0;
    int64_t dims[KS_MAX_RANK];
    ks_status st = ks__gather_geometry(ctx, &axis, &rank, dims);
    if (st || (st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    return set_out_shape(ctx, 0, rank, dims);
}

ks_status ks__gather_nd_geometry(ks__kernel_ctx *ctx, int32_t *out_rank, int64_t *out_dims) {
    ks_status st = check_input(ctx, 0, "params");
    if (st || (st = check_input(ctx, 1, "indices")) || (st = check_num_outputs(ctx, 1, 1)))
        return st;
    const ks__rt_tensor *x = ctx->in[0], *ind = ctx->in[1];
    if ((st = check_index_dtype(ctx, ind))) return st;
    if (ind->rank < 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "indices '%s' must have rank >= 1",
                                ks__rt_name(ind));
    int64_t k = ind->dims[ind->rank - 1];
    if (k > x->rank)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "index depth %lld (last dim of indices '%s') exceeds rank %d of "
                                "params '%s'",
                                (long long)k, ks__rt_name(ind), x->rank, ks__rt_name(x));
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

ks_status ks__infer_gather_nd(ks__kernel_ctx *ctx) {
    int32_t rank;
    int64_t dims[KS_MAX_RANK];
    ks_status st = ks__gather_nd_geometry(ctx, &rank, dims);
    if (st || (st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    return set_out_shape(ctx, 0, rank, dims);
}

/* ---------------------------------------------------------------------------------------------
 * EXPAND / TILE
 * ------------------------------------------------------------------------------------------- */

/* Output shape of EXPAND: bidirectional numpy broadcast of x's shape and the shape input. */
ks_status ks__expand_geometry(ks__kernel_ctx *ctx, int32_t *out_rank, int64_t *out_dims) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, 1))) return st;
    const ks__rt_tensor *x = ctx->in[0], *shape = ks__kernel_input(ctx, 1);
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
                                    ks__rt_name(x), (long long)a, (long long)b);
        out_dims[d] = a == 1 ? b : a;
    }
    *out_rank = rank;
    return KS_STATUS_OK;
}

ks_status ks__infer_expand(ks__kernel_ctx *ctx) {
    int32_t rank;
    int64_t dims[KS_MAX_RANK];
    ks_status st = ks__expand_geometry(ctx, &rank, dims);
    if (st || (st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    return set_out_shape(ctx, 0, rank, dims);
}

ks_status ks__tile_geometry(ks__kernel_ctx *ctx, int64_t *reps, int64_t *out_dims) {
    ks_status st = check_input(ctx, 0, "data");
    if (st || (st = check_num_outputs(ctx, 1, 1))) return st;
    const ks__rt_tensor *x = ctx->in[0], *mult = ks__kernel_input(ctx, 1);
    if (!mult) return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "missing multiples input");
    int32_t n;
    if ((st = read_ints(ctx, mult, "multiples", KS_MAX_RANK, reps, &n))) return st;
    if (n != x->rank)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "multiples input '%s' has %d entries but input '%s' has rank %d",
                                ks__rt_name(mult), n, ks__rt_name(x), x->rank);
    for (int32_t d = 0; d < n; d++) {
        if (reps[d] < 0 || (x->dims[d] > 0 && reps[d] > INT64_MAX / 4 / x->dims[d]))
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                    "multiples entry %d is %lld (axis size %lld)", d,
                                    (long long)reps[d], (long long)x->dims[d]);
        out_dims[d] = x->dims[d] * reps[d];
    }
    return KS_STATUS_OK;
}

ks_status ks__infer_tile(ks__kernel_ctx *ctx) {
    int64_t reps[KS_MAX_RANK], dims[KS_MAX_RANK];
    ks_status st = ks__tile_geometry(ctx, reps, dims);
    if (st || (st = set_out_dtype(ctx, 0, ctx->in[0]->dtype))) return st;
    return set_out_shape(ctx, 0, ctx->in[0]->rank, dims);
}
