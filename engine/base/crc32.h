/* CRC-32 (IEEE 802.3 polynomial, reflected; the zlib/PNG checksum), used by the .ksm container,
 * the weight codec and bundles. */
#ifndef KESTREL_BASE_CRC32_H
#define KESTREL_BASE_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Continues `crc` (0 to start) over size_bytes bytes of data. */
uint32_t ks__crc32(uint32_t crc, const uint8_t *data, size_t size_bytes);

#endif /* KESTREL_BASE_CRC32_H */
