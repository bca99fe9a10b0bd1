/* Shared task plumbing: one upright RGB copy of the input per frame (so every pipeline node
 * sees the same orientation, whatever the camera format), and bundle + pipeline creation with
 * error messages that name the bundle. */
#include "task_common.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "vision_nodes.h"

ks_status ks__task_image_packet(const ks_allocator *alloc, const ks_image *img,
                                ks_rotation rotation, int mirror, ks_packet **out, char *err,
                                size_t err_size) {
    if (!img || !out) {
        snprintf(err, err_size, "image is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (img->width_px <= 0 || img->height_px <= 0 || !img->planes[0]) {
        snprintf(err, err_size, "image is empty (%d x %d, plane 0 %s)", (int)img->width_px,
                 (int)img->height_px, img->planes[0] ? "set" : "NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (img->width_px > KS_TASK_MAX_SIDE_PX || img->height_px > KS_TASK_MAX_SIDE_PX) {
        snprintf(err, err_size, "image %d x %d is above the %d px limit", (int)img->width_px,
                 (int)img->height_px, KS_TASK_MAX_SIDE_PX);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    if ((unsigned)rotation >= KS_ROTATION_COUNT) {
        snprintf(err, err_size, "rotation %d is not a ks_rotation", (int)rotation);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    bool swap = rotation == KS_ROTATION_90 || rotation == KS_ROTATION_270;
    int32_t w = swap ? img->height_px : img->width_px;
    int32_t h = swap ? img->width_px : img->height_px;
    ks_packet *p = NULL;
    ks_status st = ks_packet_create_image(
        alloc,
        &(ks_packet_image){
            .format = KS_PIXEL_RGB8, .width_px = w, .height_px = h, .stride_bytes = 3 * (size_t)w},
        &p);
    if (st) {
        snprintf(err, err_size, "cannot allocate a %d x %d RGB image", (int)w, (int)h);
        return st;
    }
    ks_tensor t = {.info = {.dtype = KS_DTYPE_U8}};
    t.info.shape.rank = 3;
    t.info.shape.dims[0] = h;
    t.info.shape.dims[1] = w;
    t.info.shape.dims[2] = 3;
    t.data = ks_packet_mutable_data(p, &t.size_bytes);
    /* Identity map (destination pixel centre -> the same oriented point), nearest sampling: an
     * exact copy with the orientation applied. */
    ks_image_to_tensor_desc d = {.m = {1, 0, 0, 0, 1, 0},
                                 .rotation = rotation,
                                 .mirror = mirror,
                                 .interp = KS_INTERP_NEAREST,
                                 .border = KS_BORDER_REPLICATE};
    st = ks_image_to_tensor(img, &d, &t);
    if (st) {
        snprintf(err, err_size, "input image: %s", ks_last_error(NULL));
        ks_packet_release(p);
        return st;
    }
    *out = p;
    return KS_STATUS_OK;
}

ks_status ks__task_open(const ks_task_options *task, const char *default_bundle,
                        const char *graph_entry, const ks_side_param *params, uint32_t num_params,
                        ks_bundle **bundle_out, ks_pipeline **pipeline_out, char *err,
                        size_t err_size) {
    ks__register_vision_nodes();
    char path[4096];
    if (task->model_path && task->model_path[0])
        snprintf(path, sizeof(path), "%s", task->model_path);
    else
        snprintf(path, sizeof(path), "%s/%s", ks_models_dir(), default_bundle);
    ks_bundle *b = NULL;
    ks_pipeline *p = NULL;
    ks_status st = ks_bundle_open_file(path, &(ks_bundle_desc){.allocator = task->allocator}, &b);
    if (st) {
        snprintf(err, err_size, "bundle '%s': %s", path, ks_last_error(NULL));
        return st;
    }
    ks_pipeline_desc pd = {.allocator = task->allocator,
                           .side_params = params,
                           .num_side_params = num_params,
                           .graph_entry = graph_entry,
                           .num_threads = task->num_threads > 0 ? task->num_threads : 1};
    st = ks_pipeline_create_bundle(b, &pd, &p);
    if (st) {
        snprintf(err, err_size, "bundle '%s': %s", path, ks_last_error(NULL));
        ks_bundle_destroy(b);
        return st;
    }
    *bundle_out = b;
    *pipeline_out = p;
    return KS_STATUS_OK;
}
