/* Packets: one allocation each (header, then the 64-byte aligned payload), atomic reference
 * counts, immutable once published.
 *
 * One allocation per packet keeps the per-frame cost to one alloc/free pair per emitted packet
 * and makes the OOM paths trivial: either the packet exists whole or not at all. */
#include <string.h>

#include "pipeline_internal.h"

#define PACKET_HEADER_BYTES ((sizeof(ks_packet) + 63u) & ~(size_t)63u)
/* Payloads above this are refused as a named limit rather than attempted. */
#define PACKET_MAX_PAYLOAD_BYTES ((size_t)1 << (sizeof(size_t) > 4 ? 32 : 29))

const char *ks_packet_type_string(ks_packet_type type) {
    switch (type) {
    case KS_PACKET_ANY:
        return "any";
    case KS_PACKET_IMAGE:
        return "image";
    case KS_PACKET_TENSOR:
        return "tensor";
    case KS_PACKET_DETECTIONS:
        return "detections";
    case KS_PACKET_LANDMARKS:
        return "landmarks";
    case KS_PACKET_RECTS:
        return "rects";
    case KS_PACKET_MASK:
        return "mask";
    case KS_PACKET_MATRIX:
        return "matrix";
    case KS_PACKET_INT:
        return "int";
    case KS_PACKET_FLOAT:
        return "float";
    case KS_PACKET_BOOL:
        return "bool";
    case KS_PACKET_STRING:
        return "string";
    case KS_PACKET_LIST:
        return "list";
    default:
        return "invalid";
    }
}

uint32_t ks_pixel_layout_bytes(ks_pixel_layout layout) {
    switch (layout) {
    case KS_PIXEL_GRAY8:
        return 1;
    case KS_PIXEL_RGB8:
    case KS_PIXEL_BGR8:
        return 3;
    case KS_PIXEL_RGBA8:
    case KS_PIXEL_BGRA8:
        return 4;
    default: /* KS_PIXEL_EXTERNAL too: its pixels are not in the packet */
        return 0;
    }
}

static bool mul_ok(size_t a, size_t b, size_t *out) {
    if (a && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

static size_t align64(size_t n) {
    return (n + 63u) & ~(size_t)63u;
}

/* extra_bytes follow the payload (names); both are zeroed unless zero_payload is false (then
 * the header, the payload's alignment pad and the extra bytes are: the caller writes every
 * payload byte, so nothing is written twice). */
static ks_status packet_new_ex(const ks_allocator *allocator, ks_packet_type type,
                               size_t payload_bytes, size_t extra_bytes, bool zero_payload,
                               ks_packet **out) {
    if (payload_bytes > PACKET_MAX_PAYLOAD_BYTES || extra_bytes > PACKET_MAX_PAYLOAD_BYTES) {
        ks__object_error(NULL, "%s packet of %zu bytes exceeds the packet size limit",
                         ks_packet_type_string(type), payload_bytes);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    size_t total = PACKET_HEADER_BYTES + align64(payload_bytes) + extra_bytes;
    ks_allocator a = ks__allocator_or_default(allocator);
    ks_packet *p = ks__alloc_aligned(&a, total, 64);
    if (!p) {
        ks__object_error(NULL, "out of memory allocating a %zu-byte %s packet", total,
                         ks_packet_type_string(type));
        return KS_STATUS_OUT_OF_MEMORY;
    }
    if (zero_payload) {
        memset(p, 0, total);
    } else {
        memset(p, 0, PACKET_HEADER_BYTES);
        memset((uint8_t *)p + PACKET_HEADER_BYTES + payload_bytes, 0,
               align64(payload_bytes) - payload_bytes + extra_bytes);
    }
    atomic_init(&p->refcount, 1u);
    p->type = type;
    p->alloc = a;
    p->payload_bytes = payload_bytes;
    p->payload = payload_bytes ? (uint8_t *)p + PACKET_HEADER_BYTES : NULL;
    *out = p;
    return KS_STATUS_OK;
}

static ks_status packet_new(const ks_allocator *allocator, ks_packet_type type,
                            size_t payload_bytes, size_t extra_bytes, ks_packet **out) {
    return packet_new_ex(allocator, type, payload_bytes, extra_bytes, true, out);
}

static uint8_t *packet_extra(ks_packet *p) {
    return (uint8_t *)p + PACKET_HEADER_BYTES + align64(p->payload_bytes);
}

static ks_status bad_arg(const char *fn, const char *what) {
    ks__object_error(NULL, "%s: %s", fn, what);
    return KS_STATUS_INVALID_ARGUMENT;
}

ks_status ks_packet_create_image(const ks_allocator *allocator, const ks_packet_image *image,
                                 ks_packet **packet_out) {
    if (!image || !packet_out) return bad_arg("ks_packet_create_image", "NULL argument");
    uint32_t bpp = ks_pixel_layout_bytes(image->format);
    if (!bpp) return bad_arg("ks_packet_create_image", "unknown pixel format");
    if (image->width_px <= 0 || image->height_px <= 0) {
        ks__object_error(NULL, "ks_packet_create_image: size %dx%d must be positive",
                         (int)image->width_px, (int)image->height_px);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    size_t row = 0, total = 0;
    if (!mul_ok((size_t)image->width_px, bpp, &row) ||
        !mul_ok(row, (size_t)image->height_px, &total))
        return bad_arg("ks_packet_create_image", "image size overflows");
    size_t src_stride = image->stride_bytes ? image->stride_bytes : row;
    if (src_stride < row) {
        ks__object_error(NULL, "ks_packet_create_image: stride %zu bytes < row of %zu bytes",
                         src_stride, row);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks_packet *p = NULL;
    ks_status st = packet_new_ex(allocator, KS_PACKET_IMAGE, total, 0, !image->data, &p);
    if (st) return st;
    if (image->data)
        for (int32_t y = 0; y < image->height_px; y++)
            memcpy((uint8_t *)p->payload + (size_t)y * row, image->data + (size_t)y * src_stride,
                   row);
    p->u.image = *image;
    p->u.image.stride_bytes = row;
    p->u.image.data = p->payload;
    *packet_out = p;
    return KS_STATUS_OK;
}

ks_status ks_packet_create_image_view(const ks_allocator *allocator, const ks_image *frame,
                                      ks_rotation rotation, int32_t mirror,
                                      ks_packet **packet_out) {
    if (!frame || !packet_out) return bad_arg("ks_packet_create_image_view", "NULL argument");
    if ((unsigned)rotation >= KS_ROTATION_COUNT) {
        ks__object_error(NULL, "ks_packet_create_image_view: rotation %d is not a ks_rotation",
                         (int)rotation);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks_status st = ks_image_check(frame);
    if (st) return st; /* the message names ks_image_check and the cause */
    ks_packet *p = NULL;
    st = packet_new(allocator, KS_PACKET_IMAGE, 0, 0, &p);
    if (st) return st;
    bool swap = rotation == KS_ROTATION_90 || rotation == KS_ROTATION_270;
    p->u.image = (ks_packet_image){.format = KS_PIXEL_EXTERNAL,
                                   .width_px = swap ? frame->height_px : frame->width_px,
                                   .height_px = swap ? frame->width_px : frame->height_px};
    p->frame = *frame;
    p->frame_rotation = rotation;
    p->frame_mirror = mirror != 0;
    *packet_out = p;
    return KS_STATUS_OK;
}

bool ks__packet_is_view(const ks_packet *p) {
    return p && p->type == KS_PACKET_IMAGE && p->u.image.format == KS_PIXEL_EXTERNAL;
}

static ks_pixel_format layout_format(ks_pixel_layout f) {
    switch (f) {
    case KS_PIXEL_GRAY8:
        return KS_PIXEL_FORMAT_GRAY;
    case KS_PIXEL_RGB8:
        return KS_PIXEL_FORMAT_RGB;
    case KS_PIXEL_RGBA8:
        return KS_PIXEL_FORMAT_RGBA;
    case KS_PIXEL_BGR8:
        return KS_PIXEL_FORMAT_BGR;
    case KS_PIXEL_BGRA8:
        return KS_PIXEL_FORMAT_BGRA;
    default:
        return KS_PIXEL_FORMAT_INVALID;
    }
}

ks_status ks_packet_image_source(const ks_packet *packet, ks_image *source_out,
                                 ks_rotation *rotation_out, int32_t *mirror_out) {
    if (!packet || packet->type != KS_PACKET_IMAGE || !source_out || !rotation_out || !mirror_out)
        return bad_arg("ks_packet_image_source", "not an image packet, or a NULL output");
    if (ks__packet_is_view(packet)) {
        *source_out = packet->frame;
        *rotation_out = packet->frame_rotation;
        *mirror_out = packet->frame_mirror;
        return KS_STATUS_OK;
    }
    const ks_packet_image *im = &packet->u.image;
    if (im->stride_bytes > (size_t)INT32_MAX)
        return bad_arg("ks_packet_image_source", "row stride above 2^31 bytes");
    *source_out = (ks_image){.format = layout_format(im->format),
                             .width_px = im->width_px,
                             .height_px = im->height_px,
                             .planes = {im->data, NULL, NULL},
                             .stride_bytes = {(int32_t)im->stride_bytes, 0, 0}};
    *rotation_out = KS_ROTATION_0;
    *mirror_out = 0;
    return KS_STATUS_OK;
}

typedef enum tensor_mode { TENSOR_ZERO_OR_COPY, TENSOR_UNINIT, TENSOR_VIEW } tensor_mode;

static ks_status create_tensor(const char *fn, const ks_allocator *allocator,
                               const ks_tensor_info *info, const void *data, tensor_mode mode,
                               void *view, size_t view_bytes, ks_packet **packet_out) {
    if (!info || !packet_out) return bad_arg(fn, "NULL argument");
    size_t esize = ks_dtype_size(info->dtype);
    if (!esize) return bad_arg(fn, "unknown dtype");
    if (info->shape.rank < 0 || info->shape.rank > KS_MAX_RANK) {
        ks__object_error(NULL, "%s: rank %d outside 0..%d", fn, (int)info->shape.rank, KS_MAX_RANK);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    size_t total = esize;
    for (int32_t i = 0; i < info->shape.rank; i++) {
        int64_t d = info->shape.dims[i];
        if (d < 0 || (uint64_t)d > SIZE_MAX || !mul_ok(total, (size_t)d, &total)) {
            ks__object_error(NULL, "%s: dim %d is %lld", fn, (int)i, (long long)d);
            return KS_STATUS_INVALID_SHAPE;
        }
    }
    if (mode == TENSOR_VIEW && (!view || view_bytes != total)) {
        ks__object_error(NULL, "%s: view of %zu bytes at %p for a %zu-byte tensor", fn, view_bytes,
                         view, total);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    size_t name_bytes = info->name ? strlen(info->name) + 1 : 0;
    ks_packet *p = NULL;
    ks_status st = packet_new_ex(allocator, KS_PACKET_TENSOR, mode == TENSOR_VIEW ? 0 : total,
                                 name_bytes, mode == TENSOR_ZERO_OR_COPY && !(data && total), &p);
    if (st) return st;
    if (mode == TENSOR_ZERO_OR_COPY && data && total) memcpy(p->payload, data, total);
    p->u.tensor.info = *info;
    if (info->name) {
        memcpy(packet_extra(p), info->name, name_bytes);
        p->u.tensor.info.name = (const char *)packet_extra(p);
    }
    p->u.tensor.data = mode == TENSOR_VIEW ? view : p->payload;
    p->u.tensor.size_bytes = total;
    *packet_out = p;
    return KS_STATUS_OK;
}

ks_status ks_packet_create_tensor(const ks_allocator *allocator, const ks_tensor_info *info,
                                  const void *data, ks_packet **packet_out) {
    return create_tensor("ks_packet_create_tensor", allocator, info, data, TENSOR_ZERO_OR_COPY,
                         NULL, 0, packet_out);
}

ks_status ks__packet_create_tensor_uninit(const ks_allocator *allocator, const ks_tensor_info *info,
                                          ks_packet **packet_out) {
    return create_tensor("ks__packet_create_tensor_uninit", allocator, info, NULL, TENSOR_UNINIT,
                         NULL, 0, packet_out);
}

ks_status ks__packet_create_tensor_view(const ks_allocator *allocator, const ks_tensor_info *info,
                                        void *data, size_t size_bytes, ks_packet **packet_out) {
    return create_tensor("ks__packet_create_tensor_view", allocator, info, NULL, TENSOR_VIEW, data,
                         size_bytes, packet_out);
}

ks_status ks_packet_create_detections(const ks_allocator *allocator, const ks_packet_detections *d,
                                      ks_packet **packet_out) {
    if (!d || !packet_out) return bad_arg("ks_packet_create_detections", "NULL argument");
    size_t n = d->num_detections, k = d->num_keypoints;
    size_t kp = 0, floats = 0;
    if (!mul_ok(n, k, &kp) || !mul_ok(kp, 2, &kp) || n > SIZE_MAX / 64 || kp > SIZE_MAX / 8)
        return bad_arg("ks_packet_create_detections", "size overflows");
    floats = n * 4 + n + kp;
    size_t total = floats * sizeof(float) + n * sizeof(int32_t);
    if (n && (!d->boxes || !d->scores))
        return bad_arg("ks_packet_create_detections", "boxes and scores must not be NULL");
    if (kp && !d->keypoints)
        return bad_arg("ks_packet_create_detections", "keypoints must not be NULL");
    ks_packet *p = NULL;
    ks_status st = packet_new(allocator, KS_PACKET_DETECTIONS, total, 0, &p);
    if (st) return st;
    /* an empty list has no payload: no pointer arithmetic on NULL */
    float *boxes = total ? p->payload : NULL;
    float *scores = boxes ? boxes + n * 4 : NULL;
    float *kps = scores ? scores + n : NULL;
    int32_t *ids = kps ? (int32_t *)(kps + kp) : NULL;
    if (n) {
        memcpy(boxes, d->boxes, n * 4 * sizeof(float));
        memcpy(scores, d->scores, n * sizeof(float));
        if (d->class_ids) memcpy(ids, d->class_ids, n * sizeof(int32_t));
    }
    if (kp) memcpy(kps, d->keypoints, kp * sizeof(float));
    p->u.detections = (ks_packet_detections){.num_detections = d->num_detections,
                                             .num_keypoints = d->num_keypoints,
                                             .boxes = boxes,
                                             .scores = scores,
                                             .class_ids = ids,
                                             .keypoints = kp ? kps : NULL};
    *packet_out = p;
    return KS_STATUS_OK;
}

/* A packet of type `type` whose payload is a copy of num_items items of item_bytes each. */
static ks_status create_array(const ks_allocator *allocator, ks_packet_type type, const char *fn,
                              const void *items, uint32_t num_items, size_t item_bytes,
                              ks_packet **packet_out) {
    if (!packet_out || (num_items && !items)) return bad_arg(fn, "NULL argument");
    size_t total = 0;
    if (!mul_ok(num_items, item_bytes, &total)) return bad_arg(fn, "size overflows");
    ks_status st = packet_new_ex(allocator, type, total, 0, total == 0, packet_out);
    if (st) return st;
    if (total) memcpy((*packet_out)->payload, items, total);
    return KS_STATUS_OK;
}

ks_status ks_packet_create_landmarks(const ks_allocator *allocator, const ks_packet_landmarks *l,
                                     ks_packet **packet_out) {
    if (!l) return bad_arg("ks_packet_create_landmarks", "NULL argument");
    ks_packet *p = NULL;
    ks_status st = create_array(allocator, KS_PACKET_LANDMARKS, "ks_packet_create_landmarks",
                                l->landmarks, l->num_landmarks, sizeof(ks_landmark), &p);
    if (st) return st;
    p->u.landmarks.num_landmarks = l->num_landmarks;
    p->u.landmarks.landmarks = p->payload;
    *packet_out = p;
    return KS_STATUS_OK;
}

ks_status ks_packet_create_rects(const ks_allocator *allocator, const ks_packet_rects *r,
                                 ks_packet **packet_out) {
    if (!r) return bad_arg("ks_packet_create_rects", "NULL argument");
    ks_packet *p = NULL;
    ks_status st = create_array(allocator, KS_PACKET_RECTS, "ks_packet_create_rects", r->rects,
                                r->num_rects, sizeof(ks_rect), &p);
    if (st) return st;
    p->u.rects.num_rects = r->num_rects;
    p->u.rects.rects = p->payload;
    *packet_out = p;
    return KS_STATUS_OK;
}

ks_status ks_packet_create_mask(const ks_allocator *allocator, const ks_packet_mask *m,
                                ks_packet **packet_out) {
    if (!m || !packet_out) return bad_arg("ks_packet_create_mask", "NULL argument");
    if (m->dtype != KS_DTYPE_F32 && m->dtype != KS_DTYPE_U8)
        return bad_arg("ks_packet_create_mask", "dtype must be f32 or u8");
    if (m->width_px <= 0 || m->height_px <= 0) {
        ks__object_error(NULL, "ks_packet_create_mask: size %dx%d must be positive",
                         (int)m->width_px, (int)m->height_px);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    size_t row = 0, total = 0;
    if (!mul_ok((size_t)m->width_px, ks_dtype_size(m->dtype), &row) ||
        !mul_ok(row, (size_t)m->height_px, &total))
        return bad_arg("ks_packet_create_mask", "size overflows");
    size_t src_stride = m->stride_bytes ? m->stride_bytes : row;
    if (src_stride < row) return bad_arg("ks_packet_create_mask", "stride shorter than a row");
    ks_packet *p = NULL;
    ks_status st = packet_new(allocator, KS_PACKET_MASK, total, 0, &p);
    if (st) return st;
    if (m->data)
        for (int32_t y = 0; y < m->height_px; y++)
            memcpy((uint8_t *)p->payload + (size_t)y * row,
                   (const uint8_t *)m->data + (size_t)y * src_stride, row);
    p->u.mask = *m;
    p->u.mask.stride_bytes = row;
    p->u.mask.data = p->payload;
    *packet_out = p;
    return KS_STATUS_OK;
}

ks_status ks_packet_create_matrix(const ks_allocator *allocator, const float m[16],
                                  ks_packet **packet_out) {
    if (!m || !packet_out) return bad_arg("ks_packet_create_matrix", "NULL argument");
    ks_packet *p = NULL;
    ks_status st = packet_new(allocator, KS_PACKET_MATRIX, 0, 0, &p);
    if (st) return st;
    memcpy(p->u.matrix, m, sizeof(p->u.matrix));
    p->payload = p->u.matrix;
    p->payload_bytes = sizeof(p->u.matrix);
    *packet_out = p;
    return KS_STATUS_OK;
}

ks_status ks_packet_create_int(const ks_allocator *allocator, int64_t value,
                               ks_packet **packet_out) {
    if (!packet_out) return bad_arg("ks_packet_create_int", "NULL argument");
    ks_packet *p = NULL;
    ks_status st = packet_new(allocator, KS_PACKET_INT, 0, 0, &p);
    if (st) return st;
    p->u.i = value;
    *packet_out = p;
    return KS_STATUS_OK;
}

ks_status ks_packet_create_float(const ks_allocator *allocator, double value,
                                 ks_packet **packet_out) {
    if (!packet_out) return bad_arg("ks_packet_create_float", "NULL argument");
    ks_packet *p = NULL;
    ks_status st = packet_new(allocator, KS_PACKET_FLOAT, 0, 0, &p);
    if (st) return st;
    p->u.f = value;
    *packet_out = p;
    return KS_STATUS_OK;
}

ks_status ks_packet_create_bool(const ks_allocator *allocator, int value, ks_packet **packet_out) {
    if (!packet_out) return bad_arg("ks_packet_create_bool", "NULL argument");
    ks_packet *p = NULL;
    ks_status st = packet_new(allocator, KS_PACKET_BOOL, 0, 0, &p);
    if (st) return st;
    p->u.b = value != 0;
    *packet_out = p;
    return KS_STATUS_OK;
}

ks_status ks_packet_create_string(const ks_allocator *allocator, const char *value,
                                  ks_packet **packet_out) {
    if (!value || !packet_out) return bad_arg("ks_packet_create_string", "NULL argument");
    size_t n = strlen(value) + 1;
    ks_packet *p = NULL;
    ks_status st = packet_new(allocator, KS_PACKET_STRING, n, 0, &p);
    if (st) return st;
    memcpy(p->payload, value, n);
    p->u.s = p->payload;
    *packet_out = p;
    return KS_STATUS_OK;
}

ks_status ks_packet_create_list(const ks_allocator *allocator, ks_packet *const *items,
                                uint32_t num_items, ks_packet **packet_out) {
    if (!packet_out || (num_items && !items))
        return bad_arg("ks_packet_create_list", "NULL argument");
    for (uint32_t i = 0; i < num_items; i++)
        if (!items[i]) {
            ks__object_error(NULL, "ks_packet_create_list: item %u is NULL", (unsigned)i);
            return KS_STATUS_INVALID_ARGUMENT;
        }
    size_t total = 0;
    if (!mul_ok(num_items, sizeof(ks_packet *), &total))
        return bad_arg("ks_packet_create_list", "size overflows");
    ks_packet *p = NULL;
    ks_status st = packet_new(allocator, KS_PACKET_LIST, total, 0, &p);
    if (st) return st;
    p->u.list.num_items = num_items;
    p->u.list.items = p->payload;
    for (uint32_t i = 0; i < num_items; i++) {
        ks_packet_publish(items[i]);
        p->u.list.items[i] = ks_packet_retain(items[i]);
    }
    /* Item pointers are not user data: a list's payload is never handed out as writable. */
    p->payload_bytes = 0;
    *packet_out = p;
    return KS_STATUS_OK;
}

ks_packet *ks_packet_retain(const ks_packet *packet) {
    ks_packet *p = (ks_packet *)packet;
    if (p) atomic_fetch_add_explicit(&p->refcount, 1u, memory_order_relaxed);
    return p;
}

void ks_packet_release(const ks_packet *packet) {
    ks_packet *p = (ks_packet *)packet;
    if (!p) return;
    /* acq_rel so that the thread freeing the packet sees every other thread's reads finished. */
    if (atomic_fetch_sub_explicit(&p->refcount, 1u, memory_order_acq_rel) != 1u) return;
    if (p->type == KS_PACKET_LIST)
        for (uint32_t i = 0; i < p->u.list.num_items; i++)
            ks_packet_release(p->u.list.items[i]);
    ks_allocator a = p->alloc;
    ks__free(&a, p);
}

uint32_t ks_packet_refcount(const ks_packet *packet) {
    return packet ? atomic_load(&((ks_packet *)packet)->refcount) : 0u;
}

void ks_packet_publish(ks_packet *packet) {
    if (packet) packet->published = true;
}

void *ks_packet_mutable_data(ks_packet *packet, size_t *size_bytes_out) {
    if (!packet || packet->published || !packet->payload_bytes) {
        if (size_bytes_out) *size_bytes_out = 0;
        return NULL;
    }
    if (size_bytes_out) *size_bytes_out = packet->payload_bytes;
    return packet->payload;
}

void ks__packet_stamp(ks_packet *p, int64_t timestamp_us) {
    if (p && !p->published) p->timestamp_us = timestamp_us;
}

ks_packet_type ks_packet_get_type(const ks_packet *packet) {
    return packet ? packet->type : KS_PACKET_ANY;
}

int64_t ks_packet_timestamp_us(const ks_packet *packet) {
    return packet ? packet->timestamp_us : 0;
}

#define VIEW(fn, T, tag, field)                                                                    \
    const T *fn(const ks_packet *packet) {                                                         \
        return packet && packet->type == tag ? &packet->u.field : NULL;                            \
    }
VIEW(ks_packet_image_view, ks_packet_image, KS_PACKET_IMAGE, image)
VIEW(ks_packet_tensor, ks_tensor, KS_PACKET_TENSOR, tensor)
VIEW(ks_packet_detections_view, ks_packet_detections, KS_PACKET_DETECTIONS, detections)
VIEW(ks_packet_landmarks_view, ks_packet_landmarks, KS_PACKET_LANDMARKS, landmarks)
VIEW(ks_packet_rects_view, ks_packet_rects, KS_PACKET_RECTS, rects)
VIEW(ks_packet_mask_view, ks_packet_mask, KS_PACKET_MASK, mask)
#undef VIEW

const float *ks_packet_matrix(const ks_packet *packet) {
    return packet && packet->type == KS_PACKET_MATRIX ? packet->u.matrix : NULL;
}

int64_t ks_packet_int(const ks_packet *packet) {
    return packet && packet->type == KS_PACKET_INT ? packet->u.i : 0;
}

double ks_packet_float(const ks_packet *packet) {
    return packet && packet->type == KS_PACKET_FLOAT ? packet->u.f : 0.0;
}

int ks_packet_bool(const ks_packet *packet) {
    return packet && packet->type == KS_PACKET_BOOL ? packet->u.b : 0;
}

const char *ks_packet_string(const ks_packet *packet) {
    return packet && packet->type == KS_PACKET_STRING ? packet->u.s : NULL;
}

uint32_t ks_packet_list_size(const ks_packet *packet) {
    return packet && packet->type == KS_PACKET_LIST ? packet->u.list.num_items : 0;
}

const ks_packet *ks_packet_list_item(const ks_packet *packet, uint32_t index) {
    if (!packet || packet->type != KS_PACKET_LIST || index >= packet->u.list.num_items) return NULL;
    return packet->u.list.items[index];
}
