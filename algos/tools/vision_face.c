/* ks-vision face_detect and face_landmarks (JSON contract in docs/tasks.md). */
#include <stdio.h>
#include <string.h>

#include "kestrel/face.h"
#include "vision_cli.h"

static void print_box(const ks_box *b) {
    printf("[%.2f,%.2f,%.2f,%.2f]", (double)b->x, (double)b->y, (double)b->w, (double)b->h);
}

int ks__vision_face_detect(const ks_vision_args *args, const ks_image *img, ks_canvas *canvas) {
    ks_face_detector_desc desc = {.task = {.min_score = args->min_score,
                                           .max_results = args->max_results,
                                           .num_threads = args->num_threads,
                                           .precision = (ks_precision)args->precision,
                                           .backend = (ks_backend)args->backend,
                                           .model_path = args->model,
                                           .key = args->key,
                                           .key_bytes = args->key_bytes},
                                  .tiles = args->tiles};
    ks_face_detector *det = NULL;
    ks_faces *faces = NULL;
    if (ks_face_detector_create(&desc, &det)) {
        fprintf(stderr, "ks-vision face_detect: %s\n", ks_last_error(NULL));
        return 1;
    }
    if (ks_face_detect(det, img, 0, &faces)) {
        fprintf(stderr, "ks-vision face_detect: %s\n", ks_last_error(det));
        ks_face_detector_destroy(det);
        return 1;
    }
    if (args->json) printf("{\"faces\":[");
    for (uint32_t i = 0; i < faces->count; i++) {
        const ks_face *f = &faces->items[i];
        if (args->json) {
            printf("%s{\"box\":", i ? "," : "");
            print_box(&f->box);
            printf(",\"score\":%.4f,\"keypoints\":[", (double)f->score);
            for (int k = 0; k < KS_FACE_KEYPOINT_COUNT; k++)
                printf("%s[%.2f,%.2f]", k ? "," : "", (double)f->keypoints[k].x,
                       (double)f->keypoints[k].y);
            printf("]}");
        } else {
            printf("face %u: box (%.0f, %.0f, %.0f x %.0f) score %.3f\n", (unsigned)i,
                   (double)f->box.x, (double)f->box.y, (double)f->box.w, (double)f->box.h,
                   (double)f->score);
        }
        if (canvas) {
            ks__draw_box(canvas, f->box.x, f->box.y, f->box.w, f->box.h, 0x00ff00);
            for (int k = 0; k < KS_FACE_KEYPOINT_COUNT; k++)
                ks__draw_point(canvas, f->keypoints[k].x, f->keypoints[k].y, 3, 0xff0000);
        }
    }
    if (args->json)
        printf("]}\n");
    else if (faces->count == 0)
        printf("no face found\n");
    ks_faces_release(faces);
    ks_face_detector_destroy(det);
    return 0;
}

int ks__vision_face_landmarks(const ks_vision_args *args, const ks_image *img, ks_canvas *canvas) {
    /* A photo's every face by default, as face_detect (the API's default is one face). */
    int max_faces = args->max_results > 0 ? args->max_results : KS_FACE_MAX_FACES;
    if (max_faces > KS_FACE_MAX_FACES) max_faces = KS_FACE_MAX_FACES;
    ks_face_landmarker_desc desc = {.task = {.min_score = args->min_score,
                                             .max_results = max_faces,
                                             .num_threads = args->num_threads,
                                             .precision = (ks_precision)args->precision,
                                             .backend = (ks_backend)args->backend,
                                             .model_path = args->model,
                                             .key = args->key,
                                             .key_bytes = args->key_bytes}};
    ks_face_landmarker *fl = NULL;
    ks_face_meshes *faces = NULL;
    if (ks_face_landmarker_create(&desc, &fl)) {
        fprintf(stderr, "ks-vision face_landmarks: %s\n", ks_last_error(NULL));
        return 1;
    }
    if (ks_face_landmarker_detect(fl, img, 0, &faces)) {
        fprintf(stderr, "ks-vision face_landmarks: %s\n", ks_last_error(fl));
        ks_face_landmarker_destroy(fl);
        return 1;
    }
    if (args->json) printf("{\"faces\":[");
    for (uint32_t i = 0; i < faces->count; i++) {
        const ks_face_mesh *f = &faces->items[i];
        if (args->json) {
            printf("%s{\"box\":", i ? "," : "");
            print_box(&f->box);
            printf(",\"landmarks\":[");
            for (uint32_t k = 0; k < f->num_landmarks; k++)
                printf("%s[%.2f,%.2f,%.2f]", k ? "," : "", (double)f->landmarks[k].x,
                       (double)f->landmarks[k].y, (double)f->landmarks[k].z);
            printf("],\"euler_deg\":[%.2f,%.2f,%.2f],\"pose_matrix\":[", (double)f->pitch_deg,
                   (double)f->yaw_deg, (double)f->roll_deg);
            for (int k = 0; k < 16; k++)
                printf("%s%.5g", k ? "," : "", (double)f->pose_matrix[k]);
            const ks_face_expressions *e = &f->expressions;
            printf("],\"expressions\":{\"mouth_open\":%.3f,\"left_eye_blink\":%.3f,"
                   "\"right_eye_blink\":%.3f,\"brow_raise\":%.3f,\"smile\":%.3f}}",
                   (double)e->mouth_open, (double)e->left_eye_blink, (double)e->right_eye_blink,
                   (double)e->brow_raise, (double)e->smile);
        } else {
            printf("face %u: %u landmarks, box (%.0f, %.0f, %.0f x %.0f), pitch %.1f yaw %.1f "
                   "roll %.1f deg\n",
                   (unsigned)i, (unsigned)f->num_landmarks, (double)f->box.x, (double)f->box.y,
                   (double)f->box.w, (double)f->box.h, (double)f->pitch_deg, (double)f->yaw_deg,
                   (double)f->roll_deg);
        }
        if (canvas) {
            ks__draw_box(canvas, f->box.x, f->box.y, f->box.w, f->box.h, 0x00ff00);
            for (uint32_t k = 0; k < f->num_landmarks; k++)
                ks__draw_point(canvas, f->landmarks[k].x, f->landmarks[k].y, 1,
                               k >= KS_FACE_MESH_NUM_LANDMARKS ? 0x00ffff : 0xff0000);
        }
    }
    if (args->json)
        printf("]}\n");
    else if (faces->count == 0)
        printf("no face found\n");
    ks_face_meshes_release(faces);
    ks_face_landmarker_destroy(fl);
    return 0;
}
