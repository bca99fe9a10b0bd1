/* Helpers shared by the task APIs in each task directory: input image conversion and bundle +
 * pipeline setup. Internal; not a published API. */
#ifndef KESTREL_ALGOS_TASK_COMMON_H
#define KESTREL_ALGOS_TASK_COMMON_H

#include <stddef.h>

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

/* Opens the task's bundle (task->model_path, else <ks_models_dir()>/<default_bundle>) and
 * creates a pipeline from its graph entry `graph_entry` (NULL: "graph") with the side
 * parameters given. Registers the vision node types first. On failure nothing is returned and
 * err names the bundle path and the cause. */
ks_status ks__task_open(const ks_task_options *task, const char *default_bundle,
                        const char *graph_entry, const ks_side_param *params, uint32_t num_params,
                        ks_bundle **bundle_out, ks_pipeline **pipeline_out, char *err,
                        size_t err_size);

#endif
