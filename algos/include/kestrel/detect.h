/* Kestrel object detection: boxes, classes and scores of the objects in an image (COCO-80 with
 * the default bundles), with stable track ids in VIDEO mode.
 *
 * Usage:
 *     ks_object_detector *det = NULL;
 *     ks_object_detector_desc desc = { .task = { .min_score = 0.4f, .max_results = 20 } };
 *     if (ks_object_detector_create(&desc, &det)) fprintf(stderr, "%s\n", ks_last_error(NULL));
 *     ks_detected_objects *objs = NULL;
 *     if (ks_object_detect(det, &img, timestamp_us, &objs) == KS_STATUS_OK) {
 *         for (uint32_t i = 0; i < objs->count; i++)
 *             printf("%s %.2f\n", objs->items[i].label, objs->items[i].score);
 *         ks_detected_objects_release(objs);
 *     }
 *     ks_object_detector_destroy(det);
 *
 * The detector is configured entirely by its bundle: a config entry (`detector_config`) names
 * the decoder (YOLOX or NanoDet), input size, preprocessing (mean/std, RGB/BGR, letterbox),
 * strides, number of classes, score and NMS thresholds, and the labels entry (docs/tasks.md).
 * Default bundle: object_detector_yolox.ksb in the models directory (built from YOLOX-Nano when
 * the model is available at build time); otherwise pass a bundle as task.model_path.
 * task.min_score (0: the bundle's threshold), task.max_results (0: the bundle's maximum).
 * NMS is class-wise: overlapping boxes of different classes are both kept.
 *
 * Thread safety: a ks_object_detector is used by one thread at a time; distinct detectors are
 * independent. Results are plain data.
 */
#ifndef KESTREL_DETECT_H
#define KESTREL_DETECT_H

#include "kestrel/vision.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ks_object_detector_desc {
    ks_task_options task; /* mode, num_threads, min_score, max_results, rotation, mirror, model */
} ks_object_detector_desc;

typedef struct ks_detected_object {
    ks_box box;        /* upright image pixels */
    int32_t class_id;  /* index into the bundle's labels */
    const char *label; /* the class name ("" without labels); lives with the result */
    float score;       /* 0..1 */
    int32_t track_id;  /* VIDEO: stable id >= 1 for the same object across frames; else -1 */
} ks_detected_object;

typedef struct ks_detected_objects {
    uint32_t count; /* sorted by descending score */
    ks_detected_object *items;
} ks_detected_objects;

typedef struct ks_object_detector ks_object_detector;

KS_API ks_status ks_object_detector_create(const ks_object_detector_desc *desc,
                                           ks_object_detector **out);
/* NULL is a no-op. */
KS_API void ks_object_detector_destroy(ks_object_detector *detector);
/* Where the ks_object_detect calls spent their time (see ks_task_stats in vision.h). */
KS_API ks_status ks_object_detector_stats(const ks_object_detector *detector,
                                          ks_task_stats *stats_out);
/* Live swap (vision.h, "Live swap"): loads source->model_path with source's key fields and
 * makes the next call run it. Track ids stay unique: the new graph's tracker starts afresh, its ids
 * above every id reported before. */
KS_API ks_status ks_object_detector_swap_model(ks_object_detector *detector,
                                               const ks_task_options *source);
/* Detects objects. In VIDEO mode timestamps must strictly increase. *out (free with
 * ks_detected_objects_release) is written on success, also when nothing is found (count 0). */
KS_API ks_status ks_object_detect(ks_object_detector *detector, const ks_image *image,
                                  int64_t timestamp_us, ks_detected_objects **out);
/* NULL is a no-op. */
KS_API void ks_detected_objects_release(ks_detected_objects *objects);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_DETECT_H */
