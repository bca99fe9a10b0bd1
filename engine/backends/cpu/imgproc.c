/* Image to tensor in one pass: validation, orientation folded into the affine, and the scalar
 * reference sampler. SIMD fast paths (x86/avx2/imgproc_avx2.c, arm/neon/imgproc_neon.c,
 * wasm/simd128/imgproc_simd128.c)
 * reproduce the scalar arithmetic exactly; see imgproc_impl.h for that contract.
 *
 * Why orientation is folded into the matrix: rotations by multiples of 90 degrees and mirroring
 * map the pixel grid onto itself, so sampling the raw frame through (orientation o m) gives the
 * same result as sampling a rotated copy, without making one. */
#include "imgproc_impl.h"

#include <math.h>
#include <string.h>

#include "common.h"
#include "base/cpuinfo.h"

/* Entries above this would let m * (coordinate up to 32768) overflow the float range of exact
 * pixel arithmetic long before anything useful happens; no real transform comes close. */
#define KS__AFFINE_MAX_ABS 1e6f

const char *ks_pixel_format_string(ks_pixel_format format) {
    switch (format) {
    case KS_PIXEL_FORMAT_RGBA:
        return "rgba";
    case KS_PIXEL_FORMAT_BGRA:
        return "bgra";
    case KS_PIXEL_FORMAT_RGB:
        return "rgb";
    case KS_PIXEL_FORMAT_BGR:
        return "bgr";
    case KS_PIXEL_FORMAT_GRAY:
        return "gray";
    case KS_PIXEL_FORMAT_NV21:
        return "nv21";
    case KS_PIXEL_FORMAT_NV12:
        return "nv12";
    case KS_PIXEL_FORMAT_I420:
        return "i420";
    default:
        return "invalid";
    }
}

/* ---- affine helpers ---- */

void ks_affine_multiply(const float a[6], const float b[6], float out[6]) {
    if (!a || !b || !out) return;
    /* Double precision so composing a few transforms does not drift. */
    double r[6];
    r[0] = (double)a[0] * b[0] + (double)a[1] * b[3];
    r[1] = (double)a[0] * b[1] + (double)a[1] * b[4];
    r[2] = (double)a[0] * b[2] + (double)a[1] * b[5] + a[2];
    r[3] = (double)a[3] * b[0] + (double)a[4] * b[3];
    r[4] = (double)a[3] * b[1] + (double)a[4] * b[4];
    r[5] = (double)a[3] * b[2] + (double)a[4] * b[5] + a[5];
    for (int i = 0; i < 6; i++)
        out[i] = (float)r[i];
}

void ks_affine_apply(const float m[6], const float *xy, size_t num_points, float *xy_out) {
    if (!m || !xy || !xy_out) return;
    for (size_t i = 0; i < num_points; i++) {
        double x = xy[2 * i], y = xy[2 * i + 1];
        xy_out[2 * i] = (float)(m[0] * x + m[1] * y + m[2]);
        xy_out[2 * i + 1] = (float)(m[3] * x + m[4] * y + m[5]);
    }
}

ks_status ks_affine_invert(const float m[6], float inverse_out[6]) {
    if (!m || !inverse_out) {
        ks__object_error(NULL, "ks_affine_invert: m and inverse_out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    for (int i = 0; i < 6; i++) {
        if (!isfinite(m[i])) {
            ks__object_error(NULL, "ks_affine_invert: m[%d] = %g is not finite", i, m[i]);
            return KS_STATUS_INVALID_ARGUMENT;
        }
    }
    double det = (double)m[0] * m[4] - (double)m[1] * m[3];
    double mag = fabs((double)m[0] * m[4]) + fabs((double)m[1] * m[3]);
    if (det == 0.0 || fabs(det) <= 1e-12 * mag) {
        ks__object_error(NULL, "ks_affine_invert: matrix is singular (determinant %g)", det);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    double a = m[4] / det, b = -m[1] / det, d = -m[3] / det, e = m[0] / det;
    double r[6] = {a, b, -(a * m[2] + b * m[5]), d, e, -(d * m[2] + e * m[5])};
    for (int i = 0; i < 6; i++)
        inverse_out[i] = (float)r[i];
    return KS_STATUS_OK;
}

static int size_ok(int32_t v) {
    return v > 0 && v <= KS_IMAGE_MAX_DIM_PX;
}

ks_status ks_affine_letterbox(int32_t src_width_px, int32_t src_height_px, int32_t dst_width_px,
                              int32_t dst_height_px, float m_out[6], float inverse_out[6]) {
    if (!m_out) {
        ks__object_error(NULL, "ks_affine_letterbox: m_out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (!size_ok(src_width_px) || !size_ok(src_height_px) || !size_ok(dst_width_px) ||
        !size_ok(dst_height_px)) {
        ks__object_error(NULL, "ks_affine_letterbox: sizes %dx%d -> %dx%d must be in 1..%d pixels",
                         src_width_px, src_height_px, dst_width_px, dst_height_px,
                         KS_IMAGE_MAX_DIM_PX);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    double sx = (double)dst_width_px / src_width_px, sy = (double)dst_height_px / src_height_px;
    double s = sx < sy ? sx : sy;
    double ox = (dst_width_px - src_width_px * s) * 0.5;
    double oy = (dst_height_px - src_height_px * s) * 0.5;
    /* forward (source -> destination): d = s * p + o; the sampler needs the inverse. */
    m_out[0] = (float)(1.0 / s);
    m_out[1] = 0.0f;
    m_out[2] = (float)(-ox / s);
    m_out[3] = 0.0f;
    m_out[4] = (float)(1.0 / s);
    m_out[5] = (float)(-oy / s);
    if (inverse_out) {
        inverse_out[0] = (float)s;
        inverse_out[1] = 0.0f;
        inverse_out[2] = (float)ox;
        inverse_out[3] = 0.0f;
        inverse_out[4] = (float)s;
        inverse_out[5] = (float)oy;
    }
    return KS_STATUS_OK;
}

ks_status ks_affine_from_rotated_rect(const ks_rotated_rect *roi, int32_t dst_width_px,
                                      int32_t dst_height_px, float m_out[6]) {
    if (!roi || !m_out) {
        ks__object_error(NULL, "ks_affine_from_rotated_rect: roi and m_out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (!size_ok(dst_width_px) || !size_ok(dst_height_px)) {
        ks__object_error(NULL,
                         "ks_affine_from_rotated_rect: destination %dx%d must be in 1..%d pixels",
                         dst_width_px, dst_height_px, KS_IMAGE_MAX_DIM_PX);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (!isfinite(roi->center_x_px) || !isfinite(roi->center_y_px) || !isfinite(roi->angle_rad) ||
        !(roi->width_px > 0.0f) || !(roi->height_px > 0.0f) || !isfinite(roi->width_px) ||
        !isfinite(roi->height_px)) {
        ks__object_error(NULL,
                         "ks_affine_from_rotated_rect: roi center (%g, %g) size %gx%g angle %g "
                         "needs finite values and a positive size",
                         roi->center_x_px, roi->center_y_px, roi->width_px, roi->height_px,
                         roi->angle_rad);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    double c = cos(roi->angle_rad), s = sin(roi->angle_rad);
    double w = roi->width_px, h = roi->height_px;
    double kx = w / dst_width_px, ky = h / dst_height_px;
    /* destination (u, v) -> rect-local (a, b) = (u*kx - w/2, v*ky - h/2) -> center + R(a, b) */
    m_out[0] = (float)(kx * c);
    m_out[1] = (float)(-ky * s);
    m_out[2] = (float)(roi->center_x_px - 0.5 * w * c + 0.5 * h * s);
    m_out[3] = (float)(kx * s);
    m_out[4] = (float)(ky * c);
    m_out[5] = (float)(roi->center_y_px - 0.5 * w * s - 0.5 * h * c);
    return KS_STATUS_OK;
}

/* ---- the scalar reference sampler ---- */

static float clamp255(float v) {
    v = v < 0.0f ? 0.0f : v;
    return v > 255.0f ? 255.0f : v;
}

static void yuv_to_rgb(const ks__imgproc *p, float Y, float U, float V, float rgb[3]) {
    float yy = Y - p->y_offset;
    yy = yy * p->y_scale;
    float u = U - 128.0f, v = V - 128.0f;
    float t = p->kr_v * v;
    float r = yy + t;
    t = p->kg_u * u;
    float g = yy - t;
    t = p->kg_v * v;
    g = g - t;
    t = p->kb_u * u;
    float b = yy + t;
    rgb[0] = clamp255(r);
    rgb[1] = clamp255(g);
    rgb[2] = clamp255(b);
}

/* One source pixel as R, G, B in 0..255, with the border rule for pixels outside. */
static void fetch(const ks__imgproc *p, int32_t x, int32_t y, float rgb[3]) {
    if (x < 0 || y < 0 || x >= p->width_px || y >= p->height_px) {
        if (p->border != KS_BORDER_REPLICATE) {
            rgb[0] = p->border_rgb[0];
            rgb[1] = p->border_rgb[1];
            rgb[2] = p->border_rgb[2];
            return;
        }
        x = x < 0 ? 0 : (x >= p->width_px ? p->width_px - 1 : x);
        y = y < 0 ? 0 : (y >= p->height_px ? p->height_px - 1 : y);
    }
    const uint8_t *row = p->plane[0] + (size_t)y * p->stride_bytes[0];
    const uint8_t *px;
    size_t cx = (size_t)(x >> 1), cy = (size_t)(y >> 1);
    switch (p->format) {
    case KS_PIXEL_FORMAT_RGBA:
    case KS_PIXEL_FORMAT_RGB:
        px = row + (size_t)x * (p->format == KS_PIXEL_FORMAT_RGBA ? 4 : 3);
        rgb[0] = px[0];
        rgb[1] = px[1];
        rgb[2] = px[2];
        return;
    case KS_PIXEL_FORMAT_BGRA:
    case KS_PIXEL_FORMAT_BGR:
        px = row + (size_t)x * (p->format == KS_PIXEL_FORMAT_BGRA ? 4 : 3);
        rgb[0] = px[2];
        rgb[1] = px[1];
        rgb[2] = px[0];
        return;
    case KS_PIXEL_FORMAT_GRAY:
        rgb[0] = rgb[1] = rgb[2] = row[x];
        return;
    case KS_PIXEL_FORMAT_NV21:
        px = p->plane[1] + cy * p->stride_bytes[1] + 2 * cx;
        yuv_to_rgb(p, row[x], px[1], px[0], rgb);
        return;
    case KS_PIXEL_FORMAT_NV12:
        px = p->plane[1] + cy * p->stride_bytes[1] + 2 * cx;
        yuv_to_rgb(p, row[x], px[0], px[1], rgb);
        return;
    case KS_PIXEL_FORMAT_I420:
        yuv_to_rgb(p, row[x], p->plane[1][cy * p->stride_bytes[1] + cx],
                   p->plane[2][cy * p->stride_bytes[2] + cx], rgb);
        return;
    default:
        rgb[0] = rgb[1] = rgb[2] = 0.0f;
        return;
    }
}

static int is_yuv(ks_pixel_format f) {
    return f == KS_PIXEL_FORMAT_NV21 || f == KS_PIXEL_FORMAT_NV12 || f == KS_PIXEL_FORMAT_I420;
}

/* The Y, U, V samples of the YUV source pixel at (x, y), clamped to the image (REPLICATE). */
static void fetch_yuv(const ks__imgproc *p, int32_t x, int32_t y, float yuv[3]) {
    x = x < 0 ? 0 : (x >= p->width_px ? p->width_px - 1 : x);
    y = y < 0 ? 0 : (y >= p->height_px ? p->height_px - 1 : y);
    size_t cx = (size_t)(x >> 1), cy = (size_t)(y >> 1);
    yuv[0] = p->plane[0][(size_t)y * p->stride_bytes[0] + (size_t)x];
    if (p->format == KS_PIXEL_FORMAT_I420) {
        yuv[1] = p->plane[1][cy * p->stride_bytes[1] + cx];
        yuv[2] = p->plane[2][cy * p->stride_bytes[2] + cx];
        return;
    }
    const uint8_t *px = p->plane[1] + cy * p->stride_bytes[1] + 2 * cx;
    int nv21 = p->format == KS_PIXEL_FORMAT_NV21;
    yuv[1] = px[nv21 ? 1 : 0];
    yuv[2] = px[nv21 ? 0 : 1];
}

/* The bilinear blend of four taps, in the statement order every fast path repeats. */
static float lerp2(float p00, float p01, float p10, float p11, float ax, float ay) {
    float d = p01 - p00;
    d = d * ax;
    float top = p00 + d;
    d = p11 - p10;
    d = d * ax;
    float bot = p10 + d;
    d = bot - top;
    d = d * ay;
    return top + d;
}

/* Clamping keeps float -> int conversion defined; anything more than a pixel or two outside
 * samples border only, whatever its exact position. */
static float clamp_coord(float v, float hi) {
    v = v < -4.0f ? -4.0f : v;
    return v > hi ? hi : v;
}

void ks__imgproc_span_scalar(const ks__imgproc *p, int32_t y, int32_t x_begin, int32_t x_end) {
    const float *m = p->m;
    float bx, by;
    ks__imgproc_row_base(p, y, &bx, &by);
    float hi_x = (float)p->width_px + 4.0f, hi_y = (float)p->height_px + 4.0f;
    size_t plane_px = (size_t)p->out_width_px * (size_t)p->out_height_px;
    for (int32_t x = x_begin; x < x_end; x++) {
        float dx = (float)x + 0.5f;
        float sx = m[0] * dx;
        sx = sx + bx;
        float sy = m[3] * dx;
        sy = sy + by;
        float rgb[3];
        if (p->interp == KS_INTERP_NEAREST) {
            sx = clamp_coord(sx, hi_x);
            sy = clamp_coord(sy, hi_y);
            fetch(p, (int32_t)floorf(sx), (int32_t)floorf(sy), rgb);
        } else {
            float u = clamp_coord(sx - 0.5f, hi_x), v = clamp_coord(sy - 0.5f, hi_y);
            float fu = floorf(u), fv = floorf(v);
            float ax = u - fu, ay = v - fv;
            int32_t ix = (int32_t)fu, iy = (int32_t)fv;
            float p00[3], p01[3], p10[3], p11[3];
            /* YUV: Y, U and V are blended, then converted once, unless a tap takes a constant
             * border colour (given in RGB): then each tap is converted and the RGB blended. */
            int yuv_blend = is_yuv(p->format) &&
                            (p->border == KS_BORDER_REPLICATE ||
                             (ix >= 0 && iy >= 0 && ix + 1 < p->width_px && iy + 1 < p->height_px));
            void (*get)(const ks__imgproc *, int32_t, int32_t, float *) =
                yuv_blend ? fetch_yuv : fetch;
            get(p, ix, iy, p00);
            get(p, ix + 1, iy, p01);
            get(p, ix, iy + 1, p10);
            get(p, ix + 1, iy + 1, p11);
            for (int c = 0; c < 3; c++)
                rgb[c] = lerp2(p00[c], p01[c], p10[c], p11[c], ax, ay);
            if (yuv_blend) yuv_to_rgb(p, rgb[0], rgb[1], rgb[2], rgb);
        }
        float val[3];
        if (p->gray_out) {
            if (p->gray_src) {
                val[0] = rgb[0];
            } else {
                float l = 0.299f * rgb[0];
                float t = 0.587f * rgb[1];
                l = l + t;
                t = 0.114f * rgb[2];
                val[0] = l + t;
            }
        } else {
            val[0] = p->bgr ? rgb[2] : rgb[0];
            val[1] = rgb[1];
            val[2] = p->bgr ? rgb[0] : rgb[2];
        }
        size_t pix = (size_t)y * (size_t)p->out_width_px + (size_t)x;
        for (int c = 0; c < p->out_channels; c++) {
            float o = val[c] - p->mean[c];
            o = o * p->scale[c];
            size_t idx = p->nchw ? (size_t)c * plane_px + pix : pix * (size_t)p->out_channels + c;
            if (p->out_u8) {
                o = clamp255(o);
                o = o + 0.5f;
                ((uint8_t *)p->out)[idx] = (uint8_t)(int32_t)o;
            } else {
                ((float *)p->out)[idx] = o;
            }
        }
    }
}

/* ---- validation and set-up ---- */

static ks_status setup_source(const char *fn, const ks_image *src, ks__imgproc *p) {
    const char *fmt = ks_pixel_format_string(src->format);
    if (src->format <= KS_PIXEL_FORMAT_INVALID || src->format >= KS_PIXEL_FORMAT_COUNT) {
        ks__object_error(NULL, "%s: source format %d is not a ks_pixel_format", fn,
                         (int)src->format);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (src->width_px <= 0 || src->height_px <= 0) {
        ks__object_error(NULL, "%s: %s source size %dx%d must be positive", fn, fmt, src->width_px,
                         src->height_px);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (src->width_px > KS_IMAGE_MAX_DIM_PX || src->height_px > KS_IMAGE_MAX_DIM_PX) {
        ks__object_error(NULL, "%s: %s source %dx%d exceeds KS_IMAGE_MAX_DIM_PX (%d)", fn, fmt,
                         src->width_px, src->height_px, KS_IMAGE_MAX_DIM_PX);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    if ((unsigned)src->yuv_range >= KS_YUV_RANGE_COUNT) {
        ks__object_error(NULL, "%s: %s yuv_range %d is not a ks_yuv_range", fn, fmt,
                         (int)src->yuv_range);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    int32_t w = src->width_px, h = src->height_px;
    int32_t cw = (w + 1) / 2, ch = (h + 1) / 2;
    int32_t num_planes = 1, row_bytes[3] = {w, 0, 0}, rows[3] = {h, ch, ch};
    switch (src->format) {
    case KS_PIXEL_FORMAT_RGBA:
    case KS_PIXEL_FORMAT_BGRA:
        row_bytes[0] = 4 * w;
        break;
    case KS_PIXEL_FORMAT_RGB:
    case KS_PIXEL_FORMAT_BGR:
        row_bytes[0] = 3 * w;
        break;
    case KS_PIXEL_FORMAT_NV21:
    case KS_PIXEL_FORMAT_NV12:
        num_planes = 2;
        row_bytes[1] = 2 * cw;
        break;
    case KS_PIXEL_FORMAT_I420:
        num_planes = 3;
        row_bytes[1] = row_bytes[2] = cw;
        break;
    default:
        break;
    }
    p->format = src->format;
    p->width_px = w;
    p->height_px = h;
    p->offsets_fit_i32 = 1;
    for (int32_t i = 0; i < num_planes; i++) {
        if (!src->planes[i]) {
            ks__object_error(NULL, "%s: %s source needs planes[%d] (%d planes)", fn, fmt, i,
                             num_planes);
            return KS_STATUS_INVALID_ARGUMENT;
        }
        int32_t stride = src->stride_bytes[i] ? src->stride_bytes[i] : row_bytes[i];
        if (stride < row_bytes[i]) {
            ks__object_error(NULL,
                             "%s: %s source stride_bytes[%d] = %d is below the "
                             "row size %d bytes (width %d)",
                             fn, fmt, i, src->stride_bytes[i], row_bytes[i], w);
            return KS_STATUS_INVALID_ARGUMENT;
        }
        p->plane[i] = (const uint8_t *)src->planes[i];
        p->stride_bytes[i] = (size_t)stride;
        if ((uint64_t)stride * (uint64_t)rows[i] >= ((uint64_t)1 << 31)) p->offsets_fit_i32 = 0;
    }
    if (src->format >= KS_PIXEL_FORMAT_NV21) {
        if (src->yuv_range == KS_YUV_BT601_FULL) {
            p->y_offset = 0.0f;
            p->y_scale = 1.0f;
            p->kr_v = 1.402f;
            p->kg_u = 0.344136f;
            p->kg_v = 0.714136f;
            p->kb_u = 1.772f;
        } else {
            /* Video range: Y spans 219 codes and chroma 224, so both are stretched to 255. */
            double ks = 255.0 / 224.0;
            p->y_offset = 16.0f;
            p->y_scale = (float)(255.0 / 219.0);
            p->kr_v = (float)(1.402 * ks);
            p->kg_u = (float)(0.344136 * ks);
            p->kg_v = (float)(0.714136 * ks);
            p->kb_u = (float)(1.772 * ks);
        }
    }
    return KS_STATUS_OK;
}

/* Oriented point -> raw point for a raw w x h frame. */
static void orientation_matrix(ks_rotation rot, int mirror, int32_t w, int32_t h, float o[6]) {
    float W = (float)w, H = (float)h;
    float ow = (rot == KS_ROTATION_90 || rot == KS_ROTATION_270) ? H : W;
    /* mirror: oriented (x, y) -> rotated (ow - x, y) */
    float mir[6] = {mirror ? -1.0f : 1.0f, 0.0f, mirror ? ow : 0.0f, 0.0f, 1.0f, 0.0f};
    float r[6];
    switch (rot) {
    case KS_ROTATION_90: /* raw = (y', H - x') */
        r[0] = 0.0f, r[1] = 1.0f, r[2] = 0.0f, r[3] = -1.0f, r[4] = 0.0f, r[5] = H;
        break;
    case KS_ROTATION_180: /* raw = (W - x', H - y') */
        r[0] = -1.0f, r[1] = 0.0f, r[2] = W, r[3] = 0.0f, r[4] = -1.0f, r[5] = H;
        break;
    case KS_ROTATION_270: /* raw = (W - y', x') */
        r[0] = 0.0f, r[1] = -1.0f, r[2] = W, r[3] = 1.0f, r[4] = 0.0f, r[5] = 0.0f;
        break;
    default:
        r[0] = 1.0f, r[1] = 0.0f, r[2] = 0.0f, r[3] = 0.0f, r[4] = 1.0f, r[5] = 0.0f;
        break;
    }
    ks_affine_multiply(r, mir, o);
}

static ks_status setup_dest(const ks_image_to_tensor_desc *d, ks_tensor *dst, ks__imgproc *p) {
    const ks_tensor_info *ti = &dst->info;
    const char *name = ti->name ? ti->name : "(unnamed)";
    if (ti->dtype != KS_DTYPE_F32 && ti->dtype != KS_DTYPE_U8) {
        ks__object_error(NULL,
                         "ks_image_to_tensor: tensor '%s' has dtype %s; only f32 and u8 "
                         "are supported",
                         name, ks_dtype_string(ti->dtype));
        return KS_STATUS_UNSUPPORTED;
    }
    if (!dst->data) {
        ks__object_error(NULL, "ks_image_to_tensor: tensor '%s' has no data", name);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    int32_t rank = ti->shape.rank;
    if (rank != 3 && rank != 4) {
        ks__object_error(NULL, "ks_image_to_tensor: tensor '%s' has rank %d; expected 4 (or 3)",
                         name, rank);
        return KS_STATUS_INVALID_SHAPE;
    }
    const int64_t *dims = ti->shape.dims;
    int64_t n = rank == 4 ? dims[0] : 1;
    const int64_t *hwc = dims + (rank - 3);
    int64_t c, h, w;
    if (p->nchw) {
        c = hwc[0], h = hwc[1], w = hwc[2];
    } else {
        h = hwc[0], w = hwc[1], c = hwc[2];
    }
    int64_t want_c = p->gray_out ? 1 : 3;
    if (c != want_c || h <= 0 || w <= 0 || h > KS_IMAGE_MAX_DIM_PX || w > KS_IMAGE_MAX_DIM_PX ||
        n <= 0 || n > 65536) {
        ks__object_error(NULL,
                         "ks_image_to_tensor: tensor '%s' (%s) has N=%lld H=%lld W=%lld C=%lld; "
                         "expected C=%lld and 1..%d pixels per side",
                         name, p->nchw ? "NCHW" : "NHWC", (long long)n, (long long)h, (long long)w,
                         (long long)c, (long long)want_c, KS_IMAGE_MAX_DIM_PX);
        return KS_STATUS_INVALID_SHAPE;
    }
    if ((d->width_px && d->width_px != w) || (d->height_px && d->height_px != h)) {
        ks__object_error(NULL,
                         "ks_image_to_tensor: desc asks for %dx%d but tensor '%s' is %lldx%lld",
                         d->width_px, d->height_px, name, (long long)w, (long long)h);
        return KS_STATUS_INVALID_SHAPE;
    }
    if (d->batch_index < 0 || d->batch_index >= n) {
        ks__object_error(NULL, "ks_image_to_tensor: batch_index %d outside tensor '%s' (N=%lld)",
                         d->batch_index, name, (long long)n);
        return KS_STATUS_INVALID_SHAPE;
    }
    size_t entry_bytes = (size_t)h * (size_t)w * (size_t)c * ks_dtype_size(ti->dtype);
    if (dst->size_bytes / entry_bytes < (size_t)n) {
        ks__object_error(NULL,
                         "ks_image_to_tensor: tensor '%s' holds %zu bytes; its shape needs %zu",
                         name, dst->size_bytes, entry_bytes * (size_t)n);
        return KS_STATUS_INVALID_SHAPE;
    }
    p->out_width_px = (int32_t)w;
    p->out_height_px = (int32_t)h;
    p->out_channels = (int32_t)c;
    p->out_u8 = ti->dtype == KS_DTYPE_U8;
    p->out = (uint8_t *)dst->data + entry_bytes * (size_t)d->batch_index;
    return KS_STATUS_OK;
}

static ks_status setup(const ks_image *src, const ks_image_to_tensor_desc *d, ks_tensor *dst,
                       ks__imgproc *p) {
    ks_status st = setup_source("ks_image_to_tensor", src, p);
    if (st) return st;
    if ((unsigned)d->rotation >= KS_ROTATION_COUNT || (unsigned)d->interp >= KS_INTERP_COUNT ||
        (unsigned)d->border >= KS_BORDER_COUNT ||
        (unsigned)d->channel_order >= KS_CHANNEL_ORDER_COUNT ||
        (unsigned)d->layout >= KS_TENSOR_LAYOUT_COUNT) {
        ks__object_error(NULL,
                         "ks_image_to_tensor: desc has an unknown enum value (rotation %d, interp "
                         "%d, border %d, channel_order %d, layout %d)",
                         (int)d->rotation, (int)d->interp, (int)d->border, (int)d->channel_order,
                         (int)d->layout);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    p->interp = d->interp;
    p->border = d->border;
    p->nchw = d->layout == KS_TENSOR_LAYOUT_NCHW;
    p->bgr = d->channel_order == KS_CHANNEL_ORDER_BGR;
    p->gray_out = d->channel_order == KS_CHANNEL_ORDER_GRAY;
    p->gray_src = src->format == KS_PIXEL_FORMAT_GRAY;
    st = setup_dest(d, dst, p);
    if (st) return st;

    int any_nonzero = 0;
    for (int i = 0; i < 6; i++) {
        if (!isfinite(d->m[i]) || fabsf(d->m[i]) > KS__AFFINE_MAX_ABS) {
            ks__object_error(NULL, "ks_image_to_tensor: m[%d] = %g is not finite or above 1e6", i,
                             d->m[i]);
            return KS_STATUS_INVALID_ARGUMENT;
        }
        any_nonzero |= d->m[i] != 0.0f;
    }
    for (int c = 0; c < 3; c++) {
        if (!isfinite(d->mean[c]) || !isfinite(d->scale[c]) || !isfinite(d->border_value[c])) {
            ks__object_error(NULL,
                             "ks_image_to_tensor: channel %d has a non-finite mean %g, scale %g "
                             "or border_value %g",
                             c, d->mean[c], d->scale[c], d->border_value[c]);
            return KS_STATUS_INVALID_ARGUMENT;
        }
        p->mean[c] = d->mean[c];
        p->scale[c] = d->scale[c] != 0.0f ? d->scale[c] : 1.0f;
    }
    int32_t ow = src->width_px, oh = src->height_px;
    if (d->rotation == KS_ROTATION_90 || d->rotation == KS_ROTATION_270) {
        ow = src->height_px;
        oh = src->width_px;
    }
    float m[6];
    if (any_nonzero) {
        memcpy(m, d->m, sizeof(m));
    } else {
        float s[6] = {(float)ow / (float)p->out_width_px,  0.0f, 0.0f, 0.0f,
                      (float)oh / (float)p->out_height_px, 0.0f};
        memcpy(m, s, sizeof(m));
    }
    float o[6];
    orientation_matrix(d->rotation, d->mirror != 0, src->width_px, src->height_px, o);
    ks_affine_multiply(o, m, p->m);

    /* Border pixel values arrive in output channel order; taps are R, G, B. */
    const float *bv = d->border == KS_BORDER_CONSTANT ? d->border_value : d->mean;
    if (p->gray_out) {
        p->border_rgb[0] = p->border_rgb[1] = p->border_rgb[2] = bv[0];
    } else {
        p->border_rgb[0] = p->bgr ? bv[2] : bv[0];
        p->border_rgb[1] = bv[1];
        p->border_rgb[2] = p->bgr ? bv[0] : bv[2];
    }
    return KS_STATUS_OK;
}

ks_status ks_image_check(const ks_image *image) {
    if (!image) {
        ks__object_error(NULL, "ks_image_check: image is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks__imgproc p;
    memset(&p, 0, sizeof(p));
    return setup_source("ks_image_check", image, &p);
}

ks_status ks__image_to_tensor_isa(const ks_image *src, const ks_image_to_tensor_desc *desc,
                                  ks_tensor *dst, uint32_t isa) {
    if (!src || !dst) {
        ks__object_error(NULL, "ks_image_to_tensor: src and dst must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    static const ks_image_to_tensor_desc defaults;
    ks__imgproc p;
    memset(&p, 0, sizeof(p));
    ks_status st = setup(src, desc ? desc : &defaults, dst, &p);
    if (st) return st;
#if defined(__x86_64__)
    if ((isa & KS_ISA_AVX512) && p.interp == KS_INTERP_BILINEAR && p.offsets_fit_i32) {
        ks__imgproc_rows_avx512(&p, 0, p.out_height_px);
        return KS_STATUS_OK;
    }
    if ((isa & KS_ISA_AVX2) && p.interp == KS_INTERP_BILINEAR && p.offsets_fit_i32) {
        ks__imgproc_rows_avx2(&p, 0, p.out_height_px);
        return KS_STATUS_OK;
    }
#elif defined(__aarch64__)
    if ((isa & KS_ISA_NEON) && p.interp == KS_INTERP_BILINEAR && p.offsets_fit_i32) {
        ks__imgproc_rows_neon(&p, 0, p.out_height_px);
        return KS_STATUS_OK;
    }
#elif defined(__wasm_simd128__)
    if ((isa & KS_ISA_WASM_SIMD128) && p.interp == KS_INTERP_BILINEAR && p.offsets_fit_i32) {
        ks__imgproc_rows_simd128(&p, 0, p.out_height_px);
        return KS_STATUS_OK;
    }
#else
    (void)isa;
#endif
    for (int32_t y = 0; y < p.out_height_px; y++)
        ks__imgproc_span_scalar(&p, y, 0, p.out_width_px);
    return KS_STATUS_OK;
}

ks_status ks_image_to_tensor(const ks_image *src, const ks_image_to_tensor_desc *desc,
                             ks_tensor *dst) {
    return ks__image_to_tensor_isa(src, desc, dst, ks__cpu_isa());
}
