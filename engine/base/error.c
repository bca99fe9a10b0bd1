/* The error idiom (error.h). */
#include "error.h"

#include <stdio.h>

ks_status ks__failv(char *err, size_t err_cap, ks_status status, const char *fmt, va_list ap) {
    if (err && err_cap) vsnprintf(err, err_cap, fmt, ap);
    return status;
}

ks_status ks__fail(char *err, size_t err_cap, ks_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ks__failv(err, err_cap, status, fmt, ap);
    va_end(ap);
    return status;
}

void ks__fmt(char *buf, size_t cap, const char *fmt, ...) {
    if (!buf || cap == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}
