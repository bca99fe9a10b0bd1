/* The activations that fp16 kernels do not fuse into their stores (LEAKY_RELU, HARD_SWISH, SILU,
 * PRELU and the scalar ones of ks__arm_act), applied afterwards in one pass over the node's F16
 * output: widened to fp32, the same vector functions as the fp32 NEON kernels, narrowed again.
 * SILU, HARD_SWISH, SIGMOID and TANH go through a 65536-entry table of their correctly rounded
 * fp16 results (f16_post.c); the others loop per activation, so the functions' constants
 * stay in registers (inside a kernel's store, one call per 8 values, gcc 12 reloaded SiLU's from
 * memory for every vector).
 * Include only from fp16 sources (-march=armv8.2-a+fp16). */
#ifndef KESTREL_F16_POST_H
#define KESTREL_F16_POST_H

#include <arm_neon.h>
#include <string.h>

#include "../neon/neon_util.h"

/* The 65536-entry table of act (SILU, HARD_SWISH, SIGMOID, TANH) on fp16 values, built once per
 * process (f16_post.c); NULL for other activations or when out of memory. */
const uint16_t *ks__f16_act_table(int32_t act);

typedef struct f16_post_job {
    ks__arm_act act;       /* lo / hi already applied by the kernel */
    const uint16_t *table; /* the activation by table, if any */
    const float *slope;    /* PRELU: one per channel */
    size_t channels;
    float16_t *y;
    size_t n; /* elements */
} f16_post_job;

/* Whether the kernel leaves anything to ks__f16_post_run: with only a clamp (NONE, RELU, RELU6,
 * RELU_N1_TO_1) it does all in its store. */
static inline bool f16_post_needed(const ks__arm_act *act, const float *slope) {
    return slope || act->post != KS_ACT_NONE || act->scalar_act != KS_ACT_NONE;
}

/* At plan time: builds the table ks__f16_post_run will read for act, if it has one, so that run
 * never allocates (the first use of a table mallocs its 128 KB). */
static inline void f16_post_plan(int32_t act) {
    (void)ks__f16_act_table(act);
}

/* Applies what the kernel left (see f16_post_needed) to the n values of y (channels innermost),
 * on the pool (f16_post.c). */
void ks__f16_post_run(ks__pool *pool, const ks__arm_act *act, const float *slope, size_t channels,
                      float16_t *y, size_t n);

#endif /* KESTREL_F16_POST_H */
