/* Internal layout shared by the pipeline sources. Not a published API. */
#ifndef KESTREL_PIPELINE_INTERNAL_H
#define KESTREL_PIPELINE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>

#include <cjson/cJSON.h>

#include "src/common.h"
#include "kestrel/bundle.h"
#include "kestrel/pipeline.h"

/* ---- packets ---- */
struct ks_packet {
    atomic_uint refcount;
    ks_packet_type type;
    bool published;
    int64_t timestamp_us;
    ks_allocator alloc;
    size_t payload_bytes; /* what ks_packet_mutable_data exposes */
    void *payload;
    /* Image views (u.image.format KS_PIXEL_EXTERNAL): the caller's frame, not owned. */
    ks_image frame;
    ks_rotation frame_rotation;
    int32_t frame_mirror;
    union {
        ks_packet_image image;
        ks_tensor tensor;
        ks_packet_detections detections;
        ks_packet_landmarks landmarks;
        ks_packet_rects rects;
        ks_packet_mask mask;
        float matrix[16];
        int64_t i;
        double f;
        int b;
        const char *s;
        struct {
            uint32_t num_items;
            ks_packet **items;
        } list;
    } u;
};

void ks__packet_stamp(ks_packet *p, int64_t timestamp_us);
/* An image packet that refers to a caller's frame (ks_packet_create_image_view). */
bool ks__packet_is_view(const ks_packet *p);

/* ---- per-graph block pool (blockpool.c) ---- */
/* A caching allocator over `backing` (the app's): freed blocks wait on per-size free lists for
 * the next frame instead of going back. Thread-safe. The pool lives until ks__blockpool_release and
 * the return of the last block it handed out. */
typedef struct ks__blockpool ks__blockpool;
typedef struct ks__blockpool_stats {
    uint64_t num_backing_allocs; /* blocks taken from the backing allocator */
    uint64_t num_reused;         /* requests served from the free lists */
} ks__blockpool_stats;
ks_status ks__blockpool_create(const ks_allocator *backing, ks__blockpool **out);
ks_allocator ks__blockpool_allocator(ks__blockpool *pool);
ks__blockpool_stats ks__blockpool_stats_get(ks__blockpool *pool);
void ks__blockpool_release(ks__blockpool *pool);

/* ---- options ---- */
/* Context passed to foreach through its options (internal). */
typedef struct ks__subgraph_env {
    const cJSON *side;
    const ks_pipeline_desc *desc;
    const ks_bundle *bundle;
    uint32_t depth;
} ks__subgraph_env;

struct ks_node_options {
    const cJSON *json; /* the node's "options" object after side-parameter substitution */
    const ks__subgraph_env *env;
    char *error;
    size_t error_cap;
};

/* ---- node contexts ---- */
typedef struct ks__pnode ks__pnode;
struct ks_node_ctx {
    ks_pipeline *pipeline;
    ks__pnode *node;
    int64_t timestamp_us;
    bool after_frame; /* loopback inputs are visible only after the frame */
};

/* ---- graphs ---- */
typedef struct ks__stream {
    char *name;
    int32_t producer; /* node index, -1 for a graph input */
    uint32_t producer_port;
    ks_packet_type type;
    ks_packet_type elem_type;
    ks_packet *packet; /* this frame's packet, or NULL */
} ks__stream;

struct ks__pnode {
    char *name;
    const ks_node_type *type;
    void *state;
    uint32_t num_inputs, num_outputs;
    int32_t *inputs;  /* stream ids; -1 for an unconnected optional input */
    int32_t *outputs; /* stream ids; -1 for an unused output ("") */
    ks_packet_type *input_types, *output_types;
    uint32_t json_index; /* position in the JSON "nodes" array: the tie-break of the schedule */
    bool idle; /* none of its outputs is needed (ks_pipeline_set_output_needed): skipped */
    uint64_t num_calls, total_us, max_us;
};

struct ks_pipeline {
    ks__object obj; /* must be first: ks_last_error() */
    ks_allocator alloc;
    char *name;
    uint32_t num_streams, cap_streams;
    ks__stream *streams;
    uint32_t num_nodes;
    ks__pnode *nodes; /* in execution order after create */
    uint32_t num_inputs, num_outputs;
    int32_t *inputs, *outputs; /* stream ids */
    bool started;
    int64_t last_timestamp_us;
    bool is_subgraph;       /* foreach children: timestamps may repeat */
    uint8_t *out_needed;    /* per graph output: ks_pipeline_set_output_needed (default 1) */
    uint8_t *stream_needed; /* per stream: read by a needed output or a running node */
    /* Top-level graphs: the pool `alloc` draws from (subgraphs share their root's), and the
     * app's allocator that holds the pipeline struct itself. */
    ks__blockpool *pool;
    ks_allocator app_alloc;
};

/* Builds a pipeline from a parsed graph object. `side` is an object of side parameter values
 * (may be NULL); depth counts foreach nesting. Errors go to err. */
ks_status ks__pipeline_build(const cJSON *graph, const cJSON *side, const ks_pipeline_desc *desc,
                             const ks_bundle *bundle, uint32_t depth, ks_pipeline **out, char *err,
                             size_t err_cap);
/* Runs one frame without the timestamp order check (subgraphs). */
ks_status ks__pipeline_run(ks_pipeline *p, const ks_packet *const *inputs, int64_t timestamp_us,
                           ks_packet **outputs);

/* Parses JSON with the document size and depth limits; name is used in messages. */
ks_status ks__json_parse(const char *text, size_t size_bytes, const char *name, cJSON **out,
                         char *err, size_t err_cap);

/* The one node input that reads output `port` of the running node, when exactly one input port
 * of the graph reads that stream and it is not a graph output: its node type and state go to
 * *type_out and *state_out, the port to *input_out. false otherwise. For nodes that hand their
 * result to the next node in place (image_to_tensor writing into an infer node's session). */
bool ks__node_sole_consumer(const ks_node_ctx *ctx, uint32_t port, const ks_node_type **type_out,
                            void **state_out, uint32_t *input_out);
/* A tensor packet over memory it does not own (NULL data is refused); the memory must outlive
 * the packet. Used for model inputs written in place. */
ks_status ks__packet_create_tensor_view(const ks_allocator *allocator, const ks_tensor_info *info,
                                        void *data, size_t size_bytes, ks_packet **packet_out);
/* A tensor packet whose data is left uninitialized (the caller fills all of it before
 * publishing); ks_packet_create_tensor with NULL data zeroes it instead. */
ks_status ks__packet_create_tensor_uninit(const ks_allocator *allocator, const ks_tensor_info *info,
                                          ks_packet **packet_out);

extern const ks_node_type ks__infer_type;
/* Applies which of an infer node's outputs are read (needed[k] for its num connected outputs;
 * model outputs beyond them are never read): the session computes only what they need, and is
 * re-planned now when that changes. */
ks_status ks__infer_set_needed(void *state, const uint8_t *needed, uint32_t num, char *err,
                               size_t err_cap);

/* ---- built-in node types ---- */
const ks_node_type *ks__builtin_node_type(const char *name);
/* The child pipeline of a foreach node's state, or NULL for other node types. */
const ks_pipeline *ks__node_subgraph(const ks_node_type *type, const void *state);
/* Works out which streams are needed and which nodes idle from p->out_needed, and passes it on
 * to infer nodes and foreach subgraphs (graph.c). Errors go to p's message. */
ks_status ks__pipeline_apply_demand(ks_pipeline *p);
extern const ks_node_type *const ks__builtin_types[];
extern const uint32_t ks__num_builtin_types;

const ks__subgraph_env *ks__options_env(const ks_node_options *options);
const cJSON *ks__options_json(const ks_node_options *options);

/* Bundle internals used by the pipeline builder. */
uint32_t ks__bundle_crc32(uint32_t crc, const uint8_t *data, size_t size_bytes);

#endif /* KESTREL_PIPELINE_INTERNAL_H */
