/* Helpers shared by the task APIs in each task directory: input image conversion, bundle +
 * pipeline setup, bundle config and labels entries, and node type registration. Internal; not a
 * published API. */
#ifndef KESTREL_ALGOS_TASK_COMMON_H
#define KESTREL_ALGOS_TASK_COMMON_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "src/common.h"
#include "kestrel/bundle.h"
#include "kestrel/pipeline.h"
#include "kestrel/vision.h"
#include "landmarks.h"

/* Largest input side the tasks accept. */
#define KS_TASK_MAX_SIDE_PX 16384

/* Wraps any ks_image (RGB/BGR/RGBA/BGRA/GRAY/NV21/NV12/I420) in an image view packet
 * (ks_packet_create_image_view): nothing is copied; the graph sees the image rotated clockwise by
 * `rotation`, then mirrored when `mirror`, and result coordinates of the tasks are in that
 * upright image. The caller's pixels must outlive the packet (release it before returning to the
 * app). Fails with INVALID_ARGUMENT (NULL, empty or inconsistent image, message in err) or
 * LIMIT_EXCEEDED. */
ks_status ks__task_image_packet(const ks_allocator *alloc, const ks_image *img,
                                ks_rotation rotation, int mirror, ks_packet **out, char *err,
                                size_t err_cap);

/* Opens task->model_path, or <ks_models_dir()>/<default_bundle> when it is NULL or empty, with
 * task->allocator. On failure err names the path tried (and, for a default bundle, how to get
 * one). */
ks_status ks__task_open_bundle(const ks_task_options *task, const char *default_bundle,
                               ks_bundle **out, char *err, size_t err_cap);

/* Creates a pipeline from the bundle's graph entry `graph_entry` (NULL: "graph") with the task's
 * allocator and threads and the side parameters given; the message is in ks_last_error(NULL). */
ks_status ks__task_create_pipeline(const ks_bundle *bundle, const ks_task_options *task,
                                   const char *graph_entry, const ks_side_param *params,
                                   uint32_t num_params, ks_pipeline **out);

/* ks__task_open_bundle + ks__task_create_pipeline, after registering the vision node types. On
 * failure nothing is returned and err names the bundle path and the cause. */
ks_status ks__task_open(const ks_task_options *task, const char *default_bundle,
                        const char *graph_entry, const ks_side_param *params, uint32_t num_params,
                        ks_bundle **bundle_out, ks_pipeline **pipeline_out, char *err,
                        size_t err_cap);

/* Output streams a single-image task graph may have (see ks__task_check_graph). */
#define KS_TASK_MAX_OUTPUTS 8

/* Checks that a task graph takes one image input and has the output stream `output` among at
 * most KS_TASK_MAX_OUTPUTS outputs; *index_out gets that stream's index. */
ks_status ks__task_check_graph(const ks_pipeline *pipeline, const char *output, int32_t *index_out,
                               char *err, size_t err_cap);

/* Runs a graph checked by ks__task_check_graph on the upright view of `image` (see
 * ks__task_image_packet; its size goes to *width_out, *height_out), after ks_pipeline_reset when
 * `reset` (independent frames). outs gets ks_pipeline_num_outputs() packets for the caller to
 * release (ks__task_release_outputs). On failure err has the image's or the pipeline's message. */
ks_status ks__task_process_image(ks_pipeline *pipeline, const ks_task_options *task,
                                 const ks_image *image, int64_t timestamp_us, int reset,
                                 ks_packet *outs[KS_TASK_MAX_OUTPUTS], int32_t *width_out,
                                 int32_t *height_out, char *err, size_t err_cap);
void ks__task_release_outputs(ks_packet *outs[KS_TASK_MAX_OUTPUTS]);

/* Parses the bundle's config entry `name` (kind config) as a JSON object; free with
 * cJSON_Delete. */
ks_status ks__task_config(const ks_bundle *bundle, const char *name, cJSON **out, char *err,
                          size_t err_cap);

/* Labels parsed from a labels entry: one label per line, trailing '\r' and blanks trimmed. */
typedef struct ks__labels {
    uint32_t count;
    char **names; /* count pointers into `text` */
    char *text;
} ks__labels;

/* Reads the labels entry `name`; an absent name (NULL or "") gives zero labels. */
ks_status ks__task_labels(const ks_allocator *alloc, const ks_bundle *bundle, const char *name,
                          ks__labels *out, char *err, size_t err_cap);
void ks__task_labels_free(const ks_allocator *alloc, ks__labels *labels);

/* Config accessors: a missing key gives the default; a wrong type is an error naming the key. */
ks_status ks__cfg_number(const cJSON *obj, const char *key, double def, double *out, char *err,
                         size_t err_cap);
ks_status ks__cfg_string(const cJSON *obj, const char *key, const char *def, const char **out,
                         char *err, size_t err_cap);
/* Fills up to cap numbers; *count_out gets the array length (0 when absent). */
ks_status ks__cfg_numbers(const cJSON *obj, const char *key, float *values, uint32_t cap,
                          uint32_t *count_out, char *err, size_t err_cap);

/* Node registration: ks__task_register_*_nodes (node_types.h). */

/* ---- Task stats (ks_task_stats, vision.h) ---------------------------------------------------
 * Each task times its run calls with a clock and reports its graph's node times by stage:
 *     uint64_t t0 = ks__task_now_ns();
 *     ks_status st = run(...);
 *     ks__task_clock_add(&t->clock, t0);
 *     ...
 *     ks__task_stats(t->pipeline, &t->clock, stats_out);  // in ks_<task>_stats */
typedef struct ks__task_clock {
    uint64_t num_calls;
    uint64_t total_ns;
    uint64_t post_ns;          /* postprocessing the task does itself, outside its graph's nodes */
    uint64_t model_generation; /* live swaps taken (ks_task_stats.model_generation) */
} ks__task_clock;

uint64_t ks__task_now_ns(void);
void ks__task_clock_add(ks__task_clock *clock, uint64_t start_ns);
/* Counts the time since start_ns as postprocessing done by the task outside its graph (for
 * example the segmenter's mask upsampling): part of the call's total, reported in the
 * postprocess stage instead of "other". */
void ks__task_clock_post(ks__task_clock *clock, uint64_t start_ns);
/* Groups the node times of `pipeline` (foreach subgraphs included) into stages: image_to_tensor
 * and model_input nodes are preprocessing, each infer node name a model, other nodes (and the
 * clock's ks__task_clock_post time) postprocessing, and the clock's time outside all of these
 * "other". */
ks_status ks__task_stats(const ks_pipeline *pipeline, const ks__task_clock *clock,
                         ks_task_stats *out);

/* ---- Live swap of a task's models (ks_<task>_swap_model, docs/delivery.md) -------------------
 * The swap call, on any thread, creates a complete replacement task with the task's own desc and
 * the source's model_path and key fields (ks__task_swap_options), so every check of create runs
 * there and a bad version is refused without touching the running task; then it offers the
 * replacement. The next frame call takes it at its start (ks__task_swap_take), so a frame never
 * mixes versions: the task moves the replacement's model fields (bundle, pipeline, what it read
 * from them) into itself, resets its clock with ks__task_clock_swapped and destroys the
 * replacement, which by then holds the old models, whose last frame has ended. Tracking state
 * stays with the task. An offer that no frame took is destroyed by the next offer or by the
 * task's destroy. The frame path never allocates or locks: one atomic exchange per frame. */
typedef struct ks__task_swap {
    _Atomic(void *) pending;
} ks__task_swap;

/* The replacement's options: `created` (the task's own, as stored at create; NULL when the task
 * handle is NULL) with source's model_path, key, key_bytes, key_provider and key_user.
 * INVALID_ARGUMENT with "fn: ..." in ks_last_error(NULL) when created or source is NULL. */
ks_status ks__task_swap_options(const char *fn, const ks_task_options *created,
                                const ks_task_options *source, ks_task_options *out);
/* After the replacement's create failed with st: prefixes its message (ks_last_error(NULL)) with
 * "fn: <source's model_path>: " so the refusal names the call and the version; returns st. */
ks_status ks__task_swap_failed(const char *fn, const ks_task_options *source, ks_status st);
/* Offers a created replacement; a previous offer not yet taken is destroyed. */
void ks__task_swap_offer(ks__task_swap *swap, void *replacement, void (*destroy)(void *));
/* The offered replacement, or NULL (then nothing to do). */
void *ks__task_swap_take(ks__task_swap *swap);
/* After a swap: the stage times restart with the new pipeline, the generation counts one more. */
void ks__task_clock_swapped(ks__task_clock *clock);

/* ---- Per-frame tracking loop of the landmark tasks (face, hand, pose) -------------------------
 *
 * One frame: the objects tracked from the previous frame give their ROIs; when fewer than
 * max_objects are tracked the detector runs (every frame while nothing is tracked, else once
 * every KS__TRACK_REDETECT_FRAMES frames, so it stays off in steady state) and its ROIs that do
 * not overlap a tracked one (IoU > same_iou) start new tracks; one landmark run covers every
 * ROI; then each item is decoded by the task, lost ones free their slot (and make the next frame
 * run the detector), and an item whose next ROI overlaps an earlier kept item's (two tracks on
 * one object) is dropped, so the older track survives. In IMAGE mode nothing is carried between
 * frames. The task supplies the model steps (see algos/face/face_landmarker.c):
 *
 *     static const ks__track_ops ops = {detect, landmarks, finish, new_track};
 *     ks__track_loop_init(&t->loop, max_results, mode == KS_MODE_VIDEO, 0.5f);
 *     // per frame
 *     ks__track_loop_begin(&t->loop, alloc, image, rotation, mirror, &roi, timestamp_us, &img,
 *                          &iw, &ih, err, sizeof(err));
 *     ks__track_loop_frame(&t->loop, &ops, t, img, iw, ih, timestamp_us, items, &n, err,
 *                          sizeof(err));
 *     // items[i].keep: the task's decoded result i (its own per-item storage) is a result
 */
#define KS__TRACK_MAX_OBJECTS 16
#define KS__TRACK_MAX_CANDIDATES 64
/* Detector period while some but not all objects are tracked: <= 1/15 of the frames. */
#define KS__TRACK_REDETECT_FRAMES 15

typedef struct ks__track_item {
    ks__rect roi; /* this frame's landmark crop; for kept items, the next frame's ROI */
    int32_t id;   /* VIDEO: the track's id (>= 1); IMAGE: 0 */
    int32_t slot; /* track slot (VIDEO) or -1 */
    bool keep;    /* found, and not a duplicate of an earlier item */
} ks__track_item;

typedef struct ks__track_ops {
    /* Runs the detector on the upright image: up to cap landmark ROIs, best first. */
    ks_status (*detect)(void *task, ks_packet *image, int32_t iw, int32_t ih, ks__rect *rois,
                        size_t cap, size_t *num_out, char *err, size_t err_cap);
    /* Runs the landmark model on the ROIs of items[0, num_items) (num_items >= 1); the task
     * keeps the outputs until its frame ends. */
    ks_status (*landmarks)(void *task, ks_packet *image, int32_t iw, int32_t ih,
                           const ks__track_item *items, size_t num_items, char *err,
                           size_t err_cap);
    /* Decodes item `index` of the landmark run (smoothing it with the filters of item->slot when
     * that is >= 0) and sets *next to the ROI for the next frame; *found = false when the
     * object is lost (low presence, no valid ROI). */
    ks_status (*finish)(void *task, size_t index, const ks__track_item *item, int32_t iw,
                        int32_t ih, int64_t timestamp_us, ks__rect *next, bool *found, char *err,
                        size_t err_cap);
    /* A new track takes `slot`: reset its filters. May be NULL. */
    void (*new_track)(void *task, int32_t slot);
    /* Whether the decoded items a < b of this frame are one object (b is then dropped, as when
     * their next ROIs are one object). May be NULL: the ROIs alone decide. */
    bool (*same)(void *task, size_t a, size_t b, int32_t iw, int32_t ih);
} ks__track_ops;

typedef struct ks__track_loop {
    int32_t max_objects; /* 1..KS__TRACK_MAX_OBJECTS */
    bool video;
    float same_iou; /* ROIs overlapping more than this are one object */
    /* > 0: instead, ROIs whose centres are closer than this fraction of the larger ROI's longer
     * side (in pixels) are one object (ks__track_loop_set_same_center) */
    float same_center;
    int32_t next_id;
    int32_t frames_since_detect;
    uint64_t num_frames, num_detector_runs;
    int64_t last_ts;
    bool has_ts;
    int32_t slot_id[KS__TRACK_MAX_OBJECTS]; /* 0: free */
    ks__rect slot_roi[KS__TRACK_MAX_OBJECTS];
} ks__track_loop;

void ks__track_loop_init(ks__track_loop *t, int32_t max_objects, bool video, float same_iou);
/* Tells one object from two by ROI centre distance (fraction of the larger ROI's longer side)
 * instead of IoU: for ROIs much larger than the objects' spacing, such as the pose task's
 * whole-body squares, where two people side by side overlap by more than any useful IoU. */
void ks__track_loop_set_same_center(ks__track_loop *t, float fraction);
/* Forgets every track (the next frame detects afresh). */
void ks__track_loop_clear(ks__track_loop *t);

/* Frame preamble: in VIDEO mode timestamps must increase (INVALID_STATE); the image is made
 * upright (ks__task_image_packet) into *image_out with its size; a non-empty roi (input-image
 * pixels after rotation) must overlap it. err has the message on failure. */
ks_status ks__track_loop_begin(ks__track_loop *t, const ks_allocator *alloc, const ks_image *image,
                               ks_rotation rotation, int mirror, const ks_box *roi,
                               int64_t timestamp_us, ks_packet **image_out, int32_t *width_out,
                               int32_t *height_out, char *err, size_t err_cap);

/* Runs one frame (see above) into items (capacity KS__TRACK_MAX_OBJECTS; *num_items gets the
 * count, kept or not). On failure every track is dropped and err has the message. */
ks_status ks__track_loop_frame(ks__track_loop *t, const ks__track_ops *ops, void *task,
                               ks_packet *image, int32_t iw, int32_t ih, int64_t timestamp_us,
                               ks__track_item *items, size_t *num_items, char *err, size_t err_cap);

/* IoU of the axis-aligned pixel bounding boxes of two rotated rects. */
float ks__track_rect_iou(const ks__rect *a, const ks__rect *b, int32_t image_width,
                         int32_t image_height);

#endif
