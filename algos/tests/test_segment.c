/* Selfie segmentation task on real images: the mask covers the astronaut and not the wall, both
 * models, VIDEO smoothing and timestamps, rotation geometry, u8 output, bad inputs. Exits 77
 * (skip) when the bundles were not built (models not fetched). */
#include <setjmp.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "image_io.h"
#include "kestrel/bundle.h"
#include "kestrel/segment.h"

#define ASTRONAUT KS_SOURCE_DIR "/models/images/skimage_astronaut.png"

static ks_image_buf g_img;

static float at(const ks_segmentation *m, int x, int y) {
    return m->mask[(size_t)y * (size_t)m->width_px + (size_t)x];
}

static ks_segmentation *run(const ks_segmenter_desc *desc, const ks_image *img) {
    ks_segmenter *s = NULL;
    if (ks_segmenter_create(desc, &s)) fail_msg("%s", ks_last_error(NULL));
    ks_segmentation *m = NULL;
    if (ks_segment(s, img, 0, &m)) fail_msg("%s", ks_last_error(s));
    ks_segmenter_destroy(s);
    return m;
}

static void test_astronaut_general(void **state) {
    (void)state;
    ks_segmenter_desc d = {.output_u8 = 1};
    ks_segmentation *m = run(&d, &g_img.image);
    assert_int_equal(m->width_px, 512);
    assert_int_equal(m->height_px, 512);
    /* Face, chest and suit are person; the wall above the shoulders on the right is not. */
    assert_true(at(m, 225, 120) > 0.9f);
    assert_true(at(m, 200, 300) > 0.9f);
    assert_true(at(m, 470, 60) < 0.1f);
    assert_true(at(m, 30, 20) < 0.1f);
    assert_true(m->person_fraction > 0.3f && m->person_fraction < 0.8f);
    assert_non_null(m->mask_u8);
    assert_int_equal(m->mask_u8[120 * 512 + 225], (uint8_t)(at(m, 225, 120) * 255.0f + 0.5f));
    ks_segmentation_release(m);
}

/* Model-size masks, and ks_segment_into over the whole image and over a region: the same
 * values as the image-size mask (float rounding of the sample positions aside). */
static void test_mask_sizes_and_into(void **state) {
    (void)state;
    const int32_t W = 512, H = 512;
    ks_segmentation *full = run(&(ks_segmenter_desc){0}, &g_img.image);
    ks_segmentation *small =
        run(&(ks_segmenter_desc){.mask_size = KS_MASK_SIZE_MODEL}, &g_img.image);
    assert_int_equal(full->width_px, W);
    assert_int_equal(full->image_width_px, W);
    assert_int_equal(small->width_px, 256);
    assert_int_equal(small->height_px, 256);
    assert_int_equal(small->image_width_px, W);
    assert_int_equal(small->image_height_px, H);
    /* The model mask pixel under image pixel (225, 120) (face) and (470, 60) (wall). */
    assert_true(small->mask[60 * 256 + 112] > 0.9f);
    assert_true(small->mask[30 * 256 + 235] < 0.1f);

    ks_segmenter *s = NULL;
    assert_int_equal(ks_segmenter_create(&(ks_segmenter_desc){.mask_size = KS_MASK_SIZE_MODEL}, &s),
                     KS_STATUS_OK);
    float *buf = malloc((size_t)W * H * sizeof(float));
    assert_non_null(buf);
    float fraction = -1.0f;
    assert_int_equal(ks_segment_into(s, &g_img.image, 0, NULL, buf, W, H, 0, &fraction),
                     KS_STATUS_OK);
    float worst = 0.0f;
    for (size_t i = 0; i < (size_t)W * H; i++)
        worst = fmaxf(worst, fabsf(buf[i] - full->mask[i]));
    assert_true(worst < 1e-4f);
    assert_true(fabsf(fraction - full->person_fraction) < 1e-3f);
    /* A region (the face, 100 x 80 px at (180, 70)) at its own resolution, into a strided buffer:
     * the same pixels as that part of the full mask. */
    const int32_t rw = 100, rh = 80, stride = 128;
    ks_box region = {180.0f, 70.0f, (float)rw, (float)rh};
    assert_int_equal(ks_segment_into(s, &g_img.image, 0, &region, buf, rw, rh, stride, NULL),
                     KS_STATUS_OK);
    worst = 0.0f;
    for (int32_t y = 0; y < rh; y++)
        for (int32_t x = 0; x < rw; x++)
            worst = fmaxf(worst, fabsf(buf[(size_t)y * stride + x] -
                                       full->mask[(size_t)(70 + y) * W + (size_t)(180 + x)]));
    assert_true(worst < 1e-4f);
    /* Bad outputs. */
    assert_int_equal(ks_segment_into(s, &g_img.image, 0, NULL, NULL, W, H, 0, NULL),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_segment_into(s, &g_img.image, 0, NULL, buf, 0, H, 0, NULL),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_segment_into(s, &g_img.image, 0, NULL, buf, 64, 64, 32, NULL),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_segment_into(s, &g_img.image, 0, NULL, buf, 5000, 1, 0, NULL),
                     KS_STATUS_INVALID_ARGUMENT);
    ks_box nan_region = {NAN, 0.0f, 10.0f, 10.0f};
    assert_int_equal(ks_segment_into(s, &g_img.image, 0, &nan_region, buf, 8, 8, 0, NULL),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(s), "ks_segment_into"));
    assert_int_equal(ks_segment_into(NULL, &g_img.image, 0, NULL, buf, 8, 8, 0, NULL),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(
        ks_segmenter_create(&(ks_segmenter_desc){.mask_size = 9}, &(ks_segmenter *){NULL}),
        KS_STATUS_INVALID_ARGUMENT);
    free(buf);
    ks_segmenter_destroy(s);
    ks_segmentation_release(small);
    ks_segmentation_release(full);
}

static void test_astronaut_landscape(void **state) {
    (void)state;
    ks_segmenter_desc d = {.model = KS_SEGMENTER_LANDSCAPE};
    ks_segmentation *m = run(&d, &g_img.image);
    assert_null(m->mask_u8);
    assert_true(at(m, 225, 120) > 0.8f);
    assert_true(at(m, 470, 60) < 0.2f);
    ks_segmentation_release(m);
}

/* A frame stored rotated 90 degrees clockwise, declared as such, gives the upright mask. */
static void test_rotation_undone(void **state) {
    (void)state;
    const ks_image *up = &g_img.image;
    int w = up->width_px, h = up->height_px, bpp = up->format == KS_PIXEL_FORMAT_RGBA ? 4 : 3;
    /* The sensor frame: upright rotated 90 degrees counter-clockwise, so turning it clockwise
     * by 90 (KS_ROTATION_90) restores the upright image. */
    uint8_t *rot = malloc((size_t)w * (size_t)h * 3);
    assert_non_null(rot);
    const uint8_t *src = up->planes[0];
    int stride = up->stride_bytes[0] ? up->stride_bytes[0] : w * bpp;
    for (int y = 0; y < w; y++)     /* rotated image is h wide, w tall */
        for (int x = 0; x < h; x++) /* rotated (x, y) = upright (w - 1 - y, x) */
            memcpy(rot + ((size_t)y * (size_t)h + (size_t)x) * 3,
                   src + (size_t)x * (size_t)stride + (size_t)(w - 1 - y) * (size_t)bpp, 3);
    ks_image ri = {.format = KS_PIXEL_FORMAT_RGB,
                   .width_px = h,
                   .height_px = w,
                   .planes = {rot},
                   .stride_bytes = {h * 3}};
    ks_segmentation *a = run(&(ks_segmenter_desc){0}, up);
    ks_segmentation *b = run(&(ks_segmenter_desc){.task = {.rotation = KS_ROTATION_90}}, &ri);
    assert_int_equal(b->width_px, w);
    assert_int_equal(b->height_px, h);
    double diff = 0.0;
    for (size_t i = 0; i < (size_t)w * (size_t)h; i++)
        diff += a->mask[i] > b->mask[i] ? a->mask[i] - b->mask[i] : b->mask[i] - a->mask[i];
    assert_true(diff / ((double)w * h) < 1e-4);
    ks_segmentation_release(a);
    ks_segmentation_release(b);
    free(rot);
}

static void test_video_smoothing_and_timestamps(void **state) {
    (void)state;
    ks_segmenter *s = NULL;
    assert_int_equal(ks_segmenter_create(&(ks_segmenter_desc){.task = {.mode = KS_MODE_VIDEO}}, &s),
                     KS_STATUS_OK);
    ks_segmentation *m = NULL;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ks_segment(s, &g_img.image, 1000 + 33333 * i, &m), KS_STATUS_OK);
        assert_true(at(m, 225, 120) > 0.9f);
        ks_segmentation_release(m);
        m = NULL;
    }
    /* Time must move forward in a stream. */
    assert_int_equal(ks_segment(s, &g_img.image, 10, &m), KS_STATUS_INVALID_STATE);
    assert_null(m);
    assert_non_null(strstr(ks_last_error(s), "ks_segment"));
    ks_segmenter_destroy(s);
}

static void test_bad_inputs(void **state) {
    (void)state;
    ks_segmenter *s = NULL;
    assert_int_equal(ks_segmenter_create(&(ks_segmenter_desc){.model = 7}, &s),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(
        ks_segmenter_create(&(ks_segmenter_desc){.task = {.model_path = "/nonexistent/x.ksb"}}, &s),
        KS_STATUS_IO_ERROR);
    assert_non_null(strstr(ks_last_error(NULL), "/nonexistent/x.ksb"));
    assert_null(s);
    assert_int_equal(ks_segmenter_create(NULL, NULL), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_segmenter_create(NULL, &s), KS_STATUS_OK);
    ks_segmentation *m = NULL;
    assert_int_equal(ks_segment(s, NULL, 0, &m), KS_STATUS_INVALID_ARGUMENT);
    ks_image empty = g_img.image;
    empty.width_px = 0;
    assert_int_equal(ks_segment(s, &empty, 0, &m), KS_STATUS_INVALID_ARGUMENT);
    ks_image huge = g_img.image;
    huge.width_px = 1 << 20;
    assert_int_equal(ks_segment(s, &huge, 0, &m), KS_STATUS_LIMIT_EXCEEDED);
    ks_image bad_stride = g_img.image;
    bad_stride.stride_bytes[0] = 5;
    assert_int_not_equal(ks_segment(s, &bad_stride, 0, &m), KS_STATUS_OK);
    assert_int_equal(ks_segment(s, &g_img.image, 0, NULL), KS_STATUS_INVALID_ARGUMENT);
    assert_null(m);
    ks_segmenter_destroy(s);
    ks_segmenter_destroy(NULL);
    ks_segmentation_release(NULL);
}

/* Writes bytes to a fresh temporary file; returns its path in path (PATH_MAX-free: 64 bytes). */
static void write_temp(char path[64], const void *data, size_t size) {
    snprintf(path, 64, "/tmp/ks_test_segment_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, size), (ssize_t)size);
    close(fd);
}

/* task.model_path may name a bare .ksm (e.g. a ks-quant int8 model): it replaces the default
 * bundle's model with the same inputs and outputs. The bundle's own model given that way gives
 * the same mask bit for bit; truncated and encrypted files are refused with a message. */
static void test_model_path_ksm(void **state) {
    (void)state;
    ks_bundle *b = NULL;
    assert_int_equal(ks_bundle_open_file(KS_BUNDLES_DIR "/selfie_segmenter.ksb", NULL, &b), 0);
    ks_bundle_entry e = {0};
    for (uint32_t i = 0; i < ks_bundle_num_entries(b); i++) {
        assert_int_equal(ks_bundle_get_entry(b, i, &e), 0);
        if (e.kind == KS_BUNDLE_MODEL) break;
    }
    assert_int_equal(e.kind, KS_BUNDLE_MODEL);
    char path[64], bad[64], enc[64];
    write_temp(path, e.data, e.size_bytes);
    write_temp(bad, e.data, e.size_bytes / 2);
    uint8_t head[64] = {'K', 'S', 'M', 'E'};
    write_temp(enc, head, sizeof(head));
    ks_bundle_destroy(b);

    ks_segmentation *ref = run(&(ks_segmenter_desc){0}, &g_img.image);
    ks_segmentation *m = run(&(ks_segmenter_desc){.task = {.model_path = path}}, &g_img.image);
    assert_int_equal(m->width_px, ref->width_px);
    assert_int_equal(m->height_px, ref->height_px);
    assert_memory_equal(m->mask, ref->mask,
                        (size_t)m->width_px * (size_t)m->height_px * sizeof(float));
    ks_segmentation_release(m);
    ks_segmentation_release(ref);

    ks_segmenter *s = NULL;
    assert_int_equal(ks_segmenter_create(&(ks_segmenter_desc){.task = {.model_path = bad}}, &s),
                     KS_STATUS_INVALID_MODEL);
    assert_non_null(strstr(ks_last_error(NULL), bad));
    assert_int_equal(ks_segmenter_create(&(ks_segmenter_desc){.task = {.model_path = enc}}, &s),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "encrypted"));
    assert_null(s);
    unlink(path);
    unlink(bad);
    unlink(enc);
}

int main(void) {
    if (access(KS_BUNDLES_DIR "/selfie_segmenter.ksb", R_OK) != 0 ||
        access(KS_BUNDLES_DIR "/selfie_segmenter_landscape.ksb", R_OK) != 0 ||
        access(ASTRONAUT, R_OK) != 0) {
        printf("test_segment: skipped: bundles in " KS_BUNDLES_DIR " or " ASTRONAUT
               " missing (run scripts/setup, build ks_bundles)\n");
        return 77;
    }
    ks_set_models_dir(KS_BUNDLES_DIR);
    char err[256];
    if (ks_image_load(ASTRONAUT, 0, &g_img, err, sizeof(err))) {
        printf("%s\n", err);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_astronaut_general),
        cmocka_unit_test(test_astronaut_landscape),
        cmocka_unit_test(test_mask_sizes_and_into),
        cmocka_unit_test(test_rotation_undone),
        cmocka_unit_test(test_video_smoothing_and_timestamps),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_model_path_ksm),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    ks_image_buf_free(&g_img);
    return rc;
}
