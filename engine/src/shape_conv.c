/* Shape inference of the conv family (shape_conv.h): CONV2D (grouped/depthwise, dilated, with
 * its fused forms), CONV2D_TRANSPOSE, POOL2D, FULLY_CONNECTED, MATMUL, RESIZE and the
 * space/depth/batch rearrangements, in fp32 and in quantized integer form (ops.inc).
 *
 * Besides the output shapes, inference checks what the kernels rely on: known fused activations,
 * per-tensor activation quantization with positive scales, weights per tensor or per channel
 * along axis 0, bias element counts and dtypes, and element counts far from int64 overflow.
 */
#include <math.h>
#include <string.h>

#include "shape_conv.h"

/* Largest element count a conv-family output may have; anything bigger is a corrupt model or an
 * absurd input size, and rejecting it keeps index arithmetic far from int64 overflow. */
#define MAX_NUMEL (1LL << 32)

int ks__conv_is_quant(const ks__rt_tensor *t) {
    return t && (t->dtype == KS_DTYPE_U8 || t->dtype == KS_DTYPE_I8) && t->quant &&
           t->quant->count > 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Shared checks                                                                              */

/* Checks that every dim is >= min_dim and the element count stays below MAX_NUMEL. On failure
 * reports with `what` (e.g. "output") and returns a status. */
static ks_status check_dims(ks__kernel_ctx *ctx, const char *what, int32_t rank,
                            const int64_t *dims, int64_t min_dim) {
    int64_t numel = 1;
    for (int32_t i = 0; i < rank; i++) {
        if (dims[i] < min_dim)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "%s dim %d is %lld (must be >= %lld)", what, (int)i,
                                    (long long)dims[i], (long long)min_dim);
        if (dims[i] > MAX_NUMEL)
            return ks__kernel_error(ctx, KS_STATUS_LIMIT_EXCEEDED, "%s dim %d is %lld (limit %lld)",
                                    what, (int)i, (long long)dims[i], (long long)MAX_NUMEL);
        if (dims[i] > 0 && numel > MAX_NUMEL / dims[i])
            return ks__kernel_error(ctx, KS_STATUS_LIMIT_EXCEEDED, "%s has more than %lld elements",
                                    what, (long long)MAX_NUMEL);
        numel *= dims[i];
    }
    return KS_STATUS_OK;
}

/* Checks that input `idx` is present, has rank `rank` (or any rank when rank < 0) and, when its
 * data sets the output shape (need_value), that the data is known. */
static ks_status check_input(ks__kernel_ctx *ctx, uint32_t idx, int32_t rank, int need_value) {
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
        if (t->dims[i] < 0 || t->dims[i] > MAX_NUMEL)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "input %u dim %d is %lld", idx,
                                    (int)i, (long long)t->dims[i]);
    if (need_value && !t->data)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "input %u must be a constant (its value sets the output shape)",
                                idx);
    return KS_STATUS_OK;
}

static int act_is_quantizable(int32_t act) {
    return act == KS_ACT_NONE || act == KS_ACT_RELU || act == KS_ACT_RELU6 ||
           act == KS_ACT_RELU_N1_TO_1;
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
    const ks__rt_tensor *b = ks__kernel_input(ctx, idx);
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

/* ------------------------------------------------------------------------------------------ */
/* CONV2D                                                                                     */

static int64_t param_or_one(int32_t v) {
    return v == 0 ? 1 : v;
}

/* The fused act of a conv-family node: a known ks__act; PRELU (and TABLE, checked further by
 * ks__conv_check_fused) only on CONV2D, which has the extra input. */
static ks_status check_act(ks__kernel_ctx *ctx, int32_t act, int prelu_ok) {
    if (act < 0 || act >= KS_ACT_COUNT ||
        ((act == KS_ACT_PRELU || act == KS_ACT_TABLE) && !prelu_ok))
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "fused activation %d is unknown or not allowed on this op",
                                (int)act);
    return KS_STATUS_OK;
}

ks_status ks__conv_geometry(ks__kernel_ctx *ctx, ks__conv_geom *g) {
    ks_status st;
    if ((st = check_input(ctx, 0, 4, 0)) || (st = check_input(ctx, 1, 4, 0))) return st;
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
ks_status ks__conv_check_slope(ks__kernel_ctx *ctx, int32_t act, int64_t oc) {
    const ks__rt_tensor *s = ks__kernel_input(ctx, 4);
    if (act == KS_ACT_TABLE) return KS_STATUS_OK; /* input 4 is the table (ks__conv_check_fused) */
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
ks_status ks__conv_check_fused(ks__kernel_ctx *ctx, int quant, int32_t act) {
    const int32_t *ip = ctx->node->ip;
    const ks__rt_tensor *res = ks__kernel_input(ctx, 3), *tab = ks__kernel_input(ctx, 4);
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

ks_status ks__infer_conv2d(ks__kernel_ctx *ctx) {
    ks__conv_geom g;
    ks_status st = ks__conv_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1];
    int quant = ks__conv_is_quant(x);
    int64_t dims[4] = {g.n, g.oh, g.ow, g.oc};
    if ((st = check_dims(ctx, "output", 4, dims, 0))) return st;
    if ((st = check_bias(ctx, 2, g.oc, quant))) return st;
    const ks__rt_tensor *res = ks__kernel_input(ctx, 3);
    if (quant && (st = check_quant_output(ctx, g.act == KS_ACT_TABLE ? KS_ACT_NONE : g.act)))
        return st;
    if ((st = ks__conv_check_fused(ctx, quant, g.act))) return st;
    if (res) {
        int same = res->rank == 4;
        for (int i = 0; same && i < 4; i++)
            same = res->dims[i] == dims[i];
        if (!same || (!quant && (res->dtype != x->dtype || res->quant->count != 0)))
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "residual must have the output's shape (the input's dtype "
                                    "if float) "
                                    "[%lld,%lld,%lld,%lld] (dtype %d, rank %d)",
                                    (long long)dims[0], (long long)dims[1], (long long)dims[2],
                                    (long long)dims[3], (int)res->dtype, (int)res->rank);
    }
    if ((st = ks__conv_check_slope(ctx, g.act, g.oc))) return st;
    if (quant) {
        if ((st = check_act_quant(ctx, x, "input 0")) || (st = check_weight_quant(ctx, w, g.oc)))
            return st;
        ks__rt_set_shape(ctx->out[0], ctx->out[0]->dtype, 4, dims);
        return KS_STATUS_OK;
    }
    /* F16 activations: the graphs the fp16 pass writes (precision.h, KS_PRECISION_FP16) */
    if (x->dtype != KS_DTYPE_F32 && x->dtype != KS_DTYPE_F16)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "input 0 dtype %d is not supported (F32, F16 or quantized U8/I8)",
                                (int)x->dtype);
    if ((st = check_float_weights(ctx, w))) return st;
    ks__rt_set_shape(ctx->out[0], x->dtype, 4, dims);
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* CONV2D_TRANSPOSE                                                                           */

ks_status ks__tconv_geometry(ks__kernel_ctx *ctx, ks__conv_geom *g) {
    ks_status st;
    if ((st = check_input(ctx, 0, 4, 0)) || (st = check_input(ctx, 1, 4, 0))) return st;
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

ks_status ks__infer_conv2d_transpose(ks__kernel_ctx *ctx) {
    ks__conv_geom g;
    ks_status st = ks__tconv_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1];
    int quant = ks__conv_is_quant(x);
    int64_t dims[4] = {g.n, g.oh, g.ow, g.oc};
    if ((st = check_dims(ctx, "output", 4, dims, 0))) return st;
    if ((st = check_bias(ctx, 2, g.oc, quant))) return st;
    const ks__rt_tensor *res = ks__kernel_input(ctx, 3);
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
        return KS_STATUS_OK;
    }
    if (x->dtype != KS_DTYPE_F32)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "input 0 dtype %d is not supported",
                                (int)x->dtype);
    if ((st = check_float_weights(ctx, w))) return st;
    ks__rt_set_shape(ctx->out[0], KS_DTYPE_F32, 4, dims);
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* POOL2D                                                                                     */

ks_status ks__pool_geometry(ks__kernel_ctx *ctx, ks__pool_geom *g) {
    ks_status st = check_input(ctx, 0, 4, 0);
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

ks_status ks__infer_pool2d(ks__kernel_ctx *ctx) {
    ks__pool_geom g;
    ks_status st = ks__pool_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    int64_t dims[4] = {g.n, g.oh, g.ow, g.c};
    if ((st = check_dims(ctx, "output", 4, dims, 0))) return st;
    if (ks__conv_is_quant(x)) {
        if ((st = check_act_quant(ctx, x, "input 0")) || (st = check_quant_output(ctx, g.act)))
            return st;
        if (ctx->out[0]->dtype != x->dtype)
            return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                    "quantized pooling needs the output dtype of the input");
        ks__rt_set_shape(ctx->out[0], x->dtype, 4, dims);
        return KS_STATUS_OK;
    }
    if (x->dtype != KS_DTYPE_F32 && x->dtype != KS_DTYPE_F16)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "input 0 dtype %d is not supported",
                                (int)x->dtype);
    ks__rt_set_shape(ctx->out[0], x->dtype, 4, dims);
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* FULLY_CONNECTED                                                                            */

ks_status ks__infer_fully_connected(ks__kernel_ctx *ctx) {
    ks_status st;
    if ((st = check_input(ctx, 0, -1, 0)) || (st = check_input(ctx, 1, 2, 0))) return st;
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
    if ((st = check_dims(ctx, "output", rank, dims, 0))) return st;
    int quant = ks__conv_is_quant(x);
    if ((st = check_bias(ctx, 2, o, quant))) return st;
    if (quant) {
        if ((st = check_act_quant(ctx, x, "input 0")) || (st = check_weight_quant(ctx, w, o)) ||
            (st = check_quant_output(ctx, act)))
            return st;
        ks__rt_set_shape(ctx->out[0], ctx->out[0]->dtype, rank, dims);
        return KS_STATUS_OK;
    }
    if (x->dtype != KS_DTYPE_F32)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "input 0 dtype %d is not supported",
                                (int)x->dtype);
    if ((st = check_float_weights(ctx, w))) return st;
    ks__rt_set_shape(ctx->out[0], KS_DTYPE_F32, rank, dims);
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* MATMUL                                                                                     */

ks_status ks__matmul_geometry(ks__kernel_ctx *ctx, ks__matmul_geom *g, int64_t *dims,
                              int32_t *rank_out) {
    ks_status st;
    if ((st = check_input(ctx, 0, -1, 0)) || (st = check_input(ctx, 1, -1, 0))) return st;
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

ks_status ks__infer_matmul(ks__kernel_ctx *ctx) {
    ks__matmul_geom g;
    int64_t dims[KS_MAX_RANK + 2];
    int32_t rank;
    ks_status st = ks__matmul_geometry(ctx, &g, dims, &rank);
    if (st) return st;
    if (rank > KS_MAX_RANK)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "output rank %d is too large",
                                (int)rank);
    if ((st = check_dims(ctx, "output", rank, dims, 0))) return st;
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

/* ------------------------------------------------------------------------------------------ */
/* RESIZE                                                                                     */

static float axis_ratio(int64_t in, int64_t out, float scale, int from_scale, int32_t coord) {
    if (coord == KS_RESIZE_ALIGN_CORNERS)
        return out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
    if (from_scale) return 1.0f / scale;
    return (float)in / (float)out;
}

ks_status ks__resize_geometry(ks__kernel_ctx *ctx, ks__resize_geom *g) {
    ks_status st = check_input(ctx, 0, 4, 0);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    const ks__rt_tensor *size = ctx->num_inputs > 1 ? ctx->in[1] : NULL;
    const int32_t *ip = ctx->node->ip;
    const float *fp = ctx->node->fp;
    memset(g, 0, sizeof(*g));
    g->n = x->dims[0], g->ih = x->dims[1], g->iw = x->dims[2], g->c = x->dims[3];
    g->mode = ip[0], g->coord = ip[1], g->round_mode = ip[2];
    if (g->mode != 0 && g->mode != 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "unknown resize mode %d",
                                (int)g->mode);
    if (g->coord < 0 || g->coord >= KS_RESIZE_COORD_COUNT)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "unknown coordinate mode %d",
                                (int)g->coord);
    if (g->round_mode < 0 || g->round_mode > 3)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "unknown nearest rounding %d",
                                (int)g->round_mode);
    if (g->ih < 1 || g->iw < 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "input 0 has an empty spatial dim");
    int from_scale = 0;
    if (size) {
        if ((st = check_input(ctx, 1, -1, 1))) return st;
        if (ks__rt_numel(size) != 2 || (size->dtype != KS_DTYPE_I32 && size->dtype != KS_DTYPE_I64))
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                    "size input must hold 2 I32/I64 values (out h, w)");
        g->oh = ks__rt_get_int(size, 0), g->ow = ks__rt_get_int(size, 1);
    } else if (ip[3] > 0 || ip[4] > 0) {
        g->oh = ip[3], g->ow = ip[4];
    } else {
        if (!(fp[0] > 0.0f) || !(fp[1] > 0.0f) || !isfinite(fp[0]) || !isfinite(fp[1]))
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                    "no output size and invalid scales %g, %g", (double)fp[0],
                                    (double)fp[1]);
        double oh = floor((double)g->ih * fp[0]), ow = floor((double)g->iw * fp[1]);
        if (oh > (double)MAX_NUMEL || ow > (double)MAX_NUMEL)
            return ks__kernel_error(ctx, KS_STATUS_LIMIT_EXCEEDED, "scales %g, %g are too large",
                                    (double)fp[0], (double)fp[1]);
        g->oh = (int64_t)oh, g->ow = (int64_t)ow;
        from_scale = 1;
    }
    if (g->oh < 1 || g->ow < 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE, "output size %lld x %lld",
                                (long long)g->oh, (long long)g->ow);
    g->ratio_h = axis_ratio(g->ih, g->oh, fp[0], from_scale, g->coord);
    g->ratio_w = axis_ratio(g->iw, g->ow, fp[1], from_scale, g->coord);
    return KS_STATUS_OK;
}

ks_status ks__infer_resize(ks__kernel_ctx *ctx) {
    ks__resize_geom g;
    ks_status st = ks__resize_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    int64_t dims[4] = {g.n, g.oh, g.ow, g.c};
    if ((st = check_dims(ctx, "output", 4, dims, 0))) return st;
    if (g.mode == 1 && x->dtype != KS_DTYPE_F32 && x->dtype != KS_DTYPE_U8 &&
        x->dtype != KS_DTYPE_I8)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED,
                                "bilinear resize of dtype %d is not supported", (int)x->dtype);
    if (ks_dtype_size(x->dtype) == 0)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "dtype %d is not supported",
                                (int)x->dtype);
    ks__rt_set_shape(ctx->out[0], x->dtype, 4, dims);
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND                       */

static ks_status check_elem_dtype(ks__kernel_ctx *ctx, const ks__rt_tensor *x) {
    if (ks_dtype_size(x->dtype) == 0)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "dtype %d is not supported",
                                (int)x->dtype);
    return KS_STATUS_OK;
}

ks_status ks__infer_depth_to_space(ks__kernel_ctx *ctx) {
    ks_status st = check_input(ctx, 0, 4, 0);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    if ((st = check_elem_dtype(ctx, x))) return st;
    int64_t bs = ctx->node->ip[0];
    int32_t mode = ctx->node->ip[1];
    if (bs < 1 || bs > 65536 || (mode != 0 && mode != 1))
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "invalid block size %lld / mode %d",
                                (long long)bs, (int)mode);
    if (x->dims[3] % (bs * bs) != 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input 0 has %lld channels, not a multiple of block^2 = %lld",
                                (long long)x->dims[3], (long long)(bs * bs));
    int64_t dims[4] = {x->dims[0], x->dims[1] * bs, x->dims[2] * bs, x->dims[3] / (bs * bs)};
    if ((st = check_dims(ctx, "output", 4, dims, 0))) return st;
    ks__rt_set_shape(ctx->out[0], x->dtype, 4, dims);
    return KS_STATUS_OK;
}

ks_status ks__infer_space_to_depth(ks__kernel_ctx *ctx) {
    ks_status st = check_input(ctx, 0, 4, 0);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    if ((st = check_elem_dtype(ctx, x))) return st;
    int64_t bs = ctx->node->ip[0];
    if (bs < 1 || bs > 65536)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL, "invalid block size %lld",
                                (long long)bs);
    if (x->dims[1] % bs != 0 || x->dims[2] % bs != 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input 0 spatial size %lld x %lld is not a multiple of block %lld",
                                (long long)x->dims[1], (long long)x->dims[2], (long long)bs);
    int64_t dims[4] = {x->dims[0], x->dims[1] / bs, x->dims[2] / bs, x->dims[3] * bs * bs};
    if ((st = check_dims(ctx, "output", 4, dims, 0))) return st;
    ks__rt_set_shape(ctx->out[0], x->dtype, 4, dims);
    return KS_STATUS_OK;
}

ks_status ks__batch_space_geometry(ks__kernel_ctx *ctx, ks__batch_space_geom *g) {
    ks_status st;
    if ((st = check_input(ctx, 0, -1, 0)) || (st = check_input(ctx, 1, -1, 1)) ||
        (st = check_input(ctx, 2, -1, 1)))
        return st;
    const ks__rt_tensor *x = ctx->in[0], *bs = ctx->in[1], *pc = ctx->in[2];
    if ((bs->dtype != KS_DTYPE_I32 && bs->dtype != KS_DTYPE_I64) ||
        (pc->dtype != KS_DTYPE_I32 && pc->dtype != KS_DTYPE_I64))
        return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                "block_shape and paddings/crops must be I32/I64");
    int64_t m = ks__rt_numel(bs);
    if (m < 1 || m > x->rank - 1)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "block_shape has %lld entries; input 0 rank %d allows 1..%d",
                                (long long)m, (int)x->rank, (int)(x->rank - 1));
    if (ks__rt_numel(pc) != 2 * m)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "paddings/crops have %lld entries, expected %lld",
                                (long long)ks__rt_numel(pc), (long long)(2 * m));
    g->m = (int32_t)m;
    for (int32_t i = 0; i < g->m; i++) {
        g->block[i] = ks__rt_get_int(bs, i);
        g->lo[i] = ks__rt_get_int(pc, 2 * i);
        g->hi[i] = ks__rt_get_int(pc, 2 * i + 1);
        if (g->block[i] < 1 || g->block[i] > 65536 || g->lo[i] < 0 || g->hi[i] < 0 ||
            g->lo[i] > MAX_NUMEL || g->hi[i] > MAX_NUMEL)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_MODEL,
                                    "invalid block %lld / paddings %lld,%lld on spatial dim %d",
                                    (long long)g->block[i], (long long)g->lo[i],
                                    (long long)g->hi[i], (int)i);
    }
    return check_elem_dtype(ctx, x);
}

ks_status ks__infer_space_to_batch_nd(ks__kernel_ctx *ctx) {
    ks__batch_space_geom g;
    ks_status st = ks__batch_space_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    int64_t dims[KS_MAX_RANK];
    memcpy(dims, x->dims, sizeof(dims));
    int64_t prod = 1;
    for (int32_t i = 0; i < g.m; i++) {
        int64_t padded = x->dims[i + 1] + g.lo[i] + g.hi[i];
        if (padded % g.block[i] != 0)
            return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                    "padded spatial dim %d (%lld) is not a multiple of block %lld",
                                    (int)i, (long long)padded, (long long)g.block[i]);
        dims[i + 1] = padded / g.block[i];
        prod *= g.block[i];
        if (prod > MAX_NUMEL)
            return ks__kernel_error(ctx, KS_STATUS_LIMIT_EXCEEDED, "block product too large");
    }
    if (x->dims[0] > MAX_NUMEL / prod)
        return ks__kernel_error(ctx, KS_STATUS_LIMIT_EXCEEDED, "output batch too large");
    dims[0] = x->dims[0] * prod;
    if ((st = check_dims(ctx, "output", x->rank, dims, 0))) return st;
    ks__rt_set_shape(ctx->out[0], x->dtype, x->rank, dims);
    return KS_STATUS_OK;
}

ks_status ks__infer_batch_to_space_nd(ks__kernel_ctx *ctx) {
    ks__batch_space_geom g;
    ks_status st = ks__batch_space_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    int64_t dims[KS_MAX_RANK];
    memcpy(dims, x->dims, sizeof(dims));
    int64_t prod = 1;
    for (int32_t i = 0; i < g.m; i++) {
        prod *= g.block[i];
        if (prod > MAX_NUMEL)
            return ks__kernel_error(ctx, KS_STATUS_LIMIT_EXCEEDED, "block product too large");
        int64_t full = x->dims[i + 1] * g.block[i];
        dims[i + 1] = full - g.lo[i] - g.hi[i];
        if (dims[i + 1] < 0)
            return ks__kernel_error(
                ctx, KS_STATUS_INVALID_SHAPE, "crops %lld,%lld exceed spatial dim %d size %lld",
                (long long)g.lo[i], (long long)g.hi[i], (int)i, (long long)full);
    }
    if (x->dims[0] % prod != 0)
        return ks__kernel_error(ctx, KS_STATUS_INVALID_SHAPE,
                                "input batch %lld is not a multiple of the block product %lld",
                                (long long)x->dims[0], (long long)prod);
    dims[0] = x->dims[0] / prod;
    if ((st = check_dims(ctx, "output", x->rank, dims, 0))) return st;
    ks__rt_set_shape(ctx->out[0], x->dtype, x->rank, dims);
    return KS_STATUS_OK;
}
