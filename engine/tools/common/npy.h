/* Minimal .npy (NumPy format 1.0/2.0/3.0) reader and writer for the tools: little-endian,
 * C order, dtypes f4 f2 i4 i8 u1 i1 b1 i2. */
#ifndef KESTREL_NPY_H
#define KESTREL_NPY_H

#include "kestrel/tensor.h"

typedef struct ks_npy {
    ks_dtype dtype;
    ks_tensor_shape shape;
    void *data; /* malloc'ed; free with ks_npy_free */
    size_t size_bytes;
} ks_npy;

/* Reads path. On failure writes a message into err and returns a non-OK status. */
ks_status ks_npy_read(const char *path, ks_npy *out, char *err, size_t err_cap);
void ks_npy_free(ks_npy *npy);
ks_status ks_npy_write(const char *path, ks_dtype dtype, const ks_tensor_shape *shape,
                       const void *data, size_t size_bytes, char *err, size_t err_cap);
#define KS_NPY_MAX_NAME 200
/* Replaces every character outside [A-Za-z0-9._-] by '_' (the ks-run file-name contract). Names
 * longer than KS_NPY_MAX_NAME bytes become their first KS_NPY_MAX_NAME-17 characters (sanitized),
 * '-', and 16 lowercase hex digits of the FNV-1a 64-bit hash of the original name. */
void ks_npy_sanitize_name(const char *name, char *out, size_t cap);

#endif
