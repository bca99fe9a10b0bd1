/* Measurements of the quantization pipeline (ptq_internal.h): the int8 graph against fp32 on the
 * evaluation images (per-tensor cosine similarity, per-layer times from the profiler), each int8
 * layer's own error from exact fp32 inputs (shadow graph), fp32 models against each other (the
 * equalization must be exact), the worst output cosine of a candidate plan, and the side-by-side
 * bench of the written file. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ptq_internal.h"

typedef struct node_time {
    uint64_t *ns; /* per node: minimum over runs */
    uint32_t count;
} node_time;

static void on_profile(void *user, const ks_op_profile *p) {
    node_time *t = user;
    if (p->node_index < t->count &&
        (t->ns[p->node_index] == 0 || p->elapsed_ns < t->ns[p->node_index]))
        t->ns[p->node_index] = p->elapsed_ns ? p->elapsed_ns : 1;
}

/* ---- the int8 graph against fp32 ---------------------------------------------------------- */

void ks__quant_eval_free(ks__quant_eval *e) {
    free(e->dot);
    free(e->n_ref);
    free(e->n_q);
    free(e->has);
    free(e->t_f32);
    free(e->t_i8);
    free(e->t_i8_own);
    memset(e, 0, sizeof(*e));
}

double ks__quant_eval_cosine(const ks__quant_eval *e, uint32_t t) {
    if (!e->has[t]) return NAN;
    if (e->n_ref[t] == 0.0 && e->n_q[t] == 0.0) return 1.0;
    if (e->n_ref[t] == 0.0 || e->n_q[t] == 0.0) return 0.0;
    return e->dot[t] / sqrt(e->n_ref[t] * e->n_q[t]);
}

static void accumulate(ks__quant_eval *e, uint32_t t, const float *ref, const ks_tensor *q) {
    size_t n = q->size_bytes / (q->info.dtype == KS_DTYPE_I8 ? 1 : sizeof(float));
    double dot = 0, a = 0, b = 0;
    for (size_t i = 0; i < n; i++) {
        double r = ref[i], v;
        if (q->info.dtype == KS_DTYPE_I8)
            v = (double)q->info.scale * (((const int8_t *)q->data)[i] - q->info.zero_point);
        else
            v = ((const float *)q->data)[i];
        if (!isfinite(r) || !isfinite(v)) continue;
        dot += r * v;
        a += r * r;
        b += v * v;
    }
    e->dot[t] += dot;
    e->n_ref[t] += a;
    e->n_q[t] += b;
    e->has[t] = true;
}

ks_status ks__quant_evaluate(const ks__quant_ctx *c, const ks__graph *src, const ks__quant_map *map,
                             ks__graph *qg, ks__quant_eval *e, const char *what) {
    uint8_t *buf = NULL;
    size_t size = 0;
    char err[1024];
    ks_model *qm = NULL;
    ks_session *qs = NULL, *fs = c->fs;
    ks_status st = KS_STATUS_OK;
    uint32_t nt = src->num_tensors, nn = src->num_nodes;
    node_time tf = {0}, tq = {0};
    ks__quant_eval_free(e);
    e->dot = calloc(nt + 1, sizeof(double));
    e->n_ref = calloc(nt + 1, sizeof(double));
    e->n_q = calloc(nt + 1, sizeof(double));
    e->has = calloc(nt + 1, sizeof(bool));
    e->t_f32 = calloc(nn + 1, sizeof(uint64_t));
    e->t_i8 = calloc(nn + 1, sizeof(uint64_t));
    e->t_i8_own = calloc(nn + 1, sizeof(uint64_t));
    tf.count = nn;
    tf.ns = calloc(nn + 1, sizeof(uint64_t));
    tq.count = qg->num_nodes;
    tq.ns = calloc(qg->num_nodes + 1, sizeof(uint64_t));
    if (!e->dot || !e->n_ref || !e->n_q || !e->has || !e->t_f32 || !e->t_i8 || !e->t_i8_own ||
        !tf.ns || !tq.ns) {
        st = ks__quant_oom(c, "check");
        goto done;
    }
    st = ks__ksm_write(qg, &buf, &size, err, sizeof(err));
    if (st) {
        st = ks__fail(c->err, c->err_cap, st, "cannot serialize the int8 graph: %s", err);
        goto done;
    }
    ks_model_desc md = {.flags = KS_MODEL_COPY_BUFFER};
    st = ks_model_load_buffer(buf, size, &md, &qm);
    if (st) {
        st = ks__quant_fail_engine(c, st, "the int8 graph does not load: %s: %s",
                                   ks_status_string(st), ks_last_error(NULL));
        goto done;
    }
    if ((st = ks__quant_open_session(c, qm, &qs))) goto done;
    int n = ks__quant_num_eval(c);
    for (int i = 0; i < n; i++) {
        ks__quant_progress(c, what, i, n);
        const char *img = ks__quant_eval_image(c, i, n);
        if ((st = ks__quant_fill_input(c, fs, img, 0)) ||
            (st = ks__quant_fill_input(c, qs, img, 0)) || (st = ks__quant_run_session(c, fs)) ||
            (st = ks__quant_run_session(c, qs)))
            goto done;
        for (uint32_t t = 0; t < nt; t++) {
            const ks__tensor *d = &src->tensors[t];
            if ((d->flags & KS__TENSOR_CONST) || d->dtype != KS_DTYPE_F32) continue;
            int32_t qid = map->i8_id[t] >= 0 ? map->i8_id[t] : map->f32_id[t];
            if (qid < 0) continue;
            ks_tensor rt, qt;
            if (ks_session_tensor(fs, t, &rt) || !rt.data) continue;
            if (ks_session_tensor(qs, (uint32_t)qid, &qt) || !qt.data) continue;
            size_t nq = qt.size_bytes / (qt.info.dtype == KS_DTYPE_I8 ? 1 : sizeof(float));
            if (nq * sizeof(float) != rt.size_bytes) continue;
            accumulate(e, t, rt.data, &qt);
        }
    }
    ks__quant_progress(c, what, n, n);
    /* Per-node times, minimum of a few runs each (the machine may be shared). */
    ks_session_set_profiler(fs, on_profile, &tf);
    ks_session_set_profiler(qs, on_profile, &tq);
    for (int r = 0; r < 5; r++)
        if ((st = ks__quant_run_session(c, fs)) || (st = ks__quant_run_session(c, qs))) break;
    ks_session_set_profiler(fs, NULL, NULL);
    if (st) goto done;
    for (uint32_t i = 0; i < nn; i++) {
        e->t_f32[i] = tf.ns[i];
        e->total_f32 += tf.ns[i];
    }
    for (uint32_t i = 0; i < qg->num_nodes; i++) {
        int32_t s = i < map->num_dst_nodes ? map->node_src[i] : -1;
        if (s < 0) {
            e->total_i8 += tq.ns[i];
            continue;
        }
        e->t_i8[s] += tq.ns[i];
        uint32_t op = qg->nodes[i].op;
        if ((op != KS_OP_QUANTIZE && op != KS_OP_DEQUANTIZE) || op == src->nodes[s].op)
            e->t_i8_own[s] += tq.ns[i];
        e->total_i8 += tq.ns[i];
    }
done:
    free(tf.ns);
    free(tq.ns);
    ks_session_destroy(qs);
    ks_model_destroy(qm);
    if (buf) ks__free(&qg->alloc, buf);
    return st;
}

/* ---- each layer's own error --------------------------------------------------------------- */

ks_status ks__quant_isolated_cosines(const ks__quant_ctx *c, const ks__graph *src,
                                     const ks__quant_plan *plan, double *iso) {
    ks__graph sg;
    ks__quant_map sm = {0};
    char err[1024];
    ks_model *m = NULL;
    ks_session *s = NULL;
    ks_status st = KS_STATUS_OK;
    uint32_t nn = src->num_nodes;
    int32_t *shadow = malloc((nn + 1) * sizeof(int32_t));
    double *acc = calloc(3 * ((size_t)nn + 1), sizeof(double));
    ks__graph_init(&sg, NULL);
    for (uint32_t i = 0; i < nn; i++)
        iso[i] = NAN;
    if (!shadow || !acc) {
        st = ks__quant_oom(c, "per-layer check");
        goto done;
    }
    err[0] = '\0';
    if ((st = ks__quant_build(src, plan, &sg, &sm, shadow, err, sizeof(err)))) {
        st = ks__fail(c->err, c->err_cap, st, "cannot build the per-layer check graph: %s", err);
        goto done;
    }
    if ((st = ks__quant_load_graph(&sg, &m, err, sizeof(err)))) {
        st = ks__quant_fail_engine(c, st, "per-layer check graph: %s %s", err, ks_last_error(NULL));
        goto done;
    }
    if ((st = ks__quant_open_session(c, m, &s))) goto done;
    int n = ks__quant_num_eval(c);
    for (int k = 0; k < n; k++) {
        ks__quant_progress(c, "checking layers", k, n);
        if ((st = ks__quant_fill_input(c, s, ks__quant_eval_image(c, k, n), 0)) ||
            (st = ks__quant_run_session(c, s)))
            goto done;
        for (uint32_t i = 0; i < nn; i++) {
            if (shadow[i] < 0) continue;
            int32_t y = src->nodes[i].outputs[0], ref_id = sm.f32_id[y];
            ks_tensor rt, qt;
            if (ref_id < 0 || ks_session_tensor(s, (uint32_t)ref_id, &rt) || !rt.data ||
                ks_session_tensor(s, (uint32_t)shadow[i], &qt) || !qt.data ||
                qt.size_bytes * sizeof(float) != rt.size_bytes)
                continue;
            const float *r = rt.data;
            const int8_t *q = qt.data;
            double dot = 0, a = 0, b = 0;
            for (size_t j = 0; j < qt.size_bytes; j++) {
                double v = (double)qt.info.scale * (q[j] - qt.info.zero_point);
                if (!isfinite(r[j])) continue;
                dot += r[j] * v;
                a += (double)r[j] * r[j];
                b += v * v;
            }
            acc[3 * i] += dot;
            acc[3 * i + 1] += a;
            acc[3 * i + 2] += b;
        }
    }
    ks__quant_progress(c, "checking layers", n, n);
    for (uint32_t i = 0; i < nn; i++) {
        if (shadow[i] < 0) continue;
        double a = acc[3 * i + 1], b = acc[3 * i + 2];
        iso[i] = (a == 0.0 && b == 0.0)   ? 1.0
                 : (a == 0.0 || b == 0.0) ? 0.0
                                          : acc[3 * i] / sqrt(a * b);
    }
done:
    ks_session_destroy(s);
    ks_model_destroy(m);
    ks__graph_free(&sg);
    ks__quant_map_free(&sm);
    free(shadow);
    free(acc);
    return st;
}

/* ---- fp32 against fp32 -------------------------------------------------------------------- */

bool ks__quant_output_checked(const ks__quant_options *o, const char *name) {
    if (o->num_outputs == 0) return true;
    for (uint32_t k = 0; k < o->num_outputs; k++)
        if (name && strcmp(name, o->outputs[k]) == 0) return true;
    return false;
}

ks_status ks__quant_compare_fp32(const ks__quant_ctx *c, const ks_model *a, const ks_model *b,
                                 double *max_rel_out, const char **worst_out) {
    ks_session *sa = NULL, *sb = NULL;
    ks_status st;
    *max_rel_out = 0.0;
    *worst_out = "";
    if ((st = ks__quant_open_session(c, a, &sa)) || (st = ks__quant_open_session(c, b, &sb)))
        goto done;
    int n = ks__quant_num_eval(c);
    for (int k = 0; k < n; k++) {
        const char *img = ks__quant_eval_image(c, k, n);
        if ((st = ks__quant_fill_input(c, sa, img, 0)) ||
            (st = ks__quant_fill_input(c, sb, img, 0)) || (st = ks__quant_run_session(c, sa)) ||
            (st = ks__quant_run_session(c, sb)))
            goto done;
        for (uint32_t i = 0; i < ks_model_num_outputs(a); i++) {
            ks_tensor ta, tb;
            if (ks_session_output(sa, i, &ta) || ks_session_output(sb, i, &tb) ||
                ta.size_bytes != tb.size_bytes || ta.info.dtype != KS_DTYPE_F32)
                continue;
            const float *x = ta.data, *y = tb.data;
            size_t m = ta.size_bytes / sizeof(float);
            double top = 0.0, diff = 0.0;
            for (size_t j = 0; j < m; j++) {
                if (!isfinite(x[j]) || !isfinite(y[j])) continue;
                top = fmax(top, fabs((double)x[j]));
                diff = fmax(diff, fabs((double)x[j] - (double)y[j]));
            }
            double rel = top > 0.0 ? diff / top : diff;
            if (rel > *max_rel_out && ks__quant_output_checked(c->o, ta.info.name)) {
                *max_rel_out = rel;
                *worst_out = ta.info.name;
            }
        }
    }
done:
    ks_session_destroy(sa);
    ks_session_destroy(sb);
    return st;
}

/* ---- the outputs of a candidate plan ------------------------------------------------------ */

void ks__quant_outref_free(ks__quant_outref *r) {
    if (r->ref)
        for (size_t i = 0; i < (size_t)r->num_images * r->num_outputs; i++)
            free(r->ref[i]);
    free(r->ref);
    free(r->names);
    free(r->checked);
    free(r->count);
    memset(r, 0, sizeof(*r));
}

ks_status ks__quant_outref_init(const ks__quant_ctx *c, const ks__graph *src, ks__quant_outref *r) {
    ks_status st;
    memset(r, 0, sizeof(*r));
    r->num_images = ks__quant_num_eval(c);
    r->num_outputs = src->num_outputs;
    r->names = calloc(r->num_outputs + 1, sizeof(char *));
    r->checked = calloc(r->num_outputs + 1, sizeof(bool));
    r->count = calloc(r->num_outputs + 1, sizeof(size_t));
    r->ref = calloc((size_t)r->num_images * r->num_outputs + 1, sizeof(float *));
    if (!r->names || !r->checked || !r->count || !r->ref) goto oom;
    for (uint32_t k = 0; k < r->num_outputs; k++) {
        r->names[k] = src->tensors[src->outputs[k]].name;
        r->checked[k] = ks__quant_output_checked(c->o, r->names[k]);
    }
    for (int i = 0; i < r->num_images; i++) {
        if ((st = ks__quant_fill_input(c, c->fs, ks__quant_eval_image(c, i, r->num_images), 0)) ||
            (st = ks__quant_run_session(c, c->fs)))
            return st;
        for (uint32_t k = 0; k < r->num_outputs; k++) {
            ks_tensor t;
            if (ks_session_tensor(c->fs, (uint32_t)src->outputs[k], &t) || !t.data ||
                t.info.dtype != KS_DTYPE_F32)
                continue;
            float *copy = malloc(t.size_bytes ? t.size_bytes : 1);
            if (!copy) goto oom;
            memcpy(copy, t.data, t.size_bytes);
            r->ref[(size_t)i * r->num_outputs + k] = copy;
            r->count[k] = t.size_bytes / sizeof(float);
        }
    }
    return KS_STATUS_OK;
oom:
    return ks__fail(c->err, c->err_cap, KS_STATUS_OUT_OF_MEMORY,
                    "cannot measure the fp32 reference outputs");
}

ks_status ks__quant_plan_worst_cosine(const ks__quant_ctx *c, ks__graph *src, ks__quant_plan *plan,
                                      const ks__quant_biascorr *bc, const ks__quant_outref *r,
                                      double *worst_out) {
    ks__graph qg;
    ks__quant_map map = {0};
    ks_model *qm = NULL;
    ks_session *qs = NULL;
    char err[1024];
    ks_status st;
    uint32_t no = r->num_outputs;
    double *acc = calloc(3 * (size_t)no + 1, sizeof(double));
    ks__graph_init(&qg, NULL);
    err[0] = '\0';
    if (!acc) {
        st = ks__quant_oom(c, "output check");
        goto done;
    }
    ks__quant_plan_decide(plan, src);
    if (bc && bc->bias_id) ks__quant_biascorr_apply(bc, src, plan->mode);
    if ((st = ks__quant_build(src, plan, &qg, &map, NULL, err, sizeof(err))) ||
        (st = ks__quant_load_graph(&qg, &qm, err, sizeof(err)))) {
        st = ks__quant_fail_engine(c, st, "output check: %s %s", err, ks_last_error(NULL));
        goto done;
    }
    ks_session_desc sd = {.num_threads = 1};
    if ((st = ks_session_create(qm, &sd, &qs)) || (st = ks_session_reshape(qs, &c->shape))) {
        st = ks__quant_fail_engine(c, st, "output check: %s", ks_last_error(qs));
        goto done;
    }
    for (int i = 0; i < r->num_images; i++) {
        if ((st = ks__quant_fill_input(c, qs, ks__quant_eval_image(c, i, r->num_images), 0)) ||
            (st = ks__quant_run_session(c, qs)))
            goto done;
        for (uint32_t j = 0; j < ks_model_num_outputs(qm); j++) {
            ks_tensor t;
            if (ks_session_output(qs, j, &t) || !t.data || t.info.dtype != KS_DTYPE_F32) continue;
            for (uint32_t k = 0; k < no; k++) {
                const float *ref = r->ref[(size_t)i * no + k];
                if (!ref || !r->checked[k] || !t.info.name ||
                    strcmp(r->names[k], t.info.name) != 0 ||
                    t.size_bytes != r->count[k] * sizeof(float))
                    continue;
                const float *v = t.data;
                for (size_t e = 0; e < r->count[k]; e++) {
                    if (!isfinite(ref[e]) || !isfinite(v[e])) continue;
                    acc[3 * k] += (double)ref[e] * v[e];
                    acc[3 * k + 1] += (double)ref[e] * ref[e];
                    acc[3 * k + 2] += (double)v[e] * v[e];
                }
            }
        }
    }
    *worst_out = 1.0;
    for (uint32_t k = 0; k < no; k++) {
        if (!r->checked[k]) continue;
        double a = acc[3 * k + 1], b = acc[3 * k + 2];
        double cs = (a == 0.0 && b == 0.0)   ? 1.0
                    : (a == 0.0 || b == 0.0) ? 0.0
                                             : acc[3 * k] / sqrt(a * b);
        if (cs < *worst_out) *worst_out = cs;
    }
done:
    ks_session_destroy(qs);
    ks_model_destroy(qm);
    ks__graph_free(&qg);
    ks__quant_map_free(&map);
    free(acc);
    return st;
}

/* ---- bench: fp32 and int8 side by side ---------------------------------------------------- */

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

ks_status ks__quant_bench(const ks__quant_ctx *c, const ks_model *fm, ks__quant_report *rep) {
    ks_model *qm = NULL;
    ks_session *fs = NULL, *qs = NULL;
    ks_session_desc desc = {.num_threads = 1};
    int runs = c->o->bench_runs;
    double *tf = calloc((size_t)runs, sizeof(double));
    double *tq = calloc((size_t)runs, sizeof(double));
    ks_status st;
    if (!tf || !tq) {
        st = ks__quant_oom(c, "bench");
        goto done;
    }
    if ((st = ks_model_load_file(c->o->out_path, NULL, &qm)) ||
        (st = ks_session_create(fm, &desc, &fs)) || (st = ks_session_create(qm, &desc, &qs)) ||
        (st = ks_session_reshape(fs, &c->shape)) || (st = ks_session_reshape(qs, &c->shape))) {
        st = ks__quant_fail_engine(c, st, "bench: %s", ks_last_error(NULL));
        goto done;
    }
    if ((st = ks__quant_fill_input(c, fs, c->images[0], 0)) ||
        (st = ks__quant_fill_input(c, qs, c->images[0], 0)))
        goto done;
    for (int w = 0; w < 3; w++)
        if ((st = ks__quant_run_session(c, fs)) || (st = ks__quant_run_session(c, qs))) goto done;
    for (int r = 0; r < runs; r++) { /* interleaved, so drift hits both alike */
        double t0 = now_ns();
        if ((st = ks__quant_run_session(c, fs))) goto done;
        double t1 = now_ns();
        if ((st = ks__quant_run_session(c, qs))) goto done;
        double t2 = now_ns();
        tf[r] = (t1 - t0) / 1e6;
        tq[r] = (t2 - t1) / 1e6;
    }
    qsort(tf, (size_t)runs, sizeof(double), cmp_double);
    qsort(tq, (size_t)runs, sizeof(double), cmp_double);
    rep->bench_fp32_median_ms = tf[runs / 2];
    rep->bench_fp32_min_ms = tf[0];
    rep->bench_int8_median_ms = tq[runs / 2];
    rep->bench_int8_min_ms = tq[0];
done:
    free(tf);
    free(tq);
    ks_session_destroy(fs);
    ks_session_destroy(qs);
    ks_model_destroy(qm);
    return st;
}
