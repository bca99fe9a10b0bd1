/* Fast CPU kernels: ISA detection, the thread pool, and the kernel-variant ("impl") interface.
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

#include "kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- ISA features (bits) ---- */
#define KS_ISA_AVX2 (1u << 0)        /* AVX2 + FMA3 + F16C */
#define KS_ISA_AVX512 (1u << 1)      /* AVX-512 F + BW + VL + DQ */
#define KS_ISA_AVX512_VNNI (1u << 2) /* AVX-512 VNNI */
#define KS_ISA_AVX_VNNI (1u << 3)    /* AVX-VNNI (VEX-encoded) */
#define KS_ISA_AVX512_VBMI (1u << 4) /* AVX-512 VBMI (byte permutes) */
#define KS_ISA_NEON (1u << 8)        /* AArch64 Advanced SIMD (baseline on arm64) */
#define KS_ISA_NEON_FP16 (1u << 9)   /* FEAT_FP16 arithmetic (asimdhp) */
#define KS_ISA_NEON_DOT (1u << 10)   /* FEAT_DotProd (asimddp) */

/* Features of the running CPU, detected once. KS_FORCE_SCALAR=1 in the environment makes this
 * return 0, so only the reference kernels run; KS_ISA_MAX=<level> keeps only the features of its
 * architecture at or below that level (scalar, avx2, avxvnni, avx512, avx512vnni; neon, neonfp16,
 * neondot), so a machine with AVX-512 can run and time its AVX2 kernels. */
uint32_t ks__cpu_isa(void);
/* The bits KS_ISA_MAX=level keeps (~0u for NULL, "" or an unknown level). */
uint32_t ks__isa_cap(const char *level);
/* CPU model string (x86 brand string, or "aarch64"), static storage. */
const char *ks__cpu_name(void);
/* "avx2,avx512,..." for a bit set, into buf. */
void ks__isa_string(uint32_t isa, char *buf, size_t cap);

/* ---- thread pool ----
 * Workers spin briefly for new work, then sleep on a condition variable. parallel_for splits
 * [0, num_items) into contiguous chunks of at least `grain` items; the calling thread takes part.
 * fn(arg, begin, end, thread) runs with thread in [0, num_threads). */
typedef struct ks__pool ks__pool;
typedef void (*ks__range_fn)(void *arg, size_t begin, size_t end, uint32_t thread);
ks_status ks__pool_create(const ks_allocator *alloc, uint32_t num_threads, ks__pool **pool_out);
/* flags: KS_POOL_BIND_CPUS binds each worker to its own CPU (pool.c says when and why). */
#define KS_POOL_BIND_CPUS 0x1u
ks_status ks__pool_create_ex(const ks_allocator *alloc, uint32_t num_threads, uint32_t flags,
                             ks__pool **pool_out);
void ks__pool_destroy(ks__pool *pool);
uint32_t ks__pool_threads(const ks__pool *pool); /* 1 for NULL */
void ks__parallel_for(ks__pool *pool, size_t num_items, size_t grain, ks__range_fn fn, void *arg);

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
