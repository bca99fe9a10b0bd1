/* Fast fp32 depthwise conv / pool / transpose conv variants (impls_dwconv.inc) against the
 * reference kernels: every variant in ks__impl_list() for these ops that the CPU supports, on
 * odd shapes that hit every tail (channels 1..69, widths 1..19, strides 1-3, every pad mode,
 * every fused activation incl. PRELU, the residual input), with 1, 2 and 3 threads. The row
 * kernels (3x3 / 5x5, stride 1 / 2) get every channel count 1..40 and width 1..19. Tolerance:
 * f32 relative 1e-5 scaled by sqrt of the reduction length. */
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

/* The variants this file owns must accept every float case; other variants of the same ops
 * (e.g. a dense conv that also takes depthwise) are checked whenever they accept. */
#define KS_IMPL(sym) extern const ks__impl sym;
#include "impls_dwconv.inc"
#undef KS_IMPL
static const ks__impl *const k_own[] = {
#define KS_IMPL(sym) &sym,
#include "impls_dwconv.inc"
#undef KS_IMPL
    NULL,
};

static int is_own(const ks__impl *im) {
    for (const ks__impl *const *p = k_own; *p; p++)
        if (*p == im) return 1;
    return 0;
}

static const int64_t k_channels[] = {1, 3, 7, 15, 16, 17, 33, 69};
#define NUM_CHANNELS (sizeof(k_channels) / sizeof(k_channels[0]))

static char g_err[512];
static ks__pool *g_pool2, *g_pool3;
static ks__quant g_noquant;
static uint32_t g_rng = 2024u;
static int g_num_checked; /* variant runs compared, to prove the loops ran */

static uint32_t rnd(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return g_rng >> 8;
}

static float rndf(void) {
    return (float)(rnd() % 20001) / 10000.0f - 1.0f;
}

static void fill(float *p, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        p[i] = rndf();
}

static void tensor(ks__rt_tensor *t, ks_dtype dt, void *data, int32_t rank, const int64_t *dims) {
    memset(t, 0, sizeof(*t));
    t->dtype = dt;
    t->rank = rank;
    for (int32_t i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    t->data = data;
    t->quant = &g_noquant;
    t->size_bytes = (size_t)ks__rt_numel(t) * ks_dtype_size(dt);
}

static ks__kernel_ctx make_ctx(const ks__node *node, ks__rt_tensor **ins, uint32_t nin,
                               ks__rt_tensor **out) {
    ks__kernel_ctx ctx = {.node = node,
                          .node_index = 3,
                          .in = ins,
                          .num_inputs = nin,
                          .out = out,
                          .num_outputs = 1,
                          .err = g_err,
                          .err_cap = sizeof(g_err)};
    return ctx;
}

/* Runs the reference; returns 0 (and leaves y unset) when infer rejects the shapes. On success
 * *y_out holds a malloc'd output of *count_out floats. */
static int run_ref(const ks__node *node, ks__rt_tensor **ins, uint32_t nin, ks__rt_tensor *y,
                   float **y_out, int64_t *count_out) {
    ks__rt_tensor *outp = y;
    tensor(y, KS_DTYPE_F32, NULL, 0, NULL);
    ks__kernel_ctx ctx = make_ctx(node, ins, nin, &outp);
    const ks__kernel *k = &ks__ref_kernels()->k[node->op];
    if (ks__ref_prepare(&ctx) != KS_STATUS_OK) return 0;
    int64_t count = ks__rt_numel(y);
    float *buf = malloc((size_t)count * sizeof(float) + 1);
    assert_non_null(buf);
    y->data = buf;
    y->size_bytes = (size_t)count * sizeof(float);
    assert_null(ctx.scratch_bytes ? "unexpected scratch" : NULL);
    ks_status st = k->run(&ctx);
    if (st) print_error("ref: %s\n", g_err);
    assert_int_equal(st, KS_STATUS_OK);
    *y_out = buf;
    *count_out = count;
    return 1;
}

/* Runs every supported variant of node->op on the same inputs and compares with want. */
static void check_variants(const ks__node *node, ks__rt_tensor **ins, uint32_t nin,
                           const ks__rt_tensor *yref, const float *want, int64_t count,
                           double reduce_len, const char *what) {
    /* fp16-arithmetic variants (a one-channel depthwise conv is also a groups-1 conv) run only
     * in KS_PRECISION_FP16 sessions and have their own tolerance: test_impl_f16 */
    uint32_t isa = ks__cpu_isa() & ~(uint32_t)KS_ISA_NEON_FP16;
    double tol = 1e-5 * sqrt(reduce_len < 1 ? 1 : reduce_len);
    for (const ks__impl *const *p = ks__impl_list(); *p; p++) {
        const ks__impl *im = *p;
        if (im->op != node->op || (im->isa & ~isa) != 0) continue;
        ks__rt_tensor y = *yref;
        float *got = malloc((size_t)count * sizeof(float) + 1);
        assert_non_null(got);
        y.data = got;
        ks__rt_tensor *outp = &y;
        ks__kernel_ctx ctx = make_ctx(node, ins, nin, &outp);
        ctx.num_threads = 3;
        double c = im->cost(&ctx);
        if (c < 0 && is_own(im)) {
            print_error("%s: %s declined\n", what, im->name);
            fail();
        }
        if (c < 0) {
            free(got);
            continue;
        }
        size_t packed_bytes = 0;
        assert_int_equal(im->plan(&ctx, &packed_bytes), KS_STATUS_OK);
        void *packed = packed_bytes ? aligned_alloc(64, (packed_bytes + 63) / 64 * 64) : NULL;
        void *scratch =
            ctx.scratch_bytes ? aligned_alloc(64, (ctx.scratch_bytes + 63) / 64 * 64) : NULL;
        ctx.packed = packed, ctx.packed_bytes = packed_bytes, ctx.scratch = scratch;
        if (im->pack) assert_int_equal(im->pack(&ctx), KS_STATUS_OK);
        for (int threads = 1; threads <= 3; threads++) {
            for (int64_t i = 0; i < count; i++)
                got[i] = NAN;
            ctx.pool = threads == 1 ? NULL : threads == 2 ? g_pool2 : g_pool3;
            ks_status st = im->run(&ctx);
            if (st) print_error("%s: %s: %s\n", what, im->name, g_err);
            assert_int_equal(st, KS_STATUS_OK);
            for (int64_t i = 0; i < count; i++) {
                double d = fabs((double)got[i] - (double)want[i]);
                if (!(d <= tol * (1.0 + fabs((double)want[i])))) {
                    print_error("%s: %s threads %d: element %lld got %.8g want %.8g\n", what,
                                im->name, threads, (long long)i, (double)got[i], (double)want[i]);
                    fail();
                }
            }
            g_num_checked++;
        }
        free(packed);
        free(scratch);
        free(got);
    }
}

/* ---- depthwise conv ---- */

typedef struct dw_case {
    int64_t h, w, c, kh, kw, sh, sw, dil;
    int32_t pad_mode, pads[4], act, with_bias, with_res;
} dw_case;

static void run_dw(const dw_case *tc) {
    int64_t xd[4] = {1, tc->h, tc->w, tc->c}, wd[4] = {tc->c, tc->kh, tc->kw, 1}, bd[1] = {tc->c};
    float *x = malloc((size_t)(tc->h * tc->w * tc->c) * sizeof(float));
    float *w = malloc((size_t)(tc->c * tc->kh * tc->kw) * sizeof(float));
    float *b = malloc((size_t)tc->c * sizeof(float));
    float *slope = malloc((size_t)tc->c * sizeof(float));
    float *res = NULL;
    assert_true(x && w && b && slope);
    fill(x, tc->h * tc->w * tc->c);
    fill(w, tc->c * tc->kh * tc->kw);
    fill(b, tc->c);
    fill(slope, tc->c);
    ks__rt_tensor tx, tw, tb, ty, tr, ts;
    tensor(&tx, KS_DTYPE_F32, x, 4, xd);
    tensor(&tw, KS_DTYPE_F32, w, 4, wd);
    tensor(&tb, KS_DTYPE_F32, b, 1, bd);
    tensor(&ts, KS_DTYPE_F32, slope, 1, bd);
    ks__rt_tensor *ins[5] = {&tx, &tw, tc->with_bias ? &tb : NULL, NULL, NULL};
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_CONV2D;
    node.name = (char *)"dw";
    node.ip[0] = (int32_t)tc->sh, node.ip[1] = (int32_t)tc->sw;
    node.ip[2] = (int32_t)tc->dil, node.ip[3] = (int32_t)tc->dil;
    for (int i = 0; i < 4; i++)
        node.ip[4 + i] = tc->pads[i];
    node.ip[8] = tc->pad_mode;
    node.ip[9] = (int32_t)tc->c;
    node.ip[10] = tc->act;
    node.fp[0] = 0.125f;
    uint32_t nin = 3;
    if (tc->with_res) {
        /* the residual has the output's shape: infer it first without one */
        node.ip[10] = KS_ACT_NONE;
        ks__rt_tensor *outp = &ty;
        tensor(&ty, KS_DTYPE_F32, NULL, 0, NULL);
        ks__kernel_ctx ctx = make_ctx(&node, ins, 3, &outp);
        node.ip[10] = tc->act;
        if (ks__ref_prepare(&ctx) != KS_STATUS_OK) goto done;
        res = malloc((size_t)ks__rt_numel(&ty) * sizeof(float));
        assert_non_null(res);
        fill(res, ks__rt_numel(&ty));
        tensor(&tr, KS_DTYPE_F32, res, 4, ty.dims);
        ins[3] = &tr;
        nin = 4;
    }
    if (tc->act == KS_ACT_PRELU) ins[4] = &ts, nin = 5;
    float *want = NULL;
    int64_t count = 0;
    if (run_ref(&node, ins, nin, &ty, &want, &count)) {
        char what[160];
        snprintf(what, sizeof(what),
                 "dw h%lld w%lld c%lld k%lldx%lld s%lld,%lld d%lld pad%d act%d res%d",
                 (long long)tc->h, (long long)tc->w, (long long)tc->c, (long long)tc->kh,
                 (long long)tc->kw, (long long)tc->sh, (long long)tc->sw, (long long)tc->dil,
                 tc->pad_mode, tc->act, tc->with_res);
        check_variants(&node, ins, nin, &ty, want, count, (double)(tc->kh * tc->kw), what);
        free(want);
    }
done:
    free(x);
    free(w);
    free(b);
    free(slope);
    free(res);
}

static void test_dwconv(void **state) {
    (void)state;
    static const int64_t kernels[][2] = {{3, 3}, {5, 5}, {2, 2}, {1, 3}, {7, 7}};
    int n = 0;
    for (size_t ci = 0; ci < NUM_CHANNELS; ci++) {
        for (int64_t w = 1; w <= 19; w++) {
            for (int s = 1; s <= 2; s++) {
                for (int pm = 0; pm < KS_PAD_MODE_COUNT; pm++, n++) {
                    dw_case tc;
                    memset(&tc, 0, sizeof(tc));
                    const int64_t *k = kernels[n % 5 < 2 ? n % 5 : (n / 5) % 5];
                    tc.c = k_channels[ci], tc.w = w, tc.h = 1 + (int64_t)(rnd() % 6);
                    tc.kh = k[0], tc.kw = k[1], tc.sh = s, tc.sw = s;
                    tc.dil = (n % 11 == 0) ? 2 : 1;
                    tc.pad_mode = pm;
                    if (pm == KS_PAD_EXPLICIT)
                        for (int i = 0; i < 4; i++)
                            tc.pads[i] = (int32_t)(rnd() % (uint32_t)(k[i % 2 ? 1 : 0]));
                    tc.act = n % KS_ACT_COUNT;
                    tc.with_bias = n % 3 != 0;
                    tc.with_res = n % 4 == 1;
                    run_dw(&tc);
                }
            }
        }
    }
    assert_true(g_num_checked > 0 || !(ks__cpu_isa() & KS_ISA_AVX2));
}

/* A large-ish MobileNet-like layer that spans several indirection tiles and threads. */
static void test_dwconv_large(void **state) {
    (void)state;
    dw_case tc = {.h = 19,
                  .w = 131,
                  .c = 40,
                  .kh = 3,
                  .kw = 3,
                  .sh = 1,
                  .sw = 1,
                  .dil = 1,
                  .pad_mode = KS_PAD_SAME_UPPER,
                  .act = KS_ACT_RELU6,
                  .with_bias = 1};
    run_dw(&tc);
    tc.sh = tc.sw = 2, tc.kh = tc.kw = 5, tc.c = 72;
    run_dw(&tc);
}

/* The row kernels' shapes: every channel count 1..40 (vector tails, the C == 16 special case)
 * and width 1..19 (pixel-group tails, all-border rows), 3x3 and 5x5, stride 1 and 2 (and a
 * vertical-only stride), with tall enough images that interior rows exist. */
static void test_dwconv_row(void **state) {
    (void)state;
    int n = 0;
    for (int64_t c = 1; c <= 40; c++) {
        for (int64_t w = 1; w <= 19; w++) {
            for (int k = 3; k <= 5; k += 2) {
                for (int s = 1; s <= 2; s++, n++) {
                    dw_case tc;
                    memset(&tc, 0, sizeof(tc));
                    tc.c = c, tc.w = w, tc.h = k + 1 + (int64_t)(rnd() % 4);
                    tc.kh = tc.kw = k, tc.sh = n % 7 == 3 ? 3 - s : s, tc.sw = s, tc.dil = 1;
                    tc.pad_mode = n % 5 == 4   ? KS_PAD_VALID
                                  : n % 5 == 3 ? KS_PAD_EXPLICIT
                                               : KS_PAD_SAME_UPPER;
                    if (tc.pad_mode == KS_PAD_EXPLICIT)
                        for (int i = 0; i < 4; i++)
                            tc.pads[i] = (int32_t)(rnd() % (uint32_t)k);
                    tc.act = (n / 3) % KS_ACT_COUNT;
                    tc.with_bias = n % 3 != 0;
                    tc.with_res = n % 4 == 2;
                    run_dw(&tc);
                }
            }
        }
    }
    /* rows of 8..17 interior pixels at stride 2 (every pixel-group tail of the row kernels) */
    static const int64_t chans[] = {1, 8, 16, 17, 40};
    for (size_t ci = 0; ci < sizeof(chans) / sizeof(chans[0]); ci++) {
        for (int64_t w = 17; w <= 40; w++, n++) {
            int k = n % 2 ? 5 : 3;
            dw_case tc = {.h = 7,
                          .w = w,
                          .c = chans[ci],
                          .kh = k,
                          .kw = k,
                          .sh = 2,
                          .sw = 2,
                          .dil = 1,
                          .pad_mode = KS_PAD_SAME_UPPER};
            tc.act = n % KS_ACT_COUNT;
            tc.with_bias = 1;
            tc.with_res = n % 3 == 0;
            run_dw(&tc);
        }
    }
}

/* Quantized / non-depthwise / multiplier > 1 convs are declined. */
static void test_dwconv_declines(void **state) {
    (void)state;
    float x[2 * 3 * 3 * 4] = {0}, w[8 * 9] = {0};
    int64_t xd[4] = {1, 3, 3, 4}, wd[4] = {8, 3, 3, 1}, wd2[4] = {4, 3, 3, 4};
    ks__rt_tensor tx, tw, ty;
    tensor(&tx, KS_DTYPE_F32, x, 4, xd);
    tensor(&tw, KS_DTYPE_F32, w, 4, wd);
    int64_t yd[4] = {1, 1, 1, 8};
    tensor(&ty, KS_DTYPE_F32, NULL, 4, yd);
    ks__rt_tensor *ins[2] = {&tx, &tw}, *outp = &ty;
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_CONV2D;
    node.name = (char *)"dw";
    node.ip[8] = KS_PAD_VALID;
    node.ip[9] = 4; /* multiplier 2 */
    ks__kernel_ctx ctx = make_ctx(&node, ins, 2, &outp);
    for (const ks__impl *const *p = ks__impl_list(); *p; p++)
        if ((*p)->op == KS_OP_CONV2D && is_own(*p)) assert_true((*p)->cost(&ctx) < 0);
    node.ip[9] = 1; /* a dense conv */
    tensor(&tw, KS_DTYPE_F32, w, 4, wd2);
    yd[3] = 4;
    tensor(&ty, KS_DTYPE_F32, NULL, 4, yd);
    for (const ks__impl *const *p = ks__impl_list(); *p; p++)
        if ((*p)->op == KS_OP_CONV2D && is_own(*p)) assert_true((*p)->cost(&ctx) < 0);
    /* quantized input */
    node.ip[9] = 4;
    tensor(&tw, KS_DTYPE_F32, w, 4, (int64_t[4]){4, 3, 3, 1});
    float s = 0.5f;
    int32_t zp = 0;
    ks__quant q = {.count = 1, .scales = &s, .zero_points = &zp};
    tx.dtype = KS_DTYPE_U8;
    tx.quant = &q;
    for (const ks__impl *const *p = ks__impl_list(); *p; p++)
        if (is_own(*p)) assert_true((*p)->cost(&ctx) < 0);
    /* the selection picks a fast variant for a float depthwise conv when the ISA is there */
    tx.dtype = KS_DTYPE_F32;
    tx.quant = &g_noquant;
    tensor(&ty, KS_DTYPE_F32, NULL, 4, (int64_t[4]){1, 1, 1, 4});
    const ks__impl *sel = ks__impl_select(&ctx, ks__cpu_isa());
    if (ks__cpu_isa() & KS_ISA_AVX2) {
        assert_non_null(sel);
        assert_true(strstr(sel->name, "dwconv") != NULL);
    }
    assert_null(ks__impl_select(&ctx, 0));
}

/* ---- pooling ---- */

typedef struct pool_case {
    int64_t h, w, c, kh, kw, sh, sw;
    int32_t pad_mode, pads[4], kind, cip, act, ceil_mode;
} pool_case;

static void run_pool(const pool_case *tc) {
    int64_t xd[4] = {2, tc->h, tc->w, tc->c};
    int64_t xn = 2 * tc->h * tc->w * tc->c;
    float *x = malloc((size_t)xn * sizeof(float));
    assert_non_null(x);
    fill(x, xn);
    ks__rt_tensor tx, ty;
    tensor(&tx, KS_DTYPE_F32, x, 4, xd);
    ks__rt_tensor *ins[1] = {&tx};
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_POOL2D;
    node.name = (char *)"pool";
    node.ip[0] = (int32_t)tc->kh, node.ip[1] = (int32_t)tc->kw;
    node.ip[2] = (int32_t)tc->sh, node.ip[3] = (int32_t)tc->sw;
    for (int i = 0; i < 4; i++)
        node.ip[4 + i] = tc->pads[i];
    node.ip[8] = tc->pad_mode, node.ip[9] = tc->kind, node.ip[10] = tc->cip;
    node.ip[11] = tc->act, node.ip[12] = tc->ceil_mode;
    node.fp[0] = 0.25f;
    float *want = NULL;
    int64_t count = 0;
    if (run_ref(&node, ins, 1, &ty, &want, &count)) {
        char what[160];
        snprintf(what, sizeof(what),
                 "pool h%lld w%lld c%lld k%lldx%lld s%lld pad%d kind%d cip%d ceil%d act%d",
                 (long long)tc->h, (long long)tc->w, (long long)tc->c, (long long)tc->kh,
                 (long long)tc->kw, (long long)tc->sh, tc->pad_mode, tc->kind, tc->cip,
                 tc->ceil_mode, tc->act);
        double len = tc->kh ? (double)(tc->kh * tc->kw) : (double)(tc->h * tc->w);
        check_variants(&node, ins, 1, &ty, want, count, len, what);
        free(want);
    }
    free(x);
}

static void test_pool(void **state) {
    (void)state;
    static const int64_t kernels[][2] = {{2, 2}, {3, 3}, {3, 2}, {1, 1}, {0, 0}};
    int n = 0;
    for (size_t ci = 0; ci < NUM_CHANNELS; ci++) {
        for (int64_t w = 1; w <= 19; w++) {
            for (int s = 1; s <= 2; s++) {
                for (int pm = 0; pm < KS_PAD_MODE_COUNT; pm++, n++) {
                    pool_case tc;
                    memset(&tc, 0, sizeof(tc));
                    const int64_t *k = kernels[n % 5];
                    tc.c = k_channels[ci], tc.w = w, tc.h = 1 + (int64_t)(rnd() % 5);
                    tc.kh = k[0], tc.kw = k[1], tc.sh = s, tc.sw = s;
                    tc.pad_mode = pm;
                    tc.kind = (n / 5) % 2;
                    tc.cip = (n / 10) % 2;
                    tc.act = n % KS_ACT_COUNT;
                    if (pm == KS_PAD_EXPLICIT && k[0] > 0) {
                        for (int i = 0; i < 4; i++)
                            tc.pads[i] = (int32_t)(rnd() % (uint32_t)(k[i % 2 ? 1 : 0]));
                        tc.ceil_mode = (n / 3) % 2;
                    }
                    run_pool(&tc);
                }
            }
        }
    }
    /* global average / max over a big window with many channels (channel-chunk threading) */
    pool_case g = {.h = 7, .w = 9, .c = 1280 + 5, .kind = 1, .pad_mode = KS_PAD_VALID};
    run_pool(&g);
    g.kind = 0;
    run_pool(&g);
}

/* ---- transpose conv ---- */

typedef struct deconv_case {
    int64_t h, w, ci, co, kh, kw, sh, sw;
    int32_t pad_mode, pads[4], out_pad[2], act, with_bias;
} deconv_case;

static void run_deconv(const deconv_case *tc) {
    int64_t xd[4] = {1, tc->h, tc->w, tc->ci}, wd[4] = {tc->co, tc->kh, tc->kw, tc->ci};
    int64_t bd[1] = {tc->co};
    int64_t xn = tc->h * tc->w * tc->ci, wn = tc->co * tc->kh * tc->kw * tc->ci;
    float *x = malloc((size_t)xn * sizeof(float)), *w = malloc((size_t)wn * sizeof(float));
    float *b = malloc((size_t)tc->co * sizeof(float));
    assert_true(x && w && b);
    fill(x, xn);
    fill(w, wn);
    fill(b, tc->co);
    ks__rt_tensor tx, tw, tb, ty;
    tensor(&tx, KS_DTYPE_F32, x, 4, xd);
    tensor(&tw, KS_DTYPE_F32, w, 4, wd);
    tensor(&tb, KS_DTYPE_F32, b, 1, bd);
    ks__rt_tensor *ins[3] = {&tx, &tw, tc->with_bias ? &tb : NULL};
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_CONV2D_TRANSPOSE;
    node.name = (char *)"deconv";
    node.ip[0] = (int32_t)tc->sh, node.ip[1] = (int32_t)tc->sw;
    for (int i = 0; i < 4; i++)
        node.ip[2 + i] = tc->pads[i];
    node.ip[6] = tc->pad_mode, node.ip[7] = tc->act;
    node.ip[8] = tc->out_pad[0], node.ip[9] = tc->out_pad[1];
    node.fp[0] = 0.5f;
    float *want = NULL;
    int64_t count = 0;
    if (run_ref(&node, ins, 3, &ty, &want, &count)) {
        char what[160];
        snprintf(what, sizeof(what), "deconv h%lld w%lld ci%lld co%lld k%lldx%lld s%lld,%lld pad%d",
                 (long long)tc->h, (long long)tc->w, (long long)tc->ci, (long long)tc->co,
                 (long long)tc->kh, (long long)tc->kw, (long long)tc->sh, (long long)tc->sw,
                 tc->pad_mode);
        check_variants(&node, ins, 3, &ty, want, count, (double)(tc->kh * tc->kw * tc->ci), what);
        free(want);
    }
    free(x);
    free(w);
    free(b);
}

static void test_deconv(void **state) {
    (void)state;
    static const int64_t kernels[][2] = {{2, 2}, {3, 3}, {4, 4}, {1, 3}, {5, 2}};
    static const int64_t couts[] = {1, 3, 8, 16, 17, 33};
    int n = 0;
    for (size_t ci = 0; ci < NUM_CHANNELS; ci++) {
        for (int64_t w = 1; w <= 17; w += 2) {
            for (int s = 1; s <= 3; s++) {
                for (int pm = 0; pm < KS_PAD_MODE_COUNT; pm++, n++) {
                    deconv_case tc;
                    memset(&tc, 0, sizeof(tc));
                    const int64_t *k = kernels[n % 5];
                    tc.ci = k_channels[ci], tc.co = couts[(n / 4) % 6];
                    tc.w = w, tc.h = 1 + (int64_t)(rnd() % 4);
                    tc.kh = k[0], tc.kw = k[1], tc.sh = s, tc.sw = s == 3 ? 2 : s;
                    tc.pad_mode = pm;
                    if (pm == KS_PAD_EXPLICIT) {
                        for (int i = 0; i < 4; i++)
                            tc.pads[i] = (int32_t)(rnd() % (uint32_t)(k[i % 2 ? 1 : 0]));
                        tc.out_pad[0] = (int32_t)(rnd() % (uint32_t)tc.sh);
                        tc.out_pad[1] = (int32_t)(rnd() % (uint32_t)tc.sw);
                    }
                    tc.act = n % KS_ACT_COUNT;
                    tc.with_bias = n % 4 != 1;
                    run_deconv(&tc);
                }
            }
        }
    }
    /* selfie segmentation's last layer: 2x upsampling, 16 -> 1 channels, SAME */
    deconv_case selfie = {.h = 9,
                          .w = 13,
                          .ci = 16,
                          .co = 1,
                          .kh = 2,
                          .kw = 2,
                          .sh = 2,
                          .sw = 2,
                          .pad_mode = KS_PAD_SAME_UPPER,
                          .act = KS_ACT_NONE,
                          .with_bias = 1};
    run_deconv(&selfie);
}

static int setup(void **state) {
    (void)state;
    if (ks__pool_create(NULL, 2, &g_pool2) != KS_STATUS_OK) return -1;
    return ks__pool_create(NULL, 3, &g_pool3) == KS_STATUS_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    print_message("%d variant runs compared\n", g_num_checked);
    ks__pool_destroy(g_pool2);
    ks__pool_destroy(g_pool3);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dwconv),     cmocka_unit_test(test_dwconv_large),
        cmocka_unit_test(test_dwconv_row), cmocka_unit_test(test_dwconv_declines),
        cmocka_unit_test(test_pool),       cmocka_unit_test(test_deconv),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
