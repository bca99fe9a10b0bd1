/* Internal helpers shared by the engine: handle header, errors, logging. */
#ifndef KESTREL_COMMON_H
#define KESTREL_COMMON_H

#include <stdarg.h>

#include "ir.h"

#define KS_ERROR_CAP 512
#define KS__OBJECT_MAGIC 0x4b534f42u /* "KSOB" */

/* Every public handle starts with this header so ks_last_error() works on any of them. */
typedef struct ks__object {
    uint32_t magic;
    char error[KS_ERROR_CAP];
} ks__object;

/* Formats into obj->error (obj == NULL: the calling thread's error) and logs it. */
void ks__object_error(ks__object *obj, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void ks__set_thread_error(const char *msg);
void ks__log(ks_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif /* KESTREL_COMMON_H */
