/* The Vulkan backend (engine/backends/vulkan, docs/vulkan.md): every shader family against the
 * CPU on odd shapes (channels not multiples of 4), through sessions split between the CPU host
 * and the Vulkan device exactly as the runtime will make them.
 *
 * - binary ops (ADD SUB MUL DIV MAXIMUM MINIMUM): same shapes, a scalar, a per-channel [C]
 *   constant, a [1,1,1,C] input, a [H,1,1] constant, either side, with fused activations;
 * - unary ops (RELU RELU6 SIGMOID TANH HARD_SWISH, then EXP ABS NEG FLOOR CEIL CLIP ELU
 *   HARD_SIGMOID LEAKY_RELU RELU_N1_TO_1 SQRT RSQRT LOG);
 * - CONV2D: 3x3 stride 2 SAME, 1x1 at batch 2, 5x5 dilated with explicit pads, depthwise 3x3
 *   (multiplier 1) with RELU6, depthwise stride 2 SAME_LOWER, grouped with residual and PRELU;
 * - step 2's families, one graph each with every node in one partition: PAD, POOL2D, the layout
 *   ops (CONCAT SPLIT TRANSPOSE SLICE PACK UNPACK DEPTH_TO_SPACE SPACE_TO_DEPTH), RESIZE,
 *   SOFTMAX / LOG_SOFTMAX, FULLY_CONNECTED / MATMUL, CONV2D_TRANSPOSE, REDUCE, and the views
 *   (RESHAPE SQUEEZE UNSQUEEZE) as aliases;
 * - a graph whose unsupported op sits between two device runs (two partitions);
 * - whole models of the standard set (BlazeFace short range and four more, from ../shared/data or
 *   models/), split, against the CPU alone, with their partition counts;
 * - device failures, injected: out of device memory at reshape, a failed submission, a lost
 *   device at the wait (status, message, no leak, and the session usable again);
 * - the refusals: KS_VULKAN_DEVICE out of range, and no driver at all (VK_ICD_FILENAMES and
 *   VK_DRIVER_FILES naming a file that does not exist).
 * - the fp16 modes: the shader families again in KS_PRECISION_FP16, and BlazeFace (both modes)
 *   and selfie_segmentation_landscape (fp16) on a real photo through ks_session_create, against
 *   fp32 (relative L2 <= 5e-3) and at task level against the CPU (face box IoU, keypoints, mask
 *   IoU);
 * - the persisted pipeline cache (written, read back, corrupt and foreign files ignored with a
 *   warning) and KS_BACKEND_AUTO falling back to the CPU on injected device failures;
 * - the Vulkan validation layers (when installed) watch the whole suite: any error fails.
 * Every split session also runs again with different inputs (the recorded command buffer is
 * replayed) and proves that runs make no allocation.
 *
 * Tolerance: max |gpu - cpu| <= 1e-4 * max(1, max |cpu|) per output (the CPU reference
 * accumulates in double, the shaders in float); the models: relative L2 <= 1e-3.
 * Without a usable Vulkan device (no loader or no driver, e.g. mesa-vulkan-drivers missing)
 * the device tests are skipped with the reason; a missing model is skipped with a message. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* getpid */

#include <cmocka.h>

#include "backends/vulkan/vk_backend.h"
#include "backends/vulkan/vk_loader.h" /* VkResult values for the fault injection */
#include "convert.h"
#include "fileio.h"
#include "image_io.h"
#include "impl.h"
#include "ksm.h"
#include "src/model.h"
#include "src/session.h"
#include "src/shape_elementwise.h"

#define TOL 1e-4
/* The fp16 modes: max |gpu - cpu| per output against the value scale (fp16 rounds to 2^-11
 * relative, inputs, weights and every intermediate), and whole models' relative L2 against the
 * Vulkan fp32 output (issue 24). */
#define TOL_F16 5e-3
#define L2_F16 5e-3
/* fp16's smallest normal number: outputs whose RMS is below it are checked for max absolute
 * error <= F16_TINY instead of relative L2. */
#define F16_TINY 6.1e-5

/* The precision the split sessions of compare_runs ask for (their desc's precision). */
static ks_precision g_prec = KS_PRECISION_DEFAULT;

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
    int device_nodes; /* per-node rows of device partitions (where the queue has timestamps) */
    uint64_t upload_ns, compute_ns, download_ns; /* summed over partitions and runs */
    const char *host_ops[16];                    /* the ops that ran on the host, each once */
    int num_host_ops;
    /* ks_op_profile.dispatches: summed over device rows; rows that broke its rules (a host row
     * or a view with dispatches, a device node or partition row without), the first one named */
    uint64_t dispatches;
    int bad_dispatch_rows;
    char bad_dispatch[96];
} prof_log;

static void bad_dispatch_row(prof_log *l, const ks_op_profile *p) {
    if (!l->bad_dispatch_rows++)
        snprintf(l->bad_dispatch, sizeof(l->bad_dispatch), "%s '%s' (%s): %u dispatches",
                 p->op_name, p->node_name ? p->node_name : "", p->kernel_name, p->dispatches);
}

/* The device kernels that ran since the last reset, each once, space-separated (test_conv checks
 * which shader a case reached). */
static char g_kernels_seen[1024];

static void on_prof(void *user, const ks_op_profile *p) {
    prof_log *l = user;
    if (strncmp(p->kernel_name, "vk_", 3) == 0 && !strstr(g_kernels_seen, p->kernel_name) &&
        strlen(g_kernels_seen) + strlen(p->kernel_name) + 2 < sizeof(g_kernels_seen)) {
        strcat(g_kernels_seen, p->kernel_name);
        strcat(g_kernels_seen, " ");
    }
    l->dispatches += p->dispatches;
    if (strcmp(p->kernel_name, "vulkan") == 0) {
        bool part = strcmp(p->op_name, "partition") == 0;
        if (part != (p->dispatches > 0)) bad_dispatch_row(l, p);
        if (strcmp(p->op_name, "submit") == 0) l->submits++;
        if (strcmp(p->op_name, "upload") == 0) l->upload_ns += p->elapsed_ns;
        if (part) l->compute_ns += p->elapsed_ns;
        if (strcmp(p->op_name, "download") == 0) l->download_ns += p->elapsed_ns;
        return;
    }
    if (strncmp(p->kernel_name, "vk_", 3) == 0) { /* a device node's own row (timestamps) */
        if ((strcmp(p->kernel_name, "vk_view") == 0) != (p->dispatches == 0))
            bad_dispatch_row(l, p);
        l->compute_ns += p->elapsed_ns;
        l->device_nodes++;
        return;
    }
    if (p->dispatches) bad_dispatch_row(l, p);
    l->host_nodes++;
    for (int i = 0; i < l->num_host_ops; i++)
        if (strcmp(l->host_ops[i], p->op_name) == 0) return;
    if (l->num_host_ops < 16) l->host_ops[l->num_host_ops++] = p->op_name;
}

typedef struct range {
    float lo, hi;
} range;

/* When set, input 0 is this photo, sampled and normalized by this desc (its layout follows the
 * tensor: NCHW when dim 1 is 3), instead of random values: test_fp16_all_models. */
static const ks_image *g_photo;
static ks_image_to_tensor_desc g_photo_desc;
static float g_photo_roi[3]; /* a square (center x, y, side, pixels) as the task crops it, or 0 */
/* Output g_mask_output (-1: none) holds segmentation logits: compare_runs judges it by the mask
 * (logit > 0) it gives, its intersection over union with the CPU's in g_mask_iou, and keeps its
 * relative L2 (g_mask_l2) out of the worst one it returns. */
static int g_mask_output = -1;
static double g_mask_iou, g_mask_l2;

/* Input i gets values in r[i] (the last entry repeats). */

/* Set by a test whose fp16 comparison is about its shaders, not about its inputs' rounding
 * (test_mediapipe: a crop of random noise through a matrix of landmarks rounded to fp16 moves by
 * up to 7e-3): both sessions then get inputs that fp16 represents exactly. */
static bool g_fill_f16;

static void fill(ks_session *s, const ks_model *m, uint32_t seed, const range *r, uint32_t nr) {
    g_seed = seed;
    for (uint32_t i = 0; i < ks_model_num_inputs(m); i++) {
        ks_tensor t;
        assert_int_equal(ks_session_input(s, i, &t), KS_STATUS_OK);
        if (i == 0 && g_photo) {
            ks_image_to_tensor_desc d = g_photo_desc;
            d.layout =
                t.info.shape.rank == 4 && t.info.shape.dims[1] == 3 && t.info.shape.dims[3] != 3
                    ? KS_TENSOR_LAYOUT_NCHW
                    : KS_TENSOR_LAYOUT_NHWC;
            if (g_photo_roi[2] > 0) { /* destination pixel centers onto the square */
                const int64_t *dims = t.info.shape.dims;
                bool nchw = d.layout == KS_TENSOR_LAYOUT_NCHW;
                float w = (float)dims[nchw ? 3 : 2], h = (float)dims[nchw ? 2 : 1];
                float side = g_photo_roi[2];
                d.m[0] = side / w;
                d.m[2] = g_photo_roi[0] - side / 2 + 0.5f * side / w - 0.5f;
                d.m[4] = side / h;
                d.m[5] = g_photo_roi[1] - side / 2 + 0.5f * side / h - 0.5f;
            }
            if (ks_image_to_tensor(g_photo, &d, &t))
                fail_msg("photo into input 0: %s", ks_last_error(NULL));
            continue;
        }
        const range *ri = &r[i < nr ? i : nr - 1];
        float *v = t.data;
        for (size_t k = 0; k < t.size_bytes / sizeof(float); k++) {
            v[k] = frand(ri->lo, ri->hi);
            if (g_fill_f16 && g_prec != KS_PRECISION_DEFAULT)
                v[k] = ks__f16_to_f32(ks__f32_to_f16(v[k])); /* what the device receives */
        }
    }
}

/* Any error the validation layers reported so far fails the test that is running (main asks for
 * the layers before the first device: ks__vk_validation_request). */
static void check_validation(const char *what) {
    uint32_t errors = 0;
    const char *last = "";
    if (ks__vk_validation_state(&errors, &last) == 1 && errors)
        fail_msg("%s: %u Vulkan validation error(s), the last: %s", what, errors, last);
}

static void need_vulkan(void) {
    if (!g_have_vk) {
        print_message("skipped: no usable Vulkan device (%s)\n", g_why);
        skip();
    }
}

/* Runs m on the CPU and split with Vulkan `runs` times with different inputs, and compares every
 * output. expect_parts >= 0: partitions per run. Returns the worst relative L2 (models) and
 * checks max-abs against TOL * scale when max_abs is set. Runs after the first must not
 * allocate. */
static double compare_runs(const char *what, const ks_model *m, const range *r, uint32_t nr,
                           int expect_parts, bool max_abs, int runs) {
    ks_session_desc d = {.num_threads = 1};
    ks_session *cpu = NULL, *gpu = NULL;
    assert_int_equal(ks__session_create_with(m, ks__model_graph(m), &d, ks__cpu_backend(), &cpu),
                     0);
    ks_allocator counting = {count_alloc, count_free, NULL};
    ks_session_desc dg = {.num_threads = 1, .allocator = &counting, .precision = g_prec};
    ks_status st = ks__session_create_split(m, ks__model_graph(m), &dg, ks__cpu_backend(),
                                            ks__vulkan_backend(), &gpu);
    if (st) fail_msg("%s: split session: %s", what, ks_last_error(NULL));
    const double tol = g_prec == KS_PRECISION_DEFAULT ? TOL : TOL_F16;
    assert_int_equal(ks_session_reshape(cpu, NULL), KS_STATUS_OK);
    if (ks_session_reshape(gpu, NULL)) fail_msg("%s: reshape: %s", what, ks_last_error(gpu));
    prof_log log = {0};
    assert_int_equal(ks_session_set_profiler(gpu, on_prof, &log), KS_STATUS_OK);
    double worst_l2 = 0.0, worst_abs = 0.0;
    uint32_t worst_out = 0;
    double worst_rms = 0.0;
    int tiny = 0; /* fp16 modes: outputs judged in absolute terms */
    size_t allocs_after_first = 0;
    for (int run = 0; run < runs; run++) {
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
            double rms = sqrt(r2 / (double)(n ? n : 1));
            if ((int)o == g_mask_output) {
                size_t inter = 0, uni = 0;
                for (size_t k = 0; k < n; k++) {
                    inter += x[k] > 0 && y[k] > 0;
                    uni += x[k] > 0 || y[k] > 0;
                }
                double iou = uni ? (double)inter / (double)uni : 1.0;
                if (run == 0 || iou < g_mask_iou) g_mask_iou = iou;
                if (run == 0 || l2 > g_mask_l2) g_mask_l2 = l2;
                memset(b.data, 0xff, b.size_bytes);
                continue;
            }
            if (g_prec != KS_PRECISION_DEFAULT && rms < F16_TINY) {
                /* below fp16's normal range (e.g. the scores of a detector's empty anchors,
                 * ~1e-6): relative error is meaningless there, absolute error is what fp16
                 * can promise */
                if (!(err <= F16_TINY))
                    fail_msg("%s: output %u (rms %g): max |gpu - cpu| = %g, above %g", what, o, rms,
                             err, F16_TINY);
                tiny++;
                l2 = 0.0;
            }
            if (!(l2 <= worst_l2)) {
                worst_l2 = l2;
                worst_out = o;
                worst_rms = rms;
            }
            if (err / scale > worst_abs) worst_abs = err / scale;
            if (max_abs && !(err <= tol * scale))
                fail_msg("%s: output %u: max |gpu - cpu| = %g, above %g (value scale %g)", what, o,
                         err, tol * scale, scale);
            memset(b.data, 0xff, b.size_bytes); /* the next run must write it again */
        }
    }
    if (g_allocs != allocs_after_first)
        fail_msg("%s: runs allocated %zu times", what, g_allocs - allocs_after_first);
    if (log.bad_dispatch_rows)
        fail_msg("%s: %d profile row(s) with a wrong dispatch count, the first %s", what,
                 log.bad_dispatch_rows, log.bad_dispatch);
    if (log.submits && !log.dispatches) fail_msg("%s: device partitions without dispatches", what);
    if (expect_parts >= 0 && log.submits != runs * expect_parts)
        fail_msg("%s: %d partitions per run, expected %d", what, log.submits / runs, expect_parts);
    char ops[256] = "";
    for (int i = 0; i < log.num_host_ops; i++)
        snprintf(ops + strlen(ops), sizeof(ops) - strlen(ops), "%s%s", i ? " " : " (",
                 log.host_ops[i]);
    if (log.num_host_ops) snprintf(ops + strlen(ops), sizeof(ops) - strlen(ops), ")");
    if (tiny)
        print_message("%s: %d output(s) below fp16's normal range, within %g\n", what, tiny / runs,
                      F16_TINY);
    print_message("%s: %d partition(s), %d host node(s)%s, %d device node(s) timed per run; max "
                  "abs err / scale %.3g, rel L2 %.3g (output %u, rms %.3g); device "
                  "upload/compute/download %.3f/%.3f/%.3f ms per run\n",
                  what, log.submits / runs, log.host_nodes / runs, ops, log.device_nodes / runs,
                  worst_abs, worst_l2, worst_out, worst_rms, (double)log.upload_ns / (runs * 1e6),
                  (double)log.compute_ns / (runs * 1e6), (double)log.download_ns / (runs * 1e6));
    if (log.compute_ns == 0) fail_msg("%s: the device reported no compute time", what);
    ks_session_destroy(gpu);
    ks_session_destroy(cpu);
    check_validation(what);
    return worst_l2;
}

static double compare(const char *what, const ks_model *m, const range *r, uint32_t nr,
                      int expect_parts, bool max_abs) {
    return compare_runs(what, m, r, nr, expect_parts, max_abs, 3);
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
    g_kernels_seen[0] = '\0';
    compare(c->what, m, r, 2, 1, true);
    /* the "long K" cases are conv2d_wide's, the others never */
    if ((strstr(c->what, "long K") != NULL) != (strstr(g_kernels_seen, "vk_conv2d_wide ") != NULL))
        fail_msg("%s: kernels %s", c->what, g_kernels_seen);
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
        /* conv2d_gemm.comp's tiles (32 pixels x 32 channels, k in chunks of 16) with a tail
         * in every dimension: 99 pixels, 45 channels, k = 3 * 3 * 37 = 333 */
        {"conv 3x3 over several tiles, residual RELU",
         {1, 11, 9, 37},
         {45, 3, 3, 37},
         {1, 1, 1, 1, 0, 0, 0, 0, KS_PAD_SAME_UPPER, 0, KS_ACT_RELU},
         true,
         true,
         false},
        /* conv2d_gemm4 (vector loads: input channels a multiple of 4) with a tail in every
         * dimension: 30 pixels x 2 images, 45 channels, k = 3 * 3 * 36 = 324 */
        {"conv 3x3 stride 2 over several tiles, 36 channels, residual RELU6",
         {2, 11, 9, 36},
         {45, 3, 3, 36},
         {2, 2, 1, 1, 0, 0, 0, 0, KS_PAD_SAME_UPPER, 0, KS_ACT_RELU6},
         true,
         true,
         false},
        {"conv 1x1 stride 2 batch 2, 33 channels",
         {2, 10, 12, 16},
         {33, 1, 1, 16},
         {2, 2, 1, 1, 0, 0, 0, 0, KS_PAD_VALID, 1, KS_ACT_NONE},
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
        /* conv2d_dw4 (four channels per invocation: channels a multiple of 4) */
        {"depthwise 3x3 stride 2, 12 channels, residual PRELU",
         {2, 9, 7, 12},
         {12, 3, 3, 1},
         {2, 2, 1, 1, 0, 0, 0, 0, KS_PAD_SAME_UPPER, 12, KS_ACT_PRELU},
         true,
         true,
         true},
        {"depthwise 5x5 dilation 2, 8 channels, TANH",
         {1, 10, 11, 8},
         {8, 5, 5, 1},
         {1, 1, 2, 2, 0, 0, 0, 0, KS_PAD_SAME_UPPER, 8, KS_ACT_TANH},
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
        /* conv2d_wide (at most 1024 outputs, K >= 512: one group of 64 per output element):
         * UltraFace's heads in small, K = 3 * 3 * 64 = 576 and 120 outputs; grouped, stride 2 */
        {"conv 3x3 few outputs long K, residual PRELU",
         {1, 4, 5, 64},
         {6, 3, 3, 64},
         {1, 1, 1, 1, 0, 0, 0, 0, KS_PAD_SAME_UPPER, 0, KS_ACT_PRELU},
         true,
         true,
         true},
        {"grouped 3x3 stride 2 few outputs long K, SIGMOID",
         {1, 7, 6, 140},
         {10, 3, 3, 70},
         {2, 2, 1, 1, 0, 0, 0, 0, KS_PAD_SAME_UPPER, 2, KS_ACT_SIGMOID},
         false,
         false,
         false},
    };
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
        conv_case(&specs[i]);
}

/* conv2d_gemm.comp on every tile its specialization constants offer (KS_VK_TILE forces one) and
 * without the prefetch of the next chunk (KS_VK_PREFETCH=0): the same cases reach the tile's
 * pipeline (its profiler name) and agree with the CPU, tails in every dimension included. */
static void test_conv_tiles(void **state) {
    (void)state;
    const conv_spec specs[] = {
        /* 99 pixels, 45 channels, k = 3 * 3 * 37 = 333: scalar loads */
        {"tiles: conv 3x3, residual RELU",
         {1, 11, 9, 37},
         {45, 3, 3, 37},
         {1, 1, 1, 1, 0, 0, 0, 0, KS_PAD_SAME_UPPER, 0, KS_ACT_RELU},
         true,
         true,
         false},
        /* 2 x 30 pixels, 70 channels, k = 3 * 3 * 36 = 324: vector loads (fp32) */
        {"tiles: conv 3x3 stride 2, 36 channels, PRELU",
         {2, 11, 9, 36},
         {70, 3, 3, 36},
         {2, 2, 1, 1, 0, 0, 0, 0, KS_PAD_SAME_UPPER, 0, KS_ACT_PRELU},
         true,
         false,
         true},
    };
    /* first the cost model's tile (32x16, docs/vulkan.md), then each forced */
    static const char *const tiles[] = {NULL, "16x32", "32x16", "16x16", "32x32"};
    for (size_t t = 0; t <= sizeof(tiles) / sizeof(tiles[0]); t++) {
        bool last = t == sizeof(tiles) / sizeof(tiles[0]); /* 32x32 without the prefetch */
        const char *tile = last ? "32x32" : tiles[t] ? tiles[t] : "32x16";
        if (last || tiles[t])
            setenv("KS_VK_TILE", tile, 1);
        else
            unsetenv("KS_VK_TILE");
        if (last) setenv("KS_VK_PREFETCH", "0", 1);
        for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
            conv_case(&specs[i]);
            char want[64];
            bool vec = specs[i].x[3] % 4 == 0 && g_prec == KS_PRECISION_DEFAULT;
            if (strcmp(tile, "32x32") == 0)
                snprintf(want, sizeof(want), "vk_conv2d_gemm%s ", vec ? "4" : "");
            else
                snprintf(want, sizeof(want), "vk_conv2d_gemm%s_%s ", vec ? "4" : "", tile);
            if (!strstr(g_kernels_seen, want))
                fail_msg("%s, KS_VK_TILE=%s%s: kernels %s, expected %s", specs[i].what,
                         tiles[t] || last ? tile : "(unset)", last ? " KS_VK_PREFETCH=0" : "",
                         g_kernels_seen, want);
        }
    }
    unsetenv("KS_VK_TILE");
    unsetenv("KS_VK_PREFETCH");
}

/* ---------------------------------------------------------------------------------------------
 * the other families (step 2): one graph per family, every node in one partition
 * ------------------------------------------------------------------------------------------- */

/* An I64 constant (shapes, pads, sizes, starts...). */
static int32_t iconst(ks__graph *g, const char *name, int32_t rank, const int64_t *dims,
                      const int64_t *vals) {
    int32_t id;
    assert_int_equal(ks__graph_add_tensor(g, name, KS_DTYPE_I64, rank, dims, &id), 0);
    int64_t n = 1;
    for (int32_t k = 0; k < rank; k++)
        n *= dims[k];
    assert_int_equal(ks__graph_set_const(g, id, vals, (size_t)n * sizeof(int64_t), true), 0);
    return id;
}

/* A 1-D I64 constant of n values. */
static int32_t ivec(ks__graph *g, const char *name, int64_t n, const int64_t *vals) {
    return iconst(g, name, 1, &n, vals);
}

/* An F32 tensor of rank `rank` whose dims shape inference sets. */
static int32_t unknown(ks__graph *g, const char *name, int32_t rank) {
    int64_t dims[KS_MAX_RANK];
    for (int32_t k = 0; k < rank; k++)
        dims[k] = -1;
    return tensor(g, name, rank, dims);
}

/* The graph's nodes read inputs `in` and make outputs `out`: runs it on both sides, expecting
 * one partition and no host node. */
static void check_graph(const char *what, ks__graph *g, uint32_t ni, const int32_t *in, uint32_t no,
                        const int32_t *out, const range *r, uint32_t nr) {
    uint8_t *img = NULL;
    ks_model *m = finish(g, ni, in, no, out, &img);
    compare(what, m, r, nr, 1, true);
    ks_model_destroy(m);
    free(img);
}

static void test_pad(void **state) {
    (void)state;
    need_vulkan();
    ks__graph g;
    ks__graph_init(&g, NULL);
    int64_t xd[4] = {1, 5, 7, 3}, pd[2] = {4, 2}, one[1] = {1};
    int32_t x = tensor(&g, "x", 4, xd), outs[6];
    static const int64_t pads[6][8] = {
        {0, 0, 1, 2, 3, 0, 0, 1},   /* constant, fp value */
        {0, 0, 2, 1, 1, 3, 0, 0},   /* reflect */
        {0, 0, 4, 6, 0, 2, 1, 1},   /* edge, wider than the axis */
        {1, 0, 6, 9, 2, 8, 0, 2},   /* symmetric, wider than the axis, batch too */
        {0, 0, -1, 2, 1, -2, 0, 0}, /* constant with crops */
        {0, 0, 3, 0, 0, 5, 2, 0},   /* constant, value input */
    };
    static const int32_t modes[6] = {0, 1, 2, 3, 0, 0};
    const float v = -2.5f;
    int32_t value = constant(&g, "value", 1, one, &v, 0.0f, 0.0f);
    char name[32];
    for (int k = 0; k < 6; k++) {
        snprintf(name, sizeof(name), "pads%d", k);
        int32_t p = iconst(&g, name, 2, pd, pads[k]);
        snprintf(name, sizeof(name), "pad%d", k);
        outs[k] = unknown(&g, name, 4);
        int32_t in[3] = {x, p, value};
        ks__node *n = add(&g, KS_OP_PAD, name, k == 5 ? 3 : 2, in, outs[k]);
        n->ip[0] = modes[k];
        n->fp[0] = 0.75f;
    }
    const range r[1] = {{-1.0f, 1.0f}};
    check_graph("PAD: constant, reflect, edge, symmetric, crops, value input", &g, 1, &x, 6, outs,
                r, 1);
}

/* POOL2D's cases in one graph; then checks which wide-window shader ran: the subgroup one where
 * the device has subgroup arithmetic and KS_VK_SUBGROUP is not "0". */
static void pool_case(void) {
    ks__graph g;
    ks__graph_init(&g, NULL);
    int64_t xd[4] = {1, 9, 11, 5}, wd[4] = {1, 23, 19, 6}, gd[4] = {1, 40, 37, 3};
    int32_t ins[3] = {tensor(&g, "x", 4, xd), tensor(&g, "xw", 4, wd), tensor(&g, "xg", 4, gd)};
    int32_t outs[12];
    /* ip: kh kw sh sw pt pl pb pr mode kind count_include_pad act ceil_mode; the last five (on
     * the 23 x 19 and 40 x 37 inputs) have windows of 256 pixels or more (pool2d_wide.comp), the
     * last two more than its 4 x 256 pixels per pass */
    static const int32_t ip[12][13] = {
        {3, 3, 2, 2, 0, 0, 0, 0, KS_PAD_SAME_UPPER, 0, 0, KS_ACT_NONE, 0},
        {3, 3, 2, 2, 0, 0, 0, 0, KS_PAD_SAME_UPPER, 1, 0, KS_ACT_NONE, 0},
        {2, 3, 1, 1, 1, 0, 1, 2, KS_PAD_EXPLICIT, 1, 1, KS_ACT_RELU6, 0},
        {0, 0, 0, 0, 0, 0, 0, 0, KS_PAD_VALID, 1, 0, KS_ACT_NONE, 0},
        {0, 0, 0, 0, 0, 0, 0, 0, KS_PAD_VALID, 0, 0, KS_ACT_NONE, 0},
        {2, 2, 2, 2, 0, 0, 0, 0, KS_PAD_VALID, 0, 0, KS_ACT_TANH, 1},
        {3, 2, 3, 2, 0, 0, 0, 0, KS_PAD_SAME_LOWER, 1, 1, KS_ACT_NONE, 0},
        {0, 0, 0, 0, 0, 0, 0, 0, KS_PAD_VALID, 1, 0, KS_ACT_NONE, 0},
        {0, 0, 0, 0, 0, 0, 0, 0, KS_PAD_VALID, 0, 0, KS_ACT_RELU, 0},
        {17, 16, 3, 2, 2, 1, 1, 3, KS_PAD_EXPLICIT, 1, 1, KS_ACT_NONE, 0},
        {0, 0, 0, 0, 0, 0, 0, 0, KS_PAD_VALID, 1, 0, KS_ACT_NONE, 0},
        {0, 0, 0, 0, 0, 0, 0, 0, KS_PAD_VALID, 0, 0, KS_ACT_NONE, 0},
    };
    char name[32];
    for (int k = 0; k < 12; k++) {
        snprintf(name, sizeof(name), "pool%d", k);
        outs[k] = unknown(&g, name, 4);
        ks__node *n = add(&g, KS_OP_POOL2D, name, 1, &ins[k < 7 ? 0 : k < 10 ? 1 : 2], outs[k]);
        memcpy(n->ip, ip[k], sizeof(ip[k]));
    }
    const range r[1] = {{-1.0f, 1.0f}};
    g_kernels_seen[0] = '\0';
    check_graph("POOL2D: max and average, SAME, explicit, global, ceil mode, count_include_pad, "
                "windows of 256+ pixels",
                &g, 3, ins, 12, outs, r, 1);
    ks__vk_device_info info;
    ks__vk_last_device_info(&info);
    const char *env = getenv("KS_VK_SUBGROUP");
    if (env && strcmp(env, "0") == 0 && info.subgroup_arith)
        fail_msg("KS_VK_SUBGROUP=%s, yet the device uses subgroup arithmetic", env);
    const char *want = info.subgroup_arith ? "vk_pool2d_wide_sg " : "vk_pool2d_wide ";
    if (!strstr(g_kernels_seen, want))
        fail_msg("POOL2D: kernels %s, expected %s", g_kernels_seen, want);
    print_message("POOL2D: subgroup arithmetic %s: %s\n", info.subgroup_arith ? "yes" : "no", want);
}

static void test_pool(void **state) {
    (void)state;
    need_vulkan();
    pool_case();
    setenv("KS_VK_SUBGROUP", "0", 1); /* the portable combination in shared memory */
    pool_case();
    unsetenv("KS_VK_SUBGROUP");
}

static void test_layout(void **state) {
    (void)state;
    need_vulkan();
    ks__graph g;
    ks__graph_init(&g, NULL);
    g_seed = 5;
    int64_t xd[4] = {1, 5, 7, 3}, x2d[4] = {1, 5, 7, 2}, cd[4] = {1, 5, 7, 1};
    int32_t x = tensor(&g, "x", 4, xd), x2 = tensor(&g, "x2", 4, x2d);
    int32_t c = constant(&g, "c", 4, cd, NULL, -1.0f, 1.0f);
    int32_t outs[16];
    uint32_t no = 0;
    /* CONCAT on channels of an input, a constant and another input, with RELU */
    outs[no] = unknown(&g, "concat_c", 4);
    int32_t cin[3] = {x, c, x2};
    ks__node *n = add(&g, KS_OP_CONCAT, "concat_c", 3, cin, outs[no++]);
    n->ip[0] = -1;
    n->ip[1] = KS_ACT_RELU;
    /* CONCAT on H */
    outs[no] = unknown(&g, "concat_h", 4);
    int32_t hin[2] = {x, x2};
    int32_t x3 = unknown(&g, "x3", 4);
    add(&g, KS_OP_ABS, "abs", 1, &x, x3); /* a device-made input */
    hin[1] = x3;
    n = add(&g, KS_OP_CONCAT, "concat_h", 2, hin, outs[no++]);
    n->ip[0] = 1;
    /* SPLIT on W, sizes 2 and 5 */
    const int64_t sizes[2] = {2, 5};
    int32_t sin[2] = {x, ivec(&g, "sizes", 2, sizes)};
    int32_t sout[2] = {unknown(&g, "split0", 4), unknown(&g, "split1", 4)};
    uint32_t idx;
    assert_int_equal(ks__graph_add_node(&g, KS_OP_SPLIT, "split", 2, sin, 2, sout, &idx), 0);
    g.nodes[idx].ip[0] = 2;
    outs[no++] = sout[0];
    outs[no++] = sout[1];
    /* TRANSPOSE NHWC -> NCHW */
    outs[no] = unknown(&g, "transpose", 4);
    n = add(&g, KS_OP_TRANSPOSE, "transpose", 1, &x, outs[no++]);
    n->ip[0] = 4, n->ip[1] = 0, n->ip[2] = 3, n->ip[3] = 1, n->ip[4] = 2;
    /* SLICE with negative steps */
    const int64_t st[4] = {0, 4, 6, 1}, en[4] = {1, 0, 0, 3}, sp[4] = {1, -2, -3, 1};
    const int64_t ax[4] = {0, 1, 2, 3};
    int32_t lin[5] = {x, ivec(&g, "starts", 4, st), ivec(&g, "ends", 4, en),
                      ivec(&g, "axes", 4, ax), ivec(&g, "steps", 4, sp)};
    outs[no] = unknown(&g, "slice", 4);
    add(&g, KS_OP_SLICE, "slice", 5, lin, outs[no++]);
    /* PACK on a new axis 1, UNPACK along C */
    outs[no] = unknown(&g, "pack", 5);
    int32_t pin[2] = {x, x3};
    n = add(&g, KS_OP_PACK, "pack", 2, pin, outs[no++]);
    n->ip[0] = 1;
    int32_t uout[3] = {unknown(&g, "unpack0", 3), unknown(&g, "unpack1", 3),
                       unknown(&g, "unpack2", 3)};
    assert_int_equal(ks__graph_add_node(&g, KS_OP_UNPACK, "unpack", 1, &x, 3, uout, &idx), 0);
    g.nodes[idx].ip[0] = 3;
    for (int k = 0; k < 3; k++)
        outs[no++] = uout[k];
    int32_t ins[2] = {x, x2};
    const range r[1] = {{-1.0f, 1.0f}};
    check_graph("CONCAT, SPLIT, TRANSPOSE, SLICE, PACK, UNPACK", &g, 2, ins, no, outs, r, 1);

    /* channel concats (8 + 4 with RELU6, 6 + 2) and a channel split (4, 8) of NHWC tensors */
    ks__graph_init(&g, NULL);
    int64_t a8[4] = {1, 5, 7, 8}, a4[4] = {1, 5, 7, 4}, a6[4] = {1, 5, 7, 6}, a2[4] = {1, 5, 7, 2};
    int32_t f8 = tensor(&g, "f8", 4, a8), f4 = tensor(&g, "f4", 4, a4);
    int32_t f6 = tensor(&g, "f6", 4, a6), f2 = tensor(&g, "f2", 4, a2);
    int32_t o4[4] = {unknown(&g, "cat12", 4), unknown(&g, "cat8", 4), unknown(&g, "split4", 4),
                     unknown(&g, "split8", 4)};
    int32_t c12[2] = {f8, f4}, c8[2] = {f6, f2};
    n = add(&g, KS_OP_CONCAT, "cat12", 2, c12, o4[0]);
    n->ip[0] = 3;
    n->ip[1] = KS_ACT_RELU6;
    n = add(&g, KS_OP_CONCAT, "cat8", 2, c8, o4[1]);
    n->ip[0] = 3;
    const int64_t sizes48[2] = {4, 8};
    int32_t s12in[2] = {o4[0], ivec(&g, "sizes48", 2, sizes48)};
    assert_int_equal(ks__graph_add_node(&g, KS_OP_SPLIT, "split48", 2, s12in, 2, o4 + 2, &idx), 0);
    g.nodes[idx].ip[0] = 3;
    int32_t in4[4] = {f8, f4, f6, f2};
    const range r4[1] = {{-8.0f, 8.0f}};
    check_graph("CONCAT and SPLIT on channels in fours", &g, 4, in4, 4, o4, r4, 1);

    /* DEPTH_TO_SPACE (DCR, CRD) and SPACE_TO_DEPTH */
    ks__graph_init(&g, NULL);
    int64_t dd[4] = {1, 3, 5, 12}, sd[4] = {1, 4, 6, 3};
    int32_t xd2s = tensor(&g, "x", 4, dd), xs2d = tensor(&g, "xs", 4, sd);
    int32_t o[3] = {unknown(&g, "d2s_dcr", 4), unknown(&g, "d2s_crd", 4), unknown(&g, "s2d", 4)};
    n = add(&g, KS_OP_DEPTH_TO_SPACE, "d2s_dcr", 1, &xd2s, o[0]);
    n->ip[0] = 2;
    n = add(&g, KS_OP_DEPTH_TO_SPACE, "d2s_crd", 1, &xd2s, o[1]);
    n->ip[0] = 2, n->ip[1] = 1;
    n = add(&g, KS_OP_SPACE_TO_DEPTH, "s2d", 1, &xs2d, o[2]);
    n->ip[0] = 2;
    int32_t in2[2] = {xd2s, xs2d};
    check_graph("DEPTH_TO_SPACE (DCR, CRD), SPACE_TO_DEPTH", &g, 2, in2, 3, o, r, 1);
}

static void test_resize(void **state) {
    (void)state;
    need_vulkan();
    ks__graph g;
    ks__graph_init(&g, NULL);
    int64_t xd[4] = {1, 5, 7, 3}, two[1] = {2};
    int32_t x = tensor(&g, "x", 4, xd), outs[16];
    /* mode coord round out_h out_w (0 0: scales 1.5, 2.25) */
    static const int32_t ip[12][5] = {
        {0, KS_RESIZE_ASYMMETRIC, 0, 11, 13},
        {0, KS_RESIZE_ALIGN_CORNERS, 1, 11, 13},
        {0, KS_RESIZE_HALF_PIXEL, 2, 11, 13},
        {0, KS_RESIZE_TF_HALF_PIXEL_FOR_NN, 3, 11, 13},
        {0, KS_RESIZE_PYTORCH_HALF_PIXEL, 0, 3, 4},
        {0, KS_RESIZE_HALF_PIXEL, 1, 10, 14},
        {1, KS_RESIZE_ASYMMETRIC, 0, 11, 13},
        {1, KS_RESIZE_ALIGN_CORNERS, 0, 11, 13},
        {1, KS_RESIZE_HALF_PIXEL, 0, 11, 13},
        {1, KS_RESIZE_PYTORCH_HALF_PIXEL, 0, 2, 3},
        {1, KS_RESIZE_HALF_PIXEL, 0, 0, 0},
        {1, KS_RESIZE_ALIGN_CORNERS, 0, -1, -1}, /* size input */
    };
    const int64_t size[2] = {6, 1};
    int32_t sz = iconst(&g, "size", 1, two, size);
    char name[32];
    for (int k = 0; k < 12; k++) {
        snprintf(name, sizeof(name), "resize%d", k);
        outs[k] = unknown(&g, name, 4);
        int32_t in[2] = {x, sz};
        ks__node *n = add(&g, KS_OP_RESIZE, name, ip[k][3] < 0 ? 2 : 1, in, outs[k]);
        memcpy(n->ip, ip[k], sizeof(ip[k]));
        if (ip[k][3] < 0) n->ip[3] = n->ip[4] = 0;
        n->fp[0] = 1.5f;
        n->fp[1] = 2.25f;
    }
    const range r[1] = {{-1.0f, 1.0f}};
    check_graph("RESIZE: nearest and bilinear, every coordinate and rounding mode", &g, 1, &x, 12,
                outs, r, 1);
}

/* MediaPipe's transforms (the face mesh with attention): Landmarks2TransformMatrix from random
 * landmarks, TransformTensorBilinear of an image through that matrix (v2 pixel centres, and v1),
 * TransformLandmarks with 3 and 2 values per landmark (and v1's translation scale), one partition
 * against the CPU reference. */
static void test_mediapipe(void **state) {
    (void)state;
    need_vulkan();
    ks__graph g;
    ks__graph_init(&g, NULL);
    g_seed = 31;
    int64_t lmd[4] = {1, 1, 1, 150}, xd[4] = {1, 33, 29, 5}, l3[3] = {1, 7, 3}, l2[3] = {1, 9, 2};
    int32_t lm = tensor(&g, "lm", 4, lmd), x = tensor(&g, "x", 4, xd);
    int32_t p3 = tensor(&g, "p3", 3, l3), p2 = tensor(&g, "p2", 3, l2);
    int32_t mat = unknown(&g, "matrix", 3), outs[5];
    ks__node *n = add(&g, KS_OP_MP_LANDMARKS_TO_MATRIX, "l2m", 1, &lm, mat);
    n->ip[0] = 3, n->ip[1] = 17, n->ip[2] = 24, n->ip[3] = 20, n->ip[4] = 2;
    n->ip[5] = (int32_t)0x8421f0f3u, n->ip[6] = 0x0003c00f; /* landmarks 0..49: two words */
    n->fp[0] = 0.3f, n->fp[1] = 1.5f, n->fp[2] = 1.7f;
    for (int k = 0; k < 2; k++) {
        outs[k] = unknown(&g, k ? "crop_v1" : "crop", 4);
        int32_t in[2] = {x, mat};
        n = add(&g, KS_OP_MP_TRANSFORM_TENSOR_BILINEAR, k ? "crop_v1" : "crop", 2, in, outs[k]);
        n->ip[0] = 24 - 3 * k, n->ip[1] = 20 + k, n->ip[2] = !k;
    }
    int32_t in3[2] = {p3, mat}, in2[2] = {p2, mat};
    outs[2] = unknown(&g, "lm3", 3);
    add(&g, KS_OP_MP_TRANSFORM_LANDMARKS, "lm3", 2, in3, outs[2]);
    outs[3] = unknown(&g, "lm2", 3);
    n = add(&g, KS_OP_MP_TRANSFORM_LANDMARKS, "lm2", 2, in2, outs[3]);
    n->ip[0] = 2, n->fp[0] = 0.5f;
    outs[4] = mat;
    int32_t ins[4] = {lm, x, p3, p2};
    const range r[4] = {{2.0f, 30.0f}, {-1.0f, 1.0f}, {-1.0f, 1.0f}, {-1.0f, 1.0f}};
    g_fill_f16 = true; /* fp16 modes: the nodes run in fp32, cast on the device around them */
    check_graph("MediaPipe transforms: matrix, bilinear crop (v2, v1), landmarks (3, 2 values)", &g,
                4, ins, 5, outs, r, 4);
    g_fill_f16 = false;
}

static void test_softmax(void **state) {
    (void)state;
    need_vulkan();
    ks__graph g;
    ks__graph_init(&g, NULL);
    int64_t xd[4] = {2, 3, 5, 7};
    int32_t x = tensor(&g, "x", 4, xd);
    int32_t outs[3] = {unknown(&g, "softmax_last", 4), unknown(&g, "softmax_1", 4),
                       unknown(&g, "log_softmax_2", 4)};
    ks__node *n = add(&g, KS_OP_SOFTMAX, "softmax_last", 1, &x, outs[0]);
    n->ip[0] = -1;
    n = add(&g, KS_OP_SOFTMAX, "softmax_1", 1, &x, outs[1]);
    n->ip[0] = 1, n->fp[0] = 0.5f;
    n = add(&g, KS_OP_LOG_SOFTMAX, "log_softmax_2", 1, &x, outs[2]);
    n->ip[0] = 2;
    const range r[1] = {{-6.0f, 6.0f}};
    check_graph("SOFTMAX (last axis, axis 1 with beta), LOG_SOFTMAX", &g, 1, &x, 3, outs, r, 1);
}

static void test_matmul(void **state) {
    (void)state;
    need_vulkan();
    ks__graph g;
    ks__graph_init(&g, NULL);
    g_seed = 21;
    int64_t ad[2] = {3, 13}, wd[2] = {7, 13}, bd[1] = {7}, a3d[4] = {1, 2, 3, 13};
    int64_t md[4] = {2, 3, 5, 9}, nd[2] = {9, 4}, pd[4] = {3, 1, 2, 5}, qd[3] = {4, 5, 6};
    int64_t td[3] = {2, 9, 5}, ud[3] = {2, 6, 9}, vd[1] = {9}, v2d[3] = {2, 9, 4};
    int32_t a = tensor(&g, "a", 2, ad), a3 = tensor(&g, "a3", 4, a3d);
    int32_t mm = tensor(&g, "m", 4, md), p = tensor(&g, "p", 4, pd), t = tensor(&g, "t", 3, td);
    int32_t v = tensor(&g, "v", 1, vd);
    int32_t w = constant(&g, "w", 2, wd, NULL, -1.0f, 1.0f);
    int32_t b = constant(&g, "b", 1, bd, NULL, -0.5f, 0.5f);
    int32_t mb = constant(&g, "mb", 2, nd, NULL, -1.0f, 1.0f);
    int32_t q = constant(&g, "q", 3, qd, NULL, -1.0f, 1.0f);
    int32_t u = constant(&g, "u", 3, ud, NULL, -1.0f, 1.0f);
    int32_t v2 = constant(&g, "v2", 3, v2d, NULL, -1.0f, 1.0f);
    int32_t outs[6];
    int32_t f1[3] = {a, w, b};
    outs[0] = unknown(&g, "fc_bias_relu", 2);
    ks__node *n = add(&g, KS_OP_FULLY_CONNECTED, "fc_bias_relu", 3, f1, outs[0]);
    n->ip[0] = KS_ACT_RELU;
    int32_t f2[2] = {a3, w};
    outs[1] = unknown(&g, "fc_keep_dims", 4);
    n = add(&g, KS_OP_FULLY_CONNECTED, "fc_keep_dims", 2, f2, outs[1]);
    n->ip[1] = 1;
    int32_t m1[2] = {mm, mb};
    outs[2] = unknown(&g, "matmul_bcast", 4);
    add(&g, KS_OP_MATMUL, "matmul_bcast", 2, m1, outs[2]);
    int32_t m2[2] = {p, q};
    outs[3] = unknown(&g, "matmul_batch_bcast", 4);
    add(&g, KS_OP_MATMUL, "matmul_batch_bcast", 2, m2, outs[3]);
    int32_t m3[2] = {t, u};
    outs[4] = unknown(&g, "matmul_ta_tb", 3);
    n = add(&g, KS_OP_MATMUL, "matmul_ta_tb", 2, m3, outs[4]);
    n->ip[0] = 1, n->ip[1] = 1;
    int32_t m4[2] = {v, v2};
    outs[5] = unknown(&g, "matmul_vector", 2);
    add(&g, KS_OP_MATMUL, "matmul_vector", 2, m4, outs[5]);
    int32_t ins[5] = {a, a3, mm, p, t};
    int32_t ins6[6] = {ins[0], ins[1], ins[2], ins[3], ins[4], v};
    const range r[1] = {{-1.0f, 1.0f}};
    check_graph("FULLY_CONNECTED, MATMUL (broadcast, transposes, vector)", &g, 6, ins6, 6, outs, r,
                1);
}

static void test_deconv(void **state) {
    (void)state;
    need_vulkan();
    ks__graph g;
    ks__graph_init(&g, NULL);
    g_seed = 13;
    int64_t xd[4] = {1, 5, 4, 3}, w1[4] = {5, 3, 3, 3}, w2[4] = {4, 2, 2, 3}, w3[4] = {2, 4, 3, 3},
            b1[1] = {5};
    int32_t x = tensor(&g, "x", 4, xd);
    int32_t wa = constant(&g, "wa", 4, w1, NULL, -1.0f, 1.0f);
    int32_t wb = constant(&g, "wb", 4, w2, NULL, -1.0f, 1.0f);
    int32_t wc = constant(&g, "wc", 4, w3, NULL, -1.0f, 1.0f);
    int32_t ba = constant(&g, "ba", 1, b1, NULL, -0.5f, 0.5f);
    int32_t outs[3] = {unknown(&g, "deconv_same", 4), unknown(&g, "deconv_valid", 4),
                       unknown(&g, "deconv_explicit", 4)};
    int32_t i1[3] = {x, wa, ba};
    /* ip: sh sw pt pl pb pr mode act out_pad_h out_pad_w */
    ks__node *n = add(&g, KS_OP_CONV2D_TRANSPOSE, "deconv_same", 3, i1, outs[0]);
    n->ip[0] = 2, n->ip[1] = 2, n->ip[6] = KS_PAD_SAME_UPPER, n->ip[7] = KS_ACT_RELU;
    int32_t i2[2] = {x, wb};
    n = add(&g, KS_OP_CONV2D_TRANSPOSE, "deconv_valid", 2, i2, outs[1]);
    n->ip[0] = 2, n->ip[1] = 2, n->ip[6] = KS_PAD_VALID;
    int32_t i3[2] = {x, wc};
    n = add(&g, KS_OP_CONV2D_TRANSPOSE, "deconv_explicit", 2, i3, outs[2]);
    n->ip[0] = 3, n->ip[1] = 2, n->ip[2] = 1, n->ip[3] = 0, n->ip[4] = 1, n->ip[5] = 1;
    n->ip[6] = KS_PAD_EXPLICIT, n->ip[7] = KS_ACT_TANH, n->ip[8] = 1;
    const range r[1] = {{-1.0f, 1.0f}};
    check_graph("CONV2D_TRANSPOSE: stride 2 SAME + bias + RELU, VALID, explicit + output pad", &g,
                1, &x, 3, outs, r, 1);
}

static void test_reduce(void **state) {
    (void)state;
    need_vulkan();
    ks__graph g;
    ks__graph_init(&g, NULL);
    int64_t xd[4] = {2, 5, 7, 3};
    int32_t x = tensor(&g, "x", 4, xd), outs[6];
    /* kind keepdims num_axes axes... */
    static const int32_t ip[6][6] = {
        {KS__REDUCE_MEAN, 1, 2, 1, 2, 0}, {KS__REDUCE_SUM, 0, 1, -1, 0, 0},
        {KS__REDUCE_MAX, 0, 0, 0, 0, 0},  {KS__REDUCE_MIN, 1, 2, 0, 2, 0},
        {KS__REDUCE_PROD, 0, 1, 3, 0, 0}, {KS__REDUCE_MEAN, 0, 1, 1, 0, 0},
    };
    static const int32_t rank[6] = {4, 3, 0, 4, 3, 3};
    char name[32];
    for (int k = 0; k < 6; k++) {
        snprintf(name, sizeof(name), "reduce%d", k);
        outs[k] = unknown(&g, name, rank[k]);
        ks__node *n = add(&g, KS_OP_REDUCE, name, 1, &x, outs[k]);
        memcpy(n->ip, ip[k], sizeof(ip[k]));
    }
    const range r[1] = {{0.5f, 1.5f}};
    check_graph("REDUCE: mean, sum, max, min, prod over various axes", &g, 1, &x, 6, outs, r, 1);
}

static void test_unary_more(void **state) {
    (void)state;
    need_vulkan();
    static const uint32_t ops[10] = {
        KS_OP_EXP,  KS_OP_ABS, KS_OP_NEG,          KS_OP_FLOOR,      KS_OP_CEIL,
        KS_OP_CLIP, KS_OP_ELU, KS_OP_HARD_SIGMOID, KS_OP_LEAKY_RELU, KS_OP_RELU_N1_TO_1};
    static const float fp[10][2] = {{0, 0},        {0, 0},    {0, 0},       {0, 0},    {0, 0},
                                    {-1.0f, 2.0f}, {0.7f, 0}, {0.2f, 0.5f}, {0.1f, 0}, {0, 0}};
    ks__graph g;
    ks__graph_init(&g, NULL);
    int64_t xd[4] = {1, 7, 5, 3};
    int32_t x = tensor(&g, "x", 4, xd), outs[13];
    char name[32];
    for (int k = 0; k < 10; k++) {
        snprintf(name, sizeof(name), "u%d", k);
        outs[k] = tensor(&g, name, 4, xd);
        ks__node *n = add(&g, ops[k], name, 1, &x, outs[k]);
        n->fp[0] = fp[k][0], n->fp[1] = fp[k][1];
    }
    /* SQRT, RSQRT, LOG of |x| + 0.1 */
    int32_t ax = tensor(&g, "absx", 4, xd), px = tensor(&g, "posx", 4, xd);
    add(&g, KS_OP_ABS, "absx", 1, &x, ax);
    int64_t one[1] = {1};
    const float tenth = 0.1f;
    int32_t in[2] = {ax, constant(&g, "tenth", 1, one, &tenth, 0, 0)};
    add(&g, KS_OP_ADD, "posx", 2, in, px);
    static const uint32_t pos_ops[3] = {KS_OP_SQRT, KS_OP_RSQRT, KS_OP_LOG};
    for (int k = 0; k < 3; k++) {
        snprintf(name, sizeof(name), "p%d", k);
        outs[10 + k] = tensor(&g, name, 4, xd);
        add(&g, pos_ops[k], name, 1, &px, outs[10 + k]);
    }
    const range r[1] = {{-3.0f, 3.0f}};
    check_graph("unary: EXP ABS NEG FLOOR CEIL CLIP ELU HARD_SIGMOID LEAKY_RELU RELU_N1_TO_1 "
                "SQRT RSQRT LOG",
                &g, 1, &x, 13, outs, r, 1);
}

/* Views run as aliases: x -> RELU -> RESHAPE -> ADD -> UNSQUEEZE -> SQUEEZE -> y stays one
 * partition without a dispatch for the views, and a view that leaves the partition (a graph
 * output) is downloaded from its input's memory. A view of the graph input stays a free host
 * alias instead of making a partition of its own. */
static void test_views(void **state) {
    (void)state;
    need_vulkan();
    ks__graph g;
    ks__graph_init(&g, NULL);
    g_seed = 17;
    int64_t xd[4] = {1, 6, 5, 4}, cd[1] = {4};
    int32_t x = tensor(&g, "x", 4, xd), c = constant(&g, "c", 1, cd, NULL, -1.0f, 1.0f);
    int32_t r1 = unknown(&g, "relu", 4), v1 = unknown(&g, "flat", 3), s1 = unknown(&g, "add", 3);
    int32_t u1 = unknown(&g, "unsq", 4), y = unknown(&g, "y", 3), vx = unknown(&g, "view_x", 2);
    add(&g, KS_OP_RELU, "relu", 1, &x, r1);
    const int64_t shape[3] = {1, 30, 4}, shape2[2] = {30, 4};
    int32_t rin[2] = {r1, ivec(&g, "shape", 3, shape)};
    add(&g, KS_OP_RESHAPE, "flat", 2, rin, v1);
    int32_t ain[2] = {v1, c};
    add(&g, KS_OP_ADD, "add", 2, ain, s1);
    ks__node *n = add(&g, KS_OP_UNSQUEEZE, "unsq", 1, &s1, u1);
    n->ip[0] = 1, n->ip[1] = 2;
    n = add(&g, KS_OP_SQUEEZE, "y", 1, &u1, y);
    n->ip[0] = 1, n->ip[1] = 2;
    int32_t xin[2] = {x, ivec(&g, "shape2", 2, shape2)};
    add(&g, KS_OP_RESHAPE, "view_x", 2, xin, vx);
    int32_t outs[3] = {y, v1, vx};
    const range r[1] = {{-1.0f, 1.0f}};
    check_graph("views (RESHAPE, SQUEEZE, UNSQUEEZE) as aliases", &g, 1, &x, 3, outs, r, 1);
}

/* ---------------------------------------------------------------------------------------------
 * partitions around a host op, a real model
 * ------------------------------------------------------------------------------------------- */

/* x -> conv (device) -> POW by 2 (host: not a Vulkan op) -> conv, ADD (device) -> y */
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
    int64_t one[1] = {1};
    const float two = 2.0f;
    int32_t pin[2] = {t1, constant(&g, "two", 1, one, &two, 0.0f, 0.0f)};
    add(&g, KS_OP_POW, "pow", 2, pin, t2);
    int32_t in2[3] = {t2, wb, bb};
    n = add(&g, KS_OP_CONV2D, "conv_b", 3, in2, t3);
    n->ip[8] = KS_PAD_SAME_UPPER;
    int32_t in3[2] = {t3, cc};
    add(&g, KS_OP_ADD, "add", 2, in3, y);
    uint8_t *img = NULL;
    ks_model *m = finish(&g, 1, &x, 1, &y, &img);
    const range r[1] = {{-1.0f, 1.0f}};
    compare("device, host POW, device", m, r, 1, 2, true);
    ks_model_destroy(m);
    free(img);
}

/* Reads and converts a model of the standard set from ../shared/data or models/ (as ks-convert
 * does: import, optimize); NULL, with the reason printed, when neither has it. */
/* rel converted in memory (weights stored as `weights`: ks-convert --weights) and loaded. */
static ks_model *load_model_w(const char *rel, uint8_t **img_out, ks__ksm_weights weights) {
    const char *roots[2] = {KS_SHARED_DATA, KS_SOURCE_DIR "/models"};
    char path[512], rerr[256] = "";
    size_t n = 0;
    uint8_t *src = NULL;
    for (int i = 0; i < 2 && !src; i++) {
        snprintf(path, sizeof(path), "%s/%s", roots[i], rel);
        if (ks_read_file(path, (size_t)64 << 20, &src, &n, rerr, sizeof(rerr))) src = NULL;
    }
    if (!src) {
        print_message("skipped %s: %s\n", rel, rerr);
        return NULL;
    }
    ks__graph g;
    ks__graph_init(&g, NULL);
    char err[256] = "";
    if (ks__import_any(src, n, rel, &g, err, sizeof(err)) ||
        ks__graph_optimize(&g, err, sizeof(err)))
        fail_msg("%s: %s", rel, err);
    free(src);
    size_t size = 0;
    const ks__ksm_write_opts wo = {.weights = weights};
    assert_int_equal(ks__ksm_write_ex(&g, &wo, img_out, &size, err, sizeof(err)), KS_STATUS_OK);
    ks__graph_free(&g);
    ks_model *m = NULL;
    assert_int_equal(ks_model_load_buffer(*img_out, size, NULL, &m), KS_STATUS_OK);
    return m;
}

static ks_model *load_model(const char *rel, uint8_t **img_out) {
    return load_model_w(rel, img_out, KS__KSM_WEIGHTS_FP32);
}

/* Whole models of the standard set, split, against the CPU alone: the partitions they make (step
 * 1: BlazeFace short range 13, face_landmark 7, selfie_segmentation_landscape 14,
 * version-slim-320 7, face_landmark_with_attention 21) and relative L2 <= 1e-3 per output. Only
 * BlazeFace runs twice (a replay with other inputs, no allocation in it): lavapipe is slow. */
static void test_models(void **state) {
    (void)state;
    need_vulkan();
    static const struct {
        const char *rel;
        int parts; /* expected: 1 unless an op stays on the CPU */
        int runs;
        ks__ksm_weights weights; /* storage in the .ksm (F16: constants widened at upload) */
    } models[] = {
        {"face_detection/face_detection_short_range.tflite", 1, 2, KS__KSM_WEIGHTS_FP32},
        /* weights stored fp16: the device takes them (13 partitions before) */
        {"face_detection/face_detection_short_range.tflite", 1, 1, KS__KSM_WEIGHTS_FP16},
        {"face_landmarks/face_landmark.tflite", 1, 1, KS__KSM_WEIGHTS_FP32},
        {"segmentation/selfie_segmentation_landscape.tflite", 1, 1, KS__KSM_WEIGHTS_FP32},
        {"face_detection/version-slim-320.onnx", 1, 1, KS__KSM_WEIGHTS_FP32},
        /* MediaPipe's three transform ops on the device too (4 partitions before) */
        {"face_landmarks/face_landmark_with_attention.tflite", 1, 1, KS__KSM_WEIGHTS_FP32},
    };
    int ran = 0;
    for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
        uint8_t *img = NULL;
        ks_model *m = load_model_w(models[i].rel, &img, models[i].weights);
        if (!m) continue;
        const range r[1] = {{-1.0f, 1.0f}};
        double l2 = compare_runs(models[i].rel, m, r, 1, models[i].parts, false, models[i].runs);
        if (!(l2 <= 1e-3)) fail_msg("%s: relative L2 %g above 1e-3", models[i].rel, l2);
        ks_model_destroy(m);
        free(img);
        ran++;
    }
    if (!ran) skip();
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
 * keeps working. Runs with or without a Vulkan device, alone in its process (main). */
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

/* ---------------------------------------------------------------------------------------------
 * the fp16 modes (KS_PRECISION_FP16_STORAGE, KS_PRECISION_FP16)
 * ------------------------------------------------------------------------------------------- */

static int reset_prec(void **state) {
    (void)state;
    g_prec = KS_PRECISION_DEFAULT;
    return 0;
}

/* The shader families on their odd shapes again, in KS_PRECISION_FP16 (fp16 tensors, and fp16
 * arithmetic where the device has shaderFloat16: lavapipe has), each within TOL_F16 of the CPU. */
static void test_fp16_families(void **state) {
    need_vulkan();
    g_prec = KS_PRECISION_FP16;
    test_binary_same_shape(state);
    test_binary_per_channel(state);
    test_unary(state);
    test_unary_more(state);
    test_conv(state);
    test_conv_tiles(state);
    test_pool(state);
    test_pad(state);
    test_layout(state);
    test_resize(state);
    test_mediapipe(state); /* fp32 nodes inside the fp16 partition, cast on the device */
    test_softmax(state);
    test_matmul(state);
    test_deconv(state);
    test_reduce(state);
    ks__vk_device_info info;
    ks__vk_last_device_info(&info);
    print_message("fp16 families ran in mode %d (2: fp16 arithmetic)%s%s\n", info.fp16,
                  info.fallback[0] ? "; fallback: " : "", info.fallback);
    /* the mode asked for, or a fallback that says why */
    if (info.fp16 != 2 && !info.fallback[0]) fail_msg("fp16 mode %d without a reason", info.fp16);
}

/* A session through the public API (the runtime forwards the precision to the device). */
static ks_session *api_session(const ks_model *m, ks_backend b, ks_precision prec) {
    ks_session_desc d = {.num_threads = 1, .backend = b, .precision = prec};
    ks_session *s = NULL;
    if (ks_session_create(m, &d, &s)) fail_msg("session: %s", ks_last_error(NULL));
    if (ks_session_reshape(s, NULL)) fail_msg("reshape: %s", ks_last_error(s));
    return s;
}

/* Input 0 from an RGB(A) photo, sampled to the input's H x W (nearest), v * scale + bias. */
static void fill_photo(ks_session *s, const ks_image_buf *img, float scale, float bias) {
    ks_tensor t;
    assert_int_equal(ks_session_input(s, 0, &t), KS_STATUS_OK);
    assert_int_equal(t.info.shape.rank, 4);
    int64_t h = t.info.shape.dims[1], w = t.info.shape.dims[2], c = t.info.shape.dims[3];
    const ks_image *im = &img->image;
    int px = im->format == KS_PIXEL_FORMAT_RGBA || im->format == KS_PIXEL_FORMAT_BGRA ? 4 : 3;
    int stride = im->stride_bytes[0] ? im->stride_bytes[0] : im->width_px * px;
    float *v = t.data;
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            const uint8_t *q = (const uint8_t *)im->planes[0] +
                               (int64_t)(y * im->height_px / h) * stride +
                               (int64_t)(x * im->width_px / w) * px;
            for (int64_t k = 0; k < c; k++)
                v[(y * w + x) * c + k] = (float)q[k < 3 ? k : 2] * scale + bias;
        }
}

static const float *out_f32(ks_session *s, uint32_t i, size_t *n) {
    ks_tensor t;
    assert_int_equal(ks_session_output(s, i, &t), KS_STATUS_OK);
    *n = t.size_bytes / sizeof(float);
    return t.data;
}

static double rel_l2(const float *want, const float *got, size_t n) {
    double e2 = 0.0, r2 = 0.0;
    for (size_t k = 0; k < n; k++) {
        double e = (double)want[k] - (double)got[k];
        e2 += e * e;
        r2 += (double)want[k] * want[k];
    }
    return sqrt(e2) / (r2 > 1e-60 ? sqrt(r2) : 1.0);
}

/* BlazeFace's best detection: the anchor with the highest score, its box (centre and size, in
 * input pixels relative to the anchor, which both sessions share) and six keypoints. */
typedef struct face_top {
    size_t anchor;
    float score, box[4], kp[12];
} face_top;

static face_top blazeface_top(ks_session *s) {
    size_t nr, nc;
    const float *reg = out_f32(s, 0, &nr), *cls = out_f32(s, 1, &nc);
    assert_int_equal(nr, nc * 16);
    face_top f = {0, cls[0], {0}, {0}};
    for (size_t a = 1; a < nc; a++)
        if (cls[a] > f.score) {
            f.score = cls[a];
            f.anchor = a;
        }
    memcpy(f.box, reg + f.anchor * 16, sizeof(f.box));
    memcpy(f.kp, reg + f.anchor * 16 + 4, sizeof(f.kp));
    return f;
}

static double box_iou(const float *a, const float *b) {
    double ix = fmin(a[0] + a[2] / 2, b[0] + b[2] / 2) - fmax(a[0] - a[2] / 2, b[0] - b[2] / 2);
    double iy = fmin(a[1] + a[3] / 2, b[1] + b[3] / 2) - fmax(a[1] - a[3] / 2, b[1] - b[3] / 2);
    double inter = ix > 0 && iy > 0 ? ix * iy : 0.0;
    double u = (double)a[2] * a[3] + (double)b[2] * b[3] - inter;
    return u > 0 ? inter / u : 0.0;
}

/* The fp16 modes on real models and a real photo: every output within relative L2 L2_F16 of the
 * fp32 output, and the task agrees with the CPU path (issue 24): BlazeFace's best face
 * (same anchor, box IoU >= 0.98, keypoints within 1 % of the box side) and the selfie
 * segmentation mask (IoU >= 0.98 at 0.5). One run per session: lavapipe is slow. */
static void test_fp16_models(void **state) {
    (void)state;
    need_vulkan();
    ks_image_buf photo;
    char err[256];
    if (ks_image_load(KS_SHARED_DATA "/images/coral_face.jpg", 0, &photo, err, sizeof(err))) {
        print_message("skipped: %s\n", err);
        skip();
    }
    static const char *const models[2] = {"face_detection/face_detection_short_range.tflite",
                                          "segmentation/selfie_segmentation_landscape.tflite"};
    static const ks_precision precs[2] = {KS_PRECISION_FP16_STORAGE, KS_PRECISION_FP16};
    int ran = 0;
    for (int mi = 0; mi < 2; mi++) {
        uint8_t *img = NULL;
        ks_model *m = load_model(models[mi], &img);
        if (!m) continue;
        bool face = mi == 0;
        float scale = face ? 2.0f / 255.0f : 1.0f / 255.0f, bias = face ? -1.0f : 0.0f;
        /* the fp32 reference: the CPU's output, which the Vulkan fp32 path matches within 5e-5
         * (test_models), at a fraction of a lavapipe run */
        ks_session *cpu = api_session(m, KS_BACKEND_CPU, KS_PRECISION_DEFAULT);
        fill_photo(cpu, &photo, scale, bias);
        assert_int_equal(ks_session_run(cpu), KS_STATUS_OK);
        /* BlazeFace: both modes; the segmentation: the fp16 one (time) */
        for (int pi = face ? 0 : 1; pi < 2; pi++) {
            ks_session *h = api_session(m, KS_BACKEND_VULKAN, precs[pi]);
            ks__vk_device_info info;
            ks__vk_last_device_info(&info);
            fill_photo(h, &photo, scale, bias);
            if (ks_session_run(h)) fail_msg("%s: %s", models[mi], ks_last_error(h));
            double worst = 0.0;
            for (uint32_t o = 0; o < ks_model_num_outputs(m); o++) {
                size_t n1, n2;
                const float *a = out_f32(cpu, o, &n1), *b = out_f32(h, o, &n2);
                assert_int_equal(n1, n2);
                double l2 = rel_l2(a, b, n1);
                if (!(l2 <= L2_F16))
                    fail_msg("%s, %s: output %u: relative L2 %g from fp32 above %g", models[mi],
                             pi ? "fp16" : "fp16-storage", o, l2, L2_F16);
                if (l2 > worst) worst = l2;
            }
            char task[160];
            if (face) {
                face_top c = blazeface_top(cpu), g = blazeface_top(h);
                if (c.anchor != g.anchor)
                    fail_msg("%s: best anchor %zu on the CPU, %zu on Vulkan", models[mi], c.anchor,
                             g.anchor);
                double iou = box_iou(c.box, g.box), kp = 0.0;
                for (int k = 0; k < 12; k++)
                    kp = fmax(kp, fabs((double)c.kp[k] - g.kp[k]) / fmax(c.box[2], c.box[3]));
                snprintf(task, sizeof(task),
                         "face score %.3f, box IoU %.4f, keypoints %.3g%% "
                         "of the box",
                         (double)g.score, iou, kp * 100);
                if (!(iou >= 0.98) || !(kp <= 0.01) || c.score < 0.0f)
                    fail_msg("%s: %s (CPU score %.3f)", models[mi], task, (double)c.score);
            } else {
                size_t n1, n2, inter = 0, uni = 0;
                const float *a = out_f32(cpu, 0, &n1), *b = out_f32(h, 0, &n2);
                for (size_t k = 0; k < n1; k++) {
                    inter += a[k] > 0.5f && b[k] > 0.5f;
                    uni += a[k] > 0.5f || b[k] > 0.5f;
                }
                double iou = uni ? (double)inter / (double)uni : 1.0;
                snprintf(task, sizeof(task), "mask IoU %.4f (%zu pixels)", iou, uni);
                if (!(iou >= 0.98) || uni < n1 / 50)
                    fail_msg("%s: %s: below 0.98, or almost no person", models[mi], task);
            }
            print_message("%s, %s (device mode %d): rel L2 to fp32 %.3g; vs the CPU: %s\n",
                          models[mi], pi ? "fp16" : "fp16-storage", info.fp16, worst, task);
            ks_session_destroy(h);
        }
        ks_session_destroy(cpu);
        ks_model_destroy(m);
        free(img);
        ran++;
    }
    ks_image_buf_free(&photo);
    check_validation("fp16 models");
    if (!ran) skip();
}

static int g_direct_rows; /* profile rows of vk_conv2d (the direct convolution shader) */
static void on_kernel(void *user, const ks_op_profile *p) {
    (void)user;
    if (strcmp(p->kernel_name, "vk_conv2d") == 0) g_direct_rows++;
}

/* Measured kernel choice (ks_session_desc.tune) on the device: a one-group convolution is timed
 * with both shaders (GEMM and direct) at the first reshape and the winner is kept in
 * "<tune_cache_path>.vktune"; a second session reads it and times nothing; a choice written by
 * hand is obeyed; a damaged file is ignored (with the reason), timed again and rewritten. Every
 * session gives the CPU's results. */
static void test_tuning(void **state) {
    (void)state;
    need_vulkan();
    uint8_t *img = NULL;
    ks_model *m = conv_model(&img);
    char dir[] = "/tmp/ks_vktune_XXXXXX", tune[64], file[80], pipe[80];
    assert_non_null(mkdtemp(dir));
    snprintf(tune, sizeof(tune), "%s/tune", dir);
    snprintf(file, sizeof(file), "%s/tune.vktune", dir);
    snprintf(pipe, sizeof(pipe), "%s/tune.vkpipe", dir);
    ks_session_desc dc = {.num_threads = 1};
    ks_session *cpu = NULL;
    assert_int_equal(ks_session_create(m, &dc, &cpu), KS_STATUS_OK);
    assert_int_equal(ks_session_reshape(cpu, NULL), KS_STATUS_OK);
    for (int pass = 0; pass < 4; pass++) {
        if (pass == 2) { /* the other shader, by hand */
            FILE *f = fopen(file, "rb");
            assert_non_null(f);
            char text[2048];
            size_t n = fread(text, 1, sizeof(text) - 1, f);
            fclose(f);
            text[n] = '\0';
            char *tab = strrchr(text, '\t');
            assert_non_null(tab);
            snprintf(tab, sizeof(text) - (size_t)(tab - text), "\t%s\n",
                     strncmp(tab + 1, "gemm", 4) == 0 ? "direct" : "gemm");
            f = fopen(file, "wb");
            fputs(text, f);
            fclose(f);
        }
        if (pass == 3) { /* damaged: no final newline */
            FILE *f = fopen(file, "ab");
            fputs("conv half a line", f);
            fclose(f);
        }
        uint64_t trials = ks__vk_tune_trials();
        ks_session_desc d = {.num_threads = 1,
                             .backend = KS_BACKEND_VULKAN,
                             .tune = KS_TUNE_FAST,
                             .tune_cache_path = tune};
        ks_session *s = NULL;
        assert_int_equal(ks_session_create(m, &d, &s), KS_STATUS_OK);
        assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
        ks__vk_device_info info;
        ks__vk_last_device_info(&info);
        uint64_t timed = ks__vk_tune_trials() - trials;
        g_direct_rows = 0;
        assert_int_equal(ks_session_set_profiler(s, on_kernel, NULL), KS_STATUS_OK);
        fill(cpu, m, 5, (const range[]){{-1.0f, 1.0f}}, 1);
        fill(s, m, 5, (const range[]){{-1.0f, 1.0f}}, 1);
        assert_int_equal(ks_session_run(cpu), KS_STATUS_OK);
        if (ks_session_run(s)) fail_msg("run: %s", ks_last_error(s));
        ks_tensor a, b;
        assert_int_equal(ks_session_output(cpu, 0, &a), KS_STATUS_OK);
        assert_int_equal(ks_session_output(s, 0, &b), KS_STATUS_OK);
        const float *x = a.data, *y = b.data;
        for (size_t k = 0; k < a.size_bytes / 4; k++)
            if (fabsf(x[k] - y[k]) > 1e-4f * (1.0f + fabsf(x[k])))
                fail_msg("pass %d, element %zu: %g on the device, %g on the CPU", pass, k,
                         (double)y[k], (double)x[k]);
        print_message("tuning pass %d: %u timed, %u from the file, direct shader %s%s%s\n", pass,
                      info.tune_timed, info.tune_cached, g_direct_rows ? "yes" : "no",
                      info.cache_warning[0] ? "; " : "", info.cache_warning);
        static int first_direct;
        if (pass == 0) {
            assert_int_equal(timed, 1);
            assert_int_equal(info.tune_timed, 1);
            first_direct = g_direct_rows > 0;
        } else if (pass == 1) {
            assert_int_equal(timed, 0);
            assert_int_equal(info.tune_cached, 1);
            assert_int_equal(g_direct_rows > 0, first_direct);
        } else if (pass == 2) {
            assert_int_equal(timed, 0);
            assert_int_equal(g_direct_rows > 0, !first_direct);
        } else {
            assert_int_equal(timed, 1);
            assert_non_null(strstr(info.cache_warning, "malformed"));
        }
        ks_session_set_profiler(s, NULL, NULL);
        ks_session_destroy(s);
        check_validation("tuning");
    }
    FILE *f = fopen(file, "rb");
    char text[2048];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    assert_non_null(strstr(text, "kestrel-vktune 1\t"));
    assert_true(n > 0 && text[n - 1] == '\n'); /* rewritten whole */
    remove(file);
    remove(pipe);
    assert_int_equal(rmdir(dir), 0);
    ks_session_destroy(cpu);
    ks_model_destroy(m);
    free(img);
}

/* A quantized model on the device through ks_session_create: the runtime runs its int8 layers
 * dequantized there (the device has no integer kernels), so it is one partition on the device
 * and its uint8 scores are the CPU's at KS_PRECISION_F32 (within one quantum, 99 % equal). */
static void test_quantized_model(void **state) {
    (void)state;
    need_vulkan();
    uint8_t *img = NULL;
    ks_model *m = load_model("classification/mobilenet_v1_0.25_128_quant.tflite", &img);
    if (!m) skip();
    ks_session *s[2] = {api_session(m, KS_BACKEND_CPU, KS_PRECISION_F32),
                        api_session(m, KS_BACKEND_VULKAN, KS_PRECISION_DEFAULT)};
    prof_log log = {0};
    assert_int_equal(ks_session_set_profiler(s[1], on_prof, &log), KS_STATUS_OK);
    const uint8_t *out[2];
    size_t n = 0;
    for (int i = 0; i < 2; i++) {
        ks_tensor x, y;
        assert_int_equal(ks_session_input(s[i], 0, &x), KS_STATUS_OK);
        assert_int_equal(x.info.dtype, KS_DTYPE_U8);
        uint8_t *v = x.data;
        for (size_t k = 0; k < x.size_bytes; k++)
            v[k] = (uint8_t)((k * 37u + k / 384u) % 251u);
        if (ks_session_run(s[i])) fail_msg("run: %s", ks_last_error(s[i]));
        assert_int_equal(ks_session_output(s[i], 0, &y), KS_STATUS_OK);
        assert_int_equal(y.info.dtype, KS_DTYPE_U8);
        out[i] = y.data;
        n = y.size_bytes;
    }
    size_t equal = 0;
    for (size_t k = 0; k < n; k++) {
        int d = (int)out[0][k] - (int)out[1][k];
        if (d < -1 || d > 1)
            fail_msg("score %zu: %d on the device, %d on the CPU (f32)", k, out[1][k], out[0][k]);
        equal += d == 0;
    }
    print_message("mobilenet_v1_0.25_128_quant on the device: %d partition(s), %d device node(s), "
                  "%d host node(s); %zu of %zu scores equal to the CPU's f32 run\n",
                  log.submits, log.device_nodes, log.host_nodes, equal, n);
    assert_int_equal(log.submits, 1);
    assert_true(log.device_nodes >= 10);
    assert_true(equal * 100 >= n * 99);
    check_validation("quantized model");
    ks_session_destroy(s[0]);
    ks_session_destroy(s[1]);
    ks_model_destroy(m);
    free(img);
}

/* Nodes kept in fp32 in an fp16 mode (KS_VULKAN_FP32_NODES, docs/vulkan.md "Precision"): the
 * device converts between the precisions where they meet (widen.comp, narrow.comp), results stay
 * within the fp16 tolerance wherever the split falls, and with every node in fp32 only the input's
 * rounding to fp16 remains: far below the all-fp16 error. BlazeFace, one partition. */
static void test_fp32_nodes(void **state) {
    (void)state;
    need_vulkan();
    uint8_t *img = NULL;
    ks_model *m = load_model("face_detection/face_detection_short_range.tflite", &img);
    if (!m) skip();
    g_prec = KS_PRECISION_FP16_STORAGE;
    const range r[1] = {{-1.0f, 1.0f}};
    static const char *const lists[] = {NULL, "5-20", "0,3,9-11,30-999", "0-999"};
    double l2[4];
    uint32_t built[4];
    for (int i = 0; i < 4; i++) {
        if (lists[i])
            setenv("KS_VULKAN_FP32_NODES", lists[i], 1);
        else
            unsetenv("KS_VULKAN_FP32_NODES");
        char what[96];
        snprintf(what, sizeof(what), "BlazeFace fp16-storage, fp32 nodes %s",
                 lists[i] ? lists[i] : "none");
        l2[i] = compare_runs(what, m, r, 1, 1, false, 1);
        ks__vk_device_info info;
        ks__vk_last_device_info(&info);
        built[i] = info.pipelines_built;
        if (!(l2[i] <= L2_F16)) fail_msg("%s: relative L2 %g above %g", what, l2[i], L2_F16);
    }
    unsetenv("KS_VULKAN_FP32_NODES");
    /* mixed: the fp16 and fp32 variants of the same shaders, and both casts */
    assert_true(built[1] >= built[0] + 2);
    assert_true(built[2] >= built[0] + 2);
    assert_true(l2[3] < 0.5 * l2[0]);
    g_prec = KS_PRECISION_DEFAULT;
    ks_model_destroy(m);
    free(img);
}

/* Every task-set model in both fp16 modes, each on a real photo in its own input domain (the
 * tasks' preprocessing: the JSON specs in algos/; the landmark models on the crop their task
 * makes): every output within relative L2 L2_F16 of fp32, but segmentation logits, judged as the
 * task uses them: the mask (logit > 0) within IoU 0.98 of the CPU's, their L2 printed. Random
 * inputs are no measure of this: on noise, YOLOX-nano (a 0..255 model fed -1..1) gave 2.2e-2
 * and the pose landmark model's segmentation logits 4.5e-2, on photos 2.0e-3 and 1.2e-2. The
 * hand landmark model on a whole frame (no hand) gave 5.7e-3, on its hand crop 2.5e-3. The pose
 * model's logits reach 7.3e-3 on its person crop, all of it background pixels: logits of -100
 * to -300 off by up to 43 (fp16 activations in the thousands in the decoder), where the mask is
 * 0 either way; the input's rounding to fp16 alone, every node in fp32 (KS_VULKAN_FP32_NODES),
 * gives 2.3e-3. Opt-in (KS_TEST_VK_FP16_ALL=1, or a part of a model path as a filter): minutes on
 * lavapipe. */
typedef struct fp16_case {
    const char *model, *photo;
    float mean[3], scale[3]; /* pixel units, as ks_image_to_tensor_desc */
    ks_channel_order order;
    /* The landmark models see a crop of the photo, as their tasks feed them: the square around
     * the hand or the person (center x, y and side in pixels, from ks-vision's boxes) */
    float roi[3];
    int mask_output; /* 1 + the index of an output of segmentation logits, or 0 */
} fp16_case;

#define RANGE_M1_1                                                                                 \
    {127.5f, 127.5f, 127.5f}, {                                                                    \
        1 / 127.5f, 1 / 127.5f, 1 / 127.5f                                                         \
    }
#define RANGE_0_1                                                                                  \
    {0.0f, 0.0f, 0.0f}, {                                                                          \
        1 / 255.0f, 1 / 255.0f, 1 / 255.0f                                                         \
    }
#define RANGE_0_255                                                                                \
    {0.0f, 0.0f, 0.0f}, {                                                                          \
        1.0f, 1.0f, 1.0f                                                                           \
    }

static void test_fp16_all_models(void **state) {
    (void)state;
    const char *on = getenv("KS_TEST_VK_FP16_ALL");
    if (!on || !on[0] || strcmp(on, "0") == 0) {
        print_message("skipped: set KS_TEST_VK_FP16_ALL=1 (minutes on lavapipe)\n");
        skip();
    }
    need_vulkan();
    static const fp16_case cases[] = {
        {"face_detection/face_detection_short_range.tflite",
         "coral_face.jpg",
         RANGE_M1_1,
         KS_CHANNEL_ORDER_RGB,
         {0},
         0},
        {"face_detection/face_detection_full_range.tflite",
         "ultraface_imgs_1.jpg",
         RANGE_M1_1,
         KS_CHANNEL_ORDER_RGB,
         {0},
         0},
        /* UltraFace: (x - 127) / 128 */
        {"face_detection/version-RFB-320.onnx",
         "ultraface_imgs_1.jpg",
         RANGE_M1_1,
         KS_CHANNEL_ORDER_RGB,
         {0},
         0},
        {"face_detection/version-slim-320.onnx",
         "ultraface_imgs_2.jpg",
         RANGE_M1_1,
         KS_CHANNEL_ORDER_RGB,
         {0},
         0},
        {"face_detection/yunet_n_640_640.onnx",
         "ultraface_imgs_1.jpg",
         RANGE_0_255,
         KS_CHANNEL_ORDER_BGR,
         {0},
         0},
        {"face_landmarks/face_landmark.tflite",
         "coral_face.jpg",
         RANGE_0_1,
         KS_CHANNEL_ORDER_RGB,
         {0},
         0},
        /* ks-vision hands: box [312.1, 415.7, 81.3, 68.3]; the landmarker's square is twice it */
        {"hand/hand_landmark_lite.tflite",
         "ultraface_imgs_2.jpg",
         RANGE_0_1,
         KS_CHANNEL_ORDER_RGB,
         {352.7f, 449.8f, 163.0f},
         0},
        {"hand/palm_detection_lite.tflite",
         "ultralytics_zidane.jpg",
         RANGE_0_1,
         KS_CHANNEL_ORDER_RGB,
         {0},
         0},
        {"pose/pose_detection.tflite", "coral_squat.bmp", RANGE_M1_1, KS_CHANNEL_ORDER_RGB, {0}, 0},
        /* ks-vision pose: box [140.2, 194.0, 212.7, 393.1]; the landmarker's square 1.25 times */
        {"pose/pose_landmark_lite.tflite",
         "coral_squat.bmp",
         RANGE_0_1,
         KS_CHANNEL_ORDER_RGB,
         {246.5f, 390.5f, 491.0f},
         3},
        {"segmentation/selfie_segmentation.tflite",
         "skimage_astronaut.png",
         RANGE_0_1,
         KS_CHANNEL_ORDER_RGB,
         {0},
         0},
        {"object_detection/nanodet_m.onnx",
         "ultralytics_bus.jpg",
         {103.53f, 116.28f, 123.675f},
         {1 / 57.375f, 1 / 57.12f, 1 / 58.395f},
         KS_CHANNEL_ORDER_BGR,
         {0},
         0},
        {"object_detection/yolox_nano.onnx",
         "ultralytics_bus.jpg",
         RANGE_0_255,
         KS_CHANNEL_ORDER_BGR,
         {0},
         0},
    };
    static const ks_precision precs[2] = {KS_PRECISION_FP16_STORAGE, KS_PRECISION_FP16};
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const fp16_case *c = &cases[i];
        if (strcmp(on, "1") != 0 && !strstr(c->model, on)) continue; /* a name filter */
        char path[512], err[256];
        snprintf(path, sizeof(path), "%s/images/%s", KS_SHARED_DATA, c->photo);
        ks_image_buf photo;
        if (ks_image_load(path, 0, &photo, err, sizeof(err))) {
            print_message("skipped %s: %s\n", c->model, err);
            continue;
        }
        uint8_t *img = NULL;
        ks_model *m = load_model(c->model, &img);
        if (!m) {
            ks_image_buf_free(&photo);
            continue;
        }
        memset(&g_photo_desc, 0, sizeof(g_photo_desc));
        memcpy(g_photo_desc.mean, c->mean, sizeof(c->mean));
        memcpy(g_photo_desc.scale, c->scale, sizeof(c->scale));
        g_photo_desc.channel_order = c->order;
        g_photo = &photo.image;
        memcpy(g_photo_roi, c->roi, sizeof(g_photo_roi));
        for (int p = 0; p < 2; p++) {
            g_prec = precs[p];
            char what[200];
            snprintf(what, sizeof(what), "%s on %s, %s", c->model, c->photo,
                     p ? "fp16" : "fp16-storage");
            const range r[1] = {{-1.0f, 1.0f}}; /* inputs after the first */
            g_mask_output = c->mask_output - 1;
            double l2 = compare_runs(what, m, r, 1, -1, false, 1);
            if (!(l2 <= L2_F16)) {
                print_message("FAILED %s: relative L2 %g above %g\n", what, l2, L2_F16);
                failed++;
            }
            if (g_mask_output >= 0) {
                print_message("%s: output %d (segmentation logits): relative L2 %.3g, mask IoU "
                              "with the CPU's %.5f\n",
                              what, g_mask_output, g_mask_l2, g_mask_iou);
                if (!(g_mask_iou >= 0.98)) {
                    print_message("FAILED %s: mask IoU %g below 0.98\n", what, g_mask_iou);
                    failed++;
                }
            }
            g_mask_output = -1;
        }
        g_photo = NULL;
        memset(g_photo_roi, 0, sizeof(g_photo_roi));
        g_prec = KS_PRECISION_DEFAULT;
        ks_model_destroy(m);
        free(img);
        ks_image_buf_free(&photo);
    }
    if (failed) fail_msg("%d model/mode pair(s) above relative L2 %g", failed, L2_F16);
}

/* The persisted VkPipelineCache ("<tune_cache_path>.vkpipe"): the first device builds and writes
 * it, a second one finds every pipeline in it (where the driver reports creation feedback), and
 * a corrupt or foreign file is ignored with a warning and replaced. */
static void pcache_session(const ks_model *m, const char *tune_path, ks__vk_device_info *info) {
    ks_session_desc d = {.backend = KS_BACKEND_VULKAN, .tune_cache_path = tune_path};
    ks_session *s = NULL;
    if (ks_session_create(m, &d, &s)) fail_msg("session: %s", ks_last_error(NULL));
    if (ks_session_reshape(s, NULL)) fail_msg("reshape: %s", ks_last_error(s));
    assert_int_equal(ks_session_run(s), KS_STATUS_OK);
    ks_session_destroy(s); /* writes the cache */
    ks__vk_last_device_info(info);
}

static void test_pipeline_cache(void **state) {
    (void)state;
    need_vulkan();
    uint8_t *img = NULL;
    ks_model *m = conv_model(&img);
    char tune[128], file[160];
    snprintf(tune, sizeof(tune), "/tmp/ks_test_vulkan_%ld.tune", (long)getpid());
    snprintf(file, sizeof(file), "%s.vkpipe", tune);
    remove(file);
    ks__vk_device_info a, b, c;
    pcache_session(m, tune, &a); /* cold */
    assert_false(a.cache_read);
    assert_true(a.pipelines_built > 0);
    FILE *f = fopen(file, "rb");
    if (!f) fail_msg("%s was not written (%s)", file, a.cache_warning);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    assert_true(size > 64);
    pcache_session(m, tune, &b); /* warm */
    print_message("pipeline cache: %ld bytes; warm start: read %d, %u pipeline(s), %d from the "
                  "cache (-1: the driver does not say)\n",
                  size, b.cache_read, b.pipelines_built, b.pipelines_from_cache);
    assert_true(b.cache_read);
    assert_string_equal(b.cache_warning, "");
    /* Vulkan's own cache header is 32 bytes: a driver whose data holds no more caches nothing
     * (lavapipe in Mesa 22); one that holds pipelines must find every one of them */
    if (b.pipelines_from_cache >= 0 && size > 64 + 32)
        assert_int_equal(b.pipelines_from_cache, b.pipelines_built);
    /* corrupt one byte of the data: CRC mismatch, ignored with a warning, rebuilt, rewritten */
    f = fopen(file, "r+b");
    assert_non_null(f);
    fseek(f, 64 + size / 2 - 32, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 64 + size / 2 - 32, SEEK_SET);
    fputc(ch ^ 0x5a, f);
    fclose(f);
    pcache_session(m, tune, &c);
    print_message("corrupt cache: %s\n", c.cache_warning);
    assert_false(c.cache_read);
    assert_non_null(strstr(c.cache_warning, "CRC"));
    pcache_session(m, tune, &b); /* rewritten whole by the last one */
    assert_true(b.cache_read);
    /* a file of another version / device: the key differs */
    f = fopen(file, "r+b");
    assert_non_null(f);
    fseek(f, 28, SEEK_SET);
    fputc(0xee, f);
    fclose(f);
    pcache_session(m, tune, &c);
    assert_false(c.cache_read);
    assert_non_null(strstr(c.cache_warning, "another device"));
    /* not a cache at all, and a file shorter than the header */
    static const char *const junk[2] = {"garbage that is certainly longer than the sixty-four "
                                        "byte header of a pipeline cache file",
                                        "short"};
    for (int j = 0; j < 2; j++) {
        f = fopen(file, "wb");
        assert_non_null(f);
        fputs(junk[j], f);
        fclose(f);
        pcache_session(m, tune, &c);
        assert_false(c.cache_read);
        assert_string_not_equal(c.cache_warning, "");
    }
    remove(file);
    ks_model_destroy(m);
    free(img);
    check_validation("pipeline cache");
}

/* KS_BACKEND_AUTO when the Vulkan session fails while AUTO times it: out of device memory at its
 * reshape, then a failed submission in its first run. Each time the session is created on the
 * CPU, works, and the engine log says which failure decided it (so the fault did fire: on
 * lavapipe the CPU would win the timing anyway). One model per case: AUTO remembers its choice
 * per model for the process. */
static char g_auto_log[512];

static void on_auto_log(void *user, ks_log_level level, const char *message) {
    (void)user;
    (void)level;
    if (strncmp(message, "backend auto", 12) == 0)
        snprintf(g_auto_log, sizeof(g_auto_log), "%s", message);
}

static void test_auto_faults(void **state) {
    (void)state;
    need_vulkan();
    static const struct {
        ks__vk_fault where;
        const char *needle;
    } cases[2] = {{KS__VK_FAULT_ALLOC, "out of device memory"},
                  {KS__VK_FAULT_SUBMIT, "vkQueueSubmit"}};
    ks_log_set(on_auto_log, NULL, KS_LOG_INFO);
    for (int c = 0; c < 2; c++) {
        uint8_t *img = NULL;
        ks_model *m = c == 0 ? conv_model(&img) : relu_model(&img);
        g_auto_log[0] = 0;
        ks__vk_fault_hooks(true);
        ks__vk_fault_inject(cases[c].where, 0, VK_ERROR_OUT_OF_DEVICE_MEMORY);
        ks_session_desc d = {.backend = KS_BACKEND_AUTO};
        ks_session *s = NULL;
        ks_status st = ks_session_create(m, &d, &s);
        ks__vk_fault_hooks(false);
        if (st) fail_msg("auto: %s", ks_last_error(NULL));
        print_message("auto with an injected %s: %s\n", cases[c].needle, g_auto_log);
        assert_int_equal(ks_session_backend(s), KS_BACKEND_CPU);
        if (!strstr(g_auto_log, cases[c].needle))
            fail_msg("the log '%s' does not name the injected failure", g_auto_log);
        assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
        assert_int_equal(ks_session_run(s), KS_STATUS_OK);
        ks_session_destroy(s);
        ks_model_destroy(m);
        free(img);
    }
    ks_log_set(NULL, NULL, KS_LOG_WARN);
}

/* The validation layers reported nothing during the whole suite (this test runs last). */
static void test_validation(void **state) {
    (void)state;
    need_vulkan();
    uint32_t errors = 0;
    const char *last = "";
    int on = ks__vk_validation_state(&errors, &last);
    if (on != 1) {
        print_message("skipped: VK_LAYER_KHRONOS_validation is %s\n",
                      on == 0 ? "not installed (apt install vulkan-validationlayers)"
                              : "off (KS_TEST_VK_VALIDATION=0)");
        skip();
    }
    print_message("validation layers: %u error(s)\n", errors);
    if (errors) fail_msg("%u validation error(s), the last: %s", errors, last);
}

/* Opens the device once to learn whether the device tests can run. */
static int probe(void **state) {
    (void)state;
    const ks__backend *vk = ks__vulkan_backend();
    void *dev = NULL;
    if (vk->device_create(NULL, NULL, &dev, g_why, sizeof(g_why)) == KS_STATUS_OK) {
        g_have_vk = 1;
        vk->device_destroy(dev);
    } else {
        print_message("no usable Vulkan device: %s (device tests skip)\n", g_why);
    }
    return 0;
}

int main(void) {
    /* The backend keeps the process's VkInstance once made (backend.c, open_instance), so the
     * no-driver case runs alone in its own process (ctest test_vulkan.no_driver), before any
     * instance exists. */
    if (getenv("KS_TEST_NO_DRIVER_ONLY")) {
        const struct CMUnitTest alone[] = {cmocka_unit_test(test_no_driver)};
        return cmocka_run_group_tests(alone, NULL, NULL);
    }
    /* the validation layers (when installed) watch every device of the suite */
    const char *val = getenv("KS_TEST_VK_VALIDATION");
    if (!val || strcmp(val, "0") != 0) ks__vk_validation_request();
    /* the fp16 survey alone (ctest test_vulkan.fp16_all, with KS_TEST_VK_FP16_ALL=1), so that
     * ctest runs it beside the rest of the suite */
    if (getenv("KS_TEST_VK_FP16_ALL_ONLY")) {
        const struct CMUnitTest alone[] = {
            cmocka_unit_test_setup_teardown(test_fp16_all_models, reset_prec, reset_prec),
            cmocka_unit_test(test_validation),
        };
        return cmocka_run_group_tests(alone, probe, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binary_same_shape),
        cmocka_unit_test(test_binary_scalar),
        cmocka_unit_test(test_binary_per_channel),
        cmocka_unit_test(test_unary),
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_conv_tiles),
        cmocka_unit_test(test_mixed),
        cmocka_unit_test(test_pad),
        cmocka_unit_test(test_pool),
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_mediapipe),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_deconv),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_unary_more),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_faults),
        cmocka_unit_test(test_bad_device_index),
        cmocka_unit_test_setup_teardown(test_fp16_families, reset_prec, reset_prec),
        cmocka_unit_test_setup_teardown(test_fp16_models, reset_prec, reset_prec),
        cmocka_unit_test_setup_teardown(test_fp32_nodes, reset_prec, reset_prec),
        cmocka_unit_test(test_quantized_model),
        cmocka_unit_test(test_tuning),
        cmocka_unit_test_setup_teardown(test_fp16_all_models, reset_prec, reset_prec),
        cmocka_unit_test(test_pipeline_cache),
        cmocka_unit_test(test_auto_faults),
        cmocka_unit_test(test_validation), /* last: the whole suite ran under the layers */
    };
    return cmocka_run_group_tests(tests, probe, NULL);
}
