/* Shared plumbing of the pose and hand landmarker tasks (see landmark_task.h). */
#include "landmark_task.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define LMTASK_RESULT_MAGIC UINT64_C(0x4b534c4d52455331) /* "KSLMRES1" */

ks_status ks__lmtask_check_options(const ks_task_options *opt, int32_t max_results_cap, char *err,
                                   size_t err_cap) {
    if ((unsigned)opt->mode >= KS_MODE_COUNT) {
        snprintf(err, err_cap, "task.mode %d is not a ks_running_mode", (int)opt->mode);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if ((unsigned)opt->rotation >= KS_ROTATION_COUNT) {
        snprintf(err, err_cap, "task.rotation %d is not a ks_rotation", (int)opt->rotation);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (opt->num_threads < 0 || opt->num_threads > 256) {
        snprintf(err, err_cap, "task.num_threads %d is outside [0, 256]", (int)opt->num_threads);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (!(opt->min_score >= 0.0f && opt->min_score <= 1.0f)) {
        snprintf(err, err_cap, "task.min_score %g is outside [0, 1]", (double)opt->min_score);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (opt->max_results < 0 || opt->max_results > max_results_cap) {
        snprintf(err, err_cap, "task.max_results %d is outside [0, %d]", (int)opt->max_results,
                 (int)max_results_cap);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (!isfinite(opt->smoothing) || !isfinite(opt->roi.x) || !isfinite(opt->roi.y) ||
        !isfinite(opt->roi.w) || !isfinite(opt->roi.h) || opt->roi.w < 0.0f ||
        (opt->roi.w > 0.0f && !(opt->roi.h > 0.0f))) {
        snprintf(err, err_cap, "task.smoothing or task.roi (%g, %g, %g x %g) is not valid",
                 (double)opt->roi.x, (double)opt->roi.y, (double)opt->roi.w, (double)opt->roi.h);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    return KS_STATUS_OK;
}

ks_status ks__lmtask_error(ks__object *obj, ks_status status, const char *fmt, ...) {
    char msg[KS_ERROR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ks__object_error(obj, "%s", msg);
    return status;
}

void ks__lmtask_detection_transform(ks__detection *d, const float m[16], float offset) {
    float xs[2] = {d->xmin + offset, d->xmax + offset},
          ys[2] = {d->ymin + offset, d->ymax + offset};
    float x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
    for (int k = 0; k < 4; k++) {
        float u = xs[k & 1], v = ys[k >> 1];
        float x = m[0] * u + m[1] * v + m[3], y = m[4] * u + m[5] * v + m[7];
        x0 = fminf(x0, x), y0 = fminf(y0, y), x1 = fmaxf(x1, x), y1 = fmaxf(y1, y);
    }
    d->xmin = x0, d->ymin = y0, d->xmax = x1, d->ymax = y1;
    for (uint32_t k = 0; k < d->num_keypoints && k < KS__MAX_KEYPOINTS; k++) {
        float u = d->keypoints[k].x + offset, v = d->keypoints[k].y + offset;
        d->keypoints[k].x = m[0] * u + m[1] * v + m[3];
        d->keypoints[k].y = m[4] * u + m[5] * v + m[7];
    }
}

ks_status ks__lmtask_detector_init(ks__lmtask_detector *d, ks__ssd_preset ssd, ks__roi_preset roi,
                                   int32_t input_size, float min_score, const ks_allocator *alloc,
                                   char *err, size_t err_cap) {
    memset(d, 0, sizeof(*d));
    d->input_size = input_size;
    ks__ssd_anchor_options ao;
    ks_status st = ks__ssd_preset_get(ssd, &ao, &d->decode, &d->nms);
    if (!st) st = ks__roi_preset_get(roi, &d->roi);
    if (!st) st = ks__ssd_anchors_count(&ao, &d->num_anchors, err, err_cap);
    if (st) return st;
    d->anchors = ks__alloc(alloc, d->num_anchors * sizeof(*d->anchors));
    d->candidates = ks__alloc(alloc, d->num_anchors * sizeof(*d->candidates));
    d->nms_scratch = ks__alloc(alloc, ks__nms_scratch_size(d->num_anchors));
    if (!d->anchors || !d->candidates || !d->nms_scratch) {
        snprintf(err, err_cap, "out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    st = ks__ssd_anchors_generate(&ao, d->anchors, d->num_anchors, &d->num_anchors, err, err_cap);
    if (st) return st;
    d->decode.min_score_thresh = min_score;
    d->nms.min_score_threshold = min_score;
    return KS_STATUS_OK;
}

void ks__lmtask_detector_free(ks__lmtask_detector *d, const ks_allocator *alloc) {
    ks__free(alloc, d->anchors);
    ks__free(alloc, d->candidates);
    ks__free(alloc, d->nms_scratch);
    d->anchors = NULL;
    d->candidates = NULL;
    d->nms_scratch = NULL;
}

ks_status ks__lmtask_detector_rois(ks__lmtask_detector *d, const float *boxes, size_t num_boxes,
                                   const float *raw_scores, size_t num_scores, const float m[16],
                                   int32_t iw, int32_t ih, ks__rect *rois, float *scores,
                                   size_t cap, size_t *num_out, char *err, size_t err_cap) {
    *num_out = 0;
    size_t num_cand = 0;
    ks_status st =
        ks__ssd_decode(&d->decode, boxes, num_boxes, raw_scores, num_scores, d->anchors,
                       d->num_anchors, d->candidates, d->num_anchors, &num_cand, err, err_cap);
    if (st) return st;
    ks__detection dets[KS__LMTASK_MAX_CANDIDATES];
    size_t num_dets = 0;
    ks__nms(&d->nms, d->candidates, num_cand, d->nms_scratch, dets, KS__LMTASK_MAX_CANDIDATES,
            &num_dets);
    for (size_t i = 0; i < num_dets && *num_out < cap; i++) {
        ks__lmtask_detection_transform(&dets[i], m, 0.5f / (float)d->input_size);
        if (dets[i].num_keypoints < 2) continue;
        ks__rect r;
        char roi_err[128];
        if (ks__roi_from_detection(&d->roi, &dets[i], iw, ih, &r, roi_err, sizeof(roi_err)) !=
            KS_STATUS_OK)
            continue;
        if (!(r.width > 0.0f) || !(r.height > 0.0f)) continue;
        rois[*num_out] = r;
        scores[*num_out] = dets[i].score;
        (*num_out)++;
    }
    return KS_STATUS_OK;
}

static void rect_bounds(const ks__rect *r, int32_t iw, int32_t ih, float b[4]) {
    float c = fabsf(cosf(r->rotation_rad)), s = fabsf(sinf(r->rotation_rad));
    float w = r->width * (float)iw, h = r->height * (float)ih;
    float hw = 0.5f * (c * w + s * h), hh = 0.5f * (s * w + c * h);
    float cx = r->x_center * (float)iw, cy = r->y_center * (float)ih;
    b[0] = cx - hw, b[1] = cy - hh, b[2] = cx + hw, b[3] = cy + hh;
}

float ks__lmtask_rect_iou(const ks__rect *a, const ks__rect *b, int32_t image_width,
                          int32_t image_height) {
    float p[4], q[4];
    rect_bounds(a, image_width, image_height, p);
    rect_bounds(b, image_width, image_height, q);
    float iw = fminf(p[2], q[2]) - fmaxf(p[0], q[0]);
    float ih = fminf(p[3], q[3]) - fmaxf(p[1], q[1]);
    if (!(iw > 0.0f) || !(ih > 0.0f)) return 0.0f;
    float inter = iw * ih;
    float uni = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter;
    return uni > 0.0f ? inter / uni : 0.0f;
}

uint8_t *ks__lmtask_result_alloc(const ks_allocator *alloc, size_t size_bytes) {
    uint8_t *block = ks__alloc_aligned(alloc, size_bytes, 64);
    if (!block) return NULL;
    memset(block, 0, size_bytes);
    ks__lmtask_result_header *h = (ks__lmtask_result_header *)block;
    h->alloc = *alloc;
    h->magic = LMTASK_RESULT_MAGIC;
    return block;
}

void ks__lmtask_result_free(void *result) {
    if (!result) return;
    uint8_t *block = (uint8_t *)result - sizeof(ks__lmtask_result_header);
    ks__lmtask_result_header *h = (ks__lmtask_result_header *)block;
    if (h->magic != LMTASK_RESULT_MAGIC) return; /* not ours: leak rather than corrupt */
    h->magic = 0;
    ks_allocator a = h->alloc;
    ks__free(&a, block);
}

ks_rect ks__lmtask_mp_detect_rect(const ks_rect *area, int32_t image_width, int32_t image_height,
                                  int32_t input_size) {
    float w_px = area->width * (float)image_width, h_px = area->height * (float)image_height;
    float s = (w_px > h_px ? w_px : h_px) / (float)input_size;
    float d = 0.5f - 0.5f * s;
    return (ks_rect){area->x_center + d / (float)image_width,
                     area->y_center + d / (float)image_height, area->width, area->height, 0.0f};
}

ks_rect ks__lmtask_mp_crop_rect(const ks__rect *roi, int32_t image_width, int32_t image_height,
                                int32_t input_size) {
    float c = cosf(roi->rotation_rad), s = sinf(roi->rotation_rad);
    float sx = roi->width * (float)image_width / (float)input_size;
    float sy = roi->height * (float)image_height / (float)input_size;
    float dx = -0.5f * (c * sx - s * sy), dy = -0.5f * (s * sx + c * sy);
    return (ks_rect){roi->x_center + dx / (float)image_width,
                     roi->y_center + dy / (float)image_height, roi->width, roi->height,
                     roi->rotation_rad};
}

void ks__lmtask_mp_project(const float m[16], int32_t input_size, float *x, float *y) {
    float u = *x + 0.5f / (float)input_size, v = *y + 0.5f / (float)input_size;
    *x = m[0] * u + m[1] * v + m[3];
    *y = m[4] * u + m[5] * v + m[7];
}
