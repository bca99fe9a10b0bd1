/* The node-execution contract between the session and a backend's kernels: the tensor and
 * context a kernel sees, the per-op kernel (plan and run), the kernel variant, and the helpers
 * that the core's shape inference and the kernels share. Owned by the core; backends implement
 * it (docs/backends.md). Not a published API.
 *
 * Shape inference belongs to the core (shape.h: ks__op_infer, one function per op), so a backend
 * implements only kernels. Per op a backend has a ks__kernel { plan, run }. At every reshape the
 * session calls ks__op_infer() once per node, in graph order, then the kernel's plan() (when not
 * NULL) for the memory the kernel needs, and at every session_run the kernel's run(). Infer sets
 * every output's dtype, rank and dims; plan may request scratch memory; run computes. None of
 * them may allocate memory: scratch comes from the session arena. All report bad input through
 * the context's error buffer and return a status; they never abort.
 */
#ifndef KESTREL_KERNEL_H
#define KESTREL_KERNEL_H

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A tensor as a kernel sees it during one reshape/run. */
typedef struct ks__rt_tensor {
    ks_dtype dtype;
    int32_t rank;
    int64_t dims[KS_MAX_RANK];
    /* During shape inference and plan: non-NULL only for constants and values already computed
     * at reshape time (shape arithmetic); during run: always valid. */
    void *data;
    size_t size_bytes;      /* numel * dtype size, set by the session after infer */
    const ks__quant *quant; /* never NULL; quant->count == 0 means float / not quantized */
    const ks__tensor *def;  /* graph definition (name, flags) */
} ks__rt_tensor;

typedef struct ks__kernel_ctx {
    const ks__node *node;
    uint32_t node_index;
    ks__rt_tensor **in; /* num_inputs entries; NULL for absent optional inputs */
    uint32_t num_inputs;
    ks__rt_tensor **out;
    uint32_t num_outputs;
    /* plan may set scratch_bytes; run then gets `scratch` of that size (64-byte aligned). */
    size_t scratch_bytes;
    void *scratch;
    char *err; /* message buffer (err_cap bytes) */
    size_t err_cap;
    /* Fast variants only (impl.h): packed constant data made at reshape, the thread pool (NULL:
     * run on the calling thread) and its size. Reference kernels ignore these. */
    void *packed;
    size_t packed_bytes;
    struct ks__pool *pool;
    uint32_t num_threads;
} ks__kernel_ctx;

typedef ks_status (*ks__plan_fn)(ks__kernel_ctx *ctx);
typedef ks_status (*ks__run_fn)(ks__kernel_ctx *ctx);

/* A backend's kernel of one op. plan (may be NULL: no scratch) runs at reshape right after the
 * core's shape inference, on the same context (outputs shaped, data as during inference); it may
 * set ctx->scratch_bytes. run computes. */
typedef struct ks__kernel {
    ks__plan_fn plan;
    ks__run_fn run;
} ks__kernel;

/* Table indexed by op id (KS_OP_MAX_ID entries). Unset entries have run == NULL. */
typedef struct ks__kernel_table {
    ks__kernel k[KS_OP_MAX_ID];
} ks__kernel_table;

/* ---- kernel variants ----
 * A backend may have several implementations of an op (ISA, tiling, algorithm). Each is a
 * ks__impl: the session asks the backend to pick one per node and reshape (docs/backends.md),
 * then plans, packs and runs it; without one the backend's reference kernel runs. */
typedef struct ks__impl {
    const char *name; /* e.g. "ks_f32_igemm__avx512_8x32"; shown by ks-inspect and profiles */
    uint32_t op;      /* ks__op it implements */
    uint32_t isa;     /* backend features it needs (CPU: every bit present in ks__cpu_isa()) */
    /* Estimated cost (any consistent unit, lower wins) of running ctx->node at its inferred
     * shapes, or a negative value if this variant cannot handle it (dtype, params, shapes).
     * Inputs/outputs have dtype, rank and dims set; constant inputs have data. */
    double (*cost)(const ks__kernel_ctx *ctx);
    /* At reshape: bytes of persistent packed data (e.g. repacked weights; 0 if none), and may set
     * ctx->scratch_bytes. ctx->num_threads is set: per-thread scratch is the impl's business. */
    ks_status (*plan)(ks__kernel_ctx *ctx, size_t *packed_bytes_out);
    /* At reshape, after plan: fills ctx->packed (ctx->packed_bytes, 64-byte aligned). May be
     * NULL when packed_bytes is 0. */
    ks_status (*pack)(ks__kernel_ctx *ctx);
    /* Computes; may use ctx->pool via ks__parallel_for. Never allocates. */
    ks_status (*run)(ks__kernel_ctx *ctx);
} ks__impl;

/* ---- helpers shared by shape inference (shape.h) and kernels: one copy, in the core ----
 * (kernel.c; the small ones inline here, since reference kernels call them per element) */

/* Writes "op 'name' (node N 'node-name'): <message>" into ctx->err. Returns `status`. */
ks_status ks__kernel_error(ks__kernel_ctx *ctx, ks_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int64_t ks__rt_numel(const ks__rt_tensor *t);
/* Sets out rank/dims (copy) and dtype. */
void ks__rt_set_shape(ks__rt_tensor *t, ks_dtype dtype, int32_t rank, const int64_t *dims);
/* Reads element i of an integer tensor (I32/I64/U8/I8/I16/BOOL) as int64. */
int64_t ks__rt_get_int(const ks__rt_tensor *t, int64_t i);
/* The tensor's graph name for messages ("?" when it has none). t may be NULL. */
const char *ks__rt_name(const ks__rt_tensor *t);
/* Formats dims as "[a,b,c]" into buf (cap bytes, truncated to fit). */
void ks__format_dims(char *buf, size_t cap, int32_t rank, const int64_t *dims);

/* Input i of the node, or NULL when it is absent (optional) or beyond num_inputs. */
static inline ks__rt_tensor *ks__kernel_input(const ks__kernel_ctx *ctx, uint32_t i) {
    return i < ctx->num_inputs ? ctx->in[i] : NULL;
}

/* F32, F16 */
static inline bool ks__dtype_is_float(ks_dtype d) {
    return d == KS_DTYPE_F32 || d == KS_DTYPE_F16;
}

/* I32, I64, U8, I8, I16 */
static inline bool ks__dtype_is_int(ks_dtype d) {
    return d == KS_DTYPE_I32 || d == KS_DTYPE_I64 || d == KS_DTYPE_U8 || d == KS_DTYPE_I8 ||
           d == KS_DTYPE_I16;
}

/* U8, I8, I16: the dtypes quantized tensors use. */
static inline bool ks__dtype_is_qint(ks_dtype d) {
    return d == KS_DTYPE_U8 || d == KS_DTYPE_I8 || d == KS_DTYPE_I16;
}

/* Value range of an integer dtype (BOOL: 0..1); other dtypes: the int64 range. */
static inline int64_t ks__dtype_min(ks_dtype d) {
    switch (d) {
    case KS_DTYPE_U8:
        return 0;
    case KS_DTYPE_I8:
        return INT8_MIN;
    case KS_DTYPE_I16:
        return INT16_MIN;
    case KS_DTYPE_I32:
        return INT32_MIN;
    case KS_DTYPE_BOOL:
        return 0;
    default:
        return INT64_MIN;
    }
}

static inline int64_t ks__dtype_max(ks_dtype d) {
    switch (d) {
    case KS_DTYPE_U8:
        return UINT8_MAX;
    case KS_DTYPE_I8:
        return INT8_MAX;
    case KS_DTYPE_I16:
        return INT16_MAX;
    case KS_DTYPE_I32:
        return INT32_MAX;
    case KS_DTYPE_BOOL:
        return 1;
    default:
        return INT64_MAX;
    }
}

/* True for a U8/I8/I16 tensor that carries quantization parameters. */
static inline bool ks__rt_is_quantized(const ks__rt_tensor *t) {
    return t->quant->count > 0 && ks__dtype_is_qint(t->dtype);
}

/* Per-tensor scale and zero point (the first entries); 1 and 0 when t is not quantized. */
static inline float ks__rt_qscale(const ks__rt_tensor *t) {
    return t->quant->count > 0 && t->quant->scales ? t->quant->scales[0] : 1.0f;
}

static inline int32_t ks__rt_qzp(const ks__rt_tensor *t) {
    return t->quant->count > 0 && t->quant->zero_points ? t->quant->zero_points[0] : 0;
}

/* Resolves an axis that may count from the end; returns -1 when out of range. */
static inline int32_t ks__resolve_axis(int32_t axis, int32_t rank) {
    if (axis < 0) axis += rank;
    return axis >= 0 && axis < rank ? axis : -1;
}

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_KERNEL_H */
