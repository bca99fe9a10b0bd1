/* The error idiom shared by every layer: a function that fails writes one human-readable line
 * into the caller's (err, err_cap) buffer and returns a ks_status. err may be NULL or err_cap 0
 * (nothing is written); the message is always NUL-terminated and truncated to fit. */
#ifndef KESTREL_BASE_ERROR_H
#define KESTREL_BASE_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#include "kestrel/kestrel.h"

#if defined(__GNUC__)
#define KS__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define KS__PRINTF(f, a)
#endif

/* Formats into err and returns status: `return ks__fail(err, err_cap, KS_STATUS_..., "...")`. */
ks_status ks__fail(char *err, size_t err_cap, ks_status status, const char *fmt, ...)
    KS__PRINTF(4, 5);
ks_status ks__failv(char *err, size_t err_cap, ks_status status, const char *fmt, va_list ap)
    KS__PRINTF(4, 0);
/* Formats into buf (NULL or cap 0: nothing), always terminated. */
void ks__fmt(char *buf, size_t cap, const char *fmt, ...) KS__PRINTF(3, 4);

#endif /* KESTREL_BASE_ERROR_H */
