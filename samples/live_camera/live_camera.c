/* live_camera: a desktop window showing a live AR effect (SDL2 + OpenGL ES 3.0).
 *
 *   live_camera [--source /dev/videoN | VIDEO | PHOTO] [--effects DIR] [--effect NAME]
 *               [--no-effect] [--screenshot OUT.png --quit-after SECONDS]
 *
 * Source: a V4L2 webcam (default /dev/video0 when present), else a video file played in a loop,
 * else a photo (default: the astronaut photo from the source tree). Keys: left/right arrows
 * switch between the .kfx effects of DIR (default: the build's sample effects), space toggles
 * the effect, Q or Escape quits. The overlay shows the frame rate, inference and render times
 * and the latency from frame capture to the frame on screen.
 *
 * Per frame: face landmarker (+ segmenter when the effect needs a mask) in VIDEO mode -> the AR
 * renderer draws the camera texture + effect into an offscreen texture -> the text overlay is
 * copied into its corner -> blit (flipped: textures are top-row-first) to the window. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <GLES3/gl3.h>
#include <SDL.h>
#include <stb/stb_image_write.h>

#include "camera_v4l2.h"
#include "draw.h"
#include "kestrel/ar.h"
#include "kestrel/face.h"
#include "kestrel/segment.h"
#include "video_io.h"

#define MAX_EFFECTS 64
#define MAX_WINDOW_W 1280

typedef struct options {
    const char *source, *effects_dir, *effect, *screenshot;
    int no_effect;
    double quit_after_s; /* 0: run until closed */
} options;

/* Where frames come from: a webcam, or a file (a video loops; a photo is one frame forever). */
typedef struct source {
    camera *cam;
    video_reader *video;
    int width, height, num_read;
    double frame_interval_ms; /* files play at their frame rate */
    uint8_t *rgba;            /* the current frame */
} source;

typedef struct app {
    options opt;
    source src;
    SDL_Window *window;
    SDL_GLContext gl;
    GLuint textures[2], framebuffers[2]; /* [0] camera frame, [1] rendered frame */
    char *effect_paths[MAX_EFFECTS];
    int num_effects, current, effect_on;
    ks_effect *effect;
    ks_ar_renderer *ar;
    ks_face_landmarker *landmarker;
    ks_segmenter *segmenter;
    uint8_t *label; /* the overlay text, uploaded into the frame's corner */
    int label_w, label_h;
} app;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int parse_options(int argc, char **argv, options *o) {
    struct stat st;
    o->source = stat("/dev/video0", &st) == 0 ? "/dev/video0" : KS_SAMPLE_PHOTO;
    o->effects_dir = KS_SAMPLE_EFFECTS_DIR;
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--no-effect"))
            o->no_effect = 1;
        else if (!strcmp(argv[i], "--source") && value)
            o->source = argv[++i];
        else if (!strcmp(argv[i], "--effects") && value)
            o->effects_dir = argv[++i];
        else if (!strcmp(argv[i], "--effect") && value)
            o->effect = argv[++i];
        else if (!strcmp(argv[i], "--screenshot") && value)
            o->screenshot = argv[++i];
        else if (!strcmp(argv[i], "--quit-after") && value)
            o->quit_after_s = atof(argv[++i]);
        else
            return 0;
    }
    return 1;
}

/* ---- frame source ---------------------------------------------------------------------------- */

static int source_open(source *s, const char *path) {
    if (!strncmp(path, "/dev/video", 10)) {
        if (camera_open(path, 640, 480, &s->cam)) return -1;
        s->width = camera_width(s->cam);
        s->height = camera_height(s->cam);
    } else {
        if (video_reader_open(path, &s->video)) return -1;
        s->width = video_reader_width(s->video);
        s->height = video_reader_height(s->video);
        int num, den;
        video_reader_frame_rate(s->video, &num, &den);
        s->frame_interval_ms = 1000.0 * den / num;
    }
    s->rgba = malloc((size_t)s->width * (size_t)s->height * 4);
    return s->rgba ? 0 : -1;
}

/* Gets the next frame into s->rgba and when it was captured: 1, 0 (no new frame), -1 (error). */
static int source_read(source *s, double *capture_ms) {
    const uint8_t *rgba = NULL;
    int64_t t_us;
    int got;
    if (s->cam) {
        got = camera_read(s->cam, &rgba, &t_us);
        *capture_ms = (double)t_us / 1e3; /* V4L2 stamps with CLOCK_MONOTONIC */
    } else {
        *capture_ms = now_ms();
        got = video_reader_read(s->video, &rgba, &t_us);
        if (got == 0 && s->num_read > 1 && video_reader_rewind(s->video) == 0)
            got = video_reader_read(s->video, &rgba, &t_us);
        if (got == 0 && s->num_read == 1) return 1; /* a photo: keep showing it */
    }
    if (got != 1) return got;
    memcpy(s->rgba, rgba, (size_t)s->width * (size_t)s->height * 4);
    s->num_read++;
    return 1;
}

static void source_close(source *s) {
    camera_close(s->cam);
    video_reader_close(s->video);
    free(s->rgba);
}

/* ---- effects --------------------------------------------------------------------------------- */

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_effects(app *a) {
    DIR *dir = opendir(a->opt.effects_dir);
    if (!dir) {
        fprintf(stderr, "%s: cannot open the effects folder\n", a->opt.effects_dir);
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(dir)) != NULL && a->num_effects < MAX_EFFECTS) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".kfx")) continue;
        char *path = malloc(strlen(a->opt.effects_dir) + n + 2);
        if (!path) break;
        sprintf(path, "%s/%s", a->opt.effects_dir, e->d_name);
        a->effect_paths[a->num_effects++] = path;
    }
    closedir(dir);
    qsort(a->effect_paths, (size_t)a->num_effects, sizeof(char *), by_name);
    if (a->num_effects == 0) fprintf(stderr, "%s: no .kfx files\n", a->opt.effects_dir);
    for (int i = 0; i < a->num_effects && a->opt.effect; i++)
        if (strstr(a->effect_paths[i], a->opt.effect)) a->current = i;
    return a->num_effects ? 0 : -1;
}

/* Replaces the renderer with one for effect `index` (the GL context is current). */
static void load_effect(app *a, int index) {
    ks_ar_renderer_destroy(a->ar);
    ks_effect_destroy(a->effect);
    a->ar = NULL;
    a->effect = NULL;
    a->current = (index + a->num_effects) % a->num_effects;
    const char *path = a->effect_paths[a->current];
    ks_ar_renderer_desc desc = {.width_px = a->src.width, .height_px = a->src.height};
    if (ks_effect_open_file(path, NULL, &a->effect) ||
        ks_ar_renderer_create(&desc, a->effect, &a->ar)) {
        fprintf(stderr, "%s: %s\n", path, ks_last_error(NULL));
        ks_effect_destroy(a->effect);
        a->effect = NULL;
        return;
    }
    const ks_effect_info *info = ks_effect_get_info(a->effect);
    if ((info->required_capabilities & (1u << KS_EFFECT_CAP_SEGMENTATION)) && !a->segmenter) {
        ks_segmenter_desc seg = {.task = {.mode = KS_MODE_VIDEO, .num_threads = 2}, .output_u8 = 1};
        if (ks_segmenter_create(&seg, &a->segmenter))
            fprintf(stderr, "segmenter: %s\n", ks_last_error(NULL));
    }
    printf("effect %d/%d: %s\n", a->current + 1, a->num_effects, info->name);
}

static const char *effect_name(const app *a) {
    return a->effect ? ks_effect_get_info(a->effect)->name : "(failed to load)";
}

/* ---- window and GL --------------------------------------------------------------------------- */

static int open_window(app *a) {
    /* An OpenGL ES 3.0 context, through EGL (also on X11, where Mesa provides it). */
    SDL_SetHint(SDL_HINT_VIDEO_X11_FORCE_EGL, "1");
    if (SDL_Init(SDL_INIT_VIDEO) != 0) {
        fprintf(stderr, "SDL: %s\n", SDL_GetError());
        return -1;
    }
    SDL_GL_SetAttribute(SDL_GL_CONTEXT_PROFILE_MASK, SDL_GL_CONTEXT_PROFILE_ES);
    SDL_GL_SetAttribute(SDL_GL_CONTEXT_MAJOR_VERSION, 3);
    SDL_GL_SetAttribute(SDL_GL_CONTEXT_MINOR_VERSION, 0);
    SDL_GL_SetAttribute(SDL_GL_DOUBLEBUFFER, 1);
    int w = a->src.width, h = a->src.height;
    if (w > MAX_WINDOW_W) {
        h = h * MAX_WINDOW_W / w;
        w = MAX_WINDOW_W;
    }
    a->window = SDL_CreateWindow("Kestrel live camera", SDL_WINDOWPOS_CENTERED,
                                 SDL_WINDOWPOS_CENTERED, w, h, SDL_WINDOW_OPENGL);
    if (!a->window || !(a->gl = SDL_GL_CreateContext(a->window))) {
        fprintf(stderr, "SDL: no OpenGL ES 3.0 window: %s\n", SDL_GetError());
        return -1;
    }
    SDL_GL_SetSwapInterval(1);
    printf("GL: %s / %s\n", (const char *)glGetString(GL_RENDERER),
           (const char *)glGetString(GL_VERSION));
    /* Two frame-sized RGBA textures, each attached to a framebuffer so it can be blitted. */
    glGenTextures(2, a->textures);
    glGenFramebuffers(2, a->framebuffers);
    for (int i = 0; i < 2; i++) {
        glBindTexture(GL_TEXTURE_2D, a->textures[i]);
        glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, a->src.width, a->src.height);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
        glBindFramebuffer(GL_FRAMEBUFFER, a->framebuffers[i]);
        glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, a->textures[i],
                               0);
    }
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    return glGetError() == GL_NO_ERROR ? 0 : -1;
}

/* The overlay: text on a dark box, drawn on the CPU and copied into the frame's bottom-left
 * corner (clipped to the frame). */
static void draw_label(app *a, GLuint texture, const char *text) {
    int tw, th, scale = a->src.width >= 640 ? 2 : 1, pad = 4 * scale;
    draw_text_size(text, scale, &tw, &th);
    int w = tw + 2 * pad, h = th + 2 * pad;
    if (w > a->src.width) w = a->src.width;
    if (h > a->src.height) h = a->src.height;
    if (w * h > a->label_w * a->label_h) {
        free(a->label);
        a->label = malloc((size_t)w * (size_t)h * 4);
        a->label_w = a->label_h = 0;
        if (!a->label) return;
    }
    a->label_w = w;
    a->label_h = h;
    draw_target t = {a->label, w, h, 0};
    draw_fill_rect(&t, 0, 0, w, h, (draw_color){16, 16, 16});
    draw_text(&t, pad, pad, scale, text, (draw_color){255, 255, 255});
    glBindTexture(GL_TEXTURE_2D, texture);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, a->src.height - h, w, h, GL_RGBA, GL_UNSIGNED_BYTE,
                    a->label);
}

static int save_screenshot(app *a, const char *path) {
    int w, h;
    SDL_GL_GetDrawableSize(a->window, &w, &h);
    uint8_t *px = malloc((size_t)w * (size_t)h * 4);
    if (!px) return -1;
    glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
    glPixelStorei(GL_PACK_ALIGNMENT, 4);
    glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px);
    for (size_t i = 0; i < (size_t)w * (size_t)h; i++)
        px[i * 4 + 3] = 255;
    /* GL rows are bottom-up: write them top-down by starting at the last one. */
    int ok = stbi_write_png(path, w, h, 4, px + (size_t)(h - 1) * (size_t)w * 4, -w * 4);
    free(px);
    if (!ok)
        fprintf(stderr, "%s: cannot write the screenshot\n", path);
    else
        printf("screenshot %s (%dx%d)\n", path, w, h);
    return ok ? 0 : -1;
}

/* ---- one frame ------------------------------------------------------------------------------- */

typedef struct frame_stats {
    double infer_ms, render_ms, latency_ms, fps;
} frame_stats;

/* Runs the tasks and the effect on the current frame and draws it into the window (not yet
 * swapped); *infer_ms is the tasks' time. */
static int render_frame(app *a, int64_t timestamp_us, const frame_stats *stats, double *infer_ms) {
    source *s = &a->src;
    ks_image image = {.format = KS_PIXEL_FORMAT_RGBA,
                      .width_px = s->width,
                      .height_px = s->height,
                      .planes = {s->rgba},
                      .stride_bytes = {s->width * 4}};
    glBindTexture(GL_TEXTURE_2D, a->textures[0]);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, s->width, s->height, GL_RGBA, GL_UNSIGNED_BYTE,
                    s->rgba);
    int shown = 0; /* index of the texture to show */
    *infer_ms = 0;
    if (a->effect_on && a->ar) {
        ks_face_meshes *meshes = NULL;
        ks_segmentation *mask = NULL;
        double t0 = now_ms();
        int need_mask = ks_effect_get_info(a->effect)->required_capabilities &
                        (1u << KS_EFFECT_CAP_SEGMENTATION);
        if (ks_face_landmarker_detect(a->landmarker, &image, timestamp_us, &meshes)) {
            fprintf(stderr, "face landmarker: %s\n", ks_last_error(a->landmarker));
            return -1;
        }
        if (need_mask && a->segmenter &&
            ks_segment(a->segmenter, &image, timestamp_us, &mask) != KS_STATUS_OK) {
            fprintf(stderr, "segmenter: %s\n", ks_last_error(a->segmenter));
            ks_face_meshes_release(meshes);
            return -1;
        }
        *infer_ms = now_ms() - t0;
        ks_ar_face faces[KS_AR_MAX_FACES];
        ks_ar_frame frame = {.width_px = s->width,
                             .height_px = s->height,
                             .timestamp_us = timestamp_us,
                             .texture = a->textures[0],
                             .faces = faces};
        for (uint32_t i = 0; i < meshes->count && frame.num_faces < KS_AR_MAX_FACES; i++)
            if (ks_ar_face_from_mesh(&meshes->items[i], &faces[frame.num_faces]) == KS_STATUS_OK)
                frame.num_faces++;
        if (mask)
            frame.mask = (ks_ar_mask){
                .pixels = mask->mask_u8, .width_px = mask->width_px, .height_px = mask->height_px};
        ks_ar_output out = {.texture = a->textures[1]};
        ks_status st = ks_ar_render(a->ar, &frame, &out);
        ks_face_meshes_release(meshes);
        ks_segmentation_release(mask);
        if (st) {
            fprintf(stderr, "render: %s\n", ks_last_error(a->ar));
            return -1;
        }
        shown = 1;
    }
    char text[256];
    snprintf(text, sizeof(text),
             "%.1f FPS  LATENCY %.0f MS\nINFER %.1f MS  RENDER %.1f MS\n"
             "EFFECT %d/%d: %s%s  <- ->  SPACE  Q",
             stats->fps, stats->latency_ms, stats->infer_ms, stats->render_ms, a->current + 1,
             a->num_effects, effect_name(a), a->effect_on ? "" : " (OFF)");
    draw_label(a, a->textures[shown], text);
    int w, h;
    SDL_GL_GetDrawableSize(a->window, &w, &h);
    glBindFramebuffer(GL_READ_FRAMEBUFFER, a->framebuffers[shown]);
    glBindFramebuffer(GL_DRAW_FRAMEBUFFER, 0);
    glViewport(0, 0, w, h);
    glBlitFramebuffer(0, 0, s->width, s->height, 0, h, w, 0, GL_COLOR_BUFFER_BIT, GL_LINEAR);
    glFinish(); /* so the measured times include the GPU work */
    return 0;
}

int main(int argc, char **argv) {
    app a;
    memset(&a, 0, sizeof(a));
    if (!parse_options(argc, argv, &a.opt) || (a.opt.screenshot && a.opt.quit_after_s <= 0)) {
        fprintf(stderr, "usage: live_camera [--source /dev/videoN|VIDEO|PHOTO] [--effects DIR] "
                        "[--effect NAME] [--no-effect] [--screenshot OUT.png --quit-after S]\n");
        return 2;
    }
    int rc = 1;
    if (source_open(&a.src, a.opt.source) || list_effects(&a) || open_window(&a)) goto done;
    ks_face_landmarker_desc lm = {
        .task = {.mode = KS_MODE_VIDEO, .num_threads = 2, .max_results = 2}};
    if (ks_face_landmarker_create(&lm, &a.landmarker)) {
        fprintf(stderr, "face landmarker: %s\n", ks_last_error(NULL));
        goto done;
    }
    a.effect_on = !a.opt.no_effect;
    load_effect(&a, a.current);

    frame_stats stats = {0};
    double start_ms = now_ms(), last_frame_ms = 0, last_present_ms = 0, mean_frame_ms = 0;
    int64_t last_ts_us = -1;
    int running = 1;
    while (running) {
        SDL_Event ev;
        while (SDL_PollEvent(&ev)) {
            if (ev.type == SDL_QUIT) running = 0;
            if (ev.type != SDL_KEYDOWN) continue;
            switch (ev.key.keysym.sym) {
            case SDLK_q:
            case SDLK_ESCAPE:
                running = 0;
                break;
            case SDLK_SPACE:
                a.effect_on = !a.effect_on;
                break;
            case SDLK_LEFT:
                load_effect(&a, a.current - 1);
                break;
            case SDLK_RIGHT:
                load_effect(&a, a.current + 1);
                break;
            default:
                break;
            }
        }
        /* Files play at their frame rate; a camera delivers at its own pace. */
        double wait_ms = last_frame_ms + a.src.frame_interval_ms - now_ms();
        if (!a.src.cam && wait_ms > 0) SDL_Delay((Uint32)wait_ms + 1);
        double capture_ms;
        int got = source_read(&a.src, &capture_ms);
        if (got < 0) goto done;
        if (got == 0) continue;
        last_frame_ms = now_ms();
        int64_t ts_us = (int64_t)((last_frame_ms - start_ms) * 1e3); /* must increase */
        ts_us = ts_us > last_ts_us ? ts_us : last_ts_us + 1;
        last_ts_us = ts_us;

        double t0 = now_ms(), infer_ms;
        if (render_frame(&a, ts_us, &stats, &infer_ms)) goto done;
        int quitting = a.opt.quit_after_s > 0 && now_ms() - start_ms >= a.opt.quit_after_s * 1e3;
        if (quitting && a.opt.screenshot && save_screenshot(&a, a.opt.screenshot)) goto done;
        SDL_GL_SwapWindow(a.window);
        double t1 = now_ms();
        stats.infer_ms = infer_ms;
        stats.render_ms = t1 - t0 - infer_ms;
        stats.latency_ms = t1 - capture_ms;
        if (last_present_ms > 0) { /* frame rate from a running mean of frame intervals */
            double frame_ms = t1 - last_present_ms;
            mean_frame_ms = mean_frame_ms > 0 ? 0.9 * mean_frame_ms + 0.1 * frame_ms : frame_ms;
            stats.fps = 1e3 / mean_frame_ms;
        }
        last_present_ms = t1;
        if (quitting) running = 0;
    }
    rc = 0;
done:
    ks_ar_renderer_destroy(a.ar); /* while the GL context is current */
    ks_effect_destroy(a.effect);
    ks_face_landmarker_destroy(a.landmarker);
    ks_segmenter_destroy(a.segmenter);
    if (a.textures[0]) glDeleteTextures(2, a.textures);
    if (a.framebuffers[0]) glDeleteFramebuffers(2, a.framebuffers);
    if (a.gl) SDL_GL_DeleteContext(a.gl);
    if (a.window) SDL_DestroyWindow(a.window);
    SDL_Quit();
    for (int i = 0; i < a.num_effects; i++)
        free(a.effect_paths[i]);
    free(a.label);
    source_close(&a.src);
    return rc;
}
