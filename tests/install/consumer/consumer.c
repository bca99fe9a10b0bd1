/* A program built against the INSTALLED SDK only (tests/install): the engine API on a .ksm and
 * the face detector task on a photo, through the installed default bundles.
 *
 *   consumer MODEL.ksm IMAGE BUNDLES_DIR  -> prints the version, the model's I/O and the faces;
 *                                            exit 0 when at least one face was found */
#include <stdio.h>
#include <string.h>

#include <kestrel/effect.h>
#include <kestrel/engine.h>
#include <kestrel/face.h>
#include <kestrel/pipeline.h>
#include <stb/stb_image.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: consumer MODEL.ksm IMAGE BUNDLES_DIR\n");
        return 2;
    }
    printf("kestrel %s (0x%06x)\n", ks_version_string(), (unsigned)ks_version());
    int rc = 1, w = 0, h = 0, channels = 0;
    ks_model *model = NULL;
    ks_session *session = NULL;
    ks_face_detector *detector = NULL;
    ks_faces *faces = NULL;
    unsigned char *px = stbi_load(argv[2], &w, &h, &channels, 4);
    if (!px) {
        fprintf(stderr, "consumer: cannot decode %s\n", argv[2]);
        goto done;
    }
    if (ks_model_load_file(argv[1], NULL, &model) || ks_session_create(model, NULL, &session) ||
        ks_session_reshape(session, NULL)) {
        fprintf(stderr, "consumer: %s: %s\n", argv[1], ks_last_error(model ? (void *)model : NULL));
        goto done;
    }
    ks_tensor in;
    if (ks_session_input(session, 0, &in) == KS_STATUS_OK) memset(in.data, 0, in.size_bytes);
    if (ks_session_run(session)) {
        fprintf(stderr, "consumer: %s\n", ks_last_error(session));
        goto done;
    }
    printf("model %s: input 0 is %u-d, %zu bytes\n", argv[1], (unsigned)in.info.shape.rank,
           in.size_bytes);

    if (ks_set_models_dir(argv[3]) || ks_face_detector_create(NULL, &detector)) {
        fprintf(stderr, "consumer: %s\n", ks_last_error(NULL));
        goto done;
    }
    ks_image image = {.format = KS_PIXEL_FORMAT_RGBA,
                      .width_px = w,
                      .height_px = h,
                      .planes = {px},
                      .stride_bytes = {w * 4}};
    if (ks_face_detect(detector, &image, 0, &faces)) {
        fprintf(stderr, "consumer: %s\n", ks_last_error(detector));
        goto done;
    }
    for (uint32_t i = 0; i < faces->count; i++)
        printf("face %u: score %.2f box %.0f %.0f %.0f %.0f\n", i, (double)faces->items[i].score,
               (double)faces->items[i].box.x, (double)faces->items[i].box.y,
               (double)faces->items[i].box.w, (double)faces->items[i].box.h);
    rc = faces->count > 0 ? 0 : 1;
done:
    ks_faces_release(faces);
    ks_face_detector_destroy(detector);
    ks_session_destroy(session);
    ks_model_destroy(model);
    stbi_image_free(px);
    return rc;
}
