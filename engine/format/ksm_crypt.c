/* KSME container (encrypted .ksm). The byte layout is specified in ksm_crypt.h.
 *
 * Version 2 uses independent AEAD chunks rather than version 1's secretstream: a secretstream
 * must be decrypted in order on one thread, which made an encrypted load ~1.6x a plain one
 * (docs/compression.md); independent chunks decrypt on all cores. Reordering is caught by the
 * chunk index in the nonce, truncation by the header-bound plaintext size plus the exact file
 * size. The header is bound as additional data to every chunk (64 extra Poly1305 bytes per chunk,
 * negligible) so no header field can be altered without failing authentication. */
#include "ksm_crypt.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/pool.h"

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
    if (version != 1 && version != 2) {
        snprintf(err, err_cap, "encrypted model: container version %u (this Kestrel reads 1..%d)",
                 version, KSME_VERSION);
        return version > KSME_VERSION ? KS_STATUS_VERSION_MISMATCH : KS_STATUS_INVALID_MODEL;
    }
    if (header_bytes != KSME_HEADER_BYTES) {
        snprintf(err, err_cap, "encrypted model: header size %u (expected %d)", header_bytes,
                 KSME_HEADER_BYTES);
        return KS_STATUS_INVALID_MODEL;
    }
    uint32_t want_alg =
        version == 1 ? KSME_ALG_XCHACHA20POLY1305_SECRETSTREAM : KSME_ALG_XCHACHA20POLY1305_CHUNKS;
    if (h[8] != want_alg) {
        snprintf(err, err_cap, "encrypted model: algorithm id %u (container version %u uses %u)",
                 h[8], version, want_alg);
        return KS_STATUS_UNSUPPORTED;
    }
    size_t nonce_end = version == 1 ? 48 : 24 + KSME_NONCE_PREFIX_BYTES;
    if (!all_zero(h + 9, 3) || !all_zero(h + nonce_end, KSME_HEADER_BYTES - nonce_end)) {
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
    uint32_t overhead = version == 1 ? KSME_V1_CHUNK_OVERHEAD_BYTES : KSME_CHUNK_OVERHEAD_BYTES;
    uint64_t num_chunks = (plain + chunk - 1) / chunk;
    uint64_t expect = plain + num_chunks * overhead;
    if (expect != body || (uint64_t)(size_t)plain != plain) {
        snprintf(err, err_cap,
                 "encrypted model: file is %llu bytes but its header describes %llu "
                 "(truncated or extended)",
                 (unsigned long long)file_bytes, (unsigned long long)(expect + KSME_HEADER_BYTES));
        return KS_STATUS_INVALID_MODEL;
    }
    info->version = version;
    info->overhead_bytes = overhead;
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

static size_t chunk_plain_bytes(const ks__ksme_info *info, uint64_t i) {
    uint64_t start = i * info->chunk_bytes;
    uint64_t left = info->plain_bytes - start;
    return (size_t)(left < info->chunk_bytes ? left : info->chunk_bytes);
}

static void chunk_nonce(const uint8_t *header, uint64_t i,
                        uint8_t nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES]) {
    memcpy(nonce, header + 24, KSME_NONCE_PREFIX_BYTES);
    wr64(nonce + KSME_NONCE_PREFIX_BYTES, i);
}

/* Version 2: chunk i of ciphertext c (plain_n + 16 bytes) into plain. 0 on success. */
static int open_chunk(const uint8_t *header, const ks__ksme_info *info, uint64_t i,
                      const uint8_t *c, const uint8_t *key, uint8_t *plain) {
    uint8_t nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
    chunk_nonce(header, i, nonce);
    size_t plain_n = chunk_plain_bytes(info, i);
    unsigned long long got = 0;
    int rc = crypto_aead_xchacha20poly1305_ietf_decrypt(plain, &got, NULL, c,
                                                        plain_n + KSME_CHUNK_OVERHEAD_BYTES, header,
                                                        KSME_HEADER_BYTES, nonce, key);
    return rc != 0 || got != plain_n;
}

static ks_status tampered(uint64_t i, const ks__ksme_info *info, char *err, size_t err_cap) {
    snprintf(err, err_cap,
             "encrypted model: chunk %llu of %llu failed authentication (model tampered or "
             "wrong key)",
             (unsigned long long)i, (unsigned long long)info->num_chunks);
    return KS_STATUS_TAMPERED;
}

typedef struct chunk_job {
    const uint8_t *header, *body, *key;
    const ks__ksme_info *info;
    uint8_t *plain;
    atomic_uint_least64_t first_bad; /* UINT64_MAX: none */
} chunk_job;

static void open_chunk_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    chunk_job *job = arg;
    size_t stride = (size_t)job->info->chunk_bytes + KSME_CHUNK_OVERHEAD_BYTES;
    for (size_t i = begin; i < end; i++) {
        if (open_chunk(job->header, job->info, i, job->body + i * stride, job->key,
                       job->plain + i * (size_t)job->info->chunk_bytes) == 0)
            continue;
        /* Keep the lowest failing index so the message does not depend on thread timing. */
        uint_least64_t seen = atomic_load(&job->first_bad);
        while (i < seen && !atomic_compare_exchange_weak(&job->first_bad, &seen, i)) {
        }
        return;
    }
}

ks_status ks__ksme_decrypt_chunks(const uint8_t *header, const ks__ksme_info *info,
                                  const uint8_t *body, const uint8_t *key, size_t key_bytes,
                                  uint32_t num_threads, const ks_allocator *alloc,
                                  uint8_t *plain_out, char *err, size_t err_cap) {
    ks_status st = check_key(key, key_bytes, err, err_cap);
    if (st) return st;
    if (info->version != 2) {
        snprintf(err, err_cap, "encrypted model: container version %u is sequential",
                 info->version);
        return KS_STATUS_INTERNAL;
    }
    chunk_job job = {header, body, key, info, plain_out, UINT64_MAX};
    if (num_threads > info->num_chunks) num_threads = (uint32_t)info->num_chunks;
    ks__pool *pool = NULL;
    /* Without a pool (one thread requested, or thread creation failed) the calling thread
     * decrypts everything: slower, never wrong. */
    if (num_threads > 1) (void)ks__pool_create(alloc, num_threads, &pool);
    ks__parallel_for(pool, (size_t)info->num_chunks, 1, open_chunk_range, &job);
    ks__pool_destroy(pool);
    uint64_t bad = atomic_load(&job.first_bad);
    if (bad == UINT64_MAX) return KS_STATUS_OK;
    ks__secure_zero(plain_out, (size_t)info->plain_bytes);
    return tampered(bad, info, err, err_cap);
}

ks_status ks__ksme_decrypt(const uint8_t *header, const ks__ksme_info *info, ks__ksme_read_fn read,
                           void *user, const uint8_t *key, size_t key_bytes, uint8_t *plain_out,
                           char *err, size_t err_cap) {
    ks_status st = check_key(key, key_bytes, err, err_cap);
    if (st) return st;
    if (info->version == 2) {
        uint64_t done = 0;
        for (uint64_t i = 0; i < info->num_chunks; i++) {
            size_t plain_n = chunk_plain_bytes(info, i);
            const uint8_t *c = read(user, plain_n + KSME_CHUNK_OVERHEAD_BYTES);
            if (!c) {
                snprintf(err, err_cap, "encrypted model: read error at chunk %llu of %llu",
                         (unsigned long long)i, (unsigned long long)info->num_chunks);
                ks__secure_zero(plain_out, (size_t)info->plain_bytes);
                return KS_STATUS_IO_ERROR;
            }
            if (open_chunk(header, info, i, c, key, plain_out + done)) {
                ks__secure_zero(plain_out, (size_t)info->plain_bytes);
                return tampered(i, info, err, err_cap);
            }
            done += plain_n;
        }
        return KS_STATUS_OK;
    }
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
        size_t cipher_n = plain_n + KSME_V1_CHUNK_OVERHEAD_BYTES;
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
            st = tampered(i, info, err, err_cap);
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
    return ks__ksme_encrypt_version(KSME_VERSION, plain, plain_bytes, key, key_bytes, chunk_bytes,
                                    a, data_out, size_out, err, err_cap);
}

ks_status ks__ksme_encrypt_version(uint32_t version, const uint8_t *plain, size_t plain_bytes,
                                   const uint8_t *key, size_t key_bytes, uint32_t chunk_bytes,
                                   const ks_allocator *a, uint8_t **data_out, size_t *size_out,
                                   char *err, size_t err_cap) {
    ks_status st = check_key(key, key_bytes, err, err_cap);
    if (st) return st;
    if (version != 1 && version != 2) {
        snprintf(err, err_cap, "container version %u (1 or 2)", version);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    size_t overhead = version == 1 ? KSME_V1_CHUNK_OVERHEAD_BYTES : KSME_CHUNK_OVERHEAD_BYTES;
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
    if (num_chunks > (SIZE_MAX - KSME_HEADER_BYTES - plain_bytes) / overhead) {
        snprintf(err, err_cap, "plain image of %zu bytes is too large", plain_bytes);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    size_t total = KSME_HEADER_BYTES + plain_bytes + num_chunks * overhead;
    uint8_t *out = ks__alloc(a, total);
    if (!out) {
        snprintf(err, err_cap, "out of memory allocating %zu bytes", total);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    memset(out, 0, KSME_HEADER_BYTES);
    memcpy(out, KSME_MAGIC, 4);
    wr16(out + 4, (uint16_t)version);
    wr16(out + 6, KSME_HEADER_BYTES);
    out[8] =
        version == 1 ? KSME_ALG_XCHACHA20POLY1305_SECRETSTREAM : KSME_ALG_XCHACHA20POLY1305_CHUNKS;
    wr32(out + 12, chunk_bytes);
    wr64(out + 16, (uint64_t)plain_bytes);
    if (version == 2) {
        /* 128 random bits per file: nonces never repeat across files under one key (2^-64
         * collision odds after 2^32 files), and the chunk index makes them unique within one. */
        randombytes_buf(out + 24, KSME_NONCE_PREFIX_BYTES);
        ks__ksme_info info = {2, KSME_CHUNK_OVERHEAD_BYTES, chunk_bytes, plain_bytes, num_chunks};
        size_t pos = KSME_HEADER_BYTES;
        for (size_t i = 0; i < num_chunks; i++) {
            uint8_t nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
            chunk_nonce(out, i, nonce);
            size_t n = chunk_plain_bytes(&info, i);
            unsigned long long clen = 0;
            crypto_aead_xchacha20poly1305_ietf_encrypt(out + pos, &clen, plain + i * chunk_bytes, n,
                                                       out, KSME_HEADER_BYTES, NULL, nonce, key);
            pos += (size_t)clen;
        }
        *data_out = out;
        *size_out = total;
        return KS_STATUS_OK;
    }
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

ks_status ks__ksme_encrypt_version(uint32_t version, const uint8_t *plain, size_t plain_bytes,
                                   const uint8_t *key, size_t key_bytes, uint32_t chunk_bytes,
                                   const ks_allocator *a, uint8_t **data_out, size_t *size_out,
                                   char *err, size_t err_cap) {
    (void)version;
    return ks__ksme_encrypt(plain, plain_bytes, key, key_bytes, chunk_bytes, a, data_out, size_out,
                            err, err_cap);
}

ks_status ks__ksme_decrypt_chunks(const uint8_t *header, const ks__ksme_info *info,
                                  const uint8_t *body, const uint8_t *key, size_t key_bytes,
                                  uint32_t num_threads, const ks_allocator *alloc,
                                  uint8_t *plain_out, char *err, size_t err_cap) {
    (void)body, (void)num_threads, (void)alloc;
    return ks__ksme_decrypt(header, info, NULL, NULL, key, key_bytes, plain_out, err, err_cap);
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
