/* Model converters: TFLite and ONNX front-ends into the Kestrel IR, plus graph passes.
 * Not a published API; used by ks-convert, tests and fuzzers.
 *
 * Every importer takes the whole source file in memory, treats it as hostile (every offset,
 * count and size is bounds-checked), never aborts, and on failure writes into err a message that
 * names the file (`source_name`), the op and the node. On failure the graph may hold partial
 * content; the caller frees it with ks__graph_free().
 */
#ifndef KESTREL_CONVERT_H
#define KESTREL_CONVERT_H

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Safety limits shared by the importers. */
#define KS_IMPORT_MAX_TENSORS 200000u
#define KS_IMPORT_MAX_NODES 100000u
#define KS_IMPORT_MAX_CONST_BYTES (UINT64_C(2) << 30)

/* g must be freshly initialized (ks__graph_init). */
ks_status ks__import_tflite(const uint8_t *data, size_t size_bytes, const char *source_name,
                            ks__graph *g, char *err, size_t err_cap);
ks_status ks__import_onnx(const uint8_t *data, size_t size_bytes, const char *source_name,
                          ks__graph *g, char *err, size_t err_cap);

/* Picks the importer from the content (TFLite identifier, else ONNX protobuf). */
ks_status ks__import_any(const uint8_t *data, size_t size_bytes, const char *source_name,
                         ks__graph *g, char *err, size_t err_cap);

/* The ops an importer converts, for ks-convert --list-ops: the source format's op name and
 * what the importer requires of it beyond the op's definition ("" when nothing). Index past the
 * end: name NULL. The importers' own tables are the source (no copy to keep in step). */
typedef struct ks__import_op {
    const char *name;
    const char *constraints;
} ks__import_op;

uint32_t ks__onnx_num_ops(void);
ks__import_op ks__onnx_op(uint32_t index);
/* What applies to every model of the format (opset range, domains, ranks). */
const char *ks__onnx_import_notes(void);
uint32_t ks__tflite_num_ops(void);
ks__import_op ks__tflite_op(uint32_t index);
const char *ks__tflite_import_notes(void);

/* Graph passes, in order: constant folding, BatchNorm/pad/activation fusion, dead-code removal.
 * Keeps outputs bit-identical up to float reassociation. */
ks_status ks__graph_optimize(ks__graph *g, char *err, size_t err_cap);

/* The fused activation (ks__act, and its alpha) that computes standalone activation node a, or
 * -1 if it has none (used by the fusion pass and by ks-quant's table convs). */
int32_t ks__fused_act_of(const ks__node *a, float *alpha);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_CONVERT_H */
