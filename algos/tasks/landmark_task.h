/* Plumbing shared by the pose and hand landmarker tasks (algos/pose, algos/hand): option checks,
 * detection/ROI geometry and result blocks (bundle + pipeline setup and upright input images come
 * from task_common.h, shared by all tasks). Internal (ks__lmtask_ prefix). */
#ifndef KESTREL_ALGOS_LANDMARK_TASK_H
#define KESTREL_ALGOS_LANDMARK_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "src/common.h"
#include "detection.h"
#include "kestrel/bundle.h"
#include "kestrel/pipeline.h"
#include "kestrel/vision.h"
#include "landmarks.h"
#include "task_common.h"
#include "tracking.h"

/* Checks the common task options; max_results must be <= max_results_cap. */
ks_status ks__lmtask_check_options(const ks_task_options *opt, int32_t max_results_cap, char *err,
                                   size_t err_cap);

/* Formats the handle's error message (ks_last_error(handle)) and returns status. */
ks_status ks__lmtask_error(ks__object *obj, ks_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The SSD detector stage of a landmarker (pose detector, palm detector): anchors, decoder and NMS
 * settings, the ROI rule that turns a detection into a landmark crop, and their buffers. */
#define KS__LMTASK_MAX_CANDIDATES 64
typedef struct ks__lmtask_detector {
    ks__ssd_decode_options decode;
    ks__nms_options nms;
    ks__roi_options roi;
    int32_t input_size; /* square detector input, px */
    ks__anchor *anchors;
    size_t num_anchors;
    ks__detection *candidates; /* num_anchors */
    void *nms_scratch;
} ks__lmtask_detector;

/* Sets up the presets and allocates the buffers; scores below min_score are dropped. On failure
 * err says why; ks__lmtask_detector_free releases whatever was allocated. */
ks_status ks__lmtask_detector_init(ks__lmtask_detector *d, ks__ssd_preset ssd, ks__roi_preset roi,
                                   int32_t input_size, float min_score, const ks_allocator *alloc,
                                   char *err, size_t err_cap);
void ks__lmtask_detector_free(ks__lmtask_detector *d, const ks_allocator *alloc);

/* Decodes the raw detector outputs (boxes, scores, and the crop matrix `m` of the detector input,
 * see ks__lmtask_detection_transform) into up to `cap` landmark ROIs of an iw x ih image, best
 * first, with their scores. Detections with fewer than two keypoints or an empty ROI are
 * skipped. */
ks_status ks__lmtask_detector_rois(ks__lmtask_detector *d, const float *boxes, size_t num_boxes,
                                   const float *raw_scores, size_t num_scores, const float m[16],
                                   int32_t iw, int32_t ih, ks__rect *rois, float *scores,
                                   size_t cap, size_t *num_out, char *err, size_t err_cap);

/* Maps a detection from tensor-normalized to image-normalized coordinates through an
 * image_to_tensor matrix (4x4 row-major; only the 2D affine part is used), after adding
 * `offset` to every coordinate (half a tensor pixel for the MediaPipe convention below). */
void ks__lmtask_detection_transform(ks__detection *d, const float m[16], float offset);

/* Graph convention of the pose and hand bundles (algos/pose, algos/hand graph JSON): inputs
 * detect_image, detect_roi, image, rois; outputs det_boxes, det_scores, det_matrix, then the
 * per-ROI lists of the landmark path. A frame runs the graph once per path (internal, increasing
 * timestamps). */
enum { KS__LMTASK_NUM_INPUTS = 4 };
enum { KS__LMTASK_OUT_DET_BOXES, KS__LMTASK_OUT_DET_SCORES, KS__LMTASK_OUT_DET_MATRIX };
#define KS__LMTASK_MAX_OUTPUTS 16

/* Detector path over `roi` (input-image pixels; w == 0: the whole image) -> landmark ROIs, best
 * first (ks__lmtask_detector_rois). A ks__track_ops.detect step. */
ks_status ks__lmtask_run_detector(ks__lmtask_detector *d, ks_pipeline *pipeline,
                                  const ks_allocator *alloc, int64_t *pipeline_ts, ks_packet *image,
                                  const ks_box *roi, int32_t iw, int32_t ih, ks__rect *rois,
                                  float *scores, size_t cap, size_t *num_out, char *err,
                                  size_t err_cap);
/* Landmark path over the items' ROIs (input_size x input_size crops, MediaPipe grid); outs gets
 * ks_pipeline_num_outputs() packets to release with ks__lmtask_release_outputs. */
ks_status ks__lmtask_run_landmarks(ks_pipeline *pipeline, const ks_allocator *alloc,
                                   int64_t *pipeline_ts, ks_packet *image, int32_t iw, int32_t ih,
                                   int32_t input_size, const ks__track_item *items,
                                   size_t num_items, ks_packet **outs, char *err, size_t err_cap);
void ks__lmtask_release_outputs(ks_packet **outs, size_t num_outputs);
/* f32 tensor packet -> its data and value count (0 and NULL otherwise). */
size_t ks__lmtask_floats(const ks_packet *p, const float **data_out);

/* Result blocks: one allocation that starts with this header, followed (at offset
 * sizeof(header)) by the public result struct. The header remembers the allocator. */
typedef struct ks__lmtask_result_header {
    ks_allocator alloc;
    uint64_t magic;
} ks__lmtask_result_header;

static inline size_t ks__lmtask_align(size_t n) {
    return (n + 63u) & ~(size_t)63u;
}
/* Zeroed block of size_bytes (header included) or NULL. */
uint8_t *ks__lmtask_result_alloc(const ks_allocator *alloc, size_t size_bytes);
/* Frees a block given the public result pointer inside it. */
void ks__lmtask_result_free(void *result);

/* MediaPipe sampling convention. MediaPipe's CPU ImageToTensorCalculator warps with OpenCV in
 * pixel-index space: tensor pixel i samples the crop corner + i * scale, and normalized results
 * times the image size are pixel indices (integer = pixel centre). image_to_tensor maps pixel
 * centres in continuous coordinates instead. These helpers move the crop rects and the
 * tensor-space results so that the models see the same pixels as under MediaPipe and the results
 * come out in Kestrel's continuous coordinates (MediaPipe's value + 0.5 px). Worth 1-2 % of a
 * small hand's size. */
/* Detector crop of `area` (normalized, unrotated; keep_aspect letterbox into a square input). */
ks_rect ks__lmtask_mp_detect_rect(const ks_rect *area, int32_t image_width, int32_t image_height,
                                  int32_t input_size);
/* Landmark crop of a rotated ROI into an input_size x input_size tensor. */
ks_rect ks__lmtask_mp_crop_rect(const ks__rect *roi, int32_t image_width, int32_t image_height,
                                int32_t input_size);
/* Maps a tensor-normalized point (0..1 over input_size) through a crop matrix. */
void ks__lmtask_mp_project(const float m[16], int32_t input_size, float *x, float *y);

/* ---- The landmarker handle core ---------------------------------------------------------------
 *
 * Everything the pose and hand handles share: options, bundle and pipeline, detector, tracking
 * loop, One Euro filters per track slot and the frame's graph outputs. A task's handle struct
 * starts with a ks__lmtask (so the handle pointer is also the core's and its ks__object's) and
 * adds the per-frame work it decodes in its finish step. */

#define KS__LMTASK_MAX_LANDMARKS 64 /* image or world landmarks per object */

/* What differs between the tasks; one static instance per task. */
typedef struct ks__lmtask_spec {
    const char *name;             /* "hand": ks_hand_landmarker_create, hand_landmarker.json */
    int32_t max_results_cap;      /* <= KS__TRACK_MAX_OBJECTS */
    int32_t default_max_results;  /* task.max_results 0 */
    int32_t num_models;           /* desc.model < num_models */
    uint32_t num_outputs;         /* graph outputs, <= KS__LMTASK_MAX_OUTPUTS */
    ks__ssd_preset ssd;           /* detector */
    ks__roi_preset detection_roi; /* detection -> first landmark ROI */
    int32_t detector_input;       /* square detector input, px */
    ks__landmarks_decode_options decode; /* landmark model; input_width is the square crop, px */
    uint32_t num_smoothed;               /* leading image landmarks the filters see */
    uint32_t num_world;                  /* world landmarks */
    float same_iou;                      /* ks__track_loop_init */
    /* With max_results > 1, also run the detector on 2 x 2 overlapping tiles of the searched
     * area (people too small for the whole-image pass; see ks__lmtask_detect_tiled). */
    bool tile_detector;
    /* > 0: ks__track_loop_set_same_center (one object or two by ROI centre distance) */
    float same_center;
    /* ks__track_ops.same over the decoded items (task is the ks__lmtask), or NULL */
    bool (*same)(void *task, size_t a, size_t b, int32_t iw, int32_t ih);
    /* The ks__track_ops.finish step: decodes item `index` of outs (task is the ks__lmtask). */
    ks_status (*finish)(void *task, size_t index, const ks__track_item *item, int32_t iw,
                        int32_t ih, int64_t timestamp_us, ks__rect *next, bool *found, char *err,
                        size_t err_cap);
} ks__lmtask_spec;

typedef struct ks__lmtask {
    ks__object obj;       /* first: ks_last_error() */
    ks__task_clock clock; /* ks_task_stats */
    const ks__lmtask_spec *spec;
    ks_allocator alloc;
    ks_running_mode mode;
    int32_t max_results;
    float min_score, min_presence;
    ks_rotation rotation;
    int32_t mirror;
    ks_box roi;
    bool smoothing;
    /* create's arguments, for the replacement a live swap creates (ks__lmtask_swap_create) */
    ks_task_options created;
    int32_t model;
    const char *model_name; /* static */
    float min_presence_arg;
    size_t handle_size;
    ks__task_swap swap;
    /* the models: what a live swap replaces */
    ks_bundle *bundle;
    ks_pipeline *pipeline;
    int64_t pipeline_ts;
    ks__track_loop tracker;
    ks__lmtask_detector detector;
    int32_t detect_pass; /* VIDEO, tiled detector: the pass the next detecting frame runs */
    /* per tracker slot (VIDEO with smoothing): image and world landmark filters */
    ks__landmark_smoother *smoother[KS__TRACK_MAX_OBJECTS];
    ks__landmark_smoother *world_smoother[KS__TRACK_MAX_OBJECTS];
    ks_packet *outs[KS__LMTASK_MAX_OUTPUTS]; /* the frame being processed */
} ks__lmtask;

/* Checks the desc fields every landmarker has, allocates a zeroed handle of handle_size bytes
 * (>= sizeof(ks__lmtask); the task's struct) and sets it up: bundle <name>_landmarker_<model_name>
 * .ksb, detector, tracking loop, filters. On failure the error (ks_<name>_landmarker_create: ...)
 * is set for ks_last_error(NULL) and nothing is left allocated. */
ks_status ks__lmtask_create(const ks__lmtask_spec *spec, const ks_task_options *task, int32_t model,
                            const char *model_name, float min_presence, size_t handle_size,
                            ks__lmtask **out);
/* Releases everything, the handle included. NULL is a no-op. */
void ks__lmtask_destroy(ks__lmtask *t);

/* Live swap (task_common.h): creates the replacement handle from t's create arguments and
 * source's model fields; the task may prepare its pipeline (as its create does) and then offers
 * it with ks__lmtask_swap_offer. ks__lmtask_frame_run takes it. fn names the public call. */
ks_status ks__lmtask_swap_create(ks__lmtask *t, const char *fn, const ks_task_options *source,
                                 ks__lmtask **out);
void ks__lmtask_swap_offer(ks__lmtask *t, ks__lmtask *replacement);

/* One frame through the tracking loop. */
typedef struct ks__lmtask_frame {
    const char *fn;   /* the public call, for messages */
    ks_packet *image; /* upright input */
    int32_t width, height;
    ks__track_item items[KS__TRACK_MAX_OBJECTS];
    size_t num_items;
    /* Kept items in result order (by track id in VIDEO: tracked objects keep their order across
     * frames; detection order in IMAGE) and the ids to report (VIDEO: track id; IMAGE: 1..). */
    uint32_t num_kept;
    uint32_t order[KS__TRACK_MAX_OBJECTS];
    int32_t ids[KS__TRACK_MAX_OBJECTS];
    /* ks__lmtask_frame_result: the items and the per-item planes (plane_bytes each) */
    void *result_items;
    uint8_t *planes;
    size_t plane_bytes;
} ks__lmtask_frame;

/* Runs the tracking loop on `image` (fn names the public call in messages; has_out: its out
 * argument is not NULL). On success the task's work and t->outs hold the frame: read them, then
 * call ks__lmtask_frame_end. On failure the handle's error is set and nothing is left to
 * release. */
ks_status ks__lmtask_frame_run(ks__lmtask *t, const char *fn, const ks_image *image, bool has_out,
                               int64_t timestamp_us, ks__lmtask_frame *f);
/* Allocates the frame's result block (ks__lmtask_result_alloc): the public result struct
 * (result_size bytes; returned), f->num_kept items of item_size (f->result_items, NULL when none),
 * then for a task with per-item planes (has_planes: pose masks) a 64-byte aligned area with one
 * image-sized plane of plane_px_bytes per pixel per item (f->planes; NULL when plane_px_bytes is
 * 0). Returns NULL with *st and the handle's error set when it does not fit. */
void *ks__lmtask_frame_result(ks__lmtask *t, ks__lmtask_frame *f, size_t result_size,
                              size_t item_size, bool has_planes, size_t plane_px_bytes,
                              ks_status *st);
/* Releases the frame; a failed frame (st != OK, e.g. no memory for the result) drops the tracks. */
void ks__lmtask_frame_end(ks__lmtask *t, ks__lmtask_frame *f, ks_status st);

/* Graph output `out` of ROI `index` this frame: its f32 values (ks__lmtask_floats) or matrix. */
size_t ks__lmtask_output(const ks__lmtask *t, uint32_t out, size_t index, const float **data_out);
const float *ks__lmtask_output_matrix(const ks__lmtask *t, uint32_t out, size_t index);

/* Decodes the landmark model's raw output (spec->decode) into lm (ROI-normalized). */
ks_status ks__lmtask_decode(const ks__lmtask *t, const float *raw, size_t num_raw, ks__landmark *lm,
                            char *err, size_t err_cap);
/* Puts decoded landmarks in the image: lm (spec->decode.num_landmarks) through the item's crop
 * matrix m into image-normalized coordinates (z at the scale of x), world_raw (ROI frame,
 * spec->num_world x 3) rotated back into world, then both through the item's track filters. */
void ks__lmtask_place(const ks__lmtask *t, const ks__track_item *item, const float m[16],
                      const float *world_raw, int32_t iw, int32_t ih, int64_t timestamp_us,
                      ks__landmark *lm, ks_point3f *world);
/* Bounding box in image pixels of n image-normalized landmarks, clipped to the image. */
ks_box ks__lmtask_pixel_box(const ks__landmark *lm, size_t n, int32_t iw, int32_t ih);

#endif
