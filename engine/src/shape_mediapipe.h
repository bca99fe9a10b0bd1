/* Shape inference of the MediaPipe custom ops (shape_mediapipe.c): MP_TRANSFORM_LANDMARKS,
 * MP_TRANSFORM_TENSOR_BILINEAR and MP_LANDMARKS_TO_MATRIX (ops.inc gives their params). Not a
 * published API. Callers infer through ks__op_infer (shape.h); the ks__infer_* functions are its
 * table's entries. Thread-safe.
 */
#ifndef KESTREL_SHAPE_MEDIAPIPE_H
#define KESTREL_SHAPE_MEDIAPIPE_H

#include "kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

ks_status ks__infer_mp_transform_landmarks(ks__kernel_ctx *ctx);
ks_status ks__infer_mp_transform_tensor_bilinear(ks__kernel_ctx *ctx);
ks_status ks__infer_mp_landmarks_to_matrix(ks__kernel_ctx *ctx);

/* MP_TRANSFORM_LANDMARKS: values per landmark, ip[0] or (when 0) the last dim of the landmarks
 * if it is at most 3. Inference accepts only 2 or 3. */
int32_t ks__mp_landmark_dims(const ks__kernel_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_SHAPE_MEDIAPIPE_H */
