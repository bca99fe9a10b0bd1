/* Shared plumbing of the segmentation, detection and classification tasks (see task_util.h). */
#include "task_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Config and label entries are small text files; anything larger is a malformed bundle. */
#define KS__TASK_MAX_TEXT_BYTES ((size_t)1 << 20)
#define KS__TASK_MAX_LABELS 100000u

void *ks__taskutil_alloc(const ks_allocator *a, size_t size_bytes) {
    if (size_bytes == 0) size_bytes = 1;
    if (a && a->alloc) return a->alloc(a->user, size_bytes, 16);
    return malloc(size_bytes);
}

void ks__taskutil_free(const ks_allocator *a, void *p) {
    if (!p) return;
    if (a && a->free)
        a->free(a->user, p);
    else
        free(p);
}

ks_status ks__taskutil_open_bundle(const ks_task_options *opt, const char *default_name,
                                   ks_bundle **out, char *err, size_t err_cap) {
    char path[1024];
    if (opt->model_path && opt->model_path[0]) {
        snprintf(path, sizeof(path), "%s", opt->model_path);
    } else {
        const char *dir = ks_models_dir();
        if (!dir || !dir[0]) dir = ".";
        int n = snprintf(path, sizeof(path), "%s/%s", dir, default_name);
        if (n < 0 || (size_t)n >= sizeof(path)) {
            snprintf(err, err_cap, "models directory path is too long");
            return KS_STATUS_INVALID_ARGUMENT;
        }
    }
    ks_bundle_desc bd = {.allocator = opt->allocator};
    ks_status st = ks_bundle_open_file(path, &bd, out);
    if (st) {
        if (opt->model_path && opt->model_path[0])
            snprintf(err, err_cap, "bundle '%s': %s", path, ks_last_error(NULL));
        else
            snprintf(err, err_cap,
                     "default bundle '%s': %s (build the 'ks_bundles' target, set "
                     "KESTREL_MODELS_DIR, or pass a .ksb as model_path)",
                     path, ks_last_error(NULL));
    }
    return st;
}

static ks_status entry_text(const ks_bundle *bundle, const char *name, uint32_t kind,
                            ks_bundle_entry *e, char *err, size_t err_cap) {
    if (ks_bundle_find(bundle, name, e) != KS_STATUS_OK) {
        snprintf(err, err_cap, "bundle has no entry '%s'", name);
        return KS_STATUS_INVALID_MODEL;
    }
    if (e->kind != kind) {
        snprintf(err, err_cap, "bundle entry '%s' is a %s, expected %s", name,
                 ks_bundle_kind_string(e->kind), ks_bundle_kind_string(kind));
        return KS_STATUS_INVALID_MODEL;
    }
    if (e->size_bytes > KS__TASK_MAX_TEXT_BYTES) {
        snprintf(err, err_cap, "bundle entry '%s' is %zu bytes; text entries are limited to %zu",
                 name, e->size_bytes, KS__TASK_MAX_TEXT_BYTES);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    return KS_STATUS_OK;
}

ks_status ks__taskutil_config(const ks_bundle *bundle, const char *name, cJSON **out, char *err,
                              size_t err_cap) {
    ks_bundle_entry e;
    ks_status st = entry_text(bundle, name, KS_BUNDLE_CONFIG, &e, err, err_cap);
    if (st) return st;
    cJSON *root = cJSON_ParseWithLength((const char *)e.data, e.size_bytes);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        snprintf(err, err_cap, "bundle entry '%s' is not a JSON object", name);
        return KS_STATUS_INVALID_MODEL;
    }
    *out = root;
    return KS_STATUS_OK;
}

void ks__taskutil_labels_free(const ks_allocator *alloc, ks__labels *labels) {
    if (!labels) return;
    ks__taskutil_free(alloc, labels->names);
    ks__taskutil_free(alloc, labels->text);
    memset(labels, 0, sizeof(*labels));
}

ks_status ks__taskutil_labels(const ks_allocator *alloc, const ks_bundle *bundle, const char *name,
                              ks__labels *out, char *err, size_t err_cap) {
    memset(out, 0, sizeof(*out));
    if (!name || !name[0]) return KS_STATUS_OK;
    ks_bundle_entry e;
    ks_status st = entry_text(bundle, name, KS_BUNDLE_LABELS, &e, err, err_cap);
    if (st) return st;
    ks__labels l = {0};
    l.text = ks__taskutil_alloc(alloc, e.size_bytes + 1);
    if (!l.text) return KS_STATUS_OUT_OF_MEMORY;
    memcpy(l.text, e.data, e.size_bytes);
    l.text[e.size_bytes] = '\0';
    uint32_t lines = 0;
    for (size_t i = 0; i < e.size_bytes; i++)
        if (l.text[i] == '\n') lines++;
    lines++;
    if (lines > KS__TASK_MAX_LABELS) {
        ks__taskutil_free(alloc, l.text);
        snprintf(err, err_cap, "labels entry '%s' has %u lines; the limit is %u", name,
                 (unsigned)lines, KS__TASK_MAX_LABELS);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    l.names = ks__taskutil_alloc(alloc, lines * sizeof(char *));
    if (!l.names) {
        ks__taskutil_free(alloc, l.text);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    char *p = l.text;
    while (*p) {
        char *nl = strchr(p, '\n');
        char *next = nl ? nl + 1 : p + strlen(p);
        if (nl) *nl = '\0';
        size_t len = strlen(p);
        while (len && (p[len - 1] == '\r' || p[len - 1] == ' ' || p[len - 1] == '\t'))
            p[--len] = '\0';
        /* A trailing empty line is the file's final newline, not a label. */
        if (len || *next) l.names[l.count++] = p;
        p = next;
    }
    *out = l;
    return KS_STATUS_OK;
}

ks_status ks__taskutil_upright_packet(const ks_allocator *alloc, const ks_image *img,
                                      ks_rotation rotation, int32_t mirror, ks_packet **out,
                                      char *err, size_t err_cap) {
    if (!img || img->width_px <= 0 || img->height_px <= 0 || img->width_px > KS_IMAGE_MAX_DIM_PX ||
        img->height_px > KS_IMAGE_MAX_DIM_PX) {
        snprintf(err, err_cap, "image is %s (%d x %d); sides must be 1..%d px",
                 img ? "invalid" : "NULL", img ? (int)img->width_px : 0,
                 img ? (int)img->height_px : 0, KS_IMAGE_MAX_DIM_PX);
        return img && (img->width_px > KS_IMAGE_MAX_DIM_PX || img->height_px > KS_IMAGE_MAX_DIM_PX)
                   ? KS_STATUS_LIMIT_EXCEEDED
                   : KS_STATUS_INVALID_ARGUMENT;
    }
    if ((unsigned)rotation >= KS_ROTATION_COUNT) {
        snprintf(err, err_cap, "rotation %d is not a ks_rotation", (int)rotation);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    int swap = rotation == KS_ROTATION_90 || rotation == KS_ROTATION_270;
    int32_t w = swap ? img->height_px : img->width_px;
    int32_t h = swap ? img->width_px : img->height_px;
    ks_packet *p = NULL;
    ks_status st = ks_packet_create_image(alloc,
                                          &(ks_packet_image){.format = KS_PIXEL_RGB8,
                                                             .width_px = w,
                                                             .height_px = h,
                                                             .stride_bytes = (size_t)w * 3,
                                                             .data = NULL},
                                          &p);
    if (st) {
        snprintf(err, err_cap, "cannot allocate a %d x %d RGB image", (int)w, (int)h);
        return st;
    }
    ks_tensor dst = {.info = {.dtype = KS_DTYPE_U8}};
    dst.info.shape.rank = 3;
    dst.info.shape.dims[0] = h;
    dst.info.shape.dims[1] = w;
    dst.info.shape.dims[2] = 3;
    dst.data = ks_packet_mutable_data(p, &dst.size_bytes);
    /* Nearest sampling of pixel centres at scale 1 is an exact copy (no interpolation). */
    ks_image_to_tensor_desc d = {.rotation = rotation,
                                 .mirror = mirror,
                                 .interp = KS_INTERP_NEAREST,
                                 .border = KS_BORDER_REPLICATE,
                                 .scale = {1.0f, 1.0f, 1.0f}};
    st = ks_image_to_tensor(img, &d, &dst);
    if (st) {
        snprintf(err, err_cap, "%s", ks_last_error(NULL));
        ks_packet_release(p);
        return st;
    }
    *out = p;
    return KS_STATUS_OK;
}

ks_status ks__cfg_number(const cJSON *obj, const char *key, double def, double *out, char *err,
                         size_t err_cap) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        *out = def;
        return KS_STATUS_OK;
    }
    if (cJSON_IsBool(v)) {
        *out = cJSON_IsTrue(v) ? 1.0 : 0.0;
        return KS_STATUS_OK;
    }
    if (!cJSON_IsNumber(v)) {
        snprintf(err, err_cap, "config key '%s' must be a number", key);
        return KS_STATUS_INVALID_MODEL;
    }
    *out = v->valuedouble;
    return KS_STATUS_OK;
}

ks_status ks__cfg_string(const cJSON *obj, const char *key, const char *def, const char **out,
                         char *err, size_t err_cap) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        *out = def;
        return KS_STATUS_OK;
    }
    if (!cJSON_IsString(v) || !v->valuestring) {
        snprintf(err, err_cap, "config key '%s' must be a string", key);
        return KS_STATUS_INVALID_MODEL;
    }
    *out = v->valuestring;
    return KS_STATUS_OK;
}

ks_status ks__cfg_numbers(const cJSON *obj, const char *key, float *values, uint32_t cap,
                          uint32_t *count_out, char *err, size_t err_cap) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *count_out = 0;
    if (!v) return KS_STATUS_OK;
    if (!cJSON_IsArray(v)) {
        snprintf(err, err_cap, "config key '%s' must be an array of numbers", key);
        return KS_STATUS_INVALID_MODEL;
    }
    uint32_t n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        if (!cJSON_IsNumber(it)) {
            snprintf(err, err_cap, "config key '%s' item %u is not a number", key, (unsigned)n);
            return KS_STATUS_INVALID_MODEL;
        }
        if (n < cap) values[n] = (float)it->valuedouble;
        n++;
    }
    *count_out = n;
    return KS_STATUS_OK;
}

ks_status ks__taskutil_register(const ks_node_type *type) {
    const ks_node_type *have = ks_node_type_find(type->name);
    if (have == type) return KS_STATUS_OK;
    if (have) {
        ks__object_error(NULL, "node type '%s' is already registered by someone else", type->name);
        return KS_STATUS_INVALID_STATE;
    }
    ks_status st = ks_node_type_register(type);
    /* Another thread may have registered it between find and register. */
    if (st && ks_node_type_find(type->name) == type) st = KS_STATUS_OK;
    return st;
}
