/* Device partitions (engine/src/partition.h, backend.h's device members, session.c).
 *
 * - ks__partition_build on hand-made graphs: runs of device nodes, nodes not run inside a run,
 *   boundary inputs listed once, outputs that leave the partition or the graph, device-only
 *   tensors;
 * - a session split between the host and a device runs real models (BlazeFace short range,
 *   selfie segmentation) with outputs bit-identical to a host-only session, whatever the device
 *   supports (everything, only convolutions, every other node), and the profiler reports each
 *   partition's submit, upload, compute and download;
 * - failures of the device (opening, compiling, submitting, completing) come back as the
 *   device's status with its message, leave no leak, and a failed run needs a reshape.
 *
 * The device here is an emulated one: its own memory (every tensor it computes lives in
 * buffers the host never sees, inputs are copied in at submit and outputs out at wait) and the
 * CPU reference kernels as its kernels, run at wait, not at submit, so a session that read an
 * output before waiting would read stale memory. The host session is restricted to the reference
 * kernels too (features 0), so both sides compute the same bits.
 * Without ../shared/data the model tests are skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "convert.h"
#include "cpu_kernel.h"
#include "impl.h"
#include "ksm.h"
#include "src/model.h"
#include "src/partition.h"
#include "src/session.h"

/* ---------------------------------------------------------------------------------------------
 * ks__partition_build
 * ------------------------------------------------------------------------------------------- */

static int32_t add_tensor(ks__graph *g, const char *name) {
    int64_t d[2] = {1, 4};
    int32_t id;
    assert_int_equal(ks__graph_add_tensor(g, name, KS_DTYPE_F32, 2, d, &id), 0);
    return id;
}

static void add_node(ks__graph *g, const char *name, uint32_t ni, const int32_t *in, int32_t out) {
    assert_int_equal(ks__graph_add_node(g, KS_OP_ADD, name, ni, in, 1, &out, NULL), 0);
}

/* x -> a -> b -> c -> d, with c also reading x and d reading a constant k.
 * Nodes: n0 a=f(x), n1 b=f(a), n2 c=f(b,x), n3 d=f(c,k); outputs d and b. */
static void chain(ks__graph *g, int32_t *t) {
    ks__graph_init(g, NULL);
    t[0] = add_tensor(g, "x");
    t[1] = add_tensor(g, "a");
    t[2] = add_tensor(g, "b");
    t[3] = add_tensor(g, "c");
    t[4] = add_tensor(g, "d");
    t[5] = add_tensor(g, "k");
    add_node(g, "n0", 1, &t[0], t[1]);
    add_node(g, "n1", 1, &t[1], t[2]);
    int32_t in2[2] = {t[2], t[0]};
    add_node(g, "n2", 2, in2, t[3]);
    int32_t in3[2] = {t[3], t[5]};
    add_node(g, "n3", 2, in3, t[4]);
    int32_t outs[2] = {t[4], t[2]};
    assert_int_equal(ks__graph_set_io(g, 1, &t[0], 2, outs), 0);
}

static void test_build_all_device(void **state) {
    (void)state;
    ks__graph g;
    int32_t t[6];
    chain(&g, t);
    uint8_t place[4] = {1, 1, 1, 1};
    uint8_t runtime[6] = {1, 1, 1, 1, 1, 0}; /* k is a constant */
    ks__partition_set ps;
    assert_int_equal(ks__partition_build(&g, place, runtime, NULL, &ps), KS_STATUS_OK);
    assert_int_equal(ps.num_parts, 1);
    const ks__partition *p = &ps.parts[0];
    assert_int_equal(p->num_nodes, 4);
    assert_int_equal(p->num_inputs, 1); /* x once, though two nodes read it; not k */
    assert_int_equal(p->inputs[0], t[0]);
    assert_int_equal(p->num_outputs, 2); /* b (a graph output) and d */
    assert_int_equal(p->outputs[0], t[2]);
    assert_int_equal(p->outputs[1], t[4]);
    assert_true(ps.device_only[t[1]] && ps.device_only[t[3]]);
    assert_false(ps.device_only[t[0]] || ps.device_only[t[2]] || ps.device_only[t[4]]);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(ps.part_of_node[i], 0);
    ks__partition_free(&ps, NULL);
    ks__graph_free(&g);
}

static void test_build_host_splits(void **state) {
    (void)state;
    ks__graph g;
    int32_t t[6];
    chain(&g, t);
    /* device, host, device, device: two partitions; a leaves the first one (n1 reads it) */
    uint8_t place[4] = {1, 0, 1, 1};
    uint8_t runtime[6] = {1, 1, 1, 1, 1, 0};
    ks__partition_set ps;
    assert_int_equal(ks__partition_build(&g, place, runtime, NULL, &ps), KS_STATUS_OK);
    assert_int_equal(ps.num_parts, 2);
    assert_int_equal(ps.parts[0].num_nodes, 1);
    assert_int_equal(ps.parts[0].num_outputs, 1);
    assert_int_equal(ps.parts[0].outputs[0], t[1]);
    assert_int_equal(ps.parts[1].index, 1);
    assert_int_equal(ps.parts[1].num_nodes, 2);
    assert_int_equal(ps.parts[1].nodes[0], 2);
    assert_int_equal(ps.parts[1].num_inputs, 2); /* b from the host, x again */
    assert_int_equal(ps.parts[1].inputs[0], t[2]);
    assert_int_equal(ps.parts[1].inputs[1], t[0]);
    assert_int_equal(ps.parts[1].num_outputs, 1);
    assert_int_equal(ps.parts[1].outputs[0], t[4]);
    assert_int_equal(ps.part_of_node[1], -1);
    assert_true(ps.device_only[t[3]]);
    assert_false(ps.device_only[t[1]]);
    ks__partition_free(&ps, NULL);

    /* a node that does not run (evaluated at reshape) does not break a run */
    uint8_t place2[4] = {1, 2, 1, 0};
    assert_int_equal(ks__partition_build(&g, place2, runtime, NULL, &ps), KS_STATUS_OK);
    assert_int_equal(ps.num_parts, 1);
    assert_int_equal(ps.parts[0].num_nodes, 2);
    assert_int_equal(ps.part_of_node[1], -1);
    ks__partition_free(&ps, NULL);

    /* nothing on the device: no partition */
    uint8_t place3[4] = {0, 0, 2, 0};
    assert_int_equal(ks__partition_build(&g, place3, runtime, NULL, &ps), KS_STATUS_OK);
    assert_int_equal(ps.num_parts, 0);
    ks__partition_free(&ps, NULL);
    ks__graph_free(&g);
}

/* ---------------------------------------------------------------------------------------------
 * the emulated device
 * ------------------------------------------------------------------------------------------- */

enum { SUPPORT_ALL, SUPPORT_CONV, SUPPORT_ALTERNATE, SUPPORT_RELU };
enum { FAIL_NONE, FAIL_CREATE, FAIL_COMPILE, FAIL_SUBMIT, FAIL_WAIT };

static struct {
    int support;
    int fail;
    int open_devices, open_progs; /* leak accounting */
    int waits_with_work;          /* waits that found submitted work */
} g_dev;

typedef struct edge {
    void *host, *own;
    size_t bytes;
} edge;

typedef struct prog {
    uint32_t num_nodes;
    ks__kernel_ctx *ctx;
    ks__rt_tensor *rt;    /* private copies, indexed like map */
    ks__rt_tensor **ptrs; /* per node: inputs then outputs */
    void **bufs;          /* device memory, per private tensor (NULL: constant) */
    uint32_t num_rt;
    edge *in, *out;
    uint32_t num_in, num_out;
    int submitted;
    char err[160];
} prog;

static ks_status dev_create(const ks_allocator *alloc, const ks_session_desc *desc, void **dev_out,
                            char *err, size_t cap) {
    (void)alloc;
    (void)desc;
    if (g_dev.fail == FAIL_CREATE) {
        snprintf(err, cap, "no emulated device today");
        return KS_STATUS_UNSUPPORTED;
    }
    g_dev.open_devices++;
    *dev_out = &g_dev;
    return KS_STATUS_OK;
}

static void dev_destroy(void *dev) {
    if (dev) g_dev.open_devices--;
}

static bool dev_supports(void *dev, const ks__kernel_ctx *ctx) {
    (void)dev;
    for (uint32_t k = 0; k < ctx->num_outputs; k++)
        if (ctx->out[k]->dtype != KS_DTYPE_F32) return false;
    for (uint32_t k = 0; k < ctx->num_inputs; k++)
        if (ctx->in[k] && ctx->in[k]->quant->count) return false;
    if (g_dev.support == SUPPORT_CONV) return ctx->node->op == KS_OP_CONV2D;
    if (g_dev.support == SUPPORT_ALTERNATE) return ctx->node_index % 2 == 0;
    if (g_dev.support == SUPPORT_RELU) return ctx->node->op == KS_OP_RELU;
    return true;
}

static void dev_release(void *dev, void *p_) {
    (void)dev;
    prog *p = p_;
    if (!p) return;
    for (uint32_t i = 0; i < p->num_rt; i++)
        free(p->bufs[i]);
    free(p->bufs);
    free(p->rt);
    free(p->ptrs);
    free(p->ctx);
    free(p->in);
    free(p->out);
    free(p);
    g_dev.open_progs--;
}

/* The private tensor for session tensor `id` (map: id -> index + 1). */
static ks__rt_tensor *private_of(prog *p, uint32_t *map, int32_t id, const ks__rt_tensor *src) {
    if (!map[id]) {
        uint32_t k = p->num_rt++;
        map[id] = k + 1;
        p->rt[k] = *src;
        if (!src->data) {
            p->bufs[k] = calloc(1, src->size_bytes ? src->size_bytes : 1);
            p->rt[k].data = p->bufs[k];
        }
    }
    return &p->rt[map[id] - 1];
}

static ks_status dev_compile(void *dev, const ks__partition *part, const ks__kernel_ctx *ctx,
                             void **prog_out, char *err, size_t cap) {
    (void)dev;
    if (g_dev.fail == FAIL_COMPILE) {
        snprintf(err, cap, "shader cache is full");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    int32_t max_id = 0;
    size_t edges = 0;
    for (uint32_t k = 0; k < part->num_nodes; k++) {
        const ks__node *n = ctx[k].node;
        edges += n->num_inputs + n->num_outputs;
        for (uint32_t j = 0; j < n->num_inputs; j++)
            if (n->inputs[j] > max_id) max_id = n->inputs[j];
        for (uint32_t j = 0; j < n->num_outputs; j++)
            if (n->outputs[j] > max_id) max_id = n->outputs[j];
    }
    prog *p = calloc(1, sizeof(*p));
    uint32_t *map = calloc((size_t)max_id + 1, sizeof(uint32_t));
    p->num_nodes = part->num_nodes;
    p->ctx = calloc(part->num_nodes, sizeof(*p->ctx));
    p->rt = calloc(edges, sizeof(*p->rt));
    p->bufs = calloc(edges, sizeof(void *));
    p->ptrs = calloc(edges, sizeof(*p->ptrs));
    p->in = calloc(part->num_inputs + 1, sizeof(edge));
    p->out = calloc(part->num_outputs + 1, sizeof(edge));
    assert_true(p->ctx && p->rt && p->bufs && p->ptrs && p->in && p->out && map);
    g_dev.open_progs++;
    /* boundary tensors first: device buffers even though the host's have data */
    for (uint32_t k = 0; k < part->num_nodes; k++) {
        const ks__node *n = ctx[k].node;
        for (uint32_t j = 0; j < n->num_inputs; j++)
            for (uint32_t b = 0; b < part->num_inputs; b++)
                if (n->inputs[j] == part->inputs[b] && !map[n->inputs[j]]) {
                    ks__rt_tensor tmp = *ctx[k].in[j];
                    p->in[p->num_in].host = tmp.data;
                    tmp.data = NULL;
                    ks__rt_tensor *r = private_of(p, map, n->inputs[j], &tmp);
                    p->in[p->num_in].own = r->data;
                    p->in[p->num_in++].bytes = r->size_bytes;
                }
        for (uint32_t j = 0; j < n->num_outputs; j++)
            for (uint32_t b = 0; b < part->num_outputs; b++)
                if (n->outputs[j] == part->outputs[b]) {
                    ks__rt_tensor tmp = *ctx[k].out[j];
                    p->out[p->num_out].host = tmp.data;
                    tmp.data = NULL;
                    ks__rt_tensor *r = private_of(p, map, n->outputs[j], &tmp);
                    p->out[p->num_out].own = r->data;
                    p->out[p->num_out++].bytes = r->size_bytes;
                }
    }
    assert_int_equal(p->num_in, part->num_inputs);
    assert_int_equal(p->num_out, part->num_outputs);
    size_t q = 0;
    for (uint32_t k = 0; k < part->num_nodes; k++) {
        const ks__node *n = ctx[k].node;
        ks__kernel_ctx *c = &p->ctx[k];
        *c = ctx[k];
        c->in = &p->ptrs[q];
        for (uint32_t j = 0; j < n->num_inputs; j++)
            p->ptrs[q++] = n->inputs[j] < 0 ? NULL : private_of(p, map, n->inputs[j], ctx[k].in[j]);
        c->out = &p->ptrs[q];
        for (uint32_t j = 0; j < n->num_outputs; j++)
            p->ptrs[q++] = private_of(p, map, n->outputs[j], ctx[k].out[j]);
        c->err = p->err;
        c->err_cap = sizeof(p->err);
        c->pool = NULL;
        c->num_threads = 1;
        c->packed = NULL;
        c->scratch = NULL;
        c->scratch_bytes = 0;
    }
    free(map);
    *prog_out = p;
    return KS_STATUS_OK;
}

static ks_status dev_submit(void *dev, void *p_, bool profiled, char *err, size_t cap) {
    (void)dev;
    (void)profiled;
    prog *p = p_;
    if (g_dev.fail == FAIL_SUBMIT) {
        snprintf(err, cap, "queue full");
        return KS_STATUS_INTERNAL;
    }
    for (uint32_t b = 0; b < p->num_in; b++)
        memcpy(p->in[b].own, p->in[b].host, p->in[b].bytes);
    p->submitted = 1;
    return KS_STATUS_OK;
}

static ks_status dev_wait(void *dev, void *p_, ks__partition_times *times, char *err, size_t cap) {
    (void)dev;
    prog *p = p_;
    if (!p->submitted) {
        snprintf(err, cap, "wait without submit");
        return KS_STATUS_INTERNAL;
    }
    p->submitted = 0;
    g_dev.waits_with_work++;
    if (g_dev.fail == FAIL_WAIT) {
        snprintf(err, cap, "device lost");
        return KS_STATUS_INTERNAL;
    }
    const ks__kernel_table *kt = ks__ref_kernels();
    for (uint32_t k = 0; k < p->num_nodes; k++) {
        ks_status st = kt->k[p->ctx[k].node->op].run(&p->ctx[k]);
        if (st) {
            snprintf(err, cap, "%s", p->err);
            return st;
        }
    }
    for (uint32_t b = 0; b < p->num_out; b++)
        memcpy(p->out[b].host, p->out[b].own, p->out[b].bytes);
    if (times) {
        times->compute_ns = 1;
        for (uint32_t b = 0; b < p->num_in; b++)
            times->upload_bytes += p->in[b].bytes;
        for (uint32_t b = 0; b < p->num_out; b++)
            times->download_bytes += p->out[b].bytes;
    }
    return KS_STATUS_OK;
}

static ks__backend emulated_device(void) {
    ks__backend b = {0};
    b.name = "emulated";
    b.device_create = dev_create;
    b.device_destroy = dev_destroy;
    b.supports = dev_supports;
    b.compile = dev_compile;
    b.release = dev_release;
    b.submit = dev_submit;
    b.wait = dev_wait;
    return b;
}

static uint32_t no_features(void) {
    return 0;
}

/* The CPU backend restricted to its reference kernels. */
static ks__backend reference_host(void) {
    ks__backend b = *ks__cpu_backend();
    b.features = no_features;
    b.tuner_create = NULL;
    return b;
}

/* ---------------------------------------------------------------------------------------------
 * sessions split between host and device, on real models
 * ------------------------------------------------------------------------------------------- */

static uint8_t *read_file(const char *path, size_t *size_out) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) {
            buf = malloc((size_t)n + 1);
            if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            }
            *size_out = (size_t)n;
        }
    }
    fclose(f);
    return buf;
}

/* Imports and optimizes a model of ../shared/data; NULL when the data is missing. */
static ks_model *load_model(const char *rel, uint8_t **image_out) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", KS_SHARED_DATA, rel);
    size_t n = 0;
    uint8_t *src = read_file(path, &n);
    if (!src) return NULL;
    ks__graph g;
    ks__graph_init(&g, NULL);
    char err[256] = "";
    assert_int_equal(ks__import_any(src, n, rel, &g, err, sizeof(err)), KS_STATUS_OK);
    free(src);
    assert_int_equal(ks__graph_optimize(&g, err, sizeof(err)), KS_STATUS_OK);
    size_t size = 0;
    assert_int_equal(ks__ksm_write(&g, image_out, &size, err, sizeof(err)), KS_STATUS_OK);
    ks__graph_free(&g);
    ks_model *m = NULL;
    assert_int_equal(ks_model_load_buffer(*image_out, size, NULL, &m), KS_STATUS_OK);
    return m;
}

typedef struct prof_log {
    int submits, uploads, computes, downloads, nodes;
} prof_log;

static void on_prof(void *user, const ks_op_profile *p) {
    prof_log *l = user;
    bool dev = strcmp(p->kernel_name, "emulated") == 0;
    if (strcmp(p->op_name, "submit") == 0 && dev)
        l->submits++;
    else if (strcmp(p->op_name, "upload") == 0 && dev)
        l->uploads++;
    else if (strcmp(p->op_name, "partition") == 0 && dev)
        l->computes++;
    else if (strcmp(p->op_name, "download") == 0 && dev)
        l->downloads++;
    else
        l->nodes++;
}

static void fill_inputs(ks_session *s, const ks_model *m) {
    for (uint32_t i = 0; i < ks_model_num_inputs(m); i++) {
        ks_tensor in;
        assert_int_equal(ks_session_input(s, i, &in), KS_STATUS_OK);
        assert_int_equal(in.info.dtype, KS_DTYPE_F32);
        float *v = in.data;
        for (size_t k = 0; k < in.size_bytes / sizeof(float); k++)
            v[k] = (float)((int)(k * 37 % 29) - 14) / 16.0f;
    }
}

/* Output bytes of a host-only reference session (caller frees each). */
static void host_outputs(const ks_model *m, uint8_t **out, size_t *bytes) {
    ks__backend host = reference_host();
    ks_session *s = NULL;
    ks_session_desc d = {.num_threads = 1};
    assert_int_equal(ks__session_create_with(m, ks__model_graph(m), &d, &host, &s), 0);
    assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
    fill_inputs(s, m);
    assert_int_equal(ks_session_run(s), KS_STATUS_OK);
    for (uint32_t o = 0; o < ks_model_num_outputs(m); o++) {
        ks_tensor t;
        assert_int_equal(ks_session_output(s, o, &t), KS_STATUS_OK);
        out[o] = malloc(t.size_bytes);
        memcpy(out[o], t.data, t.size_bytes);
        bytes[o] = t.size_bytes;
    }
    ks_session_destroy(s);
}

/* Each mode splits the model differently; the session runs twice in the mode with the most
 * partitions (every output must be written again by the second run) and once in the others: the
 * reference kernels are slow under qemu and the sanitizers (this test was the slowest unit test
 * of the AArch64 run). */
static void check_split(const char *rel, int num_modes, const int *modes) {
    uint8_t *img = NULL;
    ks_model *m = load_model(rel, &img);
    if (!m) {
        print_message("skipped: %s/%s not found\n", KS_SHARED_DATA, rel);
        skip();
    }
    uint8_t *want[8] = {0};
    size_t want_bytes[8] = {0};
    assert_true(ks_model_num_outputs(m) <= 8);
    host_outputs(m, want, want_bytes);
    memset(&g_dev, 0, sizeof(g_dev));
    ks__backend host = reference_host(), dev = emulated_device();
    for (int mi = 0; mi < num_modes; mi++) {
        g_dev.support = modes[mi];
        g_dev.fail = FAIL_NONE;
        ks_session *s = NULL;
        ks_session_desc d = {.num_threads = 1};
        assert_int_equal(ks__session_create_split(m, ks__model_graph(m), &d, &host, &dev, &s), 0);
        assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
        prof_log log = {0};
        assert_int_equal(ks_session_set_profiler(s, on_prof, &log), KS_STATUS_OK);
        int runs = modes[mi] == SUPPORT_ALTERNATE ? 2 : 1;
        for (int run = 0; run < runs; run++) {
            fill_inputs(s, m);
            assert_int_equal(ks_session_run(s), KS_STATUS_OK);
            for (uint32_t o = 0; o < ks_model_num_outputs(m); o++) {
                ks_tensor t;
                assert_int_equal(ks_session_output(s, o, &t), KS_STATUS_OK);
                assert_int_equal(t.size_bytes, want_bytes[o]);
                if (memcmp(t.data, want[o], t.size_bytes) != 0)
                    fail_msg("%s, device mode %d: output %u differs from the host-only session",
                             rel, modes[mi], o);
                memset(t.data, 0xff, t.size_bytes); /* the next run must write it again */
            }
        }
        /* every partition: one submit, upload, compute and download per run */
        assert_true(log.submits > 0);
        assert_int_equal(log.uploads, log.submits);
        assert_int_equal(log.computes, log.submits);
        assert_int_equal(log.downloads, log.submits);
        if (modes[mi] == SUPPORT_ALL) assert_int_equal(log.submits, runs); /* one partition */
        if (modes[mi] != SUPPORT_ALL) assert_true(log.submits > runs && log.nodes > 0);
        print_message("%s, mode %d: %d partitions, %d host node runs per run\n", rel, modes[mi],
                      log.submits / runs, log.nodes / runs);
        ks_session_destroy(s);
        assert_int_equal(g_dev.open_progs, 0);
        assert_int_equal(g_dev.open_devices, 0);
    }
    for (uint32_t o = 0; o < 8; o++)
        free(want[o]);
    ks_model_destroy(m);
    free(img);
}

static void test_split_blazeface(void **state) {
    (void)state;
    static const int modes[3] = {SUPPORT_ALL, SUPPORT_CONV, SUPPORT_ALTERNATE};
    check_split("face_detection/face_detection_short_range.tflite", 3, modes);
}

static void test_split_selfie(void **state) {
    (void)state;
    /* BlazeFace covers the other modes; here the most partitions over another op set */
    static const int modes[1] = {SUPPORT_ALTERNATE};
    check_split("segmentation/selfie_segmentation.tflite", 1, modes);
}

/* Host nodes that alias a device result (a view, a concat written in place) do no work, so the
 * session must wait for the device before anything reads the alias. x[1,16] -> relu (device) ->
 * a -> unsqueeze (host view) -> b -> add 1 (host) -> o1; then relu(x) (device) and neg(x)
 * (host), 64-byte blocks concatenated in place -> d -> add 1 (host) -> o2. o1 is computed before
 * anything else makes the session wait. */
static void test_alias_of_device_result(void **state) {
    (void)state;
    enum { W = 16 };
    ks__graph g;
    ks__graph_init(&g, NULL);
    int64_t d1w[2] = {1, W}, d11w[3] = {1, 1, W}, d12w[2] = {1, 2 * W}, d1[1] = {1};
    int32_t x, a, b, c, e, d, k, o1, o2;
    assert_int_equal(ks__graph_add_tensor(&g, "x", KS_DTYPE_F32, 2, d1w, &x), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "a", KS_DTYPE_F32, 2, d1w, &a), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "b", KS_DTYPE_F32, 3, d11w, &b), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "o1", KS_DTYPE_F32, 3, d11w, &o1), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "e", KS_DTYPE_F32, 2, d1w, &e), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "c", KS_DTYPE_F32, 2, d1w, &c), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "d", KS_DTYPE_F32, 2, d12w, &d), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "o2", KS_DTYPE_F32, 2, d12w, &o2), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "k", KS_DTYPE_F32, 1, d1, &k), 0);
    float one = 1.0f;
    assert_int_equal(ks__graph_set_const(&g, k, &one, sizeof(one), true), 0);
    uint32_t idx;
    assert_int_equal(ks__graph_add_node(&g, KS_OP_RELU, "relu_a", 1, &x, 1, &a, NULL), 0);
    assert_int_equal(ks__graph_add_node(&g, KS_OP_UNSQUEEZE, "view_b", 1, &a, 1, &b, &idx), 0);
    g.nodes[idx].ip[0] = 1;
    g.nodes[idx].ip[1] = 0;
    int32_t add1[2] = {b, k};
    assert_int_equal(ks__graph_add_node(&g, KS_OP_ADD, "out1", 2, add1, 1, &o1, NULL), 0);
    assert_int_equal(ks__graph_add_node(&g, KS_OP_RELU, "relu_e", 1, &x, 1, &e, NULL), 0);
    assert_int_equal(ks__graph_add_node(&g, KS_OP_NEG, "neg_c", 1, &x, 1, &c, NULL), 0);
    int32_t cat_in[2] = {e, c};
    assert_int_equal(ks__graph_add_node(&g, KS_OP_CONCAT, "concat_d", 2, cat_in, 1, &d, &idx), 0);
    g.nodes[idx].ip[0] = 1;
    int32_t add2[2] = {d, k};
    assert_int_equal(ks__graph_add_node(&g, KS_OP_ADD, "out2", 2, add2, 1, &o2, NULL), 0);
    int32_t outs[2] = {o1, o2};
    assert_int_equal(ks__graph_set_io(&g, 1, &x, 2, outs), 0);
    uint8_t *img = NULL;
    size_t n = 0;
    char err[256];
    assert_int_equal(ks__ksm_write(&g, &img, &n, err, sizeof(err)), 0);
    ks__graph_free(&g);
    ks_model *m = NULL;
    assert_int_equal(ks_model_load_buffer(img, n, NULL, &m), KS_STATUS_OK);

    memset(&g_dev, 0, sizeof(g_dev));
    g_dev.support = SUPPORT_RELU;
    ks__backend host = reference_host(), dev = emulated_device();
    ks_session *s = NULL;
    ks_session_desc desc = {.num_threads = 1};
    assert_int_equal(ks__session_create_split(m, ks__model_graph(m), &desc, &host, &dev, &s), 0);
    assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
    prof_log log = {0};
    assert_int_equal(ks_session_set_profiler(s, on_prof, &log), KS_STATUS_OK);
    ks_tensor in, t1, t2;
    assert_int_equal(ks_session_input(s, 0, &in), KS_STATUS_OK);
    float xv[W];
    for (int i = 0; i < W; i++)
        xv[i] = (float)((i * 5) % 11) - 5.0f;
    memcpy(in.data, xv, sizeof(xv));
    assert_int_equal(ks_session_run(s), KS_STATUS_OK);
    /* both aliases were made: the view and the concat did not run */
    assert_int_equal(log.submits, 2);
    assert_int_equal(log.nodes, 3); /* out1, neg_c, out2 */
    assert_int_equal(ks_session_output(s, 0, &t1), KS_STATUS_OK);
    assert_int_equal(ks_session_output(s, 1, &t2), KS_STATUS_OK);
    const float *y1 = t1.data, *y2 = t2.data;
    for (int i = 0; i < W; i++) {
        float r = xv[i] > 0 ? xv[i] : 0.0f;
        if (y1[i] != r + 1.0f) fail_msg("o1[%d] = %g, want %g", i, y1[i], r + 1.0f);
        if (y2[i] != r + 1.0f) fail_msg("o2[%d] = %g, want %g", i, y2[i], r + 1.0f);
        if (y2[W + i] != -xv[i] + 1.0f) fail_msg("o2[%d] wrong", W + i);
    }
    ks_session_destroy(s);
    assert_int_equal(g_dev.open_progs, 0);
    ks_model_destroy(m);
    free(img);
}

static void test_device_failures(void **state) {
    (void)state;
    uint8_t *img = NULL;
    ks_model *m = load_model("face_detection/face_detection_short_range.tflite", &img);
    if (!m) skip();
    memset(&g_dev, 0, sizeof(g_dev));
    ks__backend host = reference_host(), dev = emulated_device();
    ks_session_desc d = {.num_threads = 1};
    ks_session *s = NULL;
    g_dev.support = SUPPORT_CONV;

    g_dev.fail = FAIL_CREATE;
    assert_int_equal(ks__session_create_split(m, ks__model_graph(m), &d, &host, &dev, &s),
                     KS_STATUS_UNSUPPORTED);
    assert_null(s);
    assert_non_null(strstr(ks_last_error(NULL), "no emulated device today"));

    ks__backend half = dev;
    half.wait = NULL;
    assert_int_equal(ks__session_create_split(m, ks__model_graph(m), &d, &host, &half, &s),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "not a device backend"));

    g_dev.fail = FAIL_COMPILE;
    assert_int_equal(ks__session_create_split(m, ks__model_graph(m), &d, &host, &dev, &s), 0);
    assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OUT_OF_MEMORY);
    assert_non_null(strstr(ks_last_error(s), "shader cache is full"));
    assert_int_equal(ks_session_run(s), KS_STATUS_INVALID_STATE);
    assert_int_equal(g_dev.open_progs, 0);

    for (int f = FAIL_SUBMIT; f <= FAIL_WAIT; f++) {
        g_dev.fail = FAIL_NONE;
        assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
        fill_inputs(s, m);
        g_dev.fail = f;
        g_dev.waits_with_work = 0;
        assert_int_equal(ks_session_run(s), KS_STATUS_INTERNAL);
        assert_non_null(strstr(ks_last_error(s), f == FAIL_SUBMIT ? "queue full" : "device lost"));
        if (f == FAIL_WAIT) {
            assert_non_null(strstr(ks_last_error(s), "ks_session_reshape"));
            assert_int_equal(ks_session_run(s), KS_STATUS_INVALID_STATE);
        }
        g_dev.fail = FAIL_NONE;
        assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
        fill_inputs(s, m);
        assert_int_equal(ks_session_run(s), KS_STATUS_OK);
    }
    ks_session_destroy(s);
    assert_int_equal(g_dev.open_progs, 0);
    assert_int_equal(g_dev.open_devices, 0);
    ks_model_destroy(m);
    free(img);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_all_device),       cmocka_unit_test(test_build_host_splits),
        cmocka_unit_test(test_split_blazeface),        cmocka_unit_test(test_split_selfie),
        cmocka_unit_test(test_alias_of_device_result), cmocka_unit_test(test_device_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
