/* Tracking and smoothing building blocks: One Euro filter, landmark smoother, an IoU tracker
 * with stable ids, and temporal mask smoothing. Internal to Kestrel; not a published API.
 *
 * Usage (per frame, timestamps in microseconds):
 *     ks__tracker tr;
 *     ks__tracker_init(&tr, &(ks__tracker_options){.min_hits = 2});
 *     ks__tracker_update(&tr, faces, num_faces);    // faces[i].track_id set (or -1)
 *
 *     ks__landmark_smoother *sm = NULL;
 *     ks__landmark_smoother_create(NULL, 468, &(ks__one_euro_params){0}, &sm);
 *     ks__landmark_smoother_apply(sm, lm, 468, roi_size_px, timestamp_us);
 *     ks__landmark_smoother_destroy(sm);
 *
 *     ks__mask_smooth(mask, prev_mask, prev_mask, num_px, 0.9f);  // in place over prev
 *
 * Thread safety: a filter, smoother or tracker object must not be used by two threads at once;
 * distinct objects are independent. Only ks__landmark_smoother_create allocates.
 */
#ifndef KESTREL_ALGOS_TRACKING_H
#define KESTREL_ALGOS_TRACKING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kestrel/kestrel.h"
#include "detection.h"
#include "landmarks.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- One Euro filter (Casiez et al. 2012; MediaPipe OneEuroFilter) ---------------------- */

/* Zero means the default shown. */
typedef struct ks__one_euro_params {
    float frequency_hz; /* assumed rate before two timestamps are seen; default 30 */
    float min_cutoff;   /* Hz, smoothing at rest; default 1.0 */
    float beta;         /* speed coefficient (per unit of scaled value per second); default 0 */
    float d_cutoff;     /* Hz, derivative smoothing; default 1.0 */
} ks__one_euro_params;

typedef struct ks__one_euro {
    ks__one_euro_params p;
    float frequency_hz;
    int64_t last_timestamp_us;
    bool has_timestamp;
    bool has_value;
    float raw_prev, x_prev, dx_prev;
} ks__one_euro;

void ks__one_euro_init(ks__one_euro *f, const ks__one_euro_params *params);
void ks__one_euro_reset(ks__one_euro *f);
/* Filters one sample. value_scale multiplies the derivative (1 / object size makes beta
 * independent of distance). A timestamp not after the previous one returns `value` unfiltered
 * and leaves the state alone (MediaPipe semantics). */
float ks__one_euro_apply(ks__one_euro *f, float value, float value_scale, int64_t timestamp_us);

/* ---- landmark smoother (MediaPipe LandmarksSmoothingCalculator, one-euro variant) ------- */

typedef struct ks__landmark_smoother ks__landmark_smoother;

/* Allocates the state of 3 filters per landmark (one array per quantity) through `alloc`
 * (NULL: malloc). */
ks_status ks__landmark_smoother_create(const ks_allocator *alloc, size_t num_landmarks,
                                       const ks__one_euro_params *params,
                                       ks__landmark_smoother **out);
void ks__landmark_smoother_destroy(ks__landmark_smoother *s);
/* Forgets history (call when the tracked object is lost). */
void ks__landmark_smoother_reset(ks__landmark_smoother *s);
/* Smooths x, y, z in place. object_scale is the object's size in the landmarks' units (for
 * image-normalized landmarks: the ROI's mean side, normalized); derivatives are divided by it.
 * n must equal the count given at create (else INVALID_ARGUMENT, landmarks untouched). */
ks_status ks__landmark_smoother_apply(ks__landmark_smoother *s, ks__landmark *lm, size_t n,
                                      float object_scale, int64_t timestamp_us);

/* ---- tracker: stable integer ids across frames -------------------------------------------- */

#define KS__TRACKER_MAX_TRACKS 64
#define KS__TRACKER_MAX_DETECTIONS 256

/* Zero means the default shown. */
typedef struct ks__tracker_options {
    float iou_threshold;       /* minimum IoU to match a detection to a track; default 0.3 */
    int32_t max_missed_frames; /* a track survives this many frames unmatched; default 2 */
    int32_t min_hits;          /* matches before a track is confirmed and gets its id shown;
                                  default 1 (immediate) */
    bool per_class;            /* only match detections of the track's class */
} ks__tracker_options;

typedef struct ks__track {
    int32_t id;
    int32_t hits;   /* frames matched */
    int32_t missed; /* consecutive frames unmatched */
    bool confirmed;
    ks__detection det; /* last matched box; predicted at det + v * (missed + 1) */
    float vx, vy;      /* box centre velocity, normalized units per frame */
} ks__track;

typedef struct ks__tracker {
    ks__tracker_options opt;
    int32_t next_id;
    size_t num_tracks;
    ks__track tracks[KS__TRACKER_MAX_TRACKS];
} ks__tracker;

void ks__tracker_init(ks__tracker *t, const ks__tracker_options *opt);
/* Associates `dets` with the tracks (greedy by IoU against each track's velocity-predicted box),
 * updates the tracks, starts new ones and drops those missed too long. Writes dets[i].track_id:
 * the track's id when confirmed, else -1. Detections beyond KS__TRACKER_MAX_DETECTIONS or
 * beyond the track capacity get -1. Ids start at 1 and are never reused. */
void ks__tracker_update(ks__tracker *t, ks__detection *dets, size_t n);

/* ---- temporal mask smoothing (MediaPipe SegmentationSmoothingCalculator) ----------------- */

/* out[i] = cur + (prev - cur) * u(cur) * combine_with_previous_ratio, where
 * u(p) = 1 - (1 - H(p))^2 and H is the binary entropy in bits: uncertain pixels (p near 0.5)
 * lean on the previous mask, confident ones follow the new one. prev NULL copies cur. out may
 * alias cur or prev. Values are clamped to [0, 1] before u is computed. */
void ks__mask_smooth(const float *cur, const float *prev, float *out, size_t n,
                     float combine_with_previous_ratio);

/* ---- separable bilinear mask resampling -------------------------------------------------- */

/* Taps and scratch of a resampling to an output width: output column x blends source columns
 * col0[x] and col1[x] with weight colw[x] on col1; hrow[0..1] hold horizontally interpolated
 * source rows. The caller fills the column taps (its own sampling convention). */
typedef struct ks__resample {
    int32_t *col0, *col1;
    float *colw;
    float *hrow[2];
    size_t cap;    /* entries of each array */
    int32_t src_w; /* source values per row the taps read (0: unknown) */
} ks__resample;

/* Grows every array to at least n entries (contents undefined after a growth); false when out
 * of memory, leaving r empty. */
bool ks__resample_reserve(ks__resample *r, const ks_allocator *alloc, size_t n);
void ks__resample_free(ks__resample *r, const ks_allocator *alloc);

/* Output row y's source rows y0, y1 and the weight of y1. */
typedef void (*ks__resample_row_fn)(const void *ctx, int32_t y, int32_t *y0, int32_t *y1,
                                    float *wy);

/* Fills r's column taps (r holds at least dw entries) for sw source columns to dw outputs with
 * pixel-centre alignment and edge clamping (OpenCV INTER_LINEAR): the segmenter's upsampling. */
void ks__resample_columns(ks__resample *r, int32_t sw, int32_t dw);

/* The rows of that rule: ctx is a ks__resample_rows (sh source rows, sy = sh / dh). */
typedef struct ks__resample_rows {
    int32_t sh;
    float sy;
} ks__resample_rows;
void ks__resample_row_tap(const void *ctx, int32_t y, int32_t *y0, int32_t *y1, float *wy);

/* Resamples a float plane (rows src_stride floats apart) into dst_w x dst_h floats at dst (rows
 * dst_stride apart) through r's column taps and row_tap's rows, clamped to [0, 1] (NaN -> 0).
 * Each source row is interpolated horizontally once (a source row serves several output rows
 * when upsampling), then output rows blend two of those (a loop the compiler vectorizes); the
 * same float expressions as a per-pixel evaluation. num_ge_half (may be NULL) gets the count of
 * outputs >= 0.5. */
void ks__mask_resample(ks__resample *r, const float *src, size_t src_stride,
                       ks__resample_row_fn row_tap, const void *row_ctx, float *dst, int32_t dst_w,
                       int32_t dst_h, size_t dst_stride, size_t *num_ge_half);

#ifdef __cplusplus
}
#endif

#endif /* KESTREL_ALGOS_TRACKING_H */
