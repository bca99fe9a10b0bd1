/* The task library's one node registry: the types of node_types.inc, registered a family at a
 * time, each family once. One table per family, each filtered from the one list, so a program
 * pays (when linked statically with --gc-sections) only for the families its tasks register. */
#include "node_types.h"

#include "base/once.h"
#include "src/common.h" /* ks__object_error */

/* KS_TASK_NODE(sym, F) expands to KS__IN_F(&sym): each table below turns on its own family. */
#define KS_TASK_NODE(sym, family) KS__IN_##family(&sym)
#define KS__ON(x) x,
#define KS__OFF(x)

#define KS__IN_VISION KS__ON
#define KS__IN_INPUT KS__OFF
#define KS__IN_DETECT KS__OFF
#define KS__IN_CLASSIFY KS__OFF
#define KS__IN_SEGMENT KS__OFF
static const ks_node_type *const k_vision[] = {
#include "node_types.inc"
    NULL};
#undef KS__IN_VISION
#undef KS__IN_INPUT
#define KS__IN_VISION KS__OFF
#define KS__IN_INPUT KS__ON
static const ks_node_type *const k_input[] = {
#include "node_types.inc"
    NULL};
#undef KS__IN_INPUT
#undef KS__IN_DETECT
#define KS__IN_INPUT KS__OFF
#define KS__IN_DETECT KS__ON
static const ks_node_type *const k_detect[] = {
#include "node_types.inc"
    NULL};
#undef KS__IN_DETECT
#undef KS__IN_CLASSIFY
#define KS__IN_DETECT KS__OFF
#define KS__IN_CLASSIFY KS__ON
static const ks_node_type *const k_classify[] = {
#include "node_types.inc"
    NULL};
#undef KS__IN_CLASSIFY
#undef KS__IN_SEGMENT
#define KS__IN_CLASSIFY KS__OFF
#define KS__IN_SEGMENT KS__ON
static const ks_node_type *const k_segment[] = {
#include "node_types.inc"
    NULL};
#undef KS_TASK_NODE

typedef struct family {
    const ks_node_type *const *types;
    ks__once_flag once;
    ks_status status;
    const ks_node_type *failed; /* the type that could not be registered */
} family;

static void register_family(family *f) {
    for (const ks_node_type *const *t = f->types; *t && !f->status; t++) {
        const ks_node_type *have = ks_node_type_find((*t)->name);
        if (have == *t) continue;
        f->status = have ? KS_STATUS_INVALID_STATE : ks_node_type_register(*t);
        if (f->status) f->failed = *t;
    }
}

static ks_status family_status(const family *f) {
    if (f->status == KS_STATUS_INVALID_STATE)
        ks__object_error(NULL, "node type '%s' is already registered by someone else",
                         f->failed->name);
    else if (f->status)
        ks__object_error(NULL, "cannot register node type '%s': %s", f->failed->name,
                         ks_status_string(f->status));
    return f->status;
}

/* FAMILY(name): its table's state and the once callback that registers it. */
#define FAMILY(name)                                                                               \
    static family g_##name = {k_##name, KS__ONCE_INIT, KS_STATUS_OK, NULL};                        \
    static void register_##name(void) {                                                            \
        register_family(&g_##name);                                                                \
    }                                                                                              \
    static ks_status name##_nodes(void) {                                                          \
        ks__once(&g_##name.once, register_##name);                                                 \
        return family_status(&g_##name);                                                           \
    }
FAMILY(vision)
FAMILY(input)
FAMILY(detect)
FAMILY(classify)
FAMILY(segment)
#undef FAMILY

ks_status ks__task_register_vision_nodes(void) {
    return vision_nodes();
}

ks_status ks__task_register_detect_nodes(void) {
    ks_status st = input_nodes();
    return st ? st : detect_nodes();
}

ks_status ks__task_register_classify_nodes(void) {
    ks_status st = input_nodes();
    return st ? st : classify_nodes();
}

ks_status ks__task_register_segment_nodes(void) {
    return segment_nodes();
}

ks_status ks__task_register_all_nodes(void) {
    ks_status st = vision_nodes();
    if (!st) st = input_nodes();
    if (!st) st = detect_nodes();
    if (!st) st = classify_nodes();
    if (!st) st = segment_nodes();
    return st;
}
