/* The CPU backend's reference kernels and the helpers kernels share. The contract they
 * implement (ks__kernel_ctx, ks__kernel, ks__impl) belongs to the core: engine/src/kernel.h.
 * Not a published API.
 *
 * Reference kernels (backends/cpu/ref/) are obviously-correct scalar code and stay forever as the
 * oracle for fast kernels.
 */
#ifndef KESTREL_CPU_CPU_KERNEL_H
#define KESTREL_CPU_CPU_KERNEL_H

#include "src/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The reference kernel table (filled once; thread-safe after first call returns). */
const ks__kernel_table *ks__ref_kernels(void);

/* Each family file registers its ops into the table. */
void ks__ref_register_conv(ks__kernel_table *t);        /* conv, pool, fc, resize, space ops */
void ks__ref_register_elementwise(ks__kernel_table *t); /* binary, unary, softmax, reduce... */
void ks__ref_register_data(ks__kernel_table *t);        /* reshape, concat, slice, gather... */
void ks__ref_register_mediapipe(ks__kernel_table *t);   /* MediaPipe custom ops */

/* Writes "op 'name' (node N 'node-name'): <message>" into ctx->err. Returns `status`. */
ks_status ks__kernel_error(ks__kernel_ctx *ctx, ks_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- helpers shared by kernels ---- */
int64_t ks__rt_numel(const ks__rt_tensor *t);
/* Sets out rank/dims (copy) and dtype. */
void ks__rt_set_shape(ks__rt_tensor *t, ks_dtype dtype, int32_t rank, const int64_t *dims);
/* Reads element i of an integer tensor (I32/I64/U8/I8/I16/BOOL) as int64. */
int64_t ks__rt_get_int(const ks__rt_tensor *t, int64_t i);
/* Reads element i of any numeric tensor as double (quantized values are NOT dequantized). */
double ks__rt_get_f64(const ks__rt_tensor *t, int64_t i);
/* Writes element i of any numeric tensor from double (with C conversion; ints truncate). */
void ks__rt_set_f64(ks__rt_tensor *t, int64_t i, double v);
/* Applies a fused float activation. */
float ks__act_apply(float x, int32_t act, float alpha);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_CPU_KERNEL_H */
