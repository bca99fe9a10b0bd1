/* Graph runtime: validation errors (one per case, messages checked), previous loops across
 * frames, foreach/collect, gate/switch/merge, flow limiter, deterministic order, side parameters,
 * timing stats, and an OOM-injection loop over graph create. Uses app-registered test nodes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kestrel/pipeline.h"

/* ---- test node types ---- */

static char g_trace[1024];

typedef struct named {
    char name[64];
    int64_t bias;
} named;

static ks_status named_create(const ks_node_init *init, void **state_out) {
    named *n = calloc(1, sizeof(*n));
    if (!n) return KS_STATUS_OUT_OF_MEMORY;
    snprintf(n->name, sizeof(n->name), "%s", init->node_name);
    ks_status st = ks_node_options_int(init->options, "bias", 0, &n->bias);
    if (st) {
        free(n);
        return st;
    }
    *state_out = n;
    return KS_STATUS_OK;
}

static void named_destroy(void *state, const ks_allocator *a) {
    (void)a;
    free(state);
}

/* add: a + (b or 0) + bias, and records its name in g_trace */
static ks_status add_process(void *state, ks_node_ctx *ctx) {
    named *n = state;
    size_t used = strlen(g_trace);
    snprintf(g_trace + used, sizeof(g_trace) - used, "%s ", n->name);
    int64_t v =
        ks_packet_int(ks_node_input(ctx, 0)) + ks_packet_int(ks_node_input(ctx, 1)) + n->bias;
    ks_packet *p = NULL;
    ks_status st = ks_packet_create_int(ks_node_allocator(ctx), v, &p);
    if (st) return st;
    return ks_node_output(ctx, 0, p);
}

static const ks_port add_in[] = {{"a", KS_PACKET_INT, KS_PACKET_ANY, 0, -1},
                                 {"b", KS_PACKET_INT, KS_PACKET_ANY, KS_PORT_OPTIONAL, -1}};
static const ks_port add_out[] = {{"sum", KS_PACKET_INT, KS_PACKET_ANY, 0, -1}};
static const ks_node_type add_type = {"test_add",   2,           1,    add_in, add_out,
                                      named_create, add_process, NULL, NULL,   named_destroy};

/* range: n -> list of ints 0..n-1 */
static ks_status range_process(void *state, ks_node_ctx *ctx) {
    (void)state;
    int64_t n = ks_packet_int(ks_node_input(ctx, 0));
    ks_packet *items[16] = {0};
    ks_status st = KS_STATUS_OK;
    if (n < 0 || n > 16)
        return ks_node_fail(ctx, KS_STATUS_INVALID_ARGUMENT, "n=%lld", (long long)n);
    for (int64_t i = 0; i < n && !st; i++)
        st = ks_packet_create_int(ks_node_allocator(ctx), i, &items[i]);
    ks_packet *list = NULL;
    if (!st) st = ks_packet_create_list(ks_node_allocator(ctx), items, (uint32_t)n, &list);
    for (int64_t i = 0; i < n; i++)
        ks_packet_release(items[i]);
    if (st) return st;
    return ks_node_output(ctx, 0, list);
}

static ks_status no_state_create(const ks_node_init *init, void **state_out) {
    (void)init;
    *state_out = NULL;
    return KS_STATUS_OK;
}

static const ks_port range_in[] = {{"n", KS_PACKET_INT, KS_PACKET_ANY, 0, -1}};
static const ks_port range_out[] = {{"items", KS_PACKET_LIST, KS_PACKET_INT, 0, -1}};
static const ks_node_type range_type = {
    "test_range", 1, 1, range_in, range_out, no_state_create, range_process, NULL, NULL, NULL};

/* is_odd: int -> bool */
static ks_status odd_process(void *state, ks_node_ctx *ctx) {
    (void)state;
    ks_packet *p = NULL;
    ks_status st = ks_packet_create_bool(ks_node_allocator(ctx),
                                         (int)(ks_packet_int(ks_node_input(ctx, 0)) & 1), &p);
    return st ? st : ks_node_output(ctx, 0, p);
}

static const ks_port odd_out[] = {{"odd", KS_PACKET_BOOL, KS_PACKET_ANY, 0, -1}};
static const ks_node_type odd_type = {"test_is_odd",   1,           1,    range_in, odd_out,
                                      no_state_create, odd_process, NULL, NULL,     NULL};

/* to_float: int -> float (a producer of a type the int ports reject) */
static ks_status tofloat_process(void *state, ks_node_ctx *ctx) {
    (void)state;
    ks_packet *p = NULL;
    ks_status st = ks_packet_create_float(ks_node_allocator(ctx),
                                          (double)ks_packet_int(ks_node_input(ctx, 0)), &p);
    return st ? st : ks_node_output(ctx, 0, p);
}

static const ks_port tofloat_out[] = {{"f", KS_PACKET_FLOAT, KS_PACKET_ANY, 0, -1}};
static const ks_node_type tofloat_type = {
    "test_to_float", 1,    1,    range_in, tofloat_out, no_state_create,
    tofloat_process, NULL, NULL, NULL};

static int setup(void **state) {
    (void)state;
    static int done;
    if (!done) {
        assert_int_equal(ks_node_type_register(&add_type), KS_STATUS_OK);
        assert_int_equal(ks_node_type_register(&range_type), KS_STATUS_OK);
        assert_int_equal(ks_node_type_register(&odd_type), KS_STATUS_OK);
        assert_int_equal(ks_node_type_register(&tofloat_type), KS_STATUS_OK);
        done = 1;
    }
    return 0;
}

/* ---- helpers ---- */

static ks_pipeline *make(const char *json) {
    ks_pipeline *p = NULL;
    ks_status st = ks_pipeline_create_json(json, strlen(json), NULL, &p);
    if (st) fail_msg("create failed: %s: %s", ks_status_string(st), ks_last_error(NULL));
    return p;
}

static void expect_error(const char *json, ks_status want, const char *frag1, const char *frag2) {
    ks_pipeline *p = NULL;
    ks_status st = ks_pipeline_create_json(json, strlen(json), NULL, &p);
    const char *msg = ks_last_error(NULL);
    if (st != want || !strstr(msg, frag1) || (frag2 && !strstr(msg, frag2)))
        fail_msg("got %s '%s'; want %s with '%s' and '%s'", ks_status_string(st), msg,
                 ks_status_string(want), frag1, frag2 ? frag2 : "");
    assert_null(p);
}

/* Runs one frame with int inputs (INT64_MIN: no packet), returns int outputs (INT64_MIN: none). */
static void run_ints(ks_pipeline *p, const int64_t *in, int64_t ts, int64_t *out) {
    const ks_packet *ins[8] = {0};
    ks_packet *outs[8] = {0};
    for (uint32_t i = 0; i < ks_pipeline_num_inputs(p); i++)
        if (in[i] != INT64_MIN)
            assert_int_equal(ks_packet_create_int(NULL, in[i], (ks_packet **)&ins[i]), 0);
    ks_status st = ks_pipeline_process(p, ins, ts, outs);
    if (st) fail_msg("process: %s", ks_last_error(p));
    for (uint32_t i = 0; i < ks_pipeline_num_inputs(p); i++)
        ks_packet_release(ins[i]);
    for (uint32_t i = 0; i < ks_pipeline_num_outputs(p); i++) {
        out[i] = outs[i] ? ks_packet_int(outs[i]) : INT64_MIN;
        if (outs[i]) assert_int_equal(ks_packet_timestamp_us(outs[i]) <= ts, 1);
        ks_packet_release(outs[i]);
    }
}

/* ---- validation ---- */

static void test_validation_errors(void **state) {
    (void)state;
    expect_error("{\"nodes\":[{\"type\":\"nope\",\"name\":\"n1\"}]}", KS_STATUS_INVALID_ARGUMENT,
                 "node 'n1'", "unknown node type 'nope'");
    expect_error("{\"inputs\":[\"x\"],\"nodes\":[{\"type\":\"test_add\",\"name\":\"a\","
                 "\"inputs\":[\"y\"],\"outputs\":[\"s\"]}]}",
                 KS_STATUS_INVALID_ARGUMENT, "node 'a' input 0 ('a')", "unknown stream 'y'");
    expect_error("{\"inputs\":[\"x\"],\"nodes\":["
                 "{\"type\":\"test_add\",\"name\":\"a\",\"inputs\":[\"x\"],\"outputs\":[\"s\"]},"
                 "{\"type\":\"test_add\",\"name\":\"b\",\"inputs\":[\"x\"],\"outputs\":[\"s\"]}]}",
                 KS_STATUS_INVALID_ARGUMENT, "stream 's' is produced twice", "node 'b'");
    expect_error("{\"inputs\":[\"x\"],\"nodes\":["
                 "{\"type\":\"test_add\",\"name\":\"a\",\"inputs\":[\"x\"],\"outputs\":[\"x\"]}]}",
                 KS_STATUS_INVALID_ARGUMENT, "stream 'x' is produced twice", "graph inputs");
    expect_error(
        "{\"inputs\":[\"x\"],\"nodes\":["
        "{\"type\":\"test_to_float\",\"name\":\"f\",\"inputs\":[\"x\"],\"outputs\":[\"y\"]},"
        "{\"type\":\"test_add\",\"name\":\"a\",\"inputs\":[\"y\"],\"outputs\":[\"s\"]}]}",
        KS_STATUS_INVALID_ARGUMENT, "type mismatch: node 'a' input 0 ('a') takes int",
        "stream 'y' from node 'f' output 0 is float");
    /* a type flowing through a pass-through node (gate) is still checked */
    expect_error(
        "{\"inputs\":[\"x\",\"ok\"],\"nodes\":["
        "{\"type\":\"test_to_float\",\"name\":\"f\",\"inputs\":[\"x\"],\"outputs\":[\"y\"]},"
        "{\"type\":\"gate\",\"name\":\"g\",\"inputs\":[\"y\",\"ok\"],\"outputs\":[\"z\"]},"
        "{\"type\":\"test_add\",\"name\":\"a\",\"inputs\":[\"z\"],\"outputs\":[\"s\"]}]}",
        KS_STATUS_INVALID_ARGUMENT, "node 'a'", "stream 'z' from node 'g' output 0 is float");
    expect_error(
        "{\"inputs\":[\"x\"],\"nodes\":["
        "{\"type\":\"test_add\",\"name\":\"a\",\"inputs\":[\"x\",\"t\"],\"outputs\":[\"s\"]},"
        "{\"type\":\"test_add\",\"name\":\"b\",\"inputs\":[\"s\"],\"outputs\":[\"t\"]}]}",
        KS_STATUS_INVALID_ARGUMENT, "cycle without a 'previous' node", "stream 't'");
    expect_error("{\"inputs\":[\"x\"],\"nodes\":["
                 "{\"type\":\"test_add\",\"name\":\"a\",\"inputs\":[],\"outputs\":[\"s\"]}]}",
                 KS_STATUS_INVALID_ARGUMENT, "node 'a' (type 'test_add') has 0 inputs", NULL);
    expect_error("{\"outputs\":[\"q\"],\"nodes\":[]}", KS_STATUS_INVALID_ARGUMENT,
                 "graph output 'q'", "unknown stream");
    expect_error("{\"nodes\":[{\"type\":\"infer\",\"name\":\"det\",\"inputs\":[],"
                 "\"outputs\":[\"t\"],\"options\":{\"model\":\"/nonexistent/m.ksm\"}}]}",
                 KS_STATUS_IO_ERROR, "node 'det' (type 'infer')",
                 "missing model '/nonexistent/m.ksm'");
    expect_error("{\"nodes\":[{\"type\":\"infer\",\"name\":\"det\",\"inputs\":[],"
                 "\"outputs\":[\"t\"],\"options\":{\"model\":\"m.ksm\",\"precision\":\"int4\"}}]}",
                 KS_STATUS_INVALID_ARGUMENT, "node 'det' (type 'infer')",
                 "option 'precision' is 'int4'; use stored, f32 or fastest");
    {
        const char *j = "{\"nodes\":[]}";
        ks_pipeline *p = NULL;
        ks_pipeline_desc d = {.precision = KS_PRECISION_COUNT};
        assert_int_equal(ks_pipeline_create_json(j, strlen(j), &d, &p), KS_STATUS_INVALID_ARGUMENT);
        assert_non_null(strstr(ks_last_error(NULL), "ks_pipeline_desc.precision"));
        assert_null(p);
    }
    expect_error(
        "{\"nodes\":[{\"type\":\"gate\",\"name\":\"g\",\"inputs\":[\"a\",\"b\"],"
        "\"outputs\":[\"c\"],\"options\":{\"invert\":\"$flag\"}}],\"inputs\":[\"a\",\"b\"]}",
        KS_STATUS_INVALID_ARGUMENT, "node 'g'", "unknown side parameter 'flag'");
    expect_error("{\"nodes\":[{\"type\":\"test_add\",\"name\":\"a\",\"inputs\":[\"x\"],"
                 "\"outputs\":[\"s\"],\"options\":{\"bias\":1.5}}],\"inputs\":[\"x\"]}",
                 KS_STATUS_INVALID_ARGUMENT, "node 'a'", "option 'bias' must be an integer");
    expect_error("{\"nodes\":[{\"type\":\"merge\",\"name\":\"a\",\"outputs\":[\"o1\"]},"
                 "{\"type\":\"merge\",\"name\":\"a\",\"outputs\":[\"o2\"]}]}",
                 KS_STATUS_INVALID_ARGUMENT, "node name 'a' is used twice", NULL);
    expect_error("{\"nodes\":[", KS_STATUS_INVALID_ARGUMENT, "malformed JSON", NULL);
    expect_error("[1]", KS_STATUS_INVALID_ARGUMENT, "must be a JSON object", NULL);

    /* depth limit */
    char deep[256];
    size_t n = 0;
    n += (size_t)snprintf(deep, sizeof(deep), "{\"nodes\":[],\"x\":");
    for (int i = 0; i < 40; i++)
        deep[n++] = '[';
    for (int i = 0; i < 40; i++)
        deep[n++] = ']';
    deep[n++] = '}';
    deep[n] = '\0';
    expect_error(deep, KS_STATUS_LIMIT_EXCEEDED, "KS_PIPELINE_MAX_JSON_DEPTH", NULL);
    /* brackets inside strings do not count */
    char shallow[256];
    n = (size_t)snprintf(shallow, sizeof(shallow), "{\"nodes\":[],\"x\":\"");
    for (int i = 0; i < 40; i++)
        shallow[n++] = '[';
    snprintf(shallow + n, sizeof(shallow) - n, "\"}");
    ks_pipeline_destroy(make(shallow));

    /* document size limit */
    size_t big_n = KS_PIPELINE_MAX_JSON_BYTES + 16;
    char *big = malloc(big_n);
    assert_non_null(big);
    memset(big, ' ', big_n);
    memcpy(big, "{\"nodes\":[]}", 12);
    ks_pipeline *p = NULL;
    assert_int_equal(ks_pipeline_create_json(big, big_n, NULL, &p), KS_STATUS_LIMIT_EXCEEDED);
    assert_non_null(strstr(ks_last_error(NULL), "KS_PIPELINE_MAX_JSON_BYTES"));
    free(big);

    /* registry */
    assert_int_equal(ks_node_type_register(&add_type), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(NULL), "already registered"));
    ks_node_type clash = add_type;
    clash.name = "gate";
    assert_int_equal(ks_node_type_register(&clash), KS_STATUS_INVALID_ARGUMENT);
}

/* ---- control flow ---- */

static void test_previous_loop(void **state) {
    (void)state;
    /* running sum: sum = x + previous(sum) */
    ks_pipeline *p = make("{\"inputs\":[\"x\"],\"outputs\":[\"sum\",\"prev\"],\"nodes\":["
                          "{\"type\":\"previous\",\"name\":\"loop\",\"inputs\":[\"sum\"],"
                          "\"outputs\":[\"prev\"]},"
                          "{\"type\":\"test_add\",\"name\":\"acc\",\"inputs\":[\"x\",\"prev\"],"
                          "\"outputs\":[\"sum\"]}]}");
    int64_t out[2];
    int64_t want_sum[] = {1, 3, 6, 10}, want_prev[] = {INT64_MIN, 1, 3, 6};
    for (int f = 0; f < 4; f++) {
        int64_t in[1] = {f + 1};
        run_ints(p, in, 1000 * (f + 1), out);
        assert_int_equal(out[0], want_sum[f]);
        assert_int_equal(out[1], want_prev[f]);
    }
    /* timestamps must increase */
    const ks_packet *none[1] = {NULL};
    ks_packet *outs[2];
    assert_int_equal(ks_pipeline_process(p, none, 4000, outs), KS_STATUS_INVALID_STATE);
    assert_non_null(strstr(ks_last_error(p), "timestamp 4000"));
    /* reset forgets the loop */
    ks_pipeline_reset(p);
    int64_t in[1] = {5};
    run_ints(p, in, 1, out);
    assert_int_equal(out[0], 5);
    ks_node_stats st;
    assert_int_equal(ks_pipeline_num_nodes(p), 2);
    assert_int_equal(ks_pipeline_node_stats(p, 1, &st), KS_STATUS_OK);
    assert_string_equal(st.node_name, "acc");
    assert_int_equal(st.num_calls, 5);
    assert_true(st.max_us <= st.total_us);
    ks_pipeline_destroy(p);
}

static void test_foreach_collect(void **state) {
    (void)state;
    /* per item: item + k + 10 where k is broadcast */
    ks_pipeline *p =
        make("{\"inputs\":[\"n\",\"k\"],\"outputs\":[\"results\",\"odd\"],\"nodes\":["
             "{\"type\":\"test_range\",\"inputs\":[\"n\"],\"outputs\":[\"items\"]},"
             "{\"type\":\"foreach\",\"name\":\"each\",\"inputs\":[\"items\",\"k\"],"
             "\"outputs\":[\"results\",\"odd\"],\"options\":{\"graph\":{"
             "\"name\":\"per_item\",\"inputs\":[\"item\",\"k\"],\"outputs\":[\"r\",\"kept\"],"
             "\"nodes\":[{\"type\":\"test_add\",\"inputs\":[\"item\",\"k\"],\"outputs\":[\"r\"],"
             "\"options\":{\"bias\":10}},"
             "{\"type\":\"test_is_odd\",\"inputs\":[\"item\"],\"outputs\":[\"o\"]},"
             "{\"type\":\"gate\",\"inputs\":[\"item\",\"o\"],\"outputs\":[\"kept\"]}]}}}]}");
    const ks_packet *ins[2] = {0};
    ks_packet *outs[2] = {0};
    ks_packet *n = NULL, *k = NULL;
    assert_int_equal(ks_packet_create_int(NULL, 5, &n), 0);
    assert_int_equal(ks_packet_create_int(NULL, 100, &k), 0);
    ins[0] = n;
    ins[1] = k;
    assert_int_equal(ks_pipeline_process(p, ins, 1, outs), KS_STATUS_OK);
    assert_int_equal(ks_packet_list_size(outs[0]), 5);
    for (uint32_t i = 0; i < 5; i++)
        assert_int_equal(ks_packet_int(ks_packet_list_item(outs[0], i)), 110 + i);
    /* gated items are left out of the collected list */
    assert_int_equal(ks_packet_list_size(outs[1]), 2);
    assert_int_equal(ks_packet_int(ks_packet_list_item(outs[1], 0)), 1);
    assert_int_equal(ks_packet_int(ks_packet_list_item(outs[1], 1)), 3);
    ks_packet_release(outs[0]);
    ks_packet_release(outs[1]);
    ks_packet_release(n);
    /* empty list: empty collections */
    assert_int_equal(ks_packet_create_int(NULL, 0, &n), 0);
    ins[0] = n;
    assert_int_equal(ks_pipeline_process(p, ins, 2, outs), KS_STATUS_OK);
    assert_int_equal(ks_packet_get_type(outs[0]), KS_PACKET_LIST);
    assert_int_equal(ks_packet_list_size(outs[0]), 0);
    ks_packet_release(outs[0]);
    ks_packet_release(outs[1]);
    ks_packet_release(n);
    ks_packet_release(k);
    ks_pipeline_destroy(p);

    /* subgraph errors name the subgraph's node */
    expect_error("{\"inputs\":[\"l\"],\"nodes\":[{\"type\":\"foreach\",\"name\":\"each\","
                 "\"inputs\":[\"l\"],\"outputs\":[\"o\"],\"options\":{\"graph\":{"
                 "\"inputs\":[\"i\"],\"outputs\":[\"r\"],\"nodes\":[{\"type\":\"bogus\","
                 "\"name\":\"inner\"}]}}}]}",
                 KS_STATUS_INVALID_ARGUMENT, "node 'each'", "node 'inner': unknown node type");
    expect_error("{\"inputs\":[\"l\"],\"nodes\":[{\"type\":\"foreach\",\"name\":\"each\","
                 "\"inputs\":[\"l\"],\"outputs\":[\"o\"],\"options\":{\"graph\":{"
                 "\"inputs\":[\"i\",\"j\"],\"outputs\":[\"i\"],\"nodes\":[]}}}]}",
                 KS_STATUS_INVALID_ARGUMENT, "node 'each'", "has 2 inputs and 1 outputs");
}

static void test_gate_switch_merge(void **state) {
    (void)state;
    /* odd x goes through branch 1 (+100), even x through branch 0 (+1); gate passes x when odd */
    ks_pipeline *p =
        make("{\"inputs\":[\"x\",\"sel\"],\"outputs\":[\"joined\",\"gated\",\"inverted\"],"
             "\"nodes\":["
             "{\"type\":\"switch\",\"name\":\"sw\",\"inputs\":[\"sel\",\"x\"],"
             "\"outputs\":[\"b0\",\"b1\"]},"
             "{\"type\":\"test_add\",\"name\":\"p0\",\"inputs\":[\"b0\"],\"outputs\":[\"r0\"],"
             "\"options\":{\"bias\":1}},"
             "{\"type\":\"test_add\",\"name\":\"p1\",\"inputs\":[\"b1\"],\"outputs\":[\"r1\"],"
             "\"options\":{\"bias\":100}},"
             "{\"type\":\"merge\",\"inputs\":[\"r0\",\"r1\"],\"outputs\":[\"joined\"]},"
             "{\"type\":\"test_is_odd\",\"inputs\":[\"x\"],\"outputs\":[\"odd\"]},"
             "{\"type\":\"gate\",\"inputs\":[\"x\",\"odd\"],\"outputs\":[\"gated\"]},"
             "{\"type\":\"gate\",\"inputs\":[\"x\",\"odd\"],\"outputs\":[\"inverted\"],"
             "\"options\":{\"invert\":true}}]}");
    int64_t out[3];
    int64_t in[2] = {3, 1};
    run_ints(p, in, 1, out);
    assert_int_equal(out[0], 103);
    assert_int_equal(out[1], 3);
    assert_int_equal(out[2], INT64_MIN);
    in[0] = 4;
    in[1] = 0;
    run_ints(p, in, 2, out);
    assert_int_equal(out[0], 5);
    assert_int_equal(out[1], INT64_MIN);
    assert_int_equal(out[2], 4);
    in[1] = 7; /* out of range select: nothing flows */
    run_ints(p, in, 3, out);
    assert_int_equal(out[0], INT64_MIN);
    in[0] = INT64_MIN; /* absent input: dependents do not run */
    in[1] = 0;
    run_ints(p, in, 4, out);
    assert_int_equal(out[0], INT64_MIN);
    assert_int_equal(out[1], INT64_MIN);
    ks_pipeline_destroy(p);
}

static void test_flow_limiter_and_has_packet(void **state) {
    (void)state;
    ks_pipeline *p = make("{\"inputs\":[\"x\"],\"outputs\":[\"y\",\"present\"],\"nodes\":["
                          "{\"type\":\"flow_limiter\",\"inputs\":[\"x\",\"y\"],"
                          "\"outputs\":[\"y\"],\"options\":{\"max_in_flight\":1}},"
                          "{\"type\":\"has_packet\",\"inputs\":[\"x\"],\"outputs\":[\"h\"]},"
                          "{\"type\":\"gate\",\"inputs\":[\"h\",\"h\"],\"outputs\":[\"present\"]}"
                          "]}");
    /* synchronous runtime: every frame completes, so nothing is ever dropped */
    for (int f = 0; f < 5; f++) {
        int64_t in[1] = {f}, out[2];
        run_ints(p, in, f + 1, out);
        assert_int_equal(out[0], f);
    }
    ks_pipeline_destroy(p);
    expect_error("{\"inputs\":[\"x\"],\"nodes\":[{\"type\":\"flow_limiter\",\"name\":\"fl\","
                 "\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"options\":{\"max_in_flight\":0}}]}",
                 KS_STATUS_INVALID_ARGUMENT, "node 'fl'", "max_in_flight");
}

static void test_deterministic_order(void **state) {
    (void)state;
    /* JSON order is d, c, b, a; data dependencies force a before b; the rest keeps JSON order */
    const char *json =
        "{\"inputs\":[\"x\"],\"outputs\":[\"sb\"],\"nodes\":["
        "{\"type\":\"test_add\",\"name\":\"d\",\"inputs\":[\"x\"],\"outputs\":[\"sd\"]},"
        "{\"type\":\"test_add\",\"name\":\"c\",\"inputs\":[\"sd\"],\"outputs\":[\"sc\"]},"
        "{\"type\":\"test_add\",\"name\":\"b\",\"inputs\":[\"sa\"],\"outputs\":[\"sb\"]},"
        "{\"type\":\"test_add\",\"name\":\"a\",\"inputs\":[\"x\"],\"outputs\":[\"sa\"]}]}";
    for (int rep = 0; rep < 3; rep++) {
        ks_pipeline *p = make(json);
        for (int f = 0; f < 2; f++) {
            g_trace[0] = '\0';
            int64_t in[1] = {1}, out[1];
            run_ints(p, in, f + 1, out);
            assert_string_equal(g_trace, "d c a b ");
        }
        ks_node_stats st;
        assert_int_equal(ks_pipeline_node_stats(p, 2, &st), KS_STATUS_OK);
        assert_string_equal(st.node_name, "a");
        assert_int_equal(ks_pipeline_node_stats(p, 9, &st), KS_STATUS_INVALID_ARGUMENT);
        ks_pipeline_destroy(p);
    }
}

/* ks_pipeline_set_output_needed: nodes that only feed unread outputs idle; inside a foreach too;
 * a loop keeps what it reads. */
static void test_output_demand(void **state) {
    (void)state;
    ks_pipeline *p = make("{\"inputs\":[\"x\"],\"outputs\":[\"y\",\"z\"],\"nodes\":["
                          "{\"type\":\"test_add\",\"name\":\"a\",\"inputs\":[\"x\"],"
                          "\"outputs\":[\"sa\"]},"
                          "{\"type\":\"test_add\",\"name\":\"b\",\"inputs\":[\"sa\"],"
                          "\"outputs\":[\"y\"]},"
                          "{\"type\":\"test_add\",\"name\":\"c\",\"inputs\":[\"sa\"],"
                          "\"outputs\":[\"sc\"]},"
                          "{\"type\":\"test_add\",\"name\":\"d\",\"inputs\":[\"sc\"],"
                          "\"outputs\":[\"z\"],\"options\":{\"bias\":5}}]}");
    assert_int_equal(ks_pipeline_set_output_needed(p, 2, 0), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(p), "out of range"));
    assert_int_equal(ks_pipeline_set_output_needed(NULL, 0, 0), KS_STATUS_INVALID_ARGUMENT);
    const char *want_trace[3] = {"a b c d ", "a b ", "a b c d "};
    for (int pass = 0; pass < 3; pass++) {
        assert_int_equal(ks_pipeline_set_output_needed(p, 1, pass != 1), KS_STATUS_OK);
        g_trace[0] = '\0';
        int64_t in[1] = {2}, out[2];
        run_ints(p, in, pass + 1, out);
        assert_string_equal(g_trace, want_trace[pass]);
        assert_int_equal(out[0], 2);
        assert_int_equal(out[1], pass == 1 ? INT64_MIN : 7);
    }
    /* neither output needed: nothing runs */
    assert_int_equal(ks_pipeline_set_output_needed(p, 0, 0), KS_STATUS_OK);
    assert_int_equal(ks_pipeline_set_output_needed(p, 1, 0), KS_STATUS_OK);
    g_trace[0] = '\0';
    int64_t in[1] = {2}, out[2];
    run_ints(p, in, 10, out);
    assert_string_equal(g_trace, "");
    assert_int_equal(out[0], INT64_MIN);
    ks_pipeline_destroy(p);

    /* a loop: 'prev' not needed as an output, but acc reads it, so it still runs */
    p = make("{\"inputs\":[\"x\"],\"outputs\":[\"sum\",\"prev\"],\"nodes\":["
             "{\"type\":\"previous\",\"name\":\"loop\",\"inputs\":[\"sum\"],"
             "\"outputs\":[\"prev\"]},"
             "{\"type\":\"test_add\",\"name\":\"acc\",\"inputs\":[\"x\",\"prev\"],"
             "\"outputs\":[\"sum\"]}]}");
    assert_int_equal(ks_pipeline_set_output_needed(p, 1, 0), KS_STATUS_OK);
    int64_t want_sum[] = {1, 3, 6};
    for (int f = 0; f < 3; f++) {
        int64_t x[1] = {f + 1};
        run_ints(p, x, f + 1, out);
        assert_int_equal(out[0], want_sum[f]);
        assert_int_equal(out[1], INT64_MIN);
    }
    ks_pipeline_destroy(p);

    /* foreach: the unread subgraph output's nodes idle; the read one is still collected */
    p = make("{\"inputs\":[\"n\",\"k\"],\"outputs\":[\"results\",\"odd\"],\"nodes\":["
             "{\"type\":\"test_range\",\"inputs\":[\"n\"],\"outputs\":[\"items\"]},"
             "{\"type\":\"foreach\",\"name\":\"each\",\"inputs\":[\"items\",\"k\"],"
             "\"outputs\":[\"results\",\"odd\"],\"options\":{\"graph\":{"
             "\"name\":\"per_item\",\"inputs\":[\"item\",\"k\"],\"outputs\":[\"r\",\"kept\"],"
             "\"nodes\":[{\"type\":\"test_add\",\"inputs\":[\"item\",\"k\"],\"outputs\":[\"r\"],"
             "\"options\":{\"bias\":10}},"
             "{\"type\":\"test_is_odd\",\"name\":\"odd\",\"inputs\":[\"item\"],"
             "\"outputs\":[\"o\"]},"
             "{\"type\":\"gate\",\"inputs\":[\"item\",\"o\"],\"outputs\":[\"kept\"]}]}}}]}");
    assert_int_equal(ks_pipeline_set_output_needed(p, 1, 0), KS_STATUS_OK);
    const ks_packet *ins[2] = {0};
    ks_packet *outs[2] = {0};
    ks_packet *n = NULL, *k = NULL;
    assert_int_equal(ks_packet_create_int(NULL, 4, &n), 0);
    assert_int_equal(ks_packet_create_int(NULL, 100, &k), 0);
    ins[0] = n;
    ins[1] = k;
    assert_int_equal(ks_pipeline_process(p, ins, 1, outs), KS_STATUS_OK);
    assert_int_equal(ks_packet_list_size(outs[0]), 4);
    assert_int_equal(ks_packet_int(ks_packet_list_item(outs[0], 3)), 113);
    assert_null(outs[1]);
    ks_packet_release(outs[0]);
    const ks_pipeline *child = NULL;
    for (uint32_t j = 0; j < ks_pipeline_num_nodes(p) && !child; j++)
        child = ks_pipeline_node_subgraph(p, j);
    assert_non_null(child);
    uint32_t odd_calls = 99, add_calls = 0;
    for (uint32_t j = 0; j < ks_pipeline_num_nodes(child); j++) {
        ks_node_stats st;
        assert_int_equal(ks_pipeline_node_stats(child, j, &st), KS_STATUS_OK);
        if (strcmp(st.node_name, "odd") == 0) odd_calls = (uint32_t)st.num_calls;
        if (strcmp(st.type_name, "test_add") == 0) add_calls = (uint32_t)st.num_calls;
    }
    assert_int_equal(odd_calls, 0);
    assert_int_equal(add_calls, 4);
    /* needed again: collected as before */
    assert_int_equal(ks_pipeline_set_output_needed(p, 1, 1), KS_STATUS_OK);
    assert_int_equal(ks_pipeline_process(p, ins, 2, outs), KS_STATUS_OK);
    assert_int_equal(ks_packet_list_size(outs[1]), 2);
    ks_packet_release(outs[0]);
    ks_packet_release(outs[1]);
    ks_packet_release(n);
    ks_packet_release(k);
    ks_pipeline_destroy(p);
}

static void test_side_params(void **state) {
    (void)state;
    const char *json = "{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"side_params\":{\"b\":2},"
                       "\"nodes\":[{\"type\":\"test_add\",\"inputs\":[\"x\"],\"outputs\":[\"y\"],"
                       "\"options\":{\"bias\":\"$b\"}}]}";
    ks_pipeline *p = make(json);
    int64_t in[1] = {1}, out[1];
    run_ints(p, in, 1, out);
    assert_int_equal(out[0], 3);
    ks_pipeline_destroy(p);
    ks_side_param sp[1] = {{"b", "40"}};
    p = NULL;
    assert_int_equal(
        ks_pipeline_create_json(json, strlen(json),
                                &(ks_pipeline_desc){.side_params = sp, .num_side_params = 1}, &p),
        KS_STATUS_OK);
    run_ints(p, in, 1, out);
    assert_int_equal(out[0], 41);
    assert_int_equal(ks_pipeline_input_index(p, "x"), 0);
    assert_int_equal(ks_pipeline_output_index(p, "nope"), -1);
    assert_string_equal(ks_pipeline_output_name(p, 0), "y");
    /* a packet of the wrong type on a typed graph input is refused */
    ks_pipeline_destroy(p);
    p = make("{\"inputs\":[{\"name\":\"x\",\"type\":\"int\"}],\"nodes\":[]}");
    ks_packet *f = NULL;
    assert_int_equal(ks_packet_create_float(NULL, 1.0, &f), 0);
    const ks_packet *ins[1] = {f};
    assert_int_equal(ks_pipeline_process(p, ins, 1, NULL), KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ks_last_error(p), "input 0 ('x') is declared int"));
    ks_packet_release(f);
    ks_pipeline_destroy(p);
}

/* ---- OOM injection ---- */

typedef struct fail_alloc {
    int64_t fail_at; /* allocation index that fails */
    int64_t count;
    int64_t live;
} fail_alloc;

static void *fa_alloc(void *user, size_t size, size_t align) {
    fail_alloc *f = user;
    if (f->count++ == f->fail_at) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1))
        return NULL;
    f->live++;
    return p;
}

static void fa_free(void *user, void *p) {
    fail_alloc *f = user;
    if (p) f->live--;
    free(p);
}

static void test_oom_create(void **state) {
    (void)state;
    const char *json =
        "{\"inputs\":[\"n\",\"x\"],\"outputs\":[\"results\",\"sum\"],\"side_params\":{\"b\":1},"
        "\"nodes\":["
        "{\"type\":\"previous\",\"inputs\":[\"sum\"],\"outputs\":[\"prev\"]},"
        "{\"type\":\"test_add\",\"inputs\":[\"x\",\"prev\"],\"outputs\":[\"sum\"],"
        "\"options\":{\"bias\":\"$b\"}},"
        "{\"type\":\"test_range\",\"inputs\":[\"n\"],\"outputs\":[\"items\"]},"
        "{\"type\":\"foreach\",\"inputs\":[\"items\"],\"outputs\":[\"results\"],"
        "\"options\":{\"graph\":{\"inputs\":[\"i\"],\"outputs\":[\"r\"],\"nodes\":["
        "{\"type\":\"test_add\",\"inputs\":[\"i\"],\"outputs\":[\"r\"]}]}}}]}";
    int ok = 0;
    for (int64_t k = 0; k < 2000 && !ok; k++) {
        fail_alloc fa = {.fail_at = k};
        ks_allocator a = {fa_alloc, fa_free, &fa};
        ks_pipeline *p = NULL;
        ks_status st =
            ks_pipeline_create_json(json, strlen(json), &(ks_pipeline_desc){.allocator = &a}, &p);
        if (st == KS_STATUS_OK) {
            ok = 1;
            /* and a frame under the same allocator, failing at every later allocation too */
            for (int64_t j = 0; j < 40; j++) {
                fa.fail_at = fa.count + j;
                ks_packet *n = NULL, *x = NULL;
                if (ks_packet_create_int(&a, 3, &n) || ks_packet_create_int(&a, 1, &x)) {
                    ks_packet_release(n);
                    ks_packet_release(x);
                    continue;
                }
                const ks_packet *ins[2] = {n, x};
                ks_packet *outs[2] = {0};
                ks_status ps = ks_pipeline_process(p, ins, j + 1, outs);
                assert_true(ps == KS_STATUS_OK || ps == KS_STATUS_OUT_OF_MEMORY);
                ks_packet_release(outs[0]);
                ks_packet_release(outs[1]);
                ks_packet_release(n);
                ks_packet_release(x);
            }
            ks_pipeline_destroy(p);
        } else {
            if (st != KS_STATUS_OUT_OF_MEMORY)
                fail_msg("allocation %lld: %s: %s", (long long)k, ks_status_string(st),
                         ks_last_error(NULL));
            assert_null(p);
        }
        assert_int_equal(fa.live, 0);
    }
    assert_true(ok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validation_errors),
        cmocka_unit_test(test_previous_loop),
        cmocka_unit_test(test_foreach_collect),
        cmocka_unit_test(test_gate_switch_merge),
        cmocka_unit_test(test_flow_limiter_and_has_packet),
        cmocka_unit_test(test_deterministic_order),
        cmocka_unit_test(test_output_demand),
        cmocka_unit_test(test_side_params),
        cmocka_unit_test(test_oom_create),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
