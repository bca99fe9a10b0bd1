/* Helpers shared by the task APIs in each task directory: input image conversion, bundle +
 * pipeline setup, bundle config and labels entries, and node type registration. Internal; not a
 * published API. */
#ifndef KESTREL_ALGOS_TASK_COMMON_H
#define KESTREL_ALGOS_TASK_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common.h"
#include "kestrel/bundle.h"
#include "kestrel/pipeline.h"
#include "kestrel/vision.h"

/* Largest input side the tasks accept (the image is copied upright once per frame). */
#define KS_TASK_MAX_SIDE_PX 16384

/* Converts any ks_image (RGB/BGR/RGBA/BGRA/GRAY/NV21/NV12/I420) into an upright RGB8 image
 * packet: the source is rotated clockwise by `rotation`, then mirrored when `mirror`. Result
 * coordinates of the tasks are in this upright image. Fails with INVALID_ARGUMENT (NULL, empty or
 * inconsistent image, message in err) or LIMIT_EXCEEDED. */
ks_status ks__task_image_packet(const ks_allocator *alloc, const ks_image *img,
                                ks_rotation rotation, int mirror, ks_packet **out, char *err,
                                size_t err_size);

/* Opens task->model_path, or <ks_models_dir()>/<default_bundle> when it is NULL or empty, with
 * task->allocator. On failure err names the path tried (and, for a default bundle, how to get
 * one). */
ks_status ks__task_open_bundle(const ks_task_options *task, const char *default_bundle,
                               ks_bundle **out, char *err, size_t err_size);

/* Creates a pipeline from the bundle's graph entry `graph_entry` (NULL: "graph") with the task's
 * allocator and threads and the side parameters given; the message is in ks_last_error(NULL). */
ks_status ks__task_create_pipeline(const ks_bundle *bundle, const ks_task_options *task,
                                   const char *graph_entry, const ks_side_param *params,
                                   uint32_t num_params, ks_pipeline **out);

/* ks__task_open_bundle + ks__task_create_pipeline, after registering the vision node types. On
 * failure nothing is returned and err names the bundle path and the cause. */
ks_status ks__task_open(const ks_task_options *task, const char *default_bundle,
                        const char *graph_entry, const ks_side_param *params, uint32_t num_params,
                        ks_bundle **bundle_out, ks_pipeline **pipeline_out, char *err,
                        size_t err_size);

/* Output streams a single-image task graph may have (see ks__task_check_graph). */
#define KS_TASK_MAX_OUTPUTS 8

/* Checks that a task graph takes one image input and has the output stream `output` among at
 * most KS_TASK_MAX_OUTPUTS outputs; *index_out gets that stream's index. */
ks_status ks__task_check_graph(const ks_pipeline *pipeline, const char *output, int32_t *index_out,
                               char *err, size_t err_size);

/* Runs a graph checked by ks__task_check_graph on the upright copy of `image` (see
 * ks__task_image_packet; its size goes to *width_out, *height_out), after ks_pipeline_reset when
 * `reset` (independent frames). outs gets ks_pipeline_num_outputs() packets for the caller to
 * release (ks__task_release_outputs). On failure err has the image's or the pipeline's message. */
ks_status ks__task_process_image(ks_pipeline *pipeline, const ks_task_options *task,
                                 const ks_image *image, int64_t timestamp_us, int reset,
                                 ks_packet *outs[KS_TASK_MAX_OUTPUTS], int32_t *width_out,
                                 int32_t *height_out, char *err, size_t err_size);
void ks__task_release_outputs(ks_packet *outs[KS_TASK_MAX_OUTPUTS]);

/* Parses the bundle's config entry `name` (kind config) as a JSON object; free with
 * cJSON_Delete. */
ks_status ks__task_config(const ks_bundle *bundle, const char *name, cJSON **out, char *err,
                          size_t err_size);

/* Labels parsed from a labels entry: one label per line, trailing '\r' and blanks trimmed. */
typedef struct ks__labels {
    uint32_t count;
    char **names; /* count pointers into `text` */
    char *text;
} ks__labels;

/* Reads the labels entry `name`; an absent name (NULL or "") gives zero labels. */
ks_status ks__task_labels(const ks_allocator *alloc, const ks_bundle *bundle, const char *name,
                          ks__labels *out, char *err, size_t err_size);
void ks__task_labels_free(const ks_allocator *alloc, ks__labels *labels);

/* Config accessors: a missing key gives the default; a wrong type is an error naming the key. */
ks_status ks__cfg_number(const cJSON *obj, const char *key, double def, double *out, char *err,
                         size_t err_size);
ks_status ks__cfg_string(const cJSON *obj, const char *key, const char *def, const char **out,
                         char *err, size_t err_size);
/* Fills up to cap numbers; *count_out gets the array length (0 when absent). */
ks_status ks__cfg_numbers(const cJSON *obj, const char *key, float *values, uint32_t cap,
                          uint32_t *count_out, char *err, size_t err_size);

/* Registers `type` unless it already is (idempotent; a type registered concurrently by another
 * thread is accepted; a different type of the same name is an error). */
ks_status ks__task_register(const ks_node_type *type);
/* Node types of the segmentation, detection and classification tasks (algos/segment, detect,
 * classify), registered through ks__task_register. */
ks_status ks__seg_register_nodes(void);
ks_status ks__det_register_nodes(void);
ks_status ks__cls_register_nodes(void);
/* Every task node type: the vision nodes (algos/nodes) and the three sets above. Used by
 * ks-task-bundle to check task graphs. */
ks_status ks__task_register_all_nodes(void);

#endif
