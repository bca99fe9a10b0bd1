/* Beauty layer on GLES 3 (headless EGL; skips with exit 77 without it): golden images (all
 * effects; warp only), and measured properties of each effect: smoothing lowers skin texture,
 * whitening brightens skin, neither touches the background; eye enlarging magnifies the eyes and
 * slimming moves the jaw, without touching anything outside the warp grid (no tearing); zero
 * amounts are an exact no-op; frames after the first allocate nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "face_regions.h"
#include "makeup_beauty_test_util.h"

static ks_ar_egl *g_egl;
static mb_scene g_scene;
static uint8_t *g_out;

#define BEAUTY(params)                                                                             \
    "{\"format_version\": \"1.0.0\", \"id\": \"test.beauty\", \"name\": \"beauty\", "              \
    "\"requires\": [\"face_landmarks\"], \"parameters\": [{\"name\": \"strength\", \"type\": "     \
    "\"float\", \"default\": 1}], \"layers\": [{\"name\": \"b\", \"kind\": \"beauty\", "           \
    "\"intensity_param\": \"strength\", " params "}]}"

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
    g_out = malloc((size_t)g_scene.width_px * g_scene.height_px * 4);
    return g_out ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    free(g_out);
    mb_scene_free(&g_scene);
    ks_ar_egl_destroy(g_egl);
    return 0;
}

static void render_manifest(const char *manifest) {
    ks_effect *fx = mb_effect(manifest, NULL, NULL, 0);
    assert_non_null(fx);
    ks_ar_renderer *ar = NULL;
    ks_status st = ks_ar_renderer_create(NULL, fx, &ar);
    if (st) fprintf(stderr, "renderer: %s\n", ks_last_error(NULL));
    assert_int_equal(st, KS_STATUS_OK);
    assert_int_equal(mb_render(ar, &g_scene, 0, g_out, 1), 0);
    ks_ar_renderer_destroy(ar);
    ks_effect_destroy(fx);
}

static double luma_at(const mb_scene *s, const uint8_t *img, float x, float y) {
    const uint8_t *p = mb_px(s, img, x, y);
    return 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
}

/* Luma mean and texture (mean absolute Laplacian: fine detail, blind to smooth shading) over a
 * square patch. */
static void patch_stats(const mb_scene *s, const uint8_t *img, const float *c, int r, double *mean,
                        double *texture) {
    double sum = 0.0, lap = 0.0;
    int n = 0;
    for (int dy = -r; dy <= r; dy++)
        for (int dx = -r; dx <= r; dx++) {
            float x = c[0] + (float)dx, y = c[1] + (float)dy;
            double v = luma_at(s, img, x, y);
            sum += v;
            lap += fabs(4.0 * v - luma_at(s, img, x - 1, y) - luma_at(s, img, x + 1, y) -
                        luma_at(s, img, x, y - 1) - luma_at(s, img, x, y + 1));
            n++;
        }
    *mean = sum / n;
    *texture = lap / n;
}

/* Pixels outside the face box expanded by `margin` face boxes are identical to the input. */
static void assert_untouched_outside(const mb_scene *s, const uint8_t *img, float margin) {
    float x0 = s->box[0] - margin * s->box[2], x1 = s->box[0] + (1 + margin) * s->box[2];
    float y0 = s->box[1] - margin * s->box[3], y1 = s->box[1] + (1 + margin) * s->box[3];
    for (int y = 0; y < s->height_px; y++)
        for (int x = 0; x < s->width_px; x++) {
            if (x >= x0 && x <= x1 && y >= y0 && y <= y1) continue;
            const uint8_t *p = &img[((size_t)y * s->width_px + x) * 4];
            const uint8_t *q = &s->rgba[((size_t)y * s->width_px + x) * 4];
            if (memcmp(p, q, 3) != 0) fail_msg("pixel (%d, %d) changed outside the face", x, y);
        }
}

static void test_all_golden(void **state) {
    (void)state;
    render_manifest(BEAUTY("\"smoothing\": 0.8, \"whitening\": 0.5, \"face_slim\": 0.7, "
                           "\"eye_enlarge\": 0.7"));
    mb_dump(&g_scene, "beauty_all", g_out);
    assert_true(mb_golden(&g_scene, "beauty_all", g_out) >= MB_PSNR_MIN_DB);
}

static void test_warp_golden(void **state) {
    (void)state;
    const mb_scene *s = &g_scene;
    render_manifest(BEAUTY("\"face_slim\": 1.0, \"eye_enlarge\": 1.0"));
    mb_dump(s, "beauty_warp", g_out);
    assert_true(mb_golden(s, "beauty_warp", g_out) >= MB_PSNR_MIN_DB);
    /* the warp grid reaches KS__FACE_WARP_EXTENT face widths from the centre; nothing beyond */
    assert_untouched_outside(s, g_out, 0.9f);
    /* eyes magnified: the dark iris/pupil blob grows */
    for (int e = 0; e < 2; e++) {
        const float *a = mb_lm(s, e ? 263 : 33), *b = mb_lm(s, e ? 362 : 133);
        float c[2] = {0.5f * (a[0] + b[0]), 0.5f * (a[1] + b[1])};
        int r = (int)(0.6f * hypotf(a[0] - b[0], a[1] - b[1]));
        int dark_in = 0, dark_out = 0;
        for (int dy = -r; dy <= r; dy++)
            for (int dx = -r; dx <= r; dx++) {
                const uint8_t *p = mb_px(s, s->rgba, c[0] + (float)dx, c[1] + (float)dy);
                const uint8_t *q = mb_px(s, g_out, c[0] + (float)dx, c[1] + (float)dy);
                dark_in += p[0] + p[1] + p[2] < 200;
                dark_out += q[0] + q[1] + q[2] < 200;
            }
        assert_true(dark_out > dark_in * 11 / 10);
    }
}

static void test_smoothing(void **state) {
    (void)state;
    const mb_scene *s = &g_scene;
    render_manifest(BEAUTY("\"smoothing\": 1.0"));
    mb_dump(s, "beauty_smoothing", g_out);
    /* cheeks and forehead: texture (luma spread) drops, brightness stays */
    const int skin[3] = {50, 280, 108};
    for (int i = 0; i < 3; i++) {
        double m0, sd0, m1, sd1;
        patch_stats(s, s->rgba, mb_lm(s, skin[i]), 6, &m0, &sd0);
        patch_stats(s, g_out, mb_lm(s, skin[i]), 6, &m1, &sd1);
        fprintf(stderr, "skin patch at %d: luma %.1f -> %.1f, texture %.2f -> %.2f\n", skin[i], m0,
                m1, sd0, sd1);
        assert_true(sd1 < 0.7 * sd0);
        assert_true(fabs(m1 - m0) < 6.0);
    }
    /* pupils (a hole in the skin mask) stay sharp */
    float pupil[2] = {0.5f * (mb_lm(s, 159)[0] + mb_lm(s, 145)[0]),
                      0.5f * (mb_lm(s, 159)[1] + mb_lm(s, 145)[1])};
    assert_true(mb_diff_at(s, g_out, s->rgba, pupil[0], pupil[1]) < 10.0f);
    assert_untouched_outside(s, g_out, 0.15f);
}

static void test_whitening(void **state) {
    (void)state;
    const mb_scene *s = &g_scene;
    render_manifest(BEAUTY("\"whitening\": 1.0"));
    mb_dump(s, "beauty_whitening", g_out);
    double m0, sd0, m1, sd1;
    patch_stats(s, s->rgba, mb_lm(s, 50), 6, &m0, &sd0);
    patch_stats(s, g_out, mb_lm(s, 50), 6, &m1, &sd1);
    assert_true(m1 > m0 + 10.0);
    /* lips are not skin */
    float lip[2] = {0.5f * (mb_lm(s, 17)[0] + mb_lm(s, 14)[0]),
                    0.5f * (mb_lm(s, 17)[1] + mb_lm(s, 14)[1])};
    assert_true(mb_diff_at(s, g_out, s->rgba, lip[0], lip[1]) < 12.0f);
    assert_untouched_outside(s, g_out, 0.15f);
}

static void test_zero_is_noop_and_no_alloc(void **state) {
    (void)state;
    const mb_scene *s = &g_scene;
    ks_effect *fx = mb_effect(BEAUTY("\"smoothing\": 0.7, \"whitening\": 0.3, \"face_slim\": "
                                     "0.5, \"eye_enlarge\": 0.5"),
                              NULL, NULL, 0);
    assert_non_null(fx);
    mb_alloc_count count = {0};
    ks_allocator alloc = {.alloc = mb_count_alloc, .free = mb_count_free, .user = &count};
    ks_ar_renderer_desc d = {.allocator = &alloc};
    ks_ar_renderer *ar = NULL;
    assert_int_equal(ks_ar_renderer_create(&d, fx, &ar), KS_STATUS_OK);
    assert_int_equal(mb_render(ar, s, 0, g_out, 1), 0);
    long after_first = count.num_allocs;
    for (int i = 1; i <= 3; i++)
        assert_int_equal(mb_render(ar, s, i * 33333, g_out, 1), 0);
    assert_int_equal(count.num_allocs, after_first);
    assert_int_equal(ks_ar_set_param_float(ar, "strength", 0.0f), KS_STATUS_OK);
    assert_int_equal(mb_render(ar, s, 200000, g_out, 1), 0);
    assert_memory_equal(g_out, s->rgba, (size_t)s->width_px * s->height_px * 4);
    assert_int_equal(ks_ar_set_param_float(ar, "strength", 1.0f), KS_STATUS_OK);
    assert_int_equal(mb_render(ar, s, 233333, g_out, 0), 0); /* face lost: untouched */
    assert_memory_equal(g_out, s->rgba, (size_t)s->width_px * s->height_px * 4);
    ks_ar_renderer_destroy(ar);
    ks_effect_destroy(fx);
}

/* Two faces (a copy of the fixture moved right): both warped, the gap between untouched. */
static void test_two_faces_warp(void **state) {
    (void)state;
    const mb_scene *s = &g_scene;
    static float moved[MB_NUM_LM * 3];
    const float dx = 0.5f * (float)s->width_px;
    for (uint32_t i = 0; i < MB_NUM_LM * 3; i++)
        moved[i] = s->landmarks[i] + (i % 3 == 0 ? dx : 0.0f);
    ks_effect *fx = mb_effect("{\"format_version\": \"1.0.0\", \"id\": \"t\", \"name\": \"t\", "
                              "\"requires\": [\"face_landmarks\"], \"max_faces\": 2, \"layers\": "
                              "[{\"name\": \"b\", \"kind\": \"beauty\", \"eye_enlarge\": 1, "
                              "\"whitening\": 1}]}",
                              NULL, NULL, 0);
    assert_non_null(fx);
    ks_ar_renderer *ar = NULL;
    assert_int_equal(ks_ar_renderer_create(NULL, fx, &ar), KS_STATUS_OK);
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
    mb_dump(s, "beauty_two_faces", g_out);
    const float *eye = mb_lm(s, 159), *cheek = mb_lm(s, 50);
    /* each face: something changed around the eye (warp) and on the cheek (whitening) */
    assert_true(mb_max_diff_near(s, g_out, s->rgba, eye[0], eye[1] - 4, 6) > 10);
    assert_true(mb_max_diff_near(s, g_out, s->rgba, eye[0] + dx, eye[1] - 4, 6) > 10);
    assert_true(mb_diff_at(s, g_out, s->rgba, cheek[0], cheek[1]) > 10.0f);
    assert_true(mb_diff_at(s, g_out, s->rgba, cheek[0] + dx, cheek[1]) > 10.0f);
    ks_ar_renderer_destroy(ar);
    ks_effect_destroy(fx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_golden),
        cmocka_unit_test(test_warp_golden),
        cmocka_unit_test(test_smoothing),
        cmocka_unit_test(test_whitening),
        cmocka_unit_test(test_zero_is_noop_and_no_alloc),
        cmocka_unit_test(test_two_faces_warp),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
