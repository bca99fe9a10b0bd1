/* Landmark building blocks: tensors -> landmarks, letterbox removal, projection from a rotated
 * ROI back to the image, and ROIs from detections or landmarks (for the next stage or the next
 * frame). Internal to Kestrel; not a published API.
 *
 * Usage (face mesh on a BlazeFace detection):
 *     ks__roi_options ro;
 *     ks__roi_preset_get(KS__ROI_PRESET_FACE_FROM_DETECTION, &ro);
 *     ks__rect roi;
 *     ks__roi_from_detection(&ro, &face, image_w, image_h, &roi);   // crop this into 192x192
 *     ... run the landmark model ...
 *     ks__landmarks_decode_options lo = {.num_landmarks = 468, .input_width = 192,
 *                                        .input_height = 192};
 *     ks__landmark lm[468];
 *     ks__tensors_to_landmarks(&lo, raw, 1404, lm, 468, err, sizeof(err));
 *     ks__landmarks_project(lm, 468, &roi, false);                  // now image-normalized
 *     ks__roi_preset_get(KS__ROI_PRESET_FACE_FROM_LANDMARKS, &ro);
 *     ks__roi_from_landmarks(&ro, lm, 468, image_w, image_h, &roi); // next frame's ROI
 *
 * Coordinates: normalized to the image ([0,1], x right, y down); z has the scale of x.
 * A ks__rect rotation is in radians, positive = clockwise on screen (MediaPipe's convention:
 * y points down).
 *
 * Thread safety: pure functions, no hidden state, no allocation.
 */
#ifndef KESTREL_ALGOS_LANDMARKS_H
#define KESTREL_ALGOS_LANDMARKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kestrel/kestrel.h"
#include "detection.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ks__landmark {
    float x, y, z;
    float visibility; /* 0 when the tensor has no such column */
    float presence;   /* 0 when the tensor has no such column */
} ks__landmark;

/* A rotated rectangle, normalized to the image (MediaPipe NormalizedRect). */
typedef struct ks__rect {
    float x_center, y_center, width, height;
    float rotation_rad;
} ks__rect;

/* ---- tensors -> landmarks (MediaPipe TensorsToLandmarksCalculator) ---------------------- */

typedef enum ks__activation {
    KS__ACTIVATION_NONE = 0,
    KS__ACTIVATION_SIGMOID = 1,
    KS__ACTIVATION_COUNT
} ks__activation;

/* Running minimum / maximum over values that may be NaN (a NaN value leaves the running one,
 * as fminf / fmaxf do); inline, where libm's fminf is a call per value. */
static inline float ks__min_acc(float acc, float v) {
    return v < acc ? v : acc;
}
static inline float ks__max_acc(float acc, float v) {
    return v > acc ? v : acc;
}

typedef struct ks__landmarks_decode_options {
    int32_t num_landmarks;
    int32_t input_width, input_height; /* model input in pixels: raw x/y are divided by these */
    bool flip_horizontally, flip_vertically;
    float normalize_z; /* z is divided by input_width * normalize_z; 0 means 1 */
    ks__activation visibility_activation, presence_activation;
} ks__landmarks_decode_options;

/* raw holds num_landmarks rows of D = raw_count / num_landmarks values (x, y[, z[, visibility[,
 * presence]]]); raw_count must be an exact multiple, D >= 2. Writes num_landmarks entries. */
ks_status ks__tensors_to_landmarks(const ks__landmarks_decode_options *opt, const float *raw,
                                   size_t raw_count, ks__landmark *out, size_t cap, char *err,
                                   size_t err_cap);

/* ---- letterbox and projection ----------------------------------------------------------- */

/* Padding (left, top, right, bottom; fractions of the model input) that fitting a
 * roi_width_px x roi_height_px region into dst_width x dst_height with kept aspect ratio adds
 * (MediaPipe ImageToTensorCalculator keep_aspect_ratio). */
void ks__letterbox_padding(float roi_width_px, float roi_height_px, int32_t dst_width,
                           int32_t dst_height, float padding_out[4]);
/* MediaPipe LandmarkLetterboxRemovalCalculator: x' = (x - left) / (1 - left - right), same for
 * y; z' = z / (1 - left - right). */
void ks__landmarks_remove_letterbox(ks__landmark *lm, size_t n, const float padding[4]);
/* MediaPipe DetectionLetterboxRemovalCalculator (box corners and keypoints). */
void ks__detections_remove_letterbox(ks__detection *d, size_t n, const float padding[4]);
/* MediaPipe LandmarkProjectionCalculator: maps ROI-normalized landmarks to the image:
 * p = R(rotation) * (p_roi - 0.5) * (width, height) + centre; z' = z * width. */
void ks__landmarks_project(ks__landmark *lm, size_t n, const ks__rect *roi, bool ignore_rotation);

/* ---- ROIs (MediaPipe DetectionsToRects + AlignmentPointsRects + RectTransformation) ------ */

typedef enum ks__roi_mode {
    KS__ROI_MODE_BBOX = 0,             /* axis-aligned bbox of the box (or of the landmarks) */
    KS__ROI_MODE_ALIGNMENT_POINTS = 1, /* centre = point start, side = 2 |end - start| */
    KS__ROI_MODE_ROTATED_BBOX = 2,     /* landmarks only: bbox in the frame rotated by the ROI
                                          angle (MediaPipe HandLandmarksToRect) */
    KS__ROI_MODE_COUNT
} ks__roi_mode;

typedef struct ks__roi_options {
    ks__roi_mode mode;
    bool rotate;         /* rotation from point start_index -> end_index */
    int32_t start_index; /* keypoint or landmark index */
    int32_t end_index;
    float target_angle_deg;   /* angle the start->end vector should have after rotation */
    float scale_x, scale_y;   /* RectTransformation; 0 means 1 */
    float shift_x, shift_y;   /* fractions of the rect size, along the rotated axes */
    float extra_rotation_deg; /* RectTransformation rotation_degrees */
    bool square_long;         /* make square with the long side (in pixels) */
    bool square_short;
} ks__roi_options;

typedef enum ks__roi_preset {
    KS__ROI_PRESET_FACE_FROM_DETECTION = 0, /* eyes 0->1 at 0 deg, x1.5, square */
    KS__ROI_PRESET_FACE_FROM_LANDMARKS = 1, /* mesh 33->263 at 0 deg, x1.5, square */
    KS__ROI_PRESET_HAND_FROM_PALM = 2,      /* wrist 0 -> middle MCP 2 at 90 deg, x2.6, y-0.5 */
    KS__ROI_PRESET_HAND_FROM_LANDMARKS = 3, /* rotated bbox, wrist 0 -> 9 at 90, x2.0, y-0.1 */
    KS__ROI_PRESET_POSE_FROM_DETECTION = 4, /* alignment 0->1 at 90 deg, x1.25, square */
    KS__ROI_PRESET_POSE_FROM_LANDMARKS = 5, /* alignment 33->34 at 90 deg, x1.25, square */
    KS__ROI_PRESET_COUNT
} ks__roi_preset;

ks_status ks__roi_preset_get(ks__roi_preset preset, ks__roi_options *out);

/* MediaPipe's rotation: NormalizeRadians(target - atan2(-(y1 - y0), x1 - x0)), in pixels. */
float ks__roi_rotation(float x0, float y0, float x1, float y1, int32_t image_width,
                       int32_t image_height, float target_angle_deg);
/* MediaPipe RectTransformationCalculator applied in place. */
void ks__rect_transform(const ks__roi_options *opt, int32_t image_width, int32_t image_height,
                        ks__rect *rect);
/* Detection -> ROI; indices must be < d->num_keypoints when used. */
ks_status ks__roi_from_detection(const ks__roi_options *opt, const ks__detection *d,
                                 int32_t image_width, int32_t image_height, ks__rect *out,
                                 char *err, size_t err_cap);
/* Image-normalized landmarks -> ROI (next-frame tracking). */
ks_status ks__roi_from_landmarks(const ks__roi_options *opt, const ks__landmark *lm, size_t n,
                                 int32_t image_width, int32_t image_height, ks__rect *out,
                                 char *err, size_t err_cap);

#ifdef __cplusplus
}
#endif

#endif /* KESTREL_ALGOS_LANDMARKS_H */
