/* Packets: reference counting, publication (immutability), typed views, list ownership and
 * argument checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kestrel/pipeline.h"

static void test_refcount(void **state) {
    (void)state;
    ks_packet *p = NULL;
    assert_int_equal(ks_packet_create_int(NULL, 42, &p), KS_STATUS_OK);
    assert_int_equal(ks_packet_refcount(p), 1);
    assert_ptr_equal(ks_packet_retain(p), p);
    assert_int_equal(ks_packet_refcount(p), 2);
    ks_packet_release(p);
    assert_int_equal(ks_packet_refcount(p), 1);
    assert_int_equal(ks_packet_int(p), 42);
    assert_int_equal(ks_packet_get_type(p), KS_PACKET_INT);
    ks_packet_release(p);
    ks_packet_release(NULL);
    assert_null(ks_packet_retain(NULL));
}

static void test_publish_makes_immutable(void **state) {
    (void)state;
    ks_packet *p = NULL;
    ks_tensor_info info = {.name = "x", .dtype = KS_DTYPE_F32, .shape = {2, {2, 3}}};
    assert_int_equal(ks_packet_create_tensor(NULL, &info, NULL, &p), KS_STATUS_OK);
    size_t n = 0;
    float *d = ks_packet_mutable_data(p, &n);
    assert_non_null(d);
    assert_int_equal(n, 24);
    for (int i = 0; i < 6; i++)
        assert_true(d[i] == 0.0f);
    d[5] = 7.0f;
    ks_packet_publish(p);
    assert_null(ks_packet_mutable_data(p, &n));
    assert_int_equal(n, 0);
    const ks_tensor *t = ks_packet_tensor(p);
    assert_non_null(t);
    assert_string_equal(t->info.name, "x");
    assert_true(((const float *)t->data)[5] == 7.0f);
    assert_int_equal(t->size_bytes, 24);
    assert_null(ks_packet_image_view(p)); /* wrong type gives NULL */
    ks_packet_release(p);
}

static void test_all_types(void **state) {
    (void)state;
    uint8_t px[2 * 3 * 3];
    for (size_t i = 0; i < sizeof(px); i++)
        px[i] = (uint8_t)i;
    ks_packet *img = NULL;
    /* stride 9 with 3 px of RGB: rows are copied without the padding */
    uint8_t padded[2 * 12] = {0};
    memcpy(padded, px, 9);
    memcpy(padded + 12, px + 9, 9);
    assert_int_equal(ks_packet_create_image(NULL,
                                            &(ks_packet_image){.format = KS_PIXEL_RGB8,
                                                               .width_px = 3,
                                                               .height_px = 2,
                                                               .stride_bytes = 12,
                                                               .data = padded},
                                            &img),
                     KS_STATUS_OK);
    const ks_packet_image *iv = ks_packet_image_view(img);
    assert_int_equal(iv->stride_bytes, 9);
    assert_memory_equal(iv->data, px, sizeof(px));

    float boxes[8] = {0, 0, 1, 1, 0.1f, 0.2f, 0.3f, 0.4f}, scores[2] = {0.9f, 0.8f};
    int32_t ids[2] = {3, 4};
    float kps[2 * 2 * 2] = {1, 2, 3, 4, 5, 6, 7, 8};
    ks_packet *det = NULL;
    assert_int_equal(ks_packet_create_detections(
                         NULL, &(ks_packet_detections){2, 2, boxes, scores, ids, kps}, &det),
                     KS_STATUS_OK);
    const ks_packet_detections *dv = ks_packet_detections_view(det);
    assert_int_equal(dv->num_detections, 2);
    assert_true(dv->boxes[5] == 0.2f && dv->scores[1] == 0.8f && dv->class_ids[1] == 4);
    assert_true(dv->keypoints[7] == 8.0f);

    ks_landmark lm[3] = {{1, 2, 3, 4, 5}, {0, 0, 0, 0, 0}, {9, 9, 9, 1, 1}};
    ks_packet *lmp = NULL;
    assert_int_equal(ks_packet_create_landmarks(NULL, &(ks_packet_landmarks){3, lm}, &lmp),
                     KS_STATUS_OK);
    assert_true(ks_packet_landmarks_view(lmp)->landmarks[2].x == 9.0f);

    ks_rect r = {0.5f, 0.5f, 0.2f, 0.3f, 0.1f};
    ks_packet *rp = NULL;
    assert_int_equal(ks_packet_create_rects(NULL, &(ks_packet_rects){1, &r}, &rp), KS_STATUS_OK);
    assert_true(ks_packet_rects_view(rp)->rects[0].rotation_rad == 0.1f);

    float mask[4] = {0, 0.25f, 0.5f, 1};
    ks_packet *mp = NULL;
    assert_int_equal(
        ks_packet_create_mask(NULL, &(ks_packet_mask){KS_DTYPE_F32, 2, 2, 0, mask}, &mp),
        KS_STATUS_OK);
    assert_true(((const float *)ks_packet_mask_view(mp)->data)[3] == 1.0f);

    float m16[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    ks_packet *mat = NULL, *f = NULL, *b = NULL, *s = NULL;
    assert_int_equal(ks_packet_create_matrix(NULL, m16, &mat), KS_STATUS_OK);
    assert_true(ks_packet_matrix(mat)[15] == 1.0f);
    assert_int_equal(ks_packet_create_float(NULL, 2.5, &f), KS_STATUS_OK);
    assert_true(ks_packet_float(f) == 2.5);
    assert_int_equal(ks_packet_create_bool(NULL, 7, &b), KS_STATUS_OK);
    assert_int_equal(ks_packet_bool(b), 1);
    assert_int_equal(ks_packet_create_string(NULL, "hello", &s), KS_STATUS_OK);
    assert_string_equal(ks_packet_string(s), "hello");

    ks_packet *items[3] = {img, det, s};
    ks_packet *list = NULL;
    assert_int_equal(ks_packet_create_list(NULL, items, 3, &list), KS_STATUS_OK);
    assert_int_equal(ks_packet_refcount(img), 2); /* the list holds a reference */
    assert_int_equal(ks_packet_list_size(list), 3);
    assert_ptr_equal(ks_packet_list_item(list, 1), det);
    assert_null(ks_packet_list_item(list, 3));
    /* items are published by the list */
    assert_null(ks_packet_mutable_data(img, NULL));
    ks_packet_release(img);
    ks_packet_release(det);
    ks_packet_release(s);
    /* items live on inside the list */
    assert_string_equal(ks_packet_string(ks_packet_list_item(list, 2)), "hello");
    ks_packet_release(list);
    ks_packet_release(lmp);
    ks_packet_release(rp);
    ks_packet_release(mp);
    ks_packet_release(mat);
    ks_packet_release(f);
    ks_packet_release(b);
}

static void test_bad_arguments(void **state) {
    (void)state;
    ks_packet *p = NULL;
    assert_int_equal(
        ks_packet_create_image(
            NULL, &(ks_packet_image){.format = KS_PIXEL_RGB8, .width_px = 0, .height_px = 2}, &p),
        KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(ks_packet_create_image(NULL,
                                            &(ks_packet_image){.format = KS_PIXEL_RGB8,
                                                               .width_px = 4,
                                                               .height_px = 2,
                                                               .stride_bytes = 5},
                                            &p),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "stride"));
    ks_tensor_info bad = {.dtype = KS_DTYPE_F32, .shape = {2, {3, -1}}};
    assert_int_equal(ks_packet_create_tensor(NULL, &bad, NULL, &p), KS_STATUS_INVALID_SHAPE);
    ks_tensor_info huge = {.dtype = KS_DTYPE_F32, .shape = {3, {INT64_MAX, INT64_MAX, 2}}};
    assert_int_not_equal(ks_packet_create_tensor(NULL, &huge, NULL, &p), KS_STATUS_OK);
    ks_packet *items[1] = {NULL};
    assert_int_equal(ks_packet_create_list(NULL, items, 1, &p), KS_STATUS_INVALID_ARGUMENT);
    assert_int_equal(
        ks_packet_create_mask(NULL, &(ks_packet_mask){KS_DTYPE_I32, 1, 1, 0, NULL}, &p),
        KS_STATUS_INVALID_ARGUMENT);
    assert_null(p);
    assert_string_equal(ks_packet_type_string(KS_PACKET_LANDMARKS), "landmarks");
    assert_string_equal(ks_packet_type_string((ks_packet_type)99), "invalid");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refcount),
        cmocka_unit_test(test_publish_makes_immutable),
        cmocka_unit_test(test_all_types),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
