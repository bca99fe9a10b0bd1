/* Pose landmarker task: real photos (people squatting, standing, the astronaut), VIDEO tracking
 * with stable ids, rotated input, the segmentation mask, and bad-input statuses. Needs the pose
 * bundles built by algos/pose/bundle.cmake; exits 77 without them. The coral photos come from
 * ../shared/data/images and are skipped (with a message) when absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "image_io.h"
#include "kestrel/pose.h"

#define BUNDLE KS_BUNDLES_DIR "/pose_landmarker_full.ksb"
#define BUNDLE_LITE KS_BUNDLES_DIR "/pose_landmarker_lite.ksb"
#define ASTRONAUT KS_SOURCE_DIR "/models/images/skimage_astronaut.png"
#define SQUAT KS_SHARED_DATA "/images/coral_squat.bmp"
#define POSENET KS_SHARED_DATA "/images/coral_posenet_test_image.bmp"
#define ZIDANE KS_SHARED_DATA "/images/ultralytics_zidane.jpg"
#define BUS KS_SHARED_DATA "/images/ultralytics_bus.jpg"

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static ks_pose_landmarker *make(ks_running_mode mode, int32_t max_results, int32_t mask) {
    ks_pose_landmarker *pl = NULL;
    ks_pose_landmarker_desc d = {
        .task = {.mode = mode, .max_results = max_results, .model_path = BUNDLE},
        .output_segmentation = mask};
    ks_status st = ks_pose_landmarker_create(&d, &pl);
    if (st) fprintf(stderr, "%s\n", ks_last_error(NULL));
    assert_int_equal(st, KS_STATUS_OK);
    return pl;
}

/* Landmarks inside the (slightly grown) image, shoulders above hips above ankles, the box
 * around the landmarks and world landmarks of human size. */
static void check_topology(const ks_pose *p, int32_t w, int32_t h) {
    assert_true(p->score > 0.5f);
    for (int k = 0; k < KS_POSE_NUM_LANDMARKS; k++) {
        if (p->landmarks[k].visibility < 0.5f) continue;
        assert_true(p->landmarks[k].x > -0.05f * (float)w && p->landmarks[k].x < 1.05f * (float)w);
        assert_true(p->landmarks[k].y > -0.05f * (float)h && p->landmarks[k].y < 1.05f * (float)h);
    }
    float shoulders =
        0.5f * (p->landmarks[KS_POSE_LEFT_SHOULDER].y + p->landmarks[KS_POSE_RIGHT_SHOULDER].y);
    float hips = 0.5f * (p->landmarks[KS_POSE_LEFT_HIP].y + p->landmarks[KS_POSE_RIGHT_HIP].y);
    assert_true(p->landmarks[KS_POSE_NOSE].y < shoulders);
    assert_true(shoulders < hips);
    assert_true(p->box.w > 0.0f && p->box.h > 0.0f);
    assert_true(p->box.x >= 0.0f && p->box.x + p->box.w <= (float)w + 0.01f);
    /* World: meters, origin between the hips, y down: shoulders ~0.5 m above the hips. */
    float wy = 0.5f * (p->world_landmarks[KS_POSE_LEFT_SHOULDER].y +
                       p->world_landmarks[KS_POSE_RIGHT_SHOULDER].y);
    assert_true(wy < -0.2f && wy > -1.0f);
}

static void run_photo(const char *path, ks_image_buf *photo_out) {
    char err[256];
    assert_int_equal(ks_image_load(path, 0, photo_out, err, sizeof(err)), KS_STATUS_OK);
}

static void test_photos(void **state) {
    (void)state;
    const char *photos[] = {ASTRONAUT, SQUAT, POSENET};
    ks_pose_landmarker *pl = make(KS_MODE_IMAGE, 0, 0);
    int ran = 0;
    for (size_t i = 0; i < sizeof(photos) / sizeof(photos[0]); i++) {
        if (!file_exists(photos[i])) {
            fprintf(stderr, "test_pose: %s not present; that photo is skipped\n", photos[i]);
            continue;
        }
        ks_image_buf photo;
        run_photo(photos[i], &photo);
        ks_poses *poses = NULL;
        assert_int_equal(ks_pose_detect(pl, &photo.image, 0, &poses), KS_STATUS_OK);
        assert_int_equal(poses->count, 1);
        assert_int_equal(poses->items[0].id, 1);
        assert_null(poses->items[0].mask);
        check_topology(&poses->items[0], photo.image.width_px, photo.image.height_px);
        ks_poses_release(poses);
        ks_image_buf_free(&photo);
        ran++;
    }
    assert_true(ran >= 1);
    ks_pose_landmarker_destroy(pl);
}

/* A 90-degree rotated input (camera sensor orientation) gives the upright result. */
static void test_rotation(void **state) {
    (void)state;
    ks_image_buf photo;
    run_photo(ASTRONAUT, &photo);
    int32_t w = photo.image.width_px, h = photo.image.height_px;
    int32_t c = photo.image.format == KS_PIXEL_FORMAT_RGBA ? 4 : 3;
    /* Rotate the upright photo 90 degrees counter-clockwise; ROTATION_90 (clockwise) undoes it. */
    uint8_t *rot = malloc((size_t)w * (size_t)h * (size_t)c);
    assert_non_null(rot);
    const uint8_t *src = photo.pixels;
    for (int32_t y = 0; y < h; y++)
        for (int32_t x = 0; x < w; x++)
            memcpy(rot + ((size_t)(w - 1 - x) * (size_t)h + (size_t)y) * (size_t)c,
                   src + ((size_t)y * (size_t)w + (size_t)x) * (size_t)c, (size_t)c);
    ks_image rimg = {.format = photo.image.format, .width_px = h, .height_px = w, .planes = {rot}};
    ks_pose_landmarker *pl = make(KS_MODE_IMAGE, 1, 0), *pr = NULL;
    ks_pose_landmarker_desc d = {.task = {.rotation = KS_ROTATION_90, .model_path = BUNDLE}};
    assert_int_equal(ks_pose_landmarker_create(&d, &pr), KS_STATUS_OK);
    ks_poses *a = NULL, *b = NULL;
    assert_int_equal(ks_pose_detect(pl, &photo.image, 0, &a), KS_STATUS_OK);
    assert_int_equal(ks_pose_detect(pr, &rimg, 0, &b), KS_STATUS_OK);
    assert_int_equal(a->count, 1);
    assert_int_equal(b->count, 1);
    for (int k = 0; k < KS_POSE_NUM_LANDMARKS; k++) {
        if (a->items[0].landmarks[k].visibility < 0.5f) continue;
        assert_float_equal(a->items[0].landmarks[k].x, b->items[0].landmarks[k].x, 3.0f);
        assert_float_equal(a->items[0].landmarks[k].y, b->items[0].landmarks[k].y, 3.0f);
    }
    ks_poses_release(a);
    ks_poses_release(b);
    ks_pose_landmarker_destroy(pl);
    ks_pose_landmarker_destroy(pr);
    free(rot);
    ks_image_buf_free(&photo);
}

/* VIDEO: the same person keeps id 1 across frames (tracking from the previous landmarks), the
 * landmarks stay near the IMAGE-mode result, and a blank frame loses the track so the next
 * sighting gets a new id. */
static void test_video_ids(void **state) {
    (void)state;
    ks_image_buf photo;
    run_photo(ASTRONAUT, &photo);
    ks_pose_landmarker *pl = make(KS_MODE_VIDEO, 1, 0);
    ks_pose_landmarker *still = make(KS_MODE_IMAGE, 1, 0);
    ks_poses *ref = NULL;
    assert_int_equal(ks_pose_detect(still, &photo.image, 0, &ref), KS_STATUS_OK);
    assert_int_equal(ref->count, 1);
    for (int f = 0; f < 5; f++) {
        ks_poses *poses = NULL;
        assert_int_equal(ks_pose_detect(pl, &photo.image, (int64_t)f * 33333, &poses),
                         KS_STATUS_OK);
        assert_int_equal(poses->count, 1);
        assert_int_equal(poses->items[0].id, 1);
        float nose_dx = poses->items[0].landmarks[0].x - ref->items[0].landmarks[0].x;
        float nose_dy = poses->items[0].landmarks[0].y - ref->items[0].landmarks[0].y;
        assert_true(nose_dx * nose_dx + nose_dy * nose_dy < 15.0f * 15.0f);
        ks_poses_release(poses);
    }
    size_t n = (size_t)photo.image.width_px * (size_t)photo.image.height_px * 3;
    uint8_t *gray = malloc(n);
    assert_non_null(gray);
    memset(gray, 128, n);
    ks_image blank = {.format = KS_PIXEL_FORMAT_RGB,
                      .width_px = photo.image.width_px,
                      .height_px = photo.image.height_px,
                      .planes = {gray}};
    ks_poses *poses = NULL;
    assert_int_equal(ks_pose_detect(pl, &blank, 200000, &poses), KS_STATUS_OK);
    assert_int_equal(poses->count, 0);
    ks_poses_release(poses);
    assert_int_equal(ks_pose_detect(pl, &photo.image, 233333, &poses), KS_STATUS_OK);
    assert_int_equal(poses->count, 1);
    assert_int_equal(poses->items[0].id, 2);
    ks_poses_release(poses);
    /* Timestamps must increase. */
    assert_int_equal(ks_pose_detect(pl, &photo.image, 233333, &poses), KS_STATUS_INVALID_STATE);
    assert_non_null(strstr(ks_last_error(pl), "timestamp"));
    free(gray);
    ks_poses_release(ref);
    ks_pose_landmarker_destroy(pl);
    ks_pose_landmarker_destroy(still);
    ks_image_buf_free(&photo);
}

/* Multi-person pose (max_results > 1: the detector also runs on 2 x 2 tiles, and people are told
 * apart by their ROI centres and heads). Two photos with two people each must give two poses,
 * one per person (noses far apart); in VIDEO mode each keeps its id over the frames. */
static void test_multi_person(void **state) {
    (void)state;
    static const struct {
        const char *path;
        int people;   /* people in the photo (counted by hand) */
        int expected; /* poses the test requires; -1: only reported */
    } photos[] = {{POSENET, 2, 2}, {ZIDANE, 2, 2}, {BUS, 4, -1}};
    ks_pose_landmarker *pl = make(KS_MODE_IMAGE, 8, 0);
    int ran = 0;
    for (size_t i = 0; i < sizeof(photos) / sizeof(photos[0]); i++) {
        if (!file_exists(photos[i].path)) {
            fprintf(stderr, "test_pose: %s not present; that photo is skipped\n", photos[i].path);
            continue;
        }
        ks_image_buf photo;
        run_photo(photos[i].path, &photo);
        ks_poses *poses = NULL;
        assert_int_equal(ks_pose_detect(pl, &photo.image, 0, &poses), KS_STATUS_OK);
        print_message("[ multi ] %s: %u poses, %d people\n", photos[i].path, (unsigned)poses->count,
                      photos[i].people);
        if (photos[i].expected >= 0) assert_int_equal(poses->count, photos[i].expected);
        for (uint32_t a = 0; a < poses->count; a++) {
            check_topology(&poses->items[a], photo.image.width_px, photo.image.height_px);
            for (uint32_t b = 0; b < a; b++) {
                float dx = poses->items[a].landmarks[0].x - poses->items[b].landmarks[0].x;
                float dy = poses->items[a].landmarks[0].y - poses->items[b].landmarks[0].y;
                assert_true(dx * dx + dy * dy > 50.0f * 50.0f); /* two people, not one twice */
            }
        }
        ks_poses_release(poses);
        ks_image_buf_free(&photo);
        ran++;
    }
    ks_pose_landmarker_destroy(pl);
    if (!ran || !file_exists(POSENET)) return;
    /* VIDEO: both people tracked, ids 1 and 2 on every frame, each nose steady. */
    ks_image_buf photo;
    run_photo(POSENET, &photo);
    pl = make(KS_MODE_VIDEO, 4, 0);
    float nose[3][2] = {{0}};
    for (int f = 0; f < 5; f++) {
        ks_poses *poses = NULL;
        assert_int_equal(ks_pose_detect(pl, &photo.image, (int64_t)(f + 1) * 33333, &poses),
                         KS_STATUS_OK);
        assert_int_equal(poses->count, 2);
        for (uint32_t k = 0; k < 2; k++) {
            int32_t id = poses->items[k].id;
            assert_true(id == 1 || id == 2);
            const ks_pose_landmark *p = &poses->items[k].landmarks[0];
            if (f > 0) {
                float dx = p->x - nose[id][0], dy = p->y - nose[id][1];
                assert_true(dx * dx + dy * dy < 10.0f * 10.0f);
            }
            nose[id][0] = p->x;
            nose[id][1] = p->y;
        }
        assert_int_not_equal(poses->items[0].id, poses->items[1].id);
        ks_poses_release(poses);
    }
    ks_pose_landmarker_destroy(pl);
    ks_image_buf_free(&photo);
}

/* The person mask: input-sized, mostly person inside the body box, background far outside. */
static void test_mask(void **state) {
    (void)state;
    ks_image_buf photo;
    run_photo(ASTRONAUT, &photo);
    ks_pose_landmarker *pl = make(KS_MODE_IMAGE, 1, 1);
    ks_poses *poses = NULL;
    assert_int_equal(ks_pose_detect(pl, &photo.image, 0, &poses), KS_STATUS_OK);
    assert_int_equal(poses->count, 1);
    assert_int_equal(poses->mask_width_px, photo.image.width_px);
    assert_int_equal(poses->mask_height_px, photo.image.height_px);
    const ks_pose *p = &poses->items[0];
    assert_non_null(p->mask);
    int32_t w = poses->mask_width_px;
    /* Between the shoulders and the nose: person. Top-left corner: background (the flag). */
    int32_t sx = (int32_t)(0.5f * (p->landmarks[11].x + p->landmarks[12].x));
    int32_t sy = (int32_t)(0.5f * (p->landmarks[11].y + p->landmarks[12].y) + 20.0f);
    assert_true(p->mask[(size_t)sy * (size_t)w + (size_t)sx] > 0.5f);
    assert_true(p->mask[5 * (size_t)w + 5] < 0.5f);
    ks_poses_release(poses);
    ks_pose_landmarker_destroy(pl);
    ks_image_buf_free(&photo);
}

static void test_bad_input(void **state) {
    (void)state;
    ks_pose_landmarker *pl = NULL;
    ks_pose_landmarker_desc d = {.task.model_path = BUNDLE};
    assert_int_equal(ks_pose_landmarker_create(&d, NULL), KS_STATUS_INVALID_ARGUMENT);
    d.task.max_results = KS_POSE_MAX_RESULTS + 1;
    assert_int_equal(ks_pose_landmarker_create(&d, &pl), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "max_results"));
    assert_null(pl);
    d.task.max_results = 0;
    d.model = (ks_pose_model)7;
    assert_int_equal(ks_pose_landmarker_create(&d, &pl), KS_STATUS_INVALID_ARGUMENT);
    d.model = KS_POSE_MODEL_FULL;
    d.task.min_score = 2.0f;
    assert_int_equal(ks_pose_landmarker_create(&d, &pl), KS_STATUS_INVALID_ARGUMENT);
    d.task.min_score = 0.0f;
    d.task.model_path = "/nonexistent/pose.ksb";
    assert_int_equal(ks_pose_landmarker_create(&d, &pl), KS_STATUS_IO_ERROR);
    assert_non_null(strstr(ks_last_error(NULL), "/nonexistent/pose.ksb"));
    /* A bundle of another task is refused with a message about the graph. */
    d.task.model_path = KS_BUNDLES_DIR "/hand_landmarker_full.ksb";
    if (file_exists(d.task.model_path)) {
        assert_int_not_equal(ks_pose_landmarker_create(&d, &pl), KS_STATUS_OK);
        assert_null(pl);
    }

    pl = make(KS_MODE_IMAGE, 1, 0);
    uint8_t px[12] = {0};
    ks_image tiny = {.format = KS_PIXEL_FORMAT_RGB, .width_px = 2, .height_px = 2, .planes = {px}};
    ks_poses *poses = NULL;
    assert_int_equal(ks_pose_detect(pl, NULL, 0, &poses), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_pose_detect(pl, &tiny, 0, NULL), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_pose_detect(NULL, &tiny, 0, &poses), KS_STATUS_INVALID_ARGUMENT);
    ks_image bad = tiny;
    bad.width_px = 0;
    assert_int_not_equal(ks_pose_detect(pl, &bad, 0, &poses), KS_STATUS_OK);
    bad = tiny;
    bad.format = (ks_pixel_format)99;
    assert_int_not_equal(ks_pose_detect(pl, &bad, 0, &poses), KS_STATUS_OK);
    bad = tiny;
    bad.planes[0] = NULL;
    assert_int_equal(ks_pose_detect(pl, &bad, 0, &poses), KS_STATUS_INVALID_ARGUMENT);
    bad = tiny;
    bad.width_px = 40000;
    assert_int_equal(ks_pose_detect(pl, &bad, 0, &poses), KS_STATUS_LIMIT_EXCEEDED);
    assert_null(poses);
    /* A tiny uniform image is valid and has nobody in it. */
    assert_int_equal(ks_pose_detect(pl, &tiny, 0, &poses), KS_STATUS_OK);
    assert_int_equal(poses->count, 0);
    ks_poses_release(poses);
    ks_poses_release(NULL);
    ks_pose_landmarker_destroy(pl);
    ks_pose_landmarker_destroy(NULL);
    uint32_t n = 0;
    assert_non_null(ks_pose_connections(&n));
    assert_int_equal(n, 35);
}

/* The lite model on the same photo agrees with full within a few percent of the body size. */
static void test_lite_model(void **state) {
    (void)state;
    if (!file_exists(BUNDLE_LITE)) skip();
    ks_image_buf photo;
    run_photo(ASTRONAUT, &photo);
    ks_pose_landmarker *full = make(KS_MODE_IMAGE, 1, 0), *lite = NULL;
    ks_pose_landmarker_desc d = {.task.model_path = BUNDLE_LITE, .model = KS_POSE_MODEL_LITE};
    assert_int_equal(ks_pose_landmarker_create(&d, &lite), KS_STATUS_OK);
    ks_poses *a = NULL, *b = NULL;
    assert_int_equal(ks_pose_detect(full, &photo.image, 0, &a), KS_STATUS_OK);
    assert_int_equal(ks_pose_detect(lite, &photo.image, 0, &b), KS_STATUS_OK);
    assert_int_equal(a->count, 1);
    assert_int_equal(b->count, 1);
    check_topology(&b->items[0], photo.image.width_px, photo.image.height_px);
    float size = a->items[0].box.h > a->items[0].box.w ? a->items[0].box.h : a->items[0].box.w;
    for (int k = 0; k < 13; k++) { /* face and shoulders: visible in the photo */
        assert_float_equal(a->items[0].landmarks[k].x, b->items[0].landmarks[k].x, 0.1f * size);
        assert_float_equal(a->items[0].landmarks[k].y, b->items[0].landmarks[k].y, 0.1f * size);
    }
    ks_poses_release(a);
    ks_poses_release(b);
    ks_pose_landmarker_destroy(full);
    ks_pose_landmarker_destroy(lite);
    ks_image_buf_free(&photo);
}

int main(void) {
    if (!file_exists(BUNDLE) || !file_exists(ASTRONAUT)) {
        fprintf(stderr,
                "test_pose: %s or %s missing (build ks_bundles; scripts/setup); "
                "skipped\n",
                BUNDLE, ASTRONAUT);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_photos),     cmocka_unit_test(test_rotation),
        cmocka_unit_test(test_video_ids),  cmocka_unit_test(test_multi_person),
        cmocka_unit_test(test_mask),       cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_lite_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
