/* Helpers shared by the conv-family reference kernels (conv*.c) and the fast conv kernels.
 * Not a published API. */
#ifndef KESTREL_CPU_REF_CONV_INTERNAL_H
#define KESTREL_CPU_REF_CONV_INTERNAL_H

#include "../cpu_kernel.h"
#include "quant_util.h"
#include "src/shape_conv.h" /* the geometry (and ks__conv_is_quant) shape inference uses */

/* Scale / zero point of channel c (per-tensor quantization ignores c). */
float ks__conv_qscale(const ks__rt_tensor *t, int64_t c);
int32_t ks__conv_qzp(const ks__rt_tensor *t, int64_t c);

/* Element i as float: F32/F16 as is, quantized U8/I8 dequantized with channel c's params, other
 * integers converted. */
float ks__conv_load_f(const ks__rt_tensor *t, int64_t i, int64_t c);

/* Raw integer element i of a U8/I8/I16/I32 tensor. */
int32_t ks__conv_load_q(const ks__rt_tensor *t, int64_t i);

/* Stores a value already clamped to the dtype range into a U8/I8/I16 tensor. */
void ks__conv_store_q(ks__rt_tensor *t, int64_t i, int32_t v);

/* Registration of the files other than conv.c. */
void ks__ref_register_conv_resize(ks__kernel_table *t);
void ks__ref_register_conv_space(ks__kernel_table *t);

#endif /* KESTREL_CPU_REF_CONV_INTERNAL_H */
