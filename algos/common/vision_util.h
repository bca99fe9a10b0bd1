/* Small helpers shared by the algos/common building blocks. Not a published API. */
#ifndef KESTREL_ALGOS_VISION_UTIL_H
#define KESTREL_ALGOS_VISION_UTIL_H

#include <stddef.h>

#include "base/error.h" /* KS__PRINTF */
#include "kestrel/kestrel.h"

#define KS__PI 3.14159265358979323846

/* Formats a message into err (NUL-terminated, truncated to err_cap) and returns `status`.
 * err may be NULL when err_cap is 0. */
ks_status ks__vision_fail(char *err, size_t err_cap, ks_status status, const char *fmt, ...)
    KS__PRINTF(4, 5);

/* Logistic function, safe for large |x|. */
float ks__sigmoid(float x);
/* Wraps an angle to [-pi, pi) (MediaPipe NormalizeRadians). */
float ks__normalize_radians(float angle_rad);

#endif /* KESTREL_ALGOS_VISION_UTIL_H */
