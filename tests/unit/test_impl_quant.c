/* Fast quantized (U8/I8) variants (qgemm.h, impls_quant.inc) against the reference kernels:
 * every q8 variant this CPU supports, on odd shapes that hit every row, column, channel and k
 * tail, strides, dilation, padding modes, U8 per-tensor weights with zero points, I8 per-channel
 * weights (symmetric and not), I8 inputs, every quantized activation, at 1 and 3 threads. The
 * results must be byte-identical: the reference is bit-exact with TFLite and so must we be.
 * Fused CONV2D forms (ops.inc, ip[12] == 1: residual ADD, output TABLE incl. SiLU) are checked
 * twice: the fused reference against the unfused reference chain, then every variant against it. */
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

#define Q8V_CONV_CASES /* conv_case, fill_weights, q8v_fused_case */
#include "q8_variants.h"

static int is_q8_variant(const ks__impl *im) {
    return strncmp(im->name, "ks_q8_", 6) == 0;
}

/* Reference vs every selected variant, byte for byte (q8_variants.h). */
static int check_variants(const ks__node *node, ks__rt_tensor **ins, uint32_t nin,
                          ks__rt_tensor *y) {
    return q8v_check(node, ins, nin, y, is_q8_variant, NULL);
}

static int has_fast(void) {
    return (ks__cpu_isa() & KS_ISA_AVX2) != 0;
}

static void run_conv_case(const conv_case *c, int expect_fast) {
    int64_t groups = c->groups ? c->groups : 1;
    int64_t xd[4] = {c->n, c->ih, c->iw, c->ic}, wd[4] = {c->oc, c->kh, c->kw, c->ic / groups};
    int64_t bd[1] = {c->oc};
    qtensor *x = malloc(sizeof(qtensor)), *w = malloc(sizeof(qtensor)),
            *b = malloc(sizeof(qtensor));
    qtensor *y = malloc(sizeof(qtensor));
    assert_true(x && w && b && y);
    mkq(x, c->xdt, 4, xd, 1);
    x->scales[0] = 0.02f;
    x->zps[0] = c->xdt == KS_DTYPE_U8 ? 131 : -7;
    ks_dtype wdt = c->wkind == W_U8_TENSOR ? KS_DTYPE_U8 : KS_DTYPE_I8;
    mkq(w, wdt, 4, wd, c->wkind == W_U8_TENSOR ? 1 : (uint32_t)c->oc);
    fill_weights(w, c->wkind, c->oc);
    mkq(b, KS_DTYPE_I32, 1, bd, 0);
    for (int64_t i = 0; i < c->oc; i++)
        ((int32_t *)b->data)[i] = (int32_t)(urand() % 20001) - 10000;
    int64_t depth = c->kh * c->kw * (c->ic / groups);
    int64_t one[1] = {1};
    mkq(y, c->xdt, 1, one, 1);
    free(y->data);
    y->t.data = y->data = NULL;
    y->scales[0] = c->real_mult > 0.0f ? x->scales[0] * w->scales[0] / c->real_mult
                                       : out_scale(x->scales[0], w->scales[0], depth);
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
    if (expect_fast && has_fast()) assert_true(ran > 0);
    free(x->data), free(w->data), free(b->data);
    free(x), free(w), free(b), free(y);
}

static const int32_t k_acts[4] = {KS_ACT_NONE, KS_ACT_RELU, KS_ACT_RELU6, KS_ACT_RELU_N1_TO_1};

static void test_conv_1x1_tails(void **state) {
    (void)state;
    for (int64_t wdt = 1; wdt <= 17; wdt++) {
        for (int wk = 0; wk < 3; wk++) {
            conv_case c = {.n = 1,
                           .ih = 1 + wdt % 2,
                           .iw = wdt,
                           .ic = 1 + (wdt * 5) % 23,
                           .oc = 1 + (wdt * 7) % 41,
                           .kh = 1,
                           .kw = 1,
                           .bias = (int)(wdt & 1),
                           .wkind = wk,
                           .act = k_acts[(wdt + wk) % 4],
                           .xdt = (wdt + wk) % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8};
            run_conv_case(&c, 1);
        }
    }
    conv_case wide = {.n = 2,
                      .ih = 5,
                      .iw = 7,
                      .ic = 64,
                      .oc = 96,
                      .kh = 1,
                      .kw = 1,
                      .bias = 1,
                      .xdt = KS_DTYPE_U8};
    run_conv_case(&wide, 1);
    for (int64_t oc = 1; oc <= 9; oc++) { /* narrow outputs over many rows (16 x 16 tile) */
        conv_case narrow = {.n = 1,
                            .ih = 5,
                            .iw = 7 + oc,
                            .ic = 4 + oc,
                            .oc = oc,
                            .kh = 1,
                            .kw = 1,
                            .bias = 1,
                            .wkind = (int)(oc % 3),
                            .act = k_acts[oc % 4],
                            .xdt = oc % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8};
        run_conv_case(&narrow, 1);
    }
}

/* Requantization multipliers across their range: >= 0.5 (no right shift), > 1 (left shifts),
 * tiny (right shifts near 31), on both GEMM tile shapes (<= 16 and > 16 output channels), the
 * indirect (3x3) and direct (1x1, U8 input rows read in place when channels % 4 == 0) paths. */
static void test_conv_requant_range(void **state) {
    (void)state;
    const float reals[] = {0.5f, 0.73f, 1.0f, 2.5f, 40.0f, 1e-6f, 3e-9f};
    for (size_t i = 0; i < sizeof(reals) / sizeof(reals[0]); i++) {
        for (int v = 0; v < 4; v++) {
            int k3 = v & 1;
            conv_case c = {.n = 1,
                           .ih = 3 + (int64_t)i % 3,
                           .iw = 5 + (int64_t)v,
                           .ic = v < 2 ? 8 : 13,
                           .oc = v % 2 ? 12 : 37,
                           .kh = k3 ? 3 : 1,
                           .kw = k3 ? 3 : 1,
                           .pt = k3,
                           .pl = k3,
                           .pb = k3,
                           .pr = k3,
                           .bias = 1,
                           .wkind = (int)((i + (size_t)v) % 3),
                           .act = k_acts[(i + (size_t)v) % 4],
                           .xdt = (i + (size_t)v) % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8,
                           .real_mult = reals[i]};
            run_conv_case(&c, 1);
        }
    }
}

static void test_conv_general(void **state) {
    (void)state;
    for (int wk = 0; wk < 3; wk++) {
        for (int xi = 0; xi < 2; xi++) {
            ks_dtype xdt = xi ? KS_DTYPE_I8 : KS_DTYPE_U8;
            const conv_case cases[] = {
                /* first layer of MobileNet: 3x3 s2 SAME, 3 input channels */
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
                /* VALID, stride 3 */
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
            };
            for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                conv_case c = cases[i];
                c.wkind = wk;
                c.xdt = xdt;
                run_conv_case(&c, 1);
            }
        }
    }
}

static void test_dwconv(void **state) {
    (void)state;
    const int64_t channels[] = {1, 7, 8, 16, 19, 33, 144};
    for (size_t ci = 0; ci < sizeof(channels) / sizeof(channels[0]); ci++) {
        for (int wk = 0; wk < 3; wk++) {
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
            };
            for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                conv_case c = cases[i];
                c.ic = c.oc = ch;
                c.groups = (int32_t)ch;
                c.wkind = wk;
                c.xdt = xdt;
                /* groups == 1 with one channel is also a GEMM; both must agree. */
                run_conv_case(&c, 1);
            }
        }
    }
}

/* Grouped (non-depthwise) and depth-multiplier convs are left to the reference. */
static void test_conv_refused(void **state) {
    (void)state;
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
    run_conv_case(&grouped, 0);
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
    run_conv_case(&mult, 0);
}

static void run_fc_case(int64_t rows, int64_t in_size, int64_t out, int wkind, ks_dtype xdt,
                        int32_t act, int bias) {
    int64_t xd[2] = {rows, in_size}, wd[2] = {out, in_size}, bd[1] = {out}, one[1] = {1};
    qtensor *x = malloc(sizeof(qtensor)), *w = malloc(sizeof(qtensor)),
            *b = malloc(sizeof(qtensor));
    qtensor *y = malloc(sizeof(qtensor));
    assert_true(x && w && b && y);
    mkq(x, xdt, 2, xd, 1);
    x->scales[0] = 0.05f;
    x->zps[0] = xdt == KS_DTYPE_U8 ? 100 : 10;
    mkq(w, wkind == W_U8_TENSOR ? KS_DTYPE_U8 : KS_DTYPE_I8, 2, wd,
        wkind == W_U8_TENSOR ? 1 : (uint32_t)out);
    fill_weights(w, wkind, out);
    mkq(b, KS_DTYPE_I32, 1, bd, 0);
    for (int64_t i = 0; i < out; i++)
        ((int32_t *)b->data)[i] = (int32_t)(urand() % 40001) - 20000;
    mkq(y, xdt, 1, one, 1);
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
    int ran = check_variants(&node, ins, 3, &y->t);
    if (has_fast()) assert_true(ran > 0);
    free(x->data), free(w->data), free(b->data);
    free(x), free(w), free(b), free(y);
}

static void test_fc(void **state) {
    (void)state;
    for (int wk = 0; wk < 3; wk++) {
        run_fc_case(1, 1280, 1001, wk, KS_DTYPE_U8, KS_ACT_NONE, 1);
        run_fc_case(3, 37, 19, wk, KS_DTYPE_I8, KS_ACT_RELU, 1);
        run_fc_case(13, 5, 40, wk, KS_DTYPE_U8, KS_ACT_RELU6, 0);
        run_fc_case(7, 64, 33, wk, KS_DTYPE_I8, KS_ACT_NONE, 1);
        run_fc_case(19, 23, 13, wk, KS_DTYPE_U8, KS_ACT_RELU, 1); /* <= 16 outputs: 16 x 16 */
        run_fc_case(17, 9, 16, wk, KS_DTYPE_I8, KS_ACT_NONE, 0);
    }
}

static void run_add_case(int64_t n, ks_dtype dt, uint32_t op, int32_t act, float sa, float sb,
                         float so) {
    int64_t d[3] = {1, n, 3};
    qtensor *a = malloc(sizeof(qtensor)), *b = malloc(sizeof(qtensor)),
            *y = malloc(sizeof(qtensor));
    assert_true(a && b && y);
    int32_t base = dt == KS_DTYPE_U8 ? 128 : 0;
    mkq(a, dt, 3, d, 1);
    mkq(b, dt, 3, d, 1);
    mkq(y, dt, 3, d, 1);
    free(y->data);
    y->t.data = y->data = NULL;
    a->scales[0] = sa, b->scales[0] = sb, y->scales[0] = so;
    a->zps[0] = base + 5, b->zps[0] = base - 17, y->zps[0] = base + (int32_t)(n % 9) - 4;
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = op;
    node.name = (char *)"qadd";
    node.ip[0] = act;
    ks__rt_tensor *ins[2] = {&a->t, &b->t};
    int ran = check_variants(&node, ins, 2, &y->t);
    if (has_fast()) assert_true(ran > 0);
    free(a->data), free(b->data);
    free(a), free(b), free(y);
}

static void test_add(void **state) {
    (void)state;
    for (int64_t n = 1; n <= 19; n++) {
        ks_dtype dt = n % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8;
        run_add_case(n, dt, n % 3 ? KS_OP_ADD : KS_OP_SUB, k_acts[n % 4], 0.02f + 0.001f * n,
                     0.031f, 0.045f - 0.001f * n);
    }
    run_add_case(4000, KS_DTYPE_U8, KS_OP_ADD, KS_ACT_NONE, 0.1f, 0.1f, 0.1f);
    run_add_case(4001, KS_DTYPE_I8, KS_OP_ADD, KS_ACT_RELU6, 0.0337f, 0.1491f, 0.2002f);
    run_add_case(999, KS_DTYPE_U8, KS_OP_SUB, KS_ACT_NONE, 0.5f, 0.01f, 0.004f);
    run_add_case(333, KS_DTYPE_U8, KS_OP_ADD, KS_ACT_NONE, 0.001f, 0.002f, 0.0001f);
}

/* ---- fused CONV2D forms (ops.inc: ip[12] == 1) against the unfused reference pair ---- */

static void run_fused_case(const conv_case *c, int fuse, int32_t act) {
    int ran = q8v_fused_case(c, fuse, act, check_variants);
    if (has_fast()) assert_true(ran > 0);
}

static void test_fused(void **state) {
    (void)state;
    int k = 0;
    for (int64_t wdt = 1; wdt <= 17; wdt++, k++) { /* 1x1 GEMM tails */
        conv_case c = {.n = 1,
                       .ih = 1 + wdt % 3,
                       .iw = wdt,
                       .ic = 1 + (wdt * 5) % 23,
                       .oc = 1 + (wdt * 7) % 41,
                       .kh = 1,
                       .kw = 1,
                       .bias = (int)(wdt & 1),
                       .wkind = (int)(wdt % 3),
                       .xdt = wdt % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8};
        for (int f = FUSE_RESIDUAL; f < FUSE_COUNT; f++)
            run_fused_case(&c, f, k_acts[(wdt + f) % 4]);
    }
    /* narrow 1x1 outputs (<= 8 channels: two rows per vector) over many rows, full row groups
     * and a tail, at 8 channels (contiguous rows) and fewer */
    const int64_t narrow[] = {8, 5, 1, 8};
    for (size_t ni = 0; ni < sizeof(narrow) / sizeof(narrow[0]); ni++, k++) {
        conv_case c = {.n = 2,
                       .ih = 7,
                       .iw = 6,
                       .ic = ni == 3 ? 12 : 8 + (int64_t)ni * 3,
                       .oc = narrow[ni],
                       .kh = 1,
                       .kw = 1,
                       .bias = 1,
                       .wkind = (int)(ni % 3),
                       .xdt = ni % 2 ? KS_DTYPE_U8 : KS_DTYPE_I8};
        for (int f = FUSE_RESIDUAL; f < FUSE_COUNT; f++)
            run_fused_case(&c, f, k_acts[(ni + (size_t)f) % 4]);
    }
    const int64_t channels[] = {1, 7, 16, 19, 33, 72};
    for (size_t ci = 0; ci < sizeof(channels) / sizeof(channels[0]); ci++) {
        for (int xi = 0; xi < 2; xi++) {
            ks_dtype dt = xi ? KS_DTYPE_I8 : KS_DTYPE_U8;
            conv_case dw = {.n = 1,
                            .ih = 9,
                            .iw = 10,
                            .ic = channels[ci],
                            .oc = channels[ci],
                            .kh = 3,
                            .kw = 3,
                            .sh = (int32_t)(1 + ci % 2),
                            .sw = (int32_t)(1 + ci % 2),
                            .groups = (int32_t)channels[ci],
                            .mode = KS_PAD_SAME_UPPER,
                            .bias = 1,
                            .wkind = (int)(ci % 3),
                            .xdt = dt};
            conv_case g3 = {.n = 2,
                            .ih = 7,
                            .iw = 6,
                            .ic = 5 + channels[ci] % 13,
                            .oc = channels[ci] + 3,
                            .kh = 3,
                            .kw = 3,
                            .pt = 1,
                            .pl = 1,
                            .pb = 1,
                            .pr = 1,
                            .bias = 1,
                            .wkind = (int)((ci + 1) % 3),
                            .xdt = dt};
            for (int f = FUSE_RESIDUAL; f < FUSE_COUNT; f++) {
                run_fused_case(&dw, f, k_acts[(ci + (size_t)f) % 4]);
                run_fused_case(&g3, f, k_acts[(ci + (size_t)f + 1) % 4]);
            }
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_1x1_tails),
        cmocka_unit_test(test_conv_general),
        cmocka_unit_test(test_conv_requant_range),
        cmocka_unit_test(test_dwconv),
        cmocka_unit_test(test_conv_refused),
        cmocka_unit_test(test_fc),
        cmocka_unit_test(test_add),
        cmocka_unit_test(test_fused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
