/* Hand landmarker task (kestrel/hand.h).
 *
 * Same structure as the pose task (algos/pose/pose_landmarker.c): the bundle's graph runs the
 * palm detector path (letterboxed 192x192 tensor -> palm_detection) and the per-ROI landmark
 * path (split ROIs -> foreach: rotated 224x224 crop -> hand_landmark); decoding, NMS, ROIs,
 * association with tracked hands and smoothing happen here with the algos/common blocks, between
 * two process calls per frame (internal pipeline timestamps; the graph is stateless). The handle,
 * the detector and landmark steps, smoothing and result blocks are the pose task's too
 * (ks__lmtask, algos/tasks/landmark_task.h); this file holds what is hand-specific. */
#include <stdint.h>
#include <stdio.h>

#include "landmark_task.h"
#include "kestrel/hand.h"
#include "landmarks.h"

#define HAND_DET_INPUT 192
#define HAND_LM_INPUT 224
#define HAND_ASSOCIATION_IOU 0.5f /* MediaPipe AssociationNormRectCalculator threshold */

/* Graph outputs after the detector's (hand_landmarker.json; the rest: landmark_task.h). */
enum {
    OUT_LANDMARKS = KS__LMTASK_OUT_DET_MATRIX + 1,
    OUT_FLAGS,
    OUT_HANDEDNESS,
    OUT_WORLD,
    OUT_MATRICES,
    NUM_OUTPUTS
};

/* One hand of the frame being processed. */
typedef struct hand_work {
    float score;
    ks__landmark lm[KS_HAND_NUM_LANDMARKS];
    ks_point3f world[KS_HAND_NUM_LANDMARKS];
    float handedness_raw; /* MediaPipe's P("Left") under its mirrored-input convention */
} hand_work;

struct ks_hand_landmarker {
    ks__lmtask core; /* first: the handle is also the core (and its ks__object) */
    hand_work work[KS_HAND_MAX_RESULTS]; /* the frame being processed (ks_hands_detect) */
};

_Static_assert(KS_HAND_MAX_RESULTS <= KS__TRACK_MAX_OBJECTS &&
                   NUM_OUTPUTS <= KS__LMTASK_MAX_OUTPUTS &&
                   KS_HAND_NUM_LANDMARKS <= KS__LMTASK_MAX_LANDMARKS,
               "the hand task fits ks__lmtask");

static const uint8_t k_connections[] = {0,  1,  1,  2,  2,  3,  3,  4,  0,  5,  5,  6,  6,  7,
                                        7,  8,  5,  9,  9,  10, 10, 11, 11, 12, 9,  13, 13, 14,
                                        14, 15, 15, 16, 13, 17, 0,  17, 17, 18, 18, 19, 19, 20};

const uint8_t *ks_hand_connections(uint32_t *num_out) {
    if (num_out) *num_out = (uint32_t)(sizeof(k_connections) / 2);
    return k_connections;
}

const char *ks_hand_model_string(ks_hand_model model) {
    switch (model) {
    case KS_HAND_MODEL_FULL:
        return "full";
    case KS_HAND_MODEL_LITE:
        return "lite";
    default:
        return "invalid";
    }
}

const char *ks_handedness_string(ks_handedness handedness) {
    switch (handedness) {
    case KS_HANDEDNESS_LEFT:
        return "left";
    case KS_HANDEDNESS_RIGHT:
        return "right";
    default:
        return "invalid";
    }
}

/* ---- per-frame helpers ------------------------------------------------------------------ */

/* Next frame's ROI from the landmarks, as MediaPipe's HandLandmarkLandmarksToRoi: a subset
 * without the fingertips (they move most), rotation from the wrist towards the middle of the
 * index, middle and ring finger bases, rotated bounding box x2.0 shifted -0.1 along the hand. */
static ks_status next_roi(const ks__landmark *lm, int32_t iw, int32_t ih, ks__rect *out) {
    static const uint8_t subset[] = {0, 1, 2, 3, 5, 6, 9, 10, 13, 14, 17, 18};
    ks__landmark pts[sizeof(subset) + 1];
    for (size_t k = 0; k < sizeof(subset); k++)
        pts[k] = lm[subset[k]];
    ks__landmark *dir = &pts[sizeof(subset)];
    *dir = lm[9];
    dir->x = 0.5f * (0.5f * (lm[5].x + lm[13].x) + lm[9].x);
    dir->y = 0.5f * (0.5f * (lm[5].y + lm[13].y) + lm[9].y);
    ks__roi_options ro;
    ks__roi_preset_get(KS__ROI_PRESET_HAND_FROM_LANDMARKS, &ro);
    ro.start_index = 0;
    ro.end_index = (int32_t)sizeof(subset);
    char err[128];
    ks_status st =
        ks__roi_from_landmarks(&ro, pts, sizeof(subset) + 1, iw, ih, out, err, sizeof(err));
    if (st) return st;
    return out->width > 0.0f && out->height > 0.0f ? KS_STATUS_OK : KS_STATUS_INVALID_ARGUMENT;
}

/* ---- the task ------------------------------------------------------------------------------ */

/* ks__track_ops.finish: decodes hand `index` of the frame's landmark outputs. */
static ks_status step_finish(void *task, size_t index, const ks__track_item *item, int32_t iw,
                             int32_t ih, int64_t timestamp_us, ks__rect *next, bool *found,
                             char *err, size_t err_cap) {
    ks_hand_landmarker *hl = task;
    const ks__lmtask *t = &hl->core;
    hand_work *w = &hl->work[index];
    const float *raw = NULL, *flag = NULL, *handed = NULL, *world = NULL;
    size_t n_raw = ks__lmtask_output(t, OUT_LANDMARKS, index, &raw);
    size_t n_flag = ks__lmtask_output(t, OUT_FLAGS, index, &flag);
    size_t n_handed = ks__lmtask_output(t, OUT_HANDEDNESS, index, &handed);
    size_t n_world = ks__lmtask_output(t, OUT_WORLD, index, &world);
    const float *matrix = ks__lmtask_output_matrix(t, OUT_MATRICES, index);
    *found = false;
    if (!raw || !flag || !handed || !world || !matrix ||
        n_raw != (size_t)KS_HAND_NUM_LANDMARKS * 3 || n_flag < 1 || n_handed < 1 ||
        n_world != (size_t)KS_HAND_NUM_LANDMARKS * 3) {
        snprintf(err, err_cap,
                 "hand landmark model outputs have unexpected sizes (landmarks %zu, flag %zu, "
                 "handedness %zu, world %zu values; expected 63, 1, 1, 63)",
                 n_raw, n_flag, n_handed, n_world);
        return KS_STATUS_INVALID_MODEL;
    }
    w->score = flag[0];
    w->handedness_raw = handed[0];
    if (!(w->score >= t->min_presence)) return KS_STATUS_OK; /* lost */
    ks_status st = ks__lmtask_decode(t, raw, n_raw, w->lm, err, err_cap);
    if (st) return st;
    ks__lmtask_place(t, item, matrix, world, iw, ih, timestamp_us, w->lm, w->world);
    *found = next_roi(w->lm, iw, ih, next) == KS_STATUS_OK;
    return KS_STATUS_OK;
}

/* MediaPipe's hand graph: palm detector, 224x224 landmark crops, One Euro on all 21 landmarks. */
static const ks__lmtask_spec k_hand_spec = {
    .name = "hand",
    .max_results_cap = KS_HAND_MAX_RESULTS,
    .default_max_results = 2,
    .num_models = KS_HAND_MODEL_COUNT,
    .num_outputs = NUM_OUTPUTS,
    .ssd = KS__SSD_PRESET_PALM,
    .detection_roi = KS__ROI_PRESET_HAND_FROM_PALM,
    .detector_input = HAND_DET_INPUT,
    .decode = {.num_landmarks = KS_HAND_NUM_LANDMARKS,
               .input_width = HAND_LM_INPUT,
               .input_height = HAND_LM_INPUT},
    .num_smoothed = KS_HAND_NUM_LANDMARKS,
    .num_world = KS_HAND_NUM_LANDMARKS,
    .same_iou = HAND_ASSOCIATION_IOU,
    .finish = step_finish,
};

void ks_hand_landmarker_destroy(ks_hand_landmarker *hl) {
    ks__lmtask_destroy(hl ? &hl->core : NULL);
}

ks_status ks_hand_landmarker_create(const ks_hand_landmarker_desc *desc, ks_hand_landmarker **out) {
    ks_hand_landmarker_desc d = {0};
    if (desc) d = *desc;
    ks__lmtask *t = NULL;
    ks_status st =
        ks__lmtask_create(&k_hand_spec, &d.task, (int32_t)d.model, ks_hand_model_string(d.model),
                          d.min_presence, sizeof(ks_hand_landmarker), out ? &t : NULL);
    if (!st) *out = (ks_hand_landmarker *)t;
    return st;
}

ks_status ks_hand_landmarker_swap_model(ks_hand_landmarker *hl, const ks_task_options *source) {
    ks__lmtask *t = NULL;
    ks_status st =
        ks__lmtask_swap_create(hl ? &hl->core : NULL, "ks_hand_landmarker_swap_model", source, &t);
    if (!st) ks__lmtask_swap_offer(&hl->core, t);
    return st;
}

static ks_status hands_detect_run(ks_hand_landmarker *hl, const ks_image *image,
                                  int64_t timestamp_us, ks_hands **out) {
    if (!hl) return KS_STATUS_INVALID_ARGUMENT;
    ks__lmtask_frame f;
    ks_status st =
        ks__lmtask_frame_run(&hl->core, "ks_hands_detect", image, out != NULL, timestamp_us, &f);
    if (st) return st;
    ks_hands *res =
        ks__lmtask_frame_result(&hl->core, &f, sizeof(ks_hands), sizeof(ks_hand), false, 0, &st);
    if (!res) goto done;
    res->items = f.result_items;
    int32_t iw = f.width, ih = f.height;
    for (uint32_t i = 0; i < f.num_kept; i++) {
        const hand_work *w = &hl->work[f.order[i]];
        ks_hand *p = &res->items[i];
        p->id = f.ids[i];
        p->score = w->score;
        /* The model answers P("Left") for a mirrored view; it sees the un-mirrored image here,
         * so that probability is the person's right hand (see kestrel/hand.h). */
        float p_right = w->handedness_raw;
        p->handedness = p_right >= 0.5f ? KS_HANDEDNESS_RIGHT : KS_HANDEDNESS_LEFT;
        p->handedness_score = p_right >= 0.5f ? p_right : 1.0f - p_right;
        for (size_t k = 0; k < KS_HAND_NUM_LANDMARKS; k++) {
            const ks__landmark *l = &w->lm[k];
            p->landmarks[k] = (ks_point3f){l->x * (float)iw, l->y * (float)ih, l->z * (float)iw};
            p->world_landmarks[k] = w->world[k];
        }
        p->box = ks__lmtask_pixel_box(w->lm, KS_HAND_NUM_LANDMARKS, iw, ih);
    }
    res->count = f.num_kept;
    *out = res;
done:
    ks__lmtask_frame_end(&hl->core, &f, st);
    return st;
}

ks_status ks_hands_detect(ks_hand_landmarker *hl, const ks_image *image, int64_t timestamp_us,
                          ks_hands **out) {
    uint64_t t0 = ks__task_now_ns();
    ks_status st = hands_detect_run(hl, image, timestamp_us, out);
    if (hl) ks__task_clock_add(&hl->core.clock, t0);
    return st;
}

ks_status ks_hand_landmarker_stats(const ks_hand_landmarker *hl, ks_task_stats *stats_out) {
    if (!hl || !stats_out) return KS_STATUS_INVALID_ARGUMENT;
    return ks__task_stats(hl->core.pipeline, &hl->core.clock, stats_out);
}

void ks_hands_release(ks_hands *hands) {
    if (hands) ks__lmtask_result_free(hands);
}
