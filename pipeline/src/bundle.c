/* .ksb bundles: reader (bounds-checked, mapped read-only) and writer. The byte format is
 * specified in include/kestrel/bundle.h. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/crc32.h"
#include "format/ksm.h"
#include "format/ksm_crypt.h"
#include "pipeline_internal.h"

struct ks_bundle {
    ks__object obj; /* must be first: ks_last_error() */
    ks_allocator alloc;
    const uint8_t *data;
    size_t size_bytes;
    void *mapped;
    size_t mapped_bytes;
    void *owned;
    uint32_t num_entries;
    ks_bundle_entry *entries;
    char (*names)[KS_BUNDLE_NAME_BYTES];
};

uint32_t ks__bundle_crc32(uint32_t crc, const uint8_t *data, size_t size_bytes) {
    return ks__crc32(crc, data, size_bytes);
}

static uint16_t rd16(const uint8_t *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint64_t rd64(const uint8_t *p) {
    return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32);
}

static void wr16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void wr32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void wr64(uint8_t *p, uint64_t v) {
    wr32(p, (uint32_t)v);
    wr32(p + 4, (uint32_t)(v >> 32));
}

const char *ks_bundle_kind_string(uint32_t kind) {
    switch (kind) {
    case KS_BUNDLE_FILE:
        return "file";
    case KS_BUNDLE_MODEL:
        return "model";
    case KS_BUNDLE_GRAPH:
        return "graph";
    case KS_BUNDLE_LABELS:
        return "labels";
    case KS_BUNDLE_CONFIG:
        return "config";
    default:
        return "unknown";
    }
}

/* CRC of the whole file with the checksum field read as zero. */
static uint32_t file_crc(const uint8_t *d, size_t n) {
    static const uint8_t zero[4] = {0, 0, 0, 0};
    uint32_t c = ks__crc32(0, d, 28);
    c = ks__crc32(c, zero, 4);
    return ks__crc32(c, d + 32, n - 32);
}

#define FAIL(status, ...)                                                                          \
    do {                                                                                           \
        snprintf(err, err_cap, __VA_ARGS__);                                                       \
        return status;                                                                             \
    } while (0)

static ks_status parse(ks_bundle *b, const char *src, bool verify, char *err, size_t err_cap) {
    const uint8_t *d = b->data;
    size_t n = b->size_bytes;
    if (n < KS_BUNDLE_HEADER_BYTES)
        FAIL(KS_STATUS_INVALID_MODEL, "%s: %zu bytes is shorter than the 64-byte header", src, n);
    if (memcmp(d, KS_BUNDLE_MAGIC, 4) != 0)
        FAIL(KS_STATUS_INVALID_MODEL, "%s: not a Kestrel bundle (magic is not \"KSBF\")", src);
    uint16_t major = rd16(d + 4);
    if (major > KS_BUNDLE_VERSION_MAJOR)
        FAIL(KS_STATUS_VERSION_MISMATCH,
             "%s: bundle version %u.%u needs a newer Kestrel (reads %d.x)", src, (unsigned)major,
             (unsigned)rd16(d + 6), KS_BUNDLE_VERSION_MAJOR);
    if (major == 0) FAIL(KS_STATUS_INVALID_MODEL, "%s: major version 0 is invalid", src);
    uint32_t header = rd32(d + 8), flags = rd32(d + 12), count = rd32(d + 24);
    uint64_t file_size = rd64(d + 16), table = rd64(d + 32);
    if (header != KS_BUNDLE_HEADER_BYTES)
        FAIL(KS_STATUS_INVALID_MODEL, "%s: header size is %u, expected 64", src, (unsigned)header);
    if (flags & ~1u)
        FAIL(KS_STATUS_INVALID_MODEL, "%s: reserved header flags 0x%x are set", src,
             (unsigned)flags);
    if (file_size != n)
        FAIL(KS_STATUS_INVALID_MODEL,
             "%s: header says %llu bytes but the file has %zu "
             "(truncated?)",
             src, (unsigned long long)file_size, n);
    for (int i = 40; i < 64; i++)
        if (d[i]) FAIL(KS_STATUS_INVALID_MODEL, "%s: reserved header byte %d is not zero", src, i);
    if (count > KS_BUNDLE_MAX_ENTRIES)
        FAIL(KS_STATUS_LIMIT_EXCEEDED, "%s: %u entries exceed KS_BUNDLE_MAX_ENTRIES (%u)", src,
             (unsigned)count, (unsigned)KS_BUNDLE_MAX_ENTRIES);
    if (table % KS_BUNDLE_ALIGN || table < KS_BUNDLE_HEADER_BYTES || table > n ||
        (uint64_t)count * KS_BUNDLE_ENTRY_BYTES > n - table)
        FAIL(KS_STATUS_INVALID_MODEL,
             "%s: entry table at offset %llu with %u entries does not fit "
             "in %zu bytes",
             src, (unsigned long long)table, (unsigned)count, n);
    /* A cleared flag with a stored CRC is what one flipped bit looks like: refuse it. */
    if (!(flags & 1u) && rd32(d + 28) != 0)
        FAIL(KS_STATUS_INVALID_MODEL, "%s: checksum flag is clear but a CRC is stored", src);
    if (verify && (flags & 1u)) {
        uint32_t want = rd32(d + 28), got = file_crc(d, n);
        if (want != got)
            FAIL(KS_STATUS_CHECKSUM_MISMATCH, "%s: file CRC-32 is 0x%08x, header says 0x%08x", src,
                 (unsigned)got, (unsigned)want);
    }
    b->entries = ks__calloc(&b->alloc, count ? count : 1, sizeof(*b->entries));
    b->names = ks__calloc(&b->alloc, count ? count : 1, sizeof(*b->names));
    if (!b->entries || !b->names)
        FAIL(KS_STATUS_OUT_OF_MEMORY, "%s: out of memory for %u entries", src, (unsigned)count);
    uint64_t min_offset = table + (uint64_t)count * KS_BUNDLE_ENTRY_BYTES;
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *e = d + table + (size_t)i * KS_BUNDLE_ENTRY_BYTES;
        const uint8_t *name = e + 32;
        size_t len = 0;
        while (len < KS_BUNDLE_NAME_BYTES && name[len])
            len++;
        if (len == 0 || len >= KS_BUNDLE_NAME_BYTES)
            FAIL(KS_STATUS_INVALID_MODEL, "%s: entry %u: name is empty or not NUL-terminated", src,
                 (unsigned)i);
        for (size_t k = len; k < KS_BUNDLE_NAME_BYTES; k++)
            if (name[k])
                FAIL(KS_STATUS_INVALID_MODEL, "%s: entry %u: name padding is not zero", src,
                     (unsigned)i);
        memcpy(b->names[i], name, len);
        uint64_t off = rd64(e + 8), size = rd64(e + 16);
        if (rd32(e + 4) || rd32(e + 28))
            FAIL(KS_STATUS_INVALID_MODEL, "%s: entry '%s': reserved fields are not zero", src,
                 b->names[i]);
        if (off % KS_BUNDLE_ALIGN || off < min_offset || off > n || size > n - off)
            FAIL(KS_STATUS_INVALID_MODEL,
                 "%s: entry '%s': %llu bytes at offset %llu lie outside "
                 "the file (%zu bytes), overlap an earlier entry or are not 64-byte aligned",
                 src, b->names[i], (unsigned long long)size, (unsigned long long)off, n);
        min_offset = off + size;
        for (uint32_t k = 0; k < i; k++)
            if (strcmp(b->names[k], b->names[i]) == 0)
                FAIL(KS_STATUS_INVALID_MODEL, "%s: entry name '%s' appears twice", src,
                     b->names[i]);
        if (verify && (flags & 1u)) {
            uint32_t want = rd32(e + 24), got = ks__crc32(0, d + off, (size_t)size);
            if (want != got)
                FAIL(KS_STATUS_CHECKSUM_MISMATCH,
                     "%s: entry '%s': CRC-32 is 0x%08x, table says "
                     "0x%08x",
                     src, b->names[i], (unsigned)got, (unsigned)want);
        }
        b->entries[i] = (ks_bundle_entry){
            .name = b->names[i], .kind = rd32(e), .data = d + off, .size_bytes = (size_t)size};
    }
    b->num_entries = count;
    return KS_STATUS_OK;
}

static ks_status bundle_new(const ks_bundle_desc *desc, ks_bundle **out) {
    ks_allocator a = ks__allocator_or_default(desc ? desc->allocator : NULL);
    ks_bundle *b = ks__calloc(&a, 1, sizeof(*b));
    if (!b) {
        ks__object_error(NULL, "out of memory creating a bundle");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    b->obj.magic = KS__OBJECT_MAGIC;
    b->alloc = a;
    *out = b;
    return KS_STATUS_OK;
}

void ks_bundle_destroy(ks_bundle *b) {
    if (!b) return;
    ks_allocator a = b->alloc;
    if (b->mapped) munmap(b->mapped, b->mapped_bytes);
    /* Copies may hold models that a task decrypted (ks_task_options.key): never leave them in
     * freed memory. The cost is one pass over a buffer the load already copied. */
    if (b->owned) ks__secure_zero(b->owned, b->size_bytes);
    ks__free(&a, b->owned);
    ks__free(&a, b->entries);
    ks__free(&a, b->names);
    ks__free(&a, b);
}

ks_status ks_bundle_open_buffer(const void *data, size_t size_bytes, const ks_bundle_desc *desc,
                                ks_bundle **bundle_out) {
    if (!data || !bundle_out) {
        ks__object_error(NULL, "ks_bundle_open_buffer: data and bundle_out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if ((uint64_t)size_bytes > KS_BUNDLE_MAX_BYTES) {
        ks__object_error(NULL, "bundle buffer of %zu bytes exceeds KS_BUNDLE_MAX_BYTES",
                         size_bytes);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    char err[KS_ERROR_CAP];
    ks_bundle *b = NULL;
    ks_status st = bundle_new(desc, &b);
    if (st) return st;
    uint32_t flags = desc ? desc->flags : 0;
    /* Models inside are used in place only from 64-byte aligned memory. */
    if ((flags & KS_BUNDLE_COPY_BUFFER) || ((uintptr_t)data % KS_BUNDLE_ALIGN) != 0) {
        b->owned = ks__alloc_aligned(&b->alloc, size_bytes ? size_bytes : 1, KS_BUNDLE_ALIGN);
        if (!b->owned) {
            snprintf(err, sizeof(err), "out of memory copying a %zu-byte bundle", size_bytes);
            st = KS_STATUS_OUT_OF_MEMORY;
            goto error;
        }
        memcpy(b->owned, data, size_bytes);
        b->data = b->owned;
    } else {
        b->data = data;
    }
    b->size_bytes = size_bytes;
    st = parse(b, "bundle buffer", !(flags & KS_BUNDLE_SKIP_CHECKSUM), err, sizeof(err));
    if (st) goto error;
    *bundle_out = b;
    return KS_STATUS_OK;
error:
    ks__object_error(NULL, "%s", err);
    ks_bundle_destroy(b);
    return st;
}

ks_status ks_bundle_open_file(const char *path, const ks_bundle_desc *desc,
                              ks_bundle **bundle_out) {
    if (!path || !bundle_out) {
        ks__object_error(NULL, "ks_bundle_open_file: path and bundle_out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    char err[KS_ERROR_CAP];
    ks_bundle *b = NULL;
    ks_status st = bundle_new(desc, &b);
    if (st) return st;
    uint32_t flags = desc ? desc->flags : 0;
    int fd = open(path, O_RDONLY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        snprintf(err, sizeof(err), "%s: cannot open", path);
        st = KS_STATUS_IO_ERROR;
        goto error;
    }
    if (sb.st_size < 0 || (uint64_t)sb.st_size > KS_BUNDLE_MAX_BYTES) {
        snprintf(err, sizeof(err), "%s: %lld bytes exceed KS_BUNDLE_MAX_BYTES", path,
                 (long long)sb.st_size);
        st = KS_STATUS_LIMIT_EXCEEDED;
        goto error;
    }
    size_t n = (size_t)sb.st_size;
    if (n > 0 && !(flags & KS_BUNDLE_NO_MMAP)) {
        void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            b->mapped = m;
            b->mapped_bytes = n;
            b->data = m;
        }
    }
    if (!b->data) {
        b->owned = ks__alloc_aligned(&b->alloc, n ? n : 1, KS_BUNDLE_ALIGN);
        if (!b->owned) {
            snprintf(err, sizeof(err), "%s: out of memory reading %zu bytes", path, n);
            st = KS_STATUS_OUT_OF_MEMORY;
            goto error;
        }
        size_t got = 0;
        while (got < n) {
            ssize_t r = read(fd, (uint8_t *)b->owned + got, n - got);
            if (r <= 0) break;
            got += (size_t)r;
        }
        if (got != n) {
            snprintf(err, sizeof(err), "%s: read %zu of %zu bytes", path, got, n);
            st = KS_STATUS_IO_ERROR;
            goto error;
        }
        b->data = b->owned;
    }
    close(fd);
    fd = -1;
    b->size_bytes = n;
    st = parse(b, path, !(flags & KS_BUNDLE_SKIP_CHECKSUM), err, sizeof(err));
    if (st) goto error;
    *bundle_out = b;
    return KS_STATUS_OK;
error:
    if (fd >= 0) close(fd);
    ks__object_error(NULL, "%s", err);
    ks_bundle_destroy(b);
    return st;
}

uint32_t ks_bundle_num_entries(const ks_bundle *b) {
    return b ? b->num_entries : 0;
}

ks_status ks_bundle_get_entry(const ks_bundle *b, uint32_t index, ks_bundle_entry *entry_out) {
    if (!b || !entry_out || index >= b->num_entries) return KS_STATUS_INVALID_ARGUMENT;
    *entry_out = b->entries[index];
    return KS_STATUS_OK;
}

ks_status ks_bundle_find(const ks_bundle *b, const char *name, ks_bundle_entry *entry_out) {
    if (!b || !name || !entry_out) return KS_STATUS_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < b->num_entries; i++)
        if (strcmp(b->entries[i].name, name) == 0) {
            *entry_out = b->entries[i];
            return KS_STATUS_OK;
        }
    return KS_STATUS_INVALID_ARGUMENT;
}

/* ---------------------------------------------------------------------------------------------
 * Writer
 * ------------------------------------------------------------------------------------------- */

typedef struct writer_entry {
    char name[KS_BUNDLE_NAME_BYTES];
    uint32_t kind;
    void *data;
    size_t size_bytes;
} writer_entry;

struct ks_bundle_writer {
    ks__object obj; /* must be first: ks_last_error() */
    ks_allocator alloc;
    uint32_t num_entries;
    writer_entry entries[KS_BUNDLE_MAX_ENTRIES];
};

ks_status ks_bundle_writer_create(const ks_allocator *allocator, ks_bundle_writer **writer_out) {
    if (!writer_out) return KS_STATUS_INVALID_ARGUMENT;
    ks_allocator a = ks__allocator_or_default(allocator);
    ks_bundle_writer *w = ks__calloc(&a, 1, sizeof(*w));
    if (!w) {
        ks__object_error(NULL, "out of memory creating a bundle writer");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    w->obj.magic = KS__OBJECT_MAGIC;
    w->alloc = a;
    *writer_out = w;
    return KS_STATUS_OK;
}

void ks_bundle_writer_destroy(ks_bundle_writer *w) {
    if (!w) return;
    ks_allocator a = w->alloc;
    for (uint32_t i = 0; i < w->num_entries; i++) {
        ks__secure_zero(w->entries[i].data, w->entries[i].size_bytes); /* as in ks_bundle_destroy */
        ks__free(&a, w->entries[i].data);
    }
    ks__free(&a, w);
}

ks_status ks_bundle_writer_add(ks_bundle_writer *w, const char *name, uint32_t kind,
                               const void *data, size_t size_bytes) {
    if (!w || !name || (size_bytes && !data)) return KS_STATUS_INVALID_ARGUMENT;
    size_t len = strlen(name);
    if (len == 0 || len >= KS_BUNDLE_NAME_BYTES) {
        ks__object_error(&w->obj, "bundle entry name '%.40s' must be 1..%u bytes", name,
                         (unsigned)KS_BUNDLE_NAME_BYTES - 1);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    for (uint32_t i = 0; i < w->num_entries; i++)
        if (strcmp(w->entries[i].name, name) == 0) {
            ks__object_error(&w->obj, "bundle entry '%s' added twice", name);
            return KS_STATUS_INVALID_ARGUMENT;
        }
    if (w->num_entries >= KS_BUNDLE_MAX_ENTRIES) {
        ks__object_error(&w->obj, "more than KS_BUNDLE_MAX_ENTRIES (%u) entries",
                         (unsigned)KS_BUNDLE_MAX_ENTRIES);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    writer_entry *e = &w->entries[w->num_entries];
    e->data = ks__alloc(&w->alloc, size_bytes ? size_bytes : 1);
    if (!e->data) {
        ks__object_error(&w->obj, "out of memory copying entry '%s' (%zu bytes)", name, size_bytes);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    if (size_bytes) memcpy(e->data, data, size_bytes);
    memset(e->name, 0, sizeof(e->name));
    memcpy(e->name, name, len);
    e->kind = kind;
    e->size_bytes = size_bytes;
    w->num_entries++;
    return KS_STATUS_OK;
}

static uint64_t align_up(uint64_t v) {
    return (v + KS_BUNDLE_ALIGN - 1) & ~(uint64_t)(KS_BUNDLE_ALIGN - 1);
}

ks_status ks_bundle_writer_finish(ks_bundle_writer *w, void **data_out, size_t *size_bytes_out) {
    if (!w || !data_out || !size_bytes_out) return KS_STATUS_INVALID_ARGUMENT;
    uint64_t table = KS_BUNDLE_HEADER_BYTES;
    uint64_t off = align_up(table + (uint64_t)w->num_entries * KS_BUNDLE_ENTRY_BYTES);
    uint64_t total = off;
    for (uint32_t i = 0; i < w->num_entries; i++)
        total = align_up(total) + w->entries[i].size_bytes;
    if (total > KS_BUNDLE_MAX_BYTES || total > SIZE_MAX) {
        ks__object_error(&w->obj, "bundle of %llu bytes exceeds KS_BUNDLE_MAX_BYTES",
                         (unsigned long long)total);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    uint8_t *d = ks__alloc_aligned(&w->alloc, (size_t)total, KS_BUNDLE_ALIGN);
    if (!d) {
        ks__object_error(&w->obj, "out of memory for a %llu-byte bundle",
                         (unsigned long long)total);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    memset(d, 0, (size_t)total);
    memcpy(d, KS_BUNDLE_MAGIC, 4);
    wr16(d + 4, KS_BUNDLE_VERSION_MAJOR);
    wr16(d + 6, KS_BUNDLE_VERSION_MINOR);
    wr32(d + 8, KS_BUNDLE_HEADER_BYTES);
    wr32(d + 12, 1u);
    wr64(d + 16, total);
    wr32(d + 24, w->num_entries);
    wr64(d + 32, table);
    for (uint32_t i = 0; i < w->num_entries; i++) {
        const writer_entry *e = &w->entries[i];
        uint8_t *t = d + table + (size_t)i * KS_BUNDLE_ENTRY_BYTES;
        off = align_up(off);
        wr32(t, e->kind);
        wr64(t + 8, off);
        wr64(t + 16, e->size_bytes);
        wr32(t + 24, ks__crc32(0, e->data, e->size_bytes));
        memcpy(t + 32, e->name, KS_BUNDLE_NAME_BYTES);
        memcpy(d + off, e->data, e->size_bytes);
        off += e->size_bytes;
    }
    wr32(d + 28, file_crc(d, (size_t)total));
    *data_out = d;
    *size_bytes_out = (size_t)total;
    return KS_STATUS_OK;
}

void ks_bundle_buffer_free(const ks_allocator *allocator, void *data) {
    ks_allocator a = ks__allocator_or_default(allocator);
    ks__free(&a, data);
}

ks_status ks_bundle_writer_write_file(ks_bundle_writer *w, const char *path) {
    if (!w || !path) return KS_STATUS_INVALID_ARGUMENT;
    void *data = NULL;
    size_t n = 0;
    ks_status st = ks_bundle_writer_finish(w, &data, &n);
    if (st) return st;
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(data, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = false;
    if (ok && rename(tmp, path) != 0) ok = false;
    if (!ok) {
        remove(tmp);
        ks__object_error(&w->obj, "%s: cannot write the bundle", path);
        st = KS_STATUS_IO_ERROR;
    }
    ks_bundle_buffer_free(&w->alloc, data);
    return st;
}
