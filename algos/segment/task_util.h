/* Helpers shared by the segmentation, object detection and classification task APIs: the handle
 * header, opening a task's bundle, reading its JSON config and labels entries, and turning a
 * caller's ks_image (any format, rotated, mirrored) into the upright RGB packet the graphs take.
 * Internal to kestrel_tasks; not a published API. */
#ifndef KESTREL_TASK_UTIL_H
#define KESTREL_TASK_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common.h"
#include "kestrel/bundle.h"
#include "kestrel/pipeline.h"
#include "kestrel/vision.h"

/* Labels parsed from a labels entry: one label per line, trailing '\r' and blanks trimmed. */
typedef struct ks__labels {
    uint32_t count;
    char **names; /* count pointers into `text` */
    char *text;
} ks__labels;

/* Opens desc->model_path, or <models dir>/<default_name> when it is NULL. Messages go to `err`
 * (which names the path tried). */
ks_status ks__taskutil_open_bundle(const ks_task_options *opt, const char *default_name,
                                   ks_bundle **out, char *err, size_t err_cap);

/* Parses the bundle's config entry `name` (kind config) as JSON; free with cJSON_Delete. */
ks_status ks__taskutil_config(const ks_bundle *bundle, const char *name, cJSON **out, char *err,
                              size_t err_cap);

/* Reads the labels entry `name`; an absent name (NULL or "") gives zero labels. */
ks_status ks__taskutil_labels(const ks_allocator *alloc, const ks_bundle *bundle, const char *name,
                              ks__labels *out, char *err, size_t err_cap);
void ks__taskutil_labels_free(const ks_allocator *alloc, ks__labels *labels);

/* An upright RGB8 packet of `img` after undoing `rotation` and `mirror` (the oriented image of
 * kestrel/imgproc.h): width and height swap for 90 and 270 degrees. Exact pixel copy. */
ks_status ks__taskutil_upright_packet(const ks_allocator *alloc, const ks_image *img,
                                      ks_rotation rotation, int32_t mirror, ks_packet **out,
                                      char *err, size_t err_cap);

/* allocator helpers (NULL allocator: malloc) */
void *ks__taskutil_alloc(const ks_allocator *a, size_t size_bytes);
void ks__taskutil_free(const ks_allocator *a, void *p);

/* Config accessors: a missing key gives the default; a wrong type is an error naming the key. */
ks_status ks__cfg_number(const cJSON *obj, const char *key, double def, double *out, char *err,
                         size_t err_cap);
ks_status ks__cfg_string(const cJSON *obj, const char *key, const char *def, const char **out,
                         char *err, size_t err_cap);
/* Fills up to cap numbers; *count_out gets the array length (0 when absent). */
ks_status ks__cfg_numbers(const cJSON *obj, const char *key, float *values, uint32_t cap,
                          uint32_t *count_out, char *err, size_t err_cap);

/* Node registration of the three tasks (idempotent and thread-safe enough: a type registered
 * concurrently by another thread is accepted). Called from each task's create and from
 * ks-task-bundle. */
ks_status ks__seg_register_nodes(void);
ks_status ks__det_register_nodes(void);
ks_status ks__cls_register_nodes(void);
ks_status ks__taskutil_register(const ks_node_type *type);

#endif
