/* libFuzzer target for the tools' .npy reader (engine/tools/common/npy.c), which ks-bench and
 * ks-run read inputs with and ks-quant reads calibration tensors with: the bytes go to a file
 * (the reader takes a path), then ks_npy_read. Seeds: engine/tests/fuzz/gen_seeds_npy.py OUTDIR.
 * Any crash, leak, hang or sanitizer report is a bug; error statuses are expected. A header that
 * claims more data than the file holds must be refused before anything that size is allocated
 * (the run's -malloc_limit_mb catches an allocation from the claim). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[64];
    snprintf(path, sizeof(path), "/tmp/ks_fuzz_npy_%ld.npy", (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    size_t wrote = fwrite(data, 1, size, f);
    fclose(f);
    if (wrote != size) return 0;
    ks_npy t;
    char err[256];
    ks_status st = ks_npy_read(path, &t, err, sizeof(err));
    if (st == KS_STATUS_OK) {
        if (!t.data) abort();
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < t.size_bytes; i++)
            sink ^= ((const uint8_t *)t.data)[i];
        (void)sink;
        ks_npy_free(&t);
    }
    return 0;
}
