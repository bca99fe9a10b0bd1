/* ks-inspect MODEL.ksm [--nodes] [--svg OUT.svg] [--ops-only] [--sizes]
 * --sizes: where the file's bytes go (sections, tensor table parts, constants by dtype).
 * Shows a model's inputs/outputs, metadata, op histogram, per-node parameters and shapes, FLOPs
 * and the memory plan, and renders the graph as an SVG picture (the descriptions are the tool
 * library's: engine/tools/common/describe.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "describe.h"
#include "kestrel/engine.h"
#include "model.h"

size_t ks__session_arena_bytes(const ks_session *s);

typedef struct prof_acc {
    uint64_t flops;
    uint64_t *node_flops;
} prof_acc;

static void on_op(void *user, const ks_op_profile *p) {
    prof_acc *a = user;
    a->flops += p->flops;
    a->node_flops[p->node_index] = p->flops;
}

int main(int argc, char **argv) {
    const char *path = NULL, *svg = NULL;
    int show_nodes = 0, ops_only = 0, sizes = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--svg") == 0 && i + 1 < argc)
            svg = argv[++i];
        else if (strcmp(argv[i], "--nodes") == 0)
            show_nodes = 1;
        else if (strcmp(argv[i], "--ops-only") == 0)
            ops_only = 1;
        else if (strcmp(argv[i], "--sizes") == 0)
            sizes = 1;
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else {
            fprintf(
                stderr,
                "usage: ks-inspect MODEL.ksm [--nodes] [--svg OUT.svg] [--ops-only] [--sizes]\n");
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr,
                "usage: ks-inspect MODEL.ksm [--nodes] [--svg OUT.svg] [--ops-only] [--sizes]\n");
        return 2;
    }
    ks_model *m = NULL;
    ks_status st = ks_model_load_file(path, NULL, &m);
    if (st) {
        fprintf(stderr, "ks-inspect: %s: %s\n", ks_status_string(st), ks_last_error(NULL));
        return 1;
    }
    const ks__graph *g = ks__model_graph(m);
    if (ops_only) {
        /* The IR op names the model needs, one per line: the input of op-pruned builds
         * (KS_OPS_FROM_MODELS, docs/size.md). */
        uint8_t used[KS_OP_MAX_ID] = {0};
        for (uint32_t i = 0; i < g->num_nodes; i++)
            used[g->nodes[i].op] = 1;
        for (uint32_t op = 0; op < KS_OP_MAX_ID; op++)
            if (used[op]) printf("%s\n", ks__op_get_info(op)->name);
        ks_model_destroy(m);
        return 0;
    }
    printf("model: %s\n", path);
    for (uint32_t i = 0; i < g->num_meta; i++)
        printf("  meta %s = %s\n", g->meta[i].key, g->meta[i].value);
    for (int io = 0; io < 2; io++) {
        uint32_t n = io ? g->num_outputs : g->num_inputs;
        for (uint32_t i = 0; i < n; i++) {
            const ks__tensor *t = &g->tensors[io ? g->outputs[i] : g->inputs[i]];
            printf("%s %u: %s %s ", io ? "output" : "input", i, t->name, ks_dtype_string(t->dtype));
            ks__describe_shape(stdout, t->rank, t->dims);
            if (t->quant.count)
                printf(" q(scale=%g, zp=%d)", (double)t->quant.scales[0], t->quant.zero_points[0]);
            printf("\n");
        }
    }
    uint32_t hist[KS_OP_MAX_ID] = {0};
    uint64_t weight_bytes = 0;
    for (uint32_t i = 0; i < g->num_nodes; i++)
        hist[g->nodes[i].op]++;
    for (uint32_t t = 0; t < g->num_tensors; t++)
        if (g->tensors[t].flags & KS__TENSOR_CONST) weight_bytes += g->tensors[t].size_bytes;
    printf("nodes: %u, tensors: %u, weights: %llu bytes\n", g->num_nodes, g->num_tensors,
           (unsigned long long)weight_bytes);
    ks__describe_weight_storage(stdout, path);
    if (sizes) ks__describe_sizes(stdout, path);
    printf("op histogram:\n");
    for (uint32_t op = 0; op < KS_OP_MAX_ID; op++)
        if (hist[op]) printf("  %-28s %u\n", ks__op_get_info(op)->name, hist[op]);

    /* Shapes, FLOPs and the memory plan need a planned session (only for static inputs). */
    ks_session *s = NULL;
    prof_acc acc = {0, calloc(g->num_nodes + 1, sizeof(uint64_t))};
    int planned = 0;
    if (acc.node_flops && ks_session_create(m, NULL, &s) == KS_STATUS_OK &&
        ks_session_reshape(s, NULL) == KS_STATUS_OK) {
        planned = 1;
        ks_session_set_profiler(s, on_op, &acc);
        if (ks_session_run(s) == KS_STATUS_OK) {
            printf("flops: %.3f GFLOP per run (multiply-adds x2)\n", (double)acc.flops / 1e9);
        }
        uint64_t act_total = 0;
        for (uint32_t t = 0; t < g->num_tensors; t++) {
            ks_tensor tv;
            if (!(g->tensors[t].flags & KS__TENSOR_CONST) && ks_session_tensor(s, t, &tv) == 0)
                act_total += tv.size_bytes;
        }
        printf("memory plan: arena %zu bytes for %llu bytes of activations (%.1f%% reuse)\n",
               ks__session_arena_bytes(s), (unsigned long long)act_total,
               act_total ? 100.0 * (1.0 - (double)ks__session_arena_bytes(s) / (double)act_total)
                         : 0.0);
    } else {
        printf("shapes/flops/memory plan: not available (%s)\n",
               s ? ks_last_error(s) : ks_last_error(NULL));
    }
    if (show_nodes) ks__describe_nodes(stdout, g, planned ? s : NULL, acc.node_flops);
    int rc = 0;
    char err[512];
    if (svg && ks__describe_svg(g, planned ? s : NULL, svg, err, sizeof(err))) {
        fprintf(stderr, "ks-inspect: %s\n", err);
        rc = 1;
    } else if (svg) {
        printf("graph: %s\n", svg);
    }
    free(acc.node_flops);
    ks_session_destroy(s);
    ks_model_destroy(m);
    return rc;
}
