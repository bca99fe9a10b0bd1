/* Steady-state cost of the task calls in VIDEO mode, counted on the app's allocator: after a
 * warm-up, a call makes exactly one allocation, the result block it hands to the caller (freed
 * by its release function), and ks_segment_into none at all; every packet of the frame (the
 * camera view, ROI and list packets, tensors, masks) comes from the pipeline's caching
 * allocator. Runs on the astronaut photo fed as a repeated frame. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "image_io.h"
#include "kestrel/detect.h"
#include "kestrel/face.h"
#include "kestrel/hand.h"
#include "kestrel/pose.h"
#include "kestrel/segment.h"

#define ASTRONAUT KS_SOURCE_DIR "/models/images/skimage_astronaut.png"
#define WARMUP_FRAMES 4
#define COUNTED_FRAMES 6
#define FRAME_US 33333

typedef struct counting {
    long num_alloc, num_free;
} counting;

static counting g_count;
static ks_allocator g_alloc;
static ks_image_buf g_img;

static void *count_alloc(void *user, size_t size, size_t align) {
    void *p = NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    if (posix_memalign(&p, align, size ? size : 1)) return NULL;
    ((counting *)user)->num_alloc++;
    return p;
}

static void count_free(void *user, void *p) {
    if (!p) return;
    ((counting *)user)->num_free++;
    free(p);
}

static int setup(void **state) {
    (void)state;
    char err[256];
    if (ks_image_load(ASTRONAUT, 0, &g_img, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    g_alloc = (ks_allocator){count_alloc, count_free, &g_count};
    return ks_set_models_dir(KS_BUNDLES_DIR) == KS_STATUS_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    ks_image_buf_free(&g_img);
    return 0;
}

static ks_task_options video(void) {
    return (ks_task_options){.mode = KS_MODE_VIDEO, .allocator = &g_alloc};
}

/* One call of a task on frame `i`; the result is released inside. */
typedef ks_status (*call_fn)(void *task, int64_t ts);

/* Runs the warm-up, then counts allocations per counted frame: each must equal `per_call`. */
static void check_steady(const char *name, void *task, call_fn call, long per_call) {
    int64_t ts = FRAME_US;
    for (int i = 0; i < WARMUP_FRAMES; i++, ts += FRAME_US)
        assert_int_equal(call(task, ts), KS_STATUS_OK);
    for (int i = 0; i < COUNTED_FRAMES; i++, ts += FRAME_US) {
        long before = g_count.num_alloc;
        assert_int_equal(call(task, ts), KS_STATUS_OK);
        long n = g_count.num_alloc - before;
        if (n != per_call)
            fail_msg("%s: frame %d after warm-up made %ld allocations on the app's allocator "
                     "(expected %ld)",
                     name, i, n, per_call);
    }
    print_message("[ steady ] %s: %ld allocation(s) per VIDEO frame after warm-up\n", name,
                  per_call);
}

static ks_status call_face_mesh(void *t, int64_t ts) {
    ks_face_meshes *r = NULL;
    ks_status st = ks_face_landmarker_detect(t, &g_img.image, ts, &r);
    if (!st && r->count != 1) st = KS_STATUS_INTERNAL;
    ks_face_meshes_release(r);
    return st;
}

static ks_status call_face_detect(void *t, int64_t ts) {
    ks_faces *r = NULL;
    ks_status st = ks_face_detect(t, &g_img.image, ts, &r);
    ks_faces_release(r);
    return st;
}

static ks_status call_pose(void *t, int64_t ts) {
    ks_poses *r = NULL;
    ks_status st = ks_pose_detect(t, &g_img.image, ts, &r);
    ks_poses_release(r);
    return st;
}

static ks_status call_hands(void *t, int64_t ts) {
    ks_hands *r = NULL;
    ks_status st = ks_hands_detect(t, &g_img.image, ts, &r);
    ks_hands_release(r);
    return st;
}

static ks_status call_segment(void *t, int64_t ts) {
    ks_segmentation *r = NULL;
    ks_status st = ks_segment(t, &g_img.image, ts, &r);
    ks_segmentation_release(r);
    return st;
}

static float g_mask[128 * 128];

static ks_status call_segment_into(void *t, int64_t ts) {
    return ks_segment_into(t, &g_img.image, ts, NULL, g_mask, 128, 128, 0, NULL);
}

static ks_status call_detect(void *t, int64_t ts) {
    ks_detected_objects *r = NULL;
    ks_status st = ks_object_detect(t, &g_img.image, ts, &r);
    ks_detected_objects_release(r);
    return st;
}

static void test_landmark_tasks(void **state) {
    (void)state;
    ks_face_landmarker *fl = NULL;
    assert_int_equal(ks_face_landmarker_create(&(ks_face_landmarker_desc){.task = video()}, &fl),
                     KS_STATUS_OK);
    check_steady("face_landmarks", fl, call_face_mesh, 1);
    ks_face_landmarker_destroy(fl);
    ks_pose_landmarker *pl = NULL;
    assert_int_equal(ks_pose_landmarker_create(&(ks_pose_landmarker_desc){.task = video()}, &pl),
                     KS_STATUS_OK);
    check_steady("pose", pl, call_pose, 1);
    ks_pose_landmarker_destroy(pl);
    ks_hand_landmarker *hl = NULL;
    assert_int_equal(ks_hand_landmarker_create(&(ks_hand_landmarker_desc){.task = video()}, &hl),
                     KS_STATUS_OK);
    check_steady("hands", hl, call_hands, 1);
    ks_hand_landmarker_destroy(hl);
}

static void test_single_model_tasks(void **state) {
    (void)state;
    ks_face_detector *fd = NULL;
    assert_int_equal(ks_face_detector_create(&(ks_face_detector_desc){.task = video()}, &fd),
                     KS_STATUS_OK);
    check_steady("face_detect", fd, call_face_detect, 1);
    ks_face_detector_destroy(fd);
    ks_segmenter *sg = NULL;
    assert_int_equal(ks_segmenter_create(&(ks_segmenter_desc){.task = video()}, &sg), KS_STATUS_OK);
    check_steady("segment", sg, call_segment, 1);
    ks_segmenter_destroy(sg);
    assert_int_equal(
        ks_segmenter_create(&(ks_segmenter_desc){.task = video(), .mask_size = KS_MASK_SIZE_MODEL},
                            &sg),
        KS_STATUS_OK);
    check_steady("segment_into", sg, call_segment_into, 0);
    ks_segmenter_destroy(sg);
    ks_object_detector *od = NULL;
    assert_int_equal(ks_object_detector_create(&(ks_object_detector_desc){.task = video()}, &od),
                     KS_STATUS_OK);
    check_steady("detect", od, call_detect, 1);
    ks_object_detector_destroy(od);
    /* Everything handed out came back. */
    assert_int_equal(g_count.num_alloc, g_count.num_free);
}

int main(void) {
    static const char *const bundles[] = {"face_landmarker.ksb",      "face_detector_short.ksb",
                                          "pose_landmarker_full.ksb", "hand_landmarker_full.ksb",
                                          "selfie_segmenter.ksb",     "object_detector_yolox.ksb"};
    for (size_t i = 0; i < sizeof(bundles) / sizeof(bundles[0]); i++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", KS_BUNDLES_DIR, bundles[i]);
        FILE *f = fopen(path, "rb");
        if (!f) {
            fprintf(stderr, "SKIP: no %s (models not fetched: scripts/fetch-models)\n", path);
            return 77;
        }
        fclose(f);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_landmark_tasks),
        cmocka_unit_test(test_single_model_tasks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
