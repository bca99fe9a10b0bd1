/* ks-convert IN.{tflite,onnx} OUT.ksm [--no-optimize] [--weights fp32|fp16|int8|int4]
 *            [--entropy] [--block N]
 * Imports a TFLite or ONNX model, optimizes the graph and writes a .ksm file, optionally with
 * compressed conv/FC weights (see ksm.h, "Weight-only compression"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "fileio.h"
#include "ksm.h"
#include "wquant.h"

static void usage(void) {
    fprintf(stderr,
            "usage: ks-convert IN.{tflite,onnx} OUT.ksm [--no-optimize] [--quiet]\n"
            "                  [--weights fp32|fp16|int8|int4] [--entropy]\n"
            "                  [--coder best|rans|wcode] [--block N]\n"
            "  Converts a TFLite or ONNX model into Kestrel's .ksm format.\n"
            "  --weights  storage of conv/FC weights: fp16, int8 (per output channel) or int4\n"
            "             (per block of N input values, default 32); int8/int4 are decoded to\n"
            "             fp32 at load\n"
            "  --entropy  entropy-code the int8/int4 weight codes (lossless)\n"
            "  --coder    with --entropy: best (default: per tensor the smallest of raw, rANS\n"
            "             and wcode), rans (static order-0 rANS) or wcode (context-adaptive\n"
            "             arithmetic coding, also codes the scales)\n");
}

int main(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    int optimize = 1, quiet = 0, coder_set = 0;
    ks__ksm_write_opts wopts = {KS__KSM_WEIGHTS_FP32, false, 0, false, 0};
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
        } else if (strcmp(argv[i], "--no-optimize") == 0)
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
    if (wopts.entropy && wopts.weights != KS__KSM_WEIGHTS_INT8 &&
        wopts.weights != KS__KSM_WEIGHTS_INT4) {
        fprintf(stderr, "ks-convert: --entropy needs --weights int8 or int4\n");
        return 2;
    }
    if (coder_set && !wopts.entropy) {
        fprintf(stderr, "ks-convert: --coder needs --entropy\n");
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
    const char *base = strrchr(in, '/');
    base = base ? base + 1 : in;
    ks__graph g;
    ks__graph_init(&g, NULL);
    st = ks__import_any(buf, n, base, &g, err, sizeof(err));
    free(buf);
    uint32_t nodes_before = g.num_nodes;
    if (!st && optimize) st = ks__graph_optimize(&g, err, sizeof(err));
    if (!st) st = ks__graph_validate(&g, err, sizeof(err));
    if (!st) st = ks__ksm_write_file_ex(&g, &wopts, out, err, sizeof(err));
    if (st) {
        fprintf(stderr, "ks-convert: %s: %s\n", ks_status_string(st), err);
        ks__graph_free(&g);
        return 1;
    }
    if (!quiet)
        printf("ks-convert: %s -> %s: %u nodes (%u before optimization), %u tensors\n", in, out,
               g.num_nodes, nodes_before, g.num_tensors);
    ks__graph_free(&g);
    return 0;
}
