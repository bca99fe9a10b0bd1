/* Kestrel task APIs: types shared by every box-ready task (face, pose, hands, segmentation,
 * object detection, classification).
 *
 * Usage (every task follows the same pattern):
 *     ks_face_detector *det = NULL;
 *     ks_face_detector_desc desc = { .task = { .mode = KS_MODE_VIDEO, .min_score = 0.5f } };
 *     if (ks_face_detector_create(&desc, &det)) fprintf(stderr, "%s\n", ks_last_error(NULL));
 *     ks_image img = { .format = KS_PIXEL_FORMAT_NV21, ... };   // see kestrel/imgproc.h
 *     ks_faces *faces = NULL;
 *     if (ks_face_detect(det, &img, timestamp_us, &faces) == KS_STATUS_OK) {
 *         for (uint32_t i = 0; i < faces->count; i++) use(faces->items[i].box);
 *         ks_faces_release(faces);
 *     }
 *     ks_face_detector_destroy(det);
 *
 * Conventions: results are in upright image pixels (after the desc's rotation and mirror are
 * undone), boxes are {x, y, w, h}; result structs are allocated by the task and released
 * explicitly with their *_release function; desc structs treat zero as "default".
 *
 * Thread safety: a task object is used by one thread at a time (VIDEO mode keeps per-stream
 * state); different task objects may run concurrently. Result structs are plain data.
 */
#ifndef KESTREL_VISION_H
#define KESTREL_VISION_H

#include "kestrel/engine.h"
#include "kestrel/imgproc.h"
#include "kestrel/kestrel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ks_running_mode {
    KS_MODE_IMAGE = 0, /* independent photos: every call detects from scratch */
    KS_MODE_VIDEO = 1, /* a stream: tracking, stable ids and smoothing; timestamps must increase */
    KS_MODE_COUNT
} ks_running_mode;

typedef struct ks_point2f {
    float x, y;
} ks_point2f;

typedef struct ks_point3f {
    float x, y, z;
} ks_point3f;

/* Axis-aligned box in image pixels: top-left corner and size. */
typedef struct ks_box {
    float x, y, w, h;
} ks_box;

/* Bytes of a ks-protect key (ks_task_options.key, ks_task_key_fn). */
#define KS_TASK_KEY_BYTES 32

/* Supplies the key of an encrypted (ks-protect, "KSME") model when a task meets one: called
 * during the task's create, on the creating thread, once per encrypted model, with `model_name`
 * the bundle entry name (e.g. "face_landmarks") or, for a .ksm given as model_path, that path.
 * Write KS_TASK_KEY_BYTES bytes to key_out (room for key_cap bytes), set *key_bytes_out and
 * return KS_STATUS_OK; any other status refuses the model and create fails with it. The task
 * wipes key_out before create returns; the callback should wipe its own copies. */
typedef ks_status (*ks_task_key_fn)(void *user, const char *model_name, uint8_t *key_out,
                                    size_t key_cap, size_t *key_bytes_out);

/* Options common to every task (the `task` member of each task's desc). Zero = default. */
typedef struct ks_task_options {
    ks_running_mode mode;
    int32_t num_threads;  /* 0: 1 */
    float min_score;      /* 0: the task's default threshold */
    int32_t max_results;  /* 0: the task's default (e.g. 1 face for landmarks) */
    ks_rotation rotation; /* how the input is rotated (camera sensor orientation) */
    int32_t mirror;       /* non-zero: input is mirrored (front camera) */
    ks_box roi;           /* w == 0: whole image; else only this region is searched */
    float smoothing;      /* VIDEO: 0 default, < 0 off, else One Euro min_cutoff (Hz) */
    /* .ksb bundle; or a .ksm that replaces the default bundle's one model with the same input
     * and output names, dtypes and ranks (e.g. an int8 model from ks-quant); NULL: the task's
     * default bundle (see docs/tasks.md) */
    const char *model_path;
    const ks_allocator *allocator; /* NULL: malloc */
    /* Sessions of the task's models (ks_precision, engine.h): 0 runs an int8 model's layers as
     * stored; KS_PRECISION_FASTEST picks int8 or fp32 per layer on this CPU at create. */
    ks_precision precision;
    /* Where the task's models run (ks_backend, engine.h); 0: the CPU. */
    ks_backend backend;
    /* Encrypted models (ks-protect), as model_path or as entries of a bundle: `key` (key_bytes
     * = KS_TASK_KEY_BYTES) opens every one of them; else key_provider(key_user, ...) is asked
     * for each; with neither, create refuses an encrypted model (INVALID_ARGUMENT), and a key
     * that does not open one is KS_STATUS_TAMPERED. Plain models ignore them. The task does not
     * keep the key: the copy it makes is wiped before create returns, and the key is never
     * written to disk. The decrypted models live in memory only, wiped on destroy. */
    const uint8_t *key;
    size_t key_bytes;
    ks_task_key_fn key_provider;
    void *key_user;
} ks_task_options;

/* Where a task's calls spent their time since it was created, each stage summed over every
 * call (read with the task's *_stats function, e.g. ks_face_detector_stats). For profiling and
 * benchmarks (ks-taskbench); the clocks cost two reads per graph node and per call. */
typedef enum ks_task_stage_kind {
    KS_TASK_STAGE_PREPROCESS = 0,  /* camera frame -> model input tensors (crop, resize, ...) */
    KS_TASK_STAGE_INFERENCE = 1,   /* one stage per model of the task */
    KS_TASK_STAGE_POSTPROCESS = 2, /* the graph's other nodes: decoding, NMS, projection, masks */
    KS_TASK_STAGE_OTHER = 3,       /* the rest: tracking, decoding and results outside the graph */
    KS_TASK_STAGE_KIND_COUNT
} ks_task_stage_kind;

#define KS_TASK_MAX_STAGES 8

typedef struct ks_task_stage {
    char name[64]; /* "preprocess", the model's graph node name, "postprocess" or "other" */
    ks_task_stage_kind kind;
    uint64_t num_runs; /* graph node runs (a model may run several times in a call, or none) */
    double total_ms;
} ks_task_stage;

typedef struct ks_task_stats {
    uint64_t num_calls;  /* calls of the task's run function, failed ones included */
    double total_ms;     /* wall time inside those calls */
    double inference_ms; /* the INFERENCE stages together */
    uint32_t num_stages; /* preprocess first, then the models in graph order, postprocess, other */
    ks_task_stage stages[KS_TASK_MAX_STAGES];
    /* Live swaps this task has taken (ks_<task>_swap_model): 0 while it runs the models of its
     * create. The figures above restart at each swap (they describe the current pipeline). */
    uint64_t model_generation;
} ks_task_stats;

/* Live swap (docs/delivery.md). Every task has ks_<task>_swap_model(task, source), which loads a
 * newer version of the task's models and makes the task's next run call use it, e.g. after a
 * signed update was installed (ks_store_file_path gives the new bundle's path):
 *     ks_task_options src = {.model_path = new_path};   // + key fields for encrypted models
 *     if (ks_face_landmarker_swap_model(lm, &src)) log(ks_last_error(NULL));
 * - source: model_path (a .ksb or .ksm, as in ks_task_options) and the key fields (key,
 *   key_bytes, key_provider, key_user); its other fields are ignored: the task keeps every
 *   option of its create (mode, thresholds, threads, precision, backend, allocator).
 * - Any thread may call it, also while a run call is in progress on another thread. It opens the
 *   bundle and creates the pipeline and sessions on the calling thread (as long as a create
 *   takes); the running frame finishes on the old version. The first run call that starts after
 *   it returned switches at its start, so no frame is dropped and none mixes versions; that call
 *   releases the old models, whose last frame has ended (the result structs of earlier frames
 *   stay valid). The run path never allocates or locks for this: one atomic read per call.
 * - A bad version (a missing or damaged file, a wrong or missing key, a bundle of another task:
 *   every check of create) returns create's status with the message in ks_last_error(NULL) of
 *   the calling thread; the task keeps running its current version.
 * - Tracking: the landmarkers (face, hand, pose) keep their tracks, ids and filters; the face
 *   and object detectors' trackers live in their graphs and restart, with ids above every id
 *   reported before; the segmenter's VIDEO smoothing restarts.
 * - A second swap before a run call took the first replaces it. Must not race with the task's
 *   destroy. ks_task_stats.model_generation counts the swaps taken.
 */

/* "preprocess", "inference", "postprocess", "other"; "invalid" for unknown values. */
KS_API const char *ks_task_stage_kind_string(ks_task_stage_kind kind);

/* Directory where tasks look for their default bundles when model_path is NULL: the
 * KESTREL_MODELS_DIR environment variable if set, else the directory given here (NULL resets to
 * the build-time default). The string is copied. Call before creating tasks. */
KS_API ks_status ks_set_models_dir(const char *dir);
/* The current default models directory. Static storage until the next ks_set_models_dir. */
KS_API const char *ks_models_dir(void);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_VISION_H */
