/* face_photo IMAGE: the faces and face meshes in a photo, with Kestrel's task API (README.md). */
#include <stdio.h>

#include <kestrel/face.h>
#include <stb/stb_image.h>

int main(int argc, char **argv) {
    int w = 0, h = 0, channels = 0;
    unsigned char *px = argc == 2 ? stbi_load(argv[1], &w, &h, &channels, 3) : NULL;
    if (!px) return fprintf(stderr, "usage: face_photo IMAGE.{png,jpg}\n"), 2;
    ks_image image = {.format = KS_PIXEL_FORMAT_RGB, .width_px = w, .height_px = h, .planes = {px}};
    ks_face_detector *detector = NULL;
    ks_face_landmarker *landmarker = NULL;
    ks_faces *faces = NULL;
    ks_face_meshes *meshes = NULL;
    int rc = 1;
    if (ks_face_detector_create(NULL, &detector) || ks_face_landmarker_create(NULL, &landmarker)) {
        fprintf(stderr, "face_photo: %s\n", ks_last_error(NULL));
    } else if (ks_face_detect(detector, &image, 0, &faces) ||
               ks_face_landmarker_detect(landmarker, &image, 0, &meshes)) {
        fprintf(stderr, "face_photo: %s%s\n", ks_last_error(detector), ks_last_error(landmarker));
    } else {
        for (uint32_t i = 0; i < faces->count; i++) {
            ks_box b = faces->items[i].box;
            printf("face %u: score %.2f box x=%.0f y=%.0f w=%.0f h=%.0f\n", i,
                   (double)faces->items[i].score, (double)b.x, (double)b.y, (double)b.w,
                   (double)b.h);
        }
        for (uint32_t i = 0; i < meshes->count; i++) {
            const ks_face_mesh *m = &meshes->items[i];
            printf("mesh %u: %u landmarks, nose tip (%.0f, %.0f), yaw %.0f pitch %.0f roll %.0f\n",
                   i, m->num_landmarks, (double)m->landmarks[1].x, (double)m->landmarks[1].y,
                   (double)m->yaw_deg, (double)m->pitch_deg, (double)m->roll_deg);
        }
        if (faces->count == 0) printf("no face found (short-range model: faces within ~2 m)\n");
        rc = 0;
    }
    ks_face_meshes_release(meshes);
    ks_faces_release(faces);
    ks_face_landmarker_destroy(landmarker);
    ks_face_detector_destroy(detector);
    stbi_image_free(px);
    return rc;
}
