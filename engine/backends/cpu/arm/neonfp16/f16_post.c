/* The fp16 kernels' pass over their outputs for the activations their stores do not fuse
 * (f16_post.h), and those activations by table: an F16 value has 65536 encodings, so a
 * parameterless activation of fp16 data is exactly a 65536-entry table of its correctly rounded
 * results, built once per process from the reference function (ks__act_apply, in float) the first
 * time a session needs it: 128 KB of heap per activation, never freed (reachable from the static
 * pointers). A lookup is two loads and a store per value, about half the instructions of SiLU's
 * widen, vector exp, divide and narrow, and its results are the reference's rounded once. */
#include <stdlib.h>

#include "../../cpu_kernel.h"
#include "base/once.h"
#include "f16_post.h"

static uint16_t *g_tab[4];
static ks__once_flag g_once[4] = {KS__ONCE_INIT, KS__ONCE_INIT, KS__ONCE_INIT, KS__ONCE_INIT};
static const int32_t k_acts[4] = {KS_ACT_SILU, KS_ACT_HARD_SWISH, KS_ACT_SIGMOID, KS_ACT_TANH};

static void build(int k) {
    uint16_t *t = malloc(65536 * sizeof(uint16_t));
    if (!t) return; /* the callers fall back to computing */
    for (uint32_t i = 0; i < 65536; i++)
        t[i] = ks__f32_to_f16(ks__act_apply(ks__f16_to_f32((uint16_t)i), k_acts[k], 0.0f));
    g_tab[k] = t;
}

static void build0(void) {
    build(0);
}
static void build1(void) {
    build(1);
}
static void build2(void) {
    build(2);
}
static void build3(void) {
    build(3);
}

const uint16_t *ks__f16_act_table(int32_t act) {
    static void (*const fns[4])(void) = {build0, build1, build2, build3};
    for (int k = 0; k < 4; k++)
        if (k_acts[k] == act) {
            ks__once(&g_once[k], fns[k]);
            return g_tab[k];
        }
    return NULL;
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
    const f16_post_job *p = (const f16_post_job *)arg;
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

void ks__f16_post_run(ks__pool *pool, const ks__arm_act *act, const float *slope, size_t channels,
                      float16_t *y, size_t n) {
    if (!f16_post_needed(act, slope)) return;
    const int32_t one = act->post != KS_ACT_NONE ? act->post : act->scalar_act;
    const bool single = act->post == KS_ACT_NONE || act->scalar_act == KS_ACT_NONE;
    f16_post_job p = {*act,  slope || !single ? NULL : ks__f16_act_table(one),
                      slope, channels ? channels : 1,
                      y,     n};
    ks__parallel_for(pool, (n + F16_POST_CHUNK - 1) / F16_POST_CHUNK, 1, f16_post_range, &p);
}
