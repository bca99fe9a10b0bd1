/* Plumbing shared by the pose and hand landmarker tasks (algos/pose, algos/hand): option checks,
 * detection/ROI geometry and result blocks (bundle + pipeline setup and upright input images come
 * from task_common.h, shared by all tasks). Internal (ks__lmtask_ prefix). */
#ifndef KESTREL_ALGOS_LANDMARK_TASK_H
#define KESTREL_ALGOS_LANDMARK_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "detection.h"
#include "kestrel/bundle.h"
#include "kestrel/pipeline.h"
#include "kestrel/vision.h"
#include "landmarks.h"
#include "task_common.h"

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
                                  size_t cap, size_t *num_out, char *err, size_t err_size);
/* Landmark path over the items' ROIs (input_size x input_size crops, MediaPipe grid); outs gets
 * ks_pipeline_num_outputs() packets to release with ks__lmtask_release_outputs. */
ks_status ks__lmtask_run_landmarks(ks_pipeline *pipeline, const ks_allocator *alloc,
                                   int64_t *pipeline_ts, ks_packet *image, int32_t iw, int32_t ih,
                                   int32_t input_size, const ks__track_item *items,
                                   size_t num_items, ks_packet **outs, char *err, size_t err_size);
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

#endif

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
