/* libFuzzer target: .ksb bundles through ks_bundle_open_buffer (with and without the CRC check,
 * so the field checks are exercised on their own), then the bundle's graph. */
#include <stddef.h>
#include <stdint.h>

#include "kestrel/bundle.h"
#include "kestrel/pipeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (int pass = 0; pass < 2; pass++) {
        ks_bundle *b = NULL;
        ks_bundle_desc desc = {.flags =
                                   KS_BUNDLE_COPY_BUFFER | (pass ? KS_BUNDLE_SKIP_CHECKSUM : 0u)};
        if (ks_bundle_open_buffer(data, size, &desc, &b) != KS_STATUS_OK) continue;
        for (uint32_t i = 0; i < ks_bundle_num_entries(b); i++) {
            ks_bundle_entry e;
            volatile uint8_t sink = 0;
            if (ks_bundle_get_entry(b, i, &e) == KS_STATUS_OK && e.size_bytes)
                sink ^= ((const uint8_t *)e.data)[e.size_bytes - 1];
            (void)sink;
        }
        ks_pipeline *p = NULL;
        if (ks_pipeline_create_bundle(b, NULL, &p) == KS_STATUS_OK) ks_pipeline_destroy(p);
        ks_bundle_destroy(b);
    }
    return 0;
}
