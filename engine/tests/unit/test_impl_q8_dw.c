/* The row-wise quantized depthwise CONV2D variants (q8_dw.h, "dwrow") against the reference
 * kernel: byte-identical outputs on shapes that hit every channel pattern (C vs the 64-byte
 * block), every flat tail, widths 1..17, strides 1..3, dilation, every padding mode, kernel
 * heights that fill 1 or 2 interleaved row groups, batches, U8 and I8 activations with zero
 * points, U8 per-tensor and I8 per-channel weights, left-shift multipliers, every quantized
 * activation, at 1 and 3 threads; stride-2 quads, rows read in place and each requantization
 * form (test_quad_and_forms); weights whose w - w_zp leaves the kernels' s8 range, recomputed
 * per channel (test_outliers); and nodes it must refuse (the residual form, too many such
 * channels). */
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

#include "q8_variants.h"

/* The dwrow variants this CPU runs (NULL-ended). */
static const ks__impl *g_impls[8];

static int setup(void **state) {
    (void)state;
    size_t n = 0;
    for (const ks__impl *const *it = ks__impl_list(); *it; it++) {
        const ks__impl *im = *it;
        if (im->op == KS_OP_CONV2D && strncmp(im->name, "ks_q8_dwconv__", 14) == 0 &&
            strstr(im->name, "dwrow") && (im->isa & ~ks__cpu_isa()) == 0 && n < 7)
            g_impls[n++] = im;
    }
    g_impls[n] = NULL;
    return 0;
}

static int is_dwrow(const ks__impl *im) {
    return strncmp(im->name, "ks_q8_dwconv__", 14) == 0 && strstr(im->name, "dwrow") != NULL;
}

/* Cases the plain AVX2 variant (ks_q8_dwconv__avx2_dwrow, signed x) ran. */
static int g_avx2_ran;

static void on_ran(const char *name) {
    if (strcmp(name, "ks_q8_dwconv__avx2_dwrow") == 0) g_avx2_ran++;
}

/* Runs the reference and every dwrow variant (q8_variants.h); returns how many took the node. */
static int check(const ks__node *node, ks__rt_tensor **ins, uint32_t nin, ks__rt_tensor *y) {
    return q8v_check(node, ins, nin, y, is_dwrow, on_ran);
}

static int have_impl(const char *name) {
    for (size_t i = 0; g_impls[i]; i++)
        if (strcmp(g_impls[i]->name, name) == 0) return 1;
    return 0;
}

/* Whether the last run_case must have been taken by some dwrow variant this CPU runs: the
 * AVX-512 VNNI one and the plain AVX2 one take every case these tests make (except the refused
 * forms; a w - w_zp outside their s8 range is an outlier channel); the AVX-VNNI one refuses left
 * shifts. */
static int g_must;

enum { W_U8_TENSOR = 0, W_I8_SYM = 1, W_I8_ZP = 2 };

typedef struct dw_case {
    int64_t n, ih, iw, c, kh, kw;
    int32_t sh, sw, dh, dw, pt, pl, pb, pr, mode, act;
    int bias, wkind, fused;
    ks_dtype xdt;
    float yscale_mul; /* 0: 1 */
    int w128;         /* weights may have w - w_zp == -128 (else they stay in [-127, 127]) */
    int outliers;     /* u8 weights: every outliers-th channel gets a w - w_zp of 135 (0: none) */
} dw_case;

static int run_case(const dw_case *k) {
    int64_t xd[4] = {k->n, k->ih, k->iw, k->c}, wd[4] = {k->c, k->kh, k->kw, 1}, bd[1] = {k->c};
    qtensor *x = malloc(sizeof(qtensor)), *w = malloc(sizeof(qtensor));
    qtensor *b = malloc(sizeof(qtensor)), *y = malloc(sizeof(qtensor));
    qtensor *res = malloc(sizeof(qtensor));
    assert_true(x && w && b && y && res);
    assert_true(k->c <= 256);
    mkq(x, k->xdt, 4, xd, 1);
    x->scales[0] = 0.03f;
    x->zps[0] = k->xdt == KS_DTYPE_U8 ? (int32_t)(urand() % 256) : (int32_t)(urand() % 256) - 128;
    int u8w = k->wkind == W_U8_TENSOR;
    mkq(w, u8w ? KS_DTYPE_U8 : KS_DTYPE_I8, 4, wd, u8w ? 1 : (uint32_t)k->c);
    int64_t ks = k->kh * k->kw;
    for (int64_t c = 0; c < k->c; c++) {
        int32_t zp = u8w ? 120 : (k->wkind == W_I8_SYM ? 0 : (int32_t)(c % 9) - 4);
        if (!u8w || c == 0) w->zps[u8w ? 0 : c] = zp;
        if (!u8w || c == 0) w->scales[u8w ? 0 : c] = 0.002f + 0.0007f * (float)(c % 11);
        for (int64_t t = 0; t < ks; t++) {
            int32_t d = (int32_t)(urand() % 256) - 128, v = zp + d;
            int32_t lo = u8w ? 0 : -128, hi = u8w ? 255 : 127;
            /* keep w - zp inside s8 ([-127, 127] unless w128); outliers below */
            int32_t dmin = k->w128 ? -128 : -127;
            lo = lo > zp + dmin ? lo : zp + dmin;
            hi = hi < zp + 127 ? hi : zp + 127;
            v = v < lo ? lo : (v > hi ? hi : v);
            if (u8w && k->outliers && c % k->outliers == 0 && t == c % ks)
                v = 255; /* 255 - 120 = 135: the kernels run the channel clamped, then fix it */
            if (u8w)
                ((uint8_t *)w->t.data)[c * ks + t] = (uint8_t)v;
            else
                ((int8_t *)w->t.data)[c * ks + t] = (int8_t)v;
        }
    }
    mkq(b, KS_DTYPE_I32, 1, bd, 0);
    for (int64_t i = 0; i < k->c; i++)
        ((int32_t *)b->t.data)[i] = (int32_t)(urand() % 40001) - 20000;
    int64_t one[1] = {1};
    mkq(y, k->xdt, 1, one, 1);
    free(y->t.data);
    y->t.data = NULL;
    y->scales[0] = 0.03f * 0.006f * 60.0f * sqrtf((float)ks) * (k->yscale_mul ? k->yscale_mul : 1);
    y->zps[0] = k->xdt == KS_DTYPE_U8 ? (int32_t)(urand() % 256) : (int32_t)(urand() % 256) - 128;
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_CONV2D;
    node.name = (char *)"qdw";
    int32_t ip[11] = {k->sh, k->sw, k->dh,   k->dw,         k->pt, k->pl,
                      k->pb, k->pr, k->mode, (int32_t)k->c, k->act};
    memcpy(node.ip, ip, sizeof(ip));
    ks__rt_tensor *ins[5] = {&x->t, &w->t, k->bias ? &b->t : NULL, NULL, NULL};
    uint32_t nin = 3;
    int ran;
    /* a real multiplier >= 1 (with margin for the float product) means a left shift */
    float ys = k->fused == 2 ? y->scales[0] * 0.7f : y->scales[0];
    int left = 0;
    for (int64_t c = 0; c < (u8w ? 1 : k->c); c++)
        left |= x->scales[0] * w->scales[c] / ys >= 0.999f;
    g_must = have_impl("ks_q8_dwconv__avx512vnni_dwrow") ||
             (!left && have_impl("ks_q8_dwconv__avxvnni_dwrow")) ||
             have_impl("ks_q8_dwconv__avx2_dwrow");
    if (k->fused == 2) {
        /* output TABLE form (e.g. SiLU): requantize to the intermediate, then look up */
        node.ip[10] = KS_ACT_TABLE;
        node.ip[12] = 1;
        node.ip[11] = k->xdt == KS_DTYPE_U8 ? 100 : -20;
        node.fp[1] = y->scales[0] * 0.7f;
        int64_t td[1] = {256};
        mkq(res, k->xdt, 1, td, 0);
        ins[4] = &res->t;
        ran = check(&node, ins, 5, &y->t);
        free(res->t.data);
    } else if (k->fused) {
        /* a residual-fused node: the dwrow variants must refuse it */
        node.ip[12] = 1;
        node.ip[11] = y->zps[0];
        node.fp[1] = y->scales[0] * 1.5f;
        int64_t od[4] = {k->n, k->ih, k->iw, k->c};
        mkq(res, k->xdt, 4, od, 1);
        res->scales[0] = 0.05f;
        ins[3] = &res->t;
        nin = 4;
        ks__rt_tensor *outs[1] = {&y->t};
        ks__kernel_ctx c = make_ctx(&node, ins, nin, outs);
        assert_int_equal(ks__ref_prepare(&c), KS_STATUS_OK);
        ran = 0;
        for (size_t i = 0; g_impls[i]; i++)
            ran += g_impls[i]->cost(&c) >= 0;
        free(res->t.data);
    } else {
        ran = check(&node, ins, nin, &y->t);
    }
    free(x->t.data), free(w->t.data), free(b->t.data);
    free(x), free(w), free(b), free(y), free(res);
    return ran;
}

static void test_channels_and_widths(void **state) {
    (void)state;
    const int64_t channels[] = {1, 2, 3, 5, 8, 16, 17, 24, 32, 40, 48, 63, 64, 65, 96, 100, 144};
    int i = 0;
    for (size_t ci = 0; ci < sizeof(channels) / sizeof(channels[0]); ci++) {
        for (int64_t width = 1; width <= 17; width += (ci % 2) ? 3 : 2, i++) {
            dw_case k = {.n = 1 + (i % 3 == 0),
                         .ih = 3 + i % 4,
                         .iw = width,
                         .c = channels[ci],
                         .kh = 3,
                         .kw = 3,
                         .sh = 1 + (i % 5 == 1),
                         .sw = 1 + (i % 4 == 1),
                         .mode = i % 7 == 3 ? KS_PAD_VALID : KS_PAD_SAME_UPPER,
                         .act = k_acts[i % 4],
                         .bias = i % 6 != 5,
                         .wkind = i % 3,
                         .xdt = (i / 2) % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8};
            if (k.mode == KS_PAD_VALID && k.iw < 3) k.mode = KS_PAD_SAME_LOWER;
            int ran = run_case(&k);
            if (g_impls[0] && g_must) assert_true(ran >= 1);
        }
    }
}

static void test_geometry(void **state) {
    (void)state;
    const dw_case cases[] = {
        /* 5x5 (two row groups), stride 2, explicit asymmetric pads */
        {.n = 1,
         .ih = 12,
         .iw = 13,
         .c = 24,
         .kh = 5,
         .kw = 5,
         .sh = 2,
         .sw = 2,
         .pt = 1,
         .pl = 2,
         .pb = 2,
         .pr = 1},
        {.n = 2,
         .ih = 9,
         .iw = 17,
         .c = 72,
         .kh = 5,
         .kw = 5,
         .mode = KS_PAD_SAME_UPPER,
         .act = KS_ACT_RELU6},
        /* tall and wide kernels, dilation, stride 3 */
        {.n = 1, .ih = 14, .iw = 11, .c = 33, .kh = 7, .kw = 1, .pt = 3, .pb = 3},
        {.n = 1, .ih = 5, .iw = 16, .c = 16, .kh = 1, .kw = 7, .pl = 3, .pr = 3},
        {.n = 1,
         .ih = 9,
         .iw = 9,
         .c = 40,
         .kh = 3,
         .kw = 3,
         .dh = 2,
         .dw = 2,
         .mode = KS_PAD_VALID},
        {.n = 1,
         .ih = 11,
         .iw = 12,
         .c = 20,
         .kh = 3,
         .kw = 3,
         .dh = 2,
         .dw = 3,
         .sh = 2,
         .sw = 2,
         .mode = KS_PAD_SAME_UPPER},
        {.n = 1,
         .ih = 13,
         .iw = 14,
         .c = 48,
         .kh = 3,
         .kw = 3,
         .sh = 3,
         .sw = 3,
         .mode = KS_PAD_SAME_LOWER},
        {.n = 1, .ih = 8, .iw = 8, .c = 32, .kh = 9, .kw = 9, .mode = KS_PAD_SAME_UPPER},
        /* 1x1 depthwise, padding wider than the kernel */
        {.n = 1, .ih = 4, .iw = 5, .c = 7, .kh = 1, .kw = 1},
        {.n = 1, .ih = 4, .iw = 5, .c = 64, .kh = 3, .kw = 3, .pt = 4, .pl = 5, .pb = 3, .pr = 6},
        /* a big real multiplier: left shifts */
        {.n = 1,
         .ih = 6,
         .iw = 7,
         .c = 19,
         .kh = 3,
         .kw = 3,
         .mode = KS_PAD_SAME_UPPER,
         .yscale_mul = 1e-4f},
        /* a small one: large right shifts */
        {.n = 1,
         .ih = 6,
         .iw = 7,
         .c = 19,
         .kh = 3,
         .kw = 3,
         .mode = KS_PAD_SAME_UPPER,
         .yscale_mul = 300.0f},
        /* kernel heights 1..8: 1, 2 or 4 output rows per call, odd row counts */
        {.n = 2, .ih = 7, .iw = 9, .c = 24, .kh = 1, .kw = 3, .pl = 1, .pr = 1},
        {.n = 1, .ih = 9, .iw = 6, .c = 40, .kh = 2, .kw = 2, .mode = KS_PAD_SAME_UPPER},
        {.n = 1, .ih = 10, .iw = 7, .c = 17, .kh = 4, .kw = 4, .mode = KS_PAD_SAME_LOWER},
        {.n = 2, .ih = 11, .iw = 10, .c = 33, .kh = 5, .kw = 5, .mode = KS_PAD_SAME_UPPER},
        {.n = 1, .ih = 13, .iw = 5, .c = 64, .kh = 6, .kw = 3, .pt = 2, .pb = 3, .pl = 1, .pr = 1},
        {.n = 1, .ih = 15, .iw = 9, .c = 8, .kh = 7, .kw = 7, .mode = KS_PAD_SAME_UPPER},
        {.n = 1, .ih = 12, .iw = 8, .c = 48, .kh = 8, .kw = 2, .mode = KS_PAD_SAME_UPPER},
        /* the BlazePose / YOLOX shapes, scaled down */
        {.n = 1,
         .ih = 32,
         .iw = 32,
         .c = 32,
         .kh = 3,
         .kw = 3,
         .mode = KS_PAD_SAME_UPPER,
         .act = KS_ACT_RELU6},
        {.n = 1,
         .ih = 13,
         .iw = 13,
         .c = 64,
         .kh = 3,
         .kw = 3,
         .sh = 2,
         .sw = 2,
         .mode = KS_PAD_SAME_UPPER},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (int v = 0; v < 4; v++) {
            dw_case k = cases[i];
            k.wkind = v % 3;
            k.xdt = v % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8;
            k.bias = v != 2;
            if (!k.act) k.act = k_acts[(i + (size_t)v) % 4];
            int ran = run_case(&k);
            if (g_impls[0] && g_must) assert_true(ran >= 1);
        }
    }
}

static void test_table(void **state) {
    (void)state;
    const int64_t channels[] = {1, 16, 24, 40, 64, 100};
    for (size_t ci = 0; ci < sizeof(channels) / sizeof(channels[0]); ci++) {
        for (int v = 0; v < 4; v++) {
            dw_case k = {.n = 1,
                         .ih = 7,
                         .iw = 5 + (int64_t)ci * 3,
                         .c = channels[ci],
                         .kh = 3,
                         .kw = 3,
                         .sh = 1 + (v == 3),
                         .sw = 1 + (v == 3),
                         .mode = KS_PAD_SAME_UPPER,
                         .bias = 1,
                         .wkind = v % 3,
                         .fused = 2,
                         .xdt = (v + (int)ci) % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8};
            int ran = run_case(&k);
            if (g_impls[0] && g_must) assert_true(ran >= 1);
        }
    }
}

/* Stride 2 at the channel counts with a vector phase split, left pads of both parities. */
static void test_stride2_split(void **state) {
    (void)state;
    const int64_t channels[] = {8, 16, 32, 64, 128, 24};
    int i = 0;
    for (size_t ci = 0; ci < sizeof(channels) / sizeof(channels[0]); ci++) {
        for (int64_t width = 1; width <= 41; width += 4) {
            for (int32_t pl = 0; pl <= 3; pl++, i++) {
                dw_case k = {.n = 1,
                             .ih = 5,
                             .iw = width,
                             .c = channels[ci],
                             .kh = 3,
                             .kw = 3 + (pl == 3) * 2,
                             .sh = 2,
                             .sw = 2,
                             .pt = 1,
                             .pl = pl,
                             .pb = 1,
                             .pr = 2,
                             .bias = 1,
                             .wkind = i % 3,
                             .act = k_acts[i % 4],
                             .xdt = i % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8};
                int ran = run_case(&k);
                if (g_impls[0]) assert_true(ran >= 1); /* the AVX2 one refuses left shifts */
            }
        }
    }
}

/* Random geometry, dtypes, activations and fused tables. */
static void test_random(void **state) {
    (void)state;
    for (int i = 0; i < 300; i++) {
        dw_case k;
        memset(&k, 0, sizeof(k));
        k.n = 1 + (int64_t)(urand() % 2);
        k.c = 1 + (int64_t)(urand() % 100);
        k.kh = 1 + (int64_t)(urand() % 6), k.kw = 1 + (int64_t)(urand() % 6);
        k.sh = 1 + (int32_t)(urand() % 3), k.sw = 1 + (int32_t)(urand() % 3);
        k.dh = 1 + (int32_t)(urand() % 2), k.dw = 1 + (int32_t)(urand() % 2);
        k.ih = 1 + (int64_t)(urand() % 12), k.iw = 1 + (int64_t)(urand() % 20);
        int64_t eh = (k.kh - 1) * k.dh + 1, ew = (k.kw - 1) * k.dw + 1;
        k.mode = (int32_t)(urand() % 4); /* explicit, SAME_UPPER, SAME_LOWER, VALID */
        if (k.mode == KS_PAD_VALID && (k.ih < eh || k.iw < ew)) k.mode = KS_PAD_SAME_UPPER;
        if (k.mode == KS_PAD_EXPLICIT) {
            k.pt = (int32_t)(urand() % 4), k.pb = (int32_t)(urand() % 4);
            k.pl = (int32_t)(urand() % 4), k.pr = (int32_t)(urand() % 4);
            if (k.ih + k.pt + k.pb < eh) k.pb += (int32_t)(eh - k.ih);
            if (k.iw + k.pl + k.pr < ew) k.pr += (int32_t)(ew - k.iw);
        }
        k.act = k_acts[urand() % 4];
        k.bias = (int)(urand() % 4 != 0);
        k.wkind = (int)(urand() % 3);
        k.xdt = urand() % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8;
        k.fused = urand() % 5 == 0 ? 2 : 0;
        k.w128 = i % 7 == 0;
        int ran = run_case(&k);
        if (g_impls[0] && g_must) assert_true(ran >= 1);
    }
}

/* The forms q8_dw.c picks per node: tall stride-2 windows (the quad mode: kh >= 5, stride 2,
 * >= 16 output rows) at every top padding and row parity, batches; stride-1 rows read in place
 * with wide paddings; and output scales that select the float64 requantization (right shifts
 * <= 13), the 64-bit integer one (smaller multipliers) and folded left shifts (larger ones). */
static void test_quad_and_forms(void **state) {
    (void)state;
    const int64_t channels[] = {8, 24, 64, 144, 200, 13};
    const float ymul[] = {1.0f, 0.01f, 400.0f, 0.2f};
    for (int i = 0; i < 160; i++) {
        dw_case k;
        memset(&k, 0, sizeof(k));
        int quad = i % 4 != 3;
        k.n = 1 + (i % 5 == 0);
        k.c = channels[i % 6];
        k.kh = quad ? 5 + (i / 6) % 5 : 3 + (i % 3);
        k.kw = quad ? (i % 2 ? 5 : 3) : 3 + 2 * (i % 2);
        k.sh = quad ? 2 : 1, k.sw = quad ? 1 + (i % 3 != 0) : 1;
        k.dw = 1 + (i % 7 == 0);
        k.dh = quad ? 1 : 1 + (i % 11 == 0);
        k.ih = quad ? 33 + (i % 6) : 5 + (i % 4);
        k.iw = 3 + (int64_t)(urand() % 12);
        k.mode = KS_PAD_EXPLICIT;
        k.pt = i % 8 == 1 ? 9 + (int32_t)(i / 8) % 4 : (int32_t)(i % 5); /* rows of padding */
        k.pb = (int32_t)(urand() % 4) + (i % 8 == 1 ? 7 : 0);
        k.pl = (int32_t)(urand() % 5), k.pr = (int32_t)(urand() % 5);
        int64_t eh = (k.kh - 1) * k.dh + 1, ew = (k.kw - 1) * k.dw + 1;
        if (k.ih + k.pt + k.pb < eh) k.pb += (int32_t)(eh - k.ih);
        if (k.iw + k.pl + k.pr < ew) k.pr += (int32_t)(ew - k.iw);
        k.act = k_acts[(i / 3) % 4];
        k.bias = i % 9 != 0;
        k.wkind = i % 3;
        k.xdt = (i / 2) % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8;
        k.fused = i % 13 == 0 ? 2 : 0;
        k.yscale_mul = ymul[(i / 4) % 4];
        int ran = run_case(&k);
        /* the small scales (left shifts) are asserted only where the AVX2 variant is the one */
        int need = k.yscale_mul >= 1.0f || !have_impl("ks_q8_dwconv__avx512vnni_dwrow");
        if (g_impls[0] && g_must && need) assert_true(ran >= 1);
    }
}

static void test_refused(void **state) {
    (void)state;
    dw_case k = {.n = 1,
                 .ih = 6,
                 .iw = 7,
                 .c = 100,
                 .kh = 3,
                 .kw = 3,
                 .mode = KS_PAD_SAME_UPPER,
                 .bias = 1,
                 .xdt = KS_DTYPE_U8};
    /* more outlier channels than the fix-up takes (every one of 100 > KS_Q8DW_FIX_MAX) */
    k.outliers = 1;
    assert_int_equal(run_case(&k), 0);
    k.outliers = 0;
    k.c = 16;
    k.wkind = W_I8_SYM;
    k.fused = 1;
    assert_int_equal(run_case(&k), 0);
}

/* Weights whose w - w_zp leaves the kernels' s8 range (TFLite's asymmetric uint8 weights): the
 * channels run clamped and are recomputed (q8_dw.c fix_rows), byte-exact in every schedule: in
 * place (stride 1), stride-2 phases, the quad mode, dilation, two images, the TABLE form. */
static void test_outliers(void **state) {
    (void)state;
    const struct {
        int64_t c, ih, iw, kh, kw;
        int32_t sh, sw, dh, dw;
    } geo[] = {
        {16, 9, 11, 3, 3, 1, 1, 1, 1},  {24, 12, 10, 3, 3, 2, 2, 1, 1},
        {40, 17, 9, 5, 5, 2, 2, 1, 1},  {96, 7, 7, 3, 3, 1, 1, 1, 1},
        {32, 10, 12, 3, 3, 1, 1, 2, 2}, {17, 8, 13, 5, 5, 1, 1, 1, 1},
    };
    for (int i = 0; i < 24; i++) {
        dw_case k = {.n = 1 + i % 2, .bias = 1, .wkind = W_U8_TENSOR};
        int g = i % (int)(sizeof(geo) / sizeof(geo[0]));
        k.c = geo[g].c, k.ih = geo[g].ih, k.iw = geo[g].iw, k.kh = geo[g].kh, k.kw = geo[g].kw;
        k.sh = geo[g].sh, k.sw = geo[g].sw, k.dh = geo[g].dh, k.dw = geo[g].dw;
        k.mode = i % 3 == 0 ? KS_PAD_VALID : KS_PAD_SAME_UPPER;
        k.act = i % 4 == 1 ? KS_ACT_RELU6 : KS_ACT_NONE;
        k.xdt = (i / 6) % 2 ? KS_DTYPE_I8 : KS_DTYPE_U8;
        k.fused = i % 5 == 4 ? 2 : 0;
        k.outliers = 3 + i % 5; /* every 3rd .. 7th channel */
        k.w128 = i % 2;
        int ran = run_case(&k);
        if (g_impls[0] && g_must) assert_true(ran >= 1);
    }
    /* a w - w_zp of -128: the signed-x AVX2 variant takes it as an outlier channel now */
    dw_case k = {.n = 1,
                 .ih = 6,
                 .iw = 7,
                 .c = 200, /* enough weights that one of them is -128 */
                 .kh = 3,
                 .kw = 3,
                 .mode = KS_PAD_SAME_UPPER,
                 .bias = 1,
                 .wkind = W_I8_SYM,
                 .w128 = 1,
                 .xdt = KS_DTYPE_U8};
    int before = g_avx2_ran;
    run_case(&k);
    if (have_impl("ks_q8_dwconv__avx2_dwrow")) assert_true(g_avx2_ran > before);
}

/* The plain AVX2 variant is the only dwrow one without VNNI: where it exists it must have taken
 * most of the cases above. */
static void test_avx2_ran(void **state) {
    (void)state;
    if (have_impl("ks_q8_dwconv__avx2_dwrow")) assert_true(g_avx2_ran >= 300);
}

int main(void) {
    g_rng = 4242u; /* the stream these cases were written with */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_channels_and_widths, setup),
        cmocka_unit_test_setup(test_geometry, setup),
        cmocka_unit_test_setup(test_table, setup),
        cmocka_unit_test_setup(test_stride2_split, setup),
        cmocka_unit_test_setup(test_random, setup),
        cmocka_unit_test_setup(test_quad_and_forms, setup),
        cmocka_unit_test_setup(test_refused, setup),
        cmocka_unit_test_setup(test_outliers, setup),
        cmocka_unit_test_setup(test_avx2_ran, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
