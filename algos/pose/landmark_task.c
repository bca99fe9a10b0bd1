/* Shared plumbing of the pose and hand landmarker tasks (see landmark_task.h). */
#include "landmark_task.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define LMTASK_RESULT_MAGIC UINT64_C(0x4b534c4d52455331) /* "KSLMRES1" */

ks_status ks__lmtask_check_options(const ks_task_options *opt, int32_t max_results_cap, char *err,
                                   size_t err_cap) {
    if ((unsigned)opt->mode >= KS_MODE_COUNT) {
        snprintf(err, err_cap, "task.mode %d is not a ks_running_mode", (int)opt->mode);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if ((unsigned)opt->rotation >= KS_ROTATION_COUNT) {
        snprintf(err, err_cap, "task.rotation %d is not a ks_rotation", (int)opt->rotation);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (opt->num_threads < 0 || opt->num_threads > 256) {
        snprintf(err, err_cap, "task.num_threads %d is outside [0, 256]", (int)opt->num_threads);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (!(opt->min_score >= 0.0f && opt->min_score <= 1.0f)) {
        snprintf(err, err_cap, "task.min_score %g is outside [0, 1]", (double)opt->min_score);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (opt->max_results < 0 || opt->max_results > max_results_cap) {
        snprintf(err, err_cap, "task.max_results %d is outside [0, %d]", (int)opt->max_results,
                 (int)max_results_cap);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (!isfinite(opt->smoothing) || !isfinite(opt->roi.x) || !isfinite(opt->roi.y) ||
        !isfinite(opt->roi.w) || !isfinite(opt->roi.h) || opt->roi.w < 0.0f ||
        (opt->roi.w > 0.0f && !(opt->roi.h > 0.0f))) {
        snprintf(err, err_cap, "task.smoothing or task.roi (%g, %g, %g x %g) is not valid",
                 (double)opt->roi.x, (double)opt->roi.y, (double)opt->roi.w, (double)opt->roi.h);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    return KS_STATUS_OK;
}

ks_status ks__lmtask_open_pipeline(const ks_task_options *opt, const char *default_name,
                                   const ks_allocator *alloc, ks_bundle **bundle_out,
                                   ks_pipeline **pipeline_out, char *err, size_t err_cap) {
    char path[1024];
    int len;
    if (opt->model_path && opt->model_path[0]) {
        len = snprintf(path, sizeof(path), "%s", opt->model_path);
    } else {
        const char *dir = ks_models_dir();
        len = snprintf(path, sizeof(path), "%s/%s", dir && dir[0] ? dir : ".", default_name);
    }
    if (len < 0 || (size_t)len >= sizeof(path)) {
        snprintf(err, err_cap, "bundle path is longer than %zu bytes", sizeof(path) - 1);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks_bundle_desc bd = {.allocator = alloc};
    ks_status st = ks_bundle_open_file(path, &bd, bundle_out);
    if (st) {
        snprintf(err, err_cap, "%s bundle '%s': %s%s",
                 opt->model_path && opt->model_path[0] ? "" : "default", path, ks_last_error(NULL),
                 opt->model_path && opt->model_path[0]
                     ? ""
                     : " (build the 'ks_bundles' target, set KESTREL_MODELS_DIR, or pass a .ksb "
                       "as task.model_path)");
        return st;
    }
    ks_pipeline_desc pd = {.allocator = alloc, .num_threads = opt->num_threads};
    st = ks_pipeline_create_bundle(*bundle_out, &pd, pipeline_out);
    if (st) {
        snprintf(err, err_cap, "bundle '%s': %s", path, ks_last_error(NULL));
        ks_bundle_destroy(*bundle_out);
        *bundle_out = NULL;
    }
    return st;
}

ks_status ks__lmtask_error(ks__object *obj, ks_status status, const char *fmt, ...) {
    char msg[KS_ERROR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ks__object_error(obj, "%s", msg);
    return status;
}

ks_status ks__lmtask_upright_image(const ks_allocator *alloc, const ks_image *image,
                                   ks_rotation rotation, int32_t mirror, ks_packet **out,
                                   int32_t *width_out, int32_t *height_out) {
    if (image->width_px <= 0 || image->height_px <= 0 || image->width_px > KS_IMAGE_MAX_DIM_PX ||
        image->height_px > KS_IMAGE_MAX_DIM_PX) {
        ks__object_error(NULL, "image size %dx%d is outside 1..%d", (int)image->width_px,
                         (int)image->height_px, KS_IMAGE_MAX_DIM_PX);
        return image->width_px > 0 && image->height_px > 0 ? KS_STATUS_LIMIT_EXCEEDED
                                                           : KS_STATUS_INVALID_ARGUMENT;
    }
    if (!image->planes[0]) {
        ks__object_error(NULL, "image plane 0 is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    bool swap = rotation == KS_ROTATION_90 || rotation == KS_ROTATION_270;
    int32_t w = swap ? image->height_px : image->width_px;
    int32_t h = swap ? image->width_px : image->height_px;
    ks_packet *p = NULL;
    ks_status st = ks_packet_create_image(
        alloc,
        &(ks_packet_image){.format = KS_PIXEL_RGB8, .width_px = w, .height_px = h, .data = NULL},
        &p);
    if (st) {
        ks__object_error(NULL, "out of memory for a %dx%d RGB image", (int)w, (int)h);
        return st;
    }
    ks_tensor t = {.info = {.dtype = KS_DTYPE_U8}};
    t.info.shape.rank = 3;
    t.info.shape.dims[0] = h;
    t.info.shape.dims[1] = w;
    t.info.shape.dims[2] = 3;
    t.data = ks_packet_mutable_data(p, &t.size_bytes);
    /* Identity matrix in oriented coordinates: same size, pixel centres on pixel centres. */
    ks_image_to_tensor_desc d = {.m = {1, 0, 0, 0, 1, 0},
                                 .rotation = rotation,
                                 .mirror = mirror,
                                 .interp = KS_INTERP_NEAREST,
                                 .border = KS_BORDER_REPLICATE};
    st = ks_image_to_tensor(image, &d, &t);
    if (st) {
        ks_packet_release(p);
        return st; /* message already in ks_last_error(NULL) */
    }
    *out = p;
    *width_out = w;
    *height_out = h;
    return KS_STATUS_OK;
}

void ks__lmtask_detection_transform(ks__detection *d, const float m[16], float offset) {
    float xs[2] = {d->xmin + offset, d->xmax + offset},
          ys[2] = {d->ymin + offset, d->ymax + offset};
    float x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
    for (int k = 0; k < 4; k++) {
        float u = xs[k & 1], v = ys[k >> 1];
        float x = m[0] * u + m[1] * v + m[3], y = m[4] * u + m[5] * v + m[7];
        x0 = fminf(x0, x), y0 = fminf(y0, y), x1 = fmaxf(x1, x), y1 = fmaxf(y1, y);
    }
    d->xmin = x0, d->ymin = y0, d->xmax = x1, d->ymax = y1;
    for (uint32_t k = 0; k < d->num_keypoints && k < KS__MAX_KEYPOINTS; k++) {
        float u = d->keypoints[k].x + offset, v = d->keypoints[k].y + offset;
        d->keypoints[k].x = m[0] * u + m[1] * v + m[3];
        d->keypoints[k].y = m[4] * u + m[5] * v + m[7];
    }
}

static void rect_bounds(const ks__rect *r, int32_t iw, int32_t ih, float b[4]) {
    float c = fabsf(cosf(r->rotation_rad)), s = fabsf(sinf(r->rotation_rad));
    float w = r->width * (float)iw, h = r->height * (float)ih;
    float hw = 0.5f * (c * w + s * h), hh = 0.5f * (s * w + c * h);
    float cx = r->x_center * (float)iw, cy = r->y_center * (float)ih;
    b[0] = cx - hw, b[1] = cy - hh, b[2] = cx + hw, b[3] = cy + hh;
}

float ks__lmtask_rect_iou(const ks__rect *a, const ks__rect *b, int32_t image_width,
                          int32_t image_height) {
    float p[4], q[4];
    rect_bounds(a, image_width, image_height, p);
    rect_bounds(b, image_width, image_height, q);
    float iw = fminf(p[2], q[2]) - fmaxf(p[0], q[0]);
    float ih = fminf(p[3], q[3]) - fmaxf(p[1], q[1]);
    if (!(iw > 0.0f) || !(ih > 0.0f)) return 0.0f;
    float inter = iw * ih;
    float uni = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter;
    return uni > 0.0f ? inter / uni : 0.0f;
}

uint8_t *ks__lmtask_result_alloc(const ks_allocator *alloc, size_t size_bytes) {
    uint8_t *block = ks__alloc_aligned(alloc, size_bytes, 64);
    if (!block) return NULL;
    memset(block, 0, size_bytes);
    ks__lmtask_result_header *h = (ks__lmtask_result_header *)block;
    h->alloc = *alloc;
    h->magic = LMTASK_RESULT_MAGIC;
    return block;
}

void ks__lmtask_result_free(void *result) {
    if (!result) return;
    uint8_t *block = (uint8_t *)result - sizeof(ks__lmtask_result_header);
    ks__lmtask_result_header *h = (ks__lmtask_result_header *)block;
    if (h->magic != LMTASK_RESULT_MAGIC) return; /* not ours: leak rather than corrupt */
    h->magic = 0;
    ks_allocator a = h->alloc;
    ks__free(&a, block);
}

ks_rect ks__lmtask_mp_detect_rect(const ks_rect *area, int32_t image_width, int32_t image_height,
                                  int32_t input_size) {
    float w_px = area->width * (float)image_width, h_px = area->height * (float)image_height;
    float s = (w_px > h_px ? w_px : h_px) / (float)input_size;
    float d = 0.5f - 0.5f * s;
    return (ks_rect){area->x_center + d / (float)image_width,
                     area->y_center + d / (float)image_height, area->width, area->height, 0.0f};
}

ks_rect ks__lmtask_mp_crop_rect(const ks__rect *roi, int32_t image_width, int32_t image_height,
                                int32_t input_size) {
    float c = cosf(roi->rotation_rad), s = sinf(roi->rotation_rad);
    float sx = roi->width * (float)image_width / (float)input_size;
    float sy = roi->height * (float)image_height / (float)input_size;
    float dx = -0.5f * (c * sx - s * sy), dy = -0.5f * (s * sx + c * sy);
    return (ks_rect){roi->x_center + dx / (float)image_width,
                     roi->y_center + dy / (float)image_height, roi->width, roi->height,
                     roi->rotation_rad};
}

void ks__lmtask_mp_project(const float m[16], int32_t input_size, float *x, float *y) {
    float u = *x + 0.5f / (float)input_size, v = *y + 0.5f / (float)input_size;
    *x = m[0] * u + m[1] * v + m[3];
    *y = m[4] * u + m[5] * v + m[7];
}
