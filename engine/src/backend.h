/* A compute backend as the session sees it. Owned by the core; backends implement it and the
 * runtime (engine/runtime) hands one to each session it creates. The CPU backend
 * (engine/backends/cpu/backend.c, ks__cpu_backend()) is the first; docs/backends.md says what a
 * backend must do and what the interface will add for GPUs. Not a published API.
 *
 * The session keeps the graph walk, shape bookkeeping, memory planning and the run loop; per
 * node it asks the backend for shape inference and a kernel (ks__kernel / ks__impl, kernel.h). */
#ifndef KESTREL_BACKEND_H
#define KESTREL_BACKEND_H

#include "kernel.h"
#include "kestrel/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ks__backend {
    const char *name; /* "cpu"; shown by ks-inspect and profiles */
    /* Per op: shape inference and the backend's reference kernel (ops it lacks: infer NULL). */
    const ks__kernel_table *(*kernels)(void);
    /* The device's feature bits (CPU: ks__cpu_isa(), so KS_FORCE_SCALAR and KS_ISA_MAX apply),
     * read once per session and passed back to select. */
    uint32_t (*features)(void);
    /* Measured selection for ks_session_desc.tune (FAST, FULL): per-session state, used by one
     * thread at a time. cache_path may be NULL. May be NULL when the backend does not tune. */
    ks_status (*tuner_create)(const ks_allocator *alloc, ks_tune_mode mode, const char *cache_path,
                              void **tuner_out);
    void (*tuner_destroy)(void *tuner); /* NULL tuner: no-op */
    /* The variant to run ctx's node with at its inferred shapes, or NULL for the reference
     * kernel. ctx is the reshape-time context (outputs shaped, non-constant data NULL) and is
     * not modified. tuner is NULL unless the session tunes. Never fails. */
    const ks__impl *(*select)(void *tuner, const ks__kernel_ctx *ctx, uint32_t features);
} ks__backend;

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_BACKEND_H */
