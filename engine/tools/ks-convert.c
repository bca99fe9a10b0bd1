/* ks-convert IN.{tflite,onnx,ksm} OUT.ksm [--no-optimize] [--weights fp32|fp16|int8|int4]
 *            [--entropy] [--block N] [--pack]
 * Imports a TFLite or ONNX model, optimizes the graph and writes a .ksm file, optionally with
 * compressed conv/FC weights (see ksm.h, "Weight-only compression"). A .ksm input is rewritten
 * as it is (no optimization), e.g. to pack an int8 model made by ks-quant (--entropy or --pack:
 * format 1.2 lossless packing, see ksm.h).
 * ks-convert --list-ops [--json]: the ops each importer converts, with their constraints (read
 * from the importers' own tables).
 * ks-convert IN --graph-json [--no-optimize]: the (converted) graph as one JSON document on
 * stdout instead of a file: tensors (name, dtype, shape, constant bytes), nodes (op, name, input
 * and output tensor ids) and the graph's inputs and outputs (kestrel visualize draws it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "fileio.h"
#include "ksm.h"
#include "weight_quant.h"

static void usage(void) {
    fprintf(
        stderr,
        "usage: ks-convert IN.{tflite,onnx,ksm} OUT.ksm [--no-optimize] [--quiet]\n"
        "                  [--progress-lines]\n"
        "                  [--weights fp32|fp16|int8|int4] [--entropy]\n"
        "                  [--coder best|rans|wcode] [--block N] [--pack]\n"
        "  Converts a TFLite or ONNX model into Kestrel's .ksm format, or rewrites a .ksm\n"
        "  (as it is, e.g. an int8 model from ks-quant).\n"
        "  --weights  storage of conv/FC weights: fp16, int8 (per output channel) or int4\n"
        "             (per block of N input values, default 32); int8/int4 are decoded to\n"
        "             fp32 at load\n"
        "  --entropy  entropy-code the int8/int4 weight codes (lossless)\n"
        "  --coder    with --entropy: best (default: per tensor the smallest of raw, rANS\n"
        "             and wcode), rans (static order-0 rANS) or wcode (context-adaptive\n"
        "             arithmetic coding, also codes the scales)\n"
        "  --progress-lines  report progress on stderr as lines \"progress<TAB>converting<TAB>\n"
        "             DONE<TAB>TOTAL\" (read, import, optimize, write: 4 steps), for\n"
        "             programs that run the converter (the Python package's bars)\n"
        "  --pack     lossless format 1.2 packing (needs Kestrel >= 1.2 to load): every\n"
        "             constant entropy-coded where smaller (int8 weights of quantized\n"
        "             models included), zero points omitted, tables compressed; with a\n"
        "             .ksm input, --entropy alone means --pack\n"
        "  ks-convert IN --graph-json [--no-optimize]: print the graph as JSON instead\n"
        "  ks-convert --list-ops [--json]: the ops each importer converts, with their\n"
        "             constraints\n");
}

/* Length of the well-formed UTF-8 sequence at s (1..4), or 0 if it is not one. */
static int utf8_len(const unsigned char *s) {
    int n = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
    if (s[0] > 0xF4) return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;
    if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;
    return n;
}

/* s as a JSON string: quotes, backslashes and control characters escaped, bytes that are not
 * well-formed UTF-8 (names in a hostile model) replaced by U+FFFD, so the output always parses. */
static void json_string(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    putchar('"');
    while (*p) {
        if (*p == '"' || *p == '\\') {
            printf("\\%c", *p++);
        } else if (*p < 0x20) {
            printf("\\u%04x", *p++);
        } else if (*p < 0x80) {
            putchar(*p++);
        } else {
            int n = utf8_len(p);
            if (n == 0) {
                fputs("\\ufffd", stdout);
                p++;
            } else {
                fwrite(p, 1, (size_t)n, stdout);
                p += n;
            }
        }
    }
    putchar('"');
}

typedef struct importer_ops {
    const char *format;
    uint32_t (*count)(void);
    ks__import_op (*at)(uint32_t);
    const char *(*notes)(void);
} importer_ops;

/* --list-ops: per importer, its notes then one line per op ("NAME  constraints"), or one JSON
 * document {"importers": [{"format", "notes", "ops": [{"name", "constraints"}]}]}. */
static int list_ops(int json) {
    static const importer_ops importers[] = {
        {"tflite", ks__tflite_num_ops, ks__tflite_op, ks__tflite_import_notes},
        {"onnx", ks__onnx_num_ops, ks__onnx_op, ks__onnx_import_notes},
    };
    if (json) printf("{\"importers\":[");
    for (size_t k = 0; k < sizeof(importers) / sizeof(importers[0]); k++) {
        const importer_ops *im = &importers[k];
        uint32_t n = im->count();
        if (json) {
            printf("%s{\"format\":", k ? "," : "");
            json_string(im->format);
            printf(",\"notes\":");
            json_string(im->notes());
            printf(",\"ops\":[");
        } else {
            printf("%s%s importer: %u ops (%s)\n", k ? "\n" : "", im->format, n, im->notes());
        }
        for (uint32_t i = 0; i < n; i++) {
            ks__import_op op = im->at(i);
            if (!op.name) break;
            if (json) {
                printf("%s{\"name\":", i ? "," : "");
                json_string(op.name);
                printf(",\"constraints\":");
                json_string(op.constraints ? op.constraints : "");
                putchar('}');
            } else if (op.constraints && op.constraints[0]) {
                printf("  %-28s %s\n", op.name, op.constraints);
            } else {
                printf("  %s\n", op.name);
            }
        }
        if (json) printf("]}");
    }
    if (json) printf("]}\n");
    return fflush(stdout) == 0 ? 0 : 1;
}

static void json_ids(const int32_t *ids, uint32_t n) {
    putchar('[');
    for (uint32_t i = 0; i < n; i++)
        printf("%s%d", i ? "," : "", ids[i]);
    putchar(']');
}

/* --graph-json: the graph g as one JSON document. */
static int print_graph_json(const ks__graph *g) {
    printf("{\"tensors\":[");
    for (uint32_t i = 0; i < g->num_tensors; i++) {
        const ks__tensor *t = &g->tensors[i];
        printf("%s{\"name\":", i ? "," : "");
        json_string(t->name ? t->name : "");
        printf(",\"dtype\":");
        json_string(ks_dtype_string(t->dtype));
        printf(",\"shape\":");
        if (t->rank < 0) {
            printf("null");
        } else {
            putchar('[');
            for (int32_t d = 0; d < t->rank && d < KS_MAX_RANK; d++)
                printf("%s%lld", d ? "," : "", (long long)t->dims[d]);
            putchar(']');
        }
        printf(",\"const_bytes\":%llu}", t->data ? (unsigned long long)t->size_bytes : 0ull);
    }
    printf("],\"nodes\":[");
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        const ks__op_info *info = ks__op_get_info(n->op);
        printf("%s{\"op\":", i ? "," : "");
        json_string(info ? info->name : "?");
        printf(",\"name\":");
        json_string(n->name ? n->name : "");
        printf(",\"inputs\":");
        json_ids(n->inputs, n->num_inputs);
        printf(",\"outputs\":");
        json_ids(n->outputs, n->num_outputs);
        putchar('}');
    }
    printf("],\"inputs\":");
    json_ids(g->inputs, g->num_inputs);
    printf(",\"outputs\":");
    json_ids(g->outputs, g->num_outputs);
    printf("}\n");
    return fflush(stdout) == 0 ? 0 : 1;
}

static int g_progress_lines;

/* One machine-readable progress line (--progress-lines). */
static void progress(int done, int total) {
    if (!g_progress_lines) return;
    fprintf(stderr, "progress\tconverting\t%d\t%d\n", done, total);
    fflush(stderr);
}

int main(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    int optimize = 1, quiet = 0, coder_set = 0, graph_json = 0;
    ks__ksm_write_opts wopts = {.weights = KS__KSM_WEIGHTS_FP32};
    int weights_set = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--list-ops") == 0) {
            int json = 0;
            for (int j = 1; j < argc; j++) {
                if (strcmp(argv[j], "--json") == 0)
                    json = 1;
                else if (j != i) {
                    fprintf(stderr, "ks-convert: --list-ops takes only --json (got %s)\n", argv[j]);
                    return 2;
                }
            }
            return list_ops(json);
        }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--weights") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "fp32") == 0)
                wopts.weights = KS__KSM_WEIGHTS_FP32;
            else if (strcmp(v, "fp16") == 0)
                wopts.weights = KS__KSM_WEIGHTS_FP16;
            else if (strcmp(v, "int8") == 0)
                wopts.weights = KS__KSM_WEIGHTS_INT8;
            else if (strcmp(v, "int4") == 0)
                wopts.weights = KS__KSM_WEIGHTS_INT4;
            else {
                fprintf(stderr, "ks-convert: --weights %s: expected fp32, fp16, int8 or int4\n", v);
                return 2;
            }
            weights_set = 1;
        } else if (strcmp(argv[i], "--entropy") == 0)
            wopts.entropy = true;
        else if (strcmp(argv[i], "--coder") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "best") == 0)
                wopts.entropy_coders = 0;
            else if (strcmp(v, "rans") == 0)
                wopts.entropy_coders = 1u << KS__WCODER_RANS;
            else if (strcmp(v, "wcode") == 0)
                wopts.entropy_coders = 1u << KS__WCODER_WCODE;
            else {
                fprintf(stderr, "ks-convert: --coder %s: expected best, rans or wcode\n", v);
                return 2;
            }
            coder_set = 1;
        } else if (strcmp(argv[i], "--block") == 0 && i + 1 < argc) {
            char *end = NULL;
            long v = strtol(argv[++i], &end, 10);
            if (!end || *end || v < 1 || v > 65536) {
                fprintf(stderr, "ks-convert: --block %s: expected 1..65536\n", argv[i]);
                return 2;
            }
            wopts.block_size = (uint32_t)v;
        } else if (strcmp(argv[i], "--pack") == 0)
            wopts.pack = true;
        else if (strcmp(argv[i], "--no-optimize") == 0)
            optimize = 0;
        else if (strcmp(argv[i], "--quiet") == 0)
            quiet = 1;
        else if (strcmp(argv[i], "--progress-lines") == 0)
            g_progress_lines = 1;
        else if (strcmp(argv[i], "--graph-json") == 0)
            graph_json = 1;
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage();
            return 0;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "ks-convert: unknown option %s\n", argv[i]);
            usage();
            return 2;
        } else if (!in)
            in = argv[i];
        else if (!out)
            out = argv[i];
        else {
            usage();
            return 2;
        }
    }
    if (!in || (!out && !graph_json) || (out && graph_json)) {
        usage();
        return 2;
    }
    char err[1024] = "";
    uint8_t *buf = NULL;
    size_t n = 0;
    progress(0, 4);
    ks_status st = ks_read_file(in, (size_t)4 << 30, &buf, &n, err, sizeof(err));
    if (st) {
        fprintf(stderr, "ks-convert: %s\n", err);
        return 1;
    }
    bool ksm_in = n >= 4 && memcmp(buf, KSM_MAGIC, 4) == 0;
    /* an already converted (e.g. quantized) model: --entropy can only mean lossless packing */
    if (ksm_in && wopts.entropy && !weights_set) {
        wopts.entropy = false;
        wopts.pack = true;
    }
    if ((wopts.entropy && wopts.weights != KS__KSM_WEIGHTS_INT8 &&
         wopts.weights != KS__KSM_WEIGHTS_INT4) ||
        (coder_set && !wopts.entropy && !wopts.pack)) {
        fprintf(stderr, "ks-convert: %s\n",
                coder_set && !wopts.entropy && !wopts.pack
                    ? "--coder needs --entropy or --pack"
                    : "--entropy needs --weights int8 or int4 (or a .ksm input)");
        free(buf);
        return 2;
    }
    progress(1, 4);
    const char *base = strrchr(in, '/');
    base = base ? base + 1 : in;
    ks__graph g;
    ks__graph_init(&g, NULL);
    if (ksm_in) {
        /* the graph keeps pointing into buf, so buf lives until the graph is written */
        st = ks__ksm_read(buf, n, true, &g, err, sizeof(err));
        optimize = 0;
    } else {
        st = ks__import_any(buf, n, base, &g, err, sizeof(err));
        free(buf);
        buf = NULL;
    }
    uint32_t nodes_before = g.num_nodes;
    if (!st) progress(2, 4);
    if (!st && optimize) st = ks__graph_optimize(&g, err, sizeof(err));
    if (!st) st = ks__graph_validate(&g, err, sizeof(err));
    if (!st) progress(3, 4);
    if (!st && graph_json) {
        int rc = print_graph_json(&g);
        ks__graph_free(&g);
        free(buf);
        return rc;
    }
    if (!st) st = ks__ksm_write_file_ex(&g, &wopts, out, err, sizeof(err));
    if (!st) progress(4, 4);
    if (st) {
        fprintf(stderr, "ks-convert: %s: %s\n", ks_status_string(st), err);
        ks__graph_free(&g);
        free(buf);
        return 1;
    }
    if (!quiet)
        printf("ks-convert: %s -> %s: %u nodes (%u before optimization), %u tensors\n", in, out,
               g.num_nodes, nodes_before, g.num_tensors);
    ks__graph_free(&g);
    free(buf);
    return 0;
}
