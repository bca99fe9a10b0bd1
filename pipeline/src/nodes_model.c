/* Model nodes: image_to_tensor (the pipeline's front end of image_tensor.h: crop a rotated ROI,
 * resize, normalize into a model input through the engine's one-pass ks_image_to_tensor) and
 * infer (one ks_session per node). */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "format/ksm_crypt.h"
#include "image_tensor.h"
#include "kestrel/imgproc.h"
#include "pipeline_internal.h"
#include "src/precision.h"

/* ---------------------------------------------------------------------------------------------
 * image -> tensor (image_tensor.h)
 * ------------------------------------------------------------------------------------------- */

typedef struct infer_state infer_state;

typedef struct image_tensor_state {
    ks__image_tensor_desc desc;
    /* The infer node this node's tensor feeds (its only reader), found on the first frame: the
     * tensor is written straight into that session's input (see session_input_for). */
    bool consumer_checked;
    infer_state *consumer;
    uint32_t consumer_input;
} image_tensor_state;

static bool session_input_for(infer_state *s, uint32_t index, const ks_tensor_info *info,
                              ks_tensor *dst);

ks_status ks__image_tensor_create(const ks_allocator *allocator, const ks__image_tensor_desc *desc,
                                  void **state_out) {
    /* The front ends check what they parse; these are their contract. */
    assert(desc->width_px >= 1 && desc->width_px <= KS__IMAGE_TENSOR_MAX_SIDE_PX);
    assert(desc->height_px >= 1 && desc->height_px <= KS__IMAGE_TENSOR_MAX_SIDE_PX);
    assert(desc->dtype == KS_DTYPE_F32 || desc->dtype == KS_DTYPE_U8);
    assert((unsigned)desc->fit < KS__FIT_COUNT);
    assert(desc->fit != KS__FIT_CENTER_CROP ||
           (desc->crop_fraction > 0.0f && desc->crop_fraction <= 1.0f));
    image_tensor_state *s = ks__calloc(allocator, 1, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    s->desc = *desc;
    *state_out = s;
    return KS_STATUS_OK;
}

void ks__image_tensor_destroy(void *state, const ks_allocator *allocator) {
    ks__free(allocator, state);
}

/* The frame's geometry: m (tensor pixel -> image pixel, ks_image_to_tensor's desc.m) and a
 * (tensor-normalized 0..1 -> image pixel), for an iw x ih image and the ROI `r` (normalized).
 * The ROI fits are defined by their source rectangle, so `a` comes first and m is its linear part
 * over the tensor size; the whole-image fits by their scale, so m comes first and `a` is m times
 * the tensor size. Either way the float operations are those each fit was validated with.
 * false when the ROI is empty or not finite. */
static bool fit_affine(const ks__image_tensor_desc *s, float iw, float ih, const ks_rect *r,
                       float m[6], float a[6]) {
    float tw = (float)s->width_px, th = (float)s->height_px;
    switch (s->fit) {
    case KS__FIT_STRETCH:
    case KS__FIT_KEEP_ASPECT: {
        float cx = r->x_center * iw, cy = r->y_center * ih;
        float rw = r->width * iw, rh = r->height * ih;
        if (!(rw > 0.0f) || !(rh > 0.0f) || !isfinite(cx) || !isfinite(cy) ||
            !isfinite(r->rotation_rad))
            return false;
        if (s->fit == KS__FIT_KEEP_ASPECT) {
            /* Grow the short side so the crop has the tensor's aspect (no distortion). */
            float target = th / tw;
            if (rh / rw > target)
                rw = rh / target;
            else
                rh = rw * target;
        }
        /* The tensor's unit square onto the rotated ROI. */
        float c = cosf(r->rotation_rad), sn = sinf(r->rotation_rad);
        a[0] = c * rw;
        a[1] = -sn * rh;
        a[2] = cx - 0.5f * c * rw + 0.5f * sn * rh;
        a[3] = sn * rw;
        a[4] = c * rh;
        a[5] = cy - 0.5f * sn * rw - 0.5f * c * rh;
        m[0] = a[0] / tw;
        m[1] = a[1] / th;
        m[2] = a[2];
        m[3] = a[3] / tw;
        m[4] = a[4] / th;
        m[5] = a[5];
        return true;
    }
    case KS__FIT_CENTER_CROP: {
        float cw = iw * s->crop_fraction, ch = ih * s->crop_fraction;
        m[0] = cw / tw;
        m[1] = m[3] = 0.0f;
        m[4] = ch / th;
        m[2] = 0.5f * (iw - cw);
        m[5] = 0.5f * (ih - ch);
        break;
    }
    case KS__FIT_LETTERBOX:
    case KS__FIT_LETTERBOX_TOP_LEFT:
    default: {
        float scale = fminf(tw / iw, th / ih);
        m[0] = m[4] = 1.0f / scale;
        m[1] = m[3] = 0.0f;
        m[2] = m[5] = 0.0f;
        if (s->fit == KS__FIT_LETTERBOX) {
            m[2] = -0.5f * (tw - iw * scale) / scale;
            m[5] = -0.5f * (th - ih * scale) / scale;
        }
        break;
    }
    }
    a[0] = m[0] * tw;
    a[1] = m[1] * th;
    a[2] = m[2];
    a[3] = m[3] * tw;
    a[4] = m[4] * th;
    a[5] = m[5];
    return true;
}

ks_status ks__image_tensor_process(void *state, ks_node_ctx *ctx) {
    image_tensor_state *s = state;
    const ks__image_tensor_desc *desc = &s->desc;
    const ks_packet_image *img = ks_packet_image_view(ks_node_input(ctx, 0));
    ks_rect r = {0.5f, 0.5f, 1.0f, 1.0f, 0.0f};
    if (desc->fit == KS__FIT_STRETCH || desc->fit == KS__FIT_KEEP_ASPECT) {
        /* NULL for a node type without the input (model_input) or an unconnected one */
        const ks_packet_rects *roi = ks_packet_rects_view(ks_node_input(ctx, 1));
        if (roi) {
            if (roi->num_rects == 0) return KS_STATUS_OK; /* nothing to crop: no tensor */
            r = roi->rects[0];
        }
    }
    float iw = (float)img->width_px, ih = (float)img->height_px;
    float a[6];
    ks_image_to_tensor_desc d = {
        .border = desc->border,
        .border_value = {desc->border_value, desc->border_value, desc->border_value},
        .mean = {desc->mean[0], desc->mean[1], desc->mean[2]},
        .scale = {desc->scale[0], desc->scale[1], desc->scale[2]},
        .channel_order = desc->channel_order,
        .layout = desc->layout,
    };
    if (!fit_affine(desc, iw, ih, &r, d.m, a))
        return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT,
                            "ROI (%g, %g, %g x %g, %g rad) is empty or not finite",
                            (double)r.x_center, (double)r.y_center, (double)r.width,
                            (double)r.height, (double)r.rotation_rad);
    if (desc->mediapipe_grid) {
        /* MediaPipe's ImageToTensor warps in pixel-index space (OpenCV warpAffine: the ROI
         * corner lands on tensor index 0), while ks_image_to_tensor maps pixel centres. Shifting
         * by half a destination pixel in source units reproduces MediaPipe's sampling grid, which
         * its models were tuned with (BlazeFace boxes move by several pixels otherwise). The
         * output matrix below stays the pixel-centre one. */
        d.m[2] += 0.5f - 0.5f * (d.m[0] + d.m[1]);
        d.m[5] += 0.5f - 0.5f * (d.m[3] + d.m[4]);
    }
    ks_tensor_info info = {.name = NULL, .dtype = desc->dtype};
    info.shape.rank = 4;
    info.shape.dims[0] = 1;
    if (desc->layout == KS_TENSOR_LAYOUT_NCHW) {
        info.shape.dims[1] = 3;
        info.shape.dims[2] = desc->height_px;
        info.shape.dims[3] = desc->width_px;
    } else {
        info.shape.dims[1] = desc->height_px;
        info.shape.dims[2] = desc->width_px;
        info.shape.dims[3] = 3;
    }
    /* The destination: the consuming infer node's session input when this tensor has no other
     * reader (no copy, and the model reads it where it was written), else a new packet. */
    if (!s->consumer_checked) {
        const ks_node_type *type = NULL;
        void *cs = NULL;
        uint32_t port = 0;
        if (ks__node_sole_consumer(ctx, 0, &type, &cs, &port) && type == &ks__infer_type) {
            s->consumer = cs;
            s->consumer_input = port;
        }
        s->consumer_checked = true;
    }
    ks_packet *t = NULL;
    ks_tensor dst = {.info = info};
    ks_status st;
    if (s->consumer && session_input_for(s->consumer, s->consumer_input, &info, &dst)) {
        st = ks__packet_create_tensor_view(ks_node_allocator(ctx), &info, dst.data, dst.size_bytes,
                                           &t);
    } else {
        st = ks__packet_create_tensor_uninit(ks_node_allocator(ctx), &info, &t);
        if (!st) dst.data = ks_packet_mutable_data(t, &dst.size_bytes);
    }
    if (st)
        return ks_node_fail(ctx, st, "cannot allocate the %dx%d tensor", (int)desc->width_px,
                            (int)desc->height_px);
    ks_image src;
    st = ks_packet_image_source(ks_node_input(ctx, 0), &src, &d.rotation, &d.mirror);
    if (!st) st = ks_image_to_tensor(&src, &d, &dst);
    if (st) {
        ks_packet_release(t);
        return ks_node_fail(ctx, st, "%s", ks_last_error(NULL));
    }
    st = ks_node_output(ctx, 0, t);
    if (st || ks_node_num_outputs(ctx) < 2) return st;
    /* Tensor-normalized (0..1) -> image-normalized coordinates, for projecting results back. */
    float matrix[16] = {0};
    matrix[0] = a[0] / iw;
    matrix[1] = a[1] / iw;
    matrix[3] = a[2] / iw;
    matrix[4] = a[3] / ih;
    matrix[5] = a[4] / ih;
    matrix[7] = a[5] / ih;
    matrix[10] = 1.0f;
    matrix[15] = 1.0f;
    ks_packet *mp = NULL;
    st = ks_packet_create_matrix(ks_node_allocator(ctx), matrix, &mp);
    if (st) return ks_node_fail(ctx, st, "out of memory");
    return ks_node_output(ctx, 1, mp);
}

/* ---------------------------------------------------------------------------------------------
 * image_to_tensor: the node options as an image_tensor.h desc
 * ------------------------------------------------------------------------------------------- */

static ks_status itt_create(const ks_node_init *init, void **state_out) {
    int64_t w = 0, h = 0;
    float range[2] = {0.0f, 1.0f};
    uint32_t nr = 0;
    int keep_aspect = 0, border_zero = 0, mediapipe_grid = 0;
    ks_status st = ks_node_options_int(init->options, "width", 0, &w);
    if (!st) st = ks_node_options_int(init->options, "height", 0, &h);
    if (!st) st = ks_node_options_floats(init->options, "range", range, 2, &nr);
    if (!st) st = ks_node_options_bool(init->options, "keep_aspect", 0, &keep_aspect);
    if (!st) st = ks_node_options_bool(init->options, "border_zero", 0, &border_zero);
    if (!st) st = ks_node_options_bool(init->options, "mediapipe_grid", 0, &mediapipe_grid);
    if (st) return st;
    if (w < 1 || h < 1 || w > KS__IMAGE_TENSOR_MAX_SIDE_PX || h > KS__IMAGE_TENSOR_MAX_SIDE_PX) {
        snprintf(init->error, init->error_cap,
                 "options 'width' and 'height' are %lld x %lld; each must be in 1..%d",
                 (long long)w, (long long)h, KS__IMAGE_TENSOR_MAX_SIDE_PX);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (nr != 0 && nr != 2) {
        snprintf(init->error, init->error_cap, "option 'range' has %u numbers; it takes [lo, hi]",
                 (unsigned)nr);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (!(range[1] != range[0]) || !isfinite(range[0]) || !isfinite(range[1])) {
        snprintf(init->error, init->error_cap,
                 "option 'range' [%g, %g] must be two different "
                 "finite numbers",
                 (double)range[0], (double)range[1]);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    /* imgproc's normalization: (pixel - mean) * scale maps 0..255 to range */
    float scale = (range[1] - range[0]) / 255.0f;
    float mean = -range[0] / scale;
    ks__image_tensor_desc d = {
        .width_px = (int32_t)w,
        .height_px = (int32_t)h,
        .dtype = KS_DTYPE_F32,
        .layout = KS_TENSOR_LAYOUT_NHWC,
        .channel_order = KS_CHANNEL_ORDER_RGB,
        .mean = {mean, mean, mean},
        .scale = {scale, scale, scale},
        .fit = keep_aspect ? KS__FIT_KEEP_ASPECT : KS__FIT_STRETCH,
        .border = border_zero ? KS_BORDER_CONSTANT : KS_BORDER_REPLICATE,
        .mediapipe_grid = mediapipe_grid != 0,
    };
    return ks__image_tensor_create(init->allocator, &d, state_out);
}

static const ks_port itt_in[] = {{"image", KS_PACKET_IMAGE, KS_PACKET_ANY, 0, -1},
                                 {"roi", KS_PACKET_RECTS, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1}};
static const ks_port itt_out[] = {
    {"tensor", KS_PACKET_TENSOR, KS_PACKET_ANY, 0, -1},
    {"matrix", KS_PACKET_MATRIX, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1}};

const ks_node_type ks__image_to_tensor_type = {.name = "image_to_tensor",
                                               .num_inputs = 2,
                                               .num_outputs = 2,
                                               .inputs = itt_in,
                                               .outputs = itt_out,
                                               .create = itt_create,
                                               .process = ks__image_tensor_process,
                                               .destroy = ks__image_tensor_destroy};

/* ---------------------------------------------------------------------------------------------
 * infer
 * ------------------------------------------------------------------------------------------- */

struct infer_state {
    ks_model *model;
    ks_session *session;
    uint32_t num_inputs, num_outputs;
    bool dynamic;            /* some input dim is -1: reshape when the input shapes change */
    bool planned;            /* a reshape succeeded */
    ks_tensor_shape *shapes; /* num_inputs: the shapes of the current plan */
    char model_name[KS_PIPELINE_MAX_NAME_BYTES];
};

static bool same_shape(const ks_tensor_shape *a, const ks_tensor_shape *b) {
    if (a->rank != b->rank) return false;
    for (int32_t d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return true;
}

/* The session input `index` of an infer node as the destination of an image_to_tensor node
 * whose tensor only that input reads: a planned static session whose input has exactly `info`'s
 * dtype and shape. Its memory stays put until the session is reshaped, which static sessions never
 * are after create. */
static bool session_input_for(infer_state *s, uint32_t index, const ks_tensor_info *info,
                              ks_tensor *dst) {
    if (s->dynamic || !s->planned || index >= s->num_inputs) return false;
    ks_tensor in;
    if (ks_session_input(s->session, index, &in) != KS_STATUS_OK || !in.data ||
        in.info.dtype != info->dtype || !same_shape(&in.info.shape, &info->shape))
        return false;
    dst->data = in.data;
    dst->size_bytes = in.size_bytes;
    return true;
}

static void infer_destroy(void *state, const ks_allocator *a) {
    infer_state *s = state;
    if (!s) return;
    ks_session_destroy(s->session);
    ks_model_destroy(s->model);
    ks__free(a, s->shapes);
    ks__free(a, s);
}

/* ---- Encrypted models (ks_pipeline_desc.key / key_provider) ----
 * An encrypted (ks-protect, "KSME") bundle entry or file is decrypted by the engine at load into
 * model-owned memory, which the engine wipes on ks_model_destroy; the bundle keeps the encrypted
 * bytes, so nothing plain is written anywhere. The key is copied onto this stack frame for the one
 * load call and wiped right after it: the pipeline keeps neither the key nor the provider. */

/* The key of encrypted model `name` (as the graph names it) into key[KS_PIPELINE_KEY_BYTES]. */
static ks_status key_get(const ks_node_init *init, const ks_pipeline_desc *desc, const char *name,
                         uint8_t *key) {
    if (!desc || (!desc->key && !desc->key_provider)) {
        snprintf(init->error, init->error_cap,
                 "model '%s' is encrypted (ks-protect) and needs its key: set key/key_provider in "
                 "ks_pipeline_desc",
                 name);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (desc->key) {
        if (desc->key_bytes != KS_PIPELINE_KEY_BYTES) {
            snprintf(init->error, init->error_cap,
                     "model '%s' is encrypted and ks_pipeline_desc.key_bytes is %zu; a ks-protect "
                     "key is %d bytes",
                     name, desc->key_bytes, KS_PIPELINE_KEY_BYTES);
            return KS_STATUS_INVALID_ARGUMENT;
        }
        memcpy(key, desc->key, KS_PIPELINE_KEY_BYTES);
        return KS_STATUS_OK;
    }
    size_t n = 0;
    ks_status st = desc->key_provider(desc->key_user, name, key, KS_PIPELINE_KEY_BYTES, &n);
    if (st == KS_STATUS_OK && n != KS_PIPELINE_KEY_BYTES) {
        snprintf(init->error, init->error_cap,
                 "the key provider gave %zu bytes for encrypted model '%s'; a ks-protect key is %d "
                 "bytes",
                 n, name, KS_PIPELINE_KEY_BYTES);
        st = KS_STATUS_INVALID_ARGUMENT;
    } else if (st) {
        snprintf(init->error, init->error_cap,
                 "the key provider refused encrypted model '%s': %s (status %d)", name,
                 ks_status_string(st), (int)st);
    }
    if (st) ks__secure_zero(key, KS_PIPELINE_KEY_BYTES);
    return st;
}

/* The message of a failed load; `what` names the model ("model 'x' from the bundle"). */
static void load_error(const ks_node_init *init, const char *what, bool encrypted, ks_status st) {
    if (encrypted && st == KS_STATUS_TAMPERED)
        snprintf(init->error, init->error_cap,
                 "%s is encrypted and the key does not open it (wrong key, or the model was "
                 "altered): %s",
                 what, ks_last_error(NULL));
    else
        snprintf(init->error, init->error_cap, "%s: %s", what, ks_last_error(NULL));
}

static ks_status load_model(const ks_node_init *init, const char *name, ks_model **out) {
    const ks__subgraph_env *env = ks__options_env(init->options);
    const ks_pipeline_desc *desc = env ? env->desc : NULL;
    ks_model_desc md = {.allocator = init->allocator};
    uint8_t key[KS_PIPELINE_KEY_BYTES];
    ks_bundle_entry e;
    ks_status st;
    if (init->bundle && ks_bundle_find(init->bundle, name, &e) == KS_STATUS_OK) {
        if (e.kind != KS_BUNDLE_MODEL) {
            snprintf(init->error, init->error_cap, "bundle entry '%s' is a %s, not a model", name,
                     ks_bundle_kind_string(e.kind));
            return KS_STATUS_INVALID_MODEL;
        }
        /* The bundle's CRC already covered these bytes. */
        md.flags = KS_MODEL_SKIP_CHECKSUM;
        bool encrypted = ks__ksme_is_encrypted(e.data, e.size_bytes);
        if (encrypted) {
            st = key_get(init, desc, name, key);
            if (st) return st;
            md.key = key;
            md.key_bytes = sizeof(key);
        }
        /* Plain entries are used in place (zero-copy); encrypted ones are decrypted into memory
         * the model owns. */
        st = ks_model_load_buffer(e.data, e.size_bytes, &md, out);
        if (encrypted) ks__secure_zero(key, sizeof(key));
        if (st) {
            char what[KS_PIPELINE_MAX_NAME_BYTES + 32];
            snprintf(what, sizeof(what), "model '%s' from the bundle", name);
            load_error(init, what, encrypted, st);
        }
        return st;
    }
    char path[1024];
    if (init->model_dir && init->model_dir[0] && name[0] != '/')
        snprintf(path, sizeof(path), "%s/%s", init->model_dir, name);
    else
        snprintf(path, sizeof(path), "%s", name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(init->error, init->error_cap,
                 "missing model '%s': no bundle entry of that name and no file '%s'", name, path);
        return KS_STATUS_IO_ERROR;
    }
    char magic[4];
    bool encrypted =
        fread(magic, 1, sizeof(magic), f) == sizeof(magic) && ks__ksme_is_encrypted(magic, 4);
    fclose(f);
    if (encrypted) {
        st = key_get(init, desc, name, key);
        if (st) return st;
        md.key = key;
        md.key_bytes = sizeof(key);
    }
    st = ks_model_load_file(path, &md, out);
    if (encrypted) ks__secure_zero(key, sizeof(key));
    if (st) {
        char what[sizeof(path) + 16];
        snprintf(what, sizeof(what), "model '%s'", path);
        load_error(init, what, encrypted, st);
    }
    return st;
}

static ks_status infer_create(const ks_node_init *init, void **state_out) {
    const char *model = NULL, *precision = NULL, *backend = NULL;
    int64_t threads = 0;
    ks_status st = ks_node_options_string(init->options, "model", NULL, &model);
    if (!st) st = ks_node_options_int(init->options, "num_threads", 0, &threads);
    if (!st) st = ks_node_options_string(init->options, "precision", NULL, &precision);
    if (!st) st = ks_node_options_string(init->options, "backend", NULL, &backend);
    if (st) return st;
    const ks__subgraph_env *env = ks__options_env(init->options);
    ks_precision prec = env && env->desc ? env->desc->precision : KS_PRECISION_DEFAULT;
    if (precision && !ks__precision_parse(precision, &prec)) {
        snprintf(init->error, init->error_cap,
                 "option 'precision' is '%s'; use stored, f32 or fastest", precision);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks_backend be = env && env->desc ? env->desc->backend : KS_BACKEND_CPU;
    if (backend && ks_backend_parse(backend, &be)) {
        snprintf(init->error, init->error_cap,
                 "option 'backend' is '%s'; use cpu, vulkan, opencl or auto", backend);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (!model || !model[0]) {
        snprintf(init->error, init->error_cap,
                 "option 'model' (bundle entry or .ksm path) is "
                 "required");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (threads == 0 && env && env->desc) threads = env->desc->num_threads;
    if (threads < 0 || threads > 256) threads = 1;
    infer_state *s = ks__calloc(init->allocator, 1, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    snprintf(s->model_name, sizeof(s->model_name), "%s", model);
    st = load_model(init, model, &s->model);
    if (st) goto error;
    s->num_inputs = ks_model_num_inputs(s->model);
    s->num_outputs = ks_model_num_outputs(s->model);
    if (init->num_inputs != s->num_inputs || init->num_outputs > s->num_outputs ||
        init->num_outputs == 0) {
        snprintf(init->error, init->error_cap,
                 "model '%s' has %u inputs and %u outputs; the node connects %u inputs and %u "
                 "outputs (inputs must match, outputs 1..%u)",
                 model, (unsigned)s->num_inputs, (unsigned)s->num_outputs,
                 (unsigned)init->num_inputs, (unsigned)init->num_outputs, (unsigned)s->num_outputs);
        st = KS_STATUS_INVALID_ARGUMENT;
        goto error;
    }
    s->shapes = ks__calloc(init->allocator, s->num_inputs + 1, sizeof(*s->shapes));
    if (!s->shapes) {
        st = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    for (uint32_t i = 0; i < s->num_inputs; i++) {
        ks_tensor_info info;
        st = ks_model_input_info(s->model, i, &info);
        if (st) goto error;
        s->shapes[i] = info.shape;
        for (int32_t d = 0; d < info.shape.rank; d++)
            if (info.shape.dims[d] < 0) s->dynamic = true;
    }
    st = ks_session_create(s->model,
                           &(ks_session_desc){.num_threads = (int32_t)threads,
                                              .precision = prec,
                                              .backend = be,
                                              .allocator = init->allocator},
                           &s->session);
    if (st) {
        snprintf(init->error, init->error_cap, "session for model '%s': %s", model,
                 ks_last_error(NULL));
        goto error;
    }
    /* Model outputs the node does not connect are never read. */
    for (uint32_t o = init->num_outputs; o < s->num_outputs; o++)
        ks_session_set_output_needed(s->session, o, 0);
    /* Static models are planned once here so process never allocates inside the engine. */
    if (!s->dynamic) {
        st = ks_session_reshape(s->session, NULL);
        if (st) {
            snprintf(init->error, init->error_cap, "reshape of model '%s': %s", model,
                     ks_last_error(s->session));
            goto error;
        }
        s->planned = true;
    }
    *state_out = s;
    return KS_STATUS_OK;
error:
    infer_destroy(s, init->allocator);
    return st;
}

static void shape_str(const ks_tensor_shape *sh, char *buf, size_t cap) {
    size_t used = 0;
    int w = snprintf(buf, cap, "[");
    used = w > 0 ? (size_t)w : 0;
    for (int32_t d = 0; d < sh->rank && d < KS_MAX_RANK && used < cap; d++) {
        w = snprintf(buf + used, cap - used, "%s%lld", d ? "," : "", (long long)sh->dims[d]);
        used += w > 0 ? (size_t)w : 0;
    }
    if (used < cap) snprintf(buf + used, cap - used, "]");
}

static ks_status infer_process(void *state, ks_node_ctx *ctx) {
    infer_state *s = state;
    ks_status st = KS_STATUS_OK;
    if (s->dynamic) {
        bool changed = !s->planned;
        for (uint32_t i = 0; i < s->num_inputs; i++) {
            const ks_tensor *t = ks_packet_tensor(ks_node_input(ctx, i));
            if (!same_shape(&t->info.shape, &s->shapes[i])) changed = true;
            s->shapes[i] = t->info.shape;
        }
        if (changed) {
            s->planned = false;
            st = ks_session_reshape(s->session, s->shapes);
            if (st)
                return ks_node_fail(ctx, st, "reshape of model '%s': %s", s->model_name,
                                    ks_last_error(s->session));
            s->planned = true;
        }
    }
    for (uint32_t i = 0; i < s->num_inputs; i++) {
        const ks_tensor *t = ks_packet_tensor(ks_node_input(ctx, i));
        ks_tensor dst;
        st = ks_session_input(s->session, i, &dst);
        if (st) return ks_node_fail(ctx, st, "%s", ks_last_error(s->session));
        if (t->info.dtype != dst.info.dtype || t->size_bytes != dst.size_bytes) {
            char a[128], b[128];
            shape_str(&t->info.shape, a, sizeof(a));
            shape_str(&dst.info.shape, b, sizeof(b));
            return ks_node_fail(ctx, KS_STATUS_INVALID_SHAPE,
                                "input %u is %s %s (%zu bytes) but model '%s' input '%s' expects "
                                "%s %s (%zu bytes)",
                                (unsigned)i, ks_dtype_string(t->info.dtype), a, t->size_bytes,
                                s->model_name, dst.info.name ? dst.info.name : "?",
                                ks_dtype_string(dst.info.dtype), b, dst.size_bytes);
        }
        /* An image_to_tensor node may have written the input in place already. */
        if (dst.size_bytes && dst.data != t->data) memcpy(dst.data, t->data, dst.size_bytes);
    }
    st = ks_session_run(s->session);
    if (st)
        return ks_node_fail(ctx, st, "model '%s': %s", s->model_name, ks_last_error(s->session));
    for (uint32_t o = 0; o < ks_node_num_outputs(ctx); o++) {
        if (!ks_session_output_needed(s->session, o)) continue; /* not computed */
        ks_tensor src;
        ks_packet *p = NULL;
        st = ks_session_output(s->session, o, &src);
        if (!st) st = ks_packet_create_tensor(ks_node_allocator(ctx), &src.info, src.data, &p);
        if (st) return ks_node_fail(ctx, st, "output %u of model '%s'", (unsigned)o, s->model_name);
        st = ks_node_output(ctx, o, p);
        if (st) return st;
    }
    return KS_STATUS_OK;
}

ks_status ks__infer_set_needed(void *state, const uint8_t *needed, uint32_t num, char *err,
                               size_t err_cap) {
    infer_state *s = state;
    bool changed = false;
    for (uint32_t o = 0; o < num && o < s->num_outputs; o++) {
        if (ks_session_output_needed(s->session, o) == (needed[o] ? 1 : 0)) continue;
        ks_session_set_output_needed(s->session, o, needed[o]);
        changed = true;
    }
    if (!changed || !s->planned) return KS_STATUS_OK;
    /* Dynamic sessions re-plan at their next frame; static ones now, so that the input memory
     * an image_to_tensor node writes into stays put while frames run. */
    if (s->dynamic) {
        s->planned = false;
        return KS_STATUS_OK;
    }
    s->planned = false;
    ks_status st = ks_session_reshape(s->session, NULL);
    if (st) {
        snprintf(err, err_cap, "reshape of model '%s': %s", s->model_name,
                 ks_last_error(s->session));
        return st;
    }
    s->planned = true;
    return KS_STATUS_OK;
}

static const ks_port infer_in[] = {
    {"tensor", KS_PACKET_TENSOR, KS_PACKET_ANY, KS_PORT_REPEATED, -1}};
static const ks_port infer_out[] = {
    {"tensor", KS_PACKET_TENSOR, KS_PACKET_ANY, KS_PORT_REPEATED, -1}};

const ks_node_type ks__infer_type = {
    "infer", 1, 1, infer_in, infer_out, infer_create, infer_process, NULL, NULL, infer_destroy};
