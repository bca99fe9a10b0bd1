/* Op-pruned builds (docs/size.md) in the CPU backend: the reference-kernel registration of the
 * ops this build carries (KS__OP_ON and KS__IF_OP come from the core's src/op_enabled.h).
 * Not a published API. */
#ifndef KESTREL_CPU_OP_ENABLED_H
#define KESTREL_CPU_OP_ENABLED_H

#include "src/op_enabled.h" /* KS__OP_ON, KS__IF_OP */

/* Registers a reference kernel (plan_fn may be NULL) in table t when OP is enabled. */
#define KS__REF_REG(t, OP, plan_fn, run_fn)                                                        \
    do {                                                                                           \
        if (KS__OP_ON(OP)) {                                                                       \
            (t)->k[KS_OP_##OP].plan = (plan_fn);                                                   \
            (t)->k[KS_OP_##OP].run = (run_fn);                                                     \
        }                                                                                          \
    } while (0)

#endif /* KESTREL_CPU_OP_ENABLED_H */
