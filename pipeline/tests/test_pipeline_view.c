/* Image view packets (ks_packet_create_image_view): a caller's camera frame enters a graph without
 * a copy, and image_to_tensor samples it with its orientation exactly as it samples an upright
 * copy; views are checked at creation and refused by nodes that keep packets across frames. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kestrel/imgproc.h"
#include "kestrel/pipeline.h"

#define W 37
#define H 23

static uint8_t g_rgb[H * W * 3];
static uint8_t g_nv21[W * H + 2 * ((W + 1) / 2) * ((H + 1) / 2)];

static void fill(void) {
    for (size_t i = 0; i < sizeof(g_rgb); i++)
        g_rgb[i] = (uint8_t)((i * 131u + (i / 7u) * 17u) & 0xffu);
    for (size_t i = 0; i < sizeof(g_nv21); i++)
        g_nv21[i] = (uint8_t)(16u + ((i * 97u) % 220u));
}

static void test_view_geometry(void **state) {
    (void)state;
    fill();
    ks_image frame = {.format = KS_PIXEL_FORMAT_NV21,
                      .width_px = W,
                      .height_px = H,
                      .planes = {g_nv21, g_nv21 + W * H}};
    ks_packet *p = NULL;
    assert_int_equal(ks_packet_create_image_view(NULL, &frame, KS_ROTATION_90, 1, &p),
                     KS_STATUS_OK);
    const ks_packet_image *v = ks_packet_image_view(p);
    assert_non_null(v);
    assert_int_equal(v->format, KS_PIXEL_EXTERNAL);
    assert_int_equal(v->width_px, H); /* 90 degrees: the upright image is H wide */
    assert_int_equal(v->height_px, W);
    assert_null(v->data);
    ks_image src;
    ks_rotation rot = KS_ROTATION_0;
    int32_t mirror = 0;
    assert_int_equal(ks_packet_image_source(p, &src, &rot, &mirror), KS_STATUS_OK);
    assert_int_equal(src.format, KS_PIXEL_FORMAT_NV21);
    assert_ptr_equal(src.planes[0], g_nv21); /* the caller's pixels, not a copy */
    assert_ptr_equal(src.planes[1], g_nv21 + W * H);
    assert_int_equal(rot, KS_ROTATION_90);
    assert_int_equal(mirror, 1);
    ks_packet_release(p);

    /* An owned image is its own source, upright. */
    ks_packet *own = NULL;
    assert_int_equal(ks_packet_create_image(
                         NULL,
                         &(ks_packet_image){
                             .format = KS_PIXEL_BGR8, .width_px = W, .height_px = H, .data = g_rgb},
                         &own),
                     KS_STATUS_OK);
    assert_int_equal(ks_packet_image_source(own, &src, &rot, &mirror), KS_STATUS_OK);
    assert_int_equal(src.format, KS_PIXEL_FORMAT_BGR);
    assert_int_equal(src.stride_bytes[0], 3 * W);
    assert_int_equal(rot, KS_ROTATION_0);
    assert_int_equal(mirror, 0);
    assert_memory_equal(src.planes[0], g_rgb, sizeof(g_rgb));
    ks_packet_release(own);
}

static void test_view_bad_frames(void **state) {
    (void)state;
    ks_packet *p = NULL;
    ks_image frame = {
        .format = KS_PIXEL_FORMAT_NV21, .width_px = W, .height_px = H, .planes = {g_nv21, NULL}};
    /* NV21 needs its chroma plane. */
    assert_int_equal(ks_packet_create_image_view(NULL, &frame, KS_ROTATION_0, 0, &p),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_null(p);
    assert_non_null(strstr(ks_last_error(NULL), "planes[1]"));
    frame.planes[1] = g_nv21 + W * H;
    frame.stride_bytes[0] = W - 1;
    assert_int_equal(ks_packet_create_image_view(NULL, &frame, KS_ROTATION_0, 0, &p),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "stride_bytes[0]"));
    frame.stride_bytes[0] = 0;
    assert_int_equal(ks_packet_create_image_view(NULL, &frame, (ks_rotation)7, 0, &p),
                     KS_STATUS_INVALID_ARGUMENT);
    frame.width_px = KS_IMAGE_MAX_DIM_PX + 1;
    assert_int_equal(ks_packet_create_image_view(NULL, &frame, KS_ROTATION_0, 0, &p),
                     KS_STATUS_LIMIT_EXCEEDED);
    assert_int_equal(ks_packet_create_image_view(NULL, NULL, KS_ROTATION_0, 0, &p),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_null(p);
    /* Not an image packet. */
    ks_packet *i = NULL;
    ks_image src;
    ks_rotation rot;
    int32_t mirror;
    assert_int_equal(ks_packet_create_int(NULL, 1, &i), KS_STATUS_OK);
    assert_int_equal(ks_packet_image_source(i, &src, &rot, &mirror), KS_STATUS_INVALID_ARGUMENT);
    ks_packet_release(i);
    /* An owned image cannot be made of KS_PIXEL_EXTERNAL. */
    assert_int_equal(
        ks_packet_create_image(
            NULL, &(ks_packet_image){.format = KS_PIXEL_EXTERNAL, .width_px = W, .height_px = H},
            &p),
        KS_STATUS_INVALID_ARGUMENT);
}

static const char kCropGraph[] =
    "{\"inputs\":[{\"name\":\"image\",\"type\":\"image\"}],\"outputs\":[\"t\"],"
    "\"nodes\":[{\"type\":\"image_to_tensor\",\"name\":\"crop\",\"inputs\":[\"image\"],"
    "\"outputs\":[\"t\"],\"options\":{\"width\":19,\"height\":29,\"range\":[-1,1],"
    "\"keep_aspect\":true}}]}";

/* The tensor the crop graph makes of `in`. */
static void run_crop(const ks_packet *in, float *out, size_t count) {
    ks_pipeline *p = NULL;
    assert_int_equal(ks_pipeline_create_json(kCropGraph, strlen(kCropGraph), NULL, &p),
                     KS_STATUS_OK);
    ks_packet *outs[1] = {NULL};
    const ks_packet *ins[1] = {in};
    assert_int_equal(ks_pipeline_process(p, ins, 1, outs), KS_STATUS_OK);
    const ks_tensor *t = ks_packet_tensor(outs[0]);
    assert_non_null(t);
    assert_int_equal(t->size_bytes, count * sizeof(float));
    memcpy(out, t->data, count * sizeof(float));
    ks_packet_release(outs[0]);
    ks_pipeline_destroy(p);
}

/* For every orientation, the crop of a view equals the crop of the upright copy (an RGB source,
 * so no YUV rounding): bit for bit when upright, within float rounding of the sample points
 * otherwise. */
static void test_view_matches_upright_copy(void **state) {
    (void)state;
    fill();
    ks_image frame = {
        .format = KS_PIXEL_FORMAT_RGB, .width_px = W, .height_px = H, .planes = {g_rgb}};
    static float a[19 * 29 * 3], b[19 * 29 * 3];
    static uint8_t upright[W * H * 3];
    for (int r = 0; r < KS_ROTATION_COUNT; r++) {
        for (int32_t mirror = 0; mirror < 2; mirror++) {
            bool swap = r == KS_ROTATION_90 || r == KS_ROTATION_270;
            int32_t uw = swap ? H : W, uh = swap ? W : H;
            /* The upright copy through imgproc's identity map with nearest sampling. */
            ks_tensor t = {.info = {.dtype = KS_DTYPE_U8, .shape = {3, {uh, uw, 3}}},
                           .data = upright,
                           .size_bytes = sizeof(upright)};
            ks_image_to_tensor_desc d = {.m = {1, 0, 0, 0, 1, 0},
                                         .rotation = (ks_rotation)r,
                                         .mirror = mirror,
                                         .interp = KS_INTERP_NEAREST};
            assert_int_equal(ks_image_to_tensor(&frame, &d, &t), KS_STATUS_OK);
            ks_packet *copy = NULL, *view = NULL;
            assert_int_equal(ks_packet_create_image(NULL,
                                                    &(ks_packet_image){.format = KS_PIXEL_RGB8,
                                                                       .width_px = uw,
                                                                       .height_px = uh,
                                                                       .data = upright},
                                                    &copy),
                             KS_STATUS_OK);
            assert_int_equal(
                ks_packet_create_image_view(NULL, &frame, (ks_rotation)r, mirror, &view),
                KS_STATUS_OK);
            run_crop(copy, a, sizeof(a) / sizeof(a[0]));
            run_crop(view, b, sizeof(b) / sizeof(b[0]));
            float worst = 0.0f;
            for (size_t k = 0; k < sizeof(a) / sizeof(a[0]); k++) {
                float e = a[k] > b[k] ? a[k] - b[k] : b[k] - a[k];
                if (e > worst) worst = e;
            }
            /* Measured: 0 for rotation 0, at most 2.4e-6 otherwise (the orientation folded into
             * the affine rounds the sample points differently by ~1e-6 px). */
            if (worst > 1e-5f)
                fail_msg("rotation %d mirror %d: %g apart", r, (int)mirror, (double)worst);
            if (r == 0 && mirror == 0) assert_memory_equal(a, b, sizeof(a));
            ks_packet_release(copy);
            ks_packet_release(view);
        }
    }
}

static void test_previous_refuses_views(void **state) {
    (void)state;
    fill();
    static const char graph[] =
        "{\"inputs\":[{\"name\":\"image\",\"type\":\"image\"}],\"outputs\":[\"last\"],"
        "\"nodes\":[{\"type\":\"previous\",\"name\":\"keep\",\"inputs\":[\"image\"],"
        "\"outputs\":[\"last\"]}]}";
    ks_pipeline *p = NULL;
    assert_int_equal(ks_pipeline_create_json(graph, strlen(graph), NULL, &p), KS_STATUS_OK);
    ks_image frame = {
        .format = KS_PIXEL_FORMAT_RGB, .width_px = W, .height_px = H, .planes = {g_rgb}};
    ks_packet *view = NULL, *outs[1] = {NULL};
    assert_int_equal(ks_packet_create_image_view(NULL, &frame, KS_ROTATION_0, 0, &view),
                     KS_STATUS_OK);
    const ks_packet *ins[1] = {view};
    assert_int_equal(ks_pipeline_process(p, ins, 1, outs), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(p), "camera frame view"));
    assert_null(outs[0]);
    /* Nothing but the caller holds the view after the failed frame. */
    assert_int_equal(ks_packet_refcount(view), 1);
    ks_packet_release(view);
    ks_pipeline_destroy(p);
}

/* ---- model inputs written in place ---- */

#define DETECTOR_KSM KS_BINARY_DIR "/../bundles/ksm/face_detection_short_range.ksm"

typedef struct size_log {
    size_t largest;
} size_log;

static void *log_alloc(void *user, size_t size, size_t align) {
    size_log *l = user;
    if (size > l->largest) l->largest = size;
    void *p = NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    return posix_memalign(&p, align, size ? size : 1) ? NULL : p;
}

static void log_free(void *user, void *p) {
    (void)user;
    free(p);
}

/* image_to_tensor -> infer: the tensor goes straight into the session's input when infer is its
 * only reader, and through a packet when it is also a graph output; the model's outputs are the
 * same bit for bit, and only the second graph allocates the 128x128x3 f32 tensor. */
static void test_in_place_model_input(void **state) {
    (void)state;
    FILE *f = fopen(DETECTOR_KSM, "rb");
    if (!f) {
        printf("[ view ] %s not built: skipped\n", DETECTOR_KSM);
        skip();
    }
    fclose(f);
    fill();
    static const char head[] =
        "{\"inputs\":[{\"name\":\"image\",\"type\":\"image\"}],\"outputs\":[\"boxes\","
        "\"scores\"%s],\"nodes\":[{\"type\":\"image_to_tensor\",\"name\":\"pre\","
        "\"inputs\":[\"image\"],\"outputs\":[\"t\"],\"options\":{\"width\":128,"
        "\"height\":128,\"range\":[-1,1],\"keep_aspect\":true}},{\"type\":\"infer\","
        "\"name\":\"det\",\"inputs\":[\"t\"],\"outputs\":[\"boxes\",\"scores\"],"
        "\"options\":{\"model\":\"" DETECTOR_KSM "\"}}]}";
    char json[2][2048];
    snprintf(json[0], sizeof(json[0]), head, "");
    snprintf(json[1], sizeof(json[1]), head, ",\"t\"");
    ks_image frame = {.format = KS_PIXEL_FORMAT_NV21,
                      .width_px = W,
                      .height_px = H,
                      .planes = {g_nv21, g_nv21 + W * H}};
    float *out[2][2] = {{NULL, NULL}, {NULL, NULL}};
    size_t bytes[2] = {0, 0};
    size_t largest[2] = {0, 0};
    for (int g = 0; g < 2; g++) {
        size_log log = {0};
        ks_allocator a = {log_alloc, log_free, &log};
        ks_pipeline *p = NULL;
        assert_int_equal(ks_pipeline_create_json(json[g], strlen(json[g]),
                                                 &(ks_pipeline_desc){.allocator = &a}, &p),
                         KS_STATUS_OK);
        log.largest = 0; /* count the frame only (the session was planned at create) */
        ks_packet *view = NULL, *outs[3] = {NULL, NULL, NULL};
        assert_int_equal(ks_packet_create_image_view(ks_pipeline_packet_allocator(p), &frame,
                                                     KS_ROTATION_90, 1, &view),
                         KS_STATUS_OK);
        const ks_packet *ins[1] = {view};
        assert_int_equal(ks_pipeline_process(p, ins, 1, outs), KS_STATUS_OK);
        largest[g] = log.largest;
        for (int k = 0; k < 2; k++) {
            const ks_tensor *t = ks_packet_tensor(outs[k]);
            assert_non_null(t);
            bytes[k] = t->size_bytes;
            out[g][k] = malloc(t->size_bytes);
            assert_non_null(out[g][k]);
            memcpy(out[g][k], t->data, t->size_bytes);
        }
        for (int k = 0; k < 3; k++)
            ks_packet_release(outs[k]);
        ks_packet_release(view);
        ks_pipeline_destroy(p);
    }
    for (int k = 0; k < 2; k++) {
        assert_memory_equal(out[0][k], out[1][k], bytes[k]);
        free(out[0][k]);
        free(out[1][k]);
    }
    const size_t tensor_bytes = 128 * 128 * 3 * sizeof(float);
    assert_true(largest[0] < tensor_bytes); /* written into the session: no tensor packet */
    assert_true(largest[1] >= tensor_bytes);
}

/* ks_pipeline_node_subgraph reaches a foreach's graph; other nodes have none. */
static void test_node_subgraph(void **state) {
    (void)state;
    static const char graph[] =
        "{\"inputs\":[{\"name\":\"rects\",\"type\":\"rects\"},{\"name\":\"image\","
        "\"type\":\"image\"}],\"outputs\":[\"crops\"],\"nodes\":["
        "{\"type\":\"split\",\"name\":\"split\",\"inputs\":[\"rects\"],\"outputs\":"
        "[\"one\"]},{\"type\":\"foreach\",\"name\":\"each\",\"inputs\":[\"one\","
        "\"image\"],\"outputs\":[\"crops\"],\"options\":{\"graph\":{\"inputs\":"
        "[\"roi\",\"image\"],\"outputs\":[\"t\"],\"nodes\":[{\"type\":"
        "\"image_to_tensor\",\"name\":\"crop\",\"inputs\":[\"image\",\"roi\"],"
        "\"outputs\":[\"t\"],\"options\":{\"width\":8,\"height\":8}}]}}}]}";
    ks_pipeline *p = NULL;
    assert_int_equal(ks_pipeline_create_json(graph, strlen(graph), NULL, &p), KS_STATUS_OK);
    int found = 0;
    for (uint32_t i = 0; i < ks_pipeline_num_nodes(p); i++) {
        ks_node_stats st;
        assert_int_equal(ks_pipeline_node_stats(p, i, &st), KS_STATUS_OK);
        const ks_pipeline *sub = ks_pipeline_node_subgraph(p, i);
        if (strcmp(st.type_name, "foreach") != 0) {
            assert_null(sub);
            continue;
        }
        assert_non_null(sub);
        assert_int_equal(ks_pipeline_num_nodes(sub), 1);
        assert_int_equal(ks_pipeline_node_stats(sub, 0, &st), KS_STATUS_OK);
        assert_string_equal(st.node_name, "crop");
        found++;
    }
    assert_int_equal(found, 1);
    assert_null(ks_pipeline_node_subgraph(p, 99));
    assert_null(ks_pipeline_node_subgraph(NULL, 0));
    assert_null(ks_pipeline_packet_allocator(NULL));
    /* A packet from the pipeline's pool outlives the pipeline. */
    ks_packet *keep = NULL;
    assert_int_equal(ks_packet_create_int(ks_pipeline_packet_allocator(p), 5, &keep), KS_STATUS_OK);
    ks_pipeline_destroy(p);
    assert_int_equal(ks_packet_int(keep), 5);
    ks_packet_release(keep);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_geometry),
        cmocka_unit_test(test_view_bad_frames),
        cmocka_unit_test(test_view_matches_upright_copy),
        cmocka_unit_test(test_previous_refuses_views),
        cmocka_unit_test(test_in_place_model_input),
        cmocka_unit_test(test_node_subgraph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
