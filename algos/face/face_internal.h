/* Internal face-landmarker counters for tests and benchmarks (not part of the public API). */
#ifndef KESTREL_FACE_INTERNAL_H
#define KESTREL_FACE_INTERNAL_H

#include <stdint.h>

#include "kestrel/face.h"

typedef struct ks__face_lm_stats {
    uint64_t num_detector_runs; /* frames on which the face detector model ran */
    uint64_t num_landmark_runs; /* frames on which the face mesh model ran */
    double detector_mean_us;    /* mean time of one detector model run */
    double landmarks_mean_us;   /* mean time of one face mesh model run */
} ks__face_lm_stats;

/* Reads the counters of `lm`'s pipeline (they accumulate from creation; IMAGE-mode resets do
 * not clear them). KS_STATUS_INVALID_ARGUMENT for NULL arguments. */
ks_status ks__face_landmarker_stats(const ks_face_landmarker *lm, ks__face_lm_stats *out);

#endif /* KESTREL_FACE_INTERNAL_H */
