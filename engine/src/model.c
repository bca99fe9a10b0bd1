/* ks_model: loading .ksm files (mapped or from memory) and introspection. */
#include "model.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ksm.h"
#include "ksm_crypt.h"

static ks_status model_new(const ks_model_desc *desc, ks_model **out) {
    ks_allocator a = ks__allocator_or_default(desc ? desc->allocator : NULL);
    ks_model *m = ks__alloc(&a, sizeof(*m));
    if (!m) {
        ks__object_error(NULL, "out of memory allocating a model");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    memset(m, 0, sizeof(*m));
    m->obj.magic = KS__OBJECT_MAGIC;
    m->alloc = a;
    m->flags = desc ? desc->flags : 0;
    ks__graph_init(&m->graph, &a);
    *out = m;
    return KS_STATUS_OK;
}

void ks_model_destroy(ks_model *m) {
    if (!m) return;
    ks__graph_free(&m->graph);
    if (m->mapped) munmap(m->mapped, m->mapped_bytes);
    ks_allocator a = m->alloc;
    if (m->owned_secret) ks__secure_zero(m->owned, m->image_bytes);
    ks__free(&a, m->owned);
    m->obj.magic = 0;
    ks__free(&a, m);
}

/* Parses m->image; the image must stay valid for the model's life. */
static ks_status model_parse(ks_model *m, const char *what) {
    char err[KS_ERROR_CAP - 64];
    err[0] = 0;
    /* A decrypted image was authenticated chunk by chunk with Poly1305, which detects every
     * change the CRC could; re-checking the CRC would only add a second pass over the weights. */
    bool verify = !(m->flags & KS_MODEL_SKIP_CHECKSUM) && !m->owned_secret;
    ks_status st = ks__ksm_read(m->image, m->image_bytes, verify, &m->graph, err, sizeof(err));
    if (st) ks__object_error(NULL, "%s: %s", what, err);
    return st;
}

/* The key must be given exactly when the image is encrypted: a key with a plain file is refused
 * so that an app expecting a protected model cannot be handed a swapped-in unencrypted one. */
static ks_status check_key_use(const ks_model_desc *desc, bool encrypted, const char *what) {
    const uint8_t *key = desc ? desc->key : NULL;
    size_t key_bytes = desc ? desc->key_bytes : 0;
    if (key && key_bytes != KSME_KEY_BYTES) {
        ks__object_error(NULL, "%s: ks_model_desc.key_bytes is %zu; model keys are %d bytes", what,
                         key_bytes, KSME_KEY_BYTES);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (encrypted && !key) {
        ks__object_error(NULL,
                         "%s: the model is encrypted (KSME) but no key was given "
                         "(ks_model_desc.key)",
                         what);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (!encrypted && key) {
        ks__object_error(NULL, "%s: a key was given but the model is not encrypted; refusing it",
                         what);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (encrypted && !ks__ksme_available()) {
        ks__object_error(NULL,
                         "%s: the model is encrypted but this Kestrel was built without "
                         "libsodium (KS_WITH_SODIUM=OFF)",
                         what);
        return KS_STATUS_UNSUPPORTED;
    }
    return KS_STATUS_OK;
}

static void take_plaintext(ks_model *m, uint8_t *plain, size_t plain_bytes) {
    m->owned = plain;
    m->owned_secret = true;
    m->image = plain;
    m->image_bytes = plain_bytes;
}

typedef struct fd_reader {
    int fd;
    uint64_t offset;
    uint8_t *buf;
} fd_reader;

static const uint8_t *fd_read(void *user, size_t n) {
    fd_reader *r = user;
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(r->fd, r->buf + got, n - got, (off_t)(r->offset + got));
        if (k <= 0) return NULL;
        got += (size_t)k;
    }
    r->offset += n;
    return r->buf;
}

typedef struct mem_reader {
    const uint8_t *p;
    size_t left;
} mem_reader;

static const uint8_t *mem_read(void *user, size_t n) {
    mem_reader *r = user;
    if (n > r->left) return NULL;
    const uint8_t *p = r->p;
    r->p += n;
    r->left -= n;
    return p;
}

/* Faulting in a fresh multi-megabyte buffer 4 KiB at a time costs about as much as decrypting
 * it (measured ~50 ms for 55 MB on a VM), so with the default allocator a large plaintext is
 * 2 MiB aligned and marked for transparent huge pages. A caller's allocator is left alone. */
#define HUGE_PAGE_BYTES ((size_t)2 << 20)

static uint8_t *alloc_plaintext(ks_model *m, const ks_model_desc *desc, size_t n) {
    bool default_alloc = !desc->allocator || !desc->allocator->alloc || !desc->allocator->free;
    if (!default_alloc || n < 4 * HUGE_PAGE_BYTES)
        return ks__alloc_aligned(&m->alloc, n, KSM_WEIGHT_ALIGN);
    uint8_t *p = ks__alloc_aligned(&m->alloc, n, HUGE_PAGE_BYTES);
#if defined(MADV_HUGEPAGE)
    if (p) (void)madvise(p, n & ~(HUGE_PAGE_BYTES - 1), MADV_HUGEPAGE);
#endif
    return p;
}

#define DEFAULT_DECRYPT_THREADS 4u

static uint32_t decrypt_threads(const ks_model_desc *desc) {
    if (desc->num_threads) return desc->num_threads;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) return 1;
    return n > (long)DEFAULT_DECRYPT_THREADS ? DEFAULT_DECRYPT_THREADS : (uint32_t)n;
}

/* Decrypts an encrypted image. Version 2 chunks are independent: they are decrypted on several
 * threads straight from the caller's buffer or a read-only mapping of the file (page cache, no
 * copy). Otherwise (version 1, or no mapping) chunks are read in order through one chunk-sized
 * staging buffer, so peak memory is the plaintext plus one chunk. */
static ks_status load_encrypted(ks_model *m, const ks_model_desc *desc, const uint8_t *header,
                                size_t file_bytes, int fd, const uint8_t *data, const char *what) {
    char err[KS_ERROR_CAP - 64];
    uint8_t *plain = NULL;
    fd_reader fr = {fd, KSME_HEADER_BYTES, NULL};
    mem_reader mr = {data ? data + KSME_HEADER_BYTES : NULL,
                     data ? file_bytes - KSME_HEADER_BYTES : 0};
    void *mapped = MAP_FAILED;
    ks__ksme_info info;
    ks_status st = ks__ksme_parse_header(header, file_bytes, &info, err, sizeof(err));
    if (st) goto error;
    if (info.version == 2 && fd >= 0) {
        mapped = mmap(NULL, file_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
        if (mapped != MAP_FAILED) data = mapped;
    }
    bool random_access = info.version == 2 && data;
    if (!random_access && fd >= 0)
        fr.buf = ks__alloc(&m->alloc, info.chunk_bytes + info.overhead_bytes);
    plain = alloc_plaintext(m, desc, (size_t)info.plain_bytes);
    if ((!random_access && fd >= 0 && !fr.buf) || !plain) {
        snprintf(err, sizeof(err), "out of memory decrypting %llu bytes",
                 (unsigned long long)info.plain_bytes);
        st = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    if (random_access) {
        st = ks__ksme_decrypt_chunks(header, &info, data + KSME_HEADER_BYTES, desc->key,
                                     desc->key_bytes, decrypt_threads(desc), &m->alloc, plain, err,
                                     sizeof(err));
    } else {
        st = ks__ksme_decrypt(header, &info, fd >= 0 ? fd_read : mem_read,
                              fd >= 0 ? (void *)&fr : (void *)&mr, desc->key, desc->key_bytes,
                              plain, err, sizeof(err));
    }
    if (st) goto error;
    if (mapped != MAP_FAILED) munmap(mapped, file_bytes);
    ks__free(&m->alloc, fr.buf);
    take_plaintext(m, plain, (size_t)info.plain_bytes);
    return KS_STATUS_OK;
error:
    if (mapped != MAP_FAILED) munmap(mapped, file_bytes);
    ks__free(&m->alloc, fr.buf);
    ks__free(&m->alloc, plain); /* ks__ksme_decrypt wiped it on failure */
    ks__object_error(NULL, "%s: %s", what, err);
    return st;
}

ks_status ks_model_load_buffer(const void *data, size_t size_bytes, const ks_model_desc *desc,
                               ks_model **model_out) {
    if (!data || !model_out) {
        ks__object_error(NULL, "ks_model_load_buffer: data and model_out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks_model *m = NULL;
    bool encrypted = ks__ksme_is_encrypted(data, size_bytes);
    ks_status st = check_key_use(desc, encrypted, "model buffer");
    if (st) return st;
    st = model_new(desc, &m);
    if (st) return st;
    if (encrypted) {
        if (size_bytes < KSME_HEADER_BYTES) {
            ks__object_error(NULL, "model buffer: %zu bytes is too short for an encrypted model",
                             size_bytes);
            st = KS_STATUS_INVALID_MODEL;
            goto error;
        }
        st = load_encrypted(m, desc, data, size_bytes, -1, data, "model buffer");
        if (st) goto error;
    } else if ((m->flags & KS_MODEL_COPY_BUFFER) || ((uintptr_t)data % KSM_WEIGHT_ALIGN) != 0) {
        /* Kernels read weights as typed arrays, so an unaligned caller buffer is copied. */
        m->owned = ks__alloc_aligned(&m->alloc, size_bytes ? size_bytes : 1, KSM_WEIGHT_ALIGN);
        if (!m->owned) {
            ks__object_error(NULL, "out of memory copying a %zu-byte model", size_bytes);
            st = KS_STATUS_OUT_OF_MEMORY;
            goto error;
        }
        memcpy(m->owned, data, size_bytes);
        m->image = m->owned;
        m->image_bytes = size_bytes;
    } else {
        m->image = data;
        m->image_bytes = size_bytes;
    }
    st = model_parse(m, "model buffer");
    if (st) goto error;
    *model_out = m;
    return KS_STATUS_OK;
error:
    ks_model_destroy(m);
    return st;
}

ks_status ks_model_load_file(const char *path, const ks_model_desc *desc, ks_model **model_out) {
    if (!path || !model_out) {
        ks__object_error(NULL, "ks_model_load_file: path and model_out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks_model *m = NULL;
    ks_status st = model_new(desc, &m);
    if (st) return st;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        ks__object_error(NULL, "%s: cannot open", path);
        st = KS_STATUS_IO_ERROR;
        goto error;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        ks__object_error(NULL, "%s: not a regular file", path);
        st = KS_STATUS_IO_ERROR;
        goto error;
    }
    size_t n = (size_t)sb.st_size;
    if (n < 64) {
        ks__object_error(NULL, "%s: %zu bytes is too short for a .ksm file", path, n);
        st = KS_STATUS_INVALID_MODEL;
        goto error;
    }
    char magic[4];
    bool encrypted = pread(fd, magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
                     ks__ksme_is_encrypted(magic, sizeof(magic));
    st = check_key_use(desc, encrypted, path);
    if (st) goto error;
    if (encrypted) {
        uint8_t header[KSME_HEADER_BYTES];
        if (pread(fd, header, sizeof(header), 0) != (ssize_t)sizeof(header)) {
            ks__object_error(NULL, "%s: cannot read the encrypted model header", path);
            st = KS_STATUS_IO_ERROR;
            goto error;
        }
        st = load_encrypted(m, desc, header, n, fd, NULL, path);
        if (st) goto error;
    }
    if (!m->image && !(m->flags & KS_MODEL_NO_MMAP)) {
        void *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            m->mapped = p;
            m->mapped_bytes = n;
            m->image = p;
        }
    }
    if (!m->image) {
        m->owned = ks__alloc_aligned(&m->alloc, n, KSM_WEIGHT_ALIGN);
        if (!m->owned) {
            ks__object_error(NULL, "%s: out of memory reading %zu bytes", path, n);
            st = KS_STATUS_OUT_OF_MEMORY;
            goto error;
        }
        size_t got = 0;
        while (got < n) {
            ssize_t r = read(fd, (uint8_t *)m->owned + got, n - got);
            if (r <= 0) break;
            got += (size_t)r;
        }
        if (got != n) {
            ks__object_error(NULL, "%s: read %zu of %zu bytes", path, got, n);
            st = KS_STATUS_IO_ERROR;
            goto error;
        }
        m->image = m->owned;
    }
    close(fd);
    fd = -1;
    if (!m->owned_secret) m->image_bytes = n;
    st = model_parse(m, path);
    if (st) goto error;
    *model_out = m;
    return KS_STATUS_OK;
error:
    if (fd >= 0) close(fd);
    ks_model_destroy(m);
    return st;
}

uint32_t ks_model_num_inputs(const ks_model *m) {
    return m ? m->graph.num_inputs : 0;
}

uint32_t ks_model_num_outputs(const ks_model *m) {
    return m ? m->graph.num_outputs : 0;
}

void ks__tensor_info_from_def(const ks__tensor *t, ks_tensor_info *info) {
    memset(info, 0, sizeof(*info));
    info->name = t->name;
    info->dtype = t->dtype;
    info->shape.rank = t->rank;
    for (int32_t d = 0; d < t->rank; d++)
        info->shape.dims[d] = t->dims[d];
    if (t->quant.count) {
        info->scale = t->quant.scales[0];
        info->zero_point = t->quant.zero_points[0];
    }
}

static ks_status io_info(const ks_model *m, uint32_t index, bool input, ks_tensor_info *out) {
    if (!m || !out) return KS_STATUS_INVALID_ARGUMENT;
    uint32_t n = input ? m->graph.num_inputs : m->graph.num_outputs;
    if (index >= n) {
        ks__object_error((ks__object *)&m->obj, "%s index %u out of range (model has %u)",
                         input ? "input" : "output", index, n);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    int32_t id = input ? m->graph.inputs[index] : m->graph.outputs[index];
    ks__tensor_info_from_def(&m->graph.tensors[id], out);
    return KS_STATUS_OK;
}

ks_status ks_model_input_info(const ks_model *m, uint32_t index, ks_tensor_info *info_out) {
    return io_info(m, index, true, info_out);
}

ks_status ks_model_output_info(const ks_model *m, uint32_t index, ks_tensor_info *info_out) {
    return io_info(m, index, false, info_out);
}

const char *ks_model_metadata(const ks_model *m, const char *key) {
    if (!m || !key) return NULL;
    return ks__graph_get_meta(&m->graph, key);
}
