/* Kestrel internal graph IR: what importers build, what .ksm stores and what sessions run.
 * Not a published API (ks__ prefix). Op semantics are specified in ops.inc.
 *
 * Ownership: a ks__graph owns every name, array and constant buffer it points to, except
 * constant data marked KS__TENSOR_BORROWED (it points into a mapped/caller .ksm image that
 * must outlive the graph).
 */
#ifndef KESTREL_IR_H
#define KESTREL_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/error.h"
#include "kestrel/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ks__op {
#define KS_OP(e, id, name, mi, ma, mo, mao, fl) KS_OP_##e = id,
#include "ops.inc"
#undef KS_OP
    KS_OP_MAX_ID = 128 /* op ids are < KS_OP_MAX_ID */
} ks__op;

/* Op flags (ops.inc). */
#define KS_OPF_NONE 0u
#define KS_OPF_FOLDABLE 1u   /* pure function of its inputs: may be constant-folded */
#define KS_OPF_SHAPE_ONLY 2u /* output depends only on input shapes (SHAPE) */
#define KS_OPF_VIEW 4u       /* output bytes == input bytes (reshape-like): may alias */
#define KS_OPF_UNARY (KS_OPF_FOLDABLE | 8u) /* elementwise, one input, same shape */

typedef struct ks__op_info {
    const char *name;
    uint8_t min_inputs, max_inputs, min_outputs, max_outputs;
    uint32_t flags;
} ks__op_info;

/* Info for op id `op`, or NULL if the id is unknown. */
const ks__op_info *ks__op_get_info(uint32_t op);

/* Fused activations (node ip "act"). Frozen values. */
typedef enum ks__act {
    KS_ACT_NONE = 0,
    KS_ACT_RELU = 1,
    KS_ACT_RELU_N1_TO_1 = 2,
    KS_ACT_RELU6 = 3,
    KS_ACT_TANH = 4,
    KS_ACT_SIGMOID = 5,
    KS_ACT_LEAKY_RELU = 6, /* alpha in fp[0] of conv/fc/binary, fp[0] documented per op */
    KS_ACT_HARD_SWISH = 7,
    KS_ACT_SILU = 8,  /* x * sigmoid(x) (SiLU / swish); older readers apply it as identity */
    KS_ACT_PRELU = 9, /* CONV2D only: x >= 0 ? x : slope[c] * x, slopes from conv input 4 */
    /* Quantized CONV2D with ip[12] == 1 only: y = table[intermediate], table from input 4. */
    KS_ACT_TABLE = 10,
    KS_ACT_COUNT
} ks__act;

/* Padding modes for conv/pool (frozen). */
typedef enum ks__pad_mode {
    KS_PAD_EXPLICIT = 0,   /* use the four explicit pads */
    KS_PAD_SAME_UPPER = 1, /* TFLite SAME / ONNX SAME_UPPER: extra pad at bottom/right */
    KS_PAD_SAME_LOWER = 2, /* ONNX SAME_LOWER: extra pad at top/left */
    KS_PAD_VALID = 3,
    KS_PAD_MODE_COUNT
} ks__pad_mode;

/* Resize coordinate transforms (frozen). */
typedef enum ks__resize_coord {
    KS_RESIZE_ASYMMETRIC = 0,
    KS_RESIZE_ALIGN_CORNERS = 1,
    KS_RESIZE_HALF_PIXEL = 2, /* TFLite half_pixel_centers, ONNX half_pixel */
    KS_RESIZE_PYTORCH_HALF_PIXEL = 3,
    KS_RESIZE_TF_HALF_PIXEL_FOR_NN = 4,
    KS_RESIZE_COORD_COUNT
} ks__resize_coord;

#define KS_NODE_MAX_IPARAMS 32
#define KS_NODE_MAX_FPARAMS 8

/* Tensor flags. */
#define KS__TENSOR_CONST 0x1u    /* data holds the value */
#define KS__TENSOR_BORROWED 0x2u /* data is not owned by the graph */

typedef struct ks__quant {
    uint32_t count; /* 0: not quantized; 1: per tensor; >1: per channel along axis */
    int32_t axis;
    float *scales;
    int32_t *zero_points;
} ks__quant;

typedef struct ks__tensor {
    char *name;
    ks_dtype dtype;
    int32_t rank;
    int64_t dims[KS_MAX_RANK]; /* -1: unknown until reshape (graph inputs and what follows) */
    uint32_t flags;
    const void *data;  /* constants only */
    size_t size_bytes; /* of data */
    ks__quant quant;
} ks__tensor;

typedef struct ks__node {
    uint32_t op;
    char *name;
    uint32_t num_inputs, num_outputs;
    int32_t *inputs; /* tensor ids; -1 for an absent optional input */
    int32_t *outputs;
    int32_t ip[KS_NODE_MAX_IPARAMS];
    float fp[KS_NODE_MAX_FPARAMS];
} ks__node;

typedef struct ks__meta {
    char *key;
    char *value;
} ks__meta;

typedef struct ks__graph {
    ks_allocator alloc; /* always filled (malloc defaults) */
    uint32_t num_tensors, cap_tensors;
    ks__tensor *tensors;
    uint32_t num_nodes, cap_nodes;
    ks__node *nodes; /* in execution (topological) order */
    uint32_t num_inputs, num_outputs;
    int32_t *inputs;
    int32_t *outputs;
    uint32_t num_meta, cap_meta;
    ks__meta *meta;
} ks__graph;

/* ---- building graphs (importers, passes, .ksm reader) ---- */
void ks__graph_init(ks__graph *g, const ks_allocator *alloc);
void ks__graph_free(ks__graph *g); /* frees everything; the struct may be reused after init */

/* Adds a tensor; name is copied (NULL => ""). dims may be NULL when rank == 0. */
ks_status ks__graph_add_tensor(ks__graph *g, const char *name, ks_dtype dtype, int32_t rank,
                               const int64_t *dims, int32_t *id_out);
/* Adds a tensor named <like's name><suffix> (suffix may be NULL) of dtype, with like's rank and
 * dims when rank < 0, else rank and dims. `like` may be a tensor of g (or of another graph): the
 * one graph-building step shared by the precision pass, the quantizer's rewrite and the
 * converter's passes. */
ks_status ks__graph_add_tensor_like(ks__graph *g, const ks__tensor *like, const char *suffix,
                                    ks_dtype dtype, int32_t rank, const int64_t *dims,
                                    int32_t *id_out);
/* Sets constant data. copy=true copies `size_bytes` bytes (graph owns them); copy=false takes
 * ownership of `data`, which must come from ks__alloc_aligned(&g->alloc, ..., 64). */
ks_status ks__graph_set_const(ks__graph *g, int32_t id, const void *data, size_t size_bytes,
                              bool copy);
/* Sets quantization (arrays copied). */
ks_status ks__graph_set_quant(ks__graph *g, int32_t id, uint32_t count, int32_t axis,
                              const float *scales, const int32_t *zero_points);
/* Adds a node; arrays copied; ip/fp zeroed. Returns the node index. Pointers into g->nodes
 * are invalidated by the next add. */
ks_status ks__graph_add_node(ks__graph *g, uint32_t op, const char *name, uint32_t num_inputs,
                             const int32_t *inputs, uint32_t num_outputs, const int32_t *outputs,
                             uint32_t *index_out);
ks_status ks__graph_set_io(ks__graph *g, uint32_t num_inputs, const int32_t *inputs,
                           uint32_t num_outputs, const int32_t *outputs);
ks_status ks__graph_set_meta(ks__graph *g, const char *key, const char *value);
const char *ks__graph_get_meta(const ks__graph *g, const char *key);

/* Element count of a tensor with fully known dims (-1 if any dim is unknown or on overflow). */
int64_t ks__numel(int32_t rank, const int64_t *dims);

/* Structural validation shared by the .ksm reader and the converters: ids in range, op arity,
 * dtype/rank validity, constant sizes, every input defined before use (topological order).
 * On failure writes a message naming the node/tensor into err. */
ks_status ks__graph_validate(const ks__graph *g, char *err, size_t err_cap);

/* IEEE half <-> float (used by importers to fold fp16 weights). */
float ks__f16_to_f32(uint16_t h);
uint16_t ks__f32_to_f16(float f);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_IR_H */
