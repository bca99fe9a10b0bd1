/* ks_segmenter: selfie segmentation through the bundle's pipeline graph (image_to_tensor ->
 * infer -> seg_mask). The caller's image enters the graph as an upright view (no copy), so the
 * graph, the mask and every coordinate are in upright pixels. */
#include "kestrel/segment.h"

#include <stdio.h>
#include <string.h>

#include "task_common.h"

#define KS__SEG_DEFAULT_SMOOTHING 0.7f /* MediaPipe's combine_with_previous_ratio */

struct ks_segmenter {
    ks__object obj;       /* first: ks_last_error(segmenter) */
    ks__task_clock clock; /* ks_task_stats */
    ks_segmenter_desc desc;
    ks_bundle *bundle;
    ks_pipeline *pipeline;
    int32_t out_mask;
};

typedef struct seg_result {
    ks_segmentation pub; /* first: the caller's pointer */
    const ks_allocator *alloc;
} seg_result;

static const char *const k_default_bundles[KS_SEGMENTER_MODEL_COUNT] = {
    "selfie_segmenter.ksb", "selfie_segmenter_landscape.ksb"};

void ks_segmenter_destroy(ks_segmenter *s) {
    if (!s) return;
    ks_pipeline_destroy(s->pipeline);
    ks_bundle_destroy(s->bundle);
    ks__free(s->desc.task.allocator, s);
}

ks_status ks_segmenter_create(const ks_segmenter_desc *desc, ks_segmenter **out) {
    ks_segmenter_desc d = {0};
    if (desc) d = *desc;
    char err[512] = "";
    ks_status st = KS_STATUS_OK;
    ks_segmenter *s = NULL;
    if (!out) {
        ks__object_error(NULL, "ks_segmenter_create: out is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if ((unsigned)d.task.mode >= KS_MODE_COUNT || (unsigned)d.model >= KS_SEGMENTER_MODEL_COUNT ||
        (unsigned)d.task.rotation >= KS_ROTATION_COUNT || d.task.num_threads < 0 ||
        !(d.task.smoothing < 1.0f)) {
        ks__object_error(NULL,
                         "ks_segmenter_create: bad desc (mode %d, model %d, rotation %d, "
                         "num_threads %d, smoothing %g)",
                         (int)d.task.mode, (int)d.model, (int)d.task.rotation,
                         (int)d.task.num_threads, (double)d.task.smoothing);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    st = ks__seg_register_nodes();
    if (st) {
        ks__object_error(NULL, "ks_segmenter_create: %s", ks_last_error(NULL));
        return st;
    }
    s = ks__alloc(d.task.allocator, sizeof(*s));
    if (!s) {
        ks__object_error(NULL, "ks_segmenter_create: out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    memset(s, 0, sizeof(*s));
    s->obj.magic = KS__OBJECT_MAGIC;
    s->desc = d;
    float ratio = 0.0f;
    if (d.task.mode == KS_MODE_VIDEO)
        ratio = d.task.smoothing == 0.0f ? KS__SEG_DEFAULT_SMOOTHING
                                         : (d.task.smoothing < 0.0f ? 0.0f : d.task.smoothing);
    char ratio_text[32];
    snprintf(ratio_text, sizeof(ratio_text), "%.6g", (double)ratio);
    ks_side_param side[] = {{"smoothing", ratio_text}};
    st = ks__task_open(&d.task, k_default_bundles[d.model], NULL, side, 1, &s->bundle, &s->pipeline,
                       err, sizeof(err));
    if (st) goto error;
    st = ks__task_check_graph(s->pipeline, "mask", &s->out_mask, err, sizeof(err));
    if (st) goto error;
    *out = s;
    return KS_STATUS_OK;
error:
    ks__object_error(NULL, "ks_segmenter_create: %s", err);
    ks_segmenter_destroy(s);
    return st;
}

void ks_segmentation_release(ks_segmentation *m) {
    if (!m) return;
    seg_result *r = (seg_result *)m;
    ks__free(r->alloc, r);
}

static ks_status segment_run(ks_segmenter *s, const ks_image *image, int64_t timestamp_us,
                             ks_segmentation **out) {
    if (!s || !out) {
        if (s)
            ks__object_error(&s->obj, "ks_segment: out is NULL");
        else
            ks__object_error(NULL, "ks_segment: segmenter is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    const ks_allocator *alloc = s->desc.task.allocator;
    char err[512] = "";
    ks_packet *outs[KS_TASK_MAX_OUTPUTS];
    int32_t width, height;
    /* IMAGE mode: every call is independent, so any timestamp order is fine. */
    ks_status st = ks__task_process_image(s->pipeline, &s->desc.task, image, timestamp_us,
                                          s->desc.task.mode == KS_MODE_IMAGE, outs, &width, &height,
                                          err, sizeof(err));
    if (st) {
        ks__object_error(&s->obj, "ks_segment: %s", err);
        goto done;
    }
    const ks_packet_mask *mask = ks_packet_mask_view(outs[s->out_mask]);
    if (!mask || mask->dtype != KS_DTYPE_F32) {
        ks__object_error(&s->obj, "ks_segment: the graph produced no f32 mask");
        st = KS_STATUS_INTERNAL;
        goto done;
    }
    size_t num_px = (size_t)mask->width_px * (size_t)mask->height_px;
    size_t bytes = sizeof(seg_result) + num_px * sizeof(float) + (s->desc.output_u8 ? num_px : 0);
    seg_result *r = ks__alloc(alloc, bytes);
    if (!r) {
        ks__object_error(&s->obj, "ks_segment: out of memory for a %d x %d mask",
                         (int)mask->width_px, (int)mask->height_px);
        st = KS_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    r->alloc = alloc;
    float *m = (float *)(r + 1);
    size_t row_stride =
        mask->stride_bytes ? mask->stride_bytes : (size_t)mask->width_px * sizeof(float);
    for (int32_t y = 0; y < mask->height_px; y++)
        memcpy(m + (size_t)y * (size_t)mask->width_px,
               (const uint8_t *)mask->data + (size_t)y * row_stride,
               (size_t)mask->width_px * sizeof(float));
    size_t num_person = 0;
    for (size_t i = 0; i < num_px; i++)
        num_person += m[i] >= 0.5f;
    uint8_t *u8 = NULL;
    if (s->desc.output_u8) {
        u8 = (uint8_t *)(m + num_px);
        for (size_t i = 0; i < num_px; i++)
            u8[i] = (uint8_t)(m[i] * 255.0f + 0.5f);
    }
    r->pub = (ks_segmentation){.width_px = mask->width_px,
                               .height_px = mask->height_px,
                               .mask = m,
                               .mask_u8 = u8,
                               .person_fraction = num_px ? (float)num_person / (float)num_px : 0};
    *out = &r->pub;
done:
    ks__task_release_outputs(outs);
    return st;
}

ks_status ks_segment(ks_segmenter *s, const ks_image *image, int64_t timestamp_us,
                     ks_segmentation **out) {
    uint64_t t0 = ks__task_now_ns();
    ks_status st = segment_run(s, image, timestamp_us, out);
    if (s) ks__task_clock_add(&s->clock, t0);
    return st;
}

ks_status ks_segmenter_stats(const ks_segmenter *s, ks_task_stats *stats_out) {
    if (!s || !stats_out) return KS_STATUS_INVALID_ARGUMENT;
    return ks__task_stats(s->pipeline, &s->clock, stats_out);
}
