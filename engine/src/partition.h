/* Graph partitioning (partition.c): the session runs each node either on the host (the CPU
 * backend, in its own run loop) or on a device backend (a GPU). A partition is a maximal run, in
 * execution order, of device nodes; between partitions the session moves data explicitly. This
 * file only decides the partitions and their boundary tensors from per-node and per-tensor
 * flags; the session (session.c) sets the flags, plans memory around the result and drives the
 * device backend (backend.h, docs/backends.md). Not a published API. */
#ifndef KESTREL_PARTITION_H
#define KESTREL_PARTITION_H

#include <stdint.h>

#include "backend.h"
#include "ir.h"

/* Per node, what the session decided at reshape. */
enum {
    KS__PLACE_HOST = 0,   /* run by the host's kernels */
    KS__PLACE_DEVICE = 1, /* run by the device backend */
    KS__PLACE_NONE = 2    /* not run: evaluated at reshape, or a host view (no work) */
};

typedef struct ks__partition_set {
    ks__partition *parts;
    uint32_t num_parts;
    /* Per node: the partition it belongs to, or -1 (host or not run). */
    int32_t *part_of_node;
    /* Per tensor: 1 when the tensor lives only on the device (produced by a partition and read
     * by nothing else, not a graph output): the host arena does not hold it. */
    uint8_t *device_only;
    /* Storage behind parts[].nodes / inputs / outputs. */
    uint32_t *node_store;
    int32_t *tensor_store;
} ks__partition_set;

/* Splits g's nodes (execution order) into partitions. place[i] is KS__PLACE_* per node; runtime[t]
 * is 1 for tensors whose data exists only at run time (graph inputs and what nodes compute at run
 * time), 0 for constants and values known at reshape, which a partition's nodes read as
 * constants. A partition's inputs are the runtime tensors its nodes read that it does not
 * produce (each once, in order of first use); its outputs are the tensors it produces that a
 * node outside it reads, or that are graph outputs. Nodes placed NONE do not break a run.
 * Arrays come from a (NULL: malloc); on failure *out is empty. */
ks_status ks__partition_build(const ks__graph *g, const uint8_t *place, const uint8_t *runtime,
                              const ks_allocator *a, ks__partition_set *out);
void ks__partition_free(ks__partition_set *set, const ks_allocator *a);

#endif /* KESTREL_PARTITION_H */
