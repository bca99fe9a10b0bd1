/* libFuzzer target for the ONNX front-end: import, validate, optimize, free.
 * Seeds: engine/tests/fuzz/gen_seeds_onnx.py OUTDIR. Any crash, leak, hang or sanitizer report is a
 * bug; error statuses are expected. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "convert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ks__graph g;
    ks__graph_init(&g, NULL);
    char err[512];
    ks_status st = ks__import_onnx(data, size, "fuzz.onnx", &g, err, sizeof(err));
    if (st == KS_STATUS_OK) {
        if (ks__graph_validate(&g, err, sizeof(err)) != KS_STATUS_OK) abort();
        st = ks__graph_optimize(&g, err, sizeof(err));
        if (st == KS_STATUS_INTERNAL) abort();
        if (st == KS_STATUS_OK && ks__graph_validate(&g, err, sizeof(err)) != KS_STATUS_OK) abort();
    }
    ks__graph_free(&g);
    return 0;
}
