/* Shared between the TFLite importer's files. Not a published API. */
#ifndef KESTREL_CONVERT_TFLITE_INTERNAL_H
#define KESTREL_CONVERT_TFLITE_INTERNAL_H

#include "convert.h"
#include "fb.h"

/* Expands a TFLite sparse constant (SparsityParameters table `sparsity`, see the TFLite schema:
 * traversal_order, block_map, dim_metadata with DENSE / SPARSE_CSR levels whose array_segments
 * and array_indices are int32, uint16 or uint8 vectors) into a dense row-major array.
 * `values` holds the stored (non-zero) elements, `dst` has numel(dims) * elem_size bytes and must
 * be zeroed by the caller. On failure writes the reason into why. */
ks_status ks__tflite_densify(ks__fb *fb, const ks__fb_table *sparsity, int32_t rank,
                             const int64_t *dims, size_t elem_size, const uint8_t *values,
                             size_t values_bytes, uint8_t *dst, char *why, size_t why_cap);

#endif /* KESTREL_CONVERT_TFLITE_INTERNAL_H */
