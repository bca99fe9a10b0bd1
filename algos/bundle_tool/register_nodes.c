/* ks-task-bundle = pipeline/tools/ks-bundle.c + this hook: `ks-bundle create` checks a new bundle
 * by instantiating its graph, which needs every node type the graph names. ks-bundle links only
 * the pipeline library (built-in nodes); this build registers every task node type too, so it
 * packs and checks all the task bundles (face, pose, hand, segment, detect, classify). */
#include "node_types.h"

int ks__bundle_tool_register_nodes(void);

int ks__bundle_tool_register_nodes(void) {
    return ks__task_register_all_nodes() == KS_STATUS_OK ? 0 : 1;
}
