/* mesh3d layer with the null backend: glb loading and refusals at create, and the layout step
 * (per-face MVP, visibility, reported anchor) with the astronaut landmark + pose fixture. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kestrel/ar.h"
#include "mesh3d_test_util.h"

#define FIXTURE KS_AR_TEST_DIR "/mesh3d_astronaut_face.json"

static ks_ar_renderer *null_renderer(ks_effect *fx) {
    ks_ar_renderer *ar = NULL;
    ks_status st =
        ks_ar_renderer_create(&(ks_ar_renderer_desc){.backend = KS_AR_BACKEND_NULL}, fx, &ar);
    if (st) print_error("%s\n", ks_last_error(NULL));
    assert_int_equal(st, KS_STATUS_OK);
    return ar;
}

static void test_layout_follows_pose(void **state) {
    (void)state;
    m3_fixture fix;
    if (!m3_fixture_load(FIXTURE, &fix)) skip();
    m3_buf glb = m3_glasses_glb();
    ks_effect *fx = m3_effect(M3_GLASSES_LAYER, &glb);
    ks_ar_renderer *ar = null_renderer(fx);
    ks_ar_face face = m3_face(&fix);
    ks_ar_frame frame = {.width_px = fix.width_px,
                         .height_px = fix.height_px,
                         .timestamp_us = 0,
                         .num_faces = 1,
                         .faces = &face};
    assert_int_equal(ks_ar_render(ar, &frame, NULL), KS_STATUS_OK);
    ks_ar_layer_instance inst;
    assert_int_equal(ks_ar_get_layer_instance(ar, 0, 0, &inst), KS_STATUS_OK);
    assert_true(inst.drawn);
    /* The model origin is the canonical nose bridge (168): it must land near landmark 168. */
    float dx = inst.center_px[0] - fix.landmarks[3 * 168];
    float dy = inst.center_px[1] - fix.landmarks[3 * 168 + 1];
    float face_w = fabsf(fix.landmarks[3 * 454] - fix.landmarks[3 * 234]);
    if (sqrtf(dx * dx + dy * dy) > 0.08f * face_w)
        print_error("anchor at %.1f,%.1f; landmark 168 at %.1f,%.1f\n", inst.center_px[0],
                    inst.center_px[1], fix.landmarks[3 * 168], fix.landmarks[3 * 168 + 1]);
    assert_true(sqrtf(dx * dx + dy * dy) <= 0.08f * face_w);
    /* The glasses (about 14.6 cm wide) span roughly the face width (234..454 is 15.3 cm). */
    assert_true(inst.size_px[0] > 0.7f * face_w && inst.size_px[0] < 1.6f * face_w);

    /* No pose: not drawn. */
    face.has_pose = 0;
    frame.timestamp_us = 33000;
    assert_int_equal(ks_ar_render(ar, &frame, NULL), KS_STATUS_OK);
    assert_int_equal(ks_ar_get_layer_instance(ar, 0, 0, &inst), KS_STATUS_OK);
    assert_false(inst.drawn);

    /* Head behind the camera (z > 0): culled by the layout. */
    face.has_pose = 1;
    face.pose_matrix[11] = 60.0f;
    frame.timestamp_us = 66000;
    assert_int_equal(ks_ar_render(ar, &frame, NULL), KS_STATUS_OK);
    assert_int_equal(ks_ar_get_layer_instance(ar, 0, 0, &inst), KS_STATUS_OK);
    assert_false(inst.drawn);

    /* Far off to the side: outside the frustum. */
    face.pose_matrix[11] = fix.pose[11];
    face.pose_matrix[3] = 500.0f;
    frame.timestamp_us = 99000;
    assert_int_equal(ks_ar_render(ar, &frame, NULL), KS_STATUS_OK);
    assert_int_equal(ks_ar_get_layer_instance(ar, 0, 0, &inst), KS_STATUS_OK);
    assert_false(inst.drawn);

    /* Face lost: nothing drawn, and back again when it returns. */
    frame.num_faces = 0;
    frame.timestamp_us = 132000;
    assert_int_equal(ks_ar_render(ar, &frame, NULL), KS_STATUS_OK);
    face = m3_face(&fix);
    frame.num_faces = 1;
    frame.timestamp_us = 165000;
    assert_int_equal(ks_ar_render(ar, &frame, NULL), KS_STATUS_OK);
    assert_int_equal(ks_ar_get_layer_instance(ar, 0, 0, &inst), KS_STATUS_OK);
    assert_true(inst.drawn);

    ks_ar_renderer_destroy(ar);
    ks_effect_destroy(fx);
    free(glb.p);
}

static void test_anchor_offset_and_scale(void **state) {
    (void)state;
    m3_fixture fix;
    if (!m3_fixture_load(FIXTURE, &fix)) skip();
    m3_buf glb = m3_glasses_glb();
    /* Offset one face width down (manifest y is down): the origin moves down the image by about
     * a face width; scale 2 doubles the screen size. */
    ks_effect *fx = m3_effect("{\"name\":\"a\",\"kind\":\"mesh3d\",\"mesh\":\"glasses.glb\","
                              "\"anchor\":{\"landmarks\":[168]}},"
                              "{\"name\":\"b\",\"kind\":\"mesh3d\",\"mesh\":\"glasses.glb\","
                              "\"anchor\":{\"landmarks\":[168],\"offset\":[0,0.5],\"scale\":2}}",
                              &glb);
    ks_ar_renderer *ar = null_renderer(fx);
    ks_ar_face face = m3_face(&fix);
    ks_ar_frame frame = {
        .width_px = fix.width_px, .height_px = fix.height_px, .num_faces = 1, .faces = &face};
    assert_int_equal(ks_ar_render(ar, &frame, NULL), KS_STATUS_OK);
    ks_ar_layer_instance a, b;
    assert_int_equal(ks_ar_get_layer_instance(ar, 0, 0, &a), KS_STATUS_OK);
    assert_int_equal(ks_ar_get_layer_instance(ar, 1, 0, &b), KS_STATUS_OK);
    assert_true(a.drawn && b.drawn);
    float face_w = fabsf(fix.landmarks[3 * 454] - fix.landmarks[3 * 234]);
    float down = b.center_px[1] - a.center_px[1];
    assert_true(down > 0.3f * face_w && down < 0.7f * face_w);
    assert_true(b.size_px[0] > 1.7f * a.size_px[0] && b.size_px[0] < 2.3f * a.size_px[0]);
    ks_ar_renderer_destroy(ar);
    ks_effect_destroy(fx);
    free(glb.p);
}

static void test_create_refusals(void **state) {
    (void)state;
    m3_buf glb = m3_glasses_glb();
    /* corrupt the glb: an accessor count past its view */
    m3_buf bad = {0};
    m3_put(&bad, glb.p, glb.n);
    char *at = memchr(bad.p, '{', bad.n);
    assert_non_null(at);
    char *count = strstr(at, "\"count\":");
    assert_non_null(count);
    count[8] = '9'; /* first digit of the first accessor's count */
    ks_effect *fx = m3_effect(M3_GLASSES_LAYER, &bad);
    ks_ar_renderer *ar = NULL;
    ks_status st =
        ks_ar_renderer_create(&(ks_ar_renderer_desc){.backend = KS_AR_BACKEND_NULL}, fx, &ar);
    assert_int_equal(st, KS_STATUS_INVALID_MODEL);
    assert_null(ar);
    assert_non_null(strstr(ks_last_error(NULL), "glasses.glb: accessors[0].count"));
    assert_non_null(strstr(ks_last_error(NULL), "layer 'glasses'"));
    ks_effect_destroy(fx);
    free(bad.p);

    /* iris landmarks have no canonical position */
    fx = m3_effect("{\"name\":\"g\",\"kind\":\"mesh3d\",\"mesh\":\"glasses.glb\","
                   "\"anchor\":{\"landmarks\":[168,470]}}",
                   &glb);
    st = ks_ar_renderer_create(&(ks_ar_renderer_desc){.backend = KS_AR_BACKEND_NULL}, fx, &ar);
    assert_int_equal(st, KS_STATUS_INVALID_MODEL);
    assert_non_null(strstr(ks_last_error(NULL), "anchor.landmarks[1]: 470"));
    ks_effect_destroy(fx);
    free(glb.p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_follows_pose),
        cmocka_unit_test(test_anchor_offset_and_scale),
        cmocka_unit_test(test_create_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
