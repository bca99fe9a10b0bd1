/* Op-pruned builds (docs/size.md): which IR ops this build registers kernels for.
 * Not a published API.
 *
 * A normal build registers every op. A build configured with KS_OPS or KS_OPS_FROM_MODELS
 * (cmake/op_pruning.cmake) defines KS_OPS_PRUNED and generates ks_ops_enabled.h with one
 * `#define KS_OP_ENABLED_<OP> 0|1` per op of ops.inc. Registration sites test KS__OP_ON(OP) with
 * a constant, so a disabled op's kernels are never referenced and the compiler (and the linker,
 * with --gc-sections) drops them. Works both in C expressions and in #if.
 */
#ifndef KESTREL_CPU_OP_ENABLED_H
#define KESTREL_CPU_OP_ENABLED_H

#if !defined(KS__OP_ON) /* a unit test may define its own set (test_op_pruned.c) */
#ifdef KS_OPS_PRUNED
#include "ks_ops_enabled.h"
#define KS__OP_ON(OP) KS_OP_ENABLED_##OP
#else
#define KS__OP_ON(OP) 1
#endif
#endif

/* KS__IF_OP(OP, X) expands to X when OP is registered in this build, else to nothing. Used in
 * the fast-variant lists (impls_*.inc): KS__IF_OP(ADD, KS_IMPL(ks_f32_vadd__avx2)). */
/* Variadic because the expansion of X may contain commas (dispatch.c: `&sym,`). */
#define KS__IF_OP(OP, ...) KS__IF_OP_(KS__OP_ON(OP), __VA_ARGS__)
#define KS__IF_OP_(on, ...) KS__IF_OP__(on, __VA_ARGS__)
#define KS__IF_OP__(on, ...) KS__IF_OP_##on(__VA_ARGS__)
#define KS__IF_OP_1(...) __VA_ARGS__
#define KS__IF_OP_0(...)

/* Registers a reference kernel (plan_fn may be NULL) in table t when OP is enabled. */
#define KS__REF_REG(t, OP, plan_fn, run_fn)                                                        \
    do {                                                                                           \
        if (KS__OP_ON(OP)) {                                                                       \
            (t)->k[KS_OP_##OP].plan = (plan_fn);                                                   \
            (t)->k[KS_OP_##OP].run = (run_fn);                                                     \
        }                                                                                          \
    } while (0)

#endif /* KESTREL_CPU_OP_ENABLED_H */
