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
#include "cpu_kernel.h"

#define Q8V_CONV_CASES /* conv_case, the conv / FC builders and case lists */
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

/* The weight flavours the ARM kernels are tested with: W_U8_TENSOR, W_I8_CHANNEL_SYM and
 * W_I8_CHANNEL_ZP (q8_variants.h). */
enum { W_NUM = 3 };

/* Builds the node, checks every variant and returns how many took it; *sel_dot / *sel_plain get
 * what dispatch picks with and without dotprod. */
static int run_conv_case(const conv_case *c, const char **sel_dot, const char **sel_plain) {
    q8v_node v;
    q8v_conv_make(&v, c);
    int ran = check_variants(&v.node, v.ins, 3, &v.y->t);
    if (sel_dot) *sel_dot = selected(&v.node, v.ins, 3, &v.y->t, KS_ISA_NEON | KS_ISA_NEON_DOT);
    if (sel_plain) *sel_plain = selected(&v.node, v.ins, 3, &v.y->t, KS_ISA_NEON);
    q8v_node_free(&v);
    return ran;
}

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
    conv_case wide = q8v_wide_1x1_case();
    assert_true(run_conv_case(&wide, NULL, NULL) > 0);
}

static void run_general_case(const conv_case *shape, int wkind, ks_dtype xdt) {
    conv_case c = *shape;
    c.wkind = wkind;
    c.xdt = xdt;
    const char *sd = NULL, *sp = NULL;
    assert_true(run_conv_case(&c, &sd, &sp) > 0);
    expect_gemm_dispatch(sd, sp);
}

static void test_conv_general(void **state) {
    (void)state;
    skip_unless_arm();
    for (int wk = 0; wk < W_NUM; wk++) {
        for (int xi = 0; xi < 2; xi++) {
            ks_dtype xdt = xi ? KS_DTYPE_I8 : KS_DTYPE_U8;
            /* the shared list, then shapes for the ARM tiles: an even kernel, extreme codes,
             * left shifts */
            size_t num_common = 0;
            const conv_case *common = q8v_general_cases(&num_common);
            const conv_case extra[] = {
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
            for (size_t i = 0; i < num_common; i++)
                run_general_case(&common[i], wk, xdt);
            for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
                run_general_case(&extra[i], wk, xdt);
        }
    }
}

static void run_dw_case(const conv_case *shape, int64_t channels, int wkind, ks_dtype xdt) {
    conv_case c = *shape;
    c.ic = c.oc = channels;
    c.groups = (int32_t)channels;
    c.wkind = wkind;
    c.xdt = xdt;
    const char *sd = NULL, *sp = NULL;
    assert_true(run_conv_case(&c, &sd, &sp) > 0);
    assert_non_null(sd);
    assert_non_null(sp);
    assert_string_equal(sd, "ks_q8_dwconv__neon_c16");
    assert_string_equal(sp, "ks_q8_dwconv__neon_c16");
}

static void test_dwconv(void **state) {
    (void)state;
    skip_unless_arm();
    const int64_t channels[] = {2, 7, 8, 16, 17, 19, 24, 33, 144};
    for (size_t ci = 0; ci < sizeof(channels) / sizeof(channels[0]); ci++) {
        for (int wk = 0; wk < W_NUM; wk++) {
            int64_t ch = channels[ci];
            ks_dtype xdt = (ci + (size_t)wk) % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8;
            /* the shared list, then extreme codes and left shifts */
            size_t num_common = 0;
            const conv_case *common = q8v_dw_cases(&num_common);
            const conv_case extra[] = {
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
            for (size_t i = 0; i < num_common; i++)
                run_dw_case(&common[i], ch, wk, xdt);
            for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
                run_dw_case(&extra[i], ch, wk, xdt);
        }
    }
}

/* Grouped (non-depthwise) and depth-multiplier convs are left to the reference. */
static void test_conv_refused(void **state) {
    (void)state;
    skip_unless_arm();
    conv_case grouped = q8v_grouped_case();
    const char *sd = "", *sp = "";
    assert_int_equal(run_conv_case(&grouped, &sd, &sp), 0);
    assert_null(sd);
    assert_null(sp);
    conv_case mult = q8v_multiplier_case();
    assert_int_equal(run_conv_case(&mult, &sd, &sp), 0);
}

static void run_fc_case(int64_t rows, int64_t in_size, int64_t out, int wkind, ks_dtype xdt,
                        int32_t act, int bias) {
    q8v_node v;
    q8v_fc_make(&v, rows, in_size, out, wkind, xdt, act, bias);
    assert_true(check_variants(&v.node, v.ins, 3, &v.y->t) > 0);
    expect_gemm_dispatch(selected(&v.node, v.ins, 3, &v.y->t, KS_ISA_NEON | KS_ISA_NEON_DOT),
                         selected(&v.node, v.ins, 3, &v.y->t, KS_ISA_NEON));
    q8v_node_free(&v);
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
