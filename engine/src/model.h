/* Internal layout of ks_model and ks_session (shared by model.c, session.c and tools). */
#ifndef KESTREL_MODEL_H
#define KESTREL_MODEL_H

#include "common.h"
#include "kestrel/engine.h"

struct ks_model {
    ks__object obj; /* must be first: ks_last_error() */
    ks_allocator alloc;
    uint32_t flags;
    ks__graph graph;
    const void *image; /* the .ksm bytes the graph borrows from */
    size_t image_bytes;
    void *mapped; /* mmap base, or NULL */
    size_t mapped_bytes;
    void *owned;       /* heap copy, or NULL */
    bool owned_secret; /* owned holds decrypted plaintext: wiped before it is freed */
};

void ks__tensor_info_from_def(const ks__tensor *t, ks_tensor_info *info);

/* The graph of a model (for tools: ks-inspect, ks-run --dump-all). */
const ks__graph *ks__model_graph(const ks_model *m);

#endif /* KESTREL_MODEL_H */
