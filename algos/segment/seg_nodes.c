/* Segmentation nodes.
 *
 * seg_mask: model output tensor [1, h, w, 1] (person probability, already through the model's
 * sigmoid) + the frame image -> f32 mask at the image's size (option size "image", the default)
 * or at the model's (size "model": no upsampling). With option `smoothing` in (0, 1)
 * it blends each frame with the previous one the way MediaPipe's SegmentationSmoothingCalculator
 * does (ks__mask_smooth). Smoothing runs at model resolution, before upsampling: the blend is
 * per pixel and the upsampling is linear, so this costs h*w instead of the image's pixel count
 * and differs from smoothing after upsampling only at edges between uncertain pixels. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "node_types.h"
#include "task_common.h"
#include "tracking.h"

typedef struct seg_mask_state {
    float smoothing; /* combine-with-previous ratio; 0: off */
    bool model_size; /* option size "model": emit the mask at the model's resolution */
    float *prev;     /* previous smoothed mask at model resolution, or NULL */
    int32_t prev_w, prev_h;
    size_t cap_px; /* capacity of prev */
    const ks_allocator *alloc;
    /* Upsampling taps for one (model width -> image width) pair; rebuilt when the sizes change */
    int32_t tab_sw, tab_dw;
    ks__resample rs;
} seg_mask_state;

static void seg_mask_destroy(void *state, const ks_allocator *a) {
    seg_mask_state *s = state;
    if (!s) return;
    ks__free(a, s->prev);
    ks__resample_free(&s->rs, a);
    ks__free(a, s);
}

static ks_status seg_mask_create(const ks_node_init *init, void **state_out) {
    double ratio = 0.0;
    const char *size = NULL;
    ks_status st = ks_node_options_float(init->options, "smoothing", 0.0, &ratio);
    if (!st) st = ks_node_options_string(init->options, "size", "image", &size);
    if (st) return st;
    if (strcmp(size, "image") != 0 && strcmp(size, "model") != 0) {
        snprintf(init->error, init->error_cap, "option 'size' is '%s'; use image or model", size);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (!(ratio >= 0.0 && ratio < 1.0)) {
        snprintf(init->error, init->error_cap, "option 'smoothing' is %g; it must be in [0, 1)",
                 ratio);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    seg_mask_state *s = ks__alloc(init->allocator, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    memset(s, 0, sizeof(*s));
    s->smoothing = (float)ratio;
    s->model_size = strcmp(size, "model") == 0;
    s->alloc = init->allocator;
    *state_out = s;
    return KS_STATUS_OK;
}

static void seg_mask_reset(void *state) {
    seg_mask_state *s = state;
    s->prev_w = s->prev_h = 0; /* buffers stay; the next frame starts fresh */
}

/* The per-column taps of the upsampling (ks__resample_columns); false when out of memory. */
static bool resize_tables(seg_mask_state *s, int32_t sw, int32_t dw) {
    if (s->tab_sw == sw && s->tab_dw == dw) return true;
    s->tab_sw = s->tab_dw = 0;
    if (!ks__resample_reserve(&s->rs, s->alloc, (size_t)dw)) return false;
    ks__resample_columns(&s->rs, sw, dw);
    s->tab_sw = sw;
    s->tab_dw = dw;
    return true;
}

static ks_status seg_mask_process(void *state, ks_node_ctx *ctx) {
    seg_mask_state *s = state;
    const ks_tensor *t = ks_packet_tensor(ks_node_input(ctx, 0));
    const ks_packet_image *img = ks_packet_image_view(ks_node_input(ctx, 1));
    const ks_tensor_shape *sh = &t->info.shape;
    /* Accept [1, h, w, 1], [1, h, w] and [h, w]. */
    int64_t h = 0, w = 0, c = 1;
    if (sh->rank == 4 && sh->dims[0] == 1) {
        h = sh->dims[1];
        w = sh->dims[2];
        c = sh->dims[3];
    } else if (sh->rank == 3 && sh->dims[0] == 1) {
        h = sh->dims[1];
        w = sh->dims[2];
    } else if (sh->rank == 2) {
        h = sh->dims[0];
        w = sh->dims[1];
    }
    if (t->info.dtype != KS_DTYPE_F32 || c != 1 || h < 1 || w < 1 || h > 4096 || w > 4096 ||
        t->size_bytes != (size_t)(h * w) * sizeof(float))
        return ks_node_fail(ctx, KS_STATUS_INVALID_SHAPE,
                            "mask tensor must be f32 [1, h, w, 1] with h, w in 1..4096 (rank %d, "
                            "dtype %s, %zu bytes)",
                            (int)sh->rank, ks_dtype_string(t->info.dtype), t->size_bytes);
    const float *src = t->data;
    size_t n = (size_t)(h * w);
    if (s->smoothing > 0.0f) {
        if (s->cap_px < n) {
            /* Grows only when the model's output size changes (never for a fixed model). */
            ks__free(s->alloc, s->prev);
            s->prev = ks__alloc(s->alloc, n * sizeof(float));
            s->prev_w = s->prev_h = 0;
            s->cap_px = s->prev ? n : 0;
            if (!s->prev) return ks_node_fail(ctx, KS_STATUS_OUT_OF_MEMORY, "mask history");
        }
        int have_prev = s->prev_w == (int32_t)w && s->prev_h == (int32_t)h;
        ks__mask_smooth(src, have_prev ? s->prev : NULL, s->prev, n, s->smoothing);
        s->prev_w = (int32_t)w;
        s->prev_h = (int32_t)h;
        src = s->prev;
    }
    ks_packet *out = NULL;
    if (s->model_size) {
        ks_status st = ks_packet_create_mask(ks_node_allocator(ctx),
                                             &(ks_packet_mask){.dtype = KS_DTYPE_F32,
                                                               .width_px = (int32_t)w,
                                                               .height_px = (int32_t)h},
                                             &out);
        if (st) return ks_node_fail(ctx, st, "cannot allocate a %d x %d mask", (int)w, (int)h);
        float *dst = ks_packet_mutable_data(out, NULL);
        for (size_t i = 0; i < n; i++) {
            float v = src[i];
            dst[i] = v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : (v == v ? v : 0.0f));
        }
        return ks_node_output(ctx, 0, out);
    }
    ks_status st = ks_packet_create_mask(ks_node_allocator(ctx),
                                         &(ks_packet_mask){.dtype = KS_DTYPE_F32,
                                                           .width_px = img->width_px,
                                                           .height_px = img->height_px,
                                                           .stride_bytes = 0,
                                                           .data = NULL},
                                         &out);
    if (st)
        return ks_node_fail(ctx, st, "cannot allocate a %d x %d mask", (int)img->width_px,
                            (int)img->height_px);
    size_t size_bytes = 0;
    float *dst = ks_packet_mutable_data(out, &size_bytes);
    if (!resize_tables(s, (int32_t)w, img->width_px)) {
        ks_packet_release(out);
        return ks_node_fail(ctx, KS_STATUS_OUT_OF_MEMORY, "upsampling tables");
    }
    /* The model's sigmoid already bounds values; the resize clamps what rounding may push out. */
    ks__resample_rows rows = {(int32_t)h, (float)h / (float)img->height_px};
    ks__mask_resample(&s->rs, src, (size_t)w, ks__resample_row_tap, &rows, dst, img->width_px,
                      img->height_px, (size_t)img->width_px, NULL);
    return ks_node_output(ctx, 0, out);
}

static const ks_port seg_mask_in[] = {{"tensor", KS_PACKET_TENSOR, KS_PACKET_ANY, 0, -1},
                                      {"image", KS_PACKET_IMAGE, KS_PACKET_ANY, 0, -1}};
static const ks_port seg_mask_out[] = {{"mask", KS_PACKET_MASK, KS_PACKET_ANY, 0, -1}};

const ks_node_type ks__node_seg_mask = {"seg_mask",
                                        2,
                                        1,
                                        seg_mask_in,
                                        seg_mask_out,
                                        seg_mask_create,
                                        seg_mask_process,
                                        NULL,
                                        seg_mask_reset,
                                        seg_mask_destroy};
