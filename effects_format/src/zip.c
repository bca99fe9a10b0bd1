/* Minimal zip reader for effect packages. It trusts nothing in the archive: the central
 * directory is the single source of truth, every offset and size is checked against the buffer
 * before use, local headers must agree with it, and entries may not overlap each other or the
 * central directory (overlapping entries are the classic way to build a quoted zip bomb).
 * DEFLATE output is capped at the declared size, so a lying header cannot make us allocate or
 * inflate more than the limits allow. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/error.h"
#include "effect_internal.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_ZIP64_LOCATOR 0x07064b50u
#define EOCD_BYTES 22u
#define CENTRAL_BYTES 46u
#define LOCAL_BYTES 30u
#define MAX_COMMENT_BYTES 65535u

#define FLAG_ENCRYPTED 0x0001u
#define FLAG_DATA_DESCRIPTOR 0x0008u
#define FLAG_STRONG_ENCRYPTION 0x0040u
#define METHOD_STORED 0u
#define METHOD_DEFLATE 8u
#define METHOD_AES 99u
#define HOST_UNIX 3u
#define UNIX_TYPE_MASK 0170000u
#define UNIX_TYPE_REGULAR 0100000u
#define UNIX_TYPE_DIR 0040000u
#define UNIX_TYPE_SYMLINK 0120000u
#define DOS_ATTR_REPARSE_POINT 0x400u /* Windows symlinks and junctions */

typedef struct entry {
    uint32_t name_len, method, flags, crc, csize, usize, local_off;
    const char *name; /* points into the buffer, not NUL-terminated */
    size_t data_off;  /* filled after the local header is checked */
    int is_dir;
} entry;

static uint16_t rd16(const uint8_t *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}
static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* Names are printed with a precision because they are not NUL-terminated in the buffer. */
#define NAMEF "'%.*s'"
#define NAMEA(e) (int)(e)->name_len, (e)->name

/* Rejects anything that could escape a destination folder if a host extracts the package, or
 * that names the same file twice on a case-insensitive file system. */
static ks_status check_name(const entry *e, char *err, size_t err_cap) {
    const char *n = e->name;
    uint32_t len = e->name_len;
    if (len == 0)
        return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL, "zip: entry with an empty name");
    if (len > KS_EFFECT_MAX_NAME_BYTES)
        return ks__fail(err, err_cap, KS_STATUS_LIMIT_EXCEEDED,
                        "zip: entry name of %u bytes exceeds KS_EFFECT_MAX_NAME_BYTES (%u)", len,
                        KS_EFFECT_MAX_NAME_BYTES);
    if (n[0] == '/')
        return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                        "zip: entry " NAMEF " has an absolute path (expected a relative path)",
                        NAMEA(e));
    uint32_t comp_start = 0;
    for (uint32_t i = 0; i <= len; i++) {
        unsigned char c = i < len ? (unsigned char)n[i] : '/';
        if (i < len && (c < 0x20 || c == 0x7f || c == '\\' || c == ':'))
            return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                            "zip: entry " NAMEF " contains byte 0x%02x at %u (control characters, "
                            "'\\\\' and ':' are not allowed in names)",
                            NAMEA(e), c, i);
        if (c != '/') continue;
        uint32_t clen = i - comp_start;
        if (clen == 0 && !(i == len && e->is_dir))
            return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                            "zip: entry " NAMEF " has an empty path component", NAMEA(e));
        if ((clen == 1 && n[comp_start] == '.') ||
            (clen == 2 && n[comp_start] == '.' && n[comp_start + 1] == '.'))
            return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                            "zip: entry " NAMEF
                            " has a '%.*s' path component (zip-slip; expected a "
                            "plain relative path)",
                            NAMEA(e), (int)clen, n + comp_start);
        comp_start = i + 1;
    }
    return KS_STATUS_OK;
}

static int same_name_ci(const entry *a, const entry *b) {
    uint32_t la = a->name_len - (a->is_dir ? 1u : 0u), lb = b->name_len - (b->is_dir ? 1u : 0u);
    if (la != lb) return 0;
    for (uint32_t i = 0; i < la; i++) {
        unsigned char x = (unsigned char)a->name[i], y = (unsigned char)b->name[i];
        if (x >= 'A' && x <= 'Z') x = (unsigned char)(x + 32);
        if (y >= 'A' && y <= 'Z') y = (unsigned char)(y + 32);
        if (x != y) return 0;
    }
    return 1;
}

static int cmp_local_off(const void *pa, const void *pb) {
    const entry *a = *(const entry *const *)pa, *b = *(const entry *const *)pb;
    return a->local_off < b->local_off ? -1 : a->local_off > b->local_off;
}

static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
    if (size && items > SIZE_MAX / size) return Z_NULL;
    return ks__alloc(opaque, (size_t)items * size);
}
static void z_free(voidpf opaque, voidpf ptr) {
    ks__free(opaque, ptr);
}

static ks_status inflate_entry(const entry *e, const uint8_t *src, const ks_allocator *a,
                               uint8_t *dst, char *err, size_t err_cap) {
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    zs.zalloc = z_alloc;
    zs.zfree = z_free;
    zs.opaque = (voidpf)a;
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
        return ks__fail(err, err_cap, KS_STATUS_OUT_OF_MEMORY,
                        "zip: entry " NAMEF ": cannot initialise the inflater", NAMEA(e));
    zs.next_in = (Bytef *)(uintptr_t)src;
    zs.avail_in = e->csize;
    zs.next_out = dst;
    /* One byte more than declared: a stream that fills it is longer than its header says. */
    zs.avail_out = e->usize + 1u;
    int zr = inflate(&zs, Z_FINISH);
    uLong produced = zs.total_out;
    inflateEnd(&zs);
    if (zr == Z_MEM_ERROR)
        return ks__fail(err, err_cap, KS_STATUS_OUT_OF_MEMORY,
                        "zip: entry " NAMEF ": out of memory", NAMEA(e));
    if (zr != Z_STREAM_END || produced != e->usize)
        return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                        "zip: entry " NAMEF ": corrupt DEFLATE data (zlib %d, %lu bytes produced, "
                        "%u declared)",
                        NAMEA(e), zr, (unsigned long)produced, e->usize);
    return KS_STATUS_OK;
}

static ks_status parse_central(const uint8_t *buf, size_t size, entry *ents, uint32_t num,
                               size_t cd_off, size_t cd_size, char *err, size_t err_cap) {
    size_t pos = cd_off, cd_end = cd_off + cd_size;
    uint64_t total = 0;
    for (uint32_t i = 0; i < num; i++) {
        entry *e = &ents[i];
        if (cd_end - pos < CENTRAL_BYTES || rd32(buf + pos) != SIG_CENTRAL)
            return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                            "zip: central directory record %u at offset %zu is truncated or has a "
                            "bad signature",
                            i, pos);
        const uint8_t *h = buf + pos;
        uint32_t made_by = rd16(h + 4), name_len = rd16(h + 28), extra_len = rd16(h + 30);
        uint32_t comment_len = rd16(h + 32), disk = rd16(h + 34), ext_attr = rd32(h + 38);
        size_t rec = (size_t)CENTRAL_BYTES + name_len + extra_len + comment_len;
        if (cd_end - pos < rec)
            return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                            "zip: central directory record %u (%zu bytes) runs past the directory "
                            "end at offset %zu",
                            i, rec, cd_end);
        e->flags = rd16(h + 8);
        e->method = rd16(h + 10);
        e->crc = rd32(h + 16);
        e->csize = rd32(h + 20);
        e->usize = rd32(h + 24);
        e->local_off = rd32(h + 42);
        e->name_len = name_len;
        e->name = (const char *)h + CENTRAL_BYTES;
        e->is_dir = name_len > 0 && e->name[name_len - 1] == '/';
        pos += rec;

        ks_status st = check_name(e, err, err_cap);
        if (st) return st;
        if (e->csize == 0xffffffffu || e->usize == 0xffffffffu || e->local_off == 0xffffffffu ||
            disk == 0xffffu)
            return ks__fail(err, err_cap, KS_STATUS_UNSUPPORTED,
                            "zip: entry " NAMEF " uses zip64 fields (not supported; packages are "
                            "limited to %u bytes anyway)",
                            NAMEA(e), KS_EFFECT_MAX_PACKAGE_BYTES);
        if (disk != 0)
            return ks__fail(err, err_cap, KS_STATUS_UNSUPPORTED,
                            "zip: entry " NAMEF " starts on disk %u (multi-disk archives are not "
                            "supported)",
                            NAMEA(e), disk);
        if ((e->flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION)) || e->method == METHOD_AES)
            return ks__fail(err, err_cap, KS_STATUS_UNSUPPORTED,
                            "zip: entry " NAMEF " is encrypted (flags 0x%04x, method %u); "
                            "encrypted packages are not supported",
                            NAMEA(e), e->flags, e->method);
        if (e->method != METHOD_STORED && e->method != METHOD_DEFLATE)
            return ks__fail(err, err_cap, KS_STATUS_UNSUPPORTED,
                            "zip: entry " NAMEF " uses compression method %u (expected 0 STORED or "
                            "8 DEFLATE)",
                            NAMEA(e), e->method);
        uint32_t unix_type = (ext_attr >> 16) & UNIX_TYPE_MASK;
        if ((made_by >> 8) == HOST_UNIX && unix_type == UNIX_TYPE_SYMLINK)
            return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                            "zip: entry " NAMEF " is a symbolic link (not allowed in packages)",
                            NAMEA(e));
        if ((made_by >> 8) == HOST_UNIX && unix_type != 0 && unix_type != UNIX_TYPE_REGULAR &&
            unix_type != UNIX_TYPE_DIR)
            return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                            "zip: entry " NAMEF " is a special file (unix mode 0%o; expected a "
                            "regular file or directory)",
                            NAMEA(e), (ext_attr >> 16));
        if (ext_attr & DOS_ATTR_REPARSE_POINT)
            return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                            "zip: entry " NAMEF " is a Windows reparse point (symbolic link)",
                            NAMEA(e));
        if (e->is_dir && e->usize != 0)
            return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                            "zip: directory entry " NAMEF " has %u bytes of content", NAMEA(e),
                            e->usize);
        if (e->method == METHOD_STORED && e->csize != e->usize)
            return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                            "zip: STORED entry " NAMEF " has compressed size %u != size %u",
                            NAMEA(e), e->csize, e->usize);
        if (e->usize > KS_EFFECT_MAX_FILE_BYTES)
            return ks__fail(err, err_cap, KS_STATUS_LIMIT_EXCEEDED,
                            "zip: entry " NAMEF " is %u bytes uncompressed, over "
                            "KS_EFFECT_MAX_FILE_BYTES (%u)",
                            NAMEA(e), e->usize, KS_EFFECT_MAX_FILE_BYTES);
        if (e->usize > KS_EFFECT_RATIO_MIN_BYTES &&
            e->usize / (e->csize ? e->csize : 1u) > KS_EFFECT_MAX_RATIO)
            return ks__fail(err, err_cap, KS_STATUS_LIMIT_EXCEEDED,
                            "zip: entry " NAMEF " expands %u -> %u bytes, a ratio over "
                            "KS_EFFECT_MAX_RATIO (%u): refusing a likely zip bomb",
                            NAMEA(e), e->csize, e->usize, KS_EFFECT_MAX_RATIO);
        total += e->usize;
        if (total > KS_EFFECT_MAX_TOTAL_BYTES)
            return ks__fail(err, err_cap, KS_STATUS_LIMIT_EXCEEDED,
                            "zip: entries up to " NAMEF " add up to %llu bytes uncompressed, over "
                            "KS_EFFECT_MAX_TOTAL_BYTES (%u)",
                            NAMEA(e), (unsigned long long)total, KS_EFFECT_MAX_TOTAL_BYTES);
        for (uint32_t j = 0; j < i; j++)
            if (same_name_ci(&ents[j], e))
                return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                                "zip: duplicate entry name " NAMEF " (same as " NAMEF
                                ", ignoring case)",
                                NAMEA(e), NAMEA(&ents[j]));

        /* The local header: in bounds, same name and method, before the central directory. */
        size_t lo = e->local_off;
        if (lo > cd_off || cd_off - lo < LOCAL_BYTES || rd32(buf + lo) != SIG_LOCAL)
            return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                            "zip: entry " NAMEF ": local header offset %zu is out of bounds or has "
                            "a bad signature",
                            NAMEA(e), lo);
        const uint8_t *l = buf + lo;
        size_t data_off = lo + LOCAL_BYTES + rd16(l + 26) + rd16(l + 28);
        if (rd16(l + 26) != name_len || memcmp(l + LOCAL_BYTES, e->name, name_len) != 0)
            return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                            "zip: entry " NAMEF ": local header names a different file", NAMEA(e));
        if (rd16(l + 8) != e->method || (rd16(l + 6) & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION)))
            return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                            "zip: entry " NAMEF ": local header method/flags (%u/0x%04x) disagree "
                            "with the central directory",
                            NAMEA(e), rd16(l + 8), rd16(l + 6));
        if (!(e->flags & FLAG_DATA_DESCRIPTOR) &&
            (rd32(l + 14) != e->crc || rd32(l + 18) != e->csize || rd32(l + 22) != e->usize))
            return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                            "zip: entry " NAMEF
                            ": local header sizes/CRC disagree with the central "
                            "directory",
                            NAMEA(e));
        if (data_off > cd_off || cd_off - data_off < e->csize)
            return ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                            "zip: entry " NAMEF ": data (%u bytes at offset %zu) runs into the "
                            "central directory at %zu",
                            NAMEA(e), e->csize, data_off, cd_off);
        e->data_off = data_off;
    }
    (void)size;
    return KS_STATUS_OK;
}

static ks_status check_overlaps(entry *ents, uint32_t num, const ks_allocator *a, char *err,
                                size_t err_cap) {
    if (num < 2) return KS_STATUS_OK;
    entry **order = ks__alloc(a, num * sizeof(*order));
    if (!order) return ks__fail(err, err_cap, KS_STATUS_OUT_OF_MEMORY, "zip: out of memory");
    for (uint32_t i = 0; i < num; i++)
        order[i] = &ents[i];
    qsort(order, num, sizeof(*order), cmp_local_off);
    ks_status st = KS_STATUS_OK;
    for (uint32_t i = 1; i < num; i++) {
        const entry *p = order[i - 1], *e = order[i];
        if (e->local_off < p->data_off + p->csize) {
            st = ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                          "zip: entry " NAMEF " at offset %u overlaps entry " NAMEF
                          " (overlapping entries are a zip bomb technique)",
                          NAMEA(e), e->local_off, NAMEA(p));
            break;
        }
    }
    ks__free(a, order);
    return st;
}

void ks__zip_free(const ks_allocator *a, ks__zip_file *files, uint32_t num_files) {
    if (!files) return;
    for (uint32_t i = 0; i < num_files; i++) {
        ks__free(a, files[i].name);
        ks__free(a, files[i].data);
    }
    ks__free(a, files);
}

ks_status ks__zip_read(const uint8_t *buf, size_t size, const ks_allocator *a,
                       ks__zip_file **files_out, uint32_t *num_files_out, char *err,
                       size_t err_cap) {
    entry *ents = NULL;
    ks__zip_file *files = NULL;
    uint32_t num_files = 0;
    ks_status st = KS_STATUS_OK;
    if (size > KS_EFFECT_MAX_PACKAGE_BYTES) {
        st = ks__fail(err, err_cap, KS_STATUS_LIMIT_EXCEEDED,
                      "zip: package is %zu bytes, over KS_EFFECT_MAX_PACKAGE_BYTES (%u)", size,
                      KS_EFFECT_MAX_PACKAGE_BYTES);
        goto error;
    }
    if (size < EOCD_BYTES) {
        st = ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                      "zip: %zu bytes is too small for a zip file (no end of central directory)",
                      size);
        goto error;
    }
    /* The end record must end exactly at the end of the file (comment included): searching
     * further back would let trailing garbage hide a second, different directory. */
    size_t eocd = SIZE_MAX;
    size_t lowest =
        size - EOCD_BYTES > MAX_COMMENT_BYTES ? size - EOCD_BYTES - MAX_COMMENT_BYTES : 0;
    for (size_t p = size - EOCD_BYTES + 1; p-- > lowest;) {
        if (rd32(buf + p) == SIG_EOCD && p + EOCD_BYTES + rd16(buf + p + 20) == size) {
            eocd = p;
            break;
        }
    }
    if (eocd == SIZE_MAX) {
        st = ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                      "zip: no end of central directory record (not a zip file, or truncated)");
        goto error;
    }
    const uint8_t *z = buf + eocd;
    uint32_t disk = rd16(z + 4), cd_disk = rd16(z + 6), n_disk = rd16(z + 8), n = rd16(z + 10);
    uint32_t cd_size = rd32(z + 12), cd_off = rd32(z + 16);
    if (eocd >= 20 && rd32(buf + eocd - 20) == SIG_ZIP64_LOCATOR) {
        st = ks__fail(err, err_cap, KS_STATUS_UNSUPPORTED, "zip: zip64 archives are not supported");
        goto error;
    }
    if (n == 0xffffu || n_disk == 0xffffu || cd_size == 0xffffffffu || cd_off == 0xffffffffu) {
        st = ks__fail(err, err_cap, KS_STATUS_UNSUPPORTED,
                      "zip: zip64 end of central directory values are not supported");
        goto error;
    }
    if (disk != 0 || cd_disk != 0 || n_disk != n) {
        st = ks__fail(err, err_cap, KS_STATUS_UNSUPPORTED,
                      "zip: multi-disk archive (disk %u, directory on disk %u, %u of %u entries "
                      "here) is not supported",
                      disk, cd_disk, n_disk, n);
        goto error;
    }
    if (n > KS_EFFECT_MAX_FILES) {
        st = ks__fail(err, err_cap, KS_STATUS_LIMIT_EXCEEDED,
                      "zip: %u entries, over KS_EFFECT_MAX_FILES (%u)", n, KS_EFFECT_MAX_FILES);
        goto error;
    }
    if (cd_off > eocd || eocd - cd_off < cd_size) {
        st = ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL,
                      "zip: central directory (%u bytes at offset %u) is outside the file before "
                      "the end record at %zu",
                      cd_size, cd_off, eocd);
        goto error;
    }
    if (n == 0) {
        st = ks__fail(err, err_cap, KS_STATUS_INVALID_MODEL, "zip: the archive is empty");
        goto error;
    }
    ents = ks__alloc(a, n * sizeof(*ents));
    if (!ents) {
        st = ks__fail(err, err_cap, KS_STATUS_OUT_OF_MEMORY, "zip: out of memory");
        goto error;
    }
    memset(ents, 0, n * sizeof(*ents));
    st = parse_central(buf, size, ents, n, cd_off, cd_size, err, err_cap);
    if (st) goto error;
    st = check_overlaps(ents, n, a, err, err_cap);
    if (st) goto error;

    files = ks__alloc(a, n * sizeof(*files));
    if (!files) {
        st = ks__fail(err, err_cap, KS_STATUS_OUT_OF_MEMORY, "zip: out of memory");
        goto error;
    }
    for (uint32_t i = 0; i < n; i++) {
        const entry *e = &ents[i];
        if (e->is_dir) continue;
        ks__zip_file *f = &files[num_files];
        f->name = ks__alloc(a, e->name_len + 1u);
        f->data = ks__alloc(a, (size_t)e->usize + 1u);
        f->size_bytes = e->usize;
        num_files++;
        if (!f->name || !f->data) {
            st = ks__fail(err, err_cap, KS_STATUS_OUT_OF_MEMORY,
                          "zip: out of memory reading " NAMEF, NAMEA(e));
            goto error;
        }
        memcpy(f->name, e->name, e->name_len);
        f->name[e->name_len] = '\0';
        if (e->method == METHOD_STORED) {
            memcpy(f->data, buf + e->data_off, e->usize);
        } else {
            st = inflate_entry(e, buf + e->data_off, a, f->data, err, err_cap);
            if (st) goto error;
        }
        f->data[e->usize] = 0;
        uint32_t crc = (uint32_t)crc32(0L, f->data, e->usize);
        if (crc != e->crc) {
            st = ks__fail(err, err_cap, KS_STATUS_CHECKSUM_MISMATCH,
                          "zip: entry " NAMEF ": CRC-32 0x%08x does not match the stored 0x%08x",
                          NAMEA(e), crc, e->crc);
            goto error;
        }
    }
    ks__free(a, ents);
    *files_out = files;
    *num_files_out = num_files;
    return KS_STATUS_OK;

error:
    ks__zip_free(a, files, num_files);
    ks__free(a, ents);
    return st;
}
