/* Pose landmarker task (kestrel/pose.h).
 *
 * The bundle's graph holds everything that touches pixels or models: the detector path
 * (letterboxed 224x224 tensor -> pose_detection) and the per-ROI landmark path (split ROIs ->
 * foreach: rotated 256x256 crop -> pose_landmark). The task calls it twice per frame, once per
 * path, with the geometry in between done here in C with the algos/common blocks: SSD decode,
 * NMS, ROI from detection / landmarks, association of detections with tracked people, One Euro
 * smoothing. Keeping the decision logic (detect only when someone is missing, drop lost tracks,
 * re-associate) in C keeps it testable and independent of the node library.
 *
 * The two process calls of a frame use internal, strictly increasing pipeline timestamps: the
 * graph has no time-dependent node, and the caller's timestamps only drive smoothing. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "detection.h"
#include "kestrel/bundle.h"
#include "kestrel/pipeline.h"
#include "kestrel/pose.h"
#include "landmarks.h"
#include "landmark_task.h"
#include "tracking.h"
#include "vision_util.h"

#define POSE_DET_INPUT 224
#define POSE_LM_INPUT 256
#define POSE_NUM_RAW_LANDMARKS 39 /* 33 + 2 auxiliary (ROI) + 4 unused */
#define POSE_NUM_ROI_LANDMARKS 35
#define POSE_MASK_SIZE 256
#define POSE_HEATMAP_SIZE 64
#define POSE_HEATMAP_KERNEL 7       /* MediaPipe RefineLandmarksFromHeatmap kernel_size */
#define POSE_HEATMAP_MIN_SCORE 0.5f /* ... min_confidence_to_refine */
#define POSE_ASSOCIATION_IOU 0.5f   /* MediaPipe AssociationNormRectCalculator threshold */

/* Graph stream order (pose_landmarker.json). */
enum { IN_DETECT_IMAGE, IN_DETECT_ROI, IN_IMAGE, IN_ROIS, NUM_INPUTS };
enum {
    OUT_DET_BOXES,
    OUT_DET_SCORES,
    OUT_DET_MATRIX,
    OUT_LANDMARKS,
    OUT_FLAGS,
    OUT_MASKS,
    OUT_WORLD,
    OUT_MATRICES,
    OUT_HEATMAPS,
    NUM_OUTPUTS
};

typedef struct pose_track {
    ks__landmark_smoother *smoother;       /* 35 image landmarks */
    ks__landmark_smoother *world_smoother; /* 33 world landmarks */
} pose_track;

/* One person of the frame being processed. */
typedef struct pose_work {
    float score;
    ks__landmark lm[POSE_NUM_RAW_LANDMARKS];
    ks_point3f world[KS_POSE_NUM_LANDMARKS];
    const float *mask_raw; /* 256x256, inside the landmark output packet */
    const float *matrix;
} pose_work;

struct ks_pose_landmarker {
    ks__object obj; /* first: ks_last_error() */
    ks_allocator alloc;
    ks_running_mode mode;
    int32_t max_results;
    float min_score, min_presence;
    int32_t output_mask;
    ks_rotation rotation;
    int32_t mirror;
    ks_box roi;
    bool smoothing;
    ks_bundle *bundle;
    ks_pipeline *pipeline;
    int64_t pipeline_ts;
    ks__track_loop tracker;
    ks__lmtask_detector detector;
    pose_track tracks[KS_POSE_MAX_RESULTS]; /* filters per tracker slot */
    /* the frame being processed (ks_pose_detect) */
    ks_packet *outs[NUM_OUTPUTS];
    pose_work work[KS_POSE_MAX_RESULTS];
};

static const uint8_t k_connections[] = {
    0,  1,  1,  2,  2,  3,  3,  7,  0,  4,  4,  5,  5,  6,  6,  8,  9,  10, 11, 12, 11, 13, 13, 15,
    15, 17, 15, 19, 15, 21, 17, 19, 12, 14, 14, 16, 16, 18, 16, 20, 16, 22, 18, 20, 11, 23, 12, 24,
    23, 24, 23, 25, 24, 26, 25, 27, 26, 28, 27, 29, 28, 30, 29, 31, 30, 32, 27, 31, 28, 32};

const uint8_t *ks_pose_connections(uint32_t *num_out) {
    if (num_out) *num_out = (uint32_t)(sizeof(k_connections) / 2);
    return k_connections;
}

const char *ks_pose_model_string(ks_pose_model model) {
    switch (model) {
    case KS_POSE_MODEL_FULL:
        return "full";
    case KS_POSE_MODEL_LITE:
        return "lite";
    case KS_POSE_MODEL_HEAVY:
        return "heavy";
    default:
        return "invalid";
    }
}

void ks_pose_landmarker_destroy(ks_pose_landmarker *pl) {
    if (!pl) return;
    ks_allocator a = pl->alloc;
    ks_pipeline_destroy(pl->pipeline);
    ks_bundle_destroy(pl->bundle);
    for (int i = 0; i < KS_POSE_MAX_RESULTS; i++) {
        ks__landmark_smoother_destroy(pl->tracks[i].smoother);
        ks__landmark_smoother_destroy(pl->tracks[i].world_smoother);
    }
    ks__lmtask_detector_free(&pl->detector, &a);
    ks__free(&a, pl);
}

ks_status ks_pose_landmarker_create(const ks_pose_landmarker_desc *desc, ks_pose_landmarker **out) {
    ks_pose_landmarker_desc d = {0};
    if (desc) d = *desc;
    if (!out) {
        ks__object_error(NULL, "ks_pose_landmarker_create: out is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    char err[512] = "";
    ks_status st = ks__lmtask_check_options(&d.task, KS_POSE_MAX_RESULTS, err, sizeof(err));
    if (!st && ((unsigned)d.model >= KS_POSE_MODEL_COUNT)) {
        snprintf(err, sizeof(err), "desc.model %d is not a ks_pose_model", (int)d.model);
        st = KS_STATUS_INVALID_ARGUMENT;
    }
    if (!st && (!(d.min_presence >= 0.0f && d.min_presence <= 1.0f))) {
        snprintf(err, sizeof(err), "desc.min_presence %g is outside [0, 1]",
                 (double)d.min_presence);
        st = KS_STATUS_INVALID_ARGUMENT;
    }
    if (st) {
        ks__object_error(NULL, "ks_pose_landmarker_create: %s", err);
        return st;
    }
    ks_allocator a = ks__allocator_or_default(d.task.allocator);
    ks_pose_landmarker *pl = ks__calloc(&a, 1, sizeof(*pl));
    if (!pl) {
        ks__object_error(NULL, "ks_pose_landmarker_create: out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    pl->obj.magic = KS__OBJECT_MAGIC;
    pl->alloc = a;
    pl->mode = d.task.mode;
    pl->max_results = d.task.max_results > 0 ? d.task.max_results : 1;
    pl->min_score = d.task.min_score > 0.0f ? d.task.min_score : 0.5f;
    pl->min_presence = d.min_presence > 0.0f ? d.min_presence : 0.5f;
    pl->output_mask = d.output_segmentation != 0;
    pl->rotation = d.task.rotation;
    pl->mirror = d.task.mirror != 0;
    pl->roi = d.task.roi;
    pl->smoothing = d.task.mode == KS_MODE_VIDEO && d.task.smoothing >= 0.0f;
    ks__track_loop_init(&pl->tracker, pl->max_results, d.task.mode == KS_MODE_VIDEO,
                        POSE_ASSOCIATION_IOU);

    char name[64];
    snprintf(name, sizeof(name), "pose_landmarker_%s.ksb", ks_pose_model_string(d.model));
    ks_task_options opt = d.task;
    opt.allocator = &pl->alloc;
    st = ks__task_open(&opt, name, NULL, NULL, 0, &pl->bundle, &pl->pipeline, err, sizeof(err));
    if (st) goto error;
    if (ks_pipeline_num_inputs(pl->pipeline) != NUM_INPUTS ||
        ks_pipeline_num_outputs(pl->pipeline) != NUM_OUTPUTS) {
        snprintf(err, sizeof(err),
                 "bundle graph has %u inputs and %u outputs; the pose task needs %d and %d "
                 "(see algos/pose/pose_landmarker.json)",
                 ks_pipeline_num_inputs(pl->pipeline), ks_pipeline_num_outputs(pl->pipeline),
                 NUM_INPUTS, NUM_OUTPUTS);
        st = KS_STATUS_INVALID_MODEL;
        goto error;
    }

    st = ks__lmtask_detector_init(&pl->detector, KS__SSD_PRESET_POSE,
                                  KS__ROI_PRESET_POSE_FROM_DETECTION, POSE_DET_INPUT, pl->min_score,
                                  &a, err, sizeof(err));
    if (st) goto error;

    if (pl->smoothing) {
        /* MediaPipe smooths pose landmarks with a velocity filter and world landmarks with One
         * Euro (min_cutoff 0.1, beta 40); One Euro for both keeps one filter family. */
        ks__one_euro_params img = {.min_cutoff = d.task.smoothing > 0.0f ? d.task.smoothing : 0.05f,
                                   .beta = 80.0f,
                                   .d_cutoff = 1.0f};
        ks__one_euro_params world = {.min_cutoff = 0.1f, .beta = 40.0f, .d_cutoff = 1.0f};
        for (int32_t i = 0; i < pl->max_results; i++) {
            st = ks__landmark_smoother_create(&a, POSE_NUM_ROI_LANDMARKS, &img,
                                              &pl->tracks[i].smoother);
            if (!st)
                st = ks__landmark_smoother_create(&a, KS_POSE_NUM_LANDMARKS, &world,
                                                  &pl->tracks[i].world_smoother);
            if (st) {
                snprintf(err, sizeof(err), "out of memory");
                goto error;
            }
        }
    }
    *out = pl;
    return KS_STATUS_OK;
error:
    ks__object_error(NULL, "ks_pose_landmarker_create: %s", err);
    ks_pose_landmarker_destroy(pl);
    return st;
}

/* ---- per-frame helpers ------------------------------------------------------------------ */

/* Maps the 256x256 ROI mask into an image-sized plane (bilinear; 0 outside the ROI). The
 * crop matrix maps ROI-normalized (u, v) to image-normalized points; its inverse takes each
 * image pixel centre back into the mask. The model's mask output is a logit map. */
static void project_mask(const float *roi_mask, const float *m, int32_t iw, int32_t ih,
                         float *out) {
    float a = m[0] * (float)iw, b = m[1] * (float)iw, c = m[3] * (float)iw;
    float d = m[4] * (float)ih, e = m[5] * (float)ih, f = m[7] * (float)ih;
    float det = a * e - b * d;
    if (!(fabsf(det) > 1e-12f)) {
        memset(out, 0, (size_t)iw * (size_t)ih * sizeof(float));
        return;
    }
    /* Inverse: pixel (x, y) -> (u, v) in ROI units. */
    float ia = e / det, ib = -b / det, id = -d / det, ie = a / det;
    const int32_t n = POSE_MASK_SIZE;
    for (int32_t y = 0; y < ih; y++) {
        float py = (float)y + 0.5f - f;
        for (int32_t x = 0; x < iw; x++) {
            float px = (float)x + 0.5f - c;
            float u = (ia * px + ib * py) * (float)n - 0.5f;
            float v = (id * px + ie * py) * (float)n - 0.5f;
            float val = 0.0f;
            if (u > -1.0f && v > -1.0f && u < (float)n && v < (float)n) {
                int32_t x0 = (int32_t)floorf(u), y0 = (int32_t)floorf(v);
                float fx = u - (float)x0, fy = v - (float)y0;
                float acc = 0.0f;
                for (int32_t k = 0; k < 4; k++) {
                    int32_t sx = x0 + (k & 1), sy = y0 + (k >> 1);
                    float w = ((k & 1) ? fx : 1.0f - fx) * ((k >> 1) ? fy : 1.0f - fy);
                    sx = sx < 0 ? 0 : (sx >= n ? n - 1 : sx);
                    sy = sy < 0 ? 0 : (sy >= n ? n - 1 : sy);
                    acc += w * roi_mask[(size_t)sy * (size_t)n + (size_t)sx];
                }
                val = ks__sigmoid(acc);
            }
            out[(size_t)y * (size_t)iw + (size_t)x] = val;
        }
    }
}

/* MediaPipe's RefineLandmarksFromHeatmapCalculator: each ROI-normalized landmark moves to the
 * confidence-weighted centroid of a 7x7 window of its heatmap channel around it, when the
 * window's best confidence reaches 0.5. hm is [64 x 64 x channels], channels-last logits. */
static void refine_from_heatmap(ks__landmark *lm, size_t n, const float *hm, size_t channels) {
    const int32_t size = POSE_HEATMAP_SIZE, half = (POSE_HEATMAP_KERNEL - 1) / 2;
    for (size_t i = 0; i < n && i < channels; i++) {
        if (!(lm[i].x >= 0.0f && lm[i].x < 1.0f && lm[i].y >= 0.0f && lm[i].y < 1.0f)) continue;
        int32_t cx = (int32_t)(lm[i].x * (float)size), cy = (int32_t)(lm[i].y * (float)size);
        int32_t x0 = cx - half < 0 ? 0 : cx - half,
                x1 = cx + half + 1 > size ? size : cx + half + 1;
        int32_t y0 = cy - half < 0 ? 0 : cy - half,
                y1 = cy + half + 1 > size ? size : cy + half + 1;
        float sum = 0.0f, best = 0.0f, wx = 0.0f, wy = 0.0f;
        for (int32_t y = y0; y < y1; y++) {
            for (int32_t x = x0; x < x1; x++) {
                float c = ks__sigmoid(hm[((size_t)y * (size_t)size + (size_t)x) * channels + i]);
                sum += c;
                best = fmaxf(best, c);
                wx += (float)x * c;
                wy += (float)y * c;
            }
        }
        if (best >= POSE_HEATMAP_MIN_SCORE && sum > 0.0f) {
            lm[i].x = wx / (float)size / sum;
            lm[i].y = wy / (float)size / sum;
        }
    }
}

/* ---- tracking steps (ks__track_ops) ------------------------------------------------------ */

static ks_status step_detect(void *task, ks_packet *image, int32_t iw, int32_t ih, ks__rect *rois,
                             size_t cap, size_t *num_out, char *err, size_t err_size) {
    ks_pose_landmarker *pl = task;
    return ks__lmtask_run_detector(&pl->detector, pl->pipeline, &pl->alloc, &pl->pipeline_ts, image,
                                   &pl->roi, iw, ih, rois, cap, num_out, err, err_size);
}

static ks_status step_landmarks(void *task, ks_packet *image, int32_t iw, int32_t ih,
                                const ks__track_item *items, size_t num_items, char *err,
                                size_t err_size) {
    ks_pose_landmarker *pl = task;
    return ks__lmtask_run_landmarks(pl->pipeline, &pl->alloc, &pl->pipeline_ts, image, iw, ih,
                                    POSE_LM_INPUT, items, num_items, pl->outs, err, err_size);
}

static void step_new_track(void *task, int32_t slot) {
    ks_pose_landmarker *pl = task;
    ks__landmark_smoother_reset(pl->tracks[slot].smoother);
    ks__landmark_smoother_reset(pl->tracks[slot].world_smoother);
}

static ks_status step_finish(void *task, size_t index, const ks__track_item *item, int32_t iw,
                             int32_t ih, int64_t timestamp_us, ks__rect *next, bool *found,
                             char *err, size_t err_size) {
    ks_pose_landmarker *pl = task;
    pose_work *w = &pl->work[index];
    const ks_packet *lp = ks_packet_list_item(pl->outs[OUT_LANDMARKS], (uint32_t)index);
    const ks_packet *fp = ks_packet_list_item(pl->outs[OUT_FLAGS], (uint32_t)index);
    const ks_packet *mp = ks_packet_list_item(pl->outs[OUT_MASKS], (uint32_t)index);
    const ks_packet *wp = ks_packet_list_item(pl->outs[OUT_WORLD], (uint32_t)index);
    const ks_packet *xp = ks_packet_list_item(pl->outs[OUT_MATRICES], (uint32_t)index);
    const ks_packet *hp = ks_packet_list_item(pl->outs[OUT_HEATMAPS], (uint32_t)index);
    const float *raw = NULL, *flag = NULL, *mask = NULL, *world = NULL, *heat = NULL;
    size_t n_heat = ks__lmtask_floats(hp, &heat);
    size_t n_raw = ks__lmtask_floats(lp, &raw);
    size_t n_flag = ks__lmtask_floats(fp, &flag);
    size_t n_mask = ks__lmtask_floats(mp, &mask);
    size_t n_world = ks__lmtask_floats(wp, &world);
    *found = false;
    w->matrix = xp ? ks_packet_matrix(xp) : NULL;
    if (!raw || !flag || n_flag < 1 || !w->matrix || n_raw != (size_t)POSE_NUM_RAW_LANDMARKS * 5 ||
        !world || n_world < (size_t)KS_POSE_NUM_LANDMARKS * 3 ||
        (mask && n_mask != (size_t)POSE_MASK_SIZE * POSE_MASK_SIZE)) {
        snprintf(err, err_size,
                 "pose landmark model outputs have unexpected sizes (landmarks %zu, flag %zu, "
                 "mask %zu, world %zu values; expected 195, 1, 65536, 117)",
                 n_raw, n_flag, n_mask, n_world);
        return KS_STATUS_INVALID_MODEL;
    }
    w->score = flag[0];
    if (!(w->score >= pl->min_presence)) return KS_STATUS_OK; /* lost */
    ks__landmarks_decode_options lo = {.num_landmarks = POSE_NUM_RAW_LANDMARKS,
                                       .input_width = POSE_LM_INPUT,
                                       .input_height = POSE_LM_INPUT,
                                       .visibility_activation = KS__ACTIVATION_SIGMOID,
                                       .presence_activation = KS__ACTIVATION_SIGMOID};
    char msg[256];
    ks_status st =
        ks__tensors_to_landmarks(&lo, raw, n_raw, w->lm, POSE_NUM_RAW_LANDMARKS, msg, sizeof(msg));
    if (st) {
        snprintf(err, err_size, "pose landmarks: %s", msg);
        return st;
    }
    if (heat && n_heat == (size_t)POSE_HEATMAP_SIZE * POSE_HEATMAP_SIZE * POSE_NUM_RAW_LANDMARKS)
        refine_from_heatmap(w->lm, KS_POSE_NUM_LANDMARKS, heat, POSE_NUM_RAW_LANDMARKS);
    float roi_w_px = hypotf(w->matrix[0] * (float)iw, w->matrix[4] * (float)ih);
    for (size_t k = 0; k < POSE_NUM_RAW_LANDMARKS; k++) {
        ks__landmark *l = &w->lm[k];
        ks__lmtask_mp_project(w->matrix, POSE_LM_INPUT, &l->x, &l->y);
        l->z = l->z * roi_w_px / (float)iw; /* image-normalized, scale of x */
    }
    /* World landmarks come in the ROI's frame: undo its rotation about z. */
    float c = cosf(item->roi.rotation_rad), s = sinf(item->roi.rotation_rad);
    for (size_t k = 0; k < KS_POSE_NUM_LANDMARKS; k++) {
        float x = world[3 * k], y = world[3 * k + 1];
        w->world[k] = (ks_point3f){c * x - s * y, s * x + c * y, world[3 * k + 2]};
    }
    w->mask_raw = mask;
    if (item->slot >= 0 && pl->smoothing) {
        float scale = 0.5f * (item->roi.width + item->roi.height);
        ks__landmark_smoother_apply(pl->tracks[item->slot].smoother, w->lm, POSE_NUM_ROI_LANDMARKS,
                                    scale, timestamp_us);
        ks__landmark wl[KS_POSE_NUM_LANDMARKS];
        for (size_t k = 0; k < KS_POSE_NUM_LANDMARKS; k++)
            wl[k] = (ks__landmark){w->world[k].x, w->world[k].y, w->world[k].z, 0, 0};
        ks__landmark_smoother_apply(pl->tracks[item->slot].world_smoother, wl,
                                    KS_POSE_NUM_LANDMARKS, 1.0f, timestamp_us);
        for (size_t k = 0; k < KS_POSE_NUM_LANDMARKS; k++)
            w->world[k] = (ks_point3f){wl[k].x, wl[k].y, wl[k].z};
    }
    ks__roi_options next_ro;
    ks__roi_preset_get(KS__ROI_PRESET_POSE_FROM_LANDMARKS, &next_ro);
    *found = ks__roi_from_landmarks(&next_ro, w->lm, POSE_NUM_ROI_LANDMARKS, iw, ih, next, msg,
                                    sizeof(msg)) == KS_STATUS_OK;
    return KS_STATUS_OK;
}

static const ks__track_ops k_pose_ops = {step_detect, step_landmarks, step_finish, step_new_track};

ks_status ks_pose_detect(ks_pose_landmarker *pl, const ks_image *image, int64_t timestamp_us,
                         ks_poses **out) {
    if (!pl) return KS_STATUS_INVALID_ARGUMENT;
    if (!image || !out)
        return ks__lmtask_error(&pl->obj, KS_STATUS_INVALID_ARGUMENT, "ks_pose_detect: %s is NULL",
                                image ? "out" : "image");
    ks_packet *img = NULL;
    int32_t iw = 0, ih = 0;
    char err[512];
    ks_status st = ks__track_loop_begin(&pl->tracker, &pl->alloc, image, pl->rotation, pl->mirror,
                                        &pl->roi, timestamp_us, &img, &iw, &ih, err, sizeof(err));
    if (st) return ks__lmtask_error(&pl->obj, st, "ks_pose_detect: %s", err);
    ks__track_item items[KS__TRACK_MAX_OBJECTS];
    size_t n = 0;
    st = ks__track_loop_frame(&pl->tracker, &k_pose_ops, pl, img, iw, ih, timestamp_us, items, &n,
                              err, sizeof(err));
    if (st) {
        ks__lmtask_error(&pl->obj, st, "ks_pose_detect: %s", err);
        goto done;
    }
    size_t num_kept = 0;
    for (size_t i = 0; i < n; i++)
        num_kept += items[i].keep;
    bool video = pl->mode == KS_MODE_VIDEO;

    /* One allocation: header, items, masks. */
    size_t mask_px = pl->output_mask ? (size_t)iw * (size_t)ih : 0;
    size_t items_off = ks__lmtask_align(sizeof(ks__lmtask_result_header) + sizeof(ks_poses));
    size_t masks_off = ks__lmtask_align(items_off + num_kept * sizeof(ks_pose));
    if (mask_px && num_kept > (SIZE_MAX - masks_off) / (mask_px * sizeof(float))) {
        st = ks__lmtask_error(&pl->obj, KS_STATUS_LIMIT_EXCEEDED,
                              "ks_pose_detect: %u masks of %dx%d do not fit in memory",
                              (unsigned)num_kept, (int)iw, (int)ih);
        goto done;
    }
    size_t total = masks_off + num_kept * mask_px * sizeof(float);
    uint8_t *block = ks__lmtask_result_alloc(&pl->alloc, total);
    if (!block) {
        st = ks__lmtask_error(&pl->obj, KS_STATUS_OUT_OF_MEMORY,
                              "ks_pose_detect: out of memory for the result (%zu bytes)", total);
        goto done;
    }
    ks_poses *res = (ks_poses *)(block + sizeof(ks__lmtask_result_header));
    res->items = num_kept ? (ks_pose *)(block + items_off) : NULL;
    res->mask_width_px = pl->output_mask ? iw : 0;
    res->mask_height_px = pl->output_mask ? ih : 0;
    uint32_t count = 0;
    for (size_t i = 0; i < n; i++) {
        const pose_work *w = &pl->work[i];
        if (!items[i].keep) continue;
        ks_pose *p = &res->items[count];
        memset(p, 0, sizeof(*p));
        p->id = video ? items[i].id : (int32_t)count + 1;
        p->score = w->score;
        float x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
        for (size_t k = 0; k < KS_POSE_NUM_LANDMARKS; k++) {
            const ks__landmark *l = &w->lm[k];
            ks_pose_landmark *o = &p->landmarks[k];
            o->x = l->x * (float)iw;
            o->y = l->y * (float)ih;
            o->z = l->z * (float)iw;
            o->visibility = l->visibility;
            o->presence = l->presence;
            x0 = fminf(x0, o->x), y0 = fminf(y0, o->y);
            x1 = fmaxf(x1, o->x), y1 = fmaxf(y1, o->y);
            p->world_landmarks[k] = w->world[k];
        }
        x0 = fmaxf(x0, 0.0f), y0 = fmaxf(y0, 0.0f);
        x1 = fminf(x1, (float)iw), y1 = fminf(y1, (float)ih);
        p->box = (ks_box){x0, y0, fmaxf(x1 - x0, 0.0f), fmaxf(y1 - y0, 0.0f)};
        if (mask_px && w->mask_raw) {
            float *plane = (float *)(block + masks_off) + (size_t)count * mask_px;
            project_mask(w->mask_raw, w->matrix, iw, ih, plane);
            p->mask = plane;
        }
        count++;
    }
    res->count = count;
    /* Sorted by id: tracked people keep their order across frames. */
    for (uint32_t i = 1; i < count; i++) {
        ks_pose tmp = res->items[i];
        uint32_t j = i;
        for (; j > 0 && res->items[j - 1].id > tmp.id; j--)
            res->items[j] = res->items[j - 1];
        res->items[j] = tmp;
    }
    *out = res;
done:
    if (st) ks__track_loop_clear(&pl->tracker);
    ks__lmtask_release_outputs(pl->outs, NUM_OUTPUTS);
    ks_packet_release(img);
    return st;
}

void ks_poses_release(ks_poses *poses) {
    if (poses) ks__lmtask_result_free(poses);
}
