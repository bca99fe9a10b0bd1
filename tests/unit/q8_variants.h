/* Shared harness of the quantized-variant tests (test_impl_quant.c, test_impl_q8_smallc.c,
 * test_impl_q8_dw.c, test_impl_arm_q8.c): quantized test tensors, kernel contexts, the check
 * that every variant a test selects gives the reference kernel's bytes at 1 and 3 threads, and the
 * unfused reference chains the fused CONV2D forms are compared with.
 * Include after <cmocka.h>, "impl.h" and "kernel.h"; everything here is static (inline, so a
 * test may leave parts unused). */
#ifndef KESTREL_TESTS_Q8_VARIANTS_H
#define KESTREL_TESTS_Q8_VARIANTS_H

static char g_err[512];

/* Deterministic stream; a test may reseed g_rng. */
static uint32_t g_rng = 12345u;
static inline uint32_t urand(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return g_rng >> 8;
}

typedef struct qtensor {
    ks__rt_tensor t;
    ks__quant q;
    float scales[1024];
    int32_t zps[1024];
    void *data;
} qtensor;

/* Byte fill patterns: random, or mostly the dtype's lowest / highest code (I8 -128 / 127, U8
 * 0 / 255) for extreme products. */
enum { FILL_RANDOM = 0, FILL_LOW = 1, FILL_HIGH = 2 };

/* A tensor of dims with qcount scale / zero-point slots (set by the caller) and U8/I8 data
 * filled by `fill`; free qt->data. */
static inline void mkq_fill(qtensor *qt, ks_dtype dt, int32_t rank, const int64_t *dims,
                            uint32_t qcount, int fill) {
    memset(qt, 0, sizeof(*qt));
    qt->t.dtype = dt;
    qt->t.rank = rank;
    for (int32_t i = 0; i < rank; i++)
        qt->t.dims[i] = dims[i];
    qt->q.count = qcount;
    qt->q.scales = qt->scales;
    qt->q.zero_points = qt->zps;
    qt->t.quant = &qt->q;
    int64_t n = ks__rt_numel(&qt->t);
    qt->t.size_bytes = (size_t)n * ks_dtype_size(dt);
    qt->data = malloc(qt->t.size_bytes ? qt->t.size_bytes : 1);
    assert_non_null(qt->data);
    qt->t.data = qt->data;
    if (dt != KS_DTYPE_U8 && dt != KS_DTYPE_I8) return;
    uint8_t lo = dt == KS_DTYPE_I8 ? 0x80 : 0x00, hi = dt == KS_DTYPE_I8 ? 0x7F : 0xFF;
    for (int64_t i = 0; i < n; i++) {
        uint8_t v = (uint8_t)urand();
        if (fill == FILL_LOW) v = (urand() % 8) ? lo : v;
        if (fill == FILL_HIGH) v = (urand() % 8) ? hi : v;
        ((uint8_t *)qt->data)[i] = v;
    }
}

static inline void mkq(qtensor *qt, ks_dtype dt, int32_t rank, const int64_t *dims,
                       uint32_t qcount) {
    mkq_fill(qt, dt, rank, dims, qcount, FILL_RANDOM);
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
    ks_status st = k->infer(&ctx);
    if (st) print_error("ref infer: %s\n", g_err);
    assert_int_equal(st, KS_STATUS_OK);
    int64_t count = ks__rt_numel(y);
    y->size_bytes = (size_t)count;
    uint8_t *want = malloc((size_t)count + 1);
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
            uint8_t *got = malloc((size_t)count + 1);
            assert_non_null(got);
            memset(got, 0xA5, (size_t)count + 1);
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
            if (packed_bytes && im->pack) assert_int_equal(im->pack(&c), KS_STATUS_OK);
            c.scratch = aligned(c.scratch_bytes);
            assert_int_equal(im->run(&c), KS_STATUS_OK);
            for (int64_t i = 0; i < count; i++) {
                if (got[i] != want[i]) {
                    print_error("%s threads %u element %lld of %lld: got %d want %d\n", im->name,
                                threads, (long long)i, (long long)count, got[i], want[i]);
                    fail();
                }
            }
            assert_int_equal(got[count], 0xA5); /* no write past the end */
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

/* ---- fused CONV2D forms (ops.inc: ip[12] == 1): the unfused reference chain ---- */

/* Runs the reference kernel of `node` into y (dtype and quantization set; data allocated here). */
static inline void ref_run(const ks__node *node, ks__rt_tensor **ins, uint32_t nin, qtensor *y) {
    ks__rt_tensor *outs[1] = {&y->t};
    ks__kernel_ctx ctx = make_ctx(node, ins, nin, outs);
    const ks__kernel *k = &ks__ref_kernels()->k[node->op];
    ks_status st = k->infer(&ctx);
    if (st) print_error("ref infer: %s\n", g_err);
    assert_int_equal(st, KS_STATUS_OK);
    free(y->data);
    y->t.size_bytes = (size_t)ks__rt_numel(&y->t) * ks_dtype_size(y->t.dtype);
    y->data = y->t.data = malloc(y->t.size_bytes + 1);
    assert_non_null(y->data);
    ctx.scratch = aligned(ctx.scratch_bytes);
    st = k->run(&ctx);
    if (st) print_error("ref run: %s\n", g_err);
    assert_int_equal(st, KS_STATUS_OK);
    free(ctx.scratch);
}

/* An output tensor with per-tensor params and no data yet. */
static inline qtensor *new_out(ks_dtype dt, float scale, int32_t zp) {
    qtensor *q = malloc(sizeof(qtensor));
    assert_non_null(q);
    int64_t one[1] = {1};
    mkq(q, dt, 1, one, 1);
    free(q->data);
    q->t.data = q->data = NULL;
    q->scales[0] = scale;
    q->zps[0] = zp;
    return q;
}

static inline void free_q(qtensor *q) {
    if (!q) return;
    free(q->data);
    free(q);
}

enum {
    FUSE_RESIDUAL = 1,
    FUSE_SIGMOID,
    FUSE_TANH,
    FUSE_HARD_SWISH,
    FUSE_LEAKY,
    FUSE_SILU,
    FUSE_COUNT
};

/* The unfused chain after the conv: x (the intermediate) -> y with y's params. */
static inline void run_table_chain(int fuse, qtensor *x, qtensor *y) {
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.name = (char *)"chain";
    ks_dtype dt = x->t.dtype;
    int32_t base = dt == KS_DTYPE_U8 ? 128 : 0;
    if (fuse == FUSE_SILU) {
        qtensor *s = new_out(dt, 1.0f / 256.0f, base - 128);
        node.op = KS_OP_SIGMOID;
        ks__rt_tensor *ins[1] = {&x->t};
        ref_run(&node, ins, 1, s);
        node.op = KS_OP_MUL;
        ks__rt_tensor *ins2[2] = {&x->t, &s->t};
        ref_run(&node, ins2, 2, y);
        free_q(s);
        return;
    }
    node.op = fuse == FUSE_SIGMOID ? KS_OP_SIGMOID
              : fuse == FUSE_TANH  ? KS_OP_TANH
              : fuse == FUSE_LEAKY ? KS_OP_LEAKY_RELU
                                   : KS_OP_HARD_SWISH;
    node.fp[0] = 0.1f;
    ks__rt_tensor *ins[1] = {&x->t};
    ref_run(&node, ins, 1, y);
}

#endif /* KESTREL_TESTS_Q8_VARIANTS_H */
