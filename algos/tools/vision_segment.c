/* ks-vision segment: person mask. JSON {"width":W,"height":H,"person_fraction":f}; --mask-out
 * writes the mask as an 8-bit gray PNG at the input size; --out tints the person. */
#include <stdio.h>

#include "image_io.h"
#include "kestrel/segment.h"
#include "vision_cli.h"

int ks__vision_segment(const ks_vision_args *args, const ks_image *img, ks_canvas *canvas) {
    ks_segmenter *seg = NULL;
    ks_segmentation *m = NULL;
    int rc = 1;
    ks_segmenter_desc desc = {.task = {.num_threads = args->num_threads,
                                       .precision = (ks_precision)args->precision,
                                       .backend = (ks_backend)args->backend,
                                       .model_path = args->model,
                                       .key = args->key,
                                       .key_bytes = args->key_bytes},
                              .output_u8 = 1};
    if (ks_segmenter_create(&desc, &seg)) {
        fprintf(stderr, "ks-vision segment: %s\n", ks_last_error(NULL));
        return 1;
    }
    if (ks_segment(seg, img, 0, &m)) {
        fprintf(stderr, "ks-vision segment: %s\n", ks_last_error(seg));
        goto done;
    }
    if (args->json)
        printf("{\"width\":%d,\"height\":%d,\"person_fraction\":%.6g}\n", (int)m->width_px,
               (int)m->height_px, (double)m->person_fraction);
    else
        printf("segment: %d x %d, person covers %.1f%% of the image\n", (int)m->width_px,
               (int)m->height_px, 100.0 * (double)m->person_fraction);
    if (args->mask_out) {
        char err[256];
        ks_image gray = {.format = KS_PIXEL_FORMAT_GRAY,
                         .width_px = m->width_px,
                         .height_px = m->height_px,
                         .planes = {m->mask_u8},
                         .stride_bytes = {m->width_px}};
        if (ks_image_save_png(args->mask_out, &gray, err, sizeof(err))) {
            fprintf(stderr, "ks-vision segment: %s\n", err);
            goto done;
        }
    }
    if (canvas && canvas->width_px == m->width_px && canvas->height_px == m->height_px)
        ks__draw_mask(canvas, m->mask, 0x00c8ff, 0.5f);
    rc = 0;
done:
    ks_segmentation_release(m);
    ks_segmenter_destroy(seg);
    return rc;
}
