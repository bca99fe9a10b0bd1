/* Status strings, version, dtype helpers, log hook and last-error storage. */
#include "common.h"

#include <stdio.h>
#include <string.h>

uint32_t ks_version(void) {
    return KS_VERSION_HEX;
}

const char *ks_version_string(void) {
    return KS_VERSION_STRING;
}

const char *ks_status_string(ks_status status) {
    switch (status) {
    case KS_STATUS_OK:
        return "ok";
    case KS_STATUS_INVALID_ARGUMENT:
        return "invalid argument";
    case KS_STATUS_OUT_OF_MEMORY:
        return "out of memory";
    case KS_STATUS_IO_ERROR:
        return "i/o error";
    case KS_STATUS_INVALID_MODEL:
        return "invalid model";
    case KS_STATUS_UNSUPPORTED:
        return "unsupported";
    case KS_STATUS_VERSION_MISMATCH:
        return "version mismatch";
    case KS_STATUS_CHECKSUM_MISMATCH:
        return "checksum mismatch";
    case KS_STATUS_INVALID_SHAPE:
        return "invalid shape";
    case KS_STATUS_INVALID_STATE:
        return "invalid state";
    case KS_STATUS_LIMIT_EXCEEDED:
        return "limit exceeded";
    case KS_STATUS_INTERNAL:
        return "internal error";
    case KS_STATUS_TAMPERED:
        return "model tampered or wrong key";
    default:
        return "unknown status";
    }
}

const char *ks_dtype_string(ks_dtype dtype) {
    switch (dtype) {
    case KS_DTYPE_F32:
        return "f32";
    case KS_DTYPE_F16:
        return "f16";
    case KS_DTYPE_I32:
        return "i32";
    case KS_DTYPE_I64:
        return "i64";
    case KS_DTYPE_U8:
        return "u8";
    case KS_DTYPE_I8:
        return "i8";
    case KS_DTYPE_BOOL:
        return "bool";
    case KS_DTYPE_I16:
        return "i16";
    default:
        return "invalid";
    }
}

size_t ks_dtype_size(ks_dtype dtype) {
    switch (dtype) {
    case KS_DTYPE_F32:
        return 4;
    case KS_DTYPE_F16:
        return 2;
    case KS_DTYPE_I32:
        return 4;
    case KS_DTYPE_I64:
        return 8;
    case KS_DTYPE_U8:
        return 1;
    case KS_DTYPE_I8:
        return 1;
    case KS_DTYPE_BOOL:
        return 1;
    case KS_DTYPE_I16:
        return 2;
    default:
        return 0;
    }
}

/* ---- log ---- */
static ks_log_fn g_log_fn;
static void *g_log_user;
static ks_log_level g_log_max = KS_LOG_WARN;

void ks_log_set(ks_log_fn fn, void *user, ks_log_level max_level) {
    g_log_fn = fn;
    g_log_user = user;
    g_log_max = max_level;
}

void ks__log(ks_log_level level, const char *fmt, ...) {
    if (!g_log_fn || level > g_log_max) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    g_log_fn(g_log_user, level, buf);
}

/* ---- last error ---- */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_THREADS__)
#define KS_THREAD_LOCAL _Thread_local
#else
#define KS_THREAD_LOCAL __thread
#endif
static KS_THREAD_LOCAL char g_thread_error[KS_ERROR_CAP];

void ks__set_thread_error(const char *msg) {
    snprintf(g_thread_error, sizeof(g_thread_error), "%s", msg ? msg : "");
}

void ks__object_error(ks__object *obj, const char *fmt, ...) {
    char *dst = obj ? obj->error : g_thread_error;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, KS_ERROR_CAP, fmt, ap);
    va_end(ap);
    ks__log(KS_LOG_ERROR, "%s", dst);
}

const char *ks_last_error(const void *handle) {
    if (!handle) return g_thread_error;
    const ks__object *obj = handle;
    if (obj->magic != KS__OBJECT_MAGIC) return "ks_last_error: not a Kestrel handle";
    return obj->error;
}
