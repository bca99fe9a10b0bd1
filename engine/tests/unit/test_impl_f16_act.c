/* The ARMv8.2 fp16 kernels on F16 activations (the graphs of the fp16 pass, precision.h:
 * KS_PRECISION_FP16 stores the tensors between fp16 nodes in fp16) against the reference kernels
 * on the same F16 tensors (they compute in double and round the output once), and the pass
 * itself on a real model.
 *
 * Kernels: the GEMM (ks_f16_conv__neonfp16_8x8 with F16 x, y and residual), the depthwise conv
 * (ks_f16_dwconv__neonfp16_c8: 3x3, 5x5, 1x3, 7x7, stride 1 and 2, dilation, every padding mode,
 * channels 1..20 around the 8-lane block, residual, PRELU and every fused activation, narrow
 * images where no pixel is interior), CAST F32 <-> F16 (bit-exact), same-shape ADD / MUL and max /
 * average POOL2D, each on 1 and 3 threads (identical results).
 *
 * Tolerance: u = 2^-11. A depthwise output sums T = KH*KW fp16 products in two fp16 chains, adds
 * the fp16 bias and the residual and rounds; per element |got - want| <= L (T + 4) u S + u |want|
 * with S = sum |x||w| + |b| + |res| and L = 1.5 the steepest activation; the GEMM's bound is the
 * fp32-output one of test_impl_f16.c plus the output rounding. An indexing error is of the order
 * of the output and fails both these and the rel L2 checks.
 *
 * The kernel cases run on AArch64 (and skip on a CPU without fp16 arithmetic); the pass's cases
 * run everywhere: its graph checked, and run on the reference kernels against the F32 graph. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "convert.h"
#include "impl.h"
#include "ksm.h"
#include "src/model.h"
#include "src/precision.h"
#include "src/session.h"

static ks__pool *g_pool;

#if defined(__aarch64__)

#define U (1.0 / 2048.0)
#define L_ACT 1.5

extern const ks__impl ks_f16_conv__neonfp16_8x8;
extern const ks__impl ks_f16_dwconv__neonfp16_c8;
extern const ks__impl ks_f16_cast__neonfp16;
extern const ks__impl ks_f16_add__neonfp16;
extern const ks__impl ks_f16_mul__neonfp16;
extern const ks__impl ks_f16_pool2d__neonfp16;
extern const ks__impl ks_f16_transpose__neonfp16;
extern const ks__impl ks_f16_split__neonfp16;
extern const ks__impl ks_f16_pad__neonfp16;

static char g_err[512];
static uint32_t g_rng = 4242u;

static float frand(void) { /* [-1, 1) */
    g_rng = g_rng * 1664525u + 1013904223u;
    return (float)(g_rng >> 8) / (float)(1u << 23) - 1.0f;
}

typedef struct tens {
    ks__rt_tensor t;
    ks__quant q;
    ks__tensor def;
} tens;

/* A tensor of dtype dt over data (NULL: shaped by the reference); const: a graph constant. */
static void mk(tens *v, ks_dtype dt, void *data, int32_t rank, const int64_t *dims, bool cst) {
    memset(v, 0, sizeof(*v));
    v->t.dtype = dt;
    v->t.rank = rank;
    for (int32_t i = 0; i < rank; i++)
        v->t.dims[i] = dims[i];
    v->t.data = data;
    v->t.quant = &v->q;
    v->def.flags = cst ? KS__TENSOR_CONST : 0;
    v->t.def = &v->def;
    v->t.size_bytes = data ? (size_t)ks__rt_numel(&v->t) * ks_dtype_size(dt) : 0;
}

/* n random F16 values in [-amp, amp) (and their magnitudes as float, if abs_out) */
static uint16_t *rand16(size_t n, float amp, float *abs_out) {
    uint16_t *p = malloc(n * 2 + 2);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) {
        p[i] = ks__f32_to_f16(amp * frand());
        if (abs_out) abs_out[i] = fabsf(ks__f16_to_f32(p[i]));
    }
    return p;
}

static ks__kernel_ctx make_ctx(const ks__node *node, ks__rt_tensor **in, uint32_t nin,
                               ks__rt_tensor **out) {
    ks__kernel_ctx ctx;
    memset(&ctx, 0, sizeof(ctx));
    ctx.node = node;
    ctx.in = in;
    ctx.num_inputs = nin;
    ctx.out = out;
    ctx.num_outputs = 1;
    ctx.err = g_err;
    ctx.err_cap = sizeof(g_err);
    return ctx;
}

/* The reference kernel into buf (the output's dtype); returns the element count. */
static int64_t run_ref(const ks__node *node, ks__rt_tensor **in, uint32_t nin, tens *out,
                       void *buf) {
    ks__rt_tensor *o = &out->t;
    o->data = NULL;
    ks__kernel_ctx ctx = make_ctx(node, in, nin, &o);
    if (ks__ref_prepare(&ctx) != KS_STATUS_OK) fail_msg("reference: %s", g_err);
    void *scratch = ctx.scratch_bytes ? malloc(ctx.scratch_bytes) : NULL;
    ctx.scratch = scratch;
    o->data = buf;
    o->size_bytes = (size_t)ks__rt_numel(o) * ks_dtype_size(o->dtype);
    ks_status st = ks__ref_kernels()->k[node->op].run(&ctx);
    if (st != KS_STATUS_OK) fail_msg("reference run: %s", g_err);
    free(scratch);
    return ks__rt_numel(o);
}

/* The variant's cost, plan, pack and run into buf (out shaped by run_ref). */
static void run_impl(const ks__impl *im, const ks__node *node, ks__rt_tensor **in, uint32_t nin,
                     tens *out, void *buf, ks__pool *pool) {
    ks__rt_tensor *o = &out->t;
    o->data = NULL;
    ks__kernel_ctx ctx = make_ctx(node, in, nin, &o);
    ctx.pool = pool;
    ctx.num_threads = ks__pool_threads(pool);
    double cost = im->cost(&ctx);
    if (cost < 0) fail_msg("%s refused the node (cost %g)", im->name, cost);
    size_t packed_bytes = 0;
    assert_int_equal(im->plan(&ctx, &packed_bytes), KS_STATUS_OK);
    void *packed = packed_bytes ? aligned_alloc(64, (packed_bytes + 63) / 64 * 64) : NULL;
    void *scratch = aligned_alloc(64, (ctx.scratch_bytes + 63) / 64 * 64 + 64);
    assert_non_null(scratch);
    ctx.packed = packed;
    ctx.packed_bytes = packed_bytes;
    if (im->pack) assert_int_equal(im->pack(&ctx), KS_STATUS_OK);
    ctx.scratch = scratch;
    o->data = buf;
    assert_int_equal(im->run(&ctx), KS_STATUS_OK);
    free(packed);
    free(scratch);
}

static bool cpu_has_fp16(void) {
    return (ks__cpu_isa() & KS_ISA_NEON_FP16) != 0;
}

static void require_fp16(void) {
    if (!cpu_has_fp16()) {
        print_message("skipped: this CPU has no fp16 arithmetic (asimdhp)\n");
        skip();
    }
}

/* got (F16, 1 and 3 threads) against want (F16 from the reference): |d| <= coef * mag + u|want|
 * per element, rel L2 <= rel; the threads identical. */
static void compare16(const char *what, int64_t n, const uint16_t *want, const uint16_t *got1,
                      const uint16_t *gotn, const float *mag, double coef, double rel) {
    double e2 = 0, r2 = 0;
    for (int64_t i = 0; i < n; i++) {
        double w = ks__f16_to_f32(want[i]), g = ks__f16_to_f32(got1[i]);
        double d = fabs(g - w), tol = coef * (mag ? mag[i] : 0.0) + 2.0 * U * fabs(w) + 1e-7;
        if (!(d <= tol))
            fail_msg("%s: element %lld: got %.6g want %.6g (tol %.3g)", what, (long long)i, g, w,
                     tol);
        e2 += d * d, r2 += w * w;
    }
    double rl = r2 > 0 ? sqrt(e2 / r2) : sqrt(e2);
    if (!(rl <= rel)) fail_msg("%s: rel L2 %.3g > %.3g", what, rl, rel);
    if (memcmp(got1, gotn, (size_t)n * 2) != 0) fail_msg("%s: 1 and 3 threads differ", what);
}

/* ---- depthwise ---- */

typedef struct dw_case {
    int64_t n, h, w, c, kh, kw;
    int32_t s, d, pad_mode, act;
    int res, prelu, f16_weights;
} dw_case;

static void check_dw(const dw_case *dc) {
    int64_t xd[4] = {dc->n, dc->h, dc->w, dc->c}, wd[4] = {dc->c, dc->kh, dc->kw, 1},
            bd[1] = {dc->c};
    size_t xn = (size_t)(dc->n * dc->h * dc->w * dc->c), wn = (size_t)(dc->c * dc->kh * dc->kw);
    float *ax = malloc(xn * 4), *w = malloc(wn * 4), *aw = malloc(wn * 4);
    float *b = malloc((size_t)dc->c * 4), *ab = malloc((size_t)dc->c * 4);
    float *slope = malloc((size_t)dc->c * 4);
    uint16_t *x = rand16(xn, 2.0f, ax), *wh = malloc(wn * 2);
    assert_true(ax && w && aw && b && ab && slope && wh);
    for (size_t i = 0; i < wn; i++) {
        w[i] = frand();
        if (dc->f16_weights) w[i] = ks__f16_to_f32(wh[i] = ks__f32_to_f16(w[i]));
        aw[i] = fabsf(w[i]);
    }
    for (int64_t i = 0; i < dc->c; i++)
        ab[i] = fabsf(b[i] = frand()), slope[i] = 0.25f * frand();
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_CONV2D;
    node.name = (char *)"dw";
    node.fp[0] = 0.125f;
    node.ip[0] = node.ip[1] = dc->s;
    node.ip[2] = node.ip[3] = dc->d;
    node.ip[4] = 1, node.ip[5] = 2, node.ip[6] = 0, node.ip[7] = 1;
    node.ip[8] = dc->pad_mode;
    node.ip[9] = (int32_t)dc->c;
    node.ip[10] = dc->prelu ? KS_ACT_PRELU : dc->act;
    tens tx, tw, tb, ts, out, tax, taw, tab, aout;
    mk(&tx, KS_DTYPE_F16, x, 4, xd, false);
    mk(&tw, dc->f16_weights ? KS_DTYPE_F16 : KS_DTYPE_F32, dc->f16_weights ? (void *)wh : w, 4, wd,
       true);
    mk(&tb, KS_DTYPE_F32, b, 1, bd, true);
    mk(&ts, KS_DTYPE_F32, slope, 1, bd, true);
    mk(&out, KS_DTYPE_F16, NULL, 0, NULL, false);
    /* the output's shape first (the residual has it) */
    ks__rt_tensor *in0[3] = {&tx.t, &tw.t, &tb.t};
    uint16_t *want = malloc((size_t)1 << 22);
    assert_non_null(want);
    ks__node shape_node = node;
    shape_node.ip[10] = KS_ACT_NONE;
    int64_t n = run_ref(&shape_node, in0, 3, &out, want);
    float *ares = malloc((size_t)n * 4 + 4);
    uint16_t *res = rand16((size_t)n, 2.0f, ares);
    tens tr;
    mk(&tr, KS_DTYPE_F16, res, 4, out.t.dims, false);
    ks__rt_tensor *in[5] = {&tx.t, &tw.t, &tb.t, dc->res ? &tr.t : NULL, dc->prelu ? &ts.t : NULL};
    uint32_t nin = dc->prelu ? 5 : (dc->res ? 4 : 3);
    assert_int_equal(run_ref(&node, in, nin, &out, want), n);
    /* S: the reference on |x|, |w|, |b| (fp32 output), + |res| */
    ks__node anode = node;
    anode.ip[10] = KS_ACT_NONE;
    mk(&tax, KS_DTYPE_F32, ax, 4, xd, false);
    mk(&taw, KS_DTYPE_F32, aw, 4, wd, true);
    mk(&tab, KS_DTYPE_F32, ab, 1, bd, true);
    mk(&aout, KS_DTYPE_F32, NULL, 0, NULL, false);
    ks__rt_tensor *ain[3] = {&tax.t, &taw.t, &tab.t};
    float *mag = malloc((size_t)n * 4);
    assert_int_equal(run_ref(&anode, ain, 3, &aout, mag), n);
    if (dc->res)
        for (int64_t i = 0; i < n; i++)
            mag[i] += ares[i];
    uint16_t *got1 = malloc((size_t)n * 2), *gotn = malloc((size_t)n * 2);
    run_impl(&ks_f16_dwconv__neonfp16_c8, &node, in, nin, &out, got1, NULL);
    run_impl(&ks_f16_dwconv__neonfp16_c8, &node, in, nin, &out, gotn, g_pool);
    char what[160];
    snprintf(what, sizeof(what), "dw n%lld h%lld w%lld c%lld k%lldx%lld s%d d%d pad%d act%d res%d",
             (long long)dc->n, (long long)dc->h, (long long)dc->w, (long long)dc->c,
             (long long)dc->kh, (long long)dc->kw, dc->s, dc->d, dc->pad_mode, node.ip[10],
             dc->res);
    double coef = L_ACT * (double)(dc->kh * dc->kw + 4) * U;
    compare16(what, n, want, got1, gotn, mag, coef, 8.0 * U);
    free(ax), free(w), free(aw), free(b), free(ab), free(slope), free(x), free(wh);
    free(want), free(ares), free(res), free(mag), free(got1), free(gotn);
}

static void test_dwconv(void **state) {
    (void)state;
    require_fp16();
    static const int32_t acts[] = {KS_ACT_NONE,       KS_ACT_RELU,        KS_ACT_RELU6,
                                   KS_ACT_LEAKY_RELU, KS_ACT_HARD_SWISH,  KS_ACT_SILU,
                                   KS_ACT_SIGMOID,    KS_ACT_RELU_N1_TO_1};
    static const int64_t ks_[][2] = {{3, 3}, {5, 5}, {3, 3}, {1, 3}, {7, 7}};
    int count = 0;
    for (int64_t c = 1; c <= 20; c++)
        for (int v = 0; v < 5; v++, count++) {
            dw_case dc = {1 + count % 2,
                          3 + (count * 5) % 11,
                          2 + (count * 7) % 19,
                          c,
                          ks_[v][0],
                          ks_[v][1],
                          1 + (v == 2 || count % 7 == 3),
                          1,
                          count % 3 == 0 ? KS_PAD_SAME_UPPER
                                         : (count % 3 == 1 ? KS_PAD_EXPLICIT : KS_PAD_VALID),
                          acts[count % 8],
                          count % 4 == 1,
                          count % 11 == 5,
                          count % 5 == 2};
            if (count % 13 == 4) dc.d = 2;
            /* VALID and the explicit pads (1 + 0 rows, 2 + 1 columns) need the kernel's extent */
            int64_t eh = (dc.kh - 1) * dc.d + 1, ew = (dc.kw - 1) * dc.d + 1;
            if (dc.pad_mode == KS_PAD_VALID && (dc.h < eh || dc.w < ew))
                dc.pad_mode = KS_PAD_SAME_UPPER;
            if (dc.pad_mode == KS_PAD_EXPLICIT && (dc.h + 1 < eh || dc.w + 3 < ew))
                dc.pad_mode = KS_PAD_SAME_UPPER;
            check_dw(&dc);
        }
    /* wide rows (most pixels interior), the model shapes */
    dw_case wide = {1, 9, 40, 16, 3, 3, 1, 1, KS_PAD_SAME_UPPER, KS_ACT_RELU6, 1, 0, 0};
    check_dw(&wide);
    dw_case wide5 = {1, 8, 37, 24, 5, 5, 2, 1, KS_PAD_SAME_UPPER, KS_ACT_SILU, 0, 0, 1};
    check_dw(&wide5);
    print_message("depthwise: %d + 2 cases\n", count);
}

/* Not a depthwise conv, F32 activations, or too many taps: refused. */
static void test_dw_refusals(void **state) {
    (void)state;
    uint16_t x[64] = {0}, y[64];
    float w[16 * 4 * 65] = {0};
    int64_t xd[4] = {1, 2, 2, 16}, wd[4] = {16, 1, 1, 1}, yd[4] = {1, 2, 2, 16};
    tens tx, tw, ty;
    mk(&tx, KS_DTYPE_F16, x, 4, xd, false);
    mk(&tw, KS_DTYPE_F32, w, 4, wd, true);
    mk(&ty, KS_DTYPE_F16, y, 4, yd, false);
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_CONV2D;
    node.name = (char *)"dw";
    node.ip[9] = 16;
    ks__rt_tensor *in[2] = {&tx.t, &tw.t}, *out = &ty.t;
    ks__kernel_ctx ctx = make_ctx(&node, in, 2, &out);
    assert_true(ks_f16_dwconv__neonfp16_c8.cost(&ctx) >= 0);
    node.ip[9] = 1; /* groups 1 */
    assert_true(ks_f16_dwconv__neonfp16_c8.cost(&ctx) < 0);
    node.ip[9] = 16;
    tx.t.dtype = ty.t.dtype = KS_DTYPE_F32;
    assert_true(ks_f16_dwconv__neonfp16_c8.cost(&ctx) < 0);
    tx.t.dtype = ty.t.dtype = KS_DTYPE_F16;
    wd[1] = 5, wd[2] = 13; /* 65 taps */
    mk(&tw, KS_DTYPE_F32, w, 4, wd, true);
    assert_true(ks_f16_dwconv__neonfp16_c8.cost(&ctx) < 0);
    size_t packed = 0;
    assert_int_equal(ks_f16_dwconv__neonfp16_c8.plan(&ctx, &packed), KS_STATUS_INTERNAL);
}

/* ---- the GEMM on F16 activations ---- */

static void check_gemm16(int64_t h, int64_t w_, int64_t ci, int64_t co, int64_t k, int32_t s,
                         int32_t act, int res, int prelu) {
    int64_t xd[4] = {1, h, w_, ci}, wd[4] = {co, k, k, ci}, bd[1] = {co};
    size_t xn = (size_t)(h * w_ * ci), wn = (size_t)(co * k * k * ci);
    float *ax = malloc(xn * 4), *w = malloc(wn * 4), *aw = malloc(wn * 4);
    float *b = malloc((size_t)co * 4), *ab = malloc((size_t)co * 4), *sl = malloc((size_t)co * 4);
    uint16_t *x = rand16(xn, 2.0f, ax);
    for (size_t i = 0; i < wn; i++)
        aw[i] = fabsf(w[i] = frand());
    for (int64_t i = 0; i < co; i++)
        ab[i] = fabsf(b[i] = frand()), sl[i] = 0.25f * frand();
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_CONV2D;
    node.name = (char *)"conv";
    node.fp[0] = 0.125f;
    node.ip[0] = node.ip[1] = s;
    node.ip[2] = node.ip[3] = 1;
    node.ip[8] = KS_PAD_SAME_UPPER;
    node.ip[9] = 1;
    node.ip[10] = prelu ? KS_ACT_PRELU : act;
    tens tx, tw, tb, ts, out, tax, taw, tab, aout, tr;
    mk(&tx, KS_DTYPE_F16, x, 4, xd, false);
    mk(&tw, KS_DTYPE_F32, w, 4, wd, true);
    mk(&tb, KS_DTYPE_F32, b, 1, bd, true);
    mk(&ts, KS_DTYPE_F32, sl, 1, bd, true);
    mk(&out, KS_DTYPE_F16, NULL, 0, NULL, false);
    uint16_t *want = malloc((size_t)1 << 22);
    ks__rt_tensor *in0[3] = {&tx.t, &tw.t, &tb.t};
    ks__node shape_node = node;
    shape_node.ip[10] = KS_ACT_NONE;
    int64_t n = run_ref(&shape_node, in0, 3, &out, want);
    float *ares = malloc((size_t)n * 4 + 4);
    uint16_t *r = rand16((size_t)n, 2.0f, ares);
    mk(&tr, KS_DTYPE_F16, r, 4, out.t.dims, false);
    ks__rt_tensor *in[5] = {&tx.t, &tw.t, &tb.t, res ? &tr.t : NULL, prelu ? &ts.t : NULL};
    uint32_t nin = prelu ? 5 : (res ? 4 : 3);
    assert_int_equal(run_ref(&node, in, nin, &out, want), n);
    ks__node anode = node;
    anode.ip[10] = KS_ACT_NONE;
    mk(&tax, KS_DTYPE_F32, ax, 4, xd, false);
    mk(&taw, KS_DTYPE_F32, aw, 4, wd, true);
    mk(&tab, KS_DTYPE_F32, ab, 1, bd, true);
    mk(&aout, KS_DTYPE_F32, NULL, 0, NULL, false);
    ks__rt_tensor *ain[3] = {&tax.t, &taw.t, &tab.t};
    float *mag = malloc((size_t)n * 4);
    assert_int_equal(run_ref(&anode, ain, 3, &aout, mag), n);
    if (res)
        for (int64_t i = 0; i < n; i++)
            mag[i] += ares[i];
    uint16_t *got1 = malloc((size_t)n * 2), *gotn = malloc((size_t)n * 2);
    run_impl(&ks_f16_conv__neonfp16_8x8, &node, in, nin, &out, got1, NULL);
    run_impl(&ks_f16_conv__neonfp16_8x8, &node, in, nin, &out, gotn, g_pool);
    char what[128];
    snprintf(what, sizeof(what), "gemm16 h%lld w%lld ci%lld co%lld k%lld s%d act%d res%d",
             (long long)h, (long long)w_, (long long)ci, (long long)co, (long long)k, s,
             node.ip[10], res);
    compare16(what, n, want, got1, gotn, mag, L_ACT * (2.0 + 16.0) * U, 8.0 * U);
    free(ax), free(w), free(aw), free(b), free(ab), free(sl), free(x), free(want), free(ares);
    free(r), free(mag), free(got1), free(gotn);
}

static void test_gemm16(void **state) {
    (void)state;
    require_fp16();
    check_gemm16(5, 7, 3, 5, 3, 1, KS_ACT_RELU, 0, 0);
    check_gemm16(4, 9, 16, 16, 1, 1, KS_ACT_NONE, 1, 0);
    check_gemm16(6, 11, 17, 33, 1, 1, KS_ACT_SILU, 1, 0);
    check_gemm16(8, 8, 24, 8, 3, 2, KS_ACT_HARD_SWISH, 0, 0);
    check_gemm16(3, 19, 40, 19, 3, 1, KS_ACT_NONE, 1, 1);
    check_gemm16(1, 1, 64, 12, 1, 1, KS_ACT_SIGMOID, 0, 0);
    check_gemm16(7, 5, 9, 40, 5, 1, KS_ACT_RELU6, 1, 0);
    /* 1x1 over a multiple of 8 channels: the direct 7-row microkernel (no packing), pixels not a
     * multiple of 7, columns not of 8, several panel chunks */
    check_gemm16(9, 13, 24, 70, 1, 1, KS_ACT_SILU, 1, 0);
    check_gemm16(2, 3, 8, 5, 1, 1, KS_ACT_LEAKY_RELU, 0, 1);
    /* F32 activations with a residual stay with the fp32 NEON GEMM */
    uint16_t x16[16] = {0};
    float w[16] = {0}, res[16] = {0};
    int64_t xd[4] = {1, 2, 2, 4}, wd[4] = {4, 1, 1, 4};
    tens tx, tw, ty, tr;
    mk(&tx, KS_DTYPE_F16, x16, 4, xd, false);
    mk(&tw, KS_DTYPE_F32, w, 4, wd, true);
    mk(&ty, KS_DTYPE_F32, NULL, 4, xd, false);
    mk(&tr, KS_DTYPE_F32, res, 4, xd, false);
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_CONV2D;
    node.name = (char *)"conv";
    node.ip[9] = 1;
    ks__rt_tensor *in[4] = {&tx.t, &tw.t, NULL, &tr.t}, *out = &ty.t;
    ks__kernel_ctx ctx = make_ctx(&node, in, 4, &out);
    assert_true(ks_f16_conv__neonfp16_8x8.cost(&ctx) < 0); /* F16 in, F32 out */
    tx.t.dtype = KS_DTYPE_F32;
    assert_true(ks_f16_conv__neonfp16_8x8.cost(&ctx) < 0); /* F32 with a residual */
}

/* ---- CAST, ADD / MUL, POOL2D ---- */

static void test_cast(void **state) {
    (void)state;
    require_fp16();
    const int64_t n = 1003;
    int64_t d[1] = {n};
    float *f = malloc((size_t)n * 4), *back = malloc((size_t)n * 4), *wantf = malloc((size_t)n * 4);
    uint16_t *h = malloc((size_t)n * 2), *want = malloc((size_t)n * 2), *hn = malloc((size_t)n * 2);
    for (int64_t i = 0; i < n; i++) /* several binades, ties, overflow, subnormals, NaN */
        f[i] = (float)ldexp(frand(), (int)(i % 40) - 28);
    f[0] = 70000.0f, f[1] = -1e-8f, f[2] = NAN, f[3] = 1.0f + 1.0f / 4096.0f;
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_CAST;
    node.name = (char *)"cast";
    tens tf, th, tback;
    mk(&tf, KS_DTYPE_F32, f, 1, d, false);
    mk(&th, KS_DTYPE_F16, NULL, 1, d, false);
    ks__rt_tensor *in[1] = {&tf.t};
    assert_int_equal(run_ref(&node, in, 1, &th, want), n);
    run_impl(&ks_f16_cast__neonfp16, &node, in, 1, &th, h, NULL);
    run_impl(&ks_f16_cast__neonfp16, &node, in, 1, &th, hn, g_pool);
    for (int64_t i = 0; i < n; i++)
        if (h[i] != want[i] && !(isnan(f[i]) && (h[i] & 0x7c00) == 0x7c00 && (h[i] & 0x3ff)))
            fail_msg("cast to f16: element %lld (%.9g): 0x%04x, reference 0x%04x", (long long)i,
                     (double)f[i], h[i], want[i]);
    assert_memory_equal(h, hn, (size_t)n * 2);
    /* back: exact */
    mk(&th, KS_DTYPE_F16, h, 1, d, false);
    mk(&tback, KS_DTYPE_F32, NULL, 1, d, false);
    ks__rt_tensor *in2[1] = {&th.t};
    assert_int_equal(run_ref(&node, in2, 1, &tback, wantf), n);
    run_impl(&ks_f16_cast__neonfp16, &node, in2, 1, &tback, back, g_pool);
    for (int64_t i = 0; i < n; i++)
        if (!(back[i] == wantf[i] || (isnan(back[i]) && isnan(wantf[i]))))
            fail_msg("cast to f32: element %lld: %.9g, reference %.9g", (long long)i,
                     (double)back[i], (double)wantf[i]);
    free(f), free(back), free(wantf), free(h), free(want), free(hn);
}

static void test_add_mul(void **state) {
    (void)state;
    require_fp16();
    static const int32_t acts[] = {KS_ACT_NONE, KS_ACT_RELU, KS_ACT_RELU6, KS_ACT_HARD_SWISH,
                                   KS_ACT_SIGMOID};
    for (int c = 0; c < 10; c++) {
        int64_t d[4] = {1, 1 + c % 3, 5 + c, 3 + 7 * c};
        size_t n = (size_t)(d[1] * d[2] * d[3]) + (c == 9 ? 0 : 0);
        if (c == 9) d[1] = 70, d[2] = 70, d[3] = 3, n = 70 * 70 * 3; /* several work items */
        float *aa = malloc(n * 4), *ab = malloc(n * 4), *mag = malloc(n * 4);
        uint16_t *a = rand16(n, 3.0f, aa), *b = rand16(n, 3.0f, ab);
        uint16_t *want = malloc(n * 2), *got1 = malloc(n * 2), *gotn = malloc(n * 2);
        ks__node node;
        memset(&node, 0, sizeof(node));
        bool mul = c % 2 == 1;
        node.op = mul ? KS_OP_MUL : KS_OP_ADD;
        node.name = (char *)"bin";
        node.ip[0] = acts[c % 5];
        tens ta, tb, out;
        mk(&ta, KS_DTYPE_F16, a, 4, d, false);
        mk(&tb, KS_DTYPE_F16, b, 4, d, false);
        mk(&out, KS_DTYPE_F16, NULL, 0, NULL, false);
        ks__rt_tensor *in[2] = {&ta.t, &tb.t};
        assert_int_equal(run_ref(&node, in, 2, &out, want), (int64_t)n);
        run_impl(mul ? &ks_f16_mul__neonfp16 : &ks_f16_add__neonfp16, &node, in, 2, &out, got1,
                 NULL);
        run_impl(mul ? &ks_f16_mul__neonfp16 : &ks_f16_add__neonfp16, &node, in, 2, &out, gotn,
                 g_pool);
        for (size_t i = 0; i < n; i++)
            mag[i] = mul ? aa[i] * ab[i] : aa[i] + ab[i];
        char what[64];
        snprintf(what, sizeof(what), "%s act %d (%zu values)", mul ? "mul" : "add", node.ip[0], n);
        compare16(what, (int64_t)n, want, got1, gotn, mag, L_ACT * U, 4.0 * U);
        free(aa), free(ab), free(mag), free(a), free(b), free(want), free(got1), free(gotn);
    }
    /* broadcasting is the reference's */
    uint16_t a[8] = {0}, b[2] = {0};
    int64_t da[2] = {4, 2}, db[1] = {2};
    tens ta, tb, out;
    mk(&ta, KS_DTYPE_F16, a, 2, da, false);
    mk(&tb, KS_DTYPE_F16, b, 1, db, false);
    mk(&out, KS_DTYPE_F16, a, 2, da, false);
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_ADD;
    ks__rt_tensor *in[2] = {&ta.t, &tb.t}, *o = &out.t;
    ks__kernel_ctx ctx = make_ctx(&node, in, 2, &o);
    assert_true(ks_f16_add__neonfp16.cost(&ctx) < 0);
}

static void test_pool(void **state) {
    (void)state;
    require_fp16();
    for (int c = 0; c < 16; c++) {
        int64_t d[4] = {1 + c % 2, 4 + c % 7, 3 + (c * 3) % 10, 1 + (c * 5) % 19};
        size_t n = (size_t)(d[0] * d[1] * d[2] * d[3]);
        float *ax = malloc(n * 4);
        uint16_t *x = rand16(n, 4.0f, ax);
        ks__node node;
        memset(&node, 0, sizeof(node));
        node.op = KS_OP_POOL2D;
        node.name = (char *)"pool";
        bool global = c % 5 == 4;
        node.ip[0] = node.ip[1] = global ? 0 : 2 + c % 2;
        node.ip[2] = node.ip[3] = global ? 1 : 1 + c % 2;
        node.ip[8] = c % 3 == 0 ? KS_PAD_VALID : KS_PAD_SAME_UPPER;
        node.ip[9] = c % 2;        /* max, avg */
        node.ip[10] = (c / 2) % 2; /* count_include_pad */
        node.ip[11] = c % 4 == 3 ? KS_ACT_RELU6 : KS_ACT_NONE;
        tens tx, out;
        mk(&tx, KS_DTYPE_F16, x, 4, d, false);
        mk(&out, KS_DTYPE_F16, NULL, 0, NULL, false);
        ks__rt_tensor *in[1] = {&tx.t};
        uint16_t *want = malloc(n * 2 + 64), *got1 = malloc(n * 2 + 64), *gotn = malloc(n * 2 + 64);
        int64_t m = run_ref(&node, in, 1, &out, want);
        run_impl(&ks_f16_pool2d__neonfp16, &node, in, 1, &out, got1, NULL);
        run_impl(&ks_f16_pool2d__neonfp16, &node, in, 1, &out, gotn, g_pool);
        char what[64];
        snprintf(what, sizeof(what), "pool case %d kind %d", c, node.ip[9]);
        /* max: exact; average: the fp32 sum of fp16 values, rounded once (the 2u of compare16) */
        compare16(what, m, want, got1, gotn, NULL, 0.0, 2.0 * U);
        if (node.ip[9] == 0) assert_memory_equal(want, got1, (size_t)m * 2);
        free(ax), free(x), free(want), free(got1), free(gotn);
    }
}

/* ---- TRANSPOSE, SPLIT: bitwise equal to the reference ---- */

static void test_transpose_split(void **state) {
    (void)state;
    require_fp16();
    /* perms of the forms rows / interleave (channel shuffles) / strided */
    static const struct {
        int32_t rank;
        int64_t dims[5];
        int32_t perm[5];
    } tc[] = {
        {4, {1, 6, 5, 40}, {0, 2, 1, 3}},      /* rows */
        {4, {1, 7, 2, 29}, {0, 1, 3, 2}},      /* interleave 2 (shuffle of 58) */
        {4, {2, 5, 3, 17}, {0, 1, 3, 2}},      /* interleave 3 */
        {4, {1, 3, 4, 9}, {0, 1, 3, 2}},       /* interleave 4 */
        {3, {13, 11, 7}, {2, 0, 1}},           /* strided */
        {5, {1, 9, 2, 2, 3}, {0, 3, 1, 4, 2}}, /* strided, rank 5 */
    };
    for (size_t c = 0; c < sizeof(tc) / sizeof(tc[0]); c++) {
        int64_t n = 1, od[5];
        for (int32_t d = 0; d < tc[c].rank; d++)
            n *= tc[c].dims[d], od[d] = tc[c].dims[tc[c].perm[d]];
        uint16_t *x = rand16((size_t)n, 4.0f, NULL), *want = malloc((size_t)n * 2),
                 *got1 = malloc((size_t)n * 2), *gotn = malloc((size_t)n * 2);
        ks__node node;
        memset(&node, 0, sizeof(node));
        node.op = KS_OP_TRANSPOSE;
        node.name = (char *)"t";
        node.ip[0] = tc[c].rank;
        for (int32_t d = 0; d < tc[c].rank; d++)
            node.ip[1 + d] = tc[c].perm[d];
        tens tx, out;
        mk(&tx, KS_DTYPE_F16, x, tc[c].rank, tc[c].dims, false);
        mk(&out, KS_DTYPE_F16, NULL, tc[c].rank, od, false);
        ks__rt_tensor *in[1] = {&tx.t};
        assert_int_equal(run_ref(&node, in, 1, &out, want), n);
        run_impl(&ks_f16_transpose__neonfp16, &node, in, 1, &out, got1, NULL);
        run_impl(&ks_f16_transpose__neonfp16, &node, in, 1, &out, gotn, g_pool);
        if (memcmp(want, got1, (size_t)n * 2) || memcmp(want, gotn, (size_t)n * 2))
            fail_msg("transpose case %zu differs from the reference", c);
        free(x), free(want), free(got1), free(gotn);
    }
    /* SPLIT along the channels (rows) and along H, three outputs of unequal sizes */
    for (int axis = 1; axis <= 3; axis += 2) {
        int64_t d[4] = {2, 6, 5, 24}, sizes[3] = {1, 2, 3};
        if (axis == 3) sizes[0] = 5, sizes[1] = 8, sizes[2] = 11;
        uint16_t *x = rand16(2 * 6 * 5 * 24, 4.0f, NULL);
        ks__node node;
        memset(&node, 0, sizeof(node));
        node.op = KS_OP_SPLIT;
        node.name = (char *)"s";
        node.ip[0] = axis;
        tens tx, ts, o[3], r[3];
        mk(&tx, KS_DTYPE_F16, x, 4, d, false);
        int64_t sd[1] = {3};
        int32_t sz32[3] = {(int32_t)sizes[0], (int32_t)sizes[1], (int32_t)sizes[2]};
        mk(&ts, KS_DTYPE_I32, sz32, 1, sd, true);
        uint16_t *want[3], *got[3];
        ks__rt_tensor *outs[3], *routs[3];
        for (int k = 0; k < 3; k++) {
            int64_t od[4] = {d[0], d[1], d[2], d[3]};
            od[axis] = sizes[k];
            size_t n = (size_t)(od[0] * od[1] * od[2] * od[3]);
            want[k] = malloc(n * 2), got[k] = malloc(n * 2);
            mk(&r[k], KS_DTYPE_F16, want[k], 4, od, false);
            mk(&o[k], KS_DTYPE_F16, got[k], 4, od, false);
            routs[k] = &r[k].t, outs[k] = &o[k].t;
        }
        ks__rt_tensor *in[2] = {&tx.t, &ts.t};
        ks__kernel_ctx rc = make_ctx(&node, in, 2, routs);
        rc.num_outputs = 3;
        assert_int_equal(ks__ref_kernels()->k[KS_OP_SPLIT].run(&rc), KS_STATUS_OK);
        ks__kernel_ctx fc = make_ctx(&node, in, 2, outs);
        fc.num_outputs = 3;
        fc.pool = g_pool;
        assert_true(ks_f16_split__neonfp16.cost(&fc) >= 0);
        assert_int_equal(ks_f16_split__neonfp16.run(&fc), KS_STATUS_OK);
        for (int k = 0; k < 3; k++) {
            if (memcmp(want[k], got[k], (size_t)ks__rt_numel(&o[k].t) * 2) != 0)
                fail_msg("split axis %d output %d differs from the reference", axis, k);
            free(want[k]), free(got[k]);
        }
        free(x);
    }
}

/* ---- PAD (constant): bitwise equal to the reference ---- */

static void test_pad(void **state) {
    (void)state;
    require_fp16();
    static const int32_t pads[][8] = {
        {0, 0, 0, 0, 0, 0, 0, 4},   /* BlazeFace's channel pad 24 -> 28 */
        {0, 0, 1, 2, 2, 1, 3, 0},   /* spatial and channels, before and after */
        {0, 0, -1, 0, 0, -2, 0, 9}, /* crops */
    };
    for (size_t c = 0; c < sizeof(pads) / sizeof(pads[0]); c++) {
        int64_t d[4] = {2, 5, 6, 24}, od[4], pd[2] = {4, 2};
        for (int k = 0; k < 4; k++)
            od[k] = d[k] + pads[c][2 * k] + pads[c][2 * k + 1];
        size_t n = 2 * 5 * 6 * 24, m = (size_t)(od[0] * od[1] * od[2] * od[3]);
        uint16_t *x = rand16(n, 4.0f, NULL), *want = malloc(m * 2), *got1 = malloc(m * 2),
                 *gotn = malloc(m * 2);
        ks__node node;
        memset(&node, 0, sizeof(node));
        node.op = KS_OP_PAD;
        node.name = (char *)"pad";
        node.fp[0] = c == 1 ? -1.5f : 0.0f;
        tens tx, tp, out;
        mk(&tx, KS_DTYPE_F16, x, 4, d, false);
        mk(&tp, KS_DTYPE_I32, (void *)pads[c], 2, pd, true);
        mk(&out, KS_DTYPE_F16, NULL, 4, od, false);
        ks__rt_tensor *in[2] = {&tx.t, &tp.t};
        assert_int_equal(run_ref(&node, in, 2, &out, want), (int64_t)m);
        run_impl(&ks_f16_pad__neonfp16, &node, in, 2, &out, got1, NULL);
        run_impl(&ks_f16_pad__neonfp16, &node, in, 2, &out, gotn, g_pool);
        if (memcmp(want, got1, m * 2) || memcmp(want, gotn, m * 2))
            fail_msg("pad case %zu differs from the reference", c);
        free(x), free(want), free(got1), free(gotn);
    }
}

#endif /* __aarch64__: the kernels */

/* ---- the pass on a real model (every architecture) ---- */

static uint8_t *read_file(const char *path, size_t *size_out) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) {
            buf = malloc((size_t)n + 1);
            if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            }
            *size_out = (size_t)n;
        }
    }
    fclose(f);
    return buf;
}

/* BlazeFace short range from ../shared/data, imported and optimized into g (initialized here);
 * false, with a message, when the file is missing. */
static bool import_blazeface(ks__graph *g) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", KS_SHARED_DATA,
             "face_detection/face_detection_short_range.tflite");
    size_t n = 0;
    uint8_t *src = read_file(path, &n);
    if (!src) {
        print_message("skipped: %s not found\n", path);
        return false;
    }
    ks__graph_init(g, NULL);
    char err[256] = "";
    assert_int_equal(ks__import_any(src, n, "x.tflite", g, err, sizeof(err)), KS_STATUS_OK);
    free(src);
    assert_int_equal(ks__graph_optimize(g, err, sizeof(err)), KS_STATUS_OK);
    return true;
}

/* BlazeFace's graph through the fp16 pass: F16 activations between fp16 nodes, F32 graph
 * inputs and outputs with their names, a CAST at each border, and a valid graph. */
static void test_pass(void **state) {
    (void)state;
    ks__graph g, out;
    if (!import_blazeface(&g)) skip();
    char err[256] = "";
    uint32_t n16 = 0;
    assert_int_equal(ks__prec_build_f16(&g, &out, &n16, err, sizeof(err)), KS_STATUS_OK);
    assert_true(n16 > g.num_nodes / 2);
    assert_int_equal(out.num_inputs, g.num_inputs);
    assert_int_equal(out.num_outputs, g.num_outputs);
    for (uint32_t k = 0; k < g.num_outputs; k++) {
        const ks__tensor *a = &g.tensors[g.outputs[k]], *b = &out.tensors[out.outputs[k]];
        assert_string_equal(a->name, b->name);
        assert_int_equal(b->dtype, KS_DTYPE_F32);
    }
    assert_int_equal(out.tensors[out.inputs[0]].dtype, KS_DTYPE_F32);
    uint32_t casts = 0, f16_tensors = 0;
    for (uint32_t i = 0; i < out.num_nodes; i++)
        casts += out.nodes[i].op == KS_OP_CAST;
    for (uint32_t t = 0; t < out.num_tensors; t++)
        f16_tensors +=
            out.tensors[t].dtype == KS_DTYPE_F16 && !(out.tensors[t].flags & KS__TENSOR_CONST);
    assert_true(casts >= 1 + g.num_outputs);
    assert_true(f16_tensors > g.num_nodes / 2);
    assert_int_equal(ks__graph_validate(&out, err, sizeof(err)), KS_STATUS_OK);
    print_message("BlazeFace: %u of %u nodes fp16, %u casts, %u F16 activations\n", n16,
                  g.num_nodes, casts, f16_tensors);
    ks__graph_free(&out);
    ks__graph_free(&g);
}

static ks_model *load_blazeface(uint8_t **image_out) {
    ks__graph g;
    if (!import_blazeface(&g)) return NULL;
    char err[256] = "";
    size_t size = 0;
    assert_int_equal(ks__ksm_write(&g, image_out, &size, err, sizeof(err)), KS_STATUS_OK);
    ks__graph_free(&g);
    ks_model *m = NULL;
    assert_int_equal(ks_model_load_buffer(*image_out, size, NULL, &m), KS_STATUS_OK);
    return m;
}

/* The pass's graph runs: BlazeFace with its activations in F16 on the reference kernels (a
 * default session: the fp16 variants are never offered to it, so every F16 node takes the
 * reference conv, pooling, pad, concat, reshape and CAST), against the F32 graph on the same
 * random input, within what fp16 storage costs. Every architecture (x86 too: under ASan and UBSan
 * in scripts/test). */
static void test_pass_runs(void **state) {
    (void)state;
    uint8_t *img = NULL;
    ks_model *m = load_blazeface(&img);
    if (!m) skip(); /* import_blazeface said why */
    ks__graph g16;
    uint32_t n16 = 0;
    char err[256] = "";
    assert_int_equal(ks__prec_build_f16(ks__model_graph(m), &g16, &n16, err, sizeof(err)),
                     KS_STATUS_OK);
    ks_session *s32 = NULL, *s16 = NULL;
    assert_int_equal(ks__session_create_with(m, ks__model_graph(m), NULL, ks__cpu_backend(), &s32),
                     KS_STATUS_OK);
    assert_int_equal(ks__session_create_with(m, &g16, NULL, ks__cpu_backend(), &s16), KS_STATUS_OK);
    assert_int_equal(ks_session_reshape(s32, NULL), KS_STATUS_OK);
    assert_int_equal(ks_session_reshape(s16, NULL), KS_STATUS_OK);
    ks_tensor a, b;
    assert_int_equal(ks_session_input(s32, 0, &a), KS_STATUS_OK);
    assert_int_equal(ks_session_input(s16, 0, &b), KS_STATUS_OK);
    assert_int_equal(a.info.dtype, KS_DTYPE_F32);
    assert_int_equal(b.info.dtype, KS_DTYPE_F32);
    assert_int_equal(a.size_bytes, b.size_bytes);
    uint32_t rng = 99u;
    for (size_t i = 0; i < a.size_bytes / sizeof(float); i++) {
        rng = rng * 1664525u + 1013904223u;
        ((float *)a.data)[i] = ((float *)b.data)[i] = (float)(rng >> 8) / (float)(1u << 23) - 1.0f;
    }
    assert_int_equal(ks_session_run(s32), KS_STATUS_OK);
    assert_int_equal(ks_session_run(s16), KS_STATUS_OK);
    for (uint32_t o = 0; o < ks_model_num_outputs(m); o++) {
        ks_tensor x, y;
        assert_int_equal(ks_session_output(s32, o, &x), KS_STATUS_OK);
        assert_int_equal(ks_session_output(s16, o, &y), KS_STATUS_OK);
        assert_int_equal(y.info.dtype, KS_DTYPE_F32);
        assert_int_equal(x.size_bytes, y.size_bytes);
        double e2 = 0, r2 = 0;
        for (size_t i = 0; i < x.size_bytes / sizeof(float); i++) {
            double d = (double)((const float *)y.data)[i] - (double)((const float *)x.data)[i];
            e2 += d * d;
            r2 += (double)((const float *)x.data)[i] * (double)((const float *)x.data)[i];
        }
        double rl2 = r2 > 0 ? sqrt(e2 / r2) : sqrt(e2);
        print_message(
            "BlazeFace output %u: F16 graph on the reference kernels vs F32, rel L2 %.3g\n", o,
            rl2);
        if (!(rl2 <= 5e-3)) fail_msg("output %u: rel L2 %.3g > 5e-3", o, rl2);
    }
    ks_session_destroy(s32);
    ks_session_destroy(s16);
    ks__graph_free(&g16);
    ks_model_destroy(m);
    free(img);
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
#if defined(__aarch64__)
        cmocka_unit_test(test_dwconv),
        cmocka_unit_test(test_dw_refusals),
        cmocka_unit_test(test_gemm16),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_add_mul),
        cmocka_unit_test(test_pool),
        cmocka_unit_test(test_transpose_split),
        cmocka_unit_test(test_pad),
#endif
        cmocka_unit_test(test_pass),
        cmocka_unit_test(test_pass_runs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
