/* Sessions, tasks and their pipelines created and run from several threads at once, in a fresh
 * process, so each thread's first call races the others' one-time initialization (kernel
 * registry, CPU detection, CRC table, node registry). Every thread must get the result a single
 * thread gets. scripts/test also builds this test with ThreadSanitizer (build/tsan), which
 * reports any unsynchronized first use; the plain builds check the results.
 *
 * The engine case needs only a .ksm built into the build tree; the task cases need the bundles
 * and skip without them (a machine without models). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "image_io.h"
#include "kestrel/engine.h"
#include "kestrel/face.h"
#include "kestrel/segment.h"
#include "kestrel/vision.h"

#define NUM_THREADS 4
#define ASTRONAUT KS_SOURCE_DIR "/models/images/skimage_astronaut.png"

/* The build tree's bundles, or KS_TEST_BUNDLES_DIR (the ThreadSanitizer build builds no bundles
 * and borrows the Release build's). */
static const char *g_bundles = KS_BUNDLES_DIR;
static char g_face_ksm[1024];

static pthread_barrier_t g_start;

static int file_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

static void run_threads(void *(*fn)(void *), void *jobs, size_t job_bytes) {
    pthread_t t[NUM_THREADS];
    assert_int_equal(pthread_barrier_init(&g_start, NULL, NUM_THREADS), 0);
    for (int i = 0; i < NUM_THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, fn, (char *)jobs + (size_t)i * job_bytes), 0);
    for (int i = 0; i < NUM_THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&g_start);
}

/* ---- engine: load, create, reshape and run one model per thread ----------------------------- */

#define OUT_VALUES 64

typedef struct session_job {
    ks_status st;
    float out[OUT_VALUES]; /* the first values of output 0 */
    size_t n;
} session_job;

/* Loads the model, waits for the other threads (when `start` is set), then creates, reshapes
 * and runs a session: the session creations of all threads start together. */
static void session_run(session_job *job, pthread_barrier_t *start) {
    ks_model *model = NULL;
    ks_session *s = NULL;
    ks_tensor in, out;
    job->st = ks_model_load_file(g_face_ksm, NULL, &model);
    if (start) pthread_barrier_wait(start);
    ks_session_desc desc = {.num_threads = 2}; /* the thread pool runs under each session too */
    if (!job->st) job->st = ks_session_create(model, &desc, &s);
    if (!job->st) job->st = ks_session_reshape(s, NULL);
    if (!job->st) job->st = ks_session_input(s, 0, &in);
    if (!job->st) {
        float *x = in.data;
        for (size_t i = 0; i < in.size_bytes / sizeof(float); i++)
            x[i] = (float)((i * 37u) % 255u) / 127.5f - 1.0f;
        job->st = ks_session_run(s);
    }
    if (!job->st) job->st = ks_session_output(s, 0, &out);
    if (!job->st) {
        job->n = out.size_bytes / sizeof(float);
        if (job->n > OUT_VALUES) job->n = OUT_VALUES;
        memcpy(job->out, out.data, job->n * sizeof(float));
    }
    ks_session_destroy(s);
    ks_model_destroy(model);
}

static void *session_thread(void *arg) {
    session_run(arg, &g_start);
    return NULL;
}

static void test_sessions_from_threads(void **state) {
    (void)state;
    if (!file_exists(g_face_ksm)) skip();
    session_job jobs[NUM_THREADS];
    memset(jobs, 0, sizeof(jobs));
    run_threads(session_thread, jobs, sizeof(jobs[0]));
    session_job ref;
    memset(&ref, 0, sizeof(ref));
    session_run(&ref, NULL);
    assert_int_equal(ref.st, KS_STATUS_OK);
    assert_true(ref.n > 0);
    for (int i = 0; i < NUM_THREADS; i++) {
        assert_int_equal(jobs[i].st, KS_STATUS_OK);
        assert_int_equal(jobs[i].n, ref.n);
        assert_memory_equal(jobs[i].out, ref.out, ref.n * sizeof(float));
    }
}

/* ---- tasks: each thread creates its own detector, landmarker and segmenter ------------------- */

static ks_image_buf g_photo;

typedef struct task_job {
    ks_status st;
    uint32_t faces;
    ks_box box;
    float landmark0[3];
    uint32_t mask_w, mask_h;
    double mask_sum;
} task_job;

static void task_run(task_job *job) {
    ks_face_detector *det = NULL;
    ks_face_landmarker *lm = NULL;
    ks_segmenter *seg = NULL;
    ks_faces *faces = NULL;
    ks_face_meshes *marks = NULL;
    ks_segmentation *mask = NULL;
    ks_face_detector_desc dd = {.model = KS_FACE_DETECTOR_SHORT_RANGE};
    ks_face_landmarker_desc ld = {.task = {.mode = KS_MODE_VIDEO}};
    ks_segmenter_desc sd = {0};
    job->st = ks_face_detector_create(&dd, &det);
    if (!job->st) job->st = ks_face_landmarker_create(&ld, &lm);
    if (!job->st) job->st = ks_segmenter_create(&sd, &seg);
    if (!job->st) job->st = ks_face_detect(det, &g_photo.image, 0, &faces);
    if (!job->st) {
        job->faces = faces->count;
        if (faces->count) job->box = faces->items[0].box;
    }
    /* Two VIDEO frames: the second one takes the tracking path. */
    for (int frame = 0; frame < 2 && !job->st; frame++) {
        ks_face_meshes_release(marks);
        marks = NULL;
        job->st = ks_face_landmarker_detect(lm, &g_photo.image, frame * 33333, &marks);
    }
    if (!job->st && marks->count) {
        job->landmark0[0] = marks->items[0].landmarks[0].x;
        job->landmark0[1] = marks->items[0].landmarks[0].y;
        job->landmark0[2] = marks->items[0].landmarks[0].z;
    }
    if (!job->st) job->st = ks_segment(seg, &g_photo.image, 0, &mask);
    if (!job->st) {
        job->mask_w = (uint32_t)mask->width_px;
        job->mask_h = (uint32_t)mask->height_px;
        for (size_t i = 0; i < (size_t)mask->width_px * (size_t)mask->height_px; i++)
            job->mask_sum += mask->mask[i];
    }
    ks_segmentation_release(mask);
    ks_face_meshes_release(marks);
    ks_faces_release(faces);
    ks_segmenter_destroy(seg);
    ks_face_landmarker_destroy(lm);
    ks_face_detector_destroy(det);
}

static void *task_thread(void *arg) {
    pthread_barrier_wait(&g_start);
    task_run(arg);
    return NULL;
}

static void test_tasks_from_threads(void **state) {
    (void)state;
    char path[512];
    snprintf(path, sizeof(path), "%s/face_detector_short.ksb", g_bundles);
    if (!file_exists(path) || !file_exists(ASTRONAUT)) skip();
    task_job jobs[NUM_THREADS];
    memset(jobs, 0, sizeof(jobs));
    run_threads(task_thread, jobs, sizeof(jobs[0]));
    task_job ref;
    memset(&ref, 0, sizeof(ref));
    task_run(&ref);
    assert_int_equal(ref.st, KS_STATUS_OK);
    assert_int_equal(ref.faces, 1);
    assert_true(ref.mask_w > 0 && ref.mask_sum > 0.0);
    for (int i = 0; i < NUM_THREADS; i++) {
        assert_int_equal(jobs[i].st, KS_STATUS_OK);
        /* Same code, same input, one thread each: bit-identical results. */
        assert_memory_equal(&jobs[i], &ref, sizeof(ref));
    }
}

static int setup(void **state) {
    (void)state;
    const char *env = getenv("KS_TEST_BUNDLES_DIR");
    if (env && env[0]) g_bundles = env;
    snprintf(g_face_ksm, sizeof(g_face_ksm), "%s/ksm/face_detection_short_range.ksm", g_bundles);
    if (ks_set_models_dir(g_bundles) != KS_STATUS_OK) return -1;
    char err[256];
    if (file_exists(ASTRONAUT) && ks_image_load(ASTRONAUT, 0, &g_photo, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ks_image_buf_free(&g_photo);
    return 0;
}

int main(void) {
    /* Sessions first: their threads are the first users of the engine in this process. */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sessions_from_threads),
        cmocka_unit_test(test_tasks_from_threads),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
