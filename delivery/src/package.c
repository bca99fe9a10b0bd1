/* The package reader and writer. The reader treats its input as hostile: every length is checked
 * against the bytes that remain before it is used, every count against a named limit, and the
 * signature is checked before the manifest is parsed (ks__pkg_verify), so an unsigned manifest
 * never reaches the path checks or the store. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "package.h"
#include "src/common.h"

static ks_status status_of(ks_delivery_error why) {
    switch (why) {
    case KS_DELIVERY_OK:
        return KS_STATUS_OK;
    case KS_DELIVERY_TOO_LARGE:
        return KS_STATUS_LIMIT_EXCEEDED;
    case KS_DELIVERY_UNKNOWN_KEY:
    case KS_DELIVERY_BAD_SIGNATURE:
        return KS_STATUS_TAMPERED;
    case KS_DELIVERY_HASH_MISMATCH:
    case KS_DELIVERY_SELFTEST_FAILED:
    case KS_DELIVERY_STORE_CORRUPT:
        return KS_STATUS_CHECKSUM_MISMATCH;
    case KS_DELIVERY_RUNTIME_TOO_OLD:
        return KS_STATUS_VERSION_MISMATCH;
    case KS_DELIVERY_DOWNGRADE:
    case KS_DELIVERY_REPLAY:
    case KS_DELIVERY_KNOWN_BAD:
        return KS_STATUS_INVALID_STATE;
    case KS_DELIVERY_NOT_INSTALLED:
    case KS_DELIVERY_NO_PREVIOUS:
        return KS_STATUS_INVALID_ARGUMENT;
    case KS_DELIVERY_IO:
        return KS_STATUS_IO_ERROR;
    default:
        return KS_STATUS_INVALID_MODEL;
    }
}

/* Sets *why and formats the message; returns the ks_status that goes with the cause. */
static ks_status refuse(ks_delivery_error *why, char *err, size_t err_cap, ks_delivery_error cause,
                        const char *fmt, ...) KS__PRINTF(5, 6);
static ks_status refuse(ks_delivery_error *why, char *err, size_t err_cap, ks_delivery_error cause,
                        const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ks_status st = ks__failv(err, err_cap, status_of(cause), fmt, ap);
    va_end(ap);
    if (why) *why = cause;
    return st;
}

const char *ks_delivery_error_string(ks_delivery_error e) {
    static const char *const names[KS_DELIVERY_ERROR_COUNT] = {"ok",
                                                               "malformed package",
                                                               "too large",
                                                               "unknown key",
                                                               "bad signature",
                                                               "size mismatch",
                                                               "hash mismatch",
                                                               "unsafe path",
                                                               "runtime too old",
                                                               "downgrade",
                                                               "replay",
                                                               "known bad",
                                                               "self-test failed",
                                                               "not installed",
                                                               "no previous version",
                                                               "i/o error",
                                                               "store corrupt",
                                                               "no key"};
    return (unsigned)e < KS_DELIVERY_ERROR_COUNT ? names[e] : "unknown";
}

void ks__sha256(const uint8_t *data, size_t n, uint8_t out[32]) {
    crypto_hash_sha256(out, data, n);
}

void ks__key_id(const uint8_t public_key[32], uint8_t out[KS_PACKAGE_KEY_ID_BYTES]) {
    uint8_t h[32];
    ks__sha256(public_key, 32, h);
    memcpy(out, h, KS_PACKAGE_KEY_ID_BYTES);
}

/* libsodium must be initialised once; sodium_init is itself thread-safe and idempotent. */
static bool sodium_ready(void) {
    return sodium_init() >= 0;
}

ks_status ks__pkg_keygen(uint8_t public_key[32], uint8_t secret_key[64]) {
    if (!sodium_ready()) return KS_STATUS_INTERNAL;
    return crypto_sign_keypair(public_key, secret_key) == 0 ? KS_STATUS_OK : KS_STATUS_INTERNAL;
}

bool ks__semver_parse(const char *s, uint32_t v[3]) {
    for (int i = 0; i < 3; i++) {
        if (*s < '0' || *s > '9') return false;
        uint64_t x = 0;
        while (*s >= '0' && *s <= '9') {
            x = x * 10 + (uint64_t)(*s++ - '0');
            if (x > 0xffffffffu) return false;
        }
        v[i] = (uint32_t)x;
        if (i < 2 && *s++ != '.') return false;
    }
    return *s == '\0';
}

static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

/* Paths are relative, '/'-separated, made of [A-Za-z0-9._-] components that do not start with
 * '.', so "..", absolute paths, backslashes, NULs, control characters and hidden files are all
 * impossible by construction rather than by a blacklist. */
bool ks__pkg_path_ok(const char *name, uint32_t len, char *err, size_t err_cap) {
    if (len == 0 || len > KS_PACKAGE_MAX_NAME_BYTES) {
        ks__fmt(err, err_cap, "a file path of %u bytes (must be 1..%u)", len,
                KS_PACKAGE_MAX_NAME_BYTES);
        return false;
    }
    uint32_t depth = 0, comp = 0;
    for (uint32_t i = 0; i <= len; i++) {
        char c = i < len ? name[i] : '/';
        if (c == '/') {
            if (comp == 0) {
                ks__fmt(err, err_cap, "file path '%.*s' has an empty component", (int)len, name);
                return false;
            }
            if (i < len && ++depth > KS_PACKAGE_MAX_PATH_DEPTH) {
                ks__fmt(err, err_cap, "file path '%.*s' is deeper than %u folders", (int)len, name,
                        KS_PACKAGE_MAX_PATH_DEPTH);
                return false;
            }
            comp = 0;
            continue;
        }
        if (!name_char(c) || (comp == 0 && c == '.')) {
            ks__fmt(err, err_cap,
                    "file path '%.*s': byte %u (0x%02x) is not allowed (components are "
                    "[A-Za-z0-9._-] and do not start with '.')",
                    (int)len, name, i, (unsigned)(unsigned char)c);
            return false;
        }
        comp++;
    }
    return true;
}

static int lower(int c) {
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* Case-insensitive equality, or one being a folder of the other ("a" and "A/b"): both collide on
 * the case-insensitive file systems of iOS and macOS. */
static bool paths_collide(const ks__pkg_file *a, const ks__pkg_file *b) {
    uint32_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    for (uint32_t i = 0; i < n; i++)
        if (lower((unsigned char)a->name[i]) != lower((unsigned char)b->name[i])) return false;
    if (a->name_len == b->name_len) return true;
    const ks__pkg_file *longer = a->name_len > b->name_len ? a : b;
    return longer->name[n] == '/';
}

/* Header checks shared by parse and verify: returns the manifest size. */
static ks_status parse_header(const uint8_t *d, size_t n, ks__pkg *pkg, ks_delivery_error *why,
                              char *err, size_t err_cap) {
    if (n < KS__PKG_HEADER_BYTES || memcmp(d, KS__PKG_MAGIC, 8) != 0)
        return refuse(why, err, err_cap, KS_DELIVERY_MALFORMED,
                      "not a Kestrel package (%zu bytes; expected the magic 'KSPKG\\r\\n\\x1a')",
                      n);
    uint16_t format = ks__pkg_rd16(d + 8), flags = ks__pkg_rd16(d + 10);
    if (format != KS__PKG_FORMAT)
        return refuse(why, err, err_cap, KS_DELIVERY_MALFORMED,
                      "package format %u is not supported (this reader knows format %u)", format,
                      KS__PKG_FORMAT);
    if (flags != 0)
        return refuse(why, err, err_cap, KS_DELIVERY_MALFORMED,
                      "package header flags 0x%04x: no flags are defined in format 1", flags);
    uint32_t m = ks__pkg_rd32(d + 12);
    uint64_t p = ks__pkg_rd64(d + 16);
    if (m == 0 || m > KS_PACKAGE_MAX_MANIFEST_BYTES)
        return refuse(why, err, err_cap, m ? KS_DELIVERY_TOO_LARGE : KS_DELIVERY_MALFORMED,
                      "manifest of %u bytes (must be 1..%u)", m, KS_PACKAGE_MAX_MANIFEST_BYTES);
    if (p > KS_PACKAGE_MAX_PAYLOAD_BYTES)
        return refuse(why, err, err_cap, KS_DELIVERY_TOO_LARGE,
                      "payload of %llu bytes exceeds KS_PACKAGE_MAX_PAYLOAD_BYTES (%llu)",
                      (unsigned long long)p, (unsigned long long)KS_PACKAGE_MAX_PAYLOAD_BYTES);
    size_t signed_end = KS__PKG_HEADER_BYTES + (size_t)m;
    if (n < signed_end + KS_PACKAGE_SIGNATURE_BYTES)
        return refuse(why, err, err_cap, KS_DELIVERY_MALFORMED,
                      "truncated: %zu bytes, but the header and manifest with the signature take "
                      "%zu",
                      n, signed_end + KS_PACKAGE_SIGNATURE_BYTES);
    memset(&pkg->info, 0, sizeof(pkg->info));
    pkg->manifest_bytes = m;
    pkg->signed_bytes = signed_end;
    pkg->signature = d + signed_end;
    pkg->info.payload_bytes = p;
    memcpy(pkg->info.key_id, d + 24, KS_PACKAGE_KEY_ID_BYTES);
    ks__sha256(d, signed_end, pkg->info.digest);
    return KS_STATUS_OK;
}

/* A cursor over the manifest: every read checks what remains. */
typedef struct cursor {
    const uint8_t *p;
    size_t left;
} cursor;
static const uint8_t *take(cursor *c, size_t n) {
    if (c->left < n) return NULL;
    const uint8_t *r = c->p;
    c->p += n;
    c->left -= n;
    return r;
}

#define NEED(ptr, what)                                                                            \
    do {                                                                                           \
        if (!(ptr))                                                                                \
            return refuse(why, err, err_cap, KS_DELIVERY_MALFORMED,                                \
                          "manifest ends inside %s (%u bytes)", what, pkg->manifest_bytes);        \
    } while (0)

static ks_status parse_manifest(const uint8_t *d, ks__pkg *pkg, ks_delivery_error *why, char *err,
                                size_t err_cap) {
    cursor c = {d + KS__PKG_HEADER_BYTES, pkg->manifest_bytes};
    ks_package_info *in = &pkg->info;
    const uint8_t *q = take(&c, 1);
    NEED(q, "the package id length");
    uint32_t id_len = q[0];
    if (id_len == 0 || id_len > KS_PACKAGE_MAX_ID_BYTES)
        return refuse(why, err, err_cap, KS_DELIVERY_MALFORMED, "package id of %u bytes (1..%u)",
                      id_len, KS_PACKAGE_MAX_ID_BYTES);
    q = take(&c, id_len);
    NEED(q, "the package id");
    for (uint32_t i = 0; i < id_len; i++) {
        char ch = (char)q[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                  (i > 0 && (ch == '.' || ch == '_' || ch == '-'));
        if (!ok)
            return refuse(why, err, err_cap, KS_DELIVERY_UNSAFE_PATH,
                          "package id: byte %u (0x%02x) is not allowed (ids are "
                          "[a-z0-9][a-z0-9._-]*)",
                          i, (unsigned)q[i]);
    }
    memcpy(in->id, q, id_len);
    in->id[id_len] = '\0';
    q = take(&c, 4 * 4 + 8);
    NEED(q, "the versions");
    in->version_major = ks__pkg_rd32(q);
    in->version_minor = ks__pkg_rd32(q + 4);
    in->version_patch = ks__pkg_rd32(q + 8);
    in->min_runtime = ks__pkg_rd32(q + 12);
    in->issued = ks__pkg_rd64(q + 16);
    q = take(&c, 1);
    NEED(q, "the encryption key name length");
    uint32_t key_len = q[0];
    if (key_len > KS_PACKAGE_MAX_KEY_NAME_BYTES)
        return refuse(why, err, err_cap, KS_DELIVERY_MALFORMED,
                      "encryption key name of %u bytes (at most %u)", key_len,
                      KS_PACKAGE_MAX_KEY_NAME_BYTES);
    q = take(&c, key_len);
    NEED(q, "the encryption key name");
    for (uint32_t i = 0; i < key_len; i++)
        if (q[i] < 0x21 || q[i] > 0x7e)
            return refuse(why, err, err_cap, KS_DELIVERY_MALFORMED,
                          "encryption key name: byte %u (0x%02x) is not printable ASCII", i,
                          (unsigned)q[i]);
    memcpy(in->encryption_key_name, q, key_len);
    in->encryption_key_name[key_len] = '\0';
    q = take(&c, 4);
    NEED(q, "the file count");
    uint32_t nf = ks__pkg_rd32(q);
    if (nf == 0 || nf > KS_PACKAGE_MAX_FILES)
        return refuse(why, err, err_cap, nf ? KS_DELIVERY_TOO_LARGE : KS_DELIVERY_MALFORMED,
                      "%u files (must be 1..%u)", nf, KS_PACKAGE_MAX_FILES);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < nf; i++) {
        ks__pkg_file *f = &pkg->files[i];
        q = take(&c, 2);
        NEED(q, "a file name length");
        f->name_len = ks__pkg_rd16(q);
        q = take(&c, f->name_len);
        NEED(q, "a file name");
        f->name = (const char *)q;
        char perr[400];
        if (!ks__pkg_path_ok(f->name, f->name_len, perr, sizeof(perr)))
            return refuse(why, err, err_cap, KS_DELIVERY_UNSAFE_PATH, "file %u: %s", i, perr);
        q = take(&c, 8 + 32);
        NEED(q, "a file size and hash");
        f->size_bytes = ks__pkg_rd64(q);
        f->sha256 = q + 8;
        f->data = NULL;
        if (f->size_bytes > in->payload_bytes)
            return refuse(why, err, err_cap, KS_DELIVERY_SIZE_MISMATCH,
                          "file '%.*s' claims %llu bytes, more than the payload's %llu",
                          (int)f->name_len, f->name, (unsigned long long)f->size_bytes,
                          (unsigned long long)in->payload_bytes);
        sum += f->size_bytes; /* each <= 1 GiB, at most 256 of them: no overflow */
        for (uint32_t j = 0; j < i; j++)
            if (paths_collide(&pkg->files[j], f))
                return refuse(why, err, err_cap, KS_DELIVERY_UNSAFE_PATH,
                              "file paths '%.*s' and '%.*s' collide (equal ignoring case, or one "
                              "is a folder of the other)",
                              (int)pkg->files[j].name_len, pkg->files[j].name, (int)f->name_len,
                              f->name);
    }
    if (c.left != 0)
        return refuse(why, err, err_cap, KS_DELIVERY_MALFORMED,
                      "%zu unexpected bytes after the last file entry of the manifest", c.left);
    if (sum != in->payload_bytes)
        return refuse(why, err, err_cap, KS_DELIVERY_SIZE_MISMATCH,
                      "the manifest's file sizes add up to %llu bytes but the header says the "
                      "payload is %llu",
                      (unsigned long long)sum, (unsigned long long)in->payload_bytes);
    pkg->num_files = nf;
    in->num_files = nf;
    return KS_STATUS_OK;
}

static ks_status attach_payload(const uint8_t *d, size_t n, ks__pkg *pkg, ks_delivery_error *why,
                                char *err, size_t err_cap) {
    size_t start = pkg->signed_bytes + KS_PACKAGE_SIGNATURE_BYTES;
    uint64_t want = (uint64_t)start + pkg->info.payload_bytes;
    if ((uint64_t)n != want)
        return refuse(why, err, err_cap, KS_DELIVERY_MALFORMED,
                      (uint64_t)n < want ? "truncated: %zu bytes, the header says %llu"
                                         : "%zu bytes, the header says %llu (trailing bytes)",
                      n, (unsigned long long)want);
    size_t off = start;
    for (uint32_t i = 0; i < pkg->num_files; i++) {
        pkg->files[i].data = d + off;
        off += (size_t)pkg->files[i].size_bytes;
    }
    return KS_STATUS_OK;
}

ks_status ks__pkg_parse(const uint8_t *d, size_t n, bool have_payload, ks__pkg *pkg,
                        ks_delivery_error *why, char *err, size_t err_cap) {
    if (why) *why = KS_DELIVERY_OK;
    if (!d) return refuse(why, err, err_cap, KS_DELIVERY_MALFORMED, "no package data");
    ks_status st = parse_header(d, n, pkg, why, err, err_cap);
    if (!st) st = parse_manifest(d, pkg, why, err, err_cap);
    if (!st && have_payload) st = attach_payload(d, n, pkg, why, err, err_cap);
    return st;
}

ks_status ks__pkg_check_signature(const uint8_t *d, const ks__pkg *pkg, const uint8_t *keys,
                                  uint32_t num_keys, ks_delivery_error *why, char *err,
                                  size_t err_cap) {
    if (!sodium_ready())
        return refuse(why, err, err_cap, KS_DELIVERY_IO, "libsodium failed to initialise");
    for (uint32_t k = 0; k < num_keys; k++) {
        uint8_t id[KS_PACKAGE_KEY_ID_BYTES];
        ks__key_id(keys + 32 * (size_t)k, id);
        if (memcmp(id, pkg->info.key_id, sizeof(id)) != 0) continue;
        if (crypto_sign_verify_detached(pkg->signature, d, pkg->signed_bytes,
                                        keys + 32 * (size_t)k) != 0)
            return refuse(why, err, err_cap, KS_DELIVERY_BAD_SIGNATURE,
                          "bad signature: the header or manifest was altered, or it was not "
                          "signed by trusted key %u (id %02x%02x%02x%02x%02x%02x%02x%02x)",
                          k, id[0], id[1], id[2], id[3], id[4], id[5], id[6], id[7]);
        return KS_STATUS_OK;
    }
    const uint8_t *i = pkg->info.key_id;
    return refuse(why, err, err_cap, KS_DELIVERY_UNKNOWN_KEY,
                  "signed by key id %02x%02x%02x%02x%02x%02x%02x%02x, which is not among the %u "
                  "trusted key(s)",
                  i[0], i[1], i[2], i[3], i[4], i[5], i[6], i[7], num_keys);
}

ks_status ks__pkg_verify(const uint8_t *d, size_t n, const uint8_t *keys, uint32_t num_keys,
                         ks__pkg *pkg, ks_delivery_error *why, char *err, size_t err_cap) {
    if (why) *why = KS_DELIVERY_OK;
    if (!d) return refuse(why, err, err_cap, KS_DELIVERY_MALFORMED, "no package data");
    if (!keys || num_keys == 0)
        return refuse(why, err, err_cap, KS_DELIVERY_UNKNOWN_KEY, "no trusted keys given");
    ks_status st = parse_header(d, n, pkg, why, err, err_cap);
    if (!st) st = ks__pkg_check_signature(d, pkg, keys, num_keys, why, err, err_cap);
    if (!st) st = parse_manifest(d, pkg, why, err, err_cap);
    if (!st) st = attach_payload(d, n, pkg, why, err, err_cap);
    if (st) return st;
    const ks_package_info *in = &pkg->info;
    if (in->min_runtime > (uint32_t)KS_VERSION_HEX)
        return refuse(why, err, err_cap, KS_DELIVERY_RUNTIME_TOO_OLD,
                      "package %s %u.%u.%u needs Kestrel %u.%u.%u or newer; this is Kestrel %s",
                      in->id, in->version_major, in->version_minor, in->version_patch,
                      in->min_runtime >> 16, (in->min_runtime >> 8) & 0xffu,
                      in->min_runtime & 0xffu, KS_VERSION_STRING);
    for (uint32_t i = 0; i < pkg->num_files; i++) {
        const ks__pkg_file *f = &pkg->files[i];
        uint8_t h[32];
        ks__sha256(f->data, (size_t)f->size_bytes, h);
        if (memcmp(h, f->sha256, 32) != 0)
            return refuse(why, err, err_cap, KS_DELIVERY_HASH_MISMATCH,
                          "file '%.*s' (%llu bytes): SHA-256 differs from the signed manifest",
                          (int)f->name_len, f->name, (unsigned long long)f->size_bytes);
    }
    return KS_STATUS_OK;
}

ks_status ks__pkg_write(const ks__pkg_spec *s, const uint8_t secret_key[64], uint8_t **data_out,
                        size_t *size_out, char *err, size_t err_cap) {
    if (!sodium_ready())
        return ks__fail(err, err_cap, KS_STATUS_INTERNAL, "libsodium failed to initialise");
    size_t id_len = s->id ? strlen(s->id) : 0;
    size_t key_len = s->encryption_key_name ? strlen(s->encryption_key_name) : 0;
    if (id_len == 0 || id_len > KS_PACKAGE_MAX_ID_BYTES || key_len > KS_PACKAGE_MAX_KEY_NAME_BYTES)
        return ks__fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT,
                        "package id must be 1..%u bytes and the key name at most %u",
                        KS_PACKAGE_MAX_ID_BYTES, KS_PACKAGE_MAX_KEY_NAME_BYTES);
    if (s->num_files == 0 || s->num_files > KS_PACKAGE_MAX_FILES)
        return ks__fail(err, err_cap, KS_STATUS_INVALID_ARGUMENT, "%u files (must be 1..%u)",
                        s->num_files, KS_PACKAGE_MAX_FILES);
    size_t m = 1 + id_len + 24 + 1 + key_len + 4;
    uint64_t payload = 0;
    for (uint32_t i = 0; i < s->num_files; i++) {
        size_t nl = strlen(s->files[i].name);
        if (!ks__pkg_path_ok(s->files[i].name, (uint32_t)(nl > 0xffff ? 0xffff : nl), err, err_cap))
            return KS_STATUS_INVALID_ARGUMENT;
        m += 2 + nl + 8 + 32;
        payload += s->files[i].size_bytes;
    }
    if (m > KS_PACKAGE_MAX_MANIFEST_BYTES || payload > KS_PACKAGE_MAX_PAYLOAD_BYTES)
        return ks__fail(err, err_cap, KS_STATUS_LIMIT_EXCEEDED,
                        "manifest of %zu bytes or payload of %llu bytes exceeds the limits", m,
                        (unsigned long long)payload);
    size_t total = KS__PKG_HEADER_BYTES + m + KS_PACKAGE_SIGNATURE_BYTES + (size_t)payload;
    uint8_t *d = malloc(total);
    if (!d)
        return ks__fail(err, err_cap, KS_STATUS_OUT_OF_MEMORY, "out of memory (%zu bytes)", total);
    memcpy(d, KS__PKG_MAGIC, 8);
    ks__pkg_wr16(d + 8, KS__PKG_FORMAT);
    ks__pkg_wr16(d + 10, 0);
    ks__pkg_wr32(d + 12, (uint32_t)m);
    ks__pkg_wr64(d + 16, payload);
    uint8_t pk[32];
    crypto_sign_ed25519_sk_to_pk(pk, secret_key);
    ks__key_id(pk, d + 24);
    uint8_t *p = d + KS__PKG_HEADER_BYTES;
    *p++ = (uint8_t)id_len;
    memcpy(p, s->id, id_len);
    p += id_len;
    for (int i = 0; i < 3; i++, p += 4)
        ks__pkg_wr32(p, s->version[i]);
    ks__pkg_wr32(p, s->min_runtime);
    ks__pkg_wr64(p + 4, s->issued);
    p += 12;
    *p++ = (uint8_t)key_len;
    memcpy(p, s->encryption_key_name ? s->encryption_key_name : "", key_len);
    p += key_len;
    ks__pkg_wr32(p, s->num_files);
    p += 4;
    uint8_t *data = d + KS__PKG_HEADER_BYTES + m + KS_PACKAGE_SIGNATURE_BYTES;
    for (uint32_t i = 0; i < s->num_files; i++) {
        size_t nl = strlen(s->files[i].name);
        ks__pkg_wr16(p, (uint16_t)nl);
        memcpy(p + 2, s->files[i].name, nl);
        p += 2 + nl;
        ks__pkg_wr64(p, s->files[i].size_bytes);
        ks__sha256(s->files[i].data, s->files[i].size_bytes, p + 8);
        p += 40;
        if (s->files[i].size_bytes) memcpy(data, s->files[i].data, s->files[i].size_bytes);
        data += s->files[i].size_bytes;
    }
    crypto_sign_detached(d + KS__PKG_HEADER_BYTES + m, NULL, d, KS__PKG_HEADER_BYTES + m,
                         secret_key);
    *data_out = d;
    *size_out = total;
    return KS_STATUS_OK;
}

ks_status ks__pkg_resign(uint8_t *d, size_t n, const uint8_t secret_key[64]) {
    if (n < KS__PKG_HEADER_BYTES || !sodium_ready()) return KS_STATUS_INVALID_ARGUMENT;
    size_t m = ks__pkg_rd32(d + 12);
    if (n < KS__PKG_HEADER_BYTES + m + KS_PACKAGE_SIGNATURE_BYTES)
        return KS_STATUS_INVALID_ARGUMENT;
    crypto_sign_detached(d + KS__PKG_HEADER_BYTES + m, NULL, d, KS__PKG_HEADER_BYTES + m,
                         secret_key);
    return KS_STATUS_OK;
}

/* ---- public wrappers ---------------------------------------------------------------------- */

ks_status ks_package_inspect(const void *data, size_t size_bytes, ks_package_info *info_out) {
    if (!data || !info_out) {
        ks__object_error(NULL, "ks_package_inspect: data and info_out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks__pkg *pkg = malloc(sizeof(*pkg));
    if (!pkg) {
        ks__object_error(NULL, "out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    char err[512];
    ks_status st = ks__pkg_parse(data, size_bytes, false, pkg, NULL, err, sizeof(err));
    if (st)
        ks__object_error(NULL, "%s", err);
    else
        *info_out = pkg->info;
    free(pkg);
    return st;
}

ks_status ks_package_verify(const void *data, size_t size_bytes, const uint8_t *trusted_keys,
                            uint32_t num_trusted_keys, ks_package_info *info_out,
                            ks_delivery_error *why_out) {
    ks__pkg *pkg = malloc(sizeof(*pkg));
    if (!pkg) {
        ks__object_error(NULL, "out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    char err[512];
    ks_delivery_error why = KS_DELIVERY_OK;
    ks_status st = ks__pkg_verify(data, size_bytes, trusted_keys, num_trusted_keys, pkg, &why, err,
                                  sizeof(err));
    if (st)
        ks__object_error(NULL, "%s", err);
    else if (info_out)
        *info_out = pkg->info;
    if (why_out) *why_out = why;
    free(pkg);
    return st;
}

ks_status ks_package_file_name(const void *data, size_t size_bytes, uint32_t index, char *name_out,
                               size_t cap) {
    if (!data || !name_out) {
        ks__object_error(NULL, "ks_package_file_name: data and name_out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks__pkg *pkg = malloc(sizeof(*pkg));
    if (!pkg) {
        ks__object_error(NULL, "out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    char err[512];
    ks_status st = ks__pkg_parse(data, size_bytes, false, pkg, NULL, err, sizeof(err));
    if (st) {
        ks__object_error(NULL, "%s", err);
    } else if (index >= pkg->num_files) {
        ks__object_error(NULL, "file index %u of a package with %u files", index, pkg->num_files);
        st = KS_STATUS_INVALID_ARGUMENT;
    } else if (pkg->files[index].name_len + 1u > cap) {
        ks__object_error(NULL, "file name of %u bytes does not fit %zu", pkg->files[index].name_len,
                         cap);
        st = KS_STATUS_LIMIT_EXCEEDED;
    } else {
        memcpy(name_out, pkg->files[index].name, pkg->files[index].name_len);
        name_out[pkg->files[index].name_len] = '\0';
    }
    free(pkg);
    return st;
}
