/* ks-vision classify: top-k classes. JSON {"classes":[{"class_id":k,"label":"..","score":s}]},
 * sorted by score. Nothing is drawn (no font; labels go to the JSON). */
#include <stdio.h>

#include "kestrel/classify.h"
#include "vision_cli.h"

int ks__vision_classify(const ks_vision_args *args, const ks_image *img, ks_canvas *canvas) {
    (void)canvas;
    ks_image_classifier *cls = NULL;
    ks_classifications *top = NULL;
    ks_image_classifier_desc desc = {.task = {.num_threads = args->num_threads,
                                              .precision = (ks_precision)args->precision,
                                              .backend = (ks_backend)args->backend,
                                              .min_score = args->min_score,
                                              .max_results = args->max_results,
                                              .model_path = args->model,
                                              .key = args->key,
                                              .key_bytes = args->key_bytes}};
    if (ks_image_classifier_create(&desc, &cls)) {
        fprintf(stderr, "ks-vision classify: %s\n", ks_last_error(NULL));
        return 1;
    }
    if (ks_image_classify(cls, img, 0, &top)) {
        fprintf(stderr, "ks-vision classify: %s\n", ks_last_error(cls));
        ks_image_classifier_destroy(cls);
        return 1;
    }
    if (args->json) printf("{\"classes\":[");
    for (uint32_t i = 0; i < top->count; i++) {
        const ks_class_score *c = &top->items[i];
        if (args->json) {
            printf("%s{\"class_id\":%d,\"label\":", i ? "," : "", (int)c->class_id);
            ks__json_string(stdout, c->label);
            printf(",\"score\":%.6g}", (double)c->score);
        } else {
            printf("%5d  %.3f  %s\n", (int)c->class_id, (double)c->score, c->label);
        }
    }
    if (args->json) printf("]}\n");
    ks_classifications_release(top);
    ks_image_classifier_destroy(cls);
    return 0;
}
