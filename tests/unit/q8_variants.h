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

/* ---- conv cases: with Q8V_CONV_CASES defined before the include (test_impl_quant.c,
 * test_impl_q8_smallc.c) ---- */
#ifdef Q8V_CONV_CASES

/* Weight flavours (W_U8_128: U8 weights with zero point 128, i.e. s8 after the kernels' shift). */
enum { W_U8_TENSOR = 0, W_I8_CHANNEL_SYM = 1, W_I8_CHANNEL_ZP = 2, W_U8_128 = 3 };

typedef struct conv_case {
    int64_t n, ih, iw, ic, oc, kh, kw;
    int32_t sh, sw, dh, dw, pt, pl, pb, pr, mode, groups, act;
    int bias, wkind;
    ks_dtype xdt;
    float real_mult; /* nonzero: the output scale making x_scale * w_scale / y_scale this */
} conv_case;

/* Output scale that spreads the accumulators of a depth-`depth` reduction over the dtype. */
static inline float out_scale(float xs, float ws, int64_t depth) {
    return xs * ws * 74.0f * 74.0f * 5.0f * sqrtf((float)depth) / 255.0f;
}

static inline void fill_weights(qtensor *w, int wkind, int64_t channels) {
    if (wkind == W_U8_TENSOR || wkind == W_U8_128) {
        w->scales[0] = 0.0123f;
        w->zps[0] = wkind == W_U8_128 ? 128 : 117;
        return;
    }
    assert_true(channels <= 1024);
    for (int64_t c = 0; c < channels && c < 1024; c++) {
        w->scales[c] = 0.004f + 0.0005f * (float)(c % 13);
        w->zps[c] = wkind == W_I8_CHANNEL_SYM ? 0 : (int32_t)(c % 7) - 3;
    }
}

/* One fused conv case: the fused reference against the unfused reference chain (CONV2D with act
 * NONE to the intermediate, then the residual ADD or the table op), then every variant `check`
 * selects against the fused reference. c->bias == 2 adds +-2^30 to the bias (accumulators past
 * 2^30). Returns the number of variants that took the node. */
static inline int q8v_fused_case(const conv_case *c, int fuse, int32_t act,
                                 int (*check)(const ks__node *, ks__rt_tensor **, uint32_t,
                                              ks__rt_tensor *)) {
    int64_t groups = c->groups ? c->groups : 1;
    int64_t xd[4] = {c->n, c->ih, c->iw, c->ic}, wd[4] = {c->oc, c->kh, c->kw, c->ic / groups};
    int64_t bd[1] = {c->oc};
    qtensor *x = malloc(sizeof(qtensor)), *w = malloc(sizeof(qtensor)),
            *b = malloc(sizeof(qtensor));
    assert_true(x && w && b);
    ks_dtype dt = c->xdt;
    int32_t base = dt == KS_DTYPE_U8 ? 128 : 0;
    mkq(x, dt, 4, xd, 1);
    x->scales[0] = 0.02f;
    x->zps[0] = base + (int32_t)(urand() % 41) - 20;
    ks_dtype wdt = (c->wkind == W_U8_TENSOR || c->wkind == W_U8_128) ? KS_DTYPE_U8 : KS_DTYPE_I8;
    mkq(w, wdt, 4, wd, (c->wkind == W_U8_TENSOR || c->wkind == W_U8_128) ? 1 : (uint32_t)c->oc);
    fill_weights(w, c->wkind, c->oc);
    mkq(b, KS_DTYPE_I32, 1, bd, 0);
    for (int64_t i = 0; i < c->oc; i++) {
        int32_t v = (int32_t)(urand() % 20001) - 10000;
        /* bias 2: accumulators past 2^30 (the smallc kernels' general requantization form) */
        if (c->bias == 2) v += (int32_t)(i % 2 ? 1 : -1) * (1 << 30);
        ((int32_t *)b->data)[i] = v;
    }
    int64_t depth = c->kh * c->kw * (c->ic / groups);
    float ts = out_scale(x->scales[0], w->scales[0], depth);
    int32_t tz = base + (int32_t)(urand() % 61) - 30;
    /* unfused: CONV2D (act NONE) to the intermediate t, then ADD or the table chain */
    ks__node conv;
    memset(&conv, 0, sizeof(conv));
    conv.op = KS_OP_CONV2D;
    conv.name = (char *)"qconv";
    int32_t ip[11] = {c->sh, c->sw, c->dh,   c->dw,     c->pt,      c->pl,
                      c->pb, c->pr, c->mode, c->groups, KS_ACT_NONE};
    memcpy(conv.ip, ip, sizeof(ip));
    ks__rt_tensor *cins[3] = {&x->t, &w->t, c->bias ? &b->t : NULL};
    qtensor *t = new_out(dt, ts, tz);
    ref_run(&conv, cins, 3, t);
    qtensor *want = NULL, *r = NULL, *tab = NULL, *idx = NULL;
    ks__node fused = conv;
    fused.ip[11] = tz;
    fused.ip[12] = 1;
    fused.fp[1] = ts;
    ks__rt_tensor *fins[5] = {&x->t, &w->t, c->bias ? &b->t : NULL, NULL, NULL};
    if (fuse == FUSE_RESIDUAL) {
        r = malloc(sizeof(qtensor));
        assert_non_null(r);
        mkq(r, dt, 4, t->t.dims, 1);
        r->scales[0] = ts * (0.3f + (float)(urand() % 100) / 40.0f);
        r->zps[0] = base + (int32_t)(urand() % 81) - 40;
        float rs = r->scales[0];
        want = new_out(dt, 1.3f * (ts > rs ? ts : rs), base + (int32_t)(urand() % 21) - 10);
        ks__node add;
        memset(&add, 0, sizeof(add));
        add.op = KS_OP_ADD;
        add.name = (char *)"qadd";
        add.ip[0] = act;
        ks__rt_tensor *ains[2] = {&t->t, &r->t};
        ref_run(&add, ains, 2, want);
        fused.ip[10] = act;
        fins[3] = &r->t;
    } else {
        float ys = fuse == FUSE_SIGMOID ? 1.0f / 256.0f : fuse == FUSE_TANH ? 1.0f / 128.0f : ts;
        int32_t yz = fuse == FUSE_SIGMOID ? base - 128 : fuse == FUSE_TANH ? base : tz;
        want = new_out(dt, ys, yz);
        run_table_chain(fuse, t, want);
        /* the table: the same chain on the 256 values, index i holding value i (- 128 for I8) */
        int64_t n256[1] = {256};
        idx = malloc(sizeof(qtensor));
        assert_non_null(idx);
        mkq(idx, dt, 1, n256, 1);
        idx->scales[0] = ts;
        idx->zps[0] = tz;
        for (int i = 0; i < 256; i++)
            ((uint8_t *)idx->data)[i] = (uint8_t)(dt == KS_DTYPE_I8 ? i ^ 0x80 : i);
        tab = new_out(dt, ys, yz);
        run_table_chain(fuse, idx, tab);
        fused.ip[10] = KS_ACT_TABLE;
        fins[4] = &tab->t;
    }
    /* the fused reference must equal the unfused pair bit for bit */
    qtensor *got = new_out(dt, want->scales[0], want->zps[0]);
    ref_run(&fused, fins, 5, got);
    assert_int_equal(got->t.size_bytes, want->t.size_bytes);
    for (size_t i = 0; i < want->t.size_bytes; i++) {
        if (((uint8_t *)got->data)[i] != ((uint8_t *)want->data)[i]) {
            print_error("fuse %d act %d element %zu: fused %d unfused %d\n", fuse, act, i,
                        ((uint8_t *)got->data)[i], ((uint8_t *)want->data)[i]);
            fail();
        }
    }
    /* and every fast variant must equal the fused reference */
    qtensor *fy = new_out(dt, want->scales[0], want->zps[0]);
    int ran = check(&fused, fins, 5, &fy->t);
    free_q(fy);
    free_q(got);
    free_q(want);
    free_q(t);
    free_q(r);
    free_q(tab);
    free_q(idx);
    free_q(x), free_q(w), free_q(b);
    return ran;
}
#endif /* Q8V_CONV_CASES */

#endif /* KESTREL_TESTS_Q8_VARIANTS_H */
