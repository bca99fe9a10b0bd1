/* ks-convert IN.{tflite,onnx} OUT.ksm [--no-optimize]
 * Imports a TFLite or ONNX model, optimizes the graph and writes a .ksm file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "fileio.h"
#include "ksm.h"

static void usage(void) {
    fprintf(stderr, "usage: ks-convert IN.{tflite,onnx} OUT.ksm [--no-optimize] [--quiet]\n"
                    "  Converts a TFLite or ONNX model into Kestrel's .ksm format.\n");
}

int main(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    int optimize = 1, quiet = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-optimize") == 0)
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
    const char *base = strrchr(in, '/');
    base = base ? base + 1 : in;
    ks__graph g;
    ks__graph_init(&g, NULL);
    st = ks__import_any(buf, n, base, &g, err, sizeof(err));
    free(buf);
    uint32_t nodes_before = g.num_nodes;
    if (!st && optimize) st = ks__graph_optimize(&g, err, sizeof(err));
    if (!st) st = ks__graph_validate(&g, err, sizeof(err));
    if (!st) st = ks__ksm_write_file(&g, out, err, sizeof(err));
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
