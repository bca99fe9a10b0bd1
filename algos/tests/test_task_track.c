/* The tracking loop shared by the face, hand and pose landmarkers (ks__track_loop_frame,
 * algos/tasks/task_track.c) with scripted model steps: detection only while objects are
 * missing and then on a frame budget, new tracks only for detections away from tracked ones,
 * stable ids, converged tracks merged into the older one, lost objects looked for at once,
 * IMAGE mode stateless, and a failing step dropping every track. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../tasks/task_common.h"

#define IW 640
#define IH 480

/* What the scripted steps do. */
typedef struct script {
    ks__rect detections[4];
    size_t num_detections;
    int num_detect_calls, num_landmark_calls, num_new_tracks;
    bool lose_id[8];       /* finish: the object with this id is lost */
    bool merge_into_first; /* finish: every item's next ROI is the first item's */
    ks_status landmarks_status;
} script;

static ks__rect rect_at(float x, float y) {
    return (ks__rect){x, y, 0.1f, 0.1f, 0.0f};
}

static ks_status fake_detect(void *task, ks_packet *image, int32_t iw, int32_t ih, ks__rect *rois,
                             size_t cap, size_t *num_out, char *err, size_t err_cap) {
    script *s = task;
    (void)image, (void)iw, (void)ih, (void)err, (void)err_cap;
    s->num_detect_calls++;
    *num_out = 0;
    for (size_t i = 0; i < s->num_detections && i < cap; i++)
        rois[(*num_out)++] = s->detections[i];
    return KS_STATUS_OK;
}

static ks_status fake_landmarks(void *task, ks_packet *image, int32_t iw, int32_t ih,
                                const ks__track_item *items, size_t num_items, char *err,
                                size_t err_cap) {
    script *s = task;
    (void)image, (void)iw, (void)ih, (void)items, (void)num_items;
    s->num_landmark_calls++;
    if (s->landmarks_status) snprintf(err, err_cap, "scripted failure");
    return s->landmarks_status;
}

static ks__rect g_first_roi;

static ks_status fake_finish(void *task, size_t index, const ks__track_item *item, int32_t iw,
                             int32_t ih, int64_t timestamp_us, ks__rect *next, bool *found,
                             char *err, size_t err_cap) {
    script *s = task;
    (void)iw, (void)ih, (void)timestamp_us, (void)err, (void)err_cap;
    if (index == 0) g_first_roi = item->roi;
    /* Objects stand still (where the detector keeps finding them). */
    *next = s->merge_into_first ? g_first_roi : item->roi;
    *found = !(item->id > 0 && item->id < 8 && s->lose_id[item->id]);
    return KS_STATUS_OK;
}

static void fake_new_track(void *task, int32_t slot) {
    script *s = task;
    (void)slot;
    s->num_new_tracks++;
}

static const ks__track_ops k_ops = {fake_detect, fake_landmarks, fake_finish, fake_new_track, NULL};

static size_t frame(ks__track_loop *t, script *s, int64_t ts, ks__track_item *items) {
    size_t n = 0;
    char err[128];
    assert_int_equal(
        ks__track_loop_frame(t, &k_ops, s, NULL, IW, IH, ts, items, &n, err, sizeof(err)),
        KS_STATUS_OK);
    return n;
}

static size_t num_kept(const ks__track_item *items, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += items[i].keep;
    return k;
}

static void test_image_mode_is_stateless(void **state) {
    (void)state;
    script s = {.detections = {rect_at(0.2f, 0.5f), rect_at(0.7f, 0.5f)}, .num_detections = 2};
    ks__track_loop t;
    ks__track_loop_init(&t, 2, false, 0.5f);
    ks__track_item items[KS__TRACK_MAX_OBJECTS];
    for (int k = 0; k < 3; k++) {
        size_t n = frame(&t, &s, 0, items);
        assert_int_equal(n, 2);
        assert_int_equal(num_kept(items, n), 2);
        assert_int_equal(items[0].id, 0);
        assert_int_equal(items[0].slot, -1);
    }
    assert_int_equal(s.num_detect_calls, 3);
    assert_int_equal(s.num_new_tracks, 0);
}

static void test_video_tracks_and_budget(void **state) {
    (void)state;
    /* Two objects, three asked for: the detector looks for the third every
     * KS__TRACK_REDETECT_FRAMES frames, and finds only the tracked two (dropped). */
    script s = {.detections = {rect_at(0.2f, 0.5f), rect_at(0.7f, 0.5f)}, .num_detections = 2};
    ks__track_loop t;
    ks__track_loop_init(&t, 3, true, 0.5f);
    ks__track_item items[KS__TRACK_MAX_OBJECTS];
    const int num_frames = 4 * KS__TRACK_REDETECT_FRAMES;
    for (int k = 0; k < num_frames; k++) {
        size_t n = frame(&t, &s, 1000 * (k + 1), items);
        assert_int_equal(n, 2);
        assert_int_equal(num_kept(items, n), 2);
        assert_int_equal(items[0].id, 1);
        assert_int_equal(items[1].id, 2);
    }
    assert_int_equal(s.num_new_tracks, 2);
    assert_int_equal(t.num_detector_runs, 4);
    assert_int_equal(s.num_detect_calls, 4);
    assert_int_equal(s.num_landmark_calls, num_frames);
    assert_int_equal(t.num_frames, num_frames);

    /* Everything asked for is tracked: the detector stays off. */
    ks__track_loop_init(&t, 2, true, 0.5f);
    s.num_detect_calls = 0;
    for (int k = 0; k < num_frames; k++)
        frame(&t, &s, 1000 * (k + 1), items);
    assert_int_equal(s.num_detect_calls, 1);
}

static void test_lost_object_is_redetected(void **state) {
    (void)state;
    script s = {.detections = {rect_at(0.2f, 0.5f), rect_at(0.7f, 0.5f)}, .num_detections = 2};
    ks__track_loop t;
    ks__track_loop_init(&t, 2, true, 0.5f);
    ks__track_item items[KS__TRACK_MAX_OBJECTS];
    frame(&t, &s, 1000, items);
    frame(&t, &s, 2000, items);
    assert_int_equal(s.num_detect_calls, 1);
    s.lose_id[2] = true; /* id 2 lost in frame 3 */
    size_t n = frame(&t, &s, 3000, items);
    assert_int_equal(num_kept(items, n), 1);
    s.lose_id[2] = false;
    /* Frame 4: the detector runs at once and the object comes back with a new id. */
    n = frame(&t, &s, 4000, items);
    assert_int_equal(s.num_detect_calls, 2);
    assert_int_equal(n, 2);
    assert_int_equal(items[0].id, 1);
    assert_int_equal(items[1].id, 3);
}

static void test_converged_tracks_merge(void **state) {
    (void)state;
    script s = {.detections = {rect_at(0.2f, 0.5f), rect_at(0.7f, 0.5f)}, .num_detections = 2};
    ks__track_loop t;
    ks__track_loop_init(&t, 2, true, 0.5f);
    ks__track_item items[KS__TRACK_MAX_OBJECTS];
    frame(&t, &s, 1000, items);
    s.merge_into_first = true; /* both tracks' next ROIs land on the first object */
    size_t n = frame(&t, &s, 2000, items);
    assert_int_equal(n, 2);
    assert_true(items[0].keep && !items[1].keep); /* the older track stays */
    s.merge_into_first = false;
    s.num_detections = 1; /* only the first object remains */
    n = frame(&t, &s, 3000, items);
    assert_int_equal(n, 1);
    assert_int_equal(items[0].id, 1);
    /* A merge is not a loss: no immediate detector run. */
    assert_int_equal(s.num_detect_calls, 1);
}

static void test_failed_step_drops_tracks(void **state) {
    (void)state;
    script s = {.detections = {rect_at(0.2f, 0.5f)}, .num_detections = 1};
    ks__track_loop t;
    ks__track_loop_init(&t, 1, true, 0.5f);
    ks__track_item items[KS__TRACK_MAX_OBJECTS];
    frame(&t, &s, 1000, items);
    s.landmarks_status = KS_STATUS_INVALID_MODEL;
    size_t n = 0;
    char err[128] = "";
    assert_int_equal(
        ks__track_loop_frame(&t, &k_ops, &s, NULL, IW, IH, 2000, items, &n, err, sizeof(err)),
        KS_STATUS_INVALID_MODEL);
    assert_non_null(strstr(err, "scripted failure"));
    s.landmarks_status = KS_STATUS_OK;
    n = frame(&t, &s, 3000, items);
    assert_int_equal(s.num_detect_calls, 2); /* nothing tracked any more */
    assert_int_equal(items[0].id, 2);
}

static void test_rect_iou(void **state) {
    (void)state;
    ks__rect a = rect_at(0.5f, 0.5f), b = rect_at(0.55f, 0.5f);
    float iou = ks__track_rect_iou(&a, &b, IW, IH);
    assert_true(fabsf(iou - 1.0f / 3.0f) < 1e-4f);
    ks__rect far = rect_at(0.9f, 0.1f);
    assert_true(ks__track_rect_iou(&a, &far, IW, IH) == 0.0f);
    ks__rect turned = a;
    turned.rotation_rad = 0.7853982f; /* 45 degrees: a larger axis-aligned box */
    assert_true(ks__track_rect_iou(&a, &turned, IW, IH) < 1.0f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_image_mode_is_stateless),
        cmocka_unit_test(test_video_tracks_and_budget),
        cmocka_unit_test(test_lost_object_is_redetected),
        cmocka_unit_test(test_converged_tracks_merge),
        cmocka_unit_test(test_failed_step_drops_tracks),
        cmocka_unit_test(test_rect_iou),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
