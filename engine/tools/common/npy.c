/* .npy reading and writing (format: numpy.lib.format, versions 1.0 to 3.0). */
#include "npy.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

static const struct {
    const char *descr;
    ks_dtype dtype;
} k_types[] = {
    {"<f4", KS_DTYPE_F32}, {"<f2", KS_DTYPE_F16}, {"<i4", KS_DTYPE_I32},  {"<i8", KS_DTYPE_I64},
    {"|u1", KS_DTYPE_U8},  {"|i1", KS_DTYPE_I8},  {"|b1", KS_DTYPE_BOOL}, {"<i2", KS_DTYPE_I16},
    {"<u1", KS_DTYPE_U8},  {"<i1", KS_DTYPE_I8},  {"<b1", KS_DTYPE_BOOL},
};

void ks_npy_free(ks_npy *npy) {
    if (!npy) return;
    free(npy->data);
    npy->data = NULL;
}

void ks_npy_sanitize_name(const char *name, char *out, size_t cap) {
    size_t len = strlen(name), i = 0;
    /* File names are limited to 255 bytes: long names keep a prefix plus a hash of the whole
     * name (FNV-1a 64), so they stay unique and predictable for other tools. */
    size_t keep = len > KS_NPY_MAX_NAME ? KS_NPY_MAX_NAME - 17 : len;
    for (; i < keep && i + 1 < cap; i++) {
        char c = name[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        out[i] = ok ? c : '_';
    }
    if (len > KS_NPY_MAX_NAME && i + 18 <= cap) {
        uint64_t h = 0xcbf29ce484222325ull;
        for (size_t k = 0; k < len; k++)
            h = (h ^ (uint8_t)name[k]) * 0x100000001b3ull;
        snprintf(out + i, cap - i, "-%016llx", (unsigned long long)h);
        return;
    }
    if (cap) out[i < cap ? i : cap - 1] = 0;
}

ks_status ks_npy_read(const char *path, ks_npy *out, char *err, size_t err_cap) {
    memset(out, 0, sizeof(*out));
    ks_status st = KS_STATUS_INVALID_ARGUMENT;
    char *hdr = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        ks__fmt(err, err_cap, "%s: cannot open", path);
        return KS_STATUS_IO_ERROR;
    }
    unsigned char pre[10];
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        ks__fmt(err, err_cap, "%s: not a .npy file", path);
        goto error;
    }
    size_t hlen;
    if (pre[6] == 1) {
        if (fread(pre + 8, 1, 2, f) != 2) goto trunc;
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        unsigned char l[4];
        if (fread(l, 1, 4, f) != 4) goto trunc;
        hlen = (size_t)l[0] | (size_t)l[1] << 8 | (size_t)l[2] << 16 | (size_t)l[3] << 24;
    } else {
        ks__fmt(err, err_cap, "%s: .npy version %u is not supported", path, pre[6]);
        goto error;
    }
    if (hlen > 65536) {
        ks__fmt(err, err_cap, "%s: .npy header of %zu bytes is too large", path, hlen);
        goto error;
    }
    hdr = malloc(hlen + 1);
    if (!hdr) {
        st = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    if (fread(hdr, 1, hlen, f) != hlen) goto trunc;
    hdr[hlen] = 0;
    const char *d = strstr(hdr, "'descr':");
    const char *fo = strstr(hdr, "'fortran_order':");
    const char *sh = strstr(hdr, "'shape':");
    if (!d || !fo || !sh) {
        ks__fmt(err, err_cap, "%s: malformed .npy header", path);
        goto error;
    }
    d = strchr(d + 8, '\'');
    if (!d) goto bad_header;
    out->dtype = KS_DTYPE_INVALID;
    for (size_t i = 0; i < sizeof(k_types) / sizeof(k_types[0]); i++)
        if (strncmp(d + 1, k_types[i].descr, 3) == 0 && d[4] == '\'') out->dtype = k_types[i].dtype;
    if (out->dtype == KS_DTYPE_INVALID) {
        ks__fmt(err, err_cap, "%s: unsupported .npy dtype %.8s", path, d + 1);
        goto error;
    }
    if (strncmp(fo + 16, " True", 5) == 0 || strncmp(fo + 16, "True", 4) == 0) {
        ks__fmt(err, err_cap, "%s: Fortran-order arrays are not supported", path);
        goto error;
    }
    const char *p = strchr(sh, '(');
    if (!p) goto bad_header;
    p++;
    out->shape.rank = 0;
    while (*p && *p != ')') {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ')') break;
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || out->shape.rank >= KS_MAX_RANK) goto bad_header;
        out->shape.dims[out->shape.rank++] = v;
        p = end;
    }
    int64_t n = ks__numel(out->shape.rank, out->shape.dims);
    if (n < 0 || (uint64_t)n > (uint64_t)INT64_MAX / 8) goto bad_header;
    out->size_bytes = (size_t)n * ks_dtype_size(out->dtype);
    /* the header's claim against the bytes the file has, before allocating for it */
    long here = ftell(f);
    if (here < 0 || fseek(f, 0, SEEK_END) != 0) goto trunc;
    long end = ftell(f);
    if (end < here || (uint64_t)(end - here) < (uint64_t)out->size_bytes ||
        fseek(f, here, SEEK_SET) != 0)
        goto trunc;
    out->data = malloc(out->size_bytes ? out->size_bytes : 1);
    if (!out->data) {
        st = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    if (fread(out->data, 1, out->size_bytes, f) != out->size_bytes) goto trunc;
    free(hdr);
    fclose(f);
    return KS_STATUS_OK;
bad_header:
    ks__fmt(err, err_cap, "%s: malformed .npy header", path);
    goto error;
trunc:
    ks__fmt(err, err_cap, "%s: truncated .npy file", path);
error:
    free(hdr);
    ks_npy_free(out);
    fclose(f);
    return st;
}

ks_status ks_npy_write(const char *path, ks_dtype dtype, const ks_tensor_shape *shape,
                       const void *data, size_t size_bytes, char *err, size_t err_cap) {
    const char *descr = NULL;
    for (size_t i = 0; i < sizeof(k_types) / sizeof(k_types[0]) && !descr; i++)
        if (k_types[i].dtype == dtype) descr = k_types[i].descr;
    if (!descr) {
        ks__fmt(err, err_cap, "%s: dtype %s cannot be written", path, ks_dtype_string(dtype));
        return KS_STATUS_UNSUPPORTED;
    }
    char dims[256] = "";
    size_t len = 0;
    for (int32_t i = 0; i < shape->rank; i++)
        len += (size_t)snprintf(dims + len, sizeof(dims) - len, "%lld,%s",
                                (long long)shape->dims[i], i + 1 < shape->rank ? " " : "");
    if (shape->rank > 1 && len > 0) dims[len - 1] = 0; /* "(2, 3)" not "(2, 3,)" */
    char hdr[512];
    int hl = snprintf(hdr, sizeof(hdr), "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                      descr, dims);
    size_t total = 10 + (size_t)hl + 1;
    size_t padn = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f) {
        ks__fmt(err, err_cap, "%s: cannot open for writing", path);
        return KS_STATUS_IO_ERROR;
    }
    size_t hlen = (size_t)hl + padn + 1;
    unsigned char pre[10] = {0x93,
                             'N',
                             'U',
                             'M',
                             'P',
                             'Y',
                             1,
                             0,
                             (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)hl, f) == (size_t)hl;
    for (size_t i = 0; ok && i < padn; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    ok = ok && fwrite(data, 1, size_bytes, f) == size_bytes;
    if (fclose(f) != 0) ok = 0;
    if (!ok) {
        ks__fmt(err, err_cap, "%s: write failed", path);
        return KS_STATUS_IO_ERROR;
    }
    return KS_STATUS_OK;
}
