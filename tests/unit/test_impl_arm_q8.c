/* AArch64 int8 variants (impls_arm_q8.inc: SDOT and plain NEON GEMM, NEON depthwise) against the
 * reference kernels, byte for byte: every ARM q8 variant the running CPU supports (under
 * `qemu-aarch64 -cpu max` both GEMMs, under `-cpu cortex-a53` only the plain NEON one), on
 * shapes that hit every tail of the 4x16 / 4x8 tiles (rows, columns, the 16-byte and 4-byte k
 * groups), strides, dilation, every padding mode, U8 and I8 inputs, U8 per-tensor weights with a
 * zero point, I8 per-channel weights (symmetric and not), extreme codes (-128 * -128 products),
 * multipliers above 1 (left shifts), every quantized fused activation, at 1 and 3 threads.
 * Also checks dispatch: the SDOT variant wins when the ISA bits have dotprod, the plain NEON one
 * otherwise. Skipped on other architectures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "impl.h"
#include "kernel.h"

#include "q8_variants.h"

static int is_arm_q8_variant(const ks__impl *im) {
    return strncmp(im->name, "ks_q8_", 6) == 0 && strstr(im->name, "__neon") != NULL &&
           strstr(im->name, "lut") == NULL;
}

/* Variants that took at least one node, by name (for the coverage check at the end). */
static const char *g_ran[16];
static int g_num_ran;

static void note_ran(const char *name) {
    for (int i = 0; i < g_num_ran; i++)
        if (strcmp(g_ran[i], name) == 0) return;
    if (g_num_ran < 16) g_ran[g_num_ran++] = name;
}

static int did_run(const char *name) {
    for (int i = 0; i < g_num_ran; i++)
        if (strcmp(g_ran[i], name) == 0) return 1;
    return 0;
}

/* The variant dispatch picks for ISA bits `isa`, or NULL. */
static const char *selected(const ks__node *node, ks__rt_tensor **ins, uint32_t nin,
                            ks__rt_tensor *y, uint32_t isa) {
    ks__rt_tensor *outs[1] = {y};
    ks__kernel_ctx ctx = make_ctx(node, ins, nin, outs);
    const ks__impl *im = ks__impl_select(&ctx, isa);
    return im ? im->name : NULL;
}

/* Reference vs every supported ARM q8 variant, byte for byte (q8_variants.h); notes which ran. */
static int check_variants(const ks__node *node, ks__rt_tensor **ins, uint32_t nin,
                          ks__rt_tensor *y) {
    return q8v_check(node, ins, nin, y, is_arm_q8_variant, note_ran);
}

/* Weight flavours. */
enum { W_U8_TENSOR = 0, W_I8_CHANNEL_SYM = 1, W_I8_CHANNEL_ZP = 2, W_NUM = 3 };

typedef struct conv_case {
    int64_t n, ih, iw, ic, oc, kh, kw;
    int32_t sh, sw, dh, dw, pt, pl, pb, pr, mode, groups, act;
    int bias, wkind, fill;
    ks_dtype xdt;
    float out_gain; /* output scale factor: < 1 gives multipliers above 1 (left shifts) */
} conv_case;

/* Output scale that spreads the accumulators of a depth-`depth` reduction over the dtype. */
static float out_scale(float xs, float ws, int64_t depth) {
    return xs * ws * 74.0f * 74.0f * 5.0f * sqrtf((float)depth) / 255.0f;
}

static void fill_weights(qtensor *w, int wkind, int64_t channels) {
    if (wkind == W_U8_TENSOR) {
        w->scales[0] = 0.0123f;
        w->zps[0] = 117;
        return;
    }
    assert_true(channels <= 1024);
    for (int64_t c = 0; c < channels && c < 1024; c++) {
        w->scales[c] = 0.004f + 0.0005f * (float)(c % 13);
        w->zps[c] = wkind == W_I8_CHANNEL_SYM ? 0 : (int32_t)(c % 7) - 3;
    }
}

/* Builds the node, checks every variant and returns how many took it; *sel_dot / *sel_plain get
 * what dispatch picks with and without dotprod. */
static int run_conv_case(const conv_case *c, const char **sel_dot, const char **sel_plain) {
    int64_t groups = c->groups ? c->groups : 1;
    int64_t xd[4] = {c->n, c->ih, c->iw, c->ic}, wd[4] = {c->oc, c->kh, c->kw, c->ic / groups};
    int64_t bd[1] = {c->oc};
    qtensor *x = malloc(sizeof(qtensor)), *w = malloc(sizeof(qtensor)),
            *b = malloc(sizeof(qtensor));
    qtensor *y = malloc(sizeof(qtensor));
    assert_true(x && w && b && y);
    mkq_fill(x, c->xdt, 4, xd, 1, c->fill);
    x->scales[0] = 0.02f;
    x->zps[0] = c->xdt == KS_DTYPE_U8 ? 131 : -7;
    if (c->fill != FILL_RANDOM) x->zps[0] = c->xdt == KS_DTYPE_U8 ? 255 - x->zps[0] : 127;
    ks_dtype wdt = c->wkind == W_U8_TENSOR ? KS_DTYPE_U8 : KS_DTYPE_I8;
    mkq_fill(w, wdt, 4, wd, c->wkind == W_U8_TENSOR ? 1 : (uint32_t)c->oc, c->fill);
    fill_weights(w, c->wkind, c->oc);
    mkq_fill(b, KS_DTYPE_I32, 1, bd, 0, FILL_RANDOM);
    for (int64_t i = 0; i < c->oc; i++)
        ((int32_t *)b->data)[i] = (int32_t)(urand() % 20001) - 10000;
    int64_t depth = c->kh * c->kw * (c->ic / groups);
    int64_t one[1] = {1};
    mkq_fill(y, c->xdt, 1, one, 1, FILL_RANDOM);
    free(y->data);
    y->t.data = y->data = NULL;
    y->scales[0] =
        out_scale(x->scales[0], w->scales[0], depth) * (c->out_gain > 0.0f ? c->out_gain : 1.0f);
    y->zps[0] = c->xdt == KS_DTYPE_U8 ? 121 : 3;
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_CONV2D;
    node.name = (char *)"qconv";
    int32_t ip[11] = {c->sh, c->sw, c->dh,   c->dw,     c->pt, c->pl,
                      c->pb, c->pr, c->mode, c->groups, c->act};
    memcpy(node.ip, ip, sizeof(ip));
    ks__rt_tensor *ins[3] = {&x->t, &w->t, c->bias ? &b->t : NULL};
    int ran = check_variants(&node, ins, 3, &y->t);
    if (sel_dot) *sel_dot = selected(&node, ins, 3, &y->t, KS_ISA_NEON | KS_ISA_NEON_DOT);
    if (sel_plain) *sel_plain = selected(&node, ins, 3, &y->t, KS_ISA_NEON);
    free(x->data), free(w->data), free(b->data);
    free(x), free(w), free(b), free(y);
    return ran;
}

static const int32_t k_acts[4] = {KS_ACT_NONE, KS_ACT_RELU, KS_ACT_RELU6, KS_ACT_RELU_N1_TO_1};

static int is_aarch64(void) {
#if defined(__aarch64__)
    return 1;
#else
    return 0;
#endif
}

static void skip_unless_arm(void) {
    if (!is_aarch64()) {
        print_message("not AArch64: no ARM q8 variants to test\n");
        skip();
    }
}

static void expect_gemm_dispatch(const char *sel_dot, const char *sel_plain) {
    assert_non_null(sel_dot);
    assert_non_null(sel_plain);
    assert_non_null(strstr(sel_dot, "__neondot_4x16"));
    assert_non_null(strstr(sel_plain, "__neon_4x8"));
}

/* 1x1 convs (the direct, non-indirect path): every K from 1 to 37 (all 16- and 4-byte k group
 * tails, and the int16 pairs), N around the 8 and 16 column tiles, M around the 4-row tile. */
static void test_conv_1x1_tails(void **state) {
    (void)state;
    skip_unless_arm();
    int n = 0;
    for (int64_t kc = 1; kc <= 37; kc++) {
        const int64_t ocs[] = {1, 3, 7, 8, 9, 15, 16, 17, 24, 31, 33};
        conv_case c = {.n = 1,
                       .ih = 1 + kc % 3,
                       .iw = 1 + (kc * 3) % 7,
                       .ic = kc,
                       .oc = ocs[kc % 11],
                       .kh = 1,
                       .kw = 1,
                       .bias = (int)(kc & 1),
                       .wkind = (int)(kc % W_NUM),
                       .act = k_acts[kc % 4],
                       .xdt = (kc / 3) % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8};
        const char *sd = NULL, *sp = NULL;
        n += run_conv_case(&c, &sd, &sp) > 0;
        /* With a handful of MACs per output the int16 kernel's narrower tile can cost less. */
        if (kc >= 8 && c.oc >= 8) expect_gemm_dispatch(sd, sp);
    }
    assert_int_equal(n, 37);
    conv_case wide = {.n = 2,
                      .ih = 5,
                      .iw = 7,
                      .ic = 64,
                      .oc = 96,
                      .kh = 1,
                      .kw = 1,
                      .bias = 1,
                      .xdt = KS_DTYPE_U8};
    assert_true(run_conv_case(&wide, NULL, NULL) > 0);
}

static void test_conv_general(void **state) {
    (void)state;
    skip_unless_arm();
    for (int wk = 0; wk < W_NUM; wk++) {
        for (int xi = 0; xi < 2; xi++) {
            ks_dtype xdt = xi ? KS_DTYPE_I8 : KS_DTYPE_U8;
            const conv_case cases[] = {
                /* MobileNet's first layer: 3x3 s2 SAME, 3 input channels */
                {.n = 1,
                 .ih = 15,
                 .iw = 17,
                 .ic = 3,
                 .oc = 32,
                 .kh = 3,
                 .kw = 3,
                 .sh = 2,
                 .sw = 2,
                 .mode = KS_PAD_SAME_UPPER,
                 .bias = 1,
                 .act = KS_ACT_RELU6},
                /* 3x3 pad 1, odd channels */
                {.n = 1,
                 .ih = 9,
                 .iw = 11,
                 .ic = 13,
                 .oc = 35,
                 .kh = 3,
                 .kw = 3,
                 .pt = 1,
                 .pl = 1,
                 .pb = 1,
                 .pr = 1,
                 .bias = 1,
                 .act = KS_ACT_RELU},
                /* 5x3, stride 2x1, dilation, asymmetric pads, two images */
                {.n = 2,
                 .ih = 10,
                 .iw = 7,
                 .ic = 6,
                 .oc = 17,
                 .kh = 5,
                 .kw = 3,
                 .sh = 2,
                 .sw = 1,
                 .dh = 2,
                 .dw = 1,
                 .pt = 2,
                 .pl = 0,
                 .pb = 1,
                 .pr = 2},
                /* VALID, stride 3, K per tap 33 (two 16-byte groups + a 4-byte tail) */
                {.n = 1,
                 .ih = 13,
                 .iw = 13,
                 .ic = 33,
                 .oc = 64,
                 .kh = 3,
                 .kw = 3,
                 .sh = 3,
                 .sw = 3,
                 .mode = KS_PAD_VALID,
                 .bias = 1,
                 .act = KS_ACT_RELU_N1_TO_1},
                /* 1x1 stride 2 (indirect path) */
                {.n = 1,
                 .ih = 7,
                 .iw = 9,
                 .ic = 20,
                 .oc = 40,
                 .kh = 1,
                 .kw = 1,
                 .sh = 2,
                 .sw = 2,
                 .bias = 1},
                /* SAME_LOWER, 2x2 even kernel, channels 8 (4-byte groups only) */
                {.n = 1,
                 .ih = 6,
                 .iw = 5,
                 .ic = 8,
                 .oc = 12,
                 .kh = 2,
                 .kw = 2,
                 .mode = KS_PAD_SAME_LOWER,
                 .bias = 1,
                 .act = KS_ACT_RELU},
                /* extreme codes: most products (-128) x (-128) after the A flip, or 255 x 255 */
                {.n = 1,
                 .ih = 5,
                 .iw = 6,
                 .ic = 29,
                 .oc = 19,
                 .kh = 3,
                 .kw = 3,
                 .pt = 1,
                 .pl = 1,
                 .pb = 1,
                 .pr = 1,
                 .bias = 1,
                 .fill = FILL_LOW},
                {.n = 1,
                 .ih = 5,
                 .iw = 6,
                 .ic = 29,
                 .oc = 19,
                 .kh = 3,
                 .kw = 3,
                 .pt = 1,
                 .pl = 1,
                 .pb = 1,
                 .pr = 1,
                 .fill = FILL_HIGH,
                 .act = KS_ACT_RELU6},
                /* output scale far below the product scale: multiplier > 1, left shift */
                {.n = 1,
                 .ih = 4,
                 .iw = 9,
                 .ic = 11,
                 .oc = 21,
                 .kh = 1,
                 .kw = 3,
                 .pl = 1,
                 .pr = 1,
                 .bias = 1,
                 .out_gain = 1.0f / 4096.0f},
            };
            for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                conv_case c = cases[i];
                c.wkind = wk;
                c.xdt = xdt;
                const char *sd = NULL, *sp = NULL;
                assert_true(run_conv_case(&c, &sd, &sp) > 0);
                expect_gemm_dispatch(sd, sp);
            }
        }
    }
}

static void test_dwconv(void **state) {
    (void)state;
    skip_unless_arm();
    const int64_t channels[] = {2, 7, 8, 16, 17, 19, 24, 33, 144};
    for (size_t ci = 0; ci < sizeof(channels) / sizeof(channels[0]); ci++) {
        for (int wk = 0; wk < W_NUM; wk++) {
            int64_t ch = channels[ci];
            ks_dtype xdt = (ci + (size_t)wk) % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8;
            const conv_case cases[] = {
                {.n = 1,
                 .ih = 9,
                 .iw = 10,
                 .kh = 3,
                 .kw = 3,
                 .mode = KS_PAD_SAME_UPPER,
                 .bias = 1,
                 .act = KS_ACT_RELU6},
                {.n = 2,
                 .ih = 11,
                 .iw = 8,
                 .kh = 3,
                 .kw = 3,
                 .sh = 2,
                 .sw = 2,
                 .mode = KS_PAD_SAME_UPPER,
                 .bias = 1,
                 .act = KS_ACT_RELU},
                {.n = 1,
                 .ih = 12,
                 .iw = 13,
                 .kh = 5,
                 .kw = 5,
                 .sh = 2,
                 .sw = 2,
                 .pt = 1,
                 .pl = 2,
                 .pb = 2,
                 .pr = 1},
                {.n = 1,
                 .ih = 6,
                 .iw = 7,
                 .kh = 5,
                 .kw = 5,
                 .mode = KS_PAD_SAME_UPPER,
                 .act = KS_ACT_RELU_N1_TO_1},
                {.n = 1,
                 .ih = 9,
                 .iw = 9,
                 .kh = 3,
                 .kw = 3,
                 .dh = 2,
                 .dw = 2,
                 .mode = KS_PAD_VALID,
                 .bias = 1},
                {.n = 1,
                 .ih = 7,
                 .iw = 6,
                 .kh = 3,
                 .kw = 3,
                 .pt = 1,
                 .pl = 1,
                 .pb = 1,
                 .pr = 1,
                 .bias = 1,
                 .fill = (int)(ci % 2) ? FILL_LOW : FILL_HIGH},
                {.n = 1,
                 .ih = 5,
                 .iw = 5,
                 .kh = 3,
                 .kw = 3,
                 .mode = KS_PAD_SAME_UPPER,
                 .out_gain = 1.0f / 1024.0f},
            };
            for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                conv_case c = cases[i];
                c.ic = c.oc = ch;
                c.groups = (int32_t)ch;
                c.wkind = wk;
                c.xdt = xdt;
                const char *sd = NULL, *sp = NULL;
                assert_true(run_conv_case(&c, &sd, &sp) > 0);
                assert_non_null(sd);
                assert_non_null(sp);
                assert_string_equal(sd, "ks_q8_dwconv__neon_c16");
                assert_string_equal(sp, "ks_q8_dwconv__neon_c16");
            }
        }
    }
}

/* Grouped (non-depthwise) and depth-multiplier convs are left to the reference. */
static void test_conv_refused(void **state) {
    (void)state;
    skip_unless_arm();
    conv_case grouped = {.n = 1,
                         .ih = 5,
                         .iw = 5,
                         .ic = 8,
                         .oc = 8,
                         .kh = 3,
                         .kw = 3,
                         .groups = 2,
                         .mode = KS_PAD_SAME_UPPER,
                         .xdt = KS_DTYPE_U8};
    const char *sd = "", *sp = "";
    assert_int_equal(run_conv_case(&grouped, &sd, &sp), 0);
    assert_null(sd);
    assert_null(sp);
    conv_case mult = {.n = 1,
                      .ih = 5,
                      .iw = 5,
                      .ic = 4,
                      .oc = 8,
                      .kh = 3,
                      .kw = 3,
                      .groups = 4,
                      .mode = KS_PAD_SAME_UPPER,
                      .xdt = KS_DTYPE_I8,
                      .wkind = W_I8_CHANNEL_SYM};
    assert_int_equal(run_conv_case(&mult, &sd, &sp), 0);
}

static void run_fc_case(int64_t rows, int64_t in_size, int64_t out, int wkind, ks_dtype xdt,
                        int32_t act, int bias) {
    int64_t xd[2] = {rows, in_size}, wd[2] = {out, in_size}, bd[1] = {out}, one[1] = {1};
    qtensor *x = malloc(sizeof(qtensor)), *w = malloc(sizeof(qtensor)),
            *b = malloc(sizeof(qtensor));
    qtensor *y = malloc(sizeof(qtensor));
    assert_true(x && w && b && y);
    mkq_fill(x, xdt, 2, xd, 1, FILL_RANDOM);
    x->scales[0] = 0.05f;
    x->zps[0] = xdt == KS_DTYPE_U8 ? 100 : 10;
    mkq_fill(w, wkind == W_U8_TENSOR ? KS_DTYPE_U8 : KS_DTYPE_I8, 2, wd,
             wkind == W_U8_TENSOR ? 1 : (uint32_t)out, FILL_RANDOM);
    fill_weights(w, wkind, out);
    mkq_fill(b, KS_DTYPE_I32, 1, bd, 0, FILL_RANDOM);
    for (int64_t i = 0; i < out; i++)
        ((int32_t *)b->data)[i] = (int32_t)(urand() % 40001) - 20000;
    mkq_fill(y, xdt, 1, one, 1, FILL_RANDOM);
    free(y->data);
    y->t.data = y->data = NULL;
    y->scales[0] = out_scale(x->scales[0], w->scales[0], in_size);
    y->zps[0] = xdt == KS_DTYPE_U8 ? 128 : -1;
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_FULLY_CONNECTED;
    node.name = (char *)"qfc";
    node.ip[0] = act;
    ks__rt_tensor *ins[3] = {&x->t, &w->t, bias ? &b->t : NULL};
    assert_true(check_variants(&node, ins, 3, &y->t) > 0);
    expect_gemm_dispatch(selected(&node, ins, 3, &y->t, KS_ISA_NEON | KS_ISA_NEON_DOT),
                         selected(&node, ins, 3, &y->t, KS_ISA_NEON));
    free(x->data), free(w->data), free(b->data);
    free(x), free(w), free(b), free(y);
}

static void test_fc(void **state) {
    (void)state;
    skip_unless_arm();
    for (int wk = 0; wk < W_NUM; wk++) {
        run_fc_case(1, 1280, 1001, wk, KS_DTYPE_U8, KS_ACT_NONE, 1);
        run_fc_case(3, 37, 19, wk, KS_DTYPE_I8, KS_ACT_RELU, 1);
        run_fc_case(13, 5, 40, wk, KS_DTYPE_U8, KS_ACT_RELU6, 0);
        run_fc_case(7, 64, 33, wk, KS_DTYPE_I8, KS_ACT_NONE, 1);
        run_fc_case(5, 18, 16, wk, KS_DTYPE_U8, KS_ACT_RELU_N1_TO_1, 1);
        run_fc_case(2, 2, 9, wk, KS_DTYPE_I8, KS_ACT_RELU6, 0);
    }
}

/* Every ARM q8 variant the running CPU supports took some node, and the one it lacks did not. */
static void test_coverage(void **state) {
    (void)state;
    skip_unless_arm();
    uint32_t isa = ks__cpu_isa();
    if (!(isa & KS_ISA_NEON)) {
        print_message("NEON disabled (KS_FORCE_SCALAR?): nothing ran\n");
        skip();
    }
    int dot = (isa & KS_ISA_NEON_DOT) != 0;
    print_message("cpu isa has dotprod: %s\n", dot ? "yes" : "no");
    assert_true(did_run("ks_q8_conv2d__neon_4x8"));
    assert_true(did_run("ks_q8_fc__neon_4x8"));
    assert_true(did_run("ks_q8_dwconv__neon_c16"));
    assert_int_equal(did_run("ks_q8_conv2d__neondot_4x16"), dot);
    assert_int_equal(did_run("ks_q8_fc__neondot_4x16"), dot);
}

int main(void) {
    g_rng = 777u; /* the stream these cases were written with */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_1x1_tails),
        cmocka_unit_test(test_conv_general),
        cmocka_unit_test(test_dwconv),
        cmocka_unit_test(test_conv_refused),
        cmocka_unit_test(test_fc),
        cmocka_unit_test(test_coverage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
