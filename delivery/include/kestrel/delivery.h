/* Kestrel delivery: signed packages and the on-device store.
 *
 * A package (.kspkg) wraps one or more of Kestrel's deliverables (.ksm models, .ksb bundles,
 * .kfx effects, a self-test) with a manifest signed by Ed25519: package id, semantic version,
 * the oldest Kestrel runtime that may run it, the size and SHA-256 of every file. The format is
 * specified byte by byte in docs/delivery.md ("Package format"); `ks-sign` makes and checks
 * packages. The store installs verified packages into a folder the app owns, atomically, keeps
 * the previous version, and refuses downgrades, replays and broken updates.
 *
 * Usage:
 *     static const uint8_t kTrusted[2][32] = { {...current key...}, {...next key...} };
 *     ks_store *store = NULL;
 *     ks_status st = ks_store_open(files_dir "/kestrel-store",
 *         &(ks_store_desc){ .trusted_keys = kTrusted[0], .num_trusted_keys = 2 }, &store);
 *     ...the app downloads face.kspkg with its own HTTP stack...
 *     st = ks_store_install_file(store, "face.kspkg", 0, NULL);
 *     if (st != KS_STATUS_OK)   // e.g. "face.kspkg: version 1.2.0 is older than the installed
 *                               //       1.3.0 (a downgrade; KS_STORE_ALLOW_DOWNGRADE allows it)"
 *         log("%s (%s): %s", ks_status_string(st),
 *             ks_delivery_error_string(ks_store_last_refusal(store)), ks_last_error(store));
 *     char path[1024];
 *     if (ks_store_file_path(store, "face", "face_landmarker.ksb", path, sizeof(path)) == 0)
 *         ks_bundle_open_file(path, NULL, &bundle);
 *     ks_store_destroy(store);
 *
 * Thread safety: ks_package_* functions may be called from any thread at any time. A ks_store
 * may be used from any number of threads at once: every call takes the store's lock, so
 * installs, rollbacks and queries are serialized. ks_last_error(store) and
 * ks_store_last_refusal(store) describe the store's most recent failed call, whichever thread
 * made it. One store folder is used by one ks_store at a time (a second ks_store_open of the same
 * folder, in this process or another, fails with KS_STATUS_INVALID_STATE until the first is
 * destroyed).
 *
 * Crash safety: an install writes the new version into a temporary folder, fsyncs every file and
 * folder, renames it into place and then commits by renaming a new state file over the old one.
 * If the process dies or the power fails at any point, the next ks_store_open finds either the
 * old or the new version complete, never a mix, and removes the leftovers.
 */
#ifndef KESTREL_DELIVERY_H
#define KESTREL_DELIVERY_H

#include <stddef.h>
#include <stdint.h>

#include "kestrel/kestrel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sizes of Ed25519 keys and signatures, as libsodium stores them. */
#define KS_PACKAGE_PUBLIC_KEY_BYTES 32u
#define KS_PACKAGE_SECRET_KEY_BYTES 64u
#define KS_PACKAGE_SIGNATURE_BYTES 64u
#define KS_PACKAGE_KEY_ID_BYTES 8u /* first 8 bytes of SHA-256(public key) */
#define KS_PACKAGE_DIGEST_BYTES 32u

/* Named safety limits of the package reader; exceeding one is KS_STATUS_LIMIT_EXCEEDED. */
#define KS_PACKAGE_MAX_MANIFEST_BYTES (64u << 10)
#define KS_PACKAGE_MAX_PAYLOAD_BYTES (1024ull << 20) /* sum of all file sizes */
#define KS_PACKAGE_MAX_FILES 256u
#define KS_PACKAGE_MAX_ID_BYTES 64u
#define KS_PACKAGE_MAX_NAME_BYTES 255u /* a file's path inside the package */
#define KS_PACKAGE_MAX_PATH_DEPTH 8u   /* folders in a file's path */
#define KS_PACKAGE_MAX_KEY_NAME_BYTES 64u

/* Why a package or an install was refused: one value per cause, finer than ks_status. Values are
 * stable (append-only). */
typedef enum ks_delivery_error {
    KS_DELIVERY_OK = 0,
    KS_DELIVERY_MALFORMED = 1,        /* not a package, truncated, or bad structure */
    KS_DELIVERY_TOO_LARGE = 2,        /* a named KS_PACKAGE_MAX_* limit */
    KS_DELIVERY_UNKNOWN_KEY = 3,      /* signed by a key that is not trusted */
    KS_DELIVERY_BAD_SIGNATURE = 4,    /* signature does not match (altered header or manifest) */
    KS_DELIVERY_SIZE_MISMATCH = 5,    /* the manifest's sizes disagree with the payload */
    KS_DELIVERY_HASH_MISMATCH = 6,    /* a file's SHA-256 differs from the manifest's */
    KS_DELIVERY_UNSAFE_PATH = 7,      /* a file path that could escape or collide */
    KS_DELIVERY_RUNTIME_TOO_OLD = 8,  /* the package needs a newer Kestrel than this one */
    KS_DELIVERY_DOWNGRADE = 9,        /* older than the installed version */
    KS_DELIVERY_REPLAY = 10,          /* signed before a package the store already accepted */
    KS_DELIVERY_KNOWN_BAD = 11,       /* this exact package failed before (self-test, mark_bad) */
    KS_DELIVERY_SELFTEST_FAILED = 12, /* its self-test failed: marked bad, not installed */
    KS_DELIVERY_NOT_INSTALLED = 13,   /* no such package id or file in the store */
    KS_DELIVERY_NO_PREVIOUS = 14,     /* rollback without a kept previous version */
    KS_DELIVERY_IO = 15,              /* a file system call failed; the store is unchanged */
    KS_DELIVERY_STORE_CORRUPT = 16,   /* an installed version no longer matches its manifest */
    KS_DELIVERY_NO_KEY = 17,          /* the self-test's encrypted model has no (working) key */
    KS_DELIVERY_ERROR_COUNT
} ks_delivery_error;

/* Static name, e.g. "bad signature"; "unknown" for other values. */
KS_API const char *ks_delivery_error_string(ks_delivery_error error);

/* What a package's signed manifest says. */
typedef struct ks_package_info {
    char id[KS_PACKAGE_MAX_ID_BYTES + 1]; /* [a-z0-9][a-z0-9._-]*, NUL-terminated */
    uint32_t version_major, version_minor, version_patch;
    uint32_t min_runtime; /* oldest Kestrel that may use it, as KS_VERSION_HEX */
    uint64_t issued;      /* signer's monotonic stamp (ks-sign: Unix seconds); orders replays */
    uint8_t key_id[KS_PACKAGE_KEY_ID_BYTES];
    char encryption_key_name[KS_PACKAGE_MAX_KEY_NAME_BYTES + 1]; /* "" when none */
    uint32_t num_files;
    uint64_t payload_bytes;                  /* sum of the file sizes */
    uint8_t digest[KS_PACKAGE_DIGEST_BYTES]; /* SHA-256 of the signed header and manifest */
} ks_package_info;

/* Reads a package's header and manifest WITHOUT checking the signature or the files (for
 * display: `ks-sign info`). Never trust what it returns. */
KS_API ks_status ks_package_inspect(const void *data, size_t size_bytes, ks_package_info *info_out);

/* Verifies everything: structure and limits, the signer's key among trusted_keys
 * (num_trusted_keys * 32 bytes), the signature, every file's size and SHA-256, and that
 * min_runtime is not newer than this library. why_out (may be NULL) gets the cause; the message
 * is ks_last_error(NULL). Does not keep the buffers. */
KS_API ks_status ks_package_verify(const void *data, size_t size_bytes, const uint8_t *trusted_keys,
                                   uint32_t num_trusted_keys, ks_package_info *info_out,
                                   ks_delivery_error *why_out);

/* Number and name of the files of a verified or inspected buffer (index < num_files). Writes
 * the NUL-terminated path into name_out (cap bytes; too small: KS_STATUS_LIMIT_EXCEEDED). */
KS_API ks_status ks_package_file_name(const void *data, size_t size_bytes, uint32_t index,
                                      char *name_out, size_t cap);

typedef struct ks_store ks_store;

/* Events the store reports through ks_store_desc.on_event. */
typedef enum ks_store_event {
    KS_STORE_EVENT_INSTALLED = 0,   /* a version became current */
    KS_STORE_EVENT_ROLLED_BACK = 1, /* a version was marked bad or its self-test failed */
    KS_STORE_EVENT_COUNT
} ks_store_event;

/* Called on the thread that made the store call, with the store's lock held (do not call the
 * store from it). message says why (self-test output, mark_bad reason). */
typedef void (*ks_store_event_fn)(void *user, ks_store_event event, const ks_package_info *info,
                                  const char *message);

/* Gives the 32-byte key of encrypted (ks-protect) models for the key name a package's manifest
 * records (ks_package_info.encryption_key_name), so that the store can self-test them. Returns
 * 0 and fills key_out, or non-zero when it has no key for that name. The store keeps the key
 * only in memory for the self-test and wipes it after; it never writes it. */
typedef int (*ks_store_key_fn)(void *user, const char *key_name, uint8_t key_out[32]);

typedef struct ks_store_desc {
    /* num_trusted_keys Ed25519 public keys of 32 bytes each, back to back (several: key
     * rotation). Copied at open. At least one is required. */
    const uint8_t *trusted_keys;
    uint32_t num_trusted_keys;
    const ks_allocator *allocator; /* NULL: malloc/free. Must outlive the store. */
    ks_store_event_fn on_event;    /* NULL: none */
    void *user;                    /* passed to on_event and key_provider */
    ks_store_key_fn key_provider;  /* NULL: packages whose self-test model is encrypted are
                                      refused with KS_DELIVERY_NO_KEY */
} ks_store_desc;

/* Opens (creating it if needed: one level) the store folder `root`, takes its lock and removes
 * leftovers of interrupted installs. The folder must be private to the app. */
KS_API ks_status ks_store_open(const char *root, const ks_store_desc *desc, ks_store **store_out);
/* Releases the lock and the handle. NULL is a no-op. */
KS_API void ks_store_destroy(ks_store *store);

/* Install flags. */
#define KS_STORE_ALLOW_DOWNGRADE 0x1u /* accept a version older than the installed one */
#define KS_STORE_SKIP_SELFTEST 0x2u   /* install without running the package's self-test */

/* Verifies the package completely, then installs it as the current version of its id; the
 * current version becomes the previous one (kept), the one before is deleted. Refusals (each with
 * its ks_store_last_refusal and message) leave the store untouched:
 *   structure, limits, key, signature, sizes, hashes, paths: as ks_package_verify
 *   KS_DELIVERY_DOWNGRADE (KS_STATUS_INVALID_STATE) older version without ALLOW_DOWNGRADE
 *   KS_DELIVERY_REPLAY (KS_STATUS_INVALID_STATE) issued before the newest accepted package
 *   KS_DELIVERY_KNOWN_BAD (KS_STATUS_INVALID_STATE) this package was marked bad before
 *   KS_DELIVERY_SELFTEST_FAILED (KS_STATUS_CHECKSUM_MISMATCH) it carries selftest.kst and the
 *       outputs differ: the package is marked bad, the previous version stays current and
 *       on_event gets KS_STORE_EVENT_ROLLED_BACK with the reason
 *   KS_DELIVERY_NO_KEY (KS_STATUS_INVALID_ARGUMENT) the self-test's model is encrypted and the
 *       key provider has no key for the package's key name, or its key does not open the model
 *       (the signed bytes are what the publisher made, so this is a key problem: the package is
 *       not marked bad and may be installed again once the key is there)
 *   KS_DELIVERY_IO (KS_STATUS_IO_ERROR) a file system call failed
 * Installing the package that is already current does nothing and succeeds. info_out may be
 * NULL. The buffer is not kept. */
KS_API ks_status ks_store_install_buffer(ks_store *store, const void *data, size_t size_bytes,
                                         uint32_t flags, ks_package_info *info_out);
/* The same from a file the app downloaded (read whole, so at most the payload limit). */
KS_API ks_status ks_store_install_file(ks_store *store, const char *path, uint32_t flags,
                                       ks_package_info *info_out);

/* The current (or, with previous != 0, the kept previous) version of package `id`, re-read from
 * the store and its signature re-verified. KS_STATUS_INVALID_ARGUMENT with NOT_INSTALLED when
 * there is none. */
KS_API ks_status ks_store_current(ks_store *store, const char *id, int previous,
                                  ks_package_info *info_out);

/* Absolute path of file `name` (a path from the manifest) of the current version of `id`. The
 * file stays at that path while the version is current or previous (until the second install
 * after it, or a rollback away from it). */
KS_API ks_status ks_store_file_path(ks_store *store, const char *id, const char *name,
                                    char *path_out, size_t cap);

/* Makes the previous version current again (the current one is deleted). NO_PREVIOUS when none
 * is kept. */
KS_API ks_status ks_store_rollback(ks_store *store, const char *id);
/* Marks the current version bad (it can never be installed again), rolls back to the previous
 * version and reports reason through on_event; for an app whose own first-load check failed. */
KS_API ks_status ks_store_mark_bad(ks_store *store, const char *id, const char *reason);
/* Writes the reason of the last roll-back of `id` (self-test or mark_bad; "" when none) into
 * reason_out (cap bytes, truncated to fit, always NUL-terminated). Kept across store opens. */
KS_API ks_status ks_store_last_rollback(ks_store *store, const char *id, char *reason_out,
                                        size_t cap);

/* Re-reads every file of the current version of `id` and checks its size and SHA-256 against the
 * signed manifest: KS_DELIVERY_STORE_CORRUPT (KS_STATUS_CHECKSUM_MISMATCH) on any difference. */
KS_API ks_status ks_store_check(ks_store *store, const char *id);

/* Cause of the store's most recent failed call (KS_DELIVERY_OK after a success). */
KS_API ks_delivery_error ks_store_last_refusal(const ks_store *store);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_DELIVERY_H */
