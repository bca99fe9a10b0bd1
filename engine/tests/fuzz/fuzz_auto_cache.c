/* libFuzzer target for KS_BACKEND_AUTO's choice file parser (engine/runtime/auto_cache.c, format
 * in auto_cache.h). Inputs whose first byte is odd get this machine's valid header line
 * prepended, so the fuzzer reaches the entry parser without guessing the CPU name; the others are
 * parsed as they are. A result must be -1 (malformed), 0 (another header) or 1 + the number of
 * entries, and a found choice a backend a session runs on. Any crash, leak, hang or sanitizer
 * report is a bug. No seeds needed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kestrel/kestrel.h"
#include "runtime/auto_cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char header[512];
    ks__auto_header(header, sizeof(header));
    size_t hl = strlen(header);
    const char *key = "0a1b2c3d:1024:t1:p0:vulkan 10de:2335 driver 91178000 NVIDIA H200";
    char *buf = malloc(hl + 1 + size + 1);
    if (!buf) abort();
    size_t n = 0;
    if (size > 0 && (data[0] & 1)) {
        memcpy(buf, header, hl);
        buf[hl] = '\n';
        memcpy(buf + hl + 1, data + 1, size - 1);
        n = hl + size;
    } else {
        memcpy(buf, data, size);
        n = size;
    }
    ks_backend b = KS_BACKEND_AUTO;
    int r = ks__auto_parse(buf, n, header, key, &b);
    if (r < -1 || r > 1 + (int)KS__AUTO_MAX_ENTRIES) abort();
    if (r >= 1 && b != KS_BACKEND_COUNT && b != KS_BACKEND_CPU && b != KS_BACKEND_VULKAN &&
        b != KS_BACKEND_OPENCL)
        abort();
    if (r < 1 && b != KS_BACKEND_COUNT) abort();
    free(buf);
    return 0;
}
