/* Portable helpers of the vectorized fp32 elementwise, softmax, resize and copy variants
 * (x86/avx2/f32_*.c, built once per x86 ISA). Not a published API.
 *
 * These decide whether a node is one the fast variants handle, collapse broadcast shapes, and
 * precompute resize tables. They are compiled without ISA flags on purpose: resize coordinates
 * must be computed with exactly the float operations of the reference kernel (no FMA
 * contraction), so nearest-neighbour picks the same pixels.
 */
#ifndef KESTREL_CPU_VEC_H
#define KESTREL_CPU_VEC_H

#include "impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* True for a non-quantized F32 tensor. */
bool ks__vec_is_f32(const ks__rt_tensor *t);

/* Binary broadcasting collapsed to the fewest dims: size-1 dims are dropped and neighbours
 * whose strides chain are merged, so the innermost dim is the longest contiguous run (stride 1
 * or 0 in each input). rank >= 1 even for a scalar output. */
typedef struct ks__vbin_geom {
    int32_t rank;
    int64_t dims[KS_MAX_RANK];
    int64_t stride_a[KS_MAX_RANK]; /* elements; 0 along broadcast dims */
    int64_t stride_b[KS_MAX_RANK];
    int64_t numel;
} ks__vbin_geom;

/* False when a or b does not broadcast to y's dims. */
bool ks__vbin_geom_make(const ks__rt_tensor *a, const ks__rt_tensor *b, const ks__rt_tensor *y,
                        ks__vbin_geom *g);
/* Input offsets of output row `row` (a row = the innermost dim). */
void ks__vbin_row_offsets(const ks__vbin_geom *g, int64_t row, int64_t *off_a, int64_t *off_b);

/* Element count of an F32 binary (ADD..MINIMUM, or PRELU when prelu is true) node the vector
 * variants handle, or -1. */
double ks__vbin_numel(const ks__kernel_ctx *ctx, bool prelu);
/* Element count of an F32 unary node, or -1. */
double ks__vunary_numel(const ks__kernel_ctx *ctx);

/* SOFTMAX / LOG_SOFTMAX over a last (or effectively last: later dims all 1) axis of F32 data:
 * rows and row length; false if not handled. */
bool ks__vsoftmax_shape(const ks__kernel_ctx *ctx, int64_t *rows_out, int64_t *len_out);

/* F32 REDUCE mean over exactly axes 1 and 2 of an NHWC tensor (global average pooling). */
bool ks__vreduce_is_hw_mean(const ks__kernel_ctx *ctx);

/* ---- RESIZE tables (packed data, made at reshape) ---- */
typedef struct ks__vresize_tab {
    int32_t mode; /* 0 nearest, 1 bilinear */
    int64_t n, ih, iw, c, oh, ow;
    /* nearest: y0/x0 only. bilinear: lower/upper source index and the fraction. */
    const int32_t *y0, *y1, *x0, *x1;
    const float *fy, *fx;
} ks__vresize_tab;

/* True when the node is an F32 NHWC resize the vector variants handle. */
bool ks__vresize_supported(const ks__kernel_ctx *ctx);
size_t ks__vresize_packed_bytes(const ks__kernel_ctx *ctx);
/* Fills ctx->packed (ks__vresize_packed_bytes bytes) from the node and its inferred shapes. */
ks_status ks__vresize_pack(ks__kernel_ctx *ctx);
/* Points tab into ctx->packed. */
void ks__vresize_view(const ks__kernel_ctx *ctx, ks__vresize_tab *tab);

/* ---- CONCAT and constant PAD ---- */
#define KS__VCONCAT_MAX_INPUTS 64

typedef struct ks__vconcat_geom {
    int64_t outer;                          /* product of dims before the axis */
    int64_t chunk[KS__VCONCAT_MAX_INPUTS];  /* elements each input contributes per outer index */
    int64_t offset[KS__VCONCAT_MAX_INPUTS]; /* where that chunk starts in an output row */
    int64_t row;                            /* output elements per outer index */
} ks__vconcat_geom;

bool ks__vconcat_geom_make(const ks__kernel_ctx *ctx, ks__vconcat_geom *g);

typedef struct ks__vpad_geom {
    int32_t rank;
    int64_t in_dims[KS_MAX_RANK];
    int64_t out_dims[KS_MAX_RANK];
    int64_t before[KS_MAX_RANK]; /* negative crops */
    float fill;
} ks__vpad_geom;

/* Constant-mode F32 PAD with pads readable now; fill read too when `with_fill`. */
bool ks__vpad_geom_make(const ks__kernel_ctx *ctx, ks__vpad_geom *g, bool with_fill);
/* The same for activations of dtype dt (F32 as above, or F16: arm/neonfp16/f16_copy.c). */
bool ks__vpad_geom_make_dt(const ks__kernel_ctx *ctx, ks__vpad_geom *g, bool with_fill,
                           ks_dtype dt);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CPU_VEC_H */
