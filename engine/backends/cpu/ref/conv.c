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
 * Shapes and the checks of params, dtypes and quantization are the core's
 * (engine/src/shape_conv.c); the run functions recompute the geometry with the same functions.
 */
#include <math.h>
#include <string.h>

#include "conv_internal.h"
#include "../op_enabled.h"
#include "../qgemm.h" /* the fused residual ADD's constants (shared with the fast kernels) */

/* ------------------------------------------------------------------------------------------ */
/* Shared helpers (declared in conv_internal.h)                                               */

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

/* A float activation: F32, or F16 in the graphs of the fp16 pass (precision.h). */
static inline float act_load(const ks__rt_tensor *t, int64_t i) {
    return t->dtype == KS_DTYPE_F16 ? ks__f16_to_f32(((const uint16_t *)t->data)[i])
                                    : ((const float *)t->data)[i];
}

static inline void act_store(ks__rt_tensor *t, int64_t i, float v) {
    if (t->dtype == KS_DTYPE_F16)
        ((uint16_t *)t->data)[i] = ks__f32_to_f16(v);
    else
        ((float *)t->data)[i] = v;
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

/* ------------------------------------------------------------------------------------------ */
/* Local helpers                                                                              */

static int32_t sat_i32(int64_t v) {
    return v < INT32_MIN ? INT32_MIN : (v > INT32_MAX ? INT32_MAX : (int32_t)v);
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

/* Plan of quantized CONV2D, CONV2D_TRANSPOSE and FULLY_CONNECTED: scratch for one multiplier and
 * shift per output channel (weights dim 0), derived at run from the scales. */
static ks_status qmult_plan(ks__kernel_ctx *ctx) {
    if (ks__conv_is_quant(ctx->in[0]))
        ctx->scratch_bytes = (size_t)ctx->in[1]->dims[0] * 2 * sizeof(int32_t);
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* CONV2D                                                                                      */

/* The fused node's second step on one intermediate value t (ops.inc): the quantized ADD with the
 * residual value r, or the table lookup. */
static int32_t conv_fused_out(const ks__q8_fused *f, const ks__rt_tensor *tab, ks_dtype dt,
                              int32_t t, int32_t r) {
    if (!tab) return ks__q8_fused_add_one(f, t, r);
    return ks__conv_load_q(tab, t + (dt == KS_DTYPE_I8 ? 128 : 0));
}

static ks_status conv_run(ks__kernel_ctx *ctx) {
    ks__conv_geom g;
    ks_status st = ks__conv_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1], *b = ks__kernel_input(ctx, 2);
    const ks__rt_tensor *res = ks__kernel_input(ctx, 3);
    ks__rt_tensor *y = ctx->out[0];
    int quant = ks__conv_is_quant(x);
    int32_t *mult = NULL, *shift = NULL;
    int32_t xzp = 0, yzp = 0, lo = 0, hi = 0;
    if ((st = ks__conv_check_slope(ctx, g.act, g.oc))) return st;
    const float *slope = g.act == KS_ACT_PRELU ? (const float *)ctx->in[4]->data : NULL;
    const int fused = quant && ctx->node->ip[12] == 1;
    if ((st = ks__conv_check_fused(ctx, quant, g.act))) return st;
    if (res && (ks__rt_numel(res) != ks__rt_numel(y) || (!quant && res->dtype != y->dtype)))
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
                                    facc += (double)act_load(x, xi + ci) *
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
                        if (res) facc += act_load(res, yi + co);
                        act_store(y, yi + co,
                                  ks__act_apply((float)facc, g.act, slope ? slope[co] : g.alpha));
                    }
                }
            }
        }
    }
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* CONV2D_TRANSPOSE                                                                            */

/* Written as a gather over the input pixels that reach each output pixel (TFLite scatters);
 * the integer sums are identical and the gather needs no accumulator buffer. */
static ks_status tconv_run(ks__kernel_ctx *ctx) {
    ks__conv_geom g;
    ks_status st = ks__tconv_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1], *b = ks__kernel_input(ctx, 2);
    const ks__rt_tensor *res = ks__kernel_input(ctx, 3);
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
                                    facc += (double)act_load(x, xi + ci) *
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
                        if (res) facc += act_load(res, yi + co);
                        act_store(y, yi + co, ks__act_apply((float)facc, g.act, g.alpha));
                    }
                }
            }
        }
    }
    return KS_STATUS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* POOL2D                                                                                      */

static ks_status pool_run(ks__kernel_ctx *ctx) {
    ks__pool_geom g;
    ks_status st = ks__pool_geometry(ctx, &g);
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
                                float v = act_load(x, xi);
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
                        act_store(y, yi + c, ks__act_apply(r, g.act, ctx->node->fp[0]));
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

static ks_status fc_run(ks__kernel_ctx *ctx) {
    const ks__rt_tensor *x = ctx->in[0], *w = ctx->in[1], *b = ks__kernel_input(ctx, 2);
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

static ks_status matmul_run(ks__kernel_ctx *ctx) {
    ks__matmul_geom g;
    int64_t dims[KS_MAX_RANK + 2];
    int32_t rank;
    ks_status st = ks__matmul_geometry(ctx, &g, dims, &rank);
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
    KS__REF_REG(t, CONV2D, qmult_plan, conv_run);
    KS__REF_REG(t, CONV2D_TRANSPOSE, qmult_plan, tconv_run);
    KS__REF_REG(t, POOL2D, NULL, pool_run);
    KS__REF_REG(t, FULLY_CONNECTED, qmult_plan, fc_run);
    KS__REF_REG(t, MATMUL, NULL, matmul_run);
    ks__ref_register_conv_resize(t);
    ks__ref_register_conv_space(t);
}
