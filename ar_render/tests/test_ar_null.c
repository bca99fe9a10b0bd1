/* AR renderer logic on the null backend (no GL): triggers and states, the face-lost rule (no
 * stale layer), multi-face slots, sticker layout (follows translation, scale, roll), sprite
 * animation by timestamp, parameters, bad input and allocation failures. Landmarks come from the
 * committed astronaut fixture. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ar_test_pkg.h"
#include "kestrel/ar.h"
#include "landmark_fixture.h"

static ks_ar_fixture g_fx; /* the astronaut face, 512x512 */

static const uint8_t k_red[4] = {255, 0, 0, 255};
static const tp_image k_frames[3] = {{"f0.png", 8, 4, tp_solid, k_red},
                                     {"f1.png", 8, 4, tp_solid, k_red},
                                     {"f2.png", 8, 4, tp_solid, k_red}};

/* Layers: 0 ears (sticker, 3 frames, 10 fps), 1 hat (sticker, hidden), 2 grade (lut-free frame-wide
 * stand-in: a background layer would need segmentation; a sticker is per face, so use a lut) */
static const char k_manifest[] =
    "{\"format_version\": \"1.1.0\", \"id\": \"t.triggers\", \"name\": \"t\",\n"
    " \"requires\": [\"face_landmarks\"], \"max_faces\": 2,\n"
    " \"parameters\": [{\"name\": \"tint\", \"type\": \"color\", \"default\": \"#ff0000\"},\n"
    "   {\"name\": \"amount\", \"type\": \"float\", \"min\": 0, \"max\": 2, \"default\": 1},\n"
    "   {\"name\": \"style\", \"type\": \"enum\", \"options\": [\"a\", \"b\"]},\n"
    "   {\"name\": \"photo\", \"type\": \"image\"}],\n"
    " \"layers\": [\n"
    "  {\"name\": \"ears\", \"kind\": \"sticker\",\n"
    "   \"anchor\": {\"landmarks\": [10], \"offset\": [0, -0.5], \"scale\": 2},\n"
    "   \"sprite\": {\"frames\": [\"f0.png\", \"f1.png\", \"f2.png\"], \"fps\": 10}},\n"
    "  {\"name\": \"hat\", \"kind\": \"sticker\", \"visible\": false,\n"
    "   \"anchor\": {\"landmarks\": [10]},\n"
    "   \"sprite\": {\"frames\": [\"f0.png\", \"f1.png\", \"f2.png\"], \"fps\": 10, \"loop\": "
    "false}},\n"
    "  {\"name\": \"grade\", \"kind\": \"lut\", \"lut\": \"lut.png\", \"visible\": false}],\n"
    " \"states\": [\n"
    "  {\"name\": \"idle\", \"actions\": [{\"action\": \"hide_layer\", \"layer\": \"hat\"},\n"
    "                                   {\"action\": \"hide_layer\", \"layer\": \"grade\"}]},\n"
    "  {\"name\": \"surprised\", \"actions\": [{\"action\": \"show_layer\", \"layer\": \"hat\"},\n"
    "     {\"action\": \"start_animation\", \"layer\": \"ears\"},\n"
    "     {\"action\": \"show_layer\", \"layer\": \"grade\"}]},\n"
    "  {\"name\": \"blinked\", \"actions\": [{\"action\": \"hide_layer\", \"layer\": "
    "\"ears\"}]}],\n"
    " \"initial_state\": \"idle\",\n"
    " \"triggers\": [{\"on\": \"mouth_open\", \"threshold\": 0.4, \"state\": \"surprised\"},\n"
    "   {\"on\": \"blink\", \"state\": \"blinked\"},\n"
    "   {\"on\": \"face_lost\", \"state\": \"idle\"}]}";

static void lut_px(uint32_t x, uint32_t y, uint8_t out[4], const void *user) {
    (void)user;
    out[0] = (uint8_t)((x % 64) * 4), out[1] = (uint8_t)((y % 64) * 4);
    out[2] = (uint8_t)(((y / 64) * 8 + x / 64) * 4), out[3] = 255;
}

static ks_effect *make_effect(void) {
    tp_image images[4] = {
        k_frames[0], k_frames[1], k_frames[2], {"lut.png", 512, 512, lut_px, NULL}};
    return tp_effect(k_manifest, images, 4);
}

enum { EARS = 0, HAT = 1, GRADE = 2 };

static int setup(void **state) {
    (void)state;
    char err[256];
    ks_status st =
        ks_ar_fixture_load(KS_AR_TEST_DIR "/fixtures/astronaut_face.json", &g_fx, err, sizeof(err));
    if (st) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

typedef struct scene {
    ks_effect *fx;
    ks_ar_renderer *ar;
    ks_ar_face faces[4];
    float lm[4][KS_AR_MAX_LANDMARKS * 3];
} scene;

static scene *scene_new(void) {
    scene *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    s->fx = make_effect();
    ks_ar_renderer_desc desc = {.backend = KS_AR_BACKEND_NULL};
    ks_status st = ks_ar_renderer_create(&desc, s->fx, &s->ar);
    if (st) fail_msg("%s: %s", ks_status_string(st), ks_last_error(NULL));
    /* face k = the astronaut face shifted 100 px right per k, id 10 + k */
    for (int k = 0; k < 4; k++) {
        s->faces[k] = g_fx.faces[0];
        memcpy(s->lm[k], g_fx.landmarks[0], sizeof(s->lm[k]));
        for (uint32_t i = 0; i < s->faces[k].num_landmarks; i++)
            s->lm[k][3 * i] += 100.0f * k;
        s->faces[k].landmarks_xyz = s->lm[k];
        s->faces[k].id = 10 + k;
        memset(&s->faces[k].expressions, 0, sizeof(s->faces[k].expressions));
    }
    return s;
}

static void scene_free(scene *s) {
    ks_ar_renderer_destroy(s->ar);
    ks_effect_destroy(s->fx);
    free(s);
}

static void render(scene *s, int64_t t_us, const ks_ar_face *faces, uint32_t n) {
    ks_ar_frame frame = {
        .width_px = 512, .height_px = 512, .timestamp_us = t_us, .num_faces = n, .faces = faces};
    ks_status st = ks_ar_render(s->ar, &frame, NULL);
    if (st) fail_msg("ks_ar_render: %s: %s", ks_status_string(st), ks_last_error(s->ar));
}

static ks_ar_layer_instance inst(scene *s, uint32_t layer, uint32_t face) {
    ks_ar_layer_instance li;
    assert_int_equal(ks_ar_get_layer_instance(s->ar, layer, face, &li), KS_STATUS_OK);
    return li;
}

static uint32_t fired(scene *s) {
    ks_ar_stats stats;
    assert_int_equal(ks_ar_get_stats(s->ar, &stats), KS_STATUS_OK);
    return stats.num_triggers_fired;
}

static void test_triggers_and_states(void **state) {
    (void)state;
    scene *s = scene_new();
    ks_ar_face *f = &s->faces[0];
    render(s, 0, f, 1);
    assert_true(inst(s, EARS, 0).drawn);
    assert_false(inst(s, HAT, 0).drawn); /* visible: false */
    assert_false(inst(s, GRADE, 0).drawn);
    assert_int_equal(inst(s, EARS, 0).face_id, 10);

    /* below the threshold: nothing */
    f->expressions.mouth_open = 0.39f;
    render(s, 100000, f, 1);
    assert_false(inst(s, HAT, 0).drawn);
    assert_int_equal(fired(s), 0);
    /* crossing upwards: surprised (hat + grade shown, ears animation restarted) */
    f->expressions.mouth_open = 0.5f;
    render(s, 250000, f, 1);
    assert_int_equal(fired(s), 1);
    assert_true(inst(s, HAT, 0).drawn);
    assert_true(inst(s, GRADE, 0).drawn);
    assert_int_equal(inst(s, EARS, 0).sprite_frame, 0);
    render(s, 350000, f, 1); /* 100 ms into the restarted animation at 10 fps */
    assert_int_equal(inst(s, EARS, 0).sprite_frame, 1);
    assert_int_equal(inst(s, HAT, 0).sprite_frame, 1);
    /* staying above: no re-fire */
    f->expressions.mouth_open = 0.9f;
    render(s, 400000, f, 1);
    assert_int_equal(fired(s), 0);
    /* hat does not loop: holds its last frame */
    render(s, 2000000, f, 1);
    assert_int_equal(inst(s, HAT, 0).sprite_frame, 2);

    /* blink = both eyes: a wink (one eye) does not fire */
    f->expressions.left_eye_blink = 0.9f;
    render(s, 2100000, f, 1);
    assert_true(inst(s, EARS, 0).drawn);
    f->expressions.right_eye_blink = 0.8f;
    render(s, 2200000, f, 1);
    assert_false(inst(s, EARS, 0).drawn);

    /* the app can enter a state too; unknown names are refused */
    assert_int_equal(ks_ar_enter_state(s->ar, "idle"), KS_STATUS_OK);
    render(s, 2300000, f, 1);
    assert_false(inst(s, HAT, 0).drawn);
    assert_false(inst(s, GRADE, 0).drawn);
    assert_int_equal(ks_ar_enter_state(s->ar, "nope"), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(s->ar), "no state named 'nope'"));
    scene_free(s);
}

/* The face-lost rule: everything anchored to a face disappears in the frame it is lost, and a
 * face that comes back starts from the manifest state (no stale hat). */
static void test_face_lost_no_stale_layer(void **state) {
    (void)state;
    scene *s = scene_new();
    ks_ar_face *f = &s->faces[0];
    f->expressions.mouth_open = 0.8f;
    render(s, 0, f, 1);
    assert_true(inst(s, HAT, 0).drawn);
    assert_true(inst(s, GRADE, 0).drawn);
    ks_ar_stats stats;

    render(s, 33000, NULL, 0); /* lost */
    for (uint32_t l = 0; l < 2; l++)
        assert_false(inst(s, l, 0).drawn);
    assert_false(inst(s, GRADE, 0).drawn); /* face_lost -> idle hid the frame-wide grade */
    ks_ar_get_stats(s->ar, &stats);
    assert_int_equal(stats.num_layers_drawn, 0);
    assert_int_equal(stats.num_faces, 0);

    /* the same id comes back with a closed mouth: hat hidden again (fresh state) */
    f->expressions.mouth_open = 0.0f;
    render(s, 66000, f, 1);
    assert_true(inst(s, EARS, 0).drawn);
    assert_false(inst(s, HAT, 0).drawn);
    ks_ar_get_stats(s->ar, &stats);
    assert_int_equal(stats.num_layers_drawn, 1);

    /* a new id replacing the old one in the same frame is a lost + found: no carry-over */
    f->expressions.mouth_open = 0.8f;
    render(s, 99000, f, 1);
    assert_true(inst(s, HAT, 0).drawn);
    ks_ar_face other = *f;
    other.id = 77;
    other.expressions.mouth_open = 0.0f;
    render(s, 132000, &other, 1);
    assert_false(inst(s, HAT, 0).drawn);
    assert_int_equal(inst(s, EARS, 0).face_id, 77);

    /* ks_ar_reset forgets everything */
    ks_ar_reset(s->ar);
    render(s, 0, f, 1); /* mouth open on a "new" face: fires again from 0 */
    assert_true(inst(s, HAT, 0).drawn);
    scene_free(s);
}

static void test_multi_face(void **state) {
    (void)state;
    scene *s = scene_new();
    /* three faces, max_faces 2: the first two are used */
    s->faces[1].expressions.mouth_open = 0.9f;
    render(s, 0, s->faces, 3);
    ks_ar_stats stats;
    ks_ar_get_stats(s->ar, &stats);
    assert_int_equal(stats.num_faces, 2);
    assert_true(inst(s, EARS, 0).drawn && inst(s, EARS, 1).drawn);
    assert_false(inst(s, EARS, 2).drawn);
    /* per-face state: only face 1 opened its mouth */
    assert_false(inst(s, HAT, 0).drawn);
    assert_true(inst(s, HAT, 1).drawn);
    float x0 = inst(s, EARS, 0).center_px[0], x1 = inst(s, EARS, 1).center_px[0];
    assert_true(fabsf(x1 - x0 - 100.0f) < 0.01f);

    /* same faces, swapped order: state follows the ids, not the array positions */
    ks_ar_face swapped[2] = {s->faces[1], s->faces[0]};
    render(s, 33000, swapped, 2);
    assert_true(inst(s, HAT, 0).drawn);
    assert_int_equal(inst(s, HAT, 0).face_id, 11);
    assert_false(inst(s, HAT, 1).drawn);
    assert_true(fabsf(inst(s, EARS, 0).center_px[0] - x1) < 0.01f);

    /* face 11 leaves: face 10 keeps its state, 11's hat is gone */
    render(s, 66000, &s->faces[0], 1);
    assert_false(inst(s, HAT, 0).drawn);
    assert_true(inst(s, EARS, 0).drawn);
    ks_ar_get_stats(s->ar, &stats);
    assert_int_equal(stats.num_layers_drawn, 1);

    /* untracked faces (id -1) are matched by order */
    ks_ar_face anon[2] = {s->faces[0], s->faces[1]};
    anon[0].id = anon[1].id = -1;
    anon[0].expressions.mouth_open = 0.0f;
    anon[1].expressions.mouth_open = 0.9f;
    render(s, 99000, anon, 2);
    assert_true(inst(s, HAT, 1).drawn);
    anon[1].expressions.mouth_open = 0.95f;
    render(s, 132000, anon, 2);
    assert_int_equal(fired(s), 0);
    assert_true(inst(s, HAT, 1).drawn);
    scene_free(s);
}

static void transform(scene *s, float angle_rad, float scale, float cx, float cy) {
    float c = cosf(angle_rad), sn = sinf(angle_rad);
    for (uint32_t i = 0; i < s->faces[0].num_landmarks; i++) {
        float x = g_fx.landmarks[0][3 * i] - cx, y = g_fx.landmarks[0][3 * i + 1] - cy;
        /* counter-clockwise on screen (y down) */
        s->lm[0][3 * i] = cx + scale * (c * x + sn * y);
        s->lm[0][3 * i + 1] = cy + scale * (-sn * x + c * y);
    }
}

static void test_sticker_follows_face(void **state) {
    (void)state;
    scene *s = scene_new();
    render(s, 0, s->faces, 1);
    ks_ar_layer_instance a = inst(s, EARS, 0);
    const float *lm = g_fx.landmarks[0];
    float fw = hypotf(lm[3 * 454] - lm[3 * 234], lm[3 * 454 + 1] - lm[3 * 234 + 1]);
    assert_true(fabsf(a.size_px[0] - 2.0f * fw) < 0.01f);           /* scale 2 face widths */
    assert_true(fabsf(a.size_px[1] - 0.5f * a.size_px[0]) < 0.01f); /* 8x4 sprite */
    /* offset (0, -0.5): half a face width above landmark 10 along the face's own y */
    float dx = a.center_px[0] - lm[3 * 10], dy = a.center_px[1] - lm[3 * 10 + 1];
    assert_true(fabsf(hypotf(dx, dy) - 0.5f * fw) < 0.01f);
    assert_true(dy < 0);

    float cx = 224, cy = 128;
    transform(s, 0.5f, 1.0f, cx, cy);
    render(s, 33000, s->faces, 1);
    ks_ar_layer_instance b = inst(s, EARS, 0);
    assert_true(fabsf(b.angle_rad - a.angle_rad - 0.5f) < 1e-3f);
    assert_true(fabsf(b.size_px[0] - a.size_px[0]) < 0.01f);

    transform(s, 0.0f, 2.0f, cx, cy);
    render(s, 66000, s->faces, 1);
    ks_ar_layer_instance c = inst(s, EARS, 0);
    assert_true(fabsf(c.size_px[0] - 2.0f * a.size_px[0]) < 0.05f);
    assert_true(fabsf((c.center_px[0] - cx) - 2.0f * (a.center_px[0] - cx)) < 0.05f);
    assert_true(fabsf(c.angle_rad - a.angle_rad) < 1e-4f);
    scene_free(s);
}

static void test_params(void **state) {
    (void)state;
    scene *s = scene_new();
    const float ok[4] = {0.1f, 0.2f, 0.3f, 1.0f}, bad[4] = {0.1f, 2.0f, 0.3f, 1.0f};
    assert_int_equal(ks_ar_set_param_color(s->ar, "tint", ok), KS_STATUS_OK);
    assert_int_equal(ks_ar_set_param_color(s->ar, "tint", bad), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(s->ar), "component 1 is 2"));
    assert_int_equal(ks_ar_set_param_float(s->ar, "amount", 1.5f), KS_STATUS_OK);
    assert_int_equal(ks_ar_set_param_float(s->ar, "amount", 2.5f), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_ar_set_param_float(s->ar, "tint", 0.5f), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(s->ar), "is a color, not a float"));
    assert_int_equal(ks_ar_set_param_enum(s->ar, "style", "b"), KS_STATUS_OK);
    assert_int_equal(ks_ar_set_param_enum(s->ar, "style", "c"), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_ar_set_param_float(s->ar, "missing", 0), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_ar_set_param_string(s->ar, "tint", "#10203040"), KS_STATUS_OK);
    assert_int_equal(ks_ar_set_param_string(s->ar, "tint", "0.5,0.5,0.5"), KS_STATUS_OK);
    assert_int_equal(ks_ar_set_param_string(s->ar, "tint", "#1020"), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_ar_set_param_string(s->ar, "amount", "0.25"), KS_STATUS_OK);
    assert_int_equal(ks_ar_set_param_string(s->ar, "amount", "x"), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_ar_set_param_string(s->ar, "style", "a"), KS_STATUS_OK);
    assert_int_equal(ks_ar_set_param_string(s->ar, "photo", "x"), KS_STATUS_UNSUPPORTED);
    uint8_t px[4 * 4 * 4] = {0};
    assert_int_equal(ks_ar_set_param_image(s->ar, "photo", px, 4, 4, 0), KS_STATUS_OK);
    assert_int_equal(ks_ar_set_param_image(s->ar, "photo", px, 0, 4, 0),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_ar_set_param_image(s->ar, "photo", NULL, 0, 0, 0), KS_STATUS_OK);
    scene_free(s);
}

static void test_bad_input(void **state) {
    (void)state;
    scene *s = scene_new();
    ks_ar_face f = s->faces[0];
    ks_ar_frame frame = {.width_px = 512, .height_px = 512, .num_faces = 1, .faces = &f};
    f.num_landmarks = 100;
    assert_int_equal(ks_ar_render(s->ar, &frame, NULL), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(s->ar), "faces[0] has 100 landmarks"));
    f = s->faces[0];
    s->lm[0][5] = NAN;
    assert_int_equal(ks_ar_render(s->ar, &frame, NULL), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(s->ar), "landmark 1 is not finite"));
    s->lm[0][5] = 1.0f;
    ks_ar_face two[2] = {s->faces[0], s->faces[0]};
    frame.faces = two;
    frame.num_faces = 2;
    assert_int_equal(ks_ar_render(s->ar, &frame, NULL), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(s->ar), "share id 10"));
    frame.num_faces = 0;
    frame.width_px = 0;
    assert_int_equal(ks_ar_render(s->ar, &frame, NULL), KS_STATUS_INVALID_ARGUMENT);
    frame.num_faces = 3;
    frame.faces = NULL;
    frame.width_px = 512;
    assert_int_equal(ks_ar_render(s->ar, &frame, NULL), KS_STATUS_INVALID_ARGUMENT);
    /* a degenerate face (all landmarks on one point) is present but nothing is drawn */
    ks_ar_face flat = s->faces[0];
    static float zeros[478 * 3];
    flat.landmarks_xyz = zeros;
    render(s, 0, &flat, 1);
    assert_false(inst(s, EARS, 0).drawn);
    assert_int_equal(ks_ar_get_layer_instance(s->ar, 99, 0, &(ks_ar_layer_instance){0}),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_ar_render(NULL, &frame, NULL), KS_STATUS_INVALID_ARGUMENT);
    scene_free(s);

    ks_ar_renderer *ar = NULL;
    assert_int_equal(ks_ar_renderer_create(NULL, NULL, &ar), KS_STATUS_INVALID_ARGUMENT);
    ks_ar_renderer_destroy(NULL);
    assert_string_equal(ks_ar_backend_string(KS_AR_BACKEND_NULL), "null");
    assert_string_equal(ks_ar_backend_string(KS_AR_BACKEND_COUNT), "invalid");
#if KS_AR_TEST_NO_GLES
    /* a build without the GLES 3 backend (KS_AR_GLES=OFF) refuses it at create */
    ks_effect *fx = make_effect();
    assert_int_equal(
        ks_ar_renderer_create(&(ks_ar_renderer_desc){.backend = KS_AR_BACKEND_GLES3}, fx, &ar),
        KS_STATUS_UNSUPPORTED);
    assert_null(ar);
    assert_non_null(strstr(ks_last_error(NULL), "KS_AR_GLES=OFF"));
    ks_effect_destroy(fx);
#endif
}

/* ---- allocation failures: every failing allocation of create is a clean error --------------- */
typedef struct fail_alloc {
    int countdown;
    int live;
} fail_alloc;

static void *fa_alloc(void *user, size_t size, size_t alignment) {
    fail_alloc *fa = user;
    (void)alignment;
    if (fa->countdown-- == 0) return NULL;
    fa->live++;
    return malloc(size);
}

static void fa_free(void *user, void *p) {
    fail_alloc *fa = user;
    if (p) fa->live--;
    free(p);
}

static void test_out_of_memory(void **state) {
    (void)state;
    ks_effect *fx = make_effect();
    int i;
    for (i = 0; i < 200; i++) {
        fail_alloc fa = {.countdown = i};
        ks_allocator alloc = {fa_alloc, fa_free, &fa};
        ks_ar_renderer_desc desc = {.backend = KS_AR_BACKEND_NULL, .allocator = &alloc};
        ks_ar_renderer *ar = NULL;
        ks_status st = ks_ar_renderer_create(&desc, fx, &ar);
        if (st == KS_STATUS_OK) {
            ks_ar_renderer_destroy(ar);
            assert_int_equal(fa.live, 0);
            break;
        }
        assert_int_equal(st, KS_STATUS_OUT_OF_MEMORY);
        assert_null(ar);
        assert_int_equal(fa.live, 0);
    }
    assert_true(i > 2 && i < 200);
    ks_effect_destroy(fx);
}

/* Rendering never allocates: every allocation happens at create. */
static void test_no_allocation_per_frame(void **state) {
    (void)state;
    ks_effect *fx = make_effect();
    fail_alloc fa = {.countdown = -1};
    ks_allocator alloc = {fa_alloc, fa_free, &fa};
    ks_ar_renderer_desc desc = {.backend = KS_AR_BACKEND_NULL, .allocator = &alloc};
    ks_ar_renderer *ar = NULL;
    assert_int_equal(ks_ar_renderer_create(&desc, fx, &ar), KS_STATUS_OK);
    int live = fa.live, countdown = fa.countdown;
    ks_ar_face faces[2] = {g_fx.faces[0], g_fx.faces[0]};
    faces[1].id = 2;
    for (int i = 0; i < 51; i++) { /* the last frame has 2 faces */
        faces[0].expressions.mouth_open = (i % 3) ? 0.9f : 0.0f;
        ks_ar_frame frame = {.width_px = 512,
                             .height_px = 512,
                             .timestamp_us = i * 33333,
                             .num_faces = (uint32_t)(i % 3),
                             .faces = faces};
        assert_int_equal(ks_ar_render(ar, &frame, NULL), KS_STATUS_OK);
    }
    assert_int_equal(fa.countdown, countdown); /* no allocation call at all */
    ks_ar_stats stats;
    ks_ar_get_stats(ar, &stats);
    printf("null backend: %.1f us of CPU for the last frame (%u faces)\n", stats.cpu_ms * 1e3,
           stats.num_faces);
    assert_int_equal(fa.live, live);
    ks_ar_renderer_destroy(ar);
    assert_int_equal(fa.live, 0);
    ks_effect_destroy(fx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_triggers_and_states),
        cmocka_unit_test(test_face_lost_no_stale_layer),
        cmocka_unit_test(test_multi_face),
        cmocka_unit_test(test_sticker_follows_face),
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_no_allocation_per_frame),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
