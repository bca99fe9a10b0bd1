/* Portable parts of the "perf" variants: data movement (TRANSPOSE, SPLIT) expressed as one
 * strided gather, and the small-output-channel convolution geometry. Not a published API.
 *
 * A strided gather writes a contiguous output y[i0, .., ir-1] = x[base + sum(ik * in_stride[k])].
 * Size-1 axes are dropped and axes that stay adjacent are merged, so most transposes collapse to
 * rank 2 or 3 and most splits to row copies.
 */
#ifndef KESTREL_CPU_PERF_H
#define KESTREL_CPU_PERF_H

#include <stdbool.h>

#include "impl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ks__gather_geom {
    int32_t rank;              /* >= 1 after collapsing */
    int64_t dims[KS_MAX_RANK]; /* output order */
    int64_t in_stride[KS_MAX_RANK];
    int64_t base; /* element offset of y[0..0] in x */
    int64_t numel;
} ks__gather_geom;

/* True for 4-byte dtypes that carry no quantization the copy would have to change. */
bool ks__perf_is_x32(const ks__rt_tensor *t);

/* Collapses a raw (dims, in_stride) description in place. */
void ks__gather_collapse(ks__gather_geom *g);

/* TRANSPOSE of ctx->in[0] into ctx->out[0] (shapes inferred). False if unsupported. */
bool ks__gather_geom_transpose(const ks__kernel_ctx *ctx, ks__gather_geom *g);

/* Output `k` of SPLIT as a gather from ctx->in[0]. False if unsupported. */
bool ks__gather_geom_split(const ks__kernel_ctx *ctx, uint32_t k, ks__gather_geom *g);

/* The same for elements of es bytes: 4 as above, or 2 (F16 activations, the fp16 pass's graphs:
 * arm/neonfp16/f16_copy.c). */
bool ks__gather_geom_transpose_es(const ks__kernel_ctx *ctx, ks__gather_geom *g, size_t es);
bool ks__gather_geom_split_es(const ks__kernel_ctx *ctx, uint32_t k, ks__gather_geom *g, size_t es);

/* ---- small-output-channel CONV2D (see x86/avx512/f32_perf_conv.c) ---- */
typedef struct ks__smallconv_geom {
    int64_t n, ih, iw, ic, oh, ow, oc, kh, kw;
    int64_t sh, sw, dh, dw, pt, pl;
    int32_t act;
    float alpha;
} ks__smallconv_geom;

/* A float, ungrouped, explicitly padded CONV2D without residual. False otherwise. */
bool ks__smallconv_geom_make(const ks__kernel_ctx *ctx, ks__smallconv_geom *g);

/* A float depthwise CONV2D (groups == Cin == Cout, one filter per channel) without residual; the
 * geometry uses ic == oc == channels. False otherwise. */
bool ks__smalldw_geom_make(const ks__kernel_ctx *ctx, ks__smallconv_geom *g);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_PERF_H */
