/* The task library's pipeline node types (node_types.inc: one list) and their registration.
 * Ports and options are documented in docs/pipeline-nodes.md. Internal. */
#ifndef KESTREL_ALGOS_NODE_TYPES_H
#define KESTREL_ALGOS_NODE_TYPES_H

#include "kestrel/pipeline.h"

#define KS_TASK_NODE(sym, family) extern const ks_node_type sym;
#include "node_types.inc"
#undef KS_TASK_NODE

/* Register node types of node_types.inc with the pipeline runtime: each function its families,
 * _all every type (the bundle tool). Thread-safe; a family's first call registers it, later
 * calls return that status (KS_STATUS_INVALID_STATE when the app already registered another type
 * under one of these names; ks_last_error(NULL) names it). Task create functions call the one
 * of their graphs before building their pipelines. */
ks_status ks__task_register_vision_nodes(void);   /* face, pose, hands */
ks_status ks__task_register_detect_nodes(void);   /* INPUT + DETECT */
ks_status ks__task_register_classify_nodes(void); /* INPUT + CLASSIFY */
ks_status ks__task_register_segment_nodes(void);  /* SEGMENT */
ks_status ks__task_register_all_nodes(void);

#endif /* KESTREL_ALGOS_NODE_TYPES_H */
