/* ks_face_landmarker: detector -> rotated ROIs -> face mesh (468, or 478 with irises) -> head
 * pose and expressions, for up to task.max_results faces, through the face_landmarker*.ksb
 * graph. The graph has three paths, each run by its own ks_pipeline_process call (internal,
 * increasing timestamps; the graph keeps no state between frames):
 *   - detect_image -> BlazeFace -> weighted NMS -> face ROIs (det_rois);
 *   - image + rois -> foreach face: 192x192 crop -> mesh model -> landmarks in the image, score;
 *   - image + faces (the final landmarks) -> foreach face: geometry (pose, Euler angles,
 *     projection) and expressions.
 * The tracking between them is the shared loop of the landmark tasks (task_common.h): in VIDEO
 * mode each face's ROI for the next frame comes from its landmarks, the detector runs only while
 * fewer faces than asked for are tracked (and then only every KS__TRACK_REDETECT_FRAMES frames
 * unless nothing is tracked), ROIs that converge on one face are merged, and every face has its
 * own id and One Euro filters. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "src/common.h" /* engine: ks__object, ks__calloc */
#include "face_internal.h"
#include "kestrel/face.h"
#include "landmarks.h"
#include "task_common.h"
#include "tracking.h"

/* Graph inputs, in order (algos/face/face_landmarker*.json). */
enum { IN_DETECT_IMAGE, IN_IMAGE, IN_ROIS, IN_FACES, NUM_INPUTS };
enum {
    OUT_DET_ROIS,
    OUT_LANDMARKS,
    OUT_SCORES,
    OUT_POSE,
    OUT_EULER,
    OUT_PROJECTION,
    OUT_EXPRESSIONS,
    OUT_COUNT
};
static const char *const output_names[OUT_COUNT] = {
    "det_rois", "lm_landmarks", "lm_scores", "pose", "euler", "projection", "expressions"};
#define LM_MAX_OUTPUTS 16
#define FACE_SAME_IOU 0.5f /* ROIs overlapping more than this are one face */

/* One face of the frame being processed. */
typedef struct face_work {
    float score;
    uint32_t num_landmarks;
    ks__landmark lm[KS_FACE_MESH_NUM_LANDMARKS_WITH_IRIS]; /* image-normalized, smoothed */
} face_work;

struct ks_face_landmarker {
    ks__object obj;       /* first: ks_last_error(lm) */
    ks__task_clock clock; /* ks_task_stats */
    ks_face_landmarker_desc desc;
    ks_allocator alloc;
    const ks_allocator *alloc_ptr;
    ks__task_swap swap; /* ks_face_landmarker_swap_model */
    /* the models: what a live swap replaces (take_swap) */
    ks_bundle *bundle;
    ks_pipeline *pipeline;
    int32_t out_index[OUT_COUNT];
    uint32_t num_outputs;
    int32_t max_faces;
    float tracking_score;
    int64_t pipeline_ts;
    ks__track_loop loop;
    ks__landmark_smoother *smoothers[KS__TRACK_MAX_OBJECTS]; /* per loop slot; VIDEO only */
    /* the frame being processed (ks_face_landmarker_detect) */
    ks_packet *outs[LM_MAX_OUTPUTS];
    face_work work[KS__TRACK_MAX_OBJECTS];
};

typedef struct meshes_block {
    ks_allocator alloc;
    int has_alloc;
    ks_face_meshes meshes;
} meshes_block;

void ks_face_landmarker_destroy(ks_face_landmarker *lm) {
    if (!lm) return;
    ks_face_landmarker_destroy(ks__task_swap_take(&lm->swap));
    ks_pipeline_destroy(lm->pipeline);
    ks_bundle_destroy(lm->bundle);
    for (int i = 0; i < KS__TRACK_MAX_OBJECTS; i++)
        ks__landmark_smoother_destroy(lm->smoothers[i]);
    ks__free(lm->alloc_ptr, lm);
}

ks_status ks_face_landmarker_create(const ks_face_landmarker_desc *desc, ks_face_landmarker **out) {
    ks_face_landmarker_desc d = desc ? *desc : (ks_face_landmarker_desc){0};
    if (!out) {
        ks__object_error(NULL, "ks_face_landmarker_create: out is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if ((unsigned)d.detector >= KS_FACE_DETECTOR_MODEL_COUNT ||
        (unsigned)d.task.mode >= KS_MODE_COUNT ||
        !(d.task.min_score >= 0.0f && d.task.min_score <= 1.0f) ||
        !(d.min_tracking_score >= 0.0f && d.min_tracking_score <= 1.0f) ||
        !isfinite(d.task.smoothing)) {
        ks__object_error(NULL,
                         "ks_face_landmarker_create: bad desc (detector %d, mode %d, min_score %g, "
                         "min_tracking_score %g, smoothing %g)",
                         (int)d.detector, (int)d.task.mode, (double)d.task.min_score,
                         (double)d.min_tracking_score, (double)d.task.smoothing);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (d.task.max_results < 0 || d.task.max_results > KS_FACE_MAX_FACES) {
        ks__object_error(NULL, "ks_face_landmarker_create: max_results %d is outside [0, %d]",
                         (int)d.task.max_results, KS_FACE_MAX_FACES);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    const ks_allocator *a = d.task.allocator;
    ks_face_landmarker *lm = ks__calloc(a, 1, sizeof(*lm));
    if (!lm) {
        ks__object_error(NULL, "ks_face_landmarker_create: out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    lm->obj.magic = KS__OBJECT_MAGIC;
    if (a) {
        lm->alloc = *a;
        lm->alloc_ptr = &lm->alloc;
    }
    d.task.allocator = lm->alloc_ptr;
    lm->desc = d;
    bool video = d.task.mode == KS_MODE_VIDEO;
    lm->max_faces = d.task.max_results > 0 ? d.task.max_results : 1;
    lm->tracking_score = d.min_tracking_score > 0.0f ? d.min_tracking_score : 0.5f;
    ks__track_loop_init(&lm->loop, lm->max_faces, video, FACE_SAME_IOU);
    bool full = d.detector == KS_FACE_DETECTOR_FULL_RANGE;
    char min_score[32], max_faces[32], err[768];
    snprintf(min_score, sizeof(min_score), "%.9g",
             d.task.min_score > 0.0f ? (double)d.task.min_score
                                     : (double)ks__face_default_min_score(d.detector));
    /* VIDEO: the tracked faces are among the detections, so ask for room for the new ones. */
    snprintf(max_faces, sizeof(max_faces), "%d", (int)(video ? 2 * lm->max_faces : lm->max_faces));
    const ks_side_param params[] = {
        {"min_score", min_score},
        {"max_faces", max_faces},
        {"det_size", full ? "192" : "128"},
        {"det_preset", full ? "\"face_full_range\"" : "\"face_short_range\""},
        {"det_model", full ? "\"face_detector_full\"" : "\"face_detector_short\""},
    };
    ks_status st = ks__task_open(
        &d.task, d.refine_landmarks ? "face_landmarker_attention.ksb" : "face_landmarker.ksb", NULL,
        params, sizeof(params) / sizeof(params[0]), &lm->bundle, &lm->pipeline, err, sizeof(err));
    if (st) {
        ks__object_error(NULL, "ks_face_landmarker_create: %s", err);
        goto error;
    }
    for (int i = 0; i < OUT_COUNT; i++)
        lm->out_index[i] = ks_pipeline_output_index(lm->pipeline, output_names[i]);
    lm->num_outputs = ks_pipeline_num_outputs(lm->pipeline);
    if (lm->out_index[OUT_DET_ROIS] < 0 || lm->out_index[OUT_LANDMARKS] < 0 ||
        lm->out_index[OUT_SCORES] < 0 || ks_pipeline_num_inputs(lm->pipeline) != NUM_INPUTS ||
        lm->num_outputs > LM_MAX_OUTPUTS) {
        ks__object_error(NULL,
                         "ks_face_landmarker_create: the bundle's graph must have %d inputs "
                         "(detect_image, image, rois, faces), the outputs det_rois, "
                         "lm_landmarks and lm_scores, and at most %d outputs (is it a face "
                         "landmarker bundle?)",
                         NUM_INPUTS, LM_MAX_OUTPUTS);
        st = KS_STATUS_INVALID_MODEL;
        goto error;
    }
    if (video && d.task.smoothing >= 0.0f) {
        /* MediaPipe's face mesh smoothing: One Euro, min_cutoff 0.05, beta 80. */
        ks__one_euro_params p = {.frequency_hz = 30.0f,
                                 .min_cutoff = d.task.smoothing > 0.0f ? d.task.smoothing : 0.05f,
                                 .beta = 80.0f,
                                 .d_cutoff = 1.0f};
        size_t nl =
            d.refine_landmarks ? KS_FACE_MESH_NUM_LANDMARKS_WITH_IRIS : KS_FACE_MESH_NUM_LANDMARKS;
        for (int32_t i = 0; i < lm->max_faces; i++) {
            st = ks__landmark_smoother_create(lm->alloc_ptr, nl, &p, &lm->smoothers[i]);
            if (st) {
                ks__object_error(NULL, "ks_face_landmarker_create: out of memory");
                goto error;
            }
        }
    }
    *out = lm;
    return KS_STATUS_OK;
error:
    ks_face_landmarker_destroy(lm);
    return st;
}

static void destroy_any(void *lm) {
    ks_face_landmarker_destroy(lm);
}

ks_status ks_face_landmarker_swap_model(ks_face_landmarker *lm, const ks_task_options *source) {
    ks_face_landmarker_desc d = lm ? lm->desc : (ks_face_landmarker_desc){0};
    ks_status st = ks__task_swap_options("ks_face_landmarker_swap_model",
                                         lm ? &lm->desc.task : NULL, source, &d.task);
    ks_face_landmarker *fresh = NULL;
    if (!st && (st = ks_face_landmarker_create(&d, &fresh)) != KS_STATUS_OK)
        return ks__task_swap_failed("ks_face_landmarker_swap_model", source, st);
    if (st) return st;
    ks__task_swap_offer(&lm->swap, fresh, destroy_any);
    return KS_STATUS_OK;
}

/* Frame start: takes an offered version's models (the old ones go with the replacement). */
static void take_swap(ks_face_landmarker *lm) {
    ks_face_landmarker *fresh = ks__task_swap_take(&lm->swap);
    if (!fresh) return;
    ks_bundle *b = lm->bundle;
    ks_pipeline *p = lm->pipeline;
    int32_t idx[OUT_COUNT];
    memcpy(idx, lm->out_index, sizeof(idx));
    uint32_t no = lm->num_outputs;
    lm->bundle = fresh->bundle;
    lm->pipeline = fresh->pipeline;
    memcpy(lm->out_index, fresh->out_index, sizeof(idx));
    lm->num_outputs = fresh->num_outputs;
    fresh->bundle = b;
    fresh->pipeline = p;
    memcpy(fresh->out_index, idx, sizeof(idx));
    fresh->num_outputs = no;
    ks__task_clock_swapped(&lm->clock);
    ks_face_landmarker_destroy(fresh);
}

static const ks_packet *output(const ks_face_landmarker *lm, int which) {
    int32_t i = lm->out_index[which];
    return i >= 0 ? lm->outs[i] : NULL;
}

static void release_outputs(ks_face_landmarker *lm) {
    for (uint32_t i = 0; i < lm->num_outputs && i < LM_MAX_OUTPUTS; i++) {
        ks_packet_release(lm->outs[i]);
        lm->outs[i] = NULL;
    }
}

static ks_status run_graph(ks_face_landmarker *lm, const ks_packet *const ins[NUM_INPUTS],
                           const char *what, char *err, size_t err_cap) {
    release_outputs(lm);
    ks_status st = ks_pipeline_process(lm->pipeline, ins, ++lm->pipeline_ts, lm->outs);
    if (st) snprintf(err, err_cap, "%s: %s", what, ks_last_error(lm->pipeline));
    return st;
}

/* ---- tracking steps (ks__track_ops) ------------------------------------------------------ */

static ks_status step_detect(void *task, ks_packet *image, int32_t iw, int32_t ih, ks__rect *rois,
                             size_t cap, size_t *num_out, char *err, size_t err_cap) {
    ks_face_landmarker *lm = task;
    (void)iw, (void)ih;
    *num_out = 0;
    const ks_packet *ins[NUM_INPUTS] = {image, NULL, NULL, NULL};
    ks_status st = run_graph(lm, ins, "face detector", err, err_cap);
    if (st) return st;
    const ks_packet_rects *r = ks_packet_rects_view(output(lm, OUT_DET_ROIS));
    for (uint32_t i = 0; r && i < r->num_rects && *num_out < cap; i++) {
        const ks_rect *q = &r->rects[i];
        rois[(*num_out)++] =
            (ks__rect){q->x_center, q->y_center, q->width, q->height, q->rotation_rad};
    }
    release_outputs(lm);
    return KS_STATUS_OK;
}

static ks_status step_landmarks(void *task, ks_packet *image, int32_t iw, int32_t ih,
                                const ks__track_item *items, size_t num_items, char *err,
                                size_t err_cap) {
    ks_face_landmarker *lm = task;
    (void)iw, (void)ih;
    ks_rect rects[KS__TRACK_MAX_OBJECTS];
    if (num_items > KS__TRACK_MAX_OBJECTS) num_items = KS__TRACK_MAX_OBJECTS;
    for (size_t i = 0; i < num_items; i++) {
        const ks__rect *r = &items[i].roi;
        rects[i] = (ks_rect){r->x_center, r->y_center, r->width, r->height, r->rotation_rad};
    }
    ks_packet *rois = NULL;
    ks_status st = ks_packet_create_rects(ks_pipeline_packet_allocator(lm->pipeline),
                                          &(ks_packet_rects){(uint32_t)num_items, rects}, &rois);
    if (st) {
        snprintf(err, err_cap, "face landmarks: out of memory");
        return st;
    }
    const ks_packet *ins[NUM_INPUTS] = {NULL, image, rois, NULL};
    st = run_graph(lm, ins, "face landmarks", err, err_cap);
    ks_packet_release(rois);
    return st;
}

static void step_new_track(void *task, int32_t slot) {
    ks_face_landmarker *lm = task;
    ks__landmark_smoother_reset(lm->smoothers[slot]);
}

/* Smooths in pixels, so x and y share a unit, with the landmarks' mean box side as the scale
 * (the landmark_smoother node's convention). */
static void smooth(ks__landmark_smoother *sm, ks__landmark *p, size_t n, int32_t iw, int32_t ih,
                   int64_t timestamp_us) {
    float x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        p[i].x *= (float)iw, p[i].y *= (float)ih, p[i].z *= (float)iw;
        x0 = ks__min_acc(x0, p[i].x), x1 = ks__max_acc(x1, p[i].x);
        y0 = ks__min_acc(y0, p[i].y), y1 = ks__max_acc(y1, p[i].y);
    }
    float scale = 0.5f * ((x1 - x0) + (y1 - y0));
    if (!(scale > 1e-6f)) scale = 1e-6f;
    ks__landmark_smoother_apply(sm, p, n, scale, timestamp_us);
    for (size_t i = 0; i < n; i++)
        p[i].x /= (float)iw, p[i].y /= (float)ih, p[i].z /= (float)iw;
}

static ks_status step_finish(void *task, size_t index, const ks__track_item *item, int32_t iw,
                             int32_t ih, int64_t timestamp_us, ks__rect *next, bool *found,
                             char *err, size_t err_cap) {
    ks_face_landmarker *lm = task;
    face_work *w = &lm->work[index];
    *found = false;
    const ks_packet_landmarks *pl =
        ks_packet_landmarks_view(ks_packet_list_item(output(lm, OUT_LANDMARKS), (uint32_t)index));
    const ks_packet *sp = ks_packet_list_item(output(lm, OUT_SCORES), (uint32_t)index);
    if (!pl || !sp || pl->num_landmarks < KS_FACE_MESH_NUM_LANDMARKS ||
        pl->num_landmarks > KS_FACE_MESH_NUM_LANDMARKS_WITH_IRIS) {
        snprintf(err, err_cap,
                 "face landmarks: face %zu has %u landmarks%s (expected 468 or 478 and a score)",
                 index, pl ? (unsigned)pl->num_landmarks : 0u, sp ? "" : " and no score");
        return KS_STATUS_INVALID_MODEL;
    }
    w->score = (float)ks_packet_float(sp);
    if (!(w->score >= lm->tracking_score)) return KS_STATUS_OK; /* lost */
    w->num_landmarks = pl->num_landmarks;
    for (uint32_t i = 0; i < pl->num_landmarks; i++) {
        const ks_landmark *q = &pl->landmarks[i];
        w->lm[i] = (ks__landmark){q->x, q->y, q->z, q->visibility, q->presence};
    }
    /* The next ROI follows the raw mesh: smoothing lag must not pull the crop off the face. */
    ks__roi_options ro;
    ks__roi_preset_get(KS__ROI_PRESET_FACE_FROM_LANDMARKS, &ro);
    char msg[128];
    if (ks__roi_from_landmarks(&ro, w->lm, w->num_landmarks, iw, ih, next, msg, sizeof(msg)) !=
        KS_STATUS_OK)
        return KS_STATUS_OK;
    *found = true;
    if (item->slot >= 0 && lm->smoothers[item->slot])
        smooth(lm->smoothers[item->slot], w->lm, w->num_landmarks, iw, ih, timestamp_us);
    return KS_STATUS_OK;
}

static const ks__track_ops k_face_ops = {step_detect, step_landmarks, step_finish, step_new_track,
                                         NULL};

_Static_assert(sizeof(ks__landmark) == sizeof(ks_landmark) &&
                   offsetof(ks__landmark, x) == offsetof(ks_landmark, x) &&
                   offsetof(ks__landmark, y) == offsetof(ks_landmark, y) &&
                   offsetof(ks__landmark, z) == offsetof(ks_landmark, z) &&
                   offsetof(ks__landmark, visibility) == offsetof(ks_landmark, visibility) &&
                   offsetof(ks__landmark, presence) == offsetof(ks_landmark, presence),
               "ks__landmark and ks_landmark share one layout");

/* Geometry path over the kept faces' final landmarks (lm->outs gets its lists). */
static ks_status run_geometry(ks_face_landmarker *lm, ks_packet *image, const ks__track_item *items,
                              size_t n, char *err, size_t err_cap) {
    ks_packet *faces[KS__TRACK_MAX_OBJECTS] = {NULL};
    uint32_t num_faces = 0;
    ks_packet *list = NULL;
    ks_status st = KS_STATUS_OK;
    for (size_t i = 0; i < n; i++) {
        if (!items[i].keep) continue;
        const face_work *w = &lm->work[i];
        /* ks__landmark and ks_landmark have the same fields in the same order (asserted above):
         * the packet copies the work array's bytes as they are, no per-point copy first. */
        st = ks_packet_create_landmarks(
            ks_pipeline_packet_allocator(lm->pipeline),
            &(ks_packet_landmarks){w->num_landmarks, (const ks_landmark *)(const void *)w->lm},
            &faces[num_faces]);
        if (st) goto oom;
        num_faces++;
    }
    release_outputs(lm);
    if (num_faces == 0) return KS_STATUS_OK;
    st = ks_packet_create_list(ks_pipeline_packet_allocator(lm->pipeline), faces, num_faces, &list);
    if (st) goto oom;
    const ks_packet *ins[NUM_INPUTS] = {NULL, image, NULL, list};
    st = run_graph(lm, ins, "face geometry", err, err_cap);
    goto done;
oom:
    snprintf(err, err_cap, "face geometry: out of memory");
done:
    ks_packet_release(list);
    for (uint32_t i = 0; i < num_faces; i++)
        ks_packet_release(faces[i]);
    return st;
}

static const float *tensor_floats(const ks_packet *p, size_t min_count) {
    const ks_tensor *t = p ? ks_packet_tensor(p) : NULL;
    if (!t || t->info.dtype != KS_DTYPE_F32 || t->size_bytes < min_count * sizeof(float))
        return NULL;
    return t->data;
}

static void fill_mesh(const ks_face_landmarker *lm, const face_work *w, uint32_t geometry_index,
                      int32_t iw, int32_t ih, ks_face_mesh *f) {
    float x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
    for (uint32_t i = 0; i < w->num_landmarks; i++) {
        /* The mesh model's landmarks times the size are pixel indices (MediaPipe's sampling
         * grid, kept for the tracking ROIs); + 0.5 gives continuous coordinates, as every task
         * reports (docs/tasks.md, "Pixel coordinates"). */
        ks_point3f p = {w->lm[i].x * (float)iw + 0.5f, w->lm[i].y * (float)ih + 0.5f,
                        w->lm[i].z * (float)iw};
        f->landmarks[i] = p;
        x0 = ks__min_acc(x0, p.x), x1 = ks__max_acc(x1, p.x);
        y0 = ks__min_acc(y0, p.y), y1 = ks__max_acc(y1, p.y);
    }
    f->num_landmarks = w->num_landmarks;
    f->box = (ks_box){x0, y0, x1 - x0, y1 - y0};
    f->score = w->score;
    const ks_packet *pose = ks_packet_list_item(output(lm, OUT_POSE), geometry_index);
    const ks_packet *proj = ks_packet_list_item(output(lm, OUT_PROJECTION), geometry_index);
    const float *pm = pose ? ks_packet_matrix(pose) : NULL;
    const float *jm = proj ? ks_packet_matrix(proj) : NULL;
    const float *euler =
        tensor_floats(ks_packet_list_item(output(lm, OUT_EULER), geometry_index), 3);
    const float *ex =
        tensor_floats(ks_packet_list_item(output(lm, OUT_EXPRESSIONS), geometry_index), 6);
    if (pm) memcpy(f->pose_matrix, pm, sizeof(f->pose_matrix));
    if (jm) memcpy(f->projection_matrix, jm, sizeof(f->projection_matrix));
    if (euler) {
        f->pitch_deg = euler[0];
        f->yaw_deg = euler[1];
        f->roll_deg = euler[2];
    }
    if (ex) {
        /* node order: mouth_open, left blink, right blink, left brow, right brow, smile */
        f->expressions.mouth_open = ex[0];
        f->expressions.left_eye_blink = ex[1];
        f->expressions.right_eye_blink = ex[2];
        f->expressions.brow_raise = 0.5f * (ex[3] + ex[4]);
        f->expressions.smile = ex[5];
    }
}

static ks_status face_landmarker_detect_run(ks_face_landmarker *lm, const ks_image *image,
                                            int64_t timestamp_us, ks_face_meshes **out) {
    if (!lm || !out) {
        if (lm) ks__object_error(&lm->obj, "ks_face_landmarker_detect: out is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    take_swap(lm);
    char err[768];
    ks_packet *img = NULL;
    int32_t iw = 0, ih = 0;
    ks_status st = ks__track_loop_begin(&lm->loop, ks_pipeline_packet_allocator(lm->pipeline),
                                        image, lm->desc.task.rotation, lm->desc.task.mirror, NULL,
                                        timestamp_us, &img, &iw, &ih, err, sizeof(err));
    if (st) {
        ks__object_error(&lm->obj, "ks_face_landmarker_detect: %s", err);
        return st;
    }
    ks__track_item items[KS__TRACK_MAX_OBJECTS];
    size_t n = 0;
    st = ks__track_loop_frame(&lm->loop, &k_face_ops, lm, img, iw, ih, timestamp_us, items, &n, err,
                              sizeof(err));
    if (!st) st = run_geometry(lm, img, items, n, err, sizeof(err));
    if (st) {
        ks__object_error(&lm->obj, "ks_face_landmarker_detect: %s", err);
        goto done;
    }
    uint32_t count = 0;
    size_t num_points = 0;
    for (size_t i = 0; i < n; i++) {
        if (!items[i].keep) continue;
        count++;
        num_points += lm->work[i].num_landmarks;
    }
    size_t head = sizeof(meshes_block) + (size_t)count * sizeof(ks_face_mesh);
    meshes_block *b = ks__calloc(lm->alloc_ptr, 1, head + num_points * sizeof(ks_point3f));
    if (!b) {
        ks__object_error(&lm->obj, "ks_face_landmarker_detect: out of memory");
        st = KS_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    if (lm->alloc_ptr) {
        b->alloc = lm->alloc;
        b->has_alloc = 1;
    }
    b->meshes.items = (ks_face_mesh *)(b + 1);
    b->meshes.count = count;
    ks_point3f *points = (ks_point3f *)((char *)b + head);
    bool video = lm->desc.task.mode == KS_MODE_VIDEO;
    uint32_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (!items[i].keep) continue;
        ks_face_mesh *f = &b->meshes.items[j];
        f->landmarks = points;
        fill_mesh(lm, &lm->work[i], j, iw, ih, f);
        f->id = video ? items[i].id : -1;
        points += f->num_landmarks;
        j++;
    }
    /* VIDEO: sorted by id, so tracked faces keep their order across frames. */
    for (uint32_t i = 1; video && i < count; i++) {
        ks_face_mesh tmp = b->meshes.items[i];
        uint32_t k = i;
        for (; k > 0 && b->meshes.items[k - 1].id > tmp.id; k--)
            b->meshes.items[k] = b->meshes.items[k - 1];
        b->meshes.items[k] = tmp;
    }
    *out = &b->meshes;
done:
    if (st) ks__track_loop_clear(&lm->loop);
    release_outputs(lm);
    ks_packet_release(img);
    return st;
}

ks_status ks_face_landmarker_detect(ks_face_landmarker *lm, const ks_image *image,
                                    int64_t timestamp_us, ks_face_meshes **out) {
    uint64_t t0 = ks__task_now_ns();
    ks_status st = face_landmarker_detect_run(lm, image, timestamp_us, out);
    if (lm) ks__task_clock_add(&lm->clock, t0);
    return st;
}

ks_status ks_face_landmarker_stats(const ks_face_landmarker *lm, ks_task_stats *stats_out) {
    if (!lm || !stats_out) return KS_STATUS_INVALID_ARGUMENT;
    return ks__task_stats(lm->pipeline, &lm->clock, stats_out);
}

void ks_face_meshes_release(ks_face_meshes *faces) {
    if (!faces) return;
    meshes_block *b = (meshes_block *)((char *)faces - offsetof(meshes_block, meshes));
    ks_allocator a = b->alloc;
    ks__free(b->has_alloc ? &a : NULL, b);
}

ks_status ks__face_landmarker_stats(const ks_face_landmarker *lm, ks__face_lm_stats *out) {
    if (!lm || !out) return KS_STATUS_INVALID_ARGUMENT;
    *out = (ks__face_lm_stats){0};
    out->num_frames = lm->loop.num_frames;
    out->num_detector_runs = lm->loop.num_detector_runs;
    uint32_t n = ks_pipeline_num_nodes(lm->pipeline);
    for (uint32_t i = 0; i < n; i++) {
        ks_node_stats s;
        if (ks_pipeline_node_stats(lm->pipeline, i, &s) != KS_STATUS_OK || !s.node_name) continue;
        /* node names of algos/face/face_landmarker*.json */
        if (strcmp(s.node_name, "detector") == 0) {
            out->detector_mean_us = s.mean_us;
        } else if (strcmp(s.node_name, "per_face") == 0) {
            out->num_landmark_runs = s.num_calls;
            out->landmarks_mean_us = s.mean_us;
        }
    }
    return KS_STATUS_OK;
}
