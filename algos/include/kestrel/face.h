/* Kestrel face tasks: face detection (BlazeFace) and the face landmarker (468-point face mesh,
 * optionally 478 with irises, head pose and expressions).
 *
 * Usage (a camera stream):
 *     ks_face_landmarker *fl = NULL;
 *     ks_face_landmarker_desc desc = { .task = { .mode = KS_MODE_VIDEO } };
 *     if (ks_face_landmarker_create(&desc, &fl)) fprintf(stderr, "%s\n", ks_last_error(NULL));
 *     for (each frame) {
 *         ks_face_meshes *faces = NULL;
 *         if (ks_face_landmarker_detect(fl, &frame, timestamp_us, &faces) == KS_STATUS_OK) {
 *             for (uint32_t i = 0; i < faces->count; i++) {
 *                 const ks_face_mesh *f = &faces->items[i];
 *                 draw(f->landmarks, f->num_landmarks); printf("yaw %.0f\n", f->yaw_deg);
 *             }
 *             ks_face_meshes_release(faces);
 *         } else fprintf(stderr, "%s\n", ks_last_error(fl));
 *     }
 *     ks_face_landmarker_destroy(fl);
 *
 * Default bundles (in ks_models_dir(), see docs/tasks.md): face_detector_short.ksb,
 * face_detector_full.ksb, face_landmarker.ksb, face_landmarker_attention.ksb.
 *
 * Coordinates: pixels of the upright input image (after desc rotation and mirror), boxes
 * {x, y, w, h}; landmark z is in pixels too (the scale of x), relative to the face centre, smaller
 * is closer to the camera.
 *
 * Thread safety: a detector or landmarker is used by one thread at a time; separate objects may
 * run concurrently. Result structs are plain data owned by the caller until released.
 */
#ifndef KESTREL_FACE_H
#define KESTREL_FACE_H

#include "kestrel/vision.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which BlazeFace model the detector runs. */
typedef enum ks_face_detector_model {
    KS_FACE_DETECTOR_SHORT_RANGE = 0, /* default: 128x128, faces within ~2 m (selfies) */
    KS_FACE_DETECTOR_FULL_RANGE = 1,  /* 192x192, faces up to ~5 m (group photos) */
    KS_FACE_DETECTOR_MODEL_COUNT
} ks_face_detector_model;

/* "short_range", "full_range"; "invalid" otherwise. */
KS_API const char *ks_face_detector_model_string(ks_face_detector_model model);

/* ---- face detector -------------------------------------------------------------------------- */

/* Zero means the default shown. */
typedef struct ks_face_detector_desc {
    ks_task_options task;         /* min_score 0: the model's own threshold, as MediaPipe's
                                     graphs (0.5 short range, 0.6 full range); max_results 0:
                                     all (<= 256) */
    ks_face_detector_model model; /* short range */
    /* Small faces (IMAGE mode): 0 or 1 runs the detector once over the whole image; N in 2..4
     * also runs it on N x N overlapping tiles (each 1.35 / N of the image's width and height,
     * letterboxed into the model on its own) and merges the faces of every pass, so faces of
     * 20-30 px in a 640-px photo reach the model large enough: N * N + 1 detector runs per
     * call. Best with KS_FACE_DETECTOR_FULL_RANGE (docs/tasks.md, "Small faces"). */
    int32_t tiles;
} ks_face_detector_desc;

/* Keypoint order of ks_face.keypoints (the subject's right eye is on the image's left). */
typedef enum ks_face_keypoint {
    KS_FACE_KEYPOINT_RIGHT_EYE = 0,
    KS_FACE_KEYPOINT_LEFT_EYE = 1,
    KS_FACE_KEYPOINT_NOSE_TIP = 2,
    KS_FACE_KEYPOINT_MOUTH = 3,
    KS_FACE_KEYPOINT_RIGHT_EAR = 4,
    KS_FACE_KEYPOINT_LEFT_EAR = 5,
    KS_FACE_KEYPOINT_COUNT
} ks_face_keypoint;

typedef struct ks_face {
    ks_box box;
    float score; /* 0..1 */
    int32_t id;  /* VIDEO: tracking id, stable while the face stays in view (>= 1); IMAGE: -1 */
    ks_point2f keypoints[KS_FACE_KEYPOINT_COUNT];
} ks_face;

/* Faces sorted by descending score. Free with ks_faces_release. */
typedef struct ks_faces {
    uint32_t count;
    ks_face *items;
} ks_faces;

typedef struct ks_face_detector ks_face_detector;

/* Loads the bundle (desc->task.model_path or the default for desc->model) and builds the
 * pipeline. desc may be NULL (all defaults). On failure see ks_last_error(NULL). */
KS_API ks_status ks_face_detector_create(const ks_face_detector_desc *desc, ks_face_detector **out);
/* NULL is a no-op. */
KS_API void ks_face_detector_destroy(ks_face_detector *det);
/* Where the ks_face_detect calls spent their time (see ks_task_stats in vision.h). */
KS_API ks_status ks_face_detector_stats(const ks_face_detector *det, ks_task_stats *stats_out);
/* Live swap (vision.h, "Live swap"): loads source->model_path with source's key fields and
 * makes the next call run it. VIDEO ids stay unique: the new graph's tracker starts afresh, its ids
 * above every id reported before. */
KS_API ks_status ks_face_detector_swap_model(ks_face_detector *det, const ks_task_options *source);
/* Detects faces in `image` (not kept). timestamp_us must increase in VIDEO mode (ignored in
 * IMAGE mode). *out is written on success only (possibly with count 0); details of a failure
 * in ks_last_error(det). */
KS_API ks_status ks_face_detect(ks_face_detector *det, const ks_image *image, int64_t timestamp_us,
                                ks_faces **out);
/* NULL is a no-op. */
KS_API void ks_faces_release(ks_faces *faces);

/* ---- face landmarker ------------------------------------------------------------------------ */

#define KS_FACE_MESH_NUM_LANDMARKS 468
#define KS_FACE_MESH_NUM_LANDMARKS_WITH_IRIS 478
#define KS_FACE_MAX_FACES 16 /* upper bound of ks_face_landmarker_desc.task.max_results */

/* Zero means the default shown. */
typedef struct ks_face_landmarker_desc {
    ks_task_options task;            /* min_score 0: the detector's default (see above);
                                        max_results 0: 1 face, at most KS_FACE_MAX_FACES */
    ks_face_detector_model detector; /* short range */
    int32_t refine_landmarks;        /* nonzero: 478 points with irises (attention model) */
    float min_tracking_score;        /* 0: 0.5; below it the face is lost and redetected */
} ks_face_landmarker_desc;

/* Each in [0, 1]; 0 at a neutral face. */
typedef struct ks_face_expressions {
    float mouth_open;
    float left_eye_blink, right_eye_blink; /* the subject's left / right */
    float brow_raise;                      /* mean of both brows */
    float smile;
} ks_face_expressions;

typedef struct ks_face_mesh {
    ks_box box;             /* bounding box of the landmarks */
    float score;            /* face presence from the landmark model, 0..1 */
    int32_t id;             /* VIDEO: stays the same while the face is tracked (>= 1); IMAGE: -1 */
    uint32_t num_landmarks; /* 468 or 478 */
    ks_point3f *landmarks;  /* pixels (see the coordinates note above) */
    /* Head pose (degrees): pitch > 0 looks down, yaw > 0 turns towards the image's right,
     * roll > 0 tilts counter-clockwise in the image. */
    float pitch_deg, yaw_deg, roll_deg;
    /* Canonical face model (cm) -> camera space, ROW-major 4x4 (translate in [3], [7], [11]);
     * camera at the origin looking down -z, 63 degree vertical field of view. */
    float pose_matrix[16];
    float projection_matrix[16]; /* row-major OpenGL perspective for that camera */
    ks_face_expressions expressions;
} ks_face_mesh;

/* Free with ks_face_meshes_release (frees the landmark arrays too). */
typedef struct ks_face_meshes {
    uint32_t count;
    ks_face_mesh *items;
} ks_face_meshes;

typedef struct ks_face_landmarker ks_face_landmarker;

/* desc may be NULL. On failure see ks_last_error(NULL). */
KS_API ks_status ks_face_landmarker_create(const ks_face_landmarker_desc *desc,
                                           ks_face_landmarker **out);
/* NULL is a no-op. */
KS_API void ks_face_landmarker_destroy(ks_face_landmarker *lm);
/* Where the ks_face_landmarker_detect calls spent their time (see ks_task_stats in vision.h). */
KS_API ks_status ks_face_landmarker_stats(const ks_face_landmarker *lm, ks_task_stats *stats_out);
/* Live swap (vision.h, "Live swap"): loads source->model_path with source's key fields and
 * makes the next call run it. VIDEO tracks (ids, smoothing) carry over. */
KS_API ks_status ks_face_landmarker_swap_model(ks_face_landmarker *lm,
                                               const ks_task_options *source);
/* Finds up to task.max_results faces. In VIDEO mode each face is tracked into the next frame
 * from its landmarks and keeps its id; the detector runs while fewer faces than max_results are
 * tracked: every frame while none is, else once every 15 frames (so a steady scene rarely runs
 * it). Tracks that converge on one face are merged (the older id stays). Landmarks are smoothed
 * per face (One Euro). Results are sorted by id in VIDEO mode, best detection first in IMAGE
 * mode. */
KS_API ks_status ks_face_landmarker_detect(ks_face_landmarker *lm, const ks_image *image,
                                           int64_t timestamp_us, ks_face_meshes **out);
/* NULL is a no-op. */
KS_API void ks_face_meshes_release(ks_face_meshes *faces);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_FACE_H */
