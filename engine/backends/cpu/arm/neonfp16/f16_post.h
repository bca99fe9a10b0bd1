/* The activations that fp16 kernels do not fuse into their stores (LEAKY_RELU, HARD_SWISH, SILU,
 * PRELU and the scalar ones of ks__arm_act), applied afterwards in one pass over the node's F16
 * output: widened to fp32, the same vector functions as the fp32 NEON kernels, narrowed again.
 * SILU, HARD_SWISH, SIGMOID and TANH go through a 65536-entry table of their correctly rounded
 * fp16 results (f16_act_table.c); the others loop per activation, so the functions' constants
 * stay in registers (inside a kernel's store, one call per 8 values, gcc 12 reloaded SiLU's from
 * memory for every vector).
 * Include only from fp16 sources (-march=armv8.2-a+fp16). */
#ifndef KESTREL_F16_POST_H
#define KESTREL_F16_POST_H

#include <arm_neon.h>
#include <string.h>

#include "../neon/neon_util.h"

/* The 65536-entry table of act (SILU, HARD_SWISH, SIGMOID, TANH) on fp16 values, built once per
 * process (f16_act_table.c); NULL for other activations or when out of memory. */
const uint16_t *ks__f16_act_table(int32_t act);

typedef struct f16_post {
    ks__arm_act act;       /* lo / hi already applied by the kernel */
    const uint16_t *table; /* the activation by table, if any */
    const float *slope;    /* PRELU: one per channel */
    size_t channels;
    float16_t *y;
    size_t n; /* elements */
} f16_post;

/* Whether the kernel leaves anything to f16_post_run: with only a clamp (NONE, RELU, RELU6,
 * RELU_N1_TO_1) it does all in its store. */
static inline bool f16_post_needed(const ks__arm_act *act, const float *slope) {
    return slope || act->post != KS_ACT_NONE || act->scalar_act != KS_ACT_NONE;
}

#define F16_POST_CHUNK 2048 /* elements per work item, a multiple of 8 */

#define F16_POST_LOOP(F)                                                                           \
    for (; i + 8 <= e; i += 8) {                                                                   \
        float16x8_t h = vld1q_f16(y + i);                                                          \
        float32x4_t v0 = vcvt_f32_f16(vget_low_f16(h)), v1 = vcvt_high_f32_f16(h);                 \
        v0 = F(v0);                                                                                \
        v1 = F(v1);                                                                                \
        vst1q_f16(y + i, vcombine_f16(vcvt_f16_f32(v0), vcvt_f16_f32(v1)));                        \
    }

static void f16_post_range(void *arg, size_t begin, size_t end, uint32_t thread) {
    (void)thread;
    const f16_post *p = (const f16_post *)arg;
    float16_t *y = p->y;
    size_t i = begin * F16_POST_CHUNK,
           e = end * F16_POST_CHUNK < p->n ? end * F16_POST_CHUNK : p->n;
    const size_t i0 = i;
    if (p->table) {
        uint16_t *u = (uint16_t *)(void *)y;
        const uint16_t *t = p->table;
        for (; i + 4 <= e; i += 4) {
            uint16_t a = u[i], b = u[i + 1], c = u[i + 2], d = u[i + 3];
            u[i] = t[a], u[i + 1] = t[b], u[i + 2] = t[c], u[i + 3] = t[d];
        }
        for (; i < e; i++)
            u[i] = t[u[i]];
        return;
    }
    const float32x4_t zero = vdupq_n_f32(0.0f), alpha = vdupq_n_f32(p->act.alpha);
    if (p->slope) { /* x >= 0 ? x : slope[c] * x; 8 channels at a time inside a pixel */
        const size_t ch = p->channels;
        size_t c = i % ch; /* one division per work item, then stepped */
        while (i < e) {
            if (c + 8 <= ch && i + 8 <= e) {
                float16x8_t h = vld1q_f16(y + i);
                float32x4_t v0 = vcvt_f32_f16(vget_low_f16(h)), v1 = vcvt_high_f32_f16(h);
                v0 = vbslq_f32(vcgeq_f32(v0, zero), v0, vmulq_f32(vld1q_f32(p->slope + c), v0));
                v1 = vbslq_f32(vcgeq_f32(v1, zero), v1, vmulq_f32(vld1q_f32(p->slope + c + 4), v1));
                vst1q_f16(y + i, vcombine_f16(vcvt_f16_f32(v0), vcvt_f16_f32(v1)));
                i += 8, c += 8;
            } else {
                float x = (float)y[i];
                y[i] = (float16_t)(x >= 0.0f ? x : p->slope[c] * x);
                i++, c++;
            }
            if (c == ch) c = 0;
        }
        return;
    }
#define LEAKY(x) vbslq_f32(vcgeq_f32(x, zero), x, vmulq_f32(x, alpha))
    if (p->act.post == KS_ACT_SILU) {
        F16_POST_LOOP(neon_silu)
    } else if (p->act.post == KS_ACT_HARD_SWISH) {
        F16_POST_LOOP(neon_hard_swish)
    } else if (p->act.post == KS_ACT_LEAKY_RELU) {
        F16_POST_LOOP(LEAKY)
    }
#undef LEAKY
    for (; i < e; i++) { /* the tail */
        float x = (float)y[i];
        if (p->act.post != KS_ACT_NONE) x = ks__act_apply(x, p->act.post, p->act.alpha);
        y[i] = (float16_t)x;
    }
    if (p->act.scalar_act != KS_ACT_NONE)
        for (size_t k = i0; k < e; k++) {
            float x = (float)y[k];
            ks__arm_act_scalar(&x, 1, &p->act);
            y[k] = (float16_t)x;
        }
}
#undef F16_POST_LOOP

/* Applies what the kernel left (see f16_post_needed) to the n values of y (channels innermost). */
static inline void f16_post_run(ks__pool *pool, const ks__arm_act *act, const float *slope,
                                size_t channels, float16_t *y, size_t n) {
    if (!f16_post_needed(act, slope)) return;
    const int32_t one = act->post != KS_ACT_NONE ? act->post : act->scalar_act;
    const bool single = act->post == KS_ACT_NONE || act->scalar_act == KS_ACT_NONE;
    f16_post p = {*act,  slope || !single ? NULL : ks__f16_act_table(one),
                  slope, channels ? channels : 1,
                  y,     n};
    ks__parallel_for(pool, (n + F16_POST_CHUNK - 1) / F16_POST_CHUNK, 1, f16_post_range, &p);
}

#endif /* KESTREL_F16_POST_H */
