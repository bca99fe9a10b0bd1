/* Shared helpers: see vision_util.h. */
#include "vision_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

ks_status ks__vision_fail(char *err, size_t err_cap, ks_status status, const char *fmt, ...) {
    if (err && err_cap > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_cap, fmt, ap);
        va_end(ap);
    }
    return status;
}

float ks__sigmoid(float x) {
    /* exp of a large positive argument overflows to inf, which still gives the right limit,
     * but branching keeps the intermediate finite for UBSan-style float checks. */
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

float ks__normalize_radians(float angle_rad) {
    const float two_pi = (float)(2.0 * KS__PI);
    return angle_rad - two_pi * floorf((angle_rad + (float)KS__PI) / two_pi);
}
