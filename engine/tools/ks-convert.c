/* ks-convert IN.{tflite,onnx,ksm} OUT.ksm [--no-optimize] [--weights fp32|fp16|int8|int4]
 *            [--entropy] [--block N] [--pack]
 * Imports a TFLite or ONNX model, optimizes the graph and writes a .ksm file, optionally with
 * compressed conv/FC weights (see ksm.h, "Weight-only compression"). A .ksm input is rewritten
 * as it is (no optimization), e.g. to pack an int8 model made by ks-quant (--entropy or --pack:
 * format 1.2 lossless packing, see ksm.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "fileio.h"
#include "ksm.h"
#include "weight_quant.h"

static void usage(void) {
    fprintf(stderr,
            "usage: ks-convert IN.{tflite,onnx,ksm} OUT.ksm [--no-optimize] [--quiet]\n"
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
            "  --pack     lossless format 1.2 packing (needs Kestrel >= 1.2 to load): every\n"
            "             constant entropy-coded where smaller (int8 weights of quantized\n"
            "             models included), zero points omitted, tables compressed; with a\n"
            "             .ksm input, --entropy alone means --pack\n");
}

int main(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    int optimize = 1, quiet = 0, coder_set = 0;
    ks__ksm_write_opts wopts = {.weights = KS__KSM_WEIGHTS_FP32};
    int weights_set = 0;
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
    if (!in || !out) {
        usage();
        return 2;
    }
    char err[1024] = "";
    uint8_t *buf = NULL;
    size_t n = 0;
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
    if (!st && optimize) st = ks__graph_optimize(&g, err, sizeof(err));
    if (!st) st = ks__graph_validate(&g, err, sizeof(err));
    if (!st) st = ks__ksm_write_file_ex(&g, &wopts, out, err, sizeof(err));
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
