/* Kestrel: on-device AI SDK. Common definitions: status codes, allocator, log hook, version.
 *
 * Usage:
 *     ks_log_set(my_log, my_ctx);             // optional: route library messages
 *     ks_model *m = NULL;
 *     ks_status st = ks_model_load_file("face.ksm", NULL, &m);
 *     if (st != KS_STATUS_OK)
 *         fprintf(stderr, "%s: %s\n", ks_status_string(st), ks_last_error(NULL));
 *
 * Thread safety: every function in this header may be called from any thread. ks_log_set is
 * meant to be called once at start-up, before other threads use the library.
 *
 * Conventions used by every Kestrel header:
 *   - fallible calls return ks_status; outputs come last as *_out and are written only on success;
 *   - objects are opaque, come in create/destroy pairs, and destroy(NULL) is a no-op;
 *   - desc structs treat zero as "default"; pass NULL for all defaults;
 *   - the library never prints, never aborts on bad input, never uses errno.
 */
#ifndef KESTREL_KESTREL_H
#define KESTREL_KESTREL_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32) && defined(KS_BUILDING_SHARED)
#define KS_API __declspec(dllexport)
#elif defined(__GNUC__) || defined(__clang__)
#define KS_API __attribute__((visibility("default")))
#else
#define KS_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define KS_VERSION_MAJOR 0
#define KS_VERSION_MINOR 1
#define KS_VERSION_PATCH 0
#define KS_VERSION_STRING "0.1.0"
/* (major << 16) | (minor << 8) | patch */
#define KS_VERSION_HEX ((KS_VERSION_MAJOR << 16) | (KS_VERSION_MINOR << 8) | KS_VERSION_PATCH)

/* Returns KS_VERSION_HEX of the library actually linked. */
KS_API uint32_t ks_version(void);
/* Returns KS_VERSION_STRING of the library actually linked. Static storage. */
KS_API const char *ks_version_string(void);

/* Status codes. Values are stable (append-only). */
typedef enum ks_status {
    KS_STATUS_OK = 0,
    KS_STATUS_INVALID_ARGUMENT = 1,  /* a caller passed NULL, a bad index or an inconsistent desc */
    KS_STATUS_OUT_OF_MEMORY = 2,     /* an allocation failed; nothing leaked */
    KS_STATUS_IO_ERROR = 3,          /* a file could not be opened, read, mapped or written */
    KS_STATUS_INVALID_MODEL = 4,     /* a model file is truncated, corrupt or inconsistent */
    KS_STATUS_UNSUPPORTED = 5,       /* valid input that Kestrel does not implement (op, dtype) */
    KS_STATUS_VERSION_MISMATCH = 6,  /* the file needs a newer Kestrel */
    KS_STATUS_CHECKSUM_MISMATCH = 7, /* stored checksum does not match the content */
    KS_STATUS_INVALID_SHAPE = 8,     /* shapes do not fit the graph */
    KS_STATUS_INVALID_STATE = 9,     /* call order violated, e.g. run before reshape */
    KS_STATUS_LIMIT_EXCEEDED = 10,   /* a named safety limit was hit (size, count, depth) */
    KS_STATUS_INTERNAL = 11,         /* a bug in Kestrel; please report it */
    KS_STATUS_TAMPERED = 12,         /* encrypted model failed authentication (altered/wrong key) */
    KS_STATUS_COUNT
} ks_status;

/* Static name of a status, e.g. "invalid model". Unknown values give "unknown status". */
KS_API const char *ks_status_string(ks_status status);

/* Most recent error message of a handle (ks_model*, ks_session*, ...), naming the file, tensor,
 * op and offending value where known. With handle == NULL: the message of the last failed
 * create/load call on the calling thread. Never NULL; "" when there is no error. The string
 * lives until the next failing call on the same handle (or thread). */
KS_API const char *ks_last_error(const void *handle);

/* Allocator hooks. A NULL ks_allocator pointer (or NULL alloc/free) means malloc/free.
 * alloc must return memory aligned to at least `alignment` (a power of two, <= 4096) or NULL. */
typedef struct ks_allocator {
    void *(*alloc)(void *user, size_t size_bytes, size_t alignment);
    void (*free)(void *user, void *ptr);
    void *user;
} ks_allocator;

typedef enum ks_log_level {
    KS_LOG_ERROR = 0,
    KS_LOG_WARN = 1,
    KS_LOG_INFO = 2,
    KS_LOG_DEBUG = 3,
    KS_LOG_LEVEL_COUNT
} ks_log_level;

typedef void (*ks_log_fn)(void *user, ks_log_level level, const char *message);

/* Installs the log hook (NULL disables logging, the default). Messages at levels above
 * max_level are dropped before formatting. The library never prints on its own. */
KS_API void ks_log_set(ks_log_fn fn, void *user, ks_log_level max_level);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_KESTREL_H */
