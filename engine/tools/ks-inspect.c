/* ks-inspect MODEL.ksm [--nodes] [--svg OUT.svg] [--ops-only] [--sizes]
 * --sizes: where the file's bytes go (sections, tensor table parts, constants by dtype).
 * Shows a model's inputs/outputs, metadata, op histogram, per-node parameters and shapes, FLOPs
 * and the memory plan, and renders the graph as an SVG picture. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kestrel/engine.h"
#include "ksm.h"
#include "model.h"

size_t ks__session_arena_bytes(const ks_session *s);
const char *ks__session_kernel_name(const ks_session *s, uint32_t node);

typedef struct prof_acc {
    uint64_t flops;
    uint64_t *node_flops;
} prof_acc;

static void on_op(void *user, const ks_op_profile *p) {
    prof_acc *a = user;
    a->flops += p->flops;
    a->node_flops[p->node_index] = p->flops;
}

static void print_shape(FILE *f, int32_t rank, const int64_t *dims) {
    fputc('[', f);
    for (int32_t i = 0; i < rank; i++)
        fprintf(f, "%s%lld", i ? "," : "", (long long)dims[i]);
    fputc(']', f);
}

static void xml_escape(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else
            fputc(*s, f);
    }
}

/* Layered drawing: a node's level is 1 + the deepest level among its producers; nodes of one
 * level share a row. Edges are straight lines from producer to consumer. */
static int write_svg(const ks__graph *g, const ks_session *s, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "ks-inspect: cannot write %s\n", path);
        return 1;
    }
    uint32_t nn = g->num_nodes, nt = g->num_tensors;
    int32_t *producer = malloc((nt + 1) * sizeof(int32_t));
    int32_t *level = malloc((nn + 1) * sizeof(int32_t));
    int32_t *col = malloc((nn + 1) * sizeof(int32_t));
    int32_t *row_count = calloc(nn + 2, sizeof(int32_t));
    if (!producer || !level || !col || !row_count) {
        fclose(f);
        free(producer);
        free(level);
        free(col);
        free(row_count);
        return 1;
    }
    for (uint32_t t = 0; t < nt; t++)
        producer[t] = -1;
    int32_t max_level = 0, max_cols = 1;
    for (uint32_t i = 0; i < nn; i++) {
        const ks__node *n = &g->nodes[i];
        int32_t lv = 0;
        for (uint32_t k = 0; k < n->num_inputs; k++) {
            int32_t id = n->inputs[k];
            if (id >= 0 && producer[id] >= 0 && level[producer[id]] + 1 > lv)
                lv = level[producer[id]] + 1;
        }
        level[i] = lv;
        col[i] = row_count[lv]++;
        if (row_count[lv] > max_cols) max_cols = row_count[lv];
        if (lv > max_level) max_level = lv;
        for (uint32_t k = 0; k < n->num_outputs; k++)
            producer[n->outputs[k]] = (int32_t)i;
    }
    const int bw = 170, bh = 40, gx = 20, gy = 30;
    int width = max_cols * (bw + gx) + gx, height = (max_level + 1) * (bh + gy) + gy;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "font-family=\"monospace\" font-size=\"11\">\n",
            width, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    for (uint32_t i = 0; i < nn; i++) {
        const ks__node *n = &g->nodes[i];
        int x2 = gx + col[i] * (bw + gx) + bw / 2, y2 = gy + level[i] * (bh + gy);
        for (uint32_t k = 0; k < n->num_inputs; k++) {
            int32_t id = n->inputs[k];
            if (id < 0 || producer[id] < 0) continue;
            int32_t p = producer[id];
            int x1 = gx + col[p] * (bw + gx) + bw / 2, y1 = gy + level[p] * (bh + gy) + bh;
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n", x1, y1,
                    x2, y2);
        }
    }
    for (uint32_t i = 0; i < nn; i++) {
        const ks__node *n = &g->nodes[i];
        int x = gx + col[i] * (bw + gx), y = gy + level[i] * (bh + gy);
        fprintf(f, "<g><title>");
        xml_escape(f, n->name);
        fprintf(f,
                "</title><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"5\" "
                "fill=\"#e8f0fe\" stroke=\"#3367d6\"/>\n",
                x, y, bw, bh);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x + bw / 2, y + 16,
                ks__op_get_info(n->op)->name);
        const ks__tensor *o = &g->tensors[n->outputs[0]];
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">", x + bw / 2,
                y + 32);
        if (s) {
            ks_tensor t;
            ks_session_tensor((ks_session *)s, (uint32_t)n->outputs[0], &t);
            print_shape(f, t.info.shape.rank, t.info.shape.dims);
        } else {
            print_shape(f, o->rank, o->dims);
        }
        fprintf(f, "</text></g>\n");
    }
    fprintf(f, "</svg>\n");
    fclose(f);
    free(producer);
    free(level);
    free(col);
    free(row_count);
    return 0;
}

/* Bits per weight as stored in the file: the loaded graph has decoded F32 constants, so the
 * storage view comes from the file's own tensor records (read without decoding). */
static void print_weight_storage(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return;
    uint8_t *buf = NULL;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (len > 0 && fseek(f, 0, SEEK_SET) == 0) buf = malloc((size_t)len);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (!buf) return;
    uint64_t stored_bytes = 0, num_values = 0, enc_bytes = 0, enc_values = 0;
    uint32_t num_encoded = 0;
    ks_status st = ks__ksm_weight_stats(buf, (size_t)len, &stored_bytes, &num_values, &enc_bytes,
                                        &enc_values, &num_encoded);
    if (st == KS_STATUS_OK && num_values) {
        printf("weight storage: %llu bytes for %llu values, %.2f bits per weight\n",
               (unsigned long long)stored_bytes, (unsigned long long)num_values,
               8.0 * (double)stored_bytes / (double)num_values);
        if (num_encoded)
            printf("  %u encoded tensors: %llu bytes for %llu values, %.2f bits per weight\n",
                   num_encoded, (unsigned long long)enc_bytes, (unsigned long long)enc_values,
                   8.0 * (double)enc_bytes / (double)enc_values);
    }
    free(buf);
}

static void print_sizes(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return;
    uint8_t *buf = NULL;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (len > 0 && fseek(f, 0, SEEK_SET) == 0) buf = malloc((size_t)len);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (!buf) return;
    ks__ksm_sizes z;
    if (ks__ksm_sizes_of(buf, (size_t)len, &z) != KS_STATUS_OK) {
        printf("sizes: not available\n");
        free(buf);
        return;
    }
    static const char *kinds[8] = {"",         "META",    "TENSORS", "NODES",
                                   "GRAPH_IO", "WEIGHTS", "ENCODED", "PACKED"};
    printf("sizes (format %u.%u): %llu bytes\n", buf[4] | buf[5] << 8, buf[6] | buf[7] << 8,
           (unsigned long long)z.file_bytes);
    uint64_t in_sections = 0;
    for (int k = 1; k < 8; k++)
        in_sections += z.section_bytes[k];
    printf("  %-10s %10llu  (header, section table, alignment)\n", "other",
           (unsigned long long)(z.file_bytes - in_sections));
    for (int k = 1; k < 8; k++) {
        if (!z.section_bytes[k] && !z.packed_section_bytes[k]) continue;
        if (z.section_bytes[k])
            printf("  %-10s %10llu", kinds[k], (unsigned long long)z.section_bytes[k]);
        else
            printf("  %-10s %10s  (%llu unpacked, inside PACKED)", kinds[k], "-",
                   (unsigned long long)z.packed_section_bytes[k]);
        if (k == KSM_SECTION_PACKED) {
            uint64_t u = 0;
            for (int j = 1; j < 8; j++)
                u += z.packed_section_bytes[j];
            printf("  (%llu bytes of tables unpacked, %.1f%%)", (unsigned long long)u,
                   u ? 100.0 * (double)z.section_bytes[k] / (double)u : 0.0);
        }
        printf("\n");
    }
    printf("  tensor table: %u tensors; names %llu, scales %llu, zero points %llu, other %llu\n",
           z.num_tensors, (unsigned long long)z.name_bytes, (unsigned long long)z.scale_bytes,
           (unsigned long long)z.zero_point_bytes, (unsigned long long)z.record_bytes);
    printf("  weights: %u constants (%u encoded), %llu bytes stored, %llu padding\n",
           z.num_constants, z.num_encoded, (unsigned long long)z.stored_bytes,
           (unsigned long long)z.padding_bytes);
    for (int d = 0; d < 16; d++)
        if (z.dtype_raw_bytes[d] || z.dtype_stored_bytes[d])
            printf("    %-5s %10llu bytes stored for %llu bytes of values\n",
                   d < KS_DTYPE_COUNT ? ks_dtype_string((ks_dtype)d) : "?",
                   (unsigned long long)z.dtype_stored_bytes[d],
                   (unsigned long long)z.dtype_raw_bytes[d]);
    free(buf);
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
            print_shape(stdout, t->rank, t->dims);
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
    print_weight_storage(path);
    if (sizes) print_sizes(path);
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
    if (show_nodes) {
        for (uint32_t i = 0; i < g->num_nodes; i++) {
            const ks__node *n = &g->nodes[i];
            const ks__op_info *info = ks__op_get_info(n->op);
            printf("#%-4u %-22s %-30s", i, info->name, n->name);
            for (uint32_t k = 0; k < n->num_outputs; k++) {
                ks_tensor tv;
                if (planned && ks_session_tensor(s, (uint32_t)n->outputs[k], &tv) == 0)
                    print_shape(stdout, tv.info.shape.rank, tv.info.shape.dims);
            }
            int last = KS_NODE_MAX_IPARAMS;
            while (last > 0 && n->ip[last - 1] == 0)
                last--;
            if (last) {
                printf(" ip=");
                for (int k = 0; k < last; k++)
                    printf("%s%d", k ? "," : "", n->ip[k]);
            }
            int lastf = KS_NODE_MAX_FPARAMS;
            while (lastf > 0 && n->fp[lastf - 1] == 0.0f)
                lastf--;
            if (lastf) {
                printf(" fp=");
                for (int k = 0; k < lastf; k++)
                    printf("%s%g", k ? "," : "", (double)n->fp[k]);
            }
            printf(" in=");
            for (uint32_t k = 0; k < n->num_inputs; k++)
                printf("%s%d", k ? "," : "", (int)n->inputs[k]);
            printf(" out=");
            for (uint32_t k = 0; k < n->num_outputs; k++)
                printf("%s%d", k ? "," : "", (int)n->outputs[k]);
            if (planned && acc.node_flops[i])
                printf(" flops=%llu", (unsigned long long)acc.node_flops[i]);
            if (planned) printf(" kernel=%s", ks__session_kernel_name(s, i));
            printf("\n");
        }
    }
    int rc = 0;
    if (svg) {
        rc = write_svg(g, planned ? s : NULL, svg);
        if (!rc) printf("graph: %s\n", svg);
    }
    free(acc.node_flops);
    ks_session_destroy(s);
    ks_model_destroy(m);
    return rc;
}
