/* Live swap inside the task APIs (ks_<task>_swap_model, vision.h "Live swap"): for every task a
 * frame thread runs the task continuously on a real photo while the main thread swaps between
 * two versions of its bundle (and tries bad ones); every frame's result must be exactly one
 * version's (never a mix), the version a frame ran must be the one ks_task_stats reports, no
 * frame fails, and the versions follow the swaps in order. Then VIDEO tracking across a swap
 * (the face landmarker keeps its track id; the face detector's ids stay unique) and an
 * encrypted version (refused without its key, run with it). Real bundles from the build's
 * bundles/ (KS_TEST_BUNDLES_DIR overrides) and photos from ../shared/data/images; the test skips
 * with a message where they are missing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "delivery_test_util.h"
#include "base/alloc.h"
#include "format/ksm_crypt.h"
#include "image_io.h"
#include "kestrel/classify.h"
#include "kestrel/detect.h"
#include "kestrel/face.h"
#include "kestrel/hand.h"
#include "kestrel/pose.h"
#include "kestrel/segment.h"

/* ---- one interface over the seven tasks --------------------------------------------------- */

typedef struct task_kind {
    const char *name;
    const char *photo;               /* under ../shared/data/images */
    const char *bundle_a, *bundle_b; /* the two versions (b may be a copy of a) */
    void *(*create)(const char *bundle, ks_running_mode mode);
    ks_status (*swap)(void *task, const ks_task_options *source);
    /* One frame: a hash of the result (0 when run failed) and the count of objects in it. */
    uint64_t (*run)(void *task, const ks_image *img, int64_t ts, uint32_t *count);
    ks_status (*stats)(void *task, ks_task_stats *out);
    void (*destroy)(void *task);
} task_kind;

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}
#define FNV0 0xcbf29ce484222325ull

#define TASK_COMMON(type, prefix)                                                                  \
    static ks_status prefix##_swap(void *t, const ks_task_options *src) {                          \
        return ks_##type##_swap_model(t, src);                                                     \
    }                                                                                              \
    static ks_status prefix##_stats(void *t, ks_task_stats *out) {                                 \
        return ks_##type##_stats(t, out);                                                          \
    }                                                                                              \
    static void prefix##_destroy(void *t) {                                                        \
        ks_##type##_destroy(t);                                                                    \
    }

TASK_COMMON(face_detector, fd)
static void *fd_create(const char *bundle, ks_running_mode mode) {
    ks_face_detector *t = NULL;
    ks_face_detector_desc d = {.task = {.mode = mode, .model_path = bundle}};
    if (ks_face_detector_create(&d, &t)) fail_msg("face detector: %s", ks_last_error(NULL));
    return t;
}
static uint64_t fd_run(void *t, const ks_image *img, int64_t ts, uint32_t *count) {
    ks_faces *r = NULL;
    if (ks_face_detect(t, img, ts, &r)) return 0;
    uint64_t h = FNV0;
    for (uint32_t i = 0; i < r->count; i++) {
        h = fnv(h, &r->items[i].box, sizeof(ks_box));
        h = fnv(h, &r->items[i].score, sizeof(float));
    }
    *count = r->count;
    ks_faces_release(r);
    return h;
}

TASK_COMMON(face_landmarker, fl)
static void *fl_create(const char *bundle, ks_running_mode mode) {
    ks_face_landmarker *t = NULL;
    ks_face_landmarker_desc d = {.task = {.mode = mode, .model_path = bundle}};
    if (ks_face_landmarker_create(&d, &t)) fail_msg("face landmarker: %s", ks_last_error(NULL));
    return t;
}
static uint64_t fl_run(void *t, const ks_image *img, int64_t ts, uint32_t *count) {
    ks_face_meshes *r = NULL;
    if (ks_face_landmarker_detect(t, img, ts, &r)) return 0;
    uint64_t h = FNV0;
    for (uint32_t i = 0; i < r->count; i++)
        h = fnv(h, r->items[i].landmarks, r->items[i].num_landmarks * sizeof(ks_point3f));
    *count = r->count;
    ks_face_meshes_release(r);
    return h;
}

TASK_COMMON(pose_landmarker, po)
static void *po_create(const char *bundle, ks_running_mode mode) {
    ks_pose_landmarker *t = NULL;
    ks_pose_landmarker_desc d = {.task = {.mode = mode, .model_path = bundle}};
    if (ks_pose_landmarker_create(&d, &t)) fail_msg("pose: %s", ks_last_error(NULL));
    return t;
}
static uint64_t po_run(void *t, const ks_image *img, int64_t ts, uint32_t *count) {
    ks_poses *r = NULL;
    if (ks_pose_detect(t, img, ts, &r)) return 0;
    uint64_t h = FNV0;
    for (uint32_t i = 0; i < r->count; i++)
        h = fnv(h, r->items[i].landmarks, sizeof(r->items[i].landmarks));
    *count = r->count;
    ks_poses_release(r);
    return h;
}

TASK_COMMON(hand_landmarker, ha)
static void *ha_create(const char *bundle, ks_running_mode mode) {
    ks_hand_landmarker *t = NULL;
    ks_hand_landmarker_desc d = {.task = {.mode = mode, .model_path = bundle}};
    if (ks_hand_landmarker_create(&d, &t)) fail_msg("hands: %s", ks_last_error(NULL));
    return t;
}
static uint64_t ha_run(void *t, const ks_image *img, int64_t ts, uint32_t *count) {
    ks_hands *r = NULL;
    if (ks_hands_detect(t, img, ts, &r)) return 0;
    uint64_t h = FNV0;
    for (uint32_t i = 0; i < r->count; i++)
        h = fnv(h, r->items[i].landmarks, sizeof(r->items[i].landmarks));
    *count = r->count;
    ks_hands_release(r);
    return h;
}

TASK_COMMON(segmenter, se)
static void *se_create(const char *bundle, ks_running_mode mode) {
    ks_segmenter *t = NULL;
    ks_segmenter_desc d = {.task = {.mode = mode, .model_path = bundle},
                           .mask_size = KS_MASK_SIZE_MODEL};
    if (ks_segmenter_create(&d, &t)) fail_msg("segmenter: %s", ks_last_error(NULL));
    return t;
}
static uint64_t se_run(void *t, const ks_image *img, int64_t ts, uint32_t *count) {
    ks_segmentation *r = NULL;
    if (ks_segment(t, img, ts, &r)) return 0;
    uint64_t h = fnv(FNV0, r->mask, (size_t)r->width_px * (size_t)r->height_px * sizeof(float));
    *count = r->person_fraction > 0.05f;
    ks_segmentation_release(r);
    return h;
}

TASK_COMMON(image_classifier, cl)
static void *cl_create(const char *bundle, ks_running_mode mode) {
    ks_image_classifier *t = NULL;
    ks_image_classifier_desc d = {.task = {.mode = mode, .model_path = bundle}};
    if (ks_image_classifier_create(&d, &t)) fail_msg("classifier: %s", ks_last_error(NULL));
    return t;
}
static uint64_t cl_run(void *t, const ks_image *img, int64_t ts, uint32_t *count) {
    ks_classifications *r = NULL;
    if (ks_image_classify(t, img, ts, &r)) return 0;
    uint64_t h = FNV0;
    for (uint32_t i = 0; i < r->count; i++) {
        h = fnv(h, &r->items[i].class_id, sizeof(int32_t));
        h = fnv(h, &r->items[i].score, sizeof(float));
    }
    *count = r->count;
    ks_classifications_release(r);
    return h;
}

TASK_COMMON(object_detector, od)
static void *od_create(const char *bundle, ks_running_mode mode) {
    ks_object_detector *t = NULL;
    ks_object_detector_desc d = {.task = {.mode = mode, .model_path = bundle}};
    if (ks_object_detector_create(&d, &t)) fail_msg("object detector: %s", ks_last_error(NULL));
    return t;
}
static uint64_t od_run(void *t, const ks_image *img, int64_t ts, uint32_t *count) {
    ks_detected_objects *r = NULL;
    if (ks_object_detect(t, img, ts, &r)) return 0;
    uint64_t h = FNV0;
    for (uint32_t i = 0; i < r->count; i++) {
        h = fnv(h, &r->items[i].box, sizeof(ks_box));
        h = fnv(h, &r->items[i].class_id, sizeof(int32_t));
    }
    *count = r->count;
    ks_detected_objects_release(r);
    return h;
}

#define KIND(n, photo, a, b, p)                                                                    \
    { n, photo, a, b, p##_create, p##_swap, p##_run, p##_stats, p##_destroy }
static const task_kind kinds[] = {
    KIND("face_detector", "coral_grace_hopper.bmp", "face_detector_short.ksb",
         "face_detector_full.ksb", fd),
    KIND("face_landmarker", "coral_grace_hopper.bmp", "face_landmarker.ksb",
         "face_landmarker_attention.ksb", fl),
    KIND("pose_landmarker", "coral_squat.bmp", "pose_landmarker_lite.ksb",
         "pose_landmarker_full.ksb", po),
    KIND("hand_landmarker", "coral_squat.bmp", "hand_landmarker_lite.ksb",
         "hand_landmarker_full.ksb", ha),
    KIND("segmenter", "skimage_astronaut.png", "selfie_segmenter.ksb",
         "selfie_segmenter_landscape.ksb", se),
    /* One classifier bundle: version 2 is a copy under another path (same results). */
    KIND("image_classifier", "coral_parrot.jpg", "classifier_mobilenet_v2.ksb", NULL, cl),
    KIND("object_detector", "ultralytics_bus.jpg", "object_detector_yolox.ksb",
         "object_detector_nanodet.ksb", od),
};

/* ---- shared fixtures ----------------------------------------------------------------------- */

static int load_photo(const char *name, ks_image_buf *img) {
    char path[1024], err[512];
    snprintf(path, sizeof(path), "%s/images/%s", KS_SHARED_DATA, name);
    if (access(path, R_OK) != 0) return -1;
    if (ks_image_load(path, 0, img, err, sizeof(err))) fail_msg("%s: %s", path, err);
    return 0;
}

/* Copies src to dst (a second version whose bytes equal the first's). */
static void copy_file(const char *src, const char *dst) {
    size_t n = 0;
    uint8_t *data = dt_read(src, &n);
    assert_non_null(data);
    FILE *f = fopen(dst, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    free(data);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- frames on another thread -------------------------------------------------------------- */

#define MAX_FRAMES 20000

typedef struct frame_log {
    const task_kind *kind;
    void *task;
    const ks_image *img;
    atomic_int stop;
    atomic_uint_fast64_t generation; /* model_generation after the last frame */
    atomic_uint_fast32_t num_frames;
    uint32_t failures;
    uint64_t hash[MAX_FRAMES];
    uint64_t gen[MAX_FRAMES];
} frame_log;

static void *frame_thread(void *arg) {
    frame_log *l = arg;
    int64_t ts = 0;
    while (!atomic_load(&l->stop)) {
        uint32_t i = (uint32_t)atomic_load(&l->num_frames), count = 0;
        if (i >= MAX_FRAMES) break;
        ts += 33333;
        uint64_t h = l->kind->run(l->task, l->img, ts, &count);
        ks_task_stats st;
        if (!h || l->kind->stats(l->task, &st)) {
            l->failures++;
            continue;
        }
        l->hash[i] = h;
        l->gen[i] = st.model_generation;
        atomic_store(&l->generation, st.model_generation);
        atomic_store(&l->num_frames, i + 1);
    }
    return NULL;
}

/* Waits until the frame thread has run a frame of generation `gen` (or 120 s). */
static void wait_generation(frame_log *l, uint64_t gen) {
    for (int i = 0; i < 120000 && atomic_load(&l->generation) < gen; i++)
        sleep_ms(1);
    assert_true(atomic_load(&l->generation) >= gen);
}

static void wait_frames(frame_log *l, uint32_t more) {
    uint32_t target = (uint32_t)atomic_load(&l->num_frames) + more;
    for (int i = 0; i < 120000 && atomic_load(&l->num_frames) < target; i++)
        sleep_ms(1);
    assert_true(atomic_load(&l->num_frames) >= target);
}

/* KS_TASK_SWAP_SUBSET=1 (the ThreadSanitizer pass, where each create takes seconds): only the
 * face tasks and the hands, which cover the three swap paths (task_common, the landmarker core,
 * a detector with a graph tracker). */
static bool subset_skips(const task_kind *k) {
    const char *e = getenv("KS_TASK_SWAP_SUBSET");
    if (!e || !e[0] || e[0] == '0') return false;
    return strcmp(k->name, "face_detector") != 0 && strcmp(k->name, "face_landmarker") != 0 &&
           strcmp(k->name, "hand_landmarker") != 0;
}

static void test_swap_kind(const task_kind *k) {
    char a[4096], b[4200], dir[4096];
    if (subset_skips(k)) {
        print_message("%s: left out (KS_TASK_SWAP_SUBSET)\n", k->name);
        return;
    }
    ks_image_buf img;
    if (!dt_bundle_file(k->bundle_a, a, sizeof(a)) ||
        (k->bundle_b && !dt_bundle_file(k->bundle_b, b, sizeof(b))) || load_photo(k->photo, &img)) {
        print_message("skipped %s: its bundles or %s are missing\n", k->name, k->photo);
        return;
    }
    if (!k->bundle_b) {
        dt_fresh_dir("swap_copy", dir, sizeof(dir));
        snprintf(b, sizeof(b), "%s/v2.ksb", dir);
        copy_file(a, b);
    }
    /* The reference result of each version, each from a task of its own. */
    uint64_t ref[2];
    uint32_t count[2] = {0, 0};
    for (int v = 0; v < 2; v++) {
        void *t = k->create(v ? b : a, KS_MODE_IMAGE);
        ref[v] = k->run(t, &img.image, 0, &count[v]);
        assert_true(ref[v] != 0);
        k->destroy(t);
    }
    assert_true(count[0] > 0 && count[1] > 0); /* each version finds something on the photo */
    if (k->bundle_b) assert_true(ref[0] != ref[1]);

    frame_log *l = calloc(1, sizeof(*l));
    assert_non_null(l);
    l->kind = k;
    l->img = &img.image;
    l->task = k->create(a, KS_MODE_IMAGE);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, frame_thread, l), 0);
    wait_frames(l, 2);
    /* Bad versions first: refused with create's status, the task keeps running version 1. */
    ks_task_options bad = {.model_path = "/nonexistent/v9.ksb"};
    assert_int_not_equal(k->swap(l->task, &bad), KS_STATUS_OK);
    assert_non_null(strstr(ks_last_error(NULL), "/nonexistent/v9.ksb"));
    assert_int_equal(k->swap(l->task, NULL), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(k->swap(NULL, &bad), KS_STATUS_INVALID_ARGUMENT);
    wait_frames(l, 2);
    assert_int_equal((int)atomic_load(&l->generation), 0);
    /* Four swaps: b, a, b, a. */
    const int num_swaps = 4;
    for (int s = 1; s <= num_swaps; s++) {
        ks_task_options src = {.model_path = (s % 2) ? b : a};
        assert_int_equal(k->swap(l->task, &src), KS_STATUS_OK);
        wait_generation(l, (uint64_t)s);
        wait_frames(l, 1);
    }
    atomic_store(&l->stop, 1);
    pthread_join(th, NULL);
    uint32_t n = (uint32_t)atomic_load(&l->num_frames);
    assert_int_equal(l->failures, 0);
    uint32_t per_gen[8] = {0};
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0) assert_true(l->gen[i] >= l->gen[i - 1]); /* never back to an older version */
        assert_true(l->gen[i] <= (uint64_t)num_swaps);
        /* generation g runs version a when g is even, b when odd: exactly that one's result */
        if (l->hash[i] != ref[l->gen[i] % 2])
            fail_msg("%s frame %u (generation %llu): result is not version %c's", k->name, i,
                     (unsigned long long)l->gen[i], l->gen[i] % 2 ? 'b' : 'a');
        per_gen[l->gen[i]]++;
    }
    for (int g = 0; g <= num_swaps; g++)
        assert_true(per_gen[g] > 0);
    print_message("%s: %u frames over %d swaps, each frame exactly one version's result\n", k->name,
                  n, num_swaps);
    k->destroy(l->task);
    free(l);
    ks_image_buf_free(&img);
}

static void test_face_detector(void **state) {
    (void)state;
    test_swap_kind(&kinds[0]);
}
static void test_face_landmarker(void **state) {
    (void)state;
    test_swap_kind(&kinds[1]);
}
static void test_pose(void **state) {
    (void)state;
    test_swap_kind(&kinds[2]);
}
static void test_hands(void **state) {
    (void)state;
    test_swap_kind(&kinds[3]);
}
static void test_segmenter(void **state) {
    (void)state;
    test_swap_kind(&kinds[4]);
}
static void test_classifier(void **state) {
    (void)state;
    test_swap_kind(&kinds[5]);
}
static void test_object_detector(void **state) {
    (void)state;
    test_swap_kind(&kinds[6]);
}

/* VIDEO: the face landmarker's track survives a swap (same id, the detector not rerun); the
 * face detector's graph tracker restarts, with ids above the ones reported before. */
static void test_video_tracks(void **state) {
    (void)state;
    char a[4096], b[4096], da[4096], db[4096];
    ks_image_buf img;
    if (!dt_bundle_file("face_landmarker.ksb", a, sizeof(a)) ||
        !dt_bundle_file("face_landmarker_attention.ksb", b, sizeof(b)) ||
        !dt_bundle_file("face_detector_short.ksb", da, sizeof(da)) ||
        !dt_bundle_file("face_detector_full.ksb", db, sizeof(db)) ||
        load_photo("coral_grace_hopper.bmp", &img)) {
        print_message("skipped: bundles or coral_grace_hopper.bmp missing\n");
        skip();
    }
    ks_face_landmarker *lm = fl_create(a, KS_MODE_VIDEO);
    int64_t ts = 0;
    int32_t id = -1;
    for (int f = 0; f < 6; f++) {
        ks_face_meshes *r = NULL;
        if (f == 3) {
            ks_task_options src = {.model_path = b};
            assert_int_equal(ks_face_landmarker_swap_model(lm, &src), KS_STATUS_OK);
        }
        assert_int_equal(ks_face_landmarker_detect(lm, &img.image, ts += 33333, &r), KS_STATUS_OK);
        assert_int_equal(r->count, 1);
        if (f == 0) id = r->items[0].id;
        assert_int_equal(r->items[0].id, id); /* one track across both versions */
        ks_task_stats st;
        assert_int_equal(ks_face_landmarker_stats(lm, &st), KS_STATUS_OK);
        assert_int_equal((int)st.model_generation, f >= 3 ? 1 : 0);
        ks_face_meshes_release(r);
    }
    ks_face_landmarker_destroy(lm);

    ks_face_detector *det = fd_create(da, KS_MODE_VIDEO);
    int32_t max_before = 0;
    for (int f = 0; f < 6; f++) {
        ks_faces *r = NULL;
        if (f == 3) {
            ks_task_options src = {.model_path = db};
            assert_int_equal(ks_face_detector_swap_model(det, &src), KS_STATUS_OK);
        }
        assert_int_equal(ks_face_detect(det, &img.image, ts += 33333, &r), KS_STATUS_OK);
        assert_true(r->count >= 1);
        for (uint32_t i = 0; i < r->count; i++) {
            assert_true(r->items[i].id >= 1);
            if (f < 3 && r->items[i].id > max_before) max_before = r->items[i].id;
            if (f >= 3) assert_true(r->items[i].id > max_before);
        }
        ks_faces_release(r);
    }
    ks_face_detector_destroy(det);
    ks_image_buf_free(&img);
}

/* An encrypted version (a ks-protect .ksm replacing the detector's model): refused without its
 * key and with a wrong one (the running version untouched), run with it. */
static void test_encrypted_version(void **state) {
    (void)state;
    char a[4096], ksm[4096], dir[4096], enc_path[4200];
    ks_image_buf img;
    if (!ks__ksme_available()) {
        print_message("skipped: built without libsodium\n");
        skip();
    }
    if (!dt_bundle_file("face_detector_short.ksb", a, sizeof(a)) ||
        !dt_bundle_file("ksm/face_detection_short_range.ksm", ksm, sizeof(ksm)) ||
        load_photo("coral_grace_hopper.bmp", &img)) {
        print_message("skipped: bundles or coral_grace_hopper.bmp missing\n");
        skip();
    }
    size_t plain_n = 0;
    uint8_t *plain = dt_read(ksm, &plain_n);
    assert_non_null(plain);
    uint8_t key[32], wrong[32];
    for (int i = 0; i < 32; i++) {
        key[i] = (uint8_t)(7 * i + 1);
        wrong[i] = (uint8_t)(key[i] ^ 0x5a);
    }
    uint8_t *enc = NULL;
    size_t enc_n = 0;
    char err[256];
    assert_int_equal(
        ks__ksme_encrypt(plain, plain_n, key, sizeof(key), 0, NULL, &enc, &enc_n, err, sizeof(err)),
        KS_STATUS_OK);
    dt_fresh_dir("swap_enc", dir, sizeof(dir));
    snprintf(enc_path, sizeof(enc_path), "%s/face_detection_short_range.ksm", dir);
    FILE *f = fopen(enc_path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(enc, 1, enc_n, f), enc_n);
    assert_int_equal(fclose(f), 0);
    ks__free(NULL, enc);
    free(plain);

    /* The default bundle this .ksm replaces a model of is the build's face_detector_short.ksb. */
    char bundles[4096];
    snprintf(bundles, sizeof(bundles), "%s", a);
    *strrchr(bundles, '/') = '\0';
    assert_int_equal(ks_set_models_dir(bundles), KS_STATUS_OK);
    ks_face_detector *det = fd_create(a, KS_MODE_IMAGE);
    uint32_t n = 0;
    uint64_t before = fd_run(det, &img.image, 0, &n);
    assert_true(before != 0 && n >= 1);
    ks_task_options src = {.model_path = enc_path};
    assert_int_equal(ks_face_detector_swap_model(det, &src), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "needs its key"));
    src.key = wrong;
    src.key_bytes = sizeof(wrong);
    assert_int_equal(ks_face_detector_swap_model(det, &src), KS_STATUS_TAMPERED);
    ks_task_stats st;
    assert_int_equal(fd_run(det, &img.image, 0, &n), before);
    assert_int_equal(ks_face_detector_stats(det, &st), KS_STATUS_OK);
    assert_int_equal((int)st.model_generation, 0);
    src.key = key;
    assert_int_equal(ks_face_detector_swap_model(det, &src), KS_STATUS_OK);
    assert_int_equal(fd_run(det, &img.image, 0, &n), before); /* the same model, decrypted */
    assert_int_equal(ks_face_detector_stats(det, &st), KS_STATUS_OK);
    assert_int_equal((int)st.model_generation, 1);
    ks_face_detector_destroy(det);
    assert_int_equal(ks_set_models_dir(NULL), KS_STATUS_OK);
    ks_image_buf_free(&img);
}

/* A swap that no frame took is released by the destroy (leak-checked under ASan), and a second
 * swap before a frame replaces the first. */
static void test_untaken_swaps(void **state) {
    (void)state;
    char a[4096], b[4096];
    ks_image_buf img;
    if (!dt_bundle_file("face_detector_short.ksb", a, sizeof(a)) ||
        !dt_bundle_file("face_detector_full.ksb", b, sizeof(b)) ||
        load_photo("coral_grace_hopper.bmp", &img)) {
        print_message("skipped: bundles or coral_grace_hopper.bmp missing\n");
        skip();
    }
    ks_face_detector *det = fd_create(a, KS_MODE_IMAGE);
    ks_task_options sa = {.model_path = a}, sb = {.model_path = b};
    assert_int_equal(ks_face_detector_swap_model(det, &sb), KS_STATUS_OK);
    ks_face_detector_destroy(det); /* the offer dies with the task */

    det = fd_create(a, KS_MODE_IMAGE);
    uint32_t n = 0;
    uint64_t ha = fd_run(det, &img.image, 0, &n);
    assert_int_equal(ks_face_detector_swap_model(det, &sb), KS_STATUS_OK);
    assert_int_equal(ks_face_detector_swap_model(det, &sa), KS_STATUS_OK); /* replaces b */
    assert_int_equal(fd_run(det, &img.image, 0, &n), ha);
    ks_task_stats st;
    assert_int_equal(ks_face_detector_stats(det, &st), KS_STATUS_OK);
    assert_int_equal((int)st.model_generation, 1); /* one swap taken */
    ks_face_detector_destroy(det);
    ks_image_buf_free(&img);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_face_detector),
        cmocka_unit_test(test_face_landmarker),
        cmocka_unit_test(test_pose),
        cmocka_unit_test(test_hands),
        cmocka_unit_test(test_segmenter),
        cmocka_unit_test(test_classifier),
        cmocka_unit_test(test_object_detector),
        cmocka_unit_test(test_video_tracks),
        cmocka_unit_test(test_encrypted_version),
        cmocka_unit_test(test_untaken_swaps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
