/* The node-execution contract between the session and a backend's kernels: the tensor and
 * context a kernel sees, the per-op kernel (shape inference and run) and the kernel variant.
 * Owned by the core; backends implement it (docs/backends.md). Not a published API.
 *
 * Per op there is a ks__kernel { infer, run }. The session calls infer() once per reshape, in
 * graph order, and run() once per session_run. infer() must set every output's dtype, rank and
 * dims (and may request scratch memory); run() computes. Neither may allocate memory: scratch
 * comes from the session arena. Both report bad input through the context's error buffer and
 * return a status; they never abort.
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
    /* During infer: non-NULL only for constants and values already computed at reshape time
     * (shape arithmetic); during run: always valid. */
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
    /* infer may set scratch_bytes; run then gets `scratch` of that size (64-byte aligned). */
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

typedef ks_status (*ks__infer_fn)(ks__kernel_ctx *ctx);
typedef ks_status (*ks__run_fn)(ks__kernel_ctx *ctx);

typedef struct ks__kernel {
    ks__infer_fn infer;
    ks__run_fn run;
} ks__kernel;

/* Table indexed by op id (KS_OP_MAX_ID entries). Unset entries have infer == NULL. */
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

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_KERNEL_H */
