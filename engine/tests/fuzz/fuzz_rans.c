/* libFuzzer target for the rANS decoder (rans.h). Byte 0 picks the mode:
 *   even: the rest is a hostile stream; bytes 1..2 give the expected symbol count
 *   odd:  the rest is data: encode (table model hint (byte 0 >> 1) % 3), decode and compare; then
 * flip one byte of the stream (position from byte 1) and decode again (status only). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rans.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    static uint8_t out[1 << 16], enc[(1 << 17) + 1024];
    if (!(data[0] & 1)) {
        size_t n = (size_t)data[1] | (size_t)data[2] << 8;
        (void)ks__rans_decode(data + 3, size - 3, out, n);
        return 0;
    }
    const uint8_t *src = data + 3;
    size_t n = size - 3;
    if (n > sizeof(out)) n = sizeof(out);
    size_t sz = 0;
    if (ks__rans_encode_model(src, n, (uint8_t)(data[0] >> 1) % 3, enc, sizeof(enc), &sz) !=
        KS_STATUS_OK)
        abort();
    if (ks__rans_decode(enc, sz, out, n) != KS_STATUS_OK || memcmp(out, src, n) != 0) abort();
    if (sz) {
        enc[((size_t)data[1] | (size_t)data[2] << 8) % sz] ^= 0xa5;
        (void)ks__rans_decode(enc, sz, out, n);
    }
    return 0;
}
