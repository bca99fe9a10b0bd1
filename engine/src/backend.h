/* A compute backend as the session sees it. Owned by the core; backends implement it and the
 * runtime (engine/runtime) hands one to each session it creates. The CPU backend
 * (engine/backends/cpu/backend.c, ks__cpu_backend()) is the first; docs/backends.md says what a
 * backend must do and what the interface will add for GPUs. Not a published API.
 *
 * The session keeps the graph walk, shape inference (the core's: shape.h), memory planning and
 * the run loop; per node it asks the backend for a kernel (ks__kernel / ks__impl, kernel.h). */
#ifndef KESTREL_BACKEND_H
#define KESTREL_BACKEND_H

#include "kernel.h"
#include "kestrel/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A partition (partition.h): a maximal run, in execution order, of nodes one device backend
 * runs. The session builds it at reshape; the backend compiles it then and runs it once per
 * ks_session_run. Tensor ids index the session's graph. */
typedef struct ks__partition {
    uint32_t index;        /* 0, 1, ... in execution order */
    const uint32_t *nodes; /* node indices, execution order */
    uint32_t num_nodes;
    const int32_t *inputs; /* host tensors the partition reads: uploaded at submit */
    uint32_t num_inputs;
    const int32_t *outputs; /* tensors it produces that the host reads: downloaded at wait */
    uint32_t num_outputs;
} ks__partition;

/* What a device backend's wait reports, for the profiler. */
typedef struct ks__partition_times {
    uint64_t upload_ns, compute_ns, download_ns;
    uint64_t upload_bytes, download_bytes;
    /* Optional (NULL: not measured): per node of the partition, in its order, the device time
     * of the node's work and the name of what ran it; owned by the program, valid until its
     * next run. The node times add up to compute_ns. */
    const uint64_t *node_ns;
    const char *const *node_kernel;
    /* Optional (0 / NULL: not counted): the device dispatches (kernel launches) of one run of
     * the partition, and per node of it (node_ns's order). */
    uint32_t dispatches;
    const uint32_t *node_dispatches;
} ks__partition_times;

typedef struct ks__backend {
    const char *name; /* "cpu"; shown by ks-inspect and profiles */
    /* Per op: the backend's reference kernel, plan and run (ops it lacks: run NULL). */
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

    /* ---- Device backends (GPUs; docs/backends.md, "Devices"). The CPU is the host and leaves
     * every member below NULL: its nodes run in the session's own loop. A session created with a
     * device backend runs the nodes the device supports in partitions and everything else on
     * the host. Every function reports failure as a status with one line in err (err_cap
     * bytes) and never aborts. A device backend sets name and the seven members below (identity is
     * optional); the session never calls its kernels, features, select or tuner members (it asks
     * the host backend), so they may be NULL. ---- */

    /* Opens the device for one session (its queue, memory, pipelines). desc (NULL: defaults)
     * is the session's: the device reads the options that concern it (precision for its number
     * format, tune_cache_path for caches kept beside the tuning cache) and keeps no pointer into
     * it. Fails with KS_STATUS_UNSUPPORTED and a reason when there is no usable device. */
    ks_status (*device_create)(const ks_allocator *alloc, const ks_session_desc *desc,
                               void **dev_out, char *err, size_t err_cap);
    void (*device_destroy)(void *dev); /* NULL dev: no-op */
    /* Whether the device runs ctx's node at its inferred dtypes and shapes (ctx as for select:
     * outputs shaped, constant inputs have data). */
    bool (*supports)(void *dev, const ks__kernel_ctx *ctx);
    /* At reshape: prepares part (pipelines, device memory, packed constants). ctx[k] is node
     * part->nodes[k]'s context (constants and reshape-time values have data; other tensors are
     * shaped). The data pointers of the part's input and output tensors are host memory that
     * stays valid and fixed until release: submit reads inputs from them, wait writes outputs
     * into them. Everything else the backend needs it copies now. */
    ks_status (*compile)(void *dev, const ks__partition *part, const ks__kernel_ctx *ctx,
                         void **prog_out, char *err, size_t err_cap);
    void (*release)(void *dev, void *prog); /* NULL prog: no-op */
    /* Queues the partition: uploads its inputs (they may be overwritten as soon as submit
     * returns) and starts the work; returns without waiting for it. `profiled`: the session's
     * profiler is on for this run, so the backend may time finer (per node) at some cost. */
    ks_status (*submit)(void *dev, void *prog, bool profiled, char *err, size_t err_cap);
    /* The completion point: waits for the submitted work and downloads the outputs. Errors that
     * only show at completion (device lost, out of device memory) come back here. times may be
     * NULL. */
    ks_status (*wait)(void *dev, void *prog, ks__partition_times *times, char *err, size_t err_cap);
    /* The device that device_create would open now, as one line (vendor and device ids, driver
     * version and name; no tab or newline) in buf (cap bytes): the key under which
     * KS_BACKEND_AUTO remembers its choice across processes (NULL: per process only). Opens no
     * device. Fails as device_create would when there is none. */
    ks_status (*identity)(char *buf, size_t cap, char *err, size_t err_cap);
} ks__backend;

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_BACKEND_H */
