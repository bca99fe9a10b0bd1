/* Landmark fixture files: face-landmarker results saved as JSON, so renderer tests and ks-ar
 * runs do not depend on the models (desktop tools/tests only; not part of kestrel_ar).
 *
 * Format: the JSON that `ks-vision face_landmarks IMAGE --json` prints, plus optional keys:
 *     {"width": W, "height": H,                      (frame size the landmarks belong to)
 *      "faces": [{"id": 1,                           (tracking id; default -1)
 *                 "landmarks": [[x, y, z], ...],     (468 or 478 points, pixels; required)
 *                 "pose_matrix": [16 numbers],       (row-major, optional)
 *                 "projection_matrix": [16],         (row-major, optional: default camera)
 *                 "expressions": {"mouth_open": s, "left_eye_blink": s, "right_eye_blink": s,
 *                                 "brow_raise": s, "smile": s}},   (optional, each [0, 1])
 *                ...]}                               (at most KS_AR_MAX_FACES faces)
 * Other keys ("box", "euler_deg", "source", ...) are ignored. Limits: the file is at most
 * KS_AR_FIXTURE_MAX_BYTES; every number must be finite and |x| <= 1e6.
 *
 * Usage:
 *     ks_ar_fixture *fx = malloc(sizeof(*fx));
 *     if (ks_ar_fixture_load("face.json", fx, err, sizeof(err))) fail(err);
 *     ks_ar_frame frame = { ..., .num_faces = fx->num_faces, .faces = fx->faces };
 */
#ifndef KESTREL_AR_LANDMARK_FIXTURE_H
#define KESTREL_AR_LANDMARK_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "kestrel/ar.h"

#define KS_AR_FIXTURE_MAX_BYTES (4u << 20)

typedef struct ks_ar_fixture {
    int32_t width_px, height_px; /* 0 when absent */
    uint32_t num_faces;
    ks_ar_face faces[KS_AR_MAX_FACES]; /* landmarks_xyz point into `landmarks` below */
    float landmarks[KS_AR_MAX_FACES][KS_AR_MAX_LANDMARKS * 3];
} ks_ar_fixture;

/* Parses `size_bytes` bytes of JSON (need not be NUL-terminated). On failure `out` is
 * unspecified and err names the JSON path and the offending value. */
ks_status ks_ar_fixture_parse(const char *json, size_t size_bytes, ks_ar_fixture *out, char *err,
                              size_t err_cap);
/* Reads and parses a file (IO_ERROR if unreadable; LIMIT_EXCEEDED over the size cap). */
ks_status ks_ar_fixture_load(const char *path, ks_ar_fixture *out, char *err, size_t err_cap);
/* Scales every landmark (x, y, z) by (sx, sy, sx) and the frame size, for a frame rendered at
 * another size than the fixture's. */
void ks_ar_fixture_scale(ks_ar_fixture *fx, float sx, float sy);

#endif /* KESTREL_AR_LANDMARK_FIXTURE_H */
