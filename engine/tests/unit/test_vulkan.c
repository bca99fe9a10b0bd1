/* The Vulkan backend (engine/backends/vulkan, docs/vulkan.md), step 1: every shader family
 * against the CPU on odd shapes (channels not multiples of 4), through sessions split between
 * the CPU host and the Vulkan device exactly as the runtime will make them.
 *
 * - binary ops (ADD SUB MUL DIV MAXIMUM MINIMUM): same shapes, a scalar, a per-channel [C]
 *   constant, a [1,1,1,C] input, a [H,1,1] constant, either side, with fused activations;
 * - unary ops (RELU RELU6 SIGMOID TANH HARD_SWISH);
 * - CONV2D: 3x3 stride 2 SAME, 1x1 at batch 2, 5x5 dilated with explicit pads, depthwise 3x3
 *   (multiplier 1) with RELU6, depthwise stride 2 SAME_LOWER, grouped with residual and PRELU;
 * - a graph whose unsupported op sits between two device runs (two partitions);
 * - BlazeFace short range from ../shared/data, split, against the CPU alone;
 * - device failures, injected: out of device memory at reshape, a failed submission, a lost
 *   device at the wait (status, message, no leak, and the session usable again);
 * - the refusals: KS_VULKAN_DEVICE out of range, and no driver at all (VK_ICD_FILENAMES and
 *   VK_DRIVER_FILES naming a file that does not exist).
 * Every split session also runs twice with different inputs (the recorded command buffer is
 * replayed) and proves that runs make no allocation.
 *
 * Tolerance: max |gpu - cpu| <= 1e-4 * max(1, max |cpu|) per output (the CPU reference
 * accumulates in double, the shaders in float); the model: relative L2 <= 1e-3.
 * Without a usable Vulkan device (no loader or no driver, e.g. mesa-vulkan-drivers missing)
 * the device tests are skipped with the reason; without ../shared/data the model test is. */
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backends/vulkan/vk_backend.h"
#include "backends/vulkan/vk_loader.h" /* VkResult values for the fault injection */
#include "convert.h"
#include "fileio.h"
#include "impl.h"
#include "ksm.h"
#include "src/model.h"
#include "src/session.h"

#define TOL 1e-4

static int g_have_vk;
static char g_why[256];

/* ---------------------------------------------------------------------------------------------
 * small graphs
 * ------------------------------------------------------------------------------------------- */

static int32_t tensor(ks__graph *g, const char *name, int32_t rank, const int64_t *dims) {
    int32_t id;
    assert_int_equal(ks__graph_add_tensor(g, name, KS_DTYPE_F32, rank, dims, &id), 0);
    return id;
}

static uint32_t g_seed;

static float frand(float lo, float hi) {
    g_seed = g_seed * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(g_seed >> 8) / 16777216.0f;
}

/* A constant of random values in [lo, hi] (vals given: those). */
static int32_t constant(ks__graph *g, const char *name, int32_t rank, const int64_t *dims,
                        const float *vals, float lo, float hi) {
    int32_t id = tensor(g, name, rank, dims);
    int64_t n = 1;
    for (int32_t k = 0; k < rank; k++)
        n *= dims[k];
    float *v = malloc((size_t)n * sizeof(float));
    assert_non_null(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = vals ? vals[i] : frand(lo, hi);
    assert_int_equal(ks__graph_set_const(g, id, v, (size_t)n * sizeof(float), true), 0);
    free(v);
    return id;
}

static ks__node *add(ks__graph *g, uint32_t op, const char *name, uint32_t ni, const int32_t *in,
                     int32_t out) {
    uint32_t idx;
    assert_int_equal(ks__graph_add_node(g, op, name, ni, in, 1, &out, &idx), 0);
    return &g->nodes[idx];
}

static ks_model *finish(ks__graph *g, uint32_t ni, const int32_t *in, uint32_t no,
                        const int32_t *out, uint8_t **image_out) {
    assert_int_equal(ks__graph_set_io(g, ni, in, no, out), 0);
    size_t n = 0;
    char err[256] = "";
    if (ks__ksm_write(g, image_out, &n, err, sizeof(err))) fail_msg("ksm_write: %s", err);
    ks__graph_free(g);
    ks_model *m = NULL;
    assert_int_equal(ks_model_load_buffer(*image_out, n, NULL, &m), KS_STATUS_OK);
    return m;
}

/* ---------------------------------------------------------------------------------------------
 * running a model on the CPU alone and split with Vulkan
 * ------------------------------------------------------------------------------------------- */

static size_t g_allocs;

static void *count_alloc(void *user, size_t size, size_t alignment) {
    (void)user;
    g_allocs++;
    void *p = NULL;
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    return posix_memalign(&p, alignment, size ? size : 1) == 0 ? p : NULL;
}

static void count_free(void *user, void *p) {
    (void)user;
    free(p);
}

typedef struct prof_log {
    int submits, host_nodes;
    uint64_t upload_ns, compute_ns, download_ns; /* summed over partitions and runs */
    const char *host_ops[16];                    /* the ops that ran on the host, each once */
    int num_host_ops;
} prof_log;

static void on_prof(void *user, const ks_op_profile *p) {
    prof_log *l = user;
    if (strcmp(p->kernel_name, "vulkan") == 0) {
        if (strcmp(p->op_name, "submit") == 0) l->submits++;
        if (strcmp(p->op_name, "upload") == 0) l->upload_ns += p->elapsed_ns;
        if (strcmp(p->op_name, "partition") == 0) l->compute_ns += p->elapsed_ns;
        if (strcmp(p->op_name, "download") == 0) l->download_ns += p->elapsed_ns;
        return;
    }
    l->host_nodes++;
    for (int i = 0; i < l->num_host_ops; i++)
        if (strcmp(l->host_ops[i], p->op_name) == 0) return;
    if (l->num_host_ops < 16) l->host_ops[l->num_host_ops++] = p->op_name;
}

typedef struct range {
    float lo, hi;
} range;

/* Input i gets values in r[i] (the last entry repeats). */
static void fill(ks_session *s, const ks_model *m, uint32_t seed, const range *r, uint32_t nr) {
    g_seed = seed;
    for (uint32_t i = 0; i < ks_model_num_inputs(m); i++) {
        ks_tensor t;
        assert_int_equal(ks_session_input(s, i, &t), KS_STATUS_OK);
        const range *ri = &r[i < nr ? i : nr - 1];
        float *v = t.data;
        for (size_t k = 0; k < t.size_bytes / sizeof(float); k++)
            v[k] = frand(ri->lo, ri->hi);
    }
}

static void need_vulkan(void) {
    if (!g_have_vk) {
        print_message("skipped: no usable Vulkan device (%s)\n", g_why);
        skip();
    }
}

/* Runs m on the CPU and split with Vulkan, twice with different inputs, and compares every
 * output. expect_parts >= 0: partitions per run. Returns the worst relative L2 (models) and
 * checks max-abs against TOL * scale when max_abs is set. */
static double compare(const char *what, const ks_model *m, const range *r, uint32_t nr,
                      int expect_parts, bool max_abs) {
    ks_session_desc d = {.num_threads = 1};
    ks_session *cpu = NULL, *gpu = NULL;
    assert_int_equal(ks__session_create_with(m, ks__model_graph(m), &d, ks__cpu_backend(), &cpu),
                     0);
    ks_allocator counting = {count_alloc, count_free, NULL};
    ks_session_desc dg = {.num_threads = 1, .allocator = &counting};
    ks_status st = ks__session_create_split(m, ks__model_graph(m), &dg, ks__cpu_backend(),
                                            ks__vulkan_backend(), &gpu);
    if (st) fail_msg("%s: split session: %s", what, ks_last_error(NULL));
    assert_int_equal(ks_session_reshape(cpu, NULL), KS_STATUS_OK);
    if (ks_session_reshape(gpu, NULL)) fail_msg("%s: reshape: %s", what, ks_last_error(gpu));
    prof_log log = {0};
    assert_int_equal(ks_session_set_profiler(gpu, on_prof, &log), KS_STATUS_OK);
    double worst_l2 = 0.0, worst_abs = 0.0;
    size_t allocs_after_first = 0;
    for (int run = 0; run < 3; run++) {
        uint32_t seed = 1234u + 77u * (uint32_t)run;
        fill(cpu, m, seed, r, nr);
        fill(gpu, m, seed, r, nr);
        assert_int_equal(ks_session_run(cpu), KS_STATUS_OK);
        if (ks_session_run(gpu)) fail_msg("%s: run: %s", what, ks_last_error(gpu));
        if (run == 0) allocs_after_first = g_allocs;
        for (uint32_t o = 0; o < ks_model_num_outputs(m); o++) {
            ks_tensor a, b;
            assert_int_equal(ks_session_output(cpu, o, &a), KS_STATUS_OK);
            assert_int_equal(ks_session_output(gpu, o, &b), KS_STATUS_OK);
            assert_int_equal(a.size_bytes, b.size_bytes);
            const float *x = a.data, *y = b.data;
            size_t n = a.size_bytes / sizeof(float);
            double err = 0.0, scale = 1.0, e2 = 0.0, r2 = 0.0;
            for (size_t k = 0; k < n; k++) {
                double e = fabs((double)x[k] - (double)y[k]);
                if (!isnan(err) && !(e <= err)) err = e; /* a NaN sticks: the worst */
                if (fabs(x[k]) > scale) scale = fabs(x[k]);
                e2 += e * e;
                r2 += (double)x[k] * x[k];
            }
            double l2 = sqrt(e2) / (sqrt(r2) > 1e-30 ? sqrt(r2) : 1.0);
            if (!(l2 <= worst_l2)) worst_l2 = l2;
            if (err / scale > worst_abs) worst_abs = err / scale;
            if (max_abs && !(err <= TOL * scale))
                fail_msg("%s: output %u: max |gpu - cpu| = %g, above %g (value scale %g)", what, o,
                         err, TOL * scale, scale);
            memset(b.data, 0xff, b.size_bytes); /* the next run must write it again */
        }
    }
    if (g_allocs != allocs_after_first)
        fail_msg("%s: runs allocated %zu times", what, g_allocs - allocs_after_first);
    if (expect_parts >= 0 && log.submits != 3 * expect_parts)
        fail_msg("%s: %d partitions per run, expected %d", what, log.submits / 3, expect_parts);
    char ops[256] = "";
    for (int i = 0; i < log.num_host_ops; i++)
        snprintf(ops + strlen(ops), sizeof(ops) - strlen(ops), "%s%s", i ? " " : " (",
                 log.host_ops[i]);
    if (log.num_host_ops) snprintf(ops + strlen(ops), sizeof(ops) - strlen(ops), ")");
    print_message("%s: %d partition(s), %d host node(s)%s per run; max abs err / scale %.3g, "
                  "rel L2 %.3g; device upload/compute/download %.3f/%.3f/%.3f ms per run\n",
                  what, log.submits / 3, log.host_nodes / 3, ops, worst_abs, worst_l2,
                  (double)log.upload_ns / 3e6, (double)log.compute_ns / 3e6,
                  (double)log.download_ns / 3e6);
    if (log.compute_ns == 0) fail_msg("%s: the device reported no compute time", what);
    ks_session_destroy(gpu);
    ks_session_destroy(cpu);
    return worst_l2;
}

/* ---------------------------------------------------------------------------------------------
 * elementwise
 * ------------------------------------------------------------------------------------------- */

static const uint32_t k_binary_ops[6] = {KS_OP_ADD, KS_OP_SUB,     KS_OP_MUL,
                                         KS_OP_DIV, KS_OP_MAXIMUM, KS_OP_MINIMUM};

/* y_op = op(x, b) for every binary op, plus extra nodes: (b, x) reversed with op rev_op and
 * ADD with fused activation act. b is an input when b_dims is runtime, else a constant. */
static void binary_case(const char *what, int32_t b_rank, const int64_t *b_dims, bool b_input,
                        const float *b_vals, uint32_t rev_op, int32_t act, float alpha) {
    need_vulkan();
    ks__graph g;
    ks__graph_init(&g, NULL);
    int64_t xd[4] = {1, 7, 5, 3};
    int32_t x = tensor(&g, "x", 4, xd), b;
    g_seed = 99;
    if (b_input)
        b = tensor(&g, "b", b_rank, b_dims);
    else
        b = constant(&g, "b", b_rank, b_dims, b_vals, 0.5f, 2.5f);
    int32_t outs[8];
    uint32_t no = 0;
    char name[32];
    for (int k = 0; k < 6; k++) {
        snprintf(name, sizeof(name), "y%d", k);
        outs[no] = tensor(&g, name, 4, xd);
        int32_t in[2] = {x, b};
        add(&g, k_binary_ops[k], name, 2, in, outs[no++]);
    }
    outs[no] = tensor(&g, "rev", 4, xd);
    int32_t rin[2] = {b, x};
    add(&g, rev_op, "rev", 2, rin, outs[no++]);
    outs[no] = tensor(&g, "act", 4, xd);
    int32_t ain[2] = {x, b};
    ks__node *n = add(&g, KS_OP_ADD, "act", 2, ain, outs[no++]);
    n->ip[0] = act;
    n->fp[0] = alpha;
    int32_t ins[2] = {x, b};
    uint8_t *img = NULL;
    ks_model *m = finish(&g, b_input ? 2 : 1, ins, no, outs, &img);
    /* x in [-2, 2]; b (a divisor) in [0.5, 2.5] */
    const range r[2] = {{-2.0f, 2.0f}, {0.5f, 2.5f}};
    compare(what, m, r, 2, 1, true);
    ks_model_destroy(m);
    free(img);
}

static void test_binary_same_shape(void **state) {
    (void)state;
    int64_t d[4] = {1, 7, 5, 3};
    binary_case("binary, same shapes", 4, d, true, NULL, KS_OP_DIV, KS_ACT_RELU6, 0.0f);
}

static void test_binary_scalar(void **state) {
    (void)state;
    const float v = 1.25f;
    binary_case("binary, rank-0 scalar", 0, NULL, false, &v, KS_OP_SUB, KS_ACT_RELU, 0.0f);
    int64_t one[1] = {1};
    const float w = -0.75f;
    binary_case("binary, [1] scalar", 1, one, false, &w, KS_OP_MAXIMUM, KS_ACT_SIGMOID, 0.0f);
}

static void test_binary_per_channel(void **state) {
    (void)state;
    int64_t c[1] = {3};
    const float v[3] = {0.5f, -1.5f, 2.0f};
    binary_case("binary, [C] constant", 1, c, false, v, KS_OP_SUB, KS_ACT_LEAKY_RELU, 0.2f);
    int64_t c4[4] = {1, 1, 1, 3};
    binary_case("binary, [1,1,1,C] input", 4, c4, true, NULL, KS_OP_MUL, KS_ACT_HARD_SWISH, 0.0f);
    int64_t h[3] = {7, 1, 1};
    binary_case("binary, [H,1,1] constant", 3, h, false, NULL, KS_OP_MINIMUM, KS_ACT_TANH, 0.0f);
}

static void test_unary(void **state) {
    (void)state;
    need_vulkan();
    static const uint32_t ops[5] = {KS_OP_RELU, KS_OP_RELU6, KS_OP_SIGMOID, KS_OP_TANH,
                                    KS_OP_HARD_SWISH};
    ks__graph g;
    ks__graph_init(&g, NULL);
    int64_t xd[4] = {1, 7, 5, 3};
    int32_t x = tensor(&g, "x", 4, xd), outs[5];
    char name[32];
    for (int k = 0; k < 5; k++) {
        snprintf(name, sizeof(name), "u%d", k);
        outs[k] = tensor(&g, name, 4, xd);
        add(&g, ops[k], name, 1, &x, outs[k]);
    }
    uint8_t *img = NULL;
    ks_model *m = finish(&g, 1, &x, 5, outs, &img);
    const range r[1] = {{-8.0f, 8.0f}};
    compare("unary", m, r, 1, 1, true);
    ks_model_destroy(m);
    free(img);
}

/* ---------------------------------------------------------------------------------------------
 * CONV2D
 * ------------------------------------------------------------------------------------------- */

typedef struct conv_spec {
    const char *what;
    int64_t x[4];   /* NHWC */
    int64_t w[4];   /* Co, KH, KW, Ci/groups */
    int32_t ip[11]; /* stride_h, stride_w, dil_h, dil_w, pads t l b r, pad_mode, groups, act */
    bool bias, residual, prelu;
} conv_spec;

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t lo, int64_t hi,
                        int32_t mode) {
    int64_t keff = (k - 1) * d + 1;
    if (mode == KS_PAD_SAME_UPPER || mode == KS_PAD_SAME_LOWER) return (in + s - 1) / s;
    if (mode == KS_PAD_VALID) return (in - keff) / s + 1;
    return (in + lo + hi - keff) / s + 1;
}

static void conv_case(const conv_spec *c) {
    need_vulkan();
    ks__graph g;
    ks__graph_init(&g, NULL);
    g_seed = 7;
    int32_t x = tensor(&g, "x", 4, c->x);
    int32_t w = constant(&g, "w", 4, c->w, NULL, -1.0f, 1.0f);
    int32_t b = c->bias ? constant(&g, "bias", 1, &c->w[0], NULL, -0.5f, 0.5f) : -1;
    const int32_t *ip = c->ip;
    int64_t yd[4] = {
        c->x[0],
        out_size(c->x[1], c->w[1], ip[0] ? ip[0] : 1, ip[2] ? ip[2] : 1, ip[4], ip[6], ip[8]),
        out_size(c->x[2], c->w[2], ip[1] ? ip[1] : 1, ip[3] ? ip[3] : 1, ip[5], ip[7], ip[8]),
        c->w[0]};
    int32_t res = c->residual ? tensor(&g, "res", 4, yd) : -1;
    int32_t slope = c->prelu ? constant(&g, "slope", 1, &c->w[0], NULL, 0.05f, 0.5f) : -1;
    int32_t y = tensor(&g, "y", 4, yd);
    int32_t in[5] = {x, w, b, res, slope};
    uint32_t ni = c->prelu ? 5 : (c->residual ? 4 : 3);
    ks__node *n = add(&g, KS_OP_CONV2D, "conv", ni, in, y);
    memcpy(n->ip, ip, sizeof(c->ip));
    int32_t ins[2] = {x, res};
    uint8_t *img = NULL;
    ks_model *m = finish(&g, c->residual ? 2 : 1, ins, 1, &y, &img);
    const range r[2] = {{-1.0f, 1.0f}, {-2.0f, 2.0f}};
    compare(c->what, m, r, 2, 1, true);
    ks_model_destroy(m);
    free(img);
}

static void test_conv(void **state) {
    (void)state;
    /* ip: sh sw dh dw pt pl pb pr mode groups act */
    const conv_spec specs[] = {
        {"conv 3x3 stride 2 SAME",
         {1, 7, 5, 3},
         {5, 3, 3, 3},
         {2, 2, 0, 0, 0, 0, 0, 0, KS_PAD_SAME_UPPER, 0, KS_ACT_NONE},
         true,
         false,
         false},
        {"conv 1x1 batch 2 RELU",
         {2, 7, 5, 3},
         {7, 1, 1, 3},
         {1, 1, 1, 1, 0, 0, 0, 0, KS_PAD_VALID, 1, KS_ACT_RELU},
         false,
         false,
         false},
        {"conv 5x5 dilation 2, explicit pads, TANH",
         {1, 13, 11, 3},
         {4, 5, 5, 3},
         {1, 1, 2, 2, 3, 2, 1, 4, KS_PAD_EXPLICIT, 0, KS_ACT_TANH},
         true,
         false,
         false},
        {"depthwise 3x3 RELU6",
         {1, 7, 5, 5},
         {5, 3, 3, 1},
         {1, 1, 1, 1, 0, 0, 0, 0, KS_PAD_SAME_UPPER, 5, KS_ACT_RELU6},
         true,
         false,
         false},
        {"depthwise 3x3 stride 2 SAME_LOWER HARD_SWISH",
         {1, 9, 7, 5},
         {5, 3, 3, 1},
         {2, 2, 1, 1, 0, 0, 0, 0, KS_PAD_SAME_LOWER, 5, KS_ACT_HARD_SWISH},
         false,
         false,
         false},
        {"grouped 3x3 residual PRELU",
         {1, 6, 5, 6},
         {4, 3, 3, 3},
         {1, 1, 1, 1, 0, 0, 0, 0, KS_PAD_SAME_UPPER, 2, KS_ACT_PRELU},
         true,
         true,
         true},
    };
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
        conv_case(&specs[i]);
}

/* ---------------------------------------------------------------------------------------------
 * partitions around a host op, a real model
 * ------------------------------------------------------------------------------------------- */

/* x -> conv (device) -> NEG (host: not a Vulkan op) -> conv, ADD (device) -> y */
static void test_mixed(void **state) {
    (void)state;
    need_vulkan();
    ks__graph g;
    ks__graph_init(&g, NULL);
    g_seed = 3;
    int64_t xd[4] = {1, 9, 7, 3}, w1[4] = {4, 3, 3, 3}, w2[4] = {5, 3, 3, 4};
    int64_t t1d[4] = {1, 9, 7, 4}, yd[4] = {1, 9, 7, 5}, c5[1] = {5};
    int32_t x = tensor(&g, "x", 4, xd);
    int32_t wa = constant(&g, "wa", 4, w1, NULL, -1.0f, 1.0f);
    int32_t wb = constant(&g, "wb", 4, w2, NULL, -1.0f, 1.0f);
    int32_t bb = constant(&g, "bb", 1, c5, NULL, -0.5f, 0.5f);
    int32_t cc = constant(&g, "cc", 1, c5, NULL, -0.5f, 0.5f);
    int32_t t1 = tensor(&g, "t1", 4, t1d), t2 = tensor(&g, "t2", 4, t1d);
    int32_t t3 = tensor(&g, "t3", 4, yd), y = tensor(&g, "y", 4, yd);
    int32_t in1[3] = {x, wa, -1};
    ks__node *n = add(&g, KS_OP_CONV2D, "conv_a", 3, in1, t1);
    n->ip[8] = KS_PAD_SAME_UPPER;
    n->ip[10] = KS_ACT_RELU;
    add(&g, KS_OP_NEG, "neg", 1, &t1, t2);
    int32_t in2[3] = {t2, wb, bb};
    n = add(&g, KS_OP_CONV2D, "conv_b", 3, in2, t3);
    n->ip[8] = KS_PAD_SAME_UPPER;
    int32_t in3[2] = {t3, cc};
    add(&g, KS_OP_ADD, "add", 2, in3, y);
    uint8_t *img = NULL;
    ks_model *m = finish(&g, 1, &x, 1, &y, &img);
    const range r[1] = {{-1.0f, 1.0f}};
    compare("device, host NEG, device", m, r, 1, 2, true);
    ks_model_destroy(m);
    free(img);
}

static void test_blazeface(void **state) {
    (void)state;
    need_vulkan();
    const char *rel = "face_detection/face_detection_short_range.tflite";
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", KS_SHARED_DATA, rel);
    size_t n = 0;
    uint8_t *src = NULL;
    char rerr[256] = "";
    if (ks_read_file(path, (size_t)64 << 20, &src, &n, rerr, sizeof(rerr))) {
        print_message("skipped: %s\n", rerr);
        skip();
    }
    ks__graph g;
    ks__graph_init(&g, NULL);
    char err[256] = "";
    assert_int_equal(ks__import_any(src, n, rel, &g, err, sizeof(err)), KS_STATUS_OK);
    free(src);
    assert_int_equal(ks__graph_optimize(&g, err, sizeof(err)), KS_STATUS_OK);
    uint8_t *img = NULL;
    size_t size = 0;
    assert_int_equal(ks__ksm_write(&g, &img, &size, err, sizeof(err)), KS_STATUS_OK);
    ks__graph_free(&g);
    ks_model *m = NULL;
    assert_int_equal(ks_model_load_buffer(img, size, NULL, &m), KS_STATUS_OK);
    const range r[1] = {{-1.0f, 1.0f}};
    double l2 = compare("BlazeFace short range", m, r, 1, -1, false);
    if (!(l2 <= 1e-3)) fail_msg("BlazeFace: relative L2 %g above 1e-3", l2);
    ks_model_destroy(m);
    free(img);
}

/* ---------------------------------------------------------------------------------------------
 * refusals
 * ------------------------------------------------------------------------------------------- */

static ks_model *relu_model(uint8_t **img) {
    ks__graph g;
    ks__graph_init(&g, NULL);
    int64_t d[4] = {1, 3, 3, 5};
    int32_t x = tensor(&g, "x", 4, d), y = tensor(&g, "y", 4, d);
    add(&g, KS_OP_RELU, "relu", 1, &x, y);
    return finish(&g, 1, &x, 1, &y, img);
}

static void test_bad_device_index(void **state) {
    (void)state;
    need_vulkan();
    uint8_t *img = NULL;
    ks_model *m = relu_model(&img);
    setenv("KS_VULKAN_DEVICE", "99", 1);
    ks_session *s = NULL;
    ks_status st = ks__session_create_split(m, ks__model_graph(m), NULL, ks__cpu_backend(),
                                            ks__vulkan_backend(), &s);
    unsetenv("KS_VULKAN_DEVICE");
    assert_int_equal(st, KS_STATUS_UNSUPPORTED);
    assert_null(s);
    print_message("refusal: %s\n", ks_last_error(NULL));
    assert_non_null(strstr(ks_last_error(NULL), "KS_VULKAN_DEVICE=99"));
    ks_model_destroy(m);
    free(img);
}

/* With no driver to find, session creation is refused with a reason naming Vulkan, and the CPU
 * keeps working. Runs with or without a Vulkan device. */
static void test_no_driver(void **state) {
    (void)state;
    char keep[2][512];
    const char *names[2] = {"VK_ICD_FILENAMES", "VK_DRIVER_FILES"};
    int had[2];
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(names[i]);
        had[i] = v != NULL;
        snprintf(keep[i], sizeof(keep[i]), "%s", v ? v : "");
        setenv(names[i], "/nonexistent/kestrel_no_vulkan_driver.json", 1);
    }
    uint8_t *img = NULL;
    ks_model *m = relu_model(&img);
    ks_session *s = NULL;
    ks_status st = ks__session_create_split(m, ks__model_graph(m), NULL, ks__cpu_backend(),
                                            ks__vulkan_backend(), &s);
    for (int i = 0; i < 2; i++) {
        if (had[i])
            setenv(names[i], keep[i], 1);
        else
            unsetenv(names[i]);
    }
    assert_int_equal(st, KS_STATUS_UNSUPPORTED);
    assert_null(s);
    print_message("refusal: %s\n", ks_last_error(NULL));
    assert_non_null(strstr(ks_last_error(NULL), "Vulkan"));
    assert_int_equal(ks__session_create_with(m, ks__model_graph(m), NULL, ks__cpu_backend(), &s),
                     KS_STATUS_OK);
    assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
    assert_int_equal(ks_session_run(s), KS_STATUS_OK);
    ks_session_destroy(s);
    ks_model_destroy(m);
    free(img);
}

/* ---------------------------------------------------------------------------------------------
 * device failures (fault injection, vk_backend.h)
 * ------------------------------------------------------------------------------------------- */

/* y = relu(conv3x3(x) + b): constants to upload, so reshape allocates and waits. */
static ks_model *conv_model(uint8_t **img) {
    ks__graph g;
    ks__graph_init(&g, NULL);
    g_seed = 11;
    int64_t xd[4] = {1, 6, 5, 3}, wd[4] = {4, 3, 3, 3}, bd[1] = {4}, yd[4] = {1, 6, 5, 4};
    int32_t x = tensor(&g, "x", 4, xd), y = tensor(&g, "y", 4, yd);
    int32_t w = constant(&g, "w", 4, wd, NULL, -1.0f, 1.0f);
    int32_t b = constant(&g, "b", 1, bd, NULL, -0.5f, 0.5f);
    int32_t in[3] = {x, w, b};
    ks__node *n = add(&g, KS_OP_CONV2D, "conv", 3, in, y);
    n->ip[8] = KS_PAD_SAME_UPPER;
    n->ip[10] = KS_ACT_RELU;
    return finish(&g, 1, &x, 1, &y, img);
}

/* Runs both sessions on the same input and checks the device's output. */
static void run_and_check(ks_session *cpu, ks_session *gpu, const ks_model *m, uint32_t seed) {
    const range r[1] = {{-1.0f, 1.0f}};
    fill(cpu, m, seed, r, 1);
    fill(gpu, m, seed, r, 1);
    assert_int_equal(ks_session_run(cpu), KS_STATUS_OK);
    if (ks_session_run(gpu)) fail_msg("run: %s", ks_last_error(gpu));
    ks_tensor a, b;
    assert_int_equal(ks_session_output(cpu, 0, &a), KS_STATUS_OK);
    assert_int_equal(ks_session_output(gpu, 0, &b), KS_STATUS_OK);
    const float *x = a.data, *y = b.data;
    for (size_t k = 0; k < a.size_bytes / sizeof(float); k++)
        if (!(fabs((double)x[k] - (double)y[k]) <= TOL * 4.0))
            fail_msg("element %zu: cpu %g, vulkan %g", k, (double)x[k], (double)y[k]);
}

static void expect_failure(ks_status got, ks_status want, ks_session *s, const char *needle) {
    const char *msg = ks_last_error(s);
    print_message("injected: %s\n", msg);
    assert_int_equal(got, want);
    if (!strstr(msg, needle)) fail_msg("message '%s' lacks '%s'", msg, needle);
}

/* Out of device memory at reshape (first allocation, then one in the middle of a partition's
 * resources), a failed submission and a lost device at the wait: each gives its status and a
 * message that says what failed, leaks nothing (ASan), and the session works
 * again as documented (after a submission failure at once; after a failed wait, after a
 * reshape). */
static void test_faults(void **state) {
    (void)state;
    need_vulkan();
    uint8_t *img = NULL;
    ks_model *m = conv_model(&img);
    ks_session *cpu = NULL, *gpu = NULL;
    assert_int_equal(ks__session_create_with(m, ks__model_graph(m), NULL, ks__cpu_backend(), &cpu),
                     KS_STATUS_OK);
    assert_int_equal(ks_session_reshape(cpu, NULL), KS_STATUS_OK);
    ks__vk_fault_hooks(true);
    ks_status st = ks__session_create_split(m, ks__model_graph(m), NULL, ks__cpu_backend(),
                                            ks__vulkan_backend(), &gpu);
    if (st) fail_msg("split session: %s", ks_last_error(NULL));

    for (uint32_t after = 0; after < 3; after++) {
        ks__vk_fault_inject(KS__VK_FAULT_ALLOC, after, VK_ERROR_OUT_OF_DEVICE_MEMORY);
        expect_failure(ks_session_reshape(gpu, NULL), KS_STATUS_OUT_OF_MEMORY, gpu,
                       "out of device memory");
        assert_int_equal(ks_session_run(gpu), KS_STATUS_INVALID_STATE);
    }
    if (ks_session_reshape(gpu, NULL)) fail_msg("reshape: %s", ks_last_error(gpu));
    run_and_check(cpu, gpu, m, 1);

    ks__vk_fault_inject(KS__VK_FAULT_SUBMIT, 0, VK_ERROR_OUT_OF_DEVICE_MEMORY);
    const range r[1] = {{-1.0f, 1.0f}};
    fill(gpu, m, 2, r, 1);
    expect_failure(ks_session_run(gpu), KS_STATUS_OUT_OF_MEMORY, gpu, "vkQueueSubmit");
    run_and_check(cpu, gpu, m, 3); /* nothing was queued: the next run just works */

    ks__vk_fault_inject(KS__VK_FAULT_WAIT, 0, VK_ERROR_DEVICE_LOST);
    fill(gpu, m, 4, r, 1);
    expect_failure(ks_session_run(gpu), KS_STATUS_INTERNAL, gpu, "VK_ERROR_DEVICE_LOST");
    assert_non_null(strstr(ks_last_error(gpu), "ks_session_reshape"));
    assert_int_equal(ks_session_run(gpu), KS_STATUS_INVALID_STATE);
    if (ks_session_reshape(gpu, NULL)) fail_msg("reshape: %s", ks_last_error(gpu));
    run_and_check(cpu, gpu, m, 5);

    ks__vk_fault_hooks(false);
    ks_session_destroy(gpu);
    ks_session_destroy(cpu);
    ks_model_destroy(m);
    free(img);
}

/* Opens the device once to learn whether the device tests can run. */
static int probe(void **state) {
    (void)state;
    const ks__backend *vk = ks__vulkan_backend();
    void *dev = NULL;
    if (vk->device_create(NULL, &dev, g_why, sizeof(g_why)) == KS_STATUS_OK) {
        g_have_vk = 1;
        vk->device_destroy(dev);
    } else {
        print_message("no usable Vulkan device: %s (device tests skip)\n", g_why);
    }
    return 0;
}

/* The Vulkan loader unloads the driver at vkDestroyInstance. Memory that Mesa 22.3's lavapipe
 * keeps in its own static data (128 bytes per device) then looks leaked to LeakSanitizer, with
 * "<unknown module>" frames that no suppression can name. Holding lavapipe loaded for the
 * process keeps that memory reachable, as in any process that keeps a device; Kestrel's own
 * leaks are still reported. With another driver, or none, this does nothing. */
static void hold_lavapipe(void) {
    (void)dlopen("libvulkan_lvp.so", RTLD_NOW | RTLD_LOCAL);
}

int main(void) {
    hold_lavapipe();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binary_same_shape),
        cmocka_unit_test(test_binary_scalar),
        cmocka_unit_test(test_binary_per_channel),
        cmocka_unit_test(test_unary),
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_mixed),
        cmocka_unit_test(test_blazeface),
        cmocka_unit_test(test_faults),
        cmocka_unit_test(test_bad_device_index),
        cmocka_unit_test(test_no_driver),
    };
    return cmocka_run_group_tests(tests, probe, NULL);
}
