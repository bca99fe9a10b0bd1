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
#include "cpu_kernel.h"
#include "src/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* All variants compiled into this build for this architecture (X-macro impls.inc), NULL-ended.
 * Includes variants the running CPU lacks: filter with ks__cpu_isa(). */
const ks__impl *const *ks__impl_list(void);

/* The CPU backend (backend.c): what the runtime gives the sessions it creates. */
const ks__backend *ks__cpu_backend(void);

/* im's cost for the node (impl.h's ks__impl.cost), or negative when it is for another op,
 * needs an ISA bit outside `isa`, or cannot take the node's dtypes (F16 activations: ks_f16_*
 * variants only). Selection and tuning ask through this. */
double ks__impl_cost(const ks__impl *im, const ks__kernel_ctx *ctx, uint32_t isa);

/* The cheapest supported variant for the node, or NULL (then the reference kernel runs).
 * `isa` is usually ks__cpu_isa(). */
const ks__impl *ks__impl_select(const ks__kernel_ctx *ctx, uint32_t isa);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_IMPL_H */
