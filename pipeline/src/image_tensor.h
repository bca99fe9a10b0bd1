/* Image -> model input tensor: the one implementation behind two node types, which differ only in
 * where their settings come from:
 *   image_to_tensor  the pipeline's built-in node (nodes_model.c): its JSON options, and an
 *                    optional ROI input (a rotated rect);
 *   model_input      the task library's node (algos/detect/det_nodes.c): the `preprocess` object
 *                    of a bundle config entry.
 * A front end parses and checks its settings into a ks__image_tensor_desc and hands it to
 * ks__image_tensor_create; the node's process and destroy are the functions below. Per frame:
 * the fit's affine, one ks_image_to_tensor pass (orientation, crop, resize, pixel format,
 * channel order, normalization and layout together) written straight into the session input of
 * the infer node that is the tensor's only reader when there is one, and the tensor-normalized ->
 * image-normalized matrix for mapping results back.
 *
 * Internal to the pipeline and the layers above it (not a published API). Thread safety: a state
 * belongs to one node of one pipeline, which runs on one thread at a time. */
#ifndef KESTREL_PIPELINE_IMAGE_TENSOR_H
#define KESTREL_PIPELINE_IMAGE_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "kestrel/imgproc.h"
#include "kestrel/pipeline.h"

/* Either side of the tensor, in pixels. */
#define KS__IMAGE_TENSOR_MAX_SIDE_PX 4096

/* How the image (or the ROI) is placed in the tensor. */
typedef enum ks__tensor_fit {
    /* The ROI (the first rect of the node's roi input, else the whole image; rotated or not)
     * onto the whole tensor; the aspect is not kept. */
    KS__FIT_STRETCH = 0,
    /* The ROI with its short side grown about its centre to the tensor's aspect (a centred
     * letterbox of the ROI; what the face, hand and pose graphs use). */
    KS__FIT_KEEP_ASPECT = 1,
    /* The fits below place the whole image and do not read a ROI. */
    /* The whole image scaled to fit inside the tensor and centred (NanoDet). Computed from the
     * scale rather than from a grown rectangle, which rounds differently from KEEP_ASPECT: both
     * stay, so that every graph gets the tensors it was validated with, bit for bit. */
    KS__FIT_LETTERBOX = 2,
    /* The same scale at the tensor's top-left corner (YOLOX). */
    KS__FIT_LETTERBOX_TOP_LEFT = 3,
    /* The centred crop_fraction of the image, stretched onto the tensor. */
    KS__FIT_CENTER_CROP = 4,
    KS__FIT_COUNT
} ks__tensor_fit;

/* Settings of one node, checked by its front end (ks__image_tensor_create asserts them). */
typedef struct ks__image_tensor_desc {
    int32_t width_px, height_px;    /* tensor size, 1..KS__IMAGE_TENSOR_MAX_SIDE_PX */
    ks_dtype dtype;                 /* KS_DTYPE_F32 or KS_DTYPE_U8 */
    ks_tensor_layout layout;        /* [1, H, W, 3] or [1, 3, H, W] */
    ks_channel_order channel_order; /* RGB or BGR */
    float mean[3], scale[3];        /* out = (pixel - mean[c]) * scale[c], pixel in 0..255 */
    ks__tensor_fit fit;
    float crop_fraction; /* KS__FIT_CENTER_CROP: (0, 1] */
    ks_border border;    /* samples outside the image: KS_BORDER_REPLICATE or _CONSTANT */
    float border_value;  /* KS_BORDER_CONSTANT: the pixel value (0..255) of all channels */
    bool mediapipe_grid; /* sample MediaPipe's pixel-index grid instead of pixel centres */
} ks__image_tensor_desc;

/* The node state for `desc` (copied), allocated from `allocator`; free with
 * ks__image_tensor_destroy. KS_STATUS_OUT_OF_MEMORY is the only failure. */
ks_status ks__image_tensor_create(const ks_allocator *allocator, const ks__image_tensor_desc *desc,
                                  void **state_out);
/* ks_node_type.process: input 0 an image, input 1 (if the node type has it) optional rects, the
 * ROI; output 0 the tensor, output 1 (optional) the matrix packet, row-major 4x4. An empty ROI
 * emits nothing that frame. */
ks_status ks__image_tensor_process(void *state, ks_node_ctx *ctx);
/* ks_node_type.destroy. */
void ks__image_tensor_destroy(void *state, const ks_allocator *allocator);

#endif /* KESTREL_PIPELINE_IMAGE_TENSOR_H */
