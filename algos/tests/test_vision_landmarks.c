/* Landmark blocks: tensors -> landmarks, letterbox removal, ROI projection, ROIs from detections
 * and landmarks, rect transformation. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "landmarks.h"

#define PI_F 3.14159265f

static void assert_near(float a, float b, float tol) {
    if (!(fabsf(a - b) <= tol)) fail_msg("%g != %g (tol %g)", (double)a, (double)b, (double)tol);
}

static void test_tensors_to_landmarks(void **state) {
    (void)state;
    float raw[2 * 5] = {64, 32, 19.2f, 0.0f, 2.0f, 192, 0, -1.92f, 100.0f, -100.0f};
    ks__landmarks_decode_options o = {.num_landmarks = 2,
                                      .input_width = 192,
                                      .input_height = 128,
                                      .visibility_activation = KS__ACTIVATION_SIGMOID,
                                      .presence_activation = KS__ACTIVATION_SIGMOID};
    ks__landmark lm[2];
    char err[256];
    assert_int_equal(ks__tensors_to_landmarks(&o, raw, 10, lm, 2, err, sizeof(err)), KS_STATUS_OK);
    assert_near(lm[0].x, 64.0f / 192.0f, 1e-6f);
    assert_near(lm[0].y, 0.25f, 1e-6f);
    assert_near(lm[0].z, 0.1f, 1e-6f);
    assert_near(lm[0].visibility, 0.5f, 1e-6f);
    assert_near(lm[0].presence, 1.0f / (1.0f + expf(-2.0f)), 1e-6f);
    assert_near(lm[1].visibility, 1.0f, 1e-6f);
    assert_near(lm[1].presence, 0.0f, 1e-6f);
    o.flip_horizontally = true;
    o.normalize_z = 2.0f;
    assert_int_equal(ks__tensors_to_landmarks(&o, raw, 10, lm, 2, err, sizeof(err)), KS_STATUS_OK);
    assert_near(lm[0].x, 128.0f / 192.0f, 1e-6f);
    assert_near(lm[0].z, 0.05f, 1e-6f);
    /* 3 values per landmark (face mesh layout). */
    o.visibility_activation = o.presence_activation = KS__ACTIVATION_NONE;
    assert_int_equal(ks__tensors_to_landmarks(&o, raw, 6, lm, 2, err, sizeof(err)), KS_STATUS_OK);
    assert_near(lm[0].visibility, 0.0f, 0);
    assert_int_equal(ks__tensors_to_landmarks(&o, raw, 7, lm, 2, err, sizeof(err)),
                     KS_STATUS_INVALID_SHAPE);
    assert_int_equal(ks__tensors_to_landmarks(&o, raw, 2, lm, 2, err, sizeof(err)),
                     KS_STATUS_INVALID_SHAPE);
    assert_int_equal(ks__tensors_to_landmarks(&o, raw, 10, lm, 1, err, sizeof(err)),
                     KS_STATUS_INVALID_ARGUMENT);
}

static void test_letterbox_and_projection(void **state) {
    (void)state;
    float pad[4];
    /* A 200x100 (wide) region into a square input: bars top and bottom, 25% each. */
    ks__letterbox_padding(200, 100, 128, 128, pad);
    assert_near(pad[0], 0.0f, 1e-6f);
    assert_near(pad[1], 0.25f, 1e-6f);
    assert_near(pad[3], 0.25f, 1e-6f);
    ks__landmark lm[2] = {{0.5f, 0.25f, 0.1f, 0, 0}, {1.0f, 0.75f, 0, 0, 0}};
    ks__landmarks_remove_letterbox(lm, 2, pad);
    assert_near(lm[0].y, 0.0f, 1e-6f);
    assert_near(lm[1].y, 1.0f, 1e-6f);
    assert_near(lm[0].z, 0.1f, 1e-6f);

    /* ROI centred at (0.5, 0.4), 0.2 x 0.3, rotated 90 degrees clockwise (y down). The ROI's
     * right-middle (1, 0.5) maps to the bottom-middle of the rotated box. */
    ks__rect roi = {0.5f, 0.4f, 0.2f, 0.3f, PI_F / 2.0f};
    ks__landmark p[2] = {{1.0f, 0.5f, 0.5f, 0, 0}, {0.5f, 0.5f, 0, 0, 0}};
    ks__landmarks_project(p, 2, &roi, false);
    assert_near(p[0].x, 0.5f, 1e-6f);
    assert_near(p[0].y, 0.4f + 0.5f * 0.3f, 1e-6f);
    assert_near(p[0].z, 0.1f, 1e-6f);
    assert_near(p[1].x, 0.5f, 1e-6f);
    assert_near(p[1].y, 0.4f, 1e-6f);
    ks__landmark q = {1.0f, 0.5f, 0, 0, 0};
    ks__landmarks_project(&q, 1, &roi, true);
    assert_near(q.x, 0.6f, 1e-6f);
}

static void test_roi_from_detection(void **state) {
    (void)state;
    ks__roi_options o;
    assert_int_equal(ks__roi_preset_get(KS__ROI_PRESET_FACE_FROM_DETECTION, &o), KS_STATUS_OK);
    ks__detection d;
    memset(&d, 0, sizeof(d));
    d.xmin = 0.4f, d.xmax = 0.6f, d.ymin = 0.3f, d.ymax = 0.5f;
    d.num_keypoints = 6;
    /* Eyes level: no rotation. On a 200x100 image the 0.2 x 0.2 box is 40x20 px; square long
     * side 40 px -> 0.2 x 0.4, then x1.5. */
    d.keypoints[0] = (ks__point2){0.45f, 0.35f};
    d.keypoints[1] = (ks__point2){0.55f, 0.35f};
    ks__rect r;
    char err[256];
    assert_int_equal(ks__roi_from_detection(&o, &d, 200, 100, &r, err, sizeof(err)), KS_STATUS_OK);
    assert_near(r.x_center, 0.5f, 1e-6f);
    assert_near(r.y_center, 0.4f, 1e-6f);
    assert_near(r.rotation_rad, 0.0f, 1e-6f);
    assert_near(r.width, 0.3f, 1e-6f);
    assert_near(r.height, 0.6f, 1e-6f);
    /* Left eye 45 degrees lower in pixels (dx = 20 px, dy = 20 px): rotation +45 deg. */
    d.keypoints[1] = (ks__point2){0.55f, 0.55f};
    assert_int_equal(ks__roi_from_detection(&o, &d, 200, 100, &r, err, sizeof(err)), KS_STATUS_OK);
    assert_near(r.rotation_rad, PI_F / 4.0f, 1e-5f);
    /* Keypoint index beyond the detection's keypoints. */
    d.num_keypoints = 1;
    assert_int_equal(ks__roi_from_detection(&o, &d, 200, 100, &r, err, sizeof(err)),
                     KS_STATUS_INVALID_ARGUMENT);

    /* Palm: wrist below the middle finger (hand pointing up) -> rotation 0; shift -0.5 moves the
     * centre up by half the box height before scaling. */
    assert_int_equal(ks__roi_preset_get(KS__ROI_PRESET_HAND_FROM_PALM, &o), KS_STATUS_OK);
    d.num_keypoints = 7;
    d.xmin = 0.4f, d.xmax = 0.6f, d.ymin = 0.4f, d.ymax = 0.6f;
    d.keypoints[0] = (ks__point2){0.5f, 0.6f};
    d.keypoints[2] = (ks__point2){0.5f, 0.4f};
    assert_int_equal(ks__roi_from_detection(&o, &d, 100, 100, &r, err, sizeof(err)), KS_STATUS_OK);
    assert_near(r.rotation_rad, 0.0f, 1e-6f);
    assert_near(r.y_center, 0.4f, 1e-6f);
    assert_near(r.width, 0.2f * 2.6f, 1e-5f);
    /* Hand pointing right (middle finger to the right of the wrist): rotation +90 deg, and the
     * shift now moves the centre right. */
    d.keypoints[0] = (ks__point2){0.4f, 0.5f};
    d.keypoints[2] = (ks__point2){0.6f, 0.5f};
    assert_int_equal(ks__roi_from_detection(&o, &d, 100, 100, &r, err, sizeof(err)), KS_STATUS_OK);
    assert_near(r.rotation_rad, PI_F / 2.0f, 1e-5f);
    assert_near(r.x_center, 0.6f, 1e-5f);
    assert_near(r.y_center, 0.5f, 1e-5f);

    /* Pose: alignment points, centre = kp0, side = 2 |kp1 - kp0|. */
    assert_int_equal(ks__roi_preset_get(KS__ROI_PRESET_POSE_FROM_DETECTION, &o), KS_STATUS_OK);
    d.num_keypoints = 4;
    d.keypoints[0] = (ks__point2){0.5f, 0.6f};
    d.keypoints[1] = (ks__point2){0.5f, 0.3f};
    assert_int_equal(ks__roi_from_detection(&o, &d, 100, 100, &r, err, sizeof(err)), KS_STATUS_OK);
    assert_near(r.x_center, 0.5f, 1e-6f);
    assert_near(r.y_center, 0.6f, 1e-6f);
    assert_near(r.width, 0.6f * 1.25f, 1e-5f);
    assert_near(r.rotation_rad, 0.0f, 1e-5f);
}

static void test_roi_from_landmarks(void **state) {
    (void)state;
    /* A square of landmarks rotated 30 degrees: the rotated bbox recovers its true size, the
     * axis-aligned one is larger. */
    ks__landmark lm[10];
    memset(lm, 0, sizeof(lm));
    float ang = PI_F / 6.0f, c = cosf(ang), s = sinf(ang);
    const float sq[4][2] = {{-0.1f, -0.1f}, {0.1f, -0.1f}, {0.1f, 0.1f}, {-0.1f, 0.1f}};
    for (int i = 0; i < 4; i++) {
        lm[i].x = 0.5f + c * sq[i][0] - s * sq[i][1];
        lm[i].y = 0.5f + s * sq[i][0] + c * sq[i][1];
    }
    /* "wrist" 0 -> "middle" 9 pointing up in the square's own frame. */
    for (int i = 4; i < 10; i++)
        lm[i] = lm[0];
    lm[0].x = 0.5f - s * 0.1f, lm[0].y = 0.5f + c * 0.1f; /* bottom edge midpoint */
    lm[9].x = 0.5f + s * 0.1f, lm[9].y = 0.5f - c * 0.1f; /* top edge midpoint */
    ks__roi_options o = {.mode = KS__ROI_MODE_ROTATED_BBOX,
                         .rotate = true,
                         .start_index = 0,
                         .end_index = 9,
                         .target_angle_deg = 90.0f};
    ks__rect r;
    char err[256];
    assert_int_equal(ks__roi_from_landmarks(&o, lm, 10, 100, 100, &r, err, sizeof(err)),
                     KS_STATUS_OK);
    assert_near(r.rotation_rad, ang, 1e-4f);
    assert_near(r.width, 0.2f, 1e-4f);
    assert_near(r.height, 0.2f, 1e-4f);
    assert_near(r.x_center, 0.5f, 1e-4f);
    o.mode = KS__ROI_MODE_BBOX;
    assert_int_equal(ks__roi_from_landmarks(&o, lm, 4, 100, 100, &r, err, sizeof(err)),
                     KS_STATUS_INVALID_ARGUMENT); /* index 9 of 4 */
    o.rotate = false;
    assert_int_equal(ks__roi_from_landmarks(&o, lm, 4, 100, 100, &r, err, sizeof(err)),
                     KS_STATUS_OK);
    assert_near(r.width, 0.2f * (c + s), 1e-4f);
    assert_int_equal(ks__roi_from_landmarks(&o, lm, 4, 0, 100, &r, err, sizeof(err)),
                     KS_STATUS_INVALID_ARGUMENT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensors_to_landmarks),
        cmocka_unit_test(test_letterbox_and_projection),
        cmocka_unit_test(test_roi_from_detection),
        cmocka_unit_test(test_roi_from_landmarks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
