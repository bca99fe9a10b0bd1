/* ks-vision detect: objects. JSON {"objects":[{"box":[x,y,w,h],"class_id":k,"label":"person",
 * "score":s}]}; --out draws the boxes (one color per class). */
#include <stdio.h>

#include "kestrel/detect.h"
#include "vision_cli.h"

static uint32_t class_color(int32_t class_id) {
    static const uint32_t palette[] = {0xff3838, 0x2ecc71, 0x3498db, 0xf1c40f, 0x9b59b6,
                                       0x1abc9c, 0xe67e22, 0xff66cc, 0x00d2ff, 0xa3e048};
    return palette[(uint32_t)class_id % (sizeof(palette) / sizeof(palette[0]))];
}

int ks__vision_detect(const ks_vision_args *args, const ks_image *img, ks_canvas *canvas) {
    ks_object_detector *det = NULL;
    ks_detected_objects *objs = NULL;
    ks_object_detector_desc desc = {.task = {.num_threads = args->num_threads,
                                             .precision = (ks_precision)args->precision,
                                             .backend = (ks_backend)args->backend,
                                             .min_score = args->min_score,
                                             .max_results = args->max_results,
                                             .model_path = args->model,
                                             .key = args->key,
                                             .key_bytes = args->key_bytes}};
    if (ks_object_detector_create(&desc, &det)) {
        fprintf(stderr, "ks-vision detect: %s\n", ks_last_error(NULL));
        return 1;
    }
    if (ks_object_detect(det, img, 0, &objs)) {
        fprintf(stderr, "ks-vision detect: %s\n", ks_last_error(det));
        ks_object_detector_destroy(det);
        return 1;
    }
    if (args->json) printf("{\"objects\":[");
    for (uint32_t i = 0; i < objs->count; i++) {
        const ks_detected_object *o = &objs->items[i];
        if (args->json) {
            printf("%s{\"box\":[%.6g,%.6g,%.6g,%.6g],\"class_id\":%d,\"label\":", i ? "," : "",
                   (double)o->box.x, (double)o->box.y, (double)o->box.w, (double)o->box.h,
                   (int)o->class_id);
            ks__json_string(stdout, o->label);
            printf(",\"score\":%.6g}", (double)o->score);
        } else {
            printf("%-16s %.3f  box %.1f %.1f %.1f x %.1f\n", o->label[0] ? o->label : "?",
                   (double)o->score, (double)o->box.x, (double)o->box.y, (double)o->box.w,
                   (double)o->box.h);
        }
        if (canvas)
            ks__draw_box(canvas, o->box.x, o->box.y, o->box.w, o->box.h, class_color(o->class_id));
    }
    if (args->json)
        printf("]}\n");
    else if (objs->count == 0)
        printf("no objects\n");
    ks_detected_objects_release(objs);
    ks_object_detector_destroy(det);
    return 0;
}
