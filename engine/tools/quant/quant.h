/* Post-training int8 quantization for ks-quant (tool code, not part of the core library).
 *
 * Flow (ks-quant.c drives it):
 *     ksq_calib c;  ksq_calib_init(&c, num_tensors);
 *     for every image: run the fp32 session with KS_SESSION_KEEP_ALL_TENSORS, ksq_calib_observe()
 *     (pass 1: min/max; pass 2, for percentile and KL only: |x| histograms);
 *     ksq_calib_ranges() -> per-tensor [lo, hi] -> ksq_qparams_from_range();
 *     ksq_plan_decide() picks int8 or fp32 per node; ksq_build() writes the rewritten graph.
 *
 * Quantization scheme (the one the engine's int8 kernels run, TFLite int8 semantics): activations
 * I8 per tensor, asymmetric (zero point in [-128, 127]); conv/FC weights I8 per output channel
 * (axis 0), symmetric in [-127, 127], zero point 0; biases I32 with scale in_scale * w_scale[c].
 */
#ifndef KESTREL_TOOLS_QUANT_H
#define KESTREL_TOOLS_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir.h"

#define KSQ_HIST_BINS 2048

typedef enum ksq_method {
    KSQ_METHOD_MINMAX = 0,
    KSQ_METHOD_PERCENTILE = 1,
    KSQ_METHOD_KL = 2,
    KSQ_METHOD_MSE = 3, /* clip threshold with the least expected squared error */
} ksq_method;

/* Activation statistics of one tensor over the calibration set. */
typedef struct ksq_stat {
    bool seen;
    float min, max;
    uint64_t *hist; /* KSQ_HIST_BINS bins of |x| over [0, max(|min|, |max|)] (pass 2) */
} ksq_stat;

typedef struct ksq_calib {
    uint32_t num_tensors;
    ksq_stat *stats;
} ksq_calib;

ks_status ksq_calib_init(ksq_calib *c, uint32_t num_tensors);
void ksq_calib_free(ksq_calib *c);
/* Folds the values of tensor `id` into its statistics: pass 1 min/max, pass 2 histogram. */
ks_status ksq_calib_observe(ksq_calib *c, uint32_t id, const float *x, size_t n, int pass);
/* Clipping range [lo, hi] of tensor `id` for the method (percentile: `percentile` in (50, 100]).
 * Returns false when the tensor was never seen. The range always contains 0. */
bool ksq_calib_range(const ksq_calib *c, uint32_t id, ksq_method method, double percentile,
                     float *lo, float *hi);

/* Asymmetric I8 parameters covering [lo, hi] (lo <= 0 <= hi). */
void ksq_qparams_from_range(float lo, float hi, float *scale, int32_t *zero_point);

/* Per-node precision decision. */
typedef enum ksq_mode {
    KSQ_FP32 = 0,
    KSQ_INT8 = 1,
} ksq_mode;

/* Why a node stays fp32 (for the report). */
typedef enum ksq_reason {
    KSQ_WHY_INT8 = 0,
    KSQ_WHY_NO_INT8_KERNEL, /* op or params (act, residual, groups, broadcast) not supported */
    KSQ_WHY_SKIPPED,        /* --skip */
    KSQ_WHY_COSINE,         /* automatic fallback: cosine below --min-cosine */
    KSQ_WHY_SLOWER,         /* measured slower in int8 than fp32 */
    KSQ_WHY_NOT_CALIBRATED, /* an input or output never produced a value */
    KSQ_WHY_INPUT_NOT_INT8, /* data-movement op whose input is fp32 anyway */
    KSQ_WHY_OUTPUT,         /* automatic fallback: a model output below --min-output-cosine */
} ksq_reason;

typedef struct ksq_plan {
    uint32_t num_nodes, num_tensors;
    uint8_t *mode;      /* per node: ksq_mode */
    uint8_t *reason;    /* per node: ksq_reason */
    uint8_t *force_f32; /* per node: set by --skip / fallback (input to decide) */
    uint8_t *force_why; /* per node: the reason to report for force_f32 */
    bool *has_q;        /* per tensor: calibrated */
    float *scale;       /* per tensor: calibrated I8 params */
    int32_t *zp;
    int32_t *rank;       /* per tensor: runtime shape seen in calibration (rank -1: unknown) */
    int64_t *dims;       /* num_tensors * KS_MAX_RANK */
    const int32_t *pair; /* per node, from ksq_unfuse_residual (NULL: none) */
} ksq_plan;

ks_status ksq_plan_init(ksq_plan *p, const ks__graph *g);
void ksq_plan_free(ksq_plan *p);

/* Chooses int8 or fp32 per node (respecting force_f32). */
void ksq_plan_decide(ksq_plan *p, const ks__graph *g);

/* True for ops that carry arithmetic worth quantizing (conv, FC, add, sub). */
bool ksq_is_compute_op(uint32_t op);

/* Splits every CONV2D with a residual input, y = act(conv(x) + bias + residual), into CONV2D
 * (no activation, output "<y>/conv") followed by ADD (the activation, output y), so both halves
 * can run on int8 kernels; calibration then sees the intermediate tensor. Constants are borrowed
 * from src, which must outlive dst. pair_out (malloc'ed, per dst node): the index of the other
 * half for split nodes, -1 elsewhere. err must start empty. */
ks_status ksq_unfuse_residual(const ks__graph *src, ks__graph *dst, int32_t **pair_out, char *err,
                              size_t err_cap);

/* Result of a rewrite: for each source tensor, its ids in the new graph (-1: absent). */
typedef struct ksq_map {
    int32_t *f32_id;
    int32_t *i8_id;
    /* per new node: the source node it was emitted for (QUANTIZE/DEQUANTIZE nodes: the consumer
     * that needed them; -1 for the final DEQUANTIZEs of graph outputs) */
    int32_t *node_src;
    uint32_t num_dst_nodes;
} ksq_map;

void ksq_map_free(ksq_map *m);

/* Builds the mixed-precision graph into dst (freshly ks__graph_init'ed). Inserted QUANTIZE /
 * DEQUANTIZE nodes are named "quantize:<tensor>" / "dequantize:<tensor>"; graph outputs keep
 * their names and stay F32.
 * With shadow_id (per source node) it builds instead the all-fp32 graph plus, for every planned
 * int8 compute layer, an int8 copy fed by QUANTIZE of the exact fp32 inputs, whose output
 * ("<y>/shadow") lands in shadow_id[node] (-1 elsewhere): one run then measures every layer's
 * own int8 error, free of the error accumulated upstream. */
ks_status ksq_build(const ks__graph *src, const ksq_plan *plan, ks__graph *dst, ksq_map *map,
                    int32_t *shadow_id, char *err, size_t err_cap);

#endif /* KESTREL_TOOLS_QUANT_H */
