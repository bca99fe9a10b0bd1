/* Graph partitioning: see partition.h. */
#include "partition.h"

#include <string.h>

#include "base/alloc.h"

void ks__partition_free(ks__partition_set *set, const ks_allocator *a) {
    if (!set) return;
    ks_allocator al = ks__allocator_or_default(a);
    ks__free(&al, set->parts);
    ks__free(&al, set->part_of_node);
    ks__free(&al, set->device_only);
    ks__free(&al, set->node_store);
    ks__free(&al, set->tensor_store);
    memset(set, 0, sizeof(*set));
}

ks_status ks__partition_build(const ks__graph *g, const uint8_t *place, const uint8_t *runtime,
                              const ks_allocator *a, ks__partition_set *out) {
    ks_allocator al = ks__allocator_or_default(a);
    memset(out, 0, sizeof(*out));
    uint32_t nn = g->num_nodes, nt = g->num_tensors;
    /* A partition lists a tensor at most once as an input and a tensor is the output of at most
     * one partition (one producer), so the tensor store needs at most (node input edges) + nt
     * entries; the node store nn. */
    size_t edges = 0;
    for (uint32_t i = 0; i < nn; i++)
        edges += g->nodes[i].num_inputs;
    out->part_of_node = ks__alloc(&al, (nn ? nn : 1) * sizeof(int32_t));
    out->device_only = ks__calloc(&al, nt ? nt : 1, 1);
    out->node_store = ks__alloc(&al, (nn ? nn : 1) * sizeof(uint32_t));
    out->tensor_store = ks__alloc(&al, (edges + nt + 1) * sizeof(int32_t));
    /* per tensor: the partition that produces it (-1: the host or a graph input / constant) */
    int32_t *producer = ks__alloc(&al, (nt ? nt : 1) * sizeof(int32_t));
    /* per tensor: the last partition that listed it as an input (to list it once) */
    int32_t *seen_in = ks__alloc(&al, (nt ? nt : 1) * sizeof(int32_t));
    /* per tensor: read by a node outside its producing partition, or a graph output */
    uint8_t *escapes = ks__calloc(&al, nt ? nt : 1, 1);
    uint32_t num_parts = 0;
    for (uint32_t i = 0, in_run = 0; i < nn; i++) {
        if (place[i] == KS__PLACE_DEVICE && !in_run) num_parts++;
        if (place[i] != KS__PLACE_NONE) in_run = place[i] == KS__PLACE_DEVICE;
    }
    out->parts = ks__calloc(&al, num_parts ? num_parts : 1, sizeof(ks__partition));
    if (!out->part_of_node || !out->device_only || !out->node_store || !out->tensor_store ||
        !producer || !seen_in || !escapes || !out->parts) {
        ks__free(&al, producer);
        ks__free(&al, seen_in);
        ks__free(&al, escapes);
        ks__partition_free(out, &al);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    for (uint32_t t = 0; t < nt; t++)
        producer[t] = seen_in[t] = -1;

    /* nodes of each partition */
    uint32_t ns = 0;
    int32_t cur = -1;
    for (uint32_t i = 0; i < nn; i++) {
        out->part_of_node[i] = -1;
        if (place[i] == KS__PLACE_NONE) continue;
        if (place[i] != KS__PLACE_DEVICE) {
            cur = -1;
            continue;
        }
        if (cur < 0) {
            cur = (int32_t)out->num_parts++;
            out->parts[cur].index = (uint32_t)cur;
            out->parts[cur].nodes = &out->node_store[ns];
        }
        out->node_store[ns++] = i;
        out->parts[cur].num_nodes++;
        out->part_of_node[i] = cur;
        for (uint32_t k = 0; k < g->nodes[i].num_outputs; k++)
            if (g->nodes[i].outputs[k] >= 0) producer[g->nodes[i].outputs[k]] = cur;
    }

    /* which produced tensors leave their partition */
    for (uint32_t i = 0; i < nn; i++) {
        const ks__node *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->num_inputs; k++) {
            int32_t t = n->inputs[k];
            if (t >= 0 && producer[t] >= 0 && producer[t] != out->part_of_node[i]) escapes[t] = 1;
        }
    }
    for (uint32_t k = 0; k < g->num_outputs; k++)
        if (producer[g->outputs[k]] >= 0) escapes[g->outputs[k]] = 1;

    /* boundary lists, partition by partition */
    uint32_t ts = 0;
    for (uint32_t p = 0; p < out->num_parts; p++) {
        ks__partition *part = &out->parts[p];
        part->inputs = &out->tensor_store[ts];
        for (uint32_t j = 0; j < part->num_nodes; j++) {
            const ks__node *n = &g->nodes[part->nodes[j]];
            for (uint32_t k = 0; k < n->num_inputs; k++) {
                int32_t t = n->inputs[k];
                if (t < 0 || !runtime[t] || producer[t] == (int32_t)p || seen_in[t] == (int32_t)p)
                    continue;
                seen_in[t] = (int32_t)p;
                out->tensor_store[ts++] = t;
                part->num_inputs++;
            }
        }
        part->outputs = &out->tensor_store[ts];
        for (uint32_t j = 0; j < part->num_nodes; j++) {
            const ks__node *n = &g->nodes[part->nodes[j]];
            for (uint32_t k = 0; k < n->num_outputs; k++) {
                int32_t t = n->outputs[k];
                if (t < 0) continue;
                if (escapes[t]) {
                    out->tensor_store[ts++] = t;
                    part->num_outputs++;
                } else {
                    out->device_only[t] = 1;
                }
            }
        }
    }
    ks__free(&al, producer);
    ks__free(&al, seen_in);
    ks__free(&al, escapes);
    return KS_STATUS_OK;
}
