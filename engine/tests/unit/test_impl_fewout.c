/* The few-output variants (impls_fewout.inc) against the reference CONV2D and CONV2D_TRANSPOSE:
 * Cout 1..4, Cin 1..17 and wider (every SPAN core: chunk counts, masked tails, the Cin 8 cores;
 * the PACKED Cin 1, 2, 4 cores), widths 1..19 and heights 1..5 (tiles cut anywhere, windows at
 * both row ends), kernels 1x1 to 7x7, strides 1 and 2, vertical dilation, explicit, SAME and
 * VALID padding, every fused activation including SILU and PRELU, with and without bias and
 * residual (also a residual that is the output buffer itself), F16 weights, infinite inputs next
 * to the ones a pixel reads; transpose convs with kernel == stride and up to 4 outputs per input
 * pixel. 1 and 2 threads must agree bitwise. */
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

static bool is_fewout(const ks__impl *im) {
    return strstr(im->name, "_fewout__") != NULL;
}

typedef struct conv_spec {
    bool deconv;
    int64_t n, h, w, ci, co, kh, kw;
    int32_t stride, pad_mode, pads[4], act;
    bool bias, residual;
    int32_t dilation_h;
    bool alias;  /* the residual is the output buffer (in-place) */
    bool f16;    /* F16 weights and bias */
    int num_inf; /* inputs set to +inf */
} conv_spec;

/* Equal, or both NaN, or within tol of want relative to max(1, |want|). */
static bool close_enough(double got, double want, double tol) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got)) return got == want;
    return fabs(got - want) <= tol * (fabs(want) > 1.0 ? fabs(want) : 1.0);
}

/* Reference run, then every fewout variant that accepts the node at 1 and 2 threads. Returns how
 * many variants accepted it. */
static int conv_case(const conv_spec *s) {
    tens t[5], out;
    memset(t, 0, sizeof(t));
    const int64_t num_x = s->n * s->h * s->w * s->ci;
    float *xd = fill_rand(num_x, -1.0f, 1.0f);
    for (int i = 0; i < s->num_inf && num_x > 0; i++)
        xd[(int64_t)(frand(0.0f, 1.0f) * (float)num_x) % num_x] = INFINITY;
    const int64_t num_w = s->co * s->kh * s->kw * s->ci;
    float *wd = fill_rand(num_w, -1.0f, 1.0f);
    /* a large bias, as after folding batch norm: the kernels must add it after the products */
    float *bd = fill_rand(s->co, -8.0f, 8.0f);
    float *sd = fill_rand(s->co, -0.5f, 0.5f);
    uint16_t *wh = malloc((size_t)num_w * sizeof(uint16_t)), *bh = malloc((size_t)s->co * 2);
    assert_true(wh && bh);
    for (int64_t i = 0; i < num_w; i++)
        wh[i] = ks__f32_to_f16(wd[i]);
    for (int64_t i = 0; i < s->co; i++)
        bh[i] = ks__f32_to_f16(bd[i]);
    const ks_dtype wt = s->f16 ? KS_DTYPE_F16 : KS_DTYPE_F32;
    tens_init(&t[0], KS_DTYPE_F32, 4, (int64_t[]){s->n, s->h, s->w, s->ci}, xd);
    tens_init(&t[1], wt, 4, (int64_t[]){s->co, s->kh, s->kw, s->ci}, s->f16 ? (void *)wh : wd);
    if (s->bias) tens_init(&t[2], wt, 1, (int64_t[]){s->co}, s->f16 ? (void *)bh : bd);
    if (s->act == KS_ACT_PRELU) tens_init(&t[4], KS_DTYPE_F32, 1, (int64_t[]){s->co}, sd);
    uint32_t nin = s->act == KS_ACT_PRELU ? 5 : s->residual ? 4 : s->bias ? 3 : 2;

    ks__node node;
    memset(&node, 0, sizeof(node));
    node.name = (char *)"n";
    node.fp[0] = 0.1f;
    if (s->deconv) {
        node.op = KS_OP_CONV2D_TRANSPOSE;
        node.ip[0] = (int32_t)s->kh, node.ip[1] = (int32_t)s->kw;
        for (int i = 0; i < 4; i++)
            node.ip[2 + i] = s->pads[i];
        node.ip[6] = s->pad_mode;
        node.ip[7] = s->act;
    } else {
        node.op = KS_OP_CONV2D;
        node.ip[0] = node.ip[1] = s->stride;
        node.ip[2] = s->dilation_h;
        for (int i = 0; i < 4; i++)
            node.ip[4 + i] = s->pads[i];
        node.ip[8] = s->pad_mode;
        node.ip[10] = s->act;
    }
    char what[240];
    snprintf(what, sizeof(what),
             "%s n%lld %lldx%lldx%lld->%lld k%lldx%lld s%d dh%d pad %d [%d %d %d %d] act %d%s%s%s"
             "%s inf%d",
             s->deconv ? "deconv" : "conv", (long long)s->n, (long long)s->h, (long long)s->w,
             (long long)s->ci, (long long)s->co, (long long)s->kh, (long long)s->kw, s->stride,
             s->dilation_h, s->pad_mode, s->pads[0], s->pads[1], s->pads[2], s->pads[3], s->act,
             s->bias ? " bias" : "", s->residual ? " residual" : "", s->alias ? " in-place" : "",
             s->f16 ? " f16" : "", s->num_inf);

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
    const ks__kernel *k = &ks__ref_kernels()->k[node.op];
    if (ks__ref_prepare(&ctx)) fail_msg("%s: reference infer failed: %s", what, g_err);
    const int64_t n = ks__rt_numel(&out.rt);
    const size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
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
        if (im->op != node.op || (im->isa & ~ks__cpu_isa()) != 0 || !is_fewout(im)) continue;
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
            if (s->alias) {
                memcpy(g, rd, (size_t)n * sizeof(float));
                t[3].rt.data = g;
            }
            out.rt.data = g;
            c.pool = th ? g_pool2 : NULL;
            c.num_threads = th ? 2 : 1;
            if (im->run(&c)) fail_msg("%s: %s failed: %s", what, im->name, g_err);
        }
        if (s->residual) t[3].rt.data = rd;
        for (int64_t i = 0; i < n; i++)
            if (!close_enough(got1[i], want[i], tol))
                fail_msg("%s: %s element %lld of %lld: got %.9g want %.9g", what, im->name,
                         (long long)i, (long long)n, (double)got1[i], (double)want[i]);
        if (n > 0 && memcmp(got1, got2, (size_t)n * sizeof(float)) != 0)
            fail_msg("%s: %s differs between 1 and 2 threads", what, im->name);
        free(packed);
        g_runs[idx]++;
    }
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
    const int accepted = conv_case(s);
    if ((ks__cpu_isa() & KS_ISA_AVX2) && accepted == 0)
        fail_msg("%s %lldx%lldx%lld->%lld k%lldx%lld: no fewout variant accepted it",
                 s->deconv ? "deconv" : "conv", (long long)s->h, (long long)s->w, (long long)s->ci,
                 (long long)s->co, (long long)s->kh, (long long)s->kw);
}

static void expect_refused(const conv_spec *s) {
    assert_int_equal(conv_case(s), 0);
}

static const int32_t k_acts[] = {
    KS_ACT_NONE,    KS_ACT_RELU,       KS_ACT_RELU_N1_TO_1, KS_ACT_RELU6, KS_ACT_TANH,
    KS_ACT_SIGMOID, KS_ACT_LEAKY_RELU, KS_ACT_HARD_SWISH,   KS_ACT_SILU,  KS_ACT_PRELU};
#define NUM_ACTS ((int)(sizeof(k_acts) / sizeof(k_acts[0])))

static void set_pad(conv_spec *s, int mode) {
    switch (mode % 4) {
    case 0:
        s->pad_mode = KS_PAD_SAME_UPPER;
        break;
    case 1:
        s->pad_mode = KS_PAD_SAME_LOWER;
        break;
    case 2:
        s->pad_mode = KS_PAD_EXPLICIT;
        s->pads[0] = (int32_t)(s->kh / 2), s->pads[1] = (int32_t)(s->kw / 2);
        s->pads[2] = (int32_t)(s->kh - 1 - s->kh / 2), s->pads[3] = (int32_t)(s->kw / 2 + 1);
        break;
    default:
        s->pad_mode = KS_PAD_VALID;
        break;
    }
    /* VALID needs the kernel to fit */
    if (s->pad_mode == KS_PAD_VALID && (s->h < (s->kh - 1) * s->dilation_h + 1 || s->w < s->kw))
        s->pad_mode = KS_PAD_SAME_UPPER;
}

/* Every width and height, with the kernel, stride, padding, channels and epilogue varied. */
static void test_shapes(void **state) {
    (void)state;
    static const int64_t cis[] = {1, 3, 8, 13, 32, 2, 4, 16, 5, 24, 40};
    static const int64_t ks[][2] = {{3, 3}, {1, 1}, {5, 5}, {3, 1}, {1, 3}, {7, 7}, {2, 2}};
    int i = 0;
    for (int64_t h = 1; h <= 5; h++)
        for (int64_t w = 1; w <= 19; w++, i++) {
            conv_spec s = {0};
            s.n = 1 + (i % 7 == 3);
            s.h = h, s.w = w;
            s.ci = cis[i % 11];
            s.co = 1 + (i / 11) % 4;
            s.kh = ks[i % 7][0], s.kw = ks[i % 7][1];
            s.stride = 1 + (i / 3) % 2;
            s.dilation_h = 1 + (i % 13 == 5);
            s.act = k_acts[i % NUM_ACTS];
            s.bias = i % 4 != 1;
            s.residual = i % 3 == 0;
            s.alias = s.residual && i % 2 == 0;
            set_pad(&s, i);
            expect_fast(&s);
        }
}

/* Every input channel count (SPAN chunk counts and tails, PACKED) x every output count. */
static void test_channels(void **state) {
    (void)state;
    static const int64_t cis[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13,
                                  14, 15, 16, 17, 24, 31, 32, 33, 40, 48, 64, 72};
    int i = 0;
    for (size_t a = 0; a < sizeof(cis) / sizeof(cis[0]); a++)
        for (int64_t co = 1; co <= 4; co++)
            for (int k = 0; k < 3; k++, i++) {
                const int64_t kk = k == 0 ? 1 : k == 1 ? 3 : 5;
                conv_spec s = {
                    .n = 1,
                    .h = 3 + i % 3,
                    .w = (i % 2) ? 19 : 35,
                    .ci = cis[a],
                    .co = co,
                    .kh = kk,
                    .kw = kk,
                    .stride = 1 + (i % 5 == 4),
                    .pad_mode = KS_PAD_EXPLICIT,
                    .pads = {(int32_t)kk / 2, (int32_t)kk / 2, (int32_t)kk / 2, (int32_t)kk / 2},
                    .act = k_acts[i % NUM_ACTS],
                    .bias = i % 3 != 0,
                    .residual = i % 2 == 0,
                    .dilation_h = 1};
                expect_fast(&s);
            }
}

/* The layers this family was written for, and the odd cases around them. */
static void test_models(void **state) {
    (void)state;
    /* BlazePose full's segmentation head: 3x3 s1 SAME, 8 -> 1 */
    expect_fast(&(conv_spec){.n = 1,
                             .h = 37,
                             .w = 45,
                             .ci = 8,
                             .co = 1,
                             .kh = 3,
                             .kw = 3,
                             .stride = 1,
                             .pad_mode = KS_PAD_SAME_UPPER,
                             .act = KS_ACT_NONE,
                             .bias = true,
                             .dilation_h = 1});
    /* selfie segmentation's last layer: 2x2 s2 transpose conv, 16 -> 1, sigmoid */
    expect_fast(&(conv_spec){.deconv = true,
                             .n = 1,
                             .h = 13,
                             .w = 19,
                             .ci = 16,
                             .co = 1,
                             .kh = 2,
                             .kw = 2,
                             .pad_mode = KS_PAD_SAME_UPPER,
                             .act = KS_ACT_SIGMOID,
                             .bias = true});
    /* 1x1 objectness / class heads */
    expect_fast(&(conv_spec){.n = 2,
                             .h = 7,
                             .w = 13,
                             .ci = 64,
                             .co = 1,
                             .kh = 1,
                             .kw = 1,
                             .stride = 1,
                             .pad_mode = KS_PAD_VALID,
                             .act = KS_ACT_SIGMOID,
                             .bias = true,
                             .dilation_h = 1});
    expect_fast(&(conv_spec){.n = 1,
                             .h = 9,
                             .w = 17,
                             .ci = 32,
                             .co = 4,
                             .kh = 1,
                             .kw = 1,
                             .stride = 1,
                             .pad_mode = KS_PAD_VALID,
                             .act = KS_ACT_NONE,
                             .bias = true,
                             .residual = true,
                             .dilation_h = 1});
    /* F16 weights and bias */
    expect_fast(&(conv_spec){.n = 1,
                             .h = 12,
                             .w = 31,
                             .ci = 3,
                             .co = 2,
                             .kh = 3,
                             .kw = 3,
                             .stride = 2,
                             .pad_mode = KS_PAD_SAME_UPPER,
                             .act = KS_ACT_RELU6,
                             .bias = true,
                             .dilation_h = 1,
                             .f16 = true});
    expect_fast(&(conv_spec){.n = 1,
                             .h = 5,
                             .w = 33,
                             .ci = 16,
                             .co = 3,
                             .kh = 1,
                             .kw = 1,
                             .stride = 1,
                             .pad_mode = KS_PAD_VALID,
                             .act = KS_ACT_SILU,
                             .bias = true,
                             .residual = true,
                             .dilation_h = 1,
                             .f16 = true});
    expect_fast(&(conv_spec){.deconv = true,
                             .n = 1,
                             .h = 3,
                             .w = 11,
                             .ci = 12,
                             .co = 2,
                             .kh = 1,
                             .kw = 2,
                             .pad_mode = KS_PAD_VALID,
                             .act = KS_ACT_TANH,
                             .bias = true,
                             .f16 = true});
    /* infinite inputs: only the outputs that read them may be inf or NaN (the masked tails) */
    for (int64_t ci = 1; ci <= 13; ci += 3)
        expect_fast(&(conv_spec){.n = 1,
                                 .h = 6,
                                 .w = 23,
                                 .ci = ci,
                                 .co = 1 + ci % 4,
                                 .kh = 3,
                                 .kw = 3,
                                 .stride = 1 + ci % 2,
                                 .pad_mode = KS_PAD_SAME_UPPER,
                                 .act = KS_ACT_NONE,
                                 .bias = true,
                                 .dilation_h = 1,
                                 .num_inf = 3});
    expect_fast(&(conv_spec){.deconv = true,
                             .n = 1,
                             .h = 4,
                             .w = 13,
                             .ci = 5,
                             .co = 1,
                             .kh = 2,
                             .kw = 2,
                             .pad_mode = KS_PAD_VALID,
                             .act = KS_ACT_NONE,
                             .bias = true,
                             .num_inf = 2});
}

/* Transpose convs with kernel == stride: every block with at most 4 outputs per input pixel. */
static void test_deconv(void **state) {
    (void)state;
    static const int32_t acts[] = {KS_ACT_NONE, KS_ACT_SIGMOID, KS_ACT_RELU, KS_ACT_LEAKY_RELU,
                                   KS_ACT_TANH, KS_ACT_RELU6,   KS_ACT_SILU, KS_ACT_HARD_SWISH};
    static const int64_t blocks[][2] = {{2, 2}, {1, 2}, {2, 1}, {1, 1}, {1, 4}, {4, 1}, {1, 3}};
    int i = 0;
    for (int64_t co = 1; co <= 4; co++)
        for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++)
            for (int64_t ci = 1; ci <= 19; ci += 3, i++) {
                conv_spec s = {.deconv = true,
                               .n = 1 + (i % 5 == 2),
                               .h = 1 + i % 4,
                               .w = 1 + (i * 7) % 19,
                               .ci = ci,
                               .co = co,
                               .kh = blocks[b][0],
                               .kw = blocks[b][1],
                               .pad_mode = i % 3 == 0   ? KS_PAD_EXPLICIT
                                           : i % 3 == 1 ? KS_PAD_SAME_UPPER
                                                        : KS_PAD_VALID,
                               .act = acts[i % 8],
                               .bias = i % 4 != 3};
                if (co * s.kh * s.kw <= 4)
                    expect_fast(&s);
                else
                    expect_refused(&s);
            }
}

/* Nodes the family must refuse (the reference or other variants run them). */
static void test_refused(void **state) {
    (void)state;
    /* 5 output channels */
    expect_refused(&(conv_spec){.n = 1,
                                .h = 6,
                                .w = 6,
                                .ci = 8,
                                .co = 5,
                                .kh = 3,
                                .kw = 3,
                                .stride = 1,
                                .pad_mode = KS_PAD_SAME_UPPER,
                                .bias = true,
                                .dilation_h = 1});
    /* transpose conv with padding (the block overlaps its neighbour's) and kernel != stride */
    expect_refused(&(conv_spec){.deconv = true,
                                .n = 1,
                                .h = 4,
                                .w = 5,
                                .ci = 8,
                                .co = 1,
                                .kh = 2,
                                .kw = 2,
                                .pad_mode = KS_PAD_EXPLICIT,
                                .pads = {1, 0, 0, 0},
                                .bias = true});
}

static void test_all_variants_ran(void **state) {
    (void)state;
    const ks__impl *const *list = ks__impl_list();
    int found = 0;
    for (int idx = 0; list[idx]; idx++) {
        const ks__impl *im = list[idx];
        if ((im->isa & ~ks__cpu_isa()) != 0 || !is_fewout(im)) continue;
        found++;
        if (g_runs[idx] == 0) fail_msg("variant %s never ran", im->name);
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
        cmocka_unit_test(test_shapes),  cmocka_unit_test(test_channels),
        cmocka_unit_test(test_models),  cmocka_unit_test(test_deconv),
        cmocka_unit_test(test_refused), cmocka_unit_test(test_all_variants_ran),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
