/* Hand landmarker task. Photos with a reliably visible hand (both MediaPipe and Kestrel find it):
 * ../shared/data/images/coral_squat.bmp (clasped hands, one found) and ultraface_imgs_2.jpg (a
 * raised hand); when absent, that part is skipped with a message and only the API paths run.
 * Also: a crop around the hand gives the same landmarks (translated), VIDEO ids stay stable,
 * mirrored input flips the landmarks but keeps the handedness, bad-input statuses. Needs the hand
 * bundles from algos/hand/bundle.cmake; exits 77 without them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "image_io.h"
#include "kestrel/hand.h"

#define BUNDLE KS_BUNDLES_DIR "/hand_landmarker_full.ksb"
#define BUNDLE_LITE KS_BUNDLES_DIR "/hand_landmarker_lite.ksb"
#define SQUAT KS_SHARED_DATA "/images/coral_squat.bmp"
#define RAISED KS_SHARED_DATA "/images/ultraface_imgs_2.jpg"
#define ASTRONAUT KS_SOURCE_DIR "/models/images/skimage_astronaut.png"

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static ks_hand_landmarker *make(ks_running_mode mode, int32_t mirror) {
    ks_hand_landmarker *hl = NULL;
    ks_hand_landmarker_desc d = {.task = {.mode = mode, .mirror = mirror, .model_path = BUNDLE}};
    ks_status st = ks_hand_landmarker_create(&d, &hl);
    if (st) fprintf(stderr, "%s\n", ks_last_error(NULL));
    assert_int_equal(st, KS_STATUS_OK);
    return hl;
}

/* Hand topology: fingertips farther from the wrist than their MCP joints, landmarks in the box,
 * world landmarks within ~25 cm of each other. */
static void check_hand(const ks_hand *h, int32_t w, int32_t ht) {
    assert_true(h->score > 0.5f);
    assert_true(h->handedness_score >= 0.5f && h->handedness_score <= 1.0f);
    assert_true(h->box.w > 4.0f && h->box.h > 4.0f);
    for (int k = 0; k < KS_HAND_NUM_LANDMARKS; k++) {
        assert_true(h->landmarks[k].x >= -0.05f * (float)w &&
                    h->landmarks[k].x <= 1.05f * (float)w);
        assert_true(h->landmarks[k].y >= -0.05f * (float)ht &&
                    h->landmarks[k].y <= 1.05f * (float)ht);
        assert_true(h->world_landmarks[k].x > -0.25f && h->world_landmarks[k].x < 0.25f);
        assert_true(h->world_landmarks[k].y > -0.25f && h->world_landmarks[k].y < 0.25f);
    }
}

static int load(const char *path, ks_image_buf *out) {
    if (!file_exists(path)) {
        fprintf(stderr, "test_hand: %s not present; that part is skipped\n", path);
        return 0;
    }
    char err[256];
    assert_int_equal(ks_image_load(path, 0, out, err, sizeof(err)), KS_STATUS_OK);
    return 1;
}

static void test_photos(void **state) {
    (void)state;
    ks_hand_landmarker *hl = make(KS_MODE_IMAGE, 0);
    /* Expected: the hand's box centre (pixels, from MediaPipe 0.10.21) and the person's hand. */
    const struct {
        const char *path;
        float cx, cy;
        ks_handedness hand;
    } cases[] = {{SQUAT, 331.0f, 234.0f, KS_HANDEDNESS_RIGHT},
                 {RAISED, 353.0f, 449.0f, KS_HANDEDNESS_LEFT}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ks_image_buf photo;
        if (!load(cases[i].path, &photo)) continue;
        ks_hands *hands = NULL;
        assert_int_equal(ks_hands_detect(hl, &photo.image, 0, &hands), KS_STATUS_OK);
        assert_int_equal(hands->count, 1);
        const ks_hand *h = &hands->items[0];
        check_hand(h, photo.image.width_px, photo.image.height_px);
        assert_float_equal(h->box.x + 0.5f * h->box.w, cases[i].cx, 0.25f * h->box.w + 4.0f);
        assert_float_equal(h->box.y + 0.5f * h->box.h, cases[i].cy, 0.25f * h->box.h + 4.0f);
        assert_int_equal(h->handedness, cases[i].hand);
        ks_hands_release(hands);
        ks_image_buf_free(&photo);
    }
    ks_hand_landmarker_destroy(hl);
}

/* Crop a 4x window around the hand (inside the photo) and look again: the landmarks map
 * back onto the full-image ones. Then mirror the crop: with task.mirror the result is the same
 * (the task un-mirrors), without it the x coordinates flip and the handedness swaps. */
static void test_crop_and_mirror(void **state) {
    (void)state;
    ks_image_buf photo;
    if (!load(RAISED, &photo)) skip();
    ks_hand_landmarker *hl = make(KS_MODE_IMAGE, 0), *hm = make(KS_MODE_IMAGE, 1);
    ks_hands *full = NULL;
    assert_int_equal(ks_hands_detect(hl, &photo.image, 0, &full), KS_STATUS_OK);
    assert_int_equal(full->count, 1);
    const ks_box b = full->items[0].box;
    int32_t side = (int32_t)(4.0f * (b.w > b.h ? b.w : b.h));
    int32_t x0 = (int32_t)(b.x + 0.5f * b.w) - side / 2,
            y0 = (int32_t)(b.y + 0.5f * b.h) - side / 2;
    int32_t W = photo.image.width_px, H = photo.image.height_px, c = 3, out = side;
    assert_int_equal(photo.image.format, KS_PIXEL_FORMAT_RGB);
    /* Keep the window inside the photo: the hand touches the bottom edge, and replicated border
     * pixels would change what the models see. */
    if (side > H) side = H;
    if (side > W) side = W;
    out = side;
    x0 = x0 < 0 ? 0 : (x0 > W - side ? W - side : x0);
    y0 = y0 < 0 ? 0 : (y0 > H - side ? H - side : y0);
    uint8_t *crop = malloc((size_t)out * (size_t)out * 3), *flip = malloc((size_t)out * out * 3);
    assert_non_null(crop);
    assert_non_null(flip);
    for (int32_t y = 0; y < out; y++) {
        for (int32_t x = 0; x < out; x++) {
            int32_t sx = x0 + x, sy = y0 + y;
            sx = sx < 0 ? 0 : (sx >= W ? W - 1 : sx);
            sy = sy < 0 ? 0 : (sy >= H ? H - 1 : sy);
            memcpy(crop + ((size_t)y * out + x) * 3, photo.pixels + ((size_t)sy * W + sx) * c, 3);
            memcpy(flip + ((size_t)y * out + (out - 1 - x)) * 3,
                   photo.pixels + ((size_t)sy * W + sx) * c, 3);
        }
    }
    ks_image ci = {
        .format = KS_PIXEL_FORMAT_RGB, .width_px = out, .height_px = out, .planes = {crop}};
    ks_image fi = ci;
    fi.planes[0] = flip;
    ks_hands *hc = NULL, *hf = NULL, *hfm = NULL;
    assert_int_equal(ks_hands_detect(hl, &ci, 0, &hc), KS_STATUS_OK);
    assert_int_equal(ks_hands_detect(hl, &fi, 0, &hf), KS_STATUS_OK);
    assert_int_equal(ks_hands_detect(hm, &fi, 0, &hfm), KS_STATUS_OK);
    assert_int_equal(hc->count, 1);
    assert_int_equal(hf->count, 1);
    assert_int_equal(hfm->count, 1);
    float size = b.w > b.h ? b.w : b.h, sum = 0.0f;
    for (int k = 0; k < KS_HAND_NUM_LANDMARKS; k++) {
        const ks_point3f *p = &full->items[0].landmarks[k];
        const ks_point3f *q = &hc->items[0].landmarks[k];
        /* Another framing gives another palm ROI, so landmarks move a little (the model is not
         * crop-invariant): mean within 6 % of the hand size, each within 20 %. */
        float dx = p->x - ((float)x0 + q->x), dy = p->y - ((float)y0 + q->y);
        assert_true(dx * dx + dy * dy < 0.04f * size * size);
        sum += sqrtf(dx * dx + dy * dy);
        /* mirror flag set: same as the un-mirrored crop */
        assert_float_equal(hfm->items[0].landmarks[k].x, q->x, 0.1f * (float)out);
        /* no mirror flag: x flipped */
        assert_float_equal(hf->items[0].landmarks[k].x, (float)out - q->x, 0.1f * (float)out);
    }
    fprintf(stderr, "test_hand: crop vs full image: mean landmark shift %.2f%% of the hand size\n",
            (double)(100.0f * sum / KS_HAND_NUM_LANDMARKS / size));
    assert_true(sum / KS_HAND_NUM_LANDMARKS < 0.06f * size);
    assert_int_equal(hc->items[0].handedness, full->items[0].handedness);
    assert_int_equal(hfm->items[0].handedness, hc->items[0].handedness);
    assert_int_not_equal(hf->items[0].handedness, hc->items[0].handedness);
    ks_hands_release(full);
    ks_hands_release(hc);
    ks_hands_release(hf);
    ks_hands_release(hfm);
    free(crop);
    free(flip);
    ks_hand_landmarker_destroy(hl);
    ks_hand_landmarker_destroy(hm);
    ks_image_buf_free(&photo);
}

static void test_video_ids(void **state) {
    (void)state;
    ks_image_buf photo;
    if (!load(RAISED, &photo)) skip();
    ks_hand_landmarker *hl = make(KS_MODE_VIDEO, 0);
    float first_x = 0.0f;
    for (int f = 0; f < 5; f++) {
        ks_hands *hands = NULL;
        assert_int_equal(ks_hands_detect(hl, &photo.image, 1000 + (int64_t)f * 33333, &hands),
                         KS_STATUS_OK);
        assert_int_equal(hands->count, 1);
        assert_int_equal(hands->items[0].id, 1);
        if (f == 0) first_x = hands->items[0].landmarks[0].x;
        assert_float_equal(hands->items[0].landmarks[0].x, first_x, 10.0f);
        ks_hands_release(hands);
    }
    ks_hands *hands = NULL;
    assert_int_equal(ks_hands_detect(hl, &photo.image, 1000, &hands), KS_STATUS_INVALID_STATE);
    assert_null(hands);
    ks_hand_landmarker_destroy(hl);
    ks_image_buf_free(&photo);
}

static void test_api_paths(void **state) {
    (void)state;
    ks_hand_landmarker *hl = NULL;
    ks_hand_landmarker_desc d = {.task.model_path = BUNDLE};
    assert_int_equal(ks_hand_landmarker_create(&d, NULL), KS_STATUS_INVALID_ARGUMENT);
    d.task.max_results = -1;
    assert_int_equal(ks_hand_landmarker_create(&d, &hl), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "max_results"));
    d.task.max_results = 0;
    d.task.mode = (ks_running_mode)5;
    assert_int_equal(ks_hand_landmarker_create(&d, &hl), KS_STATUS_INVALID_ARGUMENT);
    d.task.mode = KS_MODE_IMAGE;
    d.task.rotation = (ks_rotation)9;
    assert_int_equal(ks_hand_landmarker_create(&d, &hl), KS_STATUS_INVALID_ARGUMENT);
    d.task.rotation = KS_ROTATION_0;
    d.model = KS_HAND_MODEL_COUNT;
    assert_int_equal(ks_hand_landmarker_create(&d, &hl), KS_STATUS_INVALID_ARGUMENT);
    d.model = KS_HAND_MODEL_FULL;
    d.task.model_path = "/nonexistent/hand.ksb";
    assert_int_equal(ks_hand_landmarker_create(&d, &hl), KS_STATUS_IO_ERROR);
    assert_null(hl);

    hl = make(KS_MODE_IMAGE, 0);
    uint8_t px[64 * 64 * 3];
    memset(px, 200, sizeof(px));
    ks_image img = {.format = KS_PIXEL_FORMAT_RGB, .width_px = 64, .height_px = 64, .planes = {px}};
    ks_hands *hands = NULL;
    assert_int_equal(ks_hands_detect(hl, NULL, 0, &hands), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_hands_detect(hl, &img, 0, NULL), KS_STATUS_INVALID_ARGUMENT);
    ks_image bad = img;
    bad.height_px = -3;
    assert_int_equal(ks_hands_detect(hl, &bad, 0, &hands), KS_STATUS_INVALID_ARGUMENT);
    bad = img;
    bad.stride_bytes[0] = 5; /* shorter than a row */
    assert_int_not_equal(ks_hands_detect(hl, &bad, 0, &hands), KS_STATUS_OK);
    assert_null(hands);
    assert_int_equal(ks_hands_detect(hl, &img, 0, &hands), KS_STATUS_OK);
    assert_int_equal(hands->count, 0);
    assert_null(hands->items);
    ks_hands_release(hands);
    /* NV21 input of a photo without hands (the astronaut) converts and runs. */
    uint8_t *nv = calloc(64 * 64 + 64 * 32, 1);
    assert_non_null(nv);
    ks_image yuv = {.format = KS_PIXEL_FORMAT_NV21,
                    .width_px = 64,
                    .height_px = 64,
                    .planes = {nv, nv + 64 * 64}};
    assert_int_equal(ks_hands_detect(hl, &yuv, 0, &hands), KS_STATUS_OK);
    ks_hands_release(hands);
    free(nv);
    ks_hand_landmarker_destroy(hl);
    ks_hand_landmarker_destroy(NULL);
    ks_hands_release(NULL);
    assert_string_equal(ks_handedness_string(KS_HANDEDNESS_LEFT), "left");
    assert_string_equal(ks_handedness_string(KS_HANDEDNESS_COUNT), "invalid");
    uint32_t n = 0;
    assert_non_null(ks_hand_connections(&n));
    assert_int_equal(n, 21);
}

static void test_lite_model(void **state) {
    (void)state;
    ks_image_buf photo;
    if (!file_exists(BUNDLE_LITE) || !load(RAISED, &photo)) skip();
    ks_hand_landmarker *hl = NULL;
    ks_hand_landmarker_desc d = {.task.model_path = BUNDLE_LITE, .model = KS_HAND_MODEL_LITE};
    assert_int_equal(ks_hand_landmarker_create(&d, &hl), KS_STATUS_OK);
    ks_hands *hands = NULL;
    assert_int_equal(ks_hands_detect(hl, &photo.image, 0, &hands), KS_STATUS_OK);
    assert_int_equal(hands->count, 1);
    check_hand(&hands->items[0], photo.image.width_px, photo.image.height_px);
    ks_hands_release(hands);
    ks_hand_landmarker_destroy(hl);
    ks_image_buf_free(&photo);
}

int main(void) {
    if (!file_exists(BUNDLE)) {
        fprintf(stderr, "test_hand: %s missing (build ks_bundles; scripts/setup); skipped\n",
                BUNDLE);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_photos),     cmocka_unit_test(test_crop_and_mirror),
        cmocka_unit_test(test_video_ids),  cmocka_unit_test(test_api_paths),
        cmocka_unit_test(test_lite_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
