/* .ksm format and engine lifecycle: round trip, hostile files, version refusal, OOM injection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kestrel/engine.h"
#include "convert.h"
#include "fileio.h"
#include "ksm.h"

/* x[1,4] + c[4] -> relu -> reshape [2,2] -> y */
static void build_graph(ks__graph *g) {
    int64_t d14[2] = {1, 4}, d4[1] = {4}, d22[2] = {2, 2}, d2[1] = {2};
    int32_t x, c, s, r, y, shp;
    ks__graph_init(g, NULL);
    assert_int_equal(ks__graph_add_tensor(g, "x", KS_DTYPE_F32, 2, d14, &x), 0);
    assert_int_equal(ks__graph_add_tensor(g, "c", KS_DTYPE_F32, 1, d4, &c), 0);
    const float cv[4] = {1.0f, -2.0f, 3.0f, -4.0f};
    assert_int_equal(ks__graph_set_const(g, c, cv, sizeof(cv), true), 0);
    assert_int_equal(ks__graph_add_tensor(g, "sum", KS_DTYPE_F32, 2, d14, &s), 0);
    assert_int_equal(ks__graph_add_tensor(g, "relu", KS_DTYPE_F32, 2, d14, &r), 0);
    assert_int_equal(ks__graph_add_tensor(g, "shape", KS_DTYPE_I64, 1, d2, &shp), 0);
    const int64_t sv[2] = {2, 2};
    assert_int_equal(ks__graph_set_const(g, shp, sv, sizeof(sv), true), 0);
    assert_int_equal(ks__graph_add_tensor(g, "y:0", KS_DTYPE_F32, 2, d22, &y), 0);
    int32_t in_add[2] = {x, c}, in_reshape[2] = {r, shp};
    assert_int_equal(ks__graph_add_node(g, KS_OP_ADD, "add", 2, in_add, 1, &s, NULL), 0);
    assert_int_equal(ks__graph_add_node(g, KS_OP_RELU, "relu", 1, &s, 1, &r, NULL), 0);
    assert_int_equal(ks__graph_add_node(g, KS_OP_RESHAPE, "reshape", 2, in_reshape, 1, &y, NULL),
                     0);
    assert_int_equal(ks__graph_set_io(g, 1, &x, 1, &y), 0);
    assert_int_equal(ks__graph_set_meta(g, "producer", "test"), 0);
}

static uint8_t *make_image(size_t *n) {
    ks__graph g;
    build_graph(&g);
    uint8_t *buf = NULL;
    char err[256];
    assert_int_equal(ks__ksm_write(&g, &buf, n, err, sizeof(err)), 0);
    ks__graph_free(&g);
    return buf;
}

static void run_and_check(ks_model *m) {
    ks_session *s = NULL;
    assert_int_equal(ks_session_create(m, NULL, &s), KS_STATUS_OK);
    assert_int_equal(ks_session_run(s), KS_STATUS_INVALID_STATE); /* before reshape */
    assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
    ks_tensor in, out;
    assert_int_equal(ks_session_input(s, 0, &in), 0);
    assert_int_equal(in.size_bytes, 16);
    const float xv[4] = {0.5f, 0.5f, -5.0f, 10.0f};
    memcpy(in.data, xv, 16);
    assert_int_equal(ks_session_run(s), KS_STATUS_OK);
    assert_int_equal(ks_session_output(s, 0, &out), 0);
    assert_string_equal(out.info.name, "y:0");
    assert_int_equal(out.info.shape.rank, 2);
    assert_int_equal(out.info.shape.dims[0], 2);
    const float *y = out.data;
    assert_true(y[0] == 1.5f && y[1] == 0.0f && y[2] == 0.0f && y[3] == 6.0f);
    assert_int_equal(ks_session_output(s, 1, &out), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(s), "out of range"));
    ks_session_destroy(s);
}

static void test_round_trip(void **state) {
    (void)state;
    size_t n;
    uint8_t *img = make_image(&n);
    ks_model *m = NULL;
    assert_int_equal(ks_model_load_buffer(img, n, NULL, &m), KS_STATUS_OK);
    assert_int_equal(ks_model_num_inputs(m), 1);
    assert_int_equal(ks_model_num_outputs(m), 1);
    ks_tensor_info info;
    assert_int_equal(ks_model_input_info(m, 0, &info), 0);
    assert_string_equal(info.name, "x");
    assert_int_equal(info.dtype, KS_DTYPE_F32);
    assert_string_equal(ks_model_metadata(m, "producer"), "test");
    assert_null(ks_model_metadata(m, "nope"));
    run_and_check(m);
    ks_model_destroy(m);
    ks__free(NULL, img);
}

static void test_truncated_and_flipped(void **state) {
    (void)state;
    size_t n;
    uint8_t *img = make_image(&n);
    uint8_t *copy = malloc(n);
    for (size_t len = 0; len < n; len += (len < 128 ? 1 : 7)) {
        memcpy(copy, img, len);
        ks_model *m = NULL;
        ks_status st =
            ks_model_load_buffer(copy, len, &(ks_model_desc){.flags = KS_MODEL_COPY_BUFFER}, &m);
        assert_int_not_equal(st, KS_STATUS_OK);
        assert_null(m);
        assert_true(strlen(ks_last_error(NULL)) > 0);
    }
    /* bit flips are caught by the checksum; with the checksum skipped, by the parser (or the
     * file still being structurally valid, which must then load and run without crashing) */
    srand(1234);
    for (int iter = 0; iter < 2000; iter++) {
        memcpy(copy, img, n);
        size_t pos = (size_t)rand() % n;
        copy[pos] ^= (uint8_t)(1u << (rand() % 8));
        ks_model *m = NULL;
        ks_status st =
            ks_model_load_buffer(copy, n, &(ks_model_desc){.flags = KS_MODEL_COPY_BUFFER}, &m);
        if (pos < 28 || pos >= 32) {
            assert_int_not_equal(st, KS_STATUS_OK);
        }
        ks_model_destroy(m);
        m = NULL;
        st = ks_model_load_buffer(
            copy, n, &(ks_model_desc){.flags = KS_MODEL_COPY_BUFFER | KS_MODEL_SKIP_CHECKSUM}, &m);
        if (st == KS_STATUS_OK) {
            ks_session *s = NULL;
            if (ks_session_create(m, NULL, &s) == KS_STATUS_OK &&
                ks_session_reshape(s, NULL) == KS_STATUS_OK)
                (void)ks_session_run(s);
            ks_session_destroy(s);
        }
        ks_model_destroy(m);
    }
    free(copy);
    ks__free(NULL, img);
}

static void test_newer_major_refused(void **state) {
    (void)state;
    size_t n;
    uint8_t *img = make_image(&n);
    img[4] = KSM_VERSION_MAJOR + 1;
    ks_model *m = NULL;
    assert_int_equal(ks_model_load_buffer(img, n, NULL, &m), KS_STATUS_VERSION_MISMATCH);
    assert_non_null(strstr(ks_last_error(NULL), "newer"));
    ks__free(NULL, img);
}

static void test_file_load(void **state) {
    (void)state;
    ks__graph g;
    build_graph(&g);
    char err[256];
    const char *path = "test_ksm_roundtrip.ksm";
    assert_int_equal(ks__ksm_write_file(&g, path, err, sizeof(err)), 0);
    ks__graph_free(&g);
    for (int mmap_mode = 0; mmap_mode < 2; mmap_mode++) {
        ks_model *m = NULL;
        ks_model_desc d = {.flags = mmap_mode ? 0u : KS_MODEL_NO_MMAP};
        assert_int_equal(ks_model_load_file(path, &d, &m), KS_STATUS_OK);
        run_and_check(m);
        ks_model_destroy(m);
    }
    ks_model *m = NULL;
    assert_int_equal(ks_model_load_file("/nonexistent/x.ksm", NULL, &m), KS_STATUS_IO_ERROR);
    assert_non_null(strstr(ks_last_error(NULL), "/nonexistent/x.ksm"));
    remove(path);
}

/* ---- OOM injection: fail the k-th allocation for every k; expect a clean status, no leak ---- */
typedef struct counting_alloc {
    long live, calls, fail_at;
} counting_alloc;

static void *c_alloc(void *user, size_t size, size_t align) {
    counting_alloc *c = user;
    if (c->calls++ == c->fail_at) return NULL;
    void *p = NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    if (posix_memalign(&p, align, size ? size : 1) != 0) return NULL;
    c->live++;
    return p;
}
static void c_free(void *user, void *p) {
    counting_alloc *c = user;
    if (p) c->live--;
    free(p);
}

static void test_oom_injection(void **state) {
    (void)state;
    size_t n;
    uint8_t *img = make_image(&n);
    int succeeded = 0;
    for (long k = 0; k < 10000 && !succeeded; k++) {
        counting_alloc c = {0, 0, k};
        ks_allocator a = {c_alloc, c_free, &c};
        ks_model *m = NULL;
        ks_session *s = NULL;
        ks_status st = ks_model_load_buffer(img, n, &(ks_model_desc){.allocator = &a}, &m);
        if (st == KS_STATUS_OK) st = ks_session_create(m, NULL, &s);
        if (st == KS_STATUS_OK) st = ks_session_reshape(s, NULL);
        if (st == KS_STATUS_OK) {
            long before = c.calls;
            st = ks_session_run(s);
            assert_int_equal(st, KS_STATUS_OK);
            assert_int_equal(c.calls, before); /* run never allocates */
            succeeded = 1;
        } else {
            assert_int_equal(st, KS_STATUS_OUT_OF_MEMORY);
        }
        ks_session_destroy(s);
        ks_model_destroy(m);
        assert_int_equal(c.live, 0);
    }
    assert_true(succeeded);
    ks__free(NULL, img);
}

/* The same OOM loop on a real converted model (BlazeFace short range, from the pinned npm
 * package that scripts/setup fetches): every allocation in load, session create and reshape. */
static void test_oom_injection_real_model(void **state) {
    (void)state;
    const char *path = KS_SOURCE_DIR "/models/face_detection/face_detection_short_range.tflite";
    uint8_t *src = NULL;
    size_t src_n = 0;
    char err[512];
    if (ks_read_file(path, (size_t)1 << 30, &src, &src_n, err, sizeof(err)) != KS_STATUS_OK) {
        print_message("skipped: %s (run scripts/setup)\n", err);
        skip();
    }
    ks__graph g;
    ks__graph_init(&g, NULL);
    assert_int_equal(
        ks__import_tflite(src, src_n, "face_detection_short_range.tflite", &g, err, sizeof(err)),
        KS_STATUS_OK);
    assert_int_equal(ks__graph_optimize(&g, err, sizeof(err)), KS_STATUS_OK);
    uint8_t *img = NULL;
    size_t n = 0;
    assert_int_equal(ks__ksm_write(&g, &img, &n, err, sizeof(err)), KS_STATUS_OK);
    ks__graph_free(&g);
    free(src);
    long k = 0;
    for (;; k++) {
        counting_alloc c = {0, 0, k};
        ks_allocator a = {c_alloc, c_free, &c};
        ks_model *m = NULL;
        ks_session *s = NULL;
        ks_status st = ks_model_load_buffer(img, n, &(ks_model_desc){.allocator = &a}, &m);
        if (st == KS_STATUS_OK) st = ks_session_create(m, NULL, &s);
        if (st == KS_STATUS_OK) st = ks_session_reshape(s, NULL);
        if (st != KS_STATUS_OK) assert_int_equal(st, KS_STATUS_OUT_OF_MEMORY);
        ks_session_destroy(s);
        ks_model_destroy(m);
        assert_int_equal(c.live, 0);
        if (st == KS_STATUS_OK) break;
    }
    print_message("OOM injection: %ld allocations failed in turn, all clean\n", k);
    assert_true(k > 10);
    ks__free(NULL, img);
}

/* An int8 model as ks-quant writes it: x -> QUANTIZE -> CONV2D (I8 per-channel weights with zero
 * zero points, I32 bias) -> depthwise conv ([C, 3, 3, 1] weights with -128 codes, which wcode
 * cannot take) -> DEQUANTIZE -> y. */
static void build_qgraph(ks__graph *g) {
    enum { C = 8, H = 6 };
    int64_t dx[4] = {1, H, H, C}, dw[4] = {C, 3, 3, C}, db[1] = {C}, dd[4] = {C, 3, 3, 1};
    int32_t x, xq, w, b, y1, dw_id, b2, y2, y;
    ks__graph_init(g, NULL);
    assert_int_equal(ks__graph_add_tensor(g, "x", KS_DTYPE_F32, 4, dx, &x), 0);
    assert_int_equal(ks__graph_add_tensor(g, "x/q", KS_DTYPE_I8, 4, dx, &xq), 0);
    float s1 = 0.02f;
    int32_t z1 = 3;
    assert_int_equal(ks__graph_set_quant(g, xq, 1, 0, &s1, &z1), 0);
    int8_t wv[C * 9 * C], dv[9 * C];
    int32_t bv[C], b2v[C], zeros[C] = {0};
    float ws[C], ds[C];
    for (int i = 0; i < C * 9 * C; i++)
        wv[i] = (int8_t)((i * 37) % 255 - 127) / (1 + (i % 9));
    for (int i = 0; i < 9 * C; i++)
        dv[i] = (int8_t)((i * 11) % 256 - 128);
    for (int c = 0; c < C; c++) {
        bv[c] = c * 1000 - 3000;
        b2v[c] = -c * 77;
        ws[c] = 0.001f * (float)(c + 1);
        ds[c] = 0.003f / (float)(c + 1);
    }
    assert_int_equal(ks__graph_add_tensor(g, "w", KS_DTYPE_I8, 4, dw, &w), 0);
    assert_int_equal(ks__graph_set_const(g, w, wv, sizeof(wv), true), 0);
    assert_int_equal(ks__graph_set_quant(g, w, C, 0, ws, zeros), 0);
    assert_int_equal(ks__graph_add_tensor(g, "b", KS_DTYPE_I32, 1, db, &b), 0);
    assert_int_equal(ks__graph_set_const(g, b, bv, sizeof(bv), true), 0);
    assert_int_equal(ks__graph_add_tensor(g, "y1", KS_DTYPE_I8, 4, dx, &y1), 0);
    float s2 = 0.05f;
    int32_t z2 = -2;
    assert_int_equal(ks__graph_set_quant(g, y1, 1, 0, &s2, &z2), 0);
    assert_int_equal(ks__graph_add_tensor(g, "dw", KS_DTYPE_I8, 4, dd, &dw_id), 0);
    assert_int_equal(ks__graph_set_const(g, dw_id, dv, sizeof(dv), true), 0);
    assert_int_equal(ks__graph_set_quant(g, dw_id, C, 0, ds, zeros), 0);
    assert_int_equal(ks__graph_add_tensor(g, "b2", KS_DTYPE_I32, 1, db, &b2), 0);
    assert_int_equal(ks__graph_set_const(g, b2, b2v, sizeof(b2v), true), 0);
    assert_int_equal(ks__graph_add_tensor(g, "y2", KS_DTYPE_I8, 4, dx, &y2), 0);
    assert_int_equal(ks__graph_set_quant(g, y2, 1, 0, &s2, &z1), 0);
    assert_int_equal(ks__graph_add_tensor(g, "y", KS_DTYPE_F32, 4, dx, &y), 0);
    uint32_t idx;
    assert_int_equal(ks__graph_add_node(g, KS_OP_QUANTIZE, "q", 1, &x, 1, &xq, NULL), 0);
    int32_t in1[3] = {xq, w, b}, in2[3] = {y1, dw_id, b2};
    assert_int_equal(ks__graph_add_node(g, KS_OP_CONV2D, "conv", 3, in1, 1, &y1, &idx), 0);
    g->nodes[idx].ip[0] = g->nodes[idx].ip[1] = g->nodes[idx].ip[2] = g->nodes[idx].ip[3] = 1;
    g->nodes[idx].ip[8] = KS_PAD_SAME_UPPER;
    g->nodes[idx].ip[10] = KS_ACT_RELU;
    assert_int_equal(ks__graph_add_node(g, KS_OP_CONV2D, "dwconv", 3, in2, 1, &y2, &idx), 0);
    g->nodes[idx].ip[0] = g->nodes[idx].ip[1] = g->nodes[idx].ip[2] = g->nodes[idx].ip[3] = 1;
    g->nodes[idx].ip[8] = KS_PAD_SAME_UPPER;
    g->nodes[idx].ip[9] = C; /* groups: depthwise */
    assert_int_equal(ks__graph_add_node(g, KS_OP_DEQUANTIZE, "dq", 1, &y2, 1, &y, NULL), 0);
    assert_int_equal(ks__graph_set_io(g, 1, &x, 1, &y), 0);
    assert_int_equal(ks__graph_set_meta(g, "quantization", "int8 test"), 0);
}

static void assert_graphs_equal(const ks__graph *a, const ks__graph *b) {
    assert_int_equal(a->num_tensors, b->num_tensors);
    assert_int_equal(a->num_nodes, b->num_nodes);
    assert_int_equal(a->num_meta, b->num_meta);
    for (uint32_t i = 0; i < a->num_tensors; i++) {
        const ks__tensor *s = &a->tensors[i], *t = &b->tensors[i];
        assert_string_equal(s->name, t->name);
        assert_int_equal(s->dtype, t->dtype);
        assert_int_equal(s->rank, t->rank);
        assert_memory_equal(s->dims, t->dims, sizeof(s->dims));
        assert_int_equal(s->flags & KS__TENSOR_CONST, t->flags & KS__TENSOR_CONST);
        assert_int_equal(s->size_bytes, t->size_bytes);
        if (s->size_bytes) assert_memory_equal(s->data, t->data, s->size_bytes);
        assert_int_equal(s->quant.count, t->quant.count);
        assert_int_equal(s->quant.axis, t->quant.axis);
        if (s->quant.count) {
            assert_memory_equal(s->quant.scales, t->quant.scales, s->quant.count * 4);
            assert_memory_equal(s->quant.zero_points, t->quant.zero_points, s->quant.count * 4);
        }
    }
    for (uint32_t i = 0; i < a->num_nodes; i++) {
        const ks__node *s = &a->nodes[i], *t = &b->nodes[i];
        assert_int_equal(s->op, t->op);
        assert_string_equal(s->name, t->name);
        assert_int_equal(s->num_inputs, t->num_inputs);
        assert_memory_equal(s->inputs, t->inputs, s->num_inputs * 4);
        assert_memory_equal(s->ip, t->ip, sizeof(s->ip));
        assert_memory_equal(s->fp, t->fp, sizeof(s->fp));
    }
}

/* Format 1.2 packing is lossless: the packed image reads back to the same graph as the plain
 * one (every constant byte, scale and zero point), runs to the same bytes, is smaller, and
 * hostile variants of it fail cleanly. */
static void test_pack_lossless(void **state) {
    (void)state;
    ks__graph g, plain, packed;
    build_qgraph(&g);
    uint8_t *img = NULL, *pimg = NULL;
    size_t n = 0, pn = 0;
    char err[256];
    assert_int_equal(ks__ksm_write(&g, &img, &n, err, sizeof(err)), 0);
    ks__ksm_write_opts o = {.pack = true};
    assert_int_equal(ks__ksm_write_ex(&g, &o, &pimg, &pn, err, sizeof(err)), 0);
    print_message("int8 test graph: %zu bytes plain, %zu packed\n", n, pn);
    assert_true(pn < n);
    assert_int_equal(img[6], 1);  /* plain files stay 1.1 */
    assert_int_equal(pimg[6], 2); /* packed: 1.2, with the flag 1.1 readers refuse */
    assert_int_equal(pimg[12], KSM_FLAG_CHECKSUM | KSM_FLAG_NEEDS_1_2);
    ks__graph_init(&plain, NULL);
    ks__graph_init(&packed, NULL);
    assert_int_equal(ks__ksm_read(img, n, true, &plain, err, sizeof(err)), 0);
    assert_int_equal(ks__ksm_read(pimg, pn, true, &packed, err, sizeof(err)), 0);
    assert_graphs_equal(&g, &plain);
    assert_graphs_equal(&g, &packed);
    ks__ksm_sizes z;
    assert_int_equal(ks__ksm_sizes_of(pimg, pn, &z), 0);
    assert_true(z.section_bytes[KSM_SECTION_PACKED] > 0);
    assert_int_equal(z.section_bytes[KSM_SECTION_TENSORS], 0);
    assert_true(z.packed_section_bytes[KSM_SECTION_TENSORS] > 0);
    assert_int_equal(z.zero_point_bytes, 12); /* only the 3 nonzero per-tensor ones remain */
    assert_true(z.num_encoded >= 2);
    /* same outputs, byte for byte */
    ks_model *m[2] = {NULL, NULL};
    ks_session *s[2] = {NULL, NULL};
    const uint8_t *imgs[2] = {img, pimg};
    size_t sizes[2] = {n, pn};
    ks_tensor out[2];
    for (int k = 0; k < 2; k++) {
        assert_int_equal(ks_model_load_buffer(imgs[k], sizes[k], NULL, &m[k]), 0);
        assert_int_equal(ks_session_create(m[k], NULL, &s[k]), 0);
        ks_status rs = ks_session_reshape(s[k], NULL);
        if (rs) print_message("reshape: %s\n", ks_last_error(s[k]));
        assert_int_equal(rs, 0);
        ks_tensor in;
        assert_int_equal(ks_session_input(s[k], 0, &in), 0);
        float *x = in.data;
        for (size_t i = 0; i < in.size_bytes / 4; i++)
            x[i] = (float)((i * 13) % 17) * 0.1f - 0.8f;
        assert_int_equal(ks_session_run(s[k]), 0);
        assert_int_equal(ks_session_output(s[k], 0, &out[k]), 0);
    }
    assert_int_equal(out[0].size_bytes, out[1].size_bytes);
    assert_memory_equal(out[0].data, out[1].data, out[0].size_bytes);
    for (int k = 0; k < 2; k++) {
        ks_session_destroy(s[k]);
        ks_model_destroy(m[k]);
    }
    /* every allocation of loading the packed image fails in turn, cleanly */
    int loaded = 0;
    for (long k = 0; k < 10000 && !loaded; k++) {
        counting_alloc c = {0, 0, k};
        ks_allocator a = {c_alloc, c_free, &c};
        ks_model *mm = NULL;
        ks_status st = ks_model_load_buffer(pimg, pn, &(ks_model_desc){.allocator = &a}, &mm);
        if (st == KS_STATUS_OK)
            loaded = 1;
        else
            assert_int_equal(st, KS_STATUS_OUT_OF_MEMORY);
        ks_model_destroy(mm);
        assert_int_equal(c.live, 0);
    }
    assert_true(loaded);
    /* hostile: every truncation, and bit flips with the checksum skipped (must not crash;
     * anything accepted must also plan and run) */
    uint8_t *copy = malloc(pn);
    for (size_t len = 0; len < pn; len++) {
        memcpy(copy, pimg, len);
        ks_model *mm = NULL;
        assert_int_not_equal(
            ks_model_load_buffer(copy, len, &(ks_model_desc){.flags = KS_MODEL_COPY_BUFFER}, &mm),
            KS_STATUS_OK);
    }
    srand(99);
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(copy, pimg, pn);
        size_t pos = (size_t)rand() % pn;
        copy[pos] ^= (uint8_t)(1u << (rand() % 8));
        ks_model *mm = NULL;
        ks_status st = ks_model_load_buffer(
            copy, pn, &(ks_model_desc){.flags = KS_MODEL_COPY_BUFFER | KS_MODEL_SKIP_CHECKSUM},
            &mm);
        if (st == KS_STATUS_OK) {
            ks_session *ss = NULL;
            if (ks_session_create(mm, NULL, &ss) == KS_STATUS_OK &&
                ks_session_reshape(ss, NULL) == KS_STATUS_OK)
                (void)ks_session_run(ss);
            ks_session_destroy(ss);
        } else {
            assert_true(strlen(ks_last_error(NULL)) > 0);
        }
        ks_model_destroy(mm);
    }
    free(copy);
    /* a zero point outside its dtype's range is refused (integer kernels would overflow) */
    for (uint32_t i = 0; i < g.num_tensors; i++)
        if (g.tensors[i].dtype == KS_DTYPE_I8 && g.tensors[i].quant.count == 1)
            g.tensors[i].quant.zero_points[0] = 300;
    uint8_t *bad = NULL;
    size_t bn = 0;
    assert_int_equal(ks__ksm_write_ex(&g, &o, &bad, &bn, err, sizeof(err)), 0);
    ks__graph bg;
    ks__graph_init(&bg, NULL);
    assert_int_equal(ks__ksm_read(bad, bn, true, &bg, err, sizeof(err)), KS_STATUS_INVALID_MODEL);
    assert_non_null(strstr(err, "zero point 300 outside [-128, 127]"));
    ks__graph_free(&bg);
    ks__free(NULL, bad);
    ks__graph_free(&plain);
    ks__graph_free(&packed);
    ks__graph_free(&g);
    ks__free(NULL, img);
    ks__free(NULL, pimg);
}

static void test_status_and_version(void **state) {
    (void)state;
    assert_int_equal(ks_version(), KS_VERSION_HEX);
    assert_string_equal(ks_version_string(), KS_VERSION_STRING);
    for (int i = 0; i < KS_STATUS_COUNT; i++)
        assert_string_not_equal(ks_status_string((ks_status)i), "unknown status");
    assert_string_equal(ks_status_string((ks_status)999), "unknown status");
    assert_int_equal(ks_dtype_size(KS_DTYPE_F16), 2);
    assert_int_equal(ks_model_load_buffer(NULL, 0, NULL, NULL), KS_STATUS_INVALID_ARGUMENT);
    ks_model_destroy(NULL);
    ks_session_destroy(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),          cmocka_unit_test(test_truncated_and_flipped),
        cmocka_unit_test(test_newer_major_refused), cmocka_unit_test(test_file_load),
        cmocka_unit_test(test_oom_injection),       cmocka_unit_test(test_oom_injection_real_model),
        cmocka_unit_test(test_status_and_version),  cmocka_unit_test(test_pack_lossless),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
