/* ks-ar: renders an AR effect package on photos, headless (surfaceless EGL + OpenGL ES 3).
 *
 *   ks-ar --effect PKG.kfx --image IMG --out OUT.png [options]
 *   ks-ar --effect PKG.kfx --frames DIR --out-dir DIR [options]      (an image sequence, as video)
 *
 * Options:
 *   --landmarks FIXTURE.json  faces from a landmark fixture instead of the face landmarker
 *                             (scaled to the image when the fixture's width/height differ)
 *   --param NAME=VALUE        set an effect parameter (repeatable): colours "#RRGGBB[AA]" or
 *                             "r,g,b[,a]", floats, enum options; image parameters take a file
 *   --no-mask                 do not run the segmenter (background layers then draw nothing)
 *   --threads N               inference threads for the landmarker/segmenter (default 2)
 *
 * Faces come from the face landmarker (VIDEO mode for --frames: tracking ids, smoothing) and the
 * person mask from the selfie segmenter, with their default bundles in ks_models_dir()
 * (KESTREL_MODELS_DIR). Prints per frame: faces, inference time and render time (upload, all
 * layers and readback, measured with glFinish; for --image the frame is rendered twice and the
 * second, steady-state time is reported next to the first, which includes shader compilation).
 * Exit status 0 on success, 1 on any error. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <GLES3/gl3.h>

#include "egl_headless.h"
#include "image_io.h"
#include "kestrel/ar.h"
#include "kestrel/effect.h"
#include "landmark_fixture.h"

#if defined(KS_AR_HAVE_TASKS)
#include "kestrel/face.h"
#include "kestrel/segment.h"
#endif

#define MAX_PARAMS 32
#define MAX_FRAMES 10000

typedef struct args {
    const char *effect, *image, *out, *frames, *out_dir, *landmarks;
    const char *params[MAX_PARAMS];
    int num_params;
    int no_mask;
    int threads;
    int short_range; /* --detector short: the selfie detector (faces within ~2 m) */
} args;

typedef struct tool {
    args a;
    ks_effect *fx;
    ks_ar_egl *egl;
    ks_ar_renderer *ar;
    ks_ar_fixture *fixture;
    int needs_mask;
#if defined(KS_AR_HAVE_TASKS)
    ks_face_landmarker *lm;
    ks_segmenter *seg;
#endif
} tool;

static void usage(void) {
    fprintf(stderr,
            "usage: ks-ar --effect PKG.kfx (--image IMG --out OUT.png | --frames DIR --out-dir "
            "DIR)\n"
            "             [--landmarks FIXTURE.json] [--param NAME=VALUE]... [--no-mask] "
            "[--threads N]\n"
            "             [--detector full|short]   (full range by default: any photo; short: "
            "selfies)\n");
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int parse_args(int argc, char **argv, args *a) {
    memset(a, 0, sizeof(*a));
    a->threads = 2;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(k, "--no-mask")) {
            a->no_mask = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "ks-ar: %s needs a value\n", k);
            return 0;
        }
        i++;
        if (!strcmp(k, "--effect"))
            a->effect = v;
        else if (!strcmp(k, "--image"))
            a->image = v;
        else if (!strcmp(k, "--out"))
            a->out = v;
        else if (!strcmp(k, "--frames"))
            a->frames = v;
        else if (!strcmp(k, "--out-dir"))
            a->out_dir = v;
        else if (!strcmp(k, "--landmarks"))
            a->landmarks = v;
        else if (!strcmp(k, "--threads"))
            a->threads = atoi(v);
        else if (!strcmp(k, "--detector") && (!strcmp(v, "full") || !strcmp(v, "short")))
            a->short_range = !strcmp(v, "short");
        else if (!strcmp(k, "--param")) {
            if (a->num_params == MAX_PARAMS) {
                fprintf(stderr, "ks-ar: more than %d --param\n", MAX_PARAMS);
                return 0;
            }
            a->params[a->num_params++] = v;
        } else {
            fprintf(stderr, "ks-ar: unknown option %s\n", k);
            return 0;
        }
    }
    if (!a->effect || (!!a->image != !!a->out) || (!!a->frames != !!a->out_dir) ||
        (!a->image && !a->frames) || (a->image && a->frames)) {
        usage();
        return 0;
    }
    return 1;
}

/* Loads any image file as tight RGBA8. */
static int load_rgba(const char *path, uint8_t **rgba_out, int32_t *w_out, int32_t *h_out) {
    ks_image_buf img;
    char err[256];
    if (ks_image_load(path, 0, &img, err, sizeof(err))) {
        fprintf(stderr, "ks-ar: %s\n", err);
        return 0;
    }
    int32_t w = img.image.width_px, h = img.image.height_px;
    int ch = img.image.format == KS_PIXEL_FORMAT_RGBA  ? 4
             : img.image.format == KS_PIXEL_FORMAT_RGB ? 3
                                                       : 1;
    uint8_t *rgba = malloc((size_t)w * h * 4);
    if (!rgba) {
        ks_image_buf_free(&img);
        fprintf(stderr, "ks-ar: out of memory\n");
        return 0;
    }
    for (size_t p = 0; p < (size_t)w * h; p++) {
        const uint8_t *s = img.pixels + p * (size_t)ch;
        rgba[4 * p] = s[0];
        rgba[4 * p + 1] = ch >= 3 ? s[1] : s[0];
        rgba[4 * p + 2] = ch >= 3 ? s[2] : s[0];
        rgba[4 * p + 3] = ch == 4 ? s[3] : 255;
    }
    ks_image_buf_free(&img);
    *rgba_out = rgba;
    *w_out = w;
    *h_out = h;
    return 1;
}

static int set_params(tool *t) {
    for (int i = 0; i < t->a.num_params; i++) {
        char name[256];
        const char *eq = strchr(t->a.params[i], '=');
        if (!eq || eq == t->a.params[i] || (size_t)(eq - t->a.params[i]) >= sizeof(name)) {
            fprintf(stderr, "ks-ar: --param %s: expected NAME=VALUE\n", t->a.params[i]);
            return 0;
        }
        memcpy(name, t->a.params[i], (size_t)(eq - t->a.params[i]));
        name[eq - t->a.params[i]] = '\0';
        ks_status st = ks_ar_set_param_string(t->ar, name, eq + 1);
        if (st == KS_STATUS_UNSUPPORTED) { /* an image parameter: the value is a file */
            uint8_t *px = NULL;
            int32_t w = 0, h = 0;
            if (!load_rgba(eq + 1, &px, &w, &h)) return 0;
            st = ks_ar_set_param_image(t->ar, name, px, w, h, 0);
            free(px);
        }
        if (st) {
            fprintf(stderr, "ks-ar: --param %s: %s\n", t->a.params[i], ks_last_error(t->ar));
            return 0;
        }
    }
    return 1;
}

static int setup(tool *t) {
    ks_status st = ks_effect_open_file(t->a.effect, NULL, &t->fx);
    if (st) {
        fprintf(stderr, "ks-ar: %s: %s\n", ks_status_string(st), ks_last_error(NULL));
        return 0;
    }
    const ks_effect_info *info = ks_effect_get_info(t->fx);
    t->needs_mask =
        !t->a.no_mask && (info->required_capabilities & (1u << KS_EFFECT_CAP_SEGMENTATION));
    char err[256];
    if (ks_ar_egl_create(&t->egl, err, sizeof(err))) {
        fprintf(stderr, "ks-ar: %s\n", err);
        return 0;
    }
    st = ks_ar_renderer_create(NULL, t->fx, &t->ar);
    if (st) {
        fprintf(stderr, "ks-ar: %s: %s\n", ks_status_string(st), ks_last_error(NULL));
        return 0;
    }
    if (!set_params(t)) return 0;
    if (t->a.landmarks) {
        t->fixture = malloc(sizeof(*t->fixture));
        if (!t->fixture || ks_ar_fixture_load(t->a.landmarks, t->fixture, err, sizeof(err))) {
            fprintf(stderr, "ks-ar: %s\n", t->fixture ? err : "out of memory");
            return 0;
        }
    }
#if defined(KS_AR_HAVE_TASKS)
    ks_running_mode mode = t->a.frames ? KS_MODE_VIDEO : KS_MODE_IMAGE;
    if (!t->fixture) {
        /* As many faces as the effect draws; the full-range detector also finds the small faces
         * of group photos, which the selfie (short-range) one misses. */
        uint32_t max_faces = info->max_faces;
        ks_face_landmarker_desc d = {
            .task = {.mode = mode,
                     .num_threads = t->a.threads,
                     .max_results =
                         (int32_t)(max_faces < KS_FACE_MAX_FACES ? max_faces : KS_FACE_MAX_FACES)},
            .detector =
                t->a.short_range ? KS_FACE_DETECTOR_SHORT_RANGE : KS_FACE_DETECTOR_FULL_RANGE};
        if (ks_face_landmarker_create(&d, &t->lm)) {
            fprintf(stderr, "ks-ar: face landmarker: %s (models dir %s; or pass --landmarks)\n",
                    ks_last_error(NULL), ks_models_dir());
            return 0;
        }
    }
    if (t->needs_mask) {
        ks_segmenter_desc d = {.task = {.mode = mode, .num_threads = t->a.threads}, .output_u8 = 1};
        if (ks_segmenter_create(&d, &t->seg)) {
            fprintf(stderr, "ks-ar: segmenter: %s (models dir %s; or pass --no-mask)\n",
                    ks_last_error(NULL), ks_models_dir());
            return 0;
        }
    }
#else
    if (!t->fixture) {
        fprintf(stderr, "ks-ar: built without the task library: pass --landmarks\n");
        return 0;
    }
    if (t->needs_mask) fprintf(stderr, "ks-ar: no segmenter in this build: no person mask\n");
#endif
    return 1;
}

static int render_one(tool *t, const char *in_path, const char *out_path, int64_t timestamp_us) {
    uint8_t *rgba = NULL, *out = NULL;
    int32_t w, h;
    int ok = 0;
    if (!load_rgba(in_path, &rgba, &w, &h)) return 0;
    ks_ar_frame frame = {
        .width_px = w, .height_px = h, .timestamp_us = timestamp_us, .pixels = rgba};
    ks_ar_face faces[KS_AR_MAX_FACES];
    double infer_ms = 0;
#if defined(KS_AR_HAVE_TASKS)
    ks_face_meshes *meshes = NULL;
    ks_segmentation *mask = NULL;
    ks_image img = {.format = KS_PIXEL_FORMAT_RGBA,
                    .width_px = w,
                    .height_px = h,
                    .planes = {rgba},
                    .stride_bytes = {w * 4}};
    double t0 = now_ms();
    if (t->lm) {
        if (ks_face_landmarker_detect(t->lm, &img, timestamp_us, &meshes)) {
            fprintf(stderr, "ks-ar: %s: landmarks: %s\n", in_path, ks_last_error(t->lm));
            goto done;
        }
        for (uint32_t i = 0; i < meshes->count && i < KS_AR_MAX_FACES; i++)
            if (ks_ar_face_from_mesh(&meshes->items[i], &faces[frame.num_faces]) == KS_STATUS_OK)
                frame.num_faces++;
        frame.faces = faces;
    }
    if (t->seg) {
        if (ks_segment(t->seg, &img, timestamp_us, &mask)) {
            fprintf(stderr, "ks-ar: %s: segmentation: %s\n", in_path, ks_last_error(t->seg));
            goto done;
        }
        frame.mask = (ks_ar_mask){
            .pixels = mask->mask_u8, .width_px = mask->width_px, .height_px = mask->height_px};
    }
    if (t->lm || t->seg) infer_ms = now_ms() - t0;
#endif
    if (t->fixture) {
        /* the fixture's frame size may differ from this image's: scale the landmarks */
        static ks_ar_fixture scaled;
        memcpy(&scaled, t->fixture, sizeof(scaled));
        for (uint32_t i = 0; i < scaled.num_faces; i++)
            scaled.faces[i].landmarks_xyz = scaled.landmarks[i];
        if (scaled.width_px > 0 && scaled.height_px > 0 &&
            (scaled.width_px != w || scaled.height_px != h))
            ks_ar_fixture_scale(&scaled, (float)w / (float)scaled.width_px,
                                (float)h / (float)scaled.height_px);
        memcpy(faces, scaled.faces, sizeof(faces));
        frame.faces = faces;
        frame.num_faces = scaled.num_faces;
    }
    out = malloc((size_t)w * h * 4);
    if (!out) {
        fprintf(stderr, "ks-ar: out of memory\n");
        goto done;
    }
    ks_ar_output output = {.pixels = out};
    glFinish();
    double r0 = now_ms();
    ks_status st = ks_ar_render(t->ar, &frame, &output);
    glFinish();
    double first_ms = now_ms() - r0, render_ms = first_ms;
    if (!st && t->a.image) {
        /* A photo is one frame: time a second identical render too, since the first one
         * includes the driver's shader compilation (llvmpipe JIT-compiles at first draw). */
        r0 = now_ms();
        st = ks_ar_render(t->ar, &frame, &output);
        glFinish();
        render_ms = now_ms() - r0;
    }
    if (st) {
        fprintf(stderr, "ks-ar: %s: %s: %s\n", in_path, ks_status_string(st), ks_last_error(t->ar));
        goto done;
    }
    ks_ar_stats stats;
    ks_ar_get_stats(t->ar, &stats);
    ks_image oimg = {.format = KS_PIXEL_FORMAT_RGBA,
                     .width_px = w,
                     .height_px = h,
                     .planes = {out},
                     .stride_bytes = {w * 4}};
    char err[256];
    for (size_t p = 0; p < (size_t)w * h; p++)
        out[4 * p + 3] = 255;
    if (ks_image_save_png(out_path, &oimg, err, sizeof(err))) {
        fprintf(stderr, "ks-ar: %s\n", err);
        goto done;
    }
    printf("%s: %dx%d, %u face(s)%s, render %.1f ms (%u layer draws, %u passes, CPU %.2f ms)",
           out_path, (int)w, (int)h, frame.num_faces, frame.mask.pixels ? " + mask" : "", render_ms,
           stats.num_layers_drawn, stats.num_passes, stats.cpu_ms);
    if (t->a.image) printf(", first render %.1f ms", first_ms);
    if (infer_ms > 0) printf(", inference %.1f ms", infer_ms);
    printf("\n");
    ok = 1;
done:
#if defined(KS_AR_HAVE_TASKS)
    ks_face_meshes_release(meshes);
    ks_segmentation_release(mask);
#endif
    free(rgba);
    free(out);
    return ok;
}

static int is_image(const char *name) {
    const char *dot = strrchr(name, '.');
    return dot && (!strcmp(dot, ".png") || !strcmp(dot, ".jpg") || !strcmp(dot, ".jpeg") ||
                   !strcmp(dot, ".PNG") || !strcmp(dot, ".JPG") || !strcmp(dot, ".JPEG"));
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int render_dir(tool *t) {
    DIR *d = opendir(t->a.frames);
    if (!d) {
        fprintf(stderr, "ks-ar: cannot open directory %s\n", t->a.frames);
        return 0;
    }
    char **names = calloc(MAX_FRAMES, sizeof(*names));
    size_t n = 0;
    struct dirent *e;
    while (names && (e = readdir(d)) != NULL && n < MAX_FRAMES)
        if (e->d_name[0] != '.' && is_image(e->d_name)) names[n++] = strdup(e->d_name);
    closedir(d);
    if (!names) return 0;
    qsort(names, n, sizeof(*names), cmp_str);
    int ok = n > 0;
    if (!n) fprintf(stderr, "ks-ar: no .png/.jpg files in %s\n", t->a.frames);
    for (size_t i = 0; i < n && ok; i++) {
        char in[4096], out[4096];
        snprintf(in, sizeof(in), "%s/%s", t->a.frames, names[i]);
        char *dot = strrchr(names[i], '.');
        if (dot) *dot = '\0';
        snprintf(out, sizeof(out), "%s/%s.png", t->a.out_dir, names[i]);
        ok = render_one(t, in, out, (int64_t)i * 33333); /* 30 fps */
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return ok;
}

int main(int argc, char **argv) {
    tool t;
    memset(&t, 0, sizeof(t));
    if (!parse_args(argc, argv, &t.a)) return 1;
    int ok = setup(&t);
    if (ok) ok = t.a.image ? render_one(&t, t.a.image, t.a.out, 0) : render_dir(&t);
#if defined(KS_AR_HAVE_TASKS)
    ks_face_landmarker_destroy(t.lm);
    ks_segmenter_destroy(t.seg);
#endif
    ks_ar_renderer_destroy(t.ar); /* before the context goes */
    ks_ar_egl_destroy(t.egl);
    ks_effect_destroy(t.fx);
    free(t.fixture);
    return ok ? 0 : 1;
}
