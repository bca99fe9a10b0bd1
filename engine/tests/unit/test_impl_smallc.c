/* The small-channel direct conv variants (impls_smallc.inc) against the reference CONV2D: widths
 * 1..17 and heights 1..5 (tiles cut anywhere, windows at both row ends), Cin 1..16 (every
 * compiled pixel stride), Cout 1..40 (partial vectors and blocks), strides 1 and 2, explicit,
 * SAME and VALID padding, KxK up to 7x7, every fused activation including SILU and PRELU, with
 * and without bias and residual (also one that is the output buffer itself); 1 and 2 threads
 * must agree bitwise. */
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

#define TOL_F32_REL 1e-5 /* times sqrt(K) for dot products of length K */

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

static char g_err[512];
static ks__pool *g_pool2;
static int g_runs[512]; /* per entry of ks__impl_list() */
static int g_cases;
static uint32_t g_rng = 2463534242u;

static float frand(float lo, float hi) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 17;
    g_rng ^= g_rng << 5;
    return lo + (hi - lo) * (float)(g_rng >> 8) / (float)(1u << 24);
}

static float *fill_rand(int64_t n, float lo, float hi) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    assert_non_null(p);
    for (int64_t i = 0; i < n; i++)
        p[i] = frand(lo, hi);
    return p;
}

/* fp32 variants only: the int8 ks_q8_conv2d_smallc__* family has its own bit-exact test
 * (test_impl_q8_smallc.c). */
static bool is_smallc(const ks__impl *im) {
    return strstr(im->name, "_smallc__") != NULL && strncmp(im->name, "ks_q8_", 6) != 0;
}

typedef struct conv_spec {
    int64_t n, h, w, ci, co, kh, kw;
    int32_t stride, pad_mode, pads[4], act;
    bool bias, residual;
} conv_spec;

static bool g_f16;   /* F16 weights and bias (the variants convert them at pack) */
static bool g_alias; /* a residual is the output buffer itself (in place) */

/* Reference run, then every smallc variant that accepts the node at 1 and 2 threads. Returns
 * how many variants accepted it. */
static int conv_case(const conv_spec *s) {
    tens t[5], out;
    memset(t, 0, sizeof(t));
    float *xd = fill_rand(s->n * s->h * s->w * s->ci, -1.0f, 1.0f);
    float *wd = fill_rand(s->co * s->kh * s->kw * s->ci, -1.0f, 1.0f);
    /* a large bias, as after folding batch norm: the kernels must add it after the products */
    float *bd = fill_rand(s->co, -8.0f, 8.0f);
    float *sd = fill_rand(s->co, -0.5f, 0.5f);
    tens_init(&t[0], KS_DTYPE_F32, 4, (int64_t[]){s->n, s->h, s->w, s->ci}, xd);
    const int64_t num_w = s->co * s->kh * s->kw * s->ci;
    uint16_t *wh = malloc((size_t)num_w * sizeof(uint16_t)), *bh = malloc((size_t)s->co * 2);
    assert_true(wh && bh);
    for (int64_t i = 0; i < num_w; i++)
        wh[i] = ks__f32_to_f16(wd[i]);
    for (int64_t i = 0; i < s->co; i++)
        bh[i] = ks__f32_to_f16(bd[i]);
    const ks_dtype wt = g_f16 ? KS_DTYPE_F16 : KS_DTYPE_F32;
    tens_init(&t[1], wt, 4, (int64_t[]){s->co, s->kh, s->kw, s->ci}, g_f16 ? (void *)wh : wd);
    if (s->bias) tens_init(&t[2], wt, 1, (int64_t[]){s->co}, g_f16 ? (void *)bh : bd);
    if (s->act == KS_ACT_PRELU) tens_init(&t[4], KS_DTYPE_F32, 1, (int64_t[]){s->co}, sd);
    uint32_t nin = s->act == KS_ACT_PRELU ? 5 : s->residual ? 4 : s->bias ? 3 : 2;

    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_CONV2D;
    node.name = (char *)"n";
    node.ip[0] = node.ip[1] = s->stride;
    for (int i = 0; i < 4; i++)
        node.ip[4 + i] = s->pads[i];
    node.ip[8] = s->pad_mode;
    node.ip[10] = s->act;
    node.fp[0] = 0.1f;
    char what[200];
    snprintf(what, sizeof(what),
             "conv n%lld %lldx%lldx%lld->%lld k%lldx%lld s%d pad %d [%d %d %d %d] act %d%s%s%s",
             (long long)s->n, (long long)s->h, (long long)s->w, (long long)s->ci, (long long)s->co,
             (long long)s->kh, (long long)s->kw, s->stride, s->pad_mode, s->pads[0], s->pads[1],
             s->pads[2], s->pads[3], s->act, s->bias ? " bias" : "", s->residual ? " residual" : "",
             g_alias && s->residual ? " in-place" : "");

    ks__rt_tensor *in[5];
    for (uint32_t i = 0; i < 5; i++)
        in[i] = t[i].rt.data ? &t[i].rt : NULL;
    tens_init(&out, KS_DTYPE_F32, 0, NULL, NULL);
    ks__rt_tensor *outp = &out.rt;
    ks__kernel_ctx ctx = {.node = &node,
                          .node_index = 3,
                          .in = in,
                          .num_inputs = nin,
                          .out = &outp,
                          .num_outputs = 1,
                          .err = g_err,
                          .err_cap = sizeof(g_err)};
    const ks__kernel *k = &ks__ref_kernels()->k[KS_OP_CONV2D];
    if (ks__ref_prepare(&ctx)) fail_msg("%s: reference infer failed: %s", what, g_err);
    int64_t n = ks__rt_numel(&out.rt);
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
    float *rd = NULL;
    if (s->residual) {
        rd = fill_rand(n, -2.0f, 2.0f);
        tens_init(&t[3], KS_DTYPE_F32, 4, out.rt.dims, rd);
        in[3] = &t[3].rt;
    }
    static _Alignas(64) uint8_t scratch[1 << 20];
    assert_true(ctx.scratch_bytes <= sizeof(scratch));
    ctx.scratch = scratch;
    float *want = malloc(bytes), *got1 = malloc(bytes), *got2 = malloc(bytes);
    assert_true(want && got1 && got2);
    out.rt.size_bytes = (size_t)n * sizeof(float);
    out.rt.data = want;
    assert_int_equal(k->run(&ctx), KS_STATUS_OK);

    const double tol = TOL_F32_REL * sqrt((double)(s->kh * s->kw * s->ci));
    int accepted = 0;
    const ks__impl *const *list = ks__impl_list();
    for (int idx = 0; list[idx]; idx++) {
        const ks__impl *im = list[idx];
        if (im->op != KS_OP_CONV2D || (im->isa & ~ks__cpu_isa()) != 0 || !is_smallc(im)) continue;
        ks__kernel_ctx c = ctx;
        c.scratch = NULL, c.scratch_bytes = 0, c.num_threads = 2;
        out.rt.data = NULL;
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
            assert_int_equal(im->pack(&c), KS_STATUS_OK);
        }
        for (int th = 0; th < 2; th++) {
            float *g = th ? got2 : got1;
            memset(g, 0xA5, bytes);
            if (g_alias && s->residual) {
                memcpy(g, rd, (size_t)n * sizeof(float));
                t[3].rt.data = g;
            }
            out.rt.data = g;
            c.pool = th ? g_pool2 : NULL;
            c.num_threads = th ? 2 : 1;
            if (im->run(&c)) fail_msg("%s: %s failed: %s", what, im->name, g_err);
        }
        if (s->residual) t[3].rt.data = rd;
        for (int64_t i = 0; i < n; i++) {
            double w = want[i], g = got1[i];
            if (!(fabs(g - w) <= tol * (fabs(w) > 1.0 ? fabs(w) : 1.0)))
                fail_msg("%s: %s element %lld of %lld: got %.9g want %.9g", what, im->name,
                         (long long)i, (long long)n, g, w);
        }
        if (n > 0 && memcmp(got1, got2, (size_t)n * sizeof(float)) != 0)
            fail_msg("%s: %s differs between 1 and 2 threads", what, im->name);
        free(packed);
        g_runs[idx]++;
    }
    g_cases++;
    free(want);
    free(got1);
    free(got2);
    free(xd);
    free(wd);
    free(bd);
    free(sd);
    free(rd);
    free(wh);
    free(bh);
    return accepted;
}

static void expect_fast(const conv_spec *s) {
    int accepted = conv_case(s);
    if ((ks__cpu_isa() & KS_ISA_AVX2) && accepted == 0)
        fail_msg("conv %lldx%lldx%lld->%lld: no smallc variant accepted it", (long long)s->h,
                 (long long)s->w, (long long)s->ci, (long long)s->co);
}

static const int32_t k_acts[] = {
    KS_ACT_NONE,    KS_ACT_RELU,       KS_ACT_RELU_N1_TO_1, KS_ACT_RELU6, KS_ACT_TANH,
    KS_ACT_SIGMOID, KS_ACT_LEAKY_RELU, KS_ACT_HARD_SWISH,   KS_ACT_SILU,  KS_ACT_PRELU};
#define NUM_ACTS ((int)(sizeof(k_acts) / sizeof(k_acts[0])))

/* Every width and height, with the kernel, stride, padding, channels and epilogue varied. */
static void test_shapes(void **state) {
    (void)state;
    static const int64_t cos[] = {1, 3, 8, 13, 16, 17, 24, 31, 32, 40};
    static const int64_t ks[][2] = {{3, 3}, {1, 1}, {5, 5}, {3, 1}, {1, 3}, {7, 7}, {2, 2}};
    int i = 0;
    for (int64_t h = 1; h <= 5; h++)
        for (int64_t w = 1; w <= 17; w++, i++) {
            conv_spec s = {0};
            s.n = 1 + (i % 7 == 3);
            s.h = h, s.w = w;
            s.ci = 1 + (i * 7) % 16;
            s.co = cos[(i * 3) % 10];
            s.kh = ks[i % 7][0], s.kw = ks[i % 7][1];
            s.stride = 1 + (i / 3) % 2;
            s.act = k_acts[i % NUM_ACTS];
            s.bias = i % 4 != 1;
            s.residual = i % 3 == 0;
            g_alias = i % 2 == 0;
            switch (i % 4) {
            case 0:
                s.pad_mode = KS_PAD_SAME_UPPER;
                break;
            case 1:
                s.pad_mode = KS_PAD_SAME_LOWER;
                break;
            case 2:
                s.pad_mode = KS_PAD_EXPLICIT;
                s.pads[0] = (int32_t)(s.kh / 2), s.pads[1] = (int32_t)(s.kw / 2);
                s.pads[2] = (int32_t)(s.kh - 1 - s.kh / 2), s.pads[3] = (int32_t)(s.kw / 2 + 1);
                break;
            default:
                s.pad_mode = KS_PAD_VALID;
                break;
            }
            /* VALID needs the kernel to fit */
            if (s.pad_mode == KS_PAD_VALID && (s.h < s.kh || s.w < s.kw))
                s.pad_mode = KS_PAD_SAME_UPPER;
            expect_fast(&s);
        }
    g_alias = false;
}

/* Every input channel count (pixel stride) x every output channel count up to 40. */
static void test_channels(void **state) {
    (void)state;
    for (int64_t ci = 1; ci <= 16; ci++)
        for (int64_t co = 1; co <= 40; co++) {
            int32_t st = 1 + (int32_t)((ci + co) % 2);
            conv_spec s = {1,
                           4,
                           (ci + co) % 2 ? 19 : 30,
                           ci,
                           co,
                           3,
                           3,
                           st,
                           KS_PAD_EXPLICIT,
                           {1, 1, 1, 1},
                           k_acts[(ci * 3 + co) % NUM_ACTS],
                           co % 3 != 0,
                           co % 2 == 0};
            expect_fast(&s);
        }
}

/* The layers this family was written for, and pixel strides 24..64. */
static void test_models(void **state) {
    (void)state;
    /* YuNet / FaceMesh stems: 3x3 s2, 3 -> 16 */
    expect_fast(&(conv_spec){
        1, 64, 64, 3, 16, 3, 3, 2, KS_PAD_EXPLICIT, {1, 1, 1, 1}, KS_ACT_RELU, true, false});
    expect_fast(
        &(conv_spec){1, 65, 63, 3, 16, 3, 3, 2, KS_PAD_SAME_UPPER, {0}, KS_ACT_PRELU, true, false});
    /* YOLOX-nano after space-to-depth: 3x3 s1, 12 -> 16, SiLU */
    expect_fast(&(conv_spec){
        1, 33, 35, 12, 16, 3, 3, 1, KS_PAD_EXPLICIT, {1, 1, 1, 1}, KS_ACT_SILU, true, false});
    /* BlazePose's 1x1 8 -> 8 with a residual (in the core's store), also in place */
    expect_fast(
        &(conv_spec){1, 13, 37, 8, 8, 1, 1, 1, KS_PAD_VALID, {0}, KS_ACT_RELU6, true, true});
    g_alias = true;
    expect_fast(
        &(conv_spec){1, 13, 37, 8, 8, 1, 1, 1, KS_PAD_VALID, {0}, KS_ACT_RELU6, true, true});
    g_alias = false;
    /* 1x1 16 -> 16 and 32 -> 16, with a residual */
    expect_fast(
        &(conv_spec){1, 20, 29, 16, 16, 1, 1, 1, KS_PAD_VALID, {0}, KS_ACT_RELU, true, true});
    expect_fast(
        &(conv_spec){1, 9, 10, 32, 16, 1, 1, 1, KS_PAD_VALID, {0}, KS_ACT_SILU, true, false});
    expect_fast(
        &(conv_spec){1, 9, 10, 24, 24, 1, 1, 2, KS_PAD_VALID, {0}, KS_ACT_NONE, true, true});
    expect_fast(
        &(conv_spec){2, 7, 13, 64, 8, 1, 1, 1, KS_PAD_VALID, {0}, KS_ACT_HARD_SWISH, false, true});
    expect_fast(
        &(conv_spec){1, 7, 13, 32, 40, 1, 1, 2, KS_PAD_VALID, {0}, KS_ACT_SIGMOID, true, false});
    /* stem with 32 output channels, 5x5 and 7x7 with asymmetric explicit padding */
    expect_fast(&(conv_spec){
        1, 31, 45, 3, 32, 3, 3, 2, KS_PAD_EXPLICIT, {0, 0, 1, 1}, KS_ACT_RELU6, true, false});
    expect_fast(&(conv_spec){
        1, 23, 21, 1, 8, 7, 7, 2, KS_PAD_EXPLICIT, {3, 2, 3, 4}, KS_ACT_LEAKY_RELU, true, true});
    expect_fast(&(conv_spec){
        1, 17, 40, 4, 24, 5, 5, 1, KS_PAD_EXPLICIT, {2, 0, 2, 4}, KS_ACT_TANH, true, false});
    /* F16 weights and bias */
    g_f16 = true;
    expect_fast(
        &(conv_spec){1, 12, 31, 3, 16, 3, 3, 2, KS_PAD_SAME_UPPER, {0}, KS_ACT_RELU6, true, false});
    expect_fast(
        &(conv_spec){1, 5, 33, 16, 20, 1, 1, 1, KS_PAD_VALID, {0}, KS_ACT_SILU, true, true});
    g_f16 = false;
}

/* Nodes the family must refuse (the reference or other variants run them). */
static void test_refused(void **state) {
    (void)state;
    /* pixel stride 17 (no core), 3 * 7 = 21 neither */
    assert_int_equal(conv_case(&(conv_spec){
                         1, 6, 6, 17, 16, 1, 1, 1, KS_PAD_VALID, {0}, KS_ACT_NONE, true, false}),
                     0);
    assert_int_equal(conv_case(&(conv_spec){
                         1, 9, 30, 3, 16, 3, 3, 7, KS_PAD_VALID, {0}, KS_ACT_NONE, true, false}),
                     0);
}

static void test_all_variants_ran(void **state) {
    (void)state;
    const ks__impl *const *list = ks__impl_list();
    int found = 0;
    for (int idx = 0; list[idx]; idx++) {
        const ks__impl *im = list[idx];
        if ((im->isa & ~ks__cpu_isa()) != 0 || !is_smallc(im)) continue;
        found++;
        if (g_runs[idx] == 0) fail_msg("variant %s never ran", im->name);
        if (g_runs[idx] < g_cases - 2)
            fail_msg("variant %s ran %d of %d cases", im->name, g_runs[idx], g_cases);
    }
    if (found == 0) skip();
}

static int setup(void **state) {
    (void)state;
    return ks__pool_create(NULL, 2, &g_pool2) == KS_STATUS_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    ks__pool_destroy(g_pool2);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),           cmocka_unit_test(test_channels),
        cmocka_unit_test(test_models),           cmocka_unit_test(test_refused),
        cmocka_unit_test(test_all_variants_ran),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
