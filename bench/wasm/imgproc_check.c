/* ks_image_to_tensor's SIMD path against its scalar reference, bit for bit, in whatever build
 * runs it: under Node the WebAssembly SIMD128 sampler (bench/wasm/check.sh, scripts/test-editor),
 * natively AVX2 or NEON (engine/tests/unit/test_imgproc.c checks those more thoroughly).
 *
 *   imgproc_check [--runs N]
 *
 * A grid of every pixel format x source sizes (1x1 to 41x23, tightly packed and padded
 * strides) x rotation x mirror x crop (whole, 1 px inside, 1 px past each edge) x output sizes,
 * borders, layouts, channel orders and dtypes; then the face landmarker's crop of a camera frame
 * (NV21 640x480 -> 192x192 f32, rotated ROI) and a 256x256 stretch, also timed (median of N
 * calls each, scalar and SIMD). Exit 1 on the first difference, 77 when the build has no SIMD
 * path. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/imgproc_impl.h"
#include "base/cpuinfo.h"
#include "kestrel/imgproc.h"

static uint32_t g_rng = 2463534242u;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 17;
    g_rng ^= g_rng << 5;
    return g_rng;
}

static const ks_pixel_format k_formats[] = {
    KS_PIXEL_FORMAT_RGBA, KS_PIXEL_FORMAT_BGRA, KS_PIXEL_FORMAT_RGB,  KS_PIXEL_FORMAT_BGR,
    KS_PIXEL_FORMAT_GRAY, KS_PIXEL_FORMAT_NV21, KS_PIXEL_FORMAT_NV12, KS_PIXEL_FORMAT_I420};
enum { NUM_FORMATS = sizeof(k_formats) / sizeof(k_formats[0]) };

typedef struct image_buf {
    ks_image img;
    uint8_t *buf[3];
} image_buf;

/* Random pixels; padded strides when pad (3..5 bytes past each row). */
static int make_image(image_buf *t, ks_pixel_format fmt, int32_t w, int32_t h, int pad) {
    memset(t, 0, sizeof(*t));
    int32_t cw = (w + 1) / 2, ch = (h + 1) / 2;
    int32_t bpp = fmt == KS_PIXEL_FORMAT_RGBA || fmt == KS_PIXEL_FORMAT_BGRA ? 4
                  : fmt == KS_PIXEL_FORMAT_RGB || fmt == KS_PIXEL_FORMAT_BGR ? 3
                                                                             : 1;
    int32_t s[3] = {w * bpp + (pad ? 5 : 0), 0, 0}, rows[3] = {h, ch, ch};
    int planes = 1;
    if (fmt == KS_PIXEL_FORMAT_NV21 || fmt == KS_PIXEL_FORMAT_NV12) {
        planes = 2;
        s[1] = 2 * cw + (pad ? 3 : 0);
    } else if (fmt == KS_PIXEL_FORMAT_I420) {
        planes = 3;
        s[1] = s[2] = cw + (pad ? 4 : 0);
    }
    t->img.format = fmt;
    t->img.width_px = w;
    t->img.height_px = h;
    t->img.yuv_range = pad ? KS_YUV_BT601_FULL : KS_YUV_BT601_VIDEO;
    for (int i = 0; i < planes; i++) {
        size_t n = (size_t)s[i] * (size_t)rows[i];
        t->buf[i] = malloc(n);
        if (!t->buf[i]) return -1;
        for (size_t k = 0; k < n; k++)
            t->buf[i][k] = (uint8_t)(rnd() >> 24);
        t->img.planes[i] = t->buf[i];
        t->img.stride_bytes[i] = pad ? s[i] : 0;
    }
    return 0;
}

static void free_image(image_buf *t) {
    for (int i = 0; i < 3; i++)
        free(t->buf[i]);
}

static ks_tensor make_tensor(void *data, size_t bytes, ks_dtype dt, int64_t d1, int64_t d2,
                             int64_t d3) {
    ks_tensor t;
    memset(&t, 0, sizeof(t));
    t.info.dtype = dt;
    t.info.shape.rank = 4;
    t.info.shape.dims[0] = 1;
    t.info.shape.dims[1] = d1;
    t.info.shape.dims[2] = d2;
    t.info.shape.dims[3] = d3;
    t.data = data;
    t.size_bytes = bytes;
    return t;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Both paths on one case: 0 when equal, 1 (with a message) otherwise. */
static int compare(const ks_image *img, const ks_image_to_tensor_desc *d, ks_tensor *ta,
                   ks_tensor *tb, uint32_t isa, const char *what) {
    memset(ta->data, 0x11, ta->size_bytes);
    memset(tb->data, 0x22, tb->size_bytes);
    if (ks__image_to_tensor_isa(img, d, ta, 0) != KS_STATUS_OK ||
        ks__image_to_tensor_isa(img, d, tb, isa) != KS_STATUS_OK) {
        fprintf(stderr, "imgproc_check: %s: %s\n", what, ks_last_error(NULL));
        return 1;
    }
    if (memcmp(ta->data, tb->data, ta->size_bytes) != 0) {
        fprintf(stderr, "imgproc_check: %s: SIMD differs from scalar\n", what);
        return 1;
    }
    return 0;
}

static double time_path(const ks_image *img, const ks_image_to_tensor_desc *d, ks_tensor *t,
                        uint32_t isa, int runs) {
    double *ms = malloc(sizeof(double) * (size_t)runs);
    if (!ms) return -1.0;
    for (int i = -2; i < runs; i++) {
        double t0 = now_ms();
        ks__image_to_tensor_isa(img, d, t, isa);
        if (i >= 0) ms[i] = now_ms() - t0;
    }
    qsort(ms, (size_t)runs, sizeof(double), cmp_double);
    double med = ms[runs / 2];
    free(ms);
    return med;
}

int main(int argc, char **argv) {
    int runs = 50;
    if (argc == 3 && !strcmp(argv[1], "--runs")) {
        runs = atoi(argv[2]);
    } else if (argc != 1) {
        fprintf(stderr, "usage: imgproc_check [--runs N]\n");
        return 2;
    }
    if (runs < 1 || runs > 100000) runs = 50;
    uint32_t isa = ks__cpu_isa();
    if (!isa) {
        printf("imgproc_check: no SIMD path in this build (or KS_FORCE_SCALAR)\n");
        return 77;
    }
    static const int32_t src_sizes[][2] = {{1, 1}, {2, 3}, {3, 2}, {5, 7}, {18, 9}, {41, 23}};
    static const int32_t out_sizes[][2] = {{1, 1}, {3, 5}, {7, 3}, {13, 11}, {37, 6}};
    enum { NUM_SRC = 6, NUM_OUT = 5 };
    static uint8_t a[37 * 11 * 3 * 4], b[sizeof(a)];
    int checked = 0, case_no = 0, bad = 0;
    for (int f = 0; f < NUM_FORMATS && !bad; f++) {
        for (int si = 0; si < NUM_SRC && !bad; si++) {
            int32_t sw = src_sizes[si][0], sh = src_sizes[si][1];
            image_buf t;
            if (make_image(&t, k_formats[f], sw, sh, si & 1)) return 1;
            for (int rot = 0; rot < 4 && !bad; rot++) {
                int32_t osw = rot & 1 ? sh : sw, osh = rot & 1 ? sw : sh;
                for (int mirror = 0; mirror < 2 && !bad; mirror++)
                    for (int crop = 0; crop < 3 && !bad; crop++)
                        for (int oi = 0; oi < NUM_OUT && !bad; oi++, case_no++) {
                            int32_t ow = out_sizes[oi][0], oh = out_sizes[oi][1];
                            ks_image_to_tensor_desc d;
                            memset(&d, 0, sizeof(d));
                            d.rotation = (ks_rotation)rot;
                            d.mirror = mirror;
                            if (crop) {
                                float in = crop == 1 ? 1.0f : -1.0f;
                                float cw = (float)osw - 2.0f * in, ch = (float)osh - 2.0f * in;
                                d.m[0] = (cw > 0.0f ? cw : 1.0f) / (float)ow;
                                d.m[2] = in;
                                d.m[4] = (ch > 0.0f ? ch : 1.0f) / (float)oh;
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
                            size_t bytes = (size_t)ow * (size_t)oh * (size_t)nc * (u8 ? 1 : 4);
                            ks_dtype dt = u8 ? KS_DTYPE_U8 : KS_DTYPE_F32;
                            ks_tensor ta = d.layout == KS_TENSOR_LAYOUT_NCHW
                                               ? make_tensor(a, bytes, dt, nc, oh, ow)
                                               : make_tensor(a, bytes, dt, oh, ow, nc);
                            ks_tensor tb = ta;
                            tb.data = b;
                            char what[160];
                            snprintf(what, sizeof(what),
                                     "%s %dx%d rot %d mirror %d crop %d -> %dx%d border %d "
                                     "layout %d order %d u8 %d",
                                     ks_pixel_format_string(k_formats[f]), sw, sh, rot * 90, mirror,
                                     crop, ow, oh, (int)d.border, (int)d.layout,
                                     (int)d.channel_order, u8);
                            bad = compare(&t.img, &d, &ta, &tb, isa, what);
                            checked++;
                        }
            }
            free_image(&t);
        }
    }
    if (bad) return 1;
    printf("imgproc_check: %d grid cases bit-identical to the scalar reference\n", checked);

    /* Camera frames: the face landmarker's rotated crop and a selfie-style stretch. */
    image_buf cam;
    if (make_image(&cam, KS_PIXEL_FORMAT_NV21, 640, 480, 0)) return 1;
    size_t bytes = (size_t)256 * 256 * 3 * sizeof(float);
    float *fa = malloc(bytes), *fb = malloc(bytes);
    if (!fa || !fb) return 1;
    const float ang = 0.21f, s = 210.0f / 192.0f;
    ks_image_to_tensor_desc crop;
    memset(&crop, 0, sizeof(crop));
    crop.m[0] = s * cosf(ang);
    crop.m[1] = -s * sinf(ang);
    crop.m[2] = 330.0f - 96.0f * s * cosf(ang) + 96.0f * s * sinf(ang);
    crop.m[3] = s * sinf(ang);
    crop.m[4] = s * cosf(ang);
    crop.m[5] = 230.0f - 96.0f * s * sinf(ang) - 96.0f * s * cosf(ang);
    crop.border = KS_BORDER_REPLICATE;
    ks_image_to_tensor_desc stretch;
    memset(&stretch, 0, sizeof(stretch));
    for (int c = 0; c < 3; c++)
        crop.scale[c] = stretch.scale[c] = 1.0f / 255.0f;
    ks_tensor c192a = make_tensor(fa, (size_t)192 * 192 * 3 * 4, KS_DTYPE_F32, 192, 192, 3);
    ks_tensor c192b = c192a;
    c192b.data = fb;
    ks_tensor s256a = make_tensor(fa, bytes, KS_DTYPE_F32, 256, 256, 3), s256b = s256a;
    s256b.data = fb;
    bad = compare(&cam.img, &crop, &c192a, &c192b, isa, "nv21 640x480 -> 192x192 rotated crop") ||
          compare(&cam.img, &stretch, &s256a, &s256b, isa, "nv21 640x480 -> 256x256 stretch");
    if (!bad) {
        printf(
            "imgproc_check: camera frames bit-identical; median ms of %d calls, scalar / SIMD:\n",
            runs);
        printf("  nv21 640x480 -> 192x192 rotated crop  %.3f / %.3f\n",
               time_path(&cam.img, &crop, &c192a, 0, runs),
               time_path(&cam.img, &crop, &c192a, isa, runs));
        printf("  nv21 640x480 -> 256x256 stretch        %.3f / %.3f\n",
               time_path(&cam.img, &stretch, &s256a, 0, runs),
               time_path(&cam.img, &stretch, &s256a, isa, runs));
    }
    free(fa);
    free(fb);
    free_image(&cam);
    return bad;
}
