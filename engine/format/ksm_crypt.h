/* The KSME container: an authenticated, encrypted .ksm image. Not a published API (ks__ prefix).
 *
 * A KSME file wraps one complete .ksm image (the "plain image", see ksm.h) encrypted under a
 * 32-byte key that the application supplies (ks_model_desc.key). The key is never stored in the
 * file. Loading decrypts into a buffer from the model's allocator and then parses the plain image
 * from it in place (zero-copy); the buffer is wiped when the model is destroyed.
 * All integers are little-endian.
 *
 * Header (64 bytes, offset 0)
 *   0  u8[4]  magic "KSME"
 *   4  u16    container version: 2 (written) or 1 (still read). A reader refuses any other value.
 *   6  u16    header size in bytes (64)
 *   8  u8     algorithm: 2 with version 2, 1 with version 1 (below)
 *   9  u8[3]  reserved, zero
 *   12 u32    chunk size: plaintext bytes per chunk, KSME_MIN_CHUNK_BYTES..KSME_MAX_CHUNK_BYTES
 *   16 u64    plaintext size in bytes (the plain image), >= 1
 *   24 ...    nonce material (per version, below); every other byte up to 64 is reserved, zero
 *
 * Chunks (offset 64): num_chunks = ceil(plaintext size / chunk size). Chunk i encrypts plaintext
 * bytes [i * chunk size, min((i + 1) * chunk size, plaintext size)), and every chunk is
 * authenticated with the 64 header bytes as additional data, so any header change (sizes, nonce)
 * fails authentication. The file size must equal exactly 64 + plaintext size + overhead *
 * num_chunks; nothing may follow the last chunk.
 *
 * Version 2, algorithm 2 (independent chunks, XChaCha20-Poly1305-IETF AEAD):
 *   24 u8[16] nonce prefix, random per file; 40..63 reserved, zero.
 *   Chunk i is stored as ciphertext || 16-byte Poly1305 MAC (overhead 16), encrypted with the
 *   24-byte nonce  prefix || u64 i.  The index in the nonce detects reordering and duplication;
 *   the header-bound plaintext size plus the exact file size detect truncation and extension.
 *   Chunks are independent, so a loader decrypts them on several threads (or lazily).
 * Version 1, algorithm 1 (libsodium crypto_secretstream_xchacha20poly1305, sequential):
 *   24 u8[24] secretstream header; 48..63 reserved, zero.
 *   Chunk i is one secretstream message (overhead 17: an encrypted tag byte, the ciphertext and
 *   the MAC); the last chunk carries TAG_FINAL and every other TAG_MESSAGE.
 *
 * Status contract: structural header problems (magic, version, algorithm, sizes, reserved bytes,
 * file size) are KS_STATUS_INVALID_MODEL; an authentication failure (wrong key or any modified
 * byte the structural checks let through) is KS_STATUS_TAMPERED and no plaintext is released.
 * Without libsodium (KS_WITH_SODIUM=OFF) decrypt/encrypt return KS_STATUS_UNSUPPORTED.
 */
#ifndef KESTREL_KSM_CRYPT_H
#define KESTREL_KSM_CRYPT_H

#include "src/ir.h"

#define KSME_MAGIC "KSME"
#define KSME_VERSION 2 /* written; version 1 is still read */
#define KSME_HEADER_BYTES 64
#define KSME_ALG_XCHACHA20POLY1305_SECRETSTREAM 1 /* version 1 */
#define KSME_ALG_XCHACHA20POLY1305_CHUNKS 2       /* version 2 */
#define KSME_KEY_BYTES 32
#define KSME_CHUNK_OVERHEAD_BYTES 16    /* version 2 */
#define KSME_V1_CHUNK_OVERHEAD_BYTES 17 /* version 1 */
#define KSME_NONCE_PREFIX_BYTES 16      /* version 2 */
#define KSME_MIN_CHUNK_BYTES 4096u
#define KSME_MAX_CHUNK_BYTES (64u << 20)
#define KSME_DEFAULT_CHUNK_BYTES (1u << 20)

/* Validated header fields. */
typedef struct ks__ksme_info {
    uint32_t version;        /* 1 or 2 */
    uint32_t overhead_bytes; /* per chunk */
    uint32_t chunk_bytes;
    uint64_t plain_bytes;
    uint64_t num_chunks;
} ks__ksme_info;

/* True when the first bytes are the KSME magic (size_bytes may be anything). */
bool ks__ksme_is_encrypted(const void *data, size_t size_bytes);

/* True when this build can decrypt and encrypt (built with libsodium). */
bool ks__ksme_available(void);

/* Checks the 64-byte header against the real file size. */
ks_status ks__ksme_parse_header(const uint8_t *header, uint64_t file_bytes, ks__ksme_info *info,
                                char *err, size_t err_cap);

/* Returns a pointer to the next n bytes of the chunk area (valid until the next call), or NULL
 * on a read error or early end of file. */
typedef const uint8_t *(*ks__ksme_read_fn)(void *user, size_t n);

/* Decrypts all chunks (read in order through `read`) into plain_out, which has room for
 * info->plain_bytes. On any failure plain_out is wiped before returning. Any version; version 2
 * files are better decrypted with ks__ksme_decrypt_chunks. */
ks_status ks__ksme_decrypt(const uint8_t *header, const ks__ksme_info *info, ks__ksme_read_fn read,
                           void *user, const uint8_t *key, size_t key_bytes, uint8_t *plain_out,
                           char *err, size_t err_cap);

/* Version 2 only: decrypts the chunk area `body` (the file bytes after the header, all in
 * memory, e.g. mapped) into plain_out using up to num_threads threads (0 or 1: the calling thread
 * only; `alloc` serves the thread pool). On any failure plain_out is wiped and the message names
 * the first chunk that failed. */
ks_status ks__ksme_decrypt_chunks(const uint8_t *header, const ks__ksme_info *info,
                                  const uint8_t *body, const uint8_t *key, size_t key_bytes,
                                  uint32_t num_threads, const ks_allocator *alloc,
                                  uint8_t *plain_out, char *err, size_t err_cap);

/* Decrypts a whole KSME image held in memory into a new buffer from ks__alloc_aligned(a, ..., 64)
 * (free with ks__free after ks__secure_zero). */
ks_status ks__ksme_decrypt_buffer(const uint8_t *data, size_t size_bytes, const uint8_t *key,
                                  size_t key_bytes, const ks_allocator *a, uint8_t **plain_out,
                                  size_t *plain_bytes_out, char *err, size_t err_cap);

/* Encrypts a plain image into a new KSME buffer from ks__alloc(a) (free with ks__free).
 * chunk_bytes 0 means KSME_DEFAULT_CHUNK_BYTES. Writes container version KSME_VERSION. */
ks_status ks__ksme_encrypt(const uint8_t *plain, size_t plain_bytes, const uint8_t *key,
                           size_t key_bytes, uint32_t chunk_bytes, const ks_allocator *a,
                           uint8_t **data_out, size_t *size_out, char *err, size_t err_cap);
/* Same, writing container `version` (1 or 2); version 1 exists for compatibility tests. */
ks_status ks__ksme_encrypt_version(uint32_t version, const uint8_t *plain, size_t plain_bytes,
                                   const uint8_t *key, size_t key_bytes, uint32_t chunk_bytes,
                                   const ks_allocator *a, uint8_t **data_out, size_t *size_out,
                                   char *err, size_t err_cap);

/* Fills key with KSME_KEY_BYTES bytes from the system CSPRNG. */
ks_status ks__ksme_keygen(uint8_t *key, size_t key_bytes);

/* Zeroes memory in a way the compiler may not elide. */
void ks__secure_zero(void *p, size_t size_bytes);

#endif /* KESTREL_KSM_CRYPT_H */
