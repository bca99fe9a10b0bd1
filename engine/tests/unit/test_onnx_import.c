/* ONNX importer and graph passes: real models from the shared data set (skipped when absent),
 * hostile inputs (truncation, bit flips, oversized varints and lengths) and a pass-equivalence
 * check on a small hand-built graph run with the reference kernels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "convert.h"
#include "cpu_kernel.h"

/* ---------------------------------------------------------------- helpers */

static uint8_t *read_file(const char *path, size_t *size_out) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = n > 0 ? malloc((size_t)n) : NULL;
    if (d && fread(d, 1, (size_t)n, f) != (size_t)n) {
        free(d);
        d = NULL;
    }
    fclose(f);
    *size_out = d ? (size_t)n : 0;
    return d;
}

typedef struct pbuf {
    uint8_t b[4096];
    size_t n;
} pbuf;

static void put_varint(pbuf *p, uint64_t v) {
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        p->b[p->n++] = byte | (v ? 0x80 : 0);
    } while (v);
}
static void put_tag(pbuf *p, uint32_t field, uint32_t wire) {
    put_varint(p, (uint64_t)field << 3 | wire);
}
static void put_int(pbuf *p, uint32_t field, int64_t v) {
    put_tag(p, field, 0);
    put_varint(p, (uint64_t)v);
}
static void put_bytes(pbuf *p, uint32_t field, const void *d, size_t n) {
    put_tag(p, field, 2);
    put_varint(p, n);
    memcpy(p->b + p->n, d, n);
    p->n += n;
}
static void put_str(pbuf *p, uint32_t field, const char *s) {
    put_bytes(p, field, s, strlen(s));
}
static void put_msg(pbuf *p, uint32_t field, const pbuf *m) {
    put_bytes(p, field, m->b, m->n);
}

static void value_info(pbuf *out, uint32_t field, const char *name, int rank, const int64_t *dims) {
    pbuf shape = {0}, tt = {0}, type = {0}, vi = {0};
    for (int i = 0; i < rank; i++) {
        pbuf dim = {0};
        if (dims[i] < 0)
            put_str(&dim, 2, "N");
        else
            put_int(&dim, 1, dims[i]);
        put_msg(&shape, 1, &dim);
    }
    put_int(&tt, 1, 1); /* FLOAT */
    put_msg(&tt, 2, &shape);
    put_msg(&type, 1, &tt);
    put_str(&vi, 1, name);
    put_msg(&vi, 2, &type);
    put_msg(out, field, &vi);
}

/* x[1,3,4,4] -> Relu -> Add(c) -> op_type2 -> y */
static size_t tiny_model(uint8_t *out, const char *op2) {
    pbuf g = {0}, n1 = {0}, n2 = {0}, n3 = {0}, init = {0}, opset = {0}, m = {0};
    put_str(&n1, 1, "x");
    put_str(&n1, 2, "r");
    put_str(&n1, 3, "relu0");
    put_str(&n1, 4, "Relu");
    put_str(&n2, 1, "r");
    put_str(&n2, 1, "c");
    put_str(&n2, 2, "a");
    put_str(&n2, 3, "add0");
    put_str(&n2, 4, "Add");
    put_str(&n3, 1, "a");
    put_str(&n3, 2, "y");
    put_str(&n3, 3, "last");
    put_str(&n3, 4, op2);
    float cval = 0.5f;
    put_int(&init, 1, 1);
    put_int(&init, 2, 1);
    put_str(&init, 8, "c");
    put_bytes(&init, 9, &cval, 4);
    put_msg(&g, 1, &n1);
    put_msg(&g, 1, &n2);
    put_msg(&g, 1, &n3);
    put_str(&g, 2, "tiny");
    put_msg(&g, 5, &init);
    int64_t dims[4] = {1, 3, 4, 4};
    value_info(&g, 11, "x", 4, dims);
    value_info(&g, 12, "y", 4, dims);
    put_str(&opset, 1, "");
    put_int(&opset, 2, 13);
    put_int(&m, 1, 7);
    put_msg(&m, 8, &opset);
    put_msg(&m, 7, &g);
    memcpy(out, m.b, m.n);
    return m.n;
}

static int status_allowed(ks_status st) {
    return st == KS_STATUS_OK || st == KS_STATUS_INVALID_MODEL || st == KS_STATUS_UNSUPPORTED ||
           st == KS_STATUS_LIMIT_EXCEEDED;
}

/* Imports, and when that works validates and optimizes; checks statuses only. */
static ks_status import_checked(const uint8_t *d, size_t n) {
    ks__graph g;
    ks__graph_init(&g, NULL);
    char err[512] = "";
    ks_status st = ks__import_onnx(d, n, "hostile.onnx", &g, err, sizeof(err));
    assert_true(status_allowed(st));
    if (st != KS_STATUS_OK) assert_true(strlen(err) > 0);
    if (st == KS_STATUS_OK) {
        assert_int_equal(ks__graph_validate(&g, err, sizeof(err)), KS_STATUS_OK);
        ks_status ost = ks__graph_optimize(&g, err, sizeof(err));
        assert_true(ost == KS_STATUS_OK || ost == KS_STATUS_INVALID_MODEL);
        if (ost == KS_STATUS_OK)
            assert_int_equal(ks__graph_validate(&g, err, sizeof(err)), KS_STATUS_OK);
    }
    ks__graph_free(&g);
    return st;
}

/* ---------------------------------------------------------------- tiny interpreter */

/* Runs g on `in` (one F32 input) with the reference kernels; returns malloc'd output 0. */
static float *run_graph(const ks__graph *g, const float *in, int64_t *numel_out) {
    const ks__kernel_table *kt = ks__ref_kernels();
    ks__rt_tensor *rt = calloc(g->num_tensors, sizeof(ks__rt_tensor));
    uint8_t *owned = calloc(g->num_tensors, 1);
    assert_non_null(rt);
    for (uint32_t i = 0; i < g->num_tensors; i++) {
        const ks__tensor *t = &g->tensors[i];
        rt[i].dtype = t->dtype;
        rt[i].rank = t->rank;
        memcpy(rt[i].dims, t->dims, sizeof(t->dims));
        rt[i].quant = &t->quant;
        rt[i].def = t;
        if (t->flags & KS__TENSOR_CONST) {
            rt[i].data = (void *)t->data;
            rt[i].size_bytes = t->size_bytes;
        }
    }
    int32_t x = g->inputs[0];
    rt[x].size_bytes = (size_t)ks__numel(rt[x].rank, rt[x].dims) * 4;
    rt[x].data = (void *)in;
    for (uint32_t n = 0; n < g->num_nodes; n++) {
        const ks__node *nd = &g->nodes[n];
        ks__rt_tensor *ins[64] = {0}, *outs[64] = {0};
        for (uint32_t k = 0; k < nd->num_inputs; k++)
            ins[k] = nd->inputs[k] >= 0 ? &rt[nd->inputs[k]] : NULL;
        for (uint32_t k = 0; k < nd->num_outputs; k++)
            outs[k] = &rt[nd->outputs[k]];
        char err[256] = "";
        ks__kernel_ctx ctx = {.node = nd,
                              .node_index = n,
                              .in = ins,
                              .num_inputs = nd->num_inputs,
                              .out = outs,
                              .num_outputs = nd->num_outputs,
                              .err = err,
                              .err_cap = sizeof(err)};
        const ks__kernel *k = &kt->k[nd->op];
        assert_non_null(k->run);
        ks_status st = ks__ref_prepare(&ctx);
        if (st) fprintf(stderr, "infer: %s\n", err);
        assert_int_equal(st, KS_STATUS_OK);
        for (uint32_t i = 0; i < nd->num_outputs; i++) {
            ks__rt_tensor *o = outs[i];
            o->size_bytes = (size_t)ks__numel(o->rank, o->dims) * ks_dtype_size(o->dtype);
            if (!o->data) {
                o->data = calloc(1, o->size_bytes + 1);
                owned[nd->outputs[i]] = 1;
            }
        }
        void *scratch = ctx.scratch_bytes ? calloc(1, ctx.scratch_bytes) : NULL;
        ctx.scratch = scratch;
        st = k->run(&ctx);
        if (st) fprintf(stderr, "run: %s\n", err);
        assert_int_equal(st, KS_STATUS_OK);
        free(scratch);
    }
    int32_t y = g->outputs[0];
    *numel_out = ks__numel(rt[y].rank, rt[y].dims);
    float *res = malloc((size_t)*numel_out * 4);
    memcpy(res, rt[y].data, (size_t)*numel_out * 4);
    for (uint32_t i = 0; i < g->num_tensors; i++)
        if (owned[i]) free(rt[i].data);
    free(rt);
    free(owned);
    return res;
}

/* ---------------------------------------------------------------- real models */

typedef struct model_case {
    const char *path;
} model_case;

static const char *k_models[] = {
    "face_detection/yunet_s_640_640.onnx",  "face_detection/yunet_s_dynamic.onnx",
    "face_detection/yunet_n_640_640.onnx",  "face_detection/version-RFB-320.onnx",
    "face_detection/version-slim-320.onnx", "object_detection/yolox_nano.onnx",
    "object_detection/nanodet_m.onnx",
};

/* Parses "name AxBxC dtype" (dims that are not numbers are dynamic: -1). */
static int parse_io(const char *s, char *name, int64_t *dims, int *rank) {
    char shape[128];
    if (sscanf(s, " %127s %127s", name, shape) != 2) return 0;
    *rank = 0;
    char *save = NULL;
    for (char *tok = strtok_r(shape, "x", &save); tok; tok = strtok_r(NULL, "x", &save)) {
        char *end;
        long long v = strtoll(tok, &end, 10);
        dims[(*rank)++] = (*end || end == tok) ? -1 : v;
    }
    return 1;
}

static void check_io(const ks__graph *g, int32_t id, const char *spec) {
    char name[128];
    int64_t dims[8];
    int rank;
    assert_true(parse_io(spec, name, dims, &rank));
    const ks__tensor *t = &g->tensors[id];
    if (strcmp(t->name, name) != 0) fprintf(stderr, "name %s vs %s\n", t->name, name);
    assert_string_equal(t->name, name);
    assert_int_equal(t->rank, rank);
    for (int i = 0; i < rank; i++)
        assert_int_equal(t->dims[i], dims[i]);
    assert_int_equal(t->dtype, KS_DTYPE_F32);
}

/* Finds the MANIFEST row of `rel` and checks the graph's I/O against its input/outputs. */
static void check_manifest(const ks__graph *g, const char *rel) {
    size_t n;
    char *m = (char *)read_file(KS_SHARED_DATA "/MANIFEST.tsv", &n);
    if (!m) return;
    m = realloc(m, n + 1);
    m[n] = 0;
    char *save = NULL;
    int found = 0;
    for (char *line = strtok_r(m, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *cols[9] = {0};
        int nc = 0;
        for (char *c = line; nc < 9;) {
            cols[nc++] = c;
            char *tab = strchr(c, '\t');
            if (!tab) break;
            *tab = 0;
            c = tab + 1;
        }
        if (nc < 7 || strcmp(cols[1], rel) != 0) continue;
        found = 1;
        assert_int_equal(g->num_inputs, 1);
        check_io(g, g->inputs[0], cols[5]);
        uint32_t k = 0;
        char *s2 = NULL;
        for (char *o = strtok_r(cols[6], ";", &s2); o; o = strtok_r(NULL, ";", &s2), k++) {
            assert_true(k < g->num_outputs);
            check_io(g, g->outputs[k], o);
        }
        assert_int_equal(k, g->num_outputs);
    }
    assert_true(found);
    free(m);
}

static void test_real_models(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof(k_models) / sizeof(k_models[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", KS_SHARED_DATA, k_models[i]);
        size_t n;
        uint8_t *d = read_file(path, &n);
        assert_non_null(d);
        ks__graph g;
        ks__graph_init(&g, NULL);
        char err[512] = "";
        ks_status st = ks__import_onnx(d, n, path, &g, err, sizeof(err));
        if (st) fprintf(stderr, "%s\n", err);
        assert_int_equal(st, KS_STATUS_OK);
        assert_int_equal(ks__graph_validate(&g, err, sizeof(err)), KS_STATUS_OK);
        assert_string_equal(ks__graph_get_meta(&g, "producer"), "onnx");
        assert_string_equal(ks__graph_get_meta(&g, "source"), strrchr(k_models[i], '/') + 1);
        assert_non_null(ks__graph_get_meta(&g, "onnx.opset"));
        check_manifest(&g, k_models[i]);
        uint32_t before = g.num_nodes;
        st = ks__graph_optimize(&g, err, sizeof(err));
        if (st) fprintf(stderr, "%s\n", err);
        assert_int_equal(st, KS_STATUS_OK);
        assert_int_equal(ks__graph_validate(&g, err, sizeof(err)), KS_STATUS_OK);
        assert_true(g.num_nodes < before);
        check_manifest(&g, k_models[i]);
        if (strstr(k_models[i], "yolox")) { /* the Focus slices became one transpose */
            uint32_t slices = 0;
            for (uint32_t k = 0; k < g.num_nodes; k++)
                slices += g.nodes[k].op == KS_OP_SLICE;
            assert_int_equal(slices, 0);
        }
        ks__graph_free(&g);
        free(d);
    }
}

static void test_real_model_truncation(void **state) {
    (void)state;
    size_t n;
    uint8_t *d = read_file(KS_SHARED_DATA "/face_detection/yunet_s_640_640.onnx", &n);
    assert_non_null(d);
    for (size_t cut = 0; cut < n; cut += n / 97 + 1) {
        ks__graph g;
        ks__graph_init(&g, NULL);
        char err[512] = "";
        ks_status st = ks__import_onnx(d, cut, "yunet.onnx", &g, err, sizeof(err));
        assert_true(st == KS_STATUS_INVALID_MODEL);
        assert_non_null(strstr(err, "yunet.onnx"));
        ks__graph_free(&g);
    }
    free(d);
}

/* ---------------------------------------------------------------- hostile / synthetic */

static void test_tiny_model(void **state) {
    (void)state;
    uint8_t buf[4096];
    size_t n = tiny_model(buf, "Sigmoid");
    ks__graph g;
    ks__graph_init(&g, NULL);
    char err[512] = "";
    assert_int_equal(ks__import_onnx(buf, n, "tiny.onnx", &g, err, sizeof(err)), KS_STATUS_OK);
    assert_int_equal(g.num_nodes, 3);
    assert_int_equal(g.nodes[0].op, KS_OP_RELU);
    assert_int_equal(g.nodes[1].op, KS_OP_ADD);
    assert_int_equal(g.nodes[2].op, KS_OP_SIGMOID);
    assert_string_equal(ks__graph_get_meta(&g, "onnx.opset"), "13");
    assert_int_equal(ks__graph_optimize(&g, err, sizeof(err)), KS_STATUS_OK);
    /* Sigmoid fuses into the Add */
    assert_int_equal(g.num_nodes, 2);
    assert_int_equal(g.nodes[1].ip[0], KS_ACT_SIGMOID);
    assert_string_equal(g.tensors[g.outputs[0]].name, "y");
    ks__graph_free(&g);
}

static void test_unsupported_op(void **state) {
    (void)state;
    uint8_t buf[4096];
    size_t n = tiny_model(buf, "FancyOp");
    ks__graph g;
    ks__graph_init(&g, NULL);
    char err[512] = "";
    assert_int_equal(ks__import_onnx(buf, n, "tiny.onnx", &g, err, sizeof(err)),
                     KS_STATUS_UNSUPPORTED);
    assert_string_equal(err, "tiny.onnx: op FancyOp (node 2 'last') is not supported");
    ks__graph_free(&g);
}

static void test_truncation_and_bitflips(void **state) {
    (void)state;
    uint8_t buf[4096], mut[4096];
    size_t n = tiny_model(buf, "Relu");
    for (size_t cut = 0; cut < n; cut++)
        import_checked(buf, cut);
    for (size_t i = 0; i < n; i++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(mut, buf, n);
            mut[i] ^= (uint8_t)(1u << bit);
            import_checked(mut, n);
        }
    }
}

static void test_bad_varints_and_lengths(void **state) {
    (void)state;
    /* ir_version as an 11-byte varint */
    static const uint8_t long_varint[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
                                          0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    assert_int_equal(import_checked(long_varint, sizeof(long_varint)), KS_STATUS_INVALID_MODEL);
    /* graph with a length of 2^35 */
    static const uint8_t huge_len[] = {0x3a, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00};
    assert_int_equal(import_checked(huge_len, sizeof(huge_len)), KS_STATUS_INVALID_MODEL);
    /* group wire type */
    static const uint8_t group[] = {0x0b, 0x0c};
    assert_int_equal(import_checked(group, sizeof(group)), KS_STATUS_INVALID_MODEL);
    /* field number 0 */
    static const uint8_t field0[] = {0x00, 0x01};
    assert_int_equal(import_checked(field0, sizeof(field0)), KS_STATUS_INVALID_MODEL);
    /* no graph */
    static const uint8_t nograph[] = {0x08, 0x07};
    assert_int_equal(import_checked(nograph, sizeof(nograph)), KS_STATUS_INVALID_MODEL);
    assert_int_equal(import_checked(NULL, 0), KS_STATUS_INVALID_MODEL);

    /* an initializer claiming 2^40 x 2^40 elements */
    pbuf init = {0}, g = {0}, opset = {0}, m = {0};
    put_int(&init, 1, INT64_C(1) << 40);
    put_int(&init, 1, INT64_C(1) << 40);
    put_int(&init, 2, 1);
    put_str(&init, 8, "w");
    put_msg(&g, 5, &init);
    int64_t dims[1] = {1};
    value_info(&g, 11, "x", 1, dims);
    value_info(&g, 12, "x", 1, dims);
    put_int(&opset, 2, 11);
    put_int(&m, 1, 7);
    put_msg(&m, 8, &opset);
    put_msg(&m, 7, &g);
    ks_status st = import_checked(m.b, m.n);
    assert_true(st == KS_STATUS_INVALID_MODEL || st == KS_STATUS_LIMIT_EXCEEDED);
}

/* ---------------------------------------------------------------- passes */

static int32_t add_t(ks__graph *g, const char *name, int rank, int64_t d0, int64_t d1, int64_t d2,
                     int64_t d3) {
    int64_t d[4] = {d0, d1, d2, d3};
    int32_t id;
    assert_int_equal(ks__graph_add_tensor(g, name, KS_DTYPE_F32, rank, d, &id), KS_STATUS_OK);
    return id;
}

static int32_t add_c(ks__graph *g, const char *name, int rank, int64_t d0, int64_t d1, int64_t d2,
                     int64_t d3, float base) {
    int32_t id = add_t(g, name, rank, d0, d1, d2, d3);
    int64_t d[4] = {d0, d1, d2, d3};
    int64_t n = ks__numel(rank, d);
    float *v = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++)
        v[i] = base + 0.1f * (float)((i * 7) % 11) - 0.4f;
    assert_int_equal(ks__graph_set_const(g, id, v, (size_t)n * 4, true), KS_STATUS_OK);
    free(v);
    return id;
}

static void add_n(ks__graph *g, uint32_t op, int32_t a, int32_t b, int32_t out, const int32_t *ip,
                  int nip) {
    int32_t ins[2] = {a, b};
    uint32_t idx;
    assert_int_equal(ks__graph_add_node(g, op, "n", b >= 0 ? 2 : 1, ins, 1, &out, &idx),
                     KS_STATUS_OK);
    for (int i = 0; i < nip; i++)
        g->nodes[idx].ip[i] = ip[i];
}

/* A CONV2D node reading x with weights w (and bias b >= 0), params ip[11]. */
static void add_conv(ks__graph *g, const char *name, int32_t x, int32_t w, int32_t b, int32_t y,
                     const int32_t *ip) {
    int32_t ins[3] = {x, w, b};
    uint32_t idx;
    assert_int_equal(ks__graph_add_node(g, KS_OP_CONV2D, name, b >= 0 ? 3 : 2, ins, 1, &y, &idx),
                     0);
    memcpy(g->nodes[idx].ip, ip, 11 * sizeof(int32_t));
}

/* The optimize tests' frame: fills `in` (n floats), validates g, runs it through the reference
 * kernels, optimizes it and returns the unoptimized outputs (*n_ref floats). */
static float *optimize_with_ref(ks__graph *g, float *in, int n, int64_t *n_ref) {
    char err[512] = "";
    for (int i = 0; i < n; i++)
        in[i] = (float)((i * 13) % 17) * 0.1f - 0.8f;
    assert_int_equal(ks__graph_validate(g, err, sizeof(err)), KS_STATUS_OK);
    float *ref = run_graph(g, in, n_ref);
    assert_int_equal(ks__graph_optimize(g, err, sizeof(err)), KS_STATUS_OK);
    return ref;
}

/* Runs the optimized g on `in` and compares with ref (freed here) within tol. */
static void expect_same_outputs(const ks__graph *g, const float *in, float *ref, int64_t n_ref,
                                float tol) {
    int64_t n;
    float *opt = run_graph(g, in, &n);
    assert_int_equal(n_ref, n);
    for (int64_t i = 0; i < n; i++)
        assert_float_equal(ref[i], opt[i], tol);
    free(ref);
    free(opt);
}

/* NCHW conv -> per-channel MUL/ADD (BatchNorm) -> RELU -> conv, with the importer's transpose
 * wrapping, plus a constant subexpression. */
static void build_conv_chain(ks__graph *g) {
    static const int32_t to_nhwc[5] = {4, 0, 2, 3, 1}, to_nchw[5] = {4, 0, 3, 1, 2};
    static const int32_t conv_ip[11] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0};
    int32_t x = add_t(g, "x", 4, 1, 3, 6, 5);
    int32_t w1 = add_c(g, "w1", 4, 4, 3, 3, 3, 0.0f), b1 = add_c(g, "b1", 1, 4, 0, 0, 0, 0.1f);
    int32_t w2 = add_c(g, "w2", 4, 2, 3, 3, 4, 0.05f);
    int32_t sc = add_c(g, "scale", 3, 4, 1, 1, 0, 1.0f),
            sh = add_c(g, "shift", 3, 4, 1, 1, 0, 0.2f);
    int32_t k1 = add_c(g, "k1", 3, 4, 1, 1, 0, 0.3f), k2 = add_c(g, "k2", 3, 4, 1, 1, 0, 0.1f);
    int32_t xh = add_t(g, "xh", 4, 1, 6, 5, 3), c1 = add_t(g, "c1", 4, 1, 6, 5, 4);
    int32_t c1n = add_t(g, "c1n", 4, 1, 4, 6, 5), m = add_t(g, "m", 4, 1, 4, 6, 5);
    int32_t kk = add_t(g, "kk", 3, 4, 1, 1, 0), sh2 = add_t(g, "sh2", 3, 4, 1, 1, 0);
    int32_t a = add_t(g, "a", 4, 1, 4, 6, 5), r = add_t(g, "r", 4, 1, 4, 6, 5);
    int32_t rh = add_t(g, "rh", 4, 1, 6, 5, 4), c2 = add_t(g, "c2", 4, 1, 6, 5, 2);
    int32_t y = add_t(g, "y", 4, 1, 2, 6, 5);
    add_n(g, KS_OP_TRANSPOSE, x, -1, xh, to_nhwc, 5);
    add_conv(g, "conv1", xh, w1, b1, c1, conv_ip);
    add_n(g, KS_OP_TRANSPOSE, c1, -1, c1n, to_nchw, 5);
    add_n(g, KS_OP_MUL, c1n, sc, m, NULL, 0);
    add_n(g, KS_OP_ADD, k1, k2, kk, NULL, 0); /* constant: folds */
    add_n(g, KS_OP_ADD, sh, kk, sh2, NULL, 0);
    add_n(g, KS_OP_ADD, m, sh2, a, NULL, 0);
    add_n(g, KS_OP_RELU, a, -1, r, NULL, 0);
    add_n(g, KS_OP_TRANSPOSE, r, -1, rh, to_nhwc, 5);
    add_conv(g, "conv2", rh, w2, -1, c2, conv_ip);
    add_n(g, KS_OP_TRANSPOSE, c2, -1, y, to_nchw, 5);
    assert_int_equal(ks__graph_set_io(g, 1, &x, 1, &y), 0);
}

static void test_optimize_conv_chain(void **state) {
    (void)state;
    const ks__kernel_table *kt = ks__ref_kernels();
    if (!kt->k[KS_OP_CONV2D].run || !kt->k[KS_OP_MUL].run || !kt->k[KS_OP_TRANSPOSE].run) {
        skip(); /* reference kernels not built yet */
    }
    ks__graph g;
    ks__graph_init(&g, NULL);
    build_conv_chain(&g);
    float in[90];
    int64_t n0;
    float *ref = optimize_with_ref(&g, in, 90, &n0);
    int transposes = 0, others = 0;
    for (uint32_t i = 0; i < g.num_nodes; i++) {
        if (g.nodes[i].op == KS_OP_TRANSPOSE)
            transposes++;
        else if (g.nodes[i].op != KS_OP_CONV2D)
            others++;
    }
    assert_int_equal(transposes, 2); /* graph input and output keep NCHW */
    assert_int_equal(others, 0);     /* MUL/ADD folded into conv1, RELU fused */
    assert_string_equal(g.tensors[g.inputs[0]].name, "x");
    assert_string_equal(g.tensors[g.outputs[0]].name, "y");
    expect_same_outputs(&g, in, ref, n0, 1e-4f);
    ks__graph_free(&g);
}

/* x [1,4,5,6] -> RESIZE (mode, half-pixel) to [1,8,10,6] -> conv 1x1 6->3 (+bias, act) -> y; with
 * `second_reader` the resize output is also a graph output. */
static void build_resize_conv(ks__graph *g, int mode, int act, int second_reader) {
    const int32_t conv_ip[11] = {1, 1, 1, 1, 0, 0, 0, 0, 3, 1, act};
    int32_t x = add_t(g, "x", 4, 1, 4, 5, 6), r = add_t(g, "r", 4, 1, 8, 10, 6);
    int32_t w = add_c(g, "w", 4, 3, 1, 1, 6, 0.05f), b = add_c(g, "b", 1, 3, 0, 0, 0, 0.3f);
    int32_t y = add_t(g, "y", 4, 1, 8, 10, 3);
    int32_t rip[5] = {mode, KS_RESIZE_HALF_PIXEL, 0, 8, 10};
    add_n(g, KS_OP_RESIZE, x, -1, r, rip, 5);
    add_conv(g, "conv", r, w, b, y, conv_ip);
    int32_t outs[2] = {y, r};
    assert_int_equal(ks__graph_set_io(g, 1, &x, second_reader ? 2 : 1, outs), 0);
}

/* conv_before_resize: the 1x1 conv runs at the input's resolution, before the resize, with the
 * same result up to rounding; not when the conv has an activation or the resize output has
 * another reader. */
static void test_optimize_conv_before_resize(void **state) {
    (void)state;
    const ks__kernel_table *kt = ks__ref_kernels();
    if (!kt->k[KS_OP_CONV2D].run || !kt->k[KS_OP_RESIZE].run) skip();
    float in[120];
    for (int c = 0; c < 4; c++) {
        int mode = c == 1 ? 0 : 1, act = c == 2 ? KS_ACT_RELU : KS_ACT_NONE, second = c == 3;
        ks__graph g;
        ks__graph_init(&g, NULL);
        build_resize_conv(&g, mode, act, second);
        int64_t n0;
        float *ref = optimize_with_ref(&g, in, 120, &n0);
        assert_int_equal(g.num_nodes, 2);
        int swapped = g.nodes[0].op == KS_OP_CONV2D;
        assert_int_equal(swapped, c < 2);
        if (swapped) {
            const ks__tensor *mid = &g.tensors[g.nodes[0].outputs[0]];
            assert_int_equal(mid->dims[1], 4);
            assert_int_equal(mid->dims[2], 5);
            assert_int_equal(mid->dims[3], 3);
            assert_int_equal(g.nodes[1].op, KS_OP_RESIZE);
        }
        assert_string_equal(g.tensors[g.outputs[0]].name, "y");
        expect_same_outputs(&g, in, ref, n0, 1e-5f);
        ks__graph_free(&g);
    }
}

static int32_t add_t5(ks__graph *g, const char *name, const int64_t *d) {
    int32_t id;
    assert_int_equal(ks__graph_add_tensor(g, name, KS_DTYPE_F32, 5, d, &id), KS_STATUS_OK);
    return id;
}

/* ShuffleNet's channel shuffle as ONNX exports it, between NHWC convs: NCHW transpose, RESHAPE
 * [1,2,4,H,W], TRANSPOSE (0,2,1,3,4), RESHAPE, SPLIT on channels, one half through a conv, CONCAT
 * on channels, a last conv. After optimize the shuffle runs on NHWC twins: besides the graph
 * input's and output's transposes, one rank-5 transpose is left (the shuffle itself). */
static void build_shuffle(ks__graph *g) {
    static const int32_t to_nhwc[5] = {4, 0, 2, 3, 1}, to_nchw[5] = {4, 0, 3, 1, 2};
    static const int32_t conv_ip[11] = {1, 1, 1, 1, 0, 0, 0, 0, 3, 1, 0};
    static const int32_t r5[6] = {5, 1, 2, 4, 4, 5}, r4[5] = {4, 1, 8, 4, 5};
    static const int32_t swap12[6] = {5, 0, 2, 1, 3, 4}, axis1[1] = {1};
    int32_t x = add_t(g, "x", 4, 1, 8, 4, 5), xh = add_t(g, "xh", 4, 1, 4, 5, 8);
    int32_t w1 = add_c(g, "w1", 4, 8, 1, 1, 8, 0.02f), w2 = add_c(g, "w2", 4, 4, 1, 1, 4, 0.07f);
    int32_t c1 = add_t(g, "c1", 4, 1, 4, 5, 8), c1n = add_t(g, "c1n", 4, 1, 8, 4, 5);
    int32_t s5 = add_t5(g, "s5", (int64_t[]){1, 2, 4, 4, 5});
    int32_t t5 = add_t5(g, "t5", (int64_t[]){1, 4, 2, 4, 5});
    int32_t sh = add_t(g, "sh", 4, 1, 8, 4, 5), a = add_t(g, "a", 4, 1, 4, 4, 5);
    int32_t b = add_t(g, "b", 4, 1, 4, 4, 5), bh = add_t(g, "bh", 4, 1, 4, 5, 4);
    int32_t c2 = add_t(g, "c2", 4, 1, 4, 5, 4), c2n = add_t(g, "c2n", 4, 1, 4, 4, 5);
    int32_t cc = add_t(g, "cc", 4, 1, 8, 4, 5), cch = add_t(g, "cch", 4, 1, 4, 5, 8);
    int32_t w3 = add_c(g, "w3", 4, 8, 1, 1, 8, -0.03f), c3 = add_t(g, "c3", 4, 1, 4, 5, 8);
    int32_t y = add_t(g, "y", 4, 1, 8, 4, 5);
    add_n(g, KS_OP_TRANSPOSE, x, -1, xh, to_nhwc, 5);
    add_conv(g, "conv1", xh, w1, -1, c1, conv_ip);
    add_n(g, KS_OP_TRANSPOSE, c1, -1, c1n, to_nchw, 5);
    add_n(g, KS_OP_RESHAPE, c1n, -1, s5, r5, 6);
    add_n(g, KS_OP_TRANSPOSE, s5, -1, t5, swap12, 6);
    add_n(g, KS_OP_RESHAPE, t5, -1, sh, r4, 5);
    int32_t halves[2] = {a, b};
    uint32_t idx;
    assert_int_equal(ks__graph_add_node(g, KS_OP_SPLIT, "split", 1, &sh, 2, halves, &idx), 0);
    g->nodes[idx].ip[0] = 1;
    add_n(g, KS_OP_TRANSPOSE, b, -1, bh, to_nhwc, 5);
    add_conv(g, "conv2", bh, w2, -1, c2, conv_ip);
    add_n(g, KS_OP_TRANSPOSE, c2, -1, c2n, to_nchw, 5);
    add_n(g, KS_OP_CONCAT, a, c2n, cc, axis1, 1);
    add_n(g, KS_OP_TRANSPOSE, cc, -1, cch, to_nhwc, 5);
    add_conv(g, "conv3", cch, w3, -1, c3, conv_ip);
    add_n(g, KS_OP_TRANSPOSE, c3, -1, y, to_nchw, 5);
    assert_int_equal(ks__graph_set_io(g, 1, &x, 1, &y), 0);
}

static void test_optimize_channel_shuffle(void **state) {
    (void)state;
    const ks__kernel_table *kt = ks__ref_kernels();
    if (!kt->k[KS_OP_CONV2D].run || !kt->k[KS_OP_SPLIT].run || !kt->k[KS_OP_TRANSPOSE].run) skip();
    ks__graph g;
    ks__graph_init(&g, NULL);
    build_shuffle(&g);
    float in[160];
    int64_t n0;
    float *ref = optimize_with_ref(&g, in, 160, &n0);
    int t4 = 0, t5 = 0, split_axis = -1;
    for (uint32_t i = 0; i < g.num_nodes; i++) {
        if (g.nodes[i].op == KS_OP_TRANSPOSE) {
            if (g.nodes[i].ip[0] == 5) {
                t5++;
                assert_int_equal(g.nodes[i].ip[4], 4); /* the last two axes swapped */
                assert_int_equal(g.nodes[i].ip[5], 3);
            } else {
                t4++;
            }
        }
        if (g.nodes[i].op == KS_OP_SPLIT) split_axis = g.nodes[i].ip[0];
    }
    assert_int_equal(t4, 2); /* graph input and output keep NCHW */
    assert_int_equal(t5, 1);
    assert_int_equal(split_axis, 3);
    expect_same_outputs(&g, in, ref, n0, 1e-5f);
    ks__graph_free(&g);
}

int main(void) {
    const struct CMUnitTest base[] = {
        cmocka_unit_test(test_tiny_model),
        cmocka_unit_test(test_unsupported_op),
        cmocka_unit_test(test_truncation_and_bitflips),
        cmocka_unit_test(test_bad_varints_and_lengths),
        cmocka_unit_test(test_optimize_conv_chain),
        cmocka_unit_test(test_optimize_conv_before_resize),
        cmocka_unit_test(test_optimize_channel_shuffle),
    };
    int fails = cmocka_run_group_tests_name("onnx_import", base, NULL, NULL);
    FILE *f = fopen(KS_SHARED_DATA "/MANIFEST.tsv", "rb");
    if (!f) {
        printf("skipping real-model tests: %s not found\n", KS_SHARED_DATA);
        return fails ? 1 : 77;
    }
    fclose(f);
    const struct CMUnitTest real[] = {
        cmocka_unit_test(test_real_models),
        cmocka_unit_test(test_real_model_truncation),
    };
    fails += cmocka_run_group_tests_name("onnx_import_real_models", real, NULL, NULL);
    return fails ? 1 : 0;
}
