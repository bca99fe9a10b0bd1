/* Graph building (JSON -> validated, scheduled nodes) and the per-frame runtime.
 *
 * Everything that can be wrong with a graph is found at create, so process() only runs nodes:
 * streams are resolved to indices, types are checked once, and the schedule is a fixed
 * topological order (Kahn's algorithm with the JSON position as the tie-break, so the same
 * document always runs in the same order). cJSON allocates through malloc, not the pipeline's
 * allocator: its parse tree is temporary and freed before create returns. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pipeline_internal.h"

#define ERRF(...) snprintf(err, err_cap, __VA_ARGS__)

/* ---------------------------------------------------------------------------------------------
 * JSON with limits
 * ------------------------------------------------------------------------------------------- */

/* cJSON's own nesting limit is a compile-time constant of the system library (1000, deep enough
 * to exhaust small stacks in our recursive walks), so depth is checked here first. */
ks_status ks__json_parse(const char *text, size_t size_bytes, const char *name, cJSON **out,
                         char *err, size_t err_cap) {
    if (size_bytes > KS_PIPELINE_MAX_JSON_BYTES) {
        ERRF("%s: document of %zu bytes exceeds KS_PIPELINE_MAX_JSON_BYTES (%u)", name, size_bytes,
             (unsigned)KS_PIPELINE_MAX_JSON_BYTES);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    uint32_t depth = 0;
    bool in_string = false, escaped = false;
    for (size_t i = 0; i < size_bytes; i++) {
        char c = text[i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > KS_PIPELINE_MAX_JSON_DEPTH) {
                ERRF("%s: JSON nesting deeper than KS_PIPELINE_MAX_JSON_DEPTH (%u) at byte %zu",
                     name, (unsigned)KS_PIPELINE_MAX_JSON_DEPTH, i);
                return KS_STATUS_LIMIT_EXCEEDED;
            }
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, size_bytes, &end, 0);
    if (!root) {
        size_t at = end && end >= text && end <= text + size_bytes ? (size_t)(end - text) : 0;
        ERRF("%s: malformed JSON near byte %zu", name, at);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    *out = root;
    return KS_STATUS_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Node options
 * ------------------------------------------------------------------------------------------- */

static const cJSON *opt_get(const ks_node_options *o, const char *key) {
    if (!o || !o->json || !key) return NULL;
    return cJSON_GetObjectItemCaseSensitive(o->json, key);
}

static ks_status opt_type_error(const ks_node_options *o, const char *key, const char *want) {
    if (o && o->error) snprintf(o->error, o->error_cap, "option '%s' must be %s", key, want);
    return KS_STATUS_INVALID_ARGUMENT;
}

int ks_node_options_has(const ks_node_options *options, const char *key) {
    return opt_get(options, key) != NULL;
}

ks_status ks_node_options_int(const ks_node_options *options, const char *key,
                              int64_t default_value, int64_t *out) {
    const cJSON *v = opt_get(options, key);
    if (!out) return KS_STATUS_INVALID_ARGUMENT;
    if (!v) {
        *out = default_value;
        return KS_STATUS_OK;
    }
    double d = v->valuedouble;
    /* Range first: converting an out-of-range double to an integer is undefined. */
    if (!cJSON_IsNumber(v) || !(d <= 9.0e15 && d >= -9.0e15) || d != (double)(int64_t)d)
        return opt_type_error(options, key, "an integer");
    *out = (int64_t)d;
    return KS_STATUS_OK;
}

ks_status ks_node_options_float(const ks_node_options *options, const char *key,
                                double default_value, double *out) {
    const cJSON *v = opt_get(options, key);
    if (!out) return KS_STATUS_INVALID_ARGUMENT;
    if (!v) {
        *out = default_value;
        return KS_STATUS_OK;
    }
    if (!cJSON_IsNumber(v)) return opt_type_error(options, key, "a number");
    *out = v->valuedouble;
    return KS_STATUS_OK;
}

ks_status ks_node_options_bool(const ks_node_options *options, const char *key, int default_value,
                               int *out) {
    const cJSON *v = opt_get(options, key);
    if (!out) return KS_STATUS_INVALID_ARGUMENT;
    if (!v) {
        *out = default_value;
        return KS_STATUS_OK;
    }
    if (!cJSON_IsBool(v)) return opt_type_error(options, key, "true or false");
    *out = cJSON_IsTrue(v);
    return KS_STATUS_OK;
}

ks_status ks_node_options_string(const ks_node_options *options, const char *key,
                                 const char *default_value, const char **out) {
    const cJSON *v = opt_get(options, key);
    if (!out) return KS_STATUS_INVALID_ARGUMENT;
    if (!v) {
        *out = default_value;
        return KS_STATUS_OK;
    }
    if (!cJSON_IsString(v) || !v->valuestring) return opt_type_error(options, key, "a string");
    *out = v->valuestring;
    return KS_STATUS_OK;
}

ks_status ks_node_options_floats(const ks_node_options *options, const char *key, float *values,
                                 uint32_t capacity, uint32_t *count_out) {
    const cJSON *v = opt_get(options, key);
    if (!count_out) return KS_STATUS_INVALID_ARGUMENT;
    *count_out = 0;
    if (!v) return KS_STATUS_OK;
    if (!cJSON_IsArray(v)) return opt_type_error(options, key, "an array of numbers");
    uint32_t n = 0;
    const cJSON *item = NULL;
    cJSON_ArrayForEach(item, v) {
        if (!cJSON_IsNumber(item)) return opt_type_error(options, key, "an array of numbers");
        double d = item->valuedouble;
        /* Out-of-range double -> float conversion is undefined; saturate to infinity. */
        if (values && n < capacity)
            values[n] = d > FLT_MAX ? INFINITY : d < -FLT_MAX ? -INFINITY : (float)d;
        n++;
    }
    *count_out = n;
    return KS_STATUS_OK;
}

const ks__subgraph_env *ks__options_env(const ks_node_options *options) {
    return options ? options->env : NULL;
}

const cJSON *ks__options_json(const ks_node_options *options) {
    return options ? options->json : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registry: built-ins are a static table; app types are appended under a mutex.
 * ------------------------------------------------------------------------------------------- */

static pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static const ks_node_type *g_registry[KS_PIPELINE_MAX_NODE_TYPES];
static uint32_t g_num_registered;

static bool ports_valid(const ks_port *ports, uint32_t n, bool inputs, uint32_t num_inputs) {
    if (n && !ports) return false;
    if (n > KS_PIPELINE_MAX_PORTS) return false;
    for (uint32_t i = 0; i < n; i++) {
        if ((uint32_t)ports[i].type >= KS_PACKET_TYPE_COUNT) return false;
        if ((uint32_t)ports[i].elem_type >= KS_PACKET_TYPE_COUNT) return false;
        if ((ports[i].flags & KS_PORT_REPEATED) && i + 1 != n) return false;
        if (!inputs && (ports[i].flags & KS_PORT_LOOPBACK)) return false;
        if (!inputs && ports[i].like_input >= 0 && (uint32_t)ports[i].like_input >= num_inputs)
            return false;
    }
    return true;
}

ks_status ks_node_type_register(const ks_node_type *type) {
    if (!type || !type->name || !type->name[0] || !type->create || !type->process) {
        ks__object_error(NULL, "ks_node_type_register: name, create and process are required");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (strlen(type->name) >= KS_PIPELINE_MAX_NAME_BYTES ||
        !ports_valid(type->inputs, type->num_inputs, true, 0) ||
        !ports_valid(type->outputs, type->num_outputs, false, type->num_inputs)) {
        ks__object_error(NULL, "ks_node_type_register: node type '%.64s' has inconsistent ports",
                         type->name);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks_status st = KS_STATUS_OK;
    pthread_mutex_lock(&g_registry_lock);
    if (ks__builtin_node_type(type->name)) {
        st = KS_STATUS_INVALID_ARGUMENT;
    } else {
        for (uint32_t i = 0; i < g_num_registered; i++)
            if (strcmp(g_registry[i]->name, type->name) == 0) st = KS_STATUS_INVALID_ARGUMENT;
    }
    if (!st && g_num_registered >= KS_PIPELINE_MAX_NODE_TYPES) st = KS_STATUS_LIMIT_EXCEEDED;
    if (!st) g_registry[g_num_registered++] = type;
    pthread_mutex_unlock(&g_registry_lock);
    if (st == KS_STATUS_INVALID_ARGUMENT)
        ks__object_error(NULL, "ks_node_type_register: node type '%s' is already registered",
                         type->name);
    else if (st)
        ks__object_error(NULL, "ks_node_type_register: more than %u node types",
                         (unsigned)KS_PIPELINE_MAX_NODE_TYPES);
    return st;
}

const ks_node_type *ks_node_type_find(const char *name) {
    if (!name) return NULL;
    const ks_node_type *t = ks__builtin_node_type(name);
    if (t) return t;
    pthread_mutex_lock(&g_registry_lock);
    for (uint32_t i = 0; i < g_num_registered && !t; i++)
        if (strcmp(g_registry[i]->name, name) == 0) t = g_registry[i];
    pthread_mutex_unlock(&g_registry_lock);
    return t;
}

/* ---------------------------------------------------------------------------------------------
 * Building
 * ------------------------------------------------------------------------------------------- */

/* Declared port for actual port index i, or NULL past the end. */
static const ks_port *port_decl(const ks_port *ports, uint32_t n, uint32_t i) {
    if (i < n) return &ports[i];
    if (n && (ports[n - 1].flags & KS_PORT_REPEATED)) return &ports[n - 1];
    return NULL;
}

static ks_packet_type type_from_name(const char *s, bool *ok) {
    *ok = true;
    for (int t = 0; t < KS_PACKET_TYPE_COUNT; t++)
        if (strcmp(s, ks_packet_type_string((ks_packet_type)t)) == 0) return (ks_packet_type)t;
    *ok = false;
    return KS_PACKET_ANY;
}

static int32_t find_stream(const ks_pipeline *p, const char *name) {
    for (uint32_t i = 0; i < p->num_streams; i++)
        if (strcmp(p->streams[i].name, name) == 0) return (int32_t)i;
    return -1;
}

static ks_status add_stream(ks_pipeline *p, const char *name, int32_t producer, uint32_t port,
                            int32_t *id_out, char *err, size_t err_cap) {
    if (p->num_streams >= KS_PIPELINE_MAX_STREAMS) {
        ERRF("graph '%s': more than KS_PIPELINE_MAX_STREAMS (%u) streams", p->name,
             (unsigned)KS_PIPELINE_MAX_STREAMS);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    if (p->num_streams == p->cap_streams) {
        uint32_t cap = p->cap_streams ? p->cap_streams * 2 : 16;
        ks__stream *s = ks__calloc(&p->alloc, cap, sizeof(*s));
        if (!s) goto oom;
        if (p->num_streams) memcpy(s, p->streams, p->num_streams * sizeof(*s));
        ks__free(&p->alloc, p->streams);
        p->streams = s;
        p->cap_streams = cap;
    }
    ks__stream *s = &p->streams[p->num_streams];
    memset(s, 0, sizeof(*s));
    s->name = ks__strdup(&p->alloc, name);
    if (!s->name) goto oom;
    s->producer = producer;
    s->producer_port = port;
    *id_out = (int32_t)p->num_streams++;
    return KS_STATUS_OK;
oom:
    ERRF("graph '%s': out of memory adding stream '%s'", p->name, name);
    return KS_STATUS_OUT_OF_MEMORY;
}

static ks_status check_name(const cJSON *v, const char *what, const char *graph, char *err,
                            size_t err_cap) {
    if (!cJSON_IsString(v) || !v->valuestring) {
        ERRF("graph '%s': %s must be a string", graph, what);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (strlen(v->valuestring) >= KS_PIPELINE_MAX_NAME_BYTES) {
        ERRF("graph '%s': %s '%.40s...' is longer than KS_PIPELINE_MAX_NAME_BYTES (%u)", graph,
             what, v->valuestring, (unsigned)KS_PIPELINE_MAX_NAME_BYTES);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    return KS_STATUS_OK;
}

/* "$name" strings in options are replaced by side parameter values. Depth is bounded by the
 * document depth limit checked at parse. */
static ks_status substitute(cJSON *node, const cJSON *side, const char *node_name, char *err,
                            size_t err_cap) {
    cJSON *child = node ? node->child : NULL;
    while (child) {
        cJSON *next = child->next;
        if (cJSON_IsString(child) && child->valuestring && child->valuestring[0] == '$') {
            const char *ref = child->valuestring + 1;
            const cJSON *val = side ? cJSON_GetObjectItemCaseSensitive(side, ref) : NULL;
            if (!val) {
                ERRF("node '%s': option '%s' refers to unknown side parameter '%s'", node_name,
                     child->string ? child->string : "[item]", ref);
                return KS_STATUS_INVALID_ARGUMENT;
            }
            cJSON *dup = cJSON_Duplicate(val, 1);
            /* Object members need the key carried over; array items have none. */
            bool ok = dup && (cJSON_IsObject(node) && child->string
                                  ? cJSON_ReplaceItemInObjectCaseSensitive(node, child->string, dup)
                                  : cJSON_ReplaceItemViaPointer(node, child, dup));
            if (!ok) {
                cJSON_Delete(dup);
                ERRF("node '%s': out of memory substituting side parameter '%s'", node_name, ref);
                return KS_STATUS_OUT_OF_MEMORY;
            }
        } else if (cJSON_IsObject(child) || cJSON_IsArray(child)) {
            ks_status st = substitute(child, side, node_name, err, err_cap);
            if (st) return st;
        }
        child = next;
    }
    return KS_STATUS_OK;
}

/* Merges side parameters: graph defaults, overridden by `outer` (parent graph or desc). */
static ks_status merge_side(const cJSON *graph_side, const cJSON *outer, cJSON **out, char *err,
                            size_t err_cap) {
    cJSON *m = graph_side && cJSON_IsObject(graph_side) ? cJSON_Duplicate(graph_side, 1)
                                                        : cJSON_CreateObject();
    if (!m) goto oom;
    const cJSON *item = NULL;
    if (outer) cJSON_ArrayForEach(item, outer) {
            if (!item->string) continue;
            cJSON *dup = cJSON_Duplicate(item, 1);
            if (!dup) goto oom;
            cJSON_DeleteItemFromObjectCaseSensitive(m, item->string);
            if (!cJSON_AddItemToObject(m, item->string, dup)) {
                cJSON_Delete(dup);
                goto oom;
            }
        }
    *out = m;
    return KS_STATUS_OK;
oom:
    cJSON_Delete(m);
    ERRF("out of memory merging side parameters");
    return KS_STATUS_OUT_OF_MEMORY;
}

static const char *node_label(const ks__pnode *n) {
    return n->name ? n->name : "?";
}

/* Parses the node list and graph I/O into p (no types, no order, no create yet). */
static ks_status parse_structure(ks_pipeline *p, const cJSON *graph, char *err, size_t err_cap) {
    ks_status st = KS_STATUS_OK;
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(graph, "nodes");
    const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(graph, "inputs");
    const cJSON *outputs = cJSON_GetObjectItemCaseSensitive(graph, "outputs");
    if (!cJSON_IsArray(nodes)) {
        ERRF("graph '%s': \"nodes\" must be an array", p->name);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if ((inputs && !cJSON_IsArray(inputs)) || (outputs && !cJSON_IsArray(outputs))) {
        ERRF("graph '%s': \"inputs\" and \"outputs\" must be arrays", p->name);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    int num_nodes = cJSON_GetArraySize(nodes);
    int num_in = inputs ? cJSON_GetArraySize(inputs) : 0;
    int num_out = outputs ? cJSON_GetArraySize(outputs) : 0;
    if (num_nodes > (int)KS_PIPELINE_MAX_NODES || num_in > (int)KS_PIPELINE_MAX_PORTS ||
        num_out > (int)KS_PIPELINE_MAX_PORTS) {
        ERRF("graph '%s': %d nodes, %d inputs, %d outputs exceed the limits (%u nodes, %u ports)",
             p->name, num_nodes, num_in, num_out, (unsigned)KS_PIPELINE_MAX_NODES,
             (unsigned)KS_PIPELINE_MAX_PORTS);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    p->nodes = ks__calloc(&p->alloc, num_nodes ? (size_t)num_nodes : 1, sizeof(ks__pnode));
    p->inputs = ks__calloc(&p->alloc, num_in ? (size_t)num_in : 1, sizeof(int32_t));
    p->outputs = ks__calloc(&p->alloc, num_out ? (size_t)num_out : 1, sizeof(int32_t));
    if (!p->nodes || !p->inputs || !p->outputs) goto oom;

    /* Graph inputs: "name" or {"name": ..., "type": ...}. */
    for (int i = 0; i < num_in; i++) {
        const cJSON *in = cJSON_GetArrayItem(inputs, i);
        const cJSON *name = cJSON_IsObject(in) ? cJSON_GetObjectItemCaseSensitive(in, "name") : in;
        const cJSON *type =
            cJSON_IsObject(in) ? cJSON_GetObjectItemCaseSensitive(in, "type") : NULL;
        st = check_name(name, "graph input name", p->name, err, err_cap);
        if (st) return st;
        if (!name->valuestring[0] || find_stream(p, name->valuestring) >= 0) {
            ERRF("graph '%s': graph input '%s' is empty or declared twice", p->name,
                 name->valuestring);
            return KS_STATUS_INVALID_ARGUMENT;
        }
        ks_packet_type t = KS_PACKET_ANY;
        if (type) {
            bool ok = cJSON_IsString(type) && type->valuestring;
            if (ok) t = type_from_name(type->valuestring, &ok);
            if (!ok) {
                ERRF("graph '%s': graph input '%s' has unknown type", p->name, name->valuestring);
                return KS_STATUS_INVALID_ARGUMENT;
            }
        }
        int32_t id = -1;
        st = add_stream(p, name->valuestring, -1, (uint32_t)i, &id, err, err_cap);
        if (st) return st;
        p->streams[id].type = t;
        p->inputs[p->num_inputs++] = id;
    }

    /* Nodes: type, name, outputs first (so inputs may name streams produced later). */
    for (int j = 0; j < num_nodes; j++) {
        const cJSON *nj = cJSON_GetArrayItem(nodes, j);
        ks__pnode *n = &p->nodes[j];
        n->json_index = (uint32_t)j;
        p->num_nodes = (uint32_t)j + 1;
        if (!cJSON_IsObject(nj)) {
            ERRF("graph '%s': node #%d is not an object", p->name, j);
            return KS_STATUS_INVALID_ARGUMENT;
        }
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(nj, "type");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(nj, "name");
        char auto_name[KS_PIPELINE_MAX_NAME_BYTES + 16];
        st = check_name(type, "node type", p->name, err, err_cap);
        if (st) return st;
        if (name) {
            st = check_name(name, "node name", p->name, err, err_cap);
            if (st) return st;
        }
        snprintf(auto_name, sizeof(auto_name), "%s#%d", type->valuestring, j);
        n->name = ks__strdup(&p->alloc, name ? name->valuestring : auto_name);
        if (!n->name) goto oom;
        for (int k = 0; k < j; k++)
            if (strcmp(p->nodes[k].name, n->name) == 0) {
                ERRF("graph '%s': node name '%s' is used twice", p->name, n->name);
                return KS_STATUS_INVALID_ARGUMENT;
            }
        n->type = ks_node_type_find(type->valuestring);
        if (!n->type) {
            ERRF("graph '%s': node '%s': unknown node type '%s'", p->name, n->name,
                 type->valuestring);
            return KS_STATUS_INVALID_ARGUMENT;
        }
        const cJSON *ins = cJSON_GetObjectItemCaseSensitive(nj, "inputs");
        const cJSON *outs = cJSON_GetObjectItemCaseSensitive(nj, "outputs");
        if ((ins && !cJSON_IsArray(ins)) || (outs && !cJSON_IsArray(outs))) {
            ERRF("graph '%s': node '%s': \"inputs\" and \"outputs\" must be arrays of stream "
                 "names",
                 p->name, n->name);
            return KS_STATUS_INVALID_ARGUMENT;
        }
        int ni = ins ? cJSON_GetArraySize(ins) : 0, no = outs ? cJSON_GetArraySize(outs) : 0;
        if (ni > (int)KS_PIPELINE_MAX_PORTS || no > (int)KS_PIPELINE_MAX_PORTS) {
            ERRF("graph '%s': node '%s' has more than %u inputs or outputs", p->name, n->name,
                 (unsigned)KS_PIPELINE_MAX_PORTS);
            return KS_STATUS_LIMIT_EXCEEDED;
        }
        /* Arity: every non-optional, non-repeated declared port must be connected. */
        const ks_node_type *t = n->type;
        uint32_t min_in = 0, min_out = 0;
        for (uint32_t k = 0; k < t->num_inputs; k++)
            if (!(t->inputs[k].flags & (KS_PORT_OPTIONAL | KS_PORT_REPEATED))) min_in = k + 1;
        for (uint32_t k = 0; k < t->num_outputs; k++)
            if (!(t->outputs[k].flags & (KS_PORT_OPTIONAL | KS_PORT_REPEATED))) min_out = k + 1;
        if ((uint32_t)ni < min_in || !port_decl(t->inputs, t->num_inputs, (uint32_t)ni - 1) ||
            (uint32_t)no < min_out ||
            (no > 0 && !port_decl(t->outputs, t->num_outputs, (uint32_t)no - 1))) {
            {
                bool in_bad = (uint32_t)ni < min_in ||
                              (ni > 0 && !port_decl(t->inputs, t->num_inputs, (uint32_t)ni - 1));
                ERRF("graph '%s': node '%s' (type '%s') has %d %s; the type takes %u%s", p->name,
                     n->name, t->name, in_bad ? ni : no, in_bad ? "inputs" : "outputs",
                     in_bad ? min_in : min_out,
                     (in_bad ? (t->num_inputs &&
                                (t->inputs[t->num_inputs - 1].flags & KS_PORT_REPEATED))
                             : (t->num_outputs &&
                                (t->outputs[t->num_outputs - 1].flags & KS_PORT_REPEATED)))
                         ? " or more"
                         : (in_bad ? " (plus optional ones)" : ""));
            }
            return KS_STATUS_INVALID_ARGUMENT;
        }
        n->num_inputs = (uint32_t)ni;
        n->num_outputs = (uint32_t)no;
        n->inputs = ks__calloc(&p->alloc, (size_t)ni + 1, sizeof(int32_t));
        n->outputs = ks__calloc(&p->alloc, (size_t)no + 1, sizeof(int32_t));
        n->input_types = ks__calloc(&p->alloc, (size_t)ni + 1, sizeof(ks_packet_type));
        n->output_types = ks__calloc(&p->alloc, (size_t)no + 1, sizeof(ks_packet_type));
        if (!n->inputs || !n->outputs || !n->input_types || !n->output_types) goto oom;
        for (int k = 0; k < no; k++) {
            const cJSON *s = cJSON_GetArrayItem(outs, k);
            st = check_name(s, "output stream name", p->name, err, err_cap);
            if (st) return st;
            n->outputs[k] = -1;
            if (!s->valuestring[0]) continue; /* "" leaves an output unused */
            int32_t prev = find_stream(p, s->valuestring);
            if (prev >= 0) {
                const ks__stream *ps = &p->streams[prev];
                ERRF("graph '%s': stream '%s' is produced twice: by node '%s' output %d and by "
                     "%s%s%s",
                     p->name, s->valuestring, n->name, k,
                     ps->producer < 0 ? "the graph inputs" : "node '",
                     ps->producer < 0 ? "" : p->nodes[ps->producer].name,
                     ps->producer < 0 ? "" : "'");
                return KS_STATUS_INVALID_ARGUMENT;
            }
            st = add_stream(p, s->valuestring, j, (uint32_t)k, &n->outputs[k], err, err_cap);
            if (st) return st;
        }
    }
    /* Inputs, now that every produced stream is known. */
    for (uint32_t j = 0; j < p->num_nodes; j++) {
        ks__pnode *n = &p->nodes[j];
        const cJSON *ins =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(nodes, (int)j), "inputs");
        for (uint32_t k = 0; k < n->num_inputs; k++) {
            const cJSON *s = cJSON_GetArrayItem(ins, (int)k);
            const ks_port *decl = port_decl(n->type->inputs, n->type->num_inputs, k);
            st = check_name(s, "input stream name", p->name, err, err_cap);
            if (st) return st;
            n->inputs[k] = -1;
            if (!s->valuestring[0]) {
                if (decl->flags & KS_PORT_OPTIONAL) continue;
                ERRF("graph '%s': node '%s' input %u ('%s') is required but unconnected", p->name,
                     n->name, (unsigned)k, decl->name);
                return KS_STATUS_INVALID_ARGUMENT;
            }
            n->inputs[k] = find_stream(p, s->valuestring);
            if (n->inputs[k] < 0) {
                ERRF("graph '%s': node '%s' input %u ('%s'): unknown stream '%s' (no node or "
                     "graph input produces it)",
                     p->name, n->name, (unsigned)k, decl->name, s->valuestring);
                return KS_STATUS_INVALID_ARGUMENT;
            }
        }
    }
    for (int i = 0; i < num_out; i++) {
        const cJSON *s = cJSON_GetArrayItem(outputs, i);
        st = check_name(s, "graph output name", p->name, err, err_cap);
        if (st) return st;
        int32_t id = find_stream(p, s->valuestring);
        if (id < 0) {
            ERRF("graph '%s': graph output '%s': unknown stream (no node or graph input "
                 "produces it)",
                 p->name, s->valuestring);
            return KS_STATUS_INVALID_ARGUMENT;
        }
        p->outputs[p->num_outputs++] = id;
    }
    return KS_STATUS_OK;
oom:
    ERRF("graph '%s': out of memory", p->name);
    return KS_STATUS_OUT_OF_MEMORY;
}

/* Resolves stream types (pass-through ports take their input's type; loops need several passes)
 * and checks every connection against the consumer's declared port type. */
static ks_status check_types(ks_pipeline *p, char *err, size_t err_cap) {
    for (uint32_t s = 0; s < p->num_streams; s++) {
        ks__stream *st = &p->streams[s];
        if (st->producer < 0) continue;
        const ks__pnode *n = &p->nodes[st->producer];
        const ks_port *d = port_decl(n->type->outputs, n->type->num_outputs, st->producer_port);
        st->type = d->like_input >= 0 ? KS_PACKET_ANY : d->type;
        st->elem_type = d->like_input >= 0 ? KS_PACKET_ANY : d->elem_type;
    }
    bool changed = true;
    for (uint32_t pass = 0; changed && pass <= p->num_nodes + 1; pass++) {
        changed = false;
        for (uint32_t s = 0; s < p->num_streams; s++) {
            ks__stream *st = &p->streams[s];
            if (st->producer < 0 || st->type != KS_PACKET_ANY) continue;
            const ks__pnode *n = &p->nodes[st->producer];
            const ks_port *d = port_decl(n->type->outputs, n->type->num_outputs, st->producer_port);
            if (d->like_input < 0 || (uint32_t)d->like_input >= n->num_inputs) continue;
            int32_t src = n->inputs[d->like_input];
            if (src < 0 || p->streams[src].type == KS_PACKET_ANY) continue;
            st->type = p->streams[src].type;
            st->elem_type = p->streams[src].elem_type;
            changed = true;
        }
    }
    for (uint32_t j = 0; j < p->num_nodes; j++) {
        ks__pnode *n = &p->nodes[j];
        for (uint32_t k = 0; k < n->num_inputs; k++) {
            const ks_port *d = port_decl(n->type->inputs, n->type->num_inputs, k);
            if (n->inputs[k] < 0) {
                n->input_types[k] = d->type;
                continue;
            }
            const ks__stream *s = &p->streams[n->inputs[k]];
            n->input_types[k] = s->type != KS_PACKET_ANY ? s->type : d->type;
            bool bad = d->type != KS_PACKET_ANY && s->type != KS_PACKET_ANY && d->type != s->type;
            bool bad_elem = !bad && d->type == KS_PACKET_LIST && d->elem_type != KS_PACKET_ANY &&
                            s->elem_type != KS_PACKET_ANY && d->elem_type != s->elem_type;
            if (bad || bad_elem) {
                char from[KS_PIPELINE_MAX_NAME_BYTES + 32];
                if (s->producer < 0)
                    snprintf(from, sizeof(from), "graph input");
                else
                    snprintf(from, sizeof(from), "node '%s' output %u", p->nodes[s->producer].name,
                             (unsigned)s->producer_port);
                ERRF("graph '%s': type mismatch: node '%s' input %u ('%s') takes %s%s%s but "
                     "stream '%s' from %s is %s%s%s",
                     p->name, n->name, (unsigned)k, d->name, ks_packet_type_string(d->type),
                     bad_elem ? " of " : "", bad_elem ? ks_packet_type_string(d->elem_type) : "",
                     s->name, from, ks_packet_type_string(s->type), bad_elem ? " of " : "",
                     bad_elem ? ks_packet_type_string(s->elem_type) : "");
                return KS_STATUS_INVALID_ARGUMENT;
            }
        }
        for (uint32_t k = 0; k < n->num_outputs; k++) {
            const ks_port *d = port_decl(n->type->outputs, n->type->num_outputs, k);
            n->output_types[k] = n->outputs[k] >= 0 ? p->streams[n->outputs[k]].type : d->type;
        }
    }
    return KS_STATUS_OK;
}

/* Kahn's algorithm over non-loopback edges, lowest JSON index first among ready nodes. */
static ks_status schedule(ks_pipeline *p, char *err, size_t err_cap) {
    ks_status st = KS_STATUS_OK;
    uint32_t n = p->num_nodes;
    uint32_t *pending = ks__calloc(&p->alloc, n + 1, sizeof(uint32_t));
    uint32_t *order = ks__calloc(&p->alloc, n + 1, sizeof(uint32_t));
    bool *done = ks__calloc(&p->alloc, n + 1, sizeof(bool));
    ks__pnode *sorted = ks__calloc(&p->alloc, n + 1, sizeof(ks__pnode));
    if (!pending || !order || !done || !sorted) {
        ERRF("graph '%s': out of memory scheduling", p->name);
        st = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    for (uint32_t j = 0; j < n; j++)
        for (uint32_t k = 0; k < p->nodes[j].num_inputs; k++) {
            int32_t s = p->nodes[j].inputs[k];
            const ks_port *d = port_decl(p->nodes[j].type->inputs, p->nodes[j].type->num_inputs, k);
            if (s >= 0 && p->streams[s].producer >= 0 && !(d->flags & KS_PORT_LOOPBACK))
                pending[j]++;
        }
    uint32_t num_done = 0;
    while (num_done < n) {
        uint32_t pick = n;
        for (uint32_t j = 0; j < n && pick == n; j++)
            if (!done[j] && pending[j] == 0) pick = j;
        if (pick == n) break;
        done[pick] = true;
        order[num_done++] = pick;
        for (uint32_t j = 0; j < n; j++)
            for (uint32_t k = 0; k < p->nodes[j].num_inputs; k++) {
                int32_t s = p->nodes[j].inputs[k];
                const ks_port *d =
                    port_decl(p->nodes[j].type->inputs, p->nodes[j].type->num_inputs, k);
                if (s >= 0 && p->streams[s].producer == (int32_t)pick &&
                    !(d->flags & KS_PORT_LOOPBACK))
                    pending[j]--;
            }
    }
    if (num_done < n) {
        /* Walk back along unscheduled producers until a node repeats: that is the cycle. */
        uint32_t cur = 0;
        while (done[cur])
            cur++;
        size_t used = 0;
        int w = snprintf(err, err_cap,
                         "graph '%s': cycle without a 'previous' node (only a 'previous' node "
                         "may close a loop): node '%s'",
                         p->name, p->nodes[cur].name);
        used = w > 0 ? (size_t)w : 0;
        for (uint32_t steps = 0; steps < n; steps++) {
            const ks__pnode *nd = &p->nodes[cur];
            uint32_t next = n;
            const char *via = "";
            for (uint32_t k = 0; k < nd->num_inputs && next == n; k++) {
                int32_t s = nd->inputs[k];
                const ks_port *d = port_decl(nd->type->inputs, nd->type->num_inputs, k);
                if (s >= 0 && p->streams[s].producer >= 0 && !(d->flags & KS_PORT_LOOPBACK) &&
                    !done[p->streams[s].producer]) {
                    next = (uint32_t)p->streams[s].producer;
                    via = p->streams[s].name;
                }
            }
            if (next == n) break;
            pending[cur] = UINT32_MAX; /* visited */
            if (used < err_cap) {
                w = snprintf(err + used, err_cap - used, " <- stream '%s' <- node '%s'", via,
                             p->nodes[next].name);
                used += w > 0 ? (size_t)w : 0;
            }
            /* The walk may start downstream of the cycle; it ends once it comes around. */
            cur = next;
            if (pending[cur] == UINT32_MAX) break;
        }
        st = KS_STATUS_INVALID_ARGUMENT;
        goto error;
    }
    for (uint32_t i = 0; i < n; i++)
        sorted[i] = p->nodes[order[i]];
    /* Stream producers refer to node positions: remap them to the new order. */
    for (uint32_t s = 0; s < p->num_streams; s++)
        if (p->streams[s].producer >= 0)
            for (uint32_t i = 0; i < n; i++)
                if (order[i] == (uint32_t)p->streams[s].producer) {
                    p->streams[s].producer = (int32_t)i;
                    break;
                }
    ks__free(&p->alloc, p->nodes);
    p->nodes = sorted;
    sorted = NULL;
error:
    ks__free(&p->alloc, pending);
    ks__free(&p->alloc, order);
    ks__free(&p->alloc, done);
    ks__free(&p->alloc, sorted);
    return st;
}

static ks_status create_nodes(ks_pipeline *p, const cJSON *graph, const cJSON *side,
                              const ks_pipeline_desc *desc, const ks_bundle *bundle, uint32_t depth,
                              char *err, size_t err_cap) {
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(graph, "nodes");
    /* Subgraphs allocate from this graph's allocator (the root's pool). */
    ks_pipeline_desc child_desc = desc ? *desc : (ks_pipeline_desc){0};
    child_desc.allocator = &p->alloc;
    ks__subgraph_env env = {.side = side, .desc = &child_desc, .bundle = bundle, .depth = depth};
    for (uint32_t i = 0; i < p->num_nodes; i++) {
        ks__pnode *n = &p->nodes[i];
        const cJSON *nj = cJSON_GetArrayItem(nodes, (int)n->json_index);
        const cJSON *opts = cJSON_GetObjectItemCaseSensitive(nj, "options");
        if (opts && !cJSON_IsObject(opts)) {
            ERRF("graph '%s': node '%s': \"options\" must be an object", p->name, n->name);
            return KS_STATUS_INVALID_ARGUMENT;
        }
        cJSON *own = opts ? cJSON_Duplicate(opts, 1) : cJSON_CreateObject();
        if (!own) {
            ERRF("graph '%s': node '%s': out of memory copying options", p->name, n->name);
            return KS_STATUS_OUT_OF_MEMORY;
        }
        char node_err[KS_ERROR_CAP];
        node_err[0] = '\0';
        ks_status st = substitute(own, side, n->name, node_err, sizeof(node_err));
        if (!st) {
            ks_node_options o = {
                .json = own, .env = &env, .error = node_err, .error_cap = sizeof(node_err)};
            ks_node_init init = {.node_name = n->name,
                                 .options = &o,
                                 .num_inputs = n->num_inputs,
                                 .num_outputs = n->num_outputs,
                                 .input_types = n->input_types,
                                 .output_types = n->output_types,
                                 .allocator = &p->alloc,
                                 .bundle = bundle,
                                 .model_dir = desc ? desc->model_dir : NULL,
                                 .error = node_err,
                                 .error_cap = sizeof(node_err)};
            st = n->type->create(&init, &n->state);
            if (st && !node_err[0])
                snprintf(node_err, sizeof(node_err), "%s", ks_status_string(st));
        }
        cJSON_Delete(own);
        if (st) {
            if (strncmp(node_err, "node '", 6) == 0)
                ERRF("graph '%s': %s", p->name, node_err);
            else
                ERRF("graph '%s': node '%s' (type '%s'): %s", p->name, n->name, n->type->name,
                     node_err);
            return st;
        }
    }
    return KS_STATUS_OK;
}

ks_status ks__pipeline_build(const cJSON *graph, const cJSON *outer_side,
                             const ks_pipeline_desc *desc, const ks_bundle *bundle, uint32_t depth,
                             ks_pipeline **out, char *err, size_t err_cap) {
    ks_status st = KS_STATUS_OK;
    cJSON *side = NULL;
    ks_pipeline *p = NULL;
    ks_allocator a = ks__allocator_or_default(desc ? desc->allocator : NULL);
    if (!cJSON_IsObject(graph)) {
        ERRF("graph document must be a JSON object");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (depth > KS_PIPELINE_MAX_SUBGRAPH_DEPTH) {
        ERRF("subgraphs nested deeper than KS_PIPELINE_MAX_SUBGRAPH_DEPTH (%u)",
             (unsigned)KS_PIPELINE_MAX_SUBGRAPH_DEPTH);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    p = ks__calloc(&a, 1, sizeof(*p));
    if (!p) {
        ERRF("out of memory creating a pipeline");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    p->obj.magic = KS__OBJECT_MAGIC;
    p->alloc = a;
    p->app_alloc = a;
    p->is_subgraph = depth > 0;
    if (depth == 0) {
        /* Everything else — graph structures, node state, every frame's packets and scratch —
         * comes from the graph's pool, so steady frames do not call the app's allocator.
         * Subgraphs get the pool's allocator through their desc (create_nodes). */
        if (ks__blockpool_create(&a, &p->pool) != KS_STATUS_OK) {
            ks__free(&a, p);
            ERRF("out of memory creating a pipeline");
            return KS_STATUS_OUT_OF_MEMORY;
        }
        p->alloc = ks__blockpool_allocator(p->pool);
        a = p->alloc;
    }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(graph, "name");
    if (name) {
        st = check_name(name, "graph name", "?", err, err_cap);
        if (st) goto error;
    }
    p->name = ks__strdup(&a, name ? name->valuestring : "main");
    if (!p->name) {
        ERRF("out of memory creating a pipeline");
        st = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    const cJSON *gside = cJSON_GetObjectItemCaseSensitive(graph, "side_params");
    if (gside && !cJSON_IsObject(gside)) {
        ERRF("graph '%s': \"side_params\" must be an object", p->name);
        st = KS_STATUS_INVALID_ARGUMENT;
        goto error;
    }
    st = merge_side(gside, outer_side, &side, err, err_cap);
    if (st) goto error;
    st = parse_structure(p, graph, err, err_cap);
    if (!st) st = check_types(p, err, err_cap);
    if (!st) st = schedule(p, err, err_cap);
    if (!st) st = create_nodes(p, graph, side, desc, bundle, depth, err, err_cap);
    if (st) goto error;
    p->out_needed = ks__calloc(&a, p->num_outputs + 1, 1);
    p->stream_needed = ks__calloc(&a, p->num_streams + 1, 1);
    if (!p->out_needed || !p->stream_needed) {
        ERRF("out of memory creating a pipeline");
        st = KS_STATUS_OUT_OF_MEMORY;
        goto error;
    }
    for (uint32_t i = 0; i < p->num_outputs; i++)
        p->out_needed[i] = 1;
    if ((st = ks__pipeline_apply_demand(p))) {
        ERRF("%s", p->obj.error);
        goto error;
    }
    cJSON_Delete(side);
    *out = p;
    return KS_STATUS_OK;
error:
    cJSON_Delete(side);
    ks_pipeline_destroy(p);
    return st;
}

/* Desc side parameters become a JSON object; values that parse as JSON keep their type. */
static ks_status desc_side(const ks_pipeline_desc *desc, cJSON **out, char *err, size_t err_cap) {
    *out = NULL;
    if (!desc || !desc->num_side_params) return KS_STATUS_OK;
    if (!desc->side_params || desc->num_side_params > KS_PIPELINE_MAX_STREAMS) {
        ERRF("ks_pipeline_desc: side_params is NULL or has more than %u entries",
             (unsigned)KS_PIPELINE_MAX_STREAMS);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    cJSON *o = cJSON_CreateObject();
    if (!o) goto oom;
    for (uint32_t i = 0; i < desc->num_side_params; i++) {
        const ks_side_param *sp = &desc->side_params[i];
        if (!sp->name || !sp->value || strlen(sp->name) >= KS_PIPELINE_MAX_NAME_BYTES) {
            ERRF("ks_pipeline_desc: side parameter %u has no name or value", (unsigned)i);
            cJSON_Delete(o);
            return KS_STATUS_INVALID_ARGUMENT;
        }
        cJSON *v = NULL;
        char tmp[KS_ERROR_CAP];
        if (ks__json_parse(sp->value, strlen(sp->value), sp->name, &v, tmp, sizeof(tmp)) !=
            KS_STATUS_OK)
            v = cJSON_CreateString(sp->value);
        if (!v) goto oom;
        cJSON_DeleteItemFromObjectCaseSensitive(o, sp->name);
        if (!cJSON_AddItemToObject(o, sp->name, v)) {
            cJSON_Delete(v);
            goto oom;
        }
    }
    *out = o;
    return KS_STATUS_OK;
oom:
    cJSON_Delete(o);
    ERRF("out of memory reading side parameters");
    return KS_STATUS_OUT_OF_MEMORY;
}

static ks_status create_from_text(const char *json, size_t size_bytes, const char *source,
                                  const ks_pipeline_desc *desc, const ks_bundle *bundle,
                                  ks_pipeline **pipeline_out) {
    char err[KS_ERROR_CAP];
    err[0] = '\0';
    if (desc && ((int)desc->precision < 0 || desc->precision >= KS_PRECISION_COUNT)) {
        ks__object_error(NULL, "ks_pipeline_desc.precision %d is not a ks_precision",
                         (int)desc->precision);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (desc && ((int)desc->backend < 0 || desc->backend >= KS_BACKEND_COUNT)) {
        ks__object_error(NULL, "ks_pipeline_desc.backend %d is not a ks_backend",
                         (int)desc->backend);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    cJSON *root = NULL, *side = NULL;
    ks_status st = ks__json_parse(json, size_bytes, source, &root, err, sizeof(err));
    if (!st) st = desc_side(desc, &side, err, sizeof(err));
    if (!st) st = ks__pipeline_build(root, side, desc, bundle, 0, pipeline_out, err, sizeof(err));
    cJSON_Delete(root);
    cJSON_Delete(side);
    if (st) ks__object_error(NULL, "%s", err);
    return st;
}

ks_status ks_pipeline_create_json(const char *json, size_t size_bytes, const ks_pipeline_desc *desc,
                                  ks_pipeline **pipeline_out) {
    if (!json || !pipeline_out) {
        ks__object_error(NULL, "ks_pipeline_create_json: json and pipeline_out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    return create_from_text(json, size_bytes, "graph JSON", desc, NULL, pipeline_out);
}

ks_status ks_pipeline_create_bundle(const ks_bundle *bundle, const ks_pipeline_desc *desc,
                                    ks_pipeline **pipeline_out) {
    if (!bundle || !pipeline_out) {
        ks__object_error(NULL, "ks_pipeline_create_bundle: bundle and pipeline_out must not be "
                               "NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    const char *entry_name = desc && desc->graph_entry ? desc->graph_entry : "graph";
    ks_bundle_entry e;
    if (ks_bundle_find(bundle, entry_name, &e) != KS_STATUS_OK || e.kind != KS_BUNDLE_GRAPH) {
        ks__object_error(NULL, "ks_pipeline_create_bundle: bundle has no graph entry '%s'",
                         entry_name);
        return KS_STATUS_INVALID_MODEL;
    }
    char source[KS_BUNDLE_NAME_BYTES + 16];
    snprintf(source, sizeof(source), "bundle entry '%s'", entry_name);
    return create_from_text(e.data, e.size_bytes, source, desc, bundle, pipeline_out);
}

static void release_frame(ks_pipeline *p) {
    for (uint32_t s = 0; s < p->num_streams; s++) {
        ks_packet_release(p->streams[s].packet);
        p->streams[s].packet = NULL;
    }
}

void ks_pipeline_destroy(ks_pipeline *p) {
    if (!p) return;
    ks_allocator a = p->alloc;
    if (p->streams) release_frame(p);
    for (uint32_t j = 0; j < p->num_nodes && p->nodes; j++) {
        ks__pnode *n = &p->nodes[j];
        if (n->state && n->type->destroy) n->type->destroy(n->state, &a);
        ks__free(&a, n->name);
        ks__free(&a, n->inputs);
        ks__free(&a, n->outputs);
        ks__free(&a, n->input_types);
        ks__free(&a, n->output_types);
    }
    for (uint32_t s = 0; s < p->num_streams; s++)
        ks__free(&a, p->streams[s].name);
    ks__free(&a, p->streams);
    ks__free(&a, p->out_needed);
    ks__free(&a, p->stream_needed);
    ks__free(&a, p->nodes);
    ks__free(&a, p->inputs);
    ks__free(&a, p->outputs);
    ks__free(&a, p->name);
    ks__blockpool *pool = p->pool;
    ks_allocator app = p->app_alloc;
    ks__free(&app, p);
    ks__blockpool_release(pool);
}

/* ---------------------------------------------------------------------------------------------
 * Running
 * ------------------------------------------------------------------------------------------- */

static uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint32_t ks_node_num_inputs(const ks_node_ctx *ctx) {
    return ctx ? ctx->node->num_inputs : 0;
}

uint32_t ks_node_num_outputs(const ks_node_ctx *ctx) {
    return ctx ? ctx->node->num_outputs : 0;
}

const ks_packet *ks_node_input(const ks_node_ctx *ctx, uint32_t index) {
    if (!ctx || index >= ctx->node->num_inputs || ctx->node->inputs[index] < 0) return NULL;
    const ks__pnode *n = ctx->node;
    const ks_port *d = port_decl(n->type->inputs, n->type->num_inputs, index);
    /* During process, loopback inputs read as absent: their producers run later this frame. */
    if ((d->flags & KS_PORT_LOOPBACK) && !ctx->after_frame) return NULL;
    return ctx->pipeline->streams[n->inputs[index]].packet;
}

ks_status ks_node_output(ks_node_ctx *ctx, uint32_t index, ks_packet *packet) {
    if (!ctx || !packet) {
        ks_packet_release(packet);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks__pnode *n = ctx->node;
    if (index >= n->num_outputs) {
        ks_packet_release(packet);
        return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT,
                            "output %u does not exist (%u outputs)", (unsigned)index,
                            (unsigned)n->num_outputs);
    }
    ks_packet_type want = n->output_types[index];
    if (want != KS_PACKET_ANY && packet->type != want) {
        ks_packet_release(packet);
        return ks_node_fail(ctx, KS_STATUS_INTERNAL,
                            "output %u emitted a %s packet; it is declared %s", (unsigned)index,
                            ks_packet_type_string(packet->type), ks_packet_type_string(want));
    }
    ks__packet_stamp(packet, ctx->timestamp_us);
    ks_packet_publish(packet);
    if (n->outputs[index] < 0) {
        ks_packet_release(packet);
        return KS_STATUS_OK;
    }
    ks__stream *s = &ctx->pipeline->streams[n->outputs[index]];
    if (s->packet) {
        ks_packet_release(packet);
        return ks_node_fail(ctx, KS_STATUS_INTERNAL, "output %u ('%s') emitted twice in one frame",
                            (unsigned)index, s->name);
    }
    s->packet = packet;
    return KS_STATUS_OK;
}

int ks_node_output_needed(const ks_node_ctx *ctx, uint32_t index) {
    if (!ctx || index >= ctx->node->num_outputs || ctx->node->outputs[index] < 0) return 0;
    return ctx->pipeline->stream_needed[ctx->node->outputs[index]];
}

/* Streams are needed when a needed graph output or an input of a running node reads them (or
 * nothing reads them); a node runs when one of its outputs is needed (or it has none: a sink).
 * Loopback inputs read streams produced later in the schedule, hence the repeat until nothing
 * changes. */
ks_status ks__pipeline_apply_demand(ks_pipeline *p) {
    /* A stream nothing reads (not even a graph output) counts as needed: its node may be a sink
     * with effects of its own, and only a caller's "not needed" makes a node idle. */
    memset(p->stream_needed, 1, p->num_streams);
    for (uint32_t i = 0; i < p->num_outputs; i++)
        p->stream_needed[p->outputs[i]] = 0;
    for (uint32_t j = 0; j < p->num_nodes; j++)
        for (uint32_t k = 0; k < p->nodes[j].num_inputs; k++)
            if (p->nodes[j].inputs[k] >= 0) p->stream_needed[p->nodes[j].inputs[k]] = 0;
    for (uint32_t i = 0; i < p->num_outputs; i++)
        if (p->out_needed[i]) p->stream_needed[p->outputs[i]] = 1;
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t j = p->num_nodes; j-- > 0;) {
            ks__pnode *n = &p->nodes[j];
            bool any_out = false, live = false;
            for (uint32_t k = 0; k < n->num_outputs; k++) {
                if (n->outputs[k] < 0) continue;
                any_out = true;
                live |= p->stream_needed[n->outputs[k]] != 0;
            }
            n->idle = any_out && !live;
            for (uint32_t k = 0; !n->idle && k < n->num_inputs; k++) {
                int32_t sid = n->inputs[k];
                if (sid >= 0 && !p->stream_needed[sid]) {
                    p->stream_needed[sid] = 1;
                    changed = true;
                }
            }
        }
    }
    for (uint32_t j = 0; j < p->num_nodes; j++) {
        ks__pnode *n = &p->nodes[j];
        uint8_t needed[KS_PIPELINE_MAX_STREAMS];
        uint32_t no =
            n->num_outputs < KS_PIPELINE_MAX_STREAMS ? n->num_outputs : KS_PIPELINE_MAX_STREAMS;
        for (uint32_t k = 0; k < no; k++)
            needed[k] = !n->idle && n->outputs[k] >= 0 && p->stream_needed[n->outputs[k]];
        ks_status st = KS_STATUS_OK;
        char err[KS_ERROR_CAP] = "";
        ks_pipeline *child = (ks_pipeline *)ks__node_subgraph(n->type, n->state);
        if (n->type == &ks__infer_type) {
            st = ks__infer_set_needed(n->state, needed, no, err, sizeof(err));
        } else if (child) {
            bool child_changed = false;
            for (uint32_t k = 0; k < no && k < child->num_outputs; k++)
                if (child->out_needed[k] != needed[k]) {
                    child->out_needed[k] = needed[k];
                    child_changed = true;
                }
            if (child_changed) st = ks__pipeline_apply_demand(child);
            if (st) snprintf(err, sizeof(err), "%s", child->obj.error);
        }
        if (st) {
            ks__object_error(&p->obj, "graph '%s': node '%s': %s", p->name, node_label(n), err);
            return st;
        }
    }
    return KS_STATUS_OK;
}

ks_status ks_pipeline_set_output_needed(ks_pipeline *p, uint32_t index, int needed) {
    if (!p) return KS_STATUS_INVALID_ARGUMENT;
    if (index >= p->num_outputs) {
        ks__object_error(&p->obj, "graph '%s': output index %u out of range (%u outputs)", p->name,
                         (unsigned)index, (unsigned)p->num_outputs);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    uint8_t v = needed ? 1 : 0;
    if (p->out_needed[index] == v) return KS_STATUS_OK;
    p->out_needed[index] = v;
    return ks__pipeline_apply_demand(p);
}

int64_t ks_node_timestamp_us(const ks_node_ctx *ctx) {
    return ctx ? ctx->timestamp_us : 0;
}

const ks_allocator *ks_node_allocator(const ks_node_ctx *ctx) {
    return ctx ? &ctx->pipeline->alloc : NULL;
}

ks_status ks_node_fail(ks_node_ctx *ctx, ks_status status, const char *fmt, ...) {
    if (!ctx) return status;
    char msg[KS_ERROR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ks__object_error(&ctx->pipeline->obj, "graph '%s': node '%s' (type '%s') at %lld us: %s",
                     ctx->pipeline->name, node_label(ctx->node), ctx->node->type->name,
                     (long long)ctx->timestamp_us, msg);
    return status;
}

ks_status ks__pipeline_run(ks_pipeline *p, const ks_packet *const *inputs, int64_t timestamp_us,
                           ks_packet **outputs) {
    ks_status st = KS_STATUS_OK;
    release_frame(p);
    for (uint32_t i = 0; i < p->num_inputs; i++) {
        ks_packet *in = inputs ? (ks_packet *)inputs[i] : NULL;
        if (!in) continue;
        ks__stream *s = &p->streams[p->inputs[i]];
        if (s->type != KS_PACKET_ANY && in->type != s->type) {
            ks__object_error(&p->obj,
                             "graph '%s': input %u ('%s') is declared %s but got a %s "
                             "packet",
                             p->name, (unsigned)i, s->name, ks_packet_type_string(s->type),
                             ks_packet_type_string(in->type));
            st = KS_STATUS_INVALID_ARGUMENT;
            goto error;
        }
        ks_packet_publish(in);
        s->packet = ks_packet_retain(in);
    }
    for (uint32_t j = 0; j < p->num_nodes; j++) {
        ks__pnode *n = &p->nodes[j];
        if (n->idle) continue;
        bool ready = true;
        for (uint32_t k = 0; k < n->num_inputs && ready; k++) {
            const ks_port *d = port_decl(n->type->inputs, n->type->num_inputs, k);
            if (d->flags & (KS_PORT_OPTIONAL | KS_PORT_LOOPBACK)) continue;
            if (n->inputs[k] < 0 || !p->streams[n->inputs[k]].packet) ready = false;
        }
        if (!ready) continue;
        ks_node_ctx ctx = {.pipeline = p, .node = n, .timestamp_us = timestamp_us};
        uint64_t t0 = now_us();
        st = n->type->process(n->state, &ctx);
        uint64_t dt = now_us() - t0;
        n->num_calls++;
        n->total_us += dt;
        if (dt > n->max_us) n->max_us = dt;
        if (st) {
            if (!p->obj.error[0] || strstr(p->obj.error, n->name) == NULL)
                ks_node_fail(&ctx, st, "process failed: %s", ks_status_string(st));
            goto error;
        }
    }
    for (uint32_t j = 0; j < p->num_nodes; j++) {
        ks__pnode *n = &p->nodes[j];
        if (!n->type->after_frame || n->idle) continue;
        ks_node_ctx ctx = {
            .pipeline = p, .node = n, .timestamp_us = timestamp_us, .after_frame = true};
        st = n->type->after_frame(n->state, &ctx);
        if (st) goto error;
    }
    for (uint32_t i = 0; i < p->num_outputs; i++)
        outputs[i] = p->out_needed[i] ? ks_packet_retain(p->streams[p->outputs[i]].packet) : NULL;
    release_frame(p);
    return KS_STATUS_OK;
error:
    release_frame(p);
    return st;
}

ks_status ks_pipeline_process(ks_pipeline *p, const ks_packet *const *inputs, int64_t timestamp_us,
                              ks_packet **outputs) {
    if (!p) {
        ks__object_error(NULL, "ks_pipeline_process: pipeline is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if ((p->num_inputs && !inputs) || (p->num_outputs && !outputs)) {
        ks__object_error(&p->obj, "ks_pipeline_process: inputs/outputs arrays must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    for (uint32_t i = 0; i < p->num_outputs; i++)
        outputs[i] = NULL;
    if (p->started && timestamp_us <= p->last_timestamp_us) {
        ks__object_error(&p->obj,
                         "graph '%s': timestamp %lld us is not after the previous frame's "
                         "%lld us",
                         p->name, (long long)timestamp_us, (long long)p->last_timestamp_us);
        return KS_STATUS_INVALID_STATE;
    }
    ks_status st = ks__pipeline_run(p, inputs, timestamp_us, outputs);
    if (st) return st;
    p->started = true;
    p->last_timestamp_us = timestamp_us;
    return KS_STATUS_OK;
}

void ks_pipeline_reset(ks_pipeline *p) {
    if (!p) return;
    release_frame(p);
    for (uint32_t j = 0; j < p->num_nodes; j++)
        if (p->nodes[j].type->reset) p->nodes[j].type->reset(p->nodes[j].state);
    p->started = false;
    p->last_timestamp_us = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Accessors
 * ------------------------------------------------------------------------------------------- */

uint32_t ks_pipeline_num_inputs(const ks_pipeline *p) {
    return p ? p->num_inputs : 0;
}

uint32_t ks_pipeline_num_outputs(const ks_pipeline *p) {
    return p ? p->num_outputs : 0;
}

const char *ks_pipeline_input_name(const ks_pipeline *p, uint32_t index) {
    return p && index < p->num_inputs ? p->streams[p->inputs[index]].name : NULL;
}

const char *ks_pipeline_output_name(const ks_pipeline *p, uint32_t index) {
    return p && index < p->num_outputs ? p->streams[p->outputs[index]].name : NULL;
}

int32_t ks_pipeline_input_index(const ks_pipeline *p, const char *name) {
    for (uint32_t i = 0; p && name && i < p->num_inputs; i++)
        if (strcmp(p->streams[p->inputs[i]].name, name) == 0) return (int32_t)i;
    return -1;
}

int32_t ks_pipeline_output_index(const ks_pipeline *p, const char *name) {
    for (uint32_t i = 0; p && name && i < p->num_outputs; i++)
        if (strcmp(p->streams[p->outputs[i]].name, name) == 0) return (int32_t)i;
    return -1;
}

uint32_t ks_pipeline_num_nodes(const ks_pipeline *p) {
    return p ? p->num_nodes : 0;
}

ks_status ks_pipeline_node_stats(const ks_pipeline *p, uint32_t index, ks_node_stats *stats_out) {
    if (!p || !stats_out || index >= p->num_nodes) return KS_STATUS_INVALID_ARGUMENT;
    const ks__pnode *n = &p->nodes[index];
    stats_out->node_name = n->name;
    stats_out->type_name = n->type->name;
    stats_out->num_calls = n->num_calls;
    stats_out->total_us = n->total_us;
    stats_out->max_us = n->max_us;
    stats_out->mean_us = n->num_calls ? (double)n->total_us / (double)n->num_calls : 0.0;
    return KS_STATUS_OK;
}

const ks_pipeline *ks_pipeline_node_subgraph(const ks_pipeline *p, uint32_t index) {
    if (!p || index >= p->num_nodes) return NULL;
    return ks__node_subgraph(p->nodes[index].type, p->nodes[index].state);
}

bool ks__node_sole_consumer(const ks_node_ctx *ctx, uint32_t port, const ks_node_type **type_out,
                            void **state_out, uint32_t *input_out) {
    const ks_pipeline *p = ctx->pipeline;
    const ks__pnode *self = ctx->node;
    if (port >= self->num_outputs || self->outputs[port] < 0) return false;
    int32_t sid = self->outputs[port];
    for (uint32_t i = 0; i < p->num_outputs; i++)
        if (p->outputs[i] == sid) return false;
    const ks__pnode *found = NULL;
    uint32_t found_port = 0;
    for (uint32_t n = 0; n < p->num_nodes; n++) {
        const ks__pnode *node = &p->nodes[n];
        for (uint32_t k = 0; k < node->num_inputs; k++) {
            if (node->inputs[k] != sid) continue;
            if (found) return false;
            found = node;
            found_port = k;
        }
    }
    if (!found) return false;
    *type_out = found->type;
    *state_out = found->state;
    *input_out = found_port;
    return true;
}

const ks_allocator *ks_pipeline_packet_allocator(const ks_pipeline *p) {
    return p ? &p->alloc : NULL;
}
