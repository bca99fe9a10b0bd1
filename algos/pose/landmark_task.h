/* Plumbing shared by the pose and hand landmarker tasks (algos/pose, algos/hand): option checks,
 * bundle + pipeline setup, upright input images, detection/ROI geometry and result blocks.
 * Internal (ks__lmtask_ prefix). */
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

/* Checks the common task options; max_results must be <= max_results_cap. */
ks_status ks__lmtask_check_options(const ks_task_options *opt, int32_t max_results_cap, char *err,
                                   size_t err_cap);

/* Opens opt->model_path (or default_name in ks_models_dir()) and builds its "graph" pipeline
 * with opt->num_threads. On failure err names the bundle and the pipeline's message. */
ks_status ks__lmtask_open_pipeline(const ks_task_options *opt, const char *default_name,
                                   const ks_allocator *alloc, ks_bundle **bundle_out,
                                   ks_pipeline **pipeline_out, char *err, size_t err_cap);

/* Formats the handle's error message (ks_last_error(handle)) and returns status. */
ks_status ks__lmtask_error(ks__object *obj, ks_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Converts any ks_image into a tightly packed RGB8 image packet, rotated clockwise by `rotation`
 * and un-mirrored when `mirror`: the upright view every result refers to. Errors go to the
 * thread's ks_last_error(NULL). */
ks_status ks__lmtask_upright_image(const ks_allocator *alloc, const ks_image *image,
                                   ks_rotation rotation, int32_t mirror, ks_packet **out,
                                   int32_t *width_out, int32_t *height_out);

/* Maps a detection from tensor-normalized to image-normalized coordinates through an
 * image_to_tensor matrix (4x4 row-major; only the 2D affine part is used), after adding
 * `offset` to every coordinate (half a tensor pixel for the MediaPipe convention below). */
void ks__lmtask_detection_transform(ks__detection *d, const float m[16], float offset);

/* IoU of the axis-aligned pixel bounding boxes of two rotated rects. */
float ks__lmtask_rect_iou(const ks__rect *a, const ks__rect *b, int32_t image_width,
                          int32_t image_height);

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
