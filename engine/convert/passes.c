/* Graph passes run by ks-convert after import (see convert.h):
 *   1. shape propagation + constant folding with the reference kernels,
 *   2. layout cleanup: cancel inverse TRANSPOSE pairs and move NCHW->NHWC transposes up through
 *      elementwise ops, concat, pad and ShuffleNet's channel shuffle (the "NHWC twin" of a
 *      tensor, below),
 *   3. fusions: BatchNorm-style MUL/ADD into conv/fc weights, zero PAD into conv/avg-pool pads,
 *      SPACE_TO_BATCH_ND + CONV2D + BATCH_TO_SPACE_ND (TensorFlow's atrous convolution) into one
 *      dilated CONV2D,
 *      space-to-depth written as four strided slice pairs + CONCAT (YOLOX "Focus") into one
 *      6-D TRANSPOSE between free reshapes,
 *      a 1x1 conv after an upsampling RESIZE moved before it (conv_before_resize),
 *      a residual ADD into the conv producing one operand, a following activation (and the
 *      MUL(x, SIGMOID(x)) SiLU pair, and a per-channel PRELU) into the producer's fused act,
 *   4. dead-code removal, topological re-ordering and tensor id compaction.
 * The loop repeats until nothing changes. Graph inputs and outputs keep their ids' names,
 * dtypes and declared shapes.
 *
 * Removed nodes are marked with op 0 during a sweep and dropped by compact().
 */
#include "convert.h"

#include <math.h>
#include <string.h>

#include "cpu_kernel.h"
#include "shape.h"

#define FOLD_MAX_BYTES (UINT64_C(64) << 20)        /* one folded tensor */
#define FOLD_TOTAL_MAX_BYTES (UINT64_C(256) << 20) /* all folds of one optimize call */
#define MAX_SWEEPS 12

typedef struct pass_ctx {
    ks__graph *g;
    char *err;
    size_t err_cap;
    uint64_t folded_bytes;
    /* per sweep (rebuilt by analyze()) */
    int32_t *producer; /* tensor -> node index or -1 */
    uint32_t *uses;    /* tensor -> number of node inputs reading it */
    uint8_t *is_io;    /* tensor -> 1 graph input, 2 graph output */
    uint32_t cap;      /* allocated entries in the arrays above */
} pass_ctx;

static ks_status oom(pass_ctx *p) {
    ks__fmt(p->err, p->err_cap, "graph optimize: out of memory");
    return KS_STATUS_OUT_OF_MEMORY;
}

static int is_const_t(const ks__graph *g, int32_t id) {
    return id >= 0 && (g->tensors[id].flags & KS__TENSOR_CONST);
}

static int is_float_plain(const ks__graph *g, int32_t id) {
    return id >= 0 && g->tensors[id].dtype == KS_DTYPE_F32 && g->tensors[id].quant.count == 0;
}

/* ---------------------------------------------------------------- analysis */

static ks_status analyze(pass_ctx *p) {
    ks__graph *g = p->g;
    if (g->num_tensors > p->cap) {
        uint32_t nc = g->num_tensors + g->num_tensors / 2 + 16;
        ks__free(&g->alloc, p->producer);
        ks__free(&g->alloc, p->uses);
        ks__free(&g->alloc, p->is_io);
        p->producer = ks__alloc(&g->alloc, nc * sizeof(int32_t));
        p->uses = ks__alloc(&g->alloc, nc * sizeof(uint32_t));
        p->is_io = ks__alloc(&g->alloc, nc);
        p->cap = p->producer && p->uses && p->is_io ? nc : 0;
        if (!p->cap) return oom(p);
    }
    for (uint32_t i = 0; i < g->num_tensors; i++) {
        p->producer[i] = -1;
        p->uses[i] = 0;
        p->is_io[i] = 0;
    }
    for (uint32_t i = 0; i < g->num_inputs; i++)
        p->is_io[g->inputs[i]] |= 1;
    for (uint32_t i = 0; i < g->num_outputs; i++)
        p->is_io[g->outputs[i]] |= 2;
    for (uint32_t n = 0; n < g->num_nodes; n++) {
        const ks__node *nd = &g->nodes[n];
        if (nd->op == 0) continue;
        for (uint32_t k = 0; k < nd->num_inputs; k++)
            if (nd->inputs[k] >= 0) p->uses[nd->inputs[k]]++;
        for (uint32_t k = 0; k < nd->num_outputs; k++)
            p->producer[nd->outputs[k]] = (int32_t)n;
    }
    return KS_STATUS_OK;
}

/* A tensor that only feeds one node and is not a graph output: safe to fuse away. */
static int single_internal_use(const pass_ctx *p, int32_t t) {
    return t >= 0 && (uint32_t)t < p->g->num_tensors && p->uses[t] == 1 && !(p->is_io[t] & 2);
}

/* Index of the only live node reading t (caller checked uses == 1). */
static int32_t sole_consumer(const pass_ctx *p, int32_t t) {
    const ks__graph *g = p->g;
    for (uint32_t n = 0; n < g->num_nodes; n++) {
        const ks__node *nd = &g->nodes[n];
        if (nd->op == 0) continue;
        for (uint32_t k = 0; k < nd->num_inputs; k++)
            if (nd->inputs[k] == t) return (int32_t)n;
    }
    return -1;
}

static void replace_uses(ks__graph *g, int32_t from, int32_t to) {
    for (uint32_t n = 0; n < g->num_nodes; n++) {
        ks__node *nd = &g->nodes[n];
        if (nd->op == 0) continue;
        for (uint32_t k = 0; k < nd->num_inputs; k++)
            if (nd->inputs[k] == from) nd->inputs[k] = to;
    }
}

/* Removes node n whose output `out` equals `in` in value and shape. Returns 1 if done. */
static int bypass(pass_ctx *p, uint32_t n, int32_t in, int32_t out) {
    ks__graph *g = p->g;
    if (!(p->is_io[out] & 2)) {
        replace_uses(g, out, in);
        g->nodes[n].op = 0;
        p->uses[in] += p->uses[out];
        p->uses[out] = 0;
        return 1;
    }
    /* `out` is a graph output: keep that tensor and let in's producer write it directly. */
    int32_t prod = p->producer[in];
    if (p->is_io[in] || is_const_t(g, in) || prod < 0) return 0;
    ks__node *pn = &g->nodes[prod];
    for (uint32_t k = 0; k < pn->num_outputs; k++)
        if (pn->outputs[k] == in) pn->outputs[k] = out;
    g->nodes[n].op = 0;
    replace_uses(g, in, out);
    p->producer[out] = prod;
    p->producer[in] = -1;
    return 1;
}

static ks_status add_tensor_like(pass_ctx *p, int32_t like, const char *suffix, int32_t rank,
                                 const int64_t *dims, int32_t *id_out) {
    ks__graph *g = p->g;
    ks_status st = ks__graph_add_tensor_like(g, &g->tensors[like], suffix, g->tensors[like].dtype,
                                             rank, dims, id_out);
    return st ? oom(p) : KS_STATUS_OK;
}

/* ---------------------------------------------------------------- fold + shapes */

static void rt_from_def(ks__rt_tensor *rt, ks__tensor *t) {
    memset(rt, 0, sizeof(*rt));
    rt->dtype = t->dtype;
    rt->rank = t->rank;
    for (int32_t i = 0; i < t->rank; i++)
        rt->dims[i] = t->dims[i];
    if (t->flags & KS__TENSOR_CONST) {
        rt->data = (void *)t->data;
        rt->size_bytes = t->size_bytes;
    }
    rt->quant = &t->quant;
    rt->def = t;
}

static int dims_known(const ks__rt_tensor *rt) {
    for (int32_t i = 0; i < rt->rank; i++)
        if (rt->dims[i] < 0) return 0;
    return 1;
}

/* Runs the core's shape inference on every node whose input shapes are known (so IR dims get
 * filled in), and reference kernels on foldable nodes whose inputs are all constant. Returns the
 * number of folds. */
static ks_status fold_and_infer(pass_ctx *p, uint32_t *num_folded) {
    ks__graph *g = p->g;
    const ks__kernel_table *kt = ks__ref_kernels();
    ks_status st = KS_STATUS_OK;
    uint32_t nt = g->num_tensors;
    ks__rt_tensor *rt = ks__calloc(&g->alloc, nt ? nt : 1, sizeof(ks__rt_tensor));
    uint8_t *known = ks__calloc(&g->alloc, nt ? nt : 1, 1);
    uint8_t *computed = ks__calloc(&g->alloc, nt ? nt : 1, 1);
    ks__rt_tensor **ins = NULL, **outs = NULL;
    void *scratch = NULL;
    *num_folded = 0;
    if (!rt || !known || !computed) {
        st = oom(p);
        goto done;
    }
    for (uint32_t i = 0; i < nt; i++) {
        rt_from_def(&rt[i], &g->tensors[i]);
        known[i] = (is_const_t(g, (int32_t)i) || (p->is_io[i] & 1)) && dims_known(&rt[i]);
    }
    for (uint32_t n = 0; n < g->num_nodes; n++) {
        ks__node *nd = &g->nodes[n];
        if (nd->op == 0) continue;
        const ks__op_info *info = ks__op_get_info(nd->op);
        int all_known = 1, all_const = 1;
        for (uint32_t k = 0; k < nd->num_inputs; k++) {
            int32_t t = nd->inputs[k];
            if (t < 0) continue;
            if (!known[t]) all_known = 0;
            if (!is_const_t(g, t) || g->tensors[t].quant.count) all_const = 0;
        }
        /* SHAPE needs only its input's dims. */
        if (nd->op == KS_OP_SHAPE && nd->num_inputs == 1 && nd->num_outputs == 1 &&
            nd->inputs[0] >= 0 && known[nd->inputs[0]]) {
            int32_t x = nd->inputs[0], y = nd->outputs[0];
            int64_t r = rt[x].rank;
            ks_dtype dt = g->tensors[y].dtype == KS_DTYPE_I32 ? KS_DTYPE_I32 : KS_DTYPE_I64;
            void *buf = ks__alloc_aligned(&g->alloc, (size_t)(r ? r : 1) * 8, 64);
            if (!buf) {
                st = oom(p);
                goto done;
            }
            for (int64_t i = 0; i < r; i++) {
                if (dt == KS_DTYPE_I32)
                    ((int32_t *)buf)[i] = (int32_t)rt[x].dims[i];
                else
                    ((int64_t *)buf)[i] = rt[x].dims[i];
            }
            ks__tensor *ty = &g->tensors[y];
            ty->dtype = dt;
            ty->rank = 1;
            ty->dims[0] = r;
            st = ks__graph_set_const(g, y, buf, (size_t)r * ks_dtype_size(dt), false);
            if (st) {
                ks__free(&g->alloc, buf);
                st = oom(p);
                goto done;
            }
            rt_from_def(&rt[y], ty);
            known[y] = 1;
            nd->op = 0;
            (*num_folded)++;
            continue;
        }
        const ks__kernel *k = &kt->k[nd->op < KS_OP_MAX_ID ? nd->op : 0];
        if (!all_known || !info) continue;
        ks__free(&g->alloc, ins);
        ks__free(&g->alloc, outs);
        ins = ks__calloc(&g->alloc, nd->num_inputs + 1, sizeof(*ins));
        outs = ks__calloc(&g->alloc, nd->num_outputs + 1, sizeof(*outs));
        if (!ins || !outs) {
            st = oom(p);
            goto done;
        }
        for (uint32_t i = 0; i < nd->num_inputs; i++)
            ins[i] = nd->inputs[i] >= 0 ? &rt[nd->inputs[i]] : NULL;
        for (uint32_t i = 0; i < nd->num_outputs; i++)
            outs[i] = &rt[nd->outputs[i]];
        char kerr[256];
        ks__kernel_ctx ctx;
        memset(&ctx, 0, sizeof(ctx));
        ctx.node = nd;
        ctx.node_index = n;
        ctx.in = ins;
        ctx.num_inputs = nd->num_inputs;
        ctx.out = outs;
        ctx.num_outputs = nd->num_outputs;
        ctx.err = kerr;
        ctx.err_cap = sizeof(kerr);
        if (ks__op_infer(&ctx) != KS_STATUS_OK) {
            /* leave the importer's dims; the session reports real errors at reshape */
            for (uint32_t i = 0; i < nd->num_outputs; i++)
                rt_from_def(&rt[nd->outputs[i]], &g->tensors[nd->outputs[i]]);
            continue;
        }
        int outs_ok = 1;
        uint64_t out_bytes = 0;
        for (uint32_t i = 0; i < nd->num_outputs; i++) {
            ks__rt_tensor *o = outs[i];
            int64_t ne = ks__numel(o->rank, o->dims);
            size_t es = ks_dtype_size(o->dtype);
            if (o->rank < 0 || o->rank > KS_MAX_RANK || ne < 0 || es == 0) {
                outs_ok = 0;
                break;
            }
            /* the same bound ks__graph_validate enforces: hostile shapes stay unresolved */
            for (int32_t d = 0; d < o->rank; d++)
                if (o->dims[d] > (INT64_C(1) << 40)) outs_ok = 0;
            if (!outs_ok) break;
            o->size_bytes = (size_t)ne * es;
            out_bytes += o->size_bytes;
            known[nd->outputs[i]] = 1;
            computed[nd->outputs[i]] = 1;
        }
        if (!outs_ok) {
            for (uint32_t i = 0; i < nd->num_outputs; i++) {
                rt_from_def(&rt[nd->outputs[i]], &g->tensors[nd->outputs[i]]);
                known[nd->outputs[i]] = 0;
                computed[nd->outputs[i]] = 0;
            }
            continue;
        }
        if (!all_const || !(info->flags & KS_OPF_FOLDABLE) || !k->run) continue;
        if (out_bytes > FOLD_MAX_BYTES || p->folded_bytes + out_bytes > FOLD_TOTAL_MAX_BYTES)
            continue;
        if (k->plan && k->plan(&ctx) != KS_STATUS_OK) continue;
        if (ctx.scratch_bytes > FOLD_MAX_BYTES) continue;
        int ok = 1;
        for (uint32_t i = 0; i < nd->num_outputs && ok; i++) {
            outs[i]->data = ks__alloc_aligned(&g->alloc, outs[i]->size_bytes + 1, 64);
            if (!outs[i]->data) ok = 0;
        }
        if (ok && ctx.scratch_bytes) {
            scratch = ks__alloc_aligned(&g->alloc, ctx.scratch_bytes, 64);
            if (!scratch) ok = 0;
            ctx.scratch = scratch;
        }
        if (ok) ok = k->run(&ctx) == KS_STATUS_OK;
        ks__free(&g->alloc, scratch);
        scratch = NULL;
        if (!ok) {
            for (uint32_t i = 0; i < nd->num_outputs; i++) {
                ks__free(&g->alloc, outs[i]->data);
                outs[i]->data = NULL;
            }
            continue;
        }
        for (uint32_t i = 0; i < nd->num_outputs; i++) {
            int32_t y = nd->outputs[i];
            ks__tensor *ty = &g->tensors[y];
            ty->dtype = outs[i]->dtype;
            ty->rank = outs[i]->rank;
            for (int32_t d = 0; d < ty->rank; d++)
                ty->dims[d] = outs[i]->dims[d];
            void *data = outs[i]->data;
            outs[i]->data = NULL;
            if (ks__graph_set_const(g, y, data, outs[i]->size_bytes, false) != KS_STATUS_OK) {
                ks__free(&g->alloc, data);
                st = oom(p);
                goto done;
            }
            rt_from_def(&rt[y], ty);
        }
        p->folded_bytes += out_bytes;
        nd->op = 0;
        (*num_folded)++;
    }
    /* Write computed shapes back; graph inputs/outputs keep their declared shapes. */
    for (uint32_t i = 0; i < nt; i++) {
        if (!computed[i] || p->is_io[i] || is_const_t(g, (int32_t)i)) continue;
        ks__tensor *t = &g->tensors[i];
        t->dtype = rt[i].dtype;
        t->rank = rt[i].rank;
        for (int32_t d = 0; d < t->rank; d++)
            t->dims[d] = rt[i].dims[d];
    }
done:
    ks__free(&g->alloc, rt);
    ks__free(&g->alloc, known);
    ks__free(&g->alloc, computed);
    ks__free(&g->alloc, ins);
    ks__free(&g->alloc, outs);
    return st;
}

/* ---------------------------------------------------------------- transposes */

static int perm_is(const ks__node *n, const int32_t *perm, int32_t rank) {
    if (n->ip[0] != rank) return 0;
    for (int32_t i = 0; i < rank; i++)
        if (n->ip[1 + i] != perm[i]) return 0;
    return 1;
}

static int perm_valid(const ks__node *n) {
    int32_t r = n->ip[0];
    if (r < 1 || r > KS_MAX_RANK) return 0;
    uint32_t seen = 0;
    for (int32_t i = 0; i < r; i++) {
        int32_t v = n->ip[1 + i];
        if (v < 0 || v >= r || (seen & (1u << v))) return 0;
        seen |= 1u << v;
    }
    return 1;
}

/* Identity transposes go away; T(T(x)) becomes one transpose of x. */
static uint32_t simplify_transposes(pass_ctx *p) {
    ks__graph *g = p->g;
    uint32_t changes = 0;
    for (uint32_t n = 0; n < g->num_nodes; n++) {
        ks__node *nd = &g->nodes[n];
        if (nd->op != KS_OP_TRANSPOSE || nd->num_inputs != 1 || !perm_valid(nd)) continue;
        int32_t r = nd->ip[0];
        int32_t x = nd->inputs[0];
        int32_t pr = p->producer[x];
        if (pr >= 0 && g->nodes[pr].op == KS_OP_TRANSPOSE && perm_valid(&g->nodes[pr]) &&
            g->nodes[pr].ip[0] == r && g->nodes[pr].num_inputs == 1) {
            const ks__node *m = &g->nodes[pr];
            int32_t q[KS_MAX_RANK];
            for (int32_t i = 0; i < r; i++)
                q[i] = m->ip[1 + nd->ip[1 + i]];
            for (int32_t i = 0; i < r; i++)
                nd->ip[1 + i] = q[i];
            p->uses[x]--;
            nd->inputs[0] = m->inputs[0];
            p->uses[nd->inputs[0]]++;
            x = nd->inputs[0];
            changes++;
        }
        int ident = 1;
        for (int32_t i = 0; i < r; i++)
            if (nd->ip[1 + i] != i) ident = 0;
        if (ident && g->tensors[x].rank == r) changes += (uint32_t)bypass(p, n, x, nd->outputs[0]);
    }
    return changes;
}

static const int32_t k_to_nhwc[4] = {0, 2, 3, 1};
static const int32_t k_to_nchw[4] = {0, 3, 1, 2};

static int is_binary_ew(uint32_t op) {
    return (op >= KS_OP_ADD && op <= KS_OP_MINIMUM) || op == KS_OP_PRELU;
}

/* Copy of constant c expanded to `rank` with leading ones, then permuted so that
 * out.dims[i] = expanded.dims[perm[i]]. *out = -1 when c does not qualify. */
static ks_status const_permuted(pass_ctx *p, int32_t c, const int32_t *perm, int32_t rank,
                                int32_t *out) {
    ks__graph *g = p->g;
    const ks__tensor *t = &g->tensors[c];
    *out = -1;
    if (t->rank > rank || t->quant.count) return KS_STATUS_OK;
    int64_t de[KS_MAX_RANK], nd[KS_MAX_RANK], sstride[KS_MAX_RANK];
    for (int32_t i = 0; i < rank; i++)
        de[i] = 1;
    for (int32_t i = 0; i < t->rank; i++)
        de[rank - t->rank + i] = t->dims[i];
    for (int32_t i = 0; i < rank; i++)
        nd[i] = de[perm[i]];
    size_t es = ks_dtype_size(t->dtype);
    int64_t ne = ks__numel(rank, de);
    if (ne < 0 || es == 0 || (uint64_t)ne * es != t->size_bytes) return KS_STATUS_OK;
    sstride[rank - 1] = 1;
    for (int32_t i = rank - 2; i >= 0; i--)
        sstride[i] = sstride[i + 1] * de[i + 1];
    uint8_t *buf = ks__alloc_aligned(&g->alloc, (size_t)ne * es + 1, 64);
    if (!buf) return oom(p);
    const uint8_t *src = t->data;
    int64_t idx[KS_MAX_RANK] = {0};
    for (int64_t o = 0; o < ne; o++) {
        int64_t off = 0;
        for (int32_t i = 0; i < rank; i++)
            off += idx[i] * sstride[perm[i]];
        memcpy(buf + o * (int64_t)es, src + off * (int64_t)es, es);
        for (int32_t i = rank - 1; i >= 0; i--) {
            if (++idx[i] < nd[i]) break;
            idx[i] = 0;
        }
    }
    ks_status st = add_tensor_like(p, c, "/perm", rank, nd, out);
    if (st) {
        ks__free(&g->alloc, buf);
        return st;
    }
    if (ks__graph_set_const(g, *out, buf, (size_t)ne * es, false)) {
        ks__free(&g->alloc, buf);
        return oom(p);
    }
    return KS_STATUS_OK;
}

static ks_status const_twin(pass_ctx *p, int32_t c, int32_t *out) {
    return const_permuted(p, c, k_to_nhwc, 4, out);
}

/* Sinks TRANSPOSE(w, P) below its single consumer when that consumer is elementwise (unary, or
 * binary with a constant or an equally transposed operand) or a concat of equally transposed
 * inputs: the op then runs on w's layout and one transpose follows it. Never adds transposes;
 * it brings exit transposes next to their inverses and activations next to their producers. */
static ks_status sink_transposes(pass_ctx *p, uint32_t *changes) {
    ks__graph *g = p->g;
    *changes = 0;
    uint32_t nn0 = g->num_nodes;
    for (uint32_t n = 0; n < nn0; n++) {
        ks__node *nd = &g->nodes[n];
        if (nd->op == 0 || nd->num_outputs != 1 || nd->num_inputs > 64) continue;
        const ks__op_info *info = ks__op_get_info(nd->op);
        if (!info) continue;
        int unary = (info->flags & KS_OPF_UNARY) == KS_OPF_UNARY && nd->num_inputs == 1;
        int binary = is_binary_ew(nd->op) && nd->num_inputs == 2;
        int concat = nd->op == KS_OP_CONCAT;
        if (!unary && !binary && !concat) continue;
        int32_t y = nd->outputs[0];
        if (g->tensors[y].quant.count) continue;
        int32_t perm[KS_MAX_RANK], rank = 0, first_t = -1;
        int ok = 1;
        for (uint32_t k = 0; k < nd->num_inputs && ok; k++) {
            int32_t x = nd->inputs[k];
            if (x < 0) {
                ok = 0;
                break;
            }
            if (is_const_t(g, x) && !concat) continue;
            int32_t pr = p->producer[x];
            if (pr < 0 || !single_internal_use(p, x)) {
                ok = 0;
                break;
            }
            const ks__node *t = &g->nodes[pr];
            if (t->op != KS_OP_TRANSPOSE || t->num_inputs != 1 || !perm_valid(t)) {
                ok = 0;
                break;
            }
            if (first_t < 0) {
                first_t = pr;
                rank = t->ip[0];
                for (int32_t i = 0; i < rank; i++)
                    perm[i] = t->ip[1 + i];
            } else if (!perm_is(t, perm, rank)) {
                ok = 0;
            }
        }
        if (!ok || first_t < 0 || g->tensors[y].rank != rank) continue;
        int32_t inv[KS_MAX_RANK];
        for (int32_t i = 0; i < rank; i++)
            inv[perm[i]] = i;
        int32_t new_in[64];
        for (uint32_t k = 0; k < nd->num_inputs && ok; k++) {
            int32_t x = nd->inputs[k];
            if (is_const_t(g, x)) {
                ks_status st = const_permuted(p, x, inv, rank, &new_in[k]);
                if (st) return st;
                if (new_in[k] < 0) ok = 0;
            } else {
                new_in[k] = g->nodes[p->producer[x]].inputs[0];
            }
        }
        if (!ok) continue;
        nd = &g->nodes[n];
        int32_t ip0 = nd->ip[0];
        if (concat) {
            int32_t axis = ip0 < 0 ? ip0 + rank : ip0;
            if (axis < 0 || axis >= rank) continue;
            ip0 = perm[axis];
        }
        int64_t ud[KS_MAX_RANK];
        for (int32_t i = 0; i < rank; i++)
            ud[perm[i]] = g->tensors[y].dims[i];
        int32_t u;
        ks_status st = add_tensor_like(p, y, "/sunk", rank, ud, &u);
        if (st) return st;
        nd = &g->nodes[n];
        for (uint32_t k = 0; k < nd->num_inputs; k++) {
            int32_t x = nd->inputs[k];
            if (!is_const_t(g, x)) {
                int32_t pr = p->producer[x];
                if (pr != first_t) g->nodes[pr].op = 0;
                p->uses[x] = 0;
            }
            nd->inputs[k] = new_in[k];
        }
        nd->ip[0] = ip0;
        nd->outputs[0] = u;
        ks__node *t = &g->nodes[first_t];
        t->inputs[0] = u;
        t->outputs[0] = y;
        p->producer[y] = first_t;
        (*changes)++;
    }
    return KS_STATUS_OK;
}

/* The NHWC twins of ShuffleNet's channel shuffle, which ONNX exports in NCHW: RESHAPE
 * [N,C,H,W] -> [N,g,C/g,H,W], TRANSPOSE (0,2,1,3,4), RESHAPE to [N,C,H,W], then SPLIT on the
 * channels. A rank-5 tensor [N,A,B,H,W] has the twin [N,H,W,A,B]; on twins the shuffle is one
 * transpose of the last two axes and the split runs on axis 3, so the four NCHW <-> NHWC
 * transposes around each shuffle go away. Sets twin[] of nd's outputs when it applies; nd is a
 * copy of the node. */
static ks_status shuffle_twin(pass_ctx *p, const ks__node *nd, int32_t *twin, uint32_t nt0) {
    ks__graph *g = p->g;
    if (nd->num_inputs < 1 || nd->inputs[0] < 0 || (uint32_t)nd->inputs[0] >= nt0)
        return KS_STATUS_OK;
    int32_t x = nd->inputs[0];
    if (twin[x] < 0) return KS_STATUS_OK;
    const ks__tensor *xt = &g->tensors[x];
    for (int32_t i = 0; i < xt->rank; i++)
        if (xt->dims[i] <= 0 || xt->dims[i] > INT32_MAX) return KS_STATUS_OK;
    int64_t od[5];
    int32_t rank = 0;
    int32_t ip[KS_NODE_MAX_IPARAMS];
    memset(ip, 0, sizeof(ip));
    if (nd->op == KS_OP_SPLIT) {
        int32_t axis = nd->ip[0] < 0 ? nd->ip[0] + xt->rank : nd->ip[0];
        if (xt->rank != 4 || axis != 1 || nd->num_outputs > 64) return KS_STATUS_OK;
        int32_t outs[64], ins[2] = {twin[x], nd->num_inputs > 1 ? nd->inputs[1] : -1};
        for (uint32_t k = 0; k < nd->num_outputs; k++) {
            const ks__tensor *yt = &g->tensors[nd->outputs[k]];
            if (yt->rank != 4 || (uint32_t)nd->outputs[k] >= nt0) return KS_STATUS_OK;
            int64_t d[4] = {yt->dims[0], yt->dims[2], yt->dims[3], yt->dims[1]};
            ks_status st = add_tensor_like(p, nd->outputs[k], "/nhwc", 4, d, &outs[k]);
            if (st) return st;
        }
        uint32_t idx;
        if (ks__graph_add_node(g, KS_OP_SPLIT, nd->name, nd->num_inputs > 1 ? 2 : 1, ins,
                               nd->num_outputs, outs, &idx))
            return oom(p);
        g->nodes[idx].ip[0] = 3;
        for (uint32_t k = 0; k < nd->num_outputs; k++)
            twin[nd->outputs[k]] = outs[k];
        return KS_STATUS_OK;
    }
    if (nd->num_outputs != 1 || (uint32_t)nd->outputs[0] >= nt0) return KS_STATUS_OK;
    int32_t y = nd->outputs[0];
    const ks__tensor *yt = &g->tensors[y];
    const int64_t *xd = xt->dims, *yd = yt->dims;
    if (nd->op == KS_OP_RESHAPE) {
        if (nd->num_inputs > 1 && !is_const_t(g, nd->inputs[1])) return KS_STATUS_OK;
        if (xt->rank == 4 && yt->rank == 5 && yd[0] == xd[0] && yd[1] * yd[2] == xd[1] &&
            yd[3] == xd[2] && yd[4] == xd[3]) {
            rank = 5;
            od[0] = xd[0], od[1] = xd[2], od[2] = xd[3], od[3] = yd[1], od[4] = yd[2];
        } else if (xt->rank == 5 && yt->rank == 4 && yd[0] == xd[0] && yd[1] == xd[1] * xd[2] &&
                   yd[2] == xd[3] && yd[3] == xd[4]) {
            rank = 4;
            od[0] = xd[0], od[1] = xd[3], od[2] = xd[4], od[3] = yd[1];
        } else {
            return KS_STATUS_OK;
        }
        ip[0] = rank;
        for (int32_t i = 0; i < rank; i++)
            ip[1 + i] = (int32_t)od[i];
    } else if (nd->op == KS_OP_TRANSPOSE && xt->rank == 5 && yt->rank == 5) {
        static const int32_t swap12[5] = {0, 2, 1, 3, 4};
        if (!perm_is(nd, swap12, 5)) return KS_STATUS_OK;
        rank = 5;
        od[0] = xd[0], od[1] = xd[3], od[2] = xd[4], od[3] = xd[2], od[4] = xd[1];
        static const int32_t swap34[6] = {5, 0, 1, 2, 4, 3};
        memcpy(ip, swap34, sizeof(swap34));
    } else {
        return KS_STATUS_OK;
    }
    int32_t u, in = twin[x];
    ks_status st = add_tensor_like(p, y, "/nhwc", rank, od, &u);
    if (st) return st;
    uint32_t idx;
    if (ks__graph_add_node(g, nd->op, nd->name, 1, &in, 1, &u, &idx)) return oom(p);
    memcpy(g->nodes[idx].ip, ip, sizeof(ip));
    twin[y] = u;
    return KS_STATUS_OK;
}

/* Layout cleanup. Every NCHW 4-D tensor x that is an NHWC->NCHW transpose of w, or an
 * elementwise / concat / zero-pad function of such tensors and constants, has an "NHWC twin":
 * the same values already in NHWC, computed without transposes. Each TRANSPOSE(0,2,3,1) of a
 * tensor with a twin is replaced by the twin. Twins are built eagerly for candidates; the ones
 * nobody ends up using are removed by dead-code elimination. */
static ks_status nhwc_twins(pass_ctx *p, uint32_t *changes) {
    ks__graph *g = p->g;
    ks_status st = KS_STATUS_OK;
    uint32_t nt0 = g->num_tensors, nn0 = g->num_nodes;
    int32_t *twin = ks__alloc(&g->alloc, (size_t)(nt0 ? nt0 : 1) * sizeof(int32_t));
    if (!twin) return oom(p);
    for (uint32_t i = 0; i < nt0; i++)
        twin[i] = -1;
    *changes = 0;
    for (uint32_t n = 0; n < nn0; n++) {
        ks__node nd = g->nodes[n]; /* copy: adding nodes may move the array */
        if (nd.op == KS_OP_RESHAPE || nd.op == KS_OP_SPLIT ||
            (nd.op == KS_OP_TRANSPOSE && nd.ip[0] == 5)) {
            st = shuffle_twin(p, &nd, twin, nt0);
            if (st) goto done;
            continue;
        }
        if (nd.op == 0 || nd.num_outputs != 1) continue;
        int32_t y = nd.outputs[0];
        if (nd.op == KS_OP_TRANSPOSE && nd.num_inputs == 1 && perm_is(&nd, k_to_nchw, 4)) {
            twin[y] = nd.inputs[0];
            continue;
        }
        if (g->tensors[y].rank != 4 || g->tensors[y].quant.count) continue;
        const ks__op_info *info = ks__op_get_info(nd.op);
        if (!info) continue;
        int unary = (info->flags & KS_OPF_UNARY) == KS_OPF_UNARY && nd.num_inputs == 1;
        int elementwise = unary || (is_binary_ew(nd.op) && nd.num_inputs == 2) ||
                          (nd.op == KS_OP_CONCAT && nd.num_inputs >= 1) ||
                          (nd.op == KS_OP_PAD && nd.num_inputs >= 2);
        if (!elementwise) continue;
        int32_t new_in[64];
        int ok = nd.num_inputs <= 64, any_twin = 0;
        for (uint32_t k = 0; k < nd.num_inputs && ok; k++) {
            int32_t t = nd.inputs[k];
            new_in[k] = t;
            if (nd.op == KS_OP_PAD && k > 0) {
                if (k == 1 && !is_const_t(g, t)) ok = 0;
                continue;
            }
            if (t < 0) continue;
            if (twin[t] >= 0) {
                new_in[k] = twin[t];
                any_twin = 1;
            } else if (is_const_t(g, t) && (nd.op != KS_OP_CONCAT || g->tensors[t].rank == 4)) {
                int32_t ct;
                st = const_twin(p, t, &ct);
                if (st) goto done;
                if (ct < 0) ok = 0;
                new_in[k] = ct;
            } else {
                ok = 0;
            }
        }
        if (!ok || !any_twin) continue;
        int32_t ip[KS_NODE_MAX_IPARAMS];
        memcpy(ip, nd.ip, sizeof(ip));
        if (nd.op == KS_OP_CONCAT) {
            int32_t axis = ip[0] < 0 ? ip[0] + 4 : ip[0];
            if (axis < 0 || axis > 3) continue;
            for (int32_t i = 0; i < 4; i++)
                if (k_to_nhwc[i] == axis) ip[0] = i;
        }
        if (nd.op == KS_OP_PAD) {
            /* pads [4,2] rows follow the NCHW dims; reorder them for NHWC */
            const ks__tensor *pt = &g->tensors[nd.inputs[1]];
            if (pt->rank != 2 || pt->dims[0] != 4 || pt->dims[1] != 2 ||
                (pt->dtype != KS_DTYPE_I64 && pt->dtype != KS_DTYPE_I32))
                continue;
            int64_t pv[8];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 2; j++) {
                    int64_t s = (int64_t)k_to_nhwc[i] * 2 + j;
                    pv[i * 2 + j] = pt->dtype == KS_DTYPE_I64 ? ((const int64_t *)pt->data)[s]
                                                              : ((const int32_t *)pt->data)[s];
                }
            int64_t d[2] = {4, 2};
            int32_t np;
            st = add_tensor_like(p, nd.inputs[1], "/nhwc", 2, d, &np);
            if (st) goto done;
            g->tensors[np].dtype = KS_DTYPE_I64;
            if (ks__graph_set_const(g, np, pv, sizeof(pv), true)) {
                st = oom(p);
                goto done;
            }
            new_in[1] = np;
        }
        int64_t od[4];
        for (int i = 0; i < 4; i++)
            od[i] = g->tensors[y].dims[k_to_nhwc[i]];
        int32_t u;
        st = add_tensor_like(p, y, "/nhwc", 4, od, &u);
        if (st) goto done;
        uint32_t idx;
        if (ks__graph_add_node(g, nd.op, nd.name, nd.num_inputs, new_in, 1, &u, &idx)) {
            st = oom(p);
            goto done;
        }
        memcpy(g->nodes[idx].ip, ip, sizeof(ip));
        memcpy(g->nodes[idx].fp, nd.fp, sizeof(nd.fp));
        twin[y] = u;
    }
    /* Replace entry transposes. */
    st = analyze(p);
    if (st) goto done;
    for (uint32_t n = 0; n < nn0; n++) {
        ks__node *nd = &g->nodes[n];
        if (nd->op != KS_OP_TRANSPOSE || nd->num_inputs != 1 || !perm_is(nd, k_to_nhwc, 4))
            continue;
        int32_t x = nd->inputs[0];
        if ((uint32_t)x >= nt0 || twin[x] < 0) continue;
        *changes += (uint32_t)bypass(p, n, twin[x], nd->outputs[0]);
    }
done:
    ks__free(&g->alloc, twin);
    return st;
}

/* SHAPE(TRANSPOSE(x)) -> GATHER(SHAPE(x), perm): the transpose may then become dead. */
static ks_status shape_of_transpose(pass_ctx *p, uint32_t *changes) {
    ks__graph *g = p->g;
    *changes = 0;
    uint32_t nn0 = g->num_nodes;
    for (uint32_t n = 0; n < nn0; n++) {
        ks__node *nd = &g->nodes[n];
        if (nd->op != KS_OP_SHAPE || nd->num_inputs != 1 || nd->inputs[0] < 0) continue;
        int32_t pr = p->producer[nd->inputs[0]];
        if (pr < 0 || g->nodes[pr].op != KS_OP_TRANSPOSE || !perm_valid(&g->nodes[pr])) continue;
        int32_t r = g->nodes[pr].ip[0];
        int32_t src = g->nodes[pr].inputs[0];
        int32_t y = nd->outputs[0];
        int64_t perm[KS_MAX_RANK], d1 = r;
        for (int32_t i = 0; i < r; i++)
            perm[i] = g->nodes[pr].ip[1 + i];
        int32_t s0, pc;
        ks_status st = add_tensor_like(p, y, "/pre", 1, &d1, &s0);
        if (!st) st = add_tensor_like(p, y, "/perm", 1, &d1, &pc);
        if (st) return st;
        g->tensors[pc].dtype = KS_DTYPE_I64;
        if (ks__graph_set_const(g, pc, perm, (size_t)r * sizeof(int64_t), true)) return oom(p);
        nd = &g->nodes[n];
        p->uses[nd->inputs[0]]--;
        nd->inputs[0] = src;
        nd->outputs[0] = s0;
        char name[200];
        ks__fmt(name, sizeof(name), "%s/perm", nd->name);
        int32_t ins[2] = {s0, pc};
        uint32_t idx;
        if (ks__graph_add_node(g, KS_OP_GATHER, name, 2, ins, 1, &y, &idx)) return oom(p);
        (*changes)++;
    }
    return KS_STATUS_OK;
}

/* RESHAPE / SQUEEZE / UNSQUEEZE whose known output shape equals its input's. */
static uint32_t remove_noop_reshapes(pass_ctx *p) {
    ks__graph *g = p->g;
    uint32_t changes = 0;
    for (uint32_t n = 0; n < g->num_nodes; n++) {
        ks__node *nd = &g->nodes[n];
        if (nd->op != KS_OP_RESHAPE && nd->op != KS_OP_SQUEEZE && nd->op != KS_OP_UNSQUEEZE)
            continue;
        int32_t x = nd->inputs[0], y = nd->outputs[0];
        const ks__tensor *tx = &g->tensors[x], *ty = &g->tensors[y];
        if (tx->rank != ty->rank || tx->dtype != ty->dtype || ks__numel(tx->rank, tx->dims) < 0 ||
            tx->quant.count || ty->quant.count)
            continue;
        if (nd->op == KS_OP_RESHAPE && nd->num_inputs > 1 && nd->inputs[1] >= 0 &&
            !is_const_t(g, nd->inputs[1]))
            continue;
        int same = 1;
        for (int32_t i = 0; i < tx->rank; i++)
            if (tx->dims[i] != ty->dims[i]) same = 0;
        if (same) changes += (uint32_t)bypass(p, n, x, y);
    }
    return changes;
}

/* ---------------------------------------------------------------- fusions */

static int32_t *act_slot(ks__node *n) {
    switch (n->op) {
    case KS_OP_CONV2D:
        return &n->ip[10];
    case KS_OP_CONV2D_TRANSPOSE:
        return &n->ip[7];
    case KS_OP_FULLY_CONNECTED:
        return &n->ip[0];
    case KS_OP_POOL2D:
        return &n->ip[11];
    case KS_OP_CONCAT:
        return &n->ip[1];
    default:
        return (n->op >= KS_OP_ADD && n->op <= KS_OP_MINIMUM) ? &n->ip[0] : NULL;
    }
}

int32_t ks__fused_act_of(const ks__node *a, float *alpha) {
    *alpha = 0.0f;
    switch (a->op) {
    case KS_OP_RELU:
        return KS_ACT_RELU;
    case KS_OP_RELU6:
        return KS_ACT_RELU6;
    case KS_OP_RELU_N1_TO_1:
        return KS_ACT_RELU_N1_TO_1;
    case KS_OP_SIGMOID:
        return KS_ACT_SIGMOID;
    case KS_OP_TANH:
        return KS_ACT_TANH;
    case KS_OP_HARD_SWISH:
        return KS_ACT_HARD_SWISH;
    case KS_OP_LEAKY_RELU:
        *alpha = a->fp[0];
        return KS_ACT_LEAKY_RELU;
    case KS_OP_CLIP:
        if (a->fp[0] == 0.0f && a->fp[1] == 6.0f) return KS_ACT_RELU6;
        if (a->fp[0] == -1.0f && a->fp[1] == 1.0f) return KS_ACT_RELU_N1_TO_1;
        if (a->fp[0] == 0.0f && isinf(a->fp[1]) && a->fp[1] > 0) return KS_ACT_RELU;
        return -1;
    default:
        return -1;
    }
}

static uint32_t fuse_activations(pass_ctx *p) {
    ks__graph *g = p->g;
    uint32_t changes = 0;
    for (uint32_t n = 0; n < g->num_nodes; n++) {
        ks__node *a = &g->nodes[n];
        if (a->op == 0 || a->num_inputs != 1 || a->num_outputs != 1) continue;
        float alpha;
        int32_t act = ks__fused_act_of(a, &alpha);
        int32_t x = a->inputs[0];
        if (act < 0 || x < 0 || !single_internal_use(p, x) || !is_float_plain(g, x)) continue;
        int32_t pr = p->producer[x];
        if (pr < 0) continue;
        ks__node *prod = &g->nodes[pr];
        int32_t *slot = act_slot(prod);
        if (!slot || *slot != KS_ACT_NONE || prod->num_outputs != 1) continue;
        /* Pool and concat carry no alpha parameter. */
        if (act == KS_ACT_LEAKY_RELU && (prod->op == KS_OP_POOL2D || prod->op == KS_OP_CONCAT))
            continue;
        if (!is_float_plain(g, a->outputs[0])) continue;
        *slot = act;
        if (act == KS_ACT_LEAKY_RELU) prod->fp[0] = alpha;
        prod->outputs[0] = a->outputs[0];
        p->producer[a->outputs[0]] = pr;
        p->uses[x] = 0;
        a->op = 0;
        changes++;
    }
    return changes;
}

/* MUL(x, SIGMOID(x)) (either operand order) where x is the output of a float CONV2D or
 * FULLY_CONNECTED without a fused act and is read only by that SIGMOID and that MUL -> the producer
 * with act SILU writing the MUL's output. YOLOX/YOLOv5-style nets have one such pair after nearly
 * every conv; fused, the activation costs no extra pass over the tensor. */
static uint32_t fuse_silu(pass_ctx *p) {
    ks__graph *g = p->g;
    uint32_t changes = 0;
    for (uint32_t n = 0; n < g->num_nodes; n++) {
        ks__node *m = &g->nodes[n];
        if (m->op != KS_OP_MUL || m->num_inputs != 2 || m->num_outputs != 1 ||
            m->ip[0] != KS_ACT_NONE || !is_float_plain(g, m->outputs[0]))
            continue;
        for (int side = 0; side < 2; side++) {
            int32_t x = m->inputs[side], s = m->inputs[1 - side];
            if (x < 0 || s < 0 || x == s || !is_float_plain(g, x) || p->uses[x] != 2 ||
                (p->is_io[x] & 2) || !single_internal_use(p, s))
                continue;
            int32_t sn = p->producer[s], pr = p->producer[x];
            if (sn < 0 || pr < 0) continue;
            ks__node *sig = &g->nodes[sn], *prod = &g->nodes[pr];
            if (sig->op != KS_OP_SIGMOID || sig->num_inputs != 1 || sig->inputs[0] != x ||
                sig->num_outputs != 1)
                continue;
            if (prod->op != KS_OP_CONV2D && prod->op != KS_OP_FULLY_CONNECTED) continue;
            int32_t *slot = act_slot(prod);
            if (!slot || *slot != KS_ACT_NONE || prod->num_outputs != 1) continue;
            *slot = KS_ACT_SILU;
            prod->fp[0] = 0.0f;
            prod->outputs[0] = m->outputs[0];
            p->producer[m->outputs[0]] = pr;
            p->producer[x] = -1;
            p->producer[s] = -1;
            p->uses[x] = 0;
            p->uses[s] = 0;
            sig->op = 0;
            m->op = 0;
            changes++;
            break;
        }
    }
    return changes;
}

/* Same known shape (no -1 dims) for tensors a and b. */
/* Value i of a constant I32/I64 1-D tensor. */
static int const_i64(const ks__graph *g, int32_t id, int64_t i, int64_t *v) {
    if (!is_const_t(g, id)) return 0;
    const ks__tensor *t = &g->tensors[id];
    if (t->rank != 1 || i < 0 || i >= t->dims[0] || !t->data) return 0;
    if (t->dtype == KS_DTYPE_I32 && t->size_bytes >= (size_t)(i + 1) * 4)
        *v = ((const int32_t *)t->data)[i];
    else if (t->dtype == KS_DTYPE_I64 && t->size_bytes >= (size_t)(i + 1) * 8)
        *v = ((const int64_t *)t->data)[i];
    else
        return 0;
    return 1;
}

/* A SLICE node taking every second element of one axis from `start` on (start 0 or 1), with
 * plain ONNX semantics (no TFLite masks). Returns 1 and the axis/start if so. */
static int stride2_slice(const ks__graph *g, const ks__node *nd, int32_t rank, int64_t *axis,
                         int64_t *start) {
    if (nd->op != KS_OP_SLICE || nd->num_inputs < 5 || nd->ip[0] || nd->ip[1] || nd->ip[2])
        return 0;
    int64_t st, en, ax, step;
    if (!const_i64(g, nd->inputs[1], 0, &st) || !const_i64(g, nd->inputs[2], 0, &en) ||
        !const_i64(g, nd->inputs[3], 0, &ax) || !const_i64(g, nd->inputs[4], 0, &step))
        return 0;
    if (g->tensors[nd->inputs[1]].dims[0] != 1 || step != 2 || (st != 0 && st != 1)) return 0;
    if (ax < 0) ax += rank;
    const ks__tensor *x = &g->tensors[nd->inputs[0]];
    if (ax < 0 || ax >= rank || x->dims[ax] < 2 || en < x->dims[ax]) return 0;
    *axis = ax, *start = st;
    return 1;
}

/* YOLOX's Focus: CONCAT on channels of x[..., dy::2, dx::2] for the four (dy, dx), each a pair
 * of stride-2 SLICEs, usually followed by the importer's NCHW->NHWC TRANSPOSE. Eight slices, a
 * concat and a transpose (YOLOX-nano: 0.5 ms of 9) become RESHAPE [N,C,H/2,2,W/2,2] ->
 * TRANSPOSE -> RESHAPE, one pass over the data; the channel block order (dy-major or
 * dx-major) becomes the order of the two size-2 axes in the permutation. */
static ks_status fuse_focus(pass_ctx *p, uint32_t *changes) {
    ks__graph *g = p->g;
    *changes = 0;
    uint32_t nn0 = g->num_nodes;
    for (uint32_t n = 0; n < nn0; n++) {
        ks__node cat = g->nodes[n];
        if (cat.op != KS_OP_CONCAT || cat.num_inputs != 4 || cat.num_outputs != 1 || cat.ip[1])
            continue;
        int32_t y = cat.outputs[0];
        const ks__tensor *yt = &g->tensors[y];
        if (yt->rank != 4 || !is_float_plain(g, y) || (cat.ip[0] != 1 && cat.ip[0] != -3)) continue;
        int32_t x = -1, slices[8];
        int order[4] = {-1, -1, -1, -1}; /* block k -> dy * 2 + dx */
        int ok = 1;
        for (uint32_t k = 0; k < 4 && ok; k++) {
            int32_t t = cat.inputs[k];
            int32_t s2 = t >= 0 && single_internal_use(p, t) ? p->producer[t] : -1;
            if (s2 < 0) {
                ok = 0;
                break;
            }
            int32_t t1 = g->nodes[s2].inputs[0];
            int32_t s1 = single_internal_use(p, t1) ? p->producer[t1] : -1;
            int64_t ax1, st1, ax2, st2;
            if (s1 < 0 || !stride2_slice(g, &g->nodes[s2], 4, &ax2, &st2) ||
                !stride2_slice(g, &g->nodes[s1], 4, &ax1, &st1) || ax1 == ax2 || ax1 < 2 ||
                ax2 < 2) {
                ok = 0;
                break;
            }
            int32_t src = g->nodes[s1].inputs[0];
            if (x < 0) x = src;
            if (src != x) ok = 0;
            int64_t dy = ax1 == 2 ? st1 : st2, dx = ax1 == 3 ? st1 : st2;
            order[k] = (int)(dy * 2 + dx);
            slices[2 * k] = s1, slices[2 * k + 1] = s2;
        }
        if (!ok || x < 0 || !is_float_plain(g, x)) continue;
        const ks__tensor *xt = &g->tensors[x];
        int64_t N = xt->dims[0], C = xt->dims[1], H = xt->dims[2], W = xt->dims[3];
        if (xt->rank != 4 || N < 1 || C < 1 || H < 2 || W < 2 || H % 2 || W % 2) continue;
        if (yt->dims[0] != N || yt->dims[1] != 4 * C || yt->dims[2] != H / 2 ||
            yt->dims[3] != W / 2)
            continue;
        int dy_major = order[0] == 0 && order[1] == 1 && order[2] == 2 && order[3] == 3;
        int dx_major = order[0] == 0 && order[1] == 2 && order[2] == 1 && order[3] == 3;
        if (!dy_major && !dx_major) continue;
        /* x6 axes: 0 n, 1 c, 2 i, 3 dy, 4 j, 5 dx. Block axes: dy-major (dy, dx) or (dx, dy). */
        int32_t b0 = dy_major ? 3 : 5, b1 = dy_major ? 5 : 3;
        /* Output NHWC when the concat only feeds the importer's NCHW->NHWC transpose. */
        int32_t tr = single_internal_use(p, y) ? sole_consumer(p, y) : -1;
        int nhwc = tr >= 0 && g->nodes[tr].op == KS_OP_TRANSPOSE && g->nodes[tr].num_inputs == 1 &&
                   perm_is(&g->nodes[tr], k_to_nhwc, 4);
        int32_t out = nhwc ? g->nodes[tr].outputs[0] : y;
        if (!is_float_plain(g, out)) continue;
        int32_t perm_nchw[6] = {0, b0, b1, 1, 2, 4}, perm_nhwc[6] = {0, 2, 4, b0, b1, 1};
        const int32_t *perm = nhwc ? perm_nhwc : perm_nchw;
        int64_t d6[6] = {N, C, H / 2, 2, W / 2, 2}, t6[6];
        for (int a = 0; a < 6; a++)
            t6[a] = d6[perm[a]];
        int32_t x6, y6;
        ks_status st = add_tensor_like(p, x, "/focus6", 6, d6, &x6);
        if (!st) st = add_tensor_like(p, x, "/focus6_t", 6, t6, &y6);
        if (st) return st;
        char name[320];
        ks__fmt(name, sizeof(name), "%s/focus", g->nodes[n].name);
        uint32_t r1, tp, r2;
        st = ks__graph_add_node(g, KS_OP_RESHAPE, name, 1, &x, 1, &x6, &r1);
        if (!st) st = ks__graph_add_node(g, KS_OP_TRANSPOSE, name, 1, &x6, 1, &y6, &tp);
        if (!st) st = ks__graph_add_node(g, KS_OP_RESHAPE, name, 1, &y6, 1, &out, &r2);
        if (st) return oom(p);
        g->nodes[r1].ip[0] = 6;
        for (int a = 0; a < 6; a++)
            g->nodes[r1].ip[1 + a] = (int32_t)d6[a];
        g->nodes[tp].ip[0] = 6;
        for (int a = 0; a < 6; a++)
            g->nodes[tp].ip[1 + a] = perm[a];
        const ks__tensor *ot = &g->tensors[out];
        g->nodes[r2].ip[0] = 4;
        for (int a = 0; a < 4; a++)
            g->nodes[r2].ip[1 + a] = (int32_t)ot->dims[a];
        g->nodes[r2].ip[9] = 1; /* dims are literal */
        for (int k = 0; k < 8; k++)
            g->nodes[slices[k]].op = 0;
        g->nodes[n].op = 0;
        if (nhwc) g->nodes[tr].op = 0;
        (*changes)++;
        st = analyze(p);
        if (st) return st;
    }
    return KS_STATUS_OK;
}

static int same_known_shape(const ks__graph *g, int32_t a, int32_t b) {
    const ks__tensor *ta = &g->tensors[a], *tb = &g->tensors[b];
    if (ta->rank != tb->rank) return 0;
    for (int32_t i = 0; i < ta->rank; i++)
        if (ta->dims[i] < 0 || ta->dims[i] != tb->dims[i]) return 0;
    return 1;
}

/* ADD(conv(x), r) where the conv (float, no fused act) feeds only this ADD and neither operand
 * broadcasts -> conv(x, residual = r) with the ADD's act. Residual blocks then cost one pass over
 * the activation instead of three (conv write, ADD read of both, ADD write). r cannot depend on
 * the conv's output (that output has no other reader), so compact()'s re-ordering always finds
 * a valid order. */
static ks_status fuse_residual_add(pass_ctx *p, uint32_t *changes) {
    ks__graph *g = p->g;
    *changes = 0;
    for (uint32_t n = 0; n < g->num_nodes; n++) {
        ks__node *a = &g->nodes[n];
        if (a->op != KS_OP_ADD || a->num_inputs != 2 || a->num_outputs != 1) continue;
        int32_t y = a->outputs[0];
        if (y < 0 || !is_float_plain(g, y)) continue;
        for (int side = 0; side < 2; side++) {
            int32_t t = a->inputs[side], r = a->inputs[1 - side];
            if (t < 0 || r < 0 || t == r || !single_internal_use(p, t) || !is_float_plain(g, t) ||
                !is_float_plain(g, r) || !same_known_shape(g, t, y) || !same_known_shape(g, r, y))
                continue;
            int32_t pr = p->producer[t];
            if (pr < 0) continue;
            ks__node *c = &g->nodes[pr];
            if (c->op != KS_OP_CONV2D || c->ip[10] != KS_ACT_NONE || c->num_outputs != 1 ||
                c->num_inputs < 2 || c->num_inputs > 3 || !is_float_plain(g, c->inputs[0]))
                continue;
            int32_t *ins = ks__alloc(&g->alloc, 4 * sizeof(int32_t));
            if (!ins) return oom(p);
            for (uint32_t k = 0; k < 3; k++)
                ins[k] = k < c->num_inputs ? c->inputs[k] : -1;
            ins[3] = r;
            ks__free(&g->alloc, c->inputs);
            c->inputs = ins;
            c->num_inputs = 4;
            c->ip[10] = a->ip[0];
            c->fp[0] = a->fp[0];
            c->outputs[0] = y;
            p->producer[y] = pr;
            p->uses[t] = 0;
            a->op = 0;
            (*changes)++;
            break;
        }
    }
    return KS_STATUS_OK;
}

/* CONV2D 1x1 (stride 1, no padding, one group, no activation or residual) reading the output of a
 * spatial RESIZE that nothing else reads -> the conv first, at the input's resolution, then the
 * resize on its output. Every resize output pixel is a weighted sum of input pixels of the same
 * channel whose weights sum to 1 (nearest: one weight 1; bilinear: (1 - a) and a per axis), and a
 * 1x1 conv is an affine map per pixel, so conv(resize(x)) = resize(conv(x)) up to rounding. The
 * decoders of segmentation models upsample by 2 and then mix channels: the conv then costs a
 * quarter, and the resize moves Co instead of Ci channels. Done only when the estimated work
 * (multiply-adds of the conv, 4 per resized value) drops. */
static int dims_known_def(const ks__tensor *t) {
    for (int32_t i = 0; i < t->rank; i++)
        if (t->dims[i] < 1) return 0;
    return 1;
}

static ks_status conv_before_resize(pass_ctx *p, uint32_t *changes) {
    ks__graph *g = p->g;
    *changes = 0;
    for (uint32_t n = 0; n < g->num_nodes; n++) {
        ks__node *rs = &g->nodes[n];
        if (rs->op != KS_OP_RESIZE || rs->num_outputs != 1 || rs->num_inputs < 1) continue;
        int32_t x = rs->inputs[0], r = rs->outputs[0];
        if (!is_float_plain(g, x) || !is_float_plain(g, r) || !single_internal_use(p, r)) continue;
        if (rs->ip[0] != 0 && rs->ip[0] != 1) continue; /* nearest or bilinear */
        const ks__tensor *tx = &g->tensors[x], *tr = &g->tensors[r];
        if (tx->rank != 4 || tr->rank != 4 || !dims_known_def(tx) || !dims_known_def(tr)) continue;
        int32_t ci = sole_consumer(p, r);
        if (ci < 0) continue;
        ks__node *cv = &g->nodes[ci];
        if (cv->op != KS_OP_CONV2D || cv->num_outputs != 1 || cv->num_inputs < 2 ||
            cv->num_inputs > 3 || cv->inputs[0] != r || cv->ip[10] != KS_ACT_NONE ||
            cv->ip[9] > 1 || cv->ip[0] > 1 || cv->ip[1] > 1)
            continue;
        if (cv->ip[8] == KS_PAD_EXPLICIT && (cv->ip[4] || cv->ip[5] || cv->ip[6] || cv->ip[7]))
            continue;
        int32_t w = cv->inputs[1], y = cv->outputs[0];
        if (!is_float_plain(g, w) || !is_const_t(g, w) || !is_float_plain(g, y)) continue;
        if (cv->num_inputs > 2 && cv->inputs[2] >= 0 && !is_float_plain(g, cv->inputs[2])) continue;
        const ks__tensor *tw = &g->tensors[w], *ty = &g->tensors[y];
        if (tw->rank != 4 || tw->dims[1] != 1 || tw->dims[2] != 1 || tw->dims[3] != tr->dims[3] ||
            ty->rank != 4 || !dims_known_def(ty) || ty->dims[1] != tr->dims[1] ||
            ty->dims[2] != tr->dims[2] || ty->dims[3] != tw->dims[0])
            continue;
        double in_px = (double)tx->dims[0] * (double)tx->dims[1] * (double)tx->dims[2];
        double out_px = (double)tr->dims[0] * (double)tr->dims[1] * (double)tr->dims[2];
        double cin = (double)tw->dims[3], cout = (double)tw->dims[0];
        double before = out_px * cin * cout + 4.0 * out_px * cin;
        double after = in_px * cin * cout + 4.0 * out_px * cout;
        if (!(after < before)) continue;
        int64_t dims[4] = {tx->dims[0], tx->dims[1], tx->dims[2], tw->dims[0]};
        int32_t mid;
        ks_status st = add_tensor_like(p, y, "/low_res", 4, dims, &mid);
        if (st) return st;
        rs = &g->nodes[n];
        cv = &g->nodes[ci];
        cv->inputs[0] = x;
        cv->outputs[0] = mid;
        rs->inputs[0] = mid;
        rs->outputs[0] = y;
        /* r has no reader left; compact() (run right after this pass) drops it, re-orders the
         * conv before the resize and sizes the analysis arrays for mid */
        p->producer[y] = (int32_t)n;
        p->producer[r] = -1;
        p->uses[r] = 0;
        (*changes)++;
    }
    return KS_STATUS_OK;
}

/* Per-output-channel view of a constant c for y[..., C]: 1 if c broadcasts only along the last
 * axis (all other dims 1) with C or 1 values, and does not grow y's rank. */
static int per_channel(const ks__graph *g, int32_t c, int32_t y, int64_t ch) {
    const ks__tensor *t = &g->tensors[c];
    if (!is_const_t(g, c) || t->dtype != KS_DTYPE_F32 || t->quant.count) return 0;
    if (t->rank > g->tensors[y].rank) return 0;
    int64_t ne = ks__numel(t->rank, t->dims);
    if (ne != ch && ne != 1) return 0;
    for (int32_t i = 0; i + 1 < t->rank; i++)
        if (t->dims[i] != 1) return 0;
    return 1;
}

/* PRELU(x, slope) where x is the output of a float CONV2D without a fused act, read only by the
 * PRELU, and slope is a constant per-output-channel vector -> the conv with act PRELU and the
 * slopes as its input 4. A single slope becomes LEAKY_RELU (also for FULLY_CONNECTED). MediaPipe
 * nets (FaceMesh, BlazeFace) put a PRELU after nearly every conv or residual add. */
static ks_status fuse_prelu(pass_ctx *p, uint32_t *changes) {
    ks__graph *g = p->g;
    *changes = 0;
    for (uint32_t n = 0; n < g->num_nodes; n++) {
        ks__node *a = &g->nodes[n];
        if (a->op != KS_OP_PRELU || a->num_inputs != 2 || a->num_outputs != 1) continue;
        int32_t x = a->inputs[0], sl = a->inputs[1], y = a->outputs[0];
        if (x < 0 || sl < 0 || x == sl || !single_internal_use(p, x) || !is_float_plain(g, x) ||
            !is_float_plain(g, y))
            continue;
        int32_t pr = p->producer[x];
        if (pr < 0) continue;
        ks__node *c = &g->nodes[pr];
        if ((c->op != KS_OP_CONV2D && c->op != KS_OP_FULLY_CONNECTED) || c->num_outputs != 1 ||
            c->num_inputs < 2 || c->num_inputs > 4 || !is_float_plain(g, c->inputs[0]))
            continue;
        int32_t *slot = act_slot(c);
        const ks__tensor *tw = &g->tensors[c->inputs[1]];
        int64_t ch = tw->rank >= 1 ? tw->dims[0] : -1;
        if (!slot || *slot != KS_ACT_NONE || ch < 1 || !per_channel(g, sl, x, ch) ||
            !same_known_shape(g, x, y))
            continue;
        const ks__tensor *ts = &g->tensors[sl];
        if (ks__numel(ts->rank, ts->dims) == 1) {
            *slot = KS_ACT_LEAKY_RELU;
            c->fp[0] = ((const float *)ts->data)[0];
        } else {
            /* Grouped/depthwise convs keep a separate PRELU: their kernels take no slopes. */
            if (c->op != KS_OP_CONV2D || c->ip[9] > 1) continue;
            int32_t *ins = ks__alloc(&g->alloc, 5 * sizeof(int32_t));
            if (!ins) return oom(p);
            for (uint32_t k = 0; k < 4; k++)
                ins[k] = k < c->num_inputs ? c->inputs[k] : -1;
            ins[4] = sl;
            ks__free(&g->alloc, c->inputs);
            c->inputs = ins;
            c->num_inputs = 5;
            *slot = KS_ACT_PRELU;
            c->fp[0] = 0.0f;
        }
        c->outputs[0] = y;
        p->producer[y] = pr;
        p->producer[x] = -1;
        p->uses[x] = 0;
        a->op = 0;
        (*changes)++;
    }
    return KS_STATUS_OK;
}

static ks_status new_f32_const(pass_ctx *p, int32_t like, const char *suffix, int32_t rank,
                               const int64_t *dims, const float *vals, int64_t n, int32_t *out) {
    ks_status st = add_tensor_like(p, like, suffix, rank, dims, out);
    if (st) return st;
    p->g->tensors[*out].dtype = KS_DTYPE_F32;
    if (ks__graph_set_const(p->g, *out, vals, (size_t)n * sizeof(float), true)) return oom(p);
    return KS_STATUS_OK;
}

/* conv/fc -> MUL/ADD/SUB/DIV by a per-output-channel constant: folded into weights and bias. */
static ks_status fold_affine(pass_ctx *p, uint32_t *changes) {
    ks__graph *g = p->g;
    *changes = 0;
    for (uint32_t n = 0; n < g->num_nodes; n++) {
        ks__node *cv = &g->nodes[n];
        if (cv->op != KS_OP_CONV2D && cv->op != KS_OP_FULLY_CONNECTED &&
            cv->op != KS_OP_CONV2D_TRANSPOSE)
            continue;
        int32_t *slot = act_slot(cv);
        if (*slot != KS_ACT_NONE || cv->num_inputs < 2 || cv->num_outputs != 1) continue;
        int32_t y = cv->outputs[0], w = cv->inputs[1];
        int32_t b = cv->num_inputs > 2 ? cv->inputs[2] : -1;
        if (!single_internal_use(p, y) || !is_float_plain(g, y) || !is_float_plain(g, w) ||
            !is_const_t(g, w) || (b >= 0 && (!is_float_plain(g, b) || !is_const_t(g, b))))
            continue;
        const ks__tensor *tw = &g->tensors[w];
        int64_t ch = tw->dims[0];
        int64_t wn = ks__numel(tw->rank, tw->dims);
        if (tw->rank < 2 || ch <= 0 || wn <= 0 || wn % ch) continue;
        if (b >= 0 && ks__numel(g->tensors[b].rank, g->tensors[b].dims) != ch) continue;
        int32_t ci = sole_consumer(p, y);
        if (ci < 0) continue;
        ks__node *m = &g->nodes[ci];
        if (m->num_inputs != 2 || m->num_outputs != 1) continue;
        uint32_t op = m->op;
        if (op != KS_OP_MUL && op != KS_OP_ADD && op != KS_OP_SUB && op != KS_OP_DIV) continue;
        int y_first = m->inputs[0] == y;
        int32_t c = y_first ? m->inputs[1] : m->inputs[0];
        if (c == y || !per_channel(g, c, y, ch)) continue;
        if ((op == KS_OP_SUB || op == KS_OP_DIV) && !y_first) continue;
        const ks__tensor *tc = &g->tensors[c];
        int64_t cn = ks__numel(tc->rank, tc->dims);
        const float *cvv = tc->data;
        if (op == KS_OP_DIV) {
            int zero = 0;
            for (int64_t i = 0; i < cn; i++)
                if (cvv[i] == 0.0f) zero = 1;
            if (zero) continue;
        }
        /* Output dtype/shape must not change (no broadcasting growth). */
        const ks__tensor *ty = &g->tensors[y], *tm = &g->tensors[m->outputs[0]];
        if (tm->rank != ty->rank || !is_float_plain(g, m->outputs[0])) continue;
        float *nw = ks__alloc(&g->alloc, (size_t)wn * sizeof(float));
        float *nb = ks__alloc(&g->alloc, (size_t)ch * sizeof(float));
        if (!nw || !nb) {
            ks__free(&g->alloc, nw);
            ks__free(&g->alloc, nb);
            return oom(p);
        }
        memcpy(nw, tw->data, (size_t)wn * sizeof(float));
        for (int64_t o = 0; o < ch; o++)
            nb[o] = b >= 0 ? ((const float *)g->tensors[b].data)[o] : 0.0f;
        int64_t per = wn / ch;
        for (int64_t o = 0; o < ch; o++) {
            float s = cvv[cn == 1 ? 0 : o];
            if (op == KS_OP_MUL || op == KS_OP_DIV) {
                for (int64_t i = 0; i < per; i++)
                    nw[o * per + i] = op == KS_OP_MUL ? nw[o * per + i] * s : nw[o * per + i] / s;
                nb[o] = op == KS_OP_MUL ? nb[o] * s : nb[o] / s;
            } else {
                nb[o] = op == KS_OP_ADD ? nb[o] + s : nb[o] - s;
            }
        }
        int64_t wd[KS_MAX_RANK];
        int32_t wr = tw->rank;
        for (int32_t i = 0; i < wr; i++)
            wd[i] = tw->dims[i];
        int32_t w2 = w, b2;
        ks_status st = KS_STATUS_OK;
        if (op == KS_OP_MUL || op == KS_OP_DIV)
            st = new_f32_const(p, w, "/fold", wr, wd, nw, wn, &w2);
        int64_t bd[1] = {ch};
        if (!st)
            st = new_f32_const(p, b >= 0 ? b : w, b >= 0 ? "/fold" : "/bias", 1, bd, nb, ch, &b2);
        ks__free(&g->alloc, nw);
        ks__free(&g->alloc, nb);
        if (st) return st;
        cv = &g->nodes[n];
        m = &g->nodes[ci];
        int32_t *new_in = cv->inputs;
        if (cv->num_inputs < 3) {
            new_in = ks__alloc(&g->alloc, 3 * sizeof(int32_t));
            if (!new_in) return oom(p);
            new_in[0] = cv->inputs[0];
            ks__free(&g->alloc, cv->inputs);
            cv->inputs = new_in;
            cv->num_inputs = 3;
        }
        cv->inputs[1] = w2;
        cv->inputs[2] = b2;
        cv->outputs[0] = m->outputs[0];
        /* an activation already fused into the MUL/ADD moves to the producer */
        *act_slot(cv) = m->ip[0];
        if (m->ip[0] == KS_ACT_LEAKY_RELU) cv->fp[0] = m->fp[0];
        p->producer[m->outputs[0]] = (int32_t)n;
        m->op = 0;
        p->uses[y] = 0;
        (*changes)++;
    }
    return KS_STATUS_OK;
}

/* PAD(constant 0, only H/W) -> CONV2D / average POOL2D that counts padding: explicit pads. */
/* The n values of a constant I32 / I64 tensor of shape [rows, cols] (rows * cols == n): the
 * paddings of PAD, SPACE_TO_BATCH_ND and the crops of BATCH_TO_SPACE_ND. */
static int const_grid(const ks__graph *g, int32_t id, int64_t rows, int64_t cols, int64_t *v) {
    if (!is_const_t(g, id)) return 0;
    const ks__tensor *t = &g->tensors[id];
    size_t n = (size_t)(rows * cols);
    if (t->rank != 2 || t->dims[0] != rows || t->dims[1] != cols || !t->data) return 0;
    for (size_t i = 0; i < n; i++) {
        if (t->dtype == KS_DTYPE_I32 && t->size_bytes >= n * 4)
            v[i] = ((const int32_t *)t->data)[i];
        else if (t->dtype == KS_DTYPE_I64 && t->size_bytes >= n * 8)
            v[i] = ((const int64_t *)t->data)[i];
        else
            return 0;
    }
    return 1;
}

static uint32_t fold_pads(pass_ctx *p) {
    ks__graph *g = p->g;
    uint32_t changes = 0;
    for (uint32_t n = 0; n < g->num_nodes; n++) {
        ks__node *pd = &g->nodes[n];
        if (pd->op != KS_OP_PAD || pd->ip[0] != 0 || pd->num_outputs != 1) continue;
        int32_t x = pd->inputs[0], pads = pd->inputs[1], y = pd->outputs[0];
        float value = pd->fp[0];
        if (pd->num_inputs > 2 && pd->inputs[2] >= 0) {
            int32_t v = pd->inputs[2];
            if (!is_const_t(g, v) || g->tensors[v].dtype != KS_DTYPE_F32 ||
                g->tensors[v].size_bytes != sizeof(float))
                continue;
            value = *(const float *)g->tensors[v].data;
        }
        int64_t pv[8];
        if (value != 0.0f || !const_grid(g, pads, 4, 2, pv) || !single_internal_use(p, y)) continue;
        if (pv[0] || pv[1] || pv[6] || pv[7]) continue;
        int bad = 0;
        for (int i = 2; i < 6; i++)
            if (pv[i] < 0 || pv[i] > 65536) bad = 1;
        if (bad) continue;
        int32_t ci = sole_consumer(p, y);
        if (ci < 0) continue;
        ks__node *cn = &g->nodes[ci];
        int32_t base;
        /* VALID is EXPLICIT with zero pads (TFLite models pad explicitly before VALID
         * stride-2 convs) */
        if (cn->op == KS_OP_CONV2D && cn->inputs[0] == y && cn->ip[8] == KS_PAD_VALID) {
            cn->ip[8] = KS_PAD_EXPLICIT;
            cn->ip[4] = cn->ip[5] = cn->ip[6] = cn->ip[7] = 0;
        }
        if (cn->op == KS_OP_CONV2D && cn->inputs[0] == y && cn->ip[8] == KS_PAD_EXPLICIT)
            base = 4;
        else if (cn->op == KS_OP_POOL2D && cn->ip[9] == 1 && cn->ip[10] == 1 &&
                 cn->ip[8] == KS_PAD_EXPLICIT && cn->ip[0] > 0)
            base = 4;
        else
            continue;
        /* pads rows: [N, H, W, C] x (before, after); conv ip: top, left, bottom, right */
        cn->ip[base + 0] += (int32_t)pv[2];
        cn->ip[base + 1] += (int32_t)pv[4];
        cn->ip[base + 2] += (int32_t)pv[3];
        cn->ip[base + 3] += (int32_t)pv[5];
        cn->inputs[0] = x;
        pd->op = 0;
        p->uses[y] = 0;
        changes++;
    }
    return changes;
}

/* SPACE_TO_BATCH_ND -> CONV2D -> BATCH_TO_SPACE_ND with one block: how TensorFlow writes a dilated
 * (atrous) convolution in TFLite. With block b, paddings p and crops c, the phases of the padded
 * input each get a VALID stride-1 convolution, and B2S interleaves them back: output pixel
 * (y b + i, x b + j) of the result sums padded[(y + u) b + i][(x + v) b + j] w[u][v], which is the
 * convolution with dilation b of the padded input, cropped. So the three are one CONV2D with
 * dilation b and explicit pads p - c (when no crop exceeds its pad), which the CPU and the GPU run
 * directly, and which the later passes can fuse further (the PAD before it, a BatchNorm after).
 * Float only (quantized tensors would have to keep equal parameters across the three). */
static uint32_t fold_atrous(pass_ctx *p) {
    ks__graph *g = p->g;
    uint32_t changes = 0;
    for (uint32_t n = 0; n < g->num_nodes; n++) {
        ks__node *sb = &g->nodes[n];
        if (sb->op != KS_OP_SPACE_TO_BATCH_ND || sb->num_inputs != 3 || sb->num_outputs != 1)
            continue;
        int32_t x = sb->inputs[0], t1 = sb->outputs[0];
        int64_t bh, bw, pads[4], crops[4], bh2, bw2;
        if (!const_i64(g, sb->inputs[1], 0, &bh) || !const_i64(g, sb->inputs[1], 1, &bw) ||
            g->tensors[sb->inputs[1]].dims[0] != 2 || !const_grid(g, sb->inputs[2], 2, 2, pads))
            continue;
        if (bh < 1 || bw < 1 || bh > 4096 || bw > 4096 || !is_float_plain(g, x) ||
            !single_internal_use(p, t1))
            continue;
        int32_t ci = sole_consumer(p, t1);
        if (ci < 0) continue;
        ks__node *cn = &g->nodes[ci];
        if (cn->op != KS_OP_CONV2D || cn->inputs[0] != t1 || cn->num_outputs != 1 ||
            (cn->num_inputs > 3 && cn->inputs[3] >= 0) || cn->ip[0] != 1 || cn->ip[1] != 1 ||
            cn->ip[2] > 1 || cn->ip[3] > 1)
            continue;
        int zero_pads = cn->ip[4] == 0 && cn->ip[5] == 0 && cn->ip[6] == 0 && cn->ip[7] == 0;
        if (!(cn->ip[8] == KS_PAD_VALID || (cn->ip[8] == KS_PAD_EXPLICIT && zero_pads))) continue;
        int32_t t2 = cn->outputs[0];
        if (!is_float_plain(g, t2) || !single_internal_use(p, t2)) continue;
        int32_t bi = sole_consumer(p, t2);
        if (bi < 0) continue;
        ks__node *bs = &g->nodes[bi];
        if (bs->op != KS_OP_BATCH_TO_SPACE_ND || bs->inputs[0] != t2 || bs->num_inputs != 3 ||
            bs->num_outputs != 1 || !const_i64(g, bs->inputs[1], 0, &bh2) ||
            !const_i64(g, bs->inputs[1], 1, &bw2) || g->tensors[bs->inputs[1]].dims[0] != 2 ||
            bh2 != bh || bw2 != bw || !const_grid(g, bs->inputs[2], 2, 2, crops) ||
            !is_float_plain(g, bs->outputs[0]))
            continue;
        /* pads and crops rows: [H, W] x (before, after) */
        int64_t top = pads[0] - crops[0], bottom = pads[1] - crops[1];
        int64_t left = pads[2] - crops[2], right = pads[3] - crops[3];
        if (top < 0 || bottom < 0 || left < 0 || right < 0 || top > 65536 || bottom > 65536 ||
            left > 65536 || right > 65536)
            continue;
        cn->inputs[0] = x;
        cn->outputs[0] = bs->outputs[0];
        cn->ip[2] = (int32_t)bh, cn->ip[3] = (int32_t)bw;
        cn->ip[8] = KS_PAD_EXPLICIT;
        cn->ip[4] = (int32_t)top, cn->ip[5] = (int32_t)left;
        cn->ip[6] = (int32_t)bottom, cn->ip[7] = (int32_t)right;
        sb->op = 0;
        bs->op = 0;
        p->uses[t1] = 0;
        p->uses[t2] = 0;
        changes++;
    }
    return changes;
}

/* ---------------------------------------------------------------- order, DCE, compaction */

static void free_tensor_contents(ks__graph *g, ks__tensor *t) {
    ks__free(&g->alloc, t->name);
    if (!(t->flags & KS__TENSOR_BORROWED)) ks__free(&g->alloc, (void *)t->data);
    ks__free(&g->alloc, t->quant.scales);
    ks__free(&g->alloc, t->quant.zero_points);
}

/* Drops dead nodes (op 0 or not reaching an output), sorts the rest topologically (Kahn, stable
 * on the old order) and renumbers tensors densely, dropping unused ones. */
static ks_status compact(pass_ctx *p) {
    ks__graph *g = p->g;
    ks_status st = analyze(p);
    if (st) return st;
    uint32_t nn = g->num_nodes, nt = g->num_tensors;
    uint8_t *live_t = ks__calloc(&g->alloc, nt ? nt : 1, 1);
    uint8_t *live_n = ks__calloc(&g->alloc, nn ? nn : 1, 1);
    uint32_t *order = ks__alloc(&g->alloc, (size_t)(nn ? nn : 1) * sizeof(uint32_t));
    uint32_t *pending = ks__calloc(&g->alloc, nn ? nn : 1, sizeof(uint32_t));
    uint32_t *cons_start = ks__calloc(&g->alloc, (size_t)nt + 1, sizeof(uint32_t));
    uint32_t *cons = NULL, *fill = NULL;
    int32_t *remap = ks__alloc(&g->alloc, (size_t)(nt ? nt : 1) * sizeof(int32_t));
    ks__node *nodes = NULL;
    ks__tensor *tensors = NULL;
    if (!live_t || !live_n || !order || !pending || !cons_start || !remap) {
        st = oom(p);
        goto done;
    }
    /* Liveness: a producer-driven worklist from the graph outputs. */
    uint32_t *stack = order; /* reused as a worklist of tensors (<= nn entries pushed per node) */
    uint32_t sp = 0;
    for (uint32_t i = 0; i < g->num_outputs; i++)
        live_t[g->outputs[i]] = 1;
    for (uint32_t i = 0; i < g->num_outputs; i++) {
        int32_t pr = p->producer[g->outputs[i]];
        if (pr >= 0 && !live_n[pr]) {
            live_n[pr] = 1;
            stack[sp++] = (uint32_t)pr;
        }
    }
    while (sp) {
        const ks__node *nd = &g->nodes[stack[--sp]];
        for (uint32_t k = 0; k < nd->num_inputs; k++) {
            int32_t t = nd->inputs[k];
            if (t < 0) continue;
            live_t[t] = 1;
            int32_t pr = p->producer[t];
            if (pr >= 0 && !live_n[pr]) {
                live_n[pr] = 1;
                stack[sp++] = (uint32_t)pr;
            }
        }
    }
    for (uint32_t i = 0; i < g->num_inputs; i++)
        live_t[g->inputs[i]] = 1;
    /* Kahn: consumers lists over live nodes. */
    uint32_t total = 0;
    for (uint32_t n = 0; n < nn; n++) {
        if (!live_n[n]) continue;
        const ks__node *nd = &g->nodes[n];
        for (uint32_t k = 0; k < nd->num_outputs; k++)
            live_t[nd->outputs[k]] = 1;
        for (uint32_t k = 0; k < nd->num_inputs; k++) {
            int32_t t = nd->inputs[k];
            if (t >= 0 && p->producer[t] >= 0) {
                cons_start[t + 1]++;
                pending[n]++;
                total++;
            }
        }
    }
    for (uint32_t t = 0; t < nt; t++)
        cons_start[t + 1] += cons_start[t];
    cons = ks__alloc(&g->alloc, (size_t)(total ? total : 1) * sizeof(uint32_t));
    fill = ks__calloc(&g->alloc, nt ? nt : 1, sizeof(uint32_t));
    if (!cons || !fill) {
        st = oom(p);
        goto done;
    }
    for (uint32_t n = 0; n < nn; n++) {
        if (!live_n[n]) continue;
        const ks__node *nd = &g->nodes[n];
        for (uint32_t k = 0; k < nd->num_inputs; k++) {
            int32_t t = nd->inputs[k];
            if (t >= 0 && p->producer[t] >= 0) cons[cons_start[t] + fill[t]++] = n;
        }
    }
    uint32_t head = 0, tail = 0;
    for (uint32_t n = 0; n < nn; n++)
        if (live_n[n] && pending[n] == 0) order[tail++] = n;
    while (head < tail) {
        const ks__node *nd = &g->nodes[order[head++]];
        for (uint32_t k = 0; k < nd->num_outputs; k++) {
            int32_t t = nd->outputs[k];
            for (uint32_t c = cons_start[t]; c < cons_start[t + 1]; c++)
                if (--pending[cons[c]] == 0) order[tail++] = cons[c];
        }
    }
    uint32_t num_live = 0;
    for (uint32_t n = 0; n < nn; n++)
        num_live += live_n[n];
    if (tail != num_live) {
        ks__fmt(p->err, p->err_cap,
                "graph optimize: the graph has a cycle (%u of %u nodes ordered)", tail, num_live);
        st = KS_STATUS_INVALID_MODEL;
        goto done;
    }
    /* Tensor renumbering. */
    uint32_t new_nt = 0;
    for (uint32_t t = 0; t < nt; t++)
        remap[t] = live_t[t] ? (int32_t)new_nt++ : -1;
    nodes = ks__calloc(&g->alloc, tail ? tail : 1, sizeof(ks__node));
    tensors = ks__calloc(&g->alloc, new_nt ? new_nt : 1, sizeof(ks__tensor));
    if (!nodes || !tensors) {
        st = oom(p);
        goto done;
    }
    for (uint32_t i = 0; i < tail; i++) {
        nodes[i] = g->nodes[order[i]];
        g->nodes[order[i]].name = NULL;
        g->nodes[order[i]].inputs = NULL;
        g->nodes[order[i]].outputs = NULL;
        for (uint32_t k = 0; k < nodes[i].num_inputs; k++)
            if (nodes[i].inputs[k] >= 0) nodes[i].inputs[k] = remap[nodes[i].inputs[k]];
        for (uint32_t k = 0; k < nodes[i].num_outputs; k++)
            nodes[i].outputs[k] = remap[nodes[i].outputs[k]];
    }
    for (uint32_t n = 0; n < nn; n++) {
        ks__free(&g->alloc, g->nodes[n].name);
        ks__free(&g->alloc, g->nodes[n].inputs);
        ks__free(&g->alloc, g->nodes[n].outputs);
    }
    for (uint32_t t = 0; t < nt; t++) {
        if (remap[t] >= 0)
            tensors[remap[t]] = g->tensors[t];
        else
            free_tensor_contents(g, &g->tensors[t]);
    }
    for (uint32_t i = 0; i < g->num_inputs; i++)
        g->inputs[i] = remap[g->inputs[i]];
    for (uint32_t i = 0; i < g->num_outputs; i++)
        g->outputs[i] = remap[g->outputs[i]];
    ks__free(&g->alloc, g->nodes);
    ks__free(&g->alloc, g->tensors);
    g->nodes = nodes;
    g->num_nodes = g->cap_nodes = tail;
    g->tensors = tensors;
    g->num_tensors = g->cap_tensors = new_nt;
    nodes = NULL;
    tensors = NULL;
    st = analyze(p);
done:
    ks__free(&g->alloc, live_t);
    ks__free(&g->alloc, live_n);
    ks__free(&g->alloc, order);
    ks__free(&g->alloc, pending);
    ks__free(&g->alloc, cons_start);
    ks__free(&g->alloc, cons);
    ks__free(&g->alloc, fill);
    ks__free(&g->alloc, remap);
    ks__free(&g->alloc, nodes);
    ks__free(&g->alloc, tensors);
    return st;
}

ks_status ks__graph_optimize(ks__graph *g, char *err, size_t err_cap) {
    pass_ctx p;
    memset(&p, 0, sizeof(p));
    p.g = g;
    p.err = err;
    p.err_cap = err_cap;
    char verr[256];
    ks_status st = ks__graph_validate(g, verr, sizeof(verr));
    if (st) {
        ks__fmt(err, err_cap, "graph optimize: input graph is invalid: %s", verr);
        return st;
    }
    st = compact(&p);
    for (int sweep = 0; !st && sweep < MAX_SWEEPS; sweep++) {
        uint32_t changes = 0, c;
        st = fold_and_infer(&p, &c);
        changes += c;
        if (!st) st = compact(&p);
        if (st) break;
        changes += simplify_transposes(&p);
        st = sink_transposes(&p, &c);
        changes += c;
        if (!st) st = compact(&p);
        if (st) break;
        st = nhwc_twins(&p, &c);
        changes += c;
        if (!st) st = compact(&p);
        if (!st) st = shape_of_transpose(&p, &c);
        changes += c;
        if (!st) st = compact(&p);
        if (st) break;
        changes += remove_noop_reshapes(&p);
        changes += fold_atrous(&p);
        changes += fold_pads(&p);
        st = fold_affine(&p, &c);
        changes += c;
        if (st) break;
        st = conv_before_resize(&p, &c);
        changes += c;
        if (!st && c) st = compact(&p);
        if (st) break;
        st = fuse_residual_add(&p, &c);
        changes += c;
        if (st) break;
        st = fuse_focus(&p, &c);
        changes += c;
        if (st) break;
        st = fuse_prelu(&p, &c);
        changes += c;
        if (st) break;
        changes += fuse_silu(&p);
        changes += fuse_activations(&p);
        st = compact(&p);
        if (!changes) break;
    }
    if (!st) {
        uint32_t c;
        st = fold_and_infer(&p, &c);
        if (!st) st = compact(&p);
    }
    if (!st) {
        st = ks__graph_validate(g, verr, sizeof(verr));
        if (st) {
            ks__fmt(err, err_cap, "graph optimize: produced an invalid graph (a Kestrel bug): %s",
                    verr);
            st = KS_STATUS_INTERNAL;
        }
    }
    ks__free(&g->alloc, p.producer);
    ks__free(&g->alloc, p.uses);
    ks__free(&g->alloc, p.is_io);
    return st;
}
