/* ks_object_detector: the bundle's graph (model_input -> infer -> det_decode) on the upright
 * RGB frame; labels come from the bundle entry its config names. */
#include "kestrel/detect.h"

#include <stdio.h>
#include <string.h>

#include "node_types.h"
#include "task_common.h"

#define KS__DET_CONFIG "detector_config"
#define KS__DET_DEFAULT_BUNDLE "object_detector_yolox.ksb"

struct ks_object_detector {
    ks__object obj;       /* first: ks_last_error(detector) */
    ks__task_clock clock; /* ks_task_stats */
    ks_object_detector_desc desc;
    ks__task_swap swap; /* ks_object_detector_swap_model */
    /* VIDEO track ids: the graph's tracker restarts with a swapped graph, so its ids are offset
     * by id_base, the largest id reported before the swap: ids stay unique across versions */
    int32_t id_base, id_max;
    /* the models and what was read from their bundle: what a live swap replaces (take_swap) */
    struct det_models {
        ks_bundle *bundle;
        ks_pipeline *pipeline;
        ks__labels labels;
        int32_t out_dets, out_tracks;
    } m;
};

typedef struct det_result {
    ks_detected_objects pub;
    const ks_allocator *alloc;
} det_result;

void ks_object_detector_destroy(ks_object_detector *d) {
    if (!d) return;
    ks_object_detector_destroy(ks__task_swap_take(&d->swap));
    ks_pipeline_destroy(d->m.pipeline);
    ks__task_labels_free(d->desc.task.allocator, &d->m.labels);
    ks_bundle_destroy(d->m.bundle);
    ks__free(d->desc.task.allocator, d);
}

ks_status ks_object_detector_create(const ks_object_detector_desc *desc, ks_object_detector **out) {
    ks_object_detector_desc dd = {0};
    if (desc) dd = *desc;
    const ks_task_options *t = &dd.task;
    char err[512] = "";
    ks_object_detector *d = NULL;
    cJSON *cfg = NULL;
    ks_status st = KS_STATUS_INVALID_ARGUMENT;
    if (!out || (unsigned)t->mode >= KS_MODE_COUNT || (unsigned)t->rotation >= KS_ROTATION_COUNT ||
        t->num_threads < 0 || !(t->min_score >= 0.0f && t->min_score <= 1.0f) ||
        t->max_results < 0 || t->max_results > 1000) {
        ks__object_error(NULL,
                         "ks_object_detector_create: bad desc (out %p, mode %d, rotation %d, "
                         "num_threads %d, min_score %g, max_results %d (0..1000))",
                         (void *)out, (int)t->mode, (int)t->rotation, (int)t->num_threads,
                         (double)t->min_score, (int)t->max_results);
        return st;
    }
    st = ks__task_register_detect_nodes();
    if (st) {
        ks__object_error(NULL, "ks_object_detector_create: %s", ks_last_error(NULL));
        return st;
    }
    d = ks__alloc(t->allocator, sizeof(*d));
    if (!d) {
        ks__object_error(NULL, "ks_object_detector_create: out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    memset(d, 0, sizeof(*d));
    d->obj.magic = KS__OBJECT_MAGIC;
    d->desc = dd;
    st = ks__task_open_bundle(t, KS__DET_DEFAULT_BUNDLE, &d->m.bundle, err, sizeof(err));
    if (st) goto error;
    st = ks__task_config(d->m.bundle, KS__DET_CONFIG, &cfg, err, sizeof(err));
    if (st) goto error;
    const char *labels = NULL;
    st = ks__cfg_string(cfg, "labels", NULL, &labels, err, sizeof(err));
    if (!st)
        st = ks__task_labels(t->allocator, d->m.bundle, labels, &d->m.labels, err, sizeof(err));
    if (st) goto error;
    char score[32], maxr[32];
    snprintf(score, sizeof(score), "%.6g", (double)t->min_score);
    snprintf(maxr, sizeof(maxr), "%d", (int)t->max_results);
    ks_side_param side[] = {{"min_score", score},
                            {"max_results", maxr},
                            {"track", t->mode == KS_MODE_VIDEO ? "true" : "false"}};
    st = ks__task_create_pipeline(d->m.bundle, t, NULL, side, 3, &d->m.pipeline);
    if (st) {
        snprintf(err, sizeof(err), "%s", ks_last_error(NULL));
        goto error;
    }
    st = ks__task_check_graph(d->m.pipeline, "detections", &d->m.out_dets, err, sizeof(err));
    if (st) goto error;
    d->m.out_tracks = ks_pipeline_output_index(d->m.pipeline, "track_ids");
    cJSON_Delete(cfg);
    *out = d;
    return KS_STATUS_OK;
error:
    cJSON_Delete(cfg);
    ks__object_error(NULL, "ks_object_detector_create: %s", err);
    ks_object_detector_destroy(d);
    return st;
}

void ks_detected_objects_release(ks_detected_objects *o) {
    if (!o) return;
    det_result *r = (det_result *)o;
    ks__free(r->alloc, r);
}

static void destroy_any(void *d) {
    ks_object_detector_destroy(d);
}

ks_status ks_object_detector_swap_model(ks_object_detector *d, const ks_task_options *source) {
    ks_object_detector_desc dd = d ? d->desc : (ks_object_detector_desc){0};
    ks_status st = ks__task_swap_options("ks_object_detector_swap_model", d ? &d->desc.task : NULL,
                                         source, &dd.task);
    ks_object_detector *fresh = NULL;
    if (!st && (st = ks_object_detector_create(&dd, &fresh)) != KS_STATUS_OK)
        return ks__task_swap_failed("ks_object_detector_swap_model", source, st);
    if (!st) ks__task_swap_offer(&d->swap, fresh, destroy_any);
    return st;
}

/* Frame start: takes an offered version's models (the old ones go with the replacement). */
static void take_swap(ks_object_detector *d) {
    ks_object_detector *fresh = ks__task_swap_take(&d->swap);
    if (!fresh) return;
    struct det_models old = d->m;
    d->m = fresh->m;
    fresh->m = old;
    d->id_base = d->id_max;
    ks__task_clock_swapped(&d->clock);
    ks_object_detector_destroy(fresh);
}

static ks_status object_detect_run(ks_object_detector *d, const ks_image *image,
                                   int64_t timestamp_us, ks_detected_objects **out) {
    if (!d || !out) {
        ks__object_error(d ? &d->obj : NULL, "ks_object_detect: %s is NULL",
                         d ? "out" : "detector");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    take_swap(d);
    const ks_allocator *alloc = d->desc.task.allocator;
    char err[512] = "";
    ks_packet *outs[KS_TASK_MAX_OUTPUTS];
    int32_t width, height;
    ks_status st = ks__task_process_image(d->m.pipeline, &d->desc.task, image, timestamp_us,
                                          d->desc.task.mode == KS_MODE_IMAGE, outs, &width, &height,
                                          err, sizeof(err));
    if (st) {
        ks__object_error(&d->obj, "ks_object_detect: %s", err);
        goto done;
    }
    float w = (float)width, h = (float)height;
    const ks_packet_detections *det = ks_packet_detections_view(outs[d->m.out_dets]);
    const ks_tensor *tracks = d->m.out_tracks >= 0 ? ks_packet_tensor(outs[d->m.out_tracks]) : NULL;
    uint32_t n = det ? det->num_detections : 0;
    size_t label_bytes = 0;
    for (uint32_t i = 0; i < n; i++) {
        int32_t c = det->class_ids[i];
        label_bytes +=
            (c >= 0 && (uint32_t)c < d->m.labels.count ? strlen(d->m.labels.names[c]) : 0) + 1;
    }
    det_result *r =
        ks__alloc(alloc, sizeof(det_result) + n * sizeof(ks_detected_object) + label_bytes);
    if (!r) {
        ks__object_error(&d->obj, "ks_object_detect: out of memory for %u objects", (unsigned)n);
        st = KS_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    r->alloc = alloc;
    ks_detected_object *items = (ks_detected_object *)(r + 1);
    char *text = (char *)(items + n);
    for (uint32_t i = 0; i < n; i++) {
        const float *b = det->boxes + 4 * i;
        int32_t c = det->class_ids[i];
        const char *name = c >= 0 && (uint32_t)c < d->m.labels.count ? d->m.labels.names[c] : "";
        size_t len = strlen(name);
        memcpy(text, name, len + 1);
        items[i] =
            (ks_detected_object){.box = {b[0] * w, b[1] * h, (b[2] - b[0]) * w, (b[3] - b[1]) * h},
                                 .class_id = c,
                                 .label = text,
                                 .score = det->scores[i],
                                 .track_id = -1};
        if (tracks && tracks->info.dtype == KS_DTYPE_I32 &&
            tracks->size_bytes >= (i + 1) * sizeof(int32_t)) {
            int32_t id = ((const int32_t *)tracks->data)[i];
            items[i].track_id = id > 0 ? id + d->id_base : id; /* ids >= 1; others as given */
            if (items[i].track_id > d->id_max) d->id_max = items[i].track_id;
        }
        text += len + 1;
    }
    r->pub = (ks_detected_objects){.count = n, .items = items};
    *out = &r->pub;
done:
    ks__task_release_outputs(outs);
    return st;
}

ks_status ks_object_detect(ks_object_detector *d, const ks_image *image, int64_t timestamp_us,
                           ks_detected_objects **out) {
    uint64_t t0 = ks__task_now_ns();
    ks_status st = object_detect_run(d, image, timestamp_us, out);
    if (d) ks__task_clock_add(&d->clock, t0);
    return st;
}

ks_status ks_object_detector_stats(const ks_object_detector *d, ks_task_stats *stats_out) {
    if (!d || !stats_out) return KS_STATUS_INVALID_ARGUMENT;
    return ks__task_stats(d->m.pipeline, &d->clock, stats_out);
}
