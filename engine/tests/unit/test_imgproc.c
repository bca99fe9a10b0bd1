/* ks_image_to_tensor and the affine helpers: every pixel format against a naive double-precision
 * conversion (BT.601 video and full range), rotation/mirror composition, identity, downscale,
 * letterbox and rotated-ROI affines against hand-computed pixels, border modes, NCHW vs NHWC, u8
 * rounding, error statuses, and the SIMD fast path (AVX2 or NEON) bit-identical to the scalar
 * reference, on random cases and on a format x rotation x mirror x crop x size grid. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "image_io.h"
#include "impl.h"
#include "imgproc_impl.h"
#include "kestrel/imgproc.h"

#if KS_HAVE_IMAGE_IO
#include <jpeglib.h>
#endif

/* YUV outputs use 6-digit published BT.601 constants in the reference; the library derives them
 * from the Kr/Kb definition, so results differ by a few 1e-4. */
#define YUV_TOL 2e-3
#define EXACT_TOL 1e-5

static uint32_t g_rng = 12345u;
static uint32_t rnd(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return g_rng >> 8;
}

static ks_tensor make_tensor(void *data, size_t size_bytes, ks_dtype dtype, int64_t n, int64_t d1,
                             int64_t d2, int64_t d3) {
    ks_tensor t;
    memset(&t, 0, sizeof(t));
    t.info.name = "input";
    t.info.dtype = dtype;
    t.info.shape.rank = 4;
    t.info.shape.dims[0] = n;
    t.info.shape.dims[1] = d1;
    t.info.shape.dims[2] = d2;
    t.info.shape.dims[3] = d3;
    t.data = data;
    t.size_bytes = size_bytes;
    return t;
}

/* ---- a test image in every format, from one random YUV/RGB source ---- */

typedef struct test_image {
    ks_image img;
    uint8_t *buf[3];
    double *ref_rgb; /* w * h * 3, the naive conversion */
} test_image;

static double clampd(double v) {
    return v < 0 ? 0 : (v > 255 ? 255 : v);
}

static void ref_yuv(int full, double Y, double U, double V, double *rgb) {
    if (full) {
        rgb[0] = clampd(Y + 1.402 * (V - 128));
        rgb[1] = clampd(Y - 0.344136 * (U - 128) - 0.714136 * (V - 128));
        rgb[2] = clampd(Y + 1.772 * (U - 128));
    } else {
        double y = 1.164383 * (Y - 16);
        rgb[0] = clampd(y + 1.596027 * (V - 128));
        rgb[1] = clampd(y - 0.391762 * (U - 128) - 0.812968 * (V - 128));
        rgb[2] = clampd(y + 2.017232 * (U - 128));
    }
}

/* Random pixels with padded strides (pad bytes set to 0xEE so reading them would show). */
static void make_image(test_image *t, ks_pixel_format fmt, int32_t w, int32_t h, int full) {
    memset(t, 0, sizeof(*t));
    int32_t cw = (w + 1) / 2, ch = (h + 1) / 2;
    int32_t bpp = fmt == KS_PIXEL_FORMAT_RGBA || fmt == KS_PIXEL_FORMAT_BGRA ? 4
                  : fmt == KS_PIXEL_FORMAT_RGB || fmt == KS_PIXEL_FORMAT_BGR ? 3
                                                                             : 1;
    int32_t stride0 = w * bpp + 5;
    t->img.format = fmt;
    t->img.width_px = w;
    t->img.height_px = h;
    t->img.yuv_range = full ? KS_YUV_BT601_FULL : KS_YUV_BT601_VIDEO;
    t->buf[0] = malloc((size_t)stride0 * h);
    memset(t->buf[0], 0xEE, (size_t)stride0 * h);
    t->img.planes[0] = t->buf[0];
    t->img.stride_bytes[0] = stride0;
    t->ref_rgb = malloc(sizeof(double) * 3 * w * h);
    int yuv = fmt >= KS_PIXEL_FORMAT_NV21;
    int32_t cs = 0;
    if (yuv) {
        int32_t nplanes = fmt == KS_PIXEL_FORMAT_I420 ? 3 : 2;
        cs = (fmt == KS_PIXEL_FORMAT_I420 ? cw : 2 * cw) + 3;
        for (int32_t i = 1; i < nplanes; i++) {
            t->buf[i] = malloc((size_t)cs * ch);
            for (int32_t k = 0; k < cs * ch; k++)
                t->buf[i][k] = (uint8_t)rnd();
            t->img.planes[i] = t->buf[i];
            t->img.stride_bytes[i] = cs;
        }
    }
    for (int32_t y = 0; y < h; y++) {
        for (int32_t x = 0; x < w; x++) {
            uint8_t *px = t->buf[0] + (size_t)y * stride0 + (size_t)x * bpp;
            double *r = t->ref_rgb + 3 * ((size_t)y * w + x);
            uint8_t c0 = (uint8_t)rnd(), c1 = (uint8_t)rnd(), c2 = (uint8_t)rnd();
            if (yuv) {
                px[0] = c0;
                double U, V;
                if (fmt == KS_PIXEL_FORMAT_I420) {
                    U = t->buf[1][(y / 2) * cs + x / 2];
                    V = t->buf[2][(y / 2) * cs + x / 2];
                } else {
                    const uint8_t *c = t->buf[1] + (y / 2) * cs + 2 * (x / 2);
                    U = fmt == KS_PIXEL_FORMAT_NV12 ? c[0] : c[1];
                    V = fmt == KS_PIXEL_FORMAT_NV12 ? c[1] : c[0];
                }
                ref_yuv(full, c0, U, V, r);
                continue;
            }
            switch (fmt) {
            case KS_PIXEL_FORMAT_RGBA:
            case KS_PIXEL_FORMAT_RGB:
                px[0] = c0, px[1] = c1, px[2] = c2;
                if (bpp == 4) px[3] = (uint8_t)rnd();
                break;
            case KS_PIXEL_FORMAT_BGRA:
            case KS_PIXEL_FORMAT_BGR:
                px[2] = c0, px[1] = c1, px[0] = c2;
                if (bpp == 4) px[3] = (uint8_t)rnd();
                break;
            default: /* GRAY */
                px[0] = c0;
                c1 = c2 = c0;
                break;
            }
            r[0] = c0, r[1] = c1, r[2] = c2;
        }
    }
}

static void free_image(test_image *t) {
    for (int i = 0; i < 3; i++)
        free(t->buf[i]);
    free(t->ref_rgb);
}

static const ks_pixel_format k_formats[] = {
    KS_PIXEL_FORMAT_RGBA, KS_PIXEL_FORMAT_BGRA, KS_PIXEL_FORMAT_RGB,  KS_PIXEL_FORMAT_BGR,
    KS_PIXEL_FORMAT_GRAY, KS_PIXEL_FORMAT_NV21, KS_PIXEL_FORMAT_NV12, KS_PIXEL_FORMAT_I420};
#define NUM_FORMATS (sizeof(k_formats) / sizeof(k_formats[0]))

/* Identity affine (the default stretch at equal size): output = naive conversion, per format,
 * both YUV ranges, odd sizes (half-resolution chroma with a partial last column/row). */
static void test_formats_identity(void **state) {
    (void)state;
    for (int full = 0; full < 2; full++) {
        for (size_t f = 0; f < NUM_FORMATS; f++) {
            test_image t;
            const int32_t w = 13, h = 7;
            make_image(&t, k_formats[f], w, h, full);
            float out[13 * 7 * 3];
            ks_tensor dst = make_tensor(out, sizeof(out), KS_DTYPE_F32, 1, h, w, 3);
            assert_int_equal(ks_image_to_tensor(&t.img, NULL, &dst), KS_STATUS_OK);
            double tol = k_formats[f] >= KS_PIXEL_FORMAT_NV21 ? YUV_TOL : 0.0;
            for (int32_t i = 0; i < w * h * 3; i++) {
                if (fabs(out[i] - t.ref_rgb[i]) > tol)
                    fail_msg("%s full=%d element %d: %f vs reference %f",
                             ks_pixel_format_string(k_formats[f]), full, i, out[i], t.ref_rgb[i]);
            }
            free_image(&t);
        }
    }
}

static void test_yuv_known_values(void **state) {
    (void)state;
    /* 2x2 NV21: Y 16 / 235 / 128 / 81, one chroma pair (V, U) = (128, 128): grays. */
    uint8_t y[4] = {16, 235, 128, 81}, vu[2] = {128, 128};
    ks_image img = {KS_PIXEL_FORMAT_NV21, 2, 2, {y, vu, NULL}, {0, 0, 0}, KS_YUV_BT601_VIDEO};
    float out[12];
    ks_tensor dst = make_tensor(out, sizeof(out), KS_DTYPE_F32, 1, 2, 2, 3);
    assert_int_equal(ks_image_to_tensor(&img, NULL, &dst), KS_STATUS_OK);
    assert_float_equal(out[0], 0.0f, 1e-4);
    assert_float_equal(out[3], 255.0f, 1e-3);
    assert_float_equal(out[6], (128 - 16) * 255.0 / 219.0, 1e-3);
    assert_float_equal(out[10], (81 - 16) * 255.0 / 219.0, 1e-3);
    /* Pure red in full range: Y=76, U=85, V=255 -> R ~ 254 clamps near 255, G ~ 0, B ~ 0. */
    uint8_t y2[1] = {76}, u2[1] = {85}, v2[1] = {255};
    ks_image red = {KS_PIXEL_FORMAT_I420, 1, 1, {y2, u2, v2}, {0, 0, 0}, KS_YUV_BT601_FULL};
    dst = make_tensor(out, sizeof(out), KS_DTYPE_F32, 1, 1, 1, 3);
    assert_int_equal(ks_image_to_tensor(&red, NULL, &dst), KS_STATUS_OK);
    assert_true(out[0] > 250.0f && out[1] < 2.0f && out[2] < 3.0f);
}

/* ---- orientation ---- */

/* Runs one rotation/mirror pass on a u8 RGB image (as an NHWC u8 tensor) into out. */
static void orient_rgb(const uint8_t *in, int32_t w, int32_t h, ks_rotation rot, int mirror,
                       uint8_t *out, int32_t *ow, int32_t *oh) {
    ks_image img = {KS_PIXEL_FORMAT_RGB, w, h, {in, NULL, NULL}, {0, 0, 0}, KS_YUV_BT601_VIDEO};
    int swap = rot == KS_ROTATION_90 || rot == KS_ROTATION_270;
    *ow = swap ? h : w;
    *oh = swap ? w : h;
    ks_image_to_tensor_desc d;
    memset(&d, 0, sizeof(d));
    d.rotation = rot;
    d.mirror = mirror;
    ks_tensor dst = make_tensor(out, (size_t)w * h * 3, KS_DTYPE_U8, 1, *oh, *ow, 3);
    assert_int_equal(ks_image_to_tensor(&img, &d, &dst), KS_STATUS_OK);
}

static void test_rotation_mirror(void **state) {
    (void)state;
    /* 3x2 image, pixel value = 10 * (index + 1) in every channel:
     *   a b c        90 cw:  d a       mirror:  c b a
     *   d e f                e b                f e d
     *                        f c                         */
    uint8_t img[18], out[18];
    for (int i = 0; i < 6; i++)
        img[3 * i] = img[3 * i + 1] = img[3 * i + 2] = (uint8_t)(10 * (i + 1));
    int32_t w, h;
    orient_rgb(img, 3, 2, KS_ROTATION_90, 0, out, &w, &h);
    assert_int_equal(w, 2);
    assert_int_equal(h, 3);
    const uint8_t rot90[6] = {40, 10, 50, 20, 60, 30};
    for (int i = 0; i < 6; i++)
        assert_int_equal(out[3 * i], rot90[i]);
    orient_rgb(img, 3, 2, KS_ROTATION_270, 0, out, &w, &h);
    const uint8_t rot270[6] = {30, 60, 20, 50, 10, 40};
    for (int i = 0; i < 6; i++)
        assert_int_equal(out[3 * i], rot270[i]);
    orient_rgb(img, 3, 2, KS_ROTATION_180, 0, out, &w, &h);
    for (int i = 0; i < 6; i++)
        assert_int_equal(out[3 * i], img[3 * (5 - i)]);
    orient_rgb(img, 3, 2, KS_ROTATION_0, 1, out, &w, &h);
    const uint8_t mir[6] = {30, 20, 10, 60, 50, 40};
    for (int i = 0; i < 6; i++)
        assert_int_equal(out[3 * i], mir[i]);
    /* rotate then mirror: rot90 = [d a; e b; f c] mirrored = [a d; b e; c f] (a transpose) */
    orient_rgb(img, 3, 2, KS_ROTATION_90, 1, out, &w, &h);
    const uint8_t rm[6] = {10, 40, 20, 50, 30, 60};
    for (int i = 0; i < 6; i++)
        assert_int_equal(out[3 * i], rm[i]);

    /* Four 90-degree turns of a random asymmetric image give it back; so do two
     * rotate+mirror passes (a reflection), for every rotation. */
    uint8_t big[5 * 3 * 3], a[45], b[45];
    for (int i = 0; i < 45; i++)
        big[i] = (uint8_t)rnd();
    memcpy(a, big, sizeof(a));
    int32_t cw = 5, chh = 3;
    for (int k = 0; k < 4; k++) {
        orient_rgb(a, cw, chh, KS_ROTATION_90, 0, b, &w, &h);
        memcpy(a, b, sizeof(a));
        cw = w, chh = h;
    }
    assert_memory_equal(a, big, sizeof(big));
    for (int r = 0; r < 4; r++) {
        orient_rgb(big, 5, 3, (ks_rotation)r, 1, a, &w, &h);
        orient_rgb(a, w, h, (ks_rotation)r, 1, b, &w, &h);
        assert_memory_equal(b, big, sizeof(big)); /* reflections are involutions */
    }
}

/* ---- affine sampling ---- */

static void gray_image(uint8_t *px, int32_t w, int32_t h, ks_image *img) {
    for (int32_t i = 0; i < w * h; i++)
        px[i] = (uint8_t)(i * 10 + 5);
    ks_image g = {KS_PIXEL_FORMAT_GRAY, w, h, {px, NULL, NULL}, {0, 0, 0}, KS_YUV_BT601_VIDEO};
    *img = g;
}

static void test_affine_identity_and_downscale(void **state) {
    (void)state;
    uint8_t px[16];
    ks_image img;
    gray_image(px, 4, 4, &img);
    float out[16];
    ks_image_to_tensor_desc d;
    memset(&d, 0, sizeof(d));
    d.channel_order = KS_CHANNEL_ORDER_GRAY;
    d.m[0] = 1, d.m[4] = 1;
    ks_tensor dst = make_tensor(out, sizeof(out), KS_DTYPE_F32, 1, 4, 4, 1);
    assert_int_equal(ks_image_to_tensor(&img, &d, &dst), KS_STATUS_OK);
    for (int i = 0; i < 16; i++)
        assert_float_equal(out[i], px[i], 0.0);
    /* Default stretch 4x4 -> 2x2: each output is the mean of a 2x2 block (half-pixel centers). */
    d.m[0] = 0, d.m[4] = 0;
    dst = make_tensor(out, sizeof(out), KS_DTYPE_F32, 1, 2, 2, 1);
    assert_int_equal(ks_image_to_tensor(&img, &d, &dst), KS_STATUS_OK);
    for (int by = 0; by < 2; by++)
        for (int bx = 0; bx < 2; bx++) {
            int i = (2 * by) * 4 + 2 * bx;
            double mean = (px[i] + px[i + 1] + px[i + 4] + px[i + 5]) / 4.0;
            assert_float_equal(out[by * 2 + bx], mean, EXACT_TOL);
        }
    /* Half-pixel shift: m = identity + (0.5, 0): output x = midpoint of pixels x and x+1. */
    memset(d.m, 0, sizeof(d.m));
    d.m[0] = 1, d.m[4] = 1, d.m[2] = 0.5f;
    d.border = KS_BORDER_REPLICATE;
    dst = make_tensor(out, sizeof(out), KS_DTYPE_F32, 1, 4, 4, 1);
    assert_int_equal(ks_image_to_tensor(&img, &d, &dst), KS_STATUS_OK);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) {
            double want = x < 3 ? (px[y * 4 + x] + px[y * 4 + x + 1]) / 2.0 : px[y * 4 + 3];
            assert_float_equal(out[y * 4 + x], want, EXACT_TOL);
        }
    /* Nearest: 4x4 -> 2x2 picks the pixel containing each mapped center (1, 1) -> pixel 1. */
    memset(d.m, 0, sizeof(d.m));
    d.interp = KS_INTERP_NEAREST;
    dst = make_tensor(out, sizeof(out), KS_DTYPE_F32, 1, 2, 2, 1);
    assert_int_equal(ks_image_to_tensor(&img, &d, &dst), KS_STATUS_OK);
    assert_float_equal(out[0], px[5], 0.0);
    assert_float_equal(out[1], px[7], 0.0);
    assert_float_equal(out[2], px[13], 0.0);
    assert_float_equal(out[3], px[15], 0.0);
}

static void test_letterbox(void **state) {
    (void)state;
    /* 4x2 source into 4x4: scale 1, one border row above and below. */
    uint8_t px[8];
    ks_image img;
    gray_image(px, 4, 2, &img);
    ks_image_to_tensor_desc d;
    memset(&d, 0, sizeof(d));
    float inv[6];
    assert_int_equal(ks_affine_letterbox(4, 2, 4, 4, d.m, inv), KS_STATUS_OK);
    assert_float_equal(d.m[0], 1.0, 1e-7);
    assert_float_equal(d.m[5], -1.0, 1e-7);
    d.mean[0] = d.mean[1] = d.mean[2] = 127.5f;
    d.scale[0] = d.scale[1] = d.scale[2] = 1.0f / 127.5f;
    float out[4 * 4 * 3];
    ks_tensor dst = make_tensor(out, sizeof(out), KS_DTYPE_F32, 1, 4, 4, 3);
    assert_int_equal(ks_image_to_tensor(&img, &d, &dst), KS_STATUS_OK);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++)
            for (int c = 0; c < 3; c++) {
                float v = out[(y * 4 + x) * 3 + c];
                if (y == 0 || y == 3)
                    assert_float_equal(v, 0.0, 0.0); /* zero border */
                else
                    assert_float_equal(v, (px[(y - 1) * 4 + x] - 127.5) / 127.5, 1e-6);
            }
    /* Model point (2, 3) maps back to image (2, 2); the inverse maps it forward again. */
    float pt[2] = {2.0f, 3.0f}, back[2], fwd[2];
    ks_affine_apply(d.m, pt, 1, back);
    assert_float_equal(back[0], 2.0, 1e-6);
    assert_float_equal(back[1], 2.0, 1e-6);
    ks_affine_apply(inv, back, 1, fwd);
    assert_float_equal(fwd[0], 2.0, 1e-6);
    assert_float_equal(fwd[1], 3.0, 1e-6);
    float inv2[6];
    assert_int_equal(ks_affine_invert(d.m, inv2), KS_STATUS_OK);
    for (int i = 0; i < 6; i++)
        assert_float_equal(inv2[i], inv[i], 1e-6);
    float id[6];
    ks_affine_multiply(d.m, inv, id);
    const float want_id[6] = {1, 0, 0, 0, 1, 0};
    for (int i = 0; i < 6; i++)
        assert_float_equal(id[i], want_id[i], 1e-6);
    /* 640x480 into 128x128: scale 0.2, 16 rows of padding top and bottom. */
    assert_int_equal(ks_affine_letterbox(640, 480, 128, 128, d.m, inv), KS_STATUS_OK);
    assert_float_equal(inv[0], 0.2, 1e-7);
    assert_float_equal(inv[5], 16.0, 1e-5);
    assert_float_equal(d.m[2], 0.0, 1e-5);
    assert_float_equal(d.m[5], -80.0, 1e-4);
}

static void test_rotated_roi(void **state) {
    (void)state;
    uint8_t px[16];
    ks_image img;
    gray_image(px, 4, 4, &img);
    /* The whole 4x4 image as a rect turned 90 degrees clockwise: destination (x, y) reads source
     * pixel (y, 3 - x)... derived: dest center (x+.5, y+.5) -> src (4 - (y+.5), x+.5). */
    ks_rotated_rect roi = {2.0f, 2.0f, 4.0f, 4.0f, (float)(M_PI / 2)};
    ks_image_to_tensor_desc d;
    memset(&d, 0, sizeof(d));
    d.channel_order = KS_CHANNEL_ORDER_GRAY;
    assert_int_equal(ks_affine_from_rotated_rect(&roi, 4, 4, d.m), KS_STATUS_OK);
    float out[16];
    ks_tensor dst = make_tensor(out, sizeof(out), KS_DTYPE_F32, 1, 4, 4, 1);
    assert_int_equal(ks_image_to_tensor(&img, &d, &dst), KS_STATUS_OK);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++)
            assert_float_equal(out[y * 4 + x], px[x * 4 + (3 - y)], 1e-3);
    /* A 2x2 crop at the center, unrotated, 2x2 output: exactly pixels (1..2, 1..2). */
    ks_rotated_rect crop = {2.0f, 2.0f, 2.0f, 2.0f, 0.0f};
    assert_int_equal(ks_affine_from_rotated_rect(&crop, 2, 2, d.m), KS_STATUS_OK);
    dst = make_tensor(out, sizeof(out), KS_DTYPE_F32, 1, 2, 2, 1);
    assert_int_equal(ks_image_to_tensor(&img, &d, &dst), KS_STATUS_OK);
    assert_float_equal(out[0], px[5], 0.0);
    assert_float_equal(out[1], px[6], 0.0);
    assert_float_equal(out[2], px[9], 0.0);
    assert_float_equal(out[3], px[10], 0.0);
    /* 45 degrees: the destination center maps to the rect center. */
    ks_rotated_rect r45 = {10.0f, 20.0f, 8.0f, 4.0f, (float)(M_PI / 4)};
    assert_int_equal(ks_affine_from_rotated_rect(&r45, 16, 8, d.m), KS_STATUS_OK);
    float c[2] = {8.0f, 4.0f}, s[2];
    ks_affine_apply(d.m, c, 1, s);
    assert_float_equal(s[0], 10.0, 1e-5);
    assert_float_equal(s[1], 20.0, 1e-5);
    float corner[2] = {16.0f, 0.0f}; /* destination top-right = rect top-right corner */
    ks_affine_apply(d.m, corner, 1, s);
    double cs = cos(M_PI / 4), sn = sin(M_PI / 4);
    assert_float_equal(s[0], 10 + 4 * cs + 2 * sn, 1e-4);
    assert_float_equal(s[1], 20 + 4 * sn - 2 * cs, 1e-4);
}

static void test_borders_layouts_u8(void **state) {
    (void)state;
    uint8_t rgb[2 * 2 * 3] = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120};
    ks_image img = {KS_PIXEL_FORMAT_RGB, 2, 2, {rgb, NULL, NULL}, {0, 0, 0}, KS_YUV_BT601_VIDEO};
    ks_image_to_tensor_desc d;
    memset(&d, 0, sizeof(d));
    /* shift right by one pixel: destination column 0 reads source x = -0.5 (fully border) */
    d.m[0] = 1, d.m[2] = -1, d.m[4] = 1;
    d.mean[0] = 1, d.mean[1] = 2, d.mean[2] = 3;
    d.scale[0] = 2, d.scale[1] = 2, d.scale[2] = 2;
    float out[2 * 2 * 3];
    ks_tensor dst = make_tensor(out, sizeof(out), KS_DTYPE_F32, 1, 2, 2, 3);
    /* zero */
    assert_int_equal(ks_image_to_tensor(&img, &d, &dst), KS_STATUS_OK);
    for (int c = 0; c < 3; c++) {
        assert_float_equal(out[c], 0.0, 0.0);
        assert_float_equal(out[3 + c], (rgb[c] - d.mean[c]) * 2, 0.0);
    }
    /* constant, in output channel order; BGR swaps the pixel too */
    d.border = KS_BORDER_CONSTANT;
    d.border_value[0] = 200, d.border_value[1] = 100, d.border_value[2] = 50;
    d.channel_order = KS_CHANNEL_ORDER_BGR;
    assert_int_equal(ks_image_to_tensor(&img, &d, &dst), KS_STATUS_OK);
    for (int c = 0; c < 3; c++) {
        assert_float_equal(out[c], (d.border_value[c] - d.mean[c]) * 2, 0.0);
        assert_float_equal(out[3 + c], (rgb[2 - c] - d.mean[c]) * 2, 0.0);
    }
    /* replicate */
    d.border = KS_BORDER_REPLICATE;
    d.channel_order = KS_CHANNEL_ORDER_RGB;
    assert_int_equal(ks_image_to_tensor(&img, &d, &dst), KS_STATUS_OK);
    for (int c = 0; c < 3; c++)
        assert_float_equal(out[c], (rgb[c] - d.mean[c]) * 2, 0.0);
    /* NCHW holds the same values as NHWC, transposed */
    float nchw[12];
    d.layout = KS_TENSOR_LAYOUT_NCHW;
    ks_tensor dc = make_tensor(nchw, sizeof(nchw), KS_DTYPE_F32, 1, 3, 2, 2);
    assert_int_equal(ks_image_to_tensor(&img, &d, &dc), KS_STATUS_OK);
    for (int p = 0; p < 4; p++)
        for (int c = 0; c < 3; c++)
            assert_float_equal(nchw[c * 4 + p], out[p * 3 + c], 0.0);
    /* u8: round half up, clamp. value = (px - 0) * scale */
    memset(&d, 0, sizeof(d));
    d.channel_order = KS_CHANNEL_ORDER_RGB;
    d.scale[0] = 0.25f, d.scale[1] = 3.0f, d.scale[2] = 1.0f;
    d.mean[2] = 100.0f;
    uint8_t u8[12];
    ks_tensor du = make_tensor(u8, sizeof(u8), KS_DTYPE_U8, 1, 2, 2, 3);
    assert_int_equal(ks_image_to_tensor(&img, &d, &du), KS_STATUS_OK);
    /* pixel 0: 10*0.25 = 2.5 -> 3; 20*3 = 60; 30-100 < 0 -> 0. pixel 1: 40*.25 = 10;
     * 50*3 = 150; 60-100 -> 0. pixel 3: 100*.25 = 25; 110*3 = 330 -> 255; 120-100 = 20 */
    assert_int_equal(u8[0], 3);
    assert_int_equal(u8[1], 60);
    assert_int_equal(u8[2], 0);
    assert_int_equal(u8[3], 10);
    assert_int_equal(u8[4], 150);
    assert_int_equal(u8[10], 255);
    assert_int_equal(u8[11], 20);
    /* batch_index writes only its entry of an N=2 tensor */
    float two[2 * 12];
    for (int i = 0; i < 24; i++)
        two[i] = -7.0f;
    ks_tensor db = make_tensor(two, sizeof(two), KS_DTYPE_F32, 2, 2, 2, 3);
    d.batch_index = 1;
    assert_int_equal(ks_image_to_tensor(&img, &d, &db), KS_STATUS_OK);
    assert_float_equal(two[0], -7.0, 0.0);
    assert_float_equal(two[11], -7.0, 0.0);
    assert_float_equal(two[12], 2.5, 0.0);
}

static void test_invalid(void **state) {
    (void)state;
    uint8_t px[64] = {0};
    ks_image img = {KS_PIXEL_FORMAT_RGB, 4, 4, {px, NULL, NULL}, {0, 0, 0}, KS_YUV_BT601_VIDEO};
    float out[4 * 4 * 3];
    ks_tensor dst = make_tensor(out, sizeof(out), KS_DTYPE_F32, 1, 4, 4, 3);
    ks_image_to_tensor_desc d;
    memset(&d, 0, sizeof(d));
    assert_int_equal(ks_image_to_tensor(NULL, &d, &dst), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_image_to_tensor(&img, &d, NULL), KS_STATUS_INVALID_ARGUMENT);
    ks_image bad = img;
    bad.format = (ks_pixel_format)99;
    assert_int_equal(ks_image_to_tensor(&bad, &d, &dst), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "99"));
    bad = img;
    bad.stride_bytes[0] = 11;
    assert_int_equal(ks_image_to_tensor(&bad, &d, &dst), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "stride_bytes[0] = 11"));
    bad = img;
    bad.format = KS_PIXEL_FORMAT_NV21;
    assert_int_equal(ks_image_to_tensor(&bad, &d, &dst), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "planes[1]"));
    bad = img;
    bad.width_px = 0;
    assert_int_equal(ks_image_to_tensor(&bad, &d, &dst), KS_STATUS_INVALID_ARGUMENT);
    bad.width_px = KS_IMAGE_MAX_DIM_PX + 1;
    assert_int_equal(ks_image_to_tensor(&bad, &d, &dst), KS_STATUS_LIMIT_EXCEEDED);
    ks_image_to_tensor_desc bd = d;
    bd.rotation = (ks_rotation)4;
    assert_int_equal(ks_image_to_tensor(&img, &bd, &dst), KS_STATUS_INVALID_ARGUMENT);
    bd = d;
    bd.m[2] = NAN;
    assert_int_equal(ks_image_to_tensor(&img, &bd, &dst), KS_STATUS_INVALID_ARGUMENT);
    bd.m[2] = 1e9f;
    assert_int_equal(ks_image_to_tensor(&img, &bd, &dst), KS_STATUS_INVALID_ARGUMENT);
    bd = d;
    bd.mean[1] = INFINITY;
    assert_int_equal(ks_image_to_tensor(&img, &bd, &dst), KS_STATUS_INVALID_ARGUMENT);
    bd = d;
    bd.width_px = 5;
    assert_int_equal(ks_image_to_tensor(&img, &bd, &dst), KS_STATUS_INVALID_SHAPE);
    bd = d;
    bd.batch_index = 1;
    assert_int_equal(ks_image_to_tensor(&img, &bd, &dst), KS_STATUS_INVALID_SHAPE);
    bd = d;
    bd.channel_order = KS_CHANNEL_ORDER_GRAY; /* tensor has 3 channels */
    assert_int_equal(ks_image_to_tensor(&img, &bd, &dst), KS_STATUS_INVALID_SHAPE);
    assert_non_null(strstr(ks_last_error(NULL), "'input'"));
    ks_tensor t = dst;
    t.info.dtype = KS_DTYPE_I32;
    assert_int_equal(ks_image_to_tensor(&img, &d, &t), KS_STATUS_UNSUPPORTED);
    t = dst;
    t.size_bytes -= 4;
    assert_int_equal(ks_image_to_tensor(&img, &d, &t), KS_STATUS_INVALID_SHAPE);
    t = dst;
    t.info.shape.rank = 2;
    assert_int_equal(ks_image_to_tensor(&img, &d, &t), KS_STATUS_INVALID_SHAPE);
    t = dst;
    t.data = NULL;
    assert_int_equal(ks_image_to_tensor(&img, &d, &t), KS_STATUS_INVALID_ARGUMENT);
    t = dst;
    t.info.shape.dims[1] = -1;
    assert_int_equal(ks_image_to_tensor(&img, &d, &t), KS_STATUS_INVALID_SHAPE);
    /* helpers */
    float m[6];
    assert_int_equal(ks_affine_letterbox(0, 4, 4, 4, m, NULL), KS_STATUS_INVALID_ARGUMENT);
    const float sing[6] = {1, 2, 0, 2, 4, 0};
    assert_int_equal(ks_affine_invert(sing, m), KS_STATUS_INVALID_ARGUMENT);
    ks_rotated_rect r = {0, 0, -1, 1, 0};
    assert_int_equal(ks_affine_from_rotated_rect(&r, 4, 4, m), KS_STATUS_INVALID_ARGUMENT);
    assert_string_equal(ks_pixel_format_string(KS_PIXEL_FORMAT_NV21), "nv21");
    assert_string_equal(ks_pixel_format_string((ks_pixel_format)77), "invalid");
}

/* The SIMD path against the scalar reference: every format, random rotated/scaled ROIs partly
 * outside the image, all borders, layouts, dtypes and channel orders, output widths 1..19 and
 * 37 (every tail), sources with widths 1..40 (fast-region edge cases). Must be bit-identical. */
/* The SIMD paths this CPU runs: the widest, and on an AVX-512 machine the AVX2 one too. */
static int isa_variants(uint32_t isa, uint32_t out[2]) {
    out[0] = isa;
#if defined(__x86_64__)
    if (isa & KS_ISA_AVX512) {
        out[1] = isa & ~(KS_ISA_AVX512 | KS_ISA_AVX512_VNNI | KS_ISA_AVX512_VBMI);
        return 2;
    }
#endif
    return 1;
}

static void simd_matches_scalar(uint32_t isa) {
    int checked = 0;
    for (int iter = 0; iter < 400; iter++) {
        ks_pixel_format fmt = k_formats[iter % NUM_FORMATS];
        int32_t sw = 1 + (int32_t)(rnd() % 40), sh = 1 + (int32_t)(rnd() % 30);
        test_image t;
        make_image(&t, fmt, sw, sh, (int)(rnd() & 1));
        int32_t ow = iter % 5 == 0 ? 37 : 1 + (int32_t)(rnd() % 19);
        int32_t oh = 1 + (int32_t)(rnd() % 9);
        ks_image_to_tensor_desc d;
        memset(&d, 0, sizeof(d));
        ks_rotated_rect roi = {(float)(rnd() % 1000) / 1000.0f * (float)sw,
                               (float)(rnd() % 1000) / 1000.0f * (float)sh,
                               1.0f + (float)(rnd() % 1000) / 500.0f * (float)sw,
                               1.0f + (float)(rnd() % 1000) / 500.0f * (float)sh,
                               (float)(rnd() % 628) / 100.0f};
        if (iter % 7 == 0) roi.angle_rad = 0.0f;
        assert_int_equal(ks_affine_from_rotated_rect(&roi, ow, oh, d.m), KS_STATUS_OK);
        d.rotation = (ks_rotation)(rnd() % 4);
        d.mirror = (int)(rnd() & 1);
        d.border = (ks_border)(rnd() % 3);
        d.channel_order = (ks_channel_order)(rnd() % 3);
        d.layout = (ks_tensor_layout)(rnd() % 2);
        for (int c = 0; c < 3; c++) {
            d.mean[c] = (float)(rnd() % 256);
            d.scale[c] = 0.5f + (float)(rnd() % 100) / 50.0f;
            d.border_value[c] = (float)(rnd() % 256);
        }
        int u8 = (int)(rnd() & 1);
        int32_t nc = d.channel_order == KS_CHANNEL_ORDER_GRAY ? 1 : 3;
        size_t n = (size_t)ow * oh * nc, bytes = n * (u8 ? 1 : 4);
        void *a = malloc(bytes), *b = malloc(bytes);
        memset(a, 0x11, bytes);
        memset(b, 0x22, bytes);
        ks_tensor ta = d.layout == KS_TENSOR_LAYOUT_NCHW
                           ? make_tensor(a, bytes, u8 ? KS_DTYPE_U8 : KS_DTYPE_F32, 1, nc, oh, ow)
                           : make_tensor(a, bytes, u8 ? KS_DTYPE_U8 : KS_DTYPE_F32, 1, oh, ow, nc);
        ks_tensor tb = ta;
        tb.data = b;
        assert_int_equal(ks__image_to_tensor_isa(&t.img, &d, &ta, 0), KS_STATUS_OK);
        assert_int_equal(ks__image_to_tensor_isa(&t.img, &d, &tb, isa), KS_STATUS_OK);
        if (memcmp(a, b, bytes) != 0)
            fail_msg("iter %d: %s %dx%d -> %dx%d rot %d mirror %d border %d order %d layout %d "
                     "u8 %d: SIMD (ISA bits %#x) differs from scalar",
                     iter, ks_pixel_format_string(fmt), sw, sh, ow, oh, d.rotation, d.mirror,
                     d.border, d.channel_order, d.layout, u8, (unsigned)isa);
        checked++;
        free(a);
        free(b);
        free_image(&t);
    }
    /* Maps without rotation (orientation 0 or 180, mirrored or not: the crops of detectors and
     * segmenters) on wider images, scales 0.3 .. 2.5, offsets odd and even. */
    for (int iter = 0; iter < 240; iter++) {
        ks_pixel_format fmt = k_formats[iter % NUM_FORMATS];
        int32_t sw = 40 + (int32_t)(rnd() % 90), sh = 8 + (int32_t)(rnd() % 40);
        test_image t;
        make_image(&t, fmt, sw, sh, (int)(rnd() & 1));
        int32_t ow = 8 + (int32_t)(rnd() % 40), oh = 1 + (int32_t)(rnd() % 6);
        float sx = 0.3f + (float)(rnd() % 1000) / 1000.0f * 2.2f;
        ks_image_to_tensor_desc d;
        memset(&d, 0, sizeof(d));
        d.m[0] = sx;
        d.m[2] = (float)(rnd() % 200) / 10.0f - 3.0f;
        d.m[4] = 0.5f + (float)(rnd() % 100) / 50.0f;
        d.m[5] = (float)(rnd() % 100) / 10.0f;
        d.rotation = (rnd() & 1) ? KS_ROTATION_180 : KS_ROTATION_0;
        d.mirror = (int)(rnd() & 1);
        d.channel_order = (ks_channel_order)(rnd() % 3);
        d.scale[0] = d.scale[1] = d.scale[2] = 1.0f / 255.0f;
        int32_t nc = d.channel_order == KS_CHANNEL_ORDER_GRAY ? 1 : 3;
        size_t bytes = (size_t)ow * oh * nc * 4;
        float *a = malloc(bytes), *b = malloc(bytes);
        ks_tensor ta = make_tensor(a, bytes, KS_DTYPE_F32, 1, oh, ow, nc), tb = ta;
        tb.data = b;
        assert_int_equal(ks__image_to_tensor_isa(&t.img, &d, &ta, 0), KS_STATUS_OK);
        assert_int_equal(ks__image_to_tensor_isa(&t.img, &d, &tb, isa), KS_STATUS_OK);
        if (memcmp(a, b, bytes) != 0)
            fail_msg("axis iter %d: %s %dx%d -> %dx%d scale %.3f rot %d mirror %d: SIMD differs "
                     "from scalar",
                     iter, ks_pixel_format_string(fmt), sw, sh, ow, oh, (double)sx, d.rotation,
                     d.mirror);
        free(a);
        free(b);
        free_image(&t);
    }
    /* Mostly-inside case so the gather path is actually exercised: 64x48 -> 37x29 downscale. */
    for (size_t f = 0; f < NUM_FORMATS; f++) {
        test_image t;
        make_image(&t, k_formats[f], 64, 48, 0);
        float a[37 * 29 * 3], b[37 * 29 * 3];
        ks_tensor ta = make_tensor(a, sizeof(a), KS_DTYPE_F32, 1, 29, 37, 3), tb = ta;
        tb.data = b;
        ks_image_to_tensor_desc d;
        memset(&d, 0, sizeof(d));
        d.rotation = KS_ROTATION_90;
        assert_int_equal(ks__image_to_tensor_isa(&t.img, &d, &ta, 0), KS_STATUS_OK);
        assert_int_equal(ks__image_to_tensor_isa(&t.img, &d, &tb, isa), KS_STATUS_OK);
        assert_memory_equal(a, b, sizeof(a));
        /* letterboxed (whole groups of padding) with a constant border */
        /* (as if the image were 48x200: 15 px of padding left and right) */
        assert_int_equal(ks_affine_letterbox(48, 200, 37, 29, d.m, NULL), KS_STATUS_OK);
        d.border = KS_BORDER_CONSTANT;
        d.border_value[0] = 10.0f, d.border_value[1] = 20.0f, d.border_value[2] = 30.0f;
        assert_int_equal(ks__image_to_tensor_isa(&t.img, &d, &ta, 0), KS_STATUS_OK);
        assert_int_equal(ks__image_to_tensor_isa(&t.img, &d, &tb, isa), KS_STATUS_OK);
        assert_memory_equal(a, b, sizeof(a));
        assert_float_equal(a[0], 10.0, 0.0);
        free_image(&t);
    }
    assert_true(checked == 400);
}

static void test_simd_matches_scalar(void **state) {
    (void)state;
    uint32_t isa = ks__cpu_isa(), v[2];
    if (!isa) {
        print_message("no SIMD ISA (or KS_FORCE_SCALAR): comparison skipped\n");
        return;
    }
    for (int i = 0, n = isa_variants(isa, v); i < n; i++)
        simd_matches_scalar(v[i]);
}

/* A tightly packed copy of an image whose every plane ends on a page boundary followed by an
 * inaccessible page, so a read past a plane's last byte faults (no padding hides it). */
typedef struct guarded_image {
    ks_image img;
    void *map[3];
    size_t map_bytes[3];
} guarded_image;

static void make_guarded(const ks_image *src, guarded_image *g) {
    memset(g, 0, sizeof(*g));
    g->img = *src;
    int32_t w = src->width_px, h = src->height_px, cw = (w + 1) / 2, ch = (h + 1) / 2;
    int32_t row_bytes[3] = {w, 0, 0}, rows[3] = {h, ch, ch}, num_planes = 1;
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
        row_bytes[1] = 2 * cw, num_planes = 2;
        break;
    case KS_PIXEL_FORMAT_I420:
        row_bytes[1] = row_bytes[2] = cw, num_planes = 3;
        break;
    default:
        break;
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (int32_t i = 0; i < num_planes; i++) {
        size_t bytes = (size_t)row_bytes[i] * (size_t)rows[i];
        size_t data_pages = (bytes + page - 1) / page;
        g->map_bytes[i] = (data_pages + 1) * page;
        g->map[i] =
            mmap(NULL, g->map_bytes[i], PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        assert_true(g->map[i] != MAP_FAILED);
        uint8_t *guard = (uint8_t *)g->map[i] + data_pages * page;
        assert_int_equal(mprotect(guard, page, PROT_NONE), 0);
        uint8_t *dst = guard - bytes;
        for (int32_t y = 0; y < rows[i]; y++)
            memcpy(dst + (size_t)y * row_bytes[i],
                   (const uint8_t *)src->planes[i] + (size_t)y * src->stride_bytes[i],
                   (size_t)row_bytes[i]);
        g->img.planes[i] = dst;
        g->img.stride_bytes[i] = 0; /* tightly packed */
    }
}

static void free_guarded(guarded_image *g) {
    for (int i = 0; i < 3; i++)
        if (g->map[i]) munmap(g->map[i], g->map_bytes[i]);
}

/* The SIMD paths (NEON on AArch64; AVX2, and AVX-512 where the CPU has it, on x86-64) against
 * the scalar reference on a full grid:
 * every format x rotation x mirror x {whole frame, a crop 1 pixel inside every edge, a crop
 * reaching 1 pixel past every edge} x odd sizes (sources 1x1 .. 41x23, outputs 1..37 wide, so
 * every vector-width tail and the 1-pixel image borders are hit), both YUV ranges, and
 * layout / dtype / border / channel order cycling through the cases. Bit-identical. Every other
 * case reads a tightly packed copy with a guard page after each plane, so a fast path that reads
 * past a plane's end crashes here. */
static void simd_grid(uint32_t isa) {
    static const int32_t src_sizes[][2] = {{1, 1}, {2, 3}, {3, 2}, {5, 7}, {18, 9}, {41, 23}};
    static const int32_t out_sizes[][2] = {{1, 1}, {3, 5}, {7, 3}, {13, 11}, {37, 6}};
    enum { NUM_SRC = 6, NUM_OUT = 5 };
    int checked = 0, case_no = 0;
    for (size_t f = 0; f < NUM_FORMATS; f++) {
        for (int si = 0; si < NUM_SRC; si++) {
            int32_t sw = src_sizes[si][0], sh = src_sizes[si][1];
            test_image t;
            make_image(&t, k_formats[f], sw, sh, si & 1);
            guarded_image g;
            make_guarded(&t.img, &g);
            for (int rot = 0; rot < 4; rot++) {
                int32_t ow_src = rot & 1 ? sh : sw, oh_src = rot & 1 ? sw : sh; /* oriented */
                for (int mirror = 0; mirror < 2; mirror++) {
                    for (int crop = 0; crop < 3; crop++) {
                        for (int oi = 0; oi < NUM_OUT; oi++, case_no++) {
                            int32_t ow = out_sizes[oi][0], oh = out_sizes[oi][1];
                            ks_image_to_tensor_desc d;
                            memset(&d, 0, sizeof(d));
                            d.rotation = (ks_rotation)rot;
                            d.mirror = mirror;
                            if (crop) { /* m = crop rect (x0, y0, cw, ch) in the oriented image */
                                float in = crop == 1 ? 1.0f : -1.0f;
                                float cw = (float)ow_src - 2.0f * in,
                                      ch = (float)oh_src - 2.0f * in;
                                if (cw <= 0.0f) cw = 1.0f;
                                if (ch <= 0.0f) ch = 1.0f;
                                d.m[0] = cw / (float)ow;
                                d.m[2] = in;
                                d.m[4] = ch / (float)oh;
                                d.m[5] = in;
                            }
                            d.border = (ks_border)(case_no % 3);
                            d.layout = (ks_tensor_layout)(case_no / 3 % 2);
                            d.channel_order = (ks_channel_order)(case_no / 7 % 3);
                            int u8 = case_no % 5 == 0;
                            for (int c = 0; c < 3; c++) {
                                d.mean[c] = u8 ? 0.0f : 127.5f;
                                d.scale[c] = u8 ? 1.0f : 1.0f / 127.5f;
                                d.border_value[c] = (float)(40 * c + 7);
                            }
                            int32_t nc = d.channel_order == KS_CHANNEL_ORDER_GRAY ? 1 : 3;
                            size_t bytes = (size_t)ow * oh * nc * (u8 ? 1 : 4);
                            uint8_t a[37 * 11 * 3 * 4], b[sizeof(a)];
                            memset(a, 0x11, bytes);
                            memset(b, 0x22, bytes);
                            ks_dtype dt = u8 ? KS_DTYPE_U8 : KS_DTYPE_F32;
                            ks_tensor ta = d.layout == KS_TENSOR_LAYOUT_NCHW
                                               ? make_tensor(a, bytes, dt, 1, nc, oh, ow)
                                               : make_tensor(a, bytes, dt, 1, oh, ow, nc);
                            ks_tensor tb = ta;
                            tb.data = b;
                            const ks_image *img = case_no & 1 ? &g.img : &t.img;
                            assert_int_equal(ks__image_to_tensor_isa(img, &d, &ta, 0),
                                             KS_STATUS_OK);
                            assert_int_equal(ks__image_to_tensor_isa(img, &d, &tb, isa),
                                             KS_STATUS_OK);
                            if (memcmp(a, b, bytes) != 0)
                                fail_msg("%s %dx%d rot %d mirror %d crop %d -> %dx%d border %d "
                                         "layout %d order %d u8 %d: SIMD (ISA bits %#x) differs "
                                         "from scalar",
                                         ks_pixel_format_string(k_formats[f]), sw, sh, rot * 90,
                                         mirror, crop, ow, oh, d.border, d.layout, d.channel_order,
                                         u8, (unsigned)isa);
                            checked++;
                        }
                    }
                }
            }
            free_guarded(&g);
            free_image(&t);
        }
    }
    assert_int_equal(checked, (int)NUM_FORMATS * NUM_SRC * 4 * 2 * 3 * NUM_OUT);

    /* A whole camera frame, as a selfie pipeline converts it: NV21 640x480 rotated 90 (and 270
     * mirrored) into 256x256 f32 [-1, 1], long rows and full-size strides; then upright (the
     * axis-aligned path: rotation 0 or 180, mirrored or not) as the whole frame, as a 2.5x
     * stretch, a 4x one and a crop reaching past the right and bottom edges, from NV21 and NV12
     * with a guard page after each plane. */
    test_image cam;
    make_image(&cam, KS_PIXEL_FORMAT_NV21, 640, 480, 0);
    guarded_image gcam;
    make_guarded(&cam.img, &gcam);
    size_t bytes = (size_t)256 * 256 * 3 * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes);
    assert_non_null(a);
    assert_non_null(b);
    ks_tensor ta = make_tensor(a, bytes, KS_DTYPE_F32, 1, 256, 256, 3), tb = ta;
    tb.data = b;
    for (int k = 0; k < 18; k++) {
        ks_image_to_tensor_desc d;
        memset(&d, 0, sizeof(d));
        if (k >= 14) {
            /* a face landmarker's crop: a 210-px square turned 0.21 rad (and -1.3 rad, reaching
             * past the top edge) into 256x256, from the frame turned 90 degrees */
            d.rotation = KS_ROTATION_90;
            ks_rotated_rect roi = {230.5f, k & 2 ? 60.0f : 330.0f, 210.0f, 210.0f,
                                   k & 2 ? -1.3f : 0.21f};
            assert_int_equal(ks_affine_from_rotated_rect(&roi, 256, 256, d.m), KS_STATUS_OK);
            if (k == 17) { /* a coloured constant border (the others: zero) */
                d.border = KS_BORDER_CONSTANT;
                d.border_value[0] = 10.0f, d.border_value[1] = 200.0f, d.border_value[2] = 90.0f;
            }
        } else if (k < 2) {
            d.rotation = k ? KS_ROTATION_270 : KS_ROTATION_90;
            d.mirror = k;
        } else {
            d.rotation = k & 2 ? KS_ROTATION_180 : KS_ROTATION_0;
            d.mirror = k & 1;
            int crop = (k - 2) / 4; /* 0 whole frame (default map), 1 4x, 2 past the edges */
            if (crop == 1) {
                d.m[0] = 4.0f, d.m[2] = 3.0f, d.m[4] = 1.5f, d.m[5] = 7.0f;
            } else if (crop == 2) {
                d.m[0] = 1.3f, d.m[2] = 420.5f, d.m[4] = 0.9f, d.m[5] = 300.0f;
            }
        }
        for (int c = 0; c < 3; c++) {
            d.mean[c] = 127.5f;
            d.scale[c] = 1.0f / 127.5f;
        }
        ks_image img = k & 1 ? gcam.img : cam.img;
        if (k >= 8 && k < 16) img.format = KS_PIXEL_FORMAT_NV12;
        assert_int_equal(ks__image_to_tensor_isa(&img, &d, &ta, 0), KS_STATUS_OK);
        assert_int_equal(ks__image_to_tensor_isa(&img, &d, &tb, isa), KS_STATUS_OK);
        if (memcmp(a, b, bytes) != 0)
            fail_msg("camera frame case %d: SIMD (ISA bits %#x) differs from scalar", k,
                     (unsigned)isa);
    }
    free(a);
    free(b);
    free_guarded(&gcam);
    free_image(&cam);

    /* Rotated crops of upright NV21/NV12 frames (the AVX-512 sampler fetches their taps from
     * one 64-byte window per row when a group's taps span few rows and columns): small and
     * large angles either way, scales from 0.4 to 4.4 (the widest fit the window or not), ROIs
     * inside and reaching the right and bottom edges, an odd width (chroma rows of ceil(w / 2)
     * pairs), a guard page after each plane. */
    static const float angles[] = {0.0f, 0.05f, -0.21f, 0.4f, -0.75f, 1.2f, 3.0f};
    static const float scales[] = {0.4f, 1.1f, 2.3f, 3.7f, 4.4f};
    test_image odd;
    make_image(&odd, KS_PIXEL_FORMAT_NV21, 333, 211, 0);
    guarded_image godd;
    make_guarded(&odd.img, &godd);
    enum { CW = 48, CH = 40 };
    float ca[CW * CH * 3], cb[CW * CH * 3];
    ks_tensor tca = make_tensor(ca, sizeof(ca), KS_DTYPE_F32, 1, CH, CW, 3), tcb = tca;
    tcb.data = cb;
    int windowed = 0;
    for (int ai = 0; ai < 7; ai++)
        for (int si = 0; si < 5; si++)
            for (int at = 0; at < 3; at++, windowed++) {
                /* at: 0 inside, 1 at the right edge, 2 at the bottom right corner */
                float side = scales[si] * (float)CW;
                ks_rotated_rect roi = {at ? 333.0f - side / 3.0f : 160.5f,
                                       at == 2 ? 211.0f - side / 3.0f : 105.0f, side,
                                       side * (float)CH / (float)CW, angles[ai]};
                ks_image_to_tensor_desc d;
                memset(&d, 0, sizeof(d));
                assert_int_equal(ks_affine_from_rotated_rect(&roi, CW, CH, d.m), KS_STATUS_OK);
                d.border = (ks_border)(windowed % 3);
                d.border_value[0] = 10.0f, d.border_value[1] = 200.0f, d.border_value[2] = 90.0f;
                d.channel_order = (ks_channel_order)(windowed / 3 % 2); /* RGB, BGR */
                d.scale[0] = d.scale[1] = d.scale[2] = 1.0f / 255.0f;
                ks_image img = godd.img;
                if (windowed & 1) img.format = KS_PIXEL_FORMAT_NV12;
                assert_int_equal(ks__image_to_tensor_isa(&img, &d, &tca, 0), KS_STATUS_OK);
                assert_int_equal(ks__image_to_tensor_isa(&img, &d, &tcb, isa), KS_STATUS_OK);
                if (memcmp(ca, cb, sizeof(ca)) != 0)
                    fail_msg("%s 333x211 crop angle %.2f scale %.1f at %d border %d: SIMD (ISA "
                             "bits %#x) differs from scalar",
                             ks_pixel_format_string(img.format), (double)angles[ai],
                             (double)scales[si], at, d.border, (unsigned)isa);
            }
    assert_int_equal(windowed, 7 * 5 * 3);
    free_guarded(&godd);
    free_image(&odd);
}

static void test_simd_grid(void **state) {
    (void)state;
    uint32_t isa = ks__cpu_isa(), v[2];
    if (!isa) {
        print_message("no SIMD ISA (or KS_FORCE_SCALAR): grid comparison skipped\n");
        return;
    }
#if defined(__aarch64__)
    assert_true(isa & KS_ISA_NEON); /* the comparison below is NEON vs scalar */
#endif
    for (int i = 0, n = isa_variants(isa, v); i < n; i++)
        simd_grid(v[i]);
}

/* ---- image files (tools' image_io) ---- */

#if KS_HAVE_IMAGE_IO
/* A small JPEG made with libjpeg itself, quality 100, so decode can be checked loosely. */
static unsigned char *encode_jpeg(const uint8_t *rgb, int w, int h, unsigned long *size_out) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    unsigned char *buf = NULL;
    *size_out = 0;
    jpeg_mem_dest(&c, &buf, size_out);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 100, TRUE);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)(rgb + (size_t)c.next_scanline * w * 3);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    return buf;
}
#endif

static void test_image_io(void **state) {
    (void)state;
#if !KS_HAVE_IMAGE_IO
    skip();
#else
    char err[256];
    const char *path = "test_imgproc_roundtrip.png";
    uint8_t rgba[7 * 5 * 4 + 7 * 4];
    for (size_t i = 0; i < sizeof(rgba); i++)
        rgba[i] = (uint8_t)rnd();
    /* PNG round trip for each savable format, with a padded stride */
    const ks_pixel_format fmts[3] = {KS_PIXEL_FORMAT_RGBA, KS_PIXEL_FORMAT_RGB,
                                     KS_PIXEL_FORMAT_GRAY};
    const int comps[3] = {4, 3, 1};
    for (int f = 0; f < 3; f++) {
        ks_image img = {fmts[f],           7, 5, {rgba, NULL, NULL}, {7 * comps[f] + 3, 0, 0},
                        KS_YUV_BT601_VIDEO};
        assert_int_equal(ks_image_save_png(path, &img, err, sizeof(err)), KS_STATUS_OK);
        ks_image_buf back;
        assert_int_equal(ks_image_load(path, 0, &back, err, sizeof(err)), KS_STATUS_OK);
        assert_int_equal(back.image.format, fmts[f]);
        assert_int_equal(back.image.width_px, 7);
        assert_int_equal(back.image.height_px, 5);
        for (int y = 0; y < 5; y++)
            assert_memory_equal(back.pixels + y * 7 * comps[f], rgba + y * (7 * comps[f] + 3),
                                (size_t)7 * comps[f]);
        ks_image_buf_free(&back);
    }
    /* truncated PNG: clear error; garbage: unsupported; missing file: I/O error */
    uint8_t *png = NULL;
    size_t png_size = 0;
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    png = malloc(4096);
    png_size = fread(png, 1, 4096, f);
    fclose(f);
    remove(path);
    ks_image_buf out;
    assert_int_equal(ks_image_decode(png, png_size - 20, "cut.png", 0, &out, err, sizeof(err)),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "cut.png"));
    /* header claiming 100000 x 1: refused from the header, before decoding */
    png[16] = 0, png[17] = 1, png[18] = 0x86, png[19] = 0xA0;
    ks_status st = ks_image_decode(png, png_size, "wide.png", 0, &out, err, sizeof(err));
    assert_true(st == KS_STATUS_LIMIT_EXCEEDED || st == KS_STATUS_INVALID_ARGUMENT);
    free(png);
    assert_int_equal(
        ks_image_decode((const uint8_t *)"hello", 5, "x.txt", 0, &out, err, sizeof(err)),
        KS_STATUS_UNSUPPORTED);
    assert_int_equal(ks_image_load("/nonexistent/x.png", 0, &out, err, sizeof(err)),
                     KS_STATUS_IO_ERROR);
    /* JPEG: decodes close to the source; cut-off data is an error, not a gray-filled image */
    uint8_t rgb[16 * 16 * 3];
    for (int i = 0; i < 16 * 16; i++)
        rgb[3 * i] = (uint8_t)(i % 16 * 16), rgb[3 * i + 1] = (uint8_t)(i / 16 * 16),
                rgb[3 * i + 2] = 100;
    unsigned long jsize = 0;
    unsigned char *jpg = encode_jpeg(rgb, 16, 16, &jsize);
    assert_non_null(jpg);
    assert_int_equal(ks_image_decode(jpg, jsize, "a.jpg", 0, &out, err, sizeof(err)), KS_STATUS_OK);
    assert_int_equal(out.image.format, KS_PIXEL_FORMAT_RGB);
    for (int i = 0; i < 16 * 16 * 3; i++)
        assert_true(abs(out.pixels[i] - rgb[i]) <= 12);
    ks_image_buf_free(&out);
    assert_int_equal(ks_image_decode(jpg, jsize - 40, "cut.jpg", 0, &out, err, sizeof(err)),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "cut.jpg"));
    assert_int_equal(ks_image_decode(jpg, jsize, "a.jpg", 100, &out, err, sizeof(err)),
                     KS_STATUS_LIMIT_EXCEEDED);
    free(jpg);
    /* truncated BMP (stb would zero-fill it) */
    uint8_t bmp[54 + 16] = {'B', 'M'}; /* 2x2, 24-bit rows padded to 8 bytes */
    bmp[10] = 54, bmp[14] = 40, bmp[18] = 2, bmp[22] = 2, bmp[26] = 1, bmp[28] = 24;
    assert_int_equal(ks_image_decode(bmp, sizeof(bmp) - 4, "cut.bmp", 0, &out, err, sizeof(err)),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "truncated"));
    assert_int_equal(ks_image_decode(bmp, sizeof(bmp), "ok.bmp", 0, &out, err, sizeof(err)),
                     KS_STATUS_OK);
    ks_image_buf_free(&out);
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats_identity),
        cmocka_unit_test(test_yuv_known_values),
        cmocka_unit_test(test_rotation_mirror),
        cmocka_unit_test(test_affine_identity_and_downscale),
        cmocka_unit_test(test_letterbox),
        cmocka_unit_test(test_rotated_roi),
        cmocka_unit_test(test_borders_layouts_u8),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_simd_matches_scalar),
        cmocka_unit_test(test_simd_grid),
        cmocka_unit_test(test_image_io),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
