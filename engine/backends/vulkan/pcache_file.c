/* The pipeline cache file (pcache_file.h). Trusts nothing in the file: sizes are checked against
 * the bytes actually present before anything is read, and the CRC covers the data the driver
 * will parse, so a torn write or a flipped bit never reaches vkCreatePipelineCache (drivers
 * check their own header, not their payload). */
#include "pcache_file.h"

#include <string.h>

#include "base/crc32.h"
#include "kestrel/kestrel.h"  /* KS_VERSION_HEX */
#include "vk_host_redirect.h" /* last: the module calls the core through a table */

#define MAGIC "kestrel-vkpipe1"

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void ks__vk_pcache_key(uint8_t header[KS__VK_PCACHE_HEADER_BYTES], uint32_t vendor_id,
                       uint32_t device_id, uint32_t driver_version, const uint8_t uuid[16]) {
    memset(header, 0, KS__VK_PCACHE_HEADER_BYTES);
    memcpy(header, MAGIC, sizeof(MAGIC));
    put32(header + 16, vendor_id);
    put32(header + 20, device_id);
    put32(header + 24, driver_version);
    put32(header + 28, (uint32_t)KS_VERSION_HEX);
    memcpy(header + 32, uuid, 16);
}

void ks__vk_pcache_seal(uint8_t header[KS__VK_PCACHE_HEADER_BYTES], const uint8_t *data,
                        size_t bytes) {
    uint64_t n = (uint64_t)bytes;
    put32(header + 48, (uint32_t)n);
    put32(header + 52, (uint32_t)(n >> 32));
    put32(header + 56, ks__crc32(0, data, bytes));
    put32(header + 60, 0);
}

const char *ks__vk_pcache_check(const uint8_t *file, size_t size,
                                const uint8_t header[KS__VK_PCACHE_HEADER_BYTES],
                                const uint8_t **data_out, size_t *bytes_out) {
    if (size < KS__VK_PCACHE_HEADER_BYTES) return "shorter than its header";
    if (memcmp(file, MAGIC, sizeof(MAGIC)) != 0) return "not a Kestrel pipeline cache";
    if (memcmp(file, header, KS__VK_PCACHE_KEY_BYTES) != 0)
        return "made by another device, driver or Kestrel version";
    uint64_t n = (uint64_t)get32(file + 48) | (uint64_t)get32(file + 52) << 32;
    if (n == 0 || n > KS__VK_PCACHE_MAX_BYTES) return "bad data size";
    if (n != size - KS__VK_PCACHE_HEADER_BYTES) return "truncated or too long";
    const uint8_t *data = file + KS__VK_PCACHE_HEADER_BYTES;
    if (ks__crc32(0, data, (size_t)n) != get32(file + 56)) return "CRC mismatch (corrupt)";
    *data_out = data;
    *bytes_out = (size_t)n;
    return NULL;
}
