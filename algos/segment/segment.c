/* ks_segmenter: selfie segmentation through the bundle's pipeline graph (image_to_tensor ->
 * infer -> seg_mask). The caller's image enters the graph as an upright view (no copy), so the
 * graph, the mask and every coordinate are in upright pixels. The graph emits the mask at the
 * model's resolution (its seg_mask node's size "model"); ks_segment upsamples it to the image
 * straight into the result, counting person pixels in the same pass (the graph's own upsampling
 * wrote a zeroed 1.2 MB packet per 640x480 frame that a second pass then counted), and
 * ks_segment_into resamples it into the caller's buffer. A bundle graph that upsamples itself
 * still works: its image-size mask is taken as it is. */
#include "kestrel/segment.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "node_types.h"
#include "task_common.h"
#include "tracking.h"

#define KS__SEG_DEFAULT_SMOOTHING 0.7f /* MediaPipe's combine_with_previous_ratio */

struct ks_segmenter {
    ks__object obj;       /* first: ks_last_error(segmenter) */
    ks__task_clock clock; /* ks_task_stats */
    ks_segmenter_desc desc;
    ks__task_swap swap; /* ks_segmenter_swap_model */
    /* the models: what a live swap replaces (take_swap) */
    struct seg_models {
        ks_bundle *bundle;
        ks_pipeline *pipeline;
        int32_t out_mask;
    } m;
    ks__resample rs;        /* the upsampling's taps and scratch, grown to the widest output */
    int32_t tab_sw, tab_dw; /* the ks__resample_columns held by rs (0: none; ks_segment_into's) */
};

typedef struct seg_result {
    ks_segmentation pub; /* first: the caller's pointer */
    const ks_allocator *alloc;
    /* The graph's mask packet when pub.mask points into it (a tight f32 plane): the result keeps
     * a reference instead of copying the mask. NULL when the mask was copied. */
    const ks_packet *mask_packet;
} seg_result;

static const char *const k_default_bundles[KS_SEGMENTER_MODEL_COUNT] = {
    "selfie_segmenter.ksb", "selfie_segmenter_landscape.ksb"};

void ks_segmenter_destroy(ks_segmenter *s) {
    if (!s) return;
    ks_segmenter_destroy(ks__task_swap_take(&s->swap));
    ks_pipeline_destroy(s->m.pipeline);
    ks_bundle_destroy(s->m.bundle);
    const ks_allocator *a = s->desc.task.allocator;
    ks__resample_free(&s->rs, a);
    ks__free(a, s);
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
        !(d.task.smoothing < 1.0f) || (unsigned)d.mask_size >= KS_MASK_SIZE_COUNT) {
        ks__object_error(NULL,
                         "ks_segmenter_create: bad desc (mode %d, model %d, rotation %d, "
                         "num_threads %d, smoothing %g, mask_size %d)",
                         (int)d.task.mode, (int)d.model, (int)d.task.rotation,
                         (int)d.task.num_threads, (double)d.task.smoothing, (int)d.mask_size);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    st = ks__task_register_segment_nodes();
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
    /* A bundle graph without the mask_size parameter ignores it and upsamples; the results say
     * what size they are either way. */
    ks_side_param side[] = {{"smoothing", ratio_text}, {"mask_size", "model"}};
    st = ks__task_open(&d.task, k_default_bundles[d.model], NULL, side, 2, &s->m.bundle,
                       &s->m.pipeline, err, sizeof(err));
    if (st) goto error;
    st = ks__task_check_graph(s->m.pipeline, "mask", &s->m.out_mask, err, sizeof(err));
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
    ks_packet_release(r->mask_packet);
    ks__free(r->alloc, r);
}

static void destroy_any(void *s) {
    ks_segmenter_destroy(s);
}

ks_status ks_segmenter_swap_model(ks_segmenter *s, const ks_task_options *source) {
    ks_segmenter_desc d = s ? s->desc : (ks_segmenter_desc){0};
    ks_status st =
        ks__task_swap_options("ks_segmenter_swap_model", s ? &s->desc.task : NULL, source, &d.task);
    ks_segmenter *fresh = NULL;
    if (!st && (st = ks_segmenter_create(&d, &fresh)) != KS_STATUS_OK)
        return ks__task_swap_failed("ks_segmenter_swap_model", source, st);
    if (!st) ks__task_swap_offer(&s->swap, fresh, destroy_any);
    return st;
}

/* Frame start: takes an offered version's models (the old ones go with the replacement). */
static void take_swap(ks_segmenter *s) {
    ks_segmenter *fresh = ks__task_swap_take(&s->swap);
    if (!fresh) return;
    struct seg_models old = s->m;
    s->m = fresh->m;
    fresh->m = old;
    ks__task_clock_swapped(&s->clock);
    ks_segmenter_destroy(fresh);
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
    take_swap(s);
    const ks_allocator *alloc = s->desc.task.allocator;
    char err[512] = "";
    ks_packet *outs[KS_TASK_MAX_OUTPUTS];
    int32_t width, height;
    /* IMAGE mode: every call is independent, so any timestamp order is fine. */
    ks_status st = ks__task_process_image(s->m.pipeline, &s->desc.task, image, timestamp_us,
                                          s->desc.task.mode == KS_MODE_IMAGE, outs, &width, &height,
                                          err, sizeof(err));
    if (st) {
        ks__object_error(&s->obj, "ks_segment: %s", err);
        goto done;
    }
    const ks_packet_mask *mask = ks_packet_mask_view(outs[s->m.out_mask]);
    if (!mask || mask->dtype != KS_DTYPE_F32) {
        ks__object_error(&s->obj, "ks_segment: the graph produced no f32 mask");
        st = KS_STATUS_INTERNAL;
        goto done;
    }
    /* upsample here: a mask smaller than the image when the caller asked for the image's size */
    bool upsample = s->desc.mask_size == KS_MASK_SIZE_IMAGE &&
                    (mask->width_px != width || mask->height_px != height);
    int32_t out_w = upsample ? width : mask->width_px, out_h = upsample ? height : mask->height_px;
    size_t num_px = (size_t)out_w * (size_t)out_h;
    size_t row_bytes = (size_t)mask->width_px * sizeof(float);
    size_t row_stride = mask->stride_bytes ? mask->stride_bytes : row_bytes;
    /* A tight mask is handed over by reference (the packet outlives the segmenter if need be:
     * it comes from the pipeline's pool); only a strided one is copied. */
    bool by_ref = !upsample && row_stride == row_bytes;
    if (upsample && (s->tab_sw != mask->width_px || s->tab_dw != width)) {
        s->tab_sw = s->tab_dw = 0;
        if (!ks__resample_reserve(&s->rs, alloc, (size_t)width)) {
            ks__object_error(&s->obj, "ks_segment: out of memory");
            st = KS_STATUS_OUT_OF_MEMORY;
            goto done;
        }
        ks__resample_columns(&s->rs, mask->width_px, width);
        s->tab_sw = mask->width_px;
        s->tab_dw = width;
    }
    size_t bytes = sizeof(seg_result) + (by_ref ? 0 : num_px * sizeof(float)) +
                   (s->desc.output_u8 ? num_px : 0);
    seg_result *r = ks__alloc(alloc, bytes);
    if (!r) {
        ks__object_error(&s->obj, "ks_segment: out of memory for a %d x %d mask", (int)out_w,
                         (int)out_h);
        st = KS_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    r->alloc = alloc;
    r->mask_packet = NULL;
    const float *m;
    uint8_t *tail = (uint8_t *)(r + 1);
    size_t num_person = 0;
    if (upsample) {
        uint64_t t0 = ks__task_now_ns();
        float *up = (float *)tail;
        tail += num_px * sizeof(float);
        ks__resample_rows rows = {mask->height_px, (float)mask->height_px / (float)height};
        ks__mask_resample(&s->rs, mask->data, row_stride / sizeof(float), ks__resample_row_tap,
                          &rows, up, width, height, (size_t)width, &num_person);
        m = up;
        ks__task_clock_post(&s->clock, t0);
    } else if (by_ref) {
        r->mask_packet = ks_packet_retain(outs[s->m.out_mask]);
        m = mask->data;
    } else {
        float *copy = (float *)tail;
        tail += num_px * sizeof(float);
        for (int32_t y = 0; y < mask->height_px; y++)
            memcpy(copy + (size_t)y * (size_t)mask->width_px,
                   (const uint8_t *)mask->data + (size_t)y * row_stride, row_bytes);
        m = copy;
    }
    if (!upsample)
        for (size_t i = 0; i < num_px; i++)
            num_person += m[i] >= 0.5f;
    uint8_t *u8 = NULL;
    if (s->desc.output_u8) {
        u8 = tail;
        for (size_t i = 0; i < num_px; i++)
            u8[i] = (uint8_t)(m[i] * 255.0f + 0.5f);
    }
    r->pub = (ks_segmentation){.width_px = out_w,
                               .height_px = out_h,
                               .mask = m,
                               .mask_u8 = u8,
                               .person_fraction = num_px ? (float)num_person / (float)num_px : 0,
                               .image_width_px = width,
                               .image_height_px = height};
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
    return ks__task_stats(s->m.pipeline, &s->clock, stats_out);
}

/* ---- ks_segment_into ---- */

#define KS__SEG_MAX_OUT_PX 4096

/* Bilinear tap of output sample i of n spread over [start, start + span) image pixels, on a mask
 * axis of mask_n samples spanning image_n pixels (sample centres at (k + 0.5) * image_n /
 * mask_n); edge samples repeat. */
static void axis_tap(int32_t i, int32_t n, float start, float span, int32_t mask_n, int32_t image_n,
                     int32_t *k0, int32_t *k1, float *w) {
    float img = start + ((float)i + 0.5f) * span / (float)n;
    float u = img * (float)mask_n / (float)image_n - 0.5f;
    if (!(u > 0.0f)) u = 0.0f; /* NaN too */
    if (u > (float)(mask_n - 1)) u = (float)(mask_n - 1);
    int32_t a = (int32_t)u;
    *k0 = a;
    *k1 = a + 1 < mask_n ? a + 1 : mask_n - 1;
    *w = u - (float)a;
}

typedef struct axis_map {
    int32_t n;         /* output samples */
    float start, span; /* image pixels they spread over */
    int32_t mask_n, image_n;
} axis_map;

static void row_tap(const void *ctx, int32_t y, int32_t *y0, int32_t *y1, float *wy) {
    const axis_map *m = ctx;
    axis_tap(y, m->n, m->start, m->span, m->mask_n, m->image_n, y0, y1, wy);
}

static ks_status segment_into_run(ks_segmenter *s, const ks_image *image, int64_t timestamp_us,
                                  const ks_box *region, float *dst, int32_t width_px,
                                  int32_t height_px, int32_t stride_floats, float *fraction_out) {
    if (!s) {
        ks__object_error(NULL, "ks_segment_into: segmenter is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    take_swap(s);
    if (!dst || width_px < 1 || height_px < 1 || width_px > KS__SEG_MAX_OUT_PX ||
        height_px > KS__SEG_MAX_OUT_PX || stride_floats < 0 ||
        (stride_floats > 0 && stride_floats < width_px) ||
        (region && region->w > 0.0f &&
         !(region->h > 0.0f && isfinite(region->x) && isfinite(region->y) && isfinite(region->w) &&
           isfinite(region->h)))) {
        ks__object_error(&s->obj,
                         "ks_segment_into: bad output (dst %s, %d x %d, stride %d floats; sizes "
                         "1..%d, stride 0 or >= width) or region",
                         dst ? "set" : "NULL", (int)width_px, (int)height_px, (int)stride_floats,
                         KS__SEG_MAX_OUT_PX);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (!ks__resample_reserve(&s->rs, s->desc.task.allocator, (size_t)width_px)) {
        ks__object_error(&s->obj, "ks_segment_into: out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    char err[512] = "";
    ks_packet *outs[KS_TASK_MAX_OUTPUTS];
    int32_t iw, ih;
    ks_status st = ks__task_process_image(s->m.pipeline, &s->desc.task, image, timestamp_us,
                                          s->desc.task.mode == KS_MODE_IMAGE, outs, &iw, &ih, err,
                                          sizeof(err));
    if (st) {
        ks__object_error(&s->obj, "ks_segment_into: %s", err);
        goto done;
    }
    const ks_packet_mask *mask = ks_packet_mask_view(outs[s->m.out_mask]);
    if (!mask || mask->dtype != KS_DTYPE_F32 || mask->width_px < 1 || mask->height_px < 1) {
        ks__object_error(&s->obj, "ks_segment_into: the graph produced no f32 mask");
        st = KS_STATUS_INTERNAL;
        goto done;
    }
    ks_box r = {0.0f, 0.0f, (float)iw, (float)ih};
    if (region && region->w > 0.0f) r = *region;
    int32_t mw = mask->width_px, mh = mask->height_px;
    size_t mstride = mask->stride_bytes ? mask->stride_bytes / sizeof(float) : (size_t)mw;
    s->tab_sw = s->tab_dw = 0; /* rs gets this call's taps */
    for (int32_t x = 0; x < width_px; x++)
        axis_tap(x, width_px, r.x, r.w, mw, iw, &s->rs.col0[x], &s->rs.col1[x], &s->rs.colw[x]);
    s->rs.src_w = mw;
    axis_map rows = {height_px, r.y, r.h, mh, ih};
    size_t stride = stride_floats ? (size_t)stride_floats : (size_t)width_px;
    size_t num_person = 0;
    ks__mask_resample(&s->rs, mask->data, mstride, row_tap, &rows, dst, width_px, height_px, stride,
                      &num_person);
    if (fraction_out) *fraction_out = (float)num_person / ((float)width_px * (float)height_px);
done:
    ks__task_release_outputs(outs);
    return st;
}

ks_status ks_segment_into(ks_segmenter *s, const ks_image *image, int64_t timestamp_us,
                          const ks_box *region, float *dst, int32_t width_px, int32_t height_px,
                          int32_t stride_floats, float *person_fraction_out) {
    uint64_t t0 = ks__task_now_ns();
    ks_status st = segment_into_run(s, image, timestamp_us, region, dst, width_px, height_px,
                                    stride_floats, person_fraction_out);
    if (s) ks__task_clock_add(&s->clock, t0);
    return st;
}
