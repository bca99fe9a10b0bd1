/* The small-channel quantized CONV2D (q8_smallc.h) against the reference kernel: every shape
 * class it takes (WIDE: 9..32 output channels, any kernel, strides 1..3, explicit and SAME
 * padding; PAIR: 1..8 output channels, pointwise), widths 1..17 for every tile tail, odd channel
 * counts, U8 and I8 activations with zero points, I8 per-channel weights and U8 weights with
 * zero point 128, every quantized activation, the fused residual ADD and output TABLE forms, at
 * 1 and 3 threads. The bytes must be identical. Nodes it must refuse (asymmetric weights,
 * dilation, more than 32 channels) are checked to be refused. The harness and the conv builder
 * are q8_variants.h's, shared with test_impl_quant.c. */
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
    return strncmp(im->name, "ks_q8_conv2d_smallc", 19) == 0;
}

/* Reference vs every selected variant, byte for byte (q8_variants.h). */
static int check_variants(const ks__node *node, ks__rt_tensor **ins, uint32_t nin,
                          ks__rt_tensor *y) {
    return q8v_check(node, ins, nin, y, is_q8_variant, NULL);
}

static int has_fast(void) {
    const uint32_t need = KS_ISA_AVX512 | KS_ISA_AVX512_VNNI;
    return (ks__cpu_isa() & need) == need;
}

static int run_conv_case(const conv_case *c, int expect_fast) {
    q8v_node v;
    q8v_conv_make(&v, c);
    int ran = check_variants(&v.node, v.ins, 3, &v.y->t);
    if (expect_fast && has_fast()) assert_true(ran > 0);
    q8v_node_free(&v);
    return ran;
}

static int run_conv_case_ran(const conv_case *c) {
    return run_conv_case(c, 0);
}

/* ---- fused CONV2D forms (ops.inc: ip[12] == 1) against the unfused reference pair ---- */

static void run_fused_case(const conv_case *c, int fuse, int32_t act) {
    int ran = q8v_fused_case(c, fuse, act, check_variants);
    if (has_fast()) assert_true(ran > 0);
}

/* Whether the variant takes a WIDE case (above 16 channels: spatial kernels over < 16 input
 * channels only, see ks__q8sc_cost). */
static int wide_taken(const conv_case *c) {
    return c->oc <= 16 || (c->kh * c->kw > 1 && c->ic < 16);
}

static void test_wide(void **state) {
    (void)state;
    const int kinds[3] = {W_I8_CHANNEL_SYM, W_U8_128, W_I8_CHANNEL_SYM};
    for (int64_t wdt = 1; wdt <= 17; wdt++) {
        for (int k = 0; k < 3; k++) {
            int64_t ic = 1 + (wdt * 5 + k) % 13;
            int32_t s = (int32_t)(1 + (wdt + k) % 3);
            int64_t kk = 1 + (wdt + 2 * k) % 4;
            conv_case c = {.n = 1 + (wdt % 4 == 0),
                           .ih = 1 + (wdt * 3) % 7,
                           .iw = wdt,
                           .ic = ic,
                           .oc = 9 + (wdt * 5 + k) % 24,
                           .kh = kk,
                           .kw = 1 + (wdt + k) % 3,
                           .sh = s,
                           .sw = 1 + (wdt + k + 1) % 2,
                           .mode = (wdt + k) % 2 ? KS_PAD_SAME_UPPER : KS_PAD_EXPLICIT,
                           .pt = (int32_t)(wdt % 2),
                           .pl = (int32_t)((wdt + k) % 3),
                           .pb = (int32_t)(k % 2),
                           .pr = 1,
                           .bias = (int)((wdt + k) & 1) || k == 2,
                           .wkind = kinds[k],
                           .act = k_acts[(wdt + k) % 4],
                           .xdt = (wdt + k) % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8};
            if (c.ih + c.pt + c.pb < c.kh) c.pb = (int32_t)(c.kh - c.ih);
            if (c.iw + c.pl + c.pr < c.kw) c.pr = (int32_t)(c.kw - c.iw);
            run_conv_case(&c, wide_taken(&c));
        }
    }
    /* pointwise: read in place (Cin % 4 == 0, I8 flipped in registers) or copied */
    for (int64_t ic = 4; ic <= 40; ic += 3) {
        for (int xi = 0; xi < 2; xi++) {
            conv_case c = {.n = 1 + xi,
                           .ih = 3,
                           .iw = 1 + ic % 17,
                           .ic = ic,
                           .oc = 9 + ic % 24,
                           .kh = 1,
                           .kw = 1,
                           .bias = xi,
                           .wkind = xi ? W_U8_128 : W_I8_CHANNEL_SYM,
                           .act = k_acts[(ic + xi) % 4],
                           .xdt = xi ? KS_DTYPE_U8 : KS_DTYPE_I8};
            run_conv_case(&c, wide_taken(&c));
            c.ic = ic / 4 * 4 + 4;
            c.xdt = xi ? KS_DTYPE_I8 : KS_DTYPE_U8;
            run_conv_case(&c, wide_taken(&c));
        }
    }
    /* the BlazePose stem: 3 -> 24, 3x3, stride 2, SAME */
    conv_case stem = {.n = 1,
                      .ih = 16,
                      .iw = 17,
                      .ic = 3,
                      .oc = 24,
                      .kh = 3,
                      .kw = 3,
                      .sh = 2,
                      .sw = 2,
                      .mode = KS_PAD_SAME_UPPER,
                      .bias = 1,
                      .wkind = W_I8_CHANNEL_SYM,
                      .act = KS_ACT_RELU6,
                      .xdt = KS_DTYPE_I8};
    run_conv_case(&stem, 1);
    /* the YOLOX stem after the focus: 12 -> 16, 3x3, pad 1 */
    conv_case yolox = {.n = 1,
                       .ih = 20,
                       .iw = 23,
                       .ic = 12,
                       .oc = 16,
                       .kh = 3,
                       .kw = 3,
                       .pt = 1,
                       .pl = 1,
                       .pb = 1,
                       .pr = 1,
                       .bias = 1,
                       .wkind = W_I8_CHANNEL_SYM,
                       .act = KS_ACT_RELU,
                       .xdt = KS_DTYPE_I8};
    run_conv_case(&yolox, 1);
}

static void test_pair(void **state) {
    (void)state;
    for (int64_t wdt = 1; wdt <= 17; wdt++) {
        for (int k = 0; k < 2; k++) {
            conv_case c = {.n = 1 + (wdt % 5 == 0),
                           .ih = 1 + wdt % 3,
                           .iw = wdt,
                           .ic = 1 + (wdt * 7 + k) % 50,
                           .oc = k ? 8 : 1 + (wdt + k) % 8,
                           .kh = 1,
                           .kw = 1,
                           .bias = (int)(wdt & 1),
                           .wkind = k ? W_U8_128 : W_I8_CHANNEL_SYM,
                           .act = k_acts[(wdt + k) % 4],
                           .xdt = (wdt + k) % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8};
            run_conv_case(&c, 1);
        }
    }
    /* whole 64-byte blocks of pairs (Cin 4, 8, 16, 32), odd and even pixel counts */
    for (int64_t ic = 4; ic <= 32; ic *= 2) {
        for (int64_t iw = 11; iw <= 12; iw++) {
            conv_case c = {.n = 1,
                           .ih = 13,
                           .iw = iw,
                           .ic = ic,
                           .oc = 3 + ic % 6,
                           .kh = 1,
                           .kw = 1,
                           .bias = 1,
                           .wkind = W_I8_CHANNEL_SYM,
                           .act = KS_ACT_RELU,
                           .xdt = iw % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8};
            run_conv_case(&c, 1);
        }
    }
    /* a 2275-pixel map: two work chunks, odd pixel count */
    conv_case big = {.n = 1,
                     .ih = 25,
                     .iw = 91,
                     .ic = 8,
                     .oc = 8,
                     .kh = 1,
                     .kw = 1,
                     .bias = 1,
                     .wkind = W_I8_CHANNEL_SYM,
                     .act = KS_ACT_RELU6,
                     .xdt = KS_DTYPE_I8};
    run_conv_case(&big, 1);
}

static void test_fused_smallc(void **state) {
    (void)state;
    for (int64_t wdt = 1; wdt <= 17; wdt += 2) {
        for (int f = FUSE_RESIDUAL; f < FUSE_COUNT; f++) {
            ks_dtype dt = (wdt + f) % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8;
            conv_case pw = {.n = 1,
                            .ih = 3,
                            .iw = wdt,
                            .ic = 1 + (wdt * 3) % 17,
                            .oc = 1 + (wdt + (int64_t)f) % 8,
                            .kh = 1,
                            .kw = 1,
                            .bias = 1,
                            .wkind = W_I8_CHANNEL_SYM,
                            .xdt = dt};
            conv_case g3 = {.n = 1,
                            .ih = 4,
                            .iw = wdt,
                            .ic = 1 + wdt % 12,
                            .oc = 9 + (wdt * 3 + (int64_t)f) % 24,
                            .kh = 3,
                            .kw = 3,
                            .pt = 1,
                            .pl = 1,
                            .pb = 1,
                            .pr = 1,
                            .bias = 1,
                            .wkind = f % 2 ? W_U8_128 : W_I8_CHANNEL_SYM,
                            .xdt = dt};
            run_fused_case(&pw, f, k_acts[(wdt + (int64_t)f) % 4]);
            run_fused_case(&g3, f, k_acts[(wdt + (int64_t)f + 1) % 4]);
        }
    }
}

/* 8 -> 8 pointwise convs with a fused residual ADD (the in-register PAIR forms on VBMI CPUs:
 * Cin 4 / 8 read in place, other Cin through the pair copy): every tail of the 16- and 8-pixel
 * steps, several work chunks, U8 and I8, every post-ADD act, short and general requantization. */
static void test_pair8_residual(void **state) {
    (void)state;
    static const int64_t k_ic[] = {1, 3, 4, 8, 12};
    static const int64_t k_w[] = {1, 2, 3, 5, 7, 8, 9, 13, 15, 16, 17, 31, 33};
    int n = 0;
    for (size_t i = 0; i < sizeof(k_ic) / sizeof(k_ic[0]); i++) {
        for (size_t k = 0; k < sizeof(k_w) / sizeof(k_w[0]); k++, n++) {
            conv_case c = {.n = 1,
                           .ih = 1 + (int64_t)(k % 2),
                           .iw = k_w[k],
                           .ic = k_ic[i],
                           .oc = 8,
                           .kh = 1,
                           .kw = 1,
                           .bias = n % 5 == 4 ? 2 : 1,
                           .wkind = n % 3 == 2 ? W_U8_128 : W_I8_CHANNEL_SYM,
                           .xdt = n % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8};
            run_fused_case(&c, FUSE_RESIDUAL, k_acts[n % 4]);
        }
        for (int big = 0; big < 2; big++) {
            conv_case c = {.n = 1 + big,
                           .ih = 25,
                           .iw = 41 - big,
                           .ic = k_ic[i],
                           .oc = 8,
                           .kh = 1,
                           .kw = 1,
                           .bias = big ? 2 : 1,
                           .wkind = W_I8_CHANNEL_SYM,
                           .xdt = (i + (size_t)big) % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8};
            run_fused_case(&c, FUSE_RESIDUAL, k_acts[(i + (size_t)big) % 4]);
        }
    }
}

/* Refused: asymmetric weights, dilation, groups, too many channels. */
static void test_refused(void **state) {
    (void)state;
    conv_case asym = {.n = 1,
                      .ih = 5,
                      .iw = 6,
                      .ic = 4,
                      .oc = 8,
                      .kh = 1,
                      .kw = 1,
                      .bias = 1,
                      .wkind = W_U8_TENSOR,
                      .xdt = KS_DTYPE_U8};
    assert_int_equal(run_conv_case_ran(&asym), 0);
    conv_case zp = asym;
    zp.wkind = W_I8_CHANNEL_ZP;
    assert_int_equal(run_conv_case_ran(&zp), 0);
    conv_case dil = {.n = 1,
                     .ih = 9,
                     .iw = 9,
                     .ic = 4,
                     .oc = 16,
                     .kh = 3,
                     .kw = 3,
                     .dh = 2,
                     .dw = 2,
                     .bias = 1,
                     .wkind = W_I8_CHANNEL_SYM,
                     .xdt = KS_DTYPE_I8};
    assert_int_equal(run_conv_case_ran(&dil), 0);
    conv_case wide = {.n = 1,
                      .ih = 5,
                      .iw = 6,
                      .ic = 4,
                      .oc = 33,
                      .kh = 1,
                      .kw = 1,
                      .wkind = W_I8_CHANNEL_SYM,
                      .xdt = KS_DTYPE_I8};
    assert_int_equal(run_conv_case_ran(&wide), 0);
    conv_case ok = wide;
    ok.oc = 32, ok.kh = 3, ok.kw = 3, ok.pt = 1, ok.pl = 1, ok.pb = 1, ok.pr = 1;
    if (ks__cpu_isa() & KS_ISA_AVX512_VNNI) assert_int_equal(run_conv_case_ran(&ok), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wide),         cmocka_unit_test(test_pair),
        cmocka_unit_test(test_fused_smallc), cmocka_unit_test(test_pair8_residual),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
