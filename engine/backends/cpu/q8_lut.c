/* Quantized (U8/I8, per-tensor) elementwise ops whose output element depends only on the input
 * byte: every quantized unary op (SIGMOID, TANH, HARD_SWISH, ELU, LEAKY_RELU, the RELUs, ...),
 * QUANTIZE from U8/I8 (requantization) and DEQUANTIZE to F32. They run as a 256-entry lookup
 * table indexed by the raw input byte.
 *
 * Why the table is made by the reference kernel itself: pack() runs shape inference and the
 * reference run on a 256-element tensor holding every byte value, with the node's own params and
 * the input/output quantization, so the table is bit-exact with the oracle by construction
 * (including TFLite's 16-bit HARD_SWISH and the float-rounding of the LUT ops); no second
 * implementation of the math can drift from it. Building it costs 256 reference evaluations once
 * per reshape.
 *
 * The byte lookup uses AVX-512 VBMI's 128-entry byte permutes when the CPU has them (64 bytes
 * per few instructions), else plain C (one load per byte, unrolled), which is already ~40x faster
 * than the reference (it converts every element through float or 16-bit fixed point). The
 * variants are listed for AVX2 and NEON so that KS_FORCE_SCALAR still runs the reference alone.
 */
#include <math.h>
#include <string.h>

#include "impl.h"
#include "q8_lut.h"

/* The kernels here are registered for x86-64 and AArch64 only (impls_quant.inc); on other
 * targets (the WebAssembly build of the editor) this file compiles to nothing. */
#if defined(__x86_64__) || defined(__aarch64__)

enum {
    LUT_BYTES = 256 * sizeof(float), /* big enough for DEQUANTIZE's float table */
    LUT_IN_OFFSET = LUT_BYTES,       /* then the 256 input bytes the table is built from */
    LUT_TS_OFFSET = LUT_BYTES + 256, /* then a byte table's telescoped form (ks__q8_tscope) */
    LUT_PACKED_BYTES = LUT_BYTES + 512
};

static int q8_dtype(ks_dtype d) {
    return d == KS_DTYPE_U8 || d == KS_DTYPE_I8;
}

/* Per-tensor quantization with a positive finite scale and a zero point inside the dtype. */
static int per_tensor_ok(const ks__rt_tensor *t) {
    if (!t || !q8_dtype(t->dtype) || !t->quant || t->quant->count != 1 || !t->quant->scales ||
        !t->quant->zero_points)
        return 0;
    float s = t->quant->scales[0];
    int32_t zp = t->quant->zero_points[0];
    int32_t lo = t->dtype == KS_DTYPE_U8 ? 0 : -128, hi = t->dtype == KS_DTYPE_U8 ? 255 : 127;
    return s > 0.0f && isfinite(s) && zp >= lo && zp <= hi;
}

/* Bytes per output element (1, or 4 for DEQUANTIZE), or 0 if the node is not a byte-in LUT op. */
static size_t lut_out_size(const ks__kernel_ctx *ctx) {
    if (ctx->num_inputs < 1 || ctx->num_outputs != 1 || !ctx->in[0] || !ctx->out[0]) return 0;
    const ks__rt_tensor *x = ctx->in[0], *y = ctx->out[0];
    if (!per_tensor_ok(x) || ks__rt_numel(x) != ks__rt_numel(y) || ks__rt_numel(y) < 0) return 0;
    uint32_t op = ctx->node->op;
    if (op == KS_OP_DEQUANTIZE) return y->dtype == KS_DTYPE_F32 ? sizeof(float) : 0;
    if (op == KS_OP_QUANTIZE) return per_tensor_ok(y) ? 1 : 0;
    if (ctx->num_inputs != 1) return 0;
    return per_tensor_ok(y) && y->dtype == x->dtype ? 1 : 0;
}

static double lut_cost(const ks__kernel_ctx *ctx) {
    if (!lut_out_size(ctx)) return -1.0;
    return (double)ks__rt_numel(ctx->out[0]) + 256.0;
}

static ks_status lut_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    if (!lut_out_size(ctx))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 lookup table cannot run this node");
    *packed_bytes_out = LUT_PACKED_BYTES;
    return KS_STATUS_OK;
}

/* Runs the reference kernel of the node on the 256 byte values. */
static ks_status lut_pack(ks__kernel_ctx *ctx) {
    if (!lut_out_size(ctx))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 lookup table cannot run this node");
    if (!ctx->packed || ctx->packed_bytes < LUT_PACKED_BYTES)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 lookup table: packed buffer missing");
    const ks__kernel *ref = &ks__ref_kernels()->k[ctx->node->op];
    if (!ref->run)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "no reference kernel for the table");
    uint8_t *in_bytes = (uint8_t *)ctx->packed + LUT_IN_OFFSET;
    for (int i = 0; i < 256; i++)
        in_bytes[i] = (uint8_t)i;
    ks__rt_tensor x = *ctx->in[0], y = *ctx->out[0];
    x.rank = 1, x.dims[0] = 256, x.data = in_bytes, x.size_bytes = 256;
    y.rank = 1, y.dims[0] = 256, y.data = ctx->packed;
    y.size_bytes = 256 * lut_out_size(ctx);
    ks__rt_tensor *ins[1] = {&x}, *outs[1] = {&y};
    ks__kernel_ctx sub = *ctx;
    sub.in = ins, sub.num_inputs = 1, sub.out = outs, sub.num_outputs = 1;
    sub.scratch = NULL, sub.scratch_bytes = 0, sub.packed = NULL, sub.packed_bytes = 0;
    sub.pool = NULL;
    ks_status st = ks__ref_prepare(&sub);
    if (st) return st;
    if (sub.scratch_bytes)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL,
                                "q8 lookup table: the reference wants scratch");
    if (y.dtype != ctx->out[0]->dtype || ks__rt_numel(&y) != 256)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 lookup table: unexpected shape");
    st = ref->run(&sub);
    if (!st && lut_out_size(ctx) == 1)
        ks__q8_tscope((const uint8_t *)ctx->packed, (uint8_t *)ctx->packed + LUT_TS_OFFSET);
    return st;
}

typedef struct lut_job {
    const uint8_t *x;
    void *y;
    const void *table;
} lut_job;

/* y[i] = t[x[i]] for i in [0, n); ts: t's telescoped form (ks__q8_tscope). */
static void map_bytes(const uint8_t *restrict t, const uint8_t *restrict ts,
                      const uint8_t *restrict x, uint8_t *restrict y, size_t n) {
    size_t i = 0;
#if defined(__x86_64__)
    if (n >= 16 && (ks__cpu_isa() & KS_ISA_AVX512_VBMI)) {
        ks__q8_map_bytes_avx512vbmi(t, x, y, n);
        return;
    }
    if (n >= 16 && (ks__cpu_isa() & KS_ISA_AVX2)) {
        ks__q8_map_bytes_avx2(t, ts, x, y, n);
        return;
    }
#else
    (void)ts;
#endif
    for (; i + 8 <= n; i += 8) {
        uint8_t a0 = t[x[i]], a1 = t[x[i + 1]], a2 = t[x[i + 2]], a3 = t[x[i + 3]];
        uint8_t a4 = t[x[i + 4]], a5 = t[x[i + 5]], a6 = t[x[i + 6]], a7 = t[x[i + 7]];
        y[i] = a0, y[i + 1] = a1, y[i + 2] = a2, y[i + 3] = a3;
        y[i + 4] = a4, y[i + 5] = a5, y[i + 6] = a6, y[i + 7] = a7;
    }
    for (; i < n; i++)
        y[i] = t[x[i]];
}

static void lut_bytes_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const lut_job *j = (const lut_job *)arg;
    (void)thread;
    map_bytes((const uint8_t *)j->table, (const uint8_t *)j->table + LUT_TS_OFFSET, j->x + begin,
              (uint8_t *)j->y + begin, end - begin);
}

static void lut_floats_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const lut_job *j = (const lut_job *)arg;
    const float *restrict t = (const float *)j->table;
    const uint8_t *restrict x = j->x;
    float *restrict y = (float *)j->y;
    (void)thread;
    for (size_t i = begin; i < end; i++)
        y[i] = t[x[i]];
}

static ks_status lut_run(ks__kernel_ctx *ctx) {
    size_t osize = lut_out_size(ctx);
    if (!osize)
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 lookup table cannot run this node");
    if (!ctx->packed || ctx->packed_bytes < LUT_PACKED_BYTES)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 lookup table: packed buffer missing");
    lut_job j = {(const uint8_t *)ctx->in[0]->data, ctx->out[0]->data, ctx->packed};
    size_t n = (size_t)ks__rt_numel(ctx->out[0]);
    ks__parallel_for(ctx->pool, n, 16384, osize == 1 ? lut_bytes_range : lut_floats_range, &j);
    return KS_STATUS_OK;
}

#if defined(__x86_64__)
/* ---- DEQUANTIZE U8/I8 -> F32 with AVX-512 or AVX2: the vector formula, checked against the
 * table ----
 * The float table above runs at about one element per cycle (a byte load, a float load and a
 * store each). scale * (float)(q - zp) gives the reference's value for every byte (see
 * x86/avx512/q8_elementwise.c); pack() builds the reference table as usual, evaluates the
 * vector kernel on the same 256 bytes and keeps a flag saying whether all 256 floats are
 * bit-identical, so exactness never rests on that argument alone. Without the flag, run() uses
 * the table. */

enum {
    DQ_GOT_OFFSET = LUT_PACKED_BYTES,           /* the kernel's 256 floats */
    DQ_FLAG_OFFSET = DQ_GOT_OFFSET + LUT_BYTES, /* 1: the kernel matches the table */
    DQ_PACKED_BYTES = DQ_FLAG_OFFSET + 64
};

static int dq_describe(const ks__kernel_ctx *ctx) {
    return ctx->node->op == KS_OP_DEQUANTIZE && lut_out_size(ctx) == sizeof(float);
}

static double dq_cost(const ks__kernel_ctx *ctx) {
    if (!dq_describe(ctx)) return -1.0;
    return (double)ks__rt_numel(ctx->out[0]) / 4.0 + 512.0;
}

static ks_status dq_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    if (!dq_describe(ctx))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 dequantize cannot run this node");
    *packed_bytes_out = DQ_PACKED_BYTES;
    return KS_STATUS_OK;
}

/* The vector kernel of a variant (x86/avx512/q8_elementwise.c, x86/avx2/q8_map.c). */
typedef void (*dq_fn)(const uint8_t *x, float *y, size_t n, int is_i8, int32_t zp, float scale);

static ks_status dq_pack(ks__kernel_ctx *ctx, dq_fn fn) {
    if (!dq_describe(ctx))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 dequantize cannot run this node");
    if (!ctx->packed || ctx->packed_bytes < DQ_PACKED_BYTES)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 dequantize: packed buffer missing");
    ks_status st = lut_pack(ctx);
    if (st) return st;
    uint8_t *p = (uint8_t *)ctx->packed;
    const ks__rt_tensor *x = ctx->in[0];
    fn(p + LUT_IN_OFFSET, (float *)(void *)(p + DQ_GOT_OFFSET), 256, x->dtype == KS_DTYPE_I8,
       x->quant->zero_points[0], x->quant->scales[0]);
    p[DQ_FLAG_OFFSET] = memcmp(p, p + DQ_GOT_OFFSET, LUT_BYTES) == 0;
    return KS_STATUS_OK;
}

typedef struct dq_job {
    dq_fn fn;
    const uint8_t *x;
    float *y;
    int is_i8;
    int32_t zp;
    float scale;
} dq_job;

static void dq_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const dq_job *j = (const dq_job *)arg;
    (void)thread;
    j->fn(j->x + begin, j->y + begin, end - begin, j->is_i8, j->zp, j->scale);
}

static ks_status dq_run(ks__kernel_ctx *ctx, dq_fn fn) {
    if (!dq_describe(ctx))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 dequantize cannot run this node");
    if (!ctx->packed || ctx->packed_bytes < DQ_PACKED_BYTES)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 dequantize: packed buffer missing");
    const ks__rt_tensor *x = ctx->in[0];
    const size_t n = (size_t)ks__rt_numel(ctx->out[0]);
    if (!((const uint8_t *)ctx->packed)[DQ_FLAG_OFFSET]) {
        lut_job j = {(const uint8_t *)x->data, ctx->out[0]->data, ctx->packed};
        ks__parallel_for(ctx->pool, n, 16384, lut_floats_range, &j);
        return KS_STATUS_OK;
    }
    dq_job j = {fn,
                (const uint8_t *)x->data,
                (float *)ctx->out[0]->data,
                x->dtype == KS_DTYPE_I8,
                x->quant->zero_points[0],
                x->quant->scales[0]};
    ks__parallel_for(ctx->pool, n, 16384, dq_range, &j);
    return KS_STATUS_OK;
}

static ks_status dq_pack_avx512(ks__kernel_ctx *ctx) {
    return dq_pack(ctx, ks__q8_dequantize_avx512);
}
static ks_status dq_run_avx512(ks__kernel_ctx *ctx) {
    return dq_run(ctx, ks__q8_dequantize_avx512);
}
static ks_status dq_pack_avx2(ks__kernel_ctx *ctx) {
    return dq_pack(ctx, ks__q8_dequantize_avx2);
}
static ks_status dq_run_avx2(ks__kernel_ctx *ctx) {
    return dq_run(ctx, ks__q8_dequantize_avx2);
}

const ks__impl ks_q8_dequantize__avx512 = {"ks_q8_dequantize__avx512",
                                           KS_OP_DEQUANTIZE,
                                           KS_ISA_AVX512,
                                           dq_cost,
                                           dq_plan,
                                           dq_pack_avx512,
                                           dq_run_avx512};
const ks__impl ks_q8_dequantize__avx2 = {"ks_q8_dequantize__avx2",
                                         KS_OP_DEQUANTIZE,
                                         KS_ISA_AVX2,
                                         dq_cost,
                                         dq_plan,
                                         dq_pack_avx2,
                                         dq_run_avx2};
#endif

/* ---- CONCAT of U8/I8 tensors ----
 * Each input reaches the output through a byte map: a copy when its quantization matches the
 * output's, else the reference's float requantization, then the fused activation's clamp. The
 * map of input i is made like the tables above: the reference CONCAT run on a 256-element 1-D
 * copy of input i alone (same node params, axis 0), so it is exact by construction. Inputs whose
 * map is the identity are copied with memcpy. */

enum { CONCAT_MAX_INPUTS = 64 };

typedef struct concat_geom {
    int64_t outer;                    /* product of dims before the axis */
    int64_t inner[CONCAT_MAX_INPUTS]; /* bytes of input i per outer index */
    int64_t out_inner;                /* bytes of the output per outer index */
    uint32_t num_inputs;
} concat_geom;

static int concat_describe(const ks__kernel_ctx *ctx, concat_geom *g) {
    memset(g, 0, sizeof(*g));
    if (ctx->node->op != KS_OP_CONCAT || ctx->num_outputs != 1 || ctx->num_inputs < 1 ||
        ctx->num_inputs > CONCAT_MAX_INPUTS || !ctx->out[0])
        return -1;
    const ks__rt_tensor *y = ctx->out[0];
    if (!per_tensor_ok(y) || y->rank < 1) return -1;
    int32_t axis = ctx->node->ip[0];
    if (axis < 0) axis += y->rank;
    if (axis < 0 || axis >= y->rank) return -1;
    int64_t outer = 1, inner = 1, sum = 0;
    for (int32_t d = 0; d < axis; d++)
        outer *= y->dims[d];
    for (int32_t d = axis + 1; d < y->rank; d++)
        inner *= y->dims[d];
    for (uint32_t i = 0; i < ctx->num_inputs; i++) {
        const ks__rt_tensor *x = ctx->in[i];
        if (!per_tensor_ok(x) || x->dtype != y->dtype || x->rank != y->rank) return -1;
        for (int32_t d = 0; d < y->rank; d++)
            if (d != axis && x->dims[d] != y->dims[d]) return -1;
        g->inner[i] = x->dims[axis] * inner;
        sum += x->dims[axis];
    }
    if (sum != y->dims[axis] || outer < 0 || inner < 0) return -1;
    g->outer = outer;
    g->out_inner = sum * inner;
    g->num_inputs = ctx->num_inputs;
    return 0;
}

/* Packed: per input a 256-byte map and its telescoped form (ks__q8_tscope), then one flag byte
 * per input (1: identity), then the 256 input bytes the maps are built from. */
enum { CONCAT_MAP_BYTES = 512 };
static size_t concat_packed_bytes(uint32_t num_inputs) {
    return (size_t)num_inputs * CONCAT_MAP_BYTES + CONCAT_MAX_INPUTS + 256;
}

static double concat_cost(const ks__kernel_ctx *ctx) {
    concat_geom g;
    if (concat_describe(ctx, &g)) return -1.0;
    return (double)ks__rt_numel(ctx->out[0]) / 4.0 + 256.0 * g.num_inputs;
}

static ks_status concat_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    concat_geom g;
    if (concat_describe(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 concat cannot run this node");
    *packed_bytes_out = concat_packed_bytes(g.num_inputs);
    return KS_STATUS_OK;
}

static ks_status concat_pack(ks__kernel_ctx *ctx) {
    concat_geom g;
    if (concat_describe(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 concat cannot run this node");
    if (!ctx->packed || ctx->packed_bytes < concat_packed_bytes(g.num_inputs))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 concat: packed buffer missing");
    const ks__kernel *ref = &ks__ref_kernels()->k[KS_OP_CONCAT];
    uint8_t *maps = (uint8_t *)ctx->packed;
    uint8_t *identity = maps + (size_t)g.num_inputs * CONCAT_MAP_BYTES;
    uint8_t *in_bytes = identity + CONCAT_MAX_INPUTS;
    for (int i = 0; i < 256; i++)
        in_bytes[i] = (uint8_t)i;
    ks__node node = *ctx->node;
    node.ip[0] = 0;
    for (uint32_t i = 0; i < g.num_inputs; i++) {
        ks__rt_tensor x = *ctx->in[i], y = *ctx->out[0];
        x.rank = 1, x.dims[0] = 256, x.data = in_bytes, x.size_bytes = 256;
        uint8_t *map = maps + (size_t)i * CONCAT_MAP_BYTES;
        y.rank = 1, y.dims[0] = 256, y.data = map, y.size_bytes = 256;
        ks__rt_tensor *ins[1] = {&x}, *outs[1] = {&y};
        ks__kernel_ctx sub = *ctx;
        sub.node = &node;
        sub.in = ins, sub.num_inputs = 1, sub.out = outs, sub.num_outputs = 1;
        sub.scratch = NULL, sub.scratch_bytes = 0, sub.packed = NULL, sub.packed_bytes = 0;
        sub.pool = NULL;
        ks_status st = ks__ref_prepare(&sub);
        if (!st && (sub.scratch_bytes || ks__rt_numel(&y) != 256))
            st = ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 concat: unexpected table shape");
        if (!st) st = ref->run(&sub);
        if (st) return st;
        identity[i] = memcmp(map, in_bytes, 256) == 0;
        ks__q8_tscope(map, map + 256);
    }
    return KS_STATUS_OK;
}

typedef struct concat_job {
    const concat_geom *g;
    const ks__kernel_ctx *ctx;
    const uint8_t *maps, *identity;
} concat_job;

/* Input by input (so each map's setup is paid once per range, not per pixel), the rows of the
 * range: input i's run of inner[i] bytes per outer index goes to its offset in the output row. */
static void concat_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const concat_job *j = (const concat_job *)arg;
    const concat_geom *g = j->g;
    const size_t out_inner = (size_t)g->out_inner, rows = end - begin;
    uint8_t *y = (uint8_t *)j->ctx->out[0]->data + begin * out_inner;
    (void)thread;
    for (uint32_t i = 0; i < g->num_inputs; y += (size_t)g->inner[i], i++) {
        size_t len = (size_t)g->inner[i];
        const uint8_t *src = (const uint8_t *)j->ctx->in[i]->data + begin * len;
        if (j->identity[i]) {
            if (len == out_inner) {
                memcpy(y, src, rows * len);
                continue;
            }
            for (size_t o = 0; o < rows; o++)
                ks__q8_copy_run(y + o * out_inner, src + o * len, len);
            continue;
        }
        const uint8_t *map = j->maps + (size_t)i * CONCAT_MAP_BYTES;
#if defined(__x86_64__)
        if (len >= 16 && !(ks__cpu_isa() & KS_ISA_AVX512_VBMI) && (ks__cpu_isa() & KS_ISA_AVX2)) {
            ks__q8_map_rows_avx2(map, map + 256, src, len, y, out_inner, len, rows);
            continue;
        }
#endif
        for (size_t o = 0; o < rows; o++)
            map_bytes(map, map + 256, src + o * len, y + o * out_inner, len);
    }
}

static ks_status concat_run(ks__kernel_ctx *ctx) {
    concat_geom g;
    if (concat_describe(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 concat cannot run this node");
    if (!ctx->packed || ctx->packed_bytes < concat_packed_bytes(g.num_inputs))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 concat: packed buffer missing");
    concat_job j = {&g, ctx, (const uint8_t *)ctx->packed,
                    (const uint8_t *)ctx->packed + (size_t)g.num_inputs * CONCAT_MAP_BYTES};
    size_t grain = g.out_inner > 0 ? (size_t)(16384 / g.out_inner) + 1 : 1;
    ks__parallel_for(ctx->pool, (size_t)g.outer, grain, concat_range, &j);
    return KS_STATUS_OK;
}

/* ---- PRELU of U8/I8 tensors with a constant alpha per channel (last axis) or per tensor ----
 * The output byte depends on the input byte and the channel's alpha only, so each channel gets a
 * 256-entry map, made by the reference PRELU run once on a [256, C] tensor whose row i holds the
 * byte i in every channel (exact by construction). */

enum { PRELU_MAX_CHANNELS = 4096 };

typedef struct prelu_geom {
    int64_t channels, outer;
} prelu_geom;

static int prelu_describe(const ks__kernel_ctx *ctx, prelu_geom *g) {
    memset(g, 0, sizeof(*g));
    if (ctx->node->op != KS_OP_PRELU || ctx->num_inputs != 2 || ctx->num_outputs != 1) return -1;
    const ks__rt_tensor *x = ctx->in[0], *al = ctx->in[1], *y = ctx->out[0];
    if (!x || !al || !y || !al->data || !per_tensor_ok(x) || !per_tensor_ok(al) ||
        !per_tensor_ok(y) || al->dtype != x->dtype || y->dtype != x->dtype || x->rank < 1 ||
        y->rank != x->rank)
        return -1;
    for (int32_t d = 0; d < x->rank; d++)
        if (x->dims[d] != y->dims[d]) return -1;
    int64_t c = x->dims[x->rank - 1], an = ks__rt_numel(al);
    /* alpha: one value, or the channels along the last axis with every other dim 1 */
    if (an != 1) {
        if (an != c || al->rank < 1 || al->rank > x->rank || al->dims[al->rank - 1] != c) return -1;
    }
    if (c < 1 || c > PRELU_MAX_CHANNELS) return -1;
    g->channels = c;
    g->outer = ks__rt_numel(x) / c;
    return 0;
}

/* Packed: C maps of 256 bytes, then the [256, C] input and output of the table run. */
static size_t prelu_packed_bytes(int64_t channels) {
    return (size_t)channels * 256 * 3;
}

static double prelu_cost(const ks__kernel_ctx *ctx) {
    prelu_geom g;
    if (prelu_describe(ctx, &g)) return -1.0;
    return (double)ks__rt_numel(ctx->out[0]) + 256.0 * (double)g.channels;
}

static ks_status prelu_plan(ks__kernel_ctx *ctx, size_t *packed_bytes_out) {
    prelu_geom g;
    if (prelu_describe(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 prelu cannot run this node");
    *packed_bytes_out = prelu_packed_bytes(g.channels);
    return KS_STATUS_OK;
}

static ks_status prelu_pack(ks__kernel_ctx *ctx) {
    prelu_geom g;
    if (prelu_describe(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 prelu cannot run this node");
    if (!ctx->packed || ctx->packed_bytes < prelu_packed_bytes(g.channels))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 prelu: packed buffer missing");
    const size_t c = (size_t)g.channels;
    uint8_t *maps = (uint8_t *)ctx->packed, *in_bytes = maps + c * 256, *out = in_bytes + c * 256;
    for (size_t i = 0; i < 256; i++)
        memset(in_bytes + i * c, (int)i, c);
    ks__rt_tensor x = *ctx->in[0], y = *ctx->out[0];
    x.rank = 2, x.dims[0] = 256, x.dims[1] = g.channels, x.data = in_bytes, x.size_bytes = c * 256;
    y.rank = 2, y.dims[0] = 256, y.dims[1] = g.channels, y.data = out, y.size_bytes = c * 256;
    ks__rt_tensor *ins[2] = {&x, ctx->in[1]}, *outs[1] = {&y};
    ks__kernel_ctx sub = *ctx;
    sub.in = ins, sub.num_inputs = 2, sub.out = outs, sub.num_outputs = 1;
    sub.scratch = NULL, sub.scratch_bytes = 0, sub.packed = NULL, sub.packed_bytes = 0;
    sub.pool = NULL;
    const ks__kernel *ref = &ks__ref_kernels()->k[KS_OP_PRELU];
    ks_status st = ks__ref_prepare(&sub);
    if (st) return st;
    /* broadcasting may have given the output a leading 1 (alpha of higher rank) */
    if (sub.scratch_bytes || ks__rt_numel(&y) != (int64_t)(c * 256) ||
        y.dims[y.rank - 1] != g.channels)
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 prelu: unexpected table shape");
    if ((st = ref->run(&sub))) return st;
    for (size_t i = 0; i < 256; i++)
        for (size_t k = 0; k < c; k++)
            maps[k * 256 + i] = out[i * c + k];
    return KS_STATUS_OK;
}

typedef struct prelu_job {
    const uint8_t *x, *maps;
    uint8_t *y;
    size_t channels;
} prelu_job;

static void prelu_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    const prelu_job *j = (const prelu_job *)arg;
    const size_t c = j->channels;
    (void)thread;
    for (size_t o = begin; o < end; o++) {
        const uint8_t *restrict x = j->x + o * c;
        uint8_t *restrict y = j->y + o * c;
        const uint8_t *restrict t = j->maps;
        for (size_t k = 0; k < c; k++, t += 256)
            y[k] = t[x[k]];
    }
}

static ks_status prelu_run(ks__kernel_ctx *ctx) {
    prelu_geom g;
    if (prelu_describe(ctx, &g))
        return ks__kernel_error(ctx, KS_STATUS_UNSUPPORTED, "q8 prelu cannot run this node");
    if (!ctx->packed || ctx->packed_bytes < prelu_packed_bytes(g.channels))
        return ks__kernel_error(ctx, KS_STATUS_INTERNAL, "q8 prelu: packed buffer missing");
    prelu_job j = {(const uint8_t *)ctx->in[0]->data, (const uint8_t *)ctx->packed,
                   (uint8_t *)ctx->out[0]->data, (size_t)g.channels};
    ks__parallel_for(ctx->pool, (size_t)g.outer, (size_t)(16384 / g.channels) + 1, prelu_range, &j);
    return KS_STATUS_OK;
}

#if defined(__x86_64__)
#define LUT_ISA KS_ISA_AVX2
#define LUT_IMPL(sym, op)                                                                          \
    const ks__impl sym##__avx2 = {#sym "__avx2", op,       LUT_ISA, lut_cost,                      \
                                  lut_plan,      lut_pack, lut_run};
#elif defined(__aarch64__)
#define LUT_ISA KS_ISA_NEON
#define LUT_IMPL(sym, op)                                                                          \
    const ks__impl sym##__neon = {#sym "__neon", op,       LUT_ISA, lut_cost,                      \
                                  lut_plan,      lut_pack, lut_run};
#endif

#ifdef LUT_IMPL
LUT_IMPL(ks_q8_lut_sigmoid, KS_OP_SIGMOID)
LUT_IMPL(ks_q8_lut_tanh, KS_OP_TANH)
LUT_IMPL(ks_q8_lut_hard_swish, KS_OP_HARD_SWISH)
LUT_IMPL(ks_q8_lut_hard_sigmoid, KS_OP_HARD_SIGMOID)
LUT_IMPL(ks_q8_lut_elu, KS_OP_ELU)
LUT_IMPL(ks_q8_lut_leaky_relu, KS_OP_LEAKY_RELU)
LUT_IMPL(ks_q8_lut_relu, KS_OP_RELU)
LUT_IMPL(ks_q8_lut_relu6, KS_OP_RELU6)
LUT_IMPL(ks_q8_lut_relu_n1_to_1, KS_OP_RELU_N1_TO_1)
LUT_IMPL(ks_q8_lut_clip, KS_OP_CLIP)
LUT_IMPL(ks_q8_lut_exp, KS_OP_EXP)
LUT_IMPL(ks_q8_lut_log, KS_OP_LOG)
LUT_IMPL(ks_q8_lut_sqrt, KS_OP_SQRT)
LUT_IMPL(ks_q8_lut_rsqrt, KS_OP_RSQRT)
LUT_IMPL(ks_q8_lut_abs, KS_OP_ABS)
LUT_IMPL(ks_q8_lut_neg, KS_OP_NEG)
LUT_IMPL(ks_q8_lut_floor, KS_OP_FLOOR)
LUT_IMPL(ks_q8_lut_ceil, KS_OP_CEIL)
LUT_IMPL(ks_q8_lut_requantize, KS_OP_QUANTIZE)
LUT_IMPL(ks_q8_lut_dequantize, KS_OP_DEQUANTIZE)
#endif

#if defined(__x86_64__)
const ks__impl ks_q8_concat__avx2 = {"ks_q8_concat__avx2", KS_OP_CONCAT, KS_ISA_AVX2, concat_cost,
                                     concat_plan,          concat_pack,  concat_run};
const ks__impl ks_q8_prelu__avx2 = {"ks_q8_prelu__avx2", KS_OP_PRELU, KS_ISA_AVX2, prelu_cost,
                                    prelu_plan,          prelu_pack,  prelu_run};
#elif defined(__aarch64__)
const ks__impl ks_q8_concat__neon = {"ks_q8_concat__neon", KS_OP_CONCAT, KS_ISA_NEON, concat_cost,
                                     concat_plan,          concat_pack,  concat_run};
const ks__impl ks_q8_prelu__neon = {"ks_q8_prelu__neon", KS_OP_PRELU, KS_ISA_NEON, prelu_cost,
                                    prelu_plan,          prelu_pack,  prelu_run};
#endif

#endif /* x86-64 or AArch64 */
