/* ks-update-demo: an app that receives signed updates of its face tracking and its AR effect
 * while a video runs (docs/delivery.md, "Sample: an update during a video").
 *
 * The app ships nothing but the release public key. Its first download (version 1: the face
 * landmarker bundle, an effect and a self-test) is installed before the video starts. While the
 * camera thread tracks the face and renders the effect on every frame, an update thread
 * "receives" version 2 on disk (a downloaded file), installs it through the store (signature,
 * hashes, self-test, atomic commit) and points the running task and renderer at it: the face
 * landmarker by ks_face_landmarker_swap_model (taken at the start of the next frame), the
 * renderer by ks_ar_renderer_swap_effect on the camera thread between two frames. Version 3 is
 * broken (the publisher shipped the wrong bundle): its self-test fails at install, the store
 * marks it bad and keeps version 2, and the app is told through the store's event callback.
 *
 * Usage: ks-update-demo --store DIR --key RELEASE.pub --photo PHOTO --v1 PKG --v2 PKG --v3 PKG
 *                       [--frames N] [--fps F]
 * The frames are the photo panned a few pixels per frame (a stand-in for a camera); --fps paces
 * them like a camera (0: as fast as possible). Exit 0 when every frame was processed and
 * rendered, version 2 took over without a gap and version 3 was rolled back. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "image_io.h"
#include "kestrel/ar.h"
#include "kestrel/delivery.h"
#include "kestrel/effect.h"
#include "kestrel/face.h"

#define PACKAGE_ID "face"
#define MAX_FRAMES 4000

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static double g_t0;
static pthread_mutex_t g_print = PTHREAD_MUTEX_INITIALIZER;

/* One line of the log, with the time since the video started and the thread. */
static void say(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const char *who, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&g_print);
    printf("%8.1f ms  %-7s ", now_ms() - g_t0, who);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    pthread_mutex_unlock(&g_print);
    va_end(ap);
}

/* The store's event callback (on the thread that called the store). */
static atomic_int g_rolled_back;
static void on_store_event(void *user, ks_store_event event, const ks_package_info *info,
                           const char *message) {
    (void)user;
    if (event == KS_STORE_EVENT_ROLLED_BACK) atomic_store(&g_rolled_back, 1);
    const char *what = event == KS_STORE_EVENT_INSTALLED ? "INSTALLED" : "ROLLED_BACK";
    /* Roll-back messages start with the package and version ("face 3.0.0: self-test ..."). */
    if (strncmp(message, info->id, strlen(info->id)) == 0)
        say("store", "event %s: %s", what, message);
    else
        say("store", "event %s: %s %u.%u.%u%s%s", what, info->id, info->version_major,
            info->version_minor, info->version_patch, message[0] ? ": " : "", message);
}

typedef struct app {
    ks_store *store;
    const char *v2, *v3;
    ks_face_landmarker *landmarker;
    _Atomic(ks_effect *) next_effect; /* opened by the update thread, taken by the camera */
    atomic_int frame;                 /* frames rendered so far */
    atomic_int done;
    int num_frames;
    int failures;
} app;

static bool version_of(ks_store *store, ks_package_info *info) {
    return ks_store_current(store, PACKAGE_ID, 0, info) == KS_STATUS_OK;
}

static void wait_frame(app *a, int frame) {
    while (atomic_load(&a->frame) < frame && !atomic_load(&a->done)) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}

/* Installs a downloaded package; on success points the running task and renderer at it. */
static void receive(app *a, const char *pkg) {
    say("update", "received %s; installing while the video runs", pkg);
    double t = now_ms();
    ks_package_info info;
    ks_status st = ks_store_install_file(a->store, pkg, 0, &info);
    double install_ms = now_ms() - t;
    if (st) {
        /* The refusal and its message first: the next store call replaces them. */
        ks_delivery_error refusal = ks_store_last_refusal(a->store);
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", ks_last_error(a->store));
        ks_package_info cur = {0};
        bool have = version_of(a->store, &cur);
        say("update", "install refused after %.0f ms: %s: %s", install_ms,
            ks_delivery_error_string(refusal), msg);
        say("update", "still running %s %u.%u.%u", have ? cur.id : "(none)", cur.version_major,
            cur.version_minor, cur.version_patch);
        return;
    }
    say("update", "installed %s %u.%u.%u in %.0f ms (verify, write, fsync, self-test, commit)",
        info.id, info.version_major, info.version_minor, info.version_patch, install_ms);
    char bundle[4096], effect_path[4096];
    if (ks_store_file_path(a->store, PACKAGE_ID, "face_landmarker.ksb", bundle, sizeof(bundle)) ||
        ks_store_file_path(a->store, PACKAGE_ID, "effect.kfx", effect_path, sizeof(effect_path))) {
        say("update", "the package lacks face_landmarker.ksb or effect.kfx: %s",
            ks_last_error(a->store));
        return;
    }
    t = now_ms();
    ks_task_options src = {.model_path = bundle};
    st = ks_face_landmarker_swap_model(a->landmarker, &src);
    if (st) {
        say("update", "swap refused: %s", ks_last_error(NULL));
        return;
    }
    ks_effect *fx = NULL;
    st = ks_effect_open_file(effect_path, NULL, &fx);
    if (st) {
        say("update", "effect %s: %s", effect_path, ks_last_error(NULL));
        return;
    }
    ks_effect *old = atomic_exchange(&a->next_effect, fx);
    ks_effect_destroy(old); /* an earlier one the camera never took */
    say("update", "new models and effect ready in %.0f ms (off the camera thread)", now_ms() - t);
}

static void *update_main(void *arg) {
    app *a = arg;
    wait_frame(a, a->num_frames / 3);
    receive(a, a->v2);
    wait_frame(a, 2 * a->num_frames / 3);
    receive(a, a->v3);
    return NULL;
}

/* The frame: the photo panned by `shift` pixels (edge pixels repeated). */
static void make_frame(const ks_image *photo, int shift, uint8_t *out) {
    int w = photo->width_px, h = photo->height_px;
    for (int y = 0; y < h; y++) {
        const uint8_t *src =
            (const uint8_t *)photo->planes[0] + (size_t)y * (size_t)photo->stride_bytes[0];
        uint8_t *dst = out + (size_t)y * (size_t)w * 3;
        for (int x = 0; x < w; x++) {
            int sx = x + shift < 0 ? 0 : (x + shift >= w ? w - 1 : x + shift);
            memcpy(dst + 3 * x, src + 3 * sx, 3);
        }
    }
}

static int parse_hex_key(const char *path, uint8_t key[32]) {
    FILE *f = fopen(path, "r");
    char text[80] = "";
    if (!f) return -1;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    if (n < 64) return -1;
    for (int i = 0; i < 32; i++) {
        unsigned v;
        if (sscanf(text + 2 * i, "%2x", &v) != 1) return -1;
        key[i] = (uint8_t)v;
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *root = NULL, *key_path = NULL, *photo_path = NULL, *v1 = NULL;
    app a = {.num_frames = 90};
    double fps = 30.0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--store"))
            root = v;
        else if (!strcmp(k, "--key"))
            key_path = v;
        else if (!strcmp(k, "--photo"))
            photo_path = v;
        else if (!strcmp(k, "--v1"))
            v1 = v;
        else if (!strcmp(k, "--v2"))
            a.v2 = v;
        else if (!strcmp(k, "--v3"))
            a.v3 = v;
        else if (!strcmp(k, "--frames"))
            a.num_frames = atoi(v);
        else if (!strcmp(k, "--fps"))
            fps = atof(v);
        else {
            fprintf(stderr, "ks-update-demo: unknown option %s\n", k);
            return 2;
        }
    }
    if (!root || !key_path || !photo_path || !v1 || !a.v2 || !a.v3 || a.num_frames < 9 ||
        a.num_frames > MAX_FRAMES || fps < 0) {
        fprintf(stderr, "usage: ks-update-demo --store DIR --key RELEASE.pub --photo PHOTO --v1 "
                        "PKG --v2 PKG --v3 PKG [--frames 9..4000] [--fps F]\n");
        return 2;
    }
    uint8_t trusted[32];
    if (parse_hex_key(key_path, trusted)) {
        fprintf(stderr, "ks-update-demo: %s is not a ks-sign public key\n", key_path);
        return 1;
    }
    ks_image_buf photo;
    char err[512];
    if (ks_image_load(photo_path, 0, &photo, err, sizeof(err)) ||
        photo.image.format != KS_PIXEL_FORMAT_RGB) {
        fprintf(stderr, "ks-update-demo: %s: %s\n", photo_path, err[0] ? err : "not RGB");
        return 1;
    }
    g_t0 = now_ms();
    ks_store_desc sd = {.trusted_keys = trusted, .num_trusted_keys = 1, .on_event = on_store_event};
    if (ks_store_open(root, &sd, &a.store)) {
        fprintf(stderr, "ks-update-demo: store %s: %s\n", root, ks_last_error(NULL));
        return 1;
    }
    /* The first download, before the camera starts. */
    ks_package_info info;
    if (!version_of(a.store, &info) && ks_store_install_file(a.store, v1, 0, &info)) {
        fprintf(stderr, "ks-update-demo: %s: %s\n", v1, ks_last_error(a.store));
        return 1;
    }
    char bundle[4096], effect_path[4096];
    ks_store_file_path(a.store, PACKAGE_ID, "face_landmarker.ksb", bundle, sizeof(bundle));
    ks_store_file_path(a.store, PACKAGE_ID, "effect.kfx", effect_path, sizeof(effect_path));
    ks_face_landmarker_desc ld = {.task = {.mode = KS_MODE_VIDEO, .model_path = bundle}};
    ks_effect *effect = NULL;
    ks_ar_renderer *renderer = NULL;
    /* The null backend runs the effect's layout, triggers and states without a GL context; an
     * app passes KS_AR_BACKEND_GLES3 with its context current (the swap is the same). */
    if (ks_face_landmarker_create(&ld, &a.landmarker) ||
        ks_effect_open_file(effect_path, NULL, &effect) ||
        ks_ar_renderer_create(&(ks_ar_renderer_desc){.backend = KS_AR_BACKEND_NULL}, effect,
                              &renderer)) {
        fprintf(stderr, "ks-update-demo: version %u: %s\n", info.version_major,
                ks_last_error(NULL));
        return 1;
    }
    say("camera", "running %s %u.%u.%u: %s, effect '%s'; %d frames at %g fps", info.id,
        info.version_major, info.version_minor, info.version_patch, "face_landmarker.ksb",
        ks_effect_get_info(effect)->id, a.num_frames, fps);

    pthread_t updater;
    pthread_create(&updater, NULL, update_main, &a);
    int w = photo.image.width_px, h = photo.image.height_px;
    uint8_t *pixels = malloc((size_t)w * (size_t)h * 3);
    if (!pixels) return 1;
    double frame_ms[MAX_FRAMES], worst = 0;
    int frames_with_face = 0, late = 0;
    uint64_t last_gen = 0;
    /* A copy: the id lives in the effect, which a swap destroys. */
    char last_effect[256];
    snprintf(last_effect, sizeof(last_effect), "%s", ks_effect_get_info(effect)->id);
    double next_tick = now_ms();
    for (int i = 0; i < a.num_frames; i++) {
        if (fps > 0) { /* a camera delivers a frame every 1/fps s */
            double wait = next_tick - now_ms();
            if (wait > 0) {
                struct timespec ts = {(time_t)(wait / 1e3), (long)(fmod(wait, 1e3) * 1e6)};
                nanosleep(&ts, NULL);
            }
            next_tick += 1e3 / fps;
        }
        double t = now_ms();
        /* A new effect, opened by the update thread: swapped in between two frames. */
        ks_effect *fx = atomic_exchange(&a.next_effect, NULL);
        if (fx) {
            if (ks_ar_renderer_swap_effect(renderer, fx)) {
                say("camera", "effect swap refused: %s", ks_last_error(renderer));
                ks_effect_destroy(fx);
            } else {
                ks_effect_destroy(effect); /* the renderer no longer uses it */
                effect = fx;
            }
        }
        make_frame(&photo.image, (i % 40) < 20 ? i % 20 : 20 - i % 20, pixels);
        ks_image img = {.format = KS_PIXEL_FORMAT_RGB,
                        .width_px = w,
                        .height_px = h,
                        .planes = {pixels},
                        .stride_bytes = {w * 3}};
        ks_face_meshes *faces = NULL;
        ks_status st = ks_face_landmarker_detect(a.landmarker, &img, (int64_t)i * 33333, &faces);
        ks_ar_face arf[KS_AR_MAX_FACES];
        uint32_t nf = 0;
        for (uint32_t k = 0; !st && k < faces->count && nf < KS_AR_MAX_FACES; k++)
            if (!ks_ar_face_from_mesh(&faces->items[k], &arf[nf])) nf++;
        ks_ar_frame frame = {.width_px = w,
                             .height_px = h,
                             .timestamp_us = (int64_t)i * 33333,
                             .num_faces = nf,
                             .faces = arf};
        if (!st) st = ks_ar_render(renderer, &frame, &(ks_ar_output){0});
        frame_ms[i] = now_ms() - t;
        if (frame_ms[i] > worst) worst = frame_ms[i];
        if (fps > 0 && frame_ms[i] > 1e3 / fps) late++;
        ks_task_stats ts;
        ks_face_landmarker_stats(a.landmarker, &ts);
        if (st) {
            a.failures++;
            say("camera", "frame %d failed: %s", i, ks_last_error(NULL));
        } else {
            frames_with_face += faces->count == 1;
            const char *eid = ks_effect_get_info(effect)->id;
            if (ts.model_generation != last_gen || strcmp(eid, last_effect) != 0 || i == 0)
                say("camera",
                    "frame %3d: %u face (id %d, %u landmarks), models generation %llu, effect "
                    "'%s', %.1f ms",
                    i, faces->count, faces->count ? faces->items[0].id : -1,
                    faces->count ? faces->items[0].num_landmarks : 0,
                    (unsigned long long)ts.model_generation, eid, frame_ms[i]);
            last_gen = ts.model_generation;
            snprintf(last_effect, sizeof(last_effect), "%s", eid);
        }
        ks_face_meshes_release(faces);
        atomic_store(&a.frame, i + 1);
    }
    atomic_store(&a.done, 1);
    pthread_join(updater, NULL);
    /* A download that arrived after the last frame is released here. */
    ks_effect_destroy(atomic_exchange(&a.next_effect, NULL));

    double sum = 0;
    for (int i = 0; i < a.num_frames; i++)
        sum += frame_ms[i];
    ks_package_info cur = {0};
    bool have = version_of(a.store, &cur);
    say("camera",
        "%d frames, %d failed, %d with the face; frame time mean %.1f ms, worst %.1f ms%s; "
        "running %s %u.%u.%u, effect '%s'",
        a.num_frames, a.failures, frames_with_face, sum / a.num_frames, worst,
        fps > 0 ? (late ? " (some over the frame period)" : " (all within the frame period)") : "",
        have ? cur.id : "-", cur.version_major, cur.version_minor, cur.version_patch,
        ks_effect_get_info(effect)->id);
    bool ok = a.failures == 0 && frames_with_face == a.num_frames && have &&
              cur.version_major == 2 && last_gen == 1 && atomic_load(&g_rolled_back);
    ks_ar_renderer_destroy(renderer);
    ks_effect_destroy(effect);
    ks_face_landmarker_destroy(a.landmarker);
    ks_store_destroy(a.store);
    ks_image_buf_free(&photo);
    free(pixels);
    printf("%s\n", ok ? "OK: version 2 took over without a dropped frame; version 3 was rolled back"
                      : "FAILED");
    return ok ? 0 : 1;
}
