/* libFuzzer target: the .ksm reader, and sessions on whatever it accepts (as stored and with
 * KS_PRECISION_F32, which rebuilds quantized graphs). */
#include <stdint.h>
#include <string.h>

#include "kestrel/engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t ks__session_arena_bytes(const ks_session *s);

/* A valid file may legitimately describe gigabytes of activations or hours of compute (a conv
 * with a huge dilation or padding); only small plans are run so each input stays fast. */
#define FUZZ_MAX_ARENA_BYTES (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ks_model *m = NULL;
    /* The checksum would reject nearly every mutation before the parser sees it. */
    ks_model_desc d = {.flags = KS_MODEL_COPY_BUFFER | KS_MODEL_SKIP_CHECKSUM};
    if (ks_model_load_buffer(data, size, &d, &m) != KS_STATUS_OK) return 0;
    /* Only plan graphs with small inputs: a valid file may legitimately ask for gigabytes. */
    int small = 1;
    for (uint32_t i = 0; i < ks_model_num_inputs(m); i++) {
        ks_tensor_info info;
        ks_model_input_info(m, i, &info);
        int64_t n = 1;
        for (int32_t k = 0; k < info.shape.rank; k++) {
            if (info.shape.dims[k] < 0 || info.shape.dims[k] > 4096)
                small = 0;
            else
                n *= info.shape.dims[k];
        }
        if (n > 65536) small = 0;
    }
    /* as stored, then with the int8 layers rebuilt in fp32 (precision.h) */
    for (int p = 0; p < 2 && small; p++) {
        ks_session *s = NULL;
        ks_session_desc sd = {.max_memory_bytes = 64u << 20,
                              .precision = p ? KS_PRECISION_F32 : KS_PRECISION_DEFAULT};
        if (ks_session_create(m, &sd, &s) == KS_STATUS_OK &&
            ks_session_reshape(s, NULL) == KS_STATUS_OK &&
            ks__session_arena_bytes(s) <= FUZZ_MAX_ARENA_BYTES)
            (void)ks_session_run(s);
        ks_session_destroy(s);
    }
    ks_model_destroy(m);
    return 0;
}
