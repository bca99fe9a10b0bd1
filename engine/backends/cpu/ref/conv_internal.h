/* Helpers shared by the conv-family reference kernels (conv*.c). Not a published API. */
#ifndef KESTREL_CPU_REF_CONV_INTERNAL_H
#define KESTREL_CPU_REF_CONV_INTERNAL_H

#include "../cpu_kernel.h"
#include "quant_util.h"

/* Largest element count a conv-family output may have; anything bigger is a corrupt model or
 * an absurd input size, and rejecting it keeps index arithmetic far from int64 overflow. */
#define KS__CONV_MAX_NUMEL (1LL << 32)

/* True for a U8/I8 tensor that carries quantization parameters. */
int ks__conv_is_quant(const ks__rt_tensor *t);

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

/* Checks that every dim is >= min_dim and the element count stays below KS__CONV_MAX_NUMEL.
 * On failure reports with `what` (e.g. "output") and returns a status. */
ks_status ks__conv_check_dims(ks__kernel_ctx *ctx, const char *what, int32_t rank,
                              const int64_t *dims, int64_t min_dim);

/* Checks that input `idx` is present, has rank `rank` (or any rank when rank < 0) and, when its
 * data is needed during infer, that the data is known. */
ks_status ks__conv_check_input(ks__kernel_ctx *ctx, uint32_t idx, int32_t rank, int need_value);

/* Registration of the files other than conv.c. */
void ks__ref_register_conv_resize(ks__kernel_table *t);
void ks__ref_register_conv_space(ks__kernel_table *t);

#endif /* KESTREL_CPU_REF_CONV_INTERNAL_H */
