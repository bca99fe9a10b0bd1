/* Detection building blocks: see detection.h for the contracts.
 *
 * The SSD parts follow MediaPipe's calculators formula by formula (SsdAnchorsCalculator,
 * TensorsToDetectionsCalculator, NonMaxSuppressionCalculator) so that the BlazeFace / palm / pose
 * graphs produce the same boxes; docs/vision-blocks.md lists the formulas. */
#include "detection.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "vision_util.h"

/* Safety limits on configuration values (a bundle's JSON may carry them). */
#define MAX_INPUT_SIDE_PX 16384
#define MAX_ANCHORS (1u << 24)
#define MAX_CLASSES 100000
#define MAX_COORDS 4096

/* ---- anchors ---------------------------------------------------------------------------- */

static float anchor_scale(float min_scale, float max_scale, int32_t index, int32_t num_strides) {
    if (num_strides == 1) return (min_scale + max_scale) * 0.5f;
    return min_scale + (max_scale - min_scale) * (float)index / (float)(num_strides - 1);
}

static ks_status check_anchor_options(const ks__ssd_anchor_options *o, char *err, size_t err_cap) {
    if (!o) return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT, "ssd anchors: NULL");
    if (o->input_size_width <= 0 || o->input_size_height <= 0 ||
        o->input_size_width > MAX_INPUT_SIDE_PX || o->input_size_height > MAX_INPUT_SIDE_PX)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "ssd anchors: input size %dx%d out of range [1, %d]",
                               (int)o->input_size_width, (int)o->input_size_height,
                               MAX_INPUT_SIDE_PX);
    if (o->num_layers <= 0 || o->num_layers > KS__SSD_MAX_LAYERS)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "ssd anchors: num_layers %d out of range [1, %d]",
                               (int)o->num_layers, KS__SSD_MAX_LAYERS);
    if (o->num_aspect_ratios < 0 || o->num_aspect_ratios > KS__SSD_MAX_ASPECT_RATIOS)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "ssd anchors: num_aspect_ratios %d out of range [0, %d]",
                               (int)o->num_aspect_ratios, KS__SSD_MAX_ASPECT_RATIOS);
    for (int32_t i = 0; i < o->num_layers; i++)
        if (o->strides[i] <= 0)
            return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                                   "ssd anchors: strides[%d] = %d must be positive", (int)i,
                                   (int)o->strides[i]);
    for (int32_t i = 0; i < o->num_aspect_ratios; i++)
        if (!(o->aspect_ratios[i] > 0.0f) || !isfinite(o->aspect_ratios[i]))
            return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                                   "ssd anchors: aspect_ratios[%d] = %g must be positive", (int)i,
                                   (double)o->aspect_ratios[i]);
    if (!isfinite(o->min_scale) || !isfinite(o->max_scale) || !isfinite(o->anchor_offset_x) ||
        !isfinite(o->anchor_offset_y) || !isfinite(o->interpolated_scale_aspect_ratio))
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "ssd anchors: non-finite scale, offset or interpolated ratio");
    return KS_STATUS_OK;
}

/* Walks the anchors in MediaPipe order; writes them when `anchors` is non-NULL. */
static ks_status anchors_walk(const ks__ssd_anchor_options *o, ks__anchor *anchors, size_t cap,
                              size_t *count_out, char *err, size_t err_cap) {
    ks_status st = check_anchor_options(o, err, err_cap);
    if (st != KS_STATUS_OK) return st;
    size_t n = 0;
    int32_t layer_id = 0;
    while (layer_id < o->num_layers) {
        /* Consecutive layers with the same stride share one feature map; their anchors are
         * interleaved per cell. */
        float widths[KS__SSD_MAX_LAYERS * (KS__SSD_MAX_ASPECT_RATIOS + 1)];
        float heights[KS__SSD_MAX_LAYERS * (KS__SSD_MAX_ASPECT_RATIOS + 1)];
        int32_t num_per_cell = 0;
        int32_t last = layer_id;
        while (last < o->num_layers && o->strides[last] == o->strides[layer_id]) {
            float scale = anchor_scale(o->min_scale, o->max_scale, last, o->num_layers);
            float ratios[KS__SSD_MAX_ASPECT_RATIOS + 1], scales[KS__SSD_MAX_ASPECT_RATIOS + 1];
            int32_t k = 0;
            if (last == 0 && o->reduce_boxes_in_lowest_layer) {
                ratios[0] = 1.0f, scales[0] = 0.1f;
                ratios[1] = 2.0f, scales[1] = scale;
                ratios[2] = 0.5f, scales[2] = scale;
                k = 3;
            } else {
                for (int32_t a = 0; a < o->num_aspect_ratios; a++, k++)
                    ratios[k] = o->aspect_ratios[a], scales[k] = scale;
                if (o->interpolated_scale_aspect_ratio > 0.0f) {
                    float next =
                        last == o->num_layers - 1
                            ? 1.0f
                            : anchor_scale(o->min_scale, o->max_scale, last + 1, o->num_layers);
                    scales[k] = sqrtf(scale * next);
                    ratios[k] = o->interpolated_scale_aspect_ratio;
                    k++;
                }
            }
            for (int32_t a = 0; a < k; a++) {
                float r = sqrtf(ratios[a]);
                widths[num_per_cell] = scales[a] * r;
                heights[num_per_cell] = scales[a] / r;
                num_per_cell++;
            }
            last++;
        }
        int32_t stride = o->strides[layer_id];
        int32_t fm_h = (o->input_size_height + stride - 1) / stride;
        int32_t fm_w = (o->input_size_width + stride - 1) / stride;
        size_t layer_count = (size_t)fm_h * (size_t)fm_w * (size_t)num_per_cell;
        if (layer_count > MAX_ANCHORS - n)
            return ks__vision_fail(err, err_cap, KS_STATUS_LIMIT_EXCEEDED,
                                   "ssd anchors: more than %u anchors (stride %d)", MAX_ANCHORS,
                                   (int)stride);
        if (anchors) {
            if (layer_count > cap - n)
                return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                                       "ssd anchors: output capacity %zu too small", cap);
            for (int32_t y = 0; y < fm_h; y++) {
                for (int32_t x = 0; x < fm_w; x++) {
                    float xc = ((float)x + o->anchor_offset_x) / (float)fm_w;
                    float yc = ((float)y + o->anchor_offset_y) / (float)fm_h;
                    for (int32_t a = 0; a < num_per_cell; a++) {
                        ks__anchor *an = &anchors[n++];
                        an->x_center = xc;
                        an->y_center = yc;
                        an->w = o->fixed_anchor_size ? 1.0f : widths[a];
                        an->h = o->fixed_anchor_size ? 1.0f : heights[a];
                    }
                }
            }
        } else {
            n += layer_count;
        }
        if (num_per_cell == 0)
            return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                                   "ssd anchors: layer %d has no anchors (no aspect ratio)",
                                   (int)layer_id);
        layer_id = last;
    }
    *count_out = n;
    return KS_STATUS_OK;
}

ks_status ks__ssd_anchors_count(const ks__ssd_anchor_options *opt, size_t *count_out, char *err,
                                size_t err_cap) {
    if (!count_out)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT, "ssd anchors: NULL");
    return anchors_walk(opt, NULL, 0, count_out, err, err_cap);
}

ks_status ks__ssd_anchors_generate(const ks__ssd_anchor_options *opt, ks__anchor *anchors,
                                   size_t cap, size_t *count_out, char *err, size_t err_cap) {
    if (!anchors || !count_out)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT, "ssd anchors: NULL");
    return anchors_walk(opt, anchors, cap, count_out, err, err_cap);
}

/* ---- output collection ------------------------------------------------------------------ */

/* Appends, or when full replaces the lowest-scored entry if `d` beats it: keeps the best `cap`
 * without allocation. O(cap) per replacement, which only happens with undersized outputs. */
static void keep_best(ks__detection *out, size_t cap, size_t *n, const ks__detection *d) {
    if (cap == 0) return;
    if (*n < cap) {
        out[(*n)++] = *d;
        return;
    }
    size_t worst = 0;
    for (size_t i = 1; i < cap; i++)
        if (out[i].score < out[worst].score) worst = i;
    if (d->score > out[worst].score) out[worst] = *d;
}

static bool box_valid(const ks__detection *d) {
    return isfinite(d->xmin) && isfinite(d->ymin) && isfinite(d->xmax) && isfinite(d->ymax) &&
           d->xmin <= d->xmax && d->ymin <= d->ymax;
}

/* ---- SSD decode ------------------------------------------------------------------------- */

static ks_status check_decode_options(const ks__ssd_decode_options *o, char *err, size_t err_cap) {
    if (o->num_boxes <= 0 || (uint32_t)o->num_boxes > MAX_ANCHORS || o->num_classes <= 0 ||
        o->num_classes > MAX_CLASSES || o->num_coords < 4 || o->num_coords > MAX_COORDS)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "ssd decode: num_boxes %d, num_classes %d or num_coords %d out of "
                               "range",
                               (int)o->num_boxes, (int)o->num_classes, (int)o->num_coords);
    if (o->box_coord_offset < 0 || o->box_coord_offset > o->num_coords - 4)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "ssd decode: box_coord_offset %d does not fit num_coords %d",
                               (int)o->box_coord_offset, (int)o->num_coords);
    if (o->num_keypoints < 0 || o->num_keypoints > KS__MAX_KEYPOINTS)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "ssd decode: num_keypoints %d out of range [0, %d]",
                               (int)o->num_keypoints, KS__MAX_KEYPOINTS);
    if (o->num_keypoints > 0) {
        int64_t end = (int64_t)o->keypoint_coord_offset +
                      (int64_t)(o->num_keypoints - 1) * o->num_values_per_keypoint + 2;
        if (o->keypoint_coord_offset < 0 || o->num_values_per_keypoint < 2 || end > o->num_coords)
            return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                                   "ssd decode: %d keypoints x %d values at offset %d exceed "
                                   "num_coords %d",
                                   (int)o->num_keypoints, (int)o->num_values_per_keypoint,
                                   (int)o->keypoint_coord_offset, (int)o->num_coords);
    }
    if ((unsigned)o->box_format >= KS__BOX_FORMAT_COUNT)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "ssd decode: box_format %d unknown", (int)o->box_format);
    if (!(o->x_scale != 0.0f) || !(o->y_scale != 0.0f) || !(o->w_scale != 0.0f) ||
        !(o->h_scale != 0.0f) || !isfinite(o->x_scale) || !isfinite(o->y_scale) ||
        !isfinite(o->w_scale) || !isfinite(o->h_scale))
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "ssd decode: x/y/w/h scales must be finite and non-zero");
    return KS_STATUS_OK;
}

ks_status ks__ssd_decode(const ks__ssd_decode_options *opt, const float *raw_boxes,
                         size_t raw_boxes_count, const float *raw_scores, size_t raw_scores_count,
                         const ks__anchor *anchors, size_t num_anchors, ks__detection *out,
                         size_t cap, size_t *count_out, char *err, size_t err_cap) {
    if (!opt || !raw_boxes || !raw_scores || !anchors || !out || !count_out)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT, "ssd decode: NULL");
    ks_status st = check_decode_options(opt, err, err_cap);
    if (st != KS_STATUS_OK) return st;
    size_t nb = (size_t)opt->num_boxes, nc = (size_t)opt->num_coords;
    size_t ncls = (size_t)opt->num_classes;
    if (num_anchors != nb)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_SHAPE,
                               "ssd decode: %zu anchors for num_boxes %zu", num_anchors, nb);
    if (raw_boxes_count != nb * nc)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_SHAPE,
                               "ssd decode: box tensor has %zu values, expected %zu x %zu",
                               raw_boxes_count, nb, nc);
    if (raw_scores_count != nb * ncls)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_SHAPE,
                               "ssd decode: score tensor has %zu values, expected %zu x %zu",
                               raw_scores_count, nb, ncls);
    size_t n = 0;
    for (size_t i = 0; i < nb; i++) {
        /* Best class first: the box maths is skipped for most anchors. */
        const float *s = raw_scores + i * ncls;
        float best = -INFINITY;
        int32_t best_class = -1;
        for (size_t c = 0; c < ncls; c++) {
            float v = s[c];
            if (opt->score_clipping_thresh > 0.0f) {
                if (v < -opt->score_clipping_thresh) v = -opt->score_clipping_thresh;
                if (v > opt->score_clipping_thresh) v = opt->score_clipping_thresh;
            }
            if (opt->sigmoid_score) v = ks__sigmoid(v);
            if (v > best) best = v, best_class = (int32_t)c;
        }
        if (best_class < 0 || !(best >= opt->min_score_thresh)) continue;

        const float *b = raw_boxes + i * nc + opt->box_coord_offset;
        const ks__anchor *a = &anchors[i];
        float xc, yc, w, h;
        switch (opt->box_format) {
        case KS__BOX_FORMAT_XYWH:
            xc = b[0], yc = b[1], w = b[2], h = b[3];
            break;
        case KS__BOX_FORMAT_XYXY: /* left/top/right/bottom distances from the anchor centre */
            xc = (-b[0] + b[2]) * 0.5f, yc = (-b[1] + b[3]) * 0.5f;
            w = b[2] + b[0], h = b[3] + b[1];
            break;
        default:
            yc = b[0], xc = b[1], h = b[2], w = b[3];
            break;
        }
        xc = xc / opt->x_scale * a->w + a->x_center;
        yc = yc / opt->y_scale * a->h + a->y_center;
        if (opt->apply_exponential_on_box_size) {
            h = expf(h / opt->h_scale) * a->h;
            w = expf(w / opt->w_scale) * a->w;
        } else {
            h = h / opt->h_scale * a->h;
            w = w / opt->w_scale * a->w;
        }
        ks__detection d;
        memset(&d, 0, sizeof(d));
        d.xmin = xc - w * 0.5f;
        d.xmax = xc + w * 0.5f;
        d.ymin = yc - h * 0.5f;
        d.ymax = yc + h * 0.5f;
        d.score = best;
        d.class_id = best_class;
        d.track_id = -1;
        d.num_keypoints = (uint32_t)opt->num_keypoints;
        for (int32_t k = 0; k < opt->num_keypoints; k++) {
            const float *kp = raw_boxes + i * nc + opt->keypoint_coord_offset +
                              (size_t)k * (size_t)opt->num_values_per_keypoint;
            float kx = opt->box_format == KS__BOX_FORMAT_YXHW ? kp[1] : kp[0];
            float ky = opt->box_format == KS__BOX_FORMAT_YXHW ? kp[0] : kp[1];
            d.keypoints[k].x = kx / opt->x_scale * a->w + a->x_center;
            d.keypoints[k].y = ky / opt->y_scale * a->h + a->y_center;
            if (opt->flip_vertically) d.keypoints[k].y = 1.0f - d.keypoints[k].y;
        }
        if (opt->flip_vertically) {
            float ymin = d.ymin;
            d.ymin = 1.0f - d.ymax;
            d.ymax = 1.0f - ymin;
        }
        if (!box_valid(&d)) continue;
        keep_best(out, cap, &n, &d);
    }
    *count_out = n;
    return KS_STATUS_OK;
}

/* ---- NMS -------------------------------------------------------------------------------- */

float ks__box_overlap(const ks__detection *a, const ks__detection *b, ks__overlap_type type) {
    float iw = fminf(a->xmax, b->xmax) - fmaxf(a->xmin, b->xmin);
    float ih = fminf(a->ymax, b->ymax) - fmaxf(a->ymin, b->ymin);
    if (!(iw > 0.0f) || !(ih > 0.0f)) return 0.0f;
    float inter = iw * ih;
    float area_a = (a->xmax - a->xmin) * (a->ymax - a->ymin);
    float area_b = (b->xmax - b->xmin) * (b->ymax - b->ymin);
    float norm = type == KS__OVERLAP_MODIFIED_JACCARD ? area_b : area_a + area_b - inter;
    return norm > 0.0f ? inter / norm : 0.0f;
}

size_t ks__nms_scratch_size(size_t num_in) {
    return num_in * sizeof(uint32_t);
}

static float sort_key(const ks__detection *d) {
    return isnan(d->score) ? -INFINITY : d->score;
}

/* Total order: score descending, then input index ascending, so results never depend on the
 * sort algorithm. */
static bool ranks_before(const ks__detection *in, uint32_t i, uint32_t j) {
    float si = sort_key(&in[i]), sj = sort_key(&in[j]);
    if (si != sj) return si > sj;
    return i < j;
}

static void sift_down(const ks__detection *in, uint32_t *idx, size_t root, size_t n) {
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n) return;
        /* Max-heap of the element that ranks LAST, so the array ends sorted first-to-last. */
        if (child + 1 < n && ranks_before(in, idx[child], idx[child + 1])) child++;
        if (!ranks_before(in, idx[root], idx[child])) return;
        uint32_t t = idx[root];
        idx[root] = idx[child];
        idx[child] = t;
        root = child;
    }
}

/* Heap sort: O(n log n), in place, no recursion. */
static void sort_by_rank(const ks__detection *in, uint32_t *idx, size_t n) {
    for (size_t i = n / 2; i-- > 0;)
        sift_down(in, idx, i, n);
    for (size_t end = n; end > 1; end--) {
        uint32_t t = idx[0];
        idx[0] = idx[end - 1];
        idx[end - 1] = t;
        sift_down(in, idx, 0, end - 1);
    }
}

void ks__nms(const ks__nms_options *opt, const ks__detection *in, size_t num_in, void *scratch,
             ks__detection *out, size_t cap, size_t *count_out) {
    size_t n_out = 0;
    size_t limit = cap;
    if (opt->max_num_detections > 0 && (size_t)opt->max_num_detections < limit)
        limit = (size_t)opt->max_num_detections;
    uint32_t *idx = scratch;
    size_t n = 0;
    for (size_t i = 0; i < num_in && i < UINT32_MAX; i++)
        if (sort_key(&in[i]) >= opt->min_score_threshold) idx[n++] = (uint32_t)i;
    sort_by_rank(in, idx, n);

    if (opt->algorithm != KS__NMS_WEIGHTED) {
        for (size_t i = 0; i < n && n_out < limit; i++) {
            const ks__detection *c = &in[idx[i]];
            bool suppressed = false;
            for (size_t k = 0; k < n_out && !suppressed; k++) {
                if (opt->per_class && out[k].class_id != c->class_id) continue;
                suppressed =
                    ks__box_overlap(&out[k], c, opt->overlap_type) > opt->min_suppression_threshold;
            }
            if (!suppressed) out[n_out++] = *c;
        }
        *count_out = n_out;
        return;
    }

    /* Weighted: the best remaining box absorbs every remaining box that overlaps it; the output
     * keeps the best box's score and class but the score-weighted mean of the cluster's
     * coordinates and keypoints. Boxes not absorbed are compacted in place (order kept). */
    while (n > 0 && n_out < limit) {
        const ks__detection *best = &in[idx[0]];
        double sum_w = 0.0, xmin = 0.0, ymin = 0.0, xmax = 0.0, ymax = 0.0;
        double kx[KS__MAX_KEYPOINTS] = {0}, ky[KS__MAX_KEYPOINTS] = {0};
        uint32_t nk = best->num_keypoints <= KS__MAX_KEYPOINTS ? best->num_keypoints : 0;
        size_t kept = 0;
        for (size_t i = 0; i < n; i++) {
            const ks__detection *c = &in[idx[i]];
            bool same_class = !opt->per_class || c->class_id == best->class_id;
            bool absorb = i == 0 || (same_class && ks__box_overlap(best, c, opt->overlap_type) >
                                                       opt->min_suppression_threshold);
            if (!absorb) {
                idx[kept++] = idx[i];
                continue;
            }
            double w = c->score;
            sum_w += w;
            xmin += w * c->xmin, ymin += w * c->ymin, xmax += w * c->xmax, ymax += w * c->ymax;
            for (uint32_t k = 0; k < nk && k < c->num_keypoints; k++)
                kx[k] += w * c->keypoints[k].x, ky[k] += w * c->keypoints[k].y;
        }
        ks__detection d = *best;
        if (sum_w > 0.0) {
            d.xmin = (float)(xmin / sum_w), d.ymin = (float)(ymin / sum_w);
            d.xmax = (float)(xmax / sum_w), d.ymax = (float)(ymax / sum_w);
            for (uint32_t k = 0; k < nk; k++)
                d.keypoints[k].x = (float)(kx[k] / sum_w),
                d.keypoints[k].y = (float)(ky[k] / sum_w);
        }
        out[n_out++] = d;
        n = kept;
    }
    *count_out = n_out;
}

/* ---- presets ---------------------------------------------------------------------------- */

/* Option sets of MediaPipe's graphs: face_detection_short_range.pbtxt,
 * face_detection_full_range.pbtxt, palm_detection_cpu.pbtxt, pose_detection_cpu.pbtxt. */
ks_status ks__ssd_preset_get(ks__ssd_preset preset, ks__ssd_anchor_options *anchors_out,
                             ks__ssd_decode_options *decode_out, ks__nms_options *nms_out) {
    ks__ssd_anchor_options a;
    ks__ssd_decode_options d;
    ks__nms_options m;
    memset(&a, 0, sizeof(a));
    memset(&d, 0, sizeof(d));
    memset(&m, 0, sizeof(m));
    a.min_scale = 0.1484375f;
    a.max_scale = 0.75f;
    a.anchor_offset_x = a.anchor_offset_y = 0.5f;
    a.num_aspect_ratios = 1;
    a.aspect_ratios[0] = 1.0f;
    a.interpolated_scale_aspect_ratio = 1.0f;
    a.fixed_anchor_size = true;
    d.num_classes = 1;
    d.box_coord_offset = 0;
    d.keypoint_coord_offset = 4;
    d.num_values_per_keypoint = 2;
    d.box_format = KS__BOX_FORMAT_XYWH; /* MediaPipe: reverse_output_order: true */
    d.sigmoid_score = true;
    d.score_clipping_thresh = 100.0f;
    d.min_score_thresh = 0.5f;
    m.min_suppression_threshold = 0.3f;
    m.overlap_type = KS__OVERLAP_IOU;
    m.algorithm = KS__NMS_WEIGHTED;
    int32_t side;
    switch (preset) {
    case KS__SSD_PRESET_FACE_SHORT_RANGE:
        side = 128;
        a.num_layers = 4;
        a.strides[0] = 8, a.strides[1] = 16, a.strides[2] = 16, a.strides[3] = 16;
        d.num_boxes = 896;
        d.num_coords = 16;
        d.num_keypoints = 6;
        break;
    case KS__SSD_PRESET_FACE_FULL_RANGE:
        side = 192;
        a.num_layers = 1;
        a.strides[0] = 4;
        a.interpolated_scale_aspect_ratio = 0.0f;
        d.num_boxes = 2304;
        d.num_coords = 16;
        d.num_keypoints = 6;
        d.min_score_thresh = 0.6f;
        break;
    case KS__SSD_PRESET_PALM:
        side = 192;
        a.num_layers = 4;
        a.strides[0] = 8, a.strides[1] = 16, a.strides[2] = 16, a.strides[3] = 16;
        d.num_boxes = 2016;
        d.num_coords = 18;
        d.num_keypoints = 7;
        break;
    case KS__SSD_PRESET_POSE:
        side = 224;
        a.num_layers = 5;
        a.strides[0] = 8, a.strides[1] = 16, a.strides[2] = 32, a.strides[3] = 32;
        a.strides[4] = 32;
        d.num_boxes = 2254;
        d.num_coords = 12;
        d.num_keypoints = 4;
        break;
    default:
        return KS_STATUS_INVALID_ARGUMENT;
    }
    a.input_size_width = a.input_size_height = side;
    d.x_scale = d.y_scale = d.w_scale = d.h_scale = (float)side;
    if (anchors_out) *anchors_out = a;
    if (decode_out) *decode_out = d;
    if (nms_out) *nms_out = m;
    return KS_STATUS_OK;
}

const char *ks__ssd_preset_string(ks__ssd_preset preset) {
    switch (preset) {
    case KS__SSD_PRESET_FACE_SHORT_RANGE:
        return "face_short_range";
    case KS__SSD_PRESET_FACE_FULL_RANGE:
        return "face_full_range";
    case KS__SSD_PRESET_PALM:
        return "palm";
    case KS__SSD_PRESET_POSE:
        return "pose";
    default:
        return "unknown";
    }
}

/* ---- YOLOX / NanoDet -------------------------------------------------------------------- */

static ks_status check_grid(const char *what, int32_t in_w, int32_t in_h, int32_t num_classes,
                            int32_t num_levels, const int32_t *strides, char *err, size_t err_cap) {
    if (in_w <= 0 || in_h <= 0 || in_w > MAX_INPUT_SIDE_PX || in_h > MAX_INPUT_SIDE_PX)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "%s: input size %dx%d out of range [1, %d]", what, (int)in_w,
                               (int)in_h, MAX_INPUT_SIDE_PX);
    if (num_classes <= 0 || num_classes > MAX_CLASSES)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "%s: num_classes %d out of range [1, %d]", what, (int)num_classes,
                               MAX_CLASSES);
    if (num_levels < 0 || num_levels > KS__GRID_MAX_LEVELS)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "%s: num_levels %d out of range [0, %d]", what, (int)num_levels,
                               KS__GRID_MAX_LEVELS);
    for (int32_t l = 0; l < num_levels; l++)
        if (strides[l] <= 0)
            return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                                   "%s: strides[%d] = %d must be positive", what, (int)l,
                                   (int)strides[l]);
    return KS_STATUS_OK;
}

static const int32_t default_strides[3] = {8, 16, 32};

static int32_t grid_levels(int32_t num_levels, const int32_t *strides, const int32_t **out) {
    if (num_levels == 0) {
        *out = default_strides;
        return 3;
    }
    *out = strides;
    return num_levels;
}

ks_status ks__yolox_num_cells(const ks__yolox_options *opt, size_t *count_out, char *err,
                              size_t err_cap) {
    if (!opt || !count_out)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT, "yolox: NULL");
    ks_status st = check_grid("yolox", opt->input_width, opt->input_height, opt->num_classes,
                              opt->num_levels, opt->strides, err, err_cap);
    if (st != KS_STATUS_OK) return st;
    const int32_t *strides;
    int32_t nl = grid_levels(opt->num_levels, opt->strides, &strides);
    size_t n = 0;
    for (int32_t l = 0; l < nl; l++) {
        size_t gw = (size_t)((opt->input_width + strides[l] - 1) / strides[l]);
        size_t gh = (size_t)((opt->input_height + strides[l] - 1) / strides[l]);
        n += gw * gh;
    }
    *count_out = n;
    return KS_STATUS_OK;
}

static void emit_box(ks__detection *out, size_t cap, size_t *n, float x0, float y0, float x1,
                     float y1, float inv_w, float inv_h, float score, int32_t cls) {
    ks__detection d;
    memset(&d, 0, sizeof(d));
    d.xmin = x0 * inv_w, d.ymin = y0 * inv_h, d.xmax = x1 * inv_w, d.ymax = y1 * inv_h;
    d.score = score;
    d.class_id = cls;
    d.track_id = -1;
    if (box_valid(&d)) keep_best(out, cap, n, &d);
}

ks_status ks__yolox_decode(const ks__yolox_options *opt, const float *raw, size_t raw_count,
                           ks__detection *out, size_t cap, size_t *count_out, char *err,
                           size_t err_cap) {
    size_t cells;
    ks_status st = ks__yolox_num_cells(opt, &cells, err, err_cap);
    if (st != KS_STATUS_OK) return st;
    if (!raw || !out || !count_out)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT, "yolox: NULL");
    size_t row = 5 + (size_t)opt->num_classes;
    if (raw_count != cells * row)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_SHAPE,
                               "yolox: output has %zu values, expected %zu cells x %zu", raw_count,
                               cells, row);
    const int32_t *strides;
    int32_t nl = grid_levels(opt->num_levels, opt->strides, &strides);
    float inv_w = 1.0f / (float)opt->input_width, inv_h = 1.0f / (float)opt->input_height;
    size_t n = 0;
    const float *r = raw;
    for (int32_t l = 0; l < nl; l++) {
        int32_t s = strides[l];
        int32_t gw = (opt->input_width + s - 1) / s, gh = (opt->input_height + s - 1) / s;
        for (int32_t gy = 0; gy < gh; gy++) {
            for (int32_t gx = 0; gx < gw; gx++, r += row) {
                float obj = opt->apply_sigmoid ? ks__sigmoid(r[4]) : r[4];
                if (!(obj >= opt->min_score_thresh)) continue; /* obj*cls <= obj for cls <= 1 */
                float cx = (r[0] + (float)gx) * (float)s, cy = (r[1] + (float)gy) * (float)s;
                float w = expf(r[2]) * (float)s, h = expf(r[3]) * (float)s;
                float best = -INFINITY;
                int32_t best_c = -1;
                for (int32_t c = 0; c < opt->num_classes; c++) {
                    float p = opt->apply_sigmoid ? ks__sigmoid(r[5 + c]) : r[5 + c];
                    float score = obj * p;
                    if (opt->multi_label) {
                        if (score >= opt->min_score_thresh)
                            emit_box(out, cap, &n, cx - w * 0.5f, cy - h * 0.5f, cx + w * 0.5f,
                                     cy + h * 0.5f, inv_w, inv_h, score, c);
                    } else if (score > best) {
                        best = score, best_c = c;
                    }
                }
                if (!opt->multi_label && best_c >= 0 && best >= opt->min_score_thresh)
                    emit_box(out, cap, &n, cx - w * 0.5f, cy - h * 0.5f, cx + w * 0.5f,
                             cy + h * 0.5f, inv_w, inv_h, best, best_c);
            }
        }
    }
    *count_out = n;
    return KS_STATUS_OK;
}

#define NANODET_MAX_BINS 64

ks_status ks__nanodet_level_cells(const ks__nanodet_options *opt, int32_t level, size_t *count_out,
                                  char *err, size_t err_cap) {
    if (!opt || !count_out)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT, "nanodet: NULL");
    ks_status st = check_grid("nanodet", opt->input_width, opt->input_height, opt->num_classes,
                              opt->num_levels, opt->strides, err, err_cap);
    if (st != KS_STATUS_OK) return st;
    const int32_t *strides;
    int32_t nl = grid_levels(opt->num_levels, opt->strides, &strides);
    if (level < 0 || level >= nl)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "nanodet: level %d out of range [0, %d)", (int)level, (int)nl);
    int32_t s = strides[level];
    *count_out =
        (size_t)((opt->input_width + s - 1) / s) * (size_t)((opt->input_height + s - 1) / s);
    return KS_STATUS_OK;
}

/* Expected bin index of a softmax over `n` logits (the "integral" of GFL). */
static float dfl_integral(const float *logits, int32_t n) {
    float m = logits[0];
    for (int32_t i = 1; i < n; i++)
        m = fmaxf(m, logits[i]);
    float sum = 0.0f, acc = 0.0f;
    for (int32_t i = 0; i < n; i++) {
        float e = expf(logits[i] - m);
        sum += e;
        acc += e * (float)i;
    }
    return sum > 0.0f ? acc / sum : 0.0f;
}

ks_status ks__nanodet_decode(const ks__nanodet_options *opt, const float *const *cls,
                             const size_t *cls_counts, const float *const *reg,
                             const size_t *reg_counts, ks__detection *out, size_t cap,
                             size_t *count_out, char *err, size_t err_cap) {
    size_t cells;
    ks_status st = ks__nanodet_level_cells(opt, 0, &cells, err, err_cap);
    if (st != KS_STATUS_OK) return st;
    if (!cls || !cls_counts || !reg || !reg_counts || !out || !count_out)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT, "nanodet: NULL");
    int32_t reg_max = opt->reg_max == 0 ? 7 : opt->reg_max;
    if (reg_max < 1 || reg_max >= NANODET_MAX_BINS)
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "nanodet: reg_max %d out of range [1, %d]", (int)reg_max,
                               NANODET_MAX_BINS - 1);
    if (!isfinite(opt->center_offset))
        return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                               "nanodet: center_offset not finite");
    size_t bins = (size_t)reg_max + 1, ncls = (size_t)opt->num_classes;
    const int32_t *strides;
    int32_t nl = grid_levels(opt->num_levels, opt->strides, &strides);
    for (int32_t l = 0; l < nl; l++) {
        st = ks__nanodet_level_cells(opt, l, &cells, err, err_cap);
        if (st != KS_STATUS_OK) return st;
        if (!cls[l] || !reg[l])
            return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                                   "nanodet: level %d tensor is NULL", (int)l);
        if (cls_counts[l] != cells * ncls || reg_counts[l] != cells * 4 * bins)
            return ks__vision_fail(err, err_cap, KS_STATUS_INVALID_SHAPE,
                                   "nanodet: level %d (stride %d) has cls %zu / reg %zu values, "
                                   "expected %zu x %zu / %zu x %zu",
                                   (int)l, (int)strides[l], cls_counts[l], reg_counts[l], cells,
                                   ncls, cells, 4 * bins);
    }
    float inv_w = 1.0f / (float)opt->input_width, inv_h = 1.0f / (float)opt->input_height;
    size_t n = 0;
    for (int32_t l = 0; l < nl; l++) {
        int32_t s = strides[l];
        int32_t gw = (opt->input_width + s - 1) / s, gh = (opt->input_height + s - 1) / s;
        for (int32_t gy = 0; gy < gh; gy++) {
            for (int32_t gx = 0; gx < gw; gx++) {
                size_t cell = (size_t)gy * (size_t)gw + (size_t)gx;
                const float *c = cls[l] + cell * ncls;
                float best = -INFINITY;
                int32_t best_c = -1;
                bool any = false;
                for (size_t k = 0; k < ncls; k++) {
                    float p = opt->apply_sigmoid ? ks__sigmoid(c[k]) : c[k];
                    if (p >= opt->min_score_thresh) any = true;
                    if (p > best) best = p, best_c = (int32_t)k;
                }
                if (!any) continue; /* the softmax integrals are the expensive part */
                const float *rg = reg[l] + cell * 4 * bins;
                float cx = ((float)gx + opt->center_offset) * (float)s;
                float cy = ((float)gy + opt->center_offset) * (float)s;
                float left = dfl_integral(rg, (int32_t)bins) * (float)s;
                float top = dfl_integral(rg + bins, (int32_t)bins) * (float)s;
                float right = dfl_integral(rg + 2 * bins, (int32_t)bins) * (float)s;
                float bottom = dfl_integral(rg + 3 * bins, (int32_t)bins) * (float)s;
                if (!opt->multi_label) {
                    emit_box(out, cap, &n, cx - left, cy - top, cx + right, cy + bottom, inv_w,
                             inv_h, best, best_c);
                    continue;
                }
                for (size_t k = 0; k < ncls; k++) {
                    float p = opt->apply_sigmoid ? ks__sigmoid(c[k]) : c[k];
                    if (p >= opt->min_score_thresh)
                        emit_box(out, cap, &n, cx - left, cy - top, cx + right, cy + bottom, inv_w,
                                 inv_h, p, (int32_t)k);
                }
            }
        }
    }
    *count_out = n;
    return KS_STATUS_OK;
}
