/* Internal: the package reader and writer (docs/delivery.md, "Package format"), the SHA-256 and
 * Ed25519 wrappers, the self-test runner and the store's test hook. */
#ifndef KESTREL_DELIVERY_PACKAGE_H
#define KESTREL_DELIVERY_PACKAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kestrel/delivery.h"

#define KS__PKG_MAGIC "KSPKG\r\n\x1a"
#define KS__PKG_FORMAT 1u
/* Little-endian fields of the package, the self-test files and the store's state file. */
static inline uint16_t ks__pkg_rd16(const uint8_t *p) {
    return (uint16_t)(p[0] | p[1] << 8);
}
static inline uint32_t ks__pkg_rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t ks__pkg_rd64(const uint8_t *p) {
    return ks__pkg_rd32(p) | (uint64_t)ks__pkg_rd32(p + 4) << 32;
}
static inline void ks__pkg_wr16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void ks__pkg_wr32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void ks__pkg_wr64(uint8_t *p, uint64_t v) {
    ks__pkg_wr32(p, (uint32_t)v);
    ks__pkg_wr32(p + 4, (uint32_t)(v >> 32));
}

#define KS__PKG_HEADER_BYTES 32u
#define KS__SELFTEST_NAME "selftest.kst"
#define KS__SELFTEST_FACE_NAME "selftest_face.kst"

/* One file of a parsed package: name points into the manifest (not NUL-terminated), data into
 * the payload. */
typedef struct ks__pkg_file {
    const char *name;
    uint32_t name_len;
    uint64_t size_bytes;
    const uint8_t *sha256;
    const uint8_t *data; /* NULL when only the header and manifest were given */
} ks__pkg_file;

typedef struct ks__pkg {
    ks_package_info info;
    uint32_t manifest_bytes;
    size_t signed_bytes; /* header + manifest */
    const uint8_t *signature;
    uint32_t num_files;
    ks__pkg_file files[KS_PACKAGE_MAX_FILES];
} ks__pkg;

/* Parses header and manifest (bounds, paths, limits); with have_payload the payload too (sizes).
 * No signature or hash check. */
ks_status ks__pkg_parse(const uint8_t *data, size_t size_bytes, bool have_payload, ks__pkg *pkg,
                        ks_delivery_error *why, char *err, size_t err_cap);
/* Checks the signature against the trusted keys (the key whose id the header names). data holds
 * at least the signed part and the signature. */
ks_status ks__pkg_check_signature(const uint8_t *data, const ks__pkg *pkg,
                                  const uint8_t *trusted_keys, uint32_t num_trusted_keys,
                                  ks_delivery_error *why, char *err, size_t err_cap);
/* Full verification of a whole package (parse, signature, runtime, hashes). */
ks_status ks__pkg_verify(const uint8_t *data, size_t size_bytes, const uint8_t *trusted_keys,
                         uint32_t num_trusted_keys, ks__pkg *pkg, ks_delivery_error *why, char *err,
                         size_t err_cap);

/* What a writer puts in a package. */
typedef struct ks__pkg_src_file {
    const char *name;
    const uint8_t *data;
    size_t size_bytes;
} ks__pkg_src_file;
typedef struct ks__pkg_spec {
    const char *id;
    uint32_t version[3];
    uint32_t min_runtime;
    uint64_t issued;
    const char *encryption_key_name; /* NULL: none */
    const ks__pkg_src_file *files;
    uint32_t num_files;
} ks__pkg_spec;
/* Builds and signs a package (malloc'd; free with free()). */
ks_status ks__pkg_write(const ks__pkg_spec *spec, const uint8_t secret_key[64], uint8_t **data_out,
                        size_t *size_out, char *err, size_t err_cap);
/* Re-signs the header and manifest of an existing package in place (tests craft liars). */
ks_status ks__pkg_resign(uint8_t *data, size_t size_bytes, const uint8_t secret_key[64]);

/* Crypto wrappers (libsodium). */
ks_status ks__pkg_keygen(uint8_t public_key[32], uint8_t secret_key[64]);
void ks__sha256(const uint8_t *data, size_t n, uint8_t out[32]);
void ks__key_id(const uint8_t public_key[32], uint8_t out[KS_PACKAGE_KEY_ID_BYTES]);
/* Checks a path from a manifest: see docs/delivery.md, "Paths". */
bool ks__pkg_path_ok(const char *name, uint32_t len, char *err, size_t err_cap);
/* "1.2.3" <-> triple. */
bool ks__semver_parse(const char *s, uint32_t v[3]);

/* Self-test (docs/delivery.md, "Self-test"): runs selftest.kst (bytes) against the models under
 * files_dir. key (32 bytes, or NULL) opens an encrypted model. KS_STATUS_OK when every output
 * matches; else a message in err, and *key_problem is set when the model is encrypted and
 * there is no key or the key does not open it. */
ks_status ks__selftest_run(const uint8_t *kst, size_t kst_bytes, const char *files_dir,
                           const uint8_t *key, bool *key_problem, char *err, size_t err_cap);
/* Task-level self-test (docs/delivery.md, "Self-test"): runs the bundle of selftest_face.kst (a
 * face detector or a face landmarker bundle) on its photo and checks the face count and boxes.
 * key (32 bytes, or NULL) opens the encrypted models of its bundle (ks_task_options.key);
 * *key_problem as for ks__selftest_run. */
ks_status ks__selftest_face_run(const uint8_t *kst, size_t kst_bytes, const char *files_dir,
                                const uint8_t *key, bool *key_problem, char *err, size_t err_cap);
typedef struct ks__selftest_face {
    const char *bundle_name; /* a .ksb of the package */
    uint32_t width_px, height_px;
    const uint8_t *rgb; /* width * height * 3 bytes */
    uint32_t num_faces;
    float min_iou;
    uint32_t num_boxes;
    const float *boxes; /* num_boxes * {x, y, w, h} in pixels */
} ks__selftest_face;
ks_status ks__selftest_face_write(const ks__selftest_face *t, uint8_t **data_out, size_t *size_out);
/* The faces `bundle` (path) finds on an RGB photo, as the self-test runs it and ks-sign records
 * it: a face detector bundle through ks_face_detect (the detection boxes), else a face landmarker
 * bundle through ks_face_landmarker_detect in IMAGE mode (the boxes of the meshes, up to
 * KS_FACE_MAX_FACES faces). Up to cap boxes {x, y, w, h} into boxes; *num_faces gets the count
 * found; *kind "face detector" or "face landmarker". key and *key_problem as above. Builds
 * without the task library: UNSUPPORTED. */
ks_status ks__selftest_face_find(const char *bundle, const uint8_t *key, const uint8_t *rgb,
                                 uint32_t width_px, uint32_t height_px, float *boxes, uint32_t cap,
                                 uint32_t *num_faces, const char **kind, bool *key_problem,
                                 char *err, size_t err_cap);

/* One input or expected output of a self-test file. */
typedef struct ks__selftest_tensor {
    uint32_t index;
    float abs_tolerance; /* outputs only */
    const void *data;
    uint64_t size_bytes;
} ks__selftest_tensor;
ks_status ks__selftest_write(const char *model_name, const ks__selftest_tensor *inputs,
                             uint32_t num_inputs, const ks__selftest_tensor *outputs,
                             uint32_t num_outputs, uint8_t **data_out, size_t *size_out);

/* Test hook: called before every file-system operation of the store with a running count (from
 * 1) and the operation's name ("mkdir", "create", "write", "fsync", "fsync_dir", "rename",
 * "unlink", "rmdir"). Returning KS__STORE_FAULT_SKIP_SYNC skips an fsync (a no-op otherwise); any
 * other non-zero value makes the operation fail as an I/O error; a hook may also _exit to model a
 * crash. NULL removes it. Not thread-safe; tests only. */
#define KS__STORE_FAULT_SKIP_SYNC 2
typedef int (*ks__store_fault_fn)(void *user, uint32_t step, const char *op, const char *path);
void ks__store_set_fault_hook(ks__store_fault_fn fn, void *user);

#endif /* KESTREL_DELIVERY_PACKAGE_H */
