/* ks_model: loading .ksm files (mapped or from memory) and introspection. */
#include "model.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ksm.h"

static ks_status model_new(const ks_model_desc *desc, ks_model **out) {
    ks_allocator a = ks__allocator_or_default(desc ? desc->allocator : NULL);
    ks_model *m = ks__alloc(&a, sizeof(*m));
    if (!m) {
        ks__object_error(NULL, "out of memory allocating a model");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    memset(m, 0, sizeof(*m));
    m->obj.magic = KS__OBJECT_MAGIC;
    m->alloc = a;
    m->flags = desc ? desc->flags : 0;
    ks__graph_init(&m->graph, &a);
    *out = m;
    return KS_STATUS_OK;
}

void ks_model_destroy(ks_model *m) {
    if (!m) return;
    ks__graph_free(&m->graph);
    if (m->mapped) munmap(m->mapped, m->mapped_bytes);
    ks_allocator a = m->alloc;
    ks__free(&a, m->owned);
    m->obj.magic = 0;
    ks__free(&a, m);
}

/* Parses m->image; the image must stay valid for the model's life. */
static ks_status model_parse(ks_model *m, const char *what) {
    char err[KS_ERROR_CAP - 64];
    err[0] = 0;
    ks_status st = ks__ksm_read(m->image, m->image_bytes, !(m->flags & KS_MODEL_SKIP_CHECKSUM),
                                &m->graph, err, sizeof(err));
    if (st) ks__object_error(NULL, "%s: %s", what, err);
    return st;
}

ks_status ks_model_load_buffer(const void *data, size_t size_bytes, const ks_model_desc *desc,
                               ks_model **model_out) {
    if (!data || !model_out) {
        ks__object_error(NULL, "ks_model_load_buffer: data and model_out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks_model *m = NULL;
    ks_status st = model_new(desc, &m);
    if (st) return st;
    /* Kernels read weights as typed arrays, so an unaligned caller buffer is copied. */
    bool copy = (m->flags & KS_MODEL_COPY_BUFFER) || ((uintptr_t)data % KSM_WEIGHT_ALIGN) != 0;
    if (copy) {
        m->owned = ks__alloc_aligned(&m->alloc, size_bytes ? size_bytes : 1, KSM_WEIGHT_ALIGN);
        if (!m->owned) {
            ks__object_error(NULL, "out of memory copying a %zu-byte model", size_bytes);
            st = KS_STATUS_OUT_OF_MEMORY;
            goto error;
        }
        memcpy(m->owned, data, size_bytes);
        m->image = m->owned;
    } else {
        m->image = data;
    }
    m->image_bytes = size_bytes;
    st = model_parse(m, "model buffer");
    if (st) goto error;
    *model_out = m;
    return KS_STATUS_OK;
error:
    ks_model_destroy(m);
    return st;
}

ks_status ks_model_load_file(const char *path, const ks_model_desc *desc, ks_model **model_out) {
    if (!path || !model_out) {
        ks__object_error(NULL, "ks_model_load_file: path and model_out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks_model *m = NULL;
    ks_status st = model_new(desc, &m);
    if (st) return st;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        ks__object_error(NULL, "%s: cannot open", path);
        st = KS_STATUS_IO_ERROR;
        goto error;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        ks__object_error(NULL, "%s: not a regular file", path);
        st = KS_STATUS_IO_ERROR;
        goto error;
    }
    size_t n = (size_t)sb.st_size;
    if (n < 64) {
        ks__object_error(NULL, "%s: %zu bytes is too short for a .ksm file", path, n);
        st = KS_STATUS_INVALID_MODEL;
        goto error;
    }
    if (!(m->flags & KS_MODEL_NO_MMAP)) {
        void *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            m->mapped = p;
            m->mapped_bytes = n;
            m->image = p;
        }
    }
    if (!m->image) {
        m->owned = ks__alloc_aligned(&m->alloc, n, KSM_WEIGHT_ALIGN);
        if (!m->owned) {
            ks__object_error(NULL, "%s: out of memory reading %zu bytes", path, n);
            st = KS_STATUS_OUT_OF_MEMORY;
            goto error;
        }
        size_t got = 0;
        while (got < n) {
            ssize_t r = read(fd, (uint8_t *)m->owned + got, n - got);
            if (r <= 0) break;
            got += (size_t)r;
        }
        if (got != n) {
            ks__object_error(NULL, "%s: read %zu of %zu bytes", path, got, n);
            st = KS_STATUS_IO_ERROR;
            goto error;
        }
        m->image = m->owned;
    }
    close(fd);
    fd = -1;
    m->image_bytes = n;
    st = model_parse(m, path);
    if (st) goto error;
    *model_out = m;
    return KS_STATUS_OK;
error:
    if (fd >= 0) close(fd);
    ks_model_destroy(m);
    return st;
}

uint32_t ks_model_num_inputs(const ks_model *m) {
    return m ? m->graph.num_inputs : 0;
}

uint32_t ks_model_num_outputs(const ks_model *m) {
    return m ? m->graph.num_outputs : 0;
}

void ks__tensor_info_from_def(const ks__tensor *t, ks_tensor_info *info) {
    memset(info, 0, sizeof(*info));
    info->name = t->name;
    info->dtype = t->dtype;
    info->shape.rank = t->rank;
    for (int32_t d = 0; d < t->rank; d++)
        info->shape.dims[d] = t->dims[d];
    if (t->quant.count) {
        info->scale = t->quant.scales[0];
        info->zero_point = t->quant.zero_points[0];
    }
}

static ks_status io_info(const ks_model *m, uint32_t index, bool input, ks_tensor_info *out) {
    if (!m || !out) return KS_STATUS_INVALID_ARGUMENT;
    uint32_t n = input ? m->graph.num_inputs : m->graph.num_outputs;
    if (index >= n) {
        ks__object_error((ks__object *)&m->obj, "%s index %u out of range (model has %u)",
                         input ? "input" : "output", index, n);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    int32_t id = input ? m->graph.inputs[index] : m->graph.outputs[index];
    ks__tensor_info_from_def(&m->graph.tensors[id], out);
    return KS_STATUS_OK;
}

ks_status ks_model_input_info(const ks_model *m, uint32_t index, ks_tensor_info *info_out) {
    return io_info(m, index, true, info_out);
}

ks_status ks_model_output_info(const ks_model *m, uint32_t index, ks_tensor_info *info_out) {
    return io_info(m, index, false, info_out);
}

const char *ks_model_metadata(const ks_model *m, const char *key) {
    if (!m || !key) return NULL;
    return ks__graph_get_meta(&m->graph, key);
}
