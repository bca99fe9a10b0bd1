/* ks_face_landmarker: detector -> rotated ROI -> face mesh (468, or 478 with irises) -> head
 * pose and expressions, through the face_landmarker*.ksb pipeline. In VIDEO mode the graph's
 * `previous` loop carries the ROI from this frame's landmarks into the next, so the detector
 * only runs when the landmark model loses the face; landmarks are One Euro smoothed. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common.h" /* engine: ks__object, ks__calloc */
#include "face_internal.h"
#include "kestrel/face.h"
#include "task_common.h"

enum { OUT_LANDMARKS, OUT_SCORE, OUT_POSE, OUT_EULER, OUT_PROJECTION, OUT_EXPRESSIONS, OUT_COUNT };
static const char *const output_names[OUT_COUNT] = {"landmarks", "score",      "pose",
                                                    "euler",     "projection", "expressions"};
#define LM_MAX_OUTPUTS 16

struct ks_face_landmarker {
    ks__object obj; /* first: ks_last_error(lm) */
    ks_face_landmarker_desc desc;
    ks_allocator alloc;
    const ks_allocator *alloc_ptr;
    ks_bundle *bundle;
    ks_pipeline *pipeline;
    int32_t out_index[OUT_COUNT];
    int32_t next_id;    /* VIDEO: id given to the next newly acquired face */
    int32_t current_id; /* id of the face tracked in the previous frame, or -1 */
};

typedef struct meshes_block {
    ks_allocator alloc;
    int has_alloc;
    ks_face_meshes meshes;
} meshes_block;

void ks_face_landmarker_destroy(ks_face_landmarker *lm) {
    if (!lm) return;
    ks_pipeline_destroy(lm->pipeline);
    ks_bundle_destroy(lm->bundle);
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
    if (d.task.max_results < 0 || d.task.max_results > 1) {
        ks__object_error(NULL,
                         "ks_face_landmarker_create: max_results %d: this version tracks one face "
                         "(use 0 or 1; ks_face_detector finds several)",
                         (int)d.task.max_results);
        return KS_STATUS_UNSUPPORTED;
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
    lm->next_id = 1;
    lm->current_id = -1;
    bool full = d.detector == KS_FACE_DETECTOR_FULL_RANGE;
    bool smooth = d.task.mode == KS_MODE_VIDEO && d.task.smoothing >= 0.0f;
    char min_score[32], tracking[32], cutoff[32], err[768];
    snprintf(min_score, sizeof(min_score), "%.9g",
             d.task.min_score > 0.0f ? (double)d.task.min_score : 0.5);
    snprintf(tracking, sizeof(tracking), "%.9g",
             d.min_tracking_score > 0.0f ? (double)d.min_tracking_score : 0.5);
    snprintf(cutoff, sizeof(cutoff), "%.9g",
             d.task.smoothing > 0.0f ? (double)d.task.smoothing : 0.05);
    const ks_side_param params[] = {
        {"min_score", min_score},
        {"tracking_score", tracking},
        {"smoothing", smooth ? "true" : "false"},
        {"min_cutoff", cutoff},
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
    if (lm->out_index[OUT_LANDMARKS] < 0 || ks_pipeline_num_inputs(lm->pipeline) != 1 ||
        ks_pipeline_num_outputs(lm->pipeline) > LM_MAX_OUTPUTS) {
        ks__object_error(NULL,
                         "ks_face_landmarker_create: the bundle's graph must have one image "
                         "input, a 'landmarks' output and at most %d outputs (is it a face "
                         "landmarker bundle?)",
                         LM_MAX_OUTPUTS);
        st = KS_STATUS_INVALID_MODEL;
        goto error;
    }
    *out = lm;
    return KS_STATUS_OK;
error:
    ks_face_landmarker_destroy(lm);
    return st;
}

static const float *tensor_floats(const ks_packet *p, size_t min_count) {
    const ks_tensor *t = ks_packet_tensor(p);
    if (!t || t->info.dtype != KS_DTYPE_F32 || t->size_bytes < min_count * sizeof(float))
        return NULL;
    return t->data;
}

ks_status ks_face_landmarker_detect(ks_face_landmarker *lm, const ks_image *image,
                                    int64_t timestamp_us, ks_face_meshes **out) {
    if (!lm || !out) {
        if (lm) ks__object_error(&lm->obj, "ks_face_landmarker_detect: out is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    char err[512];
    ks_packet *frame = NULL, *outs[LM_MAX_OUTPUTS] = {NULL};
    uint32_t num_out = ks_pipeline_num_outputs(lm->pipeline);
    ks_status st = ks__task_image_packet(lm->alloc_ptr, image, lm->desc.task.rotation,
                                         lm->desc.task.mirror, &frame, err, sizeof(err));
    if (st) {
        ks__object_error(&lm->obj, "ks_face_landmarker_detect: %s", err);
        return st;
    }
    const ks_packet_image *view = ks_packet_image_view(frame);
    float w = (float)view->width_px, h = (float)view->height_px;
    bool video = lm->desc.task.mode == KS_MODE_VIDEO;
    if (!video) ks_pipeline_reset(lm->pipeline);
    const ks_packet *in[1] = {frame};
    st = ks_pipeline_process(lm->pipeline, in, video ? timestamp_us : 0, outs);
    if (st) {
        ks__object_error(&lm->obj, "ks_face_landmarker_detect: %s", ks_last_error(lm->pipeline));
        goto done;
    }
    const ks_packet_landmarks *pl = ks_packet_landmarks_view(outs[lm->out_index[OUT_LANDMARKS]]);
    uint32_t count = pl && pl->num_landmarks > 0 ? 1 : 0;
    uint32_t nl = count ? pl->num_landmarks : 0;
    size_t head = sizeof(meshes_block) + sizeof(ks_face_mesh);
    meshes_block *b = ks__calloc(lm->alloc_ptr, 1, head + (size_t)nl * sizeof(ks_point3f));
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
    if (count) {
        ks_face_mesh *f = &b->meshes.items[0];
        f->num_landmarks = nl;
        f->landmarks = (ks_point3f *)((char *)b + head);
        float x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
        for (uint32_t i = 0; i < nl; i++) {
            ks_point3f p = {pl->landmarks[i].x * w, pl->landmarks[i].y * h, pl->landmarks[i].z * w};
            f->landmarks[i] = p;
            x0 = fminf(x0, p.x);
            x1 = fmaxf(x1, p.x);
            y0 = fminf(y0, p.y);
            y1 = fmaxf(y1, p.y);
        }
        f->box = (ks_box){x0, y0, x1 - x0, y1 - y0};
        f->score = lm->out_index[OUT_SCORE] >= 0
                       ? (float)ks_packet_float(outs[lm->out_index[OUT_SCORE]])
                       : 1.0f;
        /* The graph tracks from the previous frame's landmarks whenever it had a face, so a
         * face present in consecutive frames is the same face. */
        if (video) {
            if (lm->current_id < 0) lm->current_id = lm->next_id++;
            f->id = lm->current_id;
        } else {
            f->id = -1;
        }
        const float *pose =
            lm->out_index[OUT_POSE] >= 0 ? ks_packet_matrix(outs[lm->out_index[OUT_POSE]]) : NULL;
        const float *proj = lm->out_index[OUT_PROJECTION] >= 0
                                ? ks_packet_matrix(outs[lm->out_index[OUT_PROJECTION]])
                                : NULL;
        const float *euler =
            lm->out_index[OUT_EULER] >= 0 ? tensor_floats(outs[lm->out_index[OUT_EULER]], 3) : NULL;
        const float *ex = lm->out_index[OUT_EXPRESSIONS] >= 0
                              ? tensor_floats(outs[lm->out_index[OUT_EXPRESSIONS]], 6)
                              : NULL;
        if (pose) memcpy(f->pose_matrix, pose, sizeof(f->pose_matrix));
        if (proj) memcpy(f->projection_matrix, proj, sizeof(f->projection_matrix));
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
    } else {
        lm->current_id = -1;
    }
    *out = &b->meshes;
done:
    for (uint32_t i = 0; i < num_out && i < LM_MAX_OUTPUTS; i++)
        ks_packet_release(outs[i]);
    ks_packet_release(frame);
    return st;
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
    uint32_t n = ks_pipeline_num_nodes(lm->pipeline);
    for (uint32_t i = 0; i < n; i++) {
        ks_node_stats s;
        if (ks_pipeline_node_stats(lm->pipeline, i, &s) != KS_STATUS_OK || !s.node_name) continue;
        /* node names of algos/face/face_landmarker*.json */
        if (strcmp(s.node_name, "detector") == 0) {
            out->num_detector_runs = s.num_calls;
            out->detector_mean_us = s.mean_us;
        } else if (strcmp(s.node_name, "landmarks_model") == 0) {
            out->num_landmark_runs = s.num_calls;
            out->landmarks_mean_us = s.mean_us;
        }
    }
    return KS_STATUS_OK;
}
