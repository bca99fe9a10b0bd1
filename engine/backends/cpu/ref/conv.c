/* Reference kernels: CONV2D (grouped/depthwise, dilated), CONV2D_TRANSPOSE, POOL2D,
 * FULLY_CONNECTED and MATMUL, in fp32 and in TFLite-exact quantized integer form.
 *
 * The quantized paths follow TFLite's reference integer kernels: int32 accumulation of
 * (x - x_zp) * (w - w_zp), int32 bias, requantization with MultiplyByQuantizedMultiplier, output
 * zero point, then the fused activation clamp. The multiplier is derived exactly the way TFLite
 * derives it, because a one-ulp difference in the double multiplier can move a rounding boundary:
 * uint8 kernels and per-tensor FC use the legacy float product in_scale * w_scale, int8
 * (per-channel) kernels use a double product.
 *
 * Float paths accumulate in double so that the oracle is more accurate than any fast kernel.
 */
#include <math.h>
#include <string.h>

#include "conv_internal.h"
#include "../op_enabled.h"
#include "../qgemm.h" /* the fused residual ADD's constants (shared with the fast kernels) */

/* ------------------------------------------------------------------------------------------ */
/* Shared helpers (declared in conv_internal.h)                                               */

int ks__conv_is_quant(const ks__rt_tensor *t) {
    return t && (t->dtype == KS_DTYPE_U8 || t->dtype == KS_DTYPE_I8) && t->quant &&
           t->quant->count > 0;
}

float ks__conv_qscale(const ks__rt_tensor *t, int64_t c) {
    const ks__quant *q = t->quant;
    if (!q || q->count == 0 || !q->scales) return 1.0f;
    return q->count == 1 ? q->scales[0] : q->scales[c < 0 || c >= (int64_t)q->count ? 0 : c];
}

int32_t ks__conv_qzp(const ks__rt_tensor *t, int64_t c) {
    const ks__quant *q = t->quant;
    if (!q || q->count == 0 || !q->zero_points) return 0;
    return q->count == 1 ? q->zero_points[0]
                         : q->zero_points[c < 0 || c >= (int64_t)q->count ? 0 : c];
}

int32_t ks__conv_load_q(const ks__rt_tensor *t, int64_t i) {
    switch (t->dtype) {
    case KS_DTYPE_U8:
        return ((const uint8_t *)t->data)[i];
    case KS_DTYPE_I8:
        return ((const int8_t *)t->data)[i];
    case KS_DTYPE_I16:
        return ((const int16_t *)t->data)[i];
    case KS_DTYPE_I32:
        return ((const int32_t *)t->data)[i];
    default:
        return 0;
    }
}

void ks__conv_store_q(ks__rt_tensor *t, int64_t i, int32_t v) {
    switch (t->dtype) {
    case KS_DTYPE_U8:
        ((uint8_t *)t->data)[i] = (uint8_t)v;
        break;
    case KS_DTYPE_I8:
        ((int8_t *)t->data)[i] = (int8_t)v;
        break;
    case KS_DTYPE_I16:
        ((int16_t *)t->data)[i] = (int16_t)v;
        break;
    case KS_DTYPE_I32:
        ((int32_t *)t->data)[i] = v;
        break;
    default:
        break;
    }
}

float ks__conv_load_f(const ks__rt_tensor *t, int64_t i, int64_t c) {
    switch (t->dtype) {
    case KS_DTYPE_F32:
        return ((const float *)t->data)[i];
    case KS_DTYPE_F16:
        return ks__f16_to_f32(((const uint16_t *)t->data)[i]);
    case KS_DTYPE_U8:
    case KS_DTYPE_I8:
        if (ks__conv_is_quant(t))
            return (float)(ks__conv_load_q(t, i) - ks__conv_qzp(t, c)) * ks__conv_qscale(t, c);
        return (float)ks__conv_load_q(t, i);
    default:
        return (float)ks__rt_get_f64(t, i);
    }
}

ks_status ks__conv_check_dims(ks__kernel_ctx *ctx, const char *what, int32_t rank,
                              const int64_t *dims, int64_t min_dim) {
    int64_t numel = 1;
    for (int32_t i = 0; i < rank; i++) {
        if (dims[i] < min_dim)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "%s dim %d is %lld (must be >= %lld)", what, (int)i,
                                    (long long)dims[i], (long long)min_dim);
        if (dims[i] > KS__CONV_MAX_NUMEL)
            return ks__kernel_error(ctx, KS_STATUS_LIMIT_EXCEEDED, "%s dim %d is %lld (limit %lld)",
                                    what, (int)i, (long long)dims[i],
                                    (long long)KS__CONV_MAX_NUMEL);
        if (dims[i] > 0 && numel > KS__CONV_MAX_NUMEL / dims[i])
            return ks__kernel_error(ctx, KS_STATUS_LIMIT_EXCEEDED, "%s has more than %lld elements",
                                    what, (long long)KS__CONV_MAX_NUMEL);
        numel *= dims[i];
    }
    return KS_STATUS_OK;
}

ks_status ks__conv_check_input(ks__kernel_ctx *ctx, uint32_t idx, int32_t rank, int need_value) {
    if (idx >= ctx->num_inputs || !ctx->in[idx])
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "input %u is missing", idx);
    const ks__rt_tensor *t = ctx->in[idx];
    if (rank >= 0 && t->rank != rank)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "input %u has rank %d, expected %d",
                                idx, (int)t->rank, (int)rank);
    if (t->rank < 0 || t->rank > KS_MAX_RANK)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "input %u has invalid rank %d", idx,
                                (int)t->rank);
    for (int32_t i = 0; i < t->rank; i++)
        if (t->dims[i] < 0 || t->dims[i] > KS__CONV_MAX_NUMEL)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "input %u dim %d is %lld", idx,
                                    (int)i, (long long)t->dims[i]);
    if (need_value && !t->data)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "input %u must be a constant (its value sets the output shape)",
                                idx);
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Local helpers                                                                              */

static const ks__rt_tensor *opt_input(const ks__kernel_ctx *ctx, uint32_t idx) {
    return idx < ctx->num_inputs ? ctx->in[idx] : NULL;
}

static int act_is_quantizable(int32_t act) {
    return act == KS_ACT_NONE || act == KS_ACT_RELU || act == KS_ACT_RELU6 ||
           act == KS_ACT_RELU_N1_TO_1;
}

static int32_t sat_i32(int64_t v) {
    return v < INT32_MIN ? INT32_MIN : (v > INT32_MAX ? INT32_MAX : (int32_t)v);
}

/* Output size and leading pad of one spatial axis. `k_eff` is the dilated kernel extent. */
static ks_status spatial_out(ks__kernel_ctx *ctx, const char *axis, int64_t in, int64_t k_eff,
                             int64_t stride, int32_t mode, int64_t pad_lo, int64_t pad_hi,
                             int ceil_mode, int64_t *out, int64_t *pad_lo_out) {
    int64_t o = 0, lo = 0;
    if (stride < 1 || k_eff < 1 || pad_lo < 0 || pad_hi < 0)
        return ks__kernel_error(
            ctx, KS_STATUS_INVALID_MODEL, "%s: invalid stride %lld / kernel %lld / pads %lld,%lld",
            axis, (long long)stride, (long long)k_eff, (long long)pad_lo, (long long)pad_hi);
    switch (mode) {
    case KS_PAD_EXPLICIT: {
        int64_t span = in + pad_lo + pad_hi - k_eff;
        if (span < 0)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "%s: input %lld + pads %lld,%lld is smaller than the kernel "
                                    "extent %lld",
                                    axis, (long long)in, (long long)pad_lo, (long long)pad_hi,
                                    (long long)k_eff);
        o = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
        /* ONNX/PyTorch: the last window must start inside the input or the leading pad. */
        if (ceil_mode && (o - 1) * stride >= in + pad_lo) o--;
        lo = pad_lo;
        break;
    }
    case KS_PAD_SAME_UPPER:
    case KS_PAD_SAME_LOWER: {
        o = (in + stride - 1) / stride;
        int64_t total = (o - 1) * stride + k_eff - in;
        if (total < 0) total = 0;
        lo = mode == KS_PAD_SAME_UPPER ? total / 2 : total - total / 2;
        break;
    }
    case KS_PAD_VALID:
        if (in < k_eff)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "%s: input %lld is smaller than the kernel extent %lld (VALID)",
                                    axis, (long long)in, (long long)k_eff);
        o = (in - k_eff) / stride + 1;
        break;
    default:
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "unknown pad mode %d", (int)mode);
    }
    if (o < 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "%s: output size %lld", axis,
                                (long long)o);
    *out = o;
    *pad_lo_out = lo;
    return KS_STATUS_OK;
}

/* Checks the quantization of a quantized op's activations: per-tensor, positive scale. */
static ks_status check_act_quant(ks__kernel_ctx *ctx, const ks__rt_tensor *t, const char *what) {
    if (t->quant->count != 1)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "%s must be quantized per tensor (has %u scales)", what,
                                t->quant->count);
    float s = t->quant->scales ? t->quant->scales[0] : 0.0f;
    if (!(s > 0.0f) || !isfinite(s))
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "%s has invalid scale %g", what,
                                (double)s);
    return KS_STATUS_OK;
}

/* Output of a quantized op: dtype U8/I8 (pre-filled from the graph) with per-tensor quant. */
static ks_status check_quant_output(ks__kernel_ctx *ctx, int32_t act) {
    ks__rt_tensor *y = ctx->out[0];
    if ((y->dtype != KS_DTYPE_U8 && y->dtype != KS_DTYPE_I8) || !y->quant || y->quant->count == 0)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "quantized input needs a quantized U8/I8 output (output dtype %d)",
                                (int)y->dtype);
    if (!act_is_quantizable(act))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "fused activation %d is not supported on quantized tensors",
                                (int)act);
    return check_act_quant(ctx, y, "output");
}

/* Weights of a quantized op: U8/I8, per tensor or per channel along axis 0 with `channels`. */
static ks_status check_weight_quant(ks__kernel_ctx *ctx, const ks__rt_tensor *w, int64_t channels) {
    if (!ks__conv_is_quant(w))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "quantized input needs quantized U8/I8 weights (dtype %d)",
                                (int)w->dtype);
    const ks__quant *q = w->quant;
    if (q->count != 1 && ((int64_t)q->count != channels || q->axis != 0))
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "weights have %u scales on axis %d; expected 1 or %lld on axis 0",
                                q->count, (int)q->axis, (long long)channels);
    for (uint32_t i = 0; i < q->count; i++)
        if (!(q->scales[i] >= 0.0f) || !isfinite(q->scales[i]))
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "weight scale %u is invalid (%g)",
                                    i, (double)q->scales[i]);
    return KS_STATUS_OK;
}

static ks_status check_bias(ks__kernel_ctx *ctx, uint32_t idx, int64_t channels, int quant) {
    const ks__rt_tensor *b = opt_input(ctx, idx);
    if (!b) return KS_STATUS_OK;
    if (ks__rt_numel(b) != channels)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "bias has %lld elements, expected %lld", (long long)ks__rt_numel(b),
                                (long long)channels);
    if (quant ? b->dtype != KS_DTYPE_I32 : (b->dtype != KS_DTYPE_F32 && b->dtype != KS_DTYPE_F16))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "bias dtype %d is not supported (%s)",
                                (int)b->dtype, quant ? "quantized ops need I32" : "need F32");
    return KS_STATUS_OK;
}

/* Float-path weights: F32/F16, or U8/I8 with quantization (dequantized on the fly). */
static ks_status check_float_weights(ks__kernel_ctx *ctx, const ks__rt_tensor *w) {
    if (w->dtype == KS_DTYPE_F32 || w->dtype == KS_DTYPE_F16 || ks__conv_is_quant(w))
        return KS_STATUS_OK;
    return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "weights dtype %d is not supported",
                            (int)w->dtype);
}

/* Multiplier of output channel c. `legacy_float_product` selects TFLite's uint8/per-tensor rule
 * (scale product rounded to float before widening). */
static void channel_multiplier(const ks__rt_tensor *x, const ks__rt_tensor *w, float ys, int64_t c,
                               int legacy_float_product, int32_t *mult, int32_t *shift) {
    float xs = ks__conv_qscale(x, 0), ws = ks__conv_qscale(w, c);
    double real = legacy_float_product ? (double)(xs * ws) / (double)ys
                                       : (double)xs * (double)ws / (double)ys;
    ks__quant_multiplier(real, mult, shift);
}

/* ------------------------------------------------------------------------------------------ */
/* CONV2D                                                                                      */

typedef struct conv_geom {
    int64_t n, ih, iw, ic, oh, ow, oc, kh, kw, icg, ocg, groups;
    int64_t sh, sw, dh, dw, pt, pl;
    int32_t act;
    float alpha;
} conv_geom;

static int64_t param_or_one(int32_t v) {
    return v == 0 ? 1 : v;
}

/* The fused act of a conv-family node: a known ks__act; PRELU (and TABLE, checked further by
 * check_fused) only on CONV2D, which has the extra input. */
static ks_status check_act(ks__kernel_ctx *ctx, int32_t act, int prelu_ok) {
    if (act < 0 || act >= KS_ACT_COUNT ||
        ((act == KS_ACT_PRELU || act == KS_ACT_TABLE) && !prelu_ok))
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "fused activation %d is unknown or not allowed on this op",
                                (int)act);
    return KS_STATUS_OK;
}

static ks_status conv_geometry(ks__kernel_ctx *ctx, conv_geom *g) {
    ks_status st;
    if ((st = ks__conv_check_input(ctx, 0, 4, 0)) || (st = ks__conv_check_input(ctx, 1, 4, 0)))
        return st;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1];
    const int32_t *ip = ctx->node->ip;
    memset(g, 0, sizeof(*g));
    g->n = x->dims[0], g->ih = x->dims[1], g->iw = x->dims[2], g->ic = x->dims[3];
    g->oc = w->dims[0], g->kh = w->dims[1], g->kw = w->dims[2], g->icg = w->dims[3];
    g->groups = param_or_one(ip[9]);
    g->sh = param_or_one(ip[0]), g->sw = param_or_one(ip[1]);
    g->dh = param_or_one(ip[2]), g->dw = param_or_one(ip[3]);
    g->act = ip[10];
    g->alpha = ctx->node->fp[0];
    if ((st = check_act(ctx, g->act, 1))) return st;
    if (g->groups < 1 || g->dh < 1 || g->dw < 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "invalid groups %lld / dilation %lld,%lld", (long long)g->groups,
                                (long long)g->dh, (long long)g->dw);
    if (g->oc < 1 || g->kh < 1 || g->kw < 1 || g->icg < 1)
        return ks__kernel_error(
            ctx, KS_STATUS_INVALID_SHAPE, "weights shape [%lld,%lld,%lld,%lld] has an empty dim",
            (long long)g->oc, (long long)g->kh, (long long)g->kw, (long long)g->icg);
    if (g->ic != g->icg * g->groups)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input 0 has %lld channels, weights expect %lld (groups %lld)",
                                (long long)g->ic, (long long)(g->icg * g->groups),
                                (long long)g->groups);
    if (g->oc % g->groups != 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "%lld output channels do not split into %lld groups",
                                (long long)g->oc, (long long)g->groups);
    g->ocg = g->oc / g->groups;
    int64_t keh = (g->kh - 1) * g->dh + 1, kew = (g->kw - 1) * g->dw + 1;
    if ((st = spatial_out(ctx, "height", g->ih, keh, g->sh, ip[8], ip[4], ip[6], 0, &g->oh,
                          &g->pt)) ||
        (st = spatial_out(ctx, "width", g->iw, kew, g->sw, ip[8], ip[5], ip[7], 0, &g->ow, &g->pl)))
        return st;
    return KS_STATUS_OK;
}

/* CONV2D's input 4 (per-channel PRELU slopes) is present exactly when act is PRELU, and is F32
 * with one value per output channel. */
static ks_status check_slope(ks__kernel_ctx *ctx, int32_t act, int64_t oc) {
    const ks__rt_tensor *s = opt_input(ctx, 4);
    if (act == KS_ACT_TABLE) return KS_STATUS_OK; /* input 4 is the table (check_fused) */
    if (act != KS_ACT_PRELU) {
        if (s)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                    "input 4 (PRELU slopes) is given but the act is %d", (int)act);
        return KS_STATUS_OK;
    }
    if (!s || !s->data || s->dtype != KS_DTYPE_F32 || (s->quant && s->quant->count != 0) ||
        ks__rt_numel(s) != oc)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "act PRELU needs input 4: %lld F32 slopes with known values "
                                "(got %s, %lld values)",
                                (long long)oc, s ? "a tensor" : "none",
                                (long long)(s ? ks__rt_numel(s) : 0));
    return KS_STATUS_OK;
}

/* Quantized CONV2D's fused forms (ops.inc): ip[12] == 1 gives an intermediate (scale fp[1],
 * zero point ip[11], y's dtype), followed by the quantized ADD of the residual (input 3) or the
 * output table (act TABLE, input 4). `quant`: the conv is quantized. */
static ks_status check_fused(ks__kernel_ctx *ctx, int quant, int32_t act) {
    const int32_t *ip = ctx->node->ip;
    const ks__rt_tensor *res = opt_input(ctx, 3), *tab = opt_input(ctx, 4);
    const ks__rt_tensor *y = ctx->out[0];
    if (ip[12] != 1 || !quant) {
        if (act == KS_ACT_TABLE)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                    "act TABLE needs a quantized conv with the intermediate "
                                    "params (ip[12] = 1)");
        if (res && quant)
            return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                    "a residual on a quantized conv needs the intermediate params "
                                    "(ip[12] = 1)");
        return KS_STATUS_OK; /* float convs ignore ip[11], ip[12] and fp[1] */
    }
    float is = ctx->node->fp[1];
    int32_t iz = ip[11];
    int32_t lo = y->dtype == KS_DTYPE_U8 ? 0 : -128, hi = y->dtype == KS_DTYPE_U8 ? 255 : 127;
    if (!(is > 0.0f) || !isfinite(is) || iz < lo || iz > hi)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "intermediate scale %g / zero point %d invalid for dtype %s",
                                (double)is, (int)iz, ks_dtype_string(y->dtype));
    if (act == KS_ACT_TABLE) {
        if (res || !tab || !tab->data || tab->dtype != y->dtype || ks__rt_numel(tab) != 256)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                    "act TABLE needs input 4: a constant [256] %s table and no "
                                    "residual (got %s, %lld values)",
                                    ks_dtype_string(y->dtype), tab ? "a tensor" : "none",
                                    (long long)(tab ? ks__rt_numel(tab) : 0));
        return KS_STATUS_OK;
    }
    if (!res || tab)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "fused intermediate needs a residual (input 3) or act TABLE");
    if (!act_is_quantizable(act))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "fused activation %d is not supported on quantized tensors",
                                (int)act);
    if (res->dtype != y->dtype || !ks__conv_is_quant(res) || res->rank != 4)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "residual must be %s, rank 4, quantized (dtype %s, rank %d)",
                                ks_dtype_string(y->dtype), ks_dtype_string(res->dtype),
                                (int)res->rank);
    ks_status st = check_act_quant(ctx, res, "residual");
    if (st) return st;
    int32_t rz = res->quant->zero_points[0];
    if (rz < lo || rz > hi)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "residual zero point %d invalid",
                                (int)rz);
    return KS_STATUS_OK;
}

static ks_status conv_infer(ks__kernel_ctx *ctx) {
    conv_geom g;
    ks_status st = conv_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1];
    int quant = ks__conv_is_quant(x);
    int64_t dims[4] = {g.n, g.oh, g.ow, g.oc};
    if ((st = ks__conv_check_dims(ctx, "output", 4, dims, 0))) return st;
    if ((st = check_bias(ctx, 2, g.oc, quant))) return st;
    const ks__rt_tensor *res = opt_input(ctx, 3);
    if (quant && (st = check_quant_output(ctx, g.act == KS_ACT_TABLE ? KS_ACT_NONE : g.act)))
        return st;
    if ((st = check_fused(ctx, quant, g.act))) return st;
    if (res) {
        int same = res->rank == 4;
        for (int i = 0; same && i < 4; i++)
            same = res->dims[i] == dims[i];
        if (!same || (!quant && (res->dtype != KS_DTYPE_F32 || res->quant->count != 0)))
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "residual must have the output's shape (F32 if float) "
                                    "[%lld,%lld,%lld,%lld] (dtype %d, rank %d)",
                                    (long long)dims[0], (long long)dims[1], (long long)dims[2],
                                    (long long)dims[3], (int)res->dtype, (int)res->rank);
    }
    if ((st = check_slope(ctx, g.act, g.oc))) return st;
    if (quant) {
        if ((st = check_act_quant(ctx, x, "input 0")) || (st = check_weight_quant(ctx, w, g.oc)))
            return st;
        ks__rt_set_shape(ctx->out[0], ctx->out[0]->dtype, 4, dims);
        ctx->scratch_bytes = (size_t)g.oc * 2 * sizeof(int32_t);
        return KS_STATUS_OK;
    }
    if (x->dtype != KS_DTYPE_F32)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "input 0 dtype %d is not supported (F32 or quantized U8/I8)",
                                (int)x->dtype);
    if ((st = check_float_weights(ctx, w))) return st;
    ks__rt_set_shape(ctx->out[0], KS_DTYPE_F32, 4, dims);
    return KS_STATUS_OK;
}

/* The fused node's second step on one intermediate value t (ops.inc): the quantized ADD with the
 * residual value r, or the table lookup. */
static int32_t conv_fused_out(const ks__q8_fused *f, const ks__rt_tensor *tab, ks_dtype dt,
                              int32_t t, int32_t r) {
    if (!tab) return ks__q8_fused_add_one(f, t, r);
    return ks__conv_load_q(tab, t + (dt == KS_DTYPE_I8 ? 128 : 0));
}

static ks_status conv_run(ks__kernel_ctx *ctx) {
    conv_geom g;
    ks_status st = conv_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1], *b = opt_input(ctx, 2);
    const ks__rt_tensor *res = opt_input(ctx, 3);
    ks__rt_tensor *y = ctx->out[0];
    int quant = ks__conv_is_quant(x);
    int32_t *mult = NULL, *shift = NULL;
    int32_t xzp = 0, yzp = 0, lo = 0, hi = 0;
    if ((st = check_slope(ctx, g.act, g.oc))) return st;
    const float *slope = g.act == KS_ACT_PRELU ? (const float *)ctx->in[4]->data : NULL;
    const int fused = quant && ctx->node->ip[12] == 1;
    if ((st = check_fused(ctx, quant, g.act))) return st;
    if (res && (ks__rt_numel(res) != ks__rt_numel(y) || (!quant && res->dtype != KS_DTYPE_F32)))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "residual does not match the output");
    const ks__rt_tensor *tab = fused && g.act == KS_ACT_TABLE ? ctx->in[4] : NULL;
    ks__q8_fused fz;
    memset(&fz, 0, sizeof(fz));
    if (quant) {
        if (!ctx->scratch || ctx->scratch_bytes < (size_t)g.oc * 2 * sizeof(int32_t))
            return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "scratch buffer missing");
        mult = (int32_t *)ctx->scratch;
        shift = mult + g.oc;
        /* A fused node first requantizes to the intermediate (fp[1], ip[11], act NONE). */
        float ys = fused ? ctx->node->fp[1] : ks__conv_qscale(y, 0);
        for (int64_t c = 0; c < g.oc; c++)
            channel_multiplier(x, w, ys, c, x->dtype == KS_DTYPE_U8, &mult[c], &shift[c]);
        xzp = ks__conv_qzp(x, 0);
        yzp = fused ? ctx->node->ip[11] : ks__conv_qzp(y, 0);
        ks__quant_act_range(fused ? KS_ACT_NONE : g.act, ys, yzp, y->dtype, &lo, &hi);
        if (fused && !tab)
            ks__q8_fused_add_init(&fz, y->dtype, ys, yzp, ks__conv_qscale(res, 0),
                                  ks__conv_qzp(res, 0), ks__conv_qscale(y, 0), ks__conv_qzp(y, 0),
                                  g.act);
    }
    for (int64_t n = 0; n < g.n; n++) {
        for (int64_t oy = 0; oy < g.oh; oy++) {
            for (int64_t ox = 0; ox < g.ow; ox++) {
                int64_t yi = ((n * g.oh + oy) * g.ow + ox) * g.oc;
                for (int64_t co = 0; co < g.oc; co++) {
                    int64_t ci0 = (co / g.ocg) * g.icg; /* first input channel of the group */
                    double facc = 0.0;
                    int64_t qacc = 0;
                    int32_t wzp = quant ? ks__conv_qzp(w, co) : 0;
                    for (int64_t ky = 0; ky < g.kh; ky++) {
                        int64_t iy = oy * g.sh - g.pt + ky * g.dh;
                        if (iy < 0 || iy >= g.ih) continue;
                        for (int64_t kx = 0; kx < g.kw; kx++) {
                            int64_t ix = ox * g.sw - g.pl + kx * g.dw;
                            if (ix < 0 || ix >= g.iw) continue;
                            int64_t xi = ((n * g.ih + iy) * g.iw + ix) * g.ic + ci0;
                            int64_t wi = ((co * g.kh + ky) * g.kw + kx) * g.icg;
                            for (int64_t ci = 0; ci < g.icg; ci++) {
                                if (quant)
                                    qacc += (int64_t)(ks__conv_load_q(x, xi + ci) - xzp) *
                                            (ks__conv_load_q(w, wi + ci) - wzp);
                                else
                                    facc += (double)((const float *)x->data)[xi + ci] *
                                            ks__conv_load_f(w, wi + ci, co);
                            }
                        }
                    }
                    if (quant) {
                        if (b) qacc += ks__conv_load_q(b, co);
                        int32_t v = ks__quant_mul(sat_i32(qacc), mult[co], shift[co]) + yzp;
                        v = v < lo ? lo : (v > hi ? hi : v);
                        if (fused)
                            v = conv_fused_out(&fz, tab, y->dtype, v,
                                               res ? ks__conv_load_q(res, yi + co) : 0);
                        ks__conv_store_q(y, yi + co, v);
                    } else {
                        if (b) facc += ks__conv_load_f(b, co, co);
                        if (res) facc += ((const float *)res->data)[yi + co];
                        ((float *)y->data)[yi + co] =
                            ks__act_apply((float)facc, g.act, slope ? slope[co] : g.alpha);
                    }
                }
            }
        }
    }
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* CONV2D_TRANSPOSE                                                                            */

static ks_status tconv_geometry(ks__kernel_ctx *ctx, conv_geom *g) {
    ks_status st;
    if ((st = ks__conv_check_input(ctx, 0, 4, 0)) || (st = ks__conv_check_input(ctx, 1, 4, 0)))
        return st;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1];
    const int32_t *ip = ctx->node->ip;
    memset(g, 0, sizeof(*g));
    g->n = x->dims[0], g->ih = x->dims[1], g->iw = x->dims[2], g->ic = x->dims[3];
    g->oc = w->dims[0], g->kh = w->dims[1], g->kw = w->dims[2], g->icg = w->dims[3];
    g->groups = 1, g->ocg = g->oc, g->dh = 1, g->dw = 1;
    g->sh = param_or_one(ip[0]), g->sw = param_or_one(ip[1]);
    g->act = ip[7];
    g->alpha = ctx->node->fp[0];
    if ((st = check_act(ctx, g->act, 0))) return st;
    if (g->oc < 1 || g->kh < 1 || g->kw < 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "weights have an empty dim");
    if (g->ic != g->icg)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input 0 has %lld channels, weights expect %lld", (long long)g->ic,
                                (long long)g->icg);
    int64_t pads[4] = {ip[2], ip[3], ip[4], ip[5]}, opad[2] = {ip[8], ip[9]};
    if (g->sh < 1 || g->sw < 1 || pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0 ||
        opad[0] < 0 || opad[1] < 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "invalid stride or padding");
    int64_t in_hw[2] = {g->ih, g->iw}, k[2] = {g->kh, g->kw}, s[2] = {g->sh, g->sw};
    int64_t o[2], lo[2];
    for (int a = 0; a < 2; a++) {
        switch (ip[6]) {
        case KS_PAD_EXPLICIT:
            o[a] = (in_hw[a] - 1) * s[a] + k[a] - pads[a] - pads[a + 2] + opad[a];
            lo[a] = pads[a];
            break;
        case KS_PAD_SAME_UPPER:
        case KS_PAD_SAME_LOWER: {
            o[a] = in_hw[a] * s[a];
            int64_t total = (in_hw[a] - 1) * s[a] + k[a] - o[a];
            if (total < 0) total = 0;
            lo[a] = ip[6] == KS_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            break;
        }
        case KS_PAD_VALID:
            o[a] = (in_hw[a] - 1) * s[a] + k[a];
            lo[a] = 0;
            break;
        default:
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "unknown pad mode %d",
                                    (int)ip[6]);
        }
        if (o[a] < 1)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "output %s is %lld",
                                    a ? "width" : "height", (long long)o[a]);
    }
    g->oh = o[0], g->ow = o[1], g->pt = lo[0], g->pl = lo[1];
    return KS_STATUS_OK;
}

static ks_status tconv_infer(ks__kernel_ctx *ctx) {
    conv_geom g;
    ks_status st = tconv_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1];
    int quant = ks__conv_is_quant(x);
    int64_t dims[4] = {g.n, g.oh, g.ow, g.oc};
    if ((st = ks__conv_check_dims(ctx, "output", 4, dims, 0))) return st;
    if ((st = check_bias(ctx, 2, g.oc, quant))) return st;
    const ks__rt_tensor *res = opt_input(ctx, 3);
    if (res && quant)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "a residual input is not supported on quantized convs");
    if (res) {
        int same = res->rank == 4;
        for (int i = 0; same && i < 4; i++)
            same = res->dims[i] == dims[i];
        if (!same || res->dtype != KS_DTYPE_F32 || res->quant->count != 0)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "residual must be F32 with the output's shape "
                                    "[%lld,%lld,%lld,%lld] (dtype %d, rank %d)",
                                    (long long)dims[0], (long long)dims[1], (long long)dims[2],
                                    (long long)dims[3], (int)res->dtype, (int)res->rank);
    }
    if (quant) {
        if ((st = check_act_quant(ctx, x, "input 0")) || (st = check_weight_quant(ctx, w, g.oc)) ||
            (st = check_quant_output(ctx, g.act)))
            return st;
        ks__rt_set_shape(ctx->out[0], ctx->out[0]->dtype, 4, dims);
        ctx->scratch_bytes = (size_t)g.oc * 2 * sizeof(int32_t);
        return KS_STATUS_OK;
    }
    if (x->dtype != KS_DTYPE_F32)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "input 0 dtype %d is not supported",
                                (int)x->dtype);
    if ((st = check_float_weights(ctx, w))) return st;
    ks__rt_set_shape(ctx->out[0], KS_DTYPE_F32, 4, dims);
    return KS_STATUS_OK;
}

/* Written as a gather over the input pixels that reach each output pixel (TFLite scatters);
 * the integer sums are identical and the gather needs no accumulator buffer. */
static ks_status tconv_run(ks__kernel_ctx *ctx) {
    conv_geom g;
    ks_status st = tconv_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1], *b = opt_input(ctx, 2);
    const ks__rt_tensor *res = opt_input(ctx, 3);
    ks__rt_tensor *y = ctx->out[0];
    int quant = ks__conv_is_quant(x);
    int32_t *mult = NULL, *shift = NULL;
    int32_t xzp = 0, yzp = 0, lo = 0, hi = 0;
    if (res && (quant || res->dtype != KS_DTYPE_F32 || ks__rt_numel(res) != ks__rt_numel(y)))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "residual does not match the output");
    if (quant) {
        if (!ctx->scratch || ctx->scratch_bytes < (size_t)g.oc * 2 * sizeof(int32_t))
            return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "scratch buffer missing");
        mult = (int32_t *)ctx->scratch;
        shift = mult + g.oc;
        for (int64_t c = 0; c < g.oc; c++)
            channel_multiplier(x, w, ks__conv_qscale(y, 0), c, x->dtype == KS_DTYPE_U8, &mult[c],
                               &shift[c]);
        xzp = ks__conv_qzp(x, 0);
        yzp = ks__conv_qzp(y, 0);
        ks__quant_act_range(g.act, ks__conv_qscale(y, 0), yzp, y->dtype, &lo, &hi);
    }
    for (int64_t n = 0; n < g.n; n++) {
        for (int64_t oy = 0; oy < g.oh; oy++) {
            for (int64_t ox = 0; ox < g.ow; ox++) {
                int64_t yi = ((n * g.oh + oy) * g.ow + ox) * g.oc;
                for (int64_t co = 0; co < g.oc; co++) {
                    double facc = 0.0;
                    int64_t qacc = 0;
                    int32_t wzp = quant ? ks__conv_qzp(w, co) : 0;
                    for (int64_t ky = 0; ky < g.kh; ky++) {
                        int64_t ty = oy + g.pt - ky; /* == iy * stride_h */
                        if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.ih) continue;
                        int64_t iy = ty / g.sh;
                        for (int64_t kx = 0; kx < g.kw; kx++) {
                            int64_t tx = ox + g.pl - kx;
                            if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.iw) continue;
                            int64_t ix = tx / g.sw;
                            int64_t xi = ((n * g.ih + iy) * g.iw + ix) * g.ic;
                            int64_t wi = ((co * g.kh + ky) * g.kw + kx) * g.icg;
                            for (int64_t ci = 0; ci < g.ic; ci++) {
                                if (quant)
                                    qacc += (int64_t)(ks__conv_load_q(x, xi + ci) - xzp) *
                                            (ks__conv_load_q(w, wi + ci) - wzp);
                                else
                                    facc += (double)((const float *)x->data)[xi + ci] *
                                            ks__conv_load_f(w, wi + ci, co);
                            }
                        }
                    }
                    if (quant) {
                        if (b) qacc += ks__conv_load_q(b, co);
                        int32_t v = ks__quant_mul(sat_i32(qacc), mult[co], shift[co]) + yzp;
                        v = v < lo ? lo : (v > hi ? hi : v);
                        ks__conv_store_q(y, yi + co, v);
                    } else {
                        if (b) facc += ks__conv_load_f(b, co, co);
                        if (res) facc += ((const float *)res->data)[yi + co];
                        ((float *)y->data)[yi + co] = ks__act_apply((float)facc, g.act, g.alpha);
                    }
                }
            }
        }
    }
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* POOL2D                                                                                      */

typedef struct pool_geom {
    int64_t n, ih, iw, c, oh, ow, kh, kw, sh, sw, pt, pl, pb, pr;
    int32_t kind, count_include_pad, act;
} pool_geom;

static ks_status pool_geometry(ks__kernel_ctx *ctx, pool_geom *g) {
    ks_status st = ks__conv_check_input(ctx, 0, 4, 0);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    const int32_t *ip = ctx->node->ip;
    memset(g, 0, sizeof(*g));
    g->n = x->dims[0], g->ih = x->dims[1], g->iw = x->dims[2], g->c = x->dims[3];
    g->kind = ip[9];
    g->count_include_pad = ip[10];
    g->act = ip[11];
    if ((st = check_act(ctx, g->act, 0))) return st;
    if (g->kind != 0 && g->kind != 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "unknown pool kind %d", (int)g->kind);
    if (g->ih < 1 || g->iw < 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "input 0 has an empty spatial dim");
    int32_t mode = ip[8];
    int64_t plo = ip[4], phi = ip[6], qlo = ip[5], qhi = ip[7];
    if (ip[0] == 0 && ip[1] == 0) { /* global */
        g->kh = g->ih, g->kw = g->iw, g->sh = 1, g->sw = 1;
        mode = KS_PAD_VALID;
    } else {
        g->kh = ip[0], g->kw = ip[1];
        g->sh = param_or_one(ip[2]), g->sw = param_or_one(ip[3]);
    }
    if ((st = spatial_out(ctx, "height", g->ih, g->kh, g->sh, mode, plo, phi, ip[12], &g->oh,
                          &g->pt)) ||
        (st = spatial_out(ctx, "width", g->iw, g->kw, g->sw, mode, qlo, qhi, ip[12], &g->ow,
                          &g->pl)))
        return st;
    /* Trailing pads as the window sees them (count_include_pad counts up to these). */
    if (mode == KS_PAD_EXPLICIT) {
        g->pb = phi, g->pr = qhi;
    } else {
        g->pb = (g->oh - 1) * g->sh + g->kh - g->ih - g->pt;
        g->pr = (g->ow - 1) * g->sw + g->kw - g->iw - g->pl;
        if (g->pb < 0) g->pb = 0;
        if (g->pr < 0) g->pr = 0;
    }
    return KS_STATUS_OK;
}

static ks_status pool_infer(ks__kernel_ctx *ctx) {
    pool_geom g;
    ks_status st = pool_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    int64_t dims[4] = {g.n, g.oh, g.ow, g.c};
    if ((st = ks__conv_check_dims(ctx, "output", 4, dims, 0))) return st;
    if (ks__conv_is_quant(x)) {
        if ((st = check_act_quant(ctx, x, "input 0")) || (st = check_quant_output(ctx, g.act)))
            return st;
        if (ctx->out[0]->dtype != x->dtype)
            return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                    "quantized pooling needs the output dtype of the input");
        ks__rt_set_shape(ctx->out[0], x->dtype, 4, dims);
        return KS_STATUS_OK;
    }
    if (x->dtype != KS_DTYPE_F32)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "input 0 dtype %d is not supported",
                                (int)x->dtype);
    ks__rt_set_shape(ctx->out[0], KS_DTYPE_F32, 4, dims);
    return KS_STATUS_OK;
}

static ks_status pool_run(ks__kernel_ctx *ctx) {
    pool_geom g;
    ks_status st = pool_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    int quant = ks__conv_is_quant(x);
    int32_t xzp = 0, yzp = 0, lo = 0, hi = 0;
    float xs = 1.0f, ys = 1.0f;
    int same_q = 1;
    if (quant) {
        xzp = ks__conv_qzp(x, 0), yzp = ks__conv_qzp(y, 0);
        xs = ks__conv_qscale(x, 0), ys = ks__conv_qscale(y, 0);
        same_q = xzp == yzp && xs == ys;
        ks__quant_act_range(g.act, ys, yzp, y->dtype, &lo, &hi);
    }
    for (int64_t n = 0; n < g.n; n++) {
        for (int64_t oy = 0; oy < g.oh; oy++) {
            int64_t y0 = oy * g.sh - g.pt;
            /* The window clipped to the padded input (what count_include_pad counts) ... */
            int64_t py0 = y0 < -g.pt ? -g.pt : y0;
            int64_t py1 = y0 + g.kh > g.ih + g.pb ? g.ih + g.pb : y0 + g.kh;
            /* ... and to the real input (what is read). */
            int64_t vy0 = y0 < 0 ? 0 : y0, vy1 = y0 + g.kh > g.ih ? g.ih : y0 + g.kh;
            for (int64_t ox = 0; ox < g.ow; ox++) {
                int64_t x0 = ox * g.sw - g.pl;
                int64_t px0 = x0 < -g.pl ? -g.pl : x0;
                int64_t px1 = x0 + g.kw > g.iw + g.pr ? g.iw + g.pr : x0 + g.kw;
                int64_t vx0 = x0 < 0 ? 0 : x0, vx1 = x0 + g.kw > g.iw ? g.iw : x0 + g.kw;
                int64_t valid = (vy1 > vy0 ? vy1 - vy0 : 0) * (vx1 > vx0 ? vx1 - vx0 : 0);
                int64_t padded = (py1 - py0) * (px1 - px0);
                int64_t yi = ((n * g.oh + oy) * g.ow + ox) * g.c;
                for (int64_t c = 0; c < g.c; c++) {
                    double fsum = 0.0, fmax = -INFINITY;
                    int64_t qsum = 0;
                    int32_t qmax = INT32_MIN;
                    for (int64_t iy = vy0; iy < vy1; iy++) {
                        for (int64_t ix = vx0; ix < vx1; ix++) {
                            int64_t xi = ((n * g.ih + iy) * g.iw + ix) * g.c + c;
                            if (quant) {
                                int32_t v = ks__conv_load_q(x, xi);
                                qsum += v;
                                if (v > qmax) qmax = v;
                            } else {
                                float v = ((const float *)x->data)[xi];
                                fsum += v;
                                if (v > fmax) fmax = v;
                            }
                        }
                    }
                    int64_t count = g.count_include_pad ? padded : valid;
                    if (!quant) {
                        float r;
                        if (valid == 0)
                            r = 0.0f;
                        else
                            r = g.kind == 0 ? (float)fmax : (float)(fsum / (double)count);
                        ((float *)y->data)[yi + c] = ks__act_apply(r, g.act, ctx->node->fp[0]);
                        continue;
                    }
                    int32_t r;
                    if (valid == 0) {
                        r = yzp;
                    } else if (g.kind == 0) {
                        r = qmax;
                    } else {
                        /* Padding contributes the zero point's value when it is counted. */
                        if (g.count_include_pad) qsum += (int64_t)xzp * (padded - valid);
                        /* TFLite: round half away from zero. */
                        r = (int32_t)(qsum >= 0 ? (qsum + count / 2) / count
                                                : (qsum - count / 2) / count);
                    }
                    if (!same_q && valid > 0) {
                        /* TFLite requires equal in/out params; requantize in float otherwise. */
                        float real = (float)(r - xzp) * xs;
                        r = yzp + (int32_t)lrintf(real / ys);
                    }
                    r = r < lo ? lo : (r > hi ? hi : r);
                    ks__conv_store_q(y, yi + c, r);
                }
            }
        }
    }
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* FULLY_CONNECTED                                                                             */

static ks_status fc_infer(ks__kernel_ctx *ctx) {
    ks_status st;
    if ((st = ks__conv_check_input(ctx, 0, -1, 0)) || (st = ks__conv_check_input(ctx, 1, 2, 0)))
        return st;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1];
    int64_t o = w->dims[0], in_size = w->dims[1];
    if (x->rank < 1 || in_size < 1 || o < 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input 0 rank %d / weights [%lld,%lld]", (int)x->rank, (long long)o,
                                (long long)in_size);
    int64_t numel = ks__rt_numel(x);
    if (numel < 0 || numel % in_size != 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input 0 has %lld elements, not a multiple of the %lld weight "
                                "inputs",
                                (long long)numel, (long long)in_size);
    int32_t act = ctx->node->ip[0];
    if ((st = check_act(ctx, act, 0))) return st;
    int64_t dims[KS_MAX_RANK];
    int32_t rank;
    if (ctx->node->ip[1]) {
        if (x->dims[x->rank - 1] != in_size)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "input 0 last dim is %lld, weights expect %lld",
                                    (long long)x->dims[x->rank - 1], (long long)in_size);
        rank = x->rank;
        for (int32_t i = 0; i < rank - 1; i++)
            dims[i] = x->dims[i];
        dims[rank - 1] = o;
    } else {
        rank = 2;
        dims[0] = numel / in_size;
        dims[1] = o;
    }
    if ((st = ks__conv_check_dims(ctx, "output", rank, dims, 0))) return st;
    int quant = ks__conv_is_quant(x);
    if ((st = check_bias(ctx, 2, o, quant))) return st;
    if (quant) {
        if ((st = check_act_quant(ctx, x, "input 0")) || (st = check_weight_quant(ctx, w, o)) ||
            (st = check_quant_output(ctx, act)))
            return st;
        ks__rt_set_shape(ctx->out[0], ctx->out[0]->dtype, rank, dims);
        ctx->scratch_bytes = (size_t)o * 2 * sizeof(int32_t);
        return KS_STATUS_OK;
    }
    if (x->dtype != KS_DTYPE_F32)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "input 0 dtype %d is not supported",
                                (int)x->dtype);
    if ((st = check_float_weights(ctx, w))) return st;
    ks__rt_set_shape(ctx->out[0], KS_DTYPE_F32, rank, dims);
    return KS_STATUS_OK;
}

static ks_status fc_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1], *b = opt_input(ctx, 2);
    ks__rt_tensor *y = ctx->out[0];
    int64_t o = w->dims[0], in_size = w->dims[1];
    int64_t rows = ks__rt_numel(x) / in_size;
    int32_t act = ctx->node->ip[0];
    int quant = ks__conv_is_quant(x);
    int32_t *mult = NULL, *shift = NULL;
    int32_t xzp = 0, yzp = 0, lo = 0, hi = 0;
    if (quant) {
        if (!ctx->scratch || ctx->scratch_bytes < (size_t)o * 2 * sizeof(int32_t))
            return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "scratch buffer missing");
        mult = (int32_t *)ctx->scratch;
        shift = mult + o;
        /* TFLite FC: per-tensor weights use the legacy float product, per-channel a double one. */
        for (int64_t c = 0; c < o; c++)
            channel_multiplier(x, w, ks__conv_qscale(y, 0), c, w->quant->count == 1, &mult[c],
                               &shift[c]);
        xzp = ks__conv_qzp(x, 0);
        yzp = ks__conv_qzp(y, 0);
        ks__quant_act_range(act, ks__conv_qscale(y, 0), yzp, y->dtype, &lo, &hi);
    }
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < o; c++) {
            if (quant) {
                int32_t wzp = ks__conv_qzp(w, c);
                int64_t acc = 0;
                for (int64_t i = 0; i < in_size; i++)
                    acc += (int64_t)(ks__conv_load_q(x, r * in_size + i) - xzp) *
                           (ks__conv_load_q(w, c * in_size + i) - wzp);
                if (b) acc += ks__conv_load_q(b, c);
                int32_t v = ks__quant_mul(sat_i32(acc), mult[c], shift[c]) + yzp;
                v = v < lo ? lo : (v > hi ? hi : v);
                ks__conv_store_q(y, r * o + c, v);
            } else {
                double acc = 0.0;
                for (int64_t i = 0; i < in_size; i++)
                    acc += (double)((const float *)x->data)[r * in_size + i] *
                           ks__conv_load_f(w, c * in_size + i, c);
                if (b) acc += ks__conv_load_f(b, c, c);
                ((float *)y->data)[r * o + c] = ks__act_apply((float)acc, act, ctx->node->fp[0]);
            }
        }
    }
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* MATMUL                                                                                      */

typedef struct matmul_geom {
    int64_t m, k, n;
    int32_t batch_rank;
    int64_t batch[KS_MAX_RANK], a_batch[KS_MAX_RANK], b_batch[KS_MAX_RANK];
    int a_vec, b_vec; /* 1-D operands (numpy: promoted, then the added dim is dropped) */
} matmul_geom;

static ks_status matmul_geometry(ks__kernel_ctx *ctx, matmul_geom *g, int64_t *dims,
                                 int32_t *rank_out) {
    ks_status st;
    if ((st = ks__conv_check_input(ctx, 0, -1, 0)) || (st = ks__conv_check_input(ctx, 1, -1, 0)))
        return st;
    const ks__rt_tensor *a = ctx->in[0], *b = ctx->in[1];
    int ta = ctx->node->ip[0] != 0, tb = ctx->node->ip[1] != 0;
    memset(g, 0, sizeof(*g));
    if (a->rank < 1 || b->rank < 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "matmul operands must have rank >= 1");
    g->a_vec = a->rank == 1, g->b_vec = b->rank == 1;
    int64_t am, ak, bk, bn;
    if (g->a_vec) {
        am = 1, ak = a->dims[0];
    } else {
        am = a->dims[a->rank - (ta ? 1 : 2)], ak = a->dims[a->rank - (ta ? 2 : 1)];
    }
    if (g->b_vec) {
        bk = b->dims[0], bn = 1;
    } else {
        bk = b->dims[b->rank - (tb ? 1 : 2)], bn = b->dims[b->rank - (tb ? 2 : 1)];
    }
    if (ak != bk)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "inner dims differ: input 0 has %lld, input 1 has %lld",
                                (long long)ak, (long long)bk);
    g->m = am, g->k = ak, g->n = bn;
    int32_t ar = g->a_vec ? 0 : a->rank - 2, br = g->b_vec ? 0 : b->rank - 2;
    g->batch_rank = ar > br ? ar : br;
    for (int32_t i = 0; i < g->batch_rank; i++) {
        int32_t ai = i - (g->batch_rank - ar), bi = i - (g->batch_rank - br);
        int64_t da = ai >= 0 ? a->dims[ai] : 1, db = bi >= 0 ? b->dims[bi] : 1;
        if (da != db && da != 1 && db != 1)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "batch dim %d does not broadcast: %lld vs %lld", (int)i,
                                    (long long)da, (long long)db);
        g->a_batch[i] = da, g->b_batch[i] = db;
        g->batch[i] = da == 1 ? db : da;
    }
    int32_t rank = 0;
    for (int32_t i = 0; i < g->batch_rank; i++)
        dims[rank++] = g->batch[i];
    if (!g->a_vec) dims[rank++] = g->m;
    if (!g->b_vec) dims[rank++] = g->n;
    *rank_out = rank;
    return KS_STATUS_OK;
}

static ks_status matmul_infer(ks__kernel_ctx *ctx) {
    matmul_geom g;
    int64_t dims[KS_MAX_RANK + 2];
    int32_t rank;
    ks_status st = matmul_geometry(ctx, &g, dims, &rank);
    if (st) return st;
    if (rank > KS_MAX_RANK)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "output rank %d is too large",
                                (int)rank);
    if ((st = ks__conv_check_dims(ctx, "output", rank, dims, 0))) return st;
    const ks__rt_tensor *a = ctx->in[0], *b = ctx->in[1];
    if (ks__conv_is_quant(a)) {
        if ((st = check_act_quant(ctx, a, "input 0")) ||
            (st = check_quant_output(ctx, KS_ACT_NONE)))
            return st;
        if (!ks__conv_is_quant(b) || b->quant->count != 1)
            return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                    "quantized matmul needs a per-tensor quantized input 1");
        ks__rt_set_shape(ctx->out[0], ctx->out[0]->dtype, rank, dims);
        return KS_STATUS_OK;
    }
    if (a->dtype != KS_DTYPE_F32 ||
        (b->dtype != KS_DTYPE_F32 && b->dtype != KS_DTYPE_F16 && !ks__conv_is_quant(b)))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "matmul dtypes %d x %d are not supported", (int)a->dtype,
                                (int)b->dtype);
    ks__rt_set_shape(ctx->out[0], KS_DTYPE_F32, rank, dims);
    return KS_STATUS_OK;
}

static ks_status matmul_run(ks__kernel_ctx *ctx) {
    matmul_geom g;
    int64_t dims[KS_MAX_RANK + 2];
    int32_t rank;
    ks_status st = matmul_geometry(ctx, &g, dims, &rank);
    if (st) return st;
    const ks__rt_tensor *a = ctx->in[0], *b = ctx->in[1];
    ks__rt_tensor *y = ctx->out[0];
    int ta = ctx->node->ip[0] != 0, tb = ctx->node->ip[1] != 0;
    int quant = ks__conv_is_quant(a);
    int32_t mult = 0, shift = 0, azp = 0, bzp = 0, yzp = 0, lo = 0, hi = 0;
    if (quant) {
        /* TFLite BATCH_MATMUL: the whole ratio is formed in float before widening. */
        float real = ks__conv_qscale(a, 0) * ks__conv_qscale(b, 0) / ks__conv_qscale(y, 0);
        ks__quant_multiplier((double)real, &mult, &shift);
        azp = ks__conv_qzp(a, 0), bzp = ks__conv_qzp(b, 0), yzp = ks__conv_qzp(y, 0);
        ks__quant_act_range(KS_ACT_NONE, ks__conv_qscale(y, 0), yzp, y->dtype, &lo, &hi);
    }
    int64_t num_batches = 1;
    for (int32_t i = 0; i < g.batch_rank; i++)
        num_batches *= g.batch[i];
    /* Operand matrix strides (a: [m,k] or [k,m] when transposed; b likewise). */
    int64_t a_mat = g.m * g.k, b_mat = g.k * g.n;
    for (int64_t bi = 0; bi < num_batches; bi++) {
        int64_t rem = bi, aoff = 0, boff = 0, astride = 1, bstride = 1;
        for (int32_t i = g.batch_rank - 1; i >= 0; i--) {
            int64_t idx = rem % g.batch[i];
            rem /= g.batch[i];
            aoff += (g.a_batch[i] == 1 ? 0 : idx) * astride;
            boff += (g.b_batch[i] == 1 ? 0 : idx) * bstride;
            astride *= g.a_batch[i];
            bstride *= g.b_batch[i];
        }
        aoff *= a_mat, boff *= b_mat;
        for (int64_t i = 0; i < g.m; i++) {
            for (int64_t j = 0; j < g.n; j++) {
                double facc = 0.0;
                int64_t qacc = 0;
                for (int64_t k = 0; k < g.k; k++) {
                    int64_t ai = aoff + (g.a_vec ? k : (ta ? k * g.m + i : i * g.k + k));
                    int64_t bj = boff + (g.b_vec ? k : (tb ? j * g.k + k : k * g.n + j));
                    if (quant)
                        qacc += (int64_t)(ks__conv_load_q(a, ai) - azp) *
                                (ks__conv_load_q(b, bj) - bzp);
                    else
                        facc += (double)((const float *)a->data)[ai] * ks__conv_load_f(b, bj, 0);
                }
                int64_t yi = (bi * g.m + i) * g.n + j;
                if (quant) {
                    int32_t v = ks__quant_mul(sat_i32(qacc), mult, shift) + yzp;
                    ks__conv_store_q(y, yi, v < lo ? lo : (v > hi ? hi : v));
                } else {
                    ((float *)y->data)[yi] = (float)facc;
                }
            }
        }
    }
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */

void ks__ref_register_conv(ks__kernel_table *t) {
    KS__REF_REG(t, CONV2D, conv_infer, conv_run);
    KS__REF_REG(t, CONV2D_TRANSPOSE, tconv_infer, tconv_run);
    KS__REF_REG(t, POOL2D, pool_infer, pool_run);
    KS__REF_REG(t, FULLY_CONNECTED, fc_infer, fc_run);
    KS__REF_REG(t, MATMUL, matmul_infer, matmul_run);
    ks__ref_register_conv_resize(t);
    ks__ref_register_conv_space(t);
}
