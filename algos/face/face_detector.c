/* ks_face_detector: BlazeFace (short or full range) through the face_detector_*.ksb pipeline:
 * letterboxed preprocessing, SSD decoding with MediaPipe's presets, weighted NMS and, in VIDEO
 * mode, an IoU tracker for stable ids. This file only converts images in and packets out. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "src/common.h" /* engine: ks__object, ks__calloc */
#include "detection.h"
#include "kestrel/face.h"
#include "task_common.h"

struct ks_face_detector {
    ks__object obj;       /* first: ks_last_error(det) */
    ks__task_clock clock; /* ks_task_stats */
    ks_face_detector_desc desc;
    ks_allocator alloc;
    const ks_allocator *alloc_ptr; /* &alloc, or NULL for malloc */
    ks__task_swap swap;            /* ks_face_detector_swap_model */
    /* VIDEO ids: the graph's tracker restarts with a swapped graph, so its ids are offset by
     * id_base, the largest id reported before the swap: ids stay unique across versions */
    int32_t id_base, id_max;
    /* the models: what a live swap replaces (take_swap) */
    ks_bundle *bundle;
    ks_pipeline *pipeline;
    int32_t out_faces, out_ids;
    bool has_roi_input; /* graph input 1 is a "roi" rects stream (tiles need it) */
    /* The faces of the call before the result block: one pass's (<= KS__FD_PASS_FACES) or,
     * with tiles >= 2, every pass's before merging (KS__FD_MAX_CANDIDATES) */
    ks_face *cand;
    uint32_t cap_cand;
    /* tiles >= 2: the candidates as ks__nms input (class_id = index in cand) and output, its
     * scratch, and the kept candidates' indices, best first */
    ks__detection *nms_in, *nms_out;
    void *nms_scratch;
    uint32_t *kept;
};

/* Faces of one detector pass at most (the ssd_detections node's cap). */
#define KS__FD_PASS_FACES 256

/* Faces kept from all tile passes of one call, before the merge. */
#define KS__FD_MAX_CANDIDATES 2048
#define KS__FD_MAX_TILES 4
/* Two faces of different passes whose boxes overlap more than this are one face. */
#define KS__FD_TILE_SAME_IOU 0.3f

/* Results are one allocation: this header, the ks_faces, then the items. The header keeps the
 * allocator so ks_faces_release needs no handle. */
typedef struct faces_block {
    ks_allocator alloc;
    int has_alloc;
    ks_faces faces;
} faces_block;

const char *ks_face_detector_model_string(ks_face_detector_model model) {
    switch (model) {
    case KS_FACE_DETECTOR_SHORT_RANGE:
        return "short_range";
    case KS_FACE_DETECTOR_FULL_RANGE:
        return "full_range";
    default:
        return "invalid";
    }
}

void ks_face_detector_destroy(ks_face_detector *det) {
    if (!det) return;
    ks_face_detector_destroy(ks__task_swap_take(&det->swap));
    ks_pipeline_destroy(det->pipeline);
    ks_bundle_destroy(det->bundle);
    ks__free(det->alloc_ptr, det->cand);
    ks__free(det->alloc_ptr, det->nms_in);
    ks__free(det->alloc_ptr, det->nms_out);
    ks__free(det->alloc_ptr, det->nms_scratch);
    ks__free(det->alloc_ptr, det->kept);
    ks__free(det->alloc_ptr, det);
}

ks_status ks_face_detector_create(const ks_face_detector_desc *desc, ks_face_detector **out) {
    ks_face_detector_desc d = desc ? *desc : (ks_face_detector_desc){0};
    if (!out) {
        ks__object_error(NULL, "ks_face_detector_create: out is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if ((unsigned)d.model >= KS_FACE_DETECTOR_MODEL_COUNT ||
        (unsigned)d.task.mode >= KS_MODE_COUNT || d.task.max_results < 0 ||
        !(d.task.min_score >= 0.0f && d.task.min_score <= 1.0f) || d.tiles < 0 ||
        d.tiles > KS__FD_MAX_TILES) {
        ks__object_error(NULL,
                         "ks_face_detector_create: bad desc (model %d, mode %d, max_results %d, "
                         "min_score %g, tiles %d: 0..%d)",
                         (int)d.model, (int)d.task.mode, (int)d.task.max_results,
                         (double)d.task.min_score, (int)d.tiles, KS__FD_MAX_TILES);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (d.tiles >= 2 && d.task.mode != KS_MODE_IMAGE) {
        ks__object_error(NULL,
                         "ks_face_detector_create: tiles (%d) work in IMAGE mode only: the "
                         "VIDEO tracker follows one detector pass per frame",
                         (int)d.tiles);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    const ks_allocator *a = d.task.allocator;
    ks_face_detector *det = ks__calloc(a, 1, sizeof(*det));
    if (!det) {
        ks__object_error(NULL, "ks_face_detector_create: out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    det->obj.magic = KS__OBJECT_MAGIC;
    if (a) {
        det->alloc = *a;
        det->alloc_ptr = &det->alloc;
    }
    d.task.allocator = det->alloc_ptr;
    det->desc = d;
    char min_score[32], max_results[32], err[768];
    snprintf(min_score, sizeof(min_score), "%.9g", (double)d.task.min_score);
    snprintf(max_results, sizeof(max_results), "%d", (int)d.task.max_results);
    /* min_score 0 keeps the bundle graph's own threshold: the model's (ks__face_default_min_score;
     * a bundle given by path may hold either model). */
    const ks_side_param params[] = {{"max_results", max_results}, {"min_score", min_score}};
    ks_status st = ks__task_open(&d.task,
                                 d.model == KS_FACE_DETECTOR_FULL_RANGE ? "face_detector_full.ksb"
                                                                        : "face_detector_short.ksb",
                                 NULL, params, d.task.min_score > 0.0f ? 2 : 1, &det->bundle,
                                 &det->pipeline, err, sizeof(err));
    if (st) {
        ks__object_error(NULL, "ks_face_detector_create: %s", err);
        goto error;
    }
    det->out_faces = ks_pipeline_output_index(det->pipeline, "faces");
    det->out_ids = ks_pipeline_output_index(det->pipeline, "ids");
    uint32_t num_in = ks_pipeline_num_inputs(det->pipeline);
    det->has_roi_input = num_in == 2 && ks_pipeline_input_index(det->pipeline, "roi") == 1;
    if (det->out_faces < 0 || (num_in != 1 && !det->has_roi_input) ||
        ks_pipeline_num_outputs(det->pipeline) > 8) {
        ks__object_error(NULL,
                         "ks_face_detector_create: the bundle's graph must have an image input "
                         "(and optionally a 'roi' rects input), a 'faces' output and at most 8 "
                         "outputs (is it a face detector bundle?)");
        st = KS_STATUS_INVALID_MODEL;
        goto error;
    }
    if (d.tiles >= 2 && !det->has_roi_input) {
        ks__object_error(NULL, "ks_face_detector_create: tiles need a bundle whose graph has a "
                               "'roi' input (rebuild it with this release's ks-task-bundle)");
        st = KS_STATUS_INVALID_MODEL;
        goto error;
    }
    det->cap_cand = d.tiles >= 2 ? KS__FD_MAX_CANDIDATES : KS__FD_PASS_FACES;
    det->cand = ks__calloc(det->alloc_ptr, det->cap_cand, sizeof(ks_face));
    bool nms_ok = true;
    if (d.tiles >= 2) {
        det->nms_in = ks__calloc(det->alloc_ptr, det->cap_cand, sizeof(ks__detection));
        det->nms_out = ks__calloc(det->alloc_ptr, det->cap_cand, sizeof(ks__detection));
        det->nms_scratch = ks__alloc(det->alloc_ptr, ks__nms_scratch_size(det->cap_cand));
        det->kept = ks__calloc(det->alloc_ptr, det->cap_cand, sizeof(uint32_t));
        nms_ok = det->nms_in && det->nms_out && det->nms_scratch && det->kept;
    }
    if (!det->cand || !nms_ok) {
        ks__object_error(NULL, "ks_face_detector_create: out of memory");
        st = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    *out = det;
    return KS_STATUS_OK;
error:
    ks_face_detector_destroy(det);
    return st;
}

static bool in_roi(const ks_box *roi, float cx, float cy) {
    return roi->w <= 0.0f ||
           (cx >= roi->x && cx < roi->x + roi->w && cy >= roi->y && cy < roi->y + roi->h);
}

/* One detector pass over `roi` (normalized upright-image rect; NULL: the whole image) into
 * faces[0, cap) in upright pixels; *n gets the count. */
static ks_status detect_pass(ks_face_detector *det, const ks_packet *frame, const ks_rect *roi,
                             int64_t ts, float w, float h, ks_face *faces, uint32_t cap,
                             uint32_t *n) {
    ks_packet *outs[8] = {NULL}, *roi_packet = NULL;
    uint32_t num_out = ks_pipeline_num_outputs(det->pipeline); /* <= 8, checked at create */
    bool video = det->desc.task.mode == KS_MODE_VIDEO;
    *n = 0;
    ks_status st = KS_STATUS_OK;
    if (roi) {
        st = ks_packet_create_rects(ks_pipeline_packet_allocator(det->pipeline),
                                    &(ks_packet_rects){1, roi}, &roi_packet);
        if (st) {
            ks__object_error(&det->obj, "ks_face_detect: out of memory");
            return st;
        }
    }
    if (!video) ks_pipeline_reset(det->pipeline); /* photos are independent: no tracking */
    const ks_packet *in[2] = {frame, roi_packet};
    st = ks_pipeline_process(det->pipeline, in, video ? ts : 0, outs);
    ks_packet_release(roi_packet);
    if (st) {
        ks__object_error(&det->obj, "ks_face_detect: %s", ks_last_error(det->pipeline));
        return st;
    }
    const ks_packet_detections *pd = ks_packet_detections_view(outs[det->out_faces]);
    const ks_tensor *ids = det->out_ids >= 0 ? ks_packet_tensor(outs[det->out_ids]) : NULL;
    uint32_t num = pd ? pd->num_detections : 0;
    for (uint32_t i = 0; i < num && *n < cap; i++) {
        ks_face *f = &faces[*n];
        const float *bx = pd->boxes + 4 * (size_t)i;
        /* BlazeFace's normalized outputs times the size are pixel indices (MediaPipe's
         * sampling grid); + 0.5 gives the continuous coordinates every task reports. */
        f->box =
            (ks_box){bx[0] * w + 0.5f, bx[1] * h + 0.5f, (bx[2] - bx[0]) * w, (bx[3] - bx[1]) * h};
        if (!in_roi(&det->desc.task.roi, f->box.x + 0.5f * f->box.w, f->box.y + 0.5f * f->box.h))
            continue;
        f->score = pd->scores[i];
        f->id = -1;
        if (video && ids && ids->info.dtype == KS_DTYPE_I32 &&
            ids->size_bytes >= (i + 1) * sizeof(int32_t)) {
            int32_t id = ((const int32_t *)ids->data)[i];
            f->id = id > 0 ? id + det->id_base : id; /* ids >= 1; others as given */
            if (f->id > det->id_max) det->id_max = f->id;
        }
        for (uint32_t k = 0; k < KS_FACE_KEYPOINT_COUNT; k++) {
            f->keypoints[k] = (ks_point2f){0.0f, 0.0f};
            if (k >= pd->num_keypoints) continue;
            const float *kp = pd->keypoints + 2 * ((size_t)i * pd->num_keypoints + k);
            f->keypoints[k] = (ks_point2f){kp[0] * w + 0.5f, kp[1] * h + 0.5f};
        }
        (*n)++;
    }
    for (uint32_t i = 0; i < num_out; i++)
        ks_packet_release(outs[i]);
    return KS_STATUS_OK;
}

/* The whole image, then tiles x tiles tiles of 1.35 / tiles of each side, evenly spread; the
 * faces of all passes best first, a face overlapping a better one (IoU > 0.3) dropped as the
 * same face seen by another pass (or cut by a tile's edge). The kept faces are det->cand at the
 * indices det->kept[0, *n_out). */
static ks_status detect_tiled(ks_face_detector *det, const ks_packet *frame, float w, float h,
                              uint32_t *n_out) {
    int32_t t = det->desc.tiles;
    float frac = 1.35f / (float)t;
    uint32_t n = 0;
    for (int32_t pass = 0; pass <= t * t; pass++) {
        ks_rect r = {0.5f, 0.5f, 1.0f, 1.0f, 0.0f};
        if (pass > 0) {
            int32_t tx = (pass - 1) % t, ty = (pass - 1) / t;
            float step = (1.0f - frac) / (float)(t - 1);
            r = (ks_rect){(float)tx * step + 0.5f * frac, (float)ty * step + 0.5f * frac, frac,
                          frac, 0.0f};
        }
        uint32_t got = 0;
        ks_status st = detect_pass(det, frame, &r, 0, w, h, det->cand + n, det->cap_cand - n, &got);
        if (st) return st;
        n += got;
    }
    /* Greedy NMS over the passes (the vision building block; boxes only, in pixels). */
    for (uint32_t i = 0; i < n; i++) {
        const ks_box *b = &det->cand[i].box;
        det->nms_in[i] = (ks__detection){.xmin = b->x,
                                         .ymin = b->y,
                                         .xmax = b->x + b->w,
                                         .ymax = b->y + b->h,
                                         .score = det->cand[i].score,
                                         .class_id = (int32_t)i};
    }
    ks__nms_options opt = {.min_suppression_threshold = KS__FD_TILE_SAME_IOU,
                           .max_num_detections = det->desc.task.max_results,
                           .overlap_type = KS__OVERLAP_IOU,
                           .algorithm = KS__NMS_DEFAULT};
    size_t kept = 0;
    ks__nms(&opt, det->nms_in, n, det->nms_scratch, det->nms_out, det->cap_cand, &kept);
    for (size_t i = 0; i < kept; i++)
        det->kept[i] = (uint32_t)det->nms_out[i].class_id;
    *n_out = (uint32_t)kept;
    return KS_STATUS_OK;
}

static void destroy_any(void *det) {
    ks_face_detector_destroy(det);
}

ks_status ks_face_detector_swap_model(ks_face_detector *det, const ks_task_options *source) {
    ks_face_detector_desc d = det ? det->desc : (ks_face_detector_desc){0};
    ks_status st = ks__task_swap_options("ks_face_detector_swap_model",
                                         det ? &det->desc.task : NULL, source, &d.task);
    ks_face_detector *fresh = NULL;
    if (!st && (st = ks_face_detector_create(&d, &fresh)) != KS_STATUS_OK)
        return ks__task_swap_failed("ks_face_detector_swap_model", source, st);
    if (st) return st;
    ks__task_swap_offer(&det->swap, fresh, destroy_any);
    return KS_STATUS_OK;
}

/* Frame start: takes an offered version's models (the old ones go with the replacement). */
static void take_swap(ks_face_detector *det) {
    ks_face_detector *fresh = ks__task_swap_take(&det->swap);
    if (!fresh) return;
    ks_bundle *b = det->bundle;
    ks_pipeline *p = det->pipeline;
    int32_t of = det->out_faces, oi = det->out_ids;
    bool roi = det->has_roi_input;
    det->bundle = fresh->bundle;
    det->pipeline = fresh->pipeline;
    det->out_faces = fresh->out_faces;
    det->out_ids = fresh->out_ids;
    det->has_roi_input = fresh->has_roi_input;
    fresh->bundle = b;
    fresh->pipeline = p;
    fresh->out_faces = of;
    fresh->out_ids = oi;
    fresh->has_roi_input = roi;
    det->id_base = det->id_max;
    ks__task_clock_swapped(&det->clock);
    ks_face_detector_destroy(fresh);
}

static ks_status face_detect_run(ks_face_detector *det, const ks_image *image, int64_t timestamp_us,
                                 ks_faces **out) {
    if (!det || !out) {
        if (det) ks__object_error(&det->obj, "ks_face_detect: out is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    take_swap(det);
    char err[512];
    ks_packet *frame = NULL;
    ks_status st = ks__task_image_packet(ks_pipeline_packet_allocator(det->pipeline), image,
                                         det->desc.task.rotation, det->desc.task.mirror, &frame,
                                         err, sizeof(err));
    if (st) {
        ks__object_error(&det->obj, "ks_face_detect: %s", err);
        return st;
    }
    const ks_packet_image *view = ks_packet_image_view(frame);
    float w = (float)view->width_px, h = (float)view->height_px;
    /* The faces go to det->cand first; the result block is sized after them. */
    uint32_t count = 0;
    if (det->desc.tiles >= 2)
        st = detect_tiled(det, frame, w, h, &count);
    else
        st = detect_pass(det, frame, NULL, timestamp_us, w, h, det->cand, det->cap_cand, &count);
    if (st) goto done;
    faces_block *b = ks__calloc(det->alloc_ptr, 1, sizeof(*b) + (size_t)count * sizeof(ks_face));
    if (!b) {
        ks__object_error(&det->obj, "ks_face_detect: out of memory for %u faces", (unsigned)count);
        st = KS_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    if (det->alloc_ptr) {
        b->alloc = det->alloc;
        b->has_alloc = 1;
    }
    b->faces.items = (ks_face *)(b + 1);
    for (uint32_t i = 0; i < count; i++)
        b->faces.items[i] = det->cand[det->desc.tiles >= 2 ? det->kept[i] : i];
    b->faces.count = count;
    *out = &b->faces;
done:
    ks_packet_release(frame);
    return st;
}

ks_status ks_face_detect(ks_face_detector *det, const ks_image *image, int64_t timestamp_us,
                         ks_faces **out) {
    uint64_t t0 = ks__task_now_ns();
    ks_status st = face_detect_run(det, image, timestamp_us, out);
    if (det) ks__task_clock_add(&det->clock, t0);
    return st;
}

ks_status ks_face_detector_stats(const ks_face_detector *det, ks_task_stats *stats_out) {
    if (!det || !stats_out) return KS_STATUS_INVALID_ARGUMENT;
    return ks__task_stats(det->pipeline, &det->clock, stats_out);
}

void ks_faces_release(ks_faces *faces) {
    if (!faces) return;
    faces_block *b = (faces_block *)((char *)faces - offsetof(faces_block, faces));
    ks_allocator a = b->alloc;
    ks__free(b->has_alloc ? &a : NULL, b);
}
