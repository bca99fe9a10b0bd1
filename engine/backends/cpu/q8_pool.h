/* Quantized max pooling: the node description both ISA kernels use (x86/avx2/q8_pool.c,
 * x86/avx512/q8_pool.c). Not a published API. */
#ifndef KESTREL_CPU_Q8_POOL_H
#define KESTREL_CPU_Q8_POOL_H

#include <stdint.h>

#include "impl.h"

typedef struct ks__q8_pool {
    int64_t n, ih, iw, c, oh, ow, kh, kw, sh, sw, pt, pl;
    int is_i8;
    int32_t lo, hi, empty; /* clamp range; the value of an empty window */
    const uint8_t *x;
    uint8_t *y;
} ks__q8_pool;

/* Fills g for a max POOL2D node whose input and output are U8/I8 with equal per-tensor
 * quantization and whose activation is none/relu/relu6/relu_n1_to_1; -1 for any other node (the
 * reference takes it). */
int ks__q8_pool_describe(const ks__kernel_ctx *ctx, ks__q8_pool *g);

#endif /* KESTREL_CPU_Q8_POOL_H */
