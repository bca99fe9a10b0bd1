/* AArch64 NEON fp32 variants (impls_arm.inc) against the reference kernels on odd shapes that hit
 * every tail: channels not multiple of 4/8, widths 1..17, stride 2, dilation, every padding mode,
 * every fused activation, F16 weights, absent bias; each run single-threaded and on a 3-thread
 * pool (results must be identical). On other architectures the test skips (exit 77). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#if defined(__aarch64__)

#include "impl.h"

/* f32 tolerance: relative 1e-5 scaled by sqrt(number of accumulated terms). */
#define TOL_F32 1e-5

typedef struct tens {
    ks__rt_tensor t;
    ks__quant q;
} tens;

static void mk(tens *v, ks_dtype dt, void *data, int32_t rank, const int64_t *dims) {
    memset(v, 0, sizeof(*v));
    v->t.dtype = dt;
    v->t.rank = rank;
    for (int32_t i = 0; i < rank; i++)
        v->t.dims[i] = dims[i];
    v->t.data = data;
    v->t.quant = &v->q;
    v->t.size_bytes = data ? (size_t)ks__rt_numel(&v->t) * ks_dtype_size(dt) : 0;
}

static uint32_t g_rng = 2024u;
static float frand(void) { /* [-1, 1) */
    g_rng = g_rng * 1664525u + 1013904223u;
    return (float)(g_rng >> 8) / (float)(1u << 23) - 1.0f;
}
static float *rand_buf(size_t n, float scale) {
    float *p = malloc((n ? n : 1) * sizeof(float));
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = frand() * scale;
    return p;
}

/* Built but not listed in impls_arm.inc (see there). */
extern const ks__impl ks_f32_conv__neon_8x8;

static const ks__impl *find_impl(const char *name) {
    if (strcmp(name, ks_f32_conv__neon_8x8.name) == 0) return &ks_f32_conv__neon_8x8;
    for (const ks__impl *const *p = ks__impl_list(); *p; p++)
        if (strcmp((*p)->name, name) == 0) return *p;
    fail_msg("variant %s is not in impls.inc", name);
    return NULL;
}

static ks__pool *g_pool;
static char g_err[512];

static ks__kernel_ctx make_ctx(const ks__node *node, ks__rt_tensor **in, uint32_t nin,
                               ks__rt_tensor **out) {
    ks__kernel_ctx ctx;
    memset(&ctx, 0, sizeof(ctx));
    ctx.node = node;
    ctx.node_index = 3;
    ctx.in = in;
    ctx.num_inputs = nin;
    ctx.out = out;
    ctx.num_outputs = 1;
    ctx.err = g_err;
    ctx.err_cap = sizeof(g_err);
    return ctx;
}

/* Runs the reference kernel into ref_out; returns the output element count. Output buffers are
 * sized by the caller through cap. */
static int64_t run_ref(const ks__node *node, ks__rt_tensor **in, uint32_t nin, tens *out,
                       float *buf, size_t cap) {
    ks__rt_tensor *o = &out->t;
    ks__kernel_ctx ctx = make_ctx(node, in, nin, &o);
    const ks__kernel *k = &ks__ref_kernels()->k[node->op];
    assert_int_equal(ks__ref_prepare(&ctx), KS_STATUS_OK);
    int64_t numel = ks__rt_numel(o);
    assert_true((size_t)numel <= cap);
    void *scratch = ctx.scratch_bytes ? malloc(ctx.scratch_bytes) : NULL;
    ctx.scratch = scratch;
    o->data = buf;
    o->size_bytes = (size_t)numel * sizeof(float);
    ks_status st = k->run(&ctx);
    free(scratch);
    assert_int_equal(st, KS_STATUS_OK);
    return numel;
}

/* Runs the variant (plan/pack/run) with `pool` into buf. Output tensor shape comes from the
 * reference infer (already run on `out`). Returns the status of run. */
static ks_status run_impl(const ks__impl *im, const ks__node *node, ks__rt_tensor **in,
                          uint32_t nin, tens *out, float *buf, ks__pool *pool) {
    ks__rt_tensor *o = &out->t;
    o->data = NULL; /* as at reshape: outputs have no data yet */
    ks__kernel_ctx ctx = make_ctx(node, in, nin, &o);
    ctx.pool = pool;
    ctx.num_threads = ks__pool_threads(pool);
    double cost = im->cost(&ctx);
    if (cost < 0) fail_msg("%s refused node (cost %g)", im->name, cost);
    size_t packed_bytes = 0;
    assert_int_equal(im->plan(&ctx, &packed_bytes), KS_STATUS_OK);
    void *packed = NULL, *scratch = NULL;
    if (packed_bytes) {
        packed = aligned_alloc(64, (packed_bytes + 63) / 64 * 64);
        assert_non_null(packed);
        ctx.packed = packed;
        ctx.packed_bytes = packed_bytes;
        assert_non_null(im->pack);
        assert_int_equal(im->pack(&ctx), KS_STATUS_OK);
    }
    if (ctx.scratch_bytes) {
        scratch = aligned_alloc(64, (ctx.scratch_bytes + 63) / 64 * 64);
        assert_non_null(scratch);
    }
    ctx.scratch = scratch;
    o->data = buf;
    ks_status st = im->run(&ctx);
    free(packed);
    free(scratch);
    return st;
}

static void compare(const char *what, const float *got, const float *want, int64_t n,
                    double terms) {
    double tol = TOL_F32 * sqrt(terms > 1 ? terms : 1);
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (!(d <= tol * (1.0 + fabs((double)want[i])))) {
            print_error("%s: element %lld: got %.9g want %.9g (tol %g)\n", what, (long long)i,
                        (double)got[i], (double)want[i], tol);
            fail();
        }
    }
}

/* Reference vs. variant single-threaded vs. variant on the pool (bit-identical to single). */
static void check_variant(const char *impl_name, const ks__node *node, ks__rt_tensor **in,
                          uint32_t nin, double terms, const char *what) {
    const ks__impl *im = find_impl(impl_name);
    const size_t cap = 1 << 18;
    float *want = malloc(cap * sizeof(float)), *got1 = malloc(cap * sizeof(float)),
          *gotn = malloc(cap * sizeof(float));
    assert_true(want && got1 && gotn);
    tens out;
    mk(&out, KS_DTYPE_F32, NULL, 0, NULL);
    int64_t n = run_ref(node, in, nin, &out, want, cap);
    for (int64_t i = 0; i < n; i++)
        got1[i] = gotn[i] = NAN;
    assert_int_equal(run_impl(im, node, in, nin, &out, got1, NULL), KS_STATUS_OK);
    compare(what, got1, want, n, terms);
    assert_int_equal(run_impl(im, node, in, nin, &out, gotn, g_pool), KS_STATUS_OK);
    if (memcmp(got1, gotn, (size_t)n * sizeof(float)) != 0)
        fail_msg("%s: %s differs between 1 and %u threads", what, impl_name,
                 ks__pool_threads(g_pool));
    free(want);
    free(got1);
    free(gotn);
}

static ks__node node_of(ks__op op) {
    ks__node n;
    memset(&n, 0, sizeof(n));
    n.op = (uint32_t)op;
    n.name = (char *)"n";
    return n;
}

static const int32_t k_acts[] = {KS_ACT_NONE,         KS_ACT_RELU,       KS_ACT_RELU6,
                                 KS_ACT_RELU_N1_TO_1, KS_ACT_TANH,       KS_ACT_SIGMOID,
                                 KS_ACT_LEAKY_RELU,   KS_ACT_HARD_SWISH, KS_ACT_SILU};
#define NUM_ACTS (sizeof(k_acts) / sizeof(k_acts[0]))

/* ---- CONV2D / depthwise ---- */

typedef struct conv_case {
    int64_t n, h, w, ci, co, kh, kw;
    int32_t sh, sw, dh, dw, pad_mode, pads[4], groups;
    int f16_weights, no_bias;
} conv_case;

static void run_conv_case(const char *impl_name, const conv_case *cc, int32_t act) {
    int64_t icg = cc->groups > 1 ? cc->ci / cc->groups : cc->ci;
    int64_t xd[4] = {cc->n, cc->h, cc->w, cc->ci}, wd[4] = {cc->co, cc->kh, cc->kw, icg},
            bd[1] = {cc->co};
    size_t xn = (size_t)(cc->n * cc->h * cc->w * cc->ci),
           wn = (size_t)(cc->co * cc->kh * cc->kw * icg);
    float *x = rand_buf(xn, 2.0f), *w = rand_buf(wn, 1.0f), *b = rand_buf((size_t)cc->co, 1.0f);
    uint16_t *wh = NULL;
    tens tx, tw, tb;
    mk(&tx, KS_DTYPE_F32, x, 4, xd);
    if (cc->f16_weights) {
        wh = malloc(wn * sizeof(uint16_t));
        assert_non_null(wh);
        for (size_t i = 0; i < wn; i++)
            wh[i] = ks__f32_to_f16(w[i]);
        mk(&tw, KS_DTYPE_F16, wh, 4, wd);
    } else {
        mk(&tw, KS_DTYPE_F32, w, 4, wd);
    }
    mk(&tb, KS_DTYPE_F32, b, 1, bd);
    ks__node node = node_of(KS_OP_CONV2D);
    node.ip[0] = cc->sh, node.ip[1] = cc->sw, node.ip[2] = cc->dh, node.ip[3] = cc->dw;
    for (int i = 0; i < 4; i++)
        node.ip[4 + i] = cc->pads[i];
    node.ip[8] = cc->pad_mode;
    node.ip[9] = cc->groups;
    node.ip[10] = act;
    node.fp[0] = 0.125f;
    ks__rt_tensor *in[3] = {&tx.t, &tw.t, cc->no_bias ? NULL : &tb.t};
    char what[160];
    snprintf(what, sizeof(what),
             "conv n%lld h%lld w%lld ci%lld co%lld k%lldx%lld s%d,%d d%d,%d pad%d g%d act%d",
             (long long)cc->n, (long long)cc->h, (long long)cc->w, (long long)cc->ci,
             (long long)cc->co, (long long)cc->kh, (long long)cc->kw, cc->sh, cc->sw, cc->dh,
             cc->dw, cc->pad_mode, cc->groups, act);
    check_variant(impl_name, &node, in, 3, (double)(cc->kh * cc->kw * icg), what);
    free(x);
    free(w);
    free(b);
    free(wh);
}

static void test_conv_gemm(void **state) {
    (void)state;
    static const int64_t cis[] = {1, 3, 4, 5, 8, 13, 17};
    static const int64_t cos_[] = {1, 7, 8, 9, 16, 19};
    int count = 0;
    for (size_t a = 0; a < sizeof(cis) / sizeof(cis[0]); a++) {
        for (size_t b = 0; b < sizeof(cos_) / sizeof(cos_[0]); b++, count++) {
            conv_case cc;
            memset(&cc, 0, sizeof(cc));
            cc.n = 1 + count % 2;
            cc.h = 1 + count % 6;
            cc.w = 1 + (count * 5) % 17;
            cc.ci = cis[a];
            cc.co = cos_[b];
            cc.kh = (count % 3 == 0) ? 1 : (count % 3 == 1 ? 3 : 5);
            cc.kw = count % 4 == 3 ? 1 : cc.kh;
            cc.sh = 1 + count % 2, cc.sw = 1 + (count / 2) % 2;
            cc.dh = count % 5 == 4 ? 2 : 1, cc.dw = cc.dh;
            cc.pad_mode = count % 3 == 2 ? KS_PAD_EXPLICIT : KS_PAD_SAME_UPPER;
            if (count % 7 == 6) cc.pad_mode = KS_PAD_SAME_LOWER;
            cc.pads[0] = 1, cc.pads[1] = 2, cc.pads[2] = 2, cc.pads[3] = 0;
            if (cc.pad_mode == KS_PAD_EXPLICIT) {
                int64_t keh = (cc.kh - 1) * cc.dh + 1, kew = (cc.kw - 1) * cc.dw + 1;
                if (cc.h + 3 < keh) cc.h = keh;
                if (cc.w + 2 < kew) cc.w = kew;
            }
            cc.f16_weights = count % 5 == 1;
            cc.no_bias = count % 4 == 1;
            run_conv_case("ks_f32_conv__neon_8x8", &cc, k_acts[count % NUM_ACTS]);
        }
    }
    /* A bigger 1x1 and a 3x3 VALID with many channels (several panels and tiles). */
    conv_case big = {1, 9, 11, 40, 70, 1, 1, 1, 1, 1, 1, KS_PAD_VALID, {0, 0, 0, 0}, 1, 0, 0};
    run_conv_case("ks_f32_conv__neon_8x8", &big, KS_ACT_RELU6);
    conv_case big3 = {1, 10, 13, 24, 33, 3, 3, 2, 2, 1, 1, KS_PAD_VALID, {0, 0, 0, 0}, 1, 0, 0};
    run_conv_case("ks_f32_conv__neon_8x8", &big3, KS_ACT_HARD_SWISH);
    /* Layer shapes of selfie_segmentation (1x1 expand/project convs). */
    conv_case s1 = {1, 32, 32, 88, 24, 1, 1, 1, 1, 1, 1, KS_PAD_SAME_UPPER, {0, 0, 0, 0}, 1, 0, 0};
    run_conv_case("ks_f32_conv__neon_8x8", &s1, KS_ACT_NONE);
    conv_case s2 = {1, 16, 16, 96, 32, 1, 1, 1, 1, 1, 1, KS_PAD_SAME_UPPER, {0, 0, 0, 0}, 1, 0, 0};
    run_conv_case("ks_f32_conv__neon_8x8", &s2, KS_ACT_NONE);
}

static void test_conv_dw(void **state) {
    (void)state;
    static const int64_t cs[] = {1, 3, 4, 7, 8, 12, 13, 19, 32};
    int count = 0;
    for (size_t a = 0; a < sizeof(cs) / sizeof(cs[0]); a++) {
        for (int v = 0; v < 6; v++, count++) {
            conv_case cc;
            memset(&cc, 0, sizeof(cc));
            cc.n = 1 + count % 2;
            cc.h = 1 + (count * 3) % 9;
            cc.w = 1 + (count * 7) % 17;
            cc.ci = cc.co = cc.groups = (int32_t)cs[a];
            cc.kh = v < 2 ? 3 : (v < 4 ? 5 : (v == 4 ? 3 : 2));
            cc.kw = v == 4 ? 1 : cc.kh;
            cc.sh = cc.sw = 1 + v % 2;
            cc.dh = cc.dw = count % 7 == 5 ? 2 : 1;
            cc.pad_mode = count % 3 == 0 ? KS_PAD_EXPLICIT : KS_PAD_SAME_UPPER;
            cc.pads[0] = 1, cc.pads[1] = 0, cc.pads[2] = 2, cc.pads[3] = 1;
            if (cc.pad_mode == KS_PAD_EXPLICIT) {
                int64_t keh = (cc.kh - 1) * cc.dh + 1, kew = (cc.kw - 1) * cc.dw + 1;
                if (cc.h + 3 < keh) cc.h = keh;
                if (cc.w + 1 < kew) cc.w = kew;
            }
            cc.f16_weights = count % 5 == 2;
            cc.no_bias = count % 4 == 3;
            run_conv_case("ks_f32_dwconv__neon_c4", &cc, k_acts[count % NUM_ACTS]);
        }
    }
}

/* The GEMM variant must refuse what it does not do: grouped convs and quantized inputs; the
 * depthwise one refuses non-depthwise convs. */
static void test_refusals(void **state) {
    (void)state;
    float x[2 * 2 * 4] = {0}, w[4 * 1 * 1 * 2] = {0}, y[16];
    int64_t xd[4] = {1, 2, 2, 4}, wd[4] = {4, 1, 1, 2}, yd[4] = {1, 2, 2, 4};
    tens tx, tw, ty;
    mk(&tx, KS_DTYPE_F32, x, 4, xd);
    mk(&tw, KS_DTYPE_F32, w, 4, wd);
    mk(&ty, KS_DTYPE_F32, y, 4, yd);
    ks__node node = node_of(KS_OP_CONV2D);
    node.ip[9] = 2;
    ks__rt_tensor *in[2] = {&tx.t, &tw.t}, *out = &ty.t;
    ks__kernel_ctx ctx = make_ctx(&node, in, 2, &out);
    assert_true(find_impl("ks_f32_conv__neon_8x8")->cost(&ctx) < 0);
    assert_true(find_impl("ks_f32_dwconv__neon_c4")->cost(&ctx) < 0);
    node.ip[9] = 1;
    wd[3] = 4;
    mk(&tw, KS_DTYPE_F32, w, 4, wd);
    assert_true(find_impl("ks_f32_conv__neon_8x8")->cost(&ctx) >= 0);
    float scale = 0.5f;
    int32_t zp = 0;
    tx.t.dtype = KS_DTYPE_U8;
    tx.q.count = 1, tx.q.scales = &scale, tx.q.zero_points = &zp;
    assert_true(find_impl("ks_f32_conv__neon_8x8")->cost(&ctx) < 0);
}

/* ---- FULLY_CONNECTED ---- */

static void test_fc(void **state) {
    (void)state;
    static const int64_t ins[] = {1, 3, 7, 8, 17, 64};
    static const int64_t outs[] = {1, 5, 8, 13, 24};
    int count = 0;
    for (size_t a = 0; a < sizeof(ins) / sizeof(ins[0]); a++) {
        for (size_t b = 0; b < sizeof(outs) / sizeof(outs[0]); b++, count++) {
            int64_t rows = 1 + (count * 3) % 11, isz = ins[a], osz = outs[b];
            int64_t xd[3] = {1, rows, isz}, wd[2] = {osz, isz}, bd[1] = {osz};
            float *x = rand_buf((size_t)(rows * isz), 1.0f),
                  *w = rand_buf((size_t)(osz * isz), 1.0f), *bias = rand_buf((size_t)osz, 1.0f);
            tens tx, tw, tb;
            mk(&tx, KS_DTYPE_F32, x, 3, xd);
            mk(&tw, KS_DTYPE_F32, w, 2, wd);
            mk(&tb, KS_DTYPE_F32, bias, 1, bd);
            ks__node node = node_of(KS_OP_FULLY_CONNECTED);
            node.ip[0] = k_acts[count % NUM_ACTS];
            node.ip[1] = count % 2;
            node.fp[0] = 0.2f;
            ks__rt_tensor *in[3] = {&tx.t, &tw.t, count % 3 == 2 ? NULL : &tb.t};
            char what[96];
            snprintf(what, sizeof(what), "fc rows%lld in%lld out%lld act%d", (long long)rows,
                     (long long)isz, (long long)osz, node.ip[0]);
            check_variant("ks_f32_fc__neon_8x8", &node, in, 3, (double)isz, what);
            free(x);
            free(w);
            free(bias);
        }
    }
}

/* ---- ADD / MUL ---- */

static void run_binary(ks__op op, const char *impl_name, int32_t rank, const int64_t *ad,
                       int32_t brank, const int64_t *bd, int32_t act) {
    tens ta, tb;
    mk(&ta, KS_DTYPE_F32, NULL, rank, ad);
    mk(&tb, KS_DTYPE_F32, NULL, brank, bd);
    float *a = rand_buf((size_t)ks__rt_numel(&ta.t), 4.0f),
          *b = rand_buf((size_t)ks__rt_numel(&tb.t), 4.0f);
    ta.t.data = a, tb.t.data = b;
    ks__node node = node_of(op);
    node.ip[0] = act;
    node.fp[0] = 0.3f;
    ks__rt_tensor *in[2] = {&ta.t, &tb.t};
    char what[96];
    snprintf(what, sizeof(what), "%s rank %d/%d numel %lld/%lld act %d", impl_name, rank, brank,
             (long long)ks__rt_numel(&ta.t), (long long)ks__rt_numel(&tb.t), act);
    check_variant(impl_name, &node, in, 2, 1.0, what);
    free(a);
    free(b);
}

static void test_binary(void **state) {
    (void)state;
    static const struct {
        ks__op op;
        const char *name;
    } ops[] = {{KS_OP_ADD, "ks_f32_vadd__neon_u8"}, {KS_OP_MUL, "ks_f32_vmul__neon_u8"}};
    int count = 0;
    for (size_t o = 0; o < 2; o++) {
        for (int64_t c = 1; c <= 37; c += 3, count++) {
            int32_t act = k_acts[count % NUM_ACTS];
            int64_t full[4] = {1, 1 + count % 3, 1 + count % 5, c};
            int64_t scalar[1] = {1}, chan[1] = {c}, chan3[3] = {1, 1, c};
            run_binary(ops[o].op, ops[o].name, 4, full, 4, full, act);
            run_binary(ops[o].op, ops[o].name, 4, full, 1, scalar, act);
            run_binary(ops[o].op, ops[o].name, 1, scalar, 4, full, act);
            run_binary(ops[o].op, ops[o].name, 4, full, 1, chan, act);
            run_binary(ops[o].op, ops[o].name, 3, chan3, 4, full, act);
        }
        /* Large enough to split over threads. */
        int64_t big[2] = {3, 20011}, bigc[1] = {20011};
        run_binary(ops[o].op, ops[o].name, 2, big, 2, big, KS_ACT_RELU);
        run_binary(ops[o].op, ops[o].name, 2, big, 1, bigc, KS_ACT_NONE);
    }
    /* Other broadcasts are left to the reference kernel. */
    int64_t ad[2] = {3, 4}, bd[2] = {3, 1};
    tens ta, tb, ty;
    float a[12] = {0}, b[3] = {0}, y[12];
    mk(&ta, KS_DTYPE_F32, a, 2, ad);
    mk(&tb, KS_DTYPE_F32, b, 2, bd);
    mk(&ty, KS_DTYPE_F32, y, 2, ad);
    ks__node node = node_of(KS_OP_ADD);
    ks__rt_tensor *in[2] = {&ta.t, &tb.t}, *out = &ty.t;
    ks__kernel_ctx ctx = make_ctx(&node, in, 2, &out);
    assert_true(find_impl("ks_f32_vadd__neon_u8")->cost(&ctx) < 0);
}

/* ---- unary ---- */

static void test_unary(void **state) {
    (void)state;
    static const struct {
        ks__op op;
        const char *name;
    } ops[] = {{KS_OP_RELU, "ks_f32_relu__neon_u8"},
               {KS_OP_RELU6, "ks_f32_relu6__neon_u8"},
               {KS_OP_SIGMOID, "ks_f32_sigmoid__neon_u8"},
               {KS_OP_HARD_SWISH, "ks_f32_hswish__neon_u8"}};
    for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
        for (int64_t n = 1; n <= 41; n += 4) {
            int64_t d[2] = {1, n};
            tens tx;
            float *x = rand_buf((size_t)n, 12.0f);
            mk(&tx, KS_DTYPE_F32, x, 2, d);
            ks__node node = node_of(ops[o].op);
            ks__rt_tensor *in[1] = {&tx.t};
            check_variant(ops[o].name, &node, in, 1, 1.0, ops[o].name);
            free(x);
        }
        /* Extremes (sigmoid saturation and underflow) and a multi-thread size. */
        int64_t d[1] = {30000};
        float *x = rand_buf(30000, 100.0f);
        x[0] = -200.0f, x[1] = 200.0f, x[2] = -87.0f, x[3] = 88.0f, x[4] = 0.0f, x[5] = -0.0f;
        tens tx;
        mk(&tx, KS_DTYPE_F32, x, 1, d);
        ks__node node = node_of(ops[o].op);
        ks__rt_tensor *in[1] = {&tx.t};
        check_variant(ops[o].name, &node, in, 1, 1.0, ops[o].name);
        free(x);
    }
}

static int setup(void **state) {
    (void)state;
    return ks__pool_create(NULL, 3, &g_pool) == KS_STATUS_OK ? 0 : -1;
}
static int teardown(void **state) {
    (void)state;
    ks__pool_destroy(g_pool);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_gemm), cmocka_unit_test(test_conv_dw),
        cmocka_unit_test(test_refusals),  cmocka_unit_test(test_fc),
        cmocka_unit_test(test_binary),    cmocka_unit_test(test_unary),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

#else /* !__aarch64__ */

int main(void) {
    printf("SKIP: the NEON variants are only built for AArch64 (use scripts/test-arm64)\n");
    return 77;
}

#endif
