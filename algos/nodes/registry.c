/* The task library's one node registry: every type of node_types.inc, registered once. */
#include "node_types.h"

#include <stdio.h>
#include <string.h>

#include "base/once.h"
#include "src/common.h" /* ks__object_error */

static const ks_node_type *const k_types[] = {
#define KS_TASK_NODE(sym) &sym,
#include "node_types.inc"
#undef KS_TASK_NODE
};

static ks__once_flag g_once = KS__ONCE_INIT;
static ks_status g_status;
static char g_error[256];

static void register_all(void) {
    for (size_t i = 0; i < sizeof(k_types) / sizeof(k_types[0]) && !g_status; i++) {
        const ks_node_type *have = ks_node_type_find(k_types[i]->name);
        if (have == k_types[i]) continue;
        if (have) {
            g_status = KS_STATUS_INVALID_STATE;
            snprintf(g_error, sizeof(g_error),
                     "node type '%s' is already registered by someone else", k_types[i]->name);
            break;
        }
        g_status = ks_node_type_register(k_types[i]);
        if (g_status) snprintf(g_error, sizeof(g_error), "%s", ks_last_error(NULL));
    }
}

ks_status ks__task_register_all_nodes(void) {
    ks__once(&g_once, register_all);
    if (g_status) ks__object_error(NULL, "%s", g_error);
    return g_status;
}
