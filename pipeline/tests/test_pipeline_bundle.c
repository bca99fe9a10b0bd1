/* Bundles and model nodes: .ksb round trip, hostile bundles (truncated, bit-flipped, crafted
 * fields), image_to_tensor geometry, the whole-image fits of the image -> tensor implementation
 * (image_tensor.h, which the task library's model_input node configures), and an end-to-end graph
 * image_to_tensor -> infer on the real BlazeFace model, loaded zero-copy from a bundle and
 * compared with a direct session run, and the same graph over an encrypted (ks-protect) copy of
 * the model (ks_pipeline_desc.key / key_provider). Without the BlazeFace .tflite the model tests
 * are skipped and the program exits with 77. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "convert.h"
#include "image_tensor.h"
#include "kestrel/bundle.h"
#include "kestrel/pipeline.h"
#include "ksm.h"
#include "ksm_crypt.h"

static const char *const k_model_paths[] = {
    KS_SOURCE_DIR "/models/face_detection/face_detection_short_range.tflite",
    KS_SHARED_DATA "/face_detection/face_detection_short_range.tflite",
};

static uint8_t *g_ksm;
static size_t g_ksm_bytes;
static int g_skipped;

static uint8_t *read_file(const char *path, size_t *size_out) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) {
            buf = malloc((size_t)n + 1);
            if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            }
            *size_out = (size_t)n;
        }
    }
    fclose(f);
    return buf;
}

/* Converts BlazeFace with the converter library, once. */
static int load_blazeface(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof(k_model_paths) / sizeof(k_model_paths[0]) && !g_ksm; i++) {
        size_t n = 0;
        uint8_t *src = read_file(k_model_paths[i], &n);
        if (!src) continue;
        char err[512];
        ks__graph g;
        ks__graph_init(&g, NULL);
        ks_status st =
            ks__import_any(src, n, "face_detection_short_range.tflite", &g, err, sizeof(err));
        if (!st) st = ks__graph_optimize(&g, err, sizeof(err));
        if (!st) st = ks__ksm_write(&g, &g_ksm, &g_ksm_bytes, err, sizeof(err));
        if (st) fprintf(stderr, "conversion failed: %s\n", err);
        ks__graph_free(&g);
        free(src);
    }
    return 0;
}

static int free_blazeface(void **state) {
    (void)state;
    ks__free(NULL, g_ksm);
    return 0;
}

#define NEED_MODEL()                                                                               \
    do {                                                                                           \
        if (!g_ksm) {                                                                              \
            g_skipped = 1;                                                                         \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* ---- bundle format ---- */

static void make_bundle(void **data, size_t *size, int with_model) {
    ks_bundle_writer *w = NULL;
    assert_int_equal(ks_bundle_writer_create(NULL, &w), KS_STATUS_OK);
    const char *graph = "{\"nodes\":[]}";
    assert_int_equal(ks_bundle_writer_add(w, "graph", KS_BUNDLE_GRAPH, graph, strlen(graph)), 0);
    assert_int_equal(ks_bundle_writer_add(w, "labels", KS_BUNDLE_LABELS, "face\n", 5), 0);
    assert_int_equal(ks_bundle_writer_add(w, "empty", KS_BUNDLE_FILE, NULL, 0), 0);
    if (with_model)
        assert_int_equal(ks_bundle_writer_add(w, "detector", KS_BUNDLE_MODEL, g_ksm, g_ksm_bytes),
                         0);
    assert_int_equal(ks_bundle_writer_add(w, "labels", KS_BUNDLE_LABELS, "x", 1),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(w), "added twice"));
    assert_int_equal(ks_bundle_writer_finish(w, data, size), KS_STATUS_OK);
    ks_bundle_writer_destroy(w);
}

static void test_round_trip(void **state) {
    (void)state;
    void *data = NULL;
    size_t n = 0;
    make_bundle(&data, &n, 0);
    ks_bundle *b = NULL;
    assert_int_equal(ks_bundle_open_buffer(data, n, NULL, &b), KS_STATUS_OK);
    assert_int_equal(ks_bundle_num_entries(b), 3);
    ks_bundle_entry e;
    assert_int_equal(ks_bundle_find(b, "labels", &e), KS_STATUS_OK);
    assert_int_equal(e.kind, KS_BUNDLE_LABELS);
    assert_int_equal(e.size_bytes, 5);
    assert_memory_equal(e.data, "face\n", 5);
    assert_int_equal((uintptr_t)e.data % 64, 0);
    assert_int_equal(ks_bundle_get_entry(b, 2, &e), KS_STATUS_OK);
    assert_string_equal(e.name, "empty");
    assert_int_equal(e.size_bytes, 0);
    assert_int_equal(ks_bundle_find(b, "nope", &e), KS_STATUS_INVALID_ARGUMENT);
    assert_string_equal(ks_bundle_kind_string(KS_BUNDLE_CONFIG), "config");
    ks_pipeline *p = NULL;
    assert_int_equal(ks_pipeline_create_bundle(b, NULL, &p), KS_STATUS_OK);
    ks_pipeline_destroy(p);
    assert_int_equal(ks_pipeline_create_bundle(b, &(ks_pipeline_desc){.graph_entry = "labels"}, &p),
                     KS_STATUS_INVALID_MODEL);
    ks_bundle_destroy(b);

    /* the file path through the writer and the mapped reader */
    char path[512];
    snprintf(path, sizeof(path), "%s/test_round_trip.ksb", KS_BINARY_DIR);
    ks_bundle_writer *w = NULL;
    assert_int_equal(ks_bundle_writer_create(NULL, &w), 0);
    assert_int_equal(ks_bundle_writer_add(w, "graph", KS_BUNDLE_GRAPH, "{\"nodes\":[]}", 12), 0);
    assert_int_equal(ks_bundle_writer_write_file(w, path), KS_STATUS_OK);
    ks_bundle_writer_destroy(w);
    assert_int_equal(ks_bundle_open_file(path, NULL, &b), KS_STATUS_OK);
    assert_int_equal(ks_bundle_num_entries(b), 1);
    ks_bundle_destroy(b);
    assert_int_equal(ks_bundle_open_file(path, &(ks_bundle_desc){.flags = KS_BUNDLE_NO_MMAP}, &b),
                     KS_STATUS_OK);
    ks_bundle_destroy(b);
    remove(path);
    assert_int_equal(ks_bundle_open_file(path, NULL, &b), KS_STATUS_IO_ERROR);
    ks_bundle_buffer_free(NULL, data);
}

static void wr32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void wr64(uint8_t *p, uint64_t v) {
    wr32(p, (uint32_t)v);
    wr32(p + 4, (uint32_t)(v >> 32));
}

static ks_status open_copy(const uint8_t *src, size_t n, uint32_t flags) {
    /* an exact-size heap copy so ASan sees any read past the end */
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, src, n);
    ks_bundle *b = NULL;
    ks_status st = ks_bundle_open_buffer(
        copy, n, &(ks_bundle_desc){.flags = flags | KS_BUNDLE_COPY_BUFFER}, &b);
    if (!st) {
        /* whatever opened must be internally consistent */
        for (uint32_t i = 0; i < ks_bundle_num_entries(b); i++) {
            ks_bundle_entry e;
            assert_int_equal(ks_bundle_get_entry(b, i, &e), 0);
            if (e.size_bytes) assert_true(((const uint8_t *)e.data)[e.size_bytes - 1] <= 255);
        }
        ks_pipeline *p = NULL;
        if (ks_pipeline_create_bundle(b, NULL, &p) == KS_STATUS_OK) ks_pipeline_destroy(p);
    }
    ks_bundle_destroy(b);
    free(copy);
    return st;
}

static void test_hostile(void **state) {
    (void)state;
    void *data = NULL;
    size_t n = 0;
    make_bundle(&data, &n, 0);
    uint8_t *d = data;
    /* every truncation fails cleanly */
    for (size_t len = 0; len < n; len++)
        assert_int_not_equal(open_copy(d, len, 0), KS_STATUS_OK);
    /* every single bit flip is caught (by the CRC or a field check) */
    for (size_t byte = 0; byte < n; byte++)
        for (int bit = 0; bit < 8; bit += 3) {
            d[byte] ^= (uint8_t)(1u << bit);
            assert_int_not_equal(open_copy(d, n, 0), KS_STATUS_OK);
            /* without the CRC the field checks alone must still keep the reader safe */
            (void)open_copy(d, n, KS_BUNDLE_SKIP_CHECKSUM);
            d[byte] ^= (uint8_t)(1u << bit);
        }
    assert_int_equal(open_copy(d, n, 0), KS_STATUS_OK);

    /* crafted fields, checksum skipped so the field checks answer */
    uint8_t *c = malloc(n);
    memcpy(c, d, n);
    c[4] = 2; /* major 2 */
    assert_int_equal(open_copy(c, n, KS_BUNDLE_SKIP_CHECKSUM), KS_STATUS_VERSION_MISMATCH);
    assert_non_null(strstr(ks_last_error(NULL), "needs a newer Kestrel"));
    memcpy(c, d, n);
    wr32(c + 24, 100000); /* entry count */
    assert_int_equal(open_copy(c, n, KS_BUNDLE_SKIP_CHECKSUM), KS_STATUS_LIMIT_EXCEEDED);
    memcpy(c, d, n);
    wr64(c + 64 + 8, (uint64_t)n + 64); /* first entry's offset past the end */
    assert_int_equal(open_copy(c, n, KS_BUNDLE_SKIP_CHECKSUM), KS_STATUS_INVALID_MODEL);
    assert_non_null(strstr(ks_last_error(NULL), "entry 'graph'"));
    memcpy(c, d, n);
    wr64(c + 64 + 16, UINT64_MAX - 8); /* first entry's size wraps */
    assert_int_equal(open_copy(c, n, KS_BUNDLE_SKIP_CHECKSUM), KS_STATUS_INVALID_MODEL);
    memcpy(c, d, n);
    memcpy(c + 64 + 128 + 32, "graph", 6); /* duplicate name */
    assert_int_equal(open_copy(c, n, KS_BUNDLE_SKIP_CHECKSUM), KS_STATUS_INVALID_MODEL);
    assert_non_null(strstr(ks_last_error(NULL), "appears twice"));
    memcpy(c, d, n);
    memset(c + 64 + 32, 'a', 96); /* name without NUL */
    assert_int_equal(open_copy(c, n, KS_BUNDLE_SKIP_CHECKSUM), KS_STATUS_INVALID_MODEL);
    memcpy(c, d, n);
    c[100] ^= 1; /* a byte of the entry table: CRC mismatch names the file CRC */
    assert_int_equal(open_copy(c, n, 0), KS_STATUS_CHECKSUM_MISMATCH);
    free(c);
    ks_bundle_buffer_free(NULL, data);
}

/* ---- image_to_tensor ---- */

static void test_image_to_tensor(void **state) {
    (void)state;
    const char *json = "{\"inputs\":[\"image\",\"roi\"],\"outputs\":[\"t\",\"m\"],\"nodes\":["
                       "{\"type\":\"image_to_tensor\",\"name\":\"pre\",\"inputs\":[\"image\","
                       "\"roi\"],\"outputs\":[\"t\",\"m\"],\"options\":{\"width\":4,"
                       "\"height\":2,\"range\":[-1,1]}}]}";
    ks_pipeline *p = NULL;
    assert_int_equal(ks_pipeline_create_json(json, strlen(json), NULL, &p), KS_STATUS_OK);
    /* 8x4 RGB image whose red channel is the x coordinate * 10, green constant 255 */
    uint8_t px[4][8][3];
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 8; x++) {
            px[y][x][0] = (uint8_t)(x * 10);
            px[y][x][1] = 255;
            px[y][x][2] = (uint8_t)(y * 10);
        }
    ks_packet *img = NULL;
    assert_int_equal(ks_packet_create_image(NULL,
                                            &(ks_packet_image){.format = KS_PIXEL_RGB8,
                                                               .width_px = 8,
                                                               .height_px = 4,
                                                               .data = &px[0][0][0]},
                                            &img),
                     0);
    const ks_packet *ins[2] = {img, NULL};
    ks_packet *outs[2] = {0};
    /* whole image, 2x downscale: sample centers fall between source pixels 2k and 2k+1 */
    assert_int_equal(ks_pipeline_process(p, ins, 1, outs), KS_STATUS_OK);
    const ks_tensor *t = ks_packet_tensor(outs[0]);
    assert_non_null(t);
    assert_int_equal(t->info.shape.rank, 4);
    assert_int_equal(t->info.shape.dims[1], 2);
    assert_int_equal(t->info.shape.dims[2], 4);
    const float *v = t->data;
    for (int x = 0; x < 4; x++) {
        float want = -1.0f + 2.0f * ((float)(2 * x) + 0.5f) * 10.0f / 255.0f;
        assert_float_equal(v[x * 3 + 0], want, 1e-5);
        assert_float_equal(v[x * 3 + 1], 1.0f, 1e-6);
    }
    const float *m = ks_packet_matrix(outs[1]);
    assert_non_null(m);
    assert_float_equal(m[0], 1.0f, 1e-6); /* identity for the whole image */
    assert_float_equal(m[3], 0.0f, 1e-6);
    assert_float_equal(m[5], 1.0f, 1e-6);
    ks_packet_release(outs[0]);
    ks_packet_release(outs[1]);

    /* a ROI rotated by 90 degrees: tensor x runs along image y */
    ks_rect r = {0.5f, 0.5f, 0.5f, 1.0f, 1.5707963f};
    ks_packet *roi = NULL;
    assert_int_equal(ks_packet_create_rects(NULL, &(ks_packet_rects){1, &r}, &roi), 0);
    ins[1] = roi;
    assert_int_equal(ks_pipeline_process(p, ins, 2, outs), KS_STATUS_OK);
    v = ks_packet_tensor(outs[0])->data;
    /* along a tensor row, blue (image y) changes and red (image x) stays put */
    assert_true(fabsf(v[0 * 3 + 0] - v[3 * 3 + 0]) < 1e-4f);
    assert_true(v[3 * 3 + 2] > v[0 * 3 + 2] + 0.05f);
    m = ks_packet_matrix(outs[1]);
    /* tensor center (0.5, 0.5) maps to the ROI center */
    assert_float_equal(m[0] * 0.5f + m[1] * 0.5f + m[3], 0.5f, 1e-5);
    assert_float_equal(m[4] * 0.5f + m[5] * 0.5f + m[7], 0.5f, 1e-5);
    ks_packet_release(outs[0]);
    ks_packet_release(outs[1]);
    ks_packet_release(roi);
    ks_packet_release(img);
    ks_pipeline_destroy(p);

    const char *bad = "{\"inputs\":[\"i\"],\"nodes\":[{\"type\":\"image_to_tensor\",\"name\":"
                      "\"pre\",\"inputs\":[\"i\"],\"outputs\":[\"t\"],\"options\":{\"width\":0,"
                      "\"height\":2}}]}";
    assert_int_equal(ks_pipeline_create_json(bad, strlen(bad), NULL, &p),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "node 'pre'"));
}

/* ---- the whole-image fits of image_tensor.h ---- */

/* A node type over the shared implementation whose desc is the test's (as model_input's is the
 * bundle config's): option "fit" picks one of k_fit_descs. */
static const ks__image_tensor_desc k_fit_descs[] = {
    /* 8x4 image -> 4x4: scale 1/2, the image fills rows 1..2, pad 9 above and below */
    {.width_px = 4,
     .height_px = 4,
     .dtype = KS_DTYPE_U8,
     .layout = KS_TENSOR_LAYOUT_NHWC,
     .scale = {1, 1, 1},
     .fit = KS__FIT_LETTERBOX,
     .border = KS_BORDER_CONSTANT,
     .border_value = 9},
    /* the same at the top: rows 0..1, pad in rows 2..3 */
    {.width_px = 4,
     .height_px = 4,
     .dtype = KS_DTYPE_U8,
     .layout = KS_TENSOR_LAYOUT_NHWC,
     .scale = {1, 1, 1},
     .fit = KS__FIT_LETTERBOX_TOP_LEFT,
     .border = KS_BORDER_CONSTANT,
     .border_value = 9},
    /* the centred half (x 2..5, y 1..2) at scale 1, BGR planes, (pixel - 10) / 2 */
    {.width_px = 4,
     .height_px = 2,
     .dtype = KS_DTYPE_F32,
     .layout = KS_TENSOR_LAYOUT_NCHW,
     .channel_order = KS_CHANNEL_ORDER_BGR,
     .mean = {10, 10, 10},
     .scale = {0.5f, 0.5f, 0.5f},
     .fit = KS__FIT_CENTER_CROP,
     .crop_fraction = 0.5f,
     .border = KS_BORDER_REPLICATE},
};

static ks_status fit_probe_create(const ks_node_init *init, void **state_out) {
    int64_t fit = 0;
    ks_status st = ks_node_options_int(init->options, "fit", 0, &fit);
    if (st) return st;
    return ks__image_tensor_create(init->allocator, &k_fit_descs[fit], state_out);
}

static const ks_port k_probe_in[] = {{"image", KS_PACKET_IMAGE, KS_PACKET_ANY, 0, -1}};
static const ks_port k_probe_out[] = {
    {"tensor", KS_PACKET_TENSOR, KS_PACKET_ANY, 0, -1},
    {"matrix", KS_PACKET_MATRIX, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1}};
static const ks_node_type k_fit_probe = {.name = "test_fit_probe",
                                         .num_inputs = 1,
                                         .num_outputs = 2,
                                         .inputs = k_probe_in,
                                         .outputs = k_probe_out,
                                         .create = fit_probe_create,
                                         .process = ks__image_tensor_process,
                                         .destroy = ks__image_tensor_destroy};

/* Runs fit `fit` on the 8x4 image of test_image_to_tensor; outs[0] tensor, outs[1] matrix. */
static void run_fit(int fit, const ks_packet *img, ks_packet **outs) {
    char json[512];
    snprintf(json, sizeof(json),
             "{\"inputs\":[\"image\"],\"outputs\":[\"t\",\"m\"],\"nodes\":[{\"type\":"
             "\"test_fit_probe\",\"inputs\":[\"image\"],\"outputs\":[\"t\",\"m\"],"
             "\"options\":{\"fit\":%d}}]}",
             fit);
    ks_pipeline *p = NULL;
    assert_int_equal(ks_pipeline_create_json(json, strlen(json), NULL, &p), KS_STATUS_OK);
    const ks_packet *ins[1] = {img};
    assert_int_equal(ks_pipeline_process(p, ins, 1, outs), KS_STATUS_OK);
    ks_pipeline_destroy(p); /* the packets outlive it */
}

static void test_image_tensor_fits(void **state) {
    (void)state;
    static int registered;
    if (!registered) assert_int_equal(ks_node_type_register(&k_fit_probe), KS_STATUS_OK);
    registered = 1;
    uint8_t px[4][8][3]; /* R = 10 x, G = 200, B = 10 y */
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 8; x++) {
            px[y][x][0] = (uint8_t)(x * 10);
            px[y][x][1] = 200;
            px[y][x][2] = (uint8_t)(y * 10);
        }
    ks_packet *img = NULL;
    assert_int_equal(ks_packet_create_image(NULL,
                                            &(ks_packet_image){.format = KS_PIXEL_RGB8,
                                                               .width_px = 8,
                                                               .height_px = 4,
                                                               .data = &px[0][0][0]},
                                            &img),
                     0);
    for (int fit = 0; fit < 2; fit++) {
        ks_packet *outs[2] = {0};
        run_fit(fit, img, outs);
        const ks_tensor *t = ks_packet_tensor(outs[0]);
        assert_int_equal(t->info.dtype, KS_DTYPE_U8);
        const uint8_t *v = t->data;
        int first = fit == 0 ? 1 : 0; /* the image's first tensor row */
        for (int y = 0; y < 4; y++) {
            bool pad = y < first || y > first + 1;
            for (int x = 0; x < 4; x++) {
                const uint8_t *c = &v[(y * 4 + x) * 3];
                if (pad) {
                    assert_int_equal(c[0], 9);
                    assert_int_equal(c[1], 9);
                } else {
                    assert_int_equal(c[1], 200);
                    assert_int_equal(c[0], x * 20 + 5); /* between pixels 2x and 2x + 1 */
                }
            }
        }
        /* tensor-normalized -> image-normalized: the image's rows span tensor y first/4 to
         * (first + 2)/4 */
        const float *m = ks_packet_matrix(outs[1]);
        assert_float_equal(m[0], 1.0f, 1e-6);
        assert_float_equal(m[3], 0.0f, 1e-6);
        assert_float_equal(m[5], 2.0f, 1e-6);
        assert_float_equal(m[5] * 0.25f * (float)first + m[7], 0.0f, 1e-6);
        ks_packet_release(outs[0]);
        ks_packet_release(outs[1]);
    }
    ks_packet *outs[2] = {0};
    run_fit(2, img, outs);
    const ks_tensor *t = ks_packet_tensor(outs[0]);
    assert_int_equal(t->info.shape.dims[1], 3); /* NCHW */
    const float *v = t->data;
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 4; x++) {
            /* plane 0 is blue, 2 red; the crop starts at image pixel (2, 1) */
            assert_float_equal(v[0 * 8 + y * 4 + x], ((y + 1) * 10 - 10) * 0.5f, 1e-5);
            assert_float_equal(v[1 * 8 + y * 4 + x], (200 - 10) * 0.5f, 1e-5);
            assert_float_equal(v[2 * 8 + y * 4 + x], ((x + 2) * 10 - 10) * 0.5f, 1e-5);
        }
    const float *m = ks_packet_matrix(outs[1]);
    assert_float_equal(m[0], 0.5f, 1e-6); /* half the width, from x = 1/4 */
    assert_float_equal(m[3], 0.25f, 1e-6);
    assert_float_equal(m[5], 0.5f, 1e-6);
    assert_float_equal(m[7], 0.25f, 1e-6);
    ks_packet_release(outs[0]);
    ks_packet_release(outs[1]);
    ks_packet_release(img);
}

/* ---- end to end on BlazeFace ---- */

static const char *k_face_graph =
    "{\"name\":\"face_detect\",\"inputs\":[{\"name\":\"image\",\"type\":\"image\"}],"
    "\"outputs\":[\"input_tensor\",\"boxes\",\"scores\"],"
    "\"side_params\":{\"detector\":\"detector\"},"
    "\"nodes\":["
    "{\"type\":\"image_to_tensor\",\"name\":\"preprocess\",\"inputs\":[\"image\"],"
    "\"outputs\":[\"input_tensor\",\"matrix\"],"
    "\"options\":{\"width\":128,\"height\":128,\"range\":[-1,1],\"keep_aspect\":true,"
    "\"border_zero\":true}},"
    "{\"type\":\"infer\",\"name\":\"detect\",\"inputs\":[\"input_tensor\"],"
    "\"outputs\":[\"boxes\",\"scores\"],\"options\":{\"model\":\"$detector\"}}]}";

static void test_blazeface_end_to_end(void **state) {
    (void)state;
    NEED_MODEL();
    ks_bundle_writer *w = NULL;
    assert_int_equal(ks_bundle_writer_create(NULL, &w), 0);
    assert_int_equal(
        ks_bundle_writer_add(w, "graph", KS_BUNDLE_GRAPH, k_face_graph, strlen(k_face_graph)), 0);
    assert_int_equal(ks_bundle_writer_add(w, "detector", KS_BUNDLE_MODEL, g_ksm, g_ksm_bytes), 0);
    void *data = NULL;
    size_t n = 0;
    assert_int_equal(ks_bundle_writer_finish(w, &data, &n), 0);
    ks_bundle_writer_destroy(w);
    ks_bundle *b = NULL;
    assert_int_equal(ks_bundle_open_buffer(data, n, NULL, &b), KS_STATUS_OK);
    ks_pipeline *p = NULL;
    ks_status st = ks_pipeline_create_bundle(b, NULL, &p);
    if (st) fail_msg("%s", ks_last_error(NULL));

    /* a synthetic 200x120 RGBA frame */
    enum { W = 200, H = 120 };
    uint8_t *px = malloc(W * H * 4);
    for (int i = 0; i < W * H * 4; i++)
        px[i] = (uint8_t)((i * 7) ^ (i >> 5));
    ks_packet *img = NULL;
    assert_int_equal(
        ks_packet_create_image(
            NULL,
            &(ks_packet_image){.format = KS_PIXEL_RGBA8, .width_px = W, .height_px = H, .data = px},
            &img),
        0);
    const ks_packet *ins[1] = {img};
    ks_packet *outs[3] = {0};
    for (int frame = 0; frame < 2; frame++) {
        st = ks_pipeline_process(p, ins, 1000 * (frame + 1), outs);
        if (st) fail_msg("%s", ks_last_error(p));
        const ks_tensor *boxes = ks_packet_tensor(outs[1]);
        const ks_tensor *scores = ks_packet_tensor(outs[2]);
        assert_non_null(boxes);
        assert_non_null(scores);
        assert_int_equal(boxes->info.shape.dims[1], 896);
        assert_int_equal(boxes->info.shape.dims[2], 16);
        assert_int_equal(scores->info.shape.dims[1], 896);
        assert_int_equal(ks_packet_timestamp_us(outs[1]), 1000 * (frame + 1));

        /* the same tensor through a plain session gives bit-identical outputs */
        ks_model *m = NULL;
        ks_session *s = NULL;
        assert_int_equal(ks_model_load_buffer(g_ksm, g_ksm_bytes, NULL, &m), 0);
        assert_int_equal(ks_session_create(m, NULL, &s), 0);
        assert_int_equal(ks_session_reshape(s, NULL), 0);
        ks_tensor in, o0, o1;
        assert_int_equal(ks_session_input(s, 0, &in), 0);
        const ks_tensor *pre = ks_packet_tensor(outs[0]);
        assert_int_equal(pre->size_bytes, in.size_bytes);
        memcpy(in.data, pre->data, in.size_bytes);
        assert_int_equal(ks_session_run(s), 0);
        assert_int_equal(ks_session_output(s, 0, &o0), 0);
        assert_int_equal(ks_session_output(s, 1, &o1), 0);
        assert_memory_equal(o0.data, boxes->data, boxes->size_bytes);
        assert_memory_equal(o1.data, scores->data, scores->size_bytes);
        ks_session_destroy(s);
        ks_model_destroy(m);
        for (int i = 0; i < 3; i++)
            ks_packet_release(outs[i]);
    }
    ks_node_stats ns;
    assert_int_equal(ks_pipeline_node_stats(p, 1, &ns), 0);
    assert_string_equal(ns.node_name, "detect");
    assert_int_equal(ns.num_calls, 2);
    assert_true(ns.total_us > 0);
    ks_pipeline_destroy(p);

    /* a side parameter naming a model that is not there */
    ks_side_param sp = {"detector", "no_such_model"};
    assert_int_equal(ks_pipeline_create_bundle(
                         b, &(ks_pipeline_desc){.side_params = &sp, .num_side_params = 1}, &p),
                     KS_STATUS_IO_ERROR);
    assert_non_null(strstr(ks_last_error(NULL), "node 'detect'"));
    assert_non_null(strstr(ks_last_error(NULL), "missing model 'no_such_model'"));
    /* wrong input size reaches the infer node: message names both shapes */
    const char *small = "{\"inputs\":[\"image\"],\"outputs\":[\"b\"],\"nodes\":["
                        "{\"type\":\"image_to_tensor\",\"inputs\":[\"image\"],\"outputs\":[\"t\"],"
                        "\"options\":{\"width\":64,\"height\":64}},"
                        "{\"type\":\"infer\",\"name\":\"detect\",\"inputs\":[\"t\"],"
                        "\"outputs\":[\"b\"],\"options\":{\"model\":\"detector\"}}]}";
    ks_bundle_writer_create(NULL, &w);
    ks_bundle_writer_add(w, "graph", KS_BUNDLE_GRAPH, small, strlen(small));
    ks_bundle_writer_add(w, "detector", KS_BUNDLE_MODEL, g_ksm, g_ksm_bytes);
    void *data2 = NULL;
    size_t n2 = 0;
    assert_int_equal(ks_bundle_writer_finish(w, &data2, &n2), 0);
    ks_bundle_writer_destroy(w);
    ks_bundle *b2 = NULL;
    assert_int_equal(ks_bundle_open_buffer(data2, n2, NULL, &b2), 0);
    assert_int_equal(ks_pipeline_create_bundle(b2, NULL, &p), 0);
    assert_int_equal(ks_pipeline_process(p, ins, 1, outs), KS_STATUS_INVALID_SHAPE);
    assert_non_null(strstr(ks_last_error(p), "node 'detect'"));
    assert_non_null(strstr(ks_last_error(p), "[1,64,64,3]"));
    assert_null(outs[0]);
    ks_pipeline_destroy(p);
    ks_bundle_destroy(b2);
    ks_bundle_buffer_free(NULL, data2);

    ks_packet_release(img);
    free(px);
    ks_bundle_destroy(b);
    ks_bundle_buffer_free(NULL, data);
}

/* ---- encrypted models (ks_pipeline_desc.key / key_provider) ---- */

typedef struct key_source {
    const uint8_t *key;
    size_t key_bytes; /* what the provider reports */
    ks_status refuse; /* non-zero: returned instead of a key */
    int calls;
    char last_name[256];
} key_source;

static ks_status test_key_provider(void *user, const char *model_name, uint8_t *key_out,
                                   size_t key_cap, size_t *key_bytes_out) {
    key_source *k = user;
    k->calls++;
    snprintf(k->last_name, sizeof(k->last_name), "%s", model_name);
    if (k->refuse) return k->refuse;
    assert_true(key_cap >= KS_PIPELINE_KEY_BYTES);
    memcpy(key_out, k->key, KS_PIPELINE_KEY_BYTES);
    *key_bytes_out = k->key_bytes;
    return KS_STATUS_OK;
}

/* A bundle of k_face_graph with `model` (size_bytes) as its "detector" entry. */
static ks_bundle *face_bundle(const uint8_t *model, size_t size_bytes, void **data_out) {
    ks_bundle_writer *w = NULL;
    assert_int_equal(ks_bundle_writer_create(NULL, &w), 0);
    assert_int_equal(
        ks_bundle_writer_add(w, "graph", KS_BUNDLE_GRAPH, k_face_graph, strlen(k_face_graph)), 0);
    assert_int_equal(ks_bundle_writer_add(w, "detector", KS_BUNDLE_MODEL, model, size_bytes), 0);
    size_t n = 0;
    assert_int_equal(ks_bundle_writer_finish(w, data_out, &n), 0);
    ks_bundle_writer_destroy(w);
    ks_bundle *b = NULL;
    assert_int_equal(ks_bundle_open_buffer(*data_out, n, NULL, &b), 0);
    return b;
}

/* Runs one frame of a face graph pipeline; copies of its boxes and scores (free both). */
static void run_face(ks_pipeline *p, const ks_packet *img, float **boxes, size_t *boxes_bytes,
                     float **scores, size_t *scores_bytes) {
    const ks_packet *ins[1] = {img};
    ks_packet *outs[3] = {0};
    ks_status st = ks_pipeline_process(p, ins, 1000, outs);
    if (st) fail_msg("%s", ks_last_error(p));
    const ks_tensor *b = ks_packet_tensor(outs[1]), *s = ks_packet_tensor(outs[2]);
    assert_non_null(b);
    assert_non_null(s);
    *boxes_bytes = b->size_bytes;
    *scores_bytes = s->size_bytes;
    *boxes = malloc(b->size_bytes);
    *scores = malloc(s->size_bytes);
    memcpy(*boxes, b->data, b->size_bytes);
    memcpy(*scores, s->data, s->size_bytes);
    for (int i = 0; i < 3; i++)
        ks_packet_release(outs[i]);
}

static void test_encrypted_model(void **state) {
    (void)state;
    NEED_MODEL();
    if (!ks__ksme_available()) {
        print_message("skipped: built without libsodium (KS_WITH_SODIUM=OFF)\n");
        g_skipped = 1;
        skip();
    }
    uint8_t key[KS_PIPELINE_KEY_BYTES], wrong[KS_PIPELINE_KEY_BYTES];
    memset(key, 0x5a, sizeof(key));
    memset(wrong, 0x33, sizeof(wrong));
    uint8_t *enc = NULL;
    size_t enc_bytes = 0;
    char err[256];
    /* 4 KiB chunks: several of them, so the engine's parallel decryption runs */
    assert_int_equal(ks__ksme_encrypt(g_ksm, g_ksm_bytes, key, sizeof(key), 4096, NULL, &enc,
                                      &enc_bytes, err, sizeof(err)),
                     0);
    void *plain_data = NULL, *enc_data = NULL;
    ks_bundle *plain = face_bundle(g_ksm, g_ksm_bytes, &plain_data);
    ks_bundle *encb = face_bundle(enc, enc_bytes, &enc_data);

    enum { W = 160, H = 120 };
    uint8_t *px = malloc(W * H * 3);
    for (int i = 0; i < W * H * 3; i++)
        px[i] = (uint8_t)((i * 13) ^ (i >> 4));
    ks_packet *img = NULL;
    assert_int_equal(
        ks_packet_create_image(
            NULL,
            &(ks_packet_image){.format = KS_PIXEL_RGB8, .width_px = W, .height_px = H, .data = px},
            &img),
        0);

    /* reference: the plain bundle, no key */
    ks_pipeline *p = NULL;
    assert_int_equal(ks_pipeline_create_bundle(plain, NULL, &p), 0);
    float *ref_boxes, *ref_scores;
    size_t ref_bb, ref_sb;
    run_face(p, img, &ref_boxes, &ref_bb, &ref_scores, &ref_sb);
    ks_pipeline_destroy(p);

    /* the encrypted bundle with the key, then with a key provider: the same outputs, bit for
     * bit; a plain bundle ignores a key */
    key_source ks = {.key = key, .key_bytes = KS_PIPELINE_KEY_BYTES};
    const ks_pipeline_desc with_key = {.key = key, .key_bytes = sizeof(key)};
    const ks_pipeline_desc with_provider = {.key_provider = test_key_provider, .key_user = &ks};
    for (int round = 0; round < 3; round++) {
        const ks_pipeline_desc *d = round == 1 ? &with_provider : &with_key;
        ks_status st = ks_pipeline_create_bundle(round == 2 ? plain : encb, d, &p);
        if (st) fail_msg("round %d: %s", round, ks_last_error(NULL));
        float *boxes, *scores;
        size_t bb, sb;
        run_face(p, img, &boxes, &bb, &scores, &sb);
        assert_int_equal(bb, ref_bb);
        assert_int_equal(sb, ref_sb);
        assert_memory_equal(boxes, ref_boxes, bb);
        assert_memory_equal(scores, ref_scores, sb);
        free(boxes);
        free(scores);
        ks_pipeline_destroy(p);
    }
    assert_int_equal(ks.calls, 1);
    assert_string_equal(ks.last_name, "detector");

    /* no key: INVALID_ARGUMENT naming the node and the model */
    p = (ks_pipeline *)&p; /* create must not write it on failure */
    ks_pipeline *const sentinel = p;
    assert_int_equal(ks_pipeline_create_bundle(encb, NULL, &p), KS_STATUS_INVALID_ARGUMENT);
    assert_ptr_equal(p, sentinel);
    assert_non_null(strstr(ks_last_error(NULL), "node 'detect'"));
    assert_non_null(strstr(ks_last_error(NULL),
                           "model 'detector' is encrypted (ks-protect) and needs its key: set "
                           "key/key_provider in ks_pipeline_desc"));
    /* a wrong key: TAMPERED */
    assert_int_equal(
        ks_pipeline_create_bundle(encb, &(ks_pipeline_desc){.key = wrong, .key_bytes = 32}, &p),
        KS_STATUS_TAMPERED);
    assert_non_null(strstr(ks_last_error(NULL), "the key does not open it"));
    assert_non_null(strstr(ks_last_error(NULL), "'detector'"));
    /* a key of another size */
    assert_int_equal(
        ks_pipeline_create_bundle(encb, &(ks_pipeline_desc){.key = key, .key_bytes = 16}, &p),
        KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "key_bytes is 16"));
    /* a provider that refuses, one that gives a wrong key, one that gives a short key */
    ks = (key_source){.key = key, .key_bytes = 32, .refuse = KS_STATUS_IO_ERROR};
    assert_int_equal(ks_pipeline_create_bundle(encb, &with_provider, &p), KS_STATUS_IO_ERROR);
    assert_non_null(strstr(ks_last_error(NULL), "key provider refused encrypted model 'detector'"));
    ks = (key_source){.key = wrong, .key_bytes = 32};
    assert_int_equal(ks_pipeline_create_bundle(encb, &with_provider, &p), KS_STATUS_TAMPERED);
    ks = (key_source){.key = key, .key_bytes = 31};
    assert_int_equal(ks_pipeline_create_bundle(encb, &with_provider, &p),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "gave 31 bytes"));
    assert_int_equal(ks.calls, 1);

    /* an encrypted .ksm file named by the graph (no bundle): the provider gets the name as the
     * graph writes it */
    char path[1024];
    snprintf(path, sizeof(path), "%s/test_encrypted_detector.ksm", KS_BINARY_DIR);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(enc, 1, enc_bytes, f), enc_bytes);
    assert_int_equal(fclose(f), 0);
    ks_side_param sp = {"detector", "test_encrypted_detector.ksm"};
    ks = (key_source){.key = key, .key_bytes = 32};
    ks_pipeline_desc fd = with_provider;
    fd.side_params = &sp;
    fd.num_side_params = 1;
    fd.model_dir = KS_BINARY_DIR;
    ks_status st = ks_pipeline_create_json(k_face_graph, strlen(k_face_graph), &fd, &p);
    if (st) fail_msg("%s", ks_last_error(NULL));
    assert_string_equal(ks.last_name, "test_encrypted_detector.ksm");
    float *boxes, *scores;
    size_t bb, sb;
    run_face(p, img, &boxes, &bb, &scores, &sb);
    assert_memory_equal(boxes, ref_boxes, ref_bb);
    assert_memory_equal(scores, ref_scores, ref_sb);
    free(boxes);
    free(scores);
    ks_pipeline_destroy(p);
    fd.key_provider = NULL;
    assert_int_equal(ks_pipeline_create_json(k_face_graph, strlen(k_face_graph), &fd, &p),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(
        strstr(ks_last_error(NULL), "model 'test_encrypted_detector.ksm' is encrypted"));
    fd.key = wrong;
    fd.key_bytes = sizeof(wrong);
    assert_int_equal(ks_pipeline_create_json(k_face_graph, strlen(k_face_graph), &fd, &p),
                     KS_STATUS_TAMPERED);
    assert_non_null(strstr(ks_last_error(NULL), "the key does not open it"));
    remove(path);

    free(ref_boxes);
    free(ref_scores);
    ks_packet_release(img);
    free(px);
    ks_bundle_destroy(encb);
    ks_bundle_destroy(plain);
    ks_bundle_buffer_free(NULL, enc_data);
    ks_bundle_buffer_free(NULL, plain_data);
    ks__free(NULL, enc);
}

static void test_model_bundle_hostile(void **state) {
    (void)state;
    NEED_MODEL();
    /* truncations and flips of a bundle with a real model, sampled (the model is ~200 KB) */
    void *data = NULL;
    size_t n = 0;
    make_bundle(&data, &n, 1);
    uint8_t *d = data;
    for (size_t len = 0; len < n; len += 997)
        assert_int_not_equal(open_copy(d, len, 0), KS_STATUS_OK);
    uint32_t seed = 12345;
    for (int i = 0; i < 200; i++) {
        seed = seed * 1103515245u + 12345u;
        size_t at = (seed >> 4) % n;
        d[at] ^= (uint8_t)(1u << (seed & 7));
        assert_int_not_equal(open_copy(d, n, 0), KS_STATUS_OK);
        d[at] ^= (uint8_t)(1u << (seed & 7));
    }
    ks_bundle_buffer_free(NULL, data);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),           cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_image_to_tensor),      cmocka_unit_test(test_image_tensor_fits),
        cmocka_unit_test(test_blazeface_end_to_end), cmocka_unit_test(test_model_bundle_hostile),
        cmocka_unit_test(test_encrypted_model),
    };
    int failed = cmocka_run_group_tests(tests, load_blazeface, free_blazeface);
    if (!failed && g_skipped) return 77;
    return failed;
}
