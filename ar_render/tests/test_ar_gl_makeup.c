/* Makeup layer on GLES 3 (headless EGL; skips with exit 77 without it) and on the null backend:
 * golden image of a full look, lipstick confined to the lips with soft edges, parameter
 * bindings, blend modes, the UV mask texture, face loss and no allocation per frame. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "makeup_beauty_test_util.h"

static ks_ar_egl *g_egl;
static mb_scene g_scene;
static uint8_t *g_out, *g_out2;

#define HEAD                                                                                       \
    "{\"format_version\": \"1.0.0\", \"id\": \"test.makeup\", \"name\": \"makeup\", "              \
    "\"requires\": [\"face_landmarks\"], "

/* Every region, with the blend modes a makeup artist would pick for each. */
static const char k_look[] =
    HEAD "\"layers\": ["
         "{\"name\": \"foundation\", \"kind\": \"makeup\", \"region\": \"foundation\", "
         "\"color\": [0.96, 0.8, 0.7, 1.0], \"intensity\": 0.3, \"blend\": \"soft_light\"},"
         "{\"name\": \"blush\", \"kind\": \"makeup\", \"region\": \"blush\", "
         "\"color\": [0.95, 0.35, 0.45, 1.0], \"intensity\": 0.45, \"blend\": \"normal\"},"
         "{\"name\": \"shadow\", \"kind\": \"makeup\", \"region\": \"eyeshadow\", "
         "\"color\": [0.55, 0.3, 0.6, 1.0], \"intensity\": 0.7, \"blend\": \"multiply\"},"
         "{\"name\": \"liner\", \"kind\": \"makeup\", \"region\": \"eyeliner\", "
         "\"color\": [0.05, 0.03, 0.05, 1.0], \"intensity\": 0.85, \"blend\": \"normal\"},"
         "{\"name\": \"brows\", \"kind\": \"makeup\", \"region\": \"eyebrows\", "
         "\"color\": [0.3, 0.2, 0.12, 1.0], \"intensity\": 0.45, \"blend\": \"multiply\"},"
         "{\"name\": \"lips\", \"kind\": \"makeup\", \"region\": \"lips\", "
         "\"color\": [0.8, 0.05, 0.2, 1.0], \"intensity\": 0.8, \"blend\": \"overlay\"}"
         "]}";

static int setup(void **state) {
    (void)state;
    char err[256];
    if (ks_ar_egl_create(&g_egl, err, sizeof(err)) != KS_STATUS_OK) {
        fprintf(stderr, "no EGL/GLES 3 context (%s): skipping\n", err);
        exit(77);
    }
    if (mb_scene_load(&g_scene) != 0) {
        fprintf(stderr, "astronaut image or fixture missing: skipping\n");
        exit(77);
    }
    size_t n = (size_t)g_scene.width_px * g_scene.height_px * 4;
    g_out = malloc(n);
    g_out2 = malloc(n);
    return g_out && g_out2 ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    free(g_out);
    free(g_out2);
    mb_scene_free(&g_scene);
    ks_ar_egl_destroy(g_egl);
    return 0;
}

static ks_ar_renderer *make_renderer(ks_effect *fx, ks_ar_backend backend,
                                     const ks_allocator *alloc) {
    ks_ar_renderer_desc d = {.backend = backend, .allocator = alloc};
    ks_ar_renderer *ar = NULL;
    ks_status st = ks_ar_renderer_create(&d, fx, &ar);
    if (st != KS_STATUS_OK)
        fprintf(stderr, "renderer: %s: %s\n", ks_status_string(st), ks_last_error(NULL));
    return ar;
}

/* Renders `manifest` once into g_out. */
static void render_manifest(const char *manifest, const char *asset_name, const void *asset,
                            size_t asset_size) {
    ks_effect *fx = mb_effect(manifest, asset_name, asset, asset_size);
    assert_non_null(fx);
    ks_ar_renderer *ar = make_renderer(fx, KS_AR_BACKEND_GLES3, NULL);
    assert_non_null(ar);
    assert_int_equal(mb_render(ar, &g_scene, 0, g_out, 1), 0);
    ks_ar_renderer_destroy(ar);
    ks_effect_destroy(fx);
}

static void test_look_golden(void **state) {
    (void)state;
    render_manifest(k_look, NULL, NULL, 0);
    mb_dump(&g_scene, "makeup_look", g_out);
    double psnr = mb_golden(&g_scene, "makeup_look", g_out);
    assert_true(psnr >= MB_PSNR_MIN_DB);
}

static void midpoint(const mb_scene *s, int a, int b, float t, float out[2]) {
    const float *p = mb_lm(s, a), *q = mb_lm(s, b);
    out[0] = p[0] + t * (q[0] - p[0]);
    out[1] = p[1] + t * (q[1] - p[1]);
}

#define LIPS_NORMAL(intensity_)                                                                    \
    HEAD "\"parameters\": [{\"name\": \"lip_color\", \"type\": \"color\", \"default\": "           \
         "\"#D01030\"}, {\"name\": \"lip_strength\", \"type\": \"float\", "                        \
         "\"default\": " #intensity_                                                               \
         "}], \"layers\": [{\"name\": \"lips\", \"kind\": \"makeup\", \"region\": \"lips\", "      \
         "\"color\": [0.8, 0.05, 0.2, 1.0], \"color_param\": \"lip_color\", "                      \
         "\"intensity_param\": \"lip_strength\", \"blend\": \"normal\"}]}"

/* Lipstick lands on the lips, not on the teeth, nose, chin or cheeks, and fades out. */
static void test_lipstick_on_lips_only(void **state) {
    (void)state;
    const mb_scene *s = &g_scene;
    render_manifest(LIPS_NORMAL(1.0), NULL, NULL, 0);
    mb_dump(s, "makeup_lips_normal", g_out);
    float p[2];
    midpoint(s, 0, 13, 0.5f, p); /* upper lip body */
    assert_true(mb_diff_at(s, g_out, s->rgba, p[0], p[1]) > 60.0f);
    midpoint(s, 17, 14, 0.5f, p); /* lower lip body */
    assert_true(mb_diff_at(s, g_out, s->rgba, p[0], p[1]) > 60.0f);
    const float *c = mb_lm(s, 1); /* nose tip */
    assert_int_equal(mb_max_diff_near(s, g_out, s->rgba, c[0], c[1], 3), 0);
    c = mb_lm(s, 50); /* cheek */
    assert_int_equal(mb_max_diff_near(s, g_out, s->rgba, c[0], c[1], 3), 0);
    midpoint(s, 17, 152, 0.6f, p); /* chin */
    assert_int_equal(mb_max_diff_near(s, g_out, s->rgba, p[0], p[1], 3), 0);
    c = mb_lm(s, 159); /* eye */
    assert_int_equal(mb_max_diff_near(s, g_out, s->rgba, c[0], c[1], 3), 0);
    /* teeth: the middle of the mouth opening stays nearly untouched (only the narrow inner
     * feather may reach it) */
    midpoint(s, 13, 14, 0.5f, p);
    assert_true(mb_diff_at(s, g_out, s->rgba, p[0], p[1]) < 20.0f);
    /* soft edge: walking up from the upper lip top (0) towards the nose, the tint fades through
     * intermediate values instead of stopping at once */
    const float *top = mb_lm(s, 0), *nose = mb_lm(s, 2);
    int num_partial = 0;
    float full = mb_diff_at(s, g_out, s->rgba, p[0], p[1]);
    (void)full;
    float lip = 0.0f;
    midpoint(s, 0, 13, 0.5f, p);
    lip = mb_diff_at(s, g_out, s->rgba, p[0], p[1]);
    for (int i = 0; i <= 20; i++) {
        float t = 0.3f * (float)i / 20.0f;
        float x = top[0] + t * (nose[0] - top[0]), y = top[1] + t * (nose[1] - top[1]);
        float d = mb_diff_at(s, g_out, s->rgba, x, y);
        if (d > 0.1f * lip && d < 0.9f * lip) num_partial++;
    }
    assert_true(num_partial >= 2);
}

/* Every region alone (normal blend, full strength): it draws, and only near its landmarks. */
static void test_each_region(void **state) {
    (void)state;
    const mb_scene *s = &g_scene;
    static const char *const regions[6] = {"lips",  "eyeshadow", "eyeliner",
                                           "blush", "eyebrows",  "foundation"};
    /* a landmark inside each region, one far from it */
    static const int inside[6] = {-1, -1, -1, 50, 105, 4};
    static const int outside[6] = {1, 1, 1, 17, 17, -1}; /* -1: background left of the face */
    for (int r = 0; r < 6; r++) {
        char manifest[1024], name[64];
        snprintf(manifest, sizeof(manifest),
                 HEAD "\"layers\": [{\"name\": \"m\", \"kind\": \"makeup\", \"region\": "
                      "\"%s\", \"color\": [0.1, 0.9, 0.3, 1.0]}]}",
                 regions[r]);
        render_manifest(manifest, NULL, NULL, 0);
        snprintf(name, sizeof(name), "makeup_region_%s", regions[r]);
        mb_dump(s, name, g_out);
        size_t num_changed = 0, n = (size_t)s->width_px * s->height_px;
        for (size_t i = 0; i < n; i++)
            num_changed += memcmp(&g_out[4 * i], &s->rgba[4 * i], 3) != 0;
        assert_true(num_changed > 100);
        if (inside[r] >= 0) {
            const float *c = mb_lm(s, inside[r]);
            assert_true(mb_diff_at(s, g_out, s->rgba, c[0], c[1]) > 60.0f);
        }
        float bg[2] = {s->box[0] - 0.1f * s->box[2], s->box[1] + 0.5f * s->box[3]};
        const float *c = outside[r] >= 0 ? mb_lm(s, outside[r]) : bg;
        assert_int_equal(mb_max_diff_near(s, g_out, s->rgba, c[0], c[1], 2), 0);
    }
}

/* color_param and intensity_param override the layer's constants. */
static void test_param_bindings(void **state) {
    (void)state;
    const mb_scene *s = &g_scene;
    ks_effect *fx = mb_effect(LIPS_NORMAL(1.0), NULL, NULL, 0);
    assert_non_null(fx);
    ks_ar_renderer *ar = make_renderer(fx, KS_AR_BACKEND_GLES3, NULL);
    assert_non_null(ar);
    float p[2];
    midpoint(s, 17, 14, 0.5f, p);
    assert_int_equal(ks_ar_set_param_color(ar, "lip_color", (const float[4]){0.1f, 0.2f, 0.9f, 1}),
                     KS_STATUS_OK);
    assert_int_equal(mb_render(ar, s, 0, g_out, 1), 0);
    const uint8_t *px = mb_px(s, g_out, p[0], p[1]);
    assert_true(px[2] > px[0] + 60); /* blue lips */
    assert_int_equal(ks_ar_set_param_float(ar, "lip_strength", 0.0f), KS_STATUS_OK);
    assert_int_equal(mb_render(ar, s, 33333, g_out, 1), 0);
    assert_memory_equal(g_out, s->rgba, (size_t)s->width_px * s->height_px * 4);
    ks_ar_renderer_destroy(ar);
    ks_effect_destroy(fx);
}

/* Each blend mode tints the lips and differs from the others. */
static void test_blend_modes(void **state) {
    (void)state;
    const mb_scene *s = &g_scene;
    static const char *const modes[4] = {"normal", "multiply", "overlay", "soft_light"};
    uint8_t px[4][3];
    float p[2];
    midpoint(s, 17, 14, 0.5f, p);
    for (int m = 0; m < 4; m++) {
        char manifest[1024];
        snprintf(manifest, sizeof(manifest),
                 HEAD "\"layers\": [{\"name\": \"lips\", \"kind\": \"makeup\", \"region\": "
                      "\"lips\", \"color\": [0.2, 0.4, 0.9, 1.0], \"blend\": \"%s\"}]}",
                 modes[m]);
        render_manifest(manifest, NULL, NULL, 0);
        assert_true(mb_diff_at(s, g_out, s->rgba, p[0], p[1]) > 15.0f);
        memcpy(px[m], mb_px(s, g_out, p[0], p[1]), 3);
    }
    for (int a = 0; a < 4; a++)
        for (int b = a + 1; b < 4; b++)
            assert_true(
                abs(px[a][0] - px[b][0]) + abs(px[a][1] - px[b][1]) + abs(px[a][2] - px[b][2]) > 6);
}

typedef struct png_buf {
    uint8_t *data;
    size_t size;
} png_buf;

static void png_append(void *context, void *data, int size) {
    png_buf *b = context;
    uint8_t *p = realloc(b->data, b->size + (size_t)size);
    if (!p) abort();
    memcpy(p + b->size, data, (size_t)size);
    b->data = p;
    b->size += (size_t)size;
}

/* A coverage mask in the face UV layout replaces the region: a rectangle around the nose. */
static void test_uv_mask_texture(void **state) {
    (void)state;
    const mb_scene *s = &g_scene;
    enum { N = 64 };
    static uint8_t mask[N * N * 4];
    for (int y = 0; y < N; y++)
        for (int x = 0; x < N; x++) {
            float u = ((float)x + 0.5f) / N, v = ((float)y + 0.5f) / N;
            uint8_t *m = &mask[(y * N + x) * 4];
            m[0] = m[1] = m[2] = 255;
            m[3] = (u > 0.38f && u < 0.62f && v > 0.42f && v < 0.62f) ? 255 : 0;
        }
    png_buf png = {0};
    assert_true(stbi_write_png_to_func(png_append, &png, N, N, 4, mask, N * 4) != 0);
    assert_non_null(png.data);
    render_manifest(HEAD "\"layers\": [{\"name\": \"nose\", \"kind\": \"makeup\", \"region\": "
                         "\"foundation\", \"texture\": \"nose_mask.png\", "
                         "\"color\": [0.1, 0.8, 0.2, 1.0]}]}",
                    "nose_mask.png", png.data, png.size);
    free(png.data);
    mb_dump(s, "makeup_uv_mask", g_out);
    const float *c = mb_lm(s, 4); /* nose, inside the mask */
    assert_true(mb_diff_at(s, g_out, s->rgba, c[0], c[1]) > 100.0f);
    c = mb_lm(s, 17); /* lower lip, outside */
    assert_int_equal(mb_max_diff_near(s, g_out, s->rgba, c[0], c[1], 2), 0);
    c = mb_lm(s, 10); /* forehead, outside */
    assert_int_equal(mb_max_diff_near(s, g_out, s->rgba, c[0], c[1], 2), 0);
}

/* No face: nothing drawn (no stale makeup); bad landmarks: the face's layer is skipped. Frames
 * after the first (which sizes the targets) allocate nothing. */
static void test_face_lost_and_no_alloc(void **state) {
    (void)state;
    const mb_scene *s = &g_scene;
    mb_alloc_count count = {0};
    ks_allocator alloc = {.alloc = mb_count_alloc, .free = mb_count_free, .user = &count};
    ks_effect *fx = mb_effect(k_look, NULL, NULL, 0);
    assert_non_null(fx);
    ks_ar_renderer *ar = make_renderer(fx, KS_AR_BACKEND_GLES3, &alloc);
    assert_non_null(ar);
    assert_int_equal(mb_render(ar, s, 0, g_out, 1), 0);
    long after_first = count.num_allocs;
    for (int i = 1; i <= 3; i++)
        assert_int_equal(mb_render(ar, s, i * 33333, g_out2, 1), 0);
    assert_int_equal(count.num_allocs, after_first);
    assert_memory_equal(g_out, g_out2, (size_t)s->width_px * s->height_px * 4);
    assert_int_equal(mb_render(ar, s, 200000, g_out, 0), 0);
    assert_memory_equal(g_out, s->rgba, (size_t)s->width_px * s->height_px * 4);
    ks_ar_renderer_destroy(ar);
    ks_effect_destroy(fx);
}

/* Two faces (the fixture and a copy moved right by 0.45 frame widths): both get lipstick, from
 * their own slice of the shared vertex and index buffers. */
static void test_two_faces(void **state) {
    (void)state;
    const mb_scene *s = &g_scene;
    static float moved[MB_NUM_LM * 3];
    const float dx = 0.45f * (float)s->width_px;
    for (uint32_t i = 0; i < MB_NUM_LM; i++) {
        moved[3 * i] = s->landmarks[3 * i] + dx;
        moved[3 * i + 1] = s->landmarks[3 * i + 1];
        moved[3 * i + 2] = s->landmarks[3 * i + 2];
    }
    ks_effect *fx = mb_effect("{\"format_version\": \"1.0.0\", \"id\": \"t\", \"name\": \"t\", "
                              "\"requires\": [\"face_landmarks\"], \"max_faces\": 2, \"layers\": "
                              "[{\"name\": \"lips\", \"kind\": \"makeup\", \"region\": \"lips\", "
                              "\"color\": [0.1, 0.2, 0.9, 1.0]}]}",
                              NULL, NULL, 0);
    assert_non_null(fx);
    ks_ar_renderer *ar = make_renderer(fx, KS_AR_BACKEND_GLES3, NULL);
    assert_non_null(ar);
    ks_ar_face faces[2] = {mb_face(s), mb_face(s)};
    faces[1].id = 2;
    faces[1].landmarks_xyz = moved;
    ks_ar_frame frame = {.width_px = s->width_px,
                         .height_px = s->height_px,
                         .pixels = s->rgba,
                         .num_faces = 2,
                         .faces = faces};
    ks_ar_output out = {.pixels = g_out};
    assert_int_equal(ks_ar_render(ar, &frame, &out), KS_STATUS_OK);
    mb_dump(s, "makeup_two_faces", g_out);
    float p[2];
    midpoint(s, 17, 14, 0.5f, p);
    assert_true(mb_diff_at(s, g_out, s->rgba, p[0], p[1]) > 60.0f);
    assert_true(mb_diff_at(s, g_out, s->rgba, p[0] + dx, p[1]) > 60.0f);
    /* between the two: untouched */
    assert_int_equal(mb_max_diff_near(s, g_out, s->rgba, p[0] + 0.5f * dx, p[1], 3), 0);
    ks_ar_renderer_destroy(ar);
    ks_effect_destroy(fx);
}

/* Null backend: layout runs and reports the faces; a face with non-finite landmarks is not
 * drawn and does not crash. */
static void test_null_backend(void **state) {
    (void)state;
    mb_scene s2 = g_scene;
    ks_effect *fx = mb_effect(k_look, NULL, NULL, 0);
    assert_non_null(fx);
    ks_ar_renderer *ar = make_renderer(fx, KS_AR_BACKEND_NULL, NULL);
    assert_non_null(ar);
    ks_ar_face face = mb_face(&g_scene);
    ks_ar_frame frame = {.width_px = g_scene.width_px,
                         .height_px = g_scene.height_px,
                         .num_faces = 1,
                         .faces = &face};
    ks_ar_output out = {0};
    assert_int_equal(ks_ar_render(ar, &frame, &out), KS_STATUS_OK);
    for (uint32_t l = 0; l < 6; l++) {
        ks_ar_layer_instance inst;
        assert_int_equal(ks_ar_get_layer_instance(ar, l, 0, &inst), KS_STATUS_OK);
        assert_true(inst.drawn);
        assert_true(inst.size_px[0] > 100.0f);
    }
    s2.landmarks[3 * 61] = NAN; /* a lip corner */
    face = mb_face(&s2);
    frame.timestamp_us = 33333;
    ks_status st = ks_ar_render(ar, &frame, &out);
    if (st == KS_STATUS_OK) {
        ks_ar_layer_instance inst;
        assert_int_equal(ks_ar_get_layer_instance(ar, 5, 0, &inst), KS_STATUS_OK);
        assert_false(inst.drawn);
    } else {
        assert_int_equal(st, KS_STATUS_INVALID_ARGUMENT); /* the core may refuse NaN itself */
    }
    ks_ar_renderer_destroy(ar);
    ks_effect_destroy(fx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_look_golden),
        cmocka_unit_test(test_lipstick_on_lips_only),
        cmocka_unit_test(test_each_region),
        cmocka_unit_test(test_param_bindings),
        cmocka_unit_test(test_blend_modes),
        cmocka_unit_test(test_uv_mask_texture),
        cmocka_unit_test(test_face_lost_and_no_alloc),
        cmocka_unit_test(test_null_backend),
        cmocka_unit_test(test_two_faces),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
