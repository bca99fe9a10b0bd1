/* Op-pruned builds (docs/size.md): which IR ops this build carries. Not a published API.
 *
 * A normal build carries every op. A build configured with KS_OPS or KS_OPS_FROM_MODELS
 * (cmake/op_pruning.cmake) defines KS_OPS_PRUNED and generates ks_ops_enabled.h with one
 * `#define KS_OP_ENABLED_<OP> 0|1` per op of ops.inc and KS_OPS_ENABLED_LIST (the names, for
 * messages). Code that is per op tests KS__OP_ON(OP) with a constant, so a left-out op's shape
 * inference (shape.c) and kernels (the CPU backend's op_enabled.h) are never referenced and the
 * compiler (and the linker, with --gc-sections) drops them. Works in C expressions and in #if.
 */
#ifndef KESTREL_OP_ENABLED_H
#define KESTREL_OP_ENABLED_H

#if !defined(KS__OP_ON) /* a unit test may define its own set (test_op_pruned.c) */
#ifdef KS_OPS_PRUNED
#include "ks_ops_enabled.h"
#define KS__OP_ON(OP) KS_OP_ENABLED_##OP
#else
#define KS__OP_ON(OP) 1
#endif
#endif

/* KS__IF_OP(OP, X) expands to X when OP is in this build, else to nothing (needs KS__OP_ON to
 * expand to a literal 0 or 1). Variadic because X may contain commas. */
#define KS__IF_OP(OP, ...) KS__IF_OP_(KS__OP_ON(OP), __VA_ARGS__)
#define KS__IF_OP_(on, ...) KS__IF_OP__(on, __VA_ARGS__)
#define KS__IF_OP__(on, ...) KS__IF_OP_##on(__VA_ARGS__)
#define KS__IF_OP_1(...) __VA_ARGS__
#define KS__IF_OP_0(...)

/* KS__OP_FN(OP, fn): fn when OP is in this build, else NULL (for constant tables). */
#define KS__OP_FN(OP, fn) KS__OP_FN_(KS__OP_ON(OP), fn)
#define KS__OP_FN_(on, fn) KS__OP_FN__(on, fn)
#define KS__OP_FN__(on, fn) KS__OP_FN_##on(fn)
#define KS__OP_FN_1(fn) fn
#define KS__OP_FN_0(fn) NULL

#endif /* KESTREL_OP_ENABLED_H */
