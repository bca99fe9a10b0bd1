/* TFLite importer (engine/convert/tflite/) and the MediaPipe reference kernels.
 *
 * - every TFLite model of ../shared/data/MANIFEST.tsv imports, validates, and keeps the graph
 *   input/output names, shapes and dtypes listed in the manifest;
 * - hostile input: truncations at many lengths and random bit flips of a real model return a
 *   status (never crash; run under ASan to make that check strict);
 * - allocation failure at every Nth allocation returns KS_STATUS_OUT_OF_MEMORY without leaks;
 * - hand-checked cases for MP_TRANSFORM_LANDMARKS / MP_TRANSFORM_TENSOR_BILINEAR /
 *   MP_LANDMARKS_TO_MATRIX.
 * Without ../shared/data the model tests are skipped and the program exits with 77 after the
 * kernel tests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "convert.h"
#include "cpu_kernel.h"

#define MANIFEST KS_SHARED_DATA "/MANIFEST.tsv"
#define SMALL_MODEL KS_SHARED_DATA "/face_detection/face_detection_short_range.tflite"
#define CUSTOM_MODEL KS_SHARED_DATA "/face_landmarks/face_landmark_with_attention.tflite"

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

/* ---- manifest-driven import of every model ---- */

typedef struct io_spec {
    char name[128];
    int32_t rank;
    int64_t dims[KS_MAX_RANK];
    ks_dtype dtype;
} io_spec;

static ks_dtype dtype_from(const char *s) {
    if (strcmp(s, "float32") == 0) return KS_DTYPE_F32;
    if (strcmp(s, "uint8") == 0) return KS_DTYPE_U8;
    if (strcmp(s, "int8") == 0) return KS_DTYPE_I8;
    if (strcmp(s, "int32") == 0) return KS_DTYPE_I32;
    if (strcmp(s, "int64") == 0) return KS_DTYPE_I64;
    return KS_DTYPE_INVALID;
}

/* Parses "name 1x2x3 float32 [q(...)]; name2 ..." into specs. */
static int parse_io(char *text, io_spec *specs, int cap) {
    int n = 0;
    char *save = NULL;
    for (char *item = strtok_r(text, ";", &save); item && n < cap;
         item = strtok_r(NULL, ";", &save)) {
        char name[128], shape[128], dtype[32];
        while (*item == ' ')
            item++;
        if (sscanf(item, "%127s %127s %31s", name, shape, dtype) != 3) continue;
        io_spec *s = &specs[n];
        memset(s, 0, sizeof(*s));
        snprintf(s->name, sizeof(s->name), "%s", name);
        s->dtype = dtype_from(dtype);
        char *p = shape;
        while (*p && s->rank < KS_MAX_RANK) {
            s->dims[s->rank++] = strtoll(p, &p, 10);
            if (*p == 'x')
                p++;
            else
                break;
        }
        n++;
    }
    return n;
}

static void check_io(const ks__graph *g, const int32_t *ids, uint32_t num, const io_spec *specs,
                     int num_specs, const char *file, const char *what) {
    if ((int)num != num_specs)
        fail_msg("%s: %u graph %ss, manifest has %d", file, num, what, num_specs);
    for (int i = 0; i < num_specs; i++) {
        const ks__tensor *t = &g->tensors[ids[i]];
        if (strcmp(t->name, specs[i].name) != 0)
            fail_msg("%s: %s %d is '%s', manifest says '%s'", file, what, i, t->name,
                     specs[i].name);
        if (t->rank != specs[i].rank) fail_msg("%s: %s '%s' rank %d", file, what, t->name, t->rank);
        for (int32_t d = 0; d < t->rank; d++)
            if (t->dims[d] != specs[i].dims[d])
                fail_msg("%s: %s '%s' dim %d is %lld, manifest %lld", file, what, t->name, d,
                         (long long)t->dims[d], (long long)specs[i].dims[d]);
        if (t->dtype != specs[i].dtype)
            fail_msg("%s: %s '%s' dtype %d", file, what, t->name, (int)t->dtype);
    }
}

static void test_import_all_models(void **state) {
    (void)state;
    FILE *f = fopen(MANIFEST, "r");
    assert_non_null(f);
    char line[8192];
    int num_models = 0;
    while (fgets(line, sizeof(line), f)) {
        char *cols[9] = {0};
        int nc = 0;
        char *save = NULL;
        line[strcspn(line, "\r\n")] = 0;
        /* strtok would merge empty columns; split by hand. */
        char *p = line;
        while (nc < 9) {
            cols[nc++] = p;
            char *tab = strchr(p, '\t');
            if (!tab) break;
            *tab = 0;
            p = tab + 1;
        }
        (void)save;
        if (nc < 7 || strcmp(cols[4], "tflite") != 0) continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", KS_SHARED_DATA, cols[1]);
        size_t size = 0;
        uint8_t *data = read_file(path, &size);
        if (!data) fail_msg("cannot read %s", path);
        ks__graph g;
        char err[512] = "";
        ks__graph_init(&g, NULL);
        ks_status st = ks__import_tflite(data, size, path, &g, err, sizeof(err));
        if (st != KS_STATUS_OK) fail_msg("%s: import failed (%d): %s", cols[1], (int)st, err);
        st = ks__graph_validate(&g, err, sizeof(err));
        if (st != KS_STATUS_OK) fail_msg("%s: validate failed: %s", cols[1], err);
        io_spec ins[8], outs[16];
        int ni = parse_io(cols[5], ins, 8), no = parse_io(cols[6], outs, 16);
        check_io(&g, g.inputs, g.num_inputs, ins, ni, cols[1], "input");
        check_io(&g, g.outputs, g.num_outputs, outs, no, cols[1], "output");
        assert_string_equal(ks__graph_get_meta(&g, "producer"), "tflite");
        const char *base = strrchr(cols[1], '/');
        assert_string_equal(ks__graph_get_meta(&g, "source"), base ? base + 1 : cols[1]);
        assert_non_null(ks__graph_get_meta(&g, "tflite.description"));
        /* No fp16 constant may survive: DEQUANTIZE(fp16 const) and DENSIFY are folded. */
        for (uint32_t n = 0; n < g.num_nodes; n++) {
            const ks__node *nd = &g.nodes[n];
            if (nd->op == KS_OP_DEQUANTIZE && nd->inputs[0] >= 0)
                assert_false(g.tensors[nd->inputs[0]].flags & KS__TENSOR_CONST);
        }
        ks__graph_free(&g);
        free(data);
        num_models++;
    }
    fclose(f);
    assert_int_equal(num_models, 23);
}

/* The MediaPipe custom ops and the depthwise layout of a known model. */
static void test_custom_ops_mapped(void **state) {
    (void)state;
    size_t size = 0;
    uint8_t *data = read_file(CUSTOM_MODEL, &size);
    assert_non_null(data);
    ks__graph g;
    char err[512] = "";
    ks__graph_init(&g, NULL);
    assert_int_equal(ks__import_tflite(data, size, "attn.tflite", &g, err, sizeof(err)), 0);
    int l2m = 0, ttb = 0, tl = 0;
    for (uint32_t n = 0; n < g.num_nodes; n++) {
        const ks__node *nd = &g.nodes[n];
        if (nd->op == KS_OP_MP_LANDMARKS_TO_MATRIX) {
            l2m++;
            assert_int_equal(nd->ip[2], 16);
            assert_int_equal(nd->ip[3], 16);
            assert_true(nd->ip[4] >= 1 && nd->ip[4] <= 27);
            assert_true(nd->fp[1] > 0.0f);
        } else if (nd->op == KS_OP_MP_TRANSFORM_TENSOR_BILINEAR) {
            ttb++;
            assert_int_equal(nd->ip[0], 16);
            assert_int_equal(nd->ip[1], 16);
            assert_int_equal(nd->ip[2], 1);
        } else if (nd->op == KS_OP_MP_TRANSFORM_LANDMARKS) {
            tl++;
        } else if (nd->op == KS_OP_CONV2D && nd->ip[9] > 1) {
            const ks__tensor *w = &g.tensors[nd->inputs[1]];
            assert_int_equal(w->rank, 4);
            assert_int_equal(w->dims[3], 1); /* OHWI with groups == Cin */
            assert_int_equal(w->dtype, KS_DTYPE_F32);
        }
    }
    assert_int_equal(l2m, 3);
    assert_int_equal(ttb, 3);
    assert_int_equal(tl, 5);
    ks__graph_free(&g);
    free(data);
}

static void expect_failure_is_clean(const uint8_t *data, size_t size, const char *what) {
    ks__graph g;
    char err[512] = "";
    ks__graph_init(&g, NULL);
    ks_status st = ks__import_tflite(data, size, "hostile.tflite", &g, err, sizeof(err));
    if (st != KS_STATUS_OK) {
        if (st >= KS_STATUS_COUNT) fail_msg("%s: bad status %d", what, (int)st);
        if (strncmp(err, "hostile.tflite: ", 16) != 0) fail_msg("%s: message '%s'", what, err);
    } else {
        assert_int_equal(ks__graph_validate(&g, err, sizeof(err)), KS_STATUS_OK);
    }
    ks__graph_free(&g);
}

static void test_truncated(void **state) {
    (void)state;
    size_t size = 0;
    uint8_t *data = read_file(SMALL_MODEL, &size);
    assert_non_null(data);
    for (size_t n = 0; n < 256 && n < size; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exact size so ASan sees any overread */
        memcpy(copy, data, n);
        expect_failure_is_clean(copy, n, "truncated");
        free(copy);
    }
    for (size_t k = 0; k < 400; k++) {
        size_t n = (size_t)((double)size * (double)k / 400.0);
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, data, n);
        expect_failure_is_clean(copy, n, "truncated");
        free(copy);
    }
    free(data);
}

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_bit_flips(void **state) {
    (void)state;
    size_t size = 0;
    uint8_t *data = read_file(SMALL_MODEL, &size);
    assert_non_null(data);
    uint8_t *copy = malloc(size);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (int iter = 0; iter < 1500; iter++) {
        memcpy(copy, data, size);
        int flips = 1 + (int)(rng_next(&seed) % 8);
        for (int k = 0; k < flips; k++) {
            /* Most of the file is weights: bias the flips toward the structure at both ends. */
            uint64_t r = rng_next(&seed);
            size_t pos = (r & 1) ? (size_t)(r >> 8) % size
                                 : ((r & 2) ? (size_t)(r >> 8) % 4096
                                            : size - 1 - (size_t)(r >> 8) % 16384 % size);
            copy[pos] ^= (uint8_t)(1u << (rng_next(&seed) % 8));
        }
        expect_failure_is_clean(copy, size, "bit flip");
    }
    free(copy);
    free(data);
}

/* ---- allocation failure injection ---- */

typedef struct fail_alloc {
    long remaining; /* allocations left before failing; <0: never fail */
    long live;
    long count;
} fail_alloc;

static void *fa_alloc(void *user, size_t size, size_t alignment) {
    fail_alloc *fa = user;
    if (fa->remaining == 0) return NULL;
    if (fa->remaining > 0) fa->remaining--;
    void *p = NULL;
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    if (posix_memalign(&p, alignment, size ? size : 1) != 0) return NULL;
    fa->live++;
    fa->count++;
    return p;
}

static void fa_free(void *user, void *ptr) {
    fail_alloc *fa = user;
    if (ptr) fa->live--;
    free(ptr);
}

static void test_oom(void **state) {
    (void)state;
    size_t size = 0;
    uint8_t *data = read_file(SMALL_MODEL, &size);
    assert_non_null(data);
    fail_alloc fa = {-1, 0, 0};
    ks_allocator a = {fa_alloc, fa_free, &fa};
    ks__graph g;
    char err[512];
    ks__graph_init(&g, &a);
    assert_int_equal(ks__import_tflite(data, size, "m.tflite", &g, err, sizeof(err)), 0);
    ks__graph_free(&g);
    assert_int_equal(fa.live, 0);
    long total = fa.count;
    long step = total / 400 + 1;
    for (long n = 0; n < total; n += step) {
        fa.remaining = n;
        ks__graph_init(&g, &a);
        ks_status st = ks__import_tflite(data, size, "m.tflite", &g, err, sizeof(err));
        if (st != KS_STATUS_OUT_OF_MEMORY)
            fail_msg("failing allocation %ld: status %d (%s)", n, (int)st, err);
        ks__graph_free(&g);
        if (fa.live != 0) fail_msg("failing allocation %ld: %ld blocks leaked", n, fa.live);
    }
    free(data);
}

/* ---- inputs that need no model file ---- */

static void test_not_tflite(void **state) {
    (void)state;
    static const uint8_t junk[32] = {1, 2, 3, 4, 'O', 'N', 'N', 'X'};
    ks__graph g;
    char err[256] = "";
    ks__graph_init(&g, NULL);
    assert_int_equal(ks__import_tflite(junk, sizeof(junk), "x.bin", &g, err, sizeof(err)),
                     KS_STATUS_INVALID_MODEL);
    assert_non_null(strstr(err, "x.bin"));
    ks__graph_free(&g);
    ks__graph_init(&g, NULL);
    assert_int_equal(ks__import_tflite(NULL, 0, "x.bin", &g, err, sizeof(err)),
                     KS_STATUS_INVALID_MODEL);
    ks__graph_free(&g);
}

/* ---- MediaPipe kernels ---- */

typedef struct mp_case {
    ks__node node;
    ks__tensor def[3];
    ks__quant q[3];
    ks__rt_tensor t[3];
    ks__rt_tensor *in[2], *out[1];
    char err[256];
    ks__kernel_ctx ctx;
} mp_case;

static void mp_setup(mp_case *c, uint32_t op, uint32_t num_in) {
    memset(c, 0, sizeof(*c));
    c->node.op = op;
    c->node.name = "mp";
    for (int i = 0; i < 3; i++) {
        c->def[i].name = "t";
        c->t[i].quant = &c->q[i];
        c->t[i].def = &c->def[i];
    }
    c->in[0] = &c->t[0];
    c->in[1] = &c->t[1];
    c->out[0] = &c->t[2];
    c->ctx.node = &c->node;
    c->ctx.in = c->in;
    c->ctx.num_inputs = num_in;
    c->ctx.out = c->out;
    c->ctx.num_outputs = 1;
    c->ctx.err = c->err;
    c->ctx.err_cap = sizeof(c->err);
}

static void mp_tensor(ks__rt_tensor *t, int32_t rank, const int64_t *dims, float *data) {
    t->dtype = KS_DTYPE_F32;
    t->rank = rank;
    for (int32_t i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    t->data = data;
    t->size_bytes = (size_t)ks__numel(rank, dims) * 4;
}

static const ks__kernel *mp_kernel(uint32_t op) {
    const ks__kernel *k = &ks__ref_kernels()->k[op];
    assert_non_null(k->run);
    return k;
}

static void test_mp_transform_landmarks(void **state) {
    (void)state;
    mp_case c;
    mp_setup(&c, KS_OP_MP_TRANSFORM_LANDMARKS, 2);
    int64_t ld[3] = {1, 2, 3}, md[3] = {1, 4, 4};
    float lm[6] = {1, 2, 5, -1, 0.5f, 7};
    float m[16] = {2, 0, 9, 10, 0, 3, 9, 20, 0, 0, 1, 0, 0, 0, 0, 1};
    float out[6];
    mp_tensor(&c.t[0], 3, ld, lm);
    mp_tensor(&c.t[1], 3, md, m);
    const ks__kernel *k = mp_kernel(KS_OP_MP_TRANSFORM_LANDMARKS);
    assert_int_equal(ks__ref_prepare(&c.ctx), 0);
    assert_int_equal(c.t[2].rank, 3);
    assert_int_equal(c.t[2].dims[2], 3);
    c.t[2].data = out;
    assert_int_equal(k->run(&c.ctx), 0);
    const float want[6] = {12, 26, 5, 8, 21.5f, 7};
    for (int i = 0; i < 6; i++)
        assert_float_equal(out[i], want[i], 1e-6);
    /* v1: dims 2 and a scaled translation */
    c.node.ip[0] = 2;
    c.node.fp[0] = 0.5f;
    assert_int_equal(ks__ref_prepare(&c.ctx), 0);
    assert_int_equal(k->run(&c.ctx), 0);
    assert_float_equal(out[0], 2 * 1 + 5, 1e-6);  /* x of landmark 0 */
    assert_float_equal(out[1], 3 * 2 + 10, 1e-6); /* y of landmark 0 */
    assert_float_equal(out[2], 2 * 5 + 5, 1e-6);  /* x of landmark 1 (5, -1) */
    /* a bad matrix is an error, not a crash */
    int64_t bad[1] = {15};
    mp_tensor(&c.t[1], 1, bad, m);
    assert_int_equal(ks__ref_prepare(&c.ctx), KS_STATUS_INVALID_SHAPE);
}

static void test_mp_transform_tensor_bilinear(void **state) {
    (void)state;
    mp_case c;
    mp_setup(&c, KS_OP_MP_TRANSFORM_TENSOR_BILINEAR, 2);
    int64_t xd[4] = {1, 2, 3, 1}, md[3] = {1, 4, 4};
    float x[6] = {0, 1, 2, 10, 11, 12};
    /* v1: scale by 0.5 and shift x by 0.5 */
    float m[16] = {0.5f, 0, 0, 0.5f, 0, 0.5f, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    float out[2 * 4];
    mp_tensor(&c.t[0], 4, xd, x);
    mp_tensor(&c.t[1], 3, md, m);
    c.node.ip[0] = 2;
    c.node.ip[1] = 4;
    const ks__kernel *k = mp_kernel(KS_OP_MP_TRANSFORM_TENSOR_BILINEAR);
    assert_int_equal(ks__ref_prepare(&c.ctx), 0);
    assert_int_equal(c.t[2].dims[1], 2);
    assert_int_equal(c.t[2].dims[2], 4);
    c.t[2].data = out;
    assert_int_equal(k->run(&c.ctx), 0);
    /* row 0: sx = 0.5 + 0.5*ox -> 0.5, 1, 1.5, 2 ; row 1: sy = 0.5 */
    const float want[8] = {0.5f, 1, 1.5f, 2, 5.5f, 6, 6.5f, 7};
    for (int i = 0; i < 8; i++)
        assert_float_equal(out[i], want[i], 1e-6);
    /* outside the source -> 0 */
    m[3] = 10;
    assert_int_equal(k->run(&c.ctx), 0);
    assert_float_equal(out[0], 0, 0);
    /* v2 (pixel centres): identity matrix maps pixels onto themselves */
    float id[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    mp_tensor(&c.t[1], 3, md, id);
    c.node.ip[1] = 3;
    c.node.ip[2] = 1;
    assert_int_equal(ks__ref_prepare(&c.ctx), 0);
    assert_int_equal(k->run(&c.ctx), 0);
    for (int i = 0; i < 6; i++)
        assert_float_equal(out[i], x[i], 1e-6);
}

static void test_mp_landmarks_to_matrix(void **state) {
    (void)state;
    mp_case c;
    mp_setup(&c, KS_OP_MP_LANDMARKS_TO_MATRIX, 1);
    /* Four landmarks on an axis-aligned square of side 4 centred at (10, 20). */
    float lm[12] = {8, 18, 0, 12, 18, 0, 12, 22, 0, 8, 22, 0};
    int64_t ld[3] = {1, 4, 3};
    float out[16];
    mp_tensor(&c.t[0], 3, ld, lm);
    c.node.ip[0] = 0; /* left */
    c.node.ip[1] = 1; /* right: horizontal => rotation 0 */
    c.node.ip[2] = 16;
    c.node.ip[3] = 8;
    c.node.ip[4] = 1;
    c.node.ip[5] = 0xf;
    c.node.fp[0] = 0.0f;
    c.node.fp[1] = 2.0f;
    c.node.fp[2] = 1.0f;
    const ks__kernel *k = mp_kernel(KS_OP_MP_LANDMARKS_TO_MATRIX);
    assert_int_equal(ks__ref_prepare(&c.ctx), 0);
    assert_int_equal(c.t[2].rank, 3);
    c.t[2].data = out;
    assert_int_equal(k->run(&c.ctx), 0);
    /* T = shift(10,20) * scale(2*4/8, 1*4/16) * shift(-4, -8) */
    const float want[16] = {1, 0, 0, 6, 0, 0.25f, 0, 18, 0, 0, 1, 0, 0, 0, 0, 1};
    for (int i = 0; i < 16; i++)
        assert_float_equal(out[i], want[i], 1e-5);
    c.node.ip[5] = 1 << 7; /* landmark 7 does not exist */
    assert_int_equal(ks__ref_prepare(&c.ctx), KS_STATUS_INVALID_MODEL);
}

int main(void) {
    const struct CMUnitTest kernel_tests[] = {
        cmocka_unit_test(test_not_tflite),
        cmocka_unit_test(test_mp_transform_landmarks),
        cmocka_unit_test(test_mp_transform_tensor_bilinear),
        cmocka_unit_test(test_mp_landmarks_to_matrix),
    };
    const struct CMUnitTest model_tests[] = {
        cmocka_unit_test(test_import_all_models),
        cmocka_unit_test(test_custom_ops_mapped),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_bit_flips),
        cmocka_unit_test(test_oom),
    };
    int failed = cmocka_run_group_tests_name("tflite_kernels", kernel_tests, NULL, NULL);
    if (access(MANIFEST, R_OK) != 0) {
        printf("SKIP: %s is missing; model import tests not run\n", MANIFEST);
        return failed ? 1 : 77;
    }
    failed += cmocka_run_group_tests_name("tflite_import", model_tests, NULL, NULL);
    return failed ? 1 : 0;
}
