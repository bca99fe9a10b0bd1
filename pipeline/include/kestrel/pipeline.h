/* Kestrel pipeline graphs: typed packets flowing through nodes, one frame per call.
 *
 * A pipeline chains models with image processing between them (detector -> rotated ROI ->
 * landmark model -> ROI for the next frame). It is described in JSON (docs/pipeline.md), checked
 * once at create (unknown node types and streams, type mismatches, cycles, missing models), and
 * then run deterministically: one call processes one frame, nodes run in a fixed topological
 * order, and the same inputs always give the same outputs.
 *
 * Usage:
 *     ks_pipeline *p = NULL;
 *     if (ks_pipeline_create_json(graph_json, strlen(graph_json), NULL, &p)) {
 *         fprintf(stderr, "%s\n", ks_last_error(NULL));   // names the node and the stream
 *         ...
 *     }
 *     ks_packet *frame = NULL, *out[1] = {NULL};
 *     ks_packet_create_image(NULL, &(ks_packet_image){ .format = KS_PIXEL_RGB8, .width_px = w,
 *                            .height_px = h, .stride_bytes = 3 * w, .data = rgb }, &frame);
 *     const ks_packet *in[1] = {frame};
 *     if (ks_pipeline_process(p, in, timestamp_us, out)) { ... ks_last_error(p) ... }
 *     ks_packet_release(frame);
 *     if (out[0]) { const ks_tensor *t = ks_packet_tensor(out[0]); ...; ks_packet_release(out[0]);
 * } ks_pipeline_destroy(p);
 *
 * Thread safety: a ks_packet is immutable once published (passed to a pipeline or emitted by a
 * node) and its reference count is atomic, so packets may be read and released on any thread.
 * A ks_pipeline is used by one thread at a time; different pipelines may run on different threads.
 * ks_node_type_register may be called from any thread; registered types live for the process.
 *
 * Dependency note: the JSON reader of this library is cJSON (Debian libcjson-dev); it is a
 * dependency of kestrel_pipeline only, never of the engine core. No cJSON type appears here.
 */
#ifndef KESTREL_PIPELINE_H
#define KESTREL_PIPELINE_H

#include "kestrel/engine.h"
#include "kestrel/imgproc.h"
#include "kestrel/kestrel.h"
#include "kestrel/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Named safety limits. Hostile graph documents hit these and get KS_STATUS_LIMIT_EXCEEDED. */
#define KS_PIPELINE_MAX_JSON_BYTES (1u << 20) /* whole graph document */
#define KS_PIPELINE_MAX_JSON_DEPTH 32u        /* nesting of arrays/objects in the document */
#define KS_PIPELINE_MAX_NODES 1024u           /* nodes per graph (each subgraph counts alone) */
#define KS_PIPELINE_MAX_STREAMS 4096u         /* streams per graph */
#define KS_PIPELINE_MAX_PORTS 64u             /* inputs or outputs of one node */
#define KS_PIPELINE_MAX_SUBGRAPH_DEPTH 4u     /* foreach inside foreach ... */
#define KS_PIPELINE_MAX_NAME_BYTES 128u       /* node, stream and side parameter names */
#define KS_PIPELINE_MAX_NODE_TYPES 256u       /* app-registered node types */

/* ---------------------------------------------------------------------------------------------
 * Packets
 * ------------------------------------------------------------------------------------------- */

/* Packet types. Values are stable (append-only). KS_PACKET_ANY only appears in port
 * declarations ("accepts anything"); no packet has it. */
typedef enum ks_packet_type {
    KS_PACKET_ANY = 0,
    KS_PACKET_IMAGE = 1,
    KS_PACKET_TENSOR = 2,
    KS_PACKET_DETECTIONS = 3,
    KS_PACKET_LANDMARKS = 4,
    KS_PACKET_RECTS = 5,
    KS_PACKET_MASK = 6,
    KS_PACKET_MATRIX = 7,
    KS_PACKET_INT = 8,
    KS_PACKET_FLOAT = 9,
    KS_PACKET_BOOL = 10,
    KS_PACKET_STRING = 11,
    KS_PACKET_LIST = 12,
    KS_PACKET_TYPE_COUNT
} ks_packet_type;

/* "image", "tensor", ... as used in graph JSON; "any" for KS_PACKET_ANY; "invalid" otherwise. */
KS_API const char *ks_packet_type_string(ks_packet_type type);

typedef enum ks_pixel_layout {
    KS_PIXEL_INVALID = 0,
    KS_PIXEL_GRAY8 = 1,
    KS_PIXEL_RGB8 = 2,
    KS_PIXEL_RGBA8 = 3,
    KS_PIXEL_BGR8 = 4,
    KS_PIXEL_BGRA8 = 5,
    /* A view of a caller's frame in any ks_image format (ks_packet_create_image_view): data is
     * NULL and width_px x height_px is the upright size; read the pixels through
     * ks_packet_image_source. */
    KS_PIXEL_EXTERNAL = 6,
    KS_PIXEL_LAYOUT_COUNT
} ks_pixel_layout;

/* Bytes per pixel of a layout; 0 for unknown values. */
KS_API uint32_t ks_pixel_layout_bytes(ks_pixel_layout layout);

/* An image view. In a packet, `data` is owned by the packet (NULL for KS_PIXEL_EXTERNAL). */
typedef struct ks_packet_image {
    ks_pixel_layout format;
    int32_t width_px;
    int32_t height_px;
    size_t stride_bytes; /* >= width_px * bytes per pixel; 0 means tightly packed */
    const uint8_t *data;
} ks_packet_image;

/* Detections, as parallel arrays of num_detections entries. Coordinates are normalized to the
 * image (0..1). keypoints holds num_detections x num_keypoints x {x, y}. */
typedef struct ks_packet_detections {
    uint32_t num_detections;
    uint32_t num_keypoints;
    const float *boxes;       /* num_detections x {xmin, ymin, xmax, ymax} */
    const float *scores;      /* num_detections */
    const int32_t *class_ids; /* num_detections */
    const float *keypoints;   /* may be NULL when num_keypoints == 0 */
} ks_packet_detections;

typedef struct ks_landmark {
    float x, y, z; /* x, y normalized to the image; z in the same scale as x */
    float visibility;
    float presence;
} ks_landmark;

typedef struct ks_packet_landmarks {
    uint32_t num_landmarks;
    const ks_landmark *landmarks;
} ks_packet_landmarks;

/* A rotated rectangle in normalized image coordinates; rotation is clockwise in radians. */
typedef struct ks_rect {
    float x_center, y_center;
    float width, height;
    float rotation_rad;
} ks_rect;

typedef struct ks_packet_rects {
    uint32_t num_rects;
    const ks_rect *rects;
} ks_packet_rects;

/* A single-plane mask: dtype is KS_DTYPE_F32 or KS_DTYPE_U8. */
typedef struct ks_packet_mask {
    ks_dtype dtype;
    int32_t width_px;
    int32_t height_px;
    size_t stride_bytes; /* 0 means tightly packed */
    const void *data;
} ks_packet_mask;

typedef struct ks_packet ks_packet;

/* Packet constructors. Each copies its arguments into one allocation owned by the new packet
 * (allocator NULL: malloc), sets the reference count to 1 and writes *packet_out on success.
 * A NULL data pointer gives zeroed contents that may be filled through ks_packet_mutable_data()
 * before the packet is published. Free with ks_packet_release(). */
KS_API ks_status ks_packet_create_image(const ks_allocator *allocator, const ks_packet_image *image,
                                        ks_packet **packet_out);
/* info->name is copied (NULL allowed); every dim must be >= 0. size_bytes follows from the
 * shape and dtype. data may be NULL (zeroed). */
/* A camera frame as an image packet, without copying a pixel: the packet refers to the caller's
 * planes, and every node that reads it samples them through ks_image_to_tensor with the frame's
 * orientation (rotated clockwise by `rotation`, then mirrored left-right when `mirror`), so the
 * graph sees the upright image. ks_packet_image_view gives KS_PIXEL_EXTERNAL and the upright
 * size. The frame is checked with ks_image_check. The pixels must stay valid and unchanged until
 * the packet's last reference is released: pass it to ks_pipeline_process and release it after
 * that call (graph nodes that keep packets across frames, such as "previous", refuse views). */
KS_API ks_status ks_packet_create_image_view(const ks_allocator *allocator, const ks_image *frame,
                                             ks_rotation rotation, int32_t mirror,
                                             ks_packet **packet_out);
KS_API ks_status ks_packet_create_tensor(const ks_allocator *allocator, const ks_tensor_info *info,
                                         const void *data, ks_packet **packet_out);
KS_API ks_status ks_packet_create_detections(const ks_allocator *allocator,
                                             const ks_packet_detections *detections,
                                             ks_packet **packet_out);
KS_API ks_status ks_packet_create_landmarks(const ks_allocator *allocator,
                                            const ks_packet_landmarks *landmarks,
                                            ks_packet **packet_out);
KS_API ks_status ks_packet_create_rects(const ks_allocator *allocator, const ks_packet_rects *rects,
                                        ks_packet **packet_out);
KS_API ks_status ks_packet_create_mask(const ks_allocator *allocator, const ks_packet_mask *mask,
                                       ks_packet **packet_out);
/* m is 4x4, row-major. */
KS_API ks_status ks_packet_create_matrix(const ks_allocator *allocator, const float m[16],
                                         ks_packet **packet_out);
KS_API ks_status ks_packet_create_int(const ks_allocator *allocator, int64_t value,
                                      ks_packet **packet_out);
KS_API ks_status ks_packet_create_float(const ks_allocator *allocator, double value,
                                        ks_packet **packet_out);
KS_API ks_status ks_packet_create_bool(const ks_allocator *allocator, int value,
                                       ks_packet **packet_out);
/* value is NUL-terminated and copied. */
KS_API ks_status ks_packet_create_string(const ks_allocator *allocator, const char *value,
                                         ks_packet **packet_out);
/* A list retains each of its num_items items (none may be NULL) and publishes them. */
KS_API ks_status ks_packet_create_list(const ks_allocator *allocator, ks_packet *const *items,
                                       uint32_t num_items, ks_packet **packet_out);

/* Reference counting. retain returns its argument; release of NULL is a no-op. The last release
 * frees the packet with the allocator it was created with. */
KS_API ks_packet *ks_packet_retain(const ks_packet *packet);
KS_API void ks_packet_release(const ks_packet *packet);
/* Current reference count (for tests and debugging). */
KS_API uint32_t ks_packet_refcount(const ks_packet *packet);

/* Marks a packet immutable. Pipelines publish every packet they receive or emit; publishing
 * twice is harmless. */
KS_API void ks_packet_publish(ks_packet *packet);
/* Writable pointer to the payload (pixels, tensor data, mask plane, or the first array of a
 * detections/landmarks/rects packet) and its size, or NULL once the packet is published. */
KS_API void *ks_packet_mutable_data(ks_packet *packet, size_t *size_bytes_out);

KS_API ks_packet_type ks_packet_get_type(const ks_packet *packet);
/* Timestamp of the frame that produced the packet; 0 for packets made outside a pipeline. */
KS_API int64_t ks_packet_timestamp_us(const ks_packet *packet);

/* Typed views. Each returns NULL (or 0 / false) when the packet has another type. Views and
 * pointers inside them live as long as the packet. */
KS_API const ks_packet_image *ks_packet_image_view(const ks_packet *packet);
KS_API const ks_tensor *ks_packet_tensor(const ks_packet *packet);
/* The pixels of an image packet as ks_image_to_tensor input: *source_out, and the orientation
 * to put in ks_image_to_tensor_desc (rotation, mirror) so that desc.m maps tensor points to
 * points of the packet's upright image. For an owned image: its pixels, KS_ROTATION_0, 0. For a
 * view: the caller's frame and its orientation. KS_STATUS_INVALID_ARGUMENT when the packet is not
 * an image. */
KS_API ks_status ks_packet_image_source(const ks_packet *packet, ks_image *source_out,
                                        ks_rotation *rotation_out, int32_t *mirror_out);

KS_API const ks_packet_detections *ks_packet_detections_view(const ks_packet *packet);
KS_API const ks_packet_landmarks *ks_packet_landmarks_view(const ks_packet *packet);
KS_API const ks_packet_rects *ks_packet_rects_view(const ks_packet *packet);
KS_API const ks_packet_mask *ks_packet_mask_view(const ks_packet *packet);
KS_API const float *ks_packet_matrix(const ks_packet *packet); /* 16 floats, row-major */
KS_API int64_t ks_packet_int(const ks_packet *packet);
KS_API double ks_packet_float(const ks_packet *packet);
KS_API int ks_packet_bool(const ks_packet *packet);
KS_API const char *ks_packet_string(const ks_packet *packet);
KS_API uint32_t ks_packet_list_size(const ks_packet *packet);
/* Item `index` of a list (borrowed: retain it to keep it past the list), or NULL. */
KS_API const ks_packet *ks_packet_list_item(const ks_packet *packet, uint32_t index);

/* ---------------------------------------------------------------------------------------------
 * Node types (built-in and app-defined)
 * ------------------------------------------------------------------------------------------- */

/* Port flags. */
#define KS_PORT_OPTIONAL                                                                           \
    0x1u                      /* input: may be unconnected ("") or absent in a frame;              \
                               output: may be left out of the JSON (trailing) or "" */
#define KS_PORT_REPEATED 0x2u /* last port only: zero or more further ports of this kind */
#define KS_PORT_LOOPBACK 0x4u /* input: read after the frame, so it may close a cycle */

/* One declared input or output of a node type. */
typedef struct ks_port {
    const char *name;         /* for messages and docs, e.g. "image" */
    ks_packet_type type;      /* KS_PACKET_ANY accepts (or produces) anything */
    ks_packet_type elem_type; /* for KS_PACKET_LIST ports: type of the items, or ANY */
    uint32_t flags;           /* KS_PORT_* */
    int32_t like_input;       /* outputs: >= 0 means "same type as input port like_input" */
} ks_port;

typedef struct ks_node_options ks_node_options;

/* Option accessors for node create functions. Each returns KS_STATUS_OK and writes *out when
 * the key exists with a fitting type, writes the default and returns OK when it is absent, and
 * returns KS_STATUS_INVALID_ARGUMENT (message in the init error buffer) for a wrong type.
 * Options whose JSON value is "$name" were replaced by side parameter `name` before create. */
KS_API int ks_node_options_has(const ks_node_options *options, const char *key);
KS_API ks_status ks_node_options_int(const ks_node_options *options, const char *key,
                                     int64_t default_value, int64_t *out);
KS_API ks_status ks_node_options_float(const ks_node_options *options, const char *key,
                                       double default_value, double *out);
KS_API ks_status ks_node_options_bool(const ks_node_options *options, const char *key,
                                      int default_value, int *out);
/* The string lives as long as the options (until create returns). */
KS_API ks_status ks_node_options_string(const ks_node_options *options, const char *key,
                                        const char *default_value, const char **out);
/* Fills up to `capacity` numbers of a numeric array option; *count_out gets the array length. */
KS_API ks_status ks_node_options_floats(const ks_node_options *options, const char *key,
                                        float *values, uint32_t capacity, uint32_t *count_out);

typedef struct ks_bundle ks_bundle;

/* What a node's create function gets. Lives until create returns. */
typedef struct ks_node_init {
    const char *node_name;
    const ks_node_options *options;
    uint32_t num_inputs, num_outputs;   /* actual port counts in this graph */
    const ks_packet_type *input_types;  /* resolved stream types (ANY when unknown) */
    const ks_packet_type *output_types; /* resolved stream types */
    const ks_allocator *allocator;      /* the pipeline's allocator; never NULL */
    const ks_bundle *bundle;            /* the bundle the graph came from, or NULL */
    const char *model_dir;              /* ks_pipeline_desc.model_dir, or NULL */
    char *error;                        /* write a message here on failure */
    size_t error_cap;
} ks_node_init;

typedef struct ks_node_ctx ks_node_ctx;

/* A node type. All callbacks but create and process may be NULL. The struct and its port arrays
 * must stay valid for the life of the process (static storage). */
typedef struct ks_node_type {
    const char *name; /* the "type" used in graph JSON */
    uint32_t num_inputs, num_outputs;
    const ks_port *inputs;
    const ks_port *outputs;
    /* Builds per-node state from options; *state_out may stay NULL for stateless nodes. */
    ks_status (*create)(const ks_node_init *init, void **state_out);
    /* Runs one frame: reads ks_node_input(), emits with ks_node_output(). Called only when every
     * non-optional input has a packet; otherwise all outputs stay empty for the frame. */
    ks_status (*process)(void *state, ks_node_ctx *ctx);
    /* Called after every node of the frame ran, with LOOPBACK inputs available. */
    ks_status (*after_frame)(void *state, ks_node_ctx *ctx);
    /* Forgets everything carried across frames (e.g. previous packets). */
    void (*reset)(void *state);
    void (*destroy)(void *state, const ks_allocator *allocator);
} ks_node_type;

/* Registers an app node type. Fails with KS_STATUS_INVALID_ARGUMENT when the name is taken
 * (built-ins included) or the declaration is inconsistent, and KS_STATUS_LIMIT_EXCEEDED past
 * KS_PIPELINE_MAX_NODE_TYPES. `type` is kept (not copied). */
KS_API ks_status ks_node_type_register(const ks_node_type *type);
/* The node type called `name` (built-in or registered), or NULL. */
KS_API const ks_node_type *ks_node_type_find(const char *name);

/* Inside process/after_frame. Input i is NULL when its stream has no packet this frame. */
KS_API uint32_t ks_node_num_inputs(const ks_node_ctx *ctx);
KS_API uint32_t ks_node_num_outputs(const ks_node_ctx *ctx);
KS_API const ks_packet *ks_node_input(const ks_node_ctx *ctx, uint32_t index);
/* Emits `packet` on output `index`, taking over the caller's reference (also on failure).
 * The packet is stamped with the frame's timestamp if it is not yet published, then published.
 * Fails (KS_STATUS_INVALID_ARGUMENT) on a bad index, a second emit on the same output, or a
 * packet whose type differs from the output's declared type. */
KS_API ks_status ks_node_output(ks_node_ctx *ctx, uint32_t index, ks_packet *packet);
/* 1 if something reads output `index` this frame (a running node or a needed graph output; see
 * ks_pipeline_set_output_needed), 0 if the node may skip producing it. */
KS_API int ks_node_output_needed(const ks_node_ctx *ctx, uint32_t index);
KS_API int64_t ks_node_timestamp_us(const ks_node_ctx *ctx);
KS_API const ks_allocator *ks_node_allocator(const ks_node_ctx *ctx);
/* Sets the pipeline's error message, prefixed with the node's name. Returns `status`. */
KS_API ks_status ks_node_fail(ks_node_ctx *ctx, ks_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---------------------------------------------------------------------------------------------
 * Pipelines
 * ------------------------------------------------------------------------------------------- */

typedef struct ks_pipeline ks_pipeline;

/* A side parameter given at create; overrides the graph's "side_params" default of that name.
 * `value` is read as JSON when it parses (0.5, true, "text", [1,2]) and as a plain string
 * otherwise. Copied during create. */
typedef struct ks_side_param {
    const char *name;
    const char *value;
} ks_side_param;

/* Bytes of a ks-protect model key (ks_pipeline_desc.key, ks_model_key_fn). */
#define KS_PIPELINE_KEY_BYTES 32

/* Supplies the key of an encrypted (ks-protect, "KSME") model when an infer node meets one:
 * called during ks_pipeline_create_*, on the creating thread, once per encrypted model load, with
 * `model_name` the node's 'model' option as the graph writes it (a bundle entry name such as
 * "detector", or a .ksm path before model_dir is prepended). Write KS_PIPELINE_KEY_BYTES bytes to
 * key_out (room for key_cap bytes), set *key_bytes_out and return KS_STATUS_OK; any other status
 * refuses the model and create fails with it. The pipeline wipes key_out after the load; the
 * callback should wipe its own copies. It is the same function type as ks_task_key_fn
 * (kestrel/vision.h), so one callback serves tasks and pipelines. */
typedef ks_status (*ks_model_key_fn)(void *user, const char *model_name, uint8_t *key_out,
                                     size_t key_cap, size_t *key_bytes_out);

typedef struct ks_pipeline_desc {
    const ks_allocator *allocator; /* NULL: malloc. Must outlive the pipeline and its packets. */
    const ks_side_param *side_params;
    uint32_t num_side_params;
    const char *model_dir;   /* NULL: model paths are used as written */
    const char *graph_entry; /* bundles only: the graph entry to use; NULL: "graph" */
    int32_t num_threads;     /* sessions of infer nodes; 0: 1 */
    /* sessions of infer nodes without their own 'precision' option; 0: as stored */
    ks_precision precision;
    /* sessions of infer nodes without their own 'backend' option; 0: the CPU */
    ks_backend backend;
    /* Encrypted models (ks-protect), as bundle entries or .ksm files of infer nodes: `key`
     * (key_bytes = KS_PIPELINE_KEY_BYTES) opens every one of them; else key_provider(key_user,
     * ...) is asked for each; with neither, create refuses an encrypted model
     * (KS_STATUS_INVALID_ARGUMENT, "model '...' is encrypted (ks-protect) and needs its key"), and
     * a key that does not open one is KS_STATUS_TAMPERED. Plain models ignore them. Read during
     * create only: the pipeline keeps neither pointer, wipes the key copy it makes for each load,
     * and never writes the key or a decrypted model to disk. Decrypted models live in memory
     * owned by the pipeline and are wiped when it is destroyed. */
    const uint8_t *key;
    size_t key_bytes;
    ks_model_key_fn key_provider;
    void *key_user;
} ks_pipeline_desc;

/* Parses, validates and instantiates a graph from JSON text (not NUL-terminated necessarily).
 * desc may be NULL. On failure see ks_last_error(NULL): it names the node and the stream. */
KS_API ks_status ks_pipeline_create_json(const char *json, size_t size_bytes,
                                         const ks_pipeline_desc *desc, ks_pipeline **pipeline_out);
/* Same, from the bundle's graph entry; infer nodes load models from the bundle's entries first
 * (zero-copy). The bundle must outlive the pipeline. */
KS_API ks_status ks_pipeline_create_bundle(const ks_bundle *bundle, const ks_pipeline_desc *desc,
                                           ks_pipeline **pipeline_out);
/* NULL is a no-op. Releases every packet the pipeline still holds. */
KS_API void ks_pipeline_destroy(ks_pipeline *pipeline);

KS_API uint32_t ks_pipeline_num_inputs(const ks_pipeline *pipeline);
KS_API uint32_t ks_pipeline_num_outputs(const ks_pipeline *pipeline);
/* Graph input/output names (live with the pipeline), or NULL for a bad index. */
KS_API const char *ks_pipeline_input_name(const ks_pipeline *pipeline, uint32_t index);
KS_API const char *ks_pipeline_output_name(const ks_pipeline *pipeline, uint32_t index);
/* Index of the graph input/output stream `name`, or -1. */
KS_API int32_t ks_pipeline_input_index(const ks_pipeline *pipeline, const char *name);
KS_API int32_t ks_pipeline_output_index(const ks_pipeline *pipeline, const char *name);

/* Runs one frame. inputs has ks_pipeline_num_inputs() entries (NULL entries: no packet this
 * frame); the pipeline retains what it keeps. outputs has ks_pipeline_num_outputs() entries and
 * receives a new reference per produced output (release each) or NULL. Timestamps must strictly
 * increase (KS_STATUS_INVALID_STATE otherwise; reset starts over). On failure every output is
 * NULL and the message (ks_last_error(pipeline)) names the failing node. */
KS_API ks_status ks_pipeline_process(ks_pipeline *pipeline, const ks_packet *const *inputs,
                                     int64_t timestamp_us, ks_packet **outputs);

/* Whether the caller reads graph output `index` (every output is needed until told otherwise).
 * A node runs only while some needed output or running node reads one of its outputs; infer
 * nodes (also inside foreach subgraphs) tell their sessions which model outputs are read, so the
 * layers behind an unread output are not run either (ks_session_set_output_needed). An output
 * that is not needed is NULL after ks_pipeline_process. Streams that nothing reads keep their
 * nodes running (they may be sinks with effects of their own). Call between frames: it may
 * re-plan infer sessions (allocates). */
KS_API ks_status ks_pipeline_set_output_needed(ks_pipeline *pipeline, uint32_t index, int needed);

/* The allocator the pipeline's nodes make packets with: a cache over the desc's allocator where
 * freed blocks wait on per-size free lists for later frames, so steady-state frames do not reach
 * the app's allocator. Make the packets fed to ks_pipeline_process with it too. Thread-safe;
 * valid while the pipeline or any packet made with it lives; NULL for a NULL pipeline. */
KS_API const ks_allocator *ks_pipeline_packet_allocator(const ks_pipeline *pipeline);

/* Drops state carried across frames (previous packets, flow limiter counts, timestamps). */
KS_API void ks_pipeline_reset(ks_pipeline *pipeline);

/* Per-node timing, in execution order. */
typedef struct ks_node_stats {
    const char *node_name; /* lives with the pipeline */
    const char *type_name;
    uint64_t num_calls; /* frames in which process ran */
    uint64_t total_us;
    uint64_t max_us;
    double mean_us;
} ks_node_stats;

KS_API uint32_t ks_pipeline_num_nodes(const ks_pipeline *pipeline);
KS_API ks_status ks_pipeline_node_stats(const ks_pipeline *pipeline, uint32_t index,
                                        ks_node_stats *stats_out);
/* The subgraph that node `index` runs (a "foreach" node's per-item graph; its node stats add up
 * every item), or NULL for other nodes and bad indexes. Lives with the pipeline. */
KS_API const ks_pipeline *ks_pipeline_node_subgraph(const ks_pipeline *pipeline, uint32_t index);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_PIPELINE_H */
