/* Internal face-task helpers and counters for tests and benchmarks (not part of the public API). */
#ifndef KESTREL_FACE_INTERNAL_H
#define KESTREL_FACE_INTERNAL_H

#include <stdint.h>

#include "kestrel/face.h"

typedef struct ks__face_lm_stats {
    uint64_t num_frames;        /* frames processed without error */
    uint64_t num_detector_runs; /* frames on which the face detector model ran */
    uint64_t num_landmark_runs; /* frames on which the face mesh model ran (all faces) */
    double detector_mean_us;    /* mean time of one detector model run */
    double landmarks_mean_us;   /* mean time of one face mesh model run */
} ks__face_lm_stats;

/* Reads the counters of `lm`'s pipeline (they accumulate from creation; IMAGE-mode resets do
 * not clear them). KS_STATUS_INVALID_ARGUMENT for NULL arguments. */
ks_status ks__face_landmarker_stats(const ks_face_landmarker *lm, ks__face_lm_stats *out);

/* Detector score threshold when the desc leaves min_score 0: each BlazeFace model's own candidate
 * threshold (MediaPipe's face_detection_{short,full}_range graphs: 0.5 and 0.6; the face
 * detector bundles' graphs carry the same defaults). The threshold
 * decides which candidates the weighted NMS blends into a face's box: decoding the full-range
 * model at 0.5 pulled weak, offset candidates into small faces' boxes (box IoU 0.80 with
 * MediaPipe on opencv_messi5's 30 px face, 0.9987 at 0.6). */
static inline float ks__face_default_min_score(ks_face_detector_model model) {
    return model == KS_FACE_DETECTOR_FULL_RANGE ? 0.6f : 0.5f;
}

#endif /* KESTREL_FACE_INTERNAL_H */
