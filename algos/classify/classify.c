/* ks_image_classifier: the bundle's graph (model_input -> infer -> cls_scores) on the upright
 * RGB frame, then top-k with the labels the config names. */
#include "kestrel/classify.h"

#include <stdio.h>
#include <string.h>

#include "node_types.h"
#include "task_common.h"

#define KS__CLS_CONFIG "classifier_config"
#define KS__CLS_DEFAULT_BUNDLE "classifier_mobilenet_v2.ksb"
#define KS__CLS_DEFAULT_RESULTS 5
#define KS__CLS_MAX_RESULTS 1000

struct ks_image_classifier {
    ks__object obj;       /* first: ks_last_error(classifier) */
    ks__task_clock clock; /* ks_task_stats */
    ks_image_classifier_desc desc;
    ks__task_swap swap; /* ks_image_classifier_swap_model */
    /* the models and what was read from their bundle: what a live swap replaces (take_swap) */
    struct cls_models {
        ks_bundle *bundle;
        ks_pipeline *pipeline;
        ks__labels labels;
        int32_t label_offset; /* outputs below this index (e.g. background) are not reported */
        int32_t out_scores;
    } m;
};

typedef struct cls_result {
    ks_classifications pub;
    const ks_allocator *alloc;
} cls_result;

void ks_image_classifier_destroy(ks_image_classifier *c) {
    if (!c) return;
    ks_image_classifier_destroy(ks__task_swap_take(&c->swap));
    ks_pipeline_destroy(c->m.pipeline);
    ks__task_labels_free(c->desc.task.allocator, &c->m.labels);
    ks_bundle_destroy(c->m.bundle);
    ks__free(c->desc.task.allocator, c);
}

ks_status ks_image_classifier_create(const ks_image_classifier_desc *desc,
                                     ks_image_classifier **out) {
    ks_image_classifier_desc dd = {0};
    if (desc) dd = *desc;
    const ks_task_options *t = &dd.task;
    char err[512] = "";
    ks_image_classifier *c = NULL;
    cJSON *cfg = NULL;
    ks_status st = KS_STATUS_INVALID_ARGUMENT;
    if (!out || (unsigned)t->mode >= KS_MODE_COUNT || (unsigned)t->rotation >= KS_ROTATION_COUNT ||
        t->num_threads < 0 || !(t->min_score >= 0.0f && t->min_score <= 1.0f) ||
        t->max_results < 0 || t->max_results > KS__CLS_MAX_RESULTS) {
        ks__object_error(NULL,
                         "ks_image_classifier_create: bad desc (out %p, mode %d, rotation %d, "
                         "num_threads %d, min_score %g, max_results %d (0..%d))",
                         (void *)out, (int)t->mode, (int)t->rotation, (int)t->num_threads,
                         (double)t->min_score, (int)t->max_results, KS__CLS_MAX_RESULTS);
        return st;
    }
    st = ks__task_register_classify_nodes();
    if (st) {
        ks__object_error(NULL, "ks_image_classifier_create: %s", ks_last_error(NULL));
        return st;
    }
    c = ks__alloc(t->allocator, sizeof(*c));
    if (!c) {
        ks__object_error(NULL, "ks_image_classifier_create: out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    memset(c, 0, sizeof(*c));
    c->obj.magic = KS__OBJECT_MAGIC;
    c->desc = dd;
    st = ks__task_open_bundle(t, KS__CLS_DEFAULT_BUNDLE, &c->m.bundle, err, sizeof(err));
    if (st) goto error;
    st = ks__task_config(c->m.bundle, KS__CLS_CONFIG, &cfg, err, sizeof(err));
    if (st) goto error;
    const char *labels = NULL;
    double offset = 0;
    st = ks__cfg_string(cfg, "labels", NULL, &labels, err, sizeof(err));
    if (!st) st = ks__cfg_number(cfg, "label_offset", 0, &offset, err, sizeof(err));
    if (!st)
        st = ks__task_labels(t->allocator, c->m.bundle, labels, &c->m.labels, err, sizeof(err));
    if (st) goto error;
    if (!(offset >= 0 && offset <= 16)) {
        snprintf(err, sizeof(err), "config '%s': label_offset %g must be in 0..16", KS__CLS_CONFIG,
                 offset);
        st = KS_STATUS_INVALID_MODEL;
        goto error;
    }
    c->m.label_offset = (int32_t)offset;
    st = ks__task_create_pipeline(c->m.bundle, t, NULL, NULL, 0, &c->m.pipeline);
    if (st) {
        snprintf(err, sizeof(err), "%s", ks_last_error(NULL));
        goto error;
    }
    st = ks__task_check_graph(c->m.pipeline, "scores", &c->m.out_scores, err, sizeof(err));
    if (st) goto error;
    cJSON_Delete(cfg);
    *out = c;
    return KS_STATUS_OK;
error:
    cJSON_Delete(cfg);
    ks__object_error(NULL, "ks_image_classifier_create: %s", err);
    ks_image_classifier_destroy(c);
    return st;
}

/* Labels files either list the skipped classes too (imagenet_labels.txt starts with
 * "background", one line per model output) or start at the first reported class. */
static const char *label_for(const ks_image_classifier *c, size_t class_index, size_t n) {
    size_t first = (size_t)c->m.label_offset;
    size_t li = c->m.labels.count + first > n ? class_index : class_index - first;
    return li < c->m.labels.count ? c->m.labels.names[li] : "";
}

void ks_classifications_release(ks_classifications *r) {
    if (!r) return;
    cls_result *cr = (cls_result *)r;
    ks__free(cr->alloc, cr);
}

static void destroy_any(void *c) {
    ks_image_classifier_destroy(c);
}

ks_status ks_image_classifier_swap_model(ks_image_classifier *c, const ks_task_options *source) {
    ks_image_classifier_desc d = c ? c->desc : (ks_image_classifier_desc){0};
    ks_status st = ks__task_swap_options("ks_image_classifier_swap_model", c ? &c->desc.task : NULL,
                                         source, &d.task);
    ks_image_classifier *fresh = NULL;
    if (!st && (st = ks_image_classifier_create(&d, &fresh)) != KS_STATUS_OK)
        return ks__task_swap_failed("ks_image_classifier_swap_model", source, st);
    if (!st) ks__task_swap_offer(&c->swap, fresh, destroy_any);
    return st;
}

/* Frame start: takes an offered version's models (the old ones go with the replacement). */
static void take_swap(ks_image_classifier *c) {
    ks_image_classifier *fresh = ks__task_swap_take(&c->swap);
    if (!fresh) return;
    struct cls_models old = c->m;
    c->m = fresh->m;
    fresh->m = old;
    ks__task_clock_swapped(&c->clock);
    ks_image_classifier_destroy(fresh);
}

static ks_status image_classify_run(ks_image_classifier *c, const ks_image *image,
                                    int64_t timestamp_us, ks_classifications **out) {
    if (!c || !out) {
        ks__object_error(c ? &c->obj : NULL, "ks_image_classify: %s is NULL",
                         c ? "out" : "classifier");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    take_swap(c);
    const ks_allocator *alloc = c->desc.task.allocator;
    char err[512] = "";
    ks_packet *outs[KS_TASK_MAX_OUTPUTS];
    int32_t width, height;
    /* Classification keeps no state across frames: any timestamp order is fine. */
    ks_status st = ks__task_process_image(c->m.pipeline, &c->desc.task, image, timestamp_us, 1,
                                          outs, &width, &height, err, sizeof(err));
    if (st) {
        ks__object_error(&c->obj, "ks_image_classify: %s", err);
        goto done;
    }
    const ks_tensor *scores = ks_packet_tensor(outs[c->m.out_scores]);
    size_t n = scores ? scores->size_bytes / sizeof(float) : 0;
    const float *p = scores ? scores->data : NULL;
    uint32_t k =
        c->desc.task.max_results ? (uint32_t)c->desc.task.max_results : KS__CLS_DEFAULT_RESULTS;
    size_t first = (size_t)c->m.label_offset;
    size_t avail = n > first ? n - first : 0;
    if (k > avail) k = (uint32_t)avail;
    /* Partial selection sort: k is small (<= 1000) and runs once per image. */
    size_t label_bytes = 0;
    uint32_t idx[KS__CLS_MAX_RESULTS];
    uint32_t count = 0;
    for (; count < k; count++) {
        size_t best = SIZE_MAX;
        for (size_t i = first; i < n; i++) {
            int taken = 0;
            for (uint32_t j = 0; j < count && !taken; j++)
                taken = idx[j] == i;
            if (!taken && (best == SIZE_MAX || p[i] > p[best])) best = i;
        }
        if (best == SIZE_MAX || p[best] < c->desc.task.min_score) break;
        idx[count] = (uint32_t)best;
        label_bytes += strlen(label_for(c, best, n)) + 1;
    }
    cls_result *r = ks__alloc(alloc, sizeof(*r) + count * sizeof(ks_class_score) + label_bytes + 1);
    if (!r) {
        ks__object_error(&c->obj, "ks_image_classify: out of memory");
        st = KS_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    r->alloc = alloc;
    ks_class_score *items = (ks_class_score *)(r + 1);
    char *text = (char *)(items + count);
    for (uint32_t j = 0; j < count; j++) {
        const char *name = label_for(c, idx[j], n);
        size_t len = strlen(name);
        memcpy(text, name, len + 1);
        items[j] = (ks_class_score){.class_id = (int32_t)idx[j], .label = text, .score = p[idx[j]]};
        text += len + 1;
    }
    r->pub = (ks_classifications){.count = count, .items = items};
    *out = &r->pub;
done:
    ks__task_release_outputs(outs);
    return st;
}

ks_status ks_image_classify(ks_image_classifier *c, const ks_image *image, int64_t timestamp_us,
                            ks_classifications **out) {
    uint64_t t0 = ks__task_now_ns();
    ks_status st = image_classify_run(c, image, timestamp_us, out);
    if (c) ks__task_clock_add(&c->clock, t0);
    return st;
}

ks_status ks_image_classifier_stats(const ks_image_classifier *c, ks_task_stats *stats_out) {
    if (!c || !stats_out) return KS_STATUS_INVALID_ARGUMENT;
    return ks__task_stats(c->m.pipeline, &c->clock, stats_out);
}
