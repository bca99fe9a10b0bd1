/* KSME container (encrypted .ksm). The byte layout is specified in ksm_crypt.h.
 *
 * secretstream rather than one-shot AEAD: chunking bounds the staging memory when decrypting
 * from a file, and secretstream's internal counter plus TAG_FINAL give reordering and truncation
 * detection without us managing per-chunk nonces. The header is bound as additional data to
 * every chunk (64 extra Poly1305 bytes per chunk, negligible) so no header field can be altered
 * without failing authentication at the first chunk. */
#include "ksm_crypt.h"

#include <stdio.h>
#include <string.h>

#if defined(KS_HAVE_SODIUM)
#include <sodium.h>
#endif

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) {
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}
void ks__secure_zero(void *p, size_t n) {
    if (!p || !n) return;
#if defined(KS_HAVE_SODIUM)
    sodium_memzero(p, n);
#else
    volatile uint8_t *v = (volatile uint8_t *)p;
    while (n--)
        *v++ = 0;
#endif
}

bool ks__ksme_is_encrypted(const void *data, size_t size_bytes) {
    return data && size_bytes >= 4 && memcmp(data, KSME_MAGIC, 4) == 0;
}

bool ks__ksme_available(void) {
#if defined(KS_HAVE_SODIUM)
    return true;
#else
    return false;
#endif
}

static bool all_zero(const uint8_t *p, size_t n) {
    uint8_t acc = 0;
    for (size_t i = 0; i < n; i++)
        acc |= p[i];
    return acc == 0;
}

ks_status ks__ksme_parse_header(const uint8_t *h, uint64_t file_bytes, ks__ksme_info *info,
                                char *err, size_t err_cap) {
    if (file_bytes < KSME_HEADER_BYTES) {
        snprintf(err, err_cap, "encrypted model: %llu bytes is shorter than the %d-byte header",
                 (unsigned long long)file_bytes, KSME_HEADER_BYTES);
        return KS_STATUS_INVALID_MODEL;
    }
    if (memcmp(h, KSME_MAGIC, 4) != 0) {
        snprintf(err, err_cap, "encrypted model: bad magic (not \"KSME\")");
        return KS_STATUS_INVALID_MODEL;
    }
    uint32_t version = (uint32_t)h[4] | (uint32_t)h[5] << 8;
    uint32_t header_bytes = (uint32_t)h[6] | (uint32_t)h[7] << 8;
    if (version != KSME_VERSION) {
        snprintf(err, err_cap, "encrypted model: container version %u (this Kestrel reads %d)",
                 version, KSME_VERSION);
        return version > KSME_VERSION ? KS_STATUS_VERSION_MISMATCH : KS_STATUS_INVALID_MODEL;
    }
    if (header_bytes != KSME_HEADER_BYTES) {
        snprintf(err, err_cap, "encrypted model: header size %u (expected %d)", header_bytes,
                 KSME_HEADER_BYTES);
        return KS_STATUS_INVALID_MODEL;
    }
    if (h[8] != KSME_ALG_XCHACHA20POLY1305_SECRETSTREAM) {
        snprintf(err, err_cap, "encrypted model: unknown algorithm id %u", h[8]);
        return KS_STATUS_UNSUPPORTED;
    }
    if (!all_zero(h + 9, 3) || !all_zero(h + 48, 16)) {
        snprintf(err, err_cap, "encrypted model: reserved header bytes are not zero");
        return KS_STATUS_INVALID_MODEL;
    }
    uint32_t chunk = rd32(h + 12);
    uint64_t plain = rd64(h + 16);
    if (chunk < KSME_MIN_CHUNK_BYTES || chunk > KSME_MAX_CHUNK_BYTES) {
        snprintf(err, err_cap, "encrypted model: chunk size %u outside %u..%u", chunk,
                 KSME_MIN_CHUNK_BYTES, KSME_MAX_CHUNK_BYTES);
        return KS_STATUS_INVALID_MODEL;
    }
    /* Bounding plain by the file size first keeps the arithmetic below overflow-free and means a
     * hostile header can never make the loader allocate more than the file's size. */
    uint64_t body = file_bytes - KSME_HEADER_BYTES;
    if (plain == 0 || plain > body) {
        snprintf(err, err_cap, "encrypted model: plaintext size %llu does not fit a %llu-byte file",
                 (unsigned long long)plain, (unsigned long long)file_bytes);
        return KS_STATUS_INVALID_MODEL;
    }
    uint64_t num_chunks = (plain + chunk - 1) / chunk;
    uint64_t expect = plain + num_chunks * KSME_CHUNK_OVERHEAD_BYTES;
    if (expect != body || (uint64_t)(size_t)plain != plain) {
        snprintf(err, err_cap,
                 "encrypted model: file is %llu bytes but its header describes %llu "
                 "(truncated or extended)",
                 (unsigned long long)file_bytes, (unsigned long long)(expect + KSME_HEADER_BYTES));
        return KS_STATUS_INVALID_MODEL;
    }
    info->chunk_bytes = chunk;
    info->plain_bytes = plain;
    info->num_chunks = num_chunks;
    return KS_STATUS_OK;
}

#if defined(KS_HAVE_SODIUM)

static void wr16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void wr32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void wr64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static ks_status check_key(const uint8_t *key, size_t key_bytes, char *err, size_t err_cap) {
    if (!key || key_bytes != KSME_KEY_BYTES) {
        snprintf(err, err_cap, "encryption key must be %d bytes (got %zu)", KSME_KEY_BYTES,
                 key ? key_bytes : 0);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (sodium_init() < 0) {
        snprintf(err, err_cap, "libsodium failed to initialize");
        return KS_STATUS_INTERNAL;
    }
    return KS_STATUS_OK;
}

ks_status ks__ksme_decrypt(const uint8_t *header, const ks__ksme_info *info, ks__ksme_read_fn read,
                           void *user, const uint8_t *key, size_t key_bytes, uint8_t *plain_out,
                           char *err, size_t err_cap) {
    ks_status st = check_key(key, key_bytes, err, err_cap);
    if (st) return st;
    crypto_secretstream_xchacha20poly1305_state state;
    if (crypto_secretstream_xchacha20poly1305_init_pull(&state, header + 24, key) != 0) {
        snprintf(err, err_cap, "encrypted model: bad stream header");
        st = KS_STATUS_TAMPERED;
        goto error;
    }
    uint64_t done = 0;
    for (uint64_t i = 0; i < info->num_chunks; i++) {
        size_t plain_n =
            (size_t)(info->plain_bytes - done < info->chunk_bytes ? info->plain_bytes - done
                                                                  : info->chunk_bytes);
        size_t cipher_n = plain_n + KSME_CHUNK_OVERHEAD_BYTES;
        const uint8_t *c = read(user, cipher_n);
        if (!c) {
            snprintf(err, err_cap, "encrypted model: read error at chunk %llu of %llu",
                     (unsigned long long)i, (unsigned long long)info->num_chunks);
            st = KS_STATUS_IO_ERROR;
            goto error;
        }
        unsigned long long got = 0;
        unsigned char tag = 0;
        int rc = crypto_secretstream_xchacha20poly1305_pull(&state, plain_out + done, &got, &tag, c,
                                                            cipher_n, header, KSME_HEADER_BYTES);
        bool last = i + 1 == info->num_chunks;
        unsigned char want = last ? crypto_secretstream_xchacha20poly1305_TAG_FINAL
                                  : crypto_secretstream_xchacha20poly1305_TAG_MESSAGE;
        if (rc != 0 || got != plain_n || tag != want) {
            snprintf(err, err_cap,
                     "encrypted model: chunk %llu of %llu failed authentication (model tampered "
                     "or wrong key)",
                     (unsigned long long)i, (unsigned long long)info->num_chunks);
            st = KS_STATUS_TAMPERED;
            goto error;
        }
        done += plain_n;
    }
    sodium_memzero(&state, sizeof(state));
    return KS_STATUS_OK;
error:
    sodium_memzero(&state, sizeof(state));
    /* Chunks before the failing one did authenticate, but releasing part of a model is never
     * useful and would leak plaintext to a caller that ignores the status. */
    ks__secure_zero(plain_out, (size_t)info->plain_bytes);
    return st;
}

ks_status ks__ksme_encrypt(const uint8_t *plain, size_t plain_bytes, const uint8_t *key,
                           size_t key_bytes, uint32_t chunk_bytes, const ks_allocator *a,
                           uint8_t **data_out, size_t *size_out, char *err, size_t err_cap) {
    ks_status st = check_key(key, key_bytes, err, err_cap);
    if (st) return st;
    if (!chunk_bytes) chunk_bytes = KSME_DEFAULT_CHUNK_BYTES;
    if (chunk_bytes < KSME_MIN_CHUNK_BYTES || chunk_bytes > KSME_MAX_CHUNK_BYTES) {
        snprintf(err, err_cap, "chunk size %u outside %u..%u", chunk_bytes, KSME_MIN_CHUNK_BYTES,
                 KSME_MAX_CHUNK_BYTES);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (!plain || plain_bytes == 0) {
        snprintf(err, err_cap, "nothing to encrypt (empty plain image)");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    size_t num_chunks = (plain_bytes - 1) / chunk_bytes + 1;
    if (num_chunks > (SIZE_MAX - KSME_HEADER_BYTES - plain_bytes) / KSME_CHUNK_OVERHEAD_BYTES) {
        snprintf(err, err_cap, "plain image of %zu bytes is too large", plain_bytes);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    size_t total = KSME_HEADER_BYTES + plain_bytes + num_chunks * KSME_CHUNK_OVERHEAD_BYTES;
    uint8_t *out = ks__alloc(a, total);
    if (!out) {
        snprintf(err, err_cap, "out of memory allocating %zu bytes", total);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    memset(out, 0, KSME_HEADER_BYTES);
    memcpy(out, KSME_MAGIC, 4);
    wr16(out + 4, KSME_VERSION);
    wr16(out + 6, KSME_HEADER_BYTES);
    out[8] = KSME_ALG_XCHACHA20POLY1305_SECRETSTREAM;
    wr32(out + 12, chunk_bytes);
    wr64(out + 16, (uint64_t)plain_bytes);
    crypto_secretstream_xchacha20poly1305_state state;
    /* init_push writes the random stream header; the header bytes must be final before they are
     * used as additional data, and init_push fills exactly bytes 24..47. */
    crypto_secretstream_xchacha20poly1305_init_push(&state, out + 24, key);
    size_t done = 0, pos = KSME_HEADER_BYTES;
    for (size_t i = 0; i < num_chunks; i++) {
        size_t n = plain_bytes - done < chunk_bytes ? plain_bytes - done : chunk_bytes;
        unsigned char tag = i + 1 == num_chunks ? crypto_secretstream_xchacha20poly1305_TAG_FINAL
                                                : crypto_secretstream_xchacha20poly1305_TAG_MESSAGE;
        unsigned long long clen = 0;
        crypto_secretstream_xchacha20poly1305_push(&state, out + pos, &clen, plain + done, n, out,
                                                   KSME_HEADER_BYTES, tag);
        done += n;
        pos += (size_t)clen;
    }
    sodium_memzero(&state, sizeof(state));
    *data_out = out;
    *size_out = total;
    return KS_STATUS_OK;
}

ks_status ks__ksme_keygen(uint8_t *key, size_t key_bytes) {
    if (!key || key_bytes != KSME_KEY_BYTES) return KS_STATUS_INVALID_ARGUMENT;
    if (sodium_init() < 0) return KS_STATUS_INTERNAL;
    randombytes_buf(key, key_bytes);
    return KS_STATUS_OK;
}

#else /* !KS_HAVE_SODIUM */

ks_status ks__ksme_decrypt(const uint8_t *header, const ks__ksme_info *info, ks__ksme_read_fn read,
                           void *user, const uint8_t *key, size_t key_bytes, uint8_t *plain_out,
                           char *err, size_t err_cap) {
    (void)header, (void)info, (void)read, (void)user, (void)key, (void)key_bytes, (void)plain_out;
    snprintf(err, err_cap,
             "encrypted model: this Kestrel was built without libsodium "
             "(KS_WITH_SODIUM=OFF)");
    return KS_STATUS_UNSUPPORTED;
}

ks_status ks__ksme_encrypt(const uint8_t *plain, size_t plain_bytes, const uint8_t *key,
                           size_t key_bytes, uint32_t chunk_bytes, const ks_allocator *a,
                           uint8_t **data_out, size_t *size_out, char *err, size_t err_cap) {
    (void)plain, (void)plain_bytes, (void)key, (void)key_bytes, (void)chunk_bytes, (void)a;
    (void)data_out, (void)size_out;
    snprintf(err, err_cap, "model encryption needs libsodium (built with KS_WITH_SODIUM=OFF)");
    return KS_STATUS_UNSUPPORTED;
}

ks_status ks__ksme_keygen(uint8_t *key, size_t key_bytes) {
    (void)key, (void)key_bytes;
    return KS_STATUS_UNSUPPORTED;
}

#endif

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

ks_status ks__ksme_decrypt_buffer(const uint8_t *data, size_t size_bytes, const uint8_t *key,
                                  size_t key_bytes, const ks_allocator *a, uint8_t **plain_out,
                                  size_t *plain_bytes_out, char *err, size_t err_cap) {
    if (!ks__ksme_available()) {
        return ks__ksme_decrypt(NULL, NULL, NULL, NULL, key, key_bytes, NULL, err, err_cap);
    }
    ks__ksme_info info;
    ks_status st = ks__ksme_parse_header(data, size_bytes, &info, err, err_cap);
    if (st) return st;
    uint8_t *plain = ks__alloc_aligned(a, (size_t)info.plain_bytes, 64);
    if (!plain) {
        snprintf(err, err_cap, "encrypted model: out of memory for %llu plaintext bytes",
                 (unsigned long long)info.plain_bytes);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    mem_reader r = {data + KSME_HEADER_BYTES, size_bytes - KSME_HEADER_BYTES};
    st = ks__ksme_decrypt(data, &info, mem_read, &r, key, key_bytes, plain, err, err_cap);
    if (st) {
        ks__free(a, plain);
        return st;
    }
    *plain_out = plain;
    *plain_bytes_out = (size_t)info.plain_bytes;
    return KS_STATUS_OK;
}
