/* The "perf" variants (impls_perf.inc) against the reference kernels: TRANSPOSE and SPLIT on
 * shapes that hit every collapse case and 8x8 tail, small-output-channel convs and small-channel
 * depthwise convs on odd widths, strides, dilations and paddings, transpose convs whose kernel
 * equals the stride; 1 vs 3 threads must agree
 * bitwise. Only the perf variants are checked here (ks_*_<op>__<isa> names from impls_perf.inc). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "impl.h"
#include "cpu_kernel.h"

#define TOL_EXACT 0.0
#define TOL_F32_REL 1e-5 /* times sqrt(K) for dot products of length K */

#define MAX_OUTS 4

typedef struct tens {
    ks__rt_tensor rt;
    ks__quant q;
} tens;

static void tens_init(tens *t, ks_dtype dtype, int32_t rank, const int64_t *dims, void *data) {
    memset(t, 0, sizeof(*t));
    t->rt.dtype = dtype;
    t->rt.rank = rank;
    for (int32_t i = 0; i < rank; i++)
        t->rt.dims[i] = dims[i];
    t->rt.data = data;
    t->rt.quant = &t->q;
    int64_t n = ks__rt_numel(&t->rt);
    t->rt.size_bytes = (size_t)(n > 0 ? n : 0) * ks_dtype_size(dtype);
}

static ks__node node_of(uint32_t op) {
    ks__node n;
    memset(&n, 0, sizeof(n));
    n.op = op;
    n.name = (char *)"n";
    return n;
}

static char g_err[512];
static ks__pool *g_pool3;
static int g_runs[512]; /* per entry of ks__impl_list() */
static uint32_t g_rng = 2463534242u;

static float frand(float lo, float hi) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 17;
    g_rng ^= g_rng << 5;
    return lo + (hi - lo) * (float)(g_rng >> 8) / (float)(1u << 24);
}

static float *fill_rand(int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    assert_non_null(p);
    for (int64_t i = 0; i < n; i++)
        p[i] = frand(-1.0f, 1.0f);
    return p;
}

/* fp32 variants only: quantized ones with similar names (ks_q8_dwconv__..._dwrow) have their own
 * bit-exact tests */
static bool is_perf_variant(const ks__impl *im) {
    return (strstr(im->name, "__avx") != NULL || strstr(im->name, "__neon") != NULL) &&
           strncmp(im->name, "ks_q8_", 6) != 0 &&
           (strncmp(im->name, "ks_x32_", 7) == 0 || strstr(im->name, "_perf") != NULL ||
            strstr(im->name, "smallco") != NULL || strstr(im->name, "dwrow") != NULL ||
            strstr(im->name, "deconv_tile") != NULL);
}

/* Runs the reference, then every perf variant that accepts the node at 1 and 3 threads, and
 * compares (max |got - want| <= rel * max(1, |want|)). Returns how many variants accepted it. */
static int check_node(const ks__node *node, tens *ins, uint32_t nin, uint32_t nout, double rel,
                      const char *what) {
    ks__rt_tensor *in[8], *outp[MAX_OUTS];
    tens out[MAX_OUTS];
    for (uint32_t i = 0; i < nin; i++)
        in[i] = ins[i].rt.data || ins[i].rt.rank ? &ins[i].rt : NULL;
    for (uint32_t k = 0; k < nout; k++) {
        tens_init(&out[k], KS_DTYPE_F32, 0, NULL, NULL);
        outp[k] = &out[k].rt;
    }
    ks__kernel_ctx ctx = {.node = node,
                          .node_index = 3,
                          .in = in,
                          .num_inputs = nin,
                          .out = outp,
                          .num_outputs = nout,
                          .err = g_err,
                          .err_cap = sizeof(g_err)};
    const ks__kernel *k = &ks__ref_kernels()->k[node->op];
    if (ks__ref_prepare(&ctx)) fail_msg("%s: reference infer failed: %s", what, g_err);
    float *want[MAX_OUTS], *got1[MAX_OUTS], *got3[MAX_OUTS];
    int64_t n[MAX_OUTS];
    static _Alignas(64) uint8_t scratch[1 << 20];
    assert_true(ctx.scratch_bytes <= sizeof(scratch));
    ctx.scratch = scratch;
    for (uint32_t o = 0; o < nout; o++) {
        n[o] = ks__rt_numel(&out[o].rt);
        size_t bytes = (size_t)(n[o] > 0 ? n[o] : 1) * sizeof(float);
        out[o].rt.size_bytes = (size_t)n[o] * sizeof(float);
        want[o] = malloc(bytes), got1[o] = malloc(bytes), got3[o] = malloc(bytes);
        assert_true(want[o] && got1[o] && got3[o]);
        out[o].rt.data = want[o];
    }
    assert_int_equal(k->run(&ctx), KS_STATUS_OK);

    int accepted = 0;
    const ks__impl *const *list = ks__impl_list();
    for (int idx = 0; list[idx]; idx++) {
        const ks__impl *im = list[idx];
        if (im->op != node->op || (im->isa & ~ks__cpu_isa()) != 0 || !is_perf_variant(im)) continue;
        ks__kernel_ctx c = ctx;
        c.scratch = NULL, c.scratch_bytes = 0, c.num_threads = 3;
        for (uint32_t o = 0; o < nout; o++)
            out[o].rt.data = NULL;
        if (im->cost(&c) < 0) continue;
        accepted++;
        size_t packed_bytes = 0;
        assert_int_equal(im->plan(&c, &packed_bytes), KS_STATUS_OK);
        assert_true(c.scratch_bytes <= sizeof(scratch));
        c.scratch = scratch;
        void *packed = NULL;
        if (packed_bytes) {
            packed = aligned_alloc(64, (packed_bytes + 63) / 64 * 64);
            assert_non_null(packed);
            c.packed = packed;
            c.packed_bytes = packed_bytes;
            assert_non_null(im->pack);
            assert_int_equal(im->pack(&c), KS_STATUS_OK);
        }
        for (int t = 0; t < 2; t++) {
            for (uint32_t o = 0; o < nout; o++) {
                float *g = t ? got3[o] : got1[o];
                memset(g, 0xA5, (size_t)(n[o] > 0 ? n[o] : 1) * sizeof(float));
                out[o].rt.data = g;
            }
            c.pool = t ? g_pool3 : NULL;
            c.num_threads = t ? 3 : 1;
            if (im->run(&c)) fail_msg("%s: %s failed: %s", what, im->name, g_err);
        }
        for (uint32_t o = 0; o < nout; o++) {
            for (int64_t i = 0; i < n[o]; i++) {
                double w = want[o][i], g = got1[o][i];
                double tol = rel * (fabs(w) > 1.0 ? fabs(w) : 1.0);
                if (!(fabs(g - w) <= tol))
                    fail_msg("%s: %s output %u element %lld of %lld: got %.9g want %.9g", what,
                             im->name, o, (long long)i, (long long)n[o], g, w);
            }
            if (n[o] > 0 && memcmp(got1[o], got3[o], (size_t)n[o] * sizeof(float)) != 0)
                fail_msg("%s: %s differs between 1 and 3 threads", what, im->name);
        }
        free(packed);
        g_runs[idx]++;
    }
    for (uint32_t o = 0; o < nout; o++) {
        free(want[o]);
        free(got1[o]);
        free(got3[o]);
    }
    return accepted;
}

static void expect_fast(int accepted, const char *what) {
    if ((ks__cpu_isa() & (KS_ISA_AVX2 | KS_ISA_NEON)) && accepted == 0)
        fail_msg("%s: no perf variant", what);
}

/* ---- TRANSPOSE ---- */

static void transpose_case(int32_t rank, const int64_t *dims, const int32_t *perm) {
    tens x;
    int64_t n = 1;
    for (int32_t i = 0; i < rank; i++)
        n *= dims[i];
    float *xd = fill_rand(n);
    tens_init(&x, KS_DTYPE_F32, rank, dims, xd);
    ks__node node = node_of(KS_OP_TRANSPOSE);
    node.ip[0] = rank;
    for (int32_t i = 0; i < rank; i++)
        node.ip[1 + i] = perm[i];
    char what[128];
    snprintf(what, sizeof(what), "transpose rank %d [%lld..] perm %d%d%d..", rank,
             (long long)dims[0], perm[0], rank > 1 ? perm[1] : 0, rank > 2 ? perm[2] : 0);
    expect_fast(check_node(&node, &x, 1, 1, TOL_EXACT, what), what);
    free(xd);
}

static void test_transpose(void **state) {
    (void)state;
    /* NCHW <-> NHWC with odd sizes (8x8 tails on both axes), tiny channel counts */
    for (int64_t c = 1; c <= 19; c += 2)
        for (int64_t w = 1; w <= 17; w += 4) {
            transpose_case(4, (int64_t[]){1, c, 3, w}, (int32_t[]){0, 2, 3, 1});
            transpose_case(4, (int64_t[]){1, 3, w, c}, (int32_t[]){0, 3, 1, 2});
        }
    transpose_case(4, (int64_t[]){1, 3, 64, 67}, (int32_t[]){0, 2, 3, 1});
    transpose_case(4, (int64_t[]){2, 40, 33, 85}, (int32_t[]){0, 3, 1, 2});
    /* channel shuffle in NCHW and NHWC form, innermost axis kept */
    transpose_case(5, (int64_t[]){1, 2, 29, 5, 7}, (int32_t[]){0, 2, 1, 3, 4});
    transpose_case(5, (int64_t[]){1, 5, 7, 2, 29}, (int32_t[]){0, 1, 2, 4, 3});
    transpose_case(3, (int64_t[]){1, 3549, 85}, (int32_t[]){0, 2, 1});
    /* no axis contiguous in both: element-wise strided path */
    transpose_case(3, (int64_t[]){3, 4, 5}, (int32_t[]){2, 0, 1});
    transpose_case(3, (int64_t[]){9, 1, 11}, (int32_t[]){1, 2, 0});
    transpose_case(4, (int64_t[]){2, 3, 4, 5}, (int32_t[]){3, 2, 1, 0});
    transpose_case(2, (int64_t[]){1, 1}, (int32_t[]){1, 0});
    transpose_case(1, (int64_t[]){13}, (int32_t[]){0});
    /* large enough to be split over threads */
    transpose_case(4, (int64_t[]){1, 24, 96, 97}, (int32_t[]){0, 2, 3, 1});
    transpose_case(4, (int64_t[]){1, 300, 300, 3}, (int32_t[]){0, 3, 1, 2});
}

/* ---- SPLIT ---- */

static void split_case(int32_t rank, const int64_t *dims, int32_t axis, uint32_t parts) {
    tens x;
    int64_t n = 1;
    for (int32_t i = 0; i < rank; i++)
        n *= dims[i];
    float *xd = fill_rand(n);
    tens_init(&x, KS_DTYPE_F32, rank, dims, xd);
    ks__node node = node_of(KS_OP_SPLIT);
    node.ip[0] = axis;
    char what[96];
    snprintf(what, sizeof(what), "split rank %d axis %d into %u", rank, axis, parts);
    expect_fast(check_node(&node, &x, 1, parts, TOL_EXACT, what), what);
    free(xd);
}

static void test_split(void **state) {
    (void)state;
    split_case(4, (int64_t[]){1, 58, 13, 13}, 1, 2);
    split_case(4, (int64_t[]){1, 13, 13, 58}, 3, 2);
    split_case(4, (int64_t[]){1, 13, 13, 57}, -1, 3);
    split_case(4, (int64_t[]){2, 12, 7, 5}, 2, 1);
    split_case(3, (int64_t[]){4, 9, 300}, 0, 4);
    split_case(2, (int64_t[]){1, 9}, 1, 3);
}

/* ---- CONV2D with few output channels ---- */

typedef struct conv_spec {
    int64_t n, h, w, ci, co, kh, kw;
    int32_t stride, dil, pad_mode, pads[4], act;
    bool bias;
} conv_spec;

static void conv_case(const conv_spec *s) {
    tens t[3];
    float *xd = fill_rand(s->n * s->h * s->w * s->ci);
    float *wd = fill_rand(s->co * s->kh * s->kw * s->ci);
    float *bd = fill_rand(s->co);
    tens_init(&t[0], KS_DTYPE_F32, 4, (int64_t[]){s->n, s->h, s->w, s->ci}, xd);
    tens_init(&t[1], KS_DTYPE_F32, 4, (int64_t[]){s->co, s->kh, s->kw, s->ci}, wd);
    tens_init(&t[2], KS_DTYPE_F32, 1, (int64_t[]){s->co}, bd);
    ks__node node = node_of(KS_OP_CONV2D);
    node.ip[0] = node.ip[1] = s->stride;
    node.ip[2] = node.ip[3] = s->dil;
    for (int i = 0; i < 4; i++)
        node.ip[4 + i] = s->pads[i];
    node.ip[8] = s->pad_mode;
    node.ip[10] = s->act;
    node.fp[0] = 0.1f;
    char what[160];
    snprintf(what, sizeof(what), "conv %lldx%lldx%lld->%lld k%lldx%lld s%d d%d pad %d act %d",
             (long long)s->h, (long long)s->w, (long long)s->ci, (long long)s->co, (long long)s->kh,
             (long long)s->kw, s->stride, s->dil, s->pad_mode, s->act);
    double k = (double)(s->kh * s->kw * s->ci);
    int accepted = check_node(&node, t, s->bias ? 3 : 2, 1, TOL_F32_REL * sqrt(k), what);
    if ((ks__cpu_isa() & KS_ISA_AVX512) && s->co <= 4 && accepted == 0)
        fail_msg("%s: no perf variant", what);
    free(xd);
    free(wd);
    free(bd);
}

static void test_conv_small_cout(void **state) {
    (void)state;
    for (int64_t co = 1; co <= 6; co++)
        for (int64_t ci = 1; ci <= 19; ci += 3)
            for (int32_t st = 1; st <= 2; st++) {
                conv_case(&(conv_spec){1,
                                       9,
                                       13,
                                       ci,
                                       co,
                                       3,
                                       3,
                                       st,
                                       1,
                                       KS_PAD_EXPLICIT,
                                       {1, 1, 1, 1},
                                       (int32_t)(co % 4),
                                       co % 2 == 0});
                conv_case(&(conv_spec){
                    1, 7, 17, ci, co, 1, 1, st, 1, KS_PAD_VALID, {0, 0, 0, 0}, KS_ACT_NONE, true});
            }
    conv_case(&(conv_spec){2, 11, 5, 8, 1, 3, 3, 1, 2, KS_PAD_SAME_UPPER, {0}, KS_ACT_RELU, true});
    conv_case(&(conv_spec){1, 10, 12, 5, 2, 5, 3, 2, 1, KS_PAD_SAME_LOWER, {0}, KS_ACT_NONE, true});
    conv_case(&(conv_spec){
        1, 6, 6, 3, 1, 7, 7, 1, 1, KS_PAD_EXPLICIT, {3, 2, 3, 4}, KS_ACT_LEAKY_RELU, true});
    conv_case(&(conv_spec){1, 40, 33, 64, 1, 1, 1, 1, 1, KS_PAD_VALID, {0}, KS_ACT_SIGMOID, true});
    conv_case(&(conv_spec){1, 64, 64, 8, 1, 3, 3, 1, 1, KS_PAD_SAME_UPPER, {0}, KS_ACT_NONE, true});
    /* pixel-packed path (Cin 1, 2, 4, 8, 16 at unit horizontal stride): every tile tail, pads
     * wider than the kernel reach, dilation */
    const int64_t narrow[] = {1, 2, 4, 8, 16};
    for (int c = 0; c < 5; c++)
        for (int64_t w = 1; w <= 17; w++) {
            const int64_t co = 1 + (w + c) % 4;
            conv_case(&(conv_spec){1,
                                   4,
                                   w,
                                   narrow[c],
                                   co,
                                   3,
                                   3,
                                   1,
                                   1,
                                   KS_PAD_EXPLICIT,
                                   {1, 1, 1, 1},
                                   (int32_t)(w % 5),
                                   w % 2 == 1});
            conv_case(&(conv_spec){2,
                                   5,
                                   w + 16,
                                   narrow[c],
                                   co,
                                   3,
                                   2,
                                   1,
                                   2,
                                   KS_PAD_EXPLICIT,
                                   {2, 3, 0, 5},
                                   KS_ACT_NONE,
                                   true});
        }
    /* Cin a multiple of 16 (a vector per pixel, any stride) */
    for (int64_t w = 1; w <= 17; w += 2)
        for (int32_t st = 1; st <= 2; st++) {
            conv_case(&(conv_spec){1,
                                   5,
                                   w + 3,
                                   32,
                                   1 + w % 4,
                                   3,
                                   3,
                                   st,
                                   1,
                                   KS_PAD_EXPLICIT,
                                   {1, 0, 1, 2},
                                   (int32_t)(w % 9),
                                   w % 3 != 0});
            conv_case(&(conv_spec){1,
                                   3,
                                   2 * w + 20,
                                   48,
                                   1 + (w + st) % 4,
                                   1,
                                   1,
                                   st,
                                   1,
                                   KS_PAD_VALID,
                                   {0},
                                   KS_ACT_SIGMOID,
                                   true});
        }
    /* Cin 8, 3x3: interior tiles starting at odd and at even input pixels */
    conv_case(&(conv_spec){1, 9, 40, 8, 1, 3, 3, 1, 1, KS_PAD_SAME_UPPER, {0}, KS_ACT_NONE, true});
    conv_case(&(conv_spec){1, 6, 50, 8, 2, 3, 3, 1, 1, KS_PAD_VALID, {0}, KS_ACT_NONE, true});
    conv_case(&(conv_spec){
        1, 5, 53, 8, 1, 3, 3, 1, 1, KS_PAD_EXPLICIT, {1, 2, 0, 0}, KS_ACT_RELU6, false});
    conv_case(&(conv_spec){1, 9, 37, 2, 3, 5, 5, 1, 1, KS_PAD_SAME_LOWER, {0}, KS_ACT_RELU, false});
}

/* ---- depthwise CONV2D with 1, 2, 4, 8 channels ---- */

static void dw_case(const conv_spec *s) {
    tens t[3];
    float *xd = fill_rand(s->n * s->h * s->w * s->ci);
    float *wd = fill_rand(s->ci * s->kh * s->kw);
    float *bd = fill_rand(s->ci);
    tens_init(&t[0], KS_DTYPE_F32, 4, (int64_t[]){s->n, s->h, s->w, s->ci}, xd);
    tens_init(&t[1], KS_DTYPE_F32, 4, (int64_t[]){s->ci, s->kh, s->kw, 1}, wd);
    tens_init(&t[2], KS_DTYPE_F32, 1, (int64_t[]){s->ci}, bd);
    ks__node node = node_of(KS_OP_CONV2D);
    node.ip[0] = node.ip[1] = s->stride;
    node.ip[2] = node.ip[3] = s->dil;
    for (int i = 0; i < 4; i++)
        node.ip[4 + i] = s->pads[i];
    node.ip[8] = s->pad_mode;
    node.ip[9] = (int32_t)s->ci;
    node.ip[10] = s->act;
    char what[160];
    snprintf(what, sizeof(what), "dw %lldx%lldx%lld k%lldx%lld s%d d%d pad %d act %d",
             (long long)s->h, (long long)s->w, (long long)s->ci, (long long)s->kh, (long long)s->kw,
             s->stride, s->dil, s->pad_mode, s->act);
    int accepted =
        check_node(&node, t, s->bias ? 3 : 2, 1, TOL_F32_REL * sqrt((double)(s->kh * s->kw)), what);
    if ((ks__cpu_isa() & KS_ISA_AVX512) && s->stride == 1 && s->dil == 1 && accepted == 0)
        fail_msg("%s: no perf variant", what);
    free(xd);
    free(wd);
    free(bd);
}

static void test_dw_small_c(void **state) {
    (void)state;
    static const int64_t cs[] = {1, 2, 4, 8};
    static const int32_t acts[] = {KS_ACT_NONE, KS_ACT_RELU, KS_ACT_RELU6, KS_ACT_RELU_N1_TO_1};
    for (int ci = 0; ci < 4; ci++)
        for (int64_t w = 1; w <= 19; w += 3) {
            int32_t act = acts[(ci + w) % 4];
            dw_case(&(conv_spec){
                1, 5, w, cs[ci], 0, 3, 3, 1, 1, KS_PAD_EXPLICIT, {1, 1, 1, 1}, act, w % 2 == 1});
            dw_case(
                &(conv_spec){1, 7, w, cs[ci], 0, 5, 5, 1, 1, KS_PAD_SAME_UPPER, {0}, act, true});
            dw_case(
                &(conv_spec){2, 9, w, cs[ci], 0, 3, 3, 2, 1, KS_PAD_SAME_UPPER, {0}, act, true});
            dw_case(&(conv_spec){1, 6, w + 2, cs[ci], 0, 3, 3, 1, 1, KS_PAD_VALID, {0}, act, true});
        }
    dw_case(
        &(conv_spec){1, 8, 9, 8, 0, 3, 3, 1, 1, KS_PAD_EXPLICIT, {0, 2, 1, 0}, KS_ACT_NONE, true});
    dw_case(
        &(conv_spec){1, 8, 9, 4, 0, 3, 1, 1, 1, KS_PAD_EXPLICIT, {2, 0, 0, 0}, KS_ACT_NONE, true});
    dw_case(&(conv_spec){1, 64, 64, 8, 0, 3, 3, 1, 1, KS_PAD_SAME_UPPER, {0}, KS_ACT_RELU6, true});
}

/* ---- CONV2D_TRANSPOSE with kernel == stride and few outputs per pixel ---- */

static void deconv_tile_case(int64_t n, int64_t h, int64_t w, int64_t ci, int64_t co, int64_t k,
                             int32_t pad_mode, int32_t act, bool bias) {
    tens t[3];
    float *xd = fill_rand(n * h * w * ci);
    float *wd = fill_rand(co * k * k * ci);
    float *bd = fill_rand(co);
    tens_init(&t[0], KS_DTYPE_F32, 4, (int64_t[]){n, h, w, ci}, xd);
    tens_init(&t[1], KS_DTYPE_F32, 4, (int64_t[]){co, k, k, ci}, wd);
    tens_init(&t[2], KS_DTYPE_F32, 1, (int64_t[]){co}, bd);
    ks__node node = node_of(KS_OP_CONV2D_TRANSPOSE);
    node.ip[0] = node.ip[1] = (int32_t)k;
    node.ip[6] = pad_mode;
    node.ip[7] = act;
    node.fp[0] = 0.2f; /* leaky alpha */
    char what[160];
    snprintf(what, sizeof(what),
             "deconv tile n%lld %lldx%lldx%lld -> co %lld k=s=%lld pad %d act %d", (long long)n,
             (long long)h, (long long)w, (long long)ci, (long long)co, (long long)k, pad_mode, act);
    int accepted = check_node(&node, t, bias ? 3 : 2, 1, TOL_F32_REL * sqrt((double)ci), what);
    bool lanes_fit = ((ks__cpu_isa() & KS_ISA_AVX512) && co * k * k <= 16) ||
                     ((ks__cpu_isa() & KS_ISA_NEON) && co * k * k <= 4);
    if (lanes_fit && accepted == 0) fail_msg("%s: no perf variant", what);
    free(xd);
    free(wd);
    free(bd);
}

static void test_deconv_tile(void **state) {
    (void)state;
    static const int32_t acts[] = {KS_ACT_NONE,       KS_ACT_SIGMOID, KS_ACT_RELU,
                                   KS_ACT_LEAKY_RELU, KS_ACT_TANH,    KS_ACT_RELU6};
    int i = 0;
    for (int64_t co = 1; co <= 4; co++)
        for (int64_t ci = 1; ci <= 19; ci += 3)
            for (int64_t w = 1; w <= 9; w += 2, i++)
                deconv_tile_case(1 + (i % 2), 3, w, ci, co, 2,
                                 i % 3 == 0 ? KS_PAD_EXPLICIT
                                            : (i % 3 == 1 ? KS_PAD_SAME_UPPER : KS_PAD_VALID),
                                 acts[i % 6], i % 4 != 3);
    deconv_tile_case(1, 4, 5, 7, 1, 3, KS_PAD_VALID, KS_ACT_NONE, true);            /* 9 lanes */
    deconv_tile_case(1, 4, 6, 16, 1, 4, KS_PAD_SAME_UPPER, KS_ACT_NONE, true);      /* 16 lanes */
    deconv_tile_case(1, 5, 7, 9, 3, 1, KS_PAD_EXPLICIT, KS_ACT_RELU, true);         /* pointwise */
    deconv_tile_case(1, 64, 64, 16, 1, 2, KS_PAD_SAME_UPPER, KS_ACT_SIGMOID, true); /* selfie */
}

static void test_all_variants_ran(void **state) {
    (void)state;
    const ks__impl *const *list = ks__impl_list();
    for (int idx = 0; list[idx]; idx++) {
        const ks__impl *im = list[idx];
        if ((im->isa & ~ks__cpu_isa()) != 0 || !is_perf_variant(im)) continue;
        if (g_runs[idx] == 0) fail_msg("variant %s never ran", im->name);
    }
}

static int setup(void **state) {
    (void)state;
    return ks__pool_create(NULL, 3, &g_pool3) == KS_STATUS_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    ks__pool_destroy(g_pool3);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transpose),       cmocka_unit_test(test_split),
        cmocka_unit_test(test_conv_small_cout), cmocka_unit_test(test_dw_small_c),
        cmocka_unit_test(test_deconv_tile),     cmocka_unit_test(test_all_variants_ran),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
