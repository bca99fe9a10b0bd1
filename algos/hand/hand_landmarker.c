/* Hand landmarker task (kestrel/hand.h).
 *
 * Same structure as the pose task (algos/pose/pose_landmarker.c): the bundle's graph runs the
 * palm detector path (letterboxed 192x192 tensor -> palm_detection) and the per-ROI landmark
 * path (split ROIs -> foreach: rotated 224x224 crop -> hand_landmark); decoding, NMS, ROIs,
 * association with tracked hands and smoothing happen here with the algos/common blocks, between
 * two process calls per frame (internal pipeline timestamps; the graph is stateless). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "detection.h"
#include "kestrel/bundle.h"
#include "kestrel/pipeline.h"
#include "kestrel/hand.h"
#include "landmarks.h"
#include "../pose/landmark_task.h"
#include "tracking.h"
#include "vision_util.h"

#define HAND_DET_INPUT 192
#define HAND_LM_INPUT 224
#define HAND_ASSOCIATION_IOU 0.5f /* MediaPipe AssociationNormRectCalculator threshold */

/* Graph stream order (hand_landmarker.json). */
enum { IN_DETECT_IMAGE, IN_DETECT_ROI, IN_IMAGE, IN_ROIS, NUM_INPUTS };
enum {
    OUT_DET_BOXES,
    OUT_DET_SCORES,
    OUT_DET_MATRIX,
    OUT_LANDMARKS,
    OUT_FLAGS,
    OUT_HANDEDNESS,
    OUT_WORLD,
    OUT_MATRICES,
    NUM_OUTPUTS
};

typedef struct hand_track {
    ks__landmark_smoother *smoother;       /* 21 image landmarks */
    ks__landmark_smoother *world_smoother; /* 21 world landmarks */
} hand_track;

/* One hand of the frame being processed. */
typedef struct hand_work {
    float score;
    ks__landmark lm[KS_HAND_NUM_LANDMARKS];
    ks_point3f world[KS_HAND_NUM_LANDMARKS];
    float handedness_raw; /* MediaPipe's P("Left") under its mirrored-input convention */
} hand_work;

struct ks_hand_landmarker {
    ks__object obj; /* first: ks_last_error() */
    ks_allocator alloc;
    ks_running_mode mode;
    int32_t max_results;
    float min_score, min_presence;
    ks_rotation rotation;
    int32_t mirror;
    ks_box roi;
    bool smoothing;
    ks_bundle *bundle;
    ks_pipeline *pipeline;
    int64_t pipeline_ts;
    ks__track_loop tracker;
    ks__lmtask_detector detector;
    hand_track tracks[KS_HAND_MAX_RESULTS]; /* filters per tracker slot */
    /* the frame being processed (ks_hands_detect) */
    ks_packet *outs[NUM_OUTPUTS];
    hand_work work[KS_HAND_MAX_RESULTS];
};

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

void ks_hand_landmarker_destroy(ks_hand_landmarker *hl) {
    if (!hl) return;
    ks_allocator a = hl->alloc;
    ks_pipeline_destroy(hl->pipeline);
    ks_bundle_destroy(hl->bundle);
    for (int i = 0; i < KS_HAND_MAX_RESULTS; i++) {
        ks__landmark_smoother_destroy(hl->tracks[i].smoother);
        ks__landmark_smoother_destroy(hl->tracks[i].world_smoother);
    }
    ks__lmtask_detector_free(&hl->detector, &a);
    ks__free(&a, hl);
}

ks_status ks_hand_landmarker_create(const ks_hand_landmarker_desc *desc, ks_hand_landmarker **out) {
    ks_hand_landmarker_desc d = {0};
    if (desc) d = *desc;
    if (!out) {
        ks__object_error(NULL, "ks_hand_landmarker_create: out is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    char err[512] = "";
    ks_status st = ks__lmtask_check_options(&d.task, KS_HAND_MAX_RESULTS, err, sizeof(err));
    if (!st && ((unsigned)d.model >= KS_HAND_MODEL_COUNT)) {
        snprintf(err, sizeof(err), "desc.model %d is not a ks_hand_model", (int)d.model);
        st = KS_STATUS_INVALID_ARGUMENT;
    }
    if (!st && (!(d.min_presence >= 0.0f && d.min_presence <= 1.0f))) {
        snprintf(err, sizeof(err), "desc.min_presence %g is outside [0, 1]",
                 (double)d.min_presence);
        st = KS_STATUS_INVALID_ARGUMENT;
    }
    if (st) {
        ks__object_error(NULL, "ks_hand_landmarker_create: %s", err);
        return st;
    }
    ks_allocator a = ks__allocator_or_default(d.task.allocator);
    ks_hand_landmarker *hl = ks__calloc(&a, 1, sizeof(*hl));
    if (!hl) {
        ks__object_error(NULL, "ks_hand_landmarker_create: out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    hl->obj.magic = KS__OBJECT_MAGIC;
    hl->alloc = a;
    hl->mode = d.task.mode;
    hl->max_results = d.task.max_results > 0 ? d.task.max_results : 2;
    hl->min_score = d.task.min_score > 0.0f ? d.task.min_score : 0.5f;
    hl->min_presence = d.min_presence > 0.0f ? d.min_presence : 0.5f;
    hl->rotation = d.task.rotation;
    hl->mirror = d.task.mirror != 0;
    hl->roi = d.task.roi;
    hl->smoothing = d.task.mode == KS_MODE_VIDEO && d.task.smoothing >= 0.0f;
    ks__track_loop_init(&hl->tracker, hl->max_results, d.task.mode == KS_MODE_VIDEO,
                        HAND_ASSOCIATION_IOU);

    char name[64];
    snprintf(name, sizeof(name), "hand_landmarker_%s.ksb", ks_hand_model_string(d.model));
    ks_task_options opt = d.task;
    opt.allocator = &hl->alloc;
    st = ks__task_open(&opt, name, NULL, NULL, 0, &hl->bundle, &hl->pipeline, err, sizeof(err));
    if (st) goto error;
    if (ks_pipeline_num_inputs(hl->pipeline) != NUM_INPUTS ||
        ks_pipeline_num_outputs(hl->pipeline) != NUM_OUTPUTS) {
        snprintf(err, sizeof(err),
                 "bundle graph has %u inputs and %u outputs; the hand task needs %d and %d "
                 "(see algos/hand/hand_landmarker.json)",
                 ks_pipeline_num_inputs(hl->pipeline), ks_pipeline_num_outputs(hl->pipeline),
                 NUM_INPUTS, NUM_OUTPUTS);
        st = KS_STATUS_INVALID_MODEL;
        goto error;
    }

    st = ks__lmtask_detector_init(&hl->detector, KS__SSD_PRESET_PALM, KS__ROI_PRESET_HAND_FROM_PALM,
                                  HAND_DET_INPUT, hl->min_score, &a, err, sizeof(err));
    if (st) goto error;

    if (hl->smoothing) {
        /* MediaPipe's hand graph: One Euro min_cutoff 0.05, beta 80 for image landmarks;
         * 0.1, 40 for world landmarks. */
        ks__one_euro_params img = {.min_cutoff = d.task.smoothing > 0.0f ? d.task.smoothing : 0.05f,
                                   .beta = 80.0f,
                                   .d_cutoff = 1.0f};
        ks__one_euro_params world = {.min_cutoff = 0.1f, .beta = 40.0f, .d_cutoff = 1.0f};
        for (int32_t i = 0; i < hl->max_results; i++) {
            st = ks__landmark_smoother_create(&a, KS_HAND_NUM_LANDMARKS, &img,
                                              &hl->tracks[i].smoother);
            if (!st)
                st = ks__landmark_smoother_create(&a, KS_HAND_NUM_LANDMARKS, &world,
                                                  &hl->tracks[i].world_smoother);
            if (st) {
                snprintf(err, sizeof(err), "out of memory");
                goto error;
            }
        }
    }
    *out = hl;
    return KS_STATUS_OK;
error:
    ks__object_error(NULL, "ks_hand_landmarker_create: %s", err);
    ks_hand_landmarker_destroy(hl);
    return st;
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

/* ---- tracking steps (ks__track_ops) ------------------------------------------------------ */

static ks_status step_detect(void *task, ks_packet *image, int32_t iw, int32_t ih, ks__rect *rois,
                             size_t cap, size_t *num_out, char *err, size_t err_size) {
    ks_hand_landmarker *hl = task;
    return ks__lmtask_run_detector(&hl->detector, hl->pipeline, &hl->alloc, &hl->pipeline_ts, image,
                                   &hl->roi, iw, ih, rois, cap, num_out, err, err_size);
}

static ks_status step_landmarks(void *task, ks_packet *image, int32_t iw, int32_t ih,
                                const ks__track_item *items, size_t num_items, char *err,
                                size_t err_size) {
    ks_hand_landmarker *hl = task;
    return ks__lmtask_run_landmarks(hl->pipeline, &hl->alloc, &hl->pipeline_ts, image, iw, ih,
                                    HAND_LM_INPUT, items, num_items, hl->outs, err, err_size);
}

static void step_new_track(void *task, int32_t slot) {
    ks_hand_landmarker *hl = task;
    ks__landmark_smoother_reset(hl->tracks[slot].smoother);
    ks__landmark_smoother_reset(hl->tracks[slot].world_smoother);
}

static ks_status step_finish(void *task, size_t index, const ks__track_item *item, int32_t iw,
                             int32_t ih, int64_t timestamp_us, ks__rect *next, bool *found,
                             char *err, size_t err_size) {
    ks_hand_landmarker *hl = task;
    hand_work *w = &hl->work[index];
    const ks_packet *lp = ks_packet_list_item(hl->outs[OUT_LANDMARKS], (uint32_t)index);
    const ks_packet *fp = ks_packet_list_item(hl->outs[OUT_FLAGS], (uint32_t)index);
    const ks_packet *hp = ks_packet_list_item(hl->outs[OUT_HANDEDNESS], (uint32_t)index);
    const ks_packet *wp = ks_packet_list_item(hl->outs[OUT_WORLD], (uint32_t)index);
    const ks_packet *xp = ks_packet_list_item(hl->outs[OUT_MATRICES], (uint32_t)index);
    const float *raw = NULL, *flag = NULL, *handed = NULL, *world = NULL;
    size_t n_raw = ks__lmtask_floats(lp, &raw);
    size_t n_flag = ks__lmtask_floats(fp, &flag);
    size_t n_handed = ks__lmtask_floats(hp, &handed);
    size_t n_world = ks__lmtask_floats(wp, &world);
    const float *matrix = xp ? ks_packet_matrix(xp) : NULL;
    *found = false;
    if (!raw || !flag || !handed || !world || !matrix ||
        n_raw != (size_t)KS_HAND_NUM_LANDMARKS * 3 || n_flag < 1 || n_handed < 1 ||
        n_world != (size_t)KS_HAND_NUM_LANDMARKS * 3) {
        snprintf(err, err_size,
                 "hand landmark model outputs have unexpected sizes (landmarks %zu, flag %zu, "
                 "handedness %zu, world %zu values; expected 63, 1, 1, 63)",
                 n_raw, n_flag, n_handed, n_world);
        return KS_STATUS_INVALID_MODEL;
    }
    w->score = flag[0];
    w->handedness_raw = handed[0];
    if (!(w->score >= hl->min_presence)) return KS_STATUS_OK; /* lost */
    ks__landmarks_decode_options lo = {.num_landmarks = KS_HAND_NUM_LANDMARKS,
                                       .input_width = HAND_LM_INPUT,
                                       .input_height = HAND_LM_INPUT};
    char msg[256];
    ks_status st =
        ks__tensors_to_landmarks(&lo, raw, n_raw, w->lm, KS_HAND_NUM_LANDMARKS, msg, sizeof(msg));
    if (st) {
        snprintf(err, err_size, "hand landmarks: %s", msg);
        return st;
    }
    float roi_w_px = hypotf(matrix[0] * (float)iw, matrix[4] * (float)ih);
    for (size_t k = 0; k < KS_HAND_NUM_LANDMARKS; k++) {
        ks__landmark *l = &w->lm[k];
        ks__lmtask_mp_project(matrix, HAND_LM_INPUT, &l->x, &l->y);
        l->z = l->z * roi_w_px / (float)iw; /* image-normalized, scale of x */
    }
    /* World landmarks come in the ROI's frame: undo its rotation about z. */
    float c = cosf(item->roi.rotation_rad), s = sinf(item->roi.rotation_rad);
    for (size_t k = 0; k < KS_HAND_NUM_LANDMARKS; k++) {
        float x = world[3 * k], y = world[3 * k + 1];
        w->world[k] = (ks_point3f){c * x - s * y, s * x + c * y, world[3 * k + 2]};
    }
    if (item->slot >= 0 && hl->smoothing) {
        float scale = 0.5f * (item->roi.width + item->roi.height);
        ks__landmark_smoother_apply(hl->tracks[item->slot].smoother, w->lm, KS_HAND_NUM_LANDMARKS,
                                    scale, timestamp_us);
        ks__landmark wl[KS_HAND_NUM_LANDMARKS];
        for (size_t k = 0; k < KS_HAND_NUM_LANDMARKS; k++)
            wl[k] = (ks__landmark){w->world[k].x, w->world[k].y, w->world[k].z, 0, 0};
        ks__landmark_smoother_apply(hl->tracks[item->slot].world_smoother, wl,
                                    KS_HAND_NUM_LANDMARKS, 1.0f, timestamp_us);
        for (size_t k = 0; k < KS_HAND_NUM_LANDMARKS; k++)
            w->world[k] = (ks_point3f){wl[k].x, wl[k].y, wl[k].z};
    }
    *found = next_roi(w->lm, iw, ih, next) == KS_STATUS_OK;
    return KS_STATUS_OK;
}

static const ks__track_ops k_hand_ops = {step_detect, step_landmarks, step_finish, step_new_track};

ks_status ks_hands_detect(ks_hand_landmarker *hl, const ks_image *image, int64_t timestamp_us,
                          ks_hands **out) {
    if (!hl) return KS_STATUS_INVALID_ARGUMENT;
    if (!image || !out)
        return ks__lmtask_error(&hl->obj, KS_STATUS_INVALID_ARGUMENT, "ks_hands_detect: %s is NULL",
                                image ? "out" : "image");
    ks_packet *img = NULL;
    int32_t iw = 0, ih = 0;
    char err[512];
    ks_status st = ks__track_loop_begin(&hl->tracker, &hl->alloc, image, hl->rotation, hl->mirror,
                                        &hl->roi, timestamp_us, &img, &iw, &ih, err, sizeof(err));
    if (st) return ks__lmtask_error(&hl->obj, st, "ks_hands_detect: %s", err);
    ks__track_item items[KS__TRACK_MAX_OBJECTS];
    size_t n = 0;
    st = ks__track_loop_frame(&hl->tracker, &k_hand_ops, hl, img, iw, ih, timestamp_us, items, &n,
                              err, sizeof(err));
    if (st) {
        ks__lmtask_error(&hl->obj, st, "ks_hands_detect: %s", err);
        goto done;
    }
    size_t num_kept = 0;
    for (size_t i = 0; i < n; i++)
        num_kept += items[i].keep;
    bool video = hl->mode == KS_MODE_VIDEO;
    size_t items_off = ks__lmtask_align(sizeof(ks__lmtask_result_header) + sizeof(ks_hands));
    size_t total = items_off + num_kept * sizeof(ks_hand);
    uint8_t *block = ks__lmtask_result_alloc(&hl->alloc, total);
    if (!block) {
        st = ks__lmtask_error(&hl->obj, KS_STATUS_OUT_OF_MEMORY,
                              "ks_hands_detect: out of memory for the result (%zu bytes)", total);
        goto done;
    }
    ks_hands *res = (ks_hands *)(block + sizeof(ks__lmtask_result_header));
    res->items = num_kept ? (ks_hand *)(block + items_off) : NULL;
    uint32_t count = 0;
    for (size_t i = 0; i < n; i++) {
        const hand_work *w = &hl->work[i];
        if (!items[i].keep) continue;
        ks_hand *p = &res->items[count];
        memset(p, 0, sizeof(*p));
        p->id = video ? items[i].id : (int32_t)count + 1;
        p->score = w->score;
        /* The model answers P("Left") for a mirrored view; it sees the un-mirrored image here,
         * so that probability is the person's right hand (see kestrel/hand.h). */
        float p_right = w->handedness_raw;
        p->handedness = p_right >= 0.5f ? KS_HANDEDNESS_RIGHT : KS_HANDEDNESS_LEFT;
        p->handedness_score = p_right >= 0.5f ? p_right : 1.0f - p_right;
        float x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
        for (size_t k = 0; k < KS_HAND_NUM_LANDMARKS; k++) {
            const ks__landmark *l = &w->lm[k];
            ks_point3f *o = &p->landmarks[k];
            o->x = l->x * (float)iw;
            o->y = l->y * (float)ih;
            o->z = l->z * (float)iw;
            x0 = fminf(x0, o->x), y0 = fminf(y0, o->y);
            x1 = fmaxf(x1, o->x), y1 = fmaxf(y1, o->y);
            p->world_landmarks[k] = w->world[k];
        }
        x0 = fmaxf(x0, 0.0f), y0 = fmaxf(y0, 0.0f);
        x1 = fminf(x1, (float)iw), y1 = fminf(y1, (float)ih);
        p->box = (ks_box){x0, y0, fmaxf(x1 - x0, 0.0f), fmaxf(y1 - y0, 0.0f)};
        count++;
    }
    res->count = count;
    for (uint32_t i = 1; i < count; i++) {
        ks_hand tmp = res->items[i];
        uint32_t j = i;
        for (; j > 0 && res->items[j - 1].id > tmp.id; j--)
            res->items[j] = res->items[j - 1];
        res->items[j] = tmp;
    }
    *out = res;
done:
    if (st) ks__track_loop_clear(&hl->tracker);
    ks__lmtask_release_outputs(hl->outs, NUM_OUTPUTS);
    ks_packet_release(img);
    return st;
}

void ks_hands_release(ks_hands *hands) {
    if (hands) ks__lmtask_result_free(hands);
}
