/* Post-training int8 quantization: the algorithms (not part of the core library). The pipeline
 * that drives them from a folder of images, ks__quant_run, is ptq.h (ptq.c); ks-quant is its
 * command line.
 *
 * Flow (ptq.c drives it):
 *     ks__quant_calib c;  ks__quant_calib_init(&c, num_tensors);
 *     for every image: run the fp32 session with KS_SESSION_KEEP_ALL_TENSORS,
 * ks__quant_calib_observe() (pass 1: min/max; pass 2, for percentile and KL only: |x| histograms);
 *     ks__quant_calib_ranges() -> per-tensor [lo, hi] -> ks__quant_qparams_from_range();
 *     ks__quant_plan_decide() picks int8 or fp32 per node; ks__quant_build() writes the rewritten
 * graph.
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

#define KS__QUANT_HIST_BINS 2048

typedef enum ks__quant_method {
    KS__QUANT_METHOD_MINMAX = 0,
    KS__QUANT_METHOD_PERCENTILE = 1,
    KS__QUANT_METHOD_KL = 2,
    KS__QUANT_METHOD_MSE = 3, /* clip threshold with the least expected squared error */
} ks__quant_method;

/* Activation statistics of one tensor over the calibration set. */
typedef struct ks__quant_stat {
    bool seen;
    float min, max;
    uint64_t *hist; /* KS__QUANT_HIST_BINS bins of |x| over [0, max(|min|, |max|)] (pass 2) */
} ks__quant_stat;

/* Per-channel statistics (channels = last axis, NHWC) of one tensor, for equalization and bias
 * correction (pass 1 only). */
typedef struct ks__quant_chan {
    uint32_t channels; /* 0: not collected */
    uint64_t count;    /* values per channel seen */
    float *min, *max;
    double *sum;
} ks__quant_chan;

typedef struct ks__quant_calib {
    uint32_t num_tensors;
    ks__quant_stat *stats;
    ks__quant_chan *chan; /* per tensor */
} ks__quant_calib;

ks_status ks__quant_calib_init(ks__quant_calib *c, uint32_t num_tensors);
void ks__quant_calib_free(ks__quant_calib *c);
/* Folds the values of tensor `id` into its statistics: pass 1 min/max, pass 2 histogram. */
ks_status ks__quant_calib_observe(ks__quant_calib *c, uint32_t id, const float *x, size_t n,
                                  int pass);
/* Folds x (n values, `channels` innermost) into the per-channel statistics of tensor `id`.
 * A tensor whose channel count changes between calls loses its channel statistics. */
ks_status ks__quant_calib_observe_channels(ks__quant_calib *c, uint32_t id, const float *x,
                                           size_t n, uint32_t channels);
/* Clipping range [lo, hi] of tensor `id` for the method (percentile: `percentile` in (50, 100]).
 * Returns false when the tensor was never seen. The range always contains 0. */
bool ks__quant_calib_range(const ks__quant_calib *c, uint32_t id, ks__quant_method method,
                           double percentile, float *lo, float *hi);

/* Asymmetric I8 parameters covering [lo, hi] (lo <= 0 <= hi). */
void ks__quant_qparams_from_range(float lo, float hi, float *scale, int32_t *zero_point);

/* Per-node precision decision. */
typedef enum ks__quant_mode {
    KS__QUANT_FP32 = 0,
    KS__QUANT_INT8 = 1,
} ks__quant_mode;

/* Why a node stays fp32 (for the report). */
typedef enum ks__quant_reason {
    KS__QUANT_WHY_INT8 = 0,
    KS__QUANT_WHY_NO_INT8_KERNEL, /* op or params (act, residual, groups, broadcast) not supported
                                   */
    KS__QUANT_WHY_SKIPPED,        /* --skip */
    KS__QUANT_WHY_COSINE,         /* automatic fallback: cosine below --min-cosine */
    KS__QUANT_WHY_SLOWER,         /* measured slower in int8 than fp32 */
    KS__QUANT_WHY_NOT_CALIBRATED, /* an input or output never produced a value */
    KS__QUANT_WHY_INPUT_NOT_INT8, /* data-movement op whose input is fp32 anyway */
    KS__QUANT_WHY_OUTPUT,         /* automatic fallback: a model output below --min-output-cosine */
    KS__QUANT_WHY_OUTPUT_LAYER,   /* computes a model output (kept fp32 unless --int8-output-layers)
                                   */
    KS__QUANT_WHY_WEIGHTS_ONLY,   /* --weights-only: every layer computes in fp32 */
} ks__quant_reason;

typedef struct ks__quant_plan {
    uint32_t num_nodes, num_tensors;
    uint8_t *mode;      /* per node: ks__quant_mode */
    uint8_t *reason;    /* per node: ks__quant_reason */
    uint8_t *force_f32; /* per node: set by --skip / fallback (input to decide) */
    uint8_t *force_why; /* per node: the reason to report for force_f32 */
    bool *has_q;        /* per tensor: calibrated */
    float *scale;       /* per tensor: calibrated I8 params */
    int32_t *zp;
    int32_t *rank;       /* per tensor: runtime shape seen in calibration (rank -1: unknown) */
    int64_t *dims;       /* num_tensors * KS_MAX_RANK */
    const int32_t *pair; /* per node, from ks__quant_unfuse_residual (NULL: none) */
    const struct ks__quant_gptq
        *gptq; /* error-compensated weights (gptq.c; NULL: round to nearest) */
    /* per source tensor (NULL entries: original), the weights an fp32 layer computes with:
     * ks-quant --fallback-weights int8|fp16 stores the weights of the layers left in fp32 that
     * way, so every check sees what the file will hold (NULL: originals everywhere) */
    float *const *f32_weights;
} ks__quant_plan;

ks_status ks__quant_plan_init(ks__quant_plan *p, const ks__graph *g);
void ks__quant_plan_free(ks__quant_plan *p);

/* Chooses int8 or fp32 per node (respecting force_f32). */
void ks__quant_plan_decide(ks__quant_plan *p, const ks__graph *g);

/* True for ops that carry arithmetic worth quantizing (conv, FC, add, sub). */
bool ks__quant_is_compute_op(uint32_t op);

/* Splits every CONV2D with a residual input, y = act(conv(x) + bias + residual), into CONV2D
 * (no activation, output "<y>/conv") followed by ADD (the activation, output y), so both halves
 * can run on int8 kernels; calibration then sees the intermediate tensor. Constants are borrowed
 * from src, which must outlive dst. pair_out (malloc'ed, per dst node): the index of the other
 * half for split nodes, -1 elsewhere. err must start empty. */
ks_status ks__quant_unfuse_residual(const ks__graph *src, ks__graph *dst, int32_t **pair_out,
                                    char *err, size_t err_cap);

/* Result of a rewrite: for each source tensor, its ids in the new graph (-1: absent). */
typedef struct ks__quant_map {
    int32_t *f32_id;
    int32_t *i8_id;
    /* per new node: the source node it was emitted for (QUANTIZE/DEQUANTIZE nodes: the consumer
     * that needed them; -1 for the final DEQUANTIZEs of graph outputs) */
    int32_t *node_src;
    uint32_t num_dst_nodes;
} ks__quant_map;

void ks__quant_map_free(ks__quant_map *m);

/* Builds the mixed-precision graph into dst (freshly ks__graph_init'ed). Inserted QUANTIZE /
 * DEQUANTIZE nodes are named "quantize:<tensor>" / "dequantize:<tensor>"; graph outputs keep
 * their names and stay F32.
 * With shadow_id (per source node) it builds instead the all-fp32 graph plus, for every planned
 * int8 compute layer, an int8 copy fed by QUANTIZE of the exact fp32 inputs, whose output
 * ("<y>/shadow") lands in shadow_id[node] (-1 elsewhere): one run then measures every layer's
 * own int8 error, free of the error accumulated upstream. */
ks_status ks__quant_build(const ks__graph *src, const ks__quant_plan *plan, ks__graph *dst,
                          ks__quant_map *map, int32_t *shadow_id, char *err, size_t err_cap);

/* ---- data-free accuracy passes (equalize.c) -----------------------------------------------
 * Both work on the split graph (after ks__quant_unfuse_residual) and replace the constants they
 * change by graph-owned copies (borrowed ones are never written). */

typedef struct ks__quant_equalize_info {
    uint32_t num_tensors;   /* activation tensors rescaled (a PRELU chain counts its tensors) */
    uint32_t num_consumers; /* consumer convs whose input channels were rescaled */
    double max_factor;      /* largest per-channel factor applied (or its inverse) */
} ks__quant_equalize_info;

/* Cross-layer equalization (Nagel et al. 2019) driven by calibration ranges: for every
 * activation tensor T = act(conv1(x)) (act NONE or RELU, optionally followed by one per-channel
 * PRELU) read only as the data input of CONV2Ds, channel c of T is multiplied by d_c (conv1's
 * output row c and bias c by d_c, each consumer's input channel c by 1/d_c). Exact in fp32 (both
 * acts are positively homogeneous, zero padding stays zero). d_c balances T's per-tensor int8
 * range against the consumers' per-output-channel weight ranges: sqrt(r_c / a_c), a_c the
 * channel's share of T's |range| and r_c the share of input channel c in the consumers' weight
 * rows; 1 / a_c (a flat T) when every consumer is depthwise (its weights are per channel).
 * Needs channel statistics (ks__quant_calib_observe_channels) of the current graph. */
ks_status ks__quant_equalize(ks__graph *g, const ks__quant_calib *c, ks__quant_equalize_info *info,
                             char *err, size_t err_cap);

/* Bias correction: for each CONV2D / FULLY_CONNECTED with a constant bias whose input has channel
 * statistics, a corrected bias. analytic: the one that compensates the expected error of its
 * int8 weights, b - sum_k (Wq - W)[o, k] * E[x_in(o, k)] * (share of output positions where tap k
 * reads inside the input); otherwise fixed starts equal to the bias and the caller adjusts it
 * (ks-quant's empirical correction measures the int8 model's mean error per channel). The
 * corrected bias is used only while the layer is int8: ks__quant_biascorr_apply writes, per node,
 * the corrected or the original values into the graph's bias (call it after every
 * ks__quant_plan_decide). */
typedef struct ks__quant_biascorr {
    uint32_t num_nodes, num_corrected;
    int32_t *bias_id; /* per node: -1 when not corrected */
    float **orig, **fixed;
    /* per node, set by the caller (NULL: orig): the bias of the layer while it is fp32 with
     * rounded stored weights (ks-quant --fallback-weights int8: orig minus GPTQ's mean error) */
    float **stored;
    double max_rel_change; /* largest |correction| / max |bias| of its layer */
} ks__quant_biascorr;

/* plan (may be NULL): the calibrated runtime shapes, to discount taps that read the padding. */
ks_status ks__quant_biascorr_init(ks__quant_biascorr *bc, ks__graph *g, const ks__quant_calib *c,
                                  const ks__quant_plan *plan, bool analytic);
void ks__quant_biascorr_apply(const ks__quant_biascorr *bc, ks__graph *g, const uint8_t *mode);
/* Sets bc->stored from GPTQ's mean output error for the layers whose weights stored_weights (per
 * tensor, NULL entries: original weights) replaces with GPTQ's rounding. */
ks_status ks__quant_biascorr_stored(ks__quant_biascorr *bc, const ks__graph *g,
                                    const struct ks__quant_gptq *q, float *const *stored_weights);
void ks__quant_biascorr_free(ks__quant_biascorr *bc);

/* Rewrites, in place, the int8 epilogue chains of a built graph into CONV2D's fused forms
 * (ops.inc, ip[12] == 1; fuse.c): CONV2D -> ADD(residual), CONV2D -> unary lookup op and
 * CONV2D -> SIGMOID -> MUL (SiLU), when the conv's output has no other consumer. Bit-exact with
 * the unfused graph. map (from ks__quant_build, may be NULL): node_src is kept aligned with the
 * surviving nodes, and the i8 ids of fused-away tensors are cleared; plan gives the runtime
 * shapes (a residual is fused only when its shape provably equals the conv output's).
 * With KS_QUANT_NO_FUSE set in the environment the pass does nothing (to A/B the fused graph). */
ks_status ks__quant_fuse(ks__graph *g, const ks__quant_plan *plan, ks__quant_map *map,
                         uint32_t num_src_tensors, uint32_t *num_fused_out, char *err,
                         size_t err_cap);

/* ---- error-compensated weight rounding (gptq.c) ------------------------------------------
 * GPTQ / OBQ style: per layer, H = sum of x x^T over sampled output positions (x: the im2col
 * input of one output channel's group, K = kh * kw * Cin/groups; Cin for FC), damped by 1 % of its
 * mean diagonal; each output channel is rounded in input order with its scale fixed first, every
 * rounding error pushed onto the channel's not yet rounded weights through the Cholesky factor of
 * H^-1. Per channel the result with the least H-weighted error among {nearest, GPTQ with the
 * max-abs scale, GPTQ with the MSE-clipped scale} is kept, so the proxy error never exceeds
 * nearest rounding's. Layers with K > KS__QUANT_GPTQ_MAX_K (or too large a set of Hessians) keep
 * nearest rounding. Usage: ks__quant_gptq_init; for each batch b < num_batches:
 * ks__quant_gptq_alloc_batch, run the fp32 model on every calibration image and call
 * ks__quant_gptq_observe, then ks__quant_gptq_solve_batch. */
#define KS__QUANT_GPTQ_MAX_K 2304

typedef struct ks__quant_gptq_layer {
    uint32_t node;
    int32_t w_id, x_id, y_id;
    int batch;
    bool fc;
    int64_t co, groups, k; /* k: inputs per output channel */
    int64_t kh, kw, cig;   /* conv geometry (fc: 1, 1, k) */
    double *h;             /* groups * k * k (lower triangle accumulated), during its batch */
    double *sum_x;         /* groups * k */
    uint64_t count;        /* sampled positions */
} ks__quant_gptq_layer;

typedef struct ks__quant_gptq {
    uint32_t num_tensors, num_nodes, num_layers, num_capped;
    int num_batches;
    ks__quant_gptq_layer *layers;
    int8_t **q;         /* per weight tensor: rounded weights (NULL: nearest in rewrite.c) */
    float **scale;      /* per weight tensor: per-output-channel scales */
    float **bias_shift; /* per node: sum_k (Wq - W)[o, k] * E[x_k] (the mean output error) */
    double proxy_nearest, proxy_gptq; /* summed H-weighted errors, relative per layer */
    double proxy_worst; /* the largest layer ratio gptq / nearest (<= 1 by construction) */
    uint32_t num_solved;
} ks__quant_gptq;

/* Picks the CONV2D / FULLY_CONNECTED nodes with constant F32 weights and calibrated shapes (plan
 * ranks/dims) and splits them into batches whose Hessians fit budget_bytes. */
ks_status ks__quant_gptq_init(ks__quant_gptq *q, const ks__graph *g, const ks__quant_plan *plan,
                              size_t budget_bytes);
ks_status ks__quant_gptq_alloc_batch(ks__quant_gptq *q, int batch);
/* tensor(user, id, &num) returns the fp32 value of tensor id after the current run. */
typedef const float *(*ks__quant_tensor_fn)(void *user, int32_t id, size_t *num);
void ks__quant_gptq_observe(ks__quant_gptq *q, int batch, const ks__graph *g,
                            const ks__quant_plan *plan, ks__quant_tensor_fn tensor, void *user,
                            int image, int num_images);
ks_status ks__quant_gptq_solve_batch(ks__quant_gptq *q, const ks__graph *g, int batch);
/* For analytic bias correction: fixed = orig - bias_shift on the layers GPTQ rounded. */
void ks__quant_gptq_fix_bias(const ks__quant_gptq *q, ks__quant_biascorr *bc);
void ks__quant_gptq_free(ks__quant_gptq *q);

#endif /* KESTREL_TOOLS_QUANT_H */
