/* Detection building blocks: SSD anchors, SSD tensor decoding, YOLOX and NanoDet decoders and
 * non-maximum suppression. Internal to Kestrel (ks__ prefix): the task APIs wrap these as
 * pipeline nodes. Not a published API.
 *
 * Usage (BlazeFace short range):
 *     ks__ssd_anchor_options ao;
 *     ks__ssd_decode_options dopt;
 *     ks__nms_options nopt;
 *     ks__ssd_preset(KS__SSD_PRESET_FACE_SHORT_RANGE, &ao, &dopt, &nopt);
 *     ks__anchor anchors[896];                                  // made once at create time
 *     size_t num_anchors;
 *     ks__ssd_anchors_generate(&ao, anchors, 896, &num_anchors, err, sizeof(err));
 *     // per frame: raw_boxes [896 x 16], raw_scores [896 x 1] from the model
 *     ks__detection cand[896], faces[16];
 *     size_t num_cand, num_faces;
 *     ks__ssd_decode(&dopt, raw_boxes, 896 * 16, raw_scores, 896, anchors, num_anchors,
 *                    cand, 896, &num_cand, err, sizeof(err));
 *     ks__nms(&nopt, cand, num_cand, scratch, faces, 16, &num_faces);
 *
 * Coordinates: every ks__detection box and keypoint is normalized to the model input
 * ([0,1] x [0,1], x right, y down), like MediaPipe's relative_bounding_box.
 *
 * Thread safety: all functions are pure (no hidden state); concurrent calls on distinct output
 * buffers are safe. None allocates memory. Error messages go to the caller's `err` buffer
 * (may be NULL when err_cap is 0).
 */
#ifndef KESTREL_ALGOS_DETECTION_H
#define KESTREL_ALGOS_DETECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kestrel/kestrel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS__MAX_KEYPOINTS 16
#define KS__SSD_MAX_LAYERS 8
#define KS__SSD_MAX_ASPECT_RATIOS 8

typedef struct ks__point2 {
    float x, y;
} ks__point2;

typedef struct ks__detection {
    float xmin, ymin, xmax, ymax; /* normalized; xmin <= xmax, ymin <= ymax */
    float score;
    int32_t class_id;
    int32_t track_id; /* -1 until a tracker assigns one */
    uint32_t num_keypoints;
    ks__point2 keypoints[KS__MAX_KEYPOINTS];
} ks__detection;

/* ---- SSD anchors (MediaPipe SsdAnchorsCalculator) ---------------------------------------- */

typedef struct ks__anchor {
    float x_center, y_center, w, h; /* normalized */
} ks__anchor;

/* No zero-means-default here: MediaPipe's own defaults (offset 0.5, interpolated ratio 1.0) are
 * not zero, so start from ks__ssd_preset or fill every field. */
typedef struct ks__ssd_anchor_options {
    int32_t input_size_width, input_size_height;
    float min_scale, max_scale;
    float anchor_offset_x, anchor_offset_y; /* cell-relative centre, MediaPipe default 0.5 */
    int32_t num_layers;
    int32_t strides[KS__SSD_MAX_LAYERS]; /* num_layers entries */
    int32_t num_aspect_ratios;
    float aspect_ratios[KS__SSD_MAX_ASPECT_RATIOS];
    float interpolated_scale_aspect_ratio; /* <= 0: no extra interpolated anchor */
    bool fixed_anchor_size;                /* w = h = 1 (decoder scales do the rest) */
    bool reduce_boxes_in_lowest_layer;     /* layer 0 gets 3 fixed boxes (0.1 scale + 2 ratios) */
} ks__ssd_anchor_options;

/* Number of anchors the options produce. */
ks_status ks__ssd_anchors_count(const ks__ssd_anchor_options *opt, size_t *count_out, char *err,
                                size_t err_cap);
/* Writes the anchors in MediaPipe order (layer, y, x, anchor). `cap` must be >= the count. */
ks_status ks__ssd_anchors_generate(const ks__ssd_anchor_options *opt, ks__anchor *anchors,
                                   size_t cap, size_t *count_out, char *err, size_t err_cap);

/* ---- SSD tensors -> detections (MediaPipe TensorsToDetectionsCalculator) ------------------ */

typedef enum ks__box_format {
    KS__BOX_FORMAT_YXHW = 0, /* y_center, x_center, h, w; keypoints y, x (MediaPipe default) */
    KS__BOX_FORMAT_XYWH = 1, /* x_center, y_center, w, h; keypoints x, y */
    KS__BOX_FORMAT_XYXY = 2, /* left, top, right, bottom distances from the anchor centre */
    KS__BOX_FORMAT_COUNT
} ks__box_format;

typedef struct ks__ssd_decode_options {
    int32_t num_classes;
    int32_t num_boxes;
    int32_t num_coords; /* values per box row of raw_boxes */
    int32_t box_coord_offset;
    int32_t keypoint_coord_offset;
    int32_t num_keypoints; /* <= KS__MAX_KEYPOINTS */
    int32_t num_values_per_keypoint;
    ks__box_format box_format;
    float x_scale, y_scale, w_scale, h_scale; /* raw values are divided by these */
    bool apply_exponential_on_box_size;
    bool sigmoid_score;
    float score_clipping_thresh; /* > 0: raw scores clipped to [-t, t] before the sigmoid */
    float min_score_thresh;      /* detections below are dropped */
    bool flip_vertically;
} ks__ssd_decode_options;

/* Decodes raw_boxes [num_boxes x num_coords] and raw_scores [num_boxes x num_classes] with
 * `anchors` (num_anchors == num_boxes). Each box takes its best class. Detections scoring below
 * min_score_thresh, or with non-finite or inverted boxes, are dropped. If more than `cap` survive,
 * the highest-scoring `cap` are kept (in no particular order; NMS sorts). */
ks_status ks__ssd_decode(const ks__ssd_decode_options *opt, const float *raw_boxes,
                         size_t raw_boxes_count, const float *raw_scores, size_t raw_scores_count,
                         const ks__anchor *anchors, size_t num_anchors, ks__detection *out,
                         size_t cap, size_t *count_out, char *err, size_t err_cap);

/* ---- Non-maximum suppression (MediaPipe NonMaxSuppressionCalculator) ------------------- */

typedef enum ks__overlap_type {
    KS__OVERLAP_IOU = 0,              /* intersection / union (MediaPipe JACCARD and IOU) */
    KS__OVERLAP_MODIFIED_JACCARD = 1, /* intersection / area of the lower-scored box */
    KS__OVERLAP_COUNT
} ks__overlap_type;

typedef enum ks__nms_algorithm {
    KS__NMS_DEFAULT = 0,  /* keep the best, drop overlapping ones */
    KS__NMS_WEIGHTED = 1, /* replace the best by the score-weighted mean of its cluster */
    KS__NMS_COUNT
} ks__nms_algorithm;

typedef struct ks__nms_options {
    float min_suppression_threshold; /* overlap above this suppresses (MediaPipe semantics: >) */
    float min_score_threshold;       /* candidates below are ignored */
    int32_t max_num_detections;      /* <= 0: limited only by the output capacity */
    ks__overlap_type overlap_type;
    ks__nms_algorithm algorithm;
    bool per_class; /* suppress only within the same class_id (class-wise NMS) */
} ks__nms_options;

/* Scratch needed by ks__nms for `num_in` candidates, in bytes. */
size_t ks__nms_scratch_size(size_t num_in);
/* Suppresses `in` into `out` (sorted by descending score). `scratch` must hold
 * ks__nms_scratch_size(num_in) bytes, aligned for uint32_t. `in` is not modified. Returns the
 * number written via count_out; never fails on finite input (NaN scores are treated as lowest). */
void ks__nms(const ks__nms_options *opt, const ks__detection *in, size_t num_in, void *scratch,
             ks__detection *out, size_t cap, size_t *count_out);

/* Overlap of two boxes per `type` (b is the lower-scored box). 0 for empty boxes. */
float ks__box_overlap(const ks__detection *a, const ks__detection *b, ks__overlap_type type);

/* ---- Presets: exact MediaPipe option sets ----------------------------------------------- */

typedef enum ks__ssd_preset {
    KS__SSD_PRESET_FACE_SHORT_RANGE = 0, /* BlazeFace 128x128, 896 anchors */
    KS__SSD_PRESET_FACE_FULL_RANGE = 1,  /* BlazeFace 192x192, 2304 anchors */
    KS__SSD_PRESET_PALM = 2,             /* palm detection 192x192, 2016 anchors */
    KS__SSD_PRESET_POSE = 3,             /* pose detection 224x224, 2254 anchors */
    KS__SSD_PRESET_COUNT
} ks__ssd_preset;

/* Fills the anchor, decode and NMS options of a MediaPipe graph. Any output may be NULL.
 * Returns KS_STATUS_INVALID_ARGUMENT for an unknown preset. */
ks_status ks__ssd_preset_get(ks__ssd_preset preset, ks__ssd_anchor_options *anchors_out,
                             ks__ssd_decode_options *decode_out, ks__nms_options *nms_out);
const char *ks__ssd_preset_string(ks__ssd_preset preset);

/* ---- Anchor-free decoders: YOLOX and NanoDet -------------------------------------------- */

#define KS__GRID_MAX_LEVELS 5

/* YOLOX head output [num_cells x (5 + num_classes)], cells ordered level by level (stride
 * ascending as listed), row-major within a level. Per row: dx, dy, log w, log h, objectness,
 * class scores. Box centre = (dx + gx) * stride, size = exp(log w) * stride, in input pixels.
 * Score = obj * cls (after a sigmoid if apply_sigmoid). */
typedef struct ks__yolox_options {
    int32_t input_width, input_height; /* model input, pixels */
    int32_t num_classes;
    int32_t num_levels; /* 0 means 3 levels with strides 8, 16, 32 */
    int32_t strides[KS__GRID_MAX_LEVELS];
    bool apply_sigmoid; /* obj/cls outputs are logits (head exported without sigmoid) */
    bool multi_label;   /* every class above threshold (eval style); false: best class only */
    float min_score_thresh;
} ks__yolox_options;

/* NanoDet(-Plus) head: per level, cls [cells x num_classes] (logits or probabilities) and
 * distribution regression [cells x 4 * (reg_max + 1)], side-major (left, top, right, bottom),
 * each side a softmax over reg_max + 1 bins whose expected bin index times stride is the
 * distance from the cell centre ((gx + center_offset) * stride). */
typedef struct ks__nanodet_options {
    int32_t input_width, input_height;
    int32_t num_classes;
    int32_t reg_max;    /* 0 means 7 (8 bins per side) */
    int32_t num_levels; /* 0 means 3 levels with strides 8, 16, 32 */
    int32_t strides[KS__GRID_MAX_LEVELS];
    float center_offset; /* NanoDet-Plus uses 0 (cell corner); legacy NanoDet 0.5 */
    bool apply_sigmoid;  /* class outputs are logits */
    bool multi_label;    /* every class above threshold; false: best class only */
    float min_score_thresh;
} ks__nanodet_options;

/* Number of grid cells (rows) the options produce, summed over levels. */
ks_status ks__yolox_num_cells(const ks__yolox_options *opt, size_t *count_out, char *err,
                              size_t err_cap);
ks_status ks__nanodet_level_cells(const ks__nanodet_options *opt, int32_t level, size_t *count_out,
                                  char *err, size_t err_cap);

/* Boxes are normalized by input_width/height. Each cell yields its best class (or, with
 * multi_label, every class) scoring >= min_score_thresh; then run ks__nms with per_class.
 * Grid sizes are ceil(input / stride), like the stride-2 convolutions that make them.
 * If more than `cap` survive, the best `cap` are kept. */
ks_status ks__yolox_decode(const ks__yolox_options *opt, const float *raw, size_t raw_count,
                           ks__detection *out, size_t cap, size_t *count_out, char *err,
                           size_t err_cap);
/* cls[level] and reg[level] point to each level's tensors; counts are checked per level. */
ks_status ks__nanodet_decode(const ks__nanodet_options *opt, const float *const *cls,
                             const size_t *cls_counts, const float *const *reg,
                             const size_t *reg_counts, ks__detection *out, size_t cap,
                             size_t *count_out, char *err, size_t err_cap);

#ifdef __cplusplus
}
#endif

#endif /* KESTREL_ALGOS_DETECTION_H */
