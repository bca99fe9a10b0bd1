/* The task library's pipeline node types (node_types.inc: one list) and their registration.
 * Ports and options are documented in docs/pipeline-nodes.md. Internal. */
#ifndef KESTREL_ALGOS_NODE_TYPES_H
#define KESTREL_ALGOS_NODE_TYPES_H

#include "kestrel/pipeline.h"

#define KS_TASK_NODE(sym) extern const ks_node_type sym;
#include "node_types.inc"
#undef KS_TASK_NODE

/* Registers every node type of node_types.inc with the pipeline runtime. Thread-safe; the first
 * call registers, later calls return its status (KS_STATUS_INVALID_STATE when the app already
 * registered another type under one of these names; ks_last_error(NULL) names it). Task create
 * functions call it before building their pipelines. */
ks_status ks__task_register_all_nodes(void);

#endif /* KESTREL_ALGOS_NODE_TYPES_H */
