/* Kestrel tensors as seen by API users: element types, shapes and tensor views.
 *
 * Usage:
 *     ks_tensor in;
 *     ks_session_input(session, 0, &in);          // a view into the session's arena
 *     memcpy(in.data, pixels, in.size_bytes);
 *
 * Thread safety: plain data; a ks_tensor view is valid as long as the object that filled it.
 */
#ifndef KESTREL_TENSOR_H
#define KESTREL_TENSOR_H

#include "kestrel/kestrel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS_MAX_RANK 8

/* Element types. Values are frozen: they are stored in .ksm files. */
typedef enum ks_dtype {
    KS_DTYPE_INVALID = 0,
    KS_DTYPE_F32 = 1,
    KS_DTYPE_F16 = 2,
    KS_DTYPE_I32 = 3,
    KS_DTYPE_I64 = 4,
    KS_DTYPE_U8 = 5,
    KS_DTYPE_I8 = 6,
    KS_DTYPE_BOOL = 7,
    KS_DTYPE_I16 = 8,
    KS_DTYPE_COUNT
} ks_dtype;

/* "f32", "u8", ...; "invalid" for unknown values. Static storage. */
KS_API const char *ks_dtype_string(ks_dtype dtype);
/* Size of one element in bytes; 0 for unknown values. */
KS_API size_t ks_dtype_size(ks_dtype dtype);

typedef struct ks_tensor_shape {
    int32_t rank;
    int64_t dims[KS_MAX_RANK]; /* -1 marks a dimension not known until reshape */
} ks_tensor_shape;

/* Description of a tensor. For quantized tensors (U8/I8/I32 with quantization), real value =
 * scale * (q - zero_point). scale == 0 means "not quantized". Per-channel quantized tensors
 * report the first channel's parameters here. */
typedef struct ks_tensor_info {
    const char *name; /* owned by the model; lives as long as the model */
    ks_dtype dtype;
    ks_tensor_shape shape;
    float scale;
    int32_t zero_point;
} ks_tensor_info;

/* A view of tensor memory owned by a session. */
typedef struct ks_tensor {
    ks_tensor_info info;
    void *data;
    size_t size_bytes;
} ks_tensor;

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_TENSOR_H */
