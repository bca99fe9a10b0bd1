/* Kestrel person segmentation (selfie segmentation): a per-pixel person probability for every
 * frame, at the input image's upright size.
 *
 * Usage:
 *     ks_segmenter *seg = NULL;
 *     ks_segmenter_desc desc = { .task = { .mode = KS_MODE_VIDEO }, .output_u8 = 1 };
 *     if (ks_segmenter_create(&desc, &seg)) fprintf(stderr, "%s\n", ks_last_error(NULL));
 *     ks_segmentation *m = NULL;
 *     if (ks_segment(seg, &frame, timestamp_us, &m) == KS_STATUS_OK) {
 *         blur_background(m->mask, m->width_px, m->height_px);   // 0 = background, 1 = person
 *         ks_segmentation_release(m);
 *     } else fprintf(stderr, "%s\n", ks_last_error(seg));
 *     ks_segmenter_destroy(seg);
 *
 * Models: KS_SEGMENTER_GENERAL (256x256 input, bundle selfie_segmenter.ksb) and
 * KS_SEGMENTER_LANDSCAPE (144x256, faster, for 16:9 video; selfie_segmenter_landscape.ksb). The
 * whole image is stretched to the model input (no letterbox), as MediaPipe does.
 *
 * VIDEO mode smooths the mask over time: uncertain pixels lean on the previous frame
 * (MediaPipe's segmentation smoothing). task.smoothing: 0 = default ratio 0.7, < 0 = off,
 * 0 < s < 1 = that ratio. IMAGE mode never smooths. task.min_score, max_results and roi are
 * not used.
 *
 * Thread safety: a ks_segmenter is used by one thread at a time; distinct segmenters are
 * independent. A ks_segmentation is read-only data that may be released on any thread, after its
 * segmenter too (its mask may be the graph's mask buffer, held by reference, not a copy).
 */
#ifndef KESTREL_SEGMENT_H
#define KESTREL_SEGMENT_H

#include "kestrel/vision.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ks_segmenter_model {
    KS_SEGMENTER_GENERAL = 0,   /* selfie_segmentation, 256x256 */
    KS_SEGMENTER_LANDSCAPE = 1, /* selfie_segmentation_landscape, 144x256 */
    KS_SEGMENTER_MODEL_COUNT
} ks_segmenter_model;

/* The size of the masks ks_segment returns. */
typedef enum ks_mask_size {
    KS_MASK_SIZE_IMAGE = 0, /* default: the upright input image's size (bilinear upsampling) */
    /* The model's output (256x256 general, 144x256 landscape): no upsampling; the mask spans the
     * whole upright image, stretched (mask pixel (x, y) covers image x * image_width_px /
     * width_px ...). Cheapest; also what ks_segment_into resamples from. */
    KS_MASK_SIZE_MODEL = 1,
    KS_MASK_SIZE_COUNT
} ks_mask_size;

typedef struct ks_segmenter_desc {
    ks_task_options task;     /* mode, num_threads, rotation, mirror, smoothing, model_path */
    ks_segmenter_model model; /* which default bundle when task.model_path is NULL */
    int32_t output_u8;        /* non-zero: also fill mask_u8 */
    ks_mask_size mask_size;   /* 0: the image's size */
} ks_segmenter_desc;

typedef struct ks_segmentation {
    int32_t width_px, height_px; /* the mask's size: the upright input size, or the model's */
    const float *mask;           /* width_px * height_px person probabilities 0..1, row-major */
    const uint8_t *mask_u8;      /* round(255 * mask), or NULL unless desc.output_u8 */
    float person_fraction;       /* fraction of pixels with mask >= 0.5 */
    int32_t image_width_px, image_height_px; /* the upright input size the mask spans */
} ks_segmentation;

typedef struct ks_segmenter ks_segmenter;

/* Loads the bundle and builds the pipeline. desc may be NULL (all defaults). On failure
 * ks_last_error(NULL) names the bundle and the problem. */
KS_API ks_status ks_segmenter_create(const ks_segmenter_desc *desc, ks_segmenter **out);
/* NULL is a no-op. */
KS_API void ks_segmenter_destroy(ks_segmenter *segmenter);
/* Where the ks_segment calls spent their time (see ks_task_stats in vision.h). */
KS_API ks_status ks_segmenter_stats(const ks_segmenter *segmenter, ks_task_stats *stats_out);
/* Live swap (vision.h, "Live swap"): loads source->model_path with source's key fields and
 * makes the next call run it. VIDEO mask smoothing restarts. */
KS_API ks_status ks_segmenter_swap_model(ks_segmenter *segmenter, const ks_task_options *source);

/* Segments one image. In VIDEO mode timestamps must strictly increase. The image is not kept.
 * *out is written on success; free it with ks_segmentation_release. */
KS_API ks_status ks_segment(ks_segmenter *segmenter, const ks_image *image, int64_t timestamp_us,
                            ks_segmentation **out);
/* NULL is a no-op. */
KS_API void ks_segmentation_release(ks_segmentation *segmentation);

/* Segments one image into the caller's buffer, allocating nothing in steady state: the person
 * probabilities of the upright image's region `region` (upright pixels; NULL or w <= 0: the whole
 * image), bilinearly resampled to width_px x height_px floats at dst, rows stride_floats apart
 * (0: width_px). Sizes 1..4096. The region may extend past the image (edge values repeat).
 * *person_fraction_out (may be NULL) gets the fraction of the written pixels >= 0.5. It resamples
 * the model's output directly, whatever the segmenter's mask_size. Timestamps and smoothing as
 * ks_segment. */
KS_API ks_status ks_segment_into(ks_segmenter *segmenter, const ks_image *image,
                                 int64_t timestamp_us, const ks_box *region, float *dst,
                                 int32_t width_px, int32_t height_px, int32_t stride_floats,
                                 float *person_fraction_out);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_SEGMENT_H */
