/* ks-taskbench: end-to-end latency of every task API on a 640x480 camera frame (the astronaut
 * photo letterboxed into it; NV21 as from an Android camera by default, or RGB), in IMAGE and
 * VIDEO mode and with 1 and 2 threads, as the median of repeated calls after a warm-up (and the
 * fastest call), and where each call's time goes (ks_task_stats: preprocessing, each model,
 * postprocessing, the rest). In VIDEO mode the same frame is fed with increasing timestamps, so
 * the landmark tasks run in their tracking steady state (detector skipped). Not a test: no timing
 * assertions. Prints markdown tables, or with --json one JSON object per line for each task, mode
 * and thread count (task, mode, threads, format, runs, total_ms, min_ms, inference_ms,
 * overhead_ms, overhead_fraction, stages[] of name, kind, runs per call, ms; medians).
 *
 *   ks-taskbench [--json] [--runs N] [--threads T] [--format nv21|rgb] [--image PATH]
 *                [--models DIR] [--task NAME] [--dump-frame OUT.ppm]
 * (--dump-frame writes the RGB frame and exits: peers are timed on the same pixels.)
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
    ks_status (*stats)(const void *task, ks_task_stats *out);
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
static ks_status face_detect_stats(const void *t, ks_task_stats *out) {
    return ks_face_detector_stats(t, out);
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
static ks_status face_mesh_stats(const void *t, ks_task_stats *out) {
    return ks_face_landmarker_stats(t, out);
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
static ks_status pose_stats(const void *t, ks_task_stats *out) {
    return ks_pose_landmarker_stats(t, out);
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
static ks_status hands_stats(const void *t, ks_task_stats *out) {
    return ks_hand_landmarker_stats(t, out);
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
static ks_status segment_stats(const void *t, ks_task_stats *out) {
    return ks_segmenter_stats(t, out);
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
static ks_status detect_stats(const void *t, ks_task_stats *out) {
    return ks_object_detector_stats(t, out);
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
static ks_status classify_stats(const void *t, ks_task_stats *out) {
    return ks_image_classifier_stats(t, out);
}

static const task_entry kTasks[] = {
    {"face_detect", "face_detector_short.ksb", face_detect_create, face_detect_run,
     face_detect_destroy, face_detect_stats},
    {"face_landmarks", "face_landmarker.ksb", face_mesh_create, face_mesh_run, face_mesh_destroy,
     face_mesh_stats},
    {"pose", "pose_landmarker_full.ksb", pose_create, pose_run, pose_destroy, pose_stats},
    {"hands", "hand_landmarker_full.ksb", hands_create, hands_run, hands_destroy, hands_stats},
    {"segment", "selfie_segmenter.ksb", segment_create, segment_run, segment_destroy,
     segment_stats},
    {"detect", "object_detector_yolox.ksb", detect_create, detect_run, detect_destroy,
     detect_stats},
    {"classify", "classifier_mobilenet_v2.ksb", classify_create, classify_run, classify_destroy,
     classify_stats},
};

/* One task configuration's medians over the timed calls: wall time per call, and per stage of
 * ks_task_stats (the difference of the stats around each call). */
typedef struct bench_result {
    double total_ms, min_ms, inference_ms;
    uint32_t num_stages;
    ks_task_stage stages[KS_TASK_MAX_STAGES]; /* total_ms: median per call; num_runs: per call */
} bench_result;

typedef struct bench_scratch {
    double *total, *inference, *stage[KS_TASK_MAX_STAGES];
    uint64_t runs_per_call[KS_TASK_MAX_STAGES];
} bench_scratch;

/* Runs one configuration; -1 when it cannot be created or fails (message on stderr). */
static int bench_task(const task_entry *e, const ks_image *frame, ks_running_mode mode,
                      int32_t num_threads, int runs, bench_scratch *sc, bench_result *r) {
    ks_task_options opt = {.mode = mode, .num_threads = num_threads};
    void *task = NULL;
    if (e->create(&opt, &task)) {
        fprintf(stderr, "%s: %s\n", e->name, ks_last_error(NULL));
        return -1;
    }
    int rc = -1;
    int64_t ts = 0;
    ks_task_stats before, after;
    memset(r, 0, sizeof(*r));
    for (int i = 0; i < WARMUP_RUNS + runs; i++, ts += FRAME_PERIOD_US) {
        if (e->stats(task, &before)) goto done;
        double t0 = now_ms();
        if (e->run(task, frame, ts)) {
            fprintf(stderr, "%s: %s\n", e->name, ks_last_error(task));
            goto done;
        }
        double dt = now_ms() - t0;
        if (e->stats(task, &after) || after.num_stages != before.num_stages) goto done;
        if (i < WARMUP_RUNS) continue;
        int k = i - WARMUP_RUNS;
        sc->total[k] = dt;
        sc->inference[k] = after.inference_ms - before.inference_ms;
        r->num_stages = after.num_stages;
        for (uint32_t j = 0; j < after.num_stages; j++) {
            r->stages[j] = after.stages[j];
            sc->stage[j][k] = after.stages[j].total_ms - before.stages[j].total_ms;
            if (k == runs - 1)
                sc->runs_per_call[j] =
                    (after.stages[j].num_runs - before.stages[j].num_runs); /* last call */
        }
    }
    r->total_ms = median(sc->total, runs);
    r->min_ms = sc->total[0]; /* sorted by median() */
    r->inference_ms = median(sc->inference, runs);
    for (uint32_t j = 0; j < r->num_stages; j++) {
        r->stages[j].total_ms = median(sc->stage[j], runs);
        r->stages[j].num_runs = sc->runs_per_call[j];
    }
    rc = 0;
done:
    e->destroy(task);
    return rc;
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

static uint8_t clamp_u8(double v) {
    return v < 0.0 ? 0 : (v > 255.0 ? 255 : (uint8_t)(v + 0.5));
}

/* The RGB frame as an Android camera would deliver it: NV21, BT.601 video range (chroma of each
 * 2x2 block averaged). */
static void make_nv21(const uint8_t *rgb, uint8_t *nv21, ks_image *frame) {
    const int w = FRAME_WIDTH_PX, h = FRAME_HEIGHT_PX;
    uint8_t *vu = nv21 + (size_t)w * h;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t *p = rgb + 3 * ((size_t)y * w + x);
            nv21[(size_t)y * w + x] =
                clamp_u8(16.0 + 0.256788 * p[0] + 0.504129 * p[1] + 0.097906 * p[2]);
        }
    for (int y = 0; y < h; y += 2)
        for (int x = 0; x < w; x += 2) {
            double r = 0, g = 0, b = 0;
            for (int k = 0; k < 4; k++) {
                const uint8_t *p = rgb + 3 * ((size_t)(y + k / 2) * w + x + k % 2);
                r += p[0];
                g += p[1];
                b += p[2];
            }
            r *= 0.25;
            g *= 0.25;
            b *= 0.25;
            uint8_t *c = vu + (size_t)(y / 2) * w + x;
            c[0] = clamp_u8(128.0 + 0.439216 * r - 0.367788 * g - 0.071427 * b); /* V */
            c[1] = clamp_u8(128.0 - 0.148223 * r - 0.290993 * g + 0.439216 * b); /* U */
        }
    *frame = (ks_image){.format = KS_PIXEL_FORMAT_NV21,
                        .width_px = w,
                        .height_px = h,
                        .planes = {nv21, vu},
                        .stride_bytes = {w, w}};
}

static void usage(void) {
    fprintf(stderr, "usage: ks-taskbench [--json] [--runs N] [--threads T] [--format nv21|rgb] "
                    "[--image PATH] [--models DIR] [--task NAME] [--dump-frame OUT.ppm]\n");
}

/* Trackers are judged in VIDEO mode, single-image tasks in IMAGE mode (issue 17's acceptance). */
static int is_tracker(const char *name) {
    return strcmp(name, "face_landmarks") == 0 || strcmp(name, "pose") == 0 ||
           strcmp(name, "hands") == 0;
}

static void print_json(const task_entry *e, ks_running_mode mode, int32_t threads,
                       const char *format, int runs, const bench_result *r) {
    double overhead = r->total_ms - r->inference_ms;
    printf("{\"task\":\"%s\",\"mode\":\"%s\",\"threads\":%d,\"format\":\"%s\",\"runs\":%d,"
           "\"total_ms\":%.4f,\"min_ms\":%.4f,\"inference_ms\":%.4f,\"overhead_ms\":%.4f,"
           "\"overhead_fraction\":%.4f,\"stages\":[",
           e->name, mode == KS_MODE_VIDEO ? "VIDEO" : "IMAGE", (int)threads, format, runs,
           r->total_ms, r->min_ms, r->inference_ms, overhead,
           r->total_ms > 0.0 ? overhead / r->total_ms : 0.0);
    for (uint32_t j = 0; j < r->num_stages; j++)
        printf("%s{\"name\":\"%s\",\"kind\":\"%s\",\"runs\":%llu,\"ms\":%.4f}", j ? "," : "",
               r->stages[j].name, ks_task_stage_kind_string(r->stages[j].kind),
               (unsigned long long)r->stages[j].num_runs, r->stages[j].total_ms);
    printf("]}\n");
    fflush(stdout);
}

int main(int argc, char **argv) {
    int runs = DEFAULT_RUNS, json = 0, threads_only = 0;
    const char *image_path = KS_SOURCE_DIR "/models/images/skimage_astronaut.png";
    const char *only = NULL, *format = "nv21", *dump_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads_only = atoi(argv[++i]);
            if (threads_only < 1 || threads_only > 64) {
                fprintf(stderr, "--threads must be 1..64\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--format") == 0 && i + 1 < argc) {
            format = argv[++i];
            if (strcmp(format, "nv21") != 0 && strcmp(format, "rgb") != 0) {
                fprintf(stderr, "--format takes nv21 or rgb\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--dump-frame") == 0 && i + 1 < argc) {
            dump_path = argv[++i];
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
    size_t npx = (size_t)FRAME_WIDTH_PX * FRAME_HEIGHT_PX;
    uint8_t *rgb = malloc(npx * 3), *nv21 = malloc(npx * 3 / 2);
    bench_scratch sc = {0};
    sc.total = malloc((size_t)runs * sizeof(double));
    sc.inference = malloc((size_t)runs * sizeof(double));
    int ok = rgb && nv21 && sc.total && sc.inference;
    for (int j = 0; j < KS_TASK_MAX_STAGES; j++)
        ok = ok && (sc.stage[j] = malloc((size_t)runs * sizeof(double))) != NULL;
    ks_image frame;
    if (!ok || make_frame(&photo.image, rgb, &frame)) goto done;
    if (dump_path) {
        /* The RGB frame as a binary PPM, for peers timed on the same pixels
         * (bench/tasks_vs_mediapipe.py). */
        FILE *f = fopen(dump_path, "wb");
        int ok_dump = f && fprintf(f, "P6\n%d %d\n255\n", FRAME_WIDTH_PX, FRAME_HEIGHT_PX) > 0 &&
                      fwrite(rgb, 1, npx * 3, f) == npx * 3;
        if (f && fclose(f) != 0) ok_dump = 0;
        if (!ok_dump) {
            fprintf(stderr, "cannot write %s\n", dump_path);
            goto done;
        }
        rc = 0;
        goto done;
    }
    if (strcmp(format, "nv21") == 0) make_nv21(rgb, nv21, &frame);
    int t_lo = threads_only ? threads_only : 1, t_hi = threads_only ? threads_only : 2;
    if (!json) {
        printf("Input: %s letterboxed into a %dx%d %s frame; median of %d calls after %d warm-up "
               "calls; models from %s\n\n",
               image_path, FRAME_WIDTH_PX, FRAME_HEIGHT_PX, format, runs, WARMUP_RUNS,
               ks_models_dir());
        printf("Cells: median (fastest) ms per call.\n\n");
        printf("| task | default bundle |");
        for (int mode = 0; mode < 2; mode++)
            for (int t = t_lo; t <= t_hi; t++)
                printf(" %s %dT |", mode ? "VIDEO" : "IMAGE", t);
        printf("\n| --- | --- |");
        for (int k = 0; k < 2 * (t_hi - t_lo + 1); k++)
            printf(" ---: |");
        printf("\n");
    }
    /* The breakdown table (markdown): each task in its judged mode at the lowest thread count. */
    bench_result judged[sizeof(kTasks) / sizeof(kTasks[0])];
    int have_judged[sizeof(kTasks) / sizeof(kTasks[0])] = {0};
    for (size_t k = 0; k < sizeof(kTasks) / sizeof(kTasks[0]); k++) {
        const task_entry *e = &kTasks[k];
        if (only && strcmp(only, e->name) != 0) continue;
        if (!json) printf("| %s | %s |", e->name, e->bundle);
        for (int mode = 0; mode < 2; mode++) {
            for (int32_t t = t_lo; t <= t_hi; t++) {
                bench_result r;
                ks_running_mode m = mode ? KS_MODE_VIDEO : KS_MODE_IMAGE;
                int failed = bench_task(e, &frame, m, t, runs, &sc, &r);
                if (json) {
                    if (!failed) print_json(e, m, t, format, runs, &r);
                    continue;
                }
                if (failed)
                    printf(" n/a |");
                else
                    printf(" %.1f (%.1f) |", r.total_ms, r.min_ms);
                fflush(stdout);
                if (!failed && t == t_lo && mode == is_tracker(e->name)) {
                    judged[k] = r;
                    have_judged[k] = 1;
                }
            }
        }
        if (!json) printf("\n");
    }
    if (!json) {
        printf("\nWhere the time goes (%d thread%s; VIDEO mode for the trackers, IMAGE for the "
               "others): median ms per call of each stage, with the runs per call.\n\n",
               t_lo, t_lo > 1 ? "s" : "");
        printf("| task | mode | total | inference | outside inference | stages |\n");
        printf("| --- | --- | ---: | ---: | ---: | --- |\n");
        for (size_t k = 0; k < sizeof(kTasks) / sizeof(kTasks[0]); k++) {
            if (!have_judged[k]) continue;
            const bench_result *r = &judged[k];
            double out = r->total_ms - r->inference_ms;
            printf("| %s | %s | %.2f | %.2f | %.2f (%.0f %%) |", kTasks[k].name,
                   is_tracker(kTasks[k].name) ? "VIDEO" : "IMAGE", r->total_ms, r->inference_ms,
                   out, r->total_ms > 0.0 ? 100.0 * out / r->total_ms : 0.0);
            for (uint32_t j = 0; j < r->num_stages; j++)
                printf("%s %s %.2f (x%llu)", j ? "," : "", r->stages[j].name, r->stages[j].total_ms,
                       (unsigned long long)r->stages[j].num_runs);
            printf(" |\n");
        }
    }
    rc = 0;
done:
    for (int j = 0; j < KS_TASK_MAX_STAGES; j++)
        free(sc.stage[j]);
    free(sc.total);
    free(sc.inference);
    free(nv21);
    free(rgb);
    ks_image_buf_free(&photo);
    return rc;
}
