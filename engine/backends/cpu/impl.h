/* Fast CPU kernels: the kernel-variant ("impl") interface (ISA detection and the thread pool are
 * in engine/base).
 * Not a published API.
 *
 * Every op has its scalar reference kernel (ref/, the oracle) and may have fast variants. A
 * variant is a ks__impl: it declares the ISA bits it needs, a cost estimate for a given node at
 * its inferred shapes (negative = cannot handle it), a plan step (packed-weight bytes and
 * scratch), a pack step (repacks constant weights once, at reshape) and run. The session picks,
 * per node and per reshape, the cheapest variant the CPU supports (or the reference kernel), so
 * fast paths slot in without touching the graph, the format or the API.
 *
 * All variants are listed once in impls.inc (X-macro); dispatch, tests and benchmarks iterate
 * that list. Kernel symbols follow ks_<dtype>_<op>__<isa>_<tile> (STYLE.md rule 17).
 */
#ifndef KESTREL_CPU_IMPL_H
#define KESTREL_CPU_IMPL_H

#include "base/cpuinfo.h"
#include "base/pool.h"
#include "kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- kernel variants ---- */
typedef struct ks__impl {
    const char *name; /* e.g. "ks_f32_igemm__avx512_8x32"; shown by ks-inspect and profiles */
    uint32_t op;      /* ks__op it implements */
    uint32_t isa;     /* every bit must be present in ks__cpu_isa() */
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

/* All variants compiled into this build for this architecture (X-macro impls.inc), NULL-ended.
 * Includes variants the running CPU lacks: filter with ks__cpu_isa(). */
const ks__impl *const *ks__impl_list(void);

/* The cheapest supported variant for the node, or NULL (then the reference kernel runs).
 * `isa` is usually ks__cpu_isa(). */
const ks__impl *ks__impl_select(const ks__kernel_ctx *ctx, uint32_t isa);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_IMPL_H */
