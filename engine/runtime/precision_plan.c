/* KS_PRECISION_FASTEST's timing (runtime.h): the model is timed as stored and with every
 * demotable layer in fp32, and precision.h's cut picks the layers. */
#include "runtime.h"

#include <stdlib.h>
#include <string.h>

#include "src/common.h"
#include "src/model.h"
#include "src/precision.h"

/* ---- timing ---- */

#define PREC_RUNS 5

typedef struct prof_acc {
    uint32_t num_nodes, run;
    double *ns; /* [PREC_RUNS][num_nodes] */
} prof_acc;

static void on_profile(void *user, const ks_op_profile *p) {
    prof_acc *a = user;
    if (a->run < PREC_RUNS && p->node_index < a->num_nodes)
        a->ns[(size_t)a->run * a->num_nodes + p->node_index] = (double)p->elapsed_ns;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Runs g PREC_RUNS times (after one warm-up) and writes each node's median ns into med[]. Fills
 * elems[t] with every tensor's element count when elems is not NULL. */
static ks_status time_graph(const ks_model *model, const ks__graph *g, const ks_session_desc *desc,
                            double *med, int64_t *elems) {
    ks_session *s = NULL;
    ks_session_desc d = *desc;
    d.precision = KS_PRECISION_DEFAULT;
    d.flags &= ~KS_SESSION_KEEP_ALL_TENSORS;
    d.backend = KS_BACKEND_CPU; /* a choice between CPU kernels */
    ks_status st = ks__session_create_on(model, g, &d, &s);
    if (st) return st;
    prof_acc acc = {g->num_nodes, 0, NULL};
    acc.ns = ks__calloc(&model->alloc, (size_t)PREC_RUNS * (g->num_nodes ? g->num_nodes : 1),
                        sizeof(double));
    double *col = ks__alloc(&model->alloc, PREC_RUNS * sizeof(double));
    if (!acc.ns || !col) {
        st = KS_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    if ((st = ks_session_reshape(s, NULL))) goto done;
    for (uint32_t i = 0; i < g->num_inputs; i++) {
        ks_tensor x;
        if ((st = ks_session_input(s, i, &x))) goto done;
        if (x.info.dtype == KS_DTYPE_F32) {
            /* a fixed ramp in [0, 1): kernels whose speed depends on values see ordinary ones */
            float *f = x.data;
            for (size_t k = 0; k < x.size_bytes / sizeof(float); k++)
                f[k] = (float)((k * 37u) % 251u) / 251.0f;
        } else {
            memset(x.data, 0, x.size_bytes);
        }
    }
    if ((st = ks_session_run(s))) goto done;
    ks_session_set_profiler(s, on_profile, &acc);
    for (acc.run = 0; acc.run < PREC_RUNS; acc.run++)
        if ((st = ks_session_run(s))) goto done;
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        for (uint32_t r = 0; r < PREC_RUNS; r++)
            col[r] = acc.ns[(size_t)r * g->num_nodes + i];
        qsort(col, PREC_RUNS, sizeof(double), cmp_double);
        med[i] = col[PREC_RUNS / 2];
    }
    for (uint32_t t = 0; elems && t < g->num_tensors; t++) {
        ks_tensor x;
        elems[t] = 0;
        if (ks_session_tensor(s, t, &x) == KS_STATUS_OK) {
            int64_t e = ks__numel(x.info.shape.rank, x.info.shape.dims);
            elems[t] = e > 0 ? e : 0;
        }
    }
done:
    if (st) ks__log(KS_LOG_INFO, "precision: timing run failed (%s)", ks_status_string(st));
    ks__free(&model->alloc, acc.ns);
    ks__free(&model->alloc, col);
    ks_session_destroy(s);
    return st;
}

/* Per-element ns of the QUANTIZE (q = 1) or DEQUANTIZE (q = 0) nodes of a timed graph. */
static void conversion_rate(const ks__graph *g, const double *med, const int64_t *elems_of_node,
                            uint32_t op, double *ns, double *count) {
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        if (g->nodes[i].op != op || elems_of_node[i] <= 0) continue;
        *ns += med[i];
        *count += (double)elems_of_node[i];
    }
}

ks_status ks__prec_plan(const ks_model *model, const ks_session_desc *desc, uint8_t *fp32) {
    const ks__graph *g = &model->graph;
    const ks_allocator *al = &model->alloc;
    uint32_t nn = g->num_nodes, nt = g->num_tensors;
    memset(fp32, 0, nn);
    if (!ks__prec_count_demotable(g)) return KS_STATUS_OK;
    for (uint32_t i = 0; i < g->num_inputs; i++) {
        const ks__tensor *t = &g->tensors[g->inputs[i]];
        for (int32_t k = 0; k < t->rank; k++)
            if (t->dims[k] < 0) {
                ks__log(KS_LOG_INFO,
                        "precision fastest: input '%s' has dynamic dims; the "
                        "model runs as stored",
                        t->name);
                return KS_STATUS_OK;
            }
    }
    uint8_t *all = ks__alloc(al, nn ? nn : 1);
    double *t8 = ks__calloc(al, nn ? nn : 1, sizeof(double));
    int64_t *elems = ks__calloc(al, nt ? nt : 1, sizeof(int64_t));
    int64_t *node_elems = ks__calloc(al, nn ? nn : 1, sizeof(int64_t));
    ks__graph g32;
    ks__graph_init(&g32, al);
    int32_t *src = NULL;
    double *t32 = NULL, *t32_of = NULL, *c0 = NULL, *c1 = NULL, *ab = NULL, *ba = NULL;
    int64_t *e32 = NULL, *node_elems32 = NULL;
    uint32_t *ea = NULL, *eb = NULL;
    uint8_t *labels = NULL;
    int32_t *producer = NULL;
    ks_status st = KS_STATUS_OUT_OF_MEMORY;
    char err[256] = "";
    if (!all || !t8 || !elems || !node_elems) goto done;
    memset(all, 1, nn);
    if ((st = ks__prec_build(g, all, &g32, &src, err, sizeof(err)))) {
        ks__log(KS_LOG_INFO, "precision fastest: %s; the model runs as stored", err);
        st = KS_STATUS_OK;
        goto done;
    }
    t32 = ks__calloc(al, g32.num_nodes ? g32.num_nodes : 1, sizeof(double));
    t32_of = ks__calloc(al, nn ? nn : 1, sizeof(double));
    e32 = ks__calloc(al, g32.num_tensors ? g32.num_tensors : 1, sizeof(int64_t));
    node_elems32 = ks__calloc(al, g32.num_nodes ? g32.num_nodes : 1, sizeof(int64_t));
    c0 = ks__calloc(al, nn ? nn : 1, sizeof(double));
    c1 = ks__calloc(al, nn ? nn : 1, sizeof(double));
    labels = ks__calloc(al, nn ? nn : 1, 1);
    producer = ks__alloc(al, (size_t)(nt ? nt : 1) * sizeof(int32_t));
    st = KS_STATUS_OUT_OF_MEMORY;
    if (!t32 || !t32_of || !e32 || !node_elems32 || !c0 || !c1 || !labels || !producer) goto done;
    if (time_graph(model, g, desc, t8, elems) || time_graph(model, &g32, desc, t32, e32)) {
        ks__log(KS_LOG_INFO, "precision fastest: timing failed; the model runs as stored");
        st = KS_STATUS_OK;
        goto done;
    }
    for (uint32_t j = 0; j < g32.num_nodes; j++) {
        if (src[j] >= 0) t32_of[src[j]] += t32[j];
        node_elems32[j] = g32.nodes[j].num_outputs ? e32[g32.nodes[j].outputs[0]] : 0;
    }
    for (uint32_t i = 0; i < nn; i++)
        node_elems[i] = g->nodes[i].num_outputs ? elems[g->nodes[i].outputs[0]] : 0;
    double qns = 0, qn = 0, dns = 0, dn = 0;
    conversion_rate(g, t8, node_elems, KS_OP_QUANTIZE, &qns, &qn);
    conversion_rate(&g32, t32, node_elems32, KS_OP_QUANTIZE, &qns, &qn);
    conversion_rate(g, t8, node_elems, KS_OP_DEQUANTIZE, &dns, &dn);
    conversion_rate(&g32, t32, node_elems32, KS_OP_DEQUANTIZE, &dns, &dn);
    /* without a sample, 0.25 ns per element (a memory-bound pass on a phone core) */
    double qrate = qn > 0 ? qns / qn : 0.25, drate = dn > 0 ? dns / dn : 0.25;

    /* Variables: demotable nodes and file borders (label = precision of their quantized side);
     * every other node has a fixed label. */
    for (uint32_t t = 0; t < nt; t++)
        producer[t] = -1;
    for (uint32_t i = 0; i < nn; i++) {
        const ks__node *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->num_outputs; k++)
            if (n->outputs[k] >= 0) producer[n->outputs[k]] = (int32_t)i;
        bool q_border = n->op == KS_OP_QUANTIZE && n->num_inputs == 1 && n->inputs[0] >= 0 &&
                        g->tensors[n->inputs[0]].dtype == KS_DTYPE_F32 &&
                        ks__prec_is_qact(&g->tensors[n->outputs[0]]);
        bool d_border = n->op == KS_OP_DEQUANTIZE && n->num_inputs == 1 && n->inputs[0] >= 0 &&
                        ks__prec_is_qact(&g->tensors[n->inputs[0]]);
        if (ks__prec_demotable(g, i)) {
            c0[i] = t8[i];
            c1[i] = t32_of[i];
        } else if (q_border || d_border) {
            c0[i] = t8[i];
            c1[i] = 0.0; /* a view */
        } else {
            bool quantized = false;
            for (uint32_t k = 0; k < n->num_outputs; k++)
                quantized |= n->outputs[k] >= 0 && ks__prec_is_qact(&g->tensors[n->outputs[k]]);
            for (uint32_t k = 0; k < n->num_inputs; k++)
                quantized |= n->inputs[k] >= 0 && ks__prec_is_qact(&g->tensors[n->inputs[k]]);
            /* fixed: its time either way (a constant of the cut, kept for the summary) */
            c0[i] = quantized ? t8[i] : KS__PREC_INF;
            c1[i] = quantized ? KS__PREC_INF : t8[i];
        }
    }
    for (uint32_t o = 0; o < g->num_outputs; o++) {
        int32_t t = g->outputs[o];
        if (t >= 0 && producer[t] >= 0 && ks__prec_is_qact(&g->tensors[t]))
            c1[producer[t]] = KS__PREC_INF;
    }
    /* Edges: every quantized activation from its producer to each reader. */
    uint32_t m = 0, cap = 0;
    for (uint32_t i = 0; i < nn; i++)
        cap += g->nodes[i].num_inputs;
    ea = ks__alloc(al, (size_t)(cap ? cap : 1) * sizeof(uint32_t));
    eb = ks__alloc(al, (size_t)(cap ? cap : 1) * sizeof(uint32_t));
    ab = ks__alloc(al, (size_t)(cap ? cap : 1) * sizeof(double));
    ba = ks__alloc(al, (size_t)(cap ? cap : 1) * sizeof(double));
    st = KS_STATUS_OUT_OF_MEMORY;
    if (!ea || !eb || !ab || !ba) goto done;
    for (uint32_t i = 0; i < nn; i++) {
        const ks__node *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->num_inputs; k++) {
            int32_t t = n->inputs[k];
            if (t < 0 || !ks__prec_is_qact(&g->tensors[t]) || producer[t] < 0) continue;
            uint32_t p = (uint32_t)producer[t];
            double e = (double)elems[t];
            ea[m] = p;
            eb[m] = i;
            /* producer int8, reader fp32: a DEQUANTIZE, unless the producer is a file QUANTIZE
             * (the reader then takes its F32 input) */
            ab[m] = g->nodes[p].op == KS_OP_QUANTIZE ? 0.0 : e * drate;
            ba[m] = e * qrate; /* producer fp32, reader int8: a QUANTIZE */
            m++;
        }
    }
    if (ks__prec_mincut(nn, c0, c1, m, ea, eb, ab, ba, labels, al) < 0) goto done;
    uint32_t demoted = 0;
    double sum8 = 0, sum_plan = 0;
    for (uint32_t i = 0; i < nn; i++) {
        fp32[i] = labels[i] && ks__prec_demotable(g, i);
        demoted += fp32[i];
        sum8 += t8[i];
        sum_plan +=
            labels[i] ? (c1[i] < KS__PREC_INF ? c1[i] : 0) : (c0[i] < KS__PREC_INF ? c0[i] : 0);
    }
    ks__log(KS_LOG_INFO,
            "precision fastest: %u of %u int8 layers run in fp32 (modelled %.3f ms, as stored "
            "%.3f ms)",
            demoted, ks__prec_count_demotable(g), sum_plan * 1e-6, sum8 * 1e-6);
    st = KS_STATUS_OK;
done:
    ks__graph_free(&g32);
    ks__free(al, src);
    ks__free(al, all);
    ks__free(al, t8);
    ks__free(al, t32);
    ks__free(al, t32_of);
    ks__free(al, elems);
    ks__free(al, e32);
    ks__free(al, node_elems);
    ks__free(al, node_elems32);
    ks__free(al, c0);
    ks__free(al, c1);
    ks__free(al, labels);
    ks__free(al, producer);
    ks__free(al, ea);
    ks__free(al, eb);
    ks__free(al, ab);
    ks__free(al, ba);
    return st;
}
