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
 * graph has no time-dependent node, and the caller's timestamps only drive smoothing.
 *
 * The handle core, the frame loop and the steps shared with the hand task live in
 * landmark_task.c (ks__lmtask); this file holds what is pose-specific. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "src/common.h"
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
/* One person or two: ROI centres (hip centres) closer than this fraction of the ROI side. Pose
 * ROIs are whole-body squares ~1.25x a person's height, so two people side by side overlap by
 * IoU 0.6 or more (measured on coral_posenet_test_image: 0.62), while two passes of the detector
 * on one person put the centres within 0.09 of the side and tracked ROIs converge to ~0.01. */
#define POSE_SAME_CENTER 0.1f

/* Graph outputs after the detector's (pose_landmarker.json; the rest: landmark_task.h). */
enum {
    OUT_LANDMARKS = KS__LMTASK_OUT_DET_MATRIX + 1,
    OUT_FLAGS,
    OUT_MASKS,
    OUT_WORLD,
    OUT_MATRICES,
    OUT_HEATMAPS,
    NUM_OUTPUTS
};

/* One person of the frame being processed. */
typedef struct pose_work {
    float score;
    ks__landmark lm[POSE_NUM_RAW_LANDMARKS];
    ks_point3f world[KS_POSE_NUM_LANDMARKS];
    const float *mask_raw; /* 256x256, inside the landmark output packet */
    const float *matrix;
} pose_work;

struct ks_pose_landmarker {
    ks__lmtask core; /* first: the handle is also the core (and its ks__object) */
    int32_t output_mask;
    pose_work work[KS_POSE_MAX_RESULTS]; /* the frame being processed (ks_pose_detect) */
};

_Static_assert(KS_POSE_MAX_RESULTS <= KS__TRACK_MAX_OBJECTS &&
                   NUM_OUTPUTS <= KS__LMTASK_MAX_OUTPUTS &&
                   KS_POSE_NUM_LANDMARKS <= KS__LMTASK_MAX_LANDMARKS,
               "the pose task fits ks__lmtask");

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

/* ---- the task ------------------------------------------------------------------------------ */

/* ks__track_ops.finish: decodes person `index` of the frame's landmark outputs. */
static ks_status step_finish(void *task, size_t index, const ks__track_item *item, int32_t iw,
                             int32_t ih, int64_t timestamp_us, ks__rect *next, bool *found,
                             char *err, size_t err_cap) {
    ks_pose_landmarker *pl = task;
    const ks__lmtask *t = &pl->core;
    pose_work *w = &pl->work[index];
    const float *raw = NULL, *flag = NULL, *mask = NULL, *world = NULL, *heat = NULL;
    size_t n_heat = ks__lmtask_output(t, OUT_HEATMAPS, index, &heat);
    size_t n_raw = ks__lmtask_output(t, OUT_LANDMARKS, index, &raw);
    size_t n_flag = ks__lmtask_output(t, OUT_FLAGS, index, &flag);
    size_t n_mask = ks__lmtask_output(t, OUT_MASKS, index, &mask);
    size_t n_world = ks__lmtask_output(t, OUT_WORLD, index, &world);
    *found = false;
    w->matrix = ks__lmtask_output_matrix(t, OUT_MATRICES, index);
    if (!raw || !flag || n_flag < 1 || !w->matrix || n_raw != (size_t)POSE_NUM_RAW_LANDMARKS * 5 ||
        !world || n_world < (size_t)KS_POSE_NUM_LANDMARKS * 3 ||
        (mask && n_mask != (size_t)POSE_MASK_SIZE * POSE_MASK_SIZE)) {
        snprintf(err, err_cap,
                 "pose landmark model outputs have unexpected sizes (landmarks %zu, flag %zu, "
                 "mask %zu, world %zu values; expected 195, 1, 65536, 117)",
                 n_raw, n_flag, n_mask, n_world);
        return KS_STATUS_INVALID_MODEL;
    }
    w->score = flag[0];
    if (!(w->score >= t->min_presence)) return KS_STATUS_OK; /* lost */
    ks_status st = ks__lmtask_decode(t, raw, n_raw, w->lm, err, err_cap);
    if (st) return st;
    if (heat && n_heat == (size_t)POSE_HEATMAP_SIZE * POSE_HEATMAP_SIZE * POSE_NUM_RAW_LANDMARKS)
        refine_from_heatmap(w->lm, KS_POSE_NUM_LANDMARKS, heat, POSE_NUM_RAW_LANDMARKS);
    w->mask_raw = mask;
    ks__lmtask_place(t, item, w->matrix, world, iw, ih, timestamp_us, w->lm, w->world);
    ks__roi_options next_ro;
    ks__roi_preset_get(KS__ROI_PRESET_POSE_FROM_LANDMARKS, &next_ro);
    char msg[256];
    *found = ks__roi_from_landmarks(&next_ro, w->lm, POSE_NUM_ROI_LANDMARKS, iw, ih, next, msg,
                                    sizeof(msg)) == KS_STATUS_OK;
    return KS_STATUS_OK;
}

/* MediaPipe's pose graph: pose detector, 256x256 landmark crops (39 landmarks: 33, the 2 that
 * give the next ROI, 4 unused), filters on the 35 tracked ones and the 33 world landmarks. */
/* Two decoded poses of one frame are one person when their heads coincide: the nose closer
 * than a quarter of the wider shoulder span. (Their ROIs, from the hips and the body's extent,
 * can differ a lot when one crop saw only part of the person: measured on ultralytics_zidane, two
 * poses of one man had noses 10 px apart and hip centres 200 px apart.) Two people's heads are
 * never that close. */
static bool pose_same(void *task, size_t a, size_t b, int32_t iw, int32_t ih) {
    const ks_pose_landmarker *pl = task;
    const ks__landmark *p = pl->work[a].lm, *q = pl->work[b].lm;
    float fx = (float)iw, fy = (float)ih;
    float span_p = hypotf((p[11].x - p[12].x) * fx, (p[11].y - p[12].y) * fy);
    float span_q = hypotf((q[11].x - q[12].x) * fx, (q[11].y - q[12].y) * fy);
    float d = hypotf((p[0].x - q[0].x) * fx, (p[0].y - q[0].y) * fy);
    return d < 0.25f * fmaxf(span_p, span_q);
}

static const ks__lmtask_spec k_pose_spec = {
    .name = "pose",
    .max_results_cap = KS_POSE_MAX_RESULTS,
    .default_max_results = 1,
    .num_models = KS_POSE_MODEL_COUNT,
    .num_outputs = NUM_OUTPUTS,
    .ssd = KS__SSD_PRESET_POSE,
    .detection_roi = KS__ROI_PRESET_POSE_FROM_DETECTION,
    .detector_input = POSE_DET_INPUT,
    .decode = {.num_landmarks = POSE_NUM_RAW_LANDMARKS,
               .input_width = POSE_LM_INPUT,
               .input_height = POSE_LM_INPUT,
               .visibility_activation = KS__ACTIVATION_SIGMOID,
               .presence_activation = KS__ACTIVATION_SIGMOID},
    .num_smoothed = POSE_NUM_ROI_LANDMARKS,
    .num_world = KS_POSE_NUM_LANDMARKS,
    .same_iou = POSE_ASSOCIATION_IOU,
    .tile_detector = true,
    .same_center = POSE_SAME_CENTER,
    .same = pose_same,
    .finish = step_finish,
};

/* Without masks the landmark model's segmentation head (a third of its time) is not run. */
static ks_status prepare_pipeline(ks_pose_landmarker *pl, const char *fn) {
    ks_status st = KS_STATUS_OK;
    if (!pl->output_mask &&
        (st = ks_pipeline_set_output_needed(pl->core.pipeline, OUT_MASKS, 0)) != KS_STATUS_OK)
        ks__object_error(NULL, "%s: %s", fn, ks_last_error(pl->core.pipeline));
    return st;
}

ks_status ks_pose_landmarker_swap_model(ks_pose_landmarker *pl, const ks_task_options *source) {
    const char *fn = "ks_pose_landmarker_swap_model";
    ks__lmtask *t = NULL;
    ks_status st = ks__lmtask_swap_create(pl ? &pl->core : NULL, fn, source, &t);
    if (st) return st;
    ks_pose_landmarker *fresh = (ks_pose_landmarker *)t;
    fresh->output_mask = pl->output_mask;
    st = prepare_pipeline(fresh, fn);
    if (st) {
        ks__lmtask_destroy(t);
        return st;
    }
    ks__lmtask_swap_offer(&pl->core, t);
    return KS_STATUS_OK;
}

void ks_pose_landmarker_destroy(ks_pose_landmarker *pl) {
    ks__lmtask_destroy(pl ? &pl->core : NULL);
}

ks_status ks_pose_landmarker_create(const ks_pose_landmarker_desc *desc, ks_pose_landmarker **out) {
    ks_pose_landmarker_desc d = {0};
    if (desc) d = *desc;
    ks__lmtask *t = NULL;
    ks_status st =
        ks__lmtask_create(&k_pose_spec, &d.task, (int32_t)d.model, ks_pose_model_string(d.model),
                          d.min_presence, sizeof(ks_pose_landmarker), out ? &t : NULL);
    if (st) return st;
    ks_pose_landmarker *pl = (ks_pose_landmarker *)t;
    pl->output_mask = d.output_segmentation != 0;
    st = prepare_pipeline(pl, "ks_pose_landmarker_create");
    if (st) {
        ks__lmtask_destroy(t);
        return st;
    }
    *out = pl;
    return KS_STATUS_OK;
}

static ks_status pose_detect_run(ks_pose_landmarker *pl, const ks_image *image,
                                 int64_t timestamp_us, ks_poses **out) {
    if (!pl) return KS_STATUS_INVALID_ARGUMENT;
    ks__lmtask_frame f;
    ks_status st =
        ks__lmtask_frame_run(&pl->core, "ks_pose_detect", image, out != NULL, timestamp_us, &f);
    if (st) return st;
    ks_poses *res = ks__lmtask_frame_result(&pl->core, &f, sizeof(ks_poses), sizeof(ks_pose), true,
                                            pl->output_mask ? sizeof(float) : 0, &st);
    if (!res) goto done;
    int32_t iw = f.width, ih = f.height;
    res->items = f.result_items;
    res->mask_width_px = pl->output_mask ? iw : 0;
    res->mask_height_px = pl->output_mask ? ih : 0;
    for (uint32_t i = 0; i < f.num_kept; i++) {
        const pose_work *w = &pl->work[f.order[i]];
        ks_pose *p = &res->items[i];
        p->id = f.ids[i];
        p->score = w->score;
        for (size_t k = 0; k < KS_POSE_NUM_LANDMARKS; k++) {
            const ks__landmark *l = &w->lm[k];
            p->landmarks[k] = (ks_pose_landmark){l->x * (float)iw, l->y * (float)ih,
                                                 l->z * (float)iw, l->visibility, l->presence};
            p->world_landmarks[k] = w->world[k];
        }
        p->box = ks__lmtask_pixel_box(w->lm, KS_POSE_NUM_LANDMARKS, iw, ih);
        if (f.planes && w->mask_raw) {
            float *plane = (float *)(f.planes + (size_t)i * f.plane_bytes);
            project_mask(w->mask_raw, w->matrix, iw, ih, plane);
            p->mask = plane;
        }
    }
    res->count = f.num_kept;
    *out = res;
done:
    ks__lmtask_frame_end(&pl->core, &f, st);
    return st;
}

ks_status ks_pose_detect(ks_pose_landmarker *pl, const ks_image *image, int64_t timestamp_us,
                         ks_poses **out) {
    uint64_t t0 = ks__task_now_ns();
    ks_status st = pose_detect_run(pl, image, timestamp_us, out);
    if (pl) ks__task_clock_add(&pl->core.clock, t0);
    return st;
}

ks_status ks_pose_landmarker_stats(const ks_pose_landmarker *pl, ks_task_stats *stats_out) {
    if (!pl || !stats_out) return KS_STATUS_INVALID_ARGUMENT;
    return ks__task_stats(pl->core.pipeline, &pl->core.clock, stats_out);
}

void ks_poses_release(ks_poses *poses) {
    if (poses) ks__lmtask_result_free(poses);
}
