/* Shape inference of the elementwise and normalization family (shape_elementwise.h).
 *
 * Binary ops and comparisons broadcast like numpy; every other op keeps its input's shape except
 * the reductions. Inference also fixes which form runs: inputs of one dtype; quantized forms
 * (U8/I8/I16 with per-tensor params, checked for a positive finite scale and a zero point in the
 * dtype's range) need a quantized output of the same dtype; integer forms only for the ops and
 * fused activations defined on integers. An output dtype the graph gives must agree with what the
 * op makes.
 */
#include <math.h>

#include "shape_elementwise.h"

/* ------------------------------------------------------------------------------------------ */
/* checks                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static bool is_numeric_dtype(ks_dtype d) {
    return ks__dtype_is_float(d) || ks__dtype_is_int(d) || d == KS_DTYPE_BOOL;
}

/* Validates the quantization of a tensor a quantized kernel is about to use. */
static ks_status check_qparams(ks__kernel_ctx *ctx, const ks__rt_tensor *t, const char *role) {
    if (t->quant->count == 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "%s tensor '%s' (%s) has no quantization parameters but the op "
                                "runs in quantized form",
                                role, ks__rt_name(t), ks_dtype_string(t->dtype));
    if (t->quant->count > 1)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "%s tensor '%s' is quantized per channel (%u scales); this op "
                                "supports per-tensor quantization only",
                                role, ks__rt_name(t), t->quant->count);
    float s = ks__rt_qscale(t);
    if (!(s > 0.0f) || !isfinite(s))
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "%s tensor '%s' has invalid quantization scale %g", role,
                                ks__rt_name(t), (double)s);
    int32_t zp = ks__rt_qzp(t);
    if (zp < ks__dtype_min(t->dtype) || zp > ks__dtype_max(t->dtype))
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "%s tensor '%s' zero point %d is outside the %s range", role,
                                ks__rt_name(t), zp, ks_dtype_string(t->dtype));
    return KS_STATUS_OK;
}

/* Sets the output shape/dtype; a dtype the graph already gave must agree with what the op makes. */
static ks_status set_out(ks__kernel_ctx *ctx, ks_dtype dtype, int32_t rank, const int64_t *dims) {
    ks__rt_tensor *y = ctx->out[0];
    if (y->dtype != KS_DTYPE_INVALID && y->dtype != dtype)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "output '%s' is declared %s but the op produces %s", ks__rt_name(y),
                                ks_dtype_string(y->dtype), ks_dtype_string(dtype));
    ks__rt_set_shape(y, dtype, rank, dims);
    return KS_STATUS_OK;
}

static ks_status require_inputs(ks__kernel_ctx *ctx, uint32_t n) {
    if (ctx->num_inputs < n || ctx->num_outputs < 1 || !ctx->out[0])
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "expected %u inputs and 1 output", n);
    for (uint32_t i = 0; i < n; i++)
        if (!ctx->in[i])
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "input %u is missing", i);
    return KS_STATUS_OK;
}

static ks_status unsupported_dtype(ks__kernel_ctx *ctx, const ks__rt_tensor *t, const char *what) {
    return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "unsupported dtype %s for input '%s'%s%s",
                            ks_dtype_string(t->dtype), ks__rt_name(t), what ? ": " : "",
                            what ? what : "");
}

/* ------------------------------------------------------------------------------------------ */
/* numpy broadcasting                                                                         */
/* ------------------------------------------------------------------------------------------ */

static ks_status bcast_shape(ks__kernel_ctx *ctx, uint32_t n, int32_t *rank_out,
                             int64_t *dims_out) {
    int32_t rank = 0;
    for (uint32_t k = 0; k < n; k++)
        if (ctx->in[k]->rank > rank) rank = ctx->in[k]->rank;
    if (rank > KS_MAX_RANK)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "rank %d exceeds %d", rank,
                                KS_MAX_RANK);
    for (int32_t d = 0; d < rank; d++) {
        int64_t out = 1;
        uint32_t from = 0;
        for (uint32_t k = 0; k < n; k++) {
            const ks__rt_tensor *t = ctx->in[k];
            int32_t j = d - (rank - t->rank);
            if (j < 0) continue;
            int64_t v = t->dims[j];
            if (v == out || v == 1) continue;
            if (out == 1) {
                out = v;
                from = k;
                continue;
            }
            char da[128], db[128];
            ks__format_dims(da, sizeof(da), ctx->in[from]->rank, ctx->in[from]->dims);
            ks__format_dims(db, sizeof(db), t->rank, t->dims);
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "cannot broadcast input %u '%s' %s with input %u '%s' %s "
                                    "(output dim %d: %lld vs %lld)",
                                    from, ks__rt_name(ctx->in[from]), da, k, ks__rt_name(t), db, d,
                                    (long long)out, (long long)v);
        }
        dims_out[d] = out;
    }
    *rank_out = rank;
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* binary arithmetic, comparisons and WHERE                                                   */
/* ------------------------------------------------------------------------------------------ */

ks_status ks__infer_binary(ks__kernel_ctx *ctx) {
    ks_status st = require_inputs(ctx, 2);
    if (st) return st;
    const ks__rt_tensor *a = ctx->in[0], *b = ctx->in[1];
    const ks__rt_tensor *y = ctx->out[0];
    int32_t act = ctx->node->ip[0];
    if (act < 0 || act >= KS_ACT_COUNT || act == KS_ACT_PRELU || act == KS_ACT_TABLE)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "unknown fused activation %d", act);
    if (a->dtype != b->dtype)
        return ks__kernel_error(
            ctx, KS_STATUS_UNSUPPORTED, "input dtypes differ: '%s' is %s, '%s' is %s",
            ks__rt_name(a), ks_dtype_string(a->dtype), ks__rt_name(b), ks_dtype_string(b->dtype));
    if (ks__rt_is_quantized(a) || ks__rt_is_quantized(b)) {
        if ((st = check_qparams(ctx, a, "input")) || (st = check_qparams(ctx, b, "input")))
            return st;
        if (y->dtype != KS_DTYPE_INVALID && y->dtype != a->dtype)
            return ks__kernel_error(
                ctx, KS_STATUS_UNSUPPORTED, "quantized %s inputs need a %s output, got %s",
                ks_dtype_string(a->dtype), ks_dtype_string(a->dtype), ks_dtype_string(y->dtype));
        if ((st = check_qparams(ctx, y, "output"))) return st;
    } else if (ks__dtype_is_float(a->dtype)) {
        /* every op and activation is defined */
    } else if (ks__dtype_is_int(a->dtype)) {
        if (act != KS_ACT_NONE && act != KS_ACT_RELU && act != KS_ACT_RELU6 &&
            act != KS_ACT_RELU_N1_TO_1)
            return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                    "fused activation %d is not defined for %s inputs", act,
                                    ks_dtype_string(a->dtype));
    } else {
        return unsupported_dtype(ctx, a, "expected f32, f16, i32, i64, or quantized u8/i8/i16");
    }
    int32_t rank;
    int64_t dims[KS_MAX_RANK];
    if ((st = bcast_shape(ctx, 2, &rank, dims))) return st;
    return set_out(ctx, a->dtype, rank, dims);
}

ks_status ks__infer_compare(ks__kernel_ctx *ctx) {
    ks_status st = require_inputs(ctx, 2);
    if (st) return st;
    const ks__rt_tensor *a = ctx->in[0], *b = ctx->in[1];
    if (a->dtype != b->dtype)
        return ks__kernel_error(
            ctx, KS_STATUS_UNSUPPORTED, "input dtypes differ: '%s' is %s, '%s' is %s",
            ks__rt_name(a), ks_dtype_string(a->dtype), ks__rt_name(b), ks_dtype_string(b->dtype));
    if (!is_numeric_dtype(a->dtype))
        return unsupported_dtype(ctx, a, "expected a numeric or bool tensor");
    if (ks__rt_is_quantized(a) != ks__rt_is_quantized(b))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "one input is quantized and the other is not ('%s', '%s')",
                                ks__rt_name(a), ks__rt_name(b));
    if (ks__rt_is_quantized(a) &&
        ((st = check_qparams(ctx, a, "input")) || (st = check_qparams(ctx, b, "input"))))
        return st;
    int32_t rank;
    int64_t dims[KS_MAX_RANK];
    if ((st = bcast_shape(ctx, 2, &rank, dims))) return st;
    return set_out(ctx, KS_DTYPE_BOOL, rank, dims);
}

ks_status ks__infer_where(ks__kernel_ctx *ctx) {
    ks_status st = require_inputs(ctx, 3);
    if (st) return st;
    const ks__rt_tensor *c = ctx->in[0], *a = ctx->in[1], *b = ctx->in[2];
    if (c->dtype != KS_DTYPE_BOOL) return unsupported_dtype(ctx, c, "the condition must be bool");
    if (a->dtype != b->dtype)
        return ks__kernel_error(
            ctx, KS_STATUS_UNSUPPORTED, "value dtypes differ: '%s' is %s, '%s' is %s",
            ks__rt_name(a), ks_dtype_string(a->dtype), ks__rt_name(b), ks_dtype_string(b->dtype));
    if (!is_numeric_dtype(a->dtype))
        return unsupported_dtype(ctx, a, "expected a numeric or bool tensor");
    int32_t rank;
    int64_t dims[KS_MAX_RANK];
    if ((st = bcast_shape(ctx, 3, &rank, dims))) return st;
    return set_out(ctx, a->dtype, rank, dims);
}

/* ------------------------------------------------------------------------------------------ */
/* PRELU and unary ops                                                                        */
/* ------------------------------------------------------------------------------------------ */

ks_status ks__infer_prelu(ks__kernel_ctx *ctx) {
    ks_status st = require_inputs(ctx, 2);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0], *al = ctx->in[1];
    if (x->dtype != al->dtype)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "input '%s' is %s but alpha '%s' is %s",
                                ks__rt_name(x), ks_dtype_string(x->dtype), ks__rt_name(al),
                                ks_dtype_string(al->dtype));
    if (ks__rt_is_quantized(x)) {
        if ((st = check_qparams(ctx, x, "input")) || (st = check_qparams(ctx, al, "alpha")) ||
            (st = check_qparams(ctx, ctx->out[0], "output")))
            return st;
    } else if (!ks__dtype_is_float(x->dtype)) {
        return unsupported_dtype(ctx, x, "expected f32, f16 or quantized u8/i8/i16");
    }
    int32_t rank;
    int64_t dims[KS_MAX_RANK];
    if ((st = bcast_shape(ctx, 2, &rank, dims))) return st;
    return set_out(ctx, x->dtype, rank, dims);
}

/* Integer (non-quantized) unary ops: those that make sense on integers. */
static bool unary_int_supported(uint32_t op) {
    switch (op) {
    case KS_OP_RELU:
    case KS_OP_RELU6:
    case KS_OP_RELU_N1_TO_1:
    case KS_OP_ABS:
    case KS_OP_NEG:
    case KS_OP_FLOOR:
    case KS_OP_CEIL:
    case KS_OP_CLIP:
        return true;
    default:
        return false;
    }
}

ks_status ks__infer_unary(ks__kernel_ctx *ctx) {
    ks_status st = require_inputs(ctx, 1);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    uint32_t op = ctx->node->op;
    if (ks__rt_is_quantized(x)) {
        if ((st = check_qparams(ctx, x, "input"))) return st;
        const ks__rt_tensor *y = ctx->out[0];
        if (y->dtype != KS_DTYPE_INVALID && y->dtype != x->dtype)
            return ks__kernel_error(
                ctx, KS_STATUS_UNSUPPORTED, "quantized %s input needs a %s output, got %s",
                ks_dtype_string(x->dtype), ks_dtype_string(x->dtype), ks_dtype_string(y->dtype));
        if ((st = check_qparams(ctx, y, "output"))) return st;
    } else if (ks__dtype_is_float(x->dtype)) {
        /* all defined */
    } else if (ks__dtype_is_int(x->dtype)) {
        if (!unary_int_supported(op))
            return unsupported_dtype(ctx, x, "this op needs a float or quantized input");
    } else {
        return unsupported_dtype(ctx, x, "expected f32, f16, integer or quantized u8/i8/i16");
    }
    if (op == KS_OP_CLIP && ctx->node->fp[0] > ctx->node->fp[1])
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "clip min %g > max %g",
                                (double)ctx->node->fp[0], (double)ctx->node->fp[1]);
    return set_out(ctx, x->dtype, x->rank, x->dims);
}

/* ------------------------------------------------------------------------------------------ */
/* SOFTMAX / LOG_SOFTMAX, REDUCE, ARG_MAX / ARG_MIN                                           */
/* ------------------------------------------------------------------------------------------ */

ks_status ks__infer_softmax(ks__kernel_ctx *ctx) {
    ks_status st = require_inputs(ctx, 1);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    if (x->rank < 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "input '%s' is a scalar",
                                ks__rt_name(x));
    if (ks__resolve_axis(ctx->node->ip[0], x->rank) < 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "axis %d out of range for rank %d",
                                ctx->node->ip[0], x->rank);
    if (ks__rt_is_quantized(x)) {
        if ((st = check_qparams(ctx, x, "input")) ||
            (st = check_qparams(ctx, ctx->out[0], "output")))
            return st;
        if (ctx->out[0]->dtype != x->dtype)
            return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                    "quantized %s input needs a %s output, got %s",
                                    ks_dtype_string(x->dtype), ks_dtype_string(x->dtype),
                                    ks_dtype_string(ctx->out[0]->dtype));
    } else if (!ks__dtype_is_float(x->dtype)) {
        return unsupported_dtype(ctx, x, "expected f32, f16 or quantized u8/i8/i16");
    }
    return set_out(ctx, x->dtype, x->rank, x->dims);
}

/* Resolves the node's axes into a mask; false on a bad axis (error already reported). */
bool ks__reduce_axes(ks__kernel_ctx *ctx, int32_t rank, uint32_t *mask_out) {
    const int32_t *ip = ctx->node->ip;
    int32_t num = ip[2];
    uint32_t mask = 0;
    if (num < 0 || num > KS_MAX_RANK) {
        ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "num_axes %d out of range 0..%d", num,
                         KS_MAX_RANK);
        return false;
    }
    if (num == 0) {
        mask = rank >= 32 ? 0xffffffffu : ((1u << rank) - 1u);
    } else {
        for (int32_t k = 0; k < num; k++) {
            int32_t a = ks__resolve_axis(ip[3 + k], rank);
            if (a < 0) {
                ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "axis %d out of range for rank %d",
                                 ip[3 + k], rank);
                return false;
            }
            mask |= 1u << a;
        }
    }
    *mask_out = mask;
    return true;
}

ks_status ks__infer_reduce(ks__kernel_ctx *ctx) {
    ks_status st = require_inputs(ctx, 1);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    const int32_t kind = ctx->node->ip[0];
    const bool keep = ctx->node->ip[1] != 0;
    if (kind < KS__REDUCE_MEAN || kind > KS__REDUCE_PROD)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "unknown reduce kind %d", kind);
    if (ks__rt_is_quantized(x)) {
        if ((st = check_qparams(ctx, x, "input")) ||
            (st = check_qparams(ctx, ctx->out[0], "output")))
            return st;
        if (ctx->out[0]->dtype != x->dtype)
            return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                    "quantized %s input needs a %s output, got %s",
                                    ks_dtype_string(x->dtype), ks_dtype_string(x->dtype),
                                    ks_dtype_string(ctx->out[0]->dtype));
    } else if (!ks__dtype_is_float(x->dtype) && !ks__dtype_is_int(x->dtype)) {
        return unsupported_dtype(ctx, x, "expected f32, f16, integer or quantized u8/i8/i16");
    }
    uint32_t mask;
    if (!ks__reduce_axes(ctx, x->rank, &mask)) return KS_STATUS_INVALID_MODEL;
    int32_t rank = 0;
    int64_t dims[KS_MAX_RANK];
    for (int32_t d = 0; d < x->rank; d++) {
        if (mask & (1u << d)) {
            if (keep) dims[rank++] = 1;
        } else {
            dims[rank++] = x->dims[d];
        }
    }
    return set_out(ctx, x->dtype, rank, dims);
}

ks_status ks__infer_arg(ks__kernel_ctx *ctx) {
    ks_status st = require_inputs(ctx, 1);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    if (!ks__dtype_is_float(x->dtype) && !ks__dtype_is_int(x->dtype) && x->dtype != KS_DTYPE_BOOL)
        return unsupported_dtype(ctx, x, "expected a numeric tensor");
    if (x->rank < 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "input '%s' is a scalar",
                                ks__rt_name(x));
    const int32_t axis = ks__resolve_axis(ctx->node->ip[0], x->rank);
    if (axis < 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "axis %d out of range for rank %d",
                                ctx->node->ip[0], x->rank);
    if (x->dims[axis] == 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input '%s' has an empty reduction axis %d", ks__rt_name(x), axis);
    ks_dtype od = y->dtype == KS_DTYPE_INVALID ? KS_DTYPE_I64 : y->dtype;
    if (od != KS_DTYPE_I32 && od != KS_DTYPE_I64)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "output '%s' dtype %s: index outputs must be i32 or i64",
                                ks__rt_name(y), ks_dtype_string(od));
    int32_t rank = 0;
    int64_t dims[KS_MAX_RANK];
    for (int32_t d = 0; d < x->rank; d++) {
        if (d == axis) {
            if (ctx->node->ip[1]) dims[rank++] = 1;
        } else {
            dims[rank++] = x->dims[d];
        }
    }
    return set_out(ctx, od, rank, dims);
}

/* ------------------------------------------------------------------------------------------ */
/* QUANTIZE / DEQUANTIZE / CAST                                                               */
/* ------------------------------------------------------------------------------------------ */

ks_status ks__qchan_init(ks__kernel_ctx *ctx, const ks__rt_tensor *t, ks__qchan *c) {
    c->q = t->quant;
    c->inner = 1;
    c->len = 1;
    if (t->quant->count <= 1) return KS_STATUS_OK;
    int32_t axis = ks__resolve_axis(t->quant->axis, t->rank);
    if (axis < 0 || t->dims[axis] != (int64_t)t->quant->count)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "tensor '%s': %u per-channel scales do not match axis %d",
                                ks__rt_name(t), t->quant->count, t->quant->axis);
    for (int32_t d = axis + 1; d < t->rank; d++)
        c->inner *= t->dims[d];
    c->len = t->dims[axis];
    return KS_STATUS_OK;
}

static ks_status check_scales(ks__kernel_ctx *ctx, const ks__rt_tensor *t, const char *role) {
    if (t->quant->count == 0 || !t->quant->scales || !t->quant->zero_points)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "%s tensor '%s' (%s) has no quantization parameters", role,
                                ks__rt_name(t), ks_dtype_string(t->dtype));
    for (uint32_t c = 0; c < t->quant->count; c++) {
        float s = t->quant->scales[c];
        if (!(s > 0.0f) || !isfinite(s))
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                    "%s tensor '%s' has invalid quantization scale %g (channel "
                                    "%u)",
                                    role, ks__rt_name(t), (double)s, c);
    }
    return KS_STATUS_OK;
}

ks_status ks__infer_quantize(ks__kernel_ctx *ctx) {
    ks_status st = require_inputs(ctx, 1);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    if (!ks__dtype_is_qint(y->dtype))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "output '%s' dtype %s: quantize produces u8, i8 or i16",
                                ks__rt_name(y), ks_dtype_string(y->dtype));
    if ((st = check_scales(ctx, y, "output"))) return st;
    if (x->dtype == KS_DTYPE_F32 || x->dtype == KS_DTYPE_F16) {
        /* float -> quantized; per-channel output params allowed */
    } else if (ks__dtype_is_qint(x->dtype)) {
        if ((st = check_qparams(ctx, x, "input")) || (st = check_qparams(ctx, y, "output")))
            return st;
    } else {
        return unsupported_dtype(ctx, x, "quantize takes f32/f16, or u8/i8/i16 to requantize");
    }
    ks_dtype od = y->dtype;
    if ((st = set_out(ctx, od, x->rank, x->dims))) return st;
    ks__qchan c;
    return ks__qchan_init(ctx, y, &c);
}

ks_status ks__infer_dequantize(ks__kernel_ctx *ctx) {
    ks_status st = require_inputs(ctx, 1);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    if (x->dtype == KS_DTYPE_F16) {
        /* plain conversion */
    } else if (ks__dtype_is_qint(x->dtype) || x->dtype == KS_DTYPE_I32) {
        if ((st = check_scales(ctx, x, "input"))) return st;
        ks__qchan c;
        if ((st = ks__qchan_init(ctx, x, &c))) return st;
    } else {
        return unsupported_dtype(ctx, x, "dequantize takes u8, i8, i16, i32 or f16");
    }
    return set_out(ctx, KS_DTYPE_F32, x->rank, x->dims);
}

ks_status ks__infer_cast(ks__kernel_ctx *ctx) {
    ks_status st = require_inputs(ctx, 1);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    if (!is_numeric_dtype(x->dtype)) return unsupported_dtype(ctx, x, "cast takes numeric input");
    if (!is_numeric_dtype(y->dtype))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "output '%s' dtype %s: cast produces a numeric or bool tensor",
                                ks__rt_name(y), ks_dtype_string(y->dtype));
    return set_out(ctx, y->dtype, x->rank, x->dims);
}
