/* ks-vision pose: the pose landmarker on one photo (IMAGE mode). */
#include <stdio.h>

#include "kestrel/pose.h"
#include "vision_cli.h"

int ks__vision_pose(const ks_vision_args *args, const ks_image *img, ks_canvas *canvas) {
    ks_pose_landmarker_desc desc = {.task = {.mode = KS_MODE_IMAGE,
                                             .num_threads = args->num_threads,
                                             .precision = (ks_precision)args->precision,
                                             .backend = (ks_backend)args->backend,
                                             .min_score = args->min_score,
                                             .max_results = args->max_results,
                                             .model_path = args->model,
                                             .key = args->key,
                                             .key_bytes = args->key_bytes}};
    ks_pose_landmarker *pl = NULL;
    if (ks_pose_landmarker_create(&desc, &pl)) {
        fprintf(stderr, "ks-vision pose: %s\n", ks_last_error(NULL));
        return 1;
    }
    ks_poses *poses = NULL;
    if (ks_pose_detect(pl, img, 0, &poses)) {
        fprintf(stderr, "ks-vision pose: %s\n", ks_last_error(pl));
        ks_pose_landmarker_destroy(pl);
        return 1;
    }
    if (args->json) {
        printf("{\"poses\":[");
        for (uint32_t i = 0; i < poses->count; i++) {
            const ks_pose *p = &poses->items[i];
            printf("%s{\"box\":[%.9g,%.9g,%.9g,%.9g],\"score\":%.9g,\"landmarks\":[", i ? "," : "",
                   (double)p->box.x, (double)p->box.y, (double)p->box.w, (double)p->box.h,
                   (double)p->score);
            for (int k = 0; k < KS_POSE_NUM_LANDMARKS; k++) {
                const ks_pose_landmark *l = &p->landmarks[k];
                printf("%s[%.9g,%.9g,%.9g,%.9g,%.9g]", k ? "," : "", (double)l->x, (double)l->y,
                       (double)l->z, (double)l->visibility, (double)l->presence);
            }
            printf("],\"world_landmarks\":[");
            for (int k = 0; k < KS_POSE_NUM_LANDMARKS; k++) {
                const ks_point3f *w = &p->world_landmarks[k];
                printf("%s[%.9g,%.9g,%.9g]", k ? "," : "", (double)w->x, (double)w->y,
                       (double)w->z);
            }
            printf("]}");
        }
        printf("]}\n");
    } else {
        printf("%u pose(s)\n", poses->count);
        for (uint32_t i = 0; i < poses->count; i++) {
            const ks_pose *p = &poses->items[i];
            printf("  pose %u: score %.3f, box [%.1f, %.1f, %.1f, %.1f], nose (%.1f, %.1f)\n", i,
                   (double)p->score, (double)p->box.x, (double)p->box.y, (double)p->box.w,
                   (double)p->box.h, (double)p->landmarks[KS_POSE_NOSE].x,
                   (double)p->landmarks[KS_POSE_NOSE].y);
        }
    }
    if (canvas) {
        uint32_t num_edges = 0;
        const uint8_t *edges = ks_pose_connections(&num_edges);
        for (uint32_t i = 0; i < poses->count; i++) {
            const ks_pose *p = &poses->items[i];
            ks__draw_box(canvas, p->box.x, p->box.y, p->box.w, p->box.h, 0x00ff00);
            for (uint32_t e = 0; e < num_edges; e++) {
                const ks_pose_landmark *a = &p->landmarks[edges[2 * e]];
                const ks_pose_landmark *b = &p->landmarks[edges[2 * e + 1]];
                if (a->visibility < 0.5f || b->visibility < 0.5f) continue;
                ks__draw_line(canvas, a->x, a->y, b->x, b->y, 0xffffff);
            }
            for (int k = 0; k < KS_POSE_NUM_LANDMARKS; k++) {
                const ks_pose_landmark *l = &p->landmarks[k];
                if (l->visibility < 0.5f) continue;
                ks__draw_point(canvas, l->x, l->y, 3, k % 2 ? 0xff4040 : 0x4080ff);
            }
        }
    }
    ks_poses_release(poses);
    ks_pose_landmarker_destroy(pl);
    return 0;
}
