/* Shared task plumbing: the caller's frame as an image view packet (no copy: every model input
 * samples the camera buffer once, with the frame's orientation), bundle + pipeline creation with
 * error messages that name the bundle, bounded config/labels entries and node type registration. */
#include "task_common.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format/ksm_crypt.h"
#include "kestrel/engine.h"

#include "node_types.h"

/* Config and label entries are small text files; anything larger is a malformed bundle. */
#define KS__TASK_MAX_TEXT_BYTES ((size_t)1 << 20)
#define KS__TASK_MAX_LABELS 100000u
#define KS__TASK_PATH_BYTES 4096

ks_status ks__task_image_packet(const ks_allocator *alloc, const ks_image *img,
                                ks_rotation rotation, int mirror, ks_packet **out, char *err,
                                size_t err_cap) {
    if (!img || !out) {
        snprintf(err, err_cap, "image is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (img->width_px <= 0 || img->height_px <= 0 || !img->planes[0]) {
        snprintf(err, err_cap, "image is empty (%d x %d, plane 0 %s)", (int)img->width_px,
                 (int)img->height_px, img->planes[0] ? "set" : "NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (img->width_px > KS_TASK_MAX_SIDE_PX || img->height_px > KS_TASK_MAX_SIDE_PX) {
        snprintf(err, err_cap, "image %d x %d is above the %d px limit", (int)img->width_px,
                 (int)img->height_px, KS_TASK_MAX_SIDE_PX);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    if ((unsigned)rotation >= KS_ROTATION_COUNT) {
        snprintf(err, err_cap, "rotation %d is not a ks_rotation", (int)rotation);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    /* A view of the caller's pixels: each model input samples them once, in one pass. */
    ks_status st = ks_packet_create_image_view(alloc, img, rotation, mirror, out);
    if (st) snprintf(err, err_cap, "input image: %s", ks_last_error(NULL));
    return st;
}

/* The bundle path of `task`: task->model_path, else <ks_models_dir()>/<default_bundle>. */
static ks_status bundle_path(const ks_task_options *task, const char *default_bundle, char *path,
                             size_t path_size, char *err, size_t err_cap) {
    int n;
    if (task->model_path && task->model_path[0]) {
        n = snprintf(path, path_size, "%s", task->model_path);
    } else {
        const char *dir = ks_models_dir();
        n = snprintf(path, path_size, "%s/%s", dir && dir[0] ? dir : ".", default_bundle);
    }
    if (n < 0 || (size_t)n >= path_size) {
        snprintf(err, err_cap, "bundle path is longer than %zu bytes", path_size - 1);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    return KS_STATUS_OK;
}

/* Largest .ksm a task accepts in place of a bundle model. */
#define KS__TASK_MAX_MODEL_BYTES ((size_t)1 << 30)

/* Reads a whole file into a malloc'ed buffer. */
static ks_status read_file(const char *path, uint8_t **data_out, size_t *size_out, char *err,
                           size_t err_cap) {
    ks_status st = KS_STATUS_IO_ERROR;
    uint8_t *data = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_cap, "cannot open model '%s'", path);
        return st;
    }
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size <= 0 || (unsigned long)size > KS__TASK_MAX_MODEL_BYTES || fseek(f, 0, SEEK_SET) != 0) {
        snprintf(err, err_cap, "model '%s': size %ld is not in 1..%zu bytes", path, size,
                 KS__TASK_MAX_MODEL_BYTES);
        st = size > 0 ? KS_STATUS_LIMIT_EXCEEDED : KS_STATUS_INVALID_MODEL;
        goto done;
    }
    data = malloc((size_t)size);
    if (!data) {
        snprintf(err, err_cap, "model '%s': out of memory for %ld bytes", path, size);
        st = KS_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    if (fread(data, 1, (size_t)size, f) != (size_t)size) {
        snprintf(err, err_cap, "model '%s': short read", path);
        goto done;
    }
    *data_out = data;
    *size_out = (size_t)size;
    data = NULL;
    st = KS_STATUS_OK;
done:
    free(data);
    fclose(f);
    return st;
}

/* ---- Encrypted models (ks_task_options.key / key_provider) ----
 * The task decrypts each encrypted model once at create, with a key copy from the task's
 * allocator that is wiped as soon as that model is decrypted, and hands the pipeline an in-memory
 * bundle of plain models (wiped by ks_bundle_destroy). The key never reaches a file or the
 * pipeline, and nothing outside create needs it. */

/* The key for encrypted model `name` into a new buffer from task->allocator (free with
 * key_free): task->key, else the key provider's. */
static ks_status key_get(const ks_task_options *task, const char *name, uint8_t **key_out,
                         char *err, size_t err_cap) {
    if (!task->key && !task->key_provider) {
        snprintf(err, err_cap,
                 "model '%s' is encrypted (ks-protect) and needs its key: set key and key_bytes "
                 "(or key_provider) in the task options",
                 name);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (task->key && task->key_bytes != KS_TASK_KEY_BYTES) {
        snprintf(err, err_cap, "task key is %zu bytes; a ks-protect key is %d bytes",
                 task->key_bytes, KS_TASK_KEY_BYTES);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    uint8_t *key = ks__alloc(task->allocator, KS_TASK_KEY_BYTES);
    if (!key) {
        snprintf(err, err_cap, "out of memory for the key of model '%s'", name);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    ks_status st = KS_STATUS_OK;
    if (task->key) {
        memcpy(key, task->key, KS_TASK_KEY_BYTES);
    } else {
        size_t n = 0;
        st = task->key_provider(task->key_user, name, key, KS_TASK_KEY_BYTES, &n);
        if (st == KS_STATUS_OK && n != KS_TASK_KEY_BYTES) {
            snprintf(err, err_cap, "key provider gave %zu bytes for model '%s'; a key is %d bytes",
                     n, name, KS_TASK_KEY_BYTES);
            st = KS_STATUS_INVALID_ARGUMENT;
        } else if (st) {
            snprintf(err, err_cap, "key provider refused model '%s': %s", name,
                     ks_status_string(st));
        }
    }
    if (st) {
        ks__secure_zero(key, KS_TASK_KEY_BYTES);
        ks__free(task->allocator, key);
        return st;
    }
    *key_out = key;
    return KS_STATUS_OK;
}

static void key_free(const ks_task_options *task, uint8_t *key) {
    if (!key) return;
    ks__secure_zero(key, KS_TASK_KEY_BYTES);
    ks__free(task->allocator, key);
}

/* Decrypts the KSME image `data` of model `name` into a new buffer from task->allocator (free
 * with plain_free). */
static ks_status decrypt_model(const ks_task_options *task, const char *name, const uint8_t *data,
                               size_t size, uint8_t **plain_out, size_t *plain_bytes_out, char *err,
                               size_t err_cap) {
    uint8_t *key = NULL;
    ks_status st = key_get(task, name, &key, err, err_cap);
    if (st) return st;
    char why[256];
    st = ks__ksme_decrypt_buffer(data, size, key, KS_TASK_KEY_BYTES, task->allocator, plain_out,
                                 plain_bytes_out, why, sizeof(why));
    key_free(task, key);
    if (st == KS_STATUS_TAMPERED)
        snprintf(err, err_cap,
                 "encrypted model '%s': the key does not open it (wrong key, or the file was "
                 "altered): %s",
                 name, why);
    else if (st)
        snprintf(err, err_cap, "encrypted model '%s': %s", name, why);
    return st;
}

static void plain_free(const ks_task_options *task, uint8_t *plain, size_t plain_bytes) {
    if (!plain) return;
    ks__secure_zero(plain, plain_bytes);
    ks__free(task->allocator, plain);
}

/* Whether `bundle` has an encrypted model entry. */
static bool has_encrypted_model(const ks_bundle *bundle) {
    uint32_t n = ks_bundle_num_entries(bundle);
    for (uint32_t i = 0; i < n; i++) {
        ks_bundle_entry e;
        if (ks_bundle_get_entry(bundle, i, &e) == KS_STATUS_OK && e.kind == KS_BUNDLE_MODEL &&
            ks__ksme_is_encrypted(e.data, e.size_bytes))
            return true;
    }
    return false;
}

/* Builds an in-memory copy of `base` with entry `replace` (UINT32_MAX: none) replaced by
 * `model`, and every encrypted model entry decrypted with its key. `src` names the bundle in
 * messages. */
static ks_status rebuild_bundle(const ks_task_options *task, const ks_bundle *base, const char *src,
                                uint32_t replace, const uint8_t *model, size_t model_bytes,
                                ks_bundle **out, char *err, size_t err_cap) {
    ks_bundle_writer *w = NULL;
    void *image = NULL;
    size_t image_size = 0;
    uint32_t n = ks_bundle_num_entries(base);
    ks_status st = ks_bundle_writer_create(task->allocator, &w);
    if (st) {
        snprintf(err, err_cap, "%s: %s", src, ks_last_error(NULL));
        return st;
    }
    for (uint32_t i = 0; !st && i < n; i++) {
        ks_bundle_entry e;
        st = ks_bundle_get_entry(base, i, &e);
        if (st) break;
        if (i == replace) {
            st = ks_bundle_writer_add(w, e.name, e.kind, model, model_bytes);
        } else if (e.kind == KS_BUNDLE_MODEL && ks__ksme_is_encrypted(e.data, e.size_bytes)) {
            uint8_t *plain = NULL;
            size_t plain_bytes = 0;
            char why[512];
            st = decrypt_model(task, e.name, e.data, e.size_bytes, &plain, &plain_bytes, why,
                               sizeof(why));
            if (st) {
                snprintf(err, err_cap, "%s: %s", src, why);
                goto done;
            }
            st = ks_bundle_writer_add(w, e.name, e.kind, plain, plain_bytes);
            plain_free(task, plain, plain_bytes);
        } else {
            st = ks_bundle_writer_add(w, e.name, e.kind, e.data, e.size_bytes);
        }
    }
    if (!st) st = ks_bundle_writer_finish(w, &image, &image_size);
    if (!st)
        st = ks_bundle_open_buffer(
            image, image_size,
            &(ks_bundle_desc){.allocator = task->allocator, .flags = KS_BUNDLE_COPY_BUFFER}, out);
    if (st) snprintf(err, err_cap, "%s: %s", src, ks_last_error(NULL));
done:
    if (image) ks__secure_zero(image, image_size);
    ks_bundle_buffer_free(task->allocator, image);
    ks_bundle_writer_destroy(w);
    return st;
}

/* Same graph inputs and outputs: count, names, dtypes and ranks (shapes may differ, e.g. a model
 * re-exported at another resolution; the pipeline checks what it needs). */
static bool same_signature(const ks_model *a, const ks_model *b) {
    uint32_t ni = ks_model_num_inputs(a), no = ks_model_num_outputs(a);
    if (ni != ks_model_num_inputs(b) || no != ks_model_num_outputs(b)) return false;
    for (uint32_t i = 0; i < ni + no; i++) {
        ks_tensor_info x, y;
        ks_status sa = i < ni ? ks_model_input_info(a, i, &x) : ks_model_output_info(a, i - ni, &x);
        ks_status sb = i < ni ? ks_model_input_info(b, i, &y) : ks_model_output_info(b, i - ni, &y);
        if (sa || sb || strcmp(x.name, y.name) != 0 || x.dtype != y.dtype ||
            x.shape.rank != y.shape.rank)
            return false;
    }
    return true;
}

/* task->model_path names a .ksm (e.g. an int8 model from ks-quant; encrypted ones are decrypted
 * with the task's key): open the task's default bundle and rebuild it in memory with the single
 * model entry whose signature matches the file replaced by the file. */
static ks_status open_with_model(const ks_task_options *task, const char *default_bundle,
                                 ks_bundle **out, char *err, size_t err_cap) {
    ks_task_options dflt = *task;
    dflt.model_path = NULL;
    ks_bundle *base = NULL;
    ks_model *model = NULL;
    uint8_t *ksm = NULL, *plain = NULL;
    size_t ksm_size = 0, plain_bytes = 0;
    char tmp[512];
    ks_status st = read_file(task->model_path, &ksm, &ksm_size, err, err_cap);
    if (st) return st;
    if (ks__ksme_is_encrypted(ksm, ksm_size)) {
        st = decrypt_model(task, task->model_path, ksm, ksm_size, &plain, &plain_bytes, err,
                           err_cap);
        if (st) goto done;
    }
    const uint8_t *bytes = plain ? plain : ksm;
    size_t num_bytes = plain ? plain_bytes : ksm_size;
    st = ks_model_load_buffer(bytes, num_bytes, NULL, &model);
    if (st) {
        snprintf(err, err_cap, "model '%s': %s", task->model_path, ks_last_error(NULL));
        goto done;
    }
    st = ks__task_open_bundle(&dflt, default_bundle, &base, tmp, sizeof(tmp));
    if (st) {
        snprintf(err, err_cap, "model '%s' replaces a model of the %s, which failed: %s",
                 task->model_path, default_bundle, tmp);
        goto done;
    }
    uint32_t n = ks_bundle_num_entries(base), match = UINT32_MAX, num_matches = 0;
    for (uint32_t i = 0; i < n; i++) {
        ks_bundle_entry e;
        ks_model *m = NULL;
        if (ks_bundle_get_entry(base, i, &e) || e.kind != KS_BUNDLE_MODEL) continue;
        if (ks_model_load_buffer(e.data, e.size_bytes, NULL, &m) == KS_STATUS_OK &&
            same_signature(m, model)) {
            match = i;
            num_matches++;
        }
        ks_model_destroy(m);
    }
    if (num_matches != 1) {
        snprintf(err, err_cap,
                 "model '%s': its inputs and outputs (names, dtypes, ranks) match %u of the "
                 "models in %s; it must match exactly one (or pass a .ksb made with "
                 "ks-task-bundle)",
                 task->model_path, num_matches, default_bundle);
        st = KS_STATUS_INVALID_ARGUMENT;
        goto done;
    }
    snprintf(tmp, sizeof(tmp), "model '%s' in the %s", task->model_path, default_bundle);
    st = rebuild_bundle(task, base, tmp, match, bytes, num_bytes, out, err, err_cap);
done:
    ks_bundle_destroy(base);
    ks_model_destroy(model);
    plain_free(task, plain, plain_bytes);
    free(ksm);
    return st;
}

/* First bytes of the file at path (0 when unreadable). */
static bool has_magic(const char *path, const char magic[4]) {
    char head[4] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t n = fread(head, 1, 4, f);
    fclose(f);
    return n == 4 && memcmp(head, magic, 4) == 0;
}

ks_status ks__task_open_bundle(const ks_task_options *task, const char *default_bundle,
                               ks_bundle **out, char *err, size_t err_cap) {
    bool is_default = !task->model_path || !task->model_path[0];
    if (!is_default && has_magic(task->model_path, "KSME") && !task->key && !task->key_provider) {
        /* Refused before reading the file, so a missing key is the message, not a parse error. */
        snprintf(err, err_cap,
                 "model '%s' is encrypted (ks-protect) and needs its key: set key and key_bytes "
                 "(or key_provider) in the task options",
                 task->model_path);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (!is_default && (has_magic(task->model_path, "KSMF") || has_magic(task->model_path, "KSME")))
        return open_with_model(task, default_bundle, out, err, err_cap);
    char path[KS__TASK_PATH_BYTES];
    ks_status st = bundle_path(task, default_bundle, path, sizeof(path), err, err_cap);
    if (st) return st;
    ks_bundle *b = NULL;
    st = ks_bundle_open_file(path, &(ks_bundle_desc){.allocator = task->allocator}, &b);
    if (st) {
        snprintf(err, err_cap, "%sbundle '%s': %s%s", is_default ? "default " : "", path,
                 ks_last_error(NULL),
                 is_default ? " (build the 'ks_bundles' target, set KESTREL_MODELS_DIR, or pass "
                              "a .ksb as task.model_path)"
                            : "");
        return st;
    }
    if (has_encrypted_model(b)) {
        /* Encrypted models inside a bundle: the pipeline gets a plain copy in memory. */
        char src[KS__TASK_PATH_BYTES + 16];
        snprintf(src, sizeof(src), "bundle '%s'", path);
        ks_bundle *plain = NULL;
        st = rebuild_bundle(task, b, src, UINT32_MAX, NULL, 0, &plain, err, err_cap);
        ks_bundle_destroy(b);
        if (st) return st;
        b = plain;
    }
    *out = b;
    return KS_STATUS_OK;
}

ks_status ks__task_create_pipeline(const ks_bundle *bundle, const ks_task_options *task,
                                   const char *graph_entry, const ks_side_param *params,
                                   uint32_t num_params, ks_pipeline **out) {
    ks_pipeline_desc pd = {.allocator = task->allocator,
                           .side_params = params,
                           .num_side_params = num_params,
                           .graph_entry = graph_entry,
                           .num_threads = task->num_threads > 0 ? task->num_threads : 1,
                           .precision = task->precision,
                           .backend = task->backend};
    return ks_pipeline_create_bundle(bundle, &pd, out);
}

ks_status ks__task_open(const ks_task_options *task, const char *default_bundle,
                        const char *graph_entry, const ks_side_param *params, uint32_t num_params,
                        ks_bundle **bundle_out, ks_pipeline **pipeline_out, char *err,
                        size_t err_cap) {
    ks_bundle *b = NULL;
    ks_status st = ks__task_register_vision_nodes();
    if (st) {
        snprintf(err, err_cap, "%s", ks_last_error(NULL));
        return st;
    }
    st = ks__task_open_bundle(task, default_bundle, &b, err, err_cap);
    if (st) return st;
    st = ks__task_create_pipeline(b, task, graph_entry, params, num_params, pipeline_out);
    if (st) {
        char path[KS__TASK_PATH_BYTES];
        if (bundle_path(task, default_bundle, path, sizeof(path), err, err_cap) == KS_STATUS_OK)
            snprintf(err, err_cap, "bundle '%s': %s", path, ks_last_error(NULL));
        ks_bundle_destroy(b);
        return st;
    }
    *bundle_out = b;
    return KS_STATUS_OK;
}

ks_status ks__task_check_graph(const ks_pipeline *pipeline, const char *output, int32_t *index_out,
                               char *err, size_t err_cap) {
    *index_out = ks_pipeline_output_index(pipeline, output);
    if (ks_pipeline_num_inputs(pipeline) != 1 || *index_out < 0 ||
        ks_pipeline_num_outputs(pipeline) > KS_TASK_MAX_OUTPUTS) {
        snprintf(err, err_cap,
                 "graph must take one image input and output stream '%s' (at most %d outputs)",
                 output, KS_TASK_MAX_OUTPUTS);
        return KS_STATUS_INVALID_MODEL;
    }
    return KS_STATUS_OK;
}

ks_status ks__task_process_image(ks_pipeline *pipeline, const ks_task_options *task,
                                 const ks_image *image, int64_t timestamp_us, int reset,
                                 ks_packet *outs[KS_TASK_MAX_OUTPUTS], int32_t *width_out,
                                 int32_t *height_out, char *err, size_t err_cap) {
    for (int i = 0; i < KS_TASK_MAX_OUTPUTS; i++)
        outs[i] = NULL;
    ks_packet *frame = NULL;
    ks_status st = ks__task_image_packet(ks_pipeline_packet_allocator(pipeline), image,
                                         task->rotation, task->mirror, &frame, err, err_cap);
    if (st) return st;
    const ks_packet_image *view = ks_packet_image_view(frame);
    *width_out = view->width_px;
    *height_out = view->height_px;
    if (reset) ks_pipeline_reset(pipeline);
    const ks_packet *in[1] = {frame};
    st = ks_pipeline_process(pipeline, in, timestamp_us, outs);
    ks_packet_release(frame);
    if (st) snprintf(err, err_cap, "%s", ks_last_error(pipeline));
    return st;
}

void ks__task_release_outputs(ks_packet *outs[KS_TASK_MAX_OUTPUTS]) {
    for (int i = 0; i < KS_TASK_MAX_OUTPUTS; i++) {
        ks_packet_release(outs[i]);
        outs[i] = NULL;
    }
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

ks_status ks__task_config(const ks_bundle *bundle, const char *name, cJSON **out, char *err,
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

void ks__task_labels_free(const ks_allocator *alloc, ks__labels *labels) {
    if (!labels) return;
    ks__free(alloc, labels->names);
    ks__free(alloc, labels->text);
    memset(labels, 0, sizeof(*labels));
}

ks_status ks__task_labels(const ks_allocator *alloc, const ks_bundle *bundle, const char *name,
                          ks__labels *out, char *err, size_t err_cap) {
    memset(out, 0, sizeof(*out));
    if (!name || !name[0]) return KS_STATUS_OK;
    ks_bundle_entry e;
    ks_status st = entry_text(bundle, name, KS_BUNDLE_LABELS, &e, err, err_cap);
    if (st) return st;
    ks__labels l = {0};
    l.text = ks__alloc(alloc, e.size_bytes + 1);
    if (!l.text) return KS_STATUS_OUT_OF_MEMORY;
    memcpy(l.text, e.data, e.size_bytes);
    l.text[e.size_bytes] = '\0';
    uint32_t lines = 0;
    for (size_t i = 0; i < e.size_bytes; i++)
        if (l.text[i] == '\n') lines++;
    lines++;
    if (lines > KS__TASK_MAX_LABELS) {
        ks__free(alloc, l.text);
        snprintf(err, err_cap, "labels entry '%s' has %u lines; the limit is %u", name,
                 (unsigned)lines, KS__TASK_MAX_LABELS);
        return KS_STATUS_LIMIT_EXCEEDED;
    }
    l.names = ks__alloc(alloc, lines * sizeof(char *));
    if (!l.names) {
        ks__free(alloc, l.text);
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

/* ---- task stats ---- */

const char *ks_task_stage_kind_string(ks_task_stage_kind kind) {
    switch (kind) {
    case KS_TASK_STAGE_PREPROCESS:
        return "preprocess";
    case KS_TASK_STAGE_INFERENCE:
        return "inference";
    case KS_TASK_STAGE_POSTPROCESS:
        return "postprocess";
    case KS_TASK_STAGE_OTHER:
        return "other";
    default:
        return "invalid";
    }
}

ks_status ks__task_swap_options(const char *fn, const ks_task_options *created,
                                const ks_task_options *source, ks_task_options *out) {
    if (!created || !source) {
        ks__object_error(NULL, "%s: %s is NULL", fn, created ? "source" : "the task");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    *out = *created;
    out->model_path = source->model_path;
    out->key = source->key;
    out->key_bytes = source->key_bytes;
    out->key_provider = source->key_provider;
    out->key_user = source->key_user;
    return KS_STATUS_OK;
}

ks_status ks__task_swap_failed(const char *fn, const ks_task_options *source, ks_status st) {
    char why[KS_ERROR_CAP];
    snprintf(why, sizeof(why), "%s", ks_last_error(NULL));
    const char *path =
        source->model_path && source->model_path[0] ? source->model_path : "(the default bundle)";
    ks__object_error(NULL, "%s: %s: %s", fn, path, why);
    return st;
}

void ks__task_swap_offer(ks__task_swap *swap, void *replacement, void (*destroy)(void *)) {
    void *old = atomic_exchange_explicit(&swap->pending, replacement, memory_order_acq_rel);
    if (old) destroy(old);
}

void *ks__task_swap_take(ks__task_swap *swap) {
    /* A relaxed look first: the common case (nothing offered) costs no exchange. */
    if (!atomic_load_explicit(&swap->pending, memory_order_relaxed)) return NULL;
    return atomic_exchange_explicit(&swap->pending, NULL, memory_order_acq_rel);
}

void ks__task_clock_swapped(ks__task_clock *clock) {
    *clock = (ks__task_clock){.model_generation = clock->model_generation + 1};
}

uint64_t ks__task_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void ks__task_clock_add(ks__task_clock *clock, uint64_t start_ns) {
    clock->num_calls++;
    clock->total_ns += ks__task_now_ns() - start_ns;
}

void ks__task_clock_post(ks__task_clock *clock, uint64_t start_ns) {
    clock->post_ns += ks__task_now_ns() - start_ns;
}

/* Room for the models between the preprocess stage and the postprocess and other stages. */
#define KS__TASK_MAX_MODELS (KS_TASK_MAX_STAGES - 3)

typedef struct stage_sums {
    ks_task_stage pre, post;
    ks_task_stage models[KS__TASK_MAX_MODELS];
    uint32_t num_models;
    uint64_t nodes_us;
} stage_sums;

static void add_node_times(const ks_pipeline *p, uint32_t depth, stage_sums *s) {
    uint32_t n = ks_pipeline_num_nodes(p);
    for (uint32_t i = 0; i < n; i++) {
        const ks_pipeline *sub = ks_pipeline_node_subgraph(p, i);
        if (sub) {
            if (depth < KS_PIPELINE_MAX_SUBGRAPH_DEPTH) add_node_times(sub, depth + 1, s);
            continue;
        }
        ks_node_stats ns;
        if (ks_pipeline_node_stats(p, i, &ns) != KS_STATUS_OK) continue;
        ks_task_stage *st = &s->post;
        if (strcmp(ns.type_name, "image_to_tensor") == 0 ||
            strcmp(ns.type_name, "model_input") == 0) {
            st = &s->pre;
        } else if (strcmp(ns.type_name, "infer") == 0) {
            uint32_t k = 0;
            while (k < s->num_models && strcmp(s->models[k].name, ns.node_name) != 0)
                k++;
            if (k == s->num_models) {
                if (k == KS__TASK_MAX_MODELS) {
                    k--; /* more models than stages: the last stage takes the rest */
                    snprintf(s->models[k].name, sizeof(s->models[k].name), "other models");
                } else {
                    snprintf(s->models[k].name, sizeof(s->models[k].name), "%s", ns.node_name);
                    s->models[k].kind = KS_TASK_STAGE_INFERENCE;
                    s->num_models++;
                }
            }
            st = &s->models[k];
        }
        st->num_runs += ns.num_calls;
        st->total_ms += (double)ns.total_us * 1e-3;
        s->nodes_us += ns.total_us;
    }
}

ks_status ks__task_stats(const ks_pipeline *pipeline, const ks__task_clock *clock,
                         ks_task_stats *out) {
    if (!out) return KS_STATUS_INVALID_ARGUMENT;
    stage_sums s;
    memset(&s, 0, sizeof(s));
    snprintf(s.pre.name, sizeof(s.pre.name), "preprocess");
    s.pre.kind = KS_TASK_STAGE_PREPROCESS;
    snprintf(s.post.name, sizeof(s.post.name), "postprocess");
    s.post.kind = KS_TASK_STAGE_POSTPROCESS;
    add_node_times(pipeline, 0, &s);
    memset(out, 0, sizeof(*out));
    out->num_calls = clock->num_calls;
    out->model_generation = clock->model_generation;
    out->total_ms = (double)clock->total_ns * 1e-6;
    out->stages[out->num_stages++] = s.pre;
    for (uint32_t k = 0; k < s.num_models; k++) {
        out->stages[out->num_stages++] = s.models[k];
        out->inference_ms += s.models[k].total_ms;
    }
    s.post.total_ms += (double)clock->post_ns * 1e-6;
    if (clock->post_ns && !s.post.num_runs) s.post.num_runs = clock->num_calls;
    out->stages[out->num_stages++] = s.post;
    ks_task_stage *other = &out->stages[out->num_stages++];
    snprintf(other->name, sizeof(other->name), "other");
    other->kind = KS_TASK_STAGE_OTHER;
    other->num_runs = clock->num_calls;
    double rest = out->total_ms - (double)s.nodes_us * 1e-3 - (double)clock->post_ns * 1e-6;
    other->total_ms = rest > 0.0 ? rest : 0.0;
    return KS_STATUS_OK;
}
