/* libFuzzer target for the tune cache parser (engine/backends/cpu/tune.c, format in tune.h). Inputs
 * whose first byte is odd get this machine's valid header line prepended, so the fuzzer reaches the
 * entry parser without having to guess the CPU name; the others are parsed as they are. Any
 * crash, leak, hang or sanitizer report is a bug; rejection (-1) is expected. No seeds needed. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "impl.h"
#include "kestrel/kestrel.h"
#include "tune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void quiet(void *user, ks_log_level level, const char *message) {
    (void)user, (void)level, (void)message;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ks_log_set(quiet, NULL, KS_LOG_DEBUG); /* format every message too */
    ks__tuner *t = NULL;
    if (ks__tuner_create(NULL, KS_TUNE_FAST, NULL, &t) != KS_STATUS_OK) abort();
    if (size > 0 && (data[0] & 1)) {
        char header[512], isa[128];
        ks__isa_string(ks__cpu_isa(), isa, sizeof(isa));
        int hl = snprintf(header, sizeof(header), "kestrel-tune 1\t%s\t%s\t%s\n", ks__cpu_name(),
                          isa, KS_VERSION_STRING);
        if (hl < 0 || (size_t)hl >= sizeof(header)) abort();
        char *buf = malloc((size_t)hl + size);
        if (!buf) abort();
        memcpy(buf, header, (size_t)hl);
        memcpy(buf + hl, data + 1, size - 1);
        ks__tune_parse(t, buf, (size_t)hl + size - 1);
        free(buf);
    } else {
        ks__tune_parse(t, (const char *)data, size);
    }
    ks__tuner_destroy(t);
    return 0;
}
