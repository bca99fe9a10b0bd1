/* Fuses the int8 passes that follow a quantized CONV2D into its epilogue (quant.h ks__quant_fuse;
 * the fused forms are specified in ops.inc, CONV2D, ip[12] == 1): CONV2D(q, act NONE) -> t ->
 * ADD(t, r) [act]            => CONV2D(..., residual r) [act] CONV2D(q, act NONE) -> t -> unary LUT
 * op -> y          => CONV2D(..., table), act TABLE CONV2D(q, act NONE) -> t -> SIGMOID -> s,
 * MUL(t, s) -> y   (SiLU) => the same, one table when t (and s) have no other consumer and the
 * pieces are int8 with per-tensor params.
 *
 * Why it is exact: the fused node computes t with t's own params, then the same integer ADD or
 * the same per-byte function. The table is made here by running the engine's reference kernels
 * of the chain on the 256 byte values with the chain's own params, so it equals what the
 * unfused int8 graph computes for every possible t (the int8 lookup-table kernels are built the
 * same way); ks-quant's accuracy numbers do not move.
 *
 * The fused node takes the place of the chain's last node (its inputs are all defined by then),
 * the conv (and SIGMOID) nodes are removed, and t stays in the graph as an unused tensor (its
 * map entry is cleared, so ks-quant does not compare it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_kernel.h"
#include "convert.h"
#include "quant.h"

static bool q8_tensor(const ks__tensor *t) {
    return (t->dtype == KS_DTYPE_I8 || t->dtype == KS_DTYPE_U8) && t->quant.count == 1 &&
           !(t->flags & KS__TENSOR_CONST);
}

/* Byte-to-byte ops whose int8 reference the lookup-table kernels (q8_lut.c) also run. */
static bool table_op(uint32_t op) {
    switch (op) {
    case KS_OP_SIGMOID:
    case KS_OP_TANH:
    case KS_OP_HARD_SWISH:
    case KS_OP_HARD_SIGMOID:
    case KS_OP_ELU:
    case KS_OP_LEAKY_RELU:
    case KS_OP_RELU:
    case KS_OP_RELU6:
    case KS_OP_RELU_N1_TO_1:
    case KS_OP_CLIP:
        return true;
    default:
        return false;
    }
}

static bool act_quantizable(int32_t act) {
    return act == KS_ACT_NONE || act == KS_ACT_RELU || act == KS_ACT_RELU6 ||
           act == KS_ACT_RELU_N1_TO_1;
}

typedef struct fuser {
    ks__graph *g;
    const ks__quant_plan *plan;
    ks__quant_map *map;
    int32_t *consumers; /* per tensor: uses as a node input or graph output */
    int32_t *src_of;    /* per dst tensor: its source tensor (int8 version), -1 */
    bool *dead;         /* per node */
    char *err;
    size_t err_cap;
    char table_err[256]; /* a chain the reference refuses is simply not fused */
} fuser;

static ks__rt_tensor rt_of(const ks__graph *g, int32_t id, void *data, size_t bytes) {
    ks__rt_tensor t;
    memset(&t, 0, sizeof(t));
    t.dtype = g->tensors[id].dtype;
    t.rank = 1;
    t.dims[0] = (int64_t)bytes;
    t.data = data;
    t.size_bytes = bytes;
    t.quant = &g->tensors[id].quant;
    t.def = &g->tensors[id];
    return t;
}

/* Runs the reference kernel of node `ni` on 256-element inputs (a, b) into out. */
static ks_status run_ref(fuser *f, uint32_t ni, ks__rt_tensor *a, ks__rt_tensor *b,
                         ks__rt_tensor *out) {
    const ks__node *n = &f->g->nodes[ni];
    const ks__kernel *k = &ks__ref_kernels()->k[n->op];
    ks__rt_tensor *ins[2] = {a, b}, *outs[1] = {out};
    ks__kernel_ctx ctx;
    memset(&ctx, 0, sizeof(ctx));
    ctx.node = n;
    ctx.node_index = ni;
    ctx.in = ins;
    ctx.num_inputs = b ? 2 : 1;
    ctx.out = outs;
    ctx.num_outputs = 1;
    ctx.err = f->table_err;
    ctx.err_cap = sizeof(f->table_err);
    ctx.num_threads = 1;
    ks_status st = ks__ref_prepare(&ctx);
    if (st) return st;
    if (ctx.scratch_bytes || ks__rt_numel(out) != 256 || out->dtype != a->dtype)
        return KS_STATUS_UNSUPPORTED;
    return k->run(&ctx);
}

/* The table of the chain from t: ops[0] (unary, or SIGMOID of a SiLU), then MUL(t, s) when mul
 * is a node index (else -1). Index i holds the output for the t value i (- 128 for I8). */
static ks_status make_table(fuser *f, int32_t t, uint32_t op0, int32_t mul, uint8_t *table) {
    const ks__graph *g = f->g;
    uint8_t in[256], mid[256];
    bool i8 = g->tensors[t].dtype == KS_DTYPE_I8;
    for (int i = 0; i < 256; i++)
        in[i] = (uint8_t)(i8 ? i ^ 0x80 : i);
    int32_t s = g->nodes[op0].outputs[0];
    ks__rt_tensor x = rt_of(g, t, in, 256);
    ks__rt_tensor y0 = rt_of(g, s, mul >= 0 ? mid : table, 256);
    ks_status st = run_ref(f, op0, &x, NULL, &y0);
    if (st || mul < 0) return st;
    const ks__node *m = &g->nodes[mul];
    ks__rt_tensor y = rt_of(g, m->outputs[0], table, 256);
    return m->inputs[0] == t ? run_ref(f, (uint32_t)mul, &x, &y0, &y)
                             : run_ref(f, (uint32_t)mul, &y0, &x, &y);
}

/* The calibrated runtime shapes of two dst tensors are known and equal. */
static bool same_shape(const fuser *f, int32_t a, int32_t b) {
    const ks__quant_plan *p = f->plan;
    int32_t sa = f->src_of[a], sb = f->src_of[b];
    if (!p || sa < 0 || sb < 0 || p->rank[sa] < 0 || p->rank[sa] != p->rank[sb]) return false;
    return memcmp(&p->dims[(size_t)sa * KS_MAX_RANK], &p->dims[(size_t)sb * KS_MAX_RANK],
                  (size_t)p->rank[sa] * sizeof(int64_t)) == 0;
}

/* Turns node `last` into the fused conv: conv c's inputs and params, plus the residual or the
 * table, writing last's output. */
static ks_status rewrite(fuser *f, uint32_t c, uint32_t last, int32_t residual, int32_t table,
                         int32_t act) {
    ks__graph *g = f->g;
    int32_t *ins = ks__alloc(&g->alloc, 5 * sizeof(int32_t));
    char *name = ks__strdup(&g->alloc, g->nodes[c].name);
    if (!ins || !name) {
        ks__free(&g->alloc, ins);
        ks__free(&g->alloc, name);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    const ks__node *cn = &g->nodes[c];
    int32_t t = cn->outputs[0];
    for (uint32_t k = 0; k < 5; k++)
        ins[k] = k < cn->num_inputs && k < 3 ? cn->inputs[k] : -1;
    ins[3] = residual;
    ins[4] = table;
    ks__node *n = &g->nodes[last];
    ks__free(&g->alloc, n->inputs);
    ks__free(&g->alloc, n->name);
    n->inputs = ins;
    n->num_inputs = table >= 0 ? 5 : 4;
    n->name = name;
    n->op = KS_OP_CONV2D;
    memcpy(n->ip, cn->ip, sizeof(n->ip));
    memcpy(n->fp, cn->fp, sizeof(n->fp));
    n->ip[10] = act;
    n->ip[11] = g->tensors[t].quant.zero_points[0];
    n->ip[12] = 1;
    n->fp[1] = g->tensors[t].quant.scales[0];
    f->dead[c] = true;
    if (f->map && last < f->map->num_dst_nodes && c < f->map->num_dst_nodes)
        f->map->node_src[last] = f->map->node_src[c]; /* the conv's time, for the speed check */
    return KS_STATUS_OK;
}

static void forget_tensor(fuser *f, int32_t t) {
    if (!f->map || f->src_of[t] < 0) return;
    f->map->i8_id[f->src_of[t]] = -1;
}

/* Tries to fuse what follows conv node c. Returns OK also when nothing matched. */
static ks_status try_fuse(fuser *f, uint32_t c, uint32_t *num_fused) {
    ks__graph *g = f->g;
    const ks__node *cn = &g->nodes[c];
    if (cn->op != KS_OP_CONV2D || cn->num_outputs != 1 || cn->ip[12] == 1 ||
        cn->ip[10] != KS_ACT_NONE)
        return KS_STATUS_OK;
    for (uint32_t k = 3; k < cn->num_inputs; k++)
        if (cn->inputs[k] >= 0) return KS_STATUS_OK;
    int32_t x = cn->inputs[0], t = cn->outputs[0];
    if (!q8_tensor(&g->tensors[x]) || !q8_tensor(&g->tensors[t])) return KS_STATUS_OK;
    ks_dtype dt = g->tensors[t].dtype;
    int32_t nt = f->consumers[t];
    if (nt < 1 || nt > 2) return KS_STATUS_OK;
    /* the consumers of t: every node after c that reads it */
    int32_t use[2] = {-1, -1}, found = 0;
    for (uint32_t i = c + 1; i < g->num_nodes && found < nt; i++) {
        if (f->dead[i]) continue;
        for (uint32_t k = 0; k < g->nodes[i].num_inputs; k++)
            if (g->nodes[i].inputs[k] == t) {
                if (found < 2) use[found] = (int32_t)i;
                found++;
                break;
            }
    }
    if (found != nt) return KS_STATUS_OK; /* a graph output, or read twice by one node */
    if (nt == 1) {
        const ks__node *n = &g->nodes[use[0]];
        if (n->num_outputs != 1 || !q8_tensor(&g->tensors[n->outputs[0]]) ||
            g->tensors[n->outputs[0]].dtype != dt)
            return KS_STATUS_OK;
        if (n->op == KS_OP_ADD && n->num_inputs == 2 && act_quantizable(n->ip[0])) {
            int32_t r = n->inputs[0] == t ? n->inputs[1] : n->inputs[0];
            if (r == t || !q8_tensor(&g->tensors[r]) || g->tensors[r].dtype != dt ||
                !same_shape(f, r, t) || !same_shape(f, t, n->outputs[0]))
                return KS_STATUS_OK;
            ks_status st = rewrite(f, c, (uint32_t)use[0], r, -1, n->ip[0]);
            if (st) return st;
            forget_tensor(f, t);
            (*num_fused)++;
            return KS_STATUS_OK;
        }
        if (!table_op(n->op) || n->num_inputs != 1) return KS_STATUS_OK;
        float alpha = 0.0f;
        int32_t float_act = ks__fused_act_of(n, &alpha); /* -1: none (ELU, HARD_SIGMOID) */
        uint8_t table[256];
        if (make_table(f, t, (uint32_t)use[0], -1, table)) return KS_STATUS_OK;
        int64_t d256 = 256;
        char name[512];
        int32_t tid;
        snprintf(name, sizeof(name), "%s/table", g->nodes[c].name ? g->nodes[c].name : "");
        ks_status st = ks__graph_add_tensor(g, name, dt, 1, &d256, &tid);
        if (!st) st = ks__graph_set_const(g, tid, table, 256, true);
        if (!st) st = rewrite(f, c, (uint32_t)use[0], -1, tid, KS_ACT_TABLE);
        if (st) return st;
        g->nodes[use[0]].ip[13] = float_act > 0 ? float_act : 0; /* for a float session */
        if (float_act == KS_ACT_LEAKY_RELU) g->nodes[use[0]].fp[0] = alpha;
        forget_tensor(f, t);
        (*num_fused)++;
        return KS_STATUS_OK;
    }
    /* SiLU: SIGMOID(t) -> s read only by MUL(t, s) */
    uint32_t sg = (uint32_t)use[0], mu = (uint32_t)use[1];
    if (g->nodes[sg].op != KS_OP_SIGMOID) return KS_STATUS_OK;
    const ks__node *sn = &g->nodes[sg], *mn = &g->nodes[mu];
    if (sn->num_inputs != 1 || sn->num_outputs != 1 || mn->op != KS_OP_MUL || mn->num_inputs != 2 ||
        mn->num_outputs != 1 || mn->ip[0] != KS_ACT_NONE)
        return KS_STATUS_OK;
    int32_t s = sn->outputs[0], y = mn->outputs[0];
    if (f->consumers[s] != 1 || !q8_tensor(&g->tensors[s]) || !q8_tensor(&g->tensors[y]) ||
        g->tensors[s].dtype != dt || g->tensors[y].dtype != dt)
        return KS_STATUS_OK;
    if (!((mn->inputs[0] == t && mn->inputs[1] == s) || (mn->inputs[0] == s && mn->inputs[1] == t)))
        return KS_STATUS_OK;
    uint8_t table[256];
    if (make_table(f, t, sg, (int32_t)mu, table)) return KS_STATUS_OK;
    int64_t d256 = 256;
    char name[512];
    int32_t tid;
    snprintf(name, sizeof(name), "%s/table", g->nodes[c].name ? g->nodes[c].name : "");
    ks_status st = ks__graph_add_tensor(g, name, dt, 1, &d256, &tid);
    if (!st) st = ks__graph_set_const(g, tid, table, 256, true);
    if (!st) st = rewrite(f, c, mu, -1, tid, KS_ACT_TABLE);
    if (st) return st;
    g->nodes[mu].ip[13] = KS_ACT_SILU;
    f->dead[sg] = true;
    forget_tensor(f, t);
    forget_tensor(f, s);
    (*num_fused)++;
    return KS_STATUS_OK;
}

/* Drops the dead nodes (keeping node_src aligned with the surviving ones). */
static void compact(fuser *f) {
    ks__graph *g = f->g;
    uint32_t w = 0;
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        if (f->dead[i]) {
            ks__free(&g->alloc, g->nodes[i].name);
            ks__free(&g->alloc, g->nodes[i].inputs);
            ks__free(&g->alloc, g->nodes[i].outputs);
            continue;
        }
        if (w != i) {
            g->nodes[w] = g->nodes[i];
            if (f->map && i < f->map->num_dst_nodes) f->map->node_src[w] = f->map->node_src[i];
        }
        w++;
    }
    if (f->map)
        for (uint32_t i = w; i < g->num_nodes && i < f->map->num_dst_nodes; i++)
            f->map->node_src[i] = -1;
    g->num_nodes = w;
}

ks_status ks__quant_fuse(ks__graph *g, const ks__quant_plan *plan, ks__quant_map *map,
                         uint32_t num_src_tensors, uint32_t *num_fused_out, char *err,
                         size_t err_cap) {
    fuser f;
    memset(&f, 0, sizeof(f));
    f.g = g, f.plan = plan, f.map = map, f.err = err, f.err_cap = err_cap;
    ks_status st = KS_STATUS_OUT_OF_MEMORY;
    uint32_t nt = g->num_tensors ? g->num_tensors : 1;
    *num_fused_out = 0;
    if (getenv("KS_QUANT_NO_FUSE")) return KS_STATUS_OK; /* A/B check of the fused graph */
    f.consumers = calloc(nt, sizeof(int32_t));
    f.src_of = malloc(nt * sizeof(int32_t));
    f.dead = calloc(g->num_nodes + 1, sizeof(bool));
    if (!f.consumers || !f.src_of || !f.dead) goto done;
    for (uint32_t t = 0; t < nt; t++)
        f.src_of[t] = -1;
    for (uint32_t t = 0; map && t < num_src_tensors; t++)
        if (map->i8_id[t] >= 0 && (uint32_t)map->i8_id[t] < g->num_tensors)
            f.src_of[map->i8_id[t]] = (int32_t)t;
    for (uint32_t i = 0; i < g->num_nodes; i++)
        for (uint32_t k = 0; k < g->nodes[i].num_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0) f.consumers[g->nodes[i].inputs[k]]++;
    for (uint32_t i = 0; i < g->num_outputs; i++)
        f.consumers[g->outputs[i]] += 2; /* never fused away */
    uint32_t fused = 0, num_nodes = g->num_nodes;
    for (uint32_t i = 0; i < num_nodes; i++) {
        if (f.dead[i]) continue;
        if ((st = try_fuse(&f, i, &fused))) {
            ks__fmt(err, err_cap, "fusing node %u '%s' failed (status %d)", i,
                    g->nodes[i].name ? g->nodes[i].name : "", (int)st);
            goto done;
        }
    }
    compact(&f);
    *num_fused_out = fused;
    st = KS_STATUS_OK;
done:
    if (st && !err[0]) ks__fmt(err, err_cap, "int8 epilogue fusion: out of memory");
    free(f.consumers);
    free(f.src_of);
    free(f.dead);
    return st;
}
