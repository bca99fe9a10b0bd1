/* Model description for ks-inspect: the graph's shapes and parameters as text, where a .ksm
 * file's bytes go (sections, tensor table, constants by dtype; read from the file's own records,
 * without decoding), and the graph drawn as an SVG picture.
 *
 *     ks__describe_weight_storage(stdout, "face.ksm");
 *     ks__describe_svg(ks__model_graph(m), session_or_NULL, "face.svg", err, sizeof(err));
 *
 * Everything prints to the caller's FILE; nothing is kept. Thread safety: no shared state. */
#ifndef KESTREL_DESCRIBE_H
#define KESTREL_DESCRIBE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ir.h"
#include "kestrel/engine.h"

/* "[1,3,224,224]" */
void ks__describe_shape(FILE *f, int32_t rank, const int64_t *dims);

/* "weight storage: N bytes for M values, B bits per weight" (and the encoded tensors' share);
 * nothing when the file has no constants or cannot be read. */
void ks__describe_weight_storage(FILE *f, const char *path);

/* The file's sizes: sections, tensor table parts, constants by dtype ("sizes: not available"
 * when the file is not a .ksm it can parse; nothing when it cannot be read). */
void ks__describe_sizes(FILE *f, const char *path);

/* One line per node: index, op, name, output shapes (from s, the planned session, when given),
 * integer and float params, inputs, outputs, and with s its FLOPs (node_flops, may be NULL) and
 * the kernel the session chose. */
void ks__describe_nodes(FILE *f, const ks__graph *g, const ks_session *s,
                        const uint64_t *node_flops);

/* Layered drawing: a node's level is 1 + the deepest level among its producers; nodes of one
 * level share a row, edges are straight lines. Output shapes from s when given (else the
 * graph's). */
ks_status ks__describe_svg(const ks__graph *g, const ks_session *s, const char *path, char *err,
                           size_t err_cap);

#endif
