/* The part of the quantized-variant test harness that every int8 kernel test shares
 * (test_impl_q8_elementwise.c directly; the conv / FC / depthwise tests through q8_variants.h): a
 * deterministic random stream, kernel contexts, and the check that every variant a test selects
 * gives the reference kernel's bytes at 1 and 3 threads.
 * Include after <cmocka.h>, "impl.h" and "kernel.h"; everything here is static (inline, so a
 * test may leave parts unused). */
#ifndef KESTREL_TESTS_Q8_TEST_UTIL_H
#define KESTREL_TESTS_Q8_TEST_UTIL_H

static char g_err[512];

/* Deterministic stream; a test may reseed g_rng (before its first case, to keep its cases). */
static uint32_t g_rng = 12345u;
static inline uint32_t urand(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return g_rng >> 8;
}

static inline void *aligned(size_t bytes) {
    void *p = NULL;
    assert_int_equal(posix_memalign(&p, 64, bytes ? (bytes + 63) / 64 * 64 : 64), 0);
    return p;
}

static inline ks__kernel_ctx make_ctx(const ks__node *node, ks__rt_tensor **ins, uint32_t nin,
                                      ks__rt_tensor **outs) {
    ks__kernel_ctx ctx = {.node = node,
                          .node_index = 3,
                          .in = ins,
                          .num_inputs = nin,
                          .out = outs,
                          .num_outputs = 1,
                          .err = g_err,
                          .err_cap = sizeof(g_err),
                          .num_threads = 1};
    g_err[0] = 0;
    return ctx;
}

/* Runs the reference and every variant of node->op that `select` accepts and this CPU supports
 * (1 and 3 threads) and requires identical bytes and no write past the end. `y` has dtype and
 * quantization set; its data is allocated here. on_ran (may be NULL) gets the name of each
 * variant that took the node. Returns the number of those variants. */
static inline int q8v_check(const ks__node *node, ks__rt_tensor **ins, uint32_t nin,
                            ks__rt_tensor *y, int (*select)(const ks__impl *),
                            void (*on_ran)(const char *)) {
    ks__rt_tensor *outs[1] = {y};
    ks__kernel_ctx ctx = make_ctx(node, ins, nin, outs);
    const ks__kernel *k = &ks__ref_kernels()->k[node->op];
    ks_status st = ks__ref_prepare(&ctx);
    if (st) print_error("ref infer: %s\n", g_err);
    assert_int_equal(st, KS_STATUS_OK);
    size_t bytes = (size_t)ks__rt_numel(y) * ks_dtype_size(y->dtype);
    y->size_bytes = bytes;
    uint8_t *want = malloc(bytes + 1);
    assert_non_null(want);
    y->data = want;
    ctx.scratch = aligned(ctx.scratch_bytes);
    assert_int_equal(k->run(&ctx), KS_STATUS_OK);
    free(ctx.scratch);
    int ran = 0;
    for (const ks__impl *const *it = ks__impl_list(); *it; it++) {
        const ks__impl *im = *it;
        if (im->op != node->op || !select(im) || (im->isa & ~ks__cpu_isa()) != 0) continue;
        for (uint32_t threads = 1; threads <= 3; threads += 2) {
            ks__pool *pool = NULL;
            if (threads > 1) assert_int_equal(ks__pool_create(NULL, threads, &pool), KS_STATUS_OK);
            ks__kernel_ctx c = make_ctx(node, ins, nin, outs);
            uint8_t *got = malloc(bytes + 1);
            assert_non_null(got);
            memset(got, 0xA5, bytes + 1);
            y->data = got;
            c.num_threads = threads;
            c.pool = pool;
            if (im->cost(&c) < 0) {
                ks__pool_destroy(pool);
                free(got);
                break;
            }
            if (threads == 1) {
                ran++;
                if (on_ran) on_ran(im->name);
            }
            size_t packed_bytes = 0;
            c.scratch_bytes = 0;
            assert_int_equal(im->plan(&c, &packed_bytes), KS_STATUS_OK);
            c.packed = aligned(packed_bytes);
            c.packed_bytes = packed_bytes;
            if (packed_bytes && im->pack) {
                st = im->pack(&c);
                if (st) print_error("%s pack: %s\n", im->name, g_err);
                assert_int_equal(st, KS_STATUS_OK);
            }
            c.scratch = aligned(c.scratch_bytes);
            assert_int_equal(im->run(&c), KS_STATUS_OK);
            for (size_t i = 0; i < bytes; i++) {
                if (got[i] != want[i]) {
                    print_error("%s threads %u byte %zu of %zu: got %d want %d\n", im->name,
                                threads, i, bytes, got[i], want[i]);
                    fail();
                }
            }
            assert_int_equal(got[bytes], 0xA5); /* no write past the end */
            free(c.scratch);
            free(c.packed);
            free(got);
            ks__pool_destroy(pool);
        }
    }
    free(want);
    y->data = NULL;
    return ran;
}

#endif /* KESTREL_TESTS_Q8_TEST_UTIL_H */
