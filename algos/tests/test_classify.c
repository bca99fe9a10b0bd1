/* Image classification task with the quantized MobileNet v2 bundle: plausible top-1 on cat.bmp
 * and grace_hopper.bmp, sorted scores, max_results/min_score, labels, bad inputs. Exits 77 when
 * the bundle (built from ../shared/data) or the images are absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "image_io.h"
#include "kestrel/classify.h"

#define IMAGES KS_SHARED_DATA "/images/"
#define BUNDLE KS_BUNDLES_DIR "/classifier_mobilenet_v2.ksb"

static ks_classifications *classify_file(const char *image, float min_score, int32_t k) {
    ks_image_buf img;
    char err[256];
    if (ks_image_load(image, 0, &img, err, sizeof(err))) fail_msg("%s", err);
    ks_image_classifier *c = NULL;
    ks_image_classifier_desc d = {.task = {.min_score = min_score, .max_results = k}};
    if (ks_image_classifier_create(&d, &c)) fail_msg("%s", ks_last_error(NULL));
    ks_classifications *r = NULL;
    if (ks_image_classify(c, &img.image, 0, &r)) fail_msg("%s", ks_last_error(c));
    for (uint32_t i = 1; i < r->count; i++)
        assert_true(r->items[i - 1].score >= r->items[i].score);
    ks_image_classifier_destroy(c);
    ks_image_buf_free(&img);
    return r;
}

static void test_cat(void **state) {
    (void)state;
    ks_classifications *r = classify_file(IMAGES "coral_cat.bmp", 0, 0);
    assert_int_equal(r->count, 5); /* default top-5 */
    /* ImageNet cats (tabby .. Egyptian cat) are outputs 282..286 (output 0 is "background"). */
    assert_true(r->items[0].class_id >= 282 && r->items[0].class_id <= 286);
    assert_non_null(strstr(r->items[0].label, "cat"));
    assert_true(r->items[0].score > 0.5f);
    ks_classifications_release(r);
}

static void test_grace_hopper(void **state) {
    (void)state;
    ks_classifications *r = classify_file(IMAGES "coral_grace_hopper.bmp", 0, 3);
    assert_int_equal(r->count, 3);
    assert_int_equal(r->items[0].class_id, 653);
    assert_string_equal(r->items[0].label, "military uniform");
    ks_classifications_release(r);
}

static void test_min_score(void **state) {
    (void)state;
    ks_classifications *r = classify_file(IMAGES "coral_grace_hopper.bmp", 0.5f, 10);
    assert_int_equal(r->count, 1);
    ks_classifications_release(r);
}

static void test_bad_inputs(void **state) {
    (void)state;
    ks_image_classifier *c = NULL;
    assert_int_equal(
        ks_image_classifier_create(&(ks_image_classifier_desc){.task = {.max_results = 5000}}, &c),
        KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_image_classifier_create(
                         &(ks_image_classifier_desc){.task = {.model_path = "/no/such.ksb"}}, &c),
                     KS_STATUS_IO_ERROR);
    assert_null(c);
    assert_int_equal(ks_image_classifier_create(NULL, &c), KS_STATUS_OK);
    ks_classifications *r = NULL;
    assert_int_equal(ks_image_classify(c, NULL, 0, &r), KS_STATUS_INVALID_ARGUMENT);
    uint8_t px[3] = {1, 2, 3};
    ks_image one = {.format = KS_PIXEL_FORMAT_RGB, .width_px = 1, .height_px = 1, .planes = {px}};
    assert_int_equal(ks_image_classify(c, &one, 0, &r), KS_STATUS_OK);
    ks_classifications_release(r);
    r = NULL;
    ks_image neg = one;
    neg.height_px = -4;
    assert_int_equal(ks_image_classify(c, &neg, 0, &r), KS_STATUS_INVALID_ARGUMENT);
    assert_null(r);
    ks_image_classifier_destroy(c);
    ks_image_classifier_destroy(NULL);
    ks_classifications_release(NULL);
}

int main(void) {
    if (access(BUNDLE, R_OK) || access(IMAGES "coral_cat.bmp", R_OK)) {
        printf("test_classify: skipped: needs " BUNDLE " and " IMAGES
               " (built from ../shared/data when present)\n");
        return 77;
    }
    ks_set_models_dir(KS_BUNDLES_DIR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cat),
        cmocka_unit_test(test_grace_hopper),
        cmocka_unit_test(test_min_score),
        cmocka_unit_test(test_bad_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
