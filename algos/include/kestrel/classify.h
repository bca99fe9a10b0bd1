/* Kestrel image classification: the top-k classes of an image.
 *
 * Usage:
 *     ks_image_classifier *cls = NULL;
 *     ks_image_classifier_desc desc = { .task = { .max_results = 5 } };
 *     if (ks_image_classifier_create(&desc, &cls)) fprintf(stderr, "%s\n", ks_last_error(NULL));
 *     ks_classifications *top = NULL;
 *     if (ks_image_classify(cls, &img, 0, &top) == KS_STATUS_OK) {
 *         printf("%s %.2f\n", top->items[0].label, top->items[0].score);
 *         ks_classifications_release(top);
 *     }
 *     ks_image_classifier_destroy(cls);
 *
 * The bundle's config entry (`classifier_config`) gives the preprocessing (size, dtype f32 or
 * u8 for quantized models, mean/std, centre crop), the labels entry, the label offset (e.g. 1 for
 * a "background" class 0 that is not reported) and whether the output needs a softmax.
 * Quantized outputs are dequantized with the model's scale and zero point. Default bundle:
 * classifier_mobilenet_v2.ksb. task.max_results: 0 = 5; task.min_score: 0 = none.
 *
 * Thread safety: a ks_image_classifier is used by one thread at a time. Results are plain data.
 */
#ifndef KESTREL_CLASSIFY_H
#define KESTREL_CLASSIFY_H

#include "kestrel/vision.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ks_image_classifier_desc {
    ks_task_options task; /* num_threads, min_score, max_results, rotation, mirror, model_path */
} ks_image_classifier_desc;

typedef struct ks_class_score {
    int32_t class_id;  /* model output index */
    const char *label; /* "" without labels; lives with the result */
    float score;       /* probability 0..1 */
} ks_class_score;

typedef struct ks_classifications {
    uint32_t count; /* sorted by descending score */
    ks_class_score *items;
} ks_classifications;

typedef struct ks_image_classifier ks_image_classifier;

KS_API ks_status ks_image_classifier_create(const ks_image_classifier_desc *desc,
                                            ks_image_classifier **out);
/* NULL is a no-op. */
KS_API void ks_image_classifier_destroy(ks_image_classifier *classifier);
/* Where the ks_image_classify calls spent their time (see ks_task_stats in vision.h). */
KS_API ks_status ks_image_classifier_stats(const ks_image_classifier *classifier,
                                           ks_task_stats *stats_out);
/* Live swap (vision.h, "Live swap"): loads source->model_path with source's key fields and
 * makes the next call run it. */
KS_API ks_status ks_image_classifier_swap_model(ks_image_classifier *classifier,
                                                const ks_task_options *source);
/* Classifies one image. *out (free with ks_classifications_release) is written on success. */
KS_API ks_status ks_image_classify(ks_image_classifier *classifier, const ks_image *image,
                                   int64_t timestamp_us, ks_classifications **out);
/* NULL is a no-op. */
KS_API void ks_classifications_release(ks_classifications *classes);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CLASSIFY_H */
