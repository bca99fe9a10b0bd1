/* Headless GL golden-image tests of the core layer kinds (sticker, face_texture, lut,
 * background replace/blur, custom shader + blend modes) on the astronaut photo with the committed
 * landmark fixture and a synthetic person mask. Each render is compared with
 * ar_render/tests/golden/<case>.png (PSNR >= 35 dB over RGB). KS_AR_REGEN_GOLDEN=1 rewrites the
 * goldens instead (ar_render/tests/regen_golden.sh). Also: texture in/out paths agree with the
 * pixel paths, bad custom shaders fail at load with the GL log, and a 720p frame is timed
 * (printed, never asserted), and a live swap of effects (ks_ar_renderer_swap_effect) while a
 * loader thread opens the versions. Skips (exit 77) when no EGL/GLES 3 context can be made. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include <GLES3/gl3.h>

#include "ar_test_pkg.h"
#include "egl_headless.h"
#include "image_io.h"
#include "kestrel/ar.h"
#include "landmark_fixture.h"

#define W 512
#define H 512
#define MIN_PSNR_DB 35.0
/* Goldens hold this crop of the 512x512 render (head, hair, shoulders and background on both
 * sides), which keeps the committed PNGs small. */
#define CROP_X 128
#define CROP_Y 16
#define CROP_PX 192

static ks_ar_egl *g_egl;
static ks_ar_fixture g_fx;
static uint8_t *g_photo; /* RGBA W x H */
static uint8_t *g_mask;  /* W x H */
static int g_regen;

/* ---- procedural assets -------------------------------------------------------------------- */

static void star_px(uint32_t x, uint32_t y, uint8_t out[4], const void *user) {
    (void)user;
    float u = ((float)x + 0.5f) / 64.0f - 0.5f, v = ((float)y + 0.5f) / 64.0f - 0.5f;
    float r = sqrtf(u * u + v * v), a = atan2f(v, u);
    float edge = 0.28f + 0.14f * cosf(5.0f * a);
    float alpha = fminf(fmaxf((edge - r) * 40.0f, 0.0f), 1.0f);
    out[0] = 255, out[1] = (uint8_t)(200 - 150 * r), out[2] = 40;
    out[3] = (uint8_t)(255 * alpha);
}

static void star2_px(uint32_t x, uint32_t y, uint8_t out[4], const void *user) {
    star_px(x, y, out, user);
    out[0] = 40, out[2] = 255; /* second sprite frame: blue */
}

static void stripes_px(uint32_t x, uint32_t y, uint8_t out[4], const void *user) {
    (void)user;
    float u = (float)x / 256.0f, v = (float)y / 256.0f;
    float s = sinf(u * 60.0f + 8.0f * v);
    out[0] = 20, out[1] = 20, out[2] = 20;
    out[3] = (s > 0.5f && (u < 0.38f || u > 0.62f)) ? 200 : 0;
}

static void gradient_px(uint32_t x, uint32_t y, uint8_t out[4], const void *user) {
    (void)user;
    out[0] = (uint8_t)(255 * x / 255), out[1] = (uint8_t)(80 + 100 * y / 255),
    out[2] = (uint8_t)(255 - 255 * x / 255), out[3] = 255;
}

/* LUT: warm "vintage" grade: lifted blacks, warm highlights, desaturated */
static void vintage_lut_px(uint32_t x, uint32_t y, uint8_t out[4], const void *user) {
    (void)user;
    float r = (float)(x % 64) / 63.0f, g = (float)(y % 64) / 63.0f;
    float b = (float)((y / 64) * 8 + x / 64) / 63.0f;
    float l = 0.3f * r + 0.59f * g + 0.11f * b;
    float o[3] = {0.5f * r + 0.5f * l + 0.08f, 0.5f * g + 0.5f * l + 0.03f,
                  0.5f * b + 0.5f * l - 0.06f};
    for (int c = 0; c < 3; c++) {
        float t = 0.06f + 0.9f * fminf(fmaxf(o[c], 0.0f), 1.0f);
        out[c] = (uint8_t)lroundf(255.0f * t);
    }
    out[3] = 255;
}

static void wide_px(uint32_t x, uint32_t y, uint8_t out[4], const void *user) {
    (void)user;
    int check = ((x / 8) + (y / 8)) % 2;
    out[0] = check ? 30 : 220, out[1] = (uint8_t)(4 * y), out[2] = check ? 200 : 60, out[3] = 255;
}

static const char k_tint_shader[] = "#version 300 es\n"
                                    "precision mediump float;\n"
                                    "in vec2 v_uv;\n"
                                    "uniform sampler2D u_texture;\n"
                                    "uniform vec4 u_color;\n"
                                    "uniform float u_opacity;\n"
                                    "out vec4 frag_color;\n"
                                    "void main() {\n"
                                    "    vec4 c = texture(u_texture, v_uv);\n"
                                    "    vec3 tint = vec3(0.35, 1.0, 0.6) * u_color.rgb;\n"
                                    "    frag_color = vec4(c.rgb * tint, c.a * u_opacity);\n"
                                    "}\n";

static const char k_bad_shader[] = "#version 300 es\n"
                                   "precision mediump float;\n"
                                   "out vec4 frag_color;\n"
                                   "void main() { frag_color = undefined_thing; }\n";

#define HEAD(extra)                                                                                \
    "{\"format_version\": \"1.1.0\", \"id\": \"t.gl\", \"name\": \"t\", \"requires\": "            \
    "[\"face_landmarks\", \"segmentation\"]," extra " \"layers\": ["

typedef struct gl_case {
    const char *name;
    const char *manifest;
    tp_image images[4];
    int num_images;
    int with_mask;
    int64_t timestamp_us;
} gl_case;

static const gl_case k_cases[] = {
    {"sticker",
     HEAD(
         "") "{\"name\": \"star\", \"kind\": \"sticker\", \"anchor\": {\"landmarks\": [10, 338, "
             "109], \"offset\": [0, -0.35], \"scale\": 1.1}, \"sprite\": {\"frames\": [\"s0.png\", "
             "\"s1.png\"], \"fps\": 10}}]}",
     {{"s0.png", 64, 64, star_px, NULL}, {"s1.png", 64, 64, star2_px, NULL}},
     2,
     0,
     150000 /* frame 1: the blue star */},
    {"sticker_custom_multiply",
     HEAD("") "{\"name\": \"star\", \"kind\": \"sticker\", \"blend\": "
              "\"multiply\", \"opacity\": 0.9, \"shader\": \"tint.frag\", "
              "\"anchor\": {\"landmarks\": [1], \"scale\": 1.6}, \"sprite\": "
              "{\"frames\": [\"s0.png\"]}}]}",
     {{"s0.png", 64, 64, star_px, NULL}},
     1,
     0,
     0},
    {"face_texture",
     HEAD("") "{\"name\": \"paint\", \"kind\": \"face_texture\", \"texture\": \"uv.png\"}]}",
     {{"uv.png", 256, 256, stripes_px, NULL}},
     1,
     0,
     0},
    {"face_texture_soft_light",
     HEAD("") "{\"name\": \"paint\", \"kind\": \"face_texture\", \"texture\": \"uv.png\", "
              "\"blend\": \"soft_light\", \"opacity\": 0.8}]}",
     {{"uv.png", 256, 256, gradient_px, NULL}},
     1,
     0,
     0},
    {"lut",
     HEAD("") "{\"name\": \"grade\", \"kind\": \"lut\", \"lut\": \"lut.png\", \"intensity\": "
              "0.85}]}",
     {{"lut.png", 512, 512, vintage_lut_px, NULL}},
     1,
     0,
     0},
    {"background_replace",
     HEAD("") "{\"name\": \"bg\", \"kind\": \"background\", \"texture\": \"bg.png\"}]}",
     {{"bg.png", 64, 32, wide_px, NULL}},
     1,
     1,
     0},
    {"background_blur",
     HEAD("") "{\"name\": \"bg\", \"kind\": \"background\", \"mode\": \"blur\", "
              "\"blur_radius\": 0.04}]}",
     {{0}},
     0,
     1,
     0},
};

/* ---- helpers ------------------------------------------------------------------------------ */

static double psnr_rgb(const uint8_t *a, const uint8_t *b, size_t num_px) {
    double se = 0;
    for (size_t i = 0; i < num_px; i++)
        for (int c = 0; c < 3; c++) {
            double d = (double)a[4 * i + c] - (double)b[4 * i + c];
            se += d * d;
        }
    double mse = se / (double)(num_px * 3);
    return mse <= 1e-12 ? 99.0 : 10.0 * log10(255.0 * 255.0 / mse);
}

static ks_effect *case_effect(const gl_case *c) {
    tp_entry shader = {"tint.frag", (const uint8_t *)k_tint_shader, strlen(k_tint_shader)};
    return tp_effect_ex(c->manifest, c->images, c->num_images, &shader,
                        strstr(c->manifest, "tint.frag") ? 1 : 0);
}

static void render_case(const gl_case *c, uint8_t *out) {
    ks_effect *fx = case_effect(c);
    ks_ar_renderer *ar = NULL;
    ks_status st = ks_ar_renderer_create(NULL, fx, &ar);
    if (st) fail_msg("%s: create: %s: %s", c->name, ks_status_string(st), ks_last_error(NULL));
    ks_ar_frame frame = {.width_px = W,
                         .height_px = H,
                         .timestamp_us = 0,
                         .pixels = g_photo,
                         .num_faces = g_fx.num_faces,
                         .faces = g_fx.faces};
    if (c->with_mask) frame.mask = (ks_ar_mask){.pixels = g_mask, .width_px = W, .height_px = H};
    ks_ar_output output = {.pixels = out};
    st = ks_ar_render(ar, &frame, &output); /* t = 0 starts the clock */
    if (!st && c->timestamp_us) {
        frame.timestamp_us = c->timestamp_us;
        st = ks_ar_render(ar, &frame, &output);
    }
    if (st) fail_msg("%s: render: %s: %s", c->name, ks_status_string(st), ks_last_error(ar));
    ks_ar_renderer_destroy(ar);
    ks_effect_destroy(fx);
}

static void test_golden(void **state) {
    (void)state;
    uint8_t *out = malloc((size_t)W * H * 4);
    assert_non_null(out);
    for (size_t i = 0; i < sizeof(k_cases) / sizeof(k_cases[0]); i++) {
        const gl_case *c = &k_cases[i];
        memset(out, 0, (size_t)W * H * 4);
        render_case(c, out);
        /* the effect must visibly change the photo, or the golden proves nothing */
        assert_true(psnr_rgb(g_photo, out, (size_t)W * H) < 45.0);
        uint8_t *crop = malloc((size_t)CROP_PX * CROP_PX * 4),
                *g = malloc((size_t)CROP_PX * CROP_PX * 4);
        assert_non_null(crop);
        assert_non_null(g);
        for (int y = 0; y < CROP_PX; y++)
            for (int x = 0; x < CROP_PX; x++) {
                memcpy(crop + ((size_t)y * CROP_PX + x) * 4,
                       out + ((size_t)(y + CROP_Y) * W + (size_t)(x + CROP_X)) * 4, 4);
                crop[((size_t)y * CROP_PX + x) * 4 + 3] = 255;
            }
        char path[512], err[256];
        snprintf(path, sizeof(path), "%s/golden/%s.png", KS_AR_TEST_DIR, c->name);
        ks_image img = {.format = KS_PIXEL_FORMAT_RGB,
                        .width_px = CROP_PX,
                        .height_px = CROP_PX,
                        .planes = {g},
                        .stride_bytes = {CROP_PX * 3}};
        if (g_regen) {
            for (size_t p = 0; p < (size_t)CROP_PX * CROP_PX; p++)
                memcpy(g + 3 * p, crop + 4 * p, 3);
            if (ks_image_save_png(path, &img, err, sizeof(err))) fail_msg("%s", err);
            printf("wrote %s\n", path);
            free(crop);
            free(g);
            continue;
        }
        ks_image_buf golden;
        if (ks_image_load(path, 0, &golden, err, sizeof(err)))
            fail_msg("%s (run ar_render/tests/regen_golden.sh)", err);
        assert_int_equal(golden.image.width_px, CROP_PX);
        assert_int_equal(golden.image.height_px, CROP_PX);
        int ch = golden.image.format == KS_PIXEL_FORMAT_RGBA ? 4 : 3;
        for (size_t p = 0; p < (size_t)CROP_PX * CROP_PX; p++)
            for (int k = 0; k < 3; k++)
                g[4 * p + (size_t)k] = golden.pixels[ch * p + (size_t)k];
        double db = psnr_rgb(crop, g, (size_t)CROP_PX * CROP_PX);
        printf("%-26s PSNR %.1f dB vs golden\n", c->name, db);
        if (db < MIN_PSNR_DB) {
            snprintf(path, sizeof(path), "%s/%s.actual.png", KS_BINARY_DIR, c->name);
            img = (ks_image){.format = KS_PIXEL_FORMAT_RGBA,
                             .width_px = CROP_PX,
                             .height_px = CROP_PX,
                             .planes = {crop},
                             .stride_bytes = {CROP_PX * 4}};
            ks_image_save_png(path, &img, err, sizeof(err));
            fail_msg("%s: PSNR %.2f dB < %.1f (actual image: %s)", c->name, db, MIN_PSNR_DB, path);
        }
        free(crop);
        free(g);
        ks_image_buf_free(&golden);
    }
    free(out);
}

/* Texture input, texture output and framebuffer output give the same image as pixels. */
static void test_texture_paths(void **state) {
    (void)state;
    const gl_case *c = &k_cases[2]; /* face_texture */
    uint8_t *ref = malloc((size_t)W * H * 4), *got = malloc((size_t)W * H * 4);
    assert_non_null(ref);
    assert_non_null(got);
    render_case(c, ref);
    char err[256];
    ks_ar_egl_fbo in, out, win;
    assert_int_equal(ks_ar_egl_fbo_create(W, H, &in, err, sizeof(err)), KS_STATUS_OK);
    assert_int_equal(ks_ar_egl_fbo_create(W, H, &out, err, sizeof(err)), KS_STATUS_OK);
    assert_int_equal(ks_ar_egl_fbo_create(W, H, &win, err, sizeof(err)), KS_STATUS_OK);
    glBindTexture(GL_TEXTURE_2D, in.texture);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, W, H, GL_RGBA, GL_UNSIGNED_BYTE, g_photo);
    ks_effect *fx = case_effect(c);
    ks_ar_renderer *ar = NULL;
    assert_int_equal(
        ks_ar_renderer_create(&(ks_ar_renderer_desc){.width_px = W, .height_px = H}, fx, &ar),
        KS_STATUS_OK);
    ks_ar_frame frame = {.width_px = W,
                         .height_px = H,
                         .texture = in.texture,
                         .num_faces = g_fx.num_faces,
                         .faces = g_fx.faces};
    ks_ar_output o = {.texture = out.texture, .to_framebuffer = 1, .framebuffer = win.framebuffer};
    ks_status st = ks_ar_render(ar, &frame, &o);
    if (st) fail_msg("%s", ks_last_error(ar));
    glBindFramebuffer(GL_FRAMEBUFFER, out.framebuffer);
    glReadPixels(0, 0, W, H, GL_RGBA, GL_UNSIGNED_BYTE, got);
    assert_true(psnr_rgb(ref, got, (size_t)W * H) > 60.0);
    /* the framebuffer copy is flipped for display: its bottom row is the image's top row */
    glBindFramebuffer(GL_FRAMEBUFFER, win.framebuffer);
    glReadPixels(0, 0, W, H, GL_RGBA, GL_UNSIGNED_BYTE, got);
    int same = 1;
    for (int y = 0; y < H && same; y++)
        same =
            memcmp(got + (size_t)y * W * 4, ref + (size_t)(H - 1 - y) * W * 4, (size_t)W * 4) == 0;
    assert_true(same);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    assert_int_equal(glGetError(), GL_NO_ERROR);
    ks_ar_renderer_destroy(ar);
    ks_effect_destroy(fx);
    ks_ar_egl_fbo_destroy(&in);
    ks_ar_egl_fbo_destroy(&out);
    ks_ar_egl_fbo_destroy(&win);
    free(ref);
    free(got);
}

static void test_bad_shader(void **state) {
    (void)state;
    tp_image img = {"s0.png", 8, 8, star_px, NULL};
    tp_entry bad = {"tint.frag", (const uint8_t *)k_bad_shader, strlen(k_bad_shader)};
    ks_effect *fx = tp_effect_ex(HEAD("") "{\"name\": \"star\", \"kind\": \"sticker\", "
                                          "\"shader\": \"tint.frag\", \"anchor\": "
                                          "{\"landmarks\": [1]}, \"sprite\": {\"frames\": "
                                          "[\"s0.png\"]}}]}",
                                 &img, 1, &bad, 1);
    ks_ar_renderer *ar = NULL;
    assert_int_equal(ks_ar_renderer_create(NULL, fx, &ar), KS_STATUS_INVALID_MODEL);
    assert_null(ar);
    const char *msg = ks_last_error(NULL);
    if (!strstr(msg, "layer 'star': shader 'tint.frag'") || !strstr(msg, "does not compile"))
        fail_msg("unexpected message: %s", msg);
    ks_effect_destroy(fx);
    /* no GL error leaks out of a failed create */
    assert_int_equal(glGetError(), GL_NO_ERROR);
}

/* ---- live swap ----------------------------------------------------------------------------- */

/* Static cases (no animation): each frame's output is the effect's, whatever its time. */
static const int k_swap_cases[] = {1, 2, 4, 5};
#define NUM_SWAP_CASES 4
#define SWAP_SEQUENCE 7 /* versions the loader hands over: cases 0..3, then a bad one, then 2 */

typedef struct swap_loader {
    _Atomic(ks_effect *) ready; /* the next version, opened by the loader thread */
    atomic_int version;         /* its index in the sequence */
    atomic_int taken;           /* versions the render thread has taken */
} swap_loader;

static ks_effect *bad_effect(void) {
    tp_image img = {"s0.png", 8, 8, star_px, NULL};
    tp_entry bad = {"tint.frag", (const uint8_t *)k_bad_shader, strlen(k_bad_shader)};
    return tp_effect_ex(HEAD("") "{\"name\": \"star\", \"kind\": \"sticker\", "
                                 "\"shader\": \"tint.frag\", \"anchor\": "
                                 "{\"landmarks\": [1]}, \"sprite\": {\"frames\": "
                                 "[\"s0.png\"]}}]}",
                        &img, 1, &bad, 1);
}

/* Sequence entry v: a static case index (0..NUM_SWAP_CASES-1) or -1 for the bad version. */
static int swap_entry(int v) {
    return v == 4 ? -1 : (v < 4 ? v : (v - 3) % NUM_SWAP_CASES);
}

/* The update thread: opens (parses and decodes) each version off the render thread and hands
 * it over once the previous one was taken. */
static void *swap_loader_main(void *arg) {
    swap_loader *l = arg;
    for (int v = 1; v < SWAP_SEQUENCE; v++) {
        while (atomic_load(&l->taken) < v) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        int e = swap_entry(v);
        ks_effect *fx = e < 0 ? bad_effect() : case_effect(&k_cases[k_swap_cases[e]]);
        atomic_store(&l->version, v);
        atomic_store(&l->ready, fx);
    }
    return NULL;
}

static uint64_t hash_px(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static void test_live_swap(void **state) {
    (void)state;
    size_t nbytes = (size_t)W * H * 4;
    uint8_t *out = malloc(nbytes);
    assert_non_null(out);
    uint64_t ref[NUM_SWAP_CASES];
    for (int e = 0; e < NUM_SWAP_CASES; e++) {
        render_case(&k_cases[k_swap_cases[e]], out);
        ref[e] = hash_px(out, nbytes);
        for (int k = 0; k < e; k++)
            assert_true(ref[k] != ref[e]); /* versions tell apart */
    }
    /* Version 0 is created up front; the loader opens the rest while frames render. */
    ks_effect *current = case_effect(&k_cases[k_swap_cases[0]]);
    ks_ar_renderer *ar = NULL;
    assert_int_equal(
        ks_ar_renderer_create(&(ks_ar_renderer_desc){.width_px = W, .height_px = H}, current, &ar),
        KS_STATUS_OK);
    swap_loader l;
    atomic_init(&l.ready, NULL);
    atomic_init(&l.version, 0);
    atomic_init(&l.taken, 0); /* the loader waits for version 0's first frame */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, swap_loader_main, &l), 0);
    int running = 0; /* the static case the renderer draws */
    int frames = 0, failed_swaps = 0, frames_per_entry[NUM_SWAP_CASES] = {0};
    ks_ar_frame frame = {.width_px = W,
                         .height_px = H,
                         .pixels = g_photo,
                         .num_faces = g_fx.num_faces,
                         .faces = g_fx.faces,
                         .mask = {.pixels = g_mask, .width_px = W, .height_px = H}};
    while (atomic_load(&l.taken) < SWAP_SEQUENCE || frames < 3) {
        ks_effect *next = atomic_exchange(&l.ready, NULL);
        if (next) {
            int v = atomic_load(&l.version), e = swap_entry(v);
            ks_status st = ks_ar_renderer_swap_effect(ar, next);
            if (e < 0) {
                /* the bad version is refused; the renderer keeps drawing the current one */
                assert_int_equal(st, KS_STATUS_INVALID_MODEL);
                assert_non_null(strstr(ks_last_error(ar), "does not compile"));
                ks_effect_destroy(next);
                failed_swaps++;
            } else {
                assert_int_equal(st, KS_STATUS_OK);
                ks_effect_destroy(current); /* the renderer no longer uses it */
                current = next;
                running = e;
            }
            atomic_store(&l.taken, v + 1);
        }
        frame.timestamp_us = 33333 * (int64_t)frames;
        assert_int_equal(ks_ar_render(ar, &frame, &(ks_ar_output){.pixels = out}), KS_STATUS_OK);
        /* exactly the output of a renderer made for that version alone */
        if (hash_px(out, nbytes) != ref[running])
            fail_msg("frame %d: the output is not version %d's", frames, running);
        frames_per_entry[running]++;
        frames++;
        if (frames == 1) atomic_store(&l.taken, 1);
    }
    pthread_join(th, NULL);
    assert_int_equal(failed_swaps, 1);
    for (int e = 0; e < NUM_SWAP_CASES; e++)
        assert_true(frames_per_entry[e] > 0);
    assert_int_equal(glGetError(), GL_NO_ERROR);
    printf("live swap: %d frames over %d versions (one refused), each frame one version's\n",
           frames, SWAP_SEQUENCE);
    assert_int_equal(ks_ar_renderer_swap_effect(ar, NULL), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_ar_renderer_swap_effect(NULL, current), KS_STATUS_INVALID_ARGUMENT);
    ks_ar_renderer_destroy(ar);
    ks_effect_destroy(current);
    free(out);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* 1280x720 frames: prints the median wall time per frame including upload and readback, for
 * the bare pipeline, each core layer kind alone, and all of them (llvmpipe; for regressions,
 * not a GPU figure). */
#define LAYER_BLUR "{\"name\": \"bg\", \"kind\": \"background\", \"mode\": \"blur\"}"
#define LAYER_REPLACE "{\"name\": \"bg2\", \"kind\": \"background\", \"texture\": \"lut.png\"}"
#define LAYER_PAINT "{\"name\": \"paint\", \"kind\": \"face_texture\", \"texture\": \"uv.png\"}"
#define LAYER_STAR                                                                                 \
    "{\"name\": \"star\", \"kind\": \"sticker\", \"anchor\": {\"landmarks\": [10]}, "              \
    "\"sprite\": {\"frames\": [\"s0.png\"]}}"
#define LAYER_LUT "{\"name\": \"grade\", \"kind\": \"lut\", \"lut\": \"lut.png\"}"
#define LAYER_NOP "{\"name\": \"nop\", \"kind\": \"lut\", \"lut\": \"lut.png\", \"intensity\": 0}"

static void test_time_720p(void **state) {
    (void)state;
    const int w = 1280, h = 720;
    static const struct {
        const char *what, *layers;
    } sets[] = {
        {"camera copy + readback only", LAYER_NOP},
        {"background blur", LAYER_BLUR},
        {"background replace", LAYER_REPLACE},
        {"face_texture", LAYER_PAINT},
        {"sticker", LAYER_STAR},
        {"lut", LAYER_LUT},
        {"blur + face_texture + sticker + lut",
         LAYER_BLUR ", " LAYER_PAINT ", " LAYER_STAR ", " LAYER_LUT},
    };
    tp_image images[3] = {{"uv.png", 256, 256, stripes_px, NULL},
                          {"s0.png", 64, 64, star_px, NULL},
                          {"lut.png", 512, 512, vintage_lut_px, NULL}};
    uint8_t *cam = malloc((size_t)w * h * 4), *out = malloc((size_t)w * h * 4);
    uint8_t *mask = malloc((size_t)w * h);
    ks_ar_fixture *scaled = malloc(sizeof(*scaled));
    assert_non_null(cam);
    assert_non_null(out);
    assert_non_null(mask);
    assert_non_null(scaled);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int sx = x * W / w, sy = y * H / h;
            memcpy(cam + ((size_t)y * w + x) * 4, g_photo + ((size_t)sy * W + sx) * 4, 4);
            mask[(size_t)y * w + x] = g_mask[(size_t)sy * W + sx];
        }
    memcpy(scaled, &g_fx, sizeof(*scaled));
    for (uint32_t i = 0; i < scaled->num_faces; i++)
        scaled->faces[i].landmarks_xyz = scaled->landmarks[i];
    ks_ar_fixture_scale(scaled, (float)w / W, (float)h / H);
    printf("720p frame times on %s (median of 8, upload + layers + readback):\n",
           ks_ar_egl_describe(g_egl));
    for (size_t k = 0; k < sizeof(sets) / sizeof(sets[0]); k++) {
        char manifest[2048];
        snprintf(manifest, sizeof(manifest), "%s%s]}", HEAD(""), sets[k].layers);
        ks_effect *fx = tp_effect(manifest, images, 3);
        ks_ar_renderer *ar = NULL;
        assert_int_equal(ks_ar_renderer_create(NULL, fx, &ar), KS_STATUS_OK);
        ks_ar_frame frame = {.width_px = w,
                             .height_px = h,
                             .pixels = cam,
                             .num_faces = scaled->num_faces,
                             .faces = scaled->faces,
                             .mask = {.pixels = mask, .width_px = w, .height_px = h}};
        ks_ar_output o = {.pixels = out};
        double t[10];
        for (int i = 0; i < 10; i++) {
            frame.timestamp_us = i * 33333;
            double t0 = now_ms();
            assert_int_equal(ks_ar_render(ar, &frame, &o), KS_STATUS_OK);
            t[i] = now_ms() - t0;
        }
        qsort(t + 2, 8, sizeof(double), cmp_double);
        ks_ar_stats stats;
        ks_ar_get_stats(ar, &stats);
        printf("  %-40s %7.1f ms  (%u passes)\n", sets[k].what, 0.5 * (t[2 + 3] + t[2 + 4]),
               stats.num_passes);
        ks_ar_renderer_destroy(ar);
        ks_effect_destroy(fx);
    }
    free(scaled);
    free(cam);
    free(out);
    free(mask);
}

int main(void) {
    char err[256];
    g_regen = getenv("KS_AR_REGEN_GOLDEN") && atoi(getenv("KS_AR_REGEN_GOLDEN"));
    if (ks_ar_egl_create(&g_egl, err, sizeof(err)) != KS_STATUS_OK) {
        printf("SKIP: no headless OpenGL ES 3 context: %s\n", err);
        return 77;
    }
    printf("GL: %s\n", ks_ar_egl_describe(g_egl));
    if (ks_ar_fixture_load(KS_AR_TEST_DIR "/fixtures/astronaut_face.json", &g_fx, err,
                           sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    ks_image_buf photo;
    if (ks_image_load(KS_SOURCE_DIR "/models/images/skimage_astronaut.png", 0, &photo, err,
                      sizeof(err))) {
        printf("SKIP: %s (run scripts/setup)\n", err);
        return 77;
    }
    g_photo = malloc((size_t)W * H * 4);
    g_mask = malloc((size_t)W * H);
    if (!g_photo || !g_mask || photo.image.width_px != W || photo.image.height_px != H) return 1;
    int ch = photo.image.format == KS_PIXEL_FORMAT_RGBA ? 4 : 3;
    for (size_t p = 0; p < (size_t)W * H; p++) {
        for (int k = 0; k < 3; k++)
            g_photo[4 * p + k] = photo.pixels[ch * p + (size_t)k];
        g_photo[4 * p + 3] = 255;
    }
    ks_image_buf_free(&photo);
    /* synthetic person mask: head ellipse + shoulders, hard-edged (the layer softens it) */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            float hx = (x - 225.0f) / 70.0f, hy = (y - 125.0f) / 85.0f;
            float bx = (x - 220.0f) / 190.0f, by = (y - 470.0f) / 230.0f;
            g_mask[(size_t)y * W + x] =
                (hx * hx + hy * hy < 1.0f || bx * bx + by * by < 1.0f) ? 255 : 0;
        }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),     cmocka_unit_test(test_texture_paths),
        cmocka_unit_test(test_bad_shader), cmocka_unit_test(test_live_swap),
        cmocka_unit_test(test_time_720p),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(g_photo);
    free(g_mask);
    ks_ar_egl_destroy(g_egl);
    return rc;
}
