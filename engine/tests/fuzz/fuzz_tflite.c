/* libFuzzer target for the TFLite importer: any byte string must yield a status (and, on
 * success, a graph that validates), never a crash, hang, leak or huge allocation.
 * Seeds: engine/tests/fuzz/gen_seeds_tflite.py OUT_DIR. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "convert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ks__graph g;
    char err[512];
    ks__graph_init(&g, NULL);
    ks_status st = ks__import_tflite(data, size, "fuzz.tflite", &g, err, sizeof(err));
    if (st == KS_STATUS_OK && ks__graph_validate(&g, err, sizeof(err)) != KS_STATUS_OK)
        abort(); /* the importer must never return an invalid graph */
    ks__graph_free(&g);
    return 0;
}
