/* Kestrel image preprocessing: one fused pass from a camera/photo image to a model-ready tensor.
 *
 * Usage (an Android NV21 camera frame, rotated 90 degrees, letterboxed into a 1x128x128x3 f32
 * input in [-1, 1]):
 *     ks_image frame = { .format = KS_PIXEL_FORMAT_NV21, .width_px = 640, .height_px = 480,
 *                        .planes = { y_ptr, vu_ptr }, .stride_bytes = { 640, 640 } };
 *     ks_image_to_tensor_desc d = { .rotation = KS_ROTATION_90, .border = KS_BORDER_ZERO,
 *                                   .mean = { 127.5f, 127.5f, 127.5f },
 *                                   .scale = { 1 / 127.5f, 1 / 127.5f, 1 / 127.5f } };
 *     // the oriented image is 480x640 (90/270 swap width and height)
 *     ks_affine_letterbox(480, 640, 128, 128, d.m, NULL);
 *     ks_tensor in;
 *     ks_session_input(session, 0, &in);
 *     if (ks_image_to_tensor(&frame, &d, &in)) fprintf(stderr, "%s\n", ks_last_error(NULL));
 *     ...run...
 *     ks_affine_apply(d.m, model_xy, num_points, image_xy); // model pixels -> oriented image
 *
 * Thread safety: every function here is stateless and may run concurrently on any threads, as
 * long as concurrent calls do not write the same destination.
 *
 * Coordinates are continuous pixel coordinates: pixel (x, y) covers [x, x+1) x [y, y+1) and its
 * center is (x + 0.5, y + 0.5); the image spans [0, width_px] x [0, height_px]. A 2x3 affine
 * m = {a, b, c, d, e, f} maps a point (x, y) to (a*x + b*y + c, d*x + e*y + f).
 *
 * The pass, per destination pixel (all conceptual; no intermediate image exists):
 *   1. the source is oriented: rotated clockwise by `rotation`, then mirrored left-right if
 *      `mirror` is set. m works in this oriented image's coordinates;
 *   2. the destination pixel center is mapped through m to an oriented-image point, which is
 *      sampled (bilinear between the 4 nearest pixel centers, or the pixel containing it);
 *      taps outside the image follow `border`. YUV pixels are converted to RGB per tap, with
 *      the chroma sample that covers the pixel (no chroma interpolation), clamped to [0, 255];
 *   3. channels are ordered (RGB, BGR or one gray channel = 0.299 R + 0.587 G + 0.114 B; a
 *      GRAY source gives its value as R = G = B) and normalized per output channel:
 *      out = (in - mean[c]) * scale[c], with `in` in 0..255 pixel units;
 *   4. stored as f32, or as u8 with round-half-up and clamping to [0, 255].
 * YUV conversion is BT.601 ("video" range Y 16..235, UV 16..240 by default, as produced by
 * Android and iOS cameras; "full" range as in JPEG/JFIF on request).
 */
#ifndef KESTREL_IMGPROC_H
#define KESTREL_IMGPROC_H

#include "kestrel/kestrel.h"
#include "kestrel/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Images larger than this in either dimension are rejected with KS_STATUS_LIMIT_EXCEEDED. */
#define KS_IMAGE_MAX_DIM_PX 32768

/* Pixel formats of 8-bit images. Values are stable (append-only). */
typedef enum ks_pixel_format {
    KS_PIXEL_FORMAT_INVALID = 0,
    KS_PIXEL_FORMAT_RGBA = 1, /* bytes R G B A; alpha is ignored */
    KS_PIXEL_FORMAT_BGRA = 2, /* bytes B G R A (e.g. iOS kCVPixelFormatType_32BGRA) */
    KS_PIXEL_FORMAT_RGB = 3,
    KS_PIXEL_FORMAT_BGR = 4,
    KS_PIXEL_FORMAT_GRAY = 5,
    KS_PIXEL_FORMAT_NV21 = 6, /* plane 0: Y; plane 1: interleaved V U at half resolution */
    KS_PIXEL_FORMAT_NV12 = 7, /* plane 0: Y; plane 1: interleaved U V at half resolution */
    KS_PIXEL_FORMAT_I420 = 8, /* planes Y, U, V; U and V at half resolution */
    KS_PIXEL_FORMAT_COUNT
} ks_pixel_format;

/* "rgba", "nv21", ...; "invalid" for unknown values. Static storage. */
KS_API const char *ks_pixel_format_string(ks_pixel_format format);

/* YUV to RGB conversion (ignored for RGB-family and GRAY formats). */
typedef enum ks_yuv_range {
    KS_YUV_BT601_VIDEO = 0, /* default: Y 16..235, UV 16..240 (camera frames) */
    KS_YUV_BT601_FULL = 1,  /* Y, U, V 0..255 (JPEG/JFIF) */
    KS_YUV_RANGE_COUNT
} ks_yuv_range;

/* A view of caller-owned pixels; nothing is copied or kept after a call returns.
 * Half-resolution chroma planes are ceil(width_px / 2) x ceil(height_px / 2) samples.
 * stride_bytes[i] is the distance between rows of plane i; 0 means tightly packed. */
typedef struct ks_image {
    ks_pixel_format format;
    int32_t width_px;
    int32_t height_px;
    const void *planes[3];   /* RGB-family and GRAY: planes[0] only */
    int32_t stride_bytes[3]; /* >= the plane's row size in bytes, or 0 */
    ks_yuv_range yuv_range;
} ks_image;

/* Clockwise rotation applied to the source before the affine. */
typedef enum ks_rotation {
    KS_ROTATION_0 = 0,
    KS_ROTATION_90 = 1,
    KS_ROTATION_180 = 2,
    KS_ROTATION_270 = 3,
    KS_ROTATION_COUNT
} ks_rotation;

typedef enum ks_interp {
    KS_INTERP_BILINEAR = 0, /* default */
    KS_INTERP_NEAREST = 1,
    KS_INTERP_COUNT
} ks_interp;

/* What a sample outside the source image reads. */
typedef enum ks_border {
    KS_BORDER_ZERO = 0,      /* default: 0 in the output tensor (the pixel value mean[c]) */
    KS_BORDER_CONSTANT = 1,  /* the pixel value border_value[c] (0..255 units) */
    KS_BORDER_REPLICATE = 2, /* the nearest edge pixel */
    KS_BORDER_COUNT
} ks_border;

typedef enum ks_channel_order {
    KS_CHANNEL_ORDER_RGB = 0,  /* default: 3 channels */
    KS_CHANNEL_ORDER_BGR = 1,  /* 3 channels */
    KS_CHANNEL_ORDER_GRAY = 2, /* 1 channel */
    KS_CHANNEL_ORDER_COUNT
} ks_channel_order;

typedef enum ks_tensor_layout {
    KS_TENSOR_LAYOUT_NHWC = 0, /* default */
    KS_TENSOR_LAYOUT_NCHW = 1,
    KS_TENSOR_LAYOUT_COUNT
} ks_tensor_layout;

/* Parameters of ks_image_to_tensor. Zero-initialized means: stretch the whole image to the
 * tensor's size, no rotation, bilinear, zero border, RGB, NHWC, 0..255 values. Per-channel
 * arrays are indexed by output channel (after channel_order). */
typedef struct ks_image_to_tensor_desc {
    float m[6];            /* destination point -> oriented source point; all zero: stretch */
    ks_rotation rotation;  /* clockwise, applied first */
    int32_t mirror;        /* nonzero: mirror left-right after rotating */
    ks_interp interp;      /* 0: bilinear */
    ks_border border;      /* 0: zero */
    float border_value[3]; /* KS_BORDER_CONSTANT only, pixel units */
    float mean[3];         /* subtracted from 0..255 pixel values */
    float scale[3];        /* multiplied after subtracting mean; 0 means 1 */
    ks_channel_order channel_order;
    ks_tensor_layout layout;
    int32_t width_px;    /* destination width; 0: from the tensor's shape (must match if set) */
    int32_t height_px;   /* destination height; 0: from the tensor's shape */
    int32_t batch_index; /* which batch entry of an N > 1 tensor to fill */
} ks_image_to_tensor_desc;

/* Converts, orients, samples, normalizes and packs `src` into `dst` in one pass, without
 * allocating. dst is a caller view (e.g. from ks_session_input) of dtype f32 or u8 and shape
 * [N, H, W, C] / [N, C, H, W] (or [H, W, C] / [C, H, W]) with C = 3 (RGB, BGR) or 1 (GRAY);
 * only batch entry desc->batch_index is written. desc may be NULL for all defaults.
 * Fails with KS_STATUS_INVALID_ARGUMENT (NULL, bad enum, bad stride, a matrix entry that is
 * not finite or above 1e6 in magnitude), KS_STATUS_INVALID_SHAPE (tensor shape/size does not fit
 * the desc), KS_STATUS_UNSUPPORTED (dtype) or KS_STATUS_LIMIT_EXCEEDED (image above
 * KS_IMAGE_MAX_DIM_PX); details in ks_last_error(NULL). On failure dst is not written. */
KS_API ks_status ks_image_to_tensor(const ks_image *src, const ks_image_to_tensor_desc *desc,
                                    ks_tensor *dst);

/* Checks `image` as ks_image_to_tensor would (format, size, KS_IMAGE_MAX_DIM_PX, yuv_range, the
 * planes its format needs and their strides) without reading a pixel. KS_STATUS_INVALID_ARGUMENT
 * or KS_STATUS_LIMIT_EXCEEDED with the reason in ks_last_error(NULL). */
KS_API ks_status ks_image_check(const ks_image *image);

/* ---- affine helpers (2x3 matrices as float[6], see the coordinate convention above) ---- */

/* Letterbox fit: the source (src_width_px x src_height_px) is scaled uniformly to fit inside the
 * destination and centered; the rest is border. m_out maps destination (model) points to source
 * points: use it as desc.m and to map model outputs back to image pixels. inverse_out (may be
 * NULL) maps source points to destination points. Sizes must be positive. */
KS_API ks_status ks_affine_letterbox(int32_t src_width_px, int32_t src_height_px,
                                     int32_t dst_width_px, int32_t dst_height_px, float m_out[6],
                                     float inverse_out[6]);

/* A rectangle in source pixels, rotated by angle_rad about its center. Positive angles turn the
 * rectangle's x axis toward the image's +y axis (clockwise on screen, as in MediaPipe). */
typedef struct ks_rotated_rect {
    float center_x_px;
    float center_y_px;
    float width_px;
    float height_px;
    float angle_rad;
} ks_rotated_rect;

/* The affine that maps a dst_width_px x dst_height_px destination onto `roi`: the destination's
 * top-left corner lands on the rectangle's (rotated) top-left corner. Sizes must be positive. */
KS_API ks_status ks_affine_from_rotated_rect(const ks_rotated_rect *roi, int32_t dst_width_px,
                                             int32_t dst_height_px, float m_out[6]);

/* Inverse of m. Fails with KS_STATUS_INVALID_ARGUMENT when m is singular or not finite. */
KS_API ks_status ks_affine_invert(const float m[6], float inverse_out[6]);

/* Product a * b as maps: the result applies b first, then a. out may alias a or b. */
KS_API void ks_affine_multiply(const float a[6], const float b[6], float out[6]);

/* Maps num_points (x, y) pairs through m. xy_out may equal xy (in place). */
KS_API void ks_affine_apply(const float m[6], const float *xy, size_t num_points, float *xy_out);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_IMGPROC_H */
