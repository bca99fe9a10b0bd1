/* ks-taskbench: end-to-end latency of every task API on a 640x480 RGB frame (the astronaut photo
 * letterboxed into it), in IMAGE and VIDEO mode and with 1 and 2 threads, as the median of
 * repeated calls after a warm-up (and the fastest call). In VIDEO mode the same frame is fed with
 * increasing timestamps, so the landmark tasks run in their tracking steady state (detector
 * skipped). Not a test: no timing assertions. Prints a markdown table.
 *
 *   ks-taskbench [--runs N] [--image PATH] [--models DIR] [--task NAME]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "image_io.h"
#include "kestrel/classify.h"
#include "kestrel/detect.h"
#include "kestrel/face.h"
#include "kestrel/hand.h"
#include "kestrel/pose.h"
#include "kestrel/segment.h"

#define FRAME_WIDTH_PX 640
#define FRAME_HEIGHT_PX 480
#define WARMUP_RUNS 3
#define DEFAULT_RUNS 30
#define MAX_RUNS 1000
#define FRAME_PERIOD_US 33333

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- one create / run / destroy triple per task ---- */

typedef struct task_entry {
    const char *name;
    const char *bundle; /* default bundle, for the "missing" message */
    ks_status (*create)(const ks_task_options *opt, void **out);
    ks_status (*run)(void *task, const ks_image *image, int64_t timestamp_us);
    void (*destroy)(void *task);
} task_entry;

static ks_status face_detect_create(const ks_task_options *opt, void **out) {
    ks_face_detector_desc d = {.task = *opt};
    return ks_face_detector_create(&d, (ks_face_detector **)out);
}
static ks_status face_detect_run(void *t, const ks_image *img, int64_t ts) {
    ks_faces *r = NULL;
    ks_status st = ks_face_detect(t, img, ts, &r);
    ks_faces_release(r);
    return st;
}
static void face_detect_destroy(void *t) {
    ks_face_detector_destroy(t);
}

static ks_status face_mesh_create(const ks_task_options *opt, void **out) {
    ks_face_landmarker_desc d = {.task = *opt};
    return ks_face_landmarker_create(&d, (ks_face_landmarker **)out);
}
static ks_status face_mesh_run(void *t, const ks_image *img, int64_t ts) {
    ks_face_meshes *r = NULL;
    ks_status st = ks_face_landmarker_detect(t, img, ts, &r);
    ks_face_meshes_release(r);
    return st;
}
static void face_mesh_destroy(void *t) {
    ks_face_landmarker_destroy(t);
}

static ks_status pose_create(const ks_task_options *opt, void **out) {
    ks_pose_landmarker_desc d = {.task = *opt};
    return ks_pose_landmarker_create(&d, (ks_pose_landmarker **)out);
}
static ks_status pose_run(void *t, const ks_image *img, int64_t ts) {
    ks_poses *r = NULL;
    ks_status st = ks_pose_detect(t, img, ts, &r);
    ks_poses_release(r);
    return st;
}
static void pose_destroy(void *t) {
    ks_pose_landmarker_destroy(t);
}

static ks_status hands_create(const ks_task_options *opt, void **out) {
    ks_hand_landmarker_desc d = {.task = *opt};
    return ks_hand_landmarker_create(&d, (ks_hand_landmarker **)out);
}
static ks_status hands_run(void *t, const ks_image *img, int64_t ts) {
    ks_hands *r = NULL;
    ks_status st = ks_hands_detect(t, img, ts, &r);
    ks_hands_release(r);
    return st;
}
static void hands_destroy(void *t) {
    ks_hand_landmarker_destroy(t);
}

static ks_status segment_create(const ks_task_options *opt, void **out) {
    ks_segmenter_desc d = {.task = *opt};
    return ks_segmenter_create(&d, (ks_segmenter **)out);
}
static ks_status segment_run(void *t, const ks_image *img, int64_t ts) {
    ks_segmentation *r = NULL;
    ks_status st = ks_segment(t, img, ts, &r);
    ks_segmentation_release(r);
    return st;
}
static void segment_destroy(void *t) {
    ks_segmenter_destroy(t);
}

static ks_status detect_create(const ks_task_options *opt, void **out) {
    ks_object_detector_desc d = {.task = *opt};
    return ks_object_detector_create(&d, (ks_object_detector **)out);
}
static ks_status detect_run(void *t, const ks_image *img, int64_t ts) {
    ks_detected_objects *r = NULL;
    ks_status st = ks_object_detect(t, img, ts, &r);
    ks_detected_objects_release(r);
    return st;
}
static void detect_destroy(void *t) {
    ks_object_detector_destroy(t);
}

static ks_status classify_create(const ks_task_options *opt, void **out) {
    ks_image_classifier_desc d = {.task = *opt};
    d.task.mode = KS_MODE_IMAGE; /* a single-image task */
    return ks_image_classifier_create(&d, (ks_image_classifier **)out);
}
static ks_status classify_run(void *t, const ks_image *img, int64_t ts) {
    ks_classifications *r = NULL;
    ks_status st = ks_image_classify(t, img, ts, &r);
    ks_classifications_release(r);
    return st;
}
static void classify_destroy(void *t) {
    ks_image_classifier_destroy(t);
}

static const task_entry kTasks[] = {
    {"face_detect", "face_detector_short.ksb", face_detect_create, face_detect_run,
     face_detect_destroy},
    {"face_landmarks", "face_landmarker.ksb", face_mesh_create, face_mesh_run, face_mesh_destroy},
    {"pose", "pose_landmarker_full.ksb", pose_create, pose_run, pose_destroy},
    {"hands", "hand_landmarker_full.ksb", hands_create, hands_run, hands_destroy},
    {"segment", "selfie_segmenter.ksb", segment_create, segment_run, segment_destroy},
    {"detect", "object_detector_yolox.ksb", detect_create, detect_run, detect_destroy},
    {"classify", "classifier_mobilenet_v2.ksb", classify_create, classify_run, classify_destroy},
};

/* Median latency (ms) of one task configuration, and the fastest call in *min_ms (the machine
 * may be shared: the gap between the two shows the noise); < 0 when it cannot be created or
 * fails. */
static double bench_task(const task_entry *e, const ks_image *frame, ks_running_mode mode,
                         int32_t num_threads, int runs, double *times, double *min_ms) {
    ks_task_options opt = {.mode = mode, .num_threads = num_threads};
    void *task = NULL;
    if (e->create(&opt, &task)) {
        fprintf(stderr, "%s: %s\n", e->name, ks_last_error(NULL));
        return -1.0;
    }
    double result = -1.0;
    int64_t ts = 0;
    for (int i = 0; i < WARMUP_RUNS + runs; i++, ts += FRAME_PERIOD_US) {
        double t0 = now_ms();
        if (e->run(task, frame, ts)) {
            fprintf(stderr, "%s: %s\n", e->name, ks_last_error(task));
            goto done;
        }
        if (i >= WARMUP_RUNS) times[i - WARMUP_RUNS] = now_ms() - t0;
    }
    result = median(times, runs);
    *min_ms = times[0]; /* sorted by median() */
done:
    e->destroy(task);
    return result;
}

/* The photo letterboxed (uniform scale, centred, gray border) into a 640x480 RGB frame. */
static int make_frame(const ks_image *photo, uint8_t *rgb, ks_image *frame) {
    ks_tensor dst = {
        .info = {.dtype = KS_DTYPE_U8,
                 .shape = {.rank = 4, .dims = {1, FRAME_HEIGHT_PX, FRAME_WIDTH_PX, 3}}},
        .data = rgb,
        .size_bytes = (size_t)FRAME_WIDTH_PX * FRAME_HEIGHT_PX * 3};
    ks_image_to_tensor_desc d = {.border = KS_BORDER_CONSTANT, .border_value = {128, 128, 128}};
    if (ks_affine_letterbox(photo->width_px, photo->height_px, FRAME_WIDTH_PX, FRAME_HEIGHT_PX, d.m,
                            NULL) ||
        ks_image_to_tensor(photo, &d, &dst)) {
        fprintf(stderr, "cannot make the frame: %s\n", ks_last_error(NULL));
        return -1;
    }
    *frame = (ks_image){.format = KS_PIXEL_FORMAT_RGB,
                        .width_px = FRAME_WIDTH_PX,
                        .height_px = FRAME_HEIGHT_PX,
                        .planes = {rgb},
                        .stride_bytes = {FRAME_WIDTH_PX * 3}};
    return 0;
}

static void usage(void) {
    fprintf(stderr, "usage: ks-taskbench [--runs N] [--image PATH] [--models DIR] [--task NAME]\n");
}

int main(int argc, char **argv) {
    int runs = DEFAULT_RUNS;
    const char *image_path = KS_SOURCE_DIR "/models/images/skimage_astronaut.png";
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--image") == 0 && i + 1 < argc) {
            image_path = argv[++i];
        } else if (strcmp(argv[i], "--models") == 0 && i + 1 < argc) {
            if (ks_set_models_dir(argv[++i])) {
                fprintf(stderr, "%s\n", ks_last_error(NULL));
                return 2;
            }
        } else if (strcmp(argv[i], "--task") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else {
            usage();
            return 2;
        }
    }
    if (runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "--runs must be 1..%d\n", MAX_RUNS);
        return 2;
    }
    char err[256];
    ks_image_buf photo = {0};
    if (ks_image_load(image_path, 0, &photo, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int rc = 1;
    uint8_t *rgb = malloc((size_t)FRAME_WIDTH_PX * FRAME_HEIGHT_PX * 3);
    double *times = malloc((size_t)runs * sizeof(double));
    ks_image frame;
    if (!rgb || !times || make_frame(&photo.image, rgb, &frame)) goto done;
    printf("Input: %s letterboxed into %dx%d RGB; median of %d calls after %d warm-up calls; "
           "models from %s\n\n",
           image_path, FRAME_WIDTH_PX, FRAME_HEIGHT_PX, runs, WARMUP_RUNS, ks_models_dir());
    printf("Cells: median (fastest) ms per call.\n\n");
    printf("| task | default bundle | IMAGE 1T | IMAGE 2T | VIDEO 1T | VIDEO 2T |\n");
    printf("| --- | --- | ---: | ---: | ---: | ---: |\n");
    for (size_t k = 0; k < sizeof(kTasks) / sizeof(kTasks[0]); k++) {
        const task_entry *e = &kTasks[k];
        if (only && strcmp(only, e->name) != 0) continue;
        printf("| %s | %s |", e->name, e->bundle);
        for (int mode = 0; mode < 2; mode++) {
            for (int32_t threads = 1; threads <= 2; threads++) {
                double min_ms = 0.0;
                double ms = bench_task(e, &frame, mode ? KS_MODE_VIDEO : KS_MODE_IMAGE, threads,
                                       runs, times, &min_ms);
                if (ms < 0.0)
                    printf(" n/a |");
                else
                    printf(" %.1f (%.1f) |", ms, min_ms);
                fflush(stdout);
            }
        }
        printf("\n");
    }
    rc = 0;
done:
    free(times);
    free(rgb);
    ks_image_buf_free(&photo);
    return rc;
}
