/* Control nodes: gate, previous, switch, merge, flow_limiter, foreach, split, has_packet; and the
 * table of built-in node types. */
#include <stdio.h>
#include <string.h>

#include "pipeline_internal.h"

static ks_status emit_retained(ks_node_ctx *ctx, uint32_t index, const ks_packet *p) {
    return ks_node_output(ctx, index, ks_packet_retain(p));
}

static void *state_new(const ks_node_init *init, size_t size_bytes) {
    return ks__calloc(init->allocator, 1, size_bytes);
}

static void state_free(void *state, const ks_allocator *allocator) {
    ks__free(allocator, state);
}

/* ---- gate: passes `value` when `allow` is true (or false with "invert") ---- */

typedef struct gate_state {
    int invert;
} gate_state;

static ks_status gate_create(const ks_node_init *init, void **state_out) {
    gate_state *s = state_new(init, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    ks_status st = ks_node_options_bool(init->options, "invert", 0, &s->invert);
    if (st) {
        ks__free(init->allocator, s);
        return st;
    }
    *state_out = s;
    return KS_STATUS_OK;
}

static ks_status gate_process(void *state, ks_node_ctx *ctx) {
    const gate_state *s = state;
    int allow = ks_packet_bool(ks_node_input(ctx, 1));
    if (s->invert) allow = !allow;
    return allow ? emit_retained(ctx, 0, ks_node_input(ctx, 0)) : KS_STATUS_OK;
}

static const ks_port gate_in[] = {{"value", KS_PACKET_ANY, KS_PACKET_ANY, 0, -1},
                                  {"allow", KS_PACKET_BOOL, KS_PACKET_ANY, 0, -1}};
static const ks_port gate_out[] = {{"value", KS_PACKET_ANY, KS_PACKET_ANY, 0, 0}};
static const ks_node_type gate_type = {"gate",       2,    1,    gate_in,   gate_out, gate_create,
                                       gate_process, NULL, NULL, state_free};

/* ---- previous: emits last frame's packet of its loopback input ---- */

typedef struct previous_state {
    const ks_packet *held;
    bool ticked; /* a tick input is connected: emit only in frames that have a tick */
} previous_state;

static ks_status previous_create(const ks_node_init *init, void **state_out) {
    previous_state *s = state_new(init, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    s->ticked = init->num_inputs > 1;
    *state_out = s;
    return KS_STATUS_OK;
}

static ks_status previous_process(void *state, ks_node_ctx *ctx) {
    previous_state *s = state;
    if (s->ticked && !ks_node_input(ctx, 1)) return KS_STATUS_OK;
    return s->held ? emit_retained(ctx, 0, s->held) : KS_STATUS_OK;
}

static ks_status previous_after(void *state, ks_node_ctx *ctx) {
    previous_state *s = state;
    const ks_packet *now = ks_node_input(ctx, 0);
    ks_packet_release(s->held);
    s->held = NULL;
    /* A view's pixels belong to the caller for one frame only (ks_packet_create_image_view). */
    if (ks__packet_is_view(now))
        return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT,
                            "cannot keep a camera frame view for the next frame (its pixels "
                            "belong to the caller); pass an owned image (ks_packet_create_image)");
    s->held = ks_packet_retain(now);
    return KS_STATUS_OK;
}

static void previous_reset(void *state) {
    previous_state *s = state;
    ks_packet_release(s->held);
    s->held = NULL;
}

static void previous_destroy(void *state, const ks_allocator *allocator) {
    previous_reset(state);
    ks__free(allocator, state);
}

static const ks_port previous_in[] = {{"loop", KS_PACKET_ANY, KS_PACKET_ANY, KS_PORT_LOOPBACK, -1},
                                      {"tick", KS_PACKET_ANY, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1}};
static const ks_port previous_out[] = {{"previous", KS_PACKET_ANY, KS_PACKET_ANY, 0, 0}};
static const ks_node_type previous_type = {"previous",
                                           2,
                                           1,
                                           previous_in,
                                           previous_out,
                                           previous_create,
                                           previous_process,
                                           previous_after,
                                           previous_reset,
                                           previous_destroy};

/* ---- switch: routes `value` to output number `select`; out-of-range selects drop it ---- */

static ks_status stateless_create(const ks_node_init *init, void **state_out) {
    (void)init;
    *state_out = NULL;
    return KS_STATUS_OK;
}

static ks_status switch_process(void *state, ks_node_ctx *ctx) {
    int64_t sel = ks_packet_int(ks_node_input(ctx, 0));
    if (sel < 0 || sel >= (int64_t)ks_node_num_outputs(ctx)) return KS_STATUS_OK;
    return emit_retained(ctx, (uint32_t)sel, ks_node_input(ctx, 1));
}

static const ks_port switch_in[] = {{"select", KS_PACKET_INT, KS_PACKET_ANY, 0, -1},
                                    {"value", KS_PACKET_ANY, KS_PACKET_ANY, 0, -1}};
static const ks_port switch_out[] = {{"branch", KS_PACKET_ANY, KS_PACKET_ANY, KS_PORT_REPEATED, 1}};
static const ks_node_type switch_type = {
    "switch", 2, 1, switch_in, switch_out, stateless_create, switch_process, NULL, NULL, NULL};

/* ---- merge: emits the first present input (joins switch branches) ---- */

static ks_status merge_process(void *state, ks_node_ctx *ctx) {
    for (uint32_t i = 0; i < ks_node_num_inputs(ctx); i++) {
        const ks_packet *p = ks_node_input(ctx, i);
        if (p) return emit_retained(ctx, 0, p);
    }
    return KS_STATUS_OK;
}

static const ks_port merge_in[] = {
    {"value", KS_PACKET_ANY, KS_PACKET_ANY, KS_PORT_OPTIONAL | KS_PORT_REPEATED, -1}};
static const ks_port merge_out[] = {{"value", KS_PACKET_ANY, KS_PACKET_ANY, 0, 0}};
static const ks_node_type merge_type = {
    "merge", 1, 1, merge_in, merge_out, stateless_create, merge_process, NULL, NULL, NULL};

/* ---- flow_limiter ----
 * Admits a frame while fewer than max_in_flight frames are in flight. ks_pipeline_process runs a
 * whole frame before it returns, so every admitted frame has finished by after_frame and the
 * count is back to 0: in this synchronous runtime the limiter never drops. It is kept (and
 * counts honestly) so graphs written for an asynchronous runner keep their meaning. */

typedef struct flow_state {
    int64_t max_in_flight;
    int64_t in_flight;
    uint64_t num_dropped;
} flow_state;

static ks_status flow_create(const ks_node_init *init, void **state_out) {
    flow_state *s = state_new(init, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    ks_status st = ks_node_options_int(init->options, "max_in_flight", 1, &s->max_in_flight);
    if (!st && s->max_in_flight < 1) {
        snprintf(init->error, init->error_cap, "option 'max_in_flight' is %lld; it must be >= 1",
                 (long long)s->max_in_flight);
        st = KS_STATUS_INVALID_ARGUMENT;
    }
    if (st) {
        ks__free(init->allocator, s);
        return st;
    }
    *state_out = s;
    return KS_STATUS_OK;
}

static ks_status flow_process(void *state, ks_node_ctx *ctx) {
    flow_state *s = state;
    if (s->in_flight >= s->max_in_flight) {
        s->num_dropped++;
        return KS_STATUS_OK;
    }
    s->in_flight++;
    return emit_retained(ctx, 0, ks_node_input(ctx, 0));
}

static ks_status flow_after(void *state, ks_node_ctx *ctx) {
    flow_state *s = state;
    (void)ctx;
    s->in_flight = 0; /* the frame is complete, whether or not `finished` was wired */
    return KS_STATUS_OK;
}

static void flow_reset(void *state) {
    flow_state *s = state;
    s->in_flight = 0;
    s->num_dropped = 0;
}

static const ks_port flow_in[] = {
    {"value", KS_PACKET_ANY, KS_PACKET_ANY, 0, -1},
    {"finished", KS_PACKET_ANY, KS_PACKET_ANY, KS_PORT_LOOPBACK | KS_PORT_OPTIONAL, -1}};
static const ks_port flow_out[] = {{"value", KS_PACKET_ANY, KS_PACKET_ANY, 0, 0}};
static const ks_node_type flow_type = {
    "flow_limiter", 2,          1,          flow_in,   flow_out, flow_create,
    flow_process,   flow_after, flow_reset, state_free};

/* ---- has_packet: true when its input has a packet this frame ---- */

static ks_status has_process(void *state, ks_node_ctx *ctx) {
    ks_packet *b = NULL;
    ks_status st = ks_packet_create_bool(ks_node_allocator(ctx), ks_node_input(ctx, 0) != NULL, &b);
    if (st) return ks_node_fail(ctx, st, "out of memory");
    return ks_node_output(ctx, 0, b);
}

static const ks_port has_in[] = {{"value", KS_PACKET_ANY, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1}};
static const ks_port has_out[] = {{"present", KS_PACKET_BOOL, KS_PACKET_ANY, 0, -1}};
static const ks_node_type has_type = {"has_packet",     1,           1,    has_in, has_out,
                                      stateless_create, has_process, NULL, NULL,   NULL};

/* ---- split: rects / detections / landmarks -> list of one-element packets ---- */

static ks_status split_create(const ks_node_init *init, void **state_out) {
    ks_packet_type t = init->input_types[0];
    if (t != KS_PACKET_ANY && t != KS_PACKET_RECTS && t != KS_PACKET_DETECTIONS &&
        t != KS_PACKET_LIST) {
        snprintf(init->error, init->error_cap, "input is %s; split takes rects, detections or list",
                 ks_packet_type_string(t));
        return KS_STATUS_INVALID_ARGUMENT;
    }
    *state_out = NULL;
    return KS_STATUS_OK;
}

static ks_status split_process(void *state, ks_node_ctx *ctx) {
    const ks_packet *in = ks_node_input(ctx, 0);
    const ks_allocator *a = ks_node_allocator(ctx);
    if (in->type == KS_PACKET_LIST) return emit_retained(ctx, 0, in);
    uint32_t n = 0;
    if (in->type == KS_PACKET_RECTS)
        n = in->u.rects.num_rects;
    else if (in->type == KS_PACKET_DETECTIONS)
        n = in->u.detections.num_detections;
    else
        return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT, "cannot split a %s packet",
                            ks_packet_type_string(in->type));
    ks_status st = KS_STATUS_OK;
    ks_packet **items = ks__calloc(a, n ? n : 1, sizeof(*items));
    ks_packet *list = NULL;
    if (!items) return ks_node_fail(ctx, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < n && !st; i++) {
        if (in->type == KS_PACKET_RECTS) {
            ks_packet_rects one = {1, &in->u.rects.rects[i]};
            st = ks_packet_create_rects(a, &one, &items[i]);
        } else {
            const ks_packet_detections *d = &in->u.detections;
            size_t kp = (size_t)d->num_keypoints * 2;
            ks_packet_detections one = {1,
                                        d->num_keypoints,
                                        d->boxes + (size_t)i * 4,
                                        d->scores + i,
                                        d->class_ids + i,
                                        kp ? d->keypoints + i * kp : NULL};
            st = ks_packet_create_detections(a, &one, &items[i]);
        }
    }
    if (!st) st = ks_packet_create_list(a, items, n, &list);
    for (uint32_t i = 0; i < n; i++)
        ks_packet_release(items[i]);
    ks__free(a, items);
    if (st) return ks_node_fail(ctx, st, "cannot build the list of %u items", (unsigned)n);
    return ks_node_output(ctx, 0, list);
}

static const ks_port split_in[] = {{"value", KS_PACKET_ANY, KS_PACKET_ANY, 0, -1}};
static const ks_port split_out[] = {{"items", KS_PACKET_LIST, KS_PACKET_ANY, 0, -1}};
static const ks_node_type split_type = {
    "split", 1, 1, split_in, split_out, split_create, split_process, NULL, NULL, NULL};

/* ---- foreach: runs a subgraph per list item and collects each subgraph output into a list ----
 * Subgraph inputs: the item first, then the node's extra inputs (the same for every item).
 * Items whose run leaves an output empty contribute nothing to that output's list. */

typedef struct foreach_state {
    ks_pipeline *child;
    uint32_t num_extra;
    uint32_t num_outputs;
    const ks_packet **ins; /* 1 + num_extra, reused every item */
    ks_packet **outs;      /* num_outputs, reused every item */
} foreach_state;

static void foreach_destroy(void *state, const ks_allocator *a) {
    foreach_state *s = state;
    if (!s) return;
    ks_pipeline_destroy(s->child);
    ks__free(a, s->ins);
    ks__free(a, s->outs);
    ks__free(a, s);
}

static ks_status foreach_create(const ks_node_init *init, void **state_out) {
    const ks__subgraph_env *env = ks__options_env(init->options);
    const cJSON *opts = ks__options_json(init->options);
    const cJSON *graph = opts ? cJSON_GetObjectItemCaseSensitive(opts, "graph") : NULL;
    if (!env || !cJSON_IsObject(graph)) {
        snprintf(init->error, init->error_cap,
                 "option 'graph' (the per-item subgraph) must be "
                 "an object");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    foreach_state *s = state_new(init, sizeof(*s));
    if (!s) return KS_STATUS_OUT_OF_MEMORY;
    s->num_extra = init->num_inputs - 1;
    s->num_outputs = init->num_outputs;
    ks_status st = ks__pipeline_build(graph, env->side, env->desc, env->bundle, env->depth + 1,
                                      &s->child, init->error, init->error_cap);
    if (st) goto error;
    if (s->child->num_inputs != 1 + s->num_extra || s->child->num_outputs != s->num_outputs) {
        snprintf(init->error, init->error_cap,
                 "subgraph '%s' has %u inputs and %u outputs; the node has %u inputs and %u "
                 "outputs",
                 s->child->name, (unsigned)s->child->num_inputs, (unsigned)s->child->num_outputs,
                 (unsigned)init->num_inputs, (unsigned)init->num_outputs);
        st = KS_STATUS_INVALID_ARGUMENT;
        goto error;
    }
    s->ins = ks__calloc(init->allocator, 1 + s->num_extra, sizeof(*s->ins));
    s->outs = ks__calloc(init->allocator, s->num_outputs + 1, sizeof(*s->outs));
    if (!s->ins || !s->outs) {
        st = KS_STATUS_OUT_OF_MEMORY;
        snprintf(init->error, init->error_cap, "out of memory");
        goto error;
    }
    *state_out = s;
    return KS_STATUS_OK;
error:
    foreach_destroy(s, init->allocator);
    return st;
}

static ks_status foreach_process(void *state, ks_node_ctx *ctx) {
    foreach_state *s = state;
    const ks_allocator *a = ks_node_allocator(ctx);
    const ks_packet *list = ks_node_input(ctx, 0);
    uint32_t n = ks_packet_list_size(list);
    ks_status st = KS_STATUS_OK;
    /* collected[o * n + i]: output o of item i */
    size_t cells = (size_t)s->num_outputs * n;
    ks_packet **collected = ks__calloc(a, cells ? cells : 1, sizeof(*collected));
    ks_packet **row = ks__calloc(a, n ? n : 1, sizeof(*row));
    if (!collected || !row) {
        st = ks_node_fail(ctx, KS_STATUS_OUT_OF_MEMORY, "out of memory for %u items", (unsigned)n);
        goto done;
    }
    for (uint32_t e = 0; e < s->num_extra; e++)
        s->ins[1 + e] = ks_node_input(ctx, 1 + e);
    for (uint32_t i = 0; i < n; i++) {
        s->ins[0] = ks_packet_list_item(list, i);
        for (uint32_t o = 0; o < s->num_outputs; o++)
            s->outs[o] = NULL;
        st = ks__pipeline_run(s->child, s->ins, ks_node_timestamp_us(ctx), s->outs);
        if (st) {
            st = ks_node_fail(ctx, st, "item %u: %s", (unsigned)i, ks_last_error(s->child));
            goto done;
        }
        for (uint32_t o = 0; o < s->num_outputs; o++)
            collected[(size_t)o * n + i] = s->outs[o];
    }
    for (uint32_t o = 0; o < s->num_outputs; o++) {
        if (!ks_node_output_needed(ctx, o)) continue;
        uint32_t m = 0;
        for (uint32_t i = 0; i < n; i++)
            if (collected[(size_t)o * n + i]) row[m++] = collected[(size_t)o * n + i];
        ks_packet *out = NULL;
        st = ks_packet_create_list(a, row, m, &out);
        if (!st) st = ks_node_output(ctx, o, out);
        if (st) {
            st = ks_node_fail(ctx, st, "cannot emit output %u", (unsigned)o);
            goto done;
        }
    }
done:
    if (collected)
        for (size_t c = 0; c < cells; c++)
            ks_packet_release(collected[c]);
    ks__free(a, collected);
    ks__free(a, row);
    return st;
}

static void foreach_reset(void *state) {
    foreach_state *s = state;
    ks_pipeline_reset(s->child);
}

static const ks_port foreach_in[] = {{"items", KS_PACKET_LIST, KS_PACKET_ANY, 0, -1},
                                     {"extra", KS_PACKET_ANY, KS_PACKET_ANY, KS_PORT_REPEATED, -1}};
static const ks_port foreach_out[] = {
    {"collected", KS_PACKET_LIST, KS_PACKET_ANY, KS_PORT_REPEATED, -1}};
static const ks_node_type foreach_type = {"foreach",       2,           1,
                                          foreach_in,      foreach_out, foreach_create,
                                          foreach_process, NULL,        foreach_reset,
                                          foreach_destroy};

/* ---- the built-in table ---- */

extern const ks_node_type ks__image_to_tensor_type;
extern const ks_node_type ks__infer_type;

const ks_node_type *const ks__builtin_types[] = {
    &gate_type,      &previous_type, &switch_type,
    &merge_type,     &flow_type,     &has_type,
    &split_type,     &foreach_type,  &ks__image_to_tensor_type,
    &ks__infer_type,
};
const uint32_t ks__num_builtin_types = sizeof(ks__builtin_types) / sizeof(ks__builtin_types[0]);

const ks_pipeline *ks__node_subgraph(const ks_node_type *type, const void *state) {
    return type == &foreach_type && state ? ((const foreach_state *)state)->child : NULL;
}

const ks_node_type *ks__builtin_node_type(const char *name) {
    for (uint32_t i = 0; name && i < ks__num_builtin_types; i++)
        if (strcmp(ks__builtin_types[i]->name, name) == 0) return ks__builtin_types[i];
    return NULL;
}
