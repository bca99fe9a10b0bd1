/* The per-frame tracking loop shared by the face, hand and pose landmarkers (task_common.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "task_common.h"

void ks__track_loop_init(ks__track_loop *t, int32_t max_objects, bool video, float same_iou) {
    memset(t, 0, sizeof(*t));
    if (max_objects < 1) max_objects = 1;
    if (max_objects > KS__TRACK_MAX_OBJECTS) max_objects = KS__TRACK_MAX_OBJECTS;
    t->max_objects = max_objects;
    t->video = video;
    t->same_iou = same_iou;
    t->next_id = 1;
}

void ks__track_loop_clear(ks__track_loop *t) {
    for (int32_t i = 0; i < KS__TRACK_MAX_OBJECTS; i++)
        t->slot_id[i] = 0;
}

ks_status ks__track_loop_begin(ks__track_loop *t, const ks_allocator *alloc, const ks_image *image,
                               ks_rotation rotation, int mirror, const ks_box *roi,
                               int64_t timestamp_us, ks_packet **image_out, int32_t *width_out,
                               int32_t *height_out, char *err, size_t err_cap) {
    *image_out = NULL;
    if (t->video && t->has_ts && timestamp_us <= t->last_ts) {
        snprintf(err, err_cap, "timestamp %lld us is not after the previous one (%lld us)",
                 (long long)timestamp_us, (long long)t->last_ts);
        return KS_STATUS_INVALID_STATE;
    }
    ks_packet *img = NULL;
    ks_status st = ks__task_image_packet(alloc, image, rotation, mirror, &img, err, err_cap);
    if (st) return st;
    int32_t iw = ks_packet_image_view(img)->width_px, ih = ks_packet_image_view(img)->height_px;
    if (roi && roi->w > 0.0f &&
        (!(roi->h > 0.0f) || roi->x + roi->w <= 0.0f || roi->y + roi->h <= 0.0f ||
         roi->x >= (float)iw || roi->y >= (float)ih)) {
        snprintf(err, err_cap, "task.roi (%g, %g, %g x %g) does not overlap the %dx%d image",
                 (double)roi->x, (double)roi->y, (double)roi->w, (double)roi->h, (int)iw, (int)ih);
        ks_packet_release(img);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    *image_out = img;
    *width_out = iw;
    *height_out = ih;
    return KS_STATUS_OK;
}

void ks__track_loop_set_same_center(ks__track_loop *t, float fraction) {
    t->same_center = fraction > 0.0f ? fraction : 0.0f;
}

/* Whether a and b cover one object (t->same_center or t->same_iou). */
static bool same_object(const ks__track_loop *t, const ks__rect *a, const ks__rect *b, int32_t iw,
                        int32_t ih) {
    if (t->same_center <= 0.0f) return ks__track_rect_iou(a, b, iw, ih) > t->same_iou;
    float dx = (a->x_center - b->x_center) * (float)iw;
    float dy = (a->y_center - b->y_center) * (float)ih;
    float side = fmaxf(fmaxf(a->width * (float)iw, a->height * (float)ih),
                       fmaxf(b->width * (float)iw, b->height * (float)ih));
    float lim = t->same_center * side;
    return dx * dx + dy * dy < lim * lim;
}

static int32_t free_slot(const ks__track_loop *t) {
    for (int32_t i = 0; i < t->max_objects; i++)
        if (t->slot_id[i] == 0) return i;
    return -1;
}

static bool overlaps_any(const ks__track_loop *t, const ks__rect *r, const ks__track_item *items,
                         size_t n, bool kept_only, int32_t iw, int32_t ih) {
    for (size_t j = 0; j < n; j++) {
        if (kept_only && !items[j].keep) continue;
        if (same_object(t, r, &items[j].roi, iw, ih)) return true;
    }
    return false;
}

ks_status ks__track_loop_frame(ks__track_loop *t, const ks__track_ops *ops, void *task,
                               ks_packet *image, int32_t iw, int32_t ih, int64_t timestamp_us,
                               ks__track_item *items, size_t *num_items, char *err,
                               size_t err_cap) {
    size_t n = 0;
    ks_status st = KS_STATUS_OK;
    *num_items = 0;
    if (!t->video) ks__track_loop_clear(t);
    for (int32_t i = 0; i < t->max_objects; i++) {
        if (t->slot_id[i] == 0) continue;
        items[n++] = (ks__track_item){.roi = t->slot_roi[i], .id = t->slot_id[i], .slot = i};
    }
    /* While everything asked for is tracked the detector stays off; while part of it is, a new
     * object is looked for only every KS__TRACK_REDETECT_FRAMES frames. */
    t->frames_since_detect++;
    bool detect = n == 0 || ((int32_t)n < t->max_objects &&
                             t->frames_since_detect >= KS__TRACK_REDETECT_FRAMES);
    if (detect) {
        ks__rect found[KS__TRACK_MAX_CANDIDATES];
        size_t num_found = 0;
        st = ops->detect(task, image, iw, ih, found, KS__TRACK_MAX_CANDIDATES, &num_found, err,
                         err_cap);
        if (st) goto error;
        t->num_detector_runs++;
        t->frames_since_detect = 0;
        for (size_t k = 0; k < num_found && (int32_t)n < t->max_objects; k++) {
            if (overlaps_any(t, &found[k], items, n, false, iw, ih)) continue;
            int32_t slot = t->video ? free_slot(t) : -1;
            items[n] = (ks__track_item){.roi = found[k], .slot = slot};
            if (slot >= 0) {
                items[n].id = t->next_id++;
                t->slot_id[slot] = items[n].id; /* reserved; the ROI is set once found */
                if (ops->new_track) ops->new_track(task, slot);
            }
            n++;
        }
    }
    if (n > 0) {
        st = ops->landmarks(task, image, iw, ih, items, n, err, err_cap);
        if (st) goto error;
    }
    for (size_t i = 0; i < n; i++) {
        ks__track_item *it = &items[i];
        ks__rect next;
        bool found = false;
        st = ops->finish(task, i, it, iw, ih, timestamp_us, &next, &found, err, err_cap);
        if (st) goto error;
        if (!found || !(next.width > 0.0f) || !(next.height > 0.0f)) {
            /* Lost (it moved fast, or left): look for it again next frame. */
            if (it->slot >= 0) t->slot_id[it->slot] = 0;
            t->frames_since_detect = KS__TRACK_REDETECT_FRAMES;
            continue;
        }
        bool dup = overlaps_any(t, &next, items, i, true, iw, ih);
        for (size_t j = 0; !dup && ops->same && j < i; j++)
            dup = items[j].keep && ops->same(task, j, i, iw, ih);
        if (dup) {
            /* Two tracks converged on one object: the earlier (older) item stays. */
            if (it->slot >= 0) t->slot_id[it->slot] = 0;
            continue;
        }
        it->roi = next;
        it->keep = true;
        if (it->slot >= 0) t->slot_roi[it->slot] = next;
    }
    *num_items = n;
    t->num_frames++;
    if (t->video) {
        t->last_ts = timestamp_us;
        t->has_ts = true;
    }
    return KS_STATUS_OK;
error:
    /* A failed frame leaves no half-updated tracks behind. */
    ks__track_loop_clear(t);
    return st;
}

static void rect_bounds(const ks__rect *r, int32_t iw, int32_t ih, float b[4]) {
    float c = fabsf(cosf(r->rotation_rad)), s = fabsf(sinf(r->rotation_rad));
    float w = r->width * (float)iw, h = r->height * (float)ih;
    float hw = 0.5f * (c * w + s * h), hh = 0.5f * (s * w + c * h);
    float cx = r->x_center * (float)iw, cy = r->y_center * (float)ih;
    b[0] = cx - hw, b[1] = cy - hh, b[2] = cx + hw, b[3] = cy + hh;
}

float ks__track_rect_iou(const ks__rect *a, const ks__rect *b, int32_t image_width,
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
