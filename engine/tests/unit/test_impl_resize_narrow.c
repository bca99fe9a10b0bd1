/* Bilinear RESIZE with 1, 2, 4 or 8 channels (the AVX-512 build's pixel-packed path in
 * x86/avx2/f32_resize.c) against the reference: up- and downscales (the latter fall back to the
 * channel loop), every output-width tail of a 16-lane group, every coordinate mode, batches, and
 * 1 vs 3 threads (bitwise equal). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "impl.h"
#include "cpu_kernel.h"

#define TOL_INTERP_REL 1e-5
#define TOL_INTERP_ABS 1e-6 /* bilinear weights fused differently; inputs are O(1) */

static char g_err[512];
static uint32_t g_rng = 12345u;

static float frand(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 17;
    g_rng ^= g_rng << 5;
    return -1.0f + 2.0f * (float)(g_rng >> 8) / (float)(1u << 24);
}

static void *aligned(size_t bytes) {
    void *p = NULL;
    assert_int_equal(posix_memalign(&p, 64, bytes ? (bytes + 63) / 64 * 64 : 64), 0);
    return p;
}

/* Returns 1 when a fast variant took the node. */
static int resize_case(int64_t n, int64_t ih, int64_t iw, int64_t c, int32_t oh, int32_t ow,
                       int32_t coord) {
    const int64_t in_dims[4] = {n, ih, iw, c};
    const int64_t in_numel = n * ih * iw * c;
    float *xd = malloc((size_t)in_numel * sizeof(float));
    assert_non_null(xd);
    for (int64_t i = 0; i < in_numel; i++)
        xd[i] = frand();
    ks__quant noq;
    memset(&noq, 0, sizeof(noq));
    ks__rt_tensor x, y;
    memset(&x, 0, sizeof(x));
    memset(&y, 0, sizeof(y));
    x.dtype = y.dtype = KS_DTYPE_F32;
    x.rank = 4;
    memcpy(x.dims, in_dims, sizeof(in_dims));
    x.data = xd;
    x.size_bytes = (size_t)in_numel * sizeof(float);
    x.quant = y.quant = &noq;
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_RESIZE;
    node.name = (char *)"resize";
    node.ip[0] = 1, node.ip[1] = coord, node.ip[3] = oh, node.ip[4] = ow;
    ks__rt_tensor *ins[1] = {&x}, *outs[1] = {&y};
    ks__kernel_ctx ctx = {.node = &node,
                          .node_index = 1,
                          .in = ins,
                          .num_inputs = 1,
                          .out = outs,
                          .num_outputs = 1,
                          .err = g_err,
                          .err_cap = sizeof(g_err),
                          .num_threads = 1};
    const ks__kernel *k = &ks__ref_kernels()->k[KS_OP_RESIZE];
    if (ks__ref_prepare(&ctx)) fail_msg("reference infer: %s", g_err);
    const int64_t out_numel = ks__rt_numel(&y);
    const size_t out_bytes = (size_t)out_numel * sizeof(float);
    y.size_bytes = out_bytes;
    float *want = malloc(out_bytes + 4), *got = malloc(out_bytes + 4), *got3 = malloc(out_bytes);
    assert_true(want && got && got3);
    y.data = want;
    ctx.scratch = aligned(ctx.scratch_bytes);
    assert_int_equal(k->run(&ctx), KS_STATUS_OK);
    free(ctx.scratch);

    int took = 0;
    ks__pool *pool3 = NULL;
    assert_int_equal(ks__pool_create(NULL, 3, &pool3), KS_STATUS_OK);
    for (const ks__impl *const *it = ks__impl_list(); *it; it++) {
        const ks__impl *im = *it;
        if (im->op != KS_OP_RESIZE || (im->isa & ~ks__cpu_isa()) != 0) continue;
        ks__kernel_ctx cx = ctx;
        cx.scratch = NULL, cx.scratch_bytes = 0;
        if (im->cost(&cx) < 0) continue;
        took = 1;
        size_t packed_bytes = 0;
        assert_int_equal(im->plan(&cx, &packed_bytes), KS_STATUS_OK);
        cx.packed = aligned(packed_bytes);
        cx.packed_bytes = packed_bytes;
        if (packed_bytes && im->pack && im->pack(&cx)) fail_msg("%s pack: %s", im->name, g_err);
        cx.scratch = aligned(cx.scratch_bytes);
        for (int t = 0; t < 2; t++) {
            float *dst = t ? got3 : got;
            memset(dst, 0xA5, t ? out_bytes : out_bytes + 4);
            y.data = dst;
            cx.pool = t ? pool3 : NULL;
            cx.num_threads = t ? 3 : 1;
            if (im->run(&cx)) fail_msg("%s run: %s", im->name, g_err);
        }
        for (int64_t i = 0; i < out_numel; i++) {
            const double w = want[i], g = got[i];
            if (!(fabs(g - w) <= TOL_INTERP_REL * fabs(w) + TOL_INTERP_ABS))
                fail_msg("%s %lldx%lldx%lldx%lld -> %dx%d coord %d: element %lld got %.9g "
                         "want %.9g",
                         im->name, (long long)n, (long long)ih, (long long)iw, (long long)c, oh, ow,
                         coord, (long long)i, g, w);
        }
        unsigned char tail[4];
        memset(tail, 0xA5, sizeof(tail));
        assert_memory_equal((unsigned char *)got + out_bytes, tail, 4); /* nothing past the end */
        assert_memory_equal(got, got3, out_bytes);
        free(cx.packed);
        free(cx.scratch);
    }
    ks__pool_destroy(pool3);
    y.data = NULL;
    free(want);
    free(got);
    free(got3);
    free(xd);
    return took;
}

static void test_resize_narrow(void **state) {
    (void)state;
    static const int64_t chans[] = {1, 2, 4, 8};
    int took = 0;
    for (size_t ci = 0; ci < 4; ci++)
        for (int32_t coord = 0; coord < KS_RESIZE_COORD_COUNT; coord++) {
            for (int32_t ow = 1; ow <= 19; ow++) {
                took += resize_case(1, 3, 5, chans[ci], 4, ow, coord);          /* up and down */
                took += resize_case(2, 4, 1, chans[ci], 3, ow, coord);          /* one column */
                took += resize_case(1, 2, ow, chans[ci], 5, 2 * ow + 1, coord); /* upscale */
            }
            took += resize_case(1, 16, 16, chans[ci], 32, 32, coord);
            took += resize_case(1, 9, 40, chans[ci], 20, 37, coord); /* downscale: channel loop */
        }
    if (ks__cpu_isa() & KS_ISA_AVX2) assert_true(took > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resize_narrow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
