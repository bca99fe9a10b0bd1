/* Landmark building blocks: see landmarks.h. Formulas mirror MediaPipe's calculators so ROIs
 * and projected landmarks match its graphs; docs/vision-blocks.md lists them. */
#include "landmarks.h"

#include <math.h>
#include <string.h>

#include "vision_util.h"

#define MAX_LANDMARKS 100000
#define MAX_DIMS 64
#define MAX_IMAGE_SIDE_PX 65536

static float deg_to_rad(float deg) {
    return deg * (float)(KS__PI / 180.0);
}

static float activate(ks__activation a, float v) {
    return a == KS__ACTIVATION_SIGMOID ? ks__sigmoid(v) : v;
}

ks_status ks__tensors_to_landmarks(const ks__landmarks_decode_options *opt, const float *raw,
                                   size_t raw_count, ks__landmark *out, size_t cap, char *err,
                                   size_t err_cap) {
    if (!opt || !raw || !out)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT, "landmarks: NULL");
    if (opt->num_landmarks <= 0 || opt->num_landmarks > MAX_LANDMARKS)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "landmarks: num_landmarks %d out of range [1, %d]",
                               (int)opt->num_landmarks, MAX_LANDMARKS);
    if (opt->input_width <= 0 || opt->input_height <= 0)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "landmarks: input size %dx%d must be positive",
                               (int)opt->input_width, (int)opt->input_height);
    if ((unsigned)opt->visibility_activation >= KS__ACTIVATION_COUNT ||
        (unsigned)opt->presence_activation >= KS__ACTIVATION_COUNT)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "landmarks: unknown activation");
    size_t n = (size_t)opt->num_landmarks;
    if (cap < n)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "landmarks: output capacity %zu < %zu landmarks", cap, n);
    size_t dims = raw_count / n;
    if (raw_count % n != 0 || dims < 2 || dims > MAX_DIMS)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_SHAPE,
                               "landmarks: tensor has %zu values, not %zu landmarks x 2..%d",
                               raw_count, n, MAX_DIMS);
    float norm_z = opt->normalize_z == 0.0f ? 1.0f : opt->normalize_z;
    float w = (float)opt->input_width, h = (float)opt->input_height;
    if (dims == 3 && !opt->flip_horizontally && !opt->flip_vertically) {
        /* The face mesh's form (x, y, z, no flips): the same divisions in a loop without
         * branches, which the compiler vectorizes (a frame's 478 points: ~2 -> ~0.5 us). */
        for (size_t i = 0; i < n; i++) {
            const float *r = raw + 3 * i;
            out[i].x = r[0] / w;
            out[i].y = r[1] / h;
            out[i].z = r[2] / w / norm_z;
            out[i].visibility = 0.0f;
            out[i].presence = 0.0f;
        }
        return KS_STATUS_OK;
    }
    for (size_t i = 0; i < n; i++) {
        const float *r = raw + i * dims;
        ks__landmark l;
        memset(&l, 0, sizeof(l));
        l.x = opt->flip_horizontally ? w - r[0] : r[0];
        l.y = opt->flip_vertically ? h - r[1] : r[1];
        if (dims > 2) l.z = r[2];
        if (dims > 3) l.visibility = activate(opt->visibility_activation, r[3]);
        if (dims > 4) l.presence = activate(opt->presence_activation, r[4]);
        l.x /= w;
        l.y /= h;
        l.z = l.z / w / norm_z;
        out[i] = l;
    }
    return KS_STATUS_OK;
}

void ks__letterbox_padding(float roi_width_px, float roi_height_px, int32_t dst_width,
                           int32_t dst_height, float padding_out[4]) {
    padding_out[0] = padding_out[1] = padding_out[2] = padding_out[3] = 0.0f;
    if (!(roi_width_px > 0.0f) || !(roi_height_px > 0.0f) || dst_width <= 0 || dst_height <= 0)
        return;
    float roi_aspect = roi_height_px / roi_width_px;
    float dst_aspect = (float)dst_height / (float)dst_width;
    if (dst_aspect > roi_aspect) { /* ROI is wider: bars on top and bottom */
        float pad = (1.0f - roi_aspect / dst_aspect) * 0.5f;
        padding_out[1] = padding_out[3] = pad;
    } else { /* ROI is taller: bars left and right */
        float pad = (1.0f - dst_aspect / roi_aspect) * 0.5f;
        padding_out[0] = padding_out[2] = pad;
    }
}

void ks__landmarks_remove_letterbox(ks__landmark *lm, size_t n, const float padding[4]) {
    float sx = 1.0f - padding[0] - padding[2], sy = 1.0f - padding[1] - padding[3];
    if (!(sx > 0.0f) || !(sy > 0.0f)) return; /* degenerate padding: leave untouched */
    for (size_t i = 0; i < n; i++) {
        lm[i].x = (lm[i].x - padding[0]) / sx;
        lm[i].y = (lm[i].y - padding[1]) / sy;
        lm[i].z = lm[i].z / sx;
    }
}

void ks__detections_remove_letterbox(ks__detection *d, size_t n, const float padding[4]) {
    float sx = 1.0f - padding[0] - padding[2], sy = 1.0f - padding[1] - padding[3];
    if (!(sx > 0.0f) || !(sy > 0.0f)) return;
    for (size_t i = 0; i < n; i++) {
        d[i].xmin = (d[i].xmin - padding[0]) / sx;
        d[i].xmax = (d[i].xmax - padding[0]) / sx;
        d[i].ymin = (d[i].ymin - padding[1]) / sy;
        d[i].ymax = (d[i].ymax - padding[1]) / sy;
        for (uint32_t k = 0; k < d[i].num_keypoints && k < KS__MAX_KEYPOINTS; k++) {
            d[i].keypoints[k].x = (d[i].keypoints[k].x - padding[0]) / sx;
            d[i].keypoints[k].y = (d[i].keypoints[k].y - padding[1]) / sy;
        }
    }
}

void ks__landmarks_project(ks__landmark *lm, size_t n, const ks__rect *roi, bool ignore_rotation) {
    float angle = ignore_rotation ? 0.0f : roi->rotation_rad;
    float c = cosf(angle), s = sinf(angle);
    for (size_t i = 0; i < n; i++) {
        float x = lm[i].x - 0.5f, y = lm[i].y - 0.5f;
        float rx = c * x - s * y, ry = s * x + c * y;
        lm[i].x = rx * roi->width + roi->x_center;
        lm[i].y = ry * roi->height + roi->y_center;
        lm[i].z = lm[i].z * roi->width; /* z has the scale of x */
    }
}

ks_status ks__roi_preset_get(ks__roi_preset preset, ks__roi_options *out) {
    ks__roi_options o;
    memset(&o, 0, sizeof(o));
    o.rotate = true;
    o.square_long = true;
    switch (preset) {
    case KS__ROI_PRESET_FACE_FROM_DETECTION:
        o.mode = KS__ROI_MODE_BBOX;
        o.start_index = 0, o.end_index = 1; /* right eye -> left eye */
        o.scale_x = o.scale_y = 1.5f;
        break;
    case KS__ROI_PRESET_FACE_FROM_LANDMARKS:
        o.mode = KS__ROI_MODE_BBOX;
        o.start_index = 33, o.end_index = 263; /* outer eye corners */
        o.scale_x = o.scale_y = 1.5f;
        break;
    case KS__ROI_PRESET_HAND_FROM_PALM:
        o.mode = KS__ROI_MODE_BBOX;
        o.start_index = 0, o.end_index = 2; /* wrist centre -> middle finger MCP */
        o.target_angle_deg = 90.0f;
        o.scale_x = o.scale_y = 2.6f;
        o.shift_y = -0.5f;
        break;
    case KS__ROI_PRESET_HAND_FROM_LANDMARKS:
        o.mode = KS__ROI_MODE_ROTATED_BBOX;
        o.start_index = 0, o.end_index = 9; /* wrist -> middle finger MCP */
        o.target_angle_deg = 90.0f;
        o.scale_x = o.scale_y = 2.0f;
        o.shift_y = -0.1f;
        break;
    case KS__ROI_PRESET_POSE_FROM_DETECTION:
        o.mode = KS__ROI_MODE_ALIGNMENT_POINTS;
        o.start_index = 0, o.end_index = 1; /* hip centre -> full-body circle point */
        o.target_angle_deg = 90.0f;
        o.scale_x = o.scale_y = 1.25f;
        break;
    case KS__ROI_PRESET_POSE_FROM_LANDMARKS:
        o.mode = KS__ROI_MODE_ALIGNMENT_POINTS;
        o.start_index = 33, o.end_index = 34; /* auxiliary alignment landmarks */
        o.target_angle_deg = 90.0f;
        o.scale_x = o.scale_y = 1.25f;
        break;
    default:
        return KS_STATUS_INVALID_ARGUMENT;
    }
    *out = o;
    return KS_STATUS_OK;
}

float ks__roi_rotation(float x0, float y0, float x1, float y1, int32_t image_width,
                       int32_t image_height, float target_angle_deg) {
    float dx = (x1 - x0) * (float)image_width, dy = (y1 - y0) * (float)image_height;
    return ks__normalize_radians(deg_to_rad(target_angle_deg) - atan2f(-dy, dx));
}

void ks__rect_transform(const ks__roi_options *opt, int32_t image_width, int32_t image_height,
                        ks__rect *rect) {
    float w = rect->width, h = rect->height;
    float rot = ks__normalize_radians(rect->rotation_rad + deg_to_rad(opt->extra_rotation_deg));
    float iw = (float)image_width, ih = (float)image_height;
    if (rot == 0.0f) {
        rect->x_center += w * opt->shift_x;
        rect->y_center += h * opt->shift_y;
    } else {
        /* The shift is along the rotated rect's axes, computed in pixels so that non-square
         * images shift correctly. */
        float c = cosf(rot), s = sinf(rot);
        float x_shift = (iw * w * opt->shift_x * c - ih * h * opt->shift_y * s) / iw;
        float y_shift = (iw * w * opt->shift_x * s + ih * h * opt->shift_y * c) / ih;
        rect->x_center += x_shift;
        rect->y_center += y_shift;
    }
    if (opt->square_long) {
        float side = fmaxf(w * iw, h * ih);
        w = side / iw, h = side / ih;
    } else if (opt->square_short) {
        float side = fminf(w * iw, h * ih);
        w = side / iw, h = side / ih;
    }
    rect->width = w * (opt->scale_x == 0.0f ? 1.0f : opt->scale_x);
    rect->height = h * (opt->scale_y == 0.0f ? 1.0f : opt->scale_y);
    rect->rotation_rad = rot;
}

static ks_status check_roi(const ks__roi_options *opt, size_t num_points, int32_t image_width,
                           int32_t image_height, const char *what, char *err, size_t err_cap) {
    if (image_width <= 0 || image_height <= 0 || image_width > MAX_IMAGE_SIDE_PX ||
        image_height > MAX_IMAGE_SIDE_PX)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "roi from %s: image size %dx%d out of range", what, (int)image_width,
                               (int)image_height);
    if ((unsigned)opt->mode >= KS__ROI_MODE_COUNT)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "roi from %s: unknown mode %d", what, (int)opt->mode);
    bool need_points = opt->rotate || opt->mode != KS__ROI_MODE_BBOX;
    if (need_points &&
        (opt->start_index < 0 || opt->end_index < 0 || (size_t)opt->start_index >= num_points ||
         (size_t)opt->end_index >= num_points))
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "roi from %s: points %d/%d out of range (%zu points)", what,
                               (int)opt->start_index, (int)opt->end_index, num_points);
    return KS_STATUS_OK;
}

static void alignment_rect(float x0, float y0, float x1, float y1, int32_t iw, int32_t ih,
                           ks__rect *r) {
    float dx = (x1 - x0) * (float)iw, dy = (y1 - y0) * (float)ih;
    float side = 2.0f * sqrtf(dx * dx + dy * dy);
    r->x_center = x0;
    r->y_center = y0;
    r->width = side / (float)iw;
    r->height = side / (float)ih;
}

static ks_status finish_rect(const ks__roi_options *opt, int32_t iw, int32_t ih, ks__rect *r,
                             ks__rect *out, const char *what, char *err, size_t err_cap) {
    ks__rect_transform(opt, iw, ih, r);
    if (!isfinite(r->x_center) || !isfinite(r->y_center) || !isfinite(r->width) ||
        !isfinite(r->height) || !isfinite(r->rotation_rad))
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "roi from %s: non-finite result", what);
    *out = *r;
    return KS_STATUS_OK;
}

ks_status ks__roi_from_detection(const ks__roi_options *opt, const ks__detection *d,
                                 int32_t image_width, int32_t image_height, ks__rect *out,
                                 char *err, size_t err_cap) {
    if (!opt || !d || !out)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT, "roi: NULL");
    size_t nk = d->num_keypoints <= KS__MAX_KEYPOINTS ? d->num_keypoints : KS__MAX_KEYPOINTS;
    if (opt->mode == KS__ROI_MODE_ROTATED_BBOX)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "roi from detection: rotated bbox needs landmarks");
    ks_status st = check_roi(opt, nk, image_width, image_height, "detection", err, err_cap);
    if (st != KS_STATUS_OK) return st;
    ks__rect r;
    memset(&r, 0, sizeof(r));
    if (opt->mode == KS__ROI_MODE_ALIGNMENT_POINTS) {
        const ks__point2 *a = &d->keypoints[opt->start_index], *b = &d->keypoints[opt->end_index];
        alignment_rect(a->x, a->y, b->x, b->y, image_width, image_height, &r);
    } else {
        r.x_center = (d->xmin + d->xmax) * 0.5f;
        r.y_center = (d->ymin + d->ymax) * 0.5f;
        r.width = d->xmax - d->xmin;
        r.height = d->ymax - d->ymin;
    }
    if (opt->rotate) {
        const ks__point2 *a = &d->keypoints[opt->start_index], *b = &d->keypoints[opt->end_index];
        r.rotation_rad = ks__roi_rotation(a->x, a->y, b->x, b->y, image_width, image_height,
                                          opt->target_angle_deg);
    }
    return finish_rect(opt, image_width, image_height, &r, out, "detection", err, err_cap);
}

ks_status ks__roi_from_landmarks(const ks__roi_options *opt, const ks__landmark *lm, size_t n,
                                 int32_t image_width, int32_t image_height, ks__rect *out,
                                 char *err, size_t err_cap) {
    if (!opt || !lm || !out || n == 0)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT, "roi: NULL or empty");
    ks_status st = check_roi(opt, n, image_width, image_height, "landmarks", err, err_cap);
    if (st != KS_STATUS_OK) return st;
    ks__rect r;
    memset(&r, 0, sizeof(r));
    if (opt->rotate)
        r.rotation_rad = ks__roi_rotation(lm[opt->start_index].x, lm[opt->start_index].y,
                                          lm[opt->end_index].x, lm[opt->end_index].y, image_width,
                                          image_height, opt->target_angle_deg);
    float iw = (float)image_width, ih = (float)image_height;
    if (opt->mode == KS__ROI_MODE_ALIGNMENT_POINTS) {
        const ks__landmark *a = &lm[opt->start_index], *b = &lm[opt->end_index];
        alignment_rect(a->x, a->y, b->x, b->y, image_width, image_height, &r);
    } else if (opt->mode == KS__ROI_MODE_ROTATED_BBOX) {
        /* Bbox in the ROI's own frame (pixels, rotated by -angle), centre rotated back: a
         * tighter box than the axis-aligned one for tilted hands. */
        float c = cosf(r.rotation_rad), s = sinf(r.rotation_rad);
        float x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
        for (size_t i = 0; i < n; i++) {
            float px = lm[i].x * iw, py = lm[i].y * ih;
            float rx = c * px + s * py, ry = -s * px + c * py;
            x0 = ks__min_acc(x0, rx), x1 = ks__max_acc(x1, rx), y0 = ks__min_acc(y0, ry),
            y1 = ks__max_acc(y1, ry);
        }
        float cx = (x0 + x1) * 0.5f, cy = (y0 + y1) * 0.5f;
        r.x_center = (c * cx - s * cy) / iw;
        r.y_center = (s * cx + c * cy) / ih;
        r.width = (x1 - x0) / iw;
        r.height = (y1 - y0) / ih;
    } else {
        float x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
        for (size_t i = 0; i < n; i++) {
            x0 = ks__min_acc(x0, lm[i].x), x1 = ks__max_acc(x1, lm[i].x);
            y0 = ks__min_acc(y0, lm[i].y), y1 = ks__max_acc(y1, lm[i].y);
        }
        r.x_center = (x0 + x1) * 0.5f;
        r.y_center = (y0 + y1) * 0.5f;
        r.width = x1 - x0;
        r.height = y1 - y0;
    }
    return finish_rect(opt, image_width, image_height, &r, out, "landmarks", err, err_cap);
}
