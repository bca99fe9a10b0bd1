/* Kestrel hand landmarker: 21 landmarks per hand, world landmarks in meters and handedness.
 *
 * Usage:
 *     ks_hand_landmarker *hl = NULL;
 *     ks_hand_landmarker_desc desc = { .task = { .mode = KS_MODE_VIDEO, .mirror = 1 } };
 *     if (ks_hand_landmarker_create(&desc, &hl)) fprintf(stderr, "%s\n", ks_last_error(NULL));
 *     ks_hands *hands = NULL;
 *     if (ks_hands_detect(hl, &img, timestamp_us, &hands) == KS_STATUS_OK) {
 *         for (uint32_t i = 0; i < hands->count; i++)
 *             printf("%s hand at %g,%g\n", ks_handedness_string(hands->items[i].handedness),
 *                    hands->items[i].landmarks[KS_HAND_WRIST].x, ...);
 *         ks_hands_release(hands);
 *     }
 *     ks_hand_landmarker_destroy(hl);
 *
 * Pipeline (MediaPipe's hand graph): palm detector (192x192 SSD, 2016 anchors, 7 keypoints) ->
 * weighted NMS -> rotated square ROI from the wrist and the middle finger base (x2.6, shifted
 * -0.5 along the hand) -> hand landmark model (224x224) per ROI -> 21 landmarks, hand flag,
 * handedness, world landmarks -> next frame's ROI from the landmarks. In KS_MODE_VIDEO the palm
 * detector runs only while fewer than max_results hands are tracked, ids stay stable while a
 * hand is tracked, and landmarks are One Euro smoothed.
 *
 * Handedness: the label is the person's real hand ("left" = the person's left hand), for any
 * task.mirror. MediaPipe's model was trained on mirrored (selfie) images and reports the
 * opposite hand on a non-mirrored image; this task always feeds the model the un-mirrored
 * upright image (task.mirror = 1 means the input is mirrored and is flipped back first), so the
 * model's label is swapped exactly once. Note that MediaPipe's own Python solution, given a
 * non-mirrored photo, reports the opposite label from this task.
 *
 * Default bundles (task.model_path NULL): hand_landmarker_{full,lite}.ksb in ks_models_dir().
 *
 * Thread safety: a ks_hand_landmarker is used by one thread at a time; different landmarkers may
 * run concurrently. ks_hands results are plain data owned by the caller until released.
 */
#ifndef KESTREL_HAND_H
#define KESTREL_HAND_H

#include "kestrel/vision.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS_HAND_NUM_LANDMARKS 21
#define KS_HAND_MAX_RESULTS 16 /* upper bound of task.max_results */

/* Landmark indices (MediaPipe order). */
typedef enum ks_hand_landmark_index {
    KS_HAND_WRIST = 0,
    KS_HAND_THUMB_CMC = 1,
    KS_HAND_THUMB_MCP = 2,
    KS_HAND_THUMB_IP = 3,
    KS_HAND_THUMB_TIP = 4,
    KS_HAND_INDEX_MCP = 5,
    KS_HAND_INDEX_PIP = 6,
    KS_HAND_INDEX_DIP = 7,
    KS_HAND_INDEX_TIP = 8,
    KS_HAND_MIDDLE_MCP = 9,
    KS_HAND_MIDDLE_PIP = 10,
    KS_HAND_MIDDLE_DIP = 11,
    KS_HAND_MIDDLE_TIP = 12,
    KS_HAND_RING_MCP = 13,
    KS_HAND_RING_PIP = 14,
    KS_HAND_RING_DIP = 15,
    KS_HAND_RING_TIP = 16,
    KS_HAND_PINKY_MCP = 17,
    KS_HAND_PINKY_PIP = 18,
    KS_HAND_PINKY_DIP = 19,
    KS_HAND_PINKY_TIP = 20
} ks_hand_landmark_index;

/* Skeleton edges for drawing: *num_out pairs of landmark indices, flattened. Static storage. */
KS_API const uint8_t *ks_hand_connections(uint32_t *num_out);

typedef enum ks_handedness {
    KS_HANDEDNESS_LEFT = 0, /* the person's left hand */
    KS_HANDEDNESS_RIGHT = 1,
    KS_HANDEDNESS_COUNT
} ks_handedness;

/* "left", "right"; "invalid" otherwise. */
KS_API const char *ks_handedness_string(ks_handedness handedness);

typedef enum ks_hand_model {
    KS_HAND_MODEL_FULL = 0, /* default: palm_detection_full + hand_landmark_full */
    KS_HAND_MODEL_LITE = 1,
    KS_HAND_MODEL_COUNT
} ks_hand_model;

/* "full", "lite"; "invalid" otherwise. */
KS_API const char *ks_hand_model_string(ks_hand_model model);

typedef struct ks_hand_landmarker ks_hand_landmarker;

/* Zero means the default shown. */
typedef struct ks_hand_landmarker_desc {
    /* task.min_score: palm detector threshold (0.5); task.max_results: hands (2, at most
     * KS_HAND_MAX_RESULTS); task.mirror: the input is mirrored (front camera); task.smoothing:
     * One Euro min_cutoff in Hz (VIDEO, 0.05; < 0 off). */
    ks_task_options task;
    ks_hand_model model; /* ignored when task.model_path is set */
    float min_presence;  /* hand flag threshold of the landmark model (0.5) */
} ks_hand_landmarker_desc;

typedef struct ks_hand {
    int32_t id;               /* VIDEO: stable while tracked (from 1, never reused); IMAGE:
                                 1 + index */
    ks_box box;               /* bounding box of the landmarks, pixels, clipped */
    float score;              /* hand presence (hand flag), 0..1 */
    ks_handedness handedness; /* the person's hand, see the header comment */
    float handedness_score;   /* confidence of `handedness`, 0.5..1 */
    ks_point3f landmarks[KS_HAND_NUM_LANDMARKS];       /* upright image pixels; z relative to the
                                                          wrist, pixel scale, smaller = closer */
    ks_point3f world_landmarks[KS_HAND_NUM_LANDMARKS]; /* meters, origin near the hand centre */
} ks_hand;

typedef struct ks_hands {
    uint32_t count;
    ks_hand *items; /* sorted by id */
} ks_hands;

/* Creates a landmarker (see ks_pose_landmarker_create for the conventions). desc may be NULL. */
KS_API ks_status ks_hand_landmarker_create(const ks_hand_landmarker_desc *desc,
                                           ks_hand_landmarker **out);
/* NULL is a no-op. Results already returned stay valid. */
KS_API void ks_hand_landmarker_destroy(ks_hand_landmarker *landmarker);
/* Where the ks_hands_detect calls spent their time (see ks_task_stats in vision.h). */
KS_API ks_status ks_hand_landmarker_stats(const ks_hand_landmarker *landmarker,
                                          ks_task_stats *stats_out);
/* Live swap (vision.h, "Live swap"): loads source->model_path with source's key fields and
 * makes the next call run it. VIDEO tracks (ids, smoothing) carry over. */
KS_API ks_status ks_hand_landmarker_swap_model(ks_hand_landmarker *landmarker,
                                               const ks_task_options *source);

/* Finds hands in `image` (any ks_image format; oriented with task.rotation / task.mirror).
 * timestamp_us must increase strictly in KS_MODE_VIDEO (INVALID_STATE otherwise). *out receives
 * a result (possibly with count 0), free with ks_hands_release; written only on success.
 * Errors: ks_last_error(landmarker). */
KS_API ks_status ks_hands_detect(ks_hand_landmarker *landmarker, const ks_image *image,
                                 int64_t timestamp_us, ks_hands **out);
/* Frees a result. NULL is a no-op. */
KS_API void ks_hands_release(ks_hands *hands);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_HAND_H */
