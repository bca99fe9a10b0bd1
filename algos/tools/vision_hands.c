/* ks-vision hands: the hand landmarker on one photo (IMAGE mode, non-mirrored input: the
 * handedness is the person's real hand, see kestrel/hand.h). */
#include <stdio.h>

#include "kestrel/hand.h"
#include "vision_cli.h"

int ks__vision_hands(const ks_vision_args *args, const ks_image *img, ks_canvas *canvas) {
    ks_hand_landmarker_desc desc = {.task = {.mode = KS_MODE_IMAGE,
                                             .num_threads = args->num_threads,
                                             .precision = (ks_precision)args->precision,
                                             .backend = (ks_backend)args->backend,
                                             .min_score = args->min_score,
                                             .max_results = args->max_results,
                                             .model_path = args->model,
                                             .key = args->key,
                                             .key_bytes = args->key_bytes}};
    ks_hand_landmarker *hl = NULL;
    if (ks_hand_landmarker_create(&desc, &hl)) {
        fprintf(stderr, "ks-vision hands: %s\n", ks_last_error(NULL));
        return 1;
    }
    ks_hands *hands = NULL;
    if (ks_hands_detect(hl, img, 0, &hands)) {
        fprintf(stderr, "ks-vision hands: %s\n", ks_last_error(hl));
        ks_hand_landmarker_destroy(hl);
        return 1;
    }
    if (args->json) {
        printf("{\"hands\":[");
        for (uint32_t i = 0; i < hands->count; i++) {
            const ks_hand *h = &hands->items[i];
            printf("%s{\"box\":[%.9g,%.9g,%.9g,%.9g],\"handedness\":", i ? "," : "",
                   (double)h->box.x, (double)h->box.y, (double)h->box.w, (double)h->box.h);
            ks__json_string(stdout, ks_handedness_string(h->handedness));
            printf(",\"score\":%.9g,\"landmarks\":[", (double)h->score);
            for (int k = 0; k < KS_HAND_NUM_LANDMARKS; k++) {
                const ks_point3f *l = &h->landmarks[k];
                printf("%s[%.9g,%.9g,%.9g]", k ? "," : "", (double)l->x, (double)l->y,
                       (double)l->z);
            }
            printf("]}");
        }
        printf("]}\n");
    } else {
        printf("%u hand(s)\n", hands->count);
        for (uint32_t i = 0; i < hands->count; i++) {
            const ks_hand *h = &hands->items[i];
            printf("  hand %u: %s (%.3f), score %.3f, box [%.1f, %.1f, %.1f, %.1f]\n", i,
                   ks_handedness_string(h->handedness), (double)h->handedness_score,
                   (double)h->score, (double)h->box.x, (double)h->box.y, (double)h->box.w,
                   (double)h->box.h);
        }
    }
    if (canvas) {
        uint32_t num_edges = 0;
        const uint8_t *edges = ks_hand_connections(&num_edges);
        for (uint32_t i = 0; i < hands->count; i++) {
            const ks_hand *h = &hands->items[i];
            uint32_t color = h->handedness == KS_HANDEDNESS_LEFT ? 0x40a0ff : 0xff8040;
            ks__draw_box(canvas, h->box.x, h->box.y, h->box.w, h->box.h, 0x00ff00);
            for (uint32_t e = 0; e < num_edges; e++) {
                const ks_point3f *a = &h->landmarks[edges[2 * e]];
                const ks_point3f *b = &h->landmarks[edges[2 * e + 1]];
                ks__draw_line(canvas, a->x, a->y, b->x, b->y, 0xffffff);
            }
            for (int k = 0; k < KS_HAND_NUM_LANDMARKS; k++)
                ks__draw_point(canvas, h->landmarks[k].x, h->landmarks[k].y, 2, color);
        }
    }
    ks_hands_release(hands);
    ks_hand_landmarker_destroy(hl);
    return 0;
}
