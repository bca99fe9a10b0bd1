/* CPU kernel interface: how sessions call shape inference and kernels for one node.
 * Not a published API.
 *
 * Per op there is a ks__kernel { infer, run }. The session calls infer() once per reshape, in
 * graph order, and run() once per session_run. infer() must set every output's dtype, rank and
 * dims (and may request scratch memory); run() computes. Neither may allocate memory: scratch
 * comes from the session arena. Both report bad input through ks__kernel_error() and return a
 * status; they never abort.
 *
 * Reference kernels (backends/cpu/ref/) are obviously-correct scalar code and stay forever as the
 * oracle for fast kernels.
 */
#ifndef KESTREL_CPU_KERNEL_H
#define KESTREL_CPU_KERNEL_H

#include "../../src/ir.h"

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

/* The reference kernel table (filled once; thread-safe after first call returns). */
const ks__kernel_table *ks__ref_kernels(void);

/* Each family file registers its ops into the table. */
void ks__ref_register_conv(ks__kernel_table *t);        /* conv, pool, fc, resize, space ops */
void ks__ref_register_elementwise(ks__kernel_table *t); /* binary, unary, softmax, reduce... */
void ks__ref_register_data(ks__kernel_table *t);        /* reshape, concat, slice, gather... */
void ks__ref_register_mediapipe(ks__kernel_table *t);   /* MediaPipe custom ops */

/* Writes "op 'name' (node N 'node-name'): <message>" into ctx->err. Returns `status`. */
ks_status ks__kernel_error(ks__kernel_ctx *ctx, ks_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- helpers shared by kernels ---- */
int64_t ks__rt_numel(const ks__rt_tensor *t);
/* Sets out rank/dims (copy) and dtype. */
void ks__rt_set_shape(ks__rt_tensor *t, ks_dtype dtype, int32_t rank, const int64_t *dims);
/* Reads element i of an integer tensor (I32/I64/U8/I8/I16/BOOL) as int64. */
int64_t ks__rt_get_int(const ks__rt_tensor *t, int64_t i);
/* Reads element i of any numeric tensor as double (quantized values are NOT dequantized). */
double ks__rt_get_f64(const ks__rt_tensor *t, int64_t i);
/* Writes element i of any numeric tensor from double (with C conversion; ints truncate). */
void ks__rt_set_f64(ks__rt_tensor *t, int64_t i, double v);
/* Applies a fused float activation. */
float ks__act_apply(float x, int32_t act, float alpha);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_KERNEL_H */
