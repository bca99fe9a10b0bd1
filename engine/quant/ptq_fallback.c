/* Which layers stay in or go back to fp32 in the quantization pipeline (ptq_internal.h): the
 * caller's skip list, the layers that compute the model outputs, the speed check (int8 only where
 * measured faster) and the output check (layers go back until every checked output reaches
 * options.min_output_cosine, ranked by their measured effect or by their own error). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptq_internal.h"

/* ONNX nodes are often unnamed: then the name of the first output tensor (what skip accepts). */
const char *ks__quant_layer_name(const ks__graph *g, const ks__node *n) {
    if (n->name && n->name[0]) return n->name;
    if (n->num_outputs && n->outputs[0] >= 0 && g->tensors[n->outputs[0]].name)
        return g->tensors[n->outputs[0]].name;
    return "";
}

ks_status ks__quant_apply_skip(const ks__quant_ctx *c, const ks__graph *g, ks__quant_plan *p) {
    const ks__quant_options *o = c->o;
    for (uint32_t i = 0; i < g->num_nodes && o->weights_only; i++) {
        p->force_f32[i] = 1;
        p->force_why[i] = KS__QUANT_WHY_WEIGHTS_ONLY;
    }
    for (uint32_t k = 0; k < o->num_skip; k++) {
        int found = 0;
        for (uint32_t i = 0; i < g->num_nodes; i++) {
            const ks__node *n = &g->nodes[i];
            int match = n->name && strcmp(n->name, o->skip[k]) == 0;
            for (uint32_t j = 0; j < n->num_outputs && !match; j++)
                match = strcmp(g->tensors[n->outputs[j]].name, o->skip[k]) == 0;
            if (match) {
                p->force_f32[i] = 1;
                p->force_why[i] = KS__QUANT_WHY_SKIPPED;
                found = 1;
            }
        }
        if (!found)
            return ks__fail(c->err, c->err_cap, KS_STATUS_INVALID_ARGUMENT,
                            "--skip: no layer named '%s' (node or output tensor name; see "
                            "ks-inspect)",
                            o->skip[k]);
    }
    return KS_STATUS_OK;
}

/* ---- output layers ------------------------------------------------------------------------ */

/* Ops through which a model output is still the value of the layer before (layout changes and
 * monotonic per-value maps): the layer that computes that value is an "output layer". */
static bool passes_value(uint32_t op) {
    switch (op) {
    case KS_OP_RESHAPE:
    case KS_OP_TRANSPOSE:
    case KS_OP_CONCAT:
    case KS_OP_SQUEEZE:
    case KS_OP_UNSQUEEZE:
    case KS_OP_SLICE:
    case KS_OP_SPLIT:
    case KS_OP_PAD:
    case KS_OP_RESIZE:
    case KS_OP_DEPTH_TO_SPACE:
    case KS_OP_SPACE_TO_DEPTH:
    case KS_OP_SIGMOID:
    case KS_OP_TANH:
    case KS_OP_SOFTMAX:
    case KS_OP_CAST:
        return true;
    default:
        return false;
    }
}

/* Weight values of a conv/FC node (0 for other ops). */
static int64_t weight_count(const ks__graph *g, const ks__node *n) {
    if ((n->op != KS_OP_CONV2D && n->op != KS_OP_FULLY_CONNECTED) || n->num_inputs < 2 ||
        n->inputs[1] < 0)
        return 0;
    const ks__tensor *w = &g->tensors[n->inputs[1]];
    return (w->flags & KS__TENSOR_CONST) ? ks__numel(w->rank, w->dims) : 0;
}

/* An output layer holding more than this share of the model's weights stays int8 (size): */
#define OUTPUT_LAYER_MAX_WEIGHT_SHARE 0.15

/* Output layers stay fp32: a per-tensor int8 output has one step for all of its values, and
 * detection heads put their rare, decisive values at the edge of a wide range (BlazeFace's score
 * logits span [-470, 2.5]: one step of 1.85 logits, every face scored sigmoid(1.85)); small head
 * convs in fp32 cost little. A head with a large share of the weights (FaceMesh's landmark conv:
 * fp32 would make the model 2.8x larger, for 0.84 -> 0.80 % landmark error) stays int8. */
ks_status ks__quant_keep_output_layers(const ks__graph *g, ks__quant_plan *p, int *count_out) {
    bool *marked = calloc(g->num_tensors + 1, sizeof(bool));
    int count = 0;
    int64_t total = 0;
    if (!marked) return KS_STATUS_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < g->num_nodes; i++)
        total += weight_count(g, &g->nodes[i]);
    for (uint32_t k = 0; k < g->num_outputs; k++)
        if (g->outputs[k] >= 0) marked[g->outputs[k]] = true;
    for (uint32_t r = g->num_nodes; r-- > 0;) {
        const ks__node *n = &g->nodes[r];
        bool out = false;
        for (uint32_t k = 0; k < n->num_outputs; k++)
            out |= n->outputs[k] >= 0 && marked[n->outputs[k]];
        if (!out) continue;
        if (passes_value(n->op)) {
            uint32_t num = n->op == KS_OP_CONCAT ? n->num_inputs : 1;
            for (uint32_t k = 0; k < num && k < n->num_inputs; k++)
                if (n->inputs[k] >= 0 && !(g->tensors[n->inputs[k]].flags & KS__TENSOR_CONST))
                    marked[n->inputs[k]] = true;
        }
        /* A SIGMOID table would requantize the head's logits to int8 again: fp32 as well. */
        if (ks__quant_is_compute_op(n->op) && !p->force_f32[r] &&
            (double)weight_count(g, n) <= OUTPUT_LAYER_MAX_WEIGHT_SHARE * (double)total) {
            p->force_f32[r] = 1;
            p->force_why[r] = KS__QUANT_WHY_OUTPUT_LAYER;
            count++;
        }
    }
    free(marked);
    *count_out = count;
    return KS_STATUS_OK;
}

/* ---- the speed check ---------------------------------------------------------------------- */

static uint32_t find_root(uint32_t *parent, uint32_t i) {
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

/* int8 only where faster: a layer whose int8 kernel alone is slower than its fp32 kernel goes
 * back, and so does every connected int8 region (layers joined by int8 tensors) whose total time,
 * QUANTIZE/DEQUANTIZE at its borders included, exceeds the fp32 time of the same layers. Margins
 * (10 % + 2 us per layer, 5 % per region) keep timer noise from flipping layers. Returns the
 * number of layers marked (0 when out of memory: nothing to go on). */
static int mark_slower(const ks__graph *g, ks__quant_plan *p, const ks__quant_eval *e) {
    uint32_t nn = g->num_nodes;
    int marked = 0;
    uint32_t *parent = malloc((nn + 1) * sizeof(uint32_t));
    int32_t *producer = malloc((g->num_tensors + 1) * sizeof(int32_t));
    uint64_t *sum_q = calloc(nn + 1, sizeof(uint64_t)), *sum_f = calloc(nn + 1, sizeof(uint64_t));
    if (!parent || !producer || !sum_q || !sum_f) goto done;
    for (uint32_t t = 0; t < g->num_tensors; t++)
        producer[t] = -1;
    for (uint32_t i = 0; i < nn; i++) {
        parent[i] = i;
        for (uint32_t o = 0; o < g->nodes[i].num_outputs; o++)
            producer[g->nodes[i].outputs[o]] = (int32_t)i;
    }
    for (uint32_t i = 0; i < nn; i++) {
        const ks__node *n = &g->nodes[i];
        if (p->mode[i] != KS__QUANT_INT8) continue;
        if (ks__quant_is_compute_op(n->op) &&
            e->t_i8_own[i] > e->t_f32[i] + e->t_f32[i] / 10 + 2000) {
            p->force_f32[i] = 1;
            p->force_why[i] = KS__QUANT_WHY_SLOWER;
            marked++;
        }
        for (uint32_t k = 0; k < n->num_inputs; k++) {
            int32_t t = n->inputs[k], q = t >= 0 ? producer[t] : -1;
            if (q >= 0 && p->mode[q] == KS__QUANT_INT8)
                parent[find_root(parent, i)] = find_root(parent, (uint32_t)q);
        }
    }
    if (marked) goto done; /* regions change once those layers are out; measure again first */
    for (uint32_t i = 0; i < nn; i++) {
        if (p->mode[i] != KS__QUANT_INT8) continue;
        uint32_t r = find_root(parent, i);
        sum_q[r] += e->t_i8[i];
        /* A split residual ADD (or SiLU's SIGMOID and MUL) costs next to nothing fused into its
         * fp32 conv. */
        bool split_add = p->pair && p->pair[i] >= 0 && g->nodes[i].op != KS_OP_CONV2D;
        if (!split_add) sum_f[r] += e->t_f32[i];
    }
    for (uint32_t i = 0; i < nn; i++) {
        if (p->mode[i] != KS__QUANT_INT8 || !ks__quant_is_compute_op(g->nodes[i].op)) continue;
        uint32_t r = find_root(parent, i);
        if (sum_q[r] > sum_f[r] + sum_f[r] / 20) {
            p->force_f32[i] = 1;
            p->force_why[i] = KS__QUANT_WHY_SLOWER;
            marked++;
        }
    }
done:
    free(parent);
    free(producer);
    free(sum_q);
    free(sum_f);
    return marked;
}

/* ---- the output check --------------------------------------------------------------------- */

typedef struct row {
    uint32_t node;
    double score;
} row;

static int cmp_ascending(const void *a, const void *b) {
    double x = ((const row *)a)->score, y = ((const row *)b)->score;
    return x < y ? -1 : (x > y ? 1 : 0);
}

static int cmp_descending(const void *a, const void *b) {
    double x = ((const row *)a)->score, y = ((const row *)b)->score;
    return x > y ? -1 : (x < y ? 1 : 0);
}

/* Extra time a layer costs when it returns to fp32 (0 when fp32 is not slower), in ns. */
static double fallback_cost_ns(const ks__quant_eval *e, uint32_t i) {
    double d = (double)e->t_f32[i] - (double)e->t_i8[i];
    return d > 0.0 ? d : 0.0;
}

/* Returns int8 layers to fp32 by their measured effect on the model outputs until the worst
 * checked output reaches min_output_cosine. A ranking step measures, for every int8 compute
 * layer, the worst output cosine with just that layer back in fp32 (its gain over the current
 * plan); then the best-ranked layers go back one at a time, re-measured after each, until the
 * target is met or a sixteenth of the candidates went back, and the ranking is measured again
 * (interactions: once the worst layer is fp32 the next one's gain changes). With the CHEAP
 * fallback the rank is the gain per microsecond the layer would add in fp32 (+ 20 us), so cheap
 * layers go first; with SMALL, the gain per weight it would store in fp32 (+ 1024), for the
 * file size. Finally every layer returned here is tried in int8 again, latest first, and
 * stays int8 when the target still holds (a greedy order can return layers that later ones made
 * unnecessary). */
static ks_status sensitivity_fallback(const ks__quant_ctx *c, ks__graph *g, ks__quant_plan *p,
                                      const ks__quant_eval *e, ks__quant_sens *sc, double worst,
                                      int *marked_out) {
    const ks__quant_options *o = c->o;
    uint32_t nn = g->num_nodes;
    int marked = 0;
    ks_status st = KS_STATUS_OK;
    double target = o->min_output_cosine;
    row *cand = calloc(nn + 1, sizeof(row));
    uint32_t *added = calloc(nn + 1, sizeof(uint32_t));
    uint32_t num_added = 0;
    if (!cand || !added) {
        st = ks__quant_oom(c, "output check");
        goto done;
    }
    while (worst < target) {
        uint32_t nc = 0;
        for (uint32_t i = 0; i < nn; i++) {
            if (p->mode[i] != KS__QUANT_INT8 || p->force_f32[i] ||
                !ks__quant_is_compute_op(g->nodes[i].op))
                continue;
            cand[nc++].node = i;
        }
        if (nc == 0) break;
        for (uint32_t k = 0; k < nc; k++) {
            uint32_t i = cand[k].node;
            double w = 0.0;
            ks__quant_progress(c, "output sensitivity", (int)k, (int)nc);
            uint8_t why = p->force_why[i];
            p->force_f32[i] = 1;
            p->force_why[i] = KS__QUANT_WHY_OUTPUT; /* KS__QUANT_WHY_INT8 (0) would keep it int8 */
            st = ks__quant_plan_worst_cosine(c, g, p, sc->bc, sc->ref, &w);
            p->force_f32[i] = 0;
            p->force_why[i] = why;
            if (st) goto done;
            double gain = w - worst;
            sc->sens[i] = gain;
            if (o->fallback == KS__QUANT_FALLBACK_CHEAP)
                cand[k].score = gain / (fallback_cost_ns(e, i) / 1000.0 + 20.0);
            else if (o->fallback == KS__QUANT_FALLBACK_SMALL) /* 1024: an ADD costs tables too */
                cand[k].score = gain / ((double)weight_count(g, &g->nodes[i]) + 1024.0);
            else
                cand[k].score = gain;
        }
        ks__quant_progress(c, "output sensitivity", (int)nc, (int)nc);
        qsort(cand, nc, sizeof(row), cmp_descending);
        uint32_t batch = (nc + 15) / 16;
        for (uint32_t k = 0; k < batch && worst < target; k++) {
            if (k > 0 && cand[k].score <= 0.0) break; /* nothing ranked helps: rank again */
            uint32_t i = cand[k].node;
            p->force_f32[i] = 1;
            p->force_why[i] = KS__QUANT_WHY_OUTPUT;
            added[num_added++] = i;
            marked++;
            if ((st = ks__quant_plan_worst_cosine(c, g, p, sc->bc, sc->ref, &worst))) goto done;
            ks__quant_log(c, KS_LOG_INFO,
                          "output check: '%s' back to fp32 (alone +%.2g), worst output cosine "
                          "now %.5f",
                          ks__quant_layer_name(g, &g->nodes[i]), sc->sens[i], worst);
        }
    }
    for (uint32_t a = num_added; a-- > 0 && num_added > 1 && worst >= target;) {
        uint32_t i = added[a];
        double w = 0.0;
        p->force_f32[i] = 0;
        if ((st = ks__quant_plan_worst_cosine(c, g, p, sc->bc, sc->ref, &w))) goto done;
        if (w >= target) {
            marked--;
            ks__quant_log(c, KS_LOG_INFO, "output check: '%s' stays int8 after all (%.5f)",
                          ks__quant_layer_name(g, &g->nodes[i]), w);
        } else {
            p->force_f32[i] = 1;
        }
    }
    ks__quant_plan_decide(p, g);
    if (sc->bc && sc->bc->bias_id) ks__quant_biascorr_apply(sc->bc, g, p->mode);
    *marked_out = marked;
done:
    free(cand);
    free(added);
    return st;
}

/* Speed (layers slower in int8 go back); and, while a graph output is below min_output_cosine,
 * layers go back to fp32 as options.fallback picks them (sensitivity_fallback; OWN_ERROR: the
 * int8 layers with the largest own error, an eighth of them per round). Both run every round: on
 * a noisy machine the speed check can mark a layer in every round until the round limit, and the
 * output check must not be starved by it. */
ks_status ks__quant_mark_fallbacks(const ks__quant_ctx *c, ks__graph *g, ks__quant_plan *p,
                                   const ks__quant_eval *e, const double *iso, ks__quant_sens *s,
                                   int *marked_out) {
    const ks__quant_options *o = c->o;
    int marked = 0;
    *marked_out = 0;
    if (o->speed_check) marked += mark_slower(g, p, e);
    *marked_out = marked;
    if (o->min_output_cosine <= 0.0) return KS_STATUS_OK;
    double worst = 1.0;
    for (uint32_t i = 0; i < g->num_outputs; i++) {
        if (!ks__quant_output_checked(o, g->tensors[g->outputs[i]].name)) continue;
        double cs = ks__quant_eval_cosine(e, (uint32_t)g->outputs[i]);
        if (!isnan(cs) && cs < worst) worst = cs;
    }
    if (worst >= o->min_output_cosine) return KS_STATUS_OK;
    if (o->fallback != KS__QUANT_FALLBACK_OWN_ERROR) {
        /* The speed check's marks are part of the plan the sensitivities are measured on. */
        int m = 0;
        ks_status st = sensitivity_fallback(c, g, p, e, s, worst, &m);
        *marked_out = marked + m;
        return st;
    }
    row *cand = calloc(g->num_nodes + 1, sizeof(row));
    uint32_t nc = 0;
    if (!cand) return KS_STATUS_OK;
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        if (p->mode[i] != KS__QUANT_INT8 || !ks__quant_is_compute_op(g->nodes[i].op) ||
            isnan(iso[i]))
            continue;
        cand[nc].node = i;
        cand[nc].score = iso[i];
        nc++;
    }
    qsort(cand, nc, sizeof(row), cmp_ascending);
    uint32_t k = nc ? (nc + 7) / 8 : 0;
    for (uint32_t r = 0; r < k; r++) {
        if (p->force_f32[cand[r].node]) continue; /* already marked by the speed check */
        p->force_f32[cand[r].node] = 1;
        p->force_why[cand[r].node] = KS__QUANT_WHY_OUTPUT;
        marked++;
    }
    free(cand);
    *marked_out = marked;
    return KS_STATUS_OK;
}
