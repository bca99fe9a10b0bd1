#include "fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ir.h"

ks_status ks_read_file(const char *path, size_t max_bytes, uint8_t **data_out, size_t *size_out,
                       char *err, size_t err_cap) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        ks__fmt(err, err_cap, "%s: cannot open (%s)", path, strerror(errno));
        return KS_STATUS_IO_ERROR;
    }
    if (fseek(f, 0, SEEK_END) != 0) goto io;
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) goto io;
    if ((unsigned long)n > max_bytes) {
        ks__fmt(err, err_cap, "%s: %ld bytes is larger than the %zu-byte limit", path, n,
                max_bytes);
        fclose(f);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    uint8_t *buf = malloc((size_t)n ? (size_t)n : 1);
    if (!buf) {
        fclose(f);
        ks__fmt(err, err_cap, "%s: out of memory", path);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        goto io;
    }
    fclose(f);
    *data_out = buf;
    *size_out = (size_t)n;
    return KS_STATUS_OK;
io:
    ks__fmt(err, err_cap, "%s: read error", path);
    fclose(f);
    return KS_STATUS_IO_ERROR;
}

ks_status ks_make_dirs(const char *path, char *err, size_t err_cap) {
    char tmp[4096];
    ks__fmt(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST) goto fail;
        *p = '/';
    }
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST) goto fail;
    return KS_STATUS_OK;
fail:
    ks__fmt(err, err_cap, "%s: cannot create directory (%s)", tmp, strerror(errno));
    return KS_STATUS_IO_ERROR;
}
