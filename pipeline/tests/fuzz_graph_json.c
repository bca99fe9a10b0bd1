/* libFuzzer target: graph JSON documents through ks_pipeline_create_json, then one frame with
 * no input packets. Any status is fine; crashes, leaks, hangs and over-allocation are not. */
#include <stddef.h>
#include <stdint.h>

#include "kestrel/pipeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ks_pipeline *p = NULL;
    if (ks_pipeline_create_json((const char *)data, size, NULL, &p) != KS_STATUS_OK) return 0;
    const ks_packet *ins[KS_PIPELINE_MAX_PORTS] = {0};
    ks_packet *outs[KS_PIPELINE_MAX_PORTS] = {0};
    if (ks_pipeline_process(p, ins, 1, outs) == KS_STATUS_OK)
        for (uint32_t i = 0; i < ks_pipeline_num_outputs(p); i++)
            ks_packet_release(outs[i]);
    ks_pipeline_destroy(p);
    return 0;
}
