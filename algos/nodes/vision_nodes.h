/* Pipeline node types for vision tasks: SSD decoding, NMS, landmark decoding and projection,
 * ROIs, tracking, smoothing, face geometry and expressions. They wrap the building blocks in
 * algos/common; ports and options are documented in docs/pipeline-nodes.md. Internal. */
#ifndef KESTREL_ALGOS_VISION_NODES_H
#define KESTREL_ALGOS_VISION_NODES_H

/* Registers every vision node type with the pipeline runtime. Idempotent and thread-safe: the
 * first call registers, later calls do nothing. Task create functions call it before building
 * their pipelines. */
void ks__register_vision_nodes(void);

#endif
