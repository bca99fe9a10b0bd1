/* ks-video-effects: applies an AR effect (.kfx) to every frame of a video.
 *
 *   ks-video-effects --effect PKG.kfx --in IN.mp4 --out OUT.mp4 [--overlay] [--max-frames N]
 *
 * Per frame: decode (FFmpeg) -> face landmarker, plus the person segmenter when the effect needs
 * a mask (both in VIDEO mode: tracking and smoothing across frames) -> AR renderer in a headless
 * OpenGL ES 3 context -> optional task overlay (landmarks, boxes, ids) -> encode (H.264 when
 * available) at the input's frame rate. Models come from KESTREL_MODELS_DIR (see README.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "draw.h"
#include "egl_headless.h"
#include "kestrel/ar.h"
#include "kestrel/face.h"
#include "kestrel/segment.h"
#include "video_io.h"

typedef struct options {
    const char *effect, *in, *out;
    int overlay;
    long max_frames; /* 0: all */
} options;

static int parse_options(int argc, char **argv, options *o) {
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--overlay")) {
            o->overlay = 1;
        } else if (!strcmp(argv[i], "--effect") && value) {
            o->effect = argv[++i];
        } else if (!strcmp(argv[i], "--in") && value) {
            o->in = argv[++i];
        } else if (!strcmp(argv[i], "--out") && value) {
            o->out = argv[++i];
        } else if (!strcmp(argv[i], "--max-frames") && value) {
            o->max_frames = strtol(argv[++i], NULL, 10);
        } else {
            return 0;
        }
    }
    return o->effect && o->in && o->out && o->max_frames >= 0;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Task overlay: every landmark as a dot, the face box and its tracking id. */
static void draw_overlay(const draw_target *t, const ks_face_meshes *meshes) {
    const draw_color green = {40, 230, 90}, yellow = {250, 210, 40};
    for (uint32_t i = 0; i < meshes->count; i++) {
        const ks_face_mesh *m = &meshes->items[i];
        for (uint32_t k = 0; k < m->num_landmarks; k++)
            draw_dot(t, m->landmarks[k].x, m->landmarks[k].y, 0, green);
        draw_rect(t, (int)m->box.x, (int)m->box.y, (int)m->box.w, (int)m->box.h, 2, yellow);
        char label[32];
        snprintf(label, sizeof(label), "ID %d", (int)m->id);
        draw_text(t, (int)m->box.x, (int)(m->box.y + m->box.h) + 4, 2, label, yellow);
    }
}

int main(int argc, char **argv) {
    options opt = {0};
    if (!parse_options(argc, argv, &opt)) {
        fprintf(stderr, "usage: ks-video-effects --effect PKG.kfx --in IN.mp4 --out OUT.mp4 "
                        "[--overlay] [--max-frames N]\n");
        return 2;
    }
    int rc = 1;
    video_reader *in = NULL;
    video_writer *out = NULL;
    ks_effect *effect = NULL;
    ks_ar_egl *egl = NULL;
    ks_ar_renderer *ar = NULL;
    ks_face_landmarker *landmarker = NULL;
    ks_segmenter *segmenter = NULL;
    uint8_t *pixels = NULL;
    char err[256];

    if (video_reader_open(opt.in, &in)) goto done;
    int width = video_reader_width(in), height = video_reader_height(in), fps_num, fps_den;
    video_reader_frame_rate(in, &fps_num, &fps_den);

    if (ks_effect_open_file(opt.effect, NULL, &effect)) {
        fprintf(stderr, "%s\n", ks_last_error(NULL));
        goto done;
    }
    const ks_effect_info *info = ks_effect_get_info(effect);
    /* The renderer draws with the current GL context: here a headless (surfaceless) one. */
    if (ks_ar_egl_create(&egl, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        goto done;
    }
    ks_ar_renderer_desc ar_desc = {.width_px = width, .height_px = height};
    if (ks_ar_renderer_create(&ar_desc, effect, &ar)) {
        fprintf(stderr, "%s: %s\n", opt.effect, ks_last_error(NULL));
        goto done;
    }
    ks_face_landmarker_desc lm_desc = {
        .task = {.mode = KS_MODE_VIDEO, .num_threads = 2, .max_results = (int32_t)info->max_faces}};
    if (ks_face_landmarker_create(&lm_desc, &landmarker)) {
        fprintf(stderr, "face landmarker: %s\n", ks_last_error(NULL));
        goto done;
    }
    if (info->required_capabilities & (1u << KS_EFFECT_CAP_SEGMENTATION)) {
        ks_segmenter_desc seg_desc = {.task = {.mode = KS_MODE_VIDEO, .num_threads = 2},
                                      .output_u8 = 1};
        if (ks_segmenter_create(&seg_desc, &segmenter)) {
            fprintf(stderr, "segmenter: %s\n", ks_last_error(NULL));
            goto done;
        }
    }
    pixels = malloc((size_t)width * (size_t)height * 4);
    if (!pixels || video_writer_open(opt.out, width, height, fps_num, fps_den, &out)) goto done;

    const uint8_t *rgba;
    int64_t pts_us, last_pts_us = -1;
    long num_frames = 0, num_faces = 0;
    double start_ms = now_ms();
    int got = 0;
    while ((opt.max_frames == 0 || num_frames < opt.max_frames) &&
           (got = video_reader_read(in, &rgba, &pts_us)) == 1) {
        if (pts_us <= last_pts_us) pts_us = last_pts_us + 1; /* VIDEO mode needs increasing time */
        last_pts_us = pts_us;
        ks_image image = {.format = KS_PIXEL_FORMAT_RGBA,
                          .width_px = width,
                          .height_px = height,
                          .planes = {(uint8_t *)rgba},
                          .stride_bytes = {width * 4}};
        ks_face_meshes *meshes = NULL;
        ks_segmentation *mask = NULL;
        if (ks_face_landmarker_detect(landmarker, &image, pts_us, &meshes)) {
            fprintf(stderr, "frame %ld: %s\n", num_frames, ks_last_error(landmarker));
            goto done;
        }
        if (segmenter && ks_segment(segmenter, &image, pts_us, &mask)) {
            fprintf(stderr, "frame %ld: %s\n", num_frames, ks_last_error(segmenter));
            ks_face_meshes_release(meshes);
            goto done;
        }
        ks_ar_face faces[KS_AR_MAX_FACES];
        ks_ar_frame frame = {.width_px = width,
                             .height_px = height,
                             .timestamp_us = pts_us,
                             .pixels = rgba,
                             .faces = faces};
        for (uint32_t i = 0; i < meshes->count && frame.num_faces < KS_AR_MAX_FACES; i++)
            if (ks_ar_face_from_mesh(&meshes->items[i], &faces[frame.num_faces]) == KS_STATUS_OK)
                frame.num_faces++;
        if (mask)
            frame.mask = (ks_ar_mask){
                .pixels = mask->mask_u8, .width_px = mask->width_px, .height_px = mask->height_px};
        ks_ar_output output = {.pixels = pixels};
        ks_status st = ks_ar_render(ar, &frame, &output);
        if (st == KS_STATUS_OK && opt.overlay)
            draw_overlay(&(draw_target){pixels, width, height, 0}, meshes);
        num_faces += (long)meshes->count;
        ks_face_meshes_release(meshes);
        ks_segmentation_release(mask);
        if (st) {
            fprintf(stderr, "frame %ld: %s\n", num_frames, ks_last_error(ar));
            goto done;
        }
        if (video_writer_write(out, pixels)) goto done;
        num_frames++;
    }
    if (got < 0) goto done;
    double seconds = (now_ms() - start_ms) / 1e3;
    printf("%s: %ld frames %dx%d at %.2f fps (%s), %.2f faces/frame, %.1f frames/s processed\n",
           opt.out, num_frames, width, height, (double)fps_num / fps_den,
           video_writer_codec_name(out), num_frames ? (double)num_faces / num_frames : 0.0,
           seconds > 0 ? num_frames / seconds : 0.0);
    rc = 0;
done:
    if (video_writer_close(out)) rc = 1;
    video_reader_close(in);
    free(pixels);
    ks_segmenter_destroy(segmenter);
    ks_face_landmarker_destroy(landmarker);
    ks_ar_renderer_destroy(ar); /* while its GL context is still current */
    ks_ar_egl_destroy(egl);
    ks_effect_destroy(effect);
    return rc;
}
