/* Detection blocks: SSD anchor presets, SSD decode, NMS (default, weighted, class-wise), YOLOX and
 * NanoDet decoders on synthetic tensors with known boxes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "detection.h"

#define EPS 1e-5f

static void assert_near(float a, float b, float tol) {
    if (!(fabsf(a - b) <= tol)) fail_msg("%g != %g (tol %g)", (double)a, (double)b, (double)tol);
}

static const struct {
    ks__ssd_preset preset;
    size_t count;
    float first_xy, last_xy;
} k_presets[] = {
    /* first anchor: (0.5 / fm, 0.5 / fm) of the stride-8 (or 4) map; last: the coarsest map's
     * last cell centre. All presets use fixed_anchor_size, so w = h = 1. */
    {KS__SSD_PRESET_FACE_SHORT_RANGE, 896, 0.5f / 16.0f, 7.5f / 8.0f},
    {KS__SSD_PRESET_FACE_FULL_RANGE, 2304, 0.5f / 48.0f, 47.5f / 48.0f},
    {KS__SSD_PRESET_PALM, 2016, 0.5f / 24.0f, 11.5f / 12.0f},
    {KS__SSD_PRESET_POSE, 2254, 0.5f / 28.0f, 6.5f / 7.0f},
};

static void test_anchor_presets(void **state) {
    (void)state;
    char err[256];
    for (size_t p = 0; p < sizeof(k_presets) / sizeof(k_presets[0]); p++) {
        ks__ssd_anchor_options ao;
        ks__ssd_decode_options dopt;
        assert_int_equal(ks__ssd_preset_get(k_presets[p].preset, &ao, &dopt, NULL), KS_STATUS_OK);
        size_t n = 0;
        assert_int_equal(ks__ssd_anchors_count(&ao, &n, err, sizeof(err)), KS_STATUS_OK);
        assert_int_equal(n, k_presets[p].count);
        assert_int_equal((size_t)dopt.num_boxes, n);
        ks__anchor *a = calloc(n, sizeof(*a));
        size_t got = 0;
        assert_int_equal(ks__ssd_anchors_generate(&ao, a, n, &got, err, sizeof(err)), KS_STATUS_OK);
        assert_int_equal(got, n);
        assert_near(a[0].x_center, k_presets[p].first_xy, EPS);
        assert_near(a[0].y_center, k_presets[p].first_xy, EPS);
        assert_near(a[0].w, 1.0f, EPS);
        assert_near(a[0].h, 1.0f, EPS);
        assert_near(a[n - 1].x_center, k_presets[p].last_xy, EPS);
        assert_near(a[n - 1].y_center, k_presets[p].last_xy, EPS);
        /* Too small an output is refused, not overrun. */
        assert_int_equal(ks__ssd_anchors_generate(&ao, a, n - 1, &got, err, sizeof(err)),
                         KS_STATUS_INVALID_ARGUMENT);
        free(a);
    }
    /* Short range: 2 anchors per cell on the 16x16 map, 6 per cell on the shared 8x8 map. */
    ks__ssd_anchor_options ao;
    ks__ssd_preset_get(KS__SSD_PRESET_FACE_SHORT_RANGE, &ao, NULL, NULL);
    ks__anchor a[896];
    size_t got;
    ks__ssd_anchors_generate(&ao, a, 896, &got, err, sizeof(err));
    assert_near(a[1].x_center, a[0].x_center, EPS);
    assert_near(a[2].x_center, 1.5f / 16.0f, EPS);
    assert_near(a[512].x_center, 0.5f / 8.0f, EPS);
    assert_near(a[517].x_center, 0.5f / 8.0f, EPS);
    assert_near(a[518].x_center, 1.5f / 8.0f, EPS);
}

static void test_anchor_sizes_not_fixed(void **state) {
    (void)state;
    /* Two layers, distinct strides, ratios {1, 2}, interpolated 1: per cell 3 anchors.
     * Layer 0 scale 0.2, next 0.8: interpolated sqrt(0.16) = 0.4. */
    ks__ssd_anchor_options o = {.input_size_width = 32,
                                .input_size_height = 32,
                                .min_scale = 0.2f,
                                .max_scale = 0.8f,
                                .anchor_offset_x = 0.5f,
                                .anchor_offset_y = 0.5f,
                                .num_layers = 2,
                                .strides = {16, 32},
                                .num_aspect_ratios = 2,
                                .aspect_ratios = {1.0f, 2.0f},
                                .interpolated_scale_aspect_ratio = 1.0f};
    ks__anchor a[32];
    size_t n;
    char err[128];
    assert_int_equal(ks__ssd_anchors_generate(&o, a, 32, &n, err, sizeof(err)), KS_STATUS_OK);
    assert_int_equal(n, 2 * 2 * 3 + 1 * 1 * 3);
    assert_near(a[0].w, 0.2f, EPS);
    assert_near(a[1].w, 0.2f * sqrtf(2.0f), EPS);
    assert_near(a[1].h, 0.2f / sqrtf(2.0f), EPS);
    assert_near(a[2].w, 0.4f, EPS);
    /* Last layer: interpolated with scale_next = 1: sqrt(0.8). */
    assert_near(a[14].w, sqrtf(0.8f), EPS);
    /* Reduced lowest layer: 0.1 box + ratios 2 and 0.5 at the layer scale. */
    o.reduce_boxes_in_lowest_layer = true;
    assert_int_equal(ks__ssd_anchors_generate(&o, a, 32, &n, err, sizeof(err)), KS_STATUS_OK);
    assert_near(a[0].w, 0.1f, EPS);
    assert_near(a[1].w, 0.2f * sqrtf(2.0f), EPS);
    assert_near(a[2].w, 0.2f * sqrtf(0.5f), EPS);
    /* Hostile options. */
    o.num_layers = 9;
    assert_int_equal(ks__ssd_anchors_count(&o, &n, err, sizeof(err)), KS_STATUS_INVALID_ARGUMENT);
    o.num_layers = 2;
    o.strides[1] = 0;
    assert_int_equal(ks__ssd_anchors_count(&o, &n, err, sizeof(err)), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "strides[1]"));
    o.strides[1] = 1;
    o.input_size_width = o.input_size_height = 16384;
    assert_int_equal(ks__ssd_anchors_count(&o, &n, err, sizeof(err)), KS_STATUS_LIMIT_EXCEEDED);
}

/* Two boxes on a 2-anchor setup, BlazeFace-style XYWH with keypoints. */
static void test_ssd_decode(void **state) {
    (void)state;
    ks__ssd_decode_options o = {.num_classes = 1,
                                .num_boxes = 3,
                                .num_coords = 8,
                                .keypoint_coord_offset = 4,
                                .num_keypoints = 2,
                                .num_values_per_keypoint = 2,
                                .box_format = KS__BOX_FORMAT_XYWH,
                                .x_scale = 128,
                                .y_scale = 128,
                                .w_scale = 128,
                                .h_scale = 128,
                                .sigmoid_score = true,
                                .score_clipping_thresh = 100.0f,
                                .min_score_thresh = 0.5f};
    ks__anchor anchors[3] = {{0.25f, 0.25f, 1, 1}, {0.75f, 0.5f, 1, 1}, {0.5f, 0.5f, 1, 1}};
    float boxes[3 * 8] = {
        12.8f, -12.8f, 32.0f, 64.0f, 0.0f, 0.0f, 12.8f, 12.8f, /* cx .35 cy .15 w .25 h .5 */
        0.0f,  0.0f,   64.0f, 64.0f, 0,    0,    0,     0,     /* cx .75 cy .5, 0.5 x 0.5 */
        0,     0,      10,    10,    0,    0,    0,     0};
    float scores[3] = {2.0f, 1000.0f, -3.0f}; /* third below threshold; second clipped */
    ks__detection out[3];
    size_t n;
    char err[256];
    assert_int_equal(
        ks__ssd_decode(&o, boxes, 24, scores, 3, anchors, 3, out, 3, &n, err, sizeof(err)),
        KS_STATUS_OK);
    assert_int_equal(n, 2);
    assert_near(out[0].xmin, 0.35f - 0.125f, EPS);
    assert_near(out[0].xmax, 0.35f + 0.125f, EPS);
    assert_near(out[0].ymin, 0.15f - 0.25f, EPS);
    assert_near(out[0].ymax, 0.15f + 0.25f, EPS);
    assert_near(out[0].score, 1.0f / (1.0f + expf(-2.0f)), 1e-6f);
    assert_int_equal(out[0].num_keypoints, 2);
    assert_near(out[0].keypoints[0].x, 0.25f, EPS);
    assert_near(out[0].keypoints[1].x, 0.35f, EPS);
    assert_near(out[0].keypoints[1].y, 0.35f, EPS);
    assert_near(out[1].score, 1.0f, 1e-6f);
    assert_int_equal(out[1].track_id, -1);

    /* YXHW swaps the order; exp box sizes. */
    o.box_format = KS__BOX_FORMAT_YXHW;
    o.apply_exponential_on_box_size = true;
    float b2[3 * 8] = {0};
    b2[8 + 0] = 12.8f; /* y offset 0.1 */
    float sc2[3] = {5, 5, -5};
    assert_int_equal(ks__ssd_decode(&o, b2, 24, sc2, 3, anchors, 3, out, 3, &n, err, sizeof(err)),
                     KS_STATUS_OK);
    assert_int_equal(n, 2);
    assert_near(out[1].ymin, 0.6f - 0.5f, EPS); /* exp(0) * 1 = full-size box */

    /* Capacity 1 keeps the best. */
    assert_int_equal(
        ks__ssd_decode(&o, boxes, 24, scores, 3, anchors, 3, out, 1, &n, err, sizeof(err)),
        KS_STATUS_OK);
    assert_int_equal(n, 1);
    assert_near(out[0].score, 1.0f, 1e-6f);

    /* Shape and option errors name the problem. */
    assert_int_equal(
        ks__ssd_decode(&o, boxes, 23, scores, 3, anchors, 3, out, 3, &n, err, sizeof(err)),
        KS_STATUS_INVALID_SHAPE);
    assert_non_null(strstr(err, "23"));
    o.num_keypoints = 3;
    assert_int_equal(
        ks__ssd_decode(&o, boxes, 24, scores, 3, anchors, 3, out, 3, &n, err, sizeof(err)),
        KS_STATUS_INVALID_ARGUMENT);
    o.num_keypoints = 2;
    o.x_scale = 0.0f;
    assert_int_equal(
        ks__ssd_decode(&o, boxes, 24, scores, 3, anchors, 3, out, 3, &n, err, sizeof(err)),
        KS_STATUS_INVALID_ARGUMENT);
}

static ks__detection box(float x0, float y0, float x1, float y1, float score, int32_t cls) {
    ks__detection d;
    memset(&d, 0, sizeof(d));
    d.xmin = x0, d.ymin = y0, d.xmax = x1, d.ymax = y1, d.score = score, d.class_id = cls;
    d.num_keypoints = 1;
    d.keypoints[0].x = x0, d.keypoints[0].y = y0;
    return d;
}

static void test_nms(void **state) {
    (void)state;
    ks__detection in[5] = {
        box(0.10f, 0.10f, 0.50f, 0.50f, 0.8f, 0),
        box(0.12f, 0.12f, 0.52f, 0.52f, 0.9f, 0), /* overlaps #0 strongly */
        box(0.60f, 0.60f, 0.90f, 0.90f, 0.7f, 0),
        box(0.11f, 0.11f, 0.51f, 0.51f, 0.95f, 1), /* other class */
        box(0.0f, 0.0f, 0.1f, 0.1f, 0.2f, 0),      /* below min score */
    };
    uint32_t scratch[5];
    assert_true(ks__nms_scratch_size(5) <= sizeof(scratch));
    ks__detection out[5];
    size_t n;
    ks__nms_options o = {.min_suppression_threshold = 0.3f, .min_score_threshold = 0.5f};
    ks__nms(&o, in, 5, scratch, out, 5, &n);
    assert_int_equal(n, 2); /* class ignored: #3 suppresses #1 and #0 */
    assert_near(out[0].score, 0.95f, 0);
    assert_near(out[1].score, 0.7f, 0);

    o.per_class = true;
    ks__nms(&o, in, 5, scratch, out, 5, &n);
    assert_int_equal(n, 3);
    assert_near(out[0].score, 0.95f, 0);
    assert_near(out[1].score, 0.9f, 0);
    assert_near(out[2].score, 0.7f, 0);

    o.algorithm = KS__NMS_WEIGHTED;
    ks__nms(&o, in, 5, scratch, out, 5, &n);
    assert_int_equal(n, 3);
    assert_int_equal(out[1].class_id, 0);
    assert_near(out[1].score, 0.9f, 0);
    /* Weighted mean of #1 (0.9) and #0 (0.8). */
    assert_near(out[1].xmin, (0.12f * 0.9f + 0.10f * 0.8f) / 1.7f, 1e-6f);
    assert_near(out[1].ymax, (0.52f * 0.9f + 0.50f * 0.8f) / 1.7f, 1e-6f);
    assert_near(out[1].keypoints[0].x, (0.12f * 0.9f + 0.10f * 0.8f) / 1.7f, 1e-6f);
    assert_near(out[2].xmin, 0.6f, 0); /* lone box unchanged */

    o.max_num_detections = 1;
    ks__nms(&o, in, 5, scratch, out, 5, &n);
    assert_int_equal(n, 1);
    ks__nms(&o, in, 0, scratch, out, 5, &n);
    assert_int_equal(n, 0);

    /* Equal scores: input order decides (deterministic). */
    ks__detection eq[2] = {box(0, 0, 1, 1, 0.6f, 0), box(0, 0, 1, 1, 0.6f, 0)};
    eq[1].class_id = 7;
    o.per_class = false;
    o.algorithm = KS__NMS_DEFAULT;
    ks__nms(&o, eq, 2, scratch, out, 2, &n);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].class_id, 0);
}

static void test_yolox(void **state) {
    (void)state;
    /* 64x32 input, strides 8/16/32 -> 8x4 + 4x2 + 2x1 = 42 cells, 3 classes. */
    ks__yolox_options o = {
        .input_width = 64, .input_height = 32, .num_classes = 3, .min_score_thresh = 0.25f};
    size_t cells;
    char err[256];
    assert_int_equal(ks__yolox_num_cells(&o, &cells, err, sizeof(err)), KS_STATUS_OK);
    assert_int_equal(cells, 42);
    float *raw = calloc(cells * 8, sizeof(float));
    /* Level 1 (stride 16), cell gx=2, gy=1 -> index 32 + 1*4 + 2 = 38. Box centre
     * ((0.5 + 2) * 16, (0.25 + 1) * 16) = (40, 20), size exp(log 2) * 16 = 32 x 16. */
    float *r = raw + 38 * 8;
    r[0] = 0.5f, r[1] = 0.25f, r[2] = logf(2.0f), r[3] = 0.0f, r[4] = 0.9f;
    r[5] = 0.1f, r[6] = 0.8f, r[7] = 0.3f;
    ks__detection out[8];
    size_t n;
    assert_int_equal(ks__yolox_decode(&o, raw, cells * 8, out, 8, &n, err, sizeof(err)),
                     KS_STATUS_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].class_id, 1);
    assert_near(out[0].score, 0.72f, 1e-6f);
    assert_near(out[0].xmin, 24.0f / 64.0f, 1e-6f);
    assert_near(out[0].xmax, 56.0f / 64.0f, 1e-6f);
    assert_near(out[0].ymin, 12.0f / 32.0f, 1e-6f);
    assert_near(out[0].ymax, 28.0f / 32.0f, 1e-6f);
    o.multi_label = true;
    assert_int_equal(ks__yolox_decode(&o, raw, cells * 8, out, 8, &n, err, sizeof(err)),
                     KS_STATUS_OK);
    assert_int_equal(n, 2); /* 0.72 and 0.27 */
    /* Logit outputs. */
    o.multi_label = false;
    o.apply_sigmoid = true;
    o.min_score_thresh = 0.3f; /* zero logits elsewhere score 0.5 * 0.5 */
    r[4] = 10.0f, r[5] = -10.0f, r[6] = 10.0f, r[7] = -10.0f;
    assert_int_equal(ks__yolox_decode(&o, raw, cells * 8, out, 8, &n, err, sizeof(err)),
                     KS_STATUS_OK);
    assert_int_equal(n, 1);
    assert_near(out[0].score, 1.0f, 1e-3f);
    assert_int_equal(ks__yolox_decode(&o, raw, cells * 8 - 1, out, 8, &n, err, sizeof(err)),
                     KS_STATUS_INVALID_SHAPE);
    free(raw);
}

static void test_nanodet(void **state) {
    (void)state;
    /* 32x32 input, default strides: 4x4, 2x2, 1x1 cells; 2 classes; 8 bins. */
    ks__nanodet_options o = {
        .input_width = 32, .input_height = 32, .num_classes = 2, .min_score_thresh = 0.5f};
    float cls0[16 * 2] = {0}, cls1[4 * 2] = {0}, cls2[1 * 2] = {0};
    float reg0[16 * 32], reg1[4 * 32], reg2[1 * 32];
    for (size_t i = 0; i < 16 * 32; i++)
        reg0[i] = 0.0f;
    for (size_t i = 0; i < 4 * 32; i++)
        reg1[i] = 0.0f;
    for (size_t i = 0; i < 32; i++)
        reg2[i] = 0.0f;
    /* Level 1 (stride 16), cell (1, 0): class 1 at 0.9. Distances: one-hot bins 2, 1, 3, 0
     * (in stride units) -> l=32, t=16, r=48, b=0 around centre (16, 0). */
    cls1[1 * 2 + 1] = 0.9f;
    float *rg = reg1 + 1 * 32;
    const int hot[4] = {2, 1, 3, 0};
    for (int side = 0; side < 4; side++)
        rg[side * 8 + hot[side]] = 40.0f; /* softmax ~ one-hot */
    const float *cls[3] = {cls0, cls1, cls2};
    const float *reg[3] = {reg0, reg1, reg2};
    size_t cls_n[3] = {32, 8, 2}, reg_n[3] = {16 * 32, 4 * 32, 32};
    ks__detection out[4];
    size_t n;
    char err[256];
    assert_int_equal(ks__nanodet_decode(&o, cls, cls_n, reg, reg_n, out, 4, &n, err, sizeof(err)),
                     KS_STATUS_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].class_id, 1);
    assert_near(out[0].xmin, (16.0f - 32.0f) / 32.0f, 1e-4f);
    assert_near(out[0].ymin, (0.0f - 16.0f) / 32.0f, 1e-4f);
    assert_near(out[0].xmax, (16.0f + 48.0f) / 32.0f, 1e-4f);
    assert_near(out[0].ymax, 0.0f, 1e-4f);
    /* Uniform bins integrate to 3.5 bins. */
    cls0[0] = 0.7f;
    o.center_offset = 0.5f;
    assert_int_equal(ks__nanodet_decode(&o, cls, cls_n, reg, reg_n, out, 4, &n, err, sizeof(err)),
                     KS_STATUS_OK);
    assert_int_equal(n, 2);
    int k = out[0].class_id == 0 ? 0 : 1;
    assert_near(out[k].xmin, (4.0f - 3.5f * 8.0f) / 32.0f, 1e-4f);
    assert_near(out[k].xmax, (4.0f + 3.5f * 8.0f) / 32.0f, 1e-4f);
    reg_n[2] = 31;
    assert_int_equal(ks__nanodet_decode(&o, cls, cls_n, reg, reg_n, out, 4, &n, err, sizeof(err)),
                     KS_STATUS_INVALID_SHAPE);
    assert_non_null(strstr(err, "level 2"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_anchor_presets), cmocka_unit_test(test_anchor_sizes_not_fixed),
        cmocka_unit_test(test_ssd_decode),     cmocka_unit_test(test_nms),
        cmocka_unit_test(test_yolox),          cmocka_unit_test(test_nanodet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
