/* ks_session: shape inference, reshape-time evaluation of shape arithmetic,
 * arena planning and execution.
 *
 * Reshape does everything that allocates: it infers every shape, evaluates
 * nodes whose value is already decidable (SHAPE and pure ops on constants/known
 * values, typically the shape arithmetic of dynamic ONNX graphs) into
 * session-owned buffers, and plans one arena for the rest. Run then only walks
 * the node list and calls kernels.
 *
 * Planning: tensors are grouped into buffers. A view op's
 * (RESHAPE/SQUEEZE/UNSQUEEZE) output joins its input's buffer, and an
 * elementwise unary op writes in place when its input buffer is dead after it.
 * The session decides these groups (it knows the ops); the planner (planner.h,
 * with its own unit tests) then places the buffers greedily, largest first, at
 * the lowest offset that does not collide with a placed buffer whose lifetime
 * overlaps (the classic offset-planning heuristic; see XNNPACK's memory planner
 * and TFLite's arena planner for the same idea).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "base/cpuinfo.h"
#include "base/pool.h"
#include "model.h"
#include "partition.h"
#include "planner.h"
#include "precision.h"
#include "session.h"
#include "shape.h"

#define KS_MAX_TENSOR_BYTES (UINT64_C(1) << 32)
#define KS_FOLD_MAX_BYTES (UINT64_C(1) << 24)
#define KS_DEFAULT_MAX_MEMORY_BYTES ((size_t)2 << 30)

/* T_DEVICE: produced and read only inside one device partition; the host holds no copy. */
enum { T_UNUSED = 0, T_CONST, T_KNOWN, T_ARENA, T_DEVICE };

struct ks_session {
    ks__object obj; /* must be first */
    const ks_model *model;
    const ks__graph *g;
    ks__graph *own_g; /* the mixed-precision copy g points to (precision.h), or NULL */
    ks_allocator alloc;
    uint32_t flags;
    size_t max_memory_bytes;
    const ks__backend *backend;
    const ks__kernel_table *kernels; /* the backend's reference kernels */

    ks__rt_tensor *rt;     /* per tensor */
    ks__rt_tensor **ptrs;  /* per node: inputs then outputs */
    uint32_t *ptr_off;     /* per node offset into ptrs */
    uint8_t *kind;         /* per tensor T_* */
    uint8_t *skip;         /* per node: evaluated at reshape */
    uint8_t *out_needed;   /* per graph output: ks_session_set_output_needed (default 1) */
    uint8_t *dead;         /* per node: feeds no needed output (set at reshape; not run) */
    uint8_t *need_t;       /* per tensor: reshape-time scratch of the liveness pass */
    size_t *scratch_bytes; /* per node */
    uint8_t **scratch;     /* per node */
    void **known_bufs;     /* reshape-time values, freed at the next reshape */
    uint32_t num_known_bufs;
    /* the arena planner (planner.h): buffers are tensors [0, nt) then per-node scratch */
    ks__planner plan;

    void *arena;
    size_t arena_bytes;
    bool ready;

    /* fast variants (kernel.h), chosen per node at reshape by the backend */
    uint32_t isa; /* the backend's features */
    ks__pool *pool;
    uint32_t num_threads;
    const ks__impl **impl; /* per node; NULL: reference kernel */
    void **packed;         /* per node, freed at the next reshape */
    size_t *packed_bytes;
    void *tuner; /* the backend's tuner; NULL: tuning off */

    /* device backend (backend.h, partition.h); NULL: everything runs on the host. The device
     * path's code is reached only through dev_ops, which only ks__session_create_split sets:
     * a build without a device backend (nothing calls that) leaves it out at link time. */
    const ks__backend *device;
    const struct device_ops *dev_ops;
    void *dev;
    uint8_t *place;          /* per node: KS__PLACE_* */
    uint8_t *from_dev;       /* per tensor: produced by a device partition */
    ks__partition_set parts; /* rebuilt at every reshape */
    void **progs;            /* per partition: the device's compiled program */
    uint8_t *pending;        /* per partition: submitted, not yet waited for */
    char (*part_names)[40];  /* per partition: shown by the profiler */

    ks_profile_fn prof;
    void *prof_user;
    char kerr[KS_ERROR_CAP - 32];
};

/* The device path (see dev_ops): planning, compiling, submitting and waiting for partitions. */
struct device_ops {
    ks_status (*plan)(ks_session *s);    /* after shape inference: partitions, device tensors */
    ks_status (*compile)(ks_session *s); /* end of reshape: the device prepares each partition */
    ks_status (*submit)(ks_session *s, uint32_t p); /* queues partition p, its inputs home */
    ks_status (*sync_for)(ks_session *s, const ks__node *n); /* before host node n */
    ks_status (*wait_all)(ks_session *s);                    /* the completion point */
    void (*free_plan)(ks_session *s);
};

static void free_plan(ks_session *s) {
    if (s->dev_ops) s->dev_ops->free_plan(s);
    for (uint32_t i = 0; i < s->num_known_bufs; i++)
        ks__free(&s->alloc, s->known_bufs[i]);
    s->num_known_bufs = 0;
    for (uint32_t i = 0; s->packed && s->packed_bytes && s->impl && i < s->g->num_nodes; i++) {
        ks__free(&s->alloc, s->packed[i]);
        s->packed[i] = NULL;
        s->packed_bytes[i] = 0;
        s->impl[i] = NULL;
    }
    ks__free(&s->alloc, s->arena);
    s->arena = NULL;
    s->arena_bytes = 0;
    s->ready = false;
}

void ks_session_destroy(ks_session *s) {
    if (!s) return;
    free_plan(s);
    ks_allocator a = s->alloc;
    ks__free(&a, s->rt);
    ks__free(&a, s->ptrs);
    ks__free(&a, s->ptr_off);
    ks__free(&a, s->kind);
    ks__free(&a, s->skip);
    ks__free(&a, s->out_needed);
    ks__free(&a, s->dead);
    ks__free(&a, s->need_t);
    ks__free(&a, s->scratch_bytes);
    ks__free(&a, s->scratch);
    ks__free(&a, s->known_bufs);
    ks__planner_free(&s->plan, &a);
    ks__free(&a, s->impl);
    ks__free(&a, s->packed);
    ks__free(&a, s->packed_bytes);
    ks__free(&a, s->place);
    ks__free(&a, s->from_dev);
    if (s->device) s->device->device_destroy(s->dev);
    if (s->backend && s->backend->tuner_destroy) s->backend->tuner_destroy(s->tuner);
    ks__pool_destroy(s->pool);
    if (s->own_g) {
        ks__graph_free(s->own_g);
        ks__free(&a, s->own_g);
    }
    s->obj.magic = 0;
    ks__free(&a, s);
}

ks_backend ks_session_backend(const ks_session *s) {
    if (!s || !s->device) return KS_BACKEND_CPU;
    return strcmp(s->device->name, "vulkan") == 0 ? KS_BACKEND_VULKAN : KS_BACKEND_OPENCL;
}

const ks__graph *ks__model_graph(const ks_model *m) {
    return m ? &m->graph : NULL;
}

void ks__session_adopt_graph(ks_session *s, ks__graph *graph) {
    s->own_g = graph;
}

static ks_status session_create(const ks_model *model, const ks__graph *graph,
                                const ks_session_desc *desc, const ks__backend *backend,
                                const ks__backend *device, const struct device_ops *dev_ops,
                                ks_session **session_out) {
    ks_allocator a =
        ks__allocator_or_default(desc && desc->allocator ? desc->allocator : &model->alloc);
    ks_session *s = ks__alloc(&a, sizeof(*s));
    if (!s) {
        ks__object_error(NULL, "out of memory creating a session");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    memset(s, 0, sizeof(*s));
    s->obj.magic = KS__OBJECT_MAGIC;
    s->alloc = a;
    s->model = model;
    s->g = graph;
    s->flags = desc ? desc->flags : 0;
    s->max_memory_bytes =
        desc && desc->max_memory_bytes ? desc->max_memory_bytes : KS_DEFAULT_MAX_MEMORY_BYTES;
    s->backend = backend;
    s->kernels = backend->kernels();

    const ks__graph *g = s->g;
    uint32_t nt = g->num_tensors ? g->num_tensors : 1, nn = g->num_nodes ? g->num_nodes : 1;
    size_t nptr = 1;
    for (uint32_t i = 0; i < g->num_nodes; i++)
        nptr += g->nodes[i].num_inputs + g->nodes[i].num_outputs;
    s->rt = ks__calloc(&a, nt, sizeof(*s->rt));
    s->ptrs = ks__calloc(&a, nptr, sizeof(*s->ptrs));
    s->ptr_off = ks__calloc(&a, nn, sizeof(*s->ptr_off));
    s->kind = ks__calloc(&a, nt, 1);
    s->skip = ks__calloc(&a, nn, 1);
    s->out_needed = ks__calloc(&a, g->num_outputs ? g->num_outputs : 1, 1);
    s->dead = ks__calloc(&a, nn, 1);
    s->need_t = ks__calloc(&a, nt, 1);
    s->scratch_bytes = ks__calloc(&a, nn, sizeof(size_t));
    s->scratch = ks__calloc(&a, nn, sizeof(uint8_t *));
    s->known_bufs = ks__calloc(&a, nt + nn, sizeof(void *));
    ks_status plan_st = ks__planner_alloc(&s->plan, &a, nt + nn);
    s->impl = ks__calloc(&a, nn, sizeof(*s->impl));
    s->packed = ks__calloc(&a, nn, sizeof(void *));
    s->packed_bytes = ks__calloc(&a, nn, sizeof(size_t));
    s->place = ks__calloc(&a, nn, 1);
    s->from_dev = ks__calloc(&a, nt, 1);
    if (!s->place || !s->from_dev || !s->out_needed || !s->dead || !s->need_t || !s->impl ||
        !s->packed || !s->packed_bytes || !s->rt || !s->ptrs || !s->ptr_off || !s->kind ||
        !s->skip || !s->scratch_bytes || !s->scratch || !s->known_bufs || plan_st) {
        ks_session_destroy(s);
        ks__object_error(NULL, "out of memory creating a session");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    for (uint32_t i = 0; i < g->num_outputs; i++)
        s->out_needed[i] = 1;
    s->isa = backend->features();
    /* fp16-arithmetic kernels round weights, activations and sums to fp16: only for a session
     * that asks for KS_PRECISION_FP16 (engine.h); other sessions never see the feature. */
    if (!desc || desc->precision != KS_PRECISION_FP16) s->isa &= ~KS_ISA_NEON_FP16;
    s->num_threads = desc && desc->num_threads > 0 ? (uint32_t)desc->num_threads : 1u;
    uint32_t pool_flags =
        desc && (desc->flags & KS_SESSION_NO_THREAD_AFFINITY) ? 0u : KS_POOL_BIND_CPUS;
    if (s->num_threads > 1 &&
        ks__pool_create_ex(&a, s->num_threads, pool_flags, &s->pool) != KS_STATUS_OK) {
        ks_session_destroy(s);
        ks__object_error(NULL, "cannot start %u threads", (unsigned)(desc ? desc->num_threads : 1));
        return KS_STATUS_OUT_OF_MEMORY;
    }
    /* Measured kernel choice: the backend's tuner copies the cache path. */
    if (desc && desc->tune != KS_TUNE_OFF && backend->tuner_create &&
        backend->tuner_create(&a, desc->tune, desc->tune_cache_path, &s->tuner) != KS_STATUS_OK) {
        ks_session_destroy(s);
        ks__object_error(NULL, "out of memory creating a session");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    if (device) {
        if (!device->device_create || !device->supports || !device->compile || !device->submit ||
            !device->wait || !device->release || !device->device_destroy) {
            ks_session_destroy(s);
            ks__object_error(NULL, "backend '%s' is not a device backend", device->name);
            return KS_STATUS_INVALID_ARGUMENT;
        }
        char derr[200] = "";
        ks_status dst = device->device_create(&a, desc, &s->dev, derr, sizeof(derr));
        if (dst) {
            ks_session_destroy(s);
            ks__object_error(NULL, "backend '%s': %s", device->name,
                             derr[0] ? derr : ks_status_string(dst));
            return dst;
        }
        s->device = device;
        s->dev_ops = dev_ops;
    }
    uint32_t p = 0;
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        s->ptr_off[i] = p;
        for (uint32_t k = 0; k < n->num_inputs; k++)
            s->ptrs[p++] = n->inputs[k] >= 0 ? &s->rt[n->inputs[k]] : NULL;
        for (uint32_t k = 0; k < n->num_outputs; k++)
            s->ptrs[p++] = &s->rt[n->outputs[k]];
    }
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__kernel *k = &s->kernels->k[g->nodes[i].op];
        if (!k->run) {
            ks__object_error(NULL, "node %u '%s': op '%s' has no CPU kernel in this build", i,
                             g->nodes[i].name, ks__op_get_info(g->nodes[i].op)->name);
            ks_session_destroy(s);
            return KS_STATUS_UNSUPPORTED;
        }
    }
    *session_out = s;
    return KS_STATUS_OK;
}

static void make_ctx(ks_session *s, uint32_t i, ks__kernel_ctx *ctx) {
    const ks__node *n = &s->g->nodes[i];
    memset(ctx, 0, sizeof(*ctx));
    ctx->node = n;
    ctx->node_index = i;
    ctx->in = &s->ptrs[s->ptr_off[i]];
    ctx->num_inputs = n->num_inputs;
    ctx->out = &s->ptrs[s->ptr_off[i] + n->num_inputs];
    ctx->num_outputs = n->num_outputs;
    ctx->err = s->kerr;
    ctx->err_cap = sizeof(s->kerr);
    ctx->pool = s->pool;
    ctx->num_threads = ks__pool_threads(s->pool);
    ctx->packed = s->packed[i];
    ctx->packed_bytes = s->packed_bytes[i];
}

static size_t align64(size_t n) {
    return (n + 63) & ~(size_t)63;
}

static bool same_quant(const ks__quant *a, const ks__quant *b) {
    if (a->count != b->count) return false;
    for (uint32_t c = 0; c < a->count; c++)
        if (a->scales[c] != b->scales[c] || a->zero_points[c] != b->zero_points[c]) return false;
    return true;
}

/* CONCAT written in place: when every input is one contiguous block of the output (all dims
 * before the axis are 1), each input's buffer is placed at its block of the output buffer, so
 * the producers write there and the concat does nothing. Only when it is safe and simple: no
 * fused activation, same dtype and quantization, inputs produced by earlier nodes of this
 * session and read by nothing after the concat (a later in-place op would overwrite the
 * output), each input its own buffer (no graph input, no repeated input, not already placed
 * elsewhere), and every block 64-byte aligned like any arena tensor. */
static bool concat_in_place(ks_session *s, uint32_t i) {
    const ks__graph *g = s->g;
    const ks__node *n = &g->nodes[i];
    if (n->op != KS_OP_CONCAT || n->num_outputs != 1 || n->ip[1] != KS_ACT_NONE ||
        n->num_inputs > 64)
        return false;
    int32_t out = n->outputs[0];
    if (out < 0 || s->kind[out] != T_ARENA) return false;
    const ks__rt_tensor *y = &s->rt[out];
    int32_t axis = n->ip[0] < 0 ? n->ip[0] + y->rank : n->ip[0];
    if (axis < 0 || axis >= y->rank) return false;
    for (int32_t a = 0; a < axis; a++)
        if (y->dims[a] != 1) return false;
    int32_t yroot = ks__planner_find(&s->plan, out);
    int32_t roots[64];
    size_t offs[64], off = 0;
    for (uint32_t k = 0; k < n->num_inputs; k++) {
        int32_t x = n->inputs[k];
        if (x < 0 || s->kind[x] != T_ARENA || s->plan.first[x] < 0 || s->rt[x].dtype != y->dtype ||
            !same_quant(s->rt[x].quant, y->quant) || off % 64 != 0)
            return false;
        int32_t r = ks__planner_find(&s->plan, x);
        if (r == yroot || s->plan.sub_base[r] >= 0) return false;
        for (uint32_t j = 0; j < k; j++)
            if (roots[j] == r) return false;
        /* every member of the group: produced before the concat, read by nothing after it */
        for (uint32_t t = 0; t < g->num_tensors; t++)
            if (s->kind[t] == T_ARENA && ks__planner_find(&s->plan, (int32_t)t) == r &&
                (s->plan.first[t] >= (int32_t)i || s->plan.last[t] > (int32_t)i ||
                 s->rt[t].size_bytes != s->rt[x].size_bytes))
                return false;
        roots[k] = r;
        offs[k] = off;
        off += s->rt[x].size_bytes;
    }
    if (off != y->size_bytes) return false;
    for (uint32_t k = 0; k < n->num_inputs; k++) {
        s->plan.sub_base[roots[k]] = yroot;
        s->plan.sub_off[roots[k]] = offs[k];
    }
    return true;
}

/* Asks the backend for the fastest kernel variant for node i at its inferred
 * shapes (by its cost model, or measured when the session tunes) and packs its
 * constants. The reference kernel stays when no variant applies. */
static ks_status choose_impl(ks_session *s, uint32_t i, ks__kernel_ctx *ctx) {
    const ks__impl *im = NULL;
    if (s->isa) im = s->backend->select(s->tuner, ctx, s->isa);
    if (!im) return KS_STATUS_OK;
    size_t packed_bytes = 0;
    ctx->scratch_bytes = 0;
    s->kerr[0] = 0;
    ks_status st = im->plan(ctx, &packed_bytes);
    if (st == KS_STATUS_OK && packed_bytes) {
        s->packed[i] = ks__alloc_aligned(&s->alloc, packed_bytes, 64);
        if (!s->packed[i]) {
            ks__object_error(&s->obj, "out of memory packing weights of node %u", i);
            return KS_STATUS_OUT_OF_MEMORY;
        }
        s->packed_bytes[i] = packed_bytes;
        ctx->packed = s->packed[i];
        ctx->packed_bytes = packed_bytes;
        if (im->pack) st = im->pack(ctx);
    }
    if (st) {
        ks__object_error(&s->obj, "%s: %s", im->name, s->kerr[0] ? s->kerr : "plan failed");
        return st;
    }
    s->impl[i] = im;
    s->scratch_bytes[i] = ctx->scratch_bytes;
    return KS_STATUS_OK;
}

const char *ks__session_kernel_name(const ks_session *s, uint32_t node);
const char *ks__session_kernel_name(const ks_session *s, uint32_t node) {
    if (!s || node >= s->g->num_nodes) return NULL;
    if (s->skip[node]) return s->skip[node] == 2 ? "view" : "reshape-time";
    return s->impl[node] ? s->impl[node]->name : "ref";
}

/* After shape inference: groups the device's nodes into partitions (partition.h) and takes the
 * tensors that never leave the device out of the host's memory plan. */
static ks_status plan_partitions(ks_session *s) {
    const ks__graph *g = s->g;
    uint8_t *runtime = ks__calloc(&s->alloc, g->num_tensors ? g->num_tensors : 1, 1);
    if (!runtime) {
        ks__object_error(&s->obj, "out of memory in reshape");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    for (uint32_t t = 0; t < g->num_tensors; t++)
        runtime[t] = s->kind[t] == T_ARENA;
    ks_status st = ks__partition_build(g, s->place, runtime, &s->alloc, &s->parts);
    ks__free(&s->alloc, runtime);
    uint32_t np = s->parts.num_parts;
    if (!st) {
        s->progs = ks__calloc(&s->alloc, np ? np : 1, sizeof(void *));
        s->pending = ks__calloc(&s->alloc, np ? np : 1, 1);
        s->part_names = ks__calloc(&s->alloc, np ? np : 1, sizeof(*s->part_names));
        if (!s->progs || !s->pending || !s->part_names) st = KS_STATUS_OUT_OF_MEMORY;
    }
    if (st) {
        ks__object_error(&s->obj, "out of memory in reshape");
        return st;
    }
    for (uint32_t t = 0; t < g->num_tensors; t++) {
        s->from_dev[t] = 0;
        if (s->parts.device_only[t]) s->kind[t] = T_DEVICE;
    }
    for (uint32_t p = 0; p < np; p++) {
        const ks__partition *part = &s->parts.parts[p];
        snprintf(s->part_names[p], sizeof(s->part_names[p]), "partition %u: nodes %u-%u", p,
                 part->nodes[0], part->nodes[part->num_nodes - 1]);
        for (uint32_t k = 0; k < part->num_outputs; k++)
            s->from_dev[part->outputs[k]] = 1;
    }
    return KS_STATUS_OK;
}

/* At the end of reshape, when the host tensors have their memory: the device prepares each
 * partition. */
static ks_status compile_partitions(ks_session *s) {
    for (uint32_t p = 0; p < s->parts.num_parts; p++) {
        const ks__partition *part = &s->parts.parts[p];
        ks__kernel_ctx *ctx = ks__calloc(&s->alloc, part->num_nodes, sizeof(*ctx));
        if (!ctx) {
            ks__object_error(&s->obj, "out of memory in reshape");
            return KS_STATUS_OUT_OF_MEMORY;
        }
        for (uint32_t k = 0; k < part->num_nodes; k++)
            make_ctx(s, part->nodes[k], &ctx[k]);
        s->kerr[0] = 0;
        ks_status st =
            s->device->compile(s->dev, part, ctx, &s->progs[p], s->kerr, sizeof(s->kerr));
        ks__free(&s->alloc, ctx);
        if (st) {
            ks__object_error(&s->obj, "backend '%s', %s: %s", s->device->name, s->part_names[p],
                             s->kerr[0] ? s->kerr : ks_status_string(st));
            return st;
        }
    }
    return KS_STATUS_OK;
}

/* Nodes whose outputs reach no needed graph output (ks_session_set_output_needed): a backward
 * pass in reverse execution order, which is topological. */
static void mark_dead_nodes(ks_session *s) {
    const ks__graph *g = s->g;
    memset(s->need_t, 0, g->num_tensors);
    for (uint32_t i = 0; i < g->num_outputs; i++)
        if (s->out_needed[i]) s->need_t[g->outputs[i]] = 1;
    for (uint32_t i = g->num_nodes; i-- > 0;) {
        const ks__node *n = &g->nodes[i];
        bool live = false;
        for (uint32_t k = 0; k < n->num_outputs && !live; k++)
            live = s->need_t[n->outputs[k]] != 0;
        s->dead[i] = !live;
        for (uint32_t k = 0; live && k < n->num_inputs; k++)
            if (n->inputs[k] >= 0) s->need_t[n->inputs[k]] = 1;
    }
}

ks_status ks_session_set_output_needed(ks_session *s, uint32_t index, int needed) {
    if (!s) return KS_STATUS_INVALID_ARGUMENT;
    if (index >= s->g->num_outputs) {
        ks__object_error(&s->obj, "output index %u out of range (model has %u)", index,
                         s->g->num_outputs);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    s->out_needed[index] = needed ? 1 : 0;
    return KS_STATUS_OK;
}

int ks_session_output_needed(const ks_session *s, uint32_t index) {
    return s && index < s->g->num_outputs ? s->out_needed[index] : 0;
}

ks_status ks_session_reshape(ks_session *s, const ks_tensor_shape *input_shapes) {
    if (!s) return KS_STATUS_INVALID_ARGUMENT;
    const ks__graph *g = s->g;
    ks_status st = KS_STATUS_OK;
    free_plan(s);

    for (uint32_t t = 0; t < g->num_tensors; t++) {
        const ks__tensor *d = &g->tensors[t];
        ks__rt_tensor *r = &s->rt[t];
        memset(r, 0, sizeof(*r));
        r->dtype = d->dtype;
        r->rank = d->rank;
        memcpy(r->dims, d->dims, sizeof(r->dims));
        r->quant = &d->quant;
        r->def = d;
        if (d->flags & KS__TENSOR_CONST) {
            r->data = (void *)d->data;
            r->size_bytes = d->size_bytes;
            s->kind[t] = T_CONST;
        } else {
            s->kind[t] = T_UNUSED;
        }
    }
    for (uint32_t i = 0; i < g->num_inputs; i++) {
        ks__rt_tensor *r = &s->rt[g->inputs[i]];
        const ks__tensor *d = r->def;
        if (input_shapes) {
            const ks_tensor_shape *sh = &input_shapes[i];
            if (sh->rank != d->rank) {
                ks__object_error(&s->obj, "input %u '%s': rank %d given, the model has rank %d", i,
                                 d->name, sh->rank, d->rank);
                return KS_STATUS_INVALID_SHAPE;
            }
            for (int32_t k = 0; k < d->rank; k++) {
                if (sh->dims[k] < 0 || (d->dims[k] >= 0 && sh->dims[k] != d->dims[k])) {
                    ks__object_error(&s->obj, "input %u '%s': dim %d is %lld, the model needs %lld",
                                     i, d->name, k, (long long)sh->dims[k], (long long)d->dims[k]);
                    return KS_STATUS_INVALID_SHAPE;
                }
                r->dims[k] = sh->dims[k];
            }
        } else {
            for (int32_t k = 0; k < d->rank; k++) {
                if (d->dims[k] < 0) {
                    ks__object_error(&s->obj,
                                     "input %u '%s': dim %d is dynamic; pass input_shapes to "
                                     "ks_session_reshape",
                                     i, d->name, k);
                    return KS_STATUS_INVALID_SHAPE;
                }
            }
        }
        int64_t ne = ks__numel(r->rank, r->dims);
        if (ne < 0 || (uint64_t)ne * ks_dtype_size(r->dtype) > KS_MAX_TENSOR_BYTES) {
            ks__object_error(&s->obj, "input %u '%s': shape is too large", i, d->name);
            return KS_STATUS_INVALID_SHAPE;
        }
        r->size_bytes = (size_t)ne * ks_dtype_size(r->dtype);
        s->kind[g->inputs[i]] = T_ARENA;
    }

    mark_dead_nodes(s);

    /* shape inference, with reshape-time evaluation of decidable values */
    size_t known_bytes = 0;
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        const ks__op_info *info = ks__op_get_info(n->op);
        ks__kernel_ctx ctx;
        make_ctx(s, i, &ctx);
        s->kerr[0] = 0;
        s->skip[i] = 0;
        s->place[i] = KS__PLACE_HOST;
        if (s->dead[i]) { /* neither planned nor run; its outputs stay T_UNUSED */
            s->skip[i] = 1;
            s->place[i] = KS__PLACE_NONE;
            s->scratch_bytes[i] = 0;
            continue;
        }
        st = ks__op_infer(&ctx);
        if (st) {
            ks__object_error(&s->obj, "%s", s->kerr[0] ? s->kerr : "shape inference failed");
            goto error;
        }
        /* The reference kernel's memory (it runs unless a variant is chosen below). An op-pruned
         * build refuses its left-out ops here. */
        const ks__kernel *ref = &s->kernels->k[n->op];
        if (ref->plan && (st = ref->plan(&ctx))) {
            ks__object_error(&s->obj, "%s", s->kerr[0] ? s->kerr : "kernel plan failed");
            goto error;
        }
        s->scratch_bytes[i] = ctx.scratch_bytes;
        bool all_known = true;
        for (uint32_t k = 0; k < n->num_inputs; k++) {
            int32_t id = n->inputs[k];
            if (id >= 0 && s->kind[id] != T_CONST && s->kind[id] != T_KNOWN) all_known = false;
        }
        uint64_t out_total = 0;
        for (uint32_t k = 0; k < n->num_outputs; k++) {
            ks__rt_tensor *o = &s->rt[n->outputs[k]];
            int64_t ne = ks__numel(o->rank, o->dims);
            size_t es = ks_dtype_size(o->dtype);
            if (ne < 0 || es == 0 || (uint64_t)ne * es > KS_MAX_TENSOR_BYTES) {
                ks__object_error(&s->obj,
                                 "node %u '%s' (%s): output %u '%s' has an invalid or too large "
                                 "shape (%lld elements of %s)",
                                 i, n->name, info->name, k, o->def->name, (long long)ne,
                                 ks_dtype_string(o->dtype));
                st = KS_STATUS_INVALID_SHAPE;
                goto error;
            }
            o->size_bytes = (size_t)ne * es;
            out_total += o->size_bytes;
        }
        bool fold =
            (info->flags & KS_OPF_SHAPE_ONLY) ||
            ((info->flags & KS_OPF_FOLDABLE) && all_known && out_total <= KS_FOLD_MAX_BYTES);
        if (fold) {
            for (uint32_t k = 0; k < n->num_outputs; k++) {
                ks__rt_tensor *o = &s->rt[n->outputs[k]];
                known_bytes += o->size_bytes;
                if (known_bytes > s->max_memory_bytes) {
                    st = KS_STATUS_LIMIT_EXCEEDED;
                    ks__object_error(&s->obj,
                                     "values computed at reshape exceed the session's memory "
                                     "limit of %zu bytes at node %u '%s'",
                                     s->max_memory_bytes, i, n->name);
                    goto error;
                }
                void *buf = ks__alloc_aligned(&s->alloc, o->size_bytes ? o->size_bytes : 1, 64);
                if (!buf) {
                    st = KS_STATUS_OUT_OF_MEMORY;
                    ks__object_error(&s->obj, "out of memory in reshape");
                    goto error;
                }
                s->known_bufs[s->num_known_bufs++] = buf;
                o->data = buf;
                s->kind[n->outputs[k]] = T_KNOWN;
            }
            void *scratch = NULL;
            if (ctx.scratch_bytes) {
                scratch = ks__alloc_aligned(&s->alloc, ctx.scratch_bytes, 64);
                if (!scratch) {
                    st = KS_STATUS_OUT_OF_MEMORY;
                    ks__object_error(&s->obj, "out of memory in reshape");
                    goto error;
                }
            }
            ctx.scratch = scratch;
            st = s->kernels->k[n->op].run(&ctx);
            ks__free(&s->alloc, scratch);
            if (st) {
                ks__object_error(&s->obj, "%s", s->kerr[0] ? s->kerr : "evaluation failed");
                goto error;
            }
            s->skip[i] = 1;
            s->place[i] = KS__PLACE_NONE;
        } else {
            for (uint32_t k = 0; k < n->num_outputs; k++)
                s->kind[n->outputs[k]] = T_ARENA;
            if (s->device && s->device->supports(s->dev, &ctx)) {
                s->place[i] = KS__PLACE_DEVICE;
                s->scratch_bytes[i] = 0;
                continue;
            }
            st = choose_impl(s, i, &ctx);
            if (st) goto error;
        }
    }

    uint32_t nt = g->num_tensors, nn = g->num_nodes;
    if (s->dev_ops && (st = s->dev_ops->plan(s))) goto error;

    /* lifetimes: index space is tensors [0, nt) then per-node scratch [nt, nt+nn). A device
     * partition's host tensors are used at its first node: inputs are uploaded when it is
     * submitted, and outputs are written (at its wait) into memory nothing else uses from then
     * on. */
    bool keep_all = (s->flags & KS_SESSION_KEEP_ALL_TENSORS) != 0;
    ks__planner *pl = &s->plan;
    ks__planner_reset(pl);
    for (uint32_t i = 0; i < g->num_inputs; i++)
        pl->first[g->inputs[i]] = -1;
    for (uint32_t i = 0; i < nn; i++) {
        if (s->skip[i]) continue;
        const ks__node *n = &g->nodes[i];
        int32_t at = (int32_t)i;
        if (s->place[i] == KS__PLACE_DEVICE)
            at = (int32_t)s->parts.parts[s->parts.part_of_node[i]].nodes[0];
        for (uint32_t k = 0; k < n->num_inputs; k++)
            if (n->inputs[k] >= 0 && at > pl->last[n->inputs[k]]) pl->last[n->inputs[k]] = at;
        for (uint32_t k = 0; k < n->num_outputs; k++)
            if (at < pl->first[n->outputs[k]]) pl->first[n->outputs[k]] = at;
        pl->first[nt + i] = pl->last[nt + i] = (int32_t)i;
        pl->bytes[nt + i] = align64(s->scratch_bytes[i]);
    }
    for (uint32_t i = 0; i < g->num_outputs; i++)
        pl->last[g->outputs[i]] = (int32_t)nn;
    for (uint32_t i = 0; i < g->num_inputs; i++)
        if (pl->last[g->inputs[i]] < 0) pl->last[g->inputs[i]] = 0;
    if (keep_all) {
        for (uint32_t t = 0; t < nt; t++) {
            if (s->kind[t] != T_ARENA) continue;
            pl->first[t] = -1;
            pl->last[t] = (int32_t)nn;
        }
    }
    /* buffer groups: views alias their input; unary ops may run in place (on the host) */
    for (uint32_t i = 0; i < nn; i++) {
        if (s->skip[i] || s->place[i] == KS__PLACE_DEVICE) continue;
        const ks__node *n = &g->nodes[i];
        const ks__op_info *info = ks__op_get_info(n->op);
        int32_t in = n->inputs[0], out = n->outputs[0];
        if (in < 0 || s->kind[in] != T_ARENA || n->num_outputs != 1) continue;
        bool same_bytes = s->rt[in].size_bytes == s->rt[out].size_bytes;
        int32_t gi = ks__planner_find(pl, in);
        bool alias = false;
        if ((info->flags & KS_OPF_VIEW) && same_bytes) alias = true;
        if (!keep_all && (info->flags & KS_OPF_UNARY) == KS_OPF_UNARY && same_bytes &&
            s->rt[in].dtype == s->rt[out].dtype && pl->last[gi] == (int32_t)i && pl->first[gi] >= 0)
            alias = true;
        if (!alias) continue;
        pl->group[out] = gi;
        if (pl->first[out] < pl->first[gi]) pl->first[gi] = pl->first[out];
        if (pl->last[out] > pl->last[gi]) pl->last[gi] = pl->last[out];
        if (s->skip[i] == 0) s->skip[i] = (info->flags & KS_OPF_VIEW) ? 2 : 0;
    }
    if (!keep_all) {
        for (uint32_t i = 0; i < nn; i++)
            if (!s->skip[i] && s->place[i] != KS__PLACE_DEVICE && concat_in_place(s, i))
                s->skip[i] = 2;
    }
    /* A host view or in-place concat of a device result shares its memory, which the device
     * writes at its wait: readers of the alias must wait too. */
    for (uint32_t i = 0; s->device && i < nn; i++) {
        const ks__node *n = &g->nodes[i];
        bool any = false;
        for (uint32_t k = 0; s->skip[i] == 2 && k < n->num_inputs; k++)
            any |= n->inputs[k] >= 0 && s->from_dev[n->inputs[k]];
        for (uint32_t k = 0; any && k < n->num_outputs; k++)
            s->from_dev[n->outputs[k]] = 1;
    }
    for (uint32_t t = 0; t < nt; t++) {
        if (s->kind[t] != T_ARENA) continue;
        int32_t r = ks__planner_find(pl, (int32_t)t);
        size_t b = align64(s->rt[t].size_bytes ? s->rt[t].size_bytes : 1);
        if (b > pl->bytes[r]) pl->bytes[r] = b;
        if (pl->first[t] < pl->first[r]) pl->first[r] = pl->first[t];
        if (pl->last[t] > pl->last[r]) pl->last[r] = pl->last[t];
    }
    if ((st = ks__planner_place(pl, &s->alloc, &s->arena_bytes))) {
        ks__object_error(&s->obj, "out of memory in reshape");
        goto error;
    }
    if (s->arena_bytes > s->max_memory_bytes) {
        st = KS_STATUS_LIMIT_EXCEEDED;
        ks__object_error(&s->obj,
                         "the plan needs a %zu-byte arena, above the session's limit of %zu "
                         "bytes (ks_session_desc.max_memory_bytes)",
                         s->arena_bytes, s->max_memory_bytes);
        goto error;
    }
    s->arena = ks__alloc_aligned(&s->alloc, s->arena_bytes ? s->arena_bytes : 64, 64);
    if (!s->arena) {
        st = KS_STATUS_OUT_OF_MEMORY;
        ks__object_error(&s->obj, "out of memory allocating a %zu-byte arena", s->arena_bytes);
        goto error;
    }
    memset(s->arena, 0, s->arena_bytes);
    for (uint32_t t = 0; t < nt; t++)
        if (s->kind[t] == T_ARENA)
            s->rt[t].data = (uint8_t *)s->arena + ks__planner_offset(pl, (int32_t)t);
    for (uint32_t i = 0; i < nn; i++)
        s->scratch[i] = s->scratch_bytes[i] ? (uint8_t *)s->arena + pl->offset[nt + i] : NULL;
    if (s->dev_ops && (st = s->dev_ops->compile(s))) goto error;
    s->ready = true;
    return KS_STATUS_OK;
error:
    free_plan(s);
    return st;
}

size_t ks__session_arena_bytes(const ks_session *s);
size_t ks__session_arena_bytes(const ks_session *s) {
    return s ? s->arena_bytes : 0;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t node_flops(const ks_session *s, const ks__node *n) {
    const ks__rt_tensor *o = &s->rt[n->outputs[0]];
    int64_t out = ks__numel(o->rank, o->dims);
    if (out < 0) return 0;
    if ((n->op == KS_OP_CONV2D || n->op == KS_OP_CONV2D_TRANSPOSE) && n->num_inputs >= 2) {
        const ks__rt_tensor *w = &s->rt[n->inputs[1]];
        if (w->rank != 4) return 0;
        int64_t per = w->dims[1] * w->dims[2] * w->dims[3];
        if (n->op == KS_OP_CONV2D_TRANSPOSE) {
            const ks__rt_tensor *x = &s->rt[n->inputs[0]];
            int64_t xin = ks__numel(x->rank, x->dims);
            return (uint64_t)(2 * xin * w->dims[0] * w->dims[1] * w->dims[2]);
        }
        return (uint64_t)(2 * out * per);
    }
    if (n->op == KS_OP_FULLY_CONNECTED && n->num_inputs >= 2) {
        const ks__rt_tensor *w = &s->rt[n->inputs[1]];
        return w->rank == 2 ? (uint64_t)(2 * out * w->dims[1]) : 0;
    }
    return (uint64_t)out;
}

static void profile_entry_n(ks_session *s, uint32_t node, const char *op, const char *name,
                            uint64_t ns, uint64_t flops, const char *kernel, uint32_t dispatches) {
    ks_op_profile p;
    p.node_index = node;
    p.op_name = op;
    p.node_name = name;
    p.elapsed_ns = ns;
    p.flops = flops;
    p.kernel_name = kernel;
    p.dispatches = dispatches;
    s->prof(s->prof_user, &p);
}

static void profile_entry(ks_session *s, uint32_t node, const char *op, const char *name,
                          uint64_t ns, uint64_t flops, const char *kernel) {
    profile_entry_n(s, node, op, name, ns, flops, kernel, 0);
}

/* Device partitions: submit queues one; wait_all is the completion point of every queued one
 * (a device queue runs them in order). A failure leaves the session needing a reshape. */
static ks_status device_wait_all(ks_session *s);

/* Partition p's inputs produced by earlier partitions must be home before it is submitted. */
static ks_status device_submit(ks_session *s, uint32_t p) {
    const ks__partition *part = &s->parts.parts[p];
    for (uint32_t k = 0; k < part->num_inputs; k++) {
        if (!s->from_dev[part->inputs[k]]) continue;
        ks_status st = device_wait_all(s);
        if (st) return st;
        break;
    }
    s->kerr[0] = 0;
    uint64_t t0 = s->prof ? now_ns() : 0;
    ks_status st =
        s->device->submit(s->dev, s->progs[p], s->prof != NULL, s->kerr, sizeof(s->kerr));
    if (st) {
        ks__object_error(&s->obj, "backend '%s', %s: %s", s->device->name, s->part_names[p],
                         s->kerr[0] ? s->kerr : ks_status_string(st));
        return st;
    }
    s->pending[p] = 1;
    if (s->prof)
        profile_entry(s, s->parts.parts[p].nodes[0], "submit", s->part_names[p], now_ns() - t0, 0,
                      s->device->name);
    return KS_STATUS_OK;
}

static ks_status device_wait_all(ks_session *s) {
    ks_status first = KS_STATUS_OK;
    for (uint32_t p = 0; p < s->parts.num_parts; p++) {
        if (!s->pending[p]) continue;
        s->pending[p] = 0;
        ks__partition_times tm;
        memset(&tm, 0, sizeof(tm));
        s->kerr[0] = 0;
        ks_status st = s->device->wait(s->dev, s->progs[p], &tm, s->kerr, sizeof(s->kerr));
        if (st && !first) {
            first = st;
            ks__object_error(
                &s->obj, "backend '%s', %s: %s (call ks_session_reshape before the next run)",
                s->device->name, s->part_names[p], s->kerr[0] ? s->kerr : ks_status_string(st));
        }
        if (st || !s->prof) continue;
        const ks__partition *part = &s->parts.parts[p];
        uint64_t flops = 0;
        for (uint32_t k = 0; k < part->num_nodes; k++)
            flops += node_flops(s, &s->g->nodes[part->nodes[k]]);
        profile_entry(s, part->nodes[0], "upload", s->part_names[p], tm.upload_ns, 0,
                      s->device->name);
        if (tm.node_ns && tm.node_kernel) {
            /* one row per node, as on the host, with the device's kernel names */
            for (uint32_t k = 0; k < part->num_nodes; k++) {
                const ks__node *n = &s->g->nodes[part->nodes[k]];
                profile_entry_n(s, part->nodes[k], ks__op_get_info(n->op)->name, n->name,
                                tm.node_ns[k], node_flops(s, n), tm.node_kernel[k],
                                tm.node_dispatches ? tm.node_dispatches[k] : 0);
            }
        } else {
            profile_entry_n(s, part->nodes[0], "partition", s->part_names[p], tm.compute_ns, flops,
                            s->device->name, tm.dispatches);
        }
        profile_entry(s, part->nodes[0], "download", s->part_names[p], tm.download_ns, 0,
                      s->device->name);
    }
    if (first) s->ready = false;
    return first;
}

/* Waits for the device when node n (on the host, or the first of a partition about to be
 * submitted) reads what a partition produced: outputs reach host memory at the wait. */
static ks_status device_sync_for(ks_session *s, const ks__node *n) {
    for (uint32_t k = 0; k < n->num_inputs; k++)
        if (n->inputs[k] >= 0 && s->from_dev[n->inputs[k]]) return device_wait_all(s);
    return KS_STATUS_OK;
}

static void device_free_plan(ks_session *s) {
    for (uint32_t p = 0; s->progs && p < s->parts.num_parts; p++)
        s->device->release(s->dev, s->progs[p]);
    ks__free(&s->alloc, s->progs);
    ks__free(&s->alloc, s->pending);
    ks__free(&s->alloc, s->part_names);
    s->progs = NULL;
    s->pending = NULL;
    s->part_names = NULL;
    ks__partition_free(&s->parts, &s->alloc);
}

static const struct device_ops k_device_ops = {
    plan_partitions, compile_partitions, device_submit,
    device_sync_for, device_wait_all,    device_free_plan,
};

ks_status ks__session_create_with(const ks_model *model, const ks__graph *graph,
                                  const ks_session_desc *desc, const ks__backend *backend,
                                  ks_session **session_out) {
    return session_create(model, graph, desc, backend, NULL, NULL, session_out);
}

ks_status ks__session_create_split(const ks_model *model, const ks__graph *graph,
                                   const ks_session_desc *desc, const ks__backend *backend,
                                   const ks__backend *device, ks_session **session_out) {
    return session_create(model, graph, desc, backend, device, &k_device_ops, session_out);
}

static ks_status run_failed(ks_session *s, ks_status st) {
    if (s->dev_ops) {
        char keep[sizeof(s->kerr)];
        snprintf(keep, sizeof(keep), "%s", ks_last_error(&s->obj));
        s->dev_ops->wait_all(s); /* nothing may still write into the arena */
        ks__object_error(&s->obj, "%s", keep);
    }
    return st;
}

ks_status ks_session_run(ks_session *s) {
    if (!s) return KS_STATUS_INVALID_ARGUMENT;
    if (!s->ready) {
        ks__object_error(&s->obj, "ks_session_run: call ks_session_reshape first");
        return KS_STATUS_INVALID_STATE;
    }
    const ks__graph *g = s->g;
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        if (s->skip[i]) continue;
        const ks__node *n = &g->nodes[i];
        if (s->place[i] == KS__PLACE_DEVICE) {
            int32_t p = s->parts.part_of_node[i];
            if (s->parts.parts[p].nodes[0] != i) continue;
            ks_status st = s->dev_ops->submit(s, (uint32_t)p);
            if (st) return run_failed(s, st);
            continue;
        }
        if (s->dev_ops) {
            ks_status st = s->dev_ops->sync_for(s, n);
            if (st) return run_failed(s, st);
        }
        ks__kernel_ctx ctx;
        make_ctx(s, i, &ctx);
        ctx.scratch_bytes = s->scratch_bytes[i];
        ctx.scratch = s->scratch[i];
        s->kerr[0] = 0;
        uint64_t t0 = s->prof ? now_ns() : 0;
        const ks__impl *im = s->impl[i];
        ks_status st = im ? im->run(&ctx) : s->kernels->k[n->op].run(&ctx);
        if (st) {
            ks__object_error(&s->obj, "%s", s->kerr[0] ? s->kerr : "kernel failed");
            return run_failed(s, st);
        }
        if (s->prof)
            profile_entry(s, i, ks__op_get_info(n->op)->name, n->name, now_ns() - t0,
                          node_flops(s, n), im ? im->name : "ref");
    }
    return s->dev_ops ? s->dev_ops->wait_all(s) : KS_STATUS_OK;
}

static ks_status view_of(ks_session *s, int32_t id, ks_tensor *out) {
    const ks__rt_tensor *r = &s->rt[id];
    ks__tensor_info_from_def(r->def, &out->info);
    out->info.dtype = r->dtype;
    out->info.shape.rank = r->rank;
    memcpy(out->info.shape.dims, r->dims, sizeof(r->dims));
    out->data = r->data;
    out->size_bytes = r->size_bytes;
    return KS_STATUS_OK;
}

static ks_status io_view(ks_session *s, uint32_t index, bool input, ks_tensor *out) {
    if (!s || !out) return KS_STATUS_INVALID_ARGUMENT;
    if (!s->ready) {
        ks__object_error(&s->obj, "call ks_session_reshape before accessing tensors");
        return KS_STATUS_INVALID_STATE;
    }
    uint32_t n = input ? s->g->num_inputs : s->g->num_outputs;
    if (index >= n) {
        ks__object_error(&s->obj, "%s index %u out of range (model has %u)",
                         input ? "input" : "output", index, n);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    int32_t id = input ? s->g->inputs[index] : s->g->outputs[index];
    if (!input && s->kind[id] == T_UNUSED) {
        memset(out, 0, sizeof(*out));
        ks__tensor_info_from_def(&s->g->tensors[id], &out->info);
        ks__object_error(&s->obj,
                         "output %u '%s' is not computed: it was marked not needed "
                         "(ks_session_set_output_needed) at the last reshape",
                         index, s->g->tensors[id].name);
        return KS_STATUS_INVALID_STATE;
    }
    return view_of(s, id, out);
}

ks_status ks_session_input(ks_session *s, uint32_t index, ks_tensor *tensor_out) {
    return io_view(s, index, true, tensor_out);
}

ks_status ks_session_output(ks_session *s, uint32_t index, ks_tensor *tensor_out) {
    return io_view(s, index, false, tensor_out);
}

ks_status ks_session_set_profiler(ks_session *s, ks_profile_fn fn, void *user) {
    if (!s) return KS_STATUS_INVALID_ARGUMENT;
    s->prof = fn;
    s->prof_user = user;
    return KS_STATUS_OK;
}

uint32_t ks_session_num_tensors(const ks_session *s) {
    return s ? s->g->num_tensors : 0;
}

ks_status ks_session_tensor(ks_session *s, uint32_t index, ks_tensor *tensor_out) {
    if (!s || !tensor_out || index >= s->g->num_tensors) return KS_STATUS_INVALID_ARGUMENT;
    if (!s->ready) {
        ks__object_error(&s->obj, "call ks_session_reshape before accessing tensors");
        return KS_STATUS_INVALID_STATE;
    }
    if (s->kind[index] == T_UNUSED || s->kind[index] == T_DEVICE) {
        memset(tensor_out, 0, sizeof(*tensor_out));
        ks__tensor_info_from_def(&s->g->tensors[index], &tensor_out->info);
        return KS_STATUS_OK;
    }
    return view_of(s, (int32_t)index, tensor_out);
}
