/* Session precision (ks_session_desc.precision): running a quantized model's int8 layers in fp32.
 * Not a published API.
 *
 * A layer is "demotable" when it is an int8 node (per-tensor quantized U8/I8 activations in and
 * out) of an op whose float form computes the same function: conv (also with a fused residual),
 * fully connected, pooling, elementwise, lookup-table activations and data movement. A conv with
 * a fused output table (act TABLE) is, when the file records the function the table holds
 * (ops.inc CONV2D ip 13, written by ks-quant since the eighth session; older files: not).
 *
 * ks__prec_build writes a copy of a graph in which the chosen demotable nodes run in fp32:
 * their quantized constants (weights, biases, PRELU slopes, constant operands) are dequantized
 * into F32 constants owned by the copy, their activation outputs become F32, QUANTIZE /
 * DEQUANTIZE nodes are added where an int8 node and an fp32 node meet, and a file QUANTIZE or
 * DEQUANTIZE whose both sides are fp32 becomes a free view (RESHAPE copying every dim). Tensor
 * ids, names and graph inputs/outputs stay as in the source; new tensors are appended. The copy
 * borrows every constant it keeps from the source graph, which must outlive it.
 *
 * ks__prec_plan chooses the nodes for KS_PRECISION_FASTEST: it times the model as stored and
 * with every demotable node in fp32 (inner sessions with the caller's threads and tuning, the
 * profiler's per-node medians), then labels each node int8 or fp32 by a minimum s-t cut: a node's
 * label costs its measured time in that precision, and an edge whose two ends differ costs the
 * QUANTIZE or DEQUANTIZE pass it needs (elements x the measured per-element rate). The cut is
 * the exact minimum of that model of the run time.
 */
#ifndef KESTREL_PRECISION_H
#define KESTREL_PRECISION_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "stored", "f32", "fastest", "fp16-storage" or "fp16" (the spelling of --precision and of the
 * infer node's option) ->
 * *out. Returns false, leaving *out alone, for anything else (NULL too). */
bool ks__precision_parse(const char *s, ks_precision *out);

/* A per-tensor quantized U8/I8 activation (not a constant). */
bool ks__prec_is_qact(const ks__tensor *t);
/* Whether node i of g can run in fp32 (see above). */
bool ks__prec_demotable(const ks__graph *g, uint32_t i);

/* Number of demotable nodes in g. */
uint32_t ks__prec_count_demotable(const ks__graph *g);

/* Builds *out (initialised here with g's allocator) from g with node i in fp32 where
 * fp32[i] != 0 (ignored for nodes that are not demotable). src_node_out, if not NULL, receives
 * an array (allocated with g's allocator, out->num_nodes entries) giving for each node of out
 * the node of g it came from, or -1 for an added conversion. On failure *out is freed and a
 * message is in err. */
ks_status ks__prec_build(const ks__graph *g, const uint8_t *fp32, ks__graph *out,
                         int32_t **src_node_out, char *err, size_t err_cap);

/* KS_PRECISION_FP16 on a CPU with fp16 arithmetic (precision_f16.c): builds *out (initialised
 * here with g's allocator), a copy of g whose float activations between fp16-capable nodes are
 * F16. fp16-capable: float CONV2D with groups 1 or depthwise (not act TABLE), POOL2D, ADD and MUL
 * of two activations of one known shape; data movement (RESHAPE, SQUEEZE, UNSQUEEZE, TRANSPOSE,
 * SPLIT, SLICE, PAD without a value tensor, nearest RESIZE, CONCAT, DEPTH_TO_SPACE,
 * SPACE_TO_DEPTH) follows its first input's producer. CAST nodes ("precision:f16" /
 * "precision:f32") convert where an fp16 node and another meet, one per tensor and direction; an
 * fp16 node that writes a graph output writes "<name>:f16" and a CAST writes the output, so the
 * graph's inputs and outputs keep their dtypes and names. Tensor ids of g keep their meaning; new
 * tensors are appended; constants are borrowed from g, which must outlive the copy.
 * *num_f16_out: nodes in fp16 (0: the caller may use g itself). On failure *out is freed and a
 * message is in err. */
ks_status ks__prec_build_f16(const ks__graph *g, ks__graph *out, uint32_t *num_f16_out, char *err,
                             size_t err_cap);

/* Minimum s-t cut labelling of n binary variables (0 = int8, 1 = fp32). cost0[i] / cost1[i]:
 * the cost of label 0 / 1 (use KS__PREC_INF to forbid a label). For each of the m pairs,
 * (a[k], b[k]) costs ab[k] when a is 0 and b is 1, and ba[k] when a is 1 and b is 0.
 * Writes labels[n]. Returns the minimum total cost, or a negative value when out of memory. */
#define KS__PREC_INF 1e30
double ks__prec_mincut(uint32_t n, const double *cost0, const double *cost1, uint32_t m,
                       const uint32_t *a, const uint32_t *b, const double *ab, const double *ba,
                       uint8_t *labels, const ks_allocator *alloc);

/* ks__prec_plan (the timing): engine/runtime/runtime.h. */

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_PRECISION_H */
