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

size_t ks__lmtask_floats(const ks_packet *p, const float **data_out) {
    const ks_tensor *t = p ? ks_packet_tensor(p) : NULL;
    if (!t || t->info.dtype != KS_DTYPE_F32) {
        *data_out = NULL;
        return 0;
    }
    *data_out = t->data;
    return t->size_bytes / sizeof(float);
}

void ks__lmtask_release_outputs(ks_packet **outs, size_t num_outputs) {
    for (size_t i = 0; i < num_outputs; i++) {
        ks_packet_release(outs[i]);
        outs[i] = NULL;
    }
}

ks_status ks__lmtask_run_detector(ks__lmtask_detector *d, ks_pipeline *pipeline,
                                  const ks_allocator *alloc, int64_t *pipeline_ts, ks_packet *image,
                                  const ks_box *roi, int32_t iw, int32_t ih, ks__rect *rois,
                                  size_t cap, size_t *num_out, char *err, size_t err_size) {
    *num_out = 0;
    ks_packet *roi_packet = NULL;
    ks_packet *outs[KS__LMTASK_MAX_OUTPUTS] = {0};
    size_t num_outputs = ks_pipeline_num_outputs(pipeline);
    if (num_outputs < KS__LMTASK_OUT_DET_MATRIX + 1 || num_outputs > KS__LMTASK_MAX_OUTPUTS) {
        snprintf(err, err_size, "detector: the graph has %zu outputs (expected 3..%d)", num_outputs,
                 KS__LMTASK_MAX_OUTPUTS);
        return KS_STATUS_INVALID_MODEL;
    }
    ks_rect area = {0.5f, 0.5f, 1.0f, 1.0f, 0.0f};
    if (roi && roi->w > 0.0f)
        area = (ks_rect){(roi->x + 0.5f * roi->w) / (float)iw, (roi->y + 0.5f * roi->h) / (float)ih,
                         roi->w / (float)iw, roi->h / (float)ih, 0.0f};
    ks_rect crop = ks__lmtask_mp_detect_rect(&area, iw, ih, d->input_size);
    ks_status st = ks_packet_create_rects(alloc, &(ks_packet_rects){1, &crop}, &roi_packet);
    if (st) {
        snprintf(err, err_size, "detector: out of memory");
        return st;
    }
    const ks_packet *ins[KS__LMTASK_NUM_INPUTS] = {image, roi_packet, NULL, NULL};
    st = ks_pipeline_process(pipeline, ins, ++*pipeline_ts, outs);
    ks_packet_release(roi_packet);
    if (st) {
        snprintf(err, err_size, "detector: %s", ks_last_error(pipeline));
        goto done;
    }
    const float *boxes = NULL, *raw_scores = NULL;
    size_t nb = ks__lmtask_floats(outs[KS__LMTASK_OUT_DET_BOXES], &boxes);
    size_t ns = ks__lmtask_floats(outs[KS__LMTASK_OUT_DET_SCORES], &raw_scores);
    const ks_packet *mp = outs[KS__LMTASK_OUT_DET_MATRIX];
    const float *m = mp ? ks_packet_matrix(mp) : NULL;
    if (!boxes || !raw_scores || !m) {
        snprintf(err, err_size, "detector produced no boxes/scores/matrix");
        st = KS_STATUS_INVALID_MODEL;
        goto done;
    }
    float scores[KS__LMTASK_MAX_CANDIDATES];
    if (cap > KS__LMTASK_MAX_CANDIDATES) cap = KS__LMTASK_MAX_CANDIDATES;
    char msg[256];
    st = ks__lmtask_detector_rois(d, boxes, nb, raw_scores, ns, m, iw, ih, rois, scores, cap,
                                  num_out, msg, sizeof(msg));
    if (st) snprintf(err, err_size, "detector output: %s", msg);
done:
    ks__lmtask_release_outputs(outs, num_outputs);
    return st;
}

ks_status ks__lmtask_run_landmarks(ks_pipeline *pipeline, const ks_allocator *alloc,
                                   int64_t *pipeline_ts, ks_packet *image, int32_t iw, int32_t ih,
                                   int32_t input_size, const ks__track_item *items,
                                   size_t num_items, ks_packet **outs, char *err, size_t err_size) {
    ks_rect rects[KS__TRACK_MAX_OBJECTS];
    if (num_items > KS__TRACK_MAX_OBJECTS) num_items = KS__TRACK_MAX_OBJECTS;
    for (size_t i = 0; i < num_items; i++)
        rects[i] = ks__lmtask_mp_crop_rect(&items[i].roi, iw, ih, input_size);
    ks_packet *rois = NULL;
    ks_status st =
        ks_packet_create_rects(alloc, &(ks_packet_rects){(uint32_t)num_items, rects}, &rois);
    if (st) {
        snprintf(err, err_size, "landmarks: out of memory");
        return st;
    }
    const ks_packet *ins[KS__LMTASK_NUM_INPUTS] = {NULL, NULL, image, rois};
    st = ks_pipeline_process(pipeline, ins, ++*pipeline_ts, outs);
    ks_packet_release(rois);
    if (st) snprintf(err, err_size, "landmarks: %s", ks_last_error(pipeline));
    return st;
}
