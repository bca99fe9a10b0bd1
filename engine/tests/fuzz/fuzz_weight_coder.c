/* libFuzzer target for the wcode weight coder (weight_coder.h). Byte 0 picks the mode and geometry:
 *   bit 0 clear: the rest is a hostile stream decoded for the geometry from bytes 1..2 (its
 *                CRC field fixed up unless bit 15 of bytes 1..2 is set, to reach the core)
 *   bit 0 set:   the rest is data: codes (folded into [-qmax, qmax]) encoded, decoded and
 *                compared; then one byte of the stream (position from bytes 1..2) is flipped
 *                and the decode must refuse it
 * bit 1: int4 (qmax 7, 16-bit scale words) instead of int8 (qmax 127, 32-bit words). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/crc32.h"
#include "ksm.h"
#include "weight_coder.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes the stream's CRC field as weight_coder.h specifies it, so hostile bytes reach the
 * decoder's core instead of stopping at the checksum. */
static void fix_crc(uint8_t *s, size_t n, uint64_t num_scales, uint32_t scale_bits, uint64_t rows,
                    uint64_t row_len, int32_t qmax) {
    if (n < 9) return;
    uint8_t geo[32];
    uint64_t v[5] = {scale_bits, (uint64_t)qmax, num_scales, rows, row_len};
    for (int i = 0; i < 2; i++)
        for (int b = 0; b < 4; b++)
            geo[4 * i + b] = (uint8_t)(v[i] >> (8 * b));
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < 8; b++)
            geo[8 + 8 * i + b] = (uint8_t)(v[2 + i] >> (8 * b));
    uint32_t crc = ks__crc32(ks__crc32(ks__crc32(0, geo, 32), s, 5), s + 9, n - 9);
    for (int b = 0; b < 4; b++)
        s[5 + b] = (uint8_t)(crc >> (8 * b));
}

#define MAX_CODES 8192
#define MAX_SCALES 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    static int8_t codes[MAX_CODES], out[MAX_CODES];
    static uint8_t scales[MAX_SCALES * 4], scales_out[MAX_SCALES * 4];
    /* generous: adversarial data can cost the adaptive model several bytes per code */
    static uint8_t stream[MAX_CODES * 10 + MAX_SCALES * 16 + 64];
    static uint8_t scratch[MAX_CODES * 3 + 8];
    bool int4 = (data[0] & 2) != 0;
    int32_t qmax = int4 ? 7 : 127;
    uint32_t scale_bits = int4 ? 16 : 32;
    uint32_t sel = (uint32_t)data[1] | (uint32_t)data[2] << 8;
    if (!(data[0] & 1)) {
        /* geometry: 1..64 rows of 0..127 values */
        uint64_t rows = 1 + (sel & 63), row_len = (sel >> 6) & 127;
        size_t n = size - 3;
        uint8_t *hostile = malloc(n ? n : 1); /* exact size, so ASan sees any over-read */
        if (!hostile) return 0;
        memcpy(hostile, data + 3, n);
        if (!(sel & 0x8000)) fix_crc(hostile, n, rows, scale_bits, rows, row_len, qmax);
        (void)ks__wcode_decode(hostile, n, rows, scale_bits, scales_out, rows, row_len, qmax,
                               scratch, out);
        free(hostile);
        return 0;
    }
    const uint8_t *src = data + 3;
    size_t n = size - 3;
    if (n > MAX_CODES) n = MAX_CODES;
    uint64_t rows = 1 + (data[0] >> 2) % 16;
    uint64_t row_len = n / rows;
    if (rows > MAX_SCALES) return 0;
    for (uint64_t i = 0; i < rows * row_len; i++)
        codes[i] = (int8_t)((int32_t)(src[i] % (uint32_t)(2 * qmax + 1)) - qmax);
    for (uint64_t i = 0; i < rows * (scale_bits / 8); i++)
        scales[i] = (uint8_t)((n ? src[i % n] : 0) ^ i);
    size_t sz = 0;
    if (ks__wcode_encode(scales, rows, scale_bits, codes, rows, row_len, qmax, scratch, stream,
                         sizeof(stream), &sz) != KS_STATUS_OK)
        abort();
    if (ks__wcode_decode(stream, sz, rows, scale_bits, scales_out, rows, row_len, qmax, scratch,
                         out) != KS_STATUS_OK ||
        memcmp(out, codes, (size_t)(rows * row_len)) != 0 ||
        memcmp(scales_out, scales, (size_t)(rows * (scale_bits / 8))) != 0)
        abort();
    stream[sel % sz] ^= 0xa5;
    if (ks__wcode_decode(stream, sz, rows, scale_bits, scales_out, rows, row_len, qmax, scratch,
                         out) != KS_STATUS_INVALID_MODEL)
        abort();
    return 0;
}
