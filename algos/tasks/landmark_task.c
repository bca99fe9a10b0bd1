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
                                  float *scores_out, size_t cap, size_t *num_out, char *err,
                                  size_t err_cap) {
    *num_out = 0;
    ks_packet *roi_packet = NULL;
    ks_packet *outs[KS__LMTASK_MAX_OUTPUTS] = {0};
    size_t num_outputs = ks_pipeline_num_outputs(pipeline);
    if (num_outputs < KS__LMTASK_OUT_DET_MATRIX + 1 || num_outputs > KS__LMTASK_MAX_OUTPUTS) {
        snprintf(err, err_cap, "detector: the graph has %zu outputs (expected 3..%d)", num_outputs,
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
        snprintf(err, err_cap, "detector: out of memory");
        return st;
    }
    const ks_packet *ins[KS__LMTASK_NUM_INPUTS] = {image, roi_packet, NULL, NULL};
    st = ks_pipeline_process(pipeline, ins, ++*pipeline_ts, outs);
    ks_packet_release(roi_packet);
    if (st) {
        snprintf(err, err_cap, "detector: %s", ks_last_error(pipeline));
        goto done;
    }
    const float *boxes = NULL, *raw_scores = NULL;
    size_t nb = ks__lmtask_floats(outs[KS__LMTASK_OUT_DET_BOXES], &boxes);
    size_t ns = ks__lmtask_floats(outs[KS__LMTASK_OUT_DET_SCORES], &raw_scores);
    const ks_packet *mp = outs[KS__LMTASK_OUT_DET_MATRIX];
    const float *m = mp ? ks_packet_matrix(mp) : NULL;
    if (!boxes || !raw_scores || !m) {
        snprintf(err, err_cap, "detector produced no boxes/scores/matrix");
        st = KS_STATUS_INVALID_MODEL;
        goto done;
    }
    float scores[KS__LMTASK_MAX_CANDIDATES];
    if (cap > KS__LMTASK_MAX_CANDIDATES) cap = KS__LMTASK_MAX_CANDIDATES;
    char msg[256];
    st = ks__lmtask_detector_rois(d, boxes, nb, raw_scores, ns, m, iw, ih, rois, scores, cap,
                                  num_out, msg, sizeof(msg));
    if (!st && scores_out) memcpy(scores_out, scores, *num_out * sizeof(float));
    if (st) snprintf(err, err_cap, "detector output: %s", msg);
done:
    ks__lmtask_release_outputs(outs, num_outputs);
    return st;
}

ks_status ks__lmtask_run_landmarks(ks_pipeline *pipeline, const ks_allocator *alloc,
                                   int64_t *pipeline_ts, ks_packet *image, int32_t iw, int32_t ih,
                                   int32_t input_size, const ks__track_item *items,
                                   size_t num_items, ks_packet **outs, char *err, size_t err_cap) {
    ks_rect rects[KS__TRACK_MAX_OBJECTS];
    if (num_items > KS__TRACK_MAX_OBJECTS) num_items = KS__TRACK_MAX_OBJECTS;
    for (size_t i = 0; i < num_items; i++)
        rects[i] = ks__lmtask_mp_crop_rect(&items[i].roi, iw, ih, input_size);
    ks_packet *rois = NULL;
    ks_status st =
        ks_packet_create_rects(alloc, &(ks_packet_rects){(uint32_t)num_items, rects}, &rois);
    if (st) {
        snprintf(err, err_cap, "landmarks: out of memory");
        return st;
    }
    const ks_packet *ins[KS__LMTASK_NUM_INPUTS] = {NULL, NULL, image, rois};
    st = ks_pipeline_process(pipeline, ins, ++*pipeline_ts, outs);
    ks_packet_release(rois);
    if (st) snprintf(err, err_cap, "landmarks: %s", ks_last_error(pipeline));
    return st;
}

/* ---- The landmarker handle core ------------------------------------------------------------ */

void ks__lmtask_destroy(ks__lmtask *t) {
    if (!t) return;
    ks__lmtask_destroy(ks__task_swap_take(&t->swap));
    ks_allocator a = t->alloc;
    ks_pipeline_destroy(t->pipeline);
    ks_bundle_destroy(t->bundle);
    for (int32_t i = 0; i < KS__TRACK_MAX_OBJECTS; i++) {
        ks__landmark_smoother_destroy(t->smoother[i]);
        ks__landmark_smoother_destroy(t->world_smoother[i]);
    }
    ks__lmtask_detector_free(&t->detector, &a);
    ks__free(&a, t);
}

static ks_status check_desc(const ks__lmtask_spec *spec, const ks_task_options *task, int32_t model,
                            float min_presence, char *err, size_t err_cap) {
    ks_status st = ks__lmtask_check_options(task, spec->max_results_cap, err, err_cap);
    if (st) return st;
    if (model < 0 || model >= spec->num_models) {
        snprintf(err, err_cap, "desc.model %d is not a ks_%s_model", (int)model, spec->name);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (!(min_presence >= 0.0f && min_presence <= 1.0f)) {
        snprintf(err, err_cap, "desc.min_presence %g is outside [0, 1]", (double)min_presence);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    return KS_STATUS_OK;
}

/* Bundle, graph check, detector and filters of a handle whose options are set. */
static ks_status open_task(ks__lmtask *t, const ks_task_options *task, const char *model_name,
                           char *err, size_t err_cap) {
    const ks__lmtask_spec *spec = t->spec;
    char name[64];
    snprintf(name, sizeof(name), "%s_landmarker_%s.ksb", spec->name, model_name);
    ks_task_options opt = *task;
    opt.allocator = &t->alloc;
    ks_status st = ks__task_open(&opt, name, NULL, NULL, 0, &t->bundle, &t->pipeline, err, err_cap);
    if (st) return st;
    if (ks_pipeline_num_inputs(t->pipeline) != KS__LMTASK_NUM_INPUTS ||
        ks_pipeline_num_outputs(t->pipeline) != spec->num_outputs) {
        snprintf(err, err_cap,
                 "bundle graph has %u inputs and %u outputs; the %s task needs %d and %d "
                 "(see algos/%s/%s_landmarker.json)",
                 ks_pipeline_num_inputs(t->pipeline), ks_pipeline_num_outputs(t->pipeline),
                 spec->name, KS__LMTASK_NUM_INPUTS, (int)spec->num_outputs, spec->name, spec->name);
        return KS_STATUS_INVALID_MODEL;
    }
    st = ks__lmtask_detector_init(&t->detector, spec->ssd, spec->detection_roi,
                                  spec->detector_input, t->min_score, &t->alloc, err, err_cap);
    if (st || !t->smoothing) return st;
    /* MediaPipe's hand graph: One Euro min_cutoff 0.05, beta 80 for image landmarks; 0.1, 40 for
     * world landmarks. Its pose graph smooths image landmarks with a velocity filter instead; One
     * Euro for both keeps one filter family. */
    ks__one_euro_params img = {.min_cutoff = task->smoothing > 0.0f ? task->smoothing : 0.05f,
                               .beta = 80.0f,
                               .d_cutoff = 1.0f};
    ks__one_euro_params world = {.min_cutoff = 0.1f, .beta = 40.0f, .d_cutoff = 1.0f};
    for (int32_t i = 0; i < t->max_results; i++) {
        st = ks__landmark_smoother_create(&t->alloc, spec->num_smoothed, &img, &t->smoother[i]);
        if (!st)
            st = ks__landmark_smoother_create(&t->alloc, spec->num_world, &world,
                                              &t->world_smoother[i]);
        if (st) {
            snprintf(err, err_cap, "out of memory");
            return st;
        }
    }
    return KS_STATUS_OK;
}

ks_status ks__lmtask_create(const ks__lmtask_spec *spec, const ks_task_options *task, int32_t model,
                            const char *model_name, float min_presence, size_t handle_size,
                            ks__lmtask **out) {
    if (!out) {
        ks__object_error(NULL, "ks_%s_landmarker_create: out is NULL", spec->name);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    char err[512] = "";
    ks_status st = check_desc(spec, task, model, min_presence, err, sizeof(err));
    if (st) {
        ks__object_error(NULL, "ks_%s_landmarker_create: %s", spec->name, err);
        return st;
    }
    ks_allocator a = ks__allocator_or_default(task->allocator);
    ks__lmtask *t = ks__calloc(&a, 1, handle_size);
    if (!t) {
        ks__object_error(NULL, "ks_%s_landmarker_create: out of memory", spec->name);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    t->obj.magic = KS__OBJECT_MAGIC;
    t->spec = spec;
    t->alloc = a;
    t->mode = task->mode;
    t->max_results = task->max_results > 0 ? task->max_results : spec->default_max_results;
    t->min_score = task->min_score > 0.0f ? task->min_score : 0.5f;
    t->min_presence = min_presence > 0.0f ? min_presence : 0.5f;
    t->rotation = task->rotation;
    t->mirror = task->mirror != 0;
    t->roi = task->roi;
    t->smoothing = task->mode == KS_MODE_VIDEO && task->smoothing >= 0.0f;
    t->created = *task;
    t->created.key = NULL; /* not kept: a swap brings its own key fields */
    t->created.key_provider = NULL;
    t->created.key_user = NULL;
    t->created.model_path = NULL;
    t->model = model;
    t->model_name = model_name;
    t->min_presence_arg = min_presence;
    t->handle_size = handle_size;
    ks__track_loop_init(&t->tracker, t->max_results, task->mode == KS_MODE_VIDEO, spec->same_iou);
    if (spec->same_center > 0.0f) ks__track_loop_set_same_center(&t->tracker, spec->same_center);
    st = open_task(t, task, model_name, err, sizeof(err));
    if (st) {
        ks__object_error(NULL, "ks_%s_landmarker_create: %s", spec->name, err);
        ks__lmtask_destroy(t);
        return st;
    }
    *out = t;
    return KS_STATUS_OK;
}

ks_status ks__lmtask_swap_create(ks__lmtask *t, const char *fn, const ks_task_options *source,
                                 ks__lmtask **out) {
    ks_task_options opt;
    ks_status st = ks__task_swap_options(fn, t ? &t->created : NULL, source, &opt);
    if (st) return st;
    st = ks__lmtask_create(t->spec, &opt, t->model, t->model_name, t->min_presence_arg,
                           t->handle_size, out);
    return st ? ks__task_swap_failed(fn, source, st) : KS_STATUS_OK;
}

static void destroy_any(void *t) {
    ks__lmtask_destroy(t);
}

void ks__lmtask_swap_offer(ks__lmtask *t, ks__lmtask *replacement) {
    ks__task_swap_offer(&t->swap, replacement, destroy_any);
}

/* Frame start: takes an offered version's models (the old ones go with the replacement). */
static void take_swap(ks__lmtask *t) {
    ks__lmtask *fresh = ks__task_swap_take(&t->swap);
    if (!fresh) return;
    ks_bundle *b = t->bundle;
    ks_pipeline *p = t->pipeline;
    t->bundle = fresh->bundle;
    t->pipeline = fresh->pipeline;
    fresh->bundle = b;
    fresh->pipeline = p;
    ks__task_clock_swapped(&t->clock);
    ks__lmtask_destroy(fresh);
}

/* ---- tracking steps (ks__track_ops; task is the ks__lmtask) ---- */

/* Tiles per side of the tiled detector pass, and how much of the area's side each covers
 * (neighbours overlap by 2 * 0.6 - 1 = 20 %, so a person cut by one tile's edge is whole in the
 * next or in the whole-area pass). */
#define LMTASK_TILES 2
#define LMTASK_TILE_FRACTION 0.6f

/* The whole searched area, then (spec->tile_detector and max_results > 1) LMTASK_TILES^2 tiles
 * of it, each letterboxed into the detector on its own: people that are small in the frame are
 * ~1.7x larger in a tile. IMAGE mode and the first VIDEO frame run every pass; later VIDEO frames
 * one pass per detecting frame in turn (whole, tile 1, ... tile 4, whole, ...), so a frame costs
 * at most one detector run (an empty scene too) and a person who walks in small is found within
 * 5 detecting frames. Candidates best score first; the tracking loop merges those that are one
 * person found by several passes. */
static ks_status step_detect(void *task, ks_packet *image, int32_t iw, int32_t ih, ks__rect *rois,
                             size_t cap, size_t *num_out, char *err, size_t err_cap) {
    ks__lmtask *t = task;
    const ks_allocator *pa = ks_pipeline_packet_allocator(t->pipeline);
    bool tiled = t->spec->tile_detector && t->max_results > 1;
    if (!tiled)
        return ks__lmtask_run_detector(&t->detector, t->pipeline, pa, &t->pipeline_ts, image,
                                       &t->roi, iw, ih, rois, NULL, cap, num_out, err, err_cap);
    ks_box area = t->roi.w > 0.0f ? t->roi : (ks_box){0.0f, 0.0f, (float)iw, (float)ih};
    ks__rect found[KS__TRACK_MAX_CANDIDATES];
    float score[KS__TRACK_MAX_CANDIDATES];
    size_t n = 0;
    *num_out = 0;
    const int32_t num_passes = 1 + LMTASK_TILES * LMTASK_TILES;
    int32_t first = 0, last = num_passes - 1;
    if (t->mode == KS_MODE_VIDEO && t->tracker.num_frames > 0) {
        first = last = t->detect_pass;
        t->detect_pass = (t->detect_pass + 1) % num_passes;
    }
    for (int32_t pass = first; pass <= last; pass++) {
        ks_box b = area;
        if (pass > 0) {
            int32_t tx = (pass - 1) % LMTASK_TILES, ty = (pass - 1) / LMTASK_TILES;
            b.w = area.w * LMTASK_TILE_FRACTION;
            b.h = area.h * LMTASK_TILE_FRACTION;
            b.x = area.x + (area.w - b.w) * (float)tx / (float)(LMTASK_TILES - 1);
            b.y = area.y + (area.h - b.h) * (float)ty / (float)(LMTASK_TILES - 1);
        }
        size_t room = KS__TRACK_MAX_CANDIDATES - n, got = 0;
        if (room == 0) break;
        ks_status st =
            ks__lmtask_run_detector(&t->detector, t->pipeline, pa, &t->pipeline_ts, image, &b, iw,
                                    ih, found + n, score + n, room, &got, err, err_cap);
        if (st) return st;
        n += got;
    }
    /* Best first (insertion sort: at most KS__TRACK_MAX_CANDIDATES). */
    for (size_t i = 1; i < n; i++) {
        ks__rect r = found[i];
        float sc = score[i];
        size_t j = i;
        for (; j > 0 && score[j - 1] < sc; j--) {
            found[j] = found[j - 1];
            score[j] = score[j - 1];
        }
        found[j] = r;
        score[j] = sc;
    }
    for (size_t i = 0; i < n && i < cap; i++)
        rois[i] = found[i];
    *num_out = n < cap ? n : cap;
    return KS_STATUS_OK;
}

static ks_status step_landmarks(void *task, ks_packet *image, int32_t iw, int32_t ih,
                                const ks__track_item *items, size_t num_items, char *err,
                                size_t err_cap) {
    ks__lmtask *t = task;
    return ks__lmtask_run_landmarks(t->pipeline, ks_pipeline_packet_allocator(t->pipeline),
                                    &t->pipeline_ts, image, iw, ih, t->spec->decode.input_width,
                                    items, num_items, t->outs, err, err_cap);
}

static void step_new_track(void *task, int32_t slot) {
    ks__lmtask *t = task;
    ks__landmark_smoother_reset(t->smoother[slot]);
    ks__landmark_smoother_reset(t->world_smoother[slot]);
}

ks_status ks__lmtask_frame_run(ks__lmtask *t, const char *fn, const ks_image *image, bool has_out,
                               int64_t timestamp_us, ks__lmtask_frame *f) {
    f->fn = fn;
    f->image = NULL;
    f->num_items = 0;
    f->num_kept = 0;
    f->result_items = NULL;
    f->planes = NULL;
    f->plane_bytes = 0;
    if (!image || !has_out)
        return ks__lmtask_error(&t->obj, KS_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                                image ? "out" : "image");
    take_swap(t);
    char err[512];
    ks_status st = ks__track_loop_begin(&t->tracker, ks_pipeline_packet_allocator(t->pipeline),
                                        image, t->rotation, t->mirror, &t->roi, timestamp_us,
                                        &f->image, &f->width, &f->height, err, sizeof(err));
    if (st) return ks__lmtask_error(&t->obj, st, "%s: %s", fn, err);
    const ks__track_ops ops = {step_detect, step_landmarks, t->spec->finish, step_new_track,
                               t->spec->same};
    st = ks__track_loop_frame(&t->tracker, &ops, t, f->image, f->width, f->height, timestamp_us,
                              f->items, &f->num_items, err, sizeof(err));
    if (st) {
        ks__lmtask_error(&t->obj, st, "%s: %s", fn, err);
        ks__lmtask_frame_end(t, f, st);
        return st;
    }
    /* Stable insertion sort of the kept items by track id (all 0 in IMAGE mode). */
    for (size_t i = 0; i < f->num_items; i++) {
        if (!f->items[i].keep) continue;
        uint32_t j = f->num_kept++;
        for (; j > 0 && f->items[f->order[j - 1]].id > f->items[i].id; j--)
            f->order[j] = f->order[j - 1];
        f->order[j] = (uint32_t)i;
    }
    for (uint32_t k = 0; k < f->num_kept; k++)
        f->ids[k] = t->mode == KS_MODE_VIDEO ? f->items[f->order[k]].id : (int32_t)k + 1;
    return KS_STATUS_OK;
}

void *ks__lmtask_frame_result(ks__lmtask *t, ks__lmtask_frame *f, size_t result_size,
                              size_t item_size, bool has_planes, size_t plane_px_bytes,
                              ks_status *st) {
    size_t num_kept = f->num_kept;
    size_t items_off = ks__lmtask_align(sizeof(ks__lmtask_result_header) + result_size);
    size_t total = items_off + num_kept * item_size;
    size_t planes_off = has_planes ? ks__lmtask_align(total) : total;
    f->plane_bytes = plane_px_bytes * (size_t)f->width * (size_t)f->height;
    if (f->plane_bytes && num_kept > (SIZE_MAX - planes_off) / f->plane_bytes) {
        *st = ks__lmtask_error(&t->obj, KS_STATUS_LIMIT_EXCEEDED,
                               "%s: %u masks of %dx%d do not fit in memory", f->fn,
                               (unsigned)num_kept, (int)f->width, (int)f->height);
        return NULL;
    }
    total = planes_off + num_kept * f->plane_bytes;
    uint8_t *block = ks__lmtask_result_alloc(&t->alloc, total);
    if (!block) {
        *st = ks__lmtask_error(&t->obj, KS_STATUS_OUT_OF_MEMORY,
                               "%s: out of memory for the result (%zu bytes)", f->fn, total);
        return NULL;
    }
    f->result_items = num_kept ? block + items_off : NULL;
    f->planes = f->plane_bytes ? block + planes_off : NULL;
    return block + sizeof(ks__lmtask_result_header);
}

void ks__lmtask_frame_end(ks__lmtask *t, ks__lmtask_frame *f, ks_status st) {
    if (st) ks__track_loop_clear(&t->tracker);
    ks__lmtask_release_outputs(t->outs, t->spec->num_outputs);
    ks_packet_release(f->image);
    f->image = NULL;
}

size_t ks__lmtask_output(const ks__lmtask *t, uint32_t out, size_t index, const float **data_out) {
    return ks__lmtask_floats(ks_packet_list_item(t->outs[out], (uint32_t)index), data_out);
}

const float *ks__lmtask_output_matrix(const ks__lmtask *t, uint32_t out, size_t index) {
    const ks_packet *p = ks_packet_list_item(t->outs[out], (uint32_t)index);
    return p ? ks_packet_matrix(p) : NULL;
}

ks_status ks__lmtask_decode(const ks__lmtask *t, const float *raw, size_t num_raw, ks__landmark *lm,
                            char *err, size_t err_cap) {
    const ks__landmarks_decode_options *lo = &t->spec->decode;
    char msg[256];
    ks_status st =
        ks__tensors_to_landmarks(lo, raw, num_raw, lm, (size_t)lo->num_landmarks, msg, sizeof(msg));
    if (st) snprintf(err, err_cap, "%s landmarks: %s", t->spec->name, msg);
    return st;
}

void ks__lmtask_place(const ks__lmtask *t, const ks__track_item *item, const float m[16],
                      const float *world_raw, int32_t iw, int32_t ih, int64_t timestamp_us,
                      ks__landmark *lm, ks_point3f *world) {
    const ks__lmtask_spec *spec = t->spec;
    size_t num_world = spec->num_world;
    if (num_world > KS__LMTASK_MAX_LANDMARKS) num_world = KS__LMTASK_MAX_LANDMARKS;
    float roi_w_px = hypotf(m[0] * (float)iw, m[4] * (float)ih);
    for (size_t k = 0; k < (size_t)spec->decode.num_landmarks; k++) {
        ks__landmark *l = &lm[k];
        ks__lmtask_mp_project(m, spec->decode.input_width, &l->x, &l->y);
        l->z = l->z * roi_w_px / (float)iw; /* image-normalized, scale of x */
    }
    /* World landmarks come in the ROI's frame: undo its rotation about z. */
    float c = cosf(item->roi.rotation_rad), s = sinf(item->roi.rotation_rad);
    for (size_t k = 0; k < num_world; k++) {
        float x = world_raw[3 * k], y = world_raw[3 * k + 1];
        world[k] = (ks_point3f){c * x - s * y, s * x + c * y, world_raw[3 * k + 2]};
    }
    if (item->slot < 0 || !t->smoothing) return;
    float scale = 0.5f * (item->roi.width + item->roi.height);
    ks__landmark_smoother_apply(t->smoother[item->slot], lm, spec->num_smoothed, scale,
                                timestamp_us);
    ks__landmark wl[KS__LMTASK_MAX_LANDMARKS];
    for (size_t k = 0; k < num_world; k++)
        wl[k] = (ks__landmark){world[k].x, world[k].y, world[k].z, 0, 0};
    ks__landmark_smoother_apply(t->world_smoother[item->slot], wl, num_world, 1.0f, timestamp_us);
    for (size_t k = 0; k < num_world; k++)
        world[k] = (ks_point3f){wl[k].x, wl[k].y, wl[k].z};
}

ks_box ks__lmtask_pixel_box(const ks__landmark *lm, size_t n, int32_t iw, int32_t ih) {
    float x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
    for (size_t k = 0; k < n; k++) {
        float x = lm[k].x * (float)iw, y = lm[k].y * (float)ih;
        x0 = ks__min_acc(x0, x), y0 = ks__min_acc(y0, y);
        x1 = ks__max_acc(x1, x), y1 = ks__max_acc(y1, y);
    }
    x0 = fmaxf(x0, 0.0f), y0 = fmaxf(y0, 0.0f);
    x1 = fminf(x1, (float)iw), y1 = fminf(y1, (float)ih);
    return (ks_box){x0, y0, fmaxf(x1 - x0, 0.0f), fmaxf(y1 - y0, 0.0f)};
}
