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

/* RESIZE's coordinate arithmetic (conv_resize.c), shared with the fast kernels so that they
 * pick the same pixels and weights bit for bit: the float source coordinate of output index o,
 * the nearest index by round mode, TFLite's floor/ceil bounds of a float coordinate, and the
 * int8 kernel's 10-bit fixed-point scale and coordinate (units of 1/1024 pixel). */
float ks__resize_source_coord(int64_t o, int64_t out, float ratio, int32_t coord);
int64_t ks__resize_nearest_index(float src, int64_t in, int32_t round_mode);
void ks__resize_tfl_bounds(float src, int64_t in, int64_t *lo, int64_t *hi);
int64_t ks__resize_int_scale(int64_t in, int64_t out, int align);
void ks__resize_int_coord(int64_t o, int64_t scale_10, int half_pixel, int64_t in, int64_t *src,
                          int64_t *lo, int64_t *hi);

/* Registration of the files other than conv.c. */
void ks__ref_register_conv_resize(ks__kernel_table *t);
void ks__ref_register_conv_space(ks__kernel_table *t);

#endif /* KESTREL_CPU_REF_CONV_INTERNAL_H */
