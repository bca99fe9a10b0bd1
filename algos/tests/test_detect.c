/* Object detection task on real images with both bundles (YOLOX-Nano, NanoDet-m): people in
 * zidane.jpg and person.jpg, a dog (and bicycle) in dog.jpg, boxes inside the image, thresholds,
 * VIDEO track ids, bad inputs. Exits 77 when the bundles or ../shared/data images are absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "image_io.h"
#include "kestrel/detect.h"

#define IMAGES KS_SHARED_DATA "/images/"
#define YOLOX KS_BUNDLES_DIR "/object_detector_yolox.ksb"
#define NANODET KS_BUNDLES_DIR "/object_detector_nanodet.ksb"

static ks_detected_objects *detect_file(const char *bundle, const char *image, float min_score,
                                        int32_t max_results) {
    ks_image_buf img;
    char err[256];
    if (ks_image_load(image, 0, &img, err, sizeof(err))) fail_msg("%s", err);
    ks_object_detector *d = NULL;
    ks_object_detector_desc desc = {
        .task = {.model_path = bundle, .min_score = min_score, .max_results = max_results}};
    if (ks_object_detector_create(&desc, &d)) fail_msg("%s", ks_last_error(NULL));
    ks_detected_objects *o = NULL;
    if (ks_object_detect(d, &img.image, 0, &o)) fail_msg("%s", ks_last_error(d));
    for (uint32_t i = 0; i < o->count; i++) {
        const ks_detected_object *x = &o->items[i];
        assert_true(x->box.x >= 0 && x->box.y >= 0 && x->box.w > 0 && x->box.h > 0);
        assert_true(x->box.x + x->box.w <= (float)img.image.width_px + 0.01f);
        assert_true(x->box.y + x->box.h <= (float)img.image.height_px + 0.01f);
        assert_true(i == 0 || o->items[i - 1].score >= x->score);
        assert_int_equal(x->track_id, -1);
    }
    ks_object_detector_destroy(d);
    ks_image_buf_free(&img);
    return o;
}

/* Best score of `label` whose box centre lies in [x0,x1] x [y0,y1], or 0. */
static float find(const ks_detected_objects *o, const char *label, float x0, float y0, float x1,
                  float y1) {
    float best = 0.0f;
    for (uint32_t i = 0; i < o->count; i++) {
        const ks_detected_object *x = &o->items[i];
        float cx = x->box.x + 0.5f * x->box.w, cy = x->box.y + 0.5f * x->box.h;
        if (strcmp(x->label, label) == 0 && cx >= x0 && cx <= x1 && cy >= y0 && cy <= y1 &&
            x->score > best)
            best = x->score;
    }
    return best;
}

static void check_scenes(const char *bundle) {
    ks_detected_objects *o = detect_file(bundle, IMAGES "ultralytics_zidane.jpg", 0, 0);
    /* Two men: Ancelotti on the right, Zidane left of centre. */
    assert_true(find(o, "person", 800, 200, 1100, 600) > 0.5f);
    assert_true(find(o, "person", 250, 250, 600, 700) > 0.5f);
    ks_detected_objects_release(o);
    o = detect_file(bundle, IMAGES "darknet_person.jpg", 0, 0);
    assert_true(find(o, "person", 0, 0, 640, 424) > 0.5f);
    ks_detected_objects_release(o);
    o = detect_file(bundle, IMAGES "darknet_dog.jpg", 0, 0);
    assert_true(find(o, "dog", 100, 250, 400, 500) > 0.4f); /* the dog, lower left */
    assert_true(find(o, "bicycle", 150, 150, 600, 450) > 0.4f);
    assert_int_equal(o->items[0].class_id == 16 || o->items[0].class_id == 1, 1);
    ks_detected_objects_release(o);
}

static void test_yolox_scenes(void **state) {
    (void)state;
    check_scenes(YOLOX);
}

static void test_nanodet_scenes(void **state) {
    (void)state;
    check_scenes(NANODET);
}

static void test_default_bundle_and_limits(void **state) {
    (void)state;
    /* model_path NULL: object_detector_yolox.ksb in the models directory. */
    ks_detected_objects *all = detect_file(NULL, IMAGES "darknet_dog.jpg", 0, 0);
    ks_detected_objects *one = detect_file(NULL, IMAGES "darknet_dog.jpg", 0, 1);
    ks_detected_objects *strict = detect_file(NULL, IMAGES "darknet_dog.jpg", 0.99f, 0);
    assert_true(all->count >= 3);
    assert_int_equal(one->count, 1);
    assert_int_equal(one->items[0].class_id, all->items[0].class_id);
    assert_int_equal(strict->count, 0);
    ks_detected_objects_release(all);
    ks_detected_objects_release(one);
    ks_detected_objects_release(strict);
}

static void test_video_track_ids(void **state) {
    (void)state;
    ks_image_buf img;
    char err[256];
    assert_int_equal(ks_image_load(IMAGES "ultralytics_zidane.jpg", 0, &img, err, sizeof(err)), 0);
    ks_object_detector *d = NULL;
    assert_int_equal(
        ks_object_detector_create(&(ks_object_detector_desc){.task = {.mode = KS_MODE_VIDEO}}, &d),
        KS_STATUS_OK);
    int32_t first[16] = {0};
    uint32_t n0 = 0;
    for (int f = 0; f < 3; f++) {
        ks_detected_objects *o = NULL;
        assert_int_equal(ks_object_detect(d, &img.image, 1000 + f * 33333, &o), KS_STATUS_OK);
        assert_true(o->count >= 2);
        for (uint32_t i = 0; i < o->count && i < 16; i++) {
            assert_true(o->items[i].track_id >= 1);
            if (f == 0)
                first[i] = o->items[i].track_id;
            else if (i < n0)
                assert_int_equal(o->items[i].track_id, first[i]); /* stable ids */
        }
        if (f == 0) n0 = o->count < 16 ? o->count : 16;
        ks_detected_objects_release(o);
    }
    ks_detected_objects *o = NULL;
    assert_int_equal(ks_object_detect(d, &img.image, 5, &o), KS_STATUS_INVALID_STATE);
    ks_object_detector_destroy(d);
    ks_image_buf_free(&img);
}

static void test_bad_inputs(void **state) {
    (void)state;
    ks_object_detector *d = NULL;
    assert_int_equal(
        ks_object_detector_create(&(ks_object_detector_desc){.task = {.min_score = 2.0f}}, &d),
        KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(
        ks_object_detector_create(&(ks_object_detector_desc){.task = {.max_results = -1}}, &d),
        KS_STATUS_INVALID_ARGUMENT);
    /* A bundle without the detector config (the segmentation bundle) is refused by name. */
    if (access(KS_BUNDLES_DIR "/selfie_segmenter.ksb", R_OK) == 0) {
        assert_int_equal(ks_object_detector_create(
                             &(ks_object_detector_desc){
                                 .task = {.model_path = KS_BUNDLES_DIR "/selfie_segmenter.ksb"}},
                             &d),
                         KS_STATUS_INVALID_MODEL);
        assert_non_null(strstr(ks_last_error(NULL), "detector_config"));
    }
    assert_null(d);
    assert_int_equal(ks_object_detector_create(NULL, &d), KS_STATUS_OK);
    ks_detected_objects *o = NULL;
    assert_int_equal(ks_object_detect(d, NULL, 0, &o), KS_STATUS_INVALID_ARGUMENT);
    uint8_t px[12] = {0};
    ks_image tiny = {.format = KS_PIXEL_FORMAT_RGB, .width_px = 2, .height_px = 2, .planes = {px}};
    assert_int_equal(ks_object_detect(d, &tiny, 0, &o), KS_STATUS_OK); /* 2x2 is valid */
    ks_detected_objects_release(o);
    o = NULL;
    ks_image bad = tiny;
    bad.format = (ks_pixel_format)99;
    assert_int_equal(ks_object_detect(d, &bad, 0, &o), KS_STATUS_INVALID_ARGUMENT);
    assert_null(o);
    ks_object_detector_destroy(d);
    ks_object_detector_destroy(NULL);
    ks_detected_objects_release(NULL);
}

int main(void) {
    if (access(YOLOX, R_OK) || access(NANODET, R_OK) ||
        access(IMAGES "ultralytics_zidane.jpg", R_OK)) {
        printf("test_detect: skipped: needs " YOLOX ", " NANODET " and " IMAGES
               " (built from ../shared/data when present)\n");
        return 77;
    }
    ks_set_models_dir(KS_BUNDLES_DIR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yolox_scenes),
        cmocka_unit_test(test_nanodet_scenes),
        cmocka_unit_test(test_default_bundle_and_limits),
        cmocka_unit_test(test_video_track_ids),
        cmocka_unit_test(test_bad_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
