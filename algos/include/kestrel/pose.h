/* Kestrel pose landmarker: 33 body landmarks (BlazePose GHUM topology), world landmarks in
 * meters and an optional person mask, for one or several people.
 *
 * Usage:
 *     ks_pose_landmarker *pl = NULL;
 *     ks_pose_landmarker_desc desc = { .task = { .mode = KS_MODE_VIDEO, .max_results = 2 },
 *                                      .model = KS_POSE_MODEL_LITE };
 *     if (ks_pose_landmarker_create(&desc, &pl)) fprintf(stderr, "%s\n", ks_last_error(NULL));
 *     ks_poses *poses = NULL;
 *     if (ks_pose_detect(pl, &img, timestamp_us, &poses) == KS_STATUS_OK) {
 *         for (uint32_t i = 0; i < poses->count; i++) {
 *             const ks_pose *p = &poses->items[i];
 *             draw(p->landmarks[KS_POSE_LEFT_SHOULDER].x, p->landmarks[...].y);
 *         }
 *         ks_poses_release(poses);
 *     } else {
 *         fprintf(stderr, "%s\n", ks_last_error(pl));
 *     }
 *     ks_pose_landmarker_destroy(pl);
 *
 * Pipeline (MediaPipe's pose graph): pose detector (224x224 SSD, 2254 anchors, 4 keypoints)
 * -> weighted NMS -> rotated square ROI from the hip centre and the scale keypoint (x1.25) ->
 * landmark model (256x256) per ROI -> 33 landmarks + 2 auxiliary ones that give the next
 * frame's ROI. In KS_MODE_VIDEO the detector runs only while fewer than max_results people are
 * tracked, ids stay stable while a person is tracked, and landmarks are One Euro smoothed.
 *
 * Default bundles (task.model_path NULL): pose_landmarker_{full,lite,heavy}.ksb in
 * ks_models_dir() (see docs/tasks.md).
 *
 * Thread safety: a ks_pose_landmarker is used by one thread at a time; different landmarkers
 * may run concurrently. ks_poses results are plain data owned by the caller until released.
 */
#ifndef KESTREL_POSE_H
#define KESTREL_POSE_H

#include "kestrel/vision.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS_POSE_NUM_LANDMARKS 33
#define KS_POSE_MAX_RESULTS 16 /* upper bound of task.max_results */

/* Landmark indices (MediaPipe/BlazePose order). "Left" is the person's left. */
typedef enum ks_pose_landmark_index {
    KS_POSE_NOSE = 0,
    KS_POSE_LEFT_EYE_INNER = 1,
    KS_POSE_LEFT_EYE = 2,
    KS_POSE_LEFT_EYE_OUTER = 3,
    KS_POSE_RIGHT_EYE_INNER = 4,
    KS_POSE_RIGHT_EYE = 5,
    KS_POSE_RIGHT_EYE_OUTER = 6,
    KS_POSE_LEFT_EAR = 7,
    KS_POSE_RIGHT_EAR = 8,
    KS_POSE_MOUTH_LEFT = 9,
    KS_POSE_MOUTH_RIGHT = 10,
    KS_POSE_LEFT_SHOULDER = 11,
    KS_POSE_RIGHT_SHOULDER = 12,
    KS_POSE_LEFT_ELBOW = 13,
    KS_POSE_RIGHT_ELBOW = 14,
    KS_POSE_LEFT_WRIST = 15,
    KS_POSE_RIGHT_WRIST = 16,
    KS_POSE_LEFT_PINKY = 17,
    KS_POSE_RIGHT_PINKY = 18,
    KS_POSE_LEFT_INDEX = 19,
    KS_POSE_RIGHT_INDEX = 20,
    KS_POSE_LEFT_THUMB = 21,
    KS_POSE_RIGHT_THUMB = 22,
    KS_POSE_LEFT_HIP = 23,
    KS_POSE_RIGHT_HIP = 24,
    KS_POSE_LEFT_KNEE = 25,
    KS_POSE_RIGHT_KNEE = 26,
    KS_POSE_LEFT_ANKLE = 27,
    KS_POSE_RIGHT_ANKLE = 28,
    KS_POSE_LEFT_HEEL = 29,
    KS_POSE_RIGHT_HEEL = 30,
    KS_POSE_LEFT_FOOT_INDEX = 31,
    KS_POSE_RIGHT_FOOT_INDEX = 32
} ks_pose_landmark_index;

/* Skeleton edges for drawing: *num_out pairs of landmark indices, flattened (a0, b0, a1, b1,
 * ...). Static storage. */
KS_API const uint8_t *ks_pose_connections(uint32_t *num_out);

/* Landmark model size. Values are stable. */
typedef enum ks_pose_model {
    KS_POSE_MODEL_FULL = 0, /* default: pose_landmark_full */
    KS_POSE_MODEL_LITE = 1, /* fastest */
    KS_POSE_MODEL_HEAVY = 2,
    KS_POSE_MODEL_COUNT
} ks_pose_model;

/* "full", "lite", "heavy"; "invalid" otherwise. */
KS_API const char *ks_pose_model_string(ks_pose_model model);

typedef struct ks_pose_landmarker ks_pose_landmarker;

/* Zero means the default shown. */
typedef struct ks_pose_landmarker_desc {
    /* task.min_score: detector threshold (0.5); task.max_results: people (1, at most
     * KS_POSE_MAX_RESULTS); task.smoothing: One Euro min_cutoff in Hz (VIDEO, 0.05; < 0 off). */
    ks_task_options task;
    ks_pose_model model;         /* ignored when task.model_path is set */
    float min_presence;          /* landmark model's pose flag threshold (0.5) */
    int32_t output_segmentation; /* non-zero: each pose gets a person mask at input size */
} ks_pose_landmarker_desc;

typedef struct ks_pose_landmark {
    float x, y;       /* upright image pixels */
    float z;          /* depth in pixels (same scale as x), smaller = closer; hips near 0 */
    float visibility; /* 0..1: likely visible (not occluded) */
    float presence;   /* 0..1: likely inside the image */
} ks_pose_landmark;

typedef struct ks_pose {
    int32_t id;  /* VIDEO: stable while the person is tracked (ids start at 1, never reused);
                    IMAGE: 1 + index */
    ks_box box;  /* bounding box of the 33 landmarks, pixels, clipped to the image */
    float score; /* pose presence from the landmark model, 0..1 */
    ks_pose_landmark landmarks[KS_POSE_NUM_LANDMARKS];
    ks_point3f world_landmarks[KS_POSE_NUM_LANDMARKS]; /* meters, origin between the hips */
    /* Person probability 0..1, mask_width_px x mask_height_px (the upright input size),
     * row-major; NULL unless desc.output_segmentation. Lives with the result. */
    const float *mask;
} ks_pose;

typedef struct ks_poses {
    uint32_t count;
    ks_pose *items; /* sorted by id */
    int32_t mask_width_px, mask_height_px;
} ks_poses;

/* Creates a landmarker: opens the bundle (task.model_path or the default for desc->model) and
 * builds its pipeline. desc may be NULL for all defaults. On failure *out is untouched and
 * ks_last_error(NULL) names the bundle, the node or the offending desc field. */
KS_API ks_status ks_pose_landmarker_create(const ks_pose_landmarker_desc *desc,
                                           ks_pose_landmarker **out);
/* NULL is a no-op. Results already returned stay valid. */
KS_API void ks_pose_landmarker_destroy(ks_pose_landmarker *landmarker);
/* Where the ks_pose_detect calls spent their time (see ks_task_stats in vision.h). */
KS_API ks_status ks_pose_landmarker_stats(const ks_pose_landmarker *landmarker,
                                          ks_task_stats *stats_out);
/* Live swap (vision.h, "Live swap"): loads source->model_path with source's key fields and
 * makes the next call run it. VIDEO tracks (ids, smoothing) carry over. */
KS_API ks_status ks_pose_landmarker_swap_model(ks_pose_landmarker *landmarker,
                                               const ks_task_options *source);

/* Finds poses in `image` (any ks_image format; oriented with task.rotation / task.mirror).
 * timestamp_us must increase strictly in KS_MODE_VIDEO (INVALID_STATE otherwise) and is ignored
 * in KS_MODE_IMAGE. *out receives a result (possibly with count 0) to free with
 * ks_poses_release; it is written only on success. Errors: ks_last_error(landmarker). */
KS_API ks_status ks_pose_detect(ks_pose_landmarker *landmarker, const ks_image *image,
                                int64_t timestamp_us, ks_poses **out);
/* Frees a result. NULL is a no-op. */
KS_API void ks_poses_release(ks_poses *poses);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_POSE_H */
