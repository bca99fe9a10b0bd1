/* The file of the persisted VkPipelineCache (docs/vulkan.md, "Pipeline cache"), kept apart from
 * the backend so that it builds without Vulkan and fuzzes without a device
 * (engine/tests/fuzz/fuzz_vk_pipeline_cache.c). Not a published API.
 *
 * "<tune_cache_path>.vkpipe": a 64-byte header, then the driver's cache data
 * (vkGetPipelineCacheData). Integers little-endian.
 *    0  char[16] "kestrel-vkpipe1" (NUL-padded)
 *   16  u32 vendorID, u32 deviceID, u32 driverVersion (VkPhysicalDeviceProperties)
 *   28  u32 KS_VERSION_HEX of the Kestrel that wrote it
 *   32  u8[16] pipelineCacheUUID
 *   48  u64 data bytes (1 .. KS__VK_PCACHE_MAX_BYTES), the rest of the file exactly
 *   56  u32 CRC-32 (base/crc32.h) of the data
 *   60  u32 0
 * Bytes 0..47 are the key: a file of another device, driver or Kestrel version is refused.
 *
 * Thread safety: pure functions. */
#ifndef KESTREL_VULKAN_PCACHE_FILE_H
#define KESTREL_VULKAN_PCACHE_FILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KS__VK_PCACHE_HEADER_BYTES 64u
#define KS__VK_PCACHE_KEY_BYTES 48u
#define KS__VK_PCACHE_MAX_BYTES ((size_t)64 << 20)

/* Writes the header's key part (bytes 0..47) and zeroes the rest. */
void ks__vk_pcache_key(uint8_t header[KS__VK_PCACHE_HEADER_BYTES], uint32_t vendor_id,
                       uint32_t device_id, uint32_t driver_version, const uint8_t uuid[16]);
/* Completes a header made by ks__vk_pcache_key for `bytes` bytes of data (size and CRC). */
void ks__vk_pcache_seal(uint8_t header[KS__VK_PCACHE_HEADER_BYTES], const uint8_t *data,
                        size_t bytes);
/* Checks a whole file (`file`, `size` bytes; any content) against the key of `header`. Returns
 * NULL and the data (inside `file`) when it is a valid cache for this key, else why not, as a
 * static string. */
const char *ks__vk_pcache_check(const uint8_t *file, size_t size,
                                const uint8_t header[KS__VK_PCACHE_HEADER_BYTES],
                                const uint8_t **data_out, size_t *bytes_out);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_VULKAN_PCACHE_FILE_H */
