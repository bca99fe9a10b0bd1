/* Vision pipeline nodes: thin adapters between packets and the algos/common building blocks.
 * Every option is read and checked in create, so process only converts, computes and emits.
 * Frames allocate their output packets (and small temporaries) like every pipeline node;
 * per-node buffers that depend only on options (anchors, NMS scratch) are made once at create. */
#include "node_types.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "src/common.h" /* engine: ks__calloc / ks__free */
#include "detection.h"
#include "face_geometry.h"
#include "kestrel/bundle.h"
#include "kestrel/pipeline.h"
#include "landmarks.h"
#include "tracking.h"
#include "vision_util.h"

#define VN_MAX_DETECTIONS 256    /* per packet, after NMS */
#define VN_MAX_LANDMARKS 4096    /* per landmarks packet */
#define VN_MAX_MASK_PX (1 << 26) /* mask_smoother: 64 Mpx */

/* ---------------------------------------------------------------------------------------------
 * Shared helpers
 * ------------------------------------------------------------------------------------------- */

static void plain_destroy(void *state, const ks_allocator *a) {
    ks__free(a, state);
}

static ks_status init_fail(const ks_node_init *init, ks_status st, const char *fmt, ...)
    KS__PRINTF(3, 4);
static ks_status init_fail(const ks_node_init *init, ks_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(init->error, init->error_cap, fmt, ap);
    va_end(ap);
    return st;
}

/* Reads a float option into a float, with range checking. */
static ks_status opt_float(const ks_node_init *init, const char *key, float def, float lo, float hi,
                           float *out) {
    double v = 0.0;
    ks_status st = ks_node_options_float(init->options, key, def, &v);
    if (st) return st;
    if (!(v >= lo && v <= hi))
        return init_fail(init, KS_STATUS_INVALID_ARGUMENT,
                         "option '%s' is %g; it must be in %g..%g", key, v, (double)lo, (double)hi);
    *out = (float)v;
    return KS_STATUS_OK;
}

static ks_status opt_int(const ks_node_init *init, const char *key, int64_t def, int64_t lo,
                         int64_t hi, int32_t *out) {
    int64_t v = 0;
    ks_status st = ks_node_options_int(init->options, key, def, &v);
    if (st) return st;
    if (v < lo || v > hi)
        return init_fail(init, KS_STATUS_INVALID_ARGUMENT,
                         "option '%s' is %lld; it must be in %lld..%lld", key, (long long)v,
                         (long long)lo, (long long)hi);
    *out = (int32_t)v;
    return KS_STATUS_OK;
}

static ks_status opt_bool(const ks_node_init *init, const char *key, int def, bool *out) {
    int v = 0;
    ks_status st = ks_node_options_bool(init->options, key, def, &v);
    if (!st) *out = v != 0;
    return st;
}

/* Row-major 4x4 (image_to_tensor's matrix): tensor-normalized -> image-normalized. */
static void mat_apply(const float *m, float x, float y, float *ox, float *oy) {
    *ox = m[0] * x + m[1] * y + m[3];
    *oy = m[4] * x + m[5] * y + m[7];
}

/* Copies detection i of a packet into a building-block detection. */
static void det_get(const ks_packet_detections *p, uint32_t i, ks__detection *d) {
    memset(d, 0, sizeof(*d));
    d->xmin = p->boxes[4 * i + 0];
    d->ymin = p->boxes[4 * i + 1];
    d->xmax = p->boxes[4 * i + 2];
    d->ymax = p->boxes[4 * i + 3];
    d->score = p->scores ? p->scores[i] : 0.0f;
    d->class_id = p->class_ids ? p->class_ids[i] : 0;
    d->track_id = -1;
    uint32_t nk = p->num_keypoints < KS__MAX_KEYPOINTS ? p->num_keypoints : KS__MAX_KEYPOINTS;
    d->num_keypoints = p->keypoints ? nk : 0;
    for (uint32_t k = 0; k < d->num_keypoints; k++) {
        d->keypoints[k].x = p->keypoints[2 * ((size_t)i * p->num_keypoints + k)];
        d->keypoints[k].y = p->keypoints[2 * ((size_t)i * p->num_keypoints + k) + 1];
    }
}

/* Packs detections into a new packet (the keypoint count is the largest among them). */
static ks_status det_packet(const ks_allocator *a, const ks__detection *d, size_t n,
                            ks_packet **out) {
    uint32_t nk = 0;
    for (size_t i = 0; i < n; i++)
        if (d[i].num_keypoints > nk) nk = d[i].num_keypoints;
    size_t nfloat = n * 4 + n + n * nk * 2 + 1;
    float *buf = ks__calloc(a, nfloat, sizeof(float));
    int32_t *ids = ks__calloc(a, n + 1, sizeof(int32_t));
    ks_status st = KS_STATUS_OUT_OF_MEMORY;
    if (!buf || !ids) goto done;
    float *boxes = buf, *scores = buf + 4 * n, *kp = buf + 5 * n;
    for (size_t i = 0; i < n; i++) {
        boxes[4 * i + 0] = d[i].xmin;
        boxes[4 * i + 1] = d[i].ymin;
        boxes[4 * i + 2] = d[i].xmax;
        boxes[4 * i + 3] = d[i].ymax;
        scores[i] = d[i].score;
        ids[i] = d[i].class_id;
        for (uint32_t k = 0; k < d[i].num_keypoints; k++) {
            kp[2 * (i * nk + k)] = d[i].keypoints[k].x;
            kp[2 * (i * nk + k) + 1] = d[i].keypoints[k].y;
        }
    }
    ks_packet_detections pd = {.num_detections = (uint32_t)n,
                               .num_keypoints = nk,
                               .boxes = boxes,
                               .scores = scores,
                               .class_ids = ids,
                               .keypoints = nk ? kp : NULL};
    st = ks_packet_create_detections(a, &pd, out);
done:
    ks__free(a, buf);
    ks__free(a, ids);
    return st;
}

static ks_status emit_dets(ks_node_ctx *ctx, uint32_t port, const ks__detection *d, size_t n) {
    ks_packet *p = NULL;
    ks_status st = det_packet(ks_node_allocator(ctx), d, n, &p);
    if (st) return ks_node_fail(ctx, st, "cannot allocate %zu detections", n);
    return ks_node_output(ctx, port, p);
}

/* Reads every detection of a packet into a freshly allocated array (caller frees). */
static ks_status dets_read(ks_node_ctx *ctx, const ks_packet *pk, ks__detection **out,
                           size_t *n_out) {
    const ks_packet_detections *p = ks_packet_detections_view(pk);
    *out = NULL;
    *n_out = 0;
    if (!p)
        return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT, "input is not a detections packet");
    if (p->num_detections == 0) return KS_STATUS_OK;
    ks__detection *d = ks__calloc(ks_node_allocator(ctx), p->num_detections, sizeof(*d));
    if (!d) return ks_node_fail(ctx, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < p->num_detections; i++)
        det_get(p, i, &d[i]);
    *out = d;
    *n_out = p->num_detections;
    return KS_STATUS_OK;
}

static ks_status emit_landmarks(ks_node_ctx *ctx, uint32_t port, const ks__landmark *lm, size_t n) {
    /* ks__landmark and ks_landmark have the same five floats; copy field by field anyway so
     * the two headers stay independent. */
    ks_landmark *tmp = ks__calloc(ks_node_allocator(ctx), n + 1, sizeof(*tmp));
    if (!tmp) return ks_node_fail(ctx, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++) {
        tmp[i].x = lm[i].x;
        tmp[i].y = lm[i].y;
        tmp[i].z = lm[i].z;
        tmp[i].visibility = lm[i].visibility;
        tmp[i].presence = lm[i].presence;
    }
    ks_packet *p = NULL;
    ks_status st = ks_packet_create_landmarks(ks_node_allocator(ctx),
                                              &(ks_packet_landmarks){(uint32_t)n, tmp}, &p);
    ks__free(ks_node_allocator(ctx), tmp);
    if (st) return ks_node_fail(ctx, st, "cannot allocate %zu landmarks", n);
    return ks_node_output(ctx, port, p);
}

static ks_status landmarks_read(ks_node_ctx *ctx, const ks_packet *pk, ks__landmark **out,
                                size_t *n_out) {
    const ks_packet_landmarks *p = ks_packet_landmarks_view(pk);
    *out = NULL;
    *n_out = 0;
    if (!p) return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT, "input is not a landmarks packet");
    if (p->num_landmarks > VN_MAX_LANDMARKS)
        return ks_node_fail(ctx, KS_STATUS_LIMIT_EXCEEDED, "%u landmarks; at most %d",
                            (unsigned)p->num_landmarks, VN_MAX_LANDMARKS);
    ks__landmark *lm = ks__calloc(ks_node_allocator(ctx), p->num_landmarks + 1, sizeof(*lm));
    if (!lm) return ks_node_fail(ctx, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < p->num_landmarks; i++) {
        lm[i].x = p->landmarks[i].x;
        lm[i].y = p->landmarks[i].y;
        lm[i].z = p->landmarks[i].z;
        lm[i].visibility = p->landmarks[i].visibility;
        lm[i].presence = p->landmarks[i].presence;
    }
    *out = lm;
    *n_out = p->num_landmarks;
    return KS_STATUS_OK;
}

static ks_status emit_rects(ks_node_ctx *ctx, uint32_t port, const ks__rect *r, size_t n) {
    ks_rect tmp[VN_MAX_DETECTIONS];
    if (n > VN_MAX_DETECTIONS) n = VN_MAX_DETECTIONS;
    for (size_t i = 0; i < n; i++)
        tmp[i] =
            (ks_rect){r[i].x_center, r[i].y_center, r[i].width, r[i].height, r[i].rotation_rad};
    ks_packet *p = NULL;
    ks_status st =
        ks_packet_create_rects(ks_node_allocator(ctx), &(ks_packet_rects){(uint32_t)n, tmp}, &p);
    if (st) return ks_node_fail(ctx, st, "out of memory");
    return ks_node_output(ctx, port, p);
}

static ks_status emit_f32(ks_node_ctx *ctx, uint32_t port, const float *v, int32_t rank,
                          const int64_t *dims) {
    ks_tensor_info info = {.dtype = KS_DTYPE_F32};
    info.shape.rank = rank;
    for (int32_t i = 0; i < rank; i++)
        info.shape.dims[i] = dims[i];
    ks_packet *p = NULL;
    ks_status st = ks_packet_create_tensor(ks_node_allocator(ctx), &info, v, &p);
    if (st) return ks_node_fail(ctx, st, "out of memory");
    return ks_node_output(ctx, port, p);
}

/* An f32 tensor input with its element count. */
static const float *tensor_f32(ks_node_ctx *ctx, uint32_t index, size_t *count_out) {
    const ks_tensor *t = ks_packet_tensor(ks_node_input(ctx, index));
    *count_out = 0;
    if (!t || t->info.dtype != KS_DTYPE_F32 || !t->data) return NULL;
    *count_out = t->size_bytes / sizeof(float);
    return t->data;
}

static bool image_size(const ks_packet *pk, int32_t *w, int32_t *h) {
    const ks_packet_image *im = ks_packet_image_view(pk);
    if (im && im->width_px > 0 && im->height_px > 0) {
        *w = im->width_px;
        *h = im->height_px;
        return true;
    }
    const ks_packet_mask *mk = ks_packet_mask_view(pk);
    if (mk && mk->width_px > 0 && mk->height_px > 0) {
        *w = mk->width_px;
        *h = mk->height_px;
        return true;
    }
    return false;
}

/* ---------------------------------------------------------------------------------------------
 * ssd_detections: raw SSD tensors -> decoded, suppressed detections in image coordinates
 * ------------------------------------------------------------------------------------------- */

typedef struct ssd_state {
    ks__ssd_decode_options dec;
    ks__nms_options nms;
    bool run_nms;
    size_t num_anchors;
    ks__anchor *anchors;
    ks__detection *cand; /* num_anchors */
    ks__detection *kept; /* VN_MAX_DETECTIONS */
    void *scratch;
} ssd_state;

static void ssd_destroy(void *state, const ks_allocator *a) {
    ssd_state *s = state;
    if (!s) return;
    ks__free(a, s->anchors);
    ks__free(a, s->cand);
    ks__free(a, s->kept);
    ks__free(a, s->scratch);
    ks__free(a, s);
}

static ks_status parse_preset(const ks_node_init *init, const char *key, ks__ssd_preset *out) {
    const char *name = NULL;
    ks_status st = ks_node_options_string(init->options, key, NULL, &name);
    if (st) return st;
    if (!name)
        return init_fail(init, KS_STATUS_INVALID_ARGUMENT,
                         "option '%s' is required (face_short_range, face_full_range, palm, pose)",
                         key);
    for (int p = 0; p < KS__SSD_PRESET_COUNT; p++)
        if (strcmp(name, ks__ssd_preset_string((ks__ssd_preset)p)) == 0) {
            *out = (ks__ssd_preset)p;
            return KS_STATUS_OK;
        }
    return init_fail(init, KS_STATUS_INVALID_ARGUMENT,
                     "option '%s' is '%s'; known: face_short_range, face_full_range, palm, pose",
                     key, name);
}

static ks_status ssd_create(const ks_node_init *init, void **state_out) {
    const ks_allocator *a = init->allocator;
    ssd_state *s = ks__calloc(a, 1, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    ks__ssd_preset preset = KS__SSD_PRESET_FACE_SHORT_RANGE;
    ks__ssd_anchor_options ao;
    bool weighted = false;
    ks_status st = parse_preset(init, "preset", &preset);
    if (st) goto error;
    st = ks__ssd_preset_get(preset, &ao, &s->dec, &s->nms);
    if (st) goto error;
    st =
        opt_float(init, "min_score", s->dec.min_score_thresh, 0.0f, 1.0f, &s->dec.min_score_thresh);
    if (!st)
        st = opt_float(init, "min_suppression_threshold", s->nms.min_suppression_threshold, 0.0f,
                       1.0f, &s->nms.min_suppression_threshold);
    if (!st)
        st = opt_int(init, "max_detections", s->nms.max_num_detections, -1, VN_MAX_DETECTIONS,
                     &s->nms.max_num_detections);
    if (!st) st = opt_bool(init, "weighted", s->nms.algorithm == KS__NMS_WEIGHTED, &weighted);
    if (!st) st = opt_bool(init, "nms", 1, &s->run_nms);
    if (st) goto error;
    s->nms.algorithm = weighted ? KS__NMS_WEIGHTED : KS__NMS_DEFAULT;
    s->nms.min_score_threshold = s->dec.min_score_thresh;
    st = ks__ssd_anchors_count(&ao, &s->num_anchors, init->error, init->error_cap);
    if (st) goto error;
    s->anchors = ks__calloc(a, s->num_anchors, sizeof(*s->anchors));
    s->cand = ks__calloc(a, s->num_anchors, sizeof(*s->cand));
    s->kept = ks__calloc(a, VN_MAX_DETECTIONS, sizeof(*s->kept));
    s->scratch = ks__calloc(a, 1, ks__nms_scratch_size(s->num_anchors));
    if (!s->anchors || !s->cand || !s->kept || !s->scratch) {
        st = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    size_t n = 0;
    st =
        ks__ssd_anchors_generate(&ao, s->anchors, s->num_anchors, &n, init->error, init->error_cap);
    if (st) goto error;
    *state_out = s;
    return KS_STATUS_OK;
error:
    ssd_destroy(s, a);
    return st;
}

/* Maps a detection through the tensor -> image matrix. Boxes become the bounding box of their
 * mapped corners (exact for the axis-aligned letterbox, conservative for rotated crops). */
static void det_transform(const float *m, ks__detection *d) {
    float xs[4], ys[4];
    mat_apply(m, d->xmin, d->ymin, &xs[0], &ys[0]);
    mat_apply(m, d->xmax, d->ymin, &xs[1], &ys[1]);
    mat_apply(m, d->xmin, d->ymax, &xs[2], &ys[2]);
    mat_apply(m, d->xmax, d->ymax, &xs[3], &ys[3]);
    d->xmin = d->xmax = xs[0];
    d->ymin = d->ymax = ys[0];
    for (int i = 1; i < 4; i++) {
        d->xmin = fminf(d->xmin, xs[i]);
        d->xmax = fmaxf(d->xmax, xs[i]);
        d->ymin = fminf(d->ymin, ys[i]);
        d->ymax = fmaxf(d->ymax, ys[i]);
    }
    for (uint32_t k = 0; k < d->num_keypoints; k++)
        mat_apply(m, d->keypoints[k].x, d->keypoints[k].y, &d->keypoints[k].x, &d->keypoints[k].y);
}

static ks_status ssd_process(void *state, ks_node_ctx *ctx) {
    ssd_state *s = state;
    size_t nb = 0, ns = 0;
    const float *boxes = tensor_f32(ctx, 0, &nb);
    const float *scores = tensor_f32(ctx, 1, &ns);
    if (!boxes || !scores)
        return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT,
                            "inputs 'boxes' and 'scores' must be f32 tensors");
    const float *m = ks_packet_matrix(ks_node_input(ctx, 2));
    char err[256];
    size_t nc = 0, nk = 0;
    ks_status st = ks__ssd_decode(&s->dec, boxes, nb, scores, ns, s->anchors, s->num_anchors,
                                  s->cand, s->num_anchors, &nc, err, sizeof(err));
    if (st) return ks_node_fail(ctx, st, "%s", err);
    if (s->run_nms) {
        ks__nms(&s->nms, s->cand, nc, s->scratch, s->kept, VN_MAX_DETECTIONS, &nk);
    } else {
        nk = nc < VN_MAX_DETECTIONS ? nc : VN_MAX_DETECTIONS;
        memcpy(s->kept, s->cand, nk * sizeof(*s->kept));
    }
    if (m)
        for (size_t i = 0; i < nk; i++)
            det_transform(m, &s->kept[i]);
    return emit_dets(ctx, 0, s->kept, nk);
}

static const ks_port ssd_in[] = {{"boxes", KS_PACKET_TENSOR, KS_PACKET_ANY, 0, -1},
                                 {"scores", KS_PACKET_TENSOR, KS_PACKET_ANY, 0, -1},
                                 {"matrix", KS_PACKET_MATRIX, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1}};
static const ks_port det_out[] = {{"detections", KS_PACKET_DETECTIONS, KS_PACKET_ANY, 0, -1}};
const ks_node_type ks__node_ssd = {"ssd_detections", 3,           1,    ssd_in, det_out,
                                   ssd_create,       ssd_process, NULL, NULL,   ssd_destroy};

/* ---------------------------------------------------------------------------------------------
 * nms
 * ------------------------------------------------------------------------------------------- */

static ks_status nms_create(const ks_node_init *init, void **state_out) {
    ks__nms_options *o = ks__calloc(init->allocator, 1, sizeof(*o));
    if (!o) return KS_STATUS_OUT_OF_MEMORY;
    bool weighted = false, per_class = false;
    const char *overlap = NULL;
    ks_status st =
        opt_float(init, "iou_threshold", 0.3f, 0.0f, 1.0f, &o->min_suppression_threshold);
    if (!st) st = opt_float(init, "min_score", 0.0f, 0.0f, 1.0f, &o->min_score_threshold);
    if (!st) st = opt_int(init, "max_detections", 0, 0, VN_MAX_DETECTIONS, &o->max_num_detections);
    if (!st) st = opt_bool(init, "weighted", 0, &weighted);
    if (!st) st = opt_bool(init, "per_class", 0, &per_class);
    if (!st) st = ks_node_options_string(init->options, "overlap", "iou", &overlap);
    if (st) goto error;
    if (strcmp(overlap, "iou") == 0) {
        o->overlap_type = KS__OVERLAP_IOU;
    } else if (strcmp(overlap, "modified_jaccard") == 0) {
        o->overlap_type = KS__OVERLAP_MODIFIED_JACCARD;
    } else {
        st = init_fail(init, KS_STATUS_INVALID_ARGUMENT,
                       "option 'overlap' is '%s'; known: iou, modified_jaccard", overlap);
        goto error;
    }
    o->algorithm = weighted ? KS__NMS_WEIGHTED : KS__NMS_DEFAULT;
    o->per_class = per_class;
    *state_out = o;
    return KS_STATUS_OK;
error:
    ks__free(init->allocator, o);
    return st;
}

static ks_status nms_process(void *state, ks_node_ctx *ctx) {
    const ks__nms_options *o = state;
    const ks_allocator *a = ks_node_allocator(ctx);
    ks__detection *in = NULL, *out = NULL;
    void *scratch = NULL;
    size_t n = 0, kept = 0;
    ks_status st = dets_read(ctx, ks_node_input(ctx, 0), &in, &n);
    if (st) return st;
    out = ks__calloc(a, VN_MAX_DETECTIONS, sizeof(*out));
    scratch = ks__calloc(a, 1, ks__nms_scratch_size(n) + 1);
    if (!out || !scratch) {
        st = ks_node_fail(ctx, KS_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    ks__nms(o, in, n, scratch, out, VN_MAX_DETECTIONS, &kept);
    st = emit_dets(ctx, 0, out, kept);
done:
    ks__free(a, in);
    ks__free(a, out);
    ks__free(a, scratch);
    return st;
}

static const ks_port dets_in[] = {{"detections", KS_PACKET_DETECTIONS, KS_PACKET_ANY, 0, -1}};
const ks_node_type ks__node_nms = {"nms",      1,           1,    dets_in, det_out,
                                   nms_create, nms_process, NULL, NULL,    plain_destroy};

/* ---------------------------------------------------------------------------------------------
 * tensors_to_landmarks
 * ------------------------------------------------------------------------------------------- */

typedef struct ttl_state {
    ks__landmarks_decode_options opt;
    float min_score;
    bool score_sigmoid;
} ttl_state;

static ks_status parse_activation(const ks_node_init *init, const char *key, ks__activation *out) {
    const char *v = NULL;
    ks_status st = ks_node_options_string(init->options, key, "none", &v);
    if (st) return st;
    if (strcmp(v, "none") == 0) {
        *out = KS__ACTIVATION_NONE;
    } else if (strcmp(v, "sigmoid") == 0) {
        *out = KS__ACTIVATION_SIGMOID;
    } else {
        return init_fail(init, KS_STATUS_INVALID_ARGUMENT,
                         "option '%s' is '%s'; known: none, sigmoid", key, v);
    }
    return KS_STATUS_OK;
}

static ks_status ttl_create(const ks_node_init *init, void **state_out) {
    ttl_state *s = ks__calloc(init->allocator, 1, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    ks_status st = opt_int(init, "num_landmarks", 0, 1, VN_MAX_LANDMARKS, &s->opt.num_landmarks);
    if (!st) st = opt_int(init, "input_width", 0, 1, 1 << 16, &s->opt.input_width);
    if (!st) st = opt_int(init, "input_height", 0, 1, 1 << 16, &s->opt.input_height);
    if (!st) st = opt_float(init, "normalize_z", 1.0f, 1e-6f, 1e6f, &s->opt.normalize_z);
    if (!st) st = opt_bool(init, "flip_horizontally", 0, &s->opt.flip_horizontally);
    if (!st) st = opt_bool(init, "flip_vertically", 0, &s->opt.flip_vertically);
    if (!st) st = parse_activation(init, "visibility_activation", &s->opt.visibility_activation);
    if (!st) st = parse_activation(init, "presence_activation", &s->opt.presence_activation);
    if (!st) st = opt_float(init, "min_score", 0.0f, 0.0f, 1.0f, &s->min_score);
    if (!st) st = opt_bool(init, "score_sigmoid", 1, &s->score_sigmoid);
    if (st) {
        ks__free(init->allocator, s);
        return st;
    }
    *state_out = s;
    return KS_STATUS_OK;
}

static ks_status ttl_process(void *state, ks_node_ctx *ctx) {
    const ttl_state *s = state;
    size_t n = 0, nf = 0;
    const float *raw = tensor_f32(ctx, 0, &n);
    if (!raw) return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT, "input 'tensor' must be f32");
    const float *flag = tensor_f32(ctx, 1, &nf);
    float score = 1.0f;
    if (flag && nf > 0) {
        score = s->score_sigmoid ? ks__sigmoid(flag[0]) : flag[0];
        /* Below the threshold the object is lost: no landmarks this frame, so a tracking loop
         * falls back to the detector. */
        if (!(score >= s->min_score)) return KS_STATUS_OK;
    }
    ks__landmark *lm =
        ks__calloc(ks_node_allocator(ctx), (size_t)s->opt.num_landmarks, sizeof(*lm));
    if (!lm) return ks_node_fail(ctx, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    char err[256];
    ks_status st = ks__tensors_to_landmarks(&s->opt, raw, n, lm, (size_t)s->opt.num_landmarks, err,
                                            sizeof(err));
    if (st) {
        st = ks_node_fail(ctx, st, "%s", err);
    } else {
        st = emit_landmarks(ctx, 0, lm, (size_t)s->opt.num_landmarks);
    }
    ks__free(ks_node_allocator(ctx), lm);
    if (st || ks_node_num_outputs(ctx) < 2) return st;
    ks_packet *sp = NULL;
    st = ks_packet_create_float(ks_node_allocator(ctx), score, &sp);
    if (st) return ks_node_fail(ctx, st, "out of memory");
    return ks_node_output(ctx, 1, sp);
}

static const ks_port ttl_in[] = {{"tensor", KS_PACKET_TENSOR, KS_PACKET_ANY, 0, -1},
                                 {"score", KS_PACKET_TENSOR, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1}};
static const ks_port ttl_out[] = {{"landmarks", KS_PACKET_LANDMARKS, KS_PACKET_ANY, 0, -1},
                                  {"score", KS_PACKET_FLOAT, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1}};
const ks_node_type ks__node_ttl = {
    "tensors_to_landmarks", 2, 2, ttl_in, ttl_out, ttl_create, ttl_process, NULL, NULL,
    plain_destroy};

/* ---------------------------------------------------------------------------------------------
 * project_landmarks: ROI-normalized -> image-normalized, by a matrix or a rect
 * ------------------------------------------------------------------------------------------- */

typedef struct proj_state {
    bool ignore_rotation;
} proj_state;

static ks_status proj_create(const ks_node_init *init, void **state_out) {
    proj_state *s = ks__calloc(init->allocator, 1, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    ks_status st = opt_bool(init, "ignore_rotation", 0, &s->ignore_rotation);
    if (st) {
        ks__free(init->allocator, s);
        return st;
    }
    *state_out = s;
    return KS_STATUS_OK;
}

static ks_status proj_process(void *state, ks_node_ctx *ctx) {
    const proj_state *s = state;
    const ks_packet *tp = ks_node_input(ctx, 1);
    const float *m = ks_packet_matrix(tp);
    const ks_packet_rects *r = ks_packet_rects_view(tp);
    if (!m && (!r || r->num_rects == 0))
        return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT,
                            "input 'transform' must be a matrix or a non-empty rects packet");
    ks__landmark *lm = NULL;
    size_t n = 0;
    ks_status st = landmarks_read(ctx, ks_node_input(ctx, 0), &lm, &n);
    if (st) return st;
    if (m) {
        /* z is in units of the tensor's x; the image's x unit is the length of the mapped x axis
         * measured in image-normalized x units. */
        float zscale = sqrtf(m[0] * m[0] + m[4] * m[4]);
        for (size_t i = 0; i < n; i++) {
            mat_apply(m, lm[i].x, lm[i].y, &lm[i].x, &lm[i].y);
            lm[i].z *= zscale;
        }
    } else {
        ks__rect roi = {r->rects[0].x_center, r->rects[0].y_center, r->rects[0].width,
                        r->rects[0].height, r->rects[0].rotation_rad};
        ks__landmarks_project(lm, n, &roi, s->ignore_rotation);
    }
    st = emit_landmarks(ctx, 0, lm, n);
    ks__free(ks_node_allocator(ctx), lm);
    return st;
}

static const ks_port proj_in[] = {{"landmarks", KS_PACKET_LANDMARKS, KS_PACKET_ANY, 0, -1},
                                  {"transform", KS_PACKET_ANY, KS_PACKET_ANY, 0, -1}};
static const ks_port lm_out[] = {{"landmarks", KS_PACKET_LANDMARKS, KS_PACKET_ANY, 0, -1}};
const ks_node_type ks__node_proj = {
    "project_landmarks", 2,    1,    proj_in,      lm_out, proj_create,
    proj_process,        NULL, NULL, plain_destroy};

/* ---------------------------------------------------------------------------------------------
 * roi_from_detections / roi_from_landmarks
 * ------------------------------------------------------------------------------------------- */

typedef struct roi_state {
    ks__roi_options opt;
    int32_t max_rects;
} roi_state;

/* preset names per node: the detection presets for roi_from_detections, the landmark presets
 * for roi_from_landmarks. */
static ks_status roi_parse(const ks_node_init *init, bool from_landmarks, roi_state *s) {
    const char *preset = NULL, *mode = NULL;
    ks_status st = ks_node_options_string(init->options, "preset", NULL, &preset);
    if (st) return st;
    static const char *const names[] = {"face", "hand", "pose"};
    static const ks__roi_preset det_presets[] = {KS__ROI_PRESET_FACE_FROM_DETECTION,
                                                 KS__ROI_PRESET_HAND_FROM_PALM,
                                                 KS__ROI_PRESET_POSE_FROM_DETECTION};
    static const ks__roi_preset lm_presets[] = {KS__ROI_PRESET_FACE_FROM_LANDMARKS,
                                                KS__ROI_PRESET_HAND_FROM_LANDMARKS,
                                                KS__ROI_PRESET_POSE_FROM_LANDMARKS};
    memset(&s->opt, 0, sizeof(s->opt));
    s->opt.scale_x = s->opt.scale_y = 1.0f;
    if (preset) {
        int found = -1;
        for (int i = 0; i < 3; i++)
            if (strcmp(preset, names[i]) == 0) found = i;
        if (found < 0)
            return init_fail(init, KS_STATUS_INVALID_ARGUMENT,
                             "option 'preset' is '%s'; known: face, hand, pose", preset);
        st = ks__roi_preset_get(from_landmarks ? lm_presets[found] : det_presets[found], &s->opt);
        if (st) return st;
    }
    ks__roi_options *o = &s->opt;
    st = ks_node_options_string(init->options, "mode", NULL, &mode);
    if (st) return st;
    if (mode) {
        if (strcmp(mode, "bbox") == 0) {
            o->mode = KS__ROI_MODE_BBOX;
        } else if (strcmp(mode, "alignment") == 0) {
            o->mode = KS__ROI_MODE_ALIGNMENT_POINTS;
        } else if (strcmp(mode, "rotated_bbox") == 0 && from_landmarks) {
            o->mode = KS__ROI_MODE_ROTATED_BBOX;
        } else {
            return init_fail(init, KS_STATUS_INVALID_ARGUMENT,
                             "option 'mode' is '%s'; known: bbox, alignment%s", mode,
                             from_landmarks ? ", rotated_bbox" : "");
        }
    }
    st = opt_bool(init, "rotate", o->rotate, &o->rotate);
    if (!st)
        st = opt_int(init, "start_index", o->start_index, 0, VN_MAX_LANDMARKS, &o->start_index);
    if (!st) st = opt_int(init, "end_index", o->end_index, 0, VN_MAX_LANDMARKS, &o->end_index);
    if (!st)
        st = opt_float(init, "target_angle_deg", o->target_angle_deg, -360.0f, 360.0f,
                       &o->target_angle_deg);
    if (!st)
        st = opt_float(init, "scale_x", o->scale_x == 0 ? 1 : o->scale_x, 0.01f, 100.0f,
                       &o->scale_x);
    if (!st)
        st = opt_float(init, "scale_y", o->scale_y == 0 ? 1 : o->scale_y, 0.01f, 100.0f,
                       &o->scale_y);
    if (!st) st = opt_float(init, "shift_x", o->shift_x, -10.0f, 10.0f, &o->shift_x);
    if (!st) st = opt_float(init, "shift_y", o->shift_y, -10.0f, 10.0f, &o->shift_y);
    if (!st)
        st = opt_float(init, "rotation_deg", o->extra_rotation_deg, -360.0f, 360.0f,
                       &o->extra_rotation_deg);
    if (!st) st = opt_bool(init, "square_long", o->square_long, &o->square_long);
    if (!st) st = opt_bool(init, "square_short", o->square_short, &o->square_short);
    if (!st) st = opt_int(init, "max_rects", 0, 0, VN_MAX_DETECTIONS, &s->max_rects);
    return st;
}

static ks_status roi_det_create(const ks_node_init *init, void **state_out) {
    roi_state *s = ks__calloc(init->allocator, 1, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    ks_status st = roi_parse(init, false, s);
    if (st) {
        ks__free(init->allocator, s);
        return st;
    }
    *state_out = s;
    return KS_STATUS_OK;
}

static ks_status roi_lm_create(const ks_node_init *init, void **state_out) {
    roi_state *s = ks__calloc(init->allocator, 1, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    ks_status st = roi_parse(init, true, s);
    if (st) {
        ks__free(init->allocator, s);
        return st;
    }
    *state_out = s;
    return KS_STATUS_OK;
}

static ks_status roi_det_process(void *state, ks_node_ctx *ctx) {
    const roi_state *s = state;
    int32_t w = 0, h = 0;
    if (!image_size(ks_node_input(ctx, 1), &w, &h))
        return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT, "input 'image' has no size");
    ks__detection *d = NULL;
    size_t n = 0;
    ks_status st = dets_read(ctx, ks_node_input(ctx, 0), &d, &n);
    if (st) return st;
    if (s->max_rects > 0 && n > (size_t)s->max_rects) n = (size_t)s->max_rects;
    if (n > VN_MAX_DETECTIONS) n = VN_MAX_DETECTIONS;
    ks__rect rects[VN_MAX_DETECTIONS];
    size_t nr = 0;
    char err[256];
    for (size_t i = 0; i < n; i++) {
        st = ks__roi_from_detection(&s->opt, &d[i], w, h, &rects[nr], err, sizeof(err));
        if (st) {
            st = ks_node_fail(ctx, st, "detection %zu: %s", i, err);
            goto done;
        }
        nr++;
    }
    /* No detection, no rects packet: downstream crops simply do not run this frame. */
    if (nr > 0) st = emit_rects(ctx, 0, rects, nr);
done:
    ks__free(ks_node_allocator(ctx), d);
    return st;
}

static ks_status roi_lm_process(void *state, ks_node_ctx *ctx) {
    const roi_state *s = state;
    int32_t w = 0, h = 0;
    if (!image_size(ks_node_input(ctx, 1), &w, &h))
        return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT, "input 'image' has no size");
    ks__landmark *lm = NULL;
    size_t n = 0;
    ks_status st = landmarks_read(ctx, ks_node_input(ctx, 0), &lm, &n);
    if (st) return st;
    ks__rect r;
    char err[256];
    st = ks__roi_from_landmarks(&s->opt, lm, n, w, h, &r, err, sizeof(err));
    ks__free(ks_node_allocator(ctx), lm);
    if (st) return ks_node_fail(ctx, st, "%s", err);
    return emit_rects(ctx, 0, &r, 1);
}

static const ks_port roi_det_in[] = {{"detections", KS_PACKET_DETECTIONS, KS_PACKET_ANY, 0, -1},
                                     {"image", KS_PACKET_ANY, KS_PACKET_ANY, 0, -1}};
static const ks_port roi_lm_in[] = {{"landmarks", KS_PACKET_LANDMARKS, KS_PACKET_ANY, 0, -1},
                                    {"image", KS_PACKET_ANY, KS_PACKET_ANY, 0, -1}};
static const ks_port rects_out[] = {{"rects", KS_PACKET_RECTS, KS_PACKET_ANY, 0, -1}};
const ks_node_type ks__node_roi_det = {
    "roi_from_detections", 2,    1,    roi_det_in,   rects_out, roi_det_create,
    roi_det_process,       NULL, NULL, plain_destroy};
const ks_node_type ks__node_roi_lm = {
    "roi_from_landmarks", 2,    1,    roi_lm_in,    rects_out, roi_lm_create,
    roi_lm_process,       NULL, NULL, plain_destroy};

/* ---------------------------------------------------------------------------------------------
 * tracker: stable ids
 * ------------------------------------------------------------------------------------------- */

typedef struct tracker_state {
    ks__tracker_options opt;
    ks__tracker tr;
} tracker_state;

static ks_status tracker_create(const ks_node_init *init, void **state_out) {
    tracker_state *s = ks__calloc(init->allocator, 1, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    ks_status st = opt_float(init, "iou_threshold", 0.3f, 0.0f, 1.0f, &s->opt.iou_threshold);
    if (!st) st = opt_int(init, "max_missed_frames", 2, 0, 1000000, &s->opt.max_missed_frames);
    if (!st) st = opt_int(init, "min_hits", 1, 1, 1000000, &s->opt.min_hits);
    if (!st) st = opt_bool(init, "per_class", 0, &s->opt.per_class);
    if (st) {
        ks__free(init->allocator, s);
        return st;
    }
    ks__tracker_init(&s->tr, &s->opt);
    *state_out = s;
    return KS_STATUS_OK;
}

static void tracker_reset(void *state) {
    tracker_state *s = state;
    ks__tracker_init(&s->tr, &s->opt);
}

static ks_status tracker_process(void *state, ks_node_ctx *ctx) {
    tracker_state *s = state;
    ks__detection *d = NULL;
    size_t n = 0;
    ks_status st = dets_read(ctx, ks_node_input(ctx, 0), &d, &n);
    if (st) return st;
    ks__tracker_update(&s->tr, d, n);
    st = emit_dets(ctx, 0, d, n);
    if (!st && ks_node_num_outputs(ctx) > 1) {
        ks_tensor_info info = {.dtype = KS_DTYPE_I32};
        info.shape.rank = 1;
        info.shape.dims[0] = (int64_t)n;
        ks_packet *ids = NULL;
        st = ks_packet_create_tensor(ks_node_allocator(ctx), &info, NULL, &ids);
        if (st) {
            st = ks_node_fail(ctx, st, "out of memory");
        } else {
            int32_t *v = ks_packet_mutable_data(ids, NULL);
            for (size_t i = 0; i < n; i++)
                v[i] = d[i].track_id;
            st = ks_node_output(ctx, 1, ids);
        }
    }
    ks__free(ks_node_allocator(ctx), d);
    return st;
}

static const ks_port tracker_out[] = {
    {"detections", KS_PACKET_DETECTIONS, KS_PACKET_ANY, 0, -1},
    {"ids", KS_PACKET_TENSOR, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1}};
const ks_node_type ks__node_tracker = {
    "tracker",       1,    1 + 1,         dets_in,      tracker_out, tracker_create,
    tracker_process, NULL, tracker_reset, plain_destroy};

/* ---------------------------------------------------------------------------------------------
 * landmark_smoother: One Euro filter per coordinate (VIDEO)
 * ------------------------------------------------------------------------------------------- */

typedef struct smoother_state {
    ks__one_euro_params params;
    bool enabled;
    size_t num_landmarks;
    ks__landmark_smoother *sm;
    const ks_allocator *alloc;
} smoother_state;

static void smoother_destroy(void *state, const ks_allocator *a) {
    smoother_state *s = state;
    if (!s) return;
    ks__landmark_smoother_destroy(s->sm);
    ks__free(a, s);
}

static ks_status smoother_create(const ks_node_init *init, void **state_out) {
    smoother_state *s = ks__calloc(init->allocator, 1, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    s->alloc = init->allocator;
    ks_status st = opt_float(init, "min_cutoff", 0.05f, 1e-6f, 1e6f, &s->params.min_cutoff);
    if (!st) st = opt_float(init, "beta", 80.0f, 0.0f, 1e9f, &s->params.beta);
    if (!st) st = opt_float(init, "d_cutoff", 1.0f, 1e-6f, 1e6f, &s->params.d_cutoff);
    if (!st) st = opt_float(init, "frequency_hz", 30.0f, 1e-3f, 1e6f, &s->params.frequency_hz);
    if (!st) st = opt_bool(init, "enabled", 1, &s->enabled);
    if (st) {
        ks__free(init->allocator, s);
        return st;
    }
    *state_out = s;
    return KS_STATUS_OK;
}

static void smoother_reset(void *state) {
    smoother_state *s = state;
    if (s->sm) ks__landmark_smoother_reset(s->sm);
}

static ks_status smoother_process(void *state, ks_node_ctx *ctx) {
    smoother_state *s = state;
    const ks_packet *in = ks_node_input(ctx, 0);
    if (!in) {
        /* The object was lost: the next one must not be pulled towards the old position. */
        smoother_reset(s);
        return KS_STATUS_OK;
    }
    if (!s->enabled) return ks_node_output(ctx, 0, ks_packet_retain(in));
    ks__landmark *lm = NULL;
    size_t n = 0;
    ks_status st = landmarks_read(ctx, in, &lm, &n);
    if (st) return st;
    if (n == 0) {
        st = emit_landmarks(ctx, 0, lm, 0);
        goto done;
    }
    if (!s->sm || s->num_landmarks != n) {
        ks__landmark_smoother_destroy(s->sm);
        s->sm = NULL;
        st = ks__landmark_smoother_create(s->alloc, n, &s->params, &s->sm);
        if (st) {
            st = ks_node_fail(ctx, st, "cannot allocate filters for %zu landmarks", n);
            goto done;
        }
        s->num_landmarks = n;
    }
    /* Smooth in pixels when the image size is known, so x and y have the same unit and the
     * object scale (mean side of the landmarks' box) is isotropic. */
    int32_t w = 1, h = 1;
    if (!image_size(ks_node_input(ctx, 1), &w, &h)) w = h = 1;
    float x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        lm[i].x *= (float)w;
        lm[i].y *= (float)h;
        lm[i].z *= (float)w;
        x0 = fminf(x0, lm[i].x);
        x1 = fmaxf(x1, lm[i].x);
        y0 = fminf(y0, lm[i].y);
        y1 = fmaxf(y1, lm[i].y);
    }
    float scale = 0.5f * ((x1 - x0) + (y1 - y0));
    if (!(scale > 1e-6f)) scale = 1e-6f;
    st = ks__landmark_smoother_apply(s->sm, lm, n, scale, ks_node_timestamp_us(ctx));
    if (st) {
        st = ks_node_fail(ctx, st, "smoothing failed");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        lm[i].x /= (float)w;
        lm[i].y /= (float)h;
        lm[i].z /= (float)w;
    }
    st = emit_landmarks(ctx, 0, lm, n);
done:
    ks__free(ks_node_allocator(ctx), lm);
    return st;
}

static const ks_port smoother_in[] = {
    {"landmarks", KS_PACKET_LANDMARKS, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1},
    {"image", KS_PACKET_ANY, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1}};
const ks_node_type ks__node_smoother = {"landmark_smoother", 2,      1,
                                        smoother_in,         lm_out, smoother_create,
                                        smoother_process,    NULL,   smoother_reset,
                                        smoother_destroy};

/* ---------------------------------------------------------------------------------------------
 * face_geometry: pose matrix, Euler angles, metric mesh, projection
 * ------------------------------------------------------------------------------------------- */

typedef struct geom_state {
    ks__face_geometry_metadata *md;
    ks__perspective_camera camera;
    float *workspace;
    float *metric; /* num_vertices * 3 */
} geom_state;

static void geom_destroy(void *state, const ks_allocator *a) {
    geom_state *s = state;
    if (!s) return;
    ks__face_geometry_metadata_destroy(s->md);
    ks__free(a, s->workspace);
    ks__free(a, s->metric);
    ks__free(a, s);
}

#define GEOM_MAX_FILE_BYTES (16u << 20)

static ks_status geom_load(const ks_node_init *init, const char *name, geom_state *s) {
    ks_bundle_entry e;
    if (init->bundle && ks_bundle_find(init->bundle, name, &e) == KS_STATUS_OK)
        return ks__face_geometry_parse(init->allocator, e.data, e.size_bytes, &s->md, init->error,
                                       init->error_cap);
    char path[1024];
    if (init->model_dir && init->model_dir[0] && name[0] != '/')
        snprintf(path, sizeof(path), "%s/%s", init->model_dir, name);
    else
        snprintf(path, sizeof(path), "%s", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return init_fail(init, KS_STATUS_IO_ERROR,
                         "missing face geometry metadata '%s': no bundle entry of that name and "
                         "no file '%s'",
                         name, path);
    uint8_t *buf = NULL;
    ks_status st = KS_STATUS_IO_ERROR;
    long size = 0;
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        init_fail(init, st, "cannot read '%s'", path);
        goto done;
    }
    if ((unsigned long)size > GEOM_MAX_FILE_BYTES) {
        st = init_fail(init, KS_STATUS_LIMIT_EXCEEDED, "'%s' is %ld bytes; at most %u", path, size,
                       GEOM_MAX_FILE_BYTES);
        goto done;
    }
    buf = ks__calloc(init->allocator, (size_t)size + 1, 1);
    if (!buf) {
        st = KS_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
        init_fail(init, st, "cannot read '%s'", path);
        goto done;
    }
    st = ks__face_geometry_parse(init->allocator, buf, (size_t)size, &s->md, init->error,
                                 init->error_cap);
done:
    ks__free(init->allocator, buf);
    fclose(f);
    return st;
}

static ks_status geom_create(const ks_node_init *init, void **state_out) {
    const ks_allocator *a = init->allocator;
    geom_state *s = ks__calloc(a, 1, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    const char *name = NULL;
    ks_status st = ks_node_options_string(init->options, "metadata",
                                          "geometry_pipeline_metadata_landmarks.binarypb", &name);
    if (!st)
        st = opt_float(init, "vertical_fov_deg", 63.0f, 1.0f, 179.0f, &s->camera.vertical_fov_deg);
    if (!st) st = opt_float(init, "near", 1.0f, 1e-6f, 1e9f, &s->camera.near_plane);
    if (!st) st = opt_float(init, "far", 10000.0f, 1e-6f, 1e12f, &s->camera.far_plane);
    if (st) goto error;
    if (!(s->camera.far_plane > s->camera.near_plane)) {
        st =
            init_fail(init, KS_STATUS_INVALID_ARGUMENT, "option 'far' (%g) must exceed 'near' (%g)",
                      (double)s->camera.far_plane, (double)s->camera.near_plane);
        goto error;
    }
    st = geom_load(init, name, s);
    if (st) goto error;
    s->workspace = ks__calloc(a, ks__face_geometry_workspace_floats(s->md) + 1, sizeof(float));
    s->metric = ks__calloc(a, (size_t)s->md->num_vertices * 3 + 1, sizeof(float));
    if (!s->workspace || !s->metric) {
        st = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    *state_out = s;
    return KS_STATUS_OK;
error:
    geom_destroy(s, a);
    return st;
}

/* face_geometry works in column-major (OpenGL) matrices; packets are row-major. */
static void transpose4(const float *in, float *out) {
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            out[r * 4 + c] = in[c * 4 + r];
}

static ks_status emit_matrix(ks_node_ctx *ctx, uint32_t port, const float *col_major) {
    float m[16];
    transpose4(col_major, m);
    ks_packet *p = NULL;
    ks_status st = ks_packet_create_matrix(ks_node_allocator(ctx), m, &p);
    if (st) return ks_node_fail(ctx, st, "out of memory");
    return ks_node_output(ctx, port, p);
}

static ks_status geom_process(void *state, ks_node_ctx *ctx) {
    geom_state *s = state;
    int32_t w = 0, h = 0;
    if (!image_size(ks_node_input(ctx, 1), &w, &h))
        return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT, "input 'image' has no size");
    ks__landmark *lm = NULL;
    size_t n = 0;
    ks_status st = landmarks_read(ctx, ks_node_input(ctx, 0), &lm, &n);
    if (st) return st;
    ks__face_pose pose;
    char err[256];
    st = ks__face_geometry_estimate(s->md, &s->camera, lm, n, w, h, s->workspace, s->metric, &pose,
                                    err, sizeof(err));
    ks__free(ks_node_allocator(ctx), lm);
    if (st) return ks_node_fail(ctx, st, "%s", err);
    st = emit_matrix(ctx, 0, pose.pose_matrix);
    if (!st && ks_node_num_outputs(ctx) > 1) {
        float e[3] = {pose.pitch_deg, pose.yaw_deg, pose.roll_deg};
        st = emit_f32(ctx, 1, e, 1, (int64_t[]){3});
    }
    if (!st && ks_node_num_outputs(ctx) > 2)
        st = emit_f32(ctx, 2, s->metric, 2, (int64_t[]){(int64_t)s->md->num_vertices, 3});
    if (!st && ks_node_num_outputs(ctx) > 3) {
        float proj[16];
        ks__face_geometry_projection(&s->camera, w, h, proj);
        st = emit_matrix(ctx, 3, proj);
    }
    return st;
}

static const ks_port geom_in[] = {{"landmarks", KS_PACKET_LANDMARKS, KS_PACKET_ANY, 0, -1},
                                  {"image", KS_PACKET_ANY, KS_PACKET_ANY, 0, -1}};
static const ks_port geom_out[] = {
    {"pose", KS_PACKET_MATRIX, KS_PACKET_ANY, 0, -1},
    {"euler", KS_PACKET_TENSOR, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1},
    {"metric", KS_PACKET_TENSOR, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1},
    {"projection", KS_PACKET_MATRIX, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1}};
const ks_node_type ks__node_geom = {"face_geometry", 2,    4,    geom_in,     geom_out, geom_create,
                                    geom_process,    NULL, NULL, geom_destroy};

/* ---------------------------------------------------------------------------------------------
 * face_expressions
 * ------------------------------------------------------------------------------------------- */

static ks_status expr_create(const ks_node_init *init, void **state_out) {
    (void)init;
    *state_out = NULL;
    return KS_STATUS_OK;
}

static ks_status expr_process(void *state, ks_node_ctx *ctx) {
    (void)state;
    const ks_packet *in = ks_node_input(ctx, 0);
    const ks_allocator *a = ks_node_allocator(ctx);
    float *xyz = NULL;
    size_t n = 0;
    const ks_tensor *t = ks_packet_tensor(in);
    const ks_packet_landmarks *lp = ks_packet_landmarks_view(in);
    if (t && t->info.dtype == KS_DTYPE_F32) {
        n = t->size_bytes / (3 * sizeof(float));
        xyz = ks__calloc(a, 3 * n + 1, sizeof(float));
        if (xyz) memcpy(xyz, t->data, 3 * n * sizeof(float));
    } else if (lp) {
        n = lp->num_landmarks;
        xyz = ks__calloc(a, 3 * (size_t)n + 1, sizeof(float));
        /* Image-normalized points distort the ratios on non-square images; the metric mesh
         * from face_geometry is the intended input. */
        for (size_t i = 0; xyz && i < n; i++) {
            xyz[3 * i + 0] = lp->landmarks[i].x;
            xyz[3 * i + 1] = lp->landmarks[i].y;
            xyz[3 * i + 2] = lp->landmarks[i].z;
        }
    } else {
        return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT,
                            "input must be an f32 [N, 3] tensor or landmarks");
    }
    if (!xyz) return ks_node_fail(ctx, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    ks__face_expressions ex;
    ks__face_expressions_compute(xyz, n, &ex);
    ks__free(a, xyz);
    float v[6] = {ex.mouth_open,      ex.left_eye_blink,   ex.right_eye_blink,
                  ex.left_brow_raise, ex.right_brow_raise, ex.smile};
    return emit_f32(ctx, 0, v, 1, (int64_t[]){6});
}

static const ks_port expr_in[] = {{"points", KS_PACKET_ANY, KS_PACKET_ANY, 0, -1}};
static const ks_port expr_out[] = {{"expressions", KS_PACKET_TENSOR, KS_PACKET_ANY, 0, -1}};
const ks_node_type ks__node_expr = {"face_expressions", 1,    1,    expr_in, expr_out, expr_create,
                                    expr_process,       NULL, NULL, NULL};

/* ---------------------------------------------------------------------------------------------
 * mask_smoother
 * ------------------------------------------------------------------------------------------- */

typedef struct mask_state {
    float ratio;
    float *prev;
    int32_t width_px, height_px;
    bool has_prev;
    const ks_allocator *alloc;
} mask_state;

static void mask_destroy(void *state, const ks_allocator *a) {
    mask_state *s = state;
    if (!s) return;
    ks__free(a, s->prev);
    ks__free(a, s);
}

static ks_status mask_create(const ks_node_init *init, void **state_out) {
    mask_state *s = ks__calloc(init->allocator, 1, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    s->alloc = init->allocator;
    ks_status st = opt_float(init, "ratio", 0.9f, 0.0f, 1.0f, &s->ratio);
    if (st) {
        ks__free(init->allocator, s);
        return st;
    }
    *state_out = s;
    return KS_STATUS_OK;
}

static void mask_reset(void *state) {
    ((mask_state *)state)->has_prev = false;
}

static ks_status mask_process(void *state, ks_node_ctx *ctx) {
    mask_state *s = state;
    const ks_packet *in = ks_node_input(ctx, 0);
    if (!in) {
        s->has_prev = false;
        return KS_STATUS_OK;
    }
    const ks_packet_mask *m = ks_packet_mask_view(in);
    if (!m || m->dtype != KS_DTYPE_F32 || m->width_px <= 0 || m->height_px <= 0)
        return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT, "input must be a non-empty f32 mask");
    size_t num_px = (size_t)m->width_px * (size_t)m->height_px;
    if (num_px > VN_MAX_MASK_PX)
        return ks_node_fail(ctx, KS_STATUS_LIMIT_EXCEEDED, "mask %dx%d is above %d pixels",
                            (int)m->width_px, (int)m->height_px, VN_MAX_MASK_PX);
    if (!s->prev || s->width_px != m->width_px || s->height_px != m->height_px) {
        ks__free(s->alloc, s->prev);
        s->prev = ks__calloc(s->alloc, num_px, sizeof(float));
        s->has_prev = false;
        s->width_px = s->prev ? m->width_px : 0;
        s->height_px = s->prev ? m->height_px : 0;
        if (!s->prev) return ks_node_fail(ctx, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    size_t stride = m->stride_bytes ? m->stride_bytes / sizeof(float) : (size_t)m->width_px;
    const float *src = m->data;
    /* Rows are smoothed straight into the history buffer, which then becomes the output. */
    for (int32_t y = 0; y < m->height_px; y++) {
        float *row = s->prev + (size_t)y * (size_t)m->width_px;
        ks__mask_smooth(src + (size_t)y * stride, s->has_prev ? row : NULL, row,
                        (size_t)m->width_px, s->ratio);
    }
    s->has_prev = true;
    ks_packet *out = NULL;
    ks_status st = ks_packet_create_mask(
        ks_node_allocator(ctx),
        &(ks_packet_mask){KS_DTYPE_F32, m->width_px, m->height_px, 0, s->prev}, &out);
    if (st) return ks_node_fail(ctx, st, "out of memory");
    return ks_node_output(ctx, 0, out);
}

static const ks_port mask_in[] = {{"mask", KS_PACKET_MASK, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1}};
static const ks_port mask_out[] = {{"mask", KS_PACKET_MASK, KS_PACKET_ANY, 0, -1}};
const ks_node_type ks__node_mask = {
    "mask_smoother", 1,    1,          mask_in,     mask_out, mask_create,
    mask_process,    NULL, mask_reset, mask_destroy};

/* ---------------------------------------------------------------------------------------------
 * face_iris_landmarks: 468 mesh points + the attention model's two iris tensors -> 478 points
 * ------------------------------------------------------------------------------------------- */

/* Eye contours of the face mesh (image-left eye first: the model's "left_iris" output belongs to
 * the eye on the image's left, i.e. the subject's right eye). The iris has no depth output of
 * its own; like MediaPipe it takes the mean depth of its eye's contour. */
static const uint16_t iris_eye_contours[2][16] = {
    {33, 7, 163, 144, 145, 153, 154, 155, 133, 246, 161, 160, 159, 158, 157, 173},
    {263, 249, 390, 373, 374, 380, 381, 382, 362, 466, 388, 387, 386, 385, 384, 398}};

#define IRIS_MESH_POINTS 468
#define IRIS_POINTS 5

typedef struct iris_state {
    int32_t input_width, input_height;
} iris_state;

static ks_status iris_create(const ks_node_init *init, void **state_out) {
    iris_state *s = ks__calloc(init->allocator, 1, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    ks_status st = opt_int(init, "input_width", 192, 1, 1 << 16, &s->input_width);
    if (!st) st = opt_int(init, "input_height", 192, 1, 1 << 16, &s->input_height);
    if (st) {
        ks__free(init->allocator, s);
        return st;
    }
    *state_out = s;
    return KS_STATUS_OK;
}

static ks_status iris_process(void *state, ks_node_ctx *ctx) {
    const iris_state *s = state;
    const ks_packet_landmarks *mesh = ks_packet_landmarks_view(ks_node_input(ctx, 0));
    if (!mesh || mesh->num_landmarks != IRIS_MESH_POINTS)
        return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT, "input 'mesh' must hold %d landmarks",
                            IRIS_MESH_POINTS);
    ks__landmark lm[IRIS_MESH_POINTS + 2 * IRIS_POINTS];
    memset(lm, 0, sizeof(lm));
    for (uint32_t i = 0; i < IRIS_MESH_POINTS; i++) {
        lm[i].x = mesh->landmarks[i].x;
        lm[i].y = mesh->landmarks[i].y;
        lm[i].z = mesh->landmarks[i].z;
        lm[i].visibility = mesh->landmarks[i].visibility;
        lm[i].presence = mesh->landmarks[i].presence;
    }
    for (uint32_t e = 0; e < 2; e++) {
        size_t n = 0;
        const float *raw = tensor_f32(ctx, 1 + e, &n);
        if (!raw || n < 2 * IRIS_POINTS)
            return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT,
                                "iris input %u must be an f32 tensor of >= %d values (has %zu)",
                                (unsigned)e, 2 * IRIS_POINTS, n);
        size_t d = n / IRIS_POINTS; /* values per point: 2 (x, y) or 3 */
        float z = 0.0f;
        for (int k = 0; k < 16; k++)
            z += lm[iris_eye_contours[e][k]].z;
        z /= 16.0f;
        for (int k = 0; k < IRIS_POINTS; k++) {
            ks__landmark *p = &lm[IRIS_MESH_POINTS + e * IRIS_POINTS + (uint32_t)k];
            p->x = raw[(size_t)k * d] / (float)s->input_width;
            p->y = raw[(size_t)k * d + 1] / (float)s->input_height;
            p->z = z;
        }
    }
    return emit_landmarks(ctx, 0, lm, IRIS_MESH_POINTS + 2 * IRIS_POINTS);
}

static const ks_port iris_in[] = {{"mesh", KS_PACKET_LANDMARKS, KS_PACKET_ANY, 0, -1},
                                  {"left_iris", KS_PACKET_TENSOR, KS_PACKET_ANY, 0, -1},
                                  {"right_iris", KS_PACKET_TENSOR, KS_PACKET_ANY, 0, -1}};
const ks_node_type ks__node_iris = {
    "face_iris_landmarks", 3,    1,    iris_in,      lm_out, iris_create,
    iris_process,          NULL, NULL, plain_destroy};
