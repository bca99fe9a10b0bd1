/* Model key files. Raw bytes are what keygen writes; hex is accepted because keys are often
 * pasted from a secrets manager or CI variable. */
#include "key_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int hex_value(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

ks_status ks_key_file_read(const char *path, uint8_t key_out[KS_KEY_FILE_BYTES], char *err,
                           size_t err_cap) {
    uint8_t buf[2 * KS_KEY_FILE_BYTES + 3];
    ks_status st = KS_STATUS_OK;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_cap, "%s: cannot open key file", path);
        return KS_STATUS_IO_ERROR;
    }
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    if (n == KS_KEY_FILE_BYTES) {
        memcpy(key_out, buf, KS_KEY_FILE_BYTES);
        goto done;
    }
    while (n > 2 * KS_KEY_FILE_BYTES && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    if (n != 2 * KS_KEY_FILE_BYTES) {
        snprintf(err, err_cap, "%s: a key file holds 32 raw bytes or 64 hex digits", path);
        st = KS_STATUS_INVALID_ARGUMENT;
        goto done;
    }
    for (size_t i = 0; i < KS_KEY_FILE_BYTES; i++) {
        int hi = hex_value(buf[2 * i]), lo = hex_value(buf[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            snprintf(err, err_cap, "%s: non-hex character in key at offset %zu", path, 2 * i);
            st = KS_STATUS_INVALID_ARGUMENT;
            goto done;
        }
        key_out[i] = (uint8_t)(hi << 4 | lo);
    }
done:
    memset(buf, 0, sizeof(buf));
    return st;
}

ks_status ks_key_file_write(const char *path, const uint8_t key[KS_KEY_FILE_BYTES], char *err,
                            size_t err_cap) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        snprintf(err, err_cap, "%s: cannot create key file (%s)", path,
                 errno == EEXIST ? "it exists; refusing to overwrite a key" : "open failed");
        return KS_STATUS_IO_ERROR;
    }
    ssize_t w = write(fd, key, KS_KEY_FILE_BYTES);
    if (close(fd) != 0 || w != KS_KEY_FILE_BYTES) {
        unlink(path);
        snprintf(err, err_cap, "%s: write failed", path);
        return KS_STATUS_IO_ERROR;
    }
    return KS_STATUS_OK;
}
