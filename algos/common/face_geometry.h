/* Face geometry: MediaPipe's geometry_pipeline_metadata (canonical face mesh + Procrustes
 * landmark basis) reader, the weighted orthogonal Procrustes solver, head pose (4x4 matrix and
 * Euler angles) from 468 screen landmarks, the perspective projection matrix, and expression
 * measures. Internal to Kestrel; not a published API.
 *
 * Usage:
 *     ks__face_geometry_metadata *md = NULL;
 *     ks__face_geometry_parse(NULL, file_bytes, file_size, &md, err, sizeof(err));
 *     float *ws = malloc(ks__face_geometry_workspace_floats(md) * sizeof(float));  // once
 *     ks__face_pose pose;
 *     ks__face_geometry_estimate(md, NULL, lm, 468, 1280, 720, ws, metric_xyz, &pose, err, n);
 *     ks__face_expressions ex;
 *     ks__face_expressions_compute(metric_xyz, 468, &ex);
 *     ks__face_geometry_metadata_destroy(md);
 *
 * File format (protobuf wire format, see engine/base/pb.h), message
 * GeometryPipelineMetadata:
 *     1 canonical_mesh: Mesh3d (LEN)
 *         1 vertex_type (varint; 0 = VERTEX_PT: x, y, z, u, v per vertex)
 *         2 primitive_type (varint; 0 = TRIANGLE)
 *         3 vertex_buffer: repeated float (fixed32, packed or not)
 *         4 index_buffer: repeated uint32 (varint, packed or not)
 *     2 procrustes_landmark_basis: repeated WeightedLandmarkRef (LEN)
 *         1 landmark_id (varint uint32), 2 weight (fixed32 float)
 *     3 input_source (varint; 0 DEFAULT, 1 FACE_LANDMARK_PIPELINE, 2 FACE_DETECTION_PIPELINE)
 * Unknown fields are skipped. Validation: vertex_buffer a multiple of 5 floats, all finite;
 * index_buffer a multiple of 3, every index < vertex count; basis ids < vertex count, weights
 * finite and >= 0 with a positive sum; counts capped by KS__FACE_GEOMETRY_MAX_VERTICES.
 *
 * Matrices are 4x4 float[16] in COLUMN-MAJOR order (m[col * 4 + row], OpenGL / MediaPipe
 * MatrixData layout) and act on column vectors: p_camera = M * p_canonical.
 *
 * Spaces: the canonical mesh is in centimetre-like metric units, x to the subject's left (image
 * right for a frontal face), y up, z out of the face towards the camera. The camera sits at the
 * origin looking down -z (OpenGL convention).
 *
 * Euler angles (degrees), R = Ry(yaw) * Rx(pitch) * Rz(roll), rotation part of the pose matrix:
 *     pitch > 0: nose turns down (head nods forward); yaw > 0: nose turns towards image right
 *     (the subject's left); roll > 0: head tilts counter-clockwise as seen in the image.
 * Frontal face: all three near 0.
 *
 * Thread safety: metadata is immutable after parse and may be shared; each concurrent estimate
 * needs its own workspace.
 */
#ifndef KESTREL_ALGOS_FACE_GEOMETRY_H
#define KESTREL_ALGOS_FACE_GEOMETRY_H

#include <stddef.h>
#include <stdint.h>

#include "kestrel/kestrel.h"
#include "landmarks.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS__FACE_GEOMETRY_MAX_VERTICES 65536
#define KS__FACE_GEOMETRY_MAX_INDICES (3 * 262144)

typedef struct ks__face_geometry_metadata {
    int32_t input_source;
    uint32_t num_vertices;
    float *vertices; /* [num_vertices * 5]: x, y, z, u, v */
    uint32_t num_indices;
    uint32_t *indices; /* triangles */
    uint32_t num_basis;
    uint32_t *basis_ids;
    float *basis_weights;
    ks_allocator alloc; /* private */
} ks__face_geometry_metadata;

/* Parses a binarypb image. `data` is not kept. Free with ks__face_geometry_metadata_destroy.
 * Errors: INVALID_MODEL (malformed or inconsistent, message names the field and value),
 * LIMIT_EXCEEDED, OUT_OF_MEMORY, INVALID_ARGUMENT. */
ks_status ks__face_geometry_parse(const ks_allocator *alloc, const uint8_t *data, size_t size_bytes,
                                  ks__face_geometry_metadata **out, char *err, size_t err_cap);
void ks__face_geometry_metadata_destroy(ks__face_geometry_metadata *md);

/* Zero means the default shown (MediaPipe face_geometry environment). */
typedef struct ks__perspective_camera {
    float vertical_fov_deg; /* 63 */
    float near_plane;       /* 1 */
    float far_plane;        /* 10000 */
} ks__perspective_camera;

/* Weighted orthogonal Procrustes: finds s, R (proper rotation), t minimising
 * sum_i w_i |s R src_i + t - dst_i|^2. src/dst are xyz triples. Writes the column-major 4x4
 * [sR t; 0 1]. Fails (INVALID_ARGUMENT) on non-positive total weight or degenerate source. */
ks_status ks__procrustes_solve(const float *src_xyz, const float *dst_xyz, const float *weights,
                               size_t n, float transform_out[16]);

/* Unit eigenvector of the largest eigenvalue of a symmetric 4x4 (Horn's quaternion matrix):
 * ks__sym4_max_eigenvector by the characteristic polynomial and the adjugate, with cyclic
 * Jacobi (ks__sym4_max_eigenvector_jacobi, which overwrites a) where that eigenvalue is nearly
 * repeated. The sign is arbitrary. */
void ks__sym4_max_eigenvector(const double a[4][4], double v_out[4]);
void ks__sym4_max_eigenvector_jacobi(double a[4][4], double v_out[4]);

typedef struct ks__face_pose {
    float pose_matrix[16]; /* canonical -> camera metric space, column-major */
    float scale;           /* uniform scale in the pose matrix (1 for a canonical-size face) */
    float pitch_deg, yaw_deg, roll_deg;
    float translation[3]; /* face origin in camera metric space (z < 0 in front of camera) */
} ks__face_pose;

/* Floats of workspace ks__face_geometry_estimate needs. */
size_t ks__face_geometry_workspace_floats(const ks__face_geometry_metadata *md);

/* MediaPipe GeometryPipeline (FACE_LANDMARK_PIPELINE): screen landmarks (image-normalized x, y;
 * z scaled like x, as ks__landmarks_project outputs) -> metric landmarks and pose. Uses the first
 * md->num_vertices landmarks (n may be larger, e.g. 478 with iris). metric_xyz_out
 * ([num_vertices * 3], optional) receives the metric landmarks in canonical space (the
 * inverse pose applied), i.e. the deformed face mesh. */
ks_status ks__face_geometry_estimate(const ks__face_geometry_metadata *md,
                                     const ks__perspective_camera *camera, const ks__landmark *lm,
                                     size_t n, int32_t frame_width, int32_t frame_height,
                                     float *workspace, float *metric_xyz_out,
                                     ks__face_pose *pose_out, char *err, size_t err_cap);

/* OpenGL-style perspective projection for the same camera (column-major), aspect =
 * frame_width / frame_height. */
void ks__face_geometry_projection(const ks__perspective_camera *camera, int32_t frame_width,
                                  int32_t frame_height, float m_out[16]);

/* Euler angles (degrees, convention above) of the rotation part of a column-major pose matrix
 * (scale removed). */
void ks__pose_euler_deg(const float m[16], float *pitch_out, float *yaw_out, float *roll_out);

/* Expression measures in [0, 1] from 468 face-mesh points (xyz triples; best from the metric
 * canonical-space output, where head rotation is removed; image-space points also work for
 * near-frontal faces). All are ratios of distances, so scale-invariant; 0 at the canonical
 * (neutral) face. Landmark indices (MediaPipe face mesh, "left" = subject's left):
 *   mouth_open: |13 - 14| (inner lips) / |61 - 291| (mouth corners), minus neutral, /0.6
 *   eye blink (right eye 33,133 / 160,144 / 158,153; left eye 263,362 / 387,373 / 385,380):
 *       eye aspect ratio EAR = (|upper1-lower1| + |upper2-lower2|) / (2 |corner-corner|),
 *       blink = 1 - EAR / EAR_neutral, rescaled so EAR at 25% of neutral reads 1
 *   brow raise (right 105 over 159, left 334 over 386): brow-to-upper-lid distance / inter-ocular
 *       distance |33 - 263|, relative to neutral, +40% reads 1
 *   smile: mouth width |61 - 291| / inter-ocular distance, relative to neutral, +25% reads 1,
 *       averaged with the corner lift (corners above the 13/14 lip centre, in inter-ocular units)
 * Fewer than 468 points: all zero. */
typedef struct ks__face_expressions {
    float mouth_open;
    float left_eye_blink, right_eye_blink;
    float left_brow_raise, right_brow_raise;
    float smile;
} ks__face_expressions;

void ks__face_expressions_compute(const float *xyz, size_t n, ks__face_expressions *out);
/* The un-normalized ratios behind the measures (right EAR, left EAR, right brow, left brow, mouth
 * width, corner lift), for calibration and tests. xyz must hold >= 468 points. */
void ks__face_expressions_raw(const float *xyz, float raw_out[6]);

#ifdef __cplusplus
}
#endif

#endif /* KESTREL_ALGOS_FACE_GEOMETRY_H */
