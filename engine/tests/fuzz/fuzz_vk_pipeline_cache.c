/* libFuzzer target for the Vulkan pipeline cache file check (engine/backends/vulkan/
 * pcache_file.h). Inputs whose first byte is odd get a valid header for a fixed key prepended
 * (its size and CRC made to fit the rest), so the fuzzer also reaches the accepting path; the
 * others are checked as they are. Accepted data must lie inside the input. Any crash, leak or
 * sanitizer report is a bug; refusals are expected. No seeds needed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/pcache_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const uint8_t uuid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    uint8_t key[KS__VK_PCACHE_HEADER_BYTES];
    ks__vk_pcache_key(key, 0x10de, 0x2330, 0x91000000u, uuid);
    const uint8_t *file = data, *got = NULL;
    size_t n = size, got_bytes = 0;
    uint8_t *buf = NULL;
    if (size > 1 && (data[0] & 1)) {
        n = KS__VK_PCACHE_HEADER_BYTES + size - 1;
        buf = malloc(n);
        if (!buf) abort();
        memcpy(buf, key, KS__VK_PCACHE_HEADER_BYTES);
        memcpy(buf + KS__VK_PCACHE_HEADER_BYTES, data + 1, size - 1);
        ks__vk_pcache_seal(buf, buf + KS__VK_PCACHE_HEADER_BYTES, size - 1);
        if (data[1] & 1) buf[(data[1] >> 1) % n] ^= 0x20; /* sometimes damaged after sealing */
        file = buf;
    }
    const char *why = ks__vk_pcache_check(file, n, key, &got, &got_bytes);
    if (!why && (got < file || got_bytes > n || got + got_bytes != file + n)) abort();
    if (why && !why[0]) abort();
    free(buf);
    return 0;
}
