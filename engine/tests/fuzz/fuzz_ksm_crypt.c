/* libFuzzer target: the KSME container (ksm_crypt.h) through the public loader, with the fixed
 * key that gen_seeds_ksm_crypt.py encrypts its seeds under. Mutations of the chunk area almost
 * always fail authentication; the value is in the header checks, the size arithmetic, the chunk
 * walk and the refusal paths, none of which may crash, leak or over-allocate. */
#include <stdint.h>
#include <string.h>

#include "kestrel/engine.h"
#include "ksm_crypt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Must match FUZZ_KEY in gen_seeds_ksm_crypt.py: bytes 0, 1, ..., 31. */
static void fuzz_key(uint8_t key[KSME_KEY_BYTES]) {
    for (int i = 0; i < KSME_KEY_BYTES; i++)
        key[i] = (uint8_t)i;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t key[KSME_KEY_BYTES];
    fuzz_key(key);
    if (size >= KSME_HEADER_BYTES) {
        ks__ksme_info info;
        char err[256];
        if (ks__ksme_parse_header(data, size, &info, err, sizeof(err)) == KS_STATUS_OK &&
            info.plain_bytes > size)
            __builtin_trap(); /* the header may never claim more plaintext than the file holds */
    }
    ks_model *m = NULL;
    /* One decrypt thread: a pool per input would dominate the run time, and the chunk logic is
     * the same on every thread (engine/tests/unit/test_protect.c covers thread counts). */
    ks_model_desc d = {.key = key, .key_bytes = sizeof(key), .num_threads = 1};
    if (ks_model_load_buffer(data, size, &d, &m) == KS_STATUS_OK) ks_model_destroy(m);
    /* Without a key the same bytes must be refused or parsed as a plain model, never crash. */
    d.key = NULL;
    d.key_bytes = 0;
    d.flags = KS_MODEL_COPY_BUFFER;
    if (ks_model_load_buffer(data, size, &d, &m) == KS_STATUS_OK) ks_model_destroy(m);
    return 0;
}
