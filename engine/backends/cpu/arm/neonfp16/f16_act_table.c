/* fp16 activations by table (f16_post.h): an F16 value has 65536 encodings, so a parameterless
 * activation of fp16 data is exactly a 65536-entry table of its correctly rounded results, built
 * once per process from the reference function (ks__act_apply, in float) the first time a
 * session needs it: 128 KB of heap per activation, never freed (reachable from the static
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
