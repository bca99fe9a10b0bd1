/* Nodes of the object detection (and classification) tasks.
 *
 * model_input: image -> model input tensor, configured by the bundle's config entry
 *   (`preprocess` object): size, layout (nhwc/nchw), dtype (f32/u8), channel order (rgb/bgr),
 *   per-channel mean/std in pixel units, and the fit (stretch, letterbox centred or top-left with
 *   a pad value, centre crop). Also emits the tensor-normalized -> image-normalized matrix, so
 *   decoders map boxes back without knowing the fit. This file only reads the config: the tensor
 *   is made by the pipeline's image -> tensor implementation (pipeline/src/image_tensor.h), the
 *   one behind the built-in image_to_tensor node too.
 * det_decode: matrix + raw head tensors -> detections normalized to the image: YOLOX or NanoDet
 *   decoding, class-wise NMS, optional IoU tracking (stable ids as a second output, an i32
 *   tensor [n]). Thresholds come from the config; options min_score / max_results override
 *   them when > 0. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "detection.h"
#include "image_tensor.h"
#include "node_types.h"
#include "task_common.h"
#include "tracking.h"

/* ---------------------------------------------------------------------------------------------
 * model_input: the config's `preprocess` object as an image_tensor.h desc
 * ------------------------------------------------------------------------------------------- */

static ks_status read_preprocess(const ks_node_init *init, ks__image_tensor_desc *s) {
    const char *entry = NULL;
    cJSON *cfg = NULL;
    ks_status st = ks_node_options_string(init->options, "config", NULL, &entry);
    if (st) return st;
    if (!entry || !init->bundle) {
        snprintf(init->error, init->error_cap,
                 "option 'config' (a bundle config entry) is required and the graph must come "
                 "from a bundle");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    char err[256] = "";
    st = ks__task_config(init->bundle, entry, &cfg, err, sizeof(err));
    if (st) goto done;
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(cfg, "preprocess");
    if (!cJSON_IsObject(pre)) {
        snprintf(err, sizeof(err), "config '%s' has no 'preprocess' object", entry);
        st = KS_STATUS_INVALID_MODEL;
        goto done;
    }
    double w = 0, h = 0, pad = 0, crop = 1;
    const char *layout = NULL, *dtype = NULL, *order = NULL, *fit = NULL;
    float mean[3] = {0, 0, 0}, stdv[3] = {1, 1, 1};
    uint32_t nm = 0, ns = 0;
    if (!st) st = ks__cfg_number(pre, "width", 0, &w, err, sizeof(err));
    if (!st) st = ks__cfg_number(pre, "height", 0, &h, err, sizeof(err));
    if (!st) st = ks__cfg_number(pre, "pad_value", 0, &pad, err, sizeof(err));
    if (!st) st = ks__cfg_number(pre, "crop_fraction", 1, &crop, err, sizeof(err));
    if (!st) st = ks__cfg_string(pre, "layout", "nhwc", &layout, err, sizeof(err));
    if (!st) st = ks__cfg_string(pre, "dtype", "f32", &dtype, err, sizeof(err));
    if (!st) st = ks__cfg_string(pre, "channel_order", "rgb", &order, err, sizeof(err));
    if (!st) st = ks__cfg_string(pre, "fit", "stretch", &fit, err, sizeof(err));
    if (!st) st = ks__cfg_numbers(pre, "mean", mean, 3, &nm, err, sizeof(err));
    if (!st) st = ks__cfg_numbers(pre, "std", stdv, 3, &ns, err, sizeof(err));
    if (st) goto done;
    st = KS_STATUS_INVALID_MODEL;
    if (!(w >= 1 && w <= KS__IMAGE_TENSOR_MAX_SIDE_PX && h >= 1 &&
          h <= KS__IMAGE_TENSOR_MAX_SIDE_PX)) {
        snprintf(err, sizeof(err), "preprocess width x height %g x %g must be in 1..%d", w, h,
                 KS__IMAGE_TENSOR_MAX_SIDE_PX);
        goto done;
    }
    if ((nm && nm != 3) || (ns && ns != 3)) {
        snprintf(err, sizeof(err), "preprocess 'mean' and 'std' take 3 numbers");
        goto done;
    }
    s->width_px = (int32_t)w;
    s->height_px = (int32_t)h;
    if (strcmp(layout, "nhwc") == 0)
        s->layout = KS_TENSOR_LAYOUT_NHWC;
    else if (strcmp(layout, "nchw") == 0)
        s->layout = KS_TENSOR_LAYOUT_NCHW;
    else {
        snprintf(err, sizeof(err), "preprocess layout '%s' is not nhwc or nchw", layout);
        goto done;
    }
    if (strcmp(dtype, "f32") == 0)
        s->dtype = KS_DTYPE_F32;
    else if (strcmp(dtype, "u8") == 0)
        s->dtype = KS_DTYPE_U8;
    else {
        snprintf(err, sizeof(err), "preprocess dtype '%s' is not f32 or u8", dtype);
        goto done;
    }
    if (strcmp(order, "rgb") == 0)
        s->channel_order = KS_CHANNEL_ORDER_RGB;
    else if (strcmp(order, "bgr") == 0)
        s->channel_order = KS_CHANNEL_ORDER_BGR;
    else {
        snprintf(err, sizeof(err), "preprocess channel_order '%s' is not rgb or bgr", order);
        goto done;
    }
    if (strcmp(fit, "stretch") == 0)
        s->fit = KS__FIT_STRETCH;
    else if (strcmp(fit, "letterbox") == 0)
        s->fit = KS__FIT_LETTERBOX;
    else if (strcmp(fit, "letterbox_top_left") == 0)
        s->fit = KS__FIT_LETTERBOX_TOP_LEFT;
    else if (strcmp(fit, "center_crop") == 0)
        s->fit = KS__FIT_CENTER_CROP;
    else {
        snprintf(err, sizeof(err),
                 "preprocess fit '%s' is not stretch, letterbox, letterbox_top_left or "
                 "center_crop",
                 fit);
        goto done;
    }
    if (!(crop > 0.0 && crop <= 1.0) || !(pad >= 0.0 && pad <= 255.0)) {
        snprintf(err, sizeof(err),
                 "preprocess crop_fraction %g must be in (0, 1] and pad_value %g "
                 "in 0..255",
                 crop, pad);
        goto done;
    }
    for (int c = 0; c < 3; c++) {
        if (!(stdv[c] != 0.0f) || !isfinite(stdv[c]) || !isfinite(mean[c])) {
            snprintf(err, sizeof(err), "preprocess std[%d] = %g must be finite and non-zero", c,
                     (double)stdv[c]);
            goto done;
        }
        s->mean[c] = mean[c];
        s->scale[c] = 1.0f / stdv[c];
    }
    /* Letterboxes pad with pad_value; the other fits sample inside the image and replicate its
     * edges for the taps of the outermost pixels. */
    bool pads = s->fit == KS__FIT_LETTERBOX || s->fit == KS__FIT_LETTERBOX_TOP_LEFT;
    s->border = pads ? KS_BORDER_CONSTANT : KS_BORDER_REPLICATE;
    s->border_value = (float)pad;
    s->crop_fraction = (float)crop;
    st = KS_STATUS_OK;
done:
    if (st && err[0]) snprintf(init->error, init->error_cap, "config '%s': %s", entry, err);
    cJSON_Delete(cfg);
    return st;
}

static ks_status mi_create(const ks_node_init *init, void **state_out) {
    ks__image_tensor_desc d = {0};
    ks_status st = read_preprocess(init, &d);
    if (st) return st;
    return ks__image_tensor_create(init->allocator, &d, state_out);
}

static const ks_port mi_in[] = {{"image", KS_PACKET_IMAGE, KS_PACKET_ANY, 0, -1}};
static const ks_port mi_out[] = {{"tensor", KS_PACKET_TENSOR, KS_PACKET_ANY, 0, -1},
                                 {"matrix", KS_PACKET_MATRIX, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1}};
const ks_node_type ks__node_model_input = {.name = "model_input",
                                           .num_inputs = 1,
                                           .num_outputs = 2,
                                           .inputs = mi_in,
                                           .outputs = mi_out,
                                           .create = mi_create,
                                           .process = ks__image_tensor_process,
                                           .destroy = ks__image_tensor_destroy};

/* ---------------------------------------------------------------------------------------------
 * det_decode
 * ------------------------------------------------------------------------------------------- */

typedef enum decoder_kind { DEC_YOLOX, DEC_NANODET } decoder_kind;

typedef struct dd_state {
    decoder_kind kind;
    ks__yolox_options yolox;
    ks__nanodet_options nanodet;
    ks__nms_options nms;
    int32_t max_results;
    size_t cap; /* candidate capacity: total grid cells */
    ks__detection *cand, *kept;
    void *scratch;
    bool track;
    ks__tracker_options tracker_opt;
    ks__tracker tracker;
} dd_state;

static void dd_destroy(void *state, const ks_allocator *a) {
    dd_state *s = state;
    if (!s) return;
    ks__free(a, s->cand);
    ks__free(a, s->kept);
    ks__free(a, s->scratch);
    ks__free(a, s);
}

#define DD_MAX_RESULTS 1000

static ks_status dd_read_config(const ks_node_init *init, dd_state *s, char *err, size_t err_cap) {
    const char *entry = NULL;
    cJSON *cfg = NULL;
    ks_status st = ks_node_options_string(init->options, "config", NULL, &entry);
    if (st) return st;
    if (!entry || !init->bundle) {
        snprintf(err, err_cap,
                 "option 'config' (a bundle config entry) is required and the graph "
                 "must come from a bundle");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    st = ks__task_config(init->bundle, entry, &cfg, err, err_cap);
    if (st) return st;
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(cfg, "preprocess");
    double w = 0, h = 0, nc = 0, sig = 0, multi = 0, score = 0.3, iou = 0.45, maxd = 100;
    double reg_max = 7, offset = 0.5;
    const char *decoder = NULL;
    float strides[KS__GRID_MAX_LEVELS + 1];
    uint32_t num_strides = 0;
    st = ks__cfg_string(cfg, "decoder", NULL, &decoder, err, err_cap);
    if (!st && pre) st = ks__cfg_number(pre, "width", 0, &w, err, err_cap);
    if (!st && pre) st = ks__cfg_number(pre, "height", 0, &h, err, err_cap);
    if (!st) st = ks__cfg_number(cfg, "num_classes", 0, &nc, err, err_cap);
    if (!st) st = ks__cfg_number(cfg, "apply_sigmoid", 0, &sig, err, err_cap);
    if (!st) st = ks__cfg_number(cfg, "multi_label", 0, &multi, err, err_cap);
    if (!st) st = ks__cfg_number(cfg, "score_threshold", 0.3, &score, err, err_cap);
    if (!st) st = ks__cfg_number(cfg, "nms_threshold", 0.45, &iou, err, err_cap);
    if (!st) st = ks__cfg_number(cfg, "max_detections", 100, &maxd, err, err_cap);
    if (!st) st = ks__cfg_number(cfg, "reg_max", 7, &reg_max, err, err_cap);
    if (!st) st = ks__cfg_number(cfg, "center_offset", 0.5, &offset, err, err_cap);
    if (!st)
        st = ks__cfg_numbers(cfg, "strides", strides, KS__GRID_MAX_LEVELS + 1, &num_strides, err,
                             err_cap);
    if (st) goto done;
    st = KS_STATUS_INVALID_MODEL;
    if (!decoder || (strcmp(decoder, "yolox") && strcmp(decoder, "nanodet"))) {
        snprintf(err, err_cap, "config '%s': 'decoder' must be \"yolox\" or \"nanodet\"", entry);
        goto done;
    }
    if (!(w >= 1 && w <= 4096 && h >= 1 && h <= 4096 && nc >= 1 && nc <= 10000 &&
          num_strides <= KS__GRID_MAX_LEVELS && score >= 0 && score <= 1 && iou > 0 && iou <= 1 &&
          maxd >= 1 && maxd <= DD_MAX_RESULTS && reg_max >= 1 && reg_max <= 64)) {
        snprintf(err, err_cap,
                 "config '%s': bad values (input %g x %g, num_classes %g, %u strides, "
                 "score_threshold %g, nms_threshold %g, max_detections %g, reg_max %g)",
                 entry, w, h, nc, (unsigned)num_strides, score, iou, maxd, reg_max);
        goto done;
    }
    for (uint32_t i = 0; i < num_strides; i++)
        if (!(strides[i] >= 1 && strides[i] <= 1024)) {
            snprintf(err, err_cap, "config '%s': stride %g must be in 1..1024", entry,
                     (double)strides[i]);
            goto done;
        }
    s->kind = strcmp(decoder, "yolox") == 0 ? DEC_YOLOX : DEC_NANODET;
    s->nms = (ks__nms_options){.min_suppression_threshold = (float)iou,
                               .min_score_threshold = (float)score,
                               .max_num_detections = (int32_t)maxd,
                               .overlap_type = KS__OVERLAP_IOU,
                               .algorithm = KS__NMS_DEFAULT,
                               .per_class = true};
    s->max_results = (int32_t)maxd;
    if (s->kind == DEC_YOLOX) {
        s->yolox = (ks__yolox_options){.input_width = (int32_t)w,
                                       .input_height = (int32_t)h,
                                       .num_classes = (int32_t)nc,
                                       .num_levels = (int32_t)num_strides,
                                       .apply_sigmoid = sig != 0,
                                       .multi_label = multi != 0,
                                       .min_score_thresh = (float)score};
        for (uint32_t i = 0; i < num_strides; i++)
            s->yolox.strides[i] = (int32_t)strides[i];
        st = ks__yolox_num_cells(&s->yolox, &s->cap, err, err_cap);
    } else {
        s->nanodet = (ks__nanodet_options){.input_width = (int32_t)w,
                                           .input_height = (int32_t)h,
                                           .num_classes = (int32_t)nc,
                                           .reg_max = (int32_t)reg_max,
                                           .num_levels = (int32_t)num_strides,
                                           .center_offset = (float)offset,
                                           .apply_sigmoid = sig != 0,
                                           .multi_label = multi != 0,
                                           .min_score_thresh = (float)score};
        for (uint32_t i = 0; i < num_strides; i++)
            s->nanodet.strides[i] = (int32_t)strides[i];
        s->cap = 0;
        int32_t levels = num_strides ? (int32_t)num_strides : 3;
        st = KS_STATUS_OK;
        for (int32_t l = 0; l < levels && !st; l++) {
            size_t n = 0;
            st = ks__nanodet_level_cells(&s->nanodet, l, &n, err, err_cap);
            s->cap += n;
        }
    }
    /* multi_label may yield one candidate per class per cell; bound the buffer anyway. */
    if (!st && multi != 0) s->cap *= 4;
done:
    cJSON_Delete(cfg);
    return st;
}

static ks_status dd_create(const ks_node_init *init, void **state_out) {
    dd_state *s = ks__alloc(init->allocator, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    memset(s, 0, sizeof(*s));
    double min_score = 0;
    int64_t max_results = 0;
    int track = 0;
    ks_status st = dd_read_config(init, s, init->error, init->error_cap);
    if (!st) st = ks_node_options_float(init->options, "min_score", 0, &min_score);
    if (!st) st = ks_node_options_int(init->options, "max_results", 0, &max_results);
    if (!st) st = ks_node_options_bool(init->options, "track", 0, &track);
    if (st) goto error;
    if (min_score > 0 && min_score <= 1) {
        s->nms.min_score_threshold = (float)min_score;
        s->yolox.min_score_thresh = s->nanodet.min_score_thresh = (float)min_score;
    }
    if (max_results > 0 && max_results <= DD_MAX_RESULTS) {
        s->max_results = (int32_t)max_results;
        s->nms.max_num_detections = (int32_t)max_results;
    }
    s->track = track != 0;
    s->tracker_opt = (ks__tracker_options){.per_class = true, .min_hits = 1};
    if (s->track) ks__tracker_init(&s->tracker, &s->tracker_opt);
    s->cand = ks__alloc(init->allocator, s->cap * sizeof(ks__detection));
    s->kept = ks__alloc(init->allocator, (size_t)s->max_results * sizeof(ks__detection));
    s->scratch = ks__alloc(init->allocator, ks__nms_scratch_size(s->cap));
    if (!s->cand || !s->kept || !s->scratch) {
        st = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    *state_out = s;
    return KS_STATUS_OK;
error:
    dd_destroy(s, init->allocator);
    return st;
}

static void dd_reset(void *state) {
    dd_state *s = state;
    if (s->track) ks__tracker_init(&s->tracker, &s->tracker_opt);
}

static ks_status dd_process(void *state, ks_node_ctx *ctx) {
    dd_state *s = state;
    const float *m = ks_packet_matrix(ks_node_input(ctx, 0));
    uint32_t num_t = ks_node_num_inputs(ctx) - 1;
    char err[256] = "";
    size_t num_cand = 0, num_kept = 0;
    ks_status st;
    for (uint32_t i = 0; i < num_t; i++) {
        const ks_tensor *t = ks_packet_tensor(ks_node_input(ctx, 1 + i));
        if (!t || t->info.dtype != KS_DTYPE_F32)
            return ks_node_fail(ctx, KS_STATUS_INVALID_SHAPE, "head tensor %u must be f32",
                                (unsigned)i);
    }
    if (s->kind == DEC_YOLOX) {
        if (num_t != 1)
            return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT,
                                "the yolox decoder takes 1 head tensor, got %u", (unsigned)num_t);
        const ks_tensor *t = ks_packet_tensor(ks_node_input(ctx, 1));
        st = ks__yolox_decode(&s->yolox, t->data, t->size_bytes / sizeof(float), s->cand, s->cap,
                              &num_cand, err, sizeof(err));
    } else {
        uint32_t levels = s->nanodet.num_levels ? (uint32_t)s->nanodet.num_levels : 3;
        if (num_t != 2 * levels)
            return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT,
                                "the nanodet decoder takes %u tensors (cls per level, then reg per "
                                "level), got %u",
                                (unsigned)(2 * levels), (unsigned)num_t);
        const float *cls[KS__GRID_MAX_LEVELS], *reg[KS__GRID_MAX_LEVELS];
        size_t cls_n[KS__GRID_MAX_LEVELS], reg_n[KS__GRID_MAX_LEVELS];
        for (uint32_t l = 0; l < levels; l++) {
            const ks_tensor *c = ks_packet_tensor(ks_node_input(ctx, 1 + l));
            const ks_tensor *r = ks_packet_tensor(ks_node_input(ctx, 1 + levels + l));
            cls[l] = c->data;
            cls_n[l] = c->size_bytes / sizeof(float);
            reg[l] = r->data;
            reg_n[l] = r->size_bytes / sizeof(float);
        }
        st = ks__nanodet_decode(&s->nanodet, cls, cls_n, reg, reg_n, s->cand, s->cap, &num_cand,
                                err, sizeof(err));
    }
    if (st) return ks_node_fail(ctx, st, "%s", err);
    ks__nms(&s->nms, s->cand, num_cand, s->scratch, s->kept, (size_t)s->max_results, &num_kept);
    /* Model-input normalized -> image normalized, clipped to the image. */
    for (size_t i = 0; i < num_kept; i++) {
        ks__detection *d = &s->kept[i];
        float x0 = m[0] * d->xmin + m[1] * d->ymin + m[3];
        float y0 = m[4] * d->xmin + m[5] * d->ymin + m[7];
        float x1 = m[0] * d->xmax + m[1] * d->ymax + m[3];
        float y1 = m[4] * d->xmax + m[5] * d->ymax + m[7];
        d->xmin = fminf(fmaxf(fminf(x0, x1), 0.0f), 1.0f);
        d->xmax = fminf(fmaxf(fmaxf(x0, x1), 0.0f), 1.0f);
        d->ymin = fminf(fmaxf(fminf(y0, y1), 0.0f), 1.0f);
        d->ymax = fminf(fmaxf(fmaxf(y0, y1), 0.0f), 1.0f);
    }
    /* Boxes that lie wholly in the letterbox padding collapse to nothing: drop them. */
    size_t n = 0;
    for (size_t i = 0; i < num_kept; i++)
        if (s->kept[i].xmax > s->kept[i].xmin && s->kept[i].ymax > s->kept[i].ymin)
            s->kept[n++] = s->kept[i];
    num_kept = n;
    if (s->track) ks__tracker_update(&s->tracker, s->kept, num_kept);
    const ks_allocator *a = ks_node_allocator(ctx);
    ks_packet *out = NULL;
    float *buf = ks__alloc(a, num_kept * (4 + 1 + 1) * sizeof(float) + 16);
    if (!buf) return ks_node_fail(ctx, KS_STATUS_OUT_OF_MEMORY, "detections");
    float *boxes = buf, *scores = buf + 4 * num_kept;
    int32_t *ids = (int32_t *)(scores + num_kept);
    for (size_t i = 0; i < num_kept; i++) {
        boxes[4 * i + 0] = s->kept[i].xmin;
        boxes[4 * i + 1] = s->kept[i].ymin;
        boxes[4 * i + 2] = s->kept[i].xmax;
        boxes[4 * i + 3] = s->kept[i].ymax;
        scores[i] = s->kept[i].score;
        ids[i] = s->kept[i].class_id;
    }
    st = ks_packet_create_detections(a,
                                     &(ks_packet_detections){.num_detections = (uint32_t)num_kept,
                                                             .boxes = boxes,
                                                             .scores = scores,
                                                             .class_ids = ids},
                                     &out);
    ks__free(a, buf);
    if (st) return ks_node_fail(ctx, st, "detections");
    st = ks_node_output(ctx, 0, out);
    if (st || ks_node_num_outputs(ctx) < 2) return st;
    ks_tensor_info info = {.dtype = KS_DTYPE_I32};
    info.shape.rank = 1;
    info.shape.dims[0] = (int64_t)num_kept;
    ks_packet *tp = NULL;
    st = ks_packet_create_tensor(a, &info, NULL, &tp);
    if (st) return ks_node_fail(ctx, st, "track ids");
    size_t bytes = 0;
    int32_t *tid = ks_packet_mutable_data(tp, &bytes);
    for (size_t i = 0; i < num_kept; i++)
        tid[i] = s->kept[i].track_id;
    return ks_node_output(ctx, 1, tp);
}

static const ks_port dd_in[] = {{"matrix", KS_PACKET_MATRIX, KS_PACKET_ANY, 0, -1},
                                {"tensor", KS_PACKET_TENSOR, KS_PACKET_ANY, KS_PORT_REPEATED, -1}};
static const ks_port dd_out[] = {
    {"detections", KS_PACKET_DETECTIONS, KS_PACKET_ANY, 0, -1},
    {"track_ids", KS_PACKET_TENSOR, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1}};
const ks_node_type ks__node_det_decode = {"det_decode", 2,          2,    dd_in,    dd_out,
                                          dd_create,    dd_process, NULL, dd_reset, dd_destroy};
