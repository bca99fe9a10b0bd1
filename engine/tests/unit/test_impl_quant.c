/* Fast quantized (U8/I8) variants (qgemm.h, impls_quant.inc) against the reference kernels:
 * every q8 variant this CPU supports, on odd shapes that hit every row, column, channel and k
 * tail, strides, dilation, padding modes, U8 per-tensor weights with zero points, I8 per-channel
 * weights (symmetric and not), I8 inputs, every quantized activation, at 1 and 3 threads. The
 * results must be byte-identical: the reference is bit-exact with TFLite and so must we be.
 * Fused CONV2D forms (ops.inc, ip[12] == 1: residual ADD, output TABLE incl. SiLU) are checked
 * twice: the fused reference against the unfused reference chain, then every variant against it.
 * The AVX2 vpmaddubsw GEMM (signed A, qgemm.h) takes only weights with w - w_zp in [-127, 127]
 * (ks-quant's): test_signed_a makes such weights, also at +-127 with inputs at -128 / 127 (the
 * largest pair sums vpmaddubsw sees), and requires that it ran; so does test_avxvnni_ran for the
 * AVX-VNNI GEMM where the CPU has AVX-VNNI. */
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
#include "cpu_kernel.h"

#define Q8V_CONV_CASES /* conv_case, the conv / FC builders and case lists, q8v_fused_case */
#include "q8_variants.h"

static int is_q8_variant(const ks__impl *im) {
    return strncmp(im->name, "ks_q8_", 6) == 0;
}

/* Cases the AVX-VNNI GEMM (x86/avx2/q8_gemm.c ks_q8_*__avxvnni_6x16) took: all, fused forms. */
static int g_vnni_ran, g_vnni_fused, g_in_fused;

static void count_vnni(const char *name) {
    if (strstr(name, "avxvnni_6x16")) g_vnni_ran++, g_vnni_fused += g_in_fused;
}

/* Reference vs every selected variant, byte for byte (q8_variants.h). */
static int check_variants(const ks__node *node, ks__rt_tensor **ins, uint32_t nin,
                          ks__rt_tensor *y) {
    return q8v_check(node, ins, nin, y, is_q8_variant, count_vnni);
}

static int has_fast(void) {
    return (ks__cpu_isa() & KS_ISA_AVX2) != 0;
}

/* ---- the signed-A GEMM (x86/avx2/q8_gemm.c ks_q8_*__avx2_maddubs_4x16) ---- */

static int g_signed_ran; /* cases the signed-A variants took */

static void count_signed(const char *name) {
    if (strstr(name, "maddubs")) g_signed_ran++;
}

static int check_counted(const ks__node *node, ks__rt_tensor **ins, uint32_t nin,
                         ks__rt_tensor *y) {
    return q8v_check(node, ins, nin, y, is_q8_variant, count_signed);
}

static int has_signed_a(void) {
    for (const ks__impl *const *it = ks__impl_list(); *it; it++)
        if (strstr((*it)->name, "maddubs") && ((*it)->isa & ~ks__cpu_isa()) == 0) return 1;
    return 0;
}

/* Moves every w - w_zp of w (per tensor or per channel of `oc`) into [-127, 127], as ks-quant's
 * symmetric int8 weights are. extreme: most weights at +-127, one sign per output channel, so
 * vpmaddubsw's pairs reach 2 * 128 * 127 with inputs at -128. */
static void fit_tensor(ks__rt_tensor *w, int extreme) {
    int64_t oc = w->dims[0], n = ks__rt_numel(w), per = n / oc;
    int u8 = w->dtype == KS_DTYPE_U8;
    for (int64_t c = 0; c < oc; c++) {
        int32_t zp = w->quant->zero_points[w->quant->count == 1 ? 0 : c];
        int32_t lo = (u8 ? 0 : -128) > zp - 127 ? (u8 ? 0 : -128) : zp - 127;
        int32_t hi = (u8 ? 255 : 127) < zp + 127 ? (u8 ? 255 : 127) : zp + 127;
        for (int64_t i = 0; i < per; i++) {
            int64_t at = c * per + i;
            int32_t v = u8 ? ((uint8_t *)w->data)[at] : ((int8_t *)w->data)[at];
            if (extreme && urand() % 8) v = c % 2 ? lo : hi;
            v = v < lo ? lo : (v > hi ? hi : v);
            if (u8)
                ((uint8_t *)w->data)[at] = (uint8_t)v;
            else
                ((int8_t *)w->data)[at] = (int8_t)v;
        }
    }
}

static void fit_weights(qtensor *w, int64_t oc, int extreme) {
    assert_int_equal(w->t.dims[0], oc);
    fit_tensor(&w->t, extreme);
}

/* q8v_fused_case's check: the weights fitted first (the reference reruns on them). */
static int check_fitted(const ks__node *node, ks__rt_tensor **ins, uint32_t nin, ks__rt_tensor *y) {
    fit_tensor(ins[1], 0);
    int before = g_signed_ran;
    int ran = check_counted(node, ins, nin, y);
    if (has_signed_a()) assert_int_equal(g_signed_ran, before + 1);
    return ran;
}

static void run_signed_case(const conv_case *c, int extreme) {
    q8v_node v;
    q8v_conv_make(&v, c);
    fit_weights(v.w, c->oc, extreme);
    int before = g_signed_ran;
    check_counted(&v.node, v.ins, 3, &v.y->t);
    if (has_signed_a()) assert_int_equal(g_signed_ran, before + 1);
    q8v_node_free(&v);
}

/* Odd shapes for the 4 x 16 tile: channels per tap 1..23 (k not a multiple of 4: padded with
 * the zero point), 1..41 output channels (panel tails), rows not a multiple of 4, 1x1 (rows
 * read in place for I8 inputs with channels % 4 == 0) and 3x3 with padding, stride and
 * dilation; every weight flavour, both input dtypes, every activation, inputs mostly at the
 * dtype's ends (FILL_LOW / FILL_HIGH) and weights at +-127. */
static void test_signed_a(void **state) {
    (void)state;
    int i = 0;
    for (int64_t kc = 1; kc <= 23; kc += 2) {
        for (int geo = 0; geo < 4; geo++, i++) {
            int k3 = geo >= 2;
            conv_case c = {.n = 1 + (i % 5 == 0),
                           .ih = 3 + i % 5,
                           .iw = 3 + (i * 3) % 7,
                           .ic = kc + (geo == 1 ? 1 : 0),
                           .oc = 1 + (i * 7) % 41,
                           .kh = k3 ? 3 : 1,
                           .kw = k3 ? 3 : 1,
                           .sh = geo == 3 ? 2 : 1,
                           .sw = geo == 3 ? 2 : 1,
                           .dh = geo == 2 && i % 3 == 0 ? 2 : 1,
                           .pt = k3,
                           .pl = k3,
                           .pb = k3,
                           .pr = k3,
                           .bias = i % 4 != 3,
                           .wkind = i % 4,
                           .act = k_acts[i % 4],
                           .fill = i % 3,
                           .xdt = i % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8};
            run_signed_case(&c, i % 3 == 1);
        }
    }
    /* channels % 4 == 0: I8 inputs read in place (no input pass), U8 ones flipped */
    const int64_t chans[] = {4, 8, 16, 32, 64, 128};
    for (size_t ci = 0; ci < sizeof(chans) / sizeof(chans[0]); ci++, i++) {
        for (int e = 0; e < 2; e++) {
            conv_case c = {.n = 1,
                           .ih = 5,
                           .iw = 9,
                           .ic = chans[ci],
                           .oc = chans[ci] / 2 + 5,
                           .kh = 1,
                           .kw = 1,
                           .bias = 1,
                           .wkind = (int)(ci % 3),
                           .act = k_acts[ci % 4],
                           .fill = e ? FILL_LOW : FILL_RANDOM,
                           .xdt = e ? KS_DTYPE_I8 : KS_DTYPE_U8};
            run_signed_case(&c, e);
        }
    }
    /* fused forms: residual ADD and output tables, 1x1 and 3x3, both dtypes */
    for (int f = FUSE_RESIDUAL; f < FUSE_COUNT; f++, i++) {
        conv_case c = {.n = 1,
                       .ih = 3 + f % 3,
                       .iw = 5 + f,
                       .ic = 5 + 4 * f,
                       .oc = 3 + 6 * f,
                       .kh = f % 2 ? 3 : 1,
                       .kw = f % 2 ? 3 : 1,
                       .pt = f % 2,
                       .pl = f % 2,
                       .pb = f % 2,
                       .pr = f % 2,
                       .bias = 1,
                       .wkind = f % 3,
                       .xdt = f % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8};
        for (int a = 0; a < 2; a++)
            q8v_fused_case(&c, f, k_acts[(f + a) % 4], check_fitted);
    }
    /* FULLY_CONNECTED: 1..5 rows (the 2-row tile), long k */
    for (int64_t rows = 1; rows <= 5; rows++) {
        q8v_node v;
        q8v_fc_make(&v, rows, 37 * rows + 3, 9 + 8 * rows, (int)(rows % 3),
                    rows % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8, k_acts[rows % 4], (int)(rows % 2));
        fit_weights(v.w, 9 + 8 * rows, rows == 3);
        int before = g_signed_ran;
        check_counted(&v.node, v.ins, 3, &v.y->t);
        if (has_signed_a()) assert_int_equal(g_signed_ran, before + 1);
        q8v_node_free(&v);
    }
}

static void run_conv_case(const conv_case *c, int expect_fast) {
    q8v_node v;
    q8v_conv_make(&v, c);
    int ran = check_variants(&v.node, v.ins, 3, &v.y->t);
    if (expect_fast && has_fast()) assert_true(ran > 0);
    q8v_node_free(&v);
}

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
    conv_case wide = q8v_wide_1x1_case();
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
            size_t num_cases = 0;
            const conv_case *cases = q8v_general_cases(&num_cases);
            for (size_t i = 0; i < num_cases; i++) {
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
            size_t num_cases = 0;
            const conv_case *cases = q8v_dw_cases(&num_cases);
            for (size_t i = 0; i < num_cases; i++) {
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
    conv_case grouped = q8v_grouped_case();
    run_conv_case(&grouped, 0);
    conv_case mult = q8v_multiplier_case();
    run_conv_case(&mult, 0);
}

static void run_fc_case(int64_t rows, int64_t in_size, int64_t out, int wkind, ks_dtype xdt,
                        int32_t act, int bias) {
    q8v_node v;
    q8v_fc_make(&v, rows, in_size, out, wkind, xdt, act, bias);
    int ran = check_variants(&v.node, v.ins, 3, &v.y->t);
    if (has_fast()) assert_true(ran > 0);
    q8v_node_free(&v);
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
    g_in_fused = 1;
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
    g_in_fused = 0;
}

/* Runs last: on a CPU with AVX-VNNI the VNNI GEMM must have taken plain and fused cases (with
 * U8 weights' zero points: its row-sum term). */
static void test_avxvnni_ran(void **state) {
    (void)state;
    int have = 0;
    for (const ks__impl *const *it = ks__impl_list(); *it; it++)
        if (strstr((*it)->name, "avxvnni_6x16") && ((*it)->isa & ~ks__cpu_isa()) == 0) have = 1;
    if (!have) {
        print_message("no AVX-VNNI here (or capped by KS_ISA_MAX): VNNI GEMM not run\n");
        return;
    }
    assert_true(g_vnni_ran > 50);
    assert_true(g_vnni_fused > 10);
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
        cmocka_unit_test(test_signed_a),
        cmocka_unit_test(test_avxvnni_ran),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
