/* The KSME container: an authenticated, encrypted .ksm image. Not a published API (ks__ prefix).
 *
 * A KSME file wraps one complete .ksm image (the "plain image", see ksm.h) encrypted with
 * libsodium's crypto_secretstream_xchacha20poly1305 under a 32-byte key that the application
 * supplies (ks_model_desc.key). The key is never stored in the file. Loading decrypts into a
 * buffer from the model's allocator and then parses the plain image from it in place (zero-copy);
 * the buffer is wiped when the model is destroyed.
 * All integers are little-endian.
 *
 * Header (64 bytes, offset 0)
 *   0  u8[4]  magic "KSME"
 *   4  u16    version (KSME_VERSION = 1). A reader refuses any other value.
 *   6  u16    header size in bytes (64)
 *   8  u8     algorithm (1 = XChaCha20-Poly1305 secretstream, libsodium >= 1.0.14)
 *   9  u8[3]  reserved, zero
 *   12 u32    chunk size: plaintext bytes per chunk, KSME_MIN_CHUNK_BYTES..KSME_MAX_CHUNK_BYTES
 *   16 u64    plaintext size in bytes (the plain image), >= 1
 *   24 u8[24] secretstream header (random per file; derives the stream subkey and nonce)
 *   48 u8[16] reserved, zero
 *
 * Chunks (offset 64): num_chunks = ceil(plaintext size / chunk size). Chunk i encrypts plaintext
 * bytes [i * chunk size, min((i + 1) * chunk size, plaintext size)) and is stored as one
 * secretstream message of (its plaintext bytes + 17) bytes: 1 encrypted tag byte, the
 * ciphertext, and a 16-byte Poly1305 MAC. Every chunk is authenticated with the 64 header bytes
 * as additional data, so any header change fails authentication. The last chunk carries
 * TAG_FINAL and every other chunk TAG_MESSAGE, so truncation at a chunk boundary, reordering,
 * duplication and dropping of chunks are all detected. The file size must equal exactly
 * 64 + plaintext size + 17 * num_chunks; nothing may follow the last chunk.
 *
 * Status contract: structural header problems (magic, version, algorithm, sizes, reserved bytes,
 * file size) are KS_STATUS_INVALID_MODEL; an authentication failure (wrong key or any modified
 * byte the structural checks let through) is KS_STATUS_TAMPERED and no plaintext is released.
 * Without libsodium (KS_WITH_SODIUM=OFF) decrypt/encrypt return KS_STATUS_UNSUPPORTED.
 */
#ifndef KESTREL_KSM_CRYPT_H
#define KESTREL_KSM_CRYPT_H

#include "ir.h"

#define KSME_MAGIC "KSME"
#define KSME_VERSION 1
#define KSME_HEADER_BYTES 64
#define KSME_ALG_XCHACHA20POLY1305_SECRETSTREAM 1
#define KSME_KEY_BYTES 32
#define KSME_CHUNK_OVERHEAD_BYTES 17
#define KSME_MIN_CHUNK_BYTES 4096u
#define KSME_MAX_CHUNK_BYTES (64u << 20)
#define KSME_DEFAULT_CHUNK_BYTES (1u << 20)

/* Validated header fields. */
typedef struct ks__ksme_info {
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
 * info->plain_bytes. On any failure plain_out is wiped before returning. */
ks_status ks__ksme_decrypt(const uint8_t *header, const ks__ksme_info *info, ks__ksme_read_fn read,
                           void *user, const uint8_t *key, size_t key_bytes, uint8_t *plain_out,
                           char *err, size_t err_cap);

/* Decrypts a whole KSME image held in memory into a new buffer from ks__alloc_aligned(a, ..., 64)
 * (free with ks__free after ks__secure_zero). */
ks_status ks__ksme_decrypt_buffer(const uint8_t *data, size_t size_bytes, const uint8_t *key,
                                  size_t key_bytes, const ks_allocator *a, uint8_t **plain_out,
                                  size_t *plain_bytes_out, char *err, size_t err_cap);

/* Encrypts a plain image into a new KSME buffer from ks__alloc(a) (free with ks__free).
 * chunk_bytes 0 means KSME_DEFAULT_CHUNK_BYTES. */
ks_status ks__ksme_encrypt(const uint8_t *plain, size_t plain_bytes, const uint8_t *key,
                           size_t key_bytes, uint32_t chunk_bytes, const ks_allocator *a,
                           uint8_t **data_out, size_t *size_out, char *err, size_t err_cap);

/* Fills key with KSME_KEY_BYTES bytes from the system CSPRNG. */
ks_status ks__ksme_keygen(uint8_t *key, size_t key_bytes);

/* Zeroes memory in a way the compiler may not elide. */
void ks__secure_zero(void *p, size_t size_bytes);

#endif /* KESTREL_KSM_CRYPT_H */
