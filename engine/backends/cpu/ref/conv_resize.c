/* Reference RESIZE (nearest / bilinear, NHWC) with TFLite and ONNX coordinate modes.
 *
 * Source coordinates are computed in float as TFLite does (ratio = in/out, or 1/scale when the
 * size came from scales as in ONNX), so nearest-neighbour picks the same pixels as TFLite at the
 * boundary cases where float rounding matters. 8-bit bilinear follows TFLite's reference kernels:
 * uint8 interpolates in float and adds 0.5 before truncating; int8 uses the 10-bit fixed-point
 * kernel (for the coordinate modes TFLite has: asymmetric, align_corners, half_pixel).
 */
#include <math.h>
#include <string.h>

#include "conv_internal.h"
#include "../op_enabled.h"

float ks__resize_source_coord(int64_t o, int64_t out, float ratio, int32_t coord) {
    float of = (float)o;
    switch (coord) {
    case KS_RESIZE_HALF_PIXEL:
        return (of + 0.5f) * ratio - 0.5f;
    case KS_RESIZE_PYTORCH_HALF_PIXEL:
        return out > 1 ? (of + 0.5f) * ratio - 0.5f : 0.0f;
    case KS_RESIZE_TF_HALF_PIXEL_FOR_NN:
        return (of + 0.5f) * ratio;
    default:
        return of * ratio; /* asymmetric, align_corners */
    }
}

int64_t ks__resize_nearest_index(float src, int64_t in, int32_t round_mode) {
    float r;
    switch (round_mode) {
    case 0: /* round_prefer_floor */
        r = src - floorf(src) == 0.5f ? floorf(src) : roundf(src);
        break;
    case 1:
        r = roundf(src);
        break; /* round_prefer_ceil (half away from zero, as TFLite) */
    case 2:
        r = floorf(src);
        break;
    default:
        r = ceilf(src);
        break;
    }
    if (!(r >= 0.0f)) return 0;
    if (r >= (float)(in - 1)) return in - 1;
    return (int64_t)r;
}

static float clamp_coord(float v, int64_t in) {
    float hi = (float)(in - 1);
    return v < 0.0f ? 0.0f : (v > hi ? hi : v);
}

/* TFLite ComputeInterpolationValues (float): lower index floored, upper index ceiled. */
void ks__resize_tfl_bounds(float src, int64_t in, int64_t *lo, int64_t *hi) {
    float f = floorf(src), c = ceilf(src);
    *lo = f < 0.0f ? 0 : (f > (float)(in - 1) ? in - 1 : (int64_t)f);
    *hi = c > (float)(in - 1) ? in - 1 : (c < 0.0f ? 0 : (int64_t)c);
}

/* TFLite int8 fixed-point bilinear: coordinates in units of 1/1024 pixel. */
void ks__resize_int_coord(int64_t o, int64_t scale_10, int half_pixel, int64_t in, int64_t *src,
                          int64_t *lo, int64_t *hi) {
    int64_t s = half_pixel ? o * scale_10 + scale_10 / 2 - (1 << 9) : o * scale_10;
    int64_t l = s / (1 << 10); /* truncates toward zero, as TFLite's int32 division */
    int64_t h = (s + (1 << 10) - 1) / (1 << 10);
    *src = s;
    *lo = l < 0 ? 0 : (l > in - 1 ? in - 1 : l);
    *hi = h > in - 1 ? in - 1 : (h < 0 ? 0 : h);
}

int64_t ks__resize_int_scale(int64_t in, int64_t out, int align) {
    if (align && out > 1) return ((1 << 10) * (in - 1) + (out - 1) / 2) / (out - 1);
    return ((1 << 10) * in + out / 2) / out;
}

static ks_status resize_run(ks__kernel_ctx *ctx) {
    ks__resize_geom g;
    ks_status st = ks__resize_geometry(ctx, &g);
    if (st) return st;
    const ks__rt_tensor *x = ctx->in[0];
    ks__rt_tensor *y = ctx->out[0];
    size_t esize = ks_dtype_size(x->dtype);
    const uint8_t *xb = (const uint8_t *)x->data;
    uint8_t *yb = (uint8_t *)y->data;

    if (g.mode == 0) {
        for (int64_t n = 0; n < g.n; n++)
            for (int64_t oy = 0; oy < g.oh; oy++) {
                int64_t iy = ks__resize_nearest_index(
                    ks__resize_source_coord(oy, g.oh, g.ratio_h, g.coord), g.ih, g.round_mode);
                for (int64_t ox = 0; ox < g.ow; ox++) {
                    int64_t ix = ks__resize_nearest_index(
                        ks__resize_source_coord(ox, g.ow, g.ratio_w, g.coord), g.iw, g.round_mode);
                    int64_t xi = ((n * g.ih + iy) * g.iw + ix) * g.c;
                    int64_t yi = ((n * g.oh + oy) * g.ow + ox) * g.c;
                    memcpy(yb + (size_t)yi * esize, xb + (size_t)xi * esize, (size_t)g.c * esize);
                }
            }
        return KS_STATUS_OK;
    }

    int int8_fixed = x->dtype == KS_DTYPE_I8 &&
                     (g.coord == KS_RESIZE_ASYMMETRIC || g.coord == KS_RESIZE_ALIGN_CORNERS ||
                      g.coord == KS_RESIZE_HALF_PIXEL);
    int64_t sh10 = ks__resize_int_scale(g.ih, g.oh, g.coord == KS_RESIZE_ALIGN_CORNERS);
    int64_t sw10 = ks__resize_int_scale(g.iw, g.ow, g.coord == KS_RESIZE_ALIGN_CORNERS);
    int half = g.coord == KS_RESIZE_HALF_PIXEL;
    for (int64_t n = 0; n < g.n; n++) {
        for (int64_t oy = 0; oy < g.oh; oy++) {
            float fy = ks__resize_source_coord(oy, g.oh, g.ratio_h, g.coord);
            /* Float output: clamp like ONNX Runtime (TFLite's unclamped weights give the same
             * value in exact arithmetic, but not bit for bit in float). */
            if (x->dtype == KS_DTYPE_F32) fy = clamp_coord(fy, g.ih);
            int64_t y0, y1, sy = 0;
            if (int8_fixed)
                ks__resize_int_coord(oy, sh10, half, g.ih, &sy, &y0, &y1);
            else
                ks__resize_tfl_bounds(fy, g.ih, &y0, &y1);
            for (int64_t ox = 0; ox < g.ow; ox++) {
                float fx = ks__resize_source_coord(ox, g.ow, g.ratio_w, g.coord);
                if (x->dtype == KS_DTYPE_F32) fx = clamp_coord(fx, g.iw);
                int64_t x0, x1, sx = 0;
                if (int8_fixed)
                    ks__resize_int_coord(ox, sw10, half, g.iw, &sx, &x0, &x1);
                else
                    ks__resize_tfl_bounds(fx, g.iw, &x0, &x1);
                int64_t i00 = ((n * g.ih + y0) * g.iw + x0) * g.c;
                int64_t i01 = ((n * g.ih + y0) * g.iw + x1) * g.c;
                int64_t i10 = ((n * g.ih + y1) * g.iw + x0) * g.c;
                int64_t i11 = ((n * g.ih + y1) * g.iw + x1) * g.c;
                int64_t yi = ((n * g.oh + oy) * g.ow + ox) * g.c;
                for (int64_t c = 0; c < g.c; c++) {
                    if (int8_fixed) {
                        int64_t wy = sy - (1 << 10) * y0, wx = sx - (1 << 10) * x0;
                        int64_t acc =
                            ks__conv_load_q(x, i00 + c) * ((1 << 10) - wy) * ((1 << 10) - wx) +
                            ks__conv_load_q(x, i10 + c) * wy * ((1 << 10) - wx) +
                            ks__conv_load_q(x, i01 + c) * ((1 << 10) - wy) * wx +
                            ks__conv_load_q(x, i11 + c) * wy * wx;
                        int64_t round = acc > 0 ? (1 << 19) : -(1 << 19);
                        int64_t v = (acc + round) / (1 << 20);
                        ks__conv_store_q(y, yi + c, ks__quant_clamp((int32_t)v, KS_DTYPE_I8));
                        continue;
                    }
                    float dy = fy - (float)y0, dx = fx - (float)x0;
                    float v00, v01, v10, v11;
                    if (x->dtype == KS_DTYPE_F32) {
                        const float *xf = (const float *)x->data;
                        v00 = xf[i00 + c], v01 = xf[i01 + c], v10 = xf[i10 + c], v11 = xf[i11 + c];
                    } else {
                        v00 = (float)ks__conv_load_q(x, i00 + c);
                        v01 = (float)ks__conv_load_q(x, i01 + c);
                        v10 = (float)ks__conv_load_q(x, i10 + c);
                        v11 = (float)ks__conv_load_q(x, i11 + c);
                    }
                    /* Same operation order as TFLite's reference, so 8-bit results round alike. */
                    float v = v00 * (1 - dy) * (1 - dx) + v10 * dy * (1 - dx) +
                              v01 * (1 - dy) * dx + v11 * dy * dx;
                    if (x->dtype == KS_DTYPE_F32) {
                        ((float *)y->data)[yi + c] = v;
                    } else if (x->dtype == KS_DTYPE_U8) {
                        int32_t q = (int32_t)(v + 0.5f);
                        ks__conv_store_q(y, yi + c, ks__quant_clamp(q, KS_DTYPE_U8));
                    } else {
                        ks__conv_store_q(y, yi + c,
                                         ks__quant_clamp((int32_t)lrintf(roundf(v)), KS_DTYPE_I8));
                    }
                }
            }
        }
    }
    return KS_STATUS_OK;
}

void ks__ref_register_conv_resize(ks__kernel_table *t) {
    KS__REF_REG(t, RESIZE, NULL, resize_run);
}
