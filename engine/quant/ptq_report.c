/* The quantization pipeline's report (ptq.h): filled from the final plan and measurements, and
 * written as markdown or JSON (per layer, worst cosine first; bench/quant/task_deltas.py and
 * engine/tests/unit/test_quant.c read both). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptq_internal.h"

const char *ks__quant_method_string(ks__quant_method m) {
    static const char *methods[] = {"minmax", "percentile", "kl", "mse"};
    return (unsigned)m < sizeof(methods) / sizeof(methods[0]) ? methods[m] : "?";
}

const char *ks__quant_reason_string(ks__quant_reason r) {
    switch (r) {
    case KS__QUANT_WHY_INT8:
        return "int8";
    case KS__QUANT_WHY_NO_INT8_KERNEL:
        return "fp32 (no fast int8 kernel)";
    case KS__QUANT_WHY_SKIPPED:
        return "fp32 (--skip)";
    case KS__QUANT_WHY_COSINE:
        return "fp32 (cosine fallback)";
    case KS__QUANT_WHY_SLOWER:
        return "fp32 (int8 slower)";
    case KS__QUANT_WHY_OUTPUT:
        return "fp32 (output cosine fallback)";
    case KS__QUANT_WHY_OUTPUT_LAYER:
        return "fp32 (computes an output)";
    case KS__QUANT_WHY_WEIGHTS_ONLY:
        return "fp32 (--weights-only)";
    case KS__QUANT_WHY_NOT_CALIBRATED:
        return "fp32 (not calibrated)";
    case KS__QUANT_WHY_INPUT_NOT_INT8:
        return "fp32 (input is fp32)";
    default:
        return "fp32";
    }
}

void ks__quant_report_free(ks__quant_report *r) {
    if (!r) return;
    free(r->layers);
    free(r->outputs);
    free(r->strings);
    memset(r, 0, sizeof(*r));
}

/* Copies s into the pool at *pos. */
static const char *pool_copy(char *pool, size_t *pos, const char *s) {
    size_t n = strlen(s ? s : "") + 1;
    char *d = pool + *pos;
    memcpy(d, s ? s : "", n);
    *pos += n;
    return d;
}

ks_status ks__quant_report_fill(ks__quant_report *r, const ks__graph *g, const ks__quant_plan *p,
                                const ks__quant_eval *e, const double *iso, const double *sens) {
    size_t bytes = 1, pos = 0;
    for (uint32_t i = 0; i < g->num_nodes; i++)
        bytes += strlen(ks__quant_layer_name(g, &g->nodes[i])) + 1;
    for (uint32_t i = 0; i < g->num_outputs; i++) {
        const char *name = g->tensors[g->outputs[i]].name;
        bytes += strlen(name ? name : "") + 1;
    }
    r->layers = calloc(g->num_nodes + 1, sizeof(ks__quant_layer));
    r->outputs = calloc(g->num_outputs + 1, sizeof(ks__quant_output));
    r->strings = malloc(bytes);
    if (!r->layers || !r->outputs || !r->strings) {
        ks__quant_report_free(r);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    r->num_layers = g->num_nodes;
    r->num_int8 = 0;
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        ks__quant_layer *l = &r->layers[i];
        l->name = pool_copy(r->strings, &pos, ks__quant_layer_name(g, n));
        l->op = ks__op_get_info(n->op)->name;
        l->mode = p->mode[i];
        l->reason = p->reason[i];
        l->has_output = n->num_outputs != 0;
        l->cosine = NAN;
        if (l->has_output) {
            l->cosine = ks__quant_eval_cosine(e, (uint32_t)n->outputs[0]);
            /* A split conv re-fused with its partner: its own output is not in the model. */
            if (isnan(l->cosine) && p->pair && p->pair[i] >= 0)
                l->cosine = ks__quant_eval_cosine(e, (uint32_t)g->nodes[p->pair[i]].outputs[0]);
        }
        l->own_cosine = iso[i];
        l->output_gain = sens[i];
        l->fp32_us = e->t_f32[i] / 1e3;
        l->int8_us = e->t_i8[i] / 1e3;
        r->num_int8 += p->mode[i] == KS__QUANT_INT8;
    }
    r->num_outputs = g->num_outputs;
    for (uint32_t i = 0; i < g->num_outputs; i++) {
        r->outputs[i].name = pool_copy(r->strings, &pos, g->tensors[g->outputs[i]].name);
        r->outputs[i].cosine = ks__quant_eval_cosine(e, (uint32_t)g->outputs[i]);
    }
    r->fp32_ms = e->total_f32 / 1e6;
    r->int8_ms = e->total_i8 / 1e6;
    return KS_STATUS_OK;
}

/* ---- writing ------------------------------------------------------------------------------ */

typedef struct row {
    uint32_t node;
    double cos;
} row;

static int cmp_row(const void *a, const void *b) {
    double x = ((const row *)a)->cos, y = ((const row *)b)->cos;
    return x < y ? -1 : (x > y ? 1 : 0);
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void write_json(FILE *f, const ks__quant_report *r, const ks__quant_options *o,
                       const row *rows, uint32_t nr) {
    fprintf(f, "{\"model\":");
    json_str(f, o->in_path);
    fprintf(f,
            ",\"method\":\"%s\",\"calibration_images\":%d,\"fp32_bytes\":%zu,"
            "\"int8_bytes\":%zu,\"int8_layers\":%u,\"layers\":%u,\"data_free_passes\":",
            ks__quant_method_string(o->method), r->num_images, r->in_bytes, r->out_bytes,
            r->num_int8, r->num_layers);
    json_str(f, r->passes);
    fprintf(f, ",\"outputs\":[");
    for (uint32_t i = 0; i < r->num_outputs; i++) {
        fprintf(f, "%s{\"name\":", i ? "," : "");
        json_str(f, r->outputs[i].name);
        fprintf(f, ",\"cosine\":%.6f}", r->outputs[i].cosine);
    }
    fprintf(f, "],\"layers_worst_first\":[");
    for (uint32_t k = 0; k < nr; k++) {
        const ks__quant_layer *l = &r->layers[rows[k].node];
        fprintf(f, "%s\n{\"node\":", k ? "," : "");
        json_str(f, l->name);
        fprintf(f, ",\"op\":\"%s\",\"precision\":\"%s\",", l->op,
                ks__quant_reason_string((ks__quant_reason)l->reason));
        if (rows[k].cos > 1.5)
            fprintf(f, "\"cosine\":null,");
        else
            fprintf(f, "\"cosine\":%.6f,", rows[k].cos);
        if (isnan(l->own_cosine))
            fprintf(f, "\"layer_cosine\":null,");
        else
            fprintf(f, "\"layer_cosine\":%.6f,", l->own_cosine);
        if (isnan(l->output_gain))
            fprintf(f, "\"output_gain\":null,");
        else
            fprintf(f, "\"output_gain\":%.3g,", l->output_gain);
        fprintf(f, "\"fp32_us\":%.1f,\"int8_us\":%.1f}", l->fp32_us,
                l->mode == KS__QUANT_INT8 ? l->int8_us : 0.0);
    }
    fprintf(f, "]}\n");
}

static void write_markdown(FILE *f, const ks__quant_report *r, const ks__quant_options *o,
                           const row *rows, uint32_t nr) {
    fprintf(f, "# ks-quant report: %s\n\n", o->in_path);
    fprintf(f, "- calibration: %s, %d images from `%s`\n", ks__quant_method_string(o->method),
            r->num_images, o->calib_dir);
    fprintf(f, "- size: %zu -> %zu bytes (%.3fx)\n", r->in_bytes, r->out_bytes,
            r->in_bytes ? (double)r->out_bytes / (double)r->in_bytes : 0.0);
    fprintf(f, "- layers in int8: %u of %u\n", r->num_int8, r->num_layers);
    if (r->passes[0]) fprintf(f, "- data-free passes: %s\n", r->passes);
    fprintf(f, "- profiled time, 1 thread: fp32 %.2f ms, mixed int8 %.2f ms\n\n", r->fp32_ms,
            r->int8_ms);
    fprintf(f, "Outputs (cosine similarity vs fp32):\n\n");
    for (uint32_t i = 0; i < r->num_outputs; i++)
        fprintf(f, "- `%s`: %.6f\n", r->outputs[i].name, r->outputs[i].cosine);
    fprintf(f,
            "\nPer layer, worst first. cosine: the layer output in the int8 model vs fp32 "
            "(error accumulated through the network); own: the layer alone in int8 from "
            "exact fp32 inputs (what --min-cosine %g tests); times from the profiler, int8 "
            "including the QUANTIZE/DEQUANTIZE the layer needs; output gain: how much the "
            "worst checked output cosine rose with just this layer back in fp32, in the "
            "last ranking of the output check (--fallback sensitivity / cheap).\n\n",
            o->min_cosine);
    fprintf(f, "| # | layer | op | precision | cosine | own | output gain | fp32 us | int8 us |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|\n");
    for (uint32_t k = 0; k < nr; k++) {
        const ks__quant_layer *l = &r->layers[rows[k].node];
        fprintf(f, "| %u | %s | %s | %s | ", k + 1, l->name, l->op,
                ks__quant_reason_string((ks__quant_reason)l->reason));
        if (rows[k].cos > 1.5)
            fprintf(f, "- | ");
        else
            fprintf(f, "%.6f | ", rows[k].cos);
        if (isnan(l->own_cosine))
            fprintf(f, "- | ");
        else
            fprintf(f, "%.6f | ", l->own_cosine);
        if (isnan(l->output_gain))
            fprintf(f, "- | ");
        else
            fprintf(f, "%.3g | ", l->output_gain);
        fprintf(f, "%.1f | ", l->fp32_us);
        if (l->mode == KS__QUANT_INT8)
            fprintf(f, "%.1f |\n", l->int8_us);
        else
            fprintf(f, "- |\n");
    }
}

ks_status ks__quant_report_write(const ks__quant_report *r, const ks__quant_options *o,
                                 const char *path, char *err, size_t err_cap) {
    row *rows = calloc(r->num_layers + 1, sizeof(row));
    if (!rows) return ks__fail(err, err_cap, KS_STATUS_OUT_OF_MEMORY, "out of memory (report)");
    uint32_t nr = 0;
    for (uint32_t i = 0; i < r->num_layers; i++) {
        if (!r->layers[i].has_output) continue;
        double c = r->layers[i].cosine;
        if (isnan(c)) c = 2.0; /* never evaluated (e.g. shape-only): listed last, as "-" */
        rows[nr].node = i;
        rows[nr].cos = c;
        nr++;
    }
    qsort(rows, nr, sizeof(row), cmp_row);
    FILE *f = fopen(path, "w");
    if (!f) {
        free(rows);
        return ks__fail(err, err_cap, KS_STATUS_IO_ERROR, "cannot write report '%s'", path);
    }
    size_t len = strlen(path);
    if (len > 5 && strcmp(path + len - 5, ".json") == 0)
        write_json(f, r, o, rows, nr);
    else
        write_markdown(f, r, o, rows, nr);
    free(rows);
    if (fclose(f))
        return ks__fail(err, err_cap, KS_STATUS_IO_ERROR, "cannot write report '%s'", path);
    return KS_STATUS_OK;
}
