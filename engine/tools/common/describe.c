/* Model description for ks-inspect (describe.h). */
#include "describe.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "ksm.h"

const char *ks__session_kernel_name(const ks_session *s, uint32_t node);

void ks__describe_shape(FILE *f, int32_t rank, const int64_t *dims) {
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

/* The whole file (malloc'ed), NULL when it cannot be read or is empty. */
static uint8_t *read_all(const char *path, long *len_out) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (len > 0 && fseek(f, 0, SEEK_SET) == 0) buf = malloc((size_t)len);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len_out = len;
    return buf;
}

ks_status ks__describe_svg(const ks__graph *g, const ks_session *s, const char *path, char *err,
                           size_t err_cap) {
    FILE *f = fopen(path, "w");
    if (!f) return ks__fail(err, err_cap, KS_STATUS_IO_ERROR, "cannot write %s", path);
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
        return ks__fail(err, err_cap, KS_STATUS_OUT_OF_MEMORY, "out of memory (%s)", path);
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
            ks__describe_shape(f, t.info.shape.rank, t.info.shape.dims);
        } else {
            ks__describe_shape(f, o->rank, o->dims);
        }
        fprintf(f, "</text></g>\n");
    }
    fprintf(f, "</svg>\n");
    int bad = fclose(f) != 0;
    free(producer);
    free(level);
    free(col);
    free(row_count);
    return bad ? ks__fail(err, err_cap, KS_STATUS_IO_ERROR, "cannot write %s", path) : KS_STATUS_OK;
}

/* Bits per weight as stored in the file: the loaded graph has decoded F32 constants, so the
 * storage view comes from the file's own tensor records (read without decoding). */
void ks__describe_weight_storage(FILE *out, const char *path) {
    long len = -1;
    uint8_t *buf = read_all(path, &len);
    if (!buf) return;
    uint64_t stored_bytes = 0, num_values = 0, enc_bytes = 0, enc_values = 0;
    uint32_t num_encoded = 0;
    ks_status st = ks__ksm_weight_stats(buf, (size_t)len, &stored_bytes, &num_values, &enc_bytes,
                                        &enc_values, &num_encoded);
    if (st == KS_STATUS_OK && num_values) {
        fprintf(out, "weight storage: %llu bytes for %llu values, %.2f bits per weight\n",
                (unsigned long long)stored_bytes, (unsigned long long)num_values,
                8.0 * (double)stored_bytes / (double)num_values);
        if (num_encoded)
            fprintf(out, "  %u encoded tensors: %llu bytes for %llu values, %.2f bits per weight\n",
                    num_encoded, (unsigned long long)enc_bytes, (unsigned long long)enc_values,
                    8.0 * (double)enc_bytes / (double)enc_values);
    }
    free(buf);
}

void ks__describe_sizes(FILE *out, const char *path) {
    long len = -1;
    uint8_t *buf = read_all(path, &len);
    if (!buf) return;
    ks__ksm_sizes z;
    if (ks__ksm_sizes_of(buf, (size_t)len, &z) != KS_STATUS_OK) {
        fprintf(out, "sizes: not available\n");
        free(buf);
        return;
    }
    static const char *kinds[8] = {"",         "META",    "TENSORS", "NODES",
                                   "GRAPH_IO", "WEIGHTS", "ENCODED", "PACKED"};
    fprintf(out, "sizes (format %u.%u): %llu bytes\n", buf[4] | buf[5] << 8, buf[6] | buf[7] << 8,
            (unsigned long long)z.file_bytes);
    uint64_t in_sections = 0;
    for (int k = 1; k < 8; k++)
        in_sections += z.section_bytes[k];
    fprintf(out, "  %-10s %10llu  (header, section table, alignment)\n", "other",
            (unsigned long long)(z.file_bytes - in_sections));
    for (int k = 1; k < 8; k++) {
        if (!z.section_bytes[k] && !z.packed_section_bytes[k]) continue;
        if (z.section_bytes[k])
            fprintf(out, "  %-10s %10llu", kinds[k], (unsigned long long)z.section_bytes[k]);
        else
            fprintf(out, "  %-10s %10s  (%llu unpacked, inside PACKED)", kinds[k], "-",
                    (unsigned long long)z.packed_section_bytes[k]);
        if (k == KSM_SECTION_PACKED) {
            uint64_t u = 0;
            for (int j = 1; j < 8; j++)
                u += z.packed_section_bytes[j];
            fprintf(out, "  (%llu bytes of tables unpacked, %.1f%%)", (unsigned long long)u,
                    u ? 100.0 * (double)z.section_bytes[k] / (double)u : 0.0);
        }
        fprintf(out, "\n");
    }
    fprintf(out,
            "  tensor table: %u tensors; names %llu, scales %llu, zero points %llu, other %llu\n",
            z.num_tensors, (unsigned long long)z.name_bytes, (unsigned long long)z.scale_bytes,
            (unsigned long long)z.zero_point_bytes, (unsigned long long)z.record_bytes);
    fprintf(out, "  weights: %u constants (%u encoded), %llu bytes stored, %llu padding\n",
            z.num_constants, z.num_encoded, (unsigned long long)z.stored_bytes,
            (unsigned long long)z.padding_bytes);
    for (int d = 0; d < 16; d++)
        if (z.dtype_raw_bytes[d] || z.dtype_stored_bytes[d])
            fprintf(out, "    %-5s %10llu bytes stored for %llu bytes of values\n",
                    d < KS_DTYPE_COUNT ? ks_dtype_string((ks_dtype)d) : "?",
                    (unsigned long long)z.dtype_stored_bytes[d],
                    (unsigned long long)z.dtype_raw_bytes[d]);
    free(buf);
}

void ks__describe_nodes(FILE *f, const ks__graph *g, const ks_session *s,
                        const uint64_t *node_flops) {
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        const ks__op_info *info = ks__op_get_info(n->op);
        fprintf(f, "#%-4u %-22s %-30s", i, info->name, n->name);
        for (uint32_t k = 0; k < n->num_outputs; k++) {
            ks_tensor tv;
            if (s && ks_session_tensor((ks_session *)s, (uint32_t)n->outputs[k], &tv) == 0)
                ks__describe_shape(f, tv.info.shape.rank, tv.info.shape.dims);
        }
        int last = KS_NODE_MAX_IPARAMS;
        while (last > 0 && n->ip[last - 1] == 0)
            last--;
        if (last) {
            fprintf(f, " ip=");
            for (int k = 0; k < last; k++)
                fprintf(f, "%s%d", k ? "," : "", n->ip[k]);
        }
        int lastf = KS_NODE_MAX_FPARAMS;
        while (lastf > 0 && n->fp[lastf - 1] == 0.0f)
            lastf--;
        if (lastf) {
            fprintf(f, " fp=");
            for (int k = 0; k < lastf; k++)
                fprintf(f, "%s%g", k ? "," : "", (double)n->fp[k]);
        }
        fprintf(f, " in=");
        for (uint32_t k = 0; k < n->num_inputs; k++)
            fprintf(f, "%s%d", k ? "," : "", (int)n->inputs[k]);
        fprintf(f, " out=");
        for (uint32_t k = 0; k < n->num_outputs; k++)
            fprintf(f, "%s%d", k ? "," : "", (int)n->outputs[k]);
        if (s && node_flops && node_flops[i])
            fprintf(f, " flops=%llu", (unsigned long long)node_flops[i]);
        if (s) fprintf(f, " kernel=%s", ks__session_kernel_name(s, i));
        fprintf(f, "\n");
    }
}
