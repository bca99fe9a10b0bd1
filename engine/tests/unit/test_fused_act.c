/* The fused SiLU and PReLU activations (KS_ACT_SILU, KS_ACT_PRELU): the vector SiLU of each ISA
 * (AVX2, AVX-512, NEON) against the expf-based reference ks__act_apply on a dense sweep and on
 * special values, and the converter passes that fold MUL(x, SIGMOID(x)) and PRELU(x, slopes) into
 * the producing CONV2D / FULLY_CONNECTED. The conv/dwconv/winograd epilogues are checked against
 * the reference conv by test_impl_conv/dwconv/winograd/arm, whose activation loops include SILU
 * and PRELU (GEMM path). */
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
#include "cpu_kernel.h"

/* Max relative error of a vector SiLU vs the reference (the brief asks <= ~1e-6); outputs below
 * TINY_ABS (e^-87 and below, where both flush or go subnormal) compare absolutely. */
#define SILU_TOL_REL 1e-6
#define SILU_TOL_TINY_ABS 1e-30

typedef void (*silu_fn)(const float *x, float *y, size_t n);

#if defined(__x86_64__)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
#include "x86/avx2/f32_silu.h"
static void silu_avx2(const float *x, float *y, size_t n) {
    for (size_t i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, ks_avx2_silu(_mm256_loadu_ps(x + i)));
}
#if defined(__clang__)
#pragma clang attribute pop
#pragma clang attribute push(                                                                      \
    __attribute__((target("avx2,fma,avx512f,avx512dq,avx512bw,avx512vl"))), apply_to = function)
#else
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512dq,avx512bw,avx512vl")
#endif
#include "x86/avx512/f32_silu.h"
static void silu_avx512(const float *x, float *y, size_t n) {
    for (size_t i = 0; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, ks_avx512_silu(_mm512_loadu_ps(x + i)));
}
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#elif defined(__aarch64__)
#include "arm/neon/neon_util.h"
static void silu_neon(const float *x, float *y, size_t n) {
    for (size_t i = 0; i + 4 <= n; i += 4)
        vst1q_f32(y + i, neon_silu(vld1q_f32(x + i)));
}
#endif

/* Max relative error of fn over a sweep of [-120, 120] plus specials; fails above tolerance. */
static double check_silu(const char *name, silu_fn fn) {
    const size_t n = 1 << 20; /* multiple of 16 */
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    assert_non_null(x);
    assert_non_null(y);
    static const float specials[] = {0.0f,   -0.0f,  1e-30f,   -1e-30f,   1e-45f, -87.3f, -87.4f,
                                     -88.0f, -88.8f, -89.0f,   -100.0f,   88.0f,  89.0f,  100.0f,
                                     1e30f,  -1e30f, INFINITY, -INFINITY, 0.5f,   -0.5f};
    const size_t ns = sizeof(specials) / sizeof(specials[0]);
    for (size_t i = 0; i < n; i++)
        x[i] = i < ns ? specials[i] : -120.0f + 240.0f * (float)(i - ns) / (float)(n - ns);
    fn(x, y, n);
    double max_rel = 0.0;
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        float r = ks__act_apply(x[i], KS_ACT_SILU, 0.0f);
        if (isinf(r)) {
            assert_true(y[i] == r);
            continue;
        }
        double diff = fabs((double)y[i] - (double)r);
        if (diff <= SILU_TOL_TINY_ABS) continue;
        double rel = diff / fabs((double)r);
        if (!(rel <= max_rel)) max_rel = rel, worst = i;
    }
    printf("%s: max rel error %.3g (x = %.9g)\n", name, max_rel, (double)x[worst]);
    if (!(max_rel <= SILU_TOL_REL))
        fail_msg("%s: rel error %g at x = %.9g: %.9g vs reference %.9g", name, max_rel,
                 (double)x[worst], (double)y[worst],
                 (double)ks__act_apply(x[worst], KS_ACT_SILU, 0.0f));
    /* NaN in, NaN out */
    float xn[16], yn[16];
    for (int i = 0; i < 16; i++)
        xn[i] = i % 2 ? NAN : -NAN;
    fn(xn, yn, 16);
    for (int i = 0; i < 16; i++)
        if (!isnan(yn[i])) fail_msg("%s: NaN input gave %g", name, (double)yn[i]);
    free(x);
    free(y);
    return max_rel;
}

static void test_silu_vectors(void **state) {
    (void)state;
    /* The reference itself against double precision, for the record. */
    double ref_rel = 0.0;
    for (int i = -120000; i <= 120000; i++) {
        float v = (float)i * 1e-3f;
        double d = (double)v / (1.0 + exp(-(double)v));
        double r = ks__act_apply(v, KS_ACT_SILU, 0.0f);
        if (fabs(d) > SILU_TOL_TINY_ABS && fabs(r - d) / fabs(d) > ref_rel)
            ref_rel = fabs(r - d) / fabs(d);
    }
    printf("reference vs double: max rel error %.3g\n", ref_rel);
    assert_true(ref_rel < 1e-6);
    int ran = 0;
#if defined(__x86_64__)
    /* ks__cpu_isa(): the same dispatch (and KS_ISA_MAX cap) as sessions */
    if (ks__cpu_isa() & KS_ISA_AVX2) check_silu("avx2", silu_avx2), ran++;
    if (ks__cpu_isa() & KS_ISA_AVX512) check_silu("avx512", silu_avx512), ran++;
#elif defined(__aarch64__)
    check_silu("neon", silu_neon), ran++;
#endif
    if (!ran) printf("no vector SiLU on this CPU\n");
}

/* ---- MUL(x, SIGMOID(x)) -> conv act SILU (graph pass) ---- */

static int32_t add_t(ks__graph *g, const char *name, int32_t rank, const int64_t *dims) {
    int32_t id;
    assert_int_equal(ks__graph_add_tensor(g, name, KS_DTYPE_F32, rank, dims, &id), KS_STATUS_OK);
    return id;
}

/* x -> op (conv 1x1 or FC) -> t; SIGMOID(t) -> s; MUL(s, t) or MUL(t, s) -> y. `t_out` also
 * makes t a graph output. */
static void build_silu(ks__graph *g, uint32_t op, int swap, int t_out) {
    ks__graph_init(g, NULL);
    int64_t xd[4] = {1, 3, 5, 6}, wd4[4] = {7, 1, 1, 6}, wd2[2] = {7, 6}, bd[1] = {7};
    int64_t yd4[4] = {1, 3, 5, 7}, xd2[2] = {3, 6}, yd2[2] = {3, 7};
    int fc = op == KS_OP_FULLY_CONNECTED;
    int32_t x = fc ? add_t(g, "x", 2, xd2) : add_t(g, "x", 4, xd);
    int32_t w = fc ? add_t(g, "w", 2, wd2) : add_t(g, "w", 4, wd4), b = add_t(g, "b", 1, bd);
    const int64_t *yd = fc ? yd2 : yd4;
    int32_t yr = fc ? 2 : 4;
    int32_t t = add_t(g, "t", yr, yd), s = add_t(g, "s", yr, yd), y = add_t(g, "y", yr, yd);
    float wv[42], bv[7];
    for (int i = 0; i < 42; i++)
        wv[i] = (float)((i * 37) % 11) * 0.1f - 0.5f;
    for (int i = 0; i < 7; i++)
        bv[i] = 0.1f * (float)i;
    assert_int_equal(ks__graph_set_const(g, w, wv, sizeof(wv), true), KS_STATUS_OK);
    assert_int_equal(ks__graph_set_const(g, b, bv, sizeof(bv), true), KS_STATUS_OK);
    int32_t cin[3] = {x, w, b}, min[2] = {swap ? s : t, swap ? t : s};
    uint32_t idx;
    assert_int_equal(ks__graph_add_node(g, op, "op", 3, cin, 1, &t, &idx), 0);
    assert_int_equal(ks__graph_add_node(g, KS_OP_SIGMOID, "sig", 1, &t, 1, &s, &idx), 0);
    assert_int_equal(ks__graph_add_node(g, KS_OP_MUL, "mul", 2, min, 1, &y, &idx), 0);
    int32_t outs[2] = {y, t};
    assert_int_equal(ks__graph_set_io(g, 1, &x, t_out ? 2 : 1, outs), KS_STATUS_OK);
}

static void test_fold_silu(void **state) {
    (void)state;
    char err[256];
    static const uint32_t ops[2] = {KS_OP_CONV2D, KS_OP_FULLY_CONNECTED};
    for (int k = 0; k < 2; k++) {
        for (int swap = 0; swap < 2; swap++) {
            ks__graph g;
            build_silu(&g, ops[k], swap, 0);
            assert_int_equal(ks__graph_optimize(&g, err, sizeof(err)), KS_STATUS_OK);
            assert_int_equal(g.num_nodes, 1);
            const ks__node *n = &g.nodes[0];
            assert_int_equal(n->op, ops[k]);
            assert_int_equal(ops[k] == KS_OP_CONV2D ? n->ip[10] : n->ip[0], KS_ACT_SILU);
            assert_string_equal(g.tensors[n->outputs[0]].name, "y");
            ks__graph_free(&g);
        }
        /* the pre-activation is also a graph output: nothing folds */
        ks__graph g;
        build_silu(&g, ops[k], 0, 1);
        assert_int_equal(ks__graph_optimize(&g, err, sizeof(err)), KS_STATUS_OK);
        assert_int_equal(g.num_nodes, 3);
        for (uint32_t i = 0; i < g.num_nodes; i++)
            if (g.nodes[i].op == ops[k])
                assert_int_equal(ops[k] == KS_OP_CONV2D ? g.nodes[i].ip[10] : g.nodes[i].ip[0],
                                 KS_ACT_NONE);
        ks__graph_free(&g);
    }
}

/* ---- PRELU(x, slopes) -> conv act PRELU with input 4 (graph pass) ---- */

/* x -> conv 1x1 (+ residual ADD when `residual`) -> t; PRELU(t, slope) -> y. `num_slopes` 1 gives
 * a shared slope; `slope_const` 0 makes the slope a graph input. */
static void build_prelu(ks__graph *g, int num_slopes, int residual, int slope_const) {
    ks__graph_init(g, NULL);
    int64_t xd[4] = {1, 3, 5, 7}, wd[4] = {7, 1, 1, 7}, sd[3] = {1, 1, num_slopes};
    int32_t x = add_t(g, "x", 4, xd), w = add_t(g, "w", 4, wd), sl = add_t(g, "slope", 3, sd);
    int32_t c = add_t(g, "c", 4, xd), t = add_t(g, "t", 4, xd), y = add_t(g, "y", 4, xd);
    float wv[49], sv[7];
    for (int i = 0; i < 49; i++)
        wv[i] = (float)((i * 37) % 11) * 0.1f - 0.5f;
    for (int i = 0; i < 7; i++)
        sv[i] = 0.05f * (float)(i - 3);
    assert_int_equal(ks__graph_set_const(g, w, wv, sizeof(wv), true), KS_STATUS_OK);
    if (slope_const)
        assert_int_equal(ks__graph_set_const(g, sl, sv, (size_t)num_slopes * sizeof(float), true),
                         KS_STATUS_OK);
    int32_t cin[2] = {x, w}, ain[2] = {c, x}, pin[2] = {residual ? t : c, sl};
    uint32_t idx;
    assert_int_equal(ks__graph_add_node(g, KS_OP_CONV2D, "conv", 2, cin, 1, &c, &idx), 0);
    if (residual) assert_int_equal(ks__graph_add_node(g, KS_OP_ADD, "add", 2, ain, 1, &t, &idx), 0);
    assert_int_equal(ks__graph_add_node(g, KS_OP_PRELU, "prelu", 2, pin, 1, &y, &idx), 0);
    int32_t ins[2] = {x, sl};
    assert_int_equal(ks__graph_set_io(g, slope_const ? 1 : 2, ins, 1, &y), KS_STATUS_OK);
}

static void test_fold_prelu(void **state) {
    (void)state;
    char err[256];
    for (int residual = 0; residual <= 1; residual++) {
        ks__graph g;
        build_prelu(&g, 7, residual, 1);
        assert_int_equal(ks__graph_optimize(&g, err, sizeof(err)), KS_STATUS_OK);
        assert_int_equal(g.num_nodes, 1);
        const ks__node *n = &g.nodes[0];
        assert_int_equal(n->op, KS_OP_CONV2D);
        assert_int_equal(n->ip[10], KS_ACT_PRELU);
        assert_int_equal(n->num_inputs, 5);
        assert_string_equal(g.tensors[n->inputs[4]].name, "slope");
        assert_true(residual ? n->inputs[3] >= 0 : n->inputs[3] < 0);
        assert_string_equal(g.tensors[n->outputs[0]].name, "y");
        ks__graph_free(&g);
    }
    /* one shared slope: LEAKY_RELU, no extra input */
    ks__graph g;
    build_prelu(&g, 1, 0, 1);
    assert_int_equal(ks__graph_optimize(&g, err, sizeof(err)), KS_STATUS_OK);
    assert_int_equal(g.num_nodes, 1);
    assert_int_equal(g.nodes[0].ip[10], KS_ACT_LEAKY_RELU);
    assert_true(g.nodes[0].fp[0] == -0.15f);
    assert_true(g.nodes[0].num_inputs <= 3);
    ks__graph_free(&g);
    /* slopes known only at run time: nothing folds */
    build_prelu(&g, 7, 0, 0);
    assert_int_equal(ks__graph_optimize(&g, err, sizeof(err)), KS_STATUS_OK);
    assert_int_equal(g.num_nodes, 2);
    ks__graph_free(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_silu_vectors),
        cmocka_unit_test(test_fold_silu),
        cmocka_unit_test(test_fold_prelu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
