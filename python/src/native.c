/* kestrel._native: the CPython extension under the Python package `kestrel` (docs/python.md).
 *
 * It only marshals: models, sessions and the vision tasks of the public C API, with arrays in
 * through the buffer protocol and results out as bytearrays (NumPy wraps them without a copy on
 * the Python side, kestrel/_core.py), so the module needs no NumPy headers at build time. The
 * public API, its types and its docstrings are the pure-Python modules of the package.
 *
 * Errors: every failure raises through kestrel._errors.from_status(status, message), which picks
 * the KestrelError subclass of the status; the message is the library's ks_last_error text.
 *
 * Threads: the GIL is released around ks_session_run, ks_session_reshape and every task call.
 * A session or task is used by one thread at a time (engine.h); a second thread that calls into
 * a busy object gets KS_STATUS_INVALID_STATE instead of a data race, and close() of a busy object
 * is refused the same way. The `busy` flags are read and written with the GIL held.
 *
 * Lifetimes: a Session holds a reference to its Model object; Model.close() with live sessions
 * only marks the model closed (no new sessions, no queries) and the last session to go destroys
 * the ks_model, since engine.h requires sessions to be destroyed first. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifdef KS_PY_HAVE_EGL
#include <EGL/egl.h>
#include <EGL/eglext.h>
#endif

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kestrel/classify.h"
#include "kestrel/ar.h"
#include "kestrel/detect.h"
#include "kestrel/effect.h"
#include "kestrel/engine.h"
#include "kestrel/face.h"
#include "kestrel/hand.h"
#include "kestrel/pose.h"
#include "kestrel/segment.h"
#include "kestrel/vision.h"

/* ---------------------------------------------------------------------------------------- */
/* Errors                                                                                    */

/* Raises the KestrelError subclass of `status` with `message`; returns NULL for `return`. */
static PyObject *raise_status(ks_status status, const char *message) {
    PyObject *mod = PyImport_ImportModule("kestrel._errors");
    if (!mod) return NULL;
    PyObject *exc =
        PyObject_CallMethod(mod, "from_status", "is", (int)status, message ? message : "");
    Py_DECREF(mod);
    if (!exc) return NULL;
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

#if defined(__GNUC__) || defined(__clang__)
#define PRINTF_LIKE(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define PRINTF_LIKE(fmt_index, first_arg)
#endif
static PyObject *raise_fmt(ks_status status, const char *fmt, ...) PRINTF_LIKE(2, 3);

static PyObject *raise_fmt(ks_status status, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return raise_status(status, buf);
}

/* ---------------------------------------------------------------------------------------- */
/* Dtypes                                                                                    */

/* The NumPy dtype name of a Kestrel dtype (np.dtype(name) on the Python side). */
static const char *dtype_numpy_name(ks_dtype dtype) {
    switch (dtype) {
    case KS_DTYPE_F32:
        return "float32";
    case KS_DTYPE_F16:
        return "float16";
    case KS_DTYPE_I32:
        return "int32";
    case KS_DTYPE_I64:
        return "int64";
    case KS_DTYPE_U8:
        return "uint8";
    case KS_DTYPE_I8:
        return "int8";
    case KS_DTYPE_BOOL:
        return "bool";
    case KS_DTYPE_I16:
        return "int16";
    default:
        return "invalid";
    }
}

/* The Kestrel dtype of a buffer-protocol format string (struct module syntax, as NumPy
 * exports it: an optional byte-order character, then one type code), or KS_DTYPE_INVALID. */
static ks_dtype dtype_of_format(const char *format, Py_ssize_t itemsize) {
    if (!format) return itemsize == 1 ? KS_DTYPE_U8 : KS_DTYPE_INVALID;
    if (*format == '@' || *format == '=' || *format == '<')
        format++;
    else if (*format == '>' || *format == '!')
        return KS_DTYPE_INVALID; /* big-endian data */
    if (!format[0] || format[1]) return KS_DTYPE_INVALID;
    switch (format[0]) {
    case 'f':
        return itemsize == 4 ? KS_DTYPE_F32 : KS_DTYPE_INVALID;
    case 'e':
        return itemsize == 2 ? KS_DTYPE_F16 : KS_DTYPE_INVALID;
    case 'B':
        return itemsize == 1 ? KS_DTYPE_U8 : KS_DTYPE_INVALID;
    case 'b':
        return itemsize == 1 ? KS_DTYPE_I8 : KS_DTYPE_INVALID;
    case '?':
        return itemsize == 1 ? KS_DTYPE_BOOL : KS_DTYPE_INVALID;
    case 'h':
    case 'i':
    case 'l':
    case 'q':
        return itemsize == 2   ? KS_DTYPE_I16
               : itemsize == 4 ? KS_DTYPE_I32
               : itemsize == 8 ? KS_DTYPE_I64
                               : KS_DTYPE_INVALID;
    default:
        return KS_DTYPE_INVALID;
    }
}

/* The NumPy name of any buffer format (for messages): "float64", "uint16", ... */
static void format_name(const char *format, Py_ssize_t itemsize, char *out, size_t out_size) {
    const char *f = format ? format : "B";
    int big = 0;
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    else if (*f == '>' || *f == '!')
        big = 1, f++;
    const char *kind = NULL;
    switch (f[1] ? 0 : f[0]) {
    case 'e':
    case 'f':
    case 'd':
        kind = "float";
        break;
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
        kind = "int";
        break;
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
        kind = "uint";
        break;
    case '?':
        kind = "bool";
        break;
    default:
        break;
    }
    if (!kind)
        snprintf(out, out_size, "'%s'", f);
    else if (f[0] == '?')
        snprintf(out, out_size, "bool");
    else
        snprintf(out, out_size, "%s%s%d", big ? "big-endian " : "", kind, (int)(itemsize * 8));
}

static PyObject *shape_tuple(const ks_tensor_shape *shape) {
    int32_t rank = shape->rank < 0 ? 0 : shape->rank > KS_MAX_RANK ? KS_MAX_RANK : shape->rank;
    PyObject *t = PyTuple_New(rank);
    if (!t) return NULL;
    for (int32_t i = 0; i < rank; i++) {
        PyObject *d = PyLong_FromLongLong((long long)shape->dims[i]);
        if (!d) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, d);
    }
    return t;
}

/* (name, dtype name, shape tuple, scale, zero_point) */
static PyObject *info_tuple(const ks_tensor_info *info) {
    PyObject *shape = shape_tuple(&info->shape);
    if (!shape) return NULL;
    return Py_BuildValue("(ssNdi)", info->name ? info->name : "", dtype_numpy_name(info->dtype),
                         shape, (double)info->scale, (int)info->zero_point);
}

/* ---------------------------------------------------------------------------------------- */
/* Model                                                                                     */

typedef struct ModelObject {
    PyObject_HEAD ks_model *model;
    int closed;            /* close() was called: no new sessions or queries */
    Py_ssize_t n_sessions; /* live sessions on `model` */
} ModelObject;

static PyTypeObject ModelType;

static void model_release(ModelObject *self) {
    if (self->model && self->n_sessions == 0) {
        ks_model_destroy(self->model);
        self->model = NULL;
    }
}

static void Model_dealloc(ModelObject *self) {
    /* Sessions hold a reference, so none is alive here. */
    ks_model_destroy(self->model);
    self->model = NULL;
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int model_check_open(ModelObject *self) {
    if (self->closed || !self->model) {
        raise_status(KS_STATUS_INVALID_STATE, "the model is closed");
        return -1;
    }
    return 0;
}

static PyObject *native_load_model(PyObject *mod, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"path", "key", "threads", NULL};
    PyObject *path_obj = NULL;
    Py_buffer key = {0};
    int threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|z*i", kwlist, PyUnicode_FSConverter, &path_obj,
                                     &key, &threads))
        return NULL;
    ks_model_desc desc = {.num_threads = threads > 0 ? (uint32_t)threads : 0};
    if (key.buf) {
        desc.key = key.buf;
        desc.key_bytes = (size_t)key.len;
    }
    ks_model *model = NULL;
    ks_status st;
    const char *path = PyBytes_AS_STRING(path_obj);
    char message[1024] = "";
    PyThreadState *save = PyEval_SaveThread();
    st = ks_model_load_file(path, &desc, &model);
    if (st != KS_STATUS_OK) snprintf(message, sizeof message, "%s", ks_last_error(NULL));
    PyEval_RestoreThread(save);
    if (key.buf) PyBuffer_Release(&key);
    Py_DECREF(path_obj);
    if (st != KS_STATUS_OK) return raise_status(st, message);
    ModelObject *self = PyObject_New(ModelObject, &ModelType);
    if (!self) {
        ks_model_destroy(model);
        return NULL;
    }
    self->model = model;
    self->closed = 0;
    self->n_sessions = 0;
    return (PyObject *)self;
}

static PyObject *model_infos(ModelObject *self, int outputs) {
    if (model_check_open(self)) return NULL;
    uint32_t n = outputs ? ks_model_num_outputs(self->model) : ks_model_num_inputs(self->model);
    PyObject *list = PyList_New(n);
    if (!list) return NULL;
    for (uint32_t i = 0; i < n; i++) {
        ks_tensor_info info;
        ks_status st = outputs ? ks_model_output_info(self->model, i, &info)
                               : ks_model_input_info(self->model, i, &info);
        if (st != KS_STATUS_OK) {
            Py_DECREF(list);
            return raise_status(st, ks_last_error(self->model));
        }
        PyObject *t = info_tuple(&info);
        if (!t) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, t);
    }
    return list;
}

static PyObject *Model_inputs(ModelObject *self, PyObject *unused) {
    return model_infos(self, 0);
}

static PyObject *Model_outputs(ModelObject *self, PyObject *unused) {
    return model_infos(self, 1);
}

static PyObject *Model_metadata(ModelObject *self, PyObject *arg) {
    if (model_check_open(self)) return NULL;
    const char *key = PyUnicode_AsUTF8(arg);
    if (!key) return NULL;
    const char *v = ks_model_metadata(self->model, key);
    if (!v) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(v, (Py_ssize_t)strlen(v), "replace");
}

static PyObject *Model_close(ModelObject *self, PyObject *unused) {
    self->closed = 1;
    model_release(self);
    Py_RETURN_NONE;
}

static PyObject *Model_get_closed(ModelObject *self, void *unused) {
    return PyBool_FromLong(self->closed);
}

static PyMethodDef Model_methods[] = {
    {"inputs", (PyCFunction)Model_inputs, METH_NOARGS, "[(name, dtype, shape, scale, zp)]"},
    {"outputs", (PyCFunction)Model_outputs, METH_NOARGS, "[(name, dtype, shape, scale, zp)]"},
    {"metadata", (PyCFunction)Model_metadata, METH_O, "metadata value or None"},
    {"close", (PyCFunction)Model_close, METH_NOARGS, "release the model (deferred)"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Model_getset[] = {{"closed", (getter)Model_get_closed, NULL, NULL, NULL},
                                     {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kestrel._native.Model",
    .tp_basicsize = sizeof(ModelObject),
    .tp_dealloc = (destructor)Model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A loaded .ksm model (use kestrel.Model).",
    .tp_methods = Model_methods,
    .tp_getset = Model_getset,
};

/* ---------------------------------------------------------------------------------------- */
/* Session                                                                                   */

typedef struct SessionObject {
    PyObject_HEAD ModelObject *model; /* strong reference */
    ks_session *session;
    uint32_t n_inputs, n_outputs;
    int planned; /* a reshape succeeded for `shapes` */
    int busy;    /* a thread is inside run/reshape with the GIL released */
    ks_tensor_shape *shapes;
    Py_ssize_t n_views; /* live OutputView objects: arrays of run_views() */
    int close_pending;  /* close() while views lived: the last view's release destroys */
} SessionObject;

static PyTypeObject SessionType;

static void session_release(SessionObject *self) {
    ks_session_destroy(self->session);
    self->session = NULL;
    PyMem_Free(self->shapes);
    self->shapes = NULL;
    if (self->model) {
        self->model->n_sessions--;
        if (self->model->closed) model_release(self->model);
        Py_CLEAR(self->model);
    }
}

static void Session_dealloc(SessionObject *self) {
    session_release(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Session_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"model", "threads", "precision", "backend", "flags", NULL};
    ModelObject *model = NULL;
    int threads = 1, precision = 0, backend = 0;
    unsigned int flags = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!|iiiI", kwlist, &ModelType, &model, &threads,
                                     &precision, &backend, &flags))
        return NULL;
    if (model_check_open(model)) return NULL;
    if (threads < 0 || threads > 1024)
        return raise_fmt(KS_STATUS_INVALID_ARGUMENT, "threads=%d: expected 0..1024", threads);
    ks_session_desc desc = {.num_threads = threads,
                            .precision = (ks_precision)precision,
                            .backend = (ks_backend)backend,
                            .flags = flags};
    ks_session *s = NULL;
    ks_status st;
    char message[1024] = "";
    PyThreadState *save = PyEval_SaveThread();
    st = ks_session_create(model->model, &desc, &s);
    if (st != KS_STATUS_OK) snprintf(message, sizeof message, "%s", ks_last_error(NULL));
    PyEval_RestoreThread(save);
    if (st != KS_STATUS_OK) return raise_status(st, message);
    SessionObject *self = (SessionObject *)type->tp_alloc(type, 0);
    if (!self) {
        ks_session_destroy(s);
        return NULL;
    }
    self->session = s;
    self->model = model;
    Py_INCREF(model);
    model->n_sessions++;
    self->n_inputs = ks_model_num_inputs(model->model);
    self->n_outputs = ks_model_num_outputs(model->model);
    self->shapes = PyMem_Calloc(self->n_inputs ? self->n_inputs : 1, sizeof(ks_tensor_shape));
    if (!self->shapes) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    /* Plan for the model's own shapes now when they are static, so the first run does not. */
    int is_static = 1;
    for (uint32_t i = 0; i < self->n_inputs; i++) {
        ks_tensor_info info;
        if (ks_model_input_info(model->model, i, &info) != KS_STATUS_OK) {
            is_static = 0;
            break;
        }
        self->shapes[i] = info.shape;
        for (int32_t d = 0; d < info.shape.rank; d++)
            if (info.shape.dims[d] < 0) is_static = 0;
    }
    if (is_static) {
        save = PyEval_SaveThread();
        st = ks_session_reshape(s, self->shapes);
        PyEval_RestoreThread(save);
        if (st != KS_STATUS_OK) {
            PyObject *r = raise_status(st, ks_last_error(s));
            Py_DECREF(self);
            return r;
        }
        self->planned = 1;
    }
    return (PyObject *)self;
}

static int session_check(SessionObject *self) {
    if (!self->session || self->close_pending) {
        raise_status(KS_STATUS_INVALID_STATE, "the session is closed");
        return -1;
    }
    if (self->busy) {
        raise_status(KS_STATUS_INVALID_STATE,
                     "the session is running on another thread (a session is used by one "
                     "thread at a time; make one session per thread)");
        return -1;
    }
    return 0;
}

static int same_shape(const ks_tensor_shape *a, const ks_tensor_shape *b) {
    if (a->rank != b->rank) return 0;
    for (int32_t i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

/* A read-only buffer over one output tensor of a session (run_views): no copy. It holds the
 * session, whose memory it views: the session's close() is deferred until the last view goes,
 * and a run that would re-plan the memory (new input shapes) is refused while views live. A run
 * with the same shapes writes the new outputs into the same memory, so the views show them. */
typedef struct OutputViewObject {
    PyObject_HEAD SessionObject *session; /* strong reference */
    void *data;
    Py_ssize_t len;
} OutputViewObject;

static int OutputView_getbuffer(OutputViewObject *self, Py_buffer *view, int flags) {
    if (flags & PyBUF_WRITABLE) {
        PyErr_SetString(PyExc_BufferError,
                        "arrays from run(copy=False) view the session's memory and are "
                        "read-only; copy one (x.copy()) to modify it");
        view->obj = NULL;
        return -1;
    }
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data, self->len, 1, flags);
}

static PyBufferProcs OutputView_as_buffer = {(getbufferproc)OutputView_getbuffer, NULL};

static void OutputView_dealloc(OutputViewObject *self) {
    SessionObject *s = self->session;
    if (s) {
        s->n_views--;
        if (s->n_views == 0 && s->close_pending) {
            s->close_pending = 0;
            session_release(s);
        }
        Py_DECREF(s);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject OutputViewType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kestrel._native.OutputView",
    .tp_basicsize = sizeof(OutputViewObject),
    .tp_dealloc = (destructor)OutputView_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Read-only memory of one session output (kestrel.Session.run(copy=False)).",
    .tp_as_buffer = &OutputView_as_buffer,
};

static PyObject *output_view_new(SessionObject *session, void *data, size_t len) {
    OutputViewObject *v = PyObject_New(OutputViewObject, &OutputViewType);
    if (!v) return NULL;
    v->session = session;
    Py_INCREF(session);
    session->n_views++;
    v->data = data;
    v->len = (Py_ssize_t)len;
    return (PyObject *)v;
}

/* Session.run(inputs: sequence in model input order) -> [(bytearray, dtype, shape) | None];
 * with views, OutputView objects instead of bytearrays (no copy). */
static PyObject *session_run_impl(SessionObject *self, PyObject *arg, int views_out) {
    if (session_check(self)) return NULL;
    /* Busy from here on: getting a buffer may run Python code (and so let another thread in). */
    self->busy = 1;
    PyObject *seq = PySequence_Fast(arg, "run() expects a sequence of arrays");
    if (!seq) {
        self->busy = 0;
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *result = NULL;
    Py_buffer views[16];
    ks_tensor_shape new_shapes[16];
    Py_ssize_t n_views = 0;
    if (n != (Py_ssize_t)self->n_inputs) {
        raise_fmt(KS_STATUS_INVALID_ARGUMENT, "the model has %u inputs, %zd were given",
                  (unsigned)self->n_inputs, n);
        goto done;
    }
    if (n > 16) {
        raise_fmt(KS_STATUS_UNSUPPORTED, "models with more than 16 inputs (%zd)", n);
        goto done;
    }
    int need_reshape = !self->planned;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        ks_tensor_info info;
        ks_model_input_info(self->model->model, (uint32_t)i, &info);
        if (PyObject_GetBuffer(item, &views[i], PyBUF_RECORDS_RO) != 0) {
            PyErr_Clear();
            raise_fmt(KS_STATUS_INVALID_ARGUMENT,
                      "input '%s': a %s is not an array (expected a NumPy array or another "
                      "buffer-protocol object)",
                      info.name, Py_TYPE(item)->tp_name);
            goto done;
        }
        n_views++;
        Py_buffer *v = &views[i];
        if (!PyBuffer_IsContiguous(v, 'C')) {
            raise_fmt(KS_STATUS_INVALID_ARGUMENT,
                      "input '%s' is not C-contiguous (a transposed or sliced view); pass "
                      "numpy.ascontiguousarray(x)",
                      info.name);
            goto done;
        }
        ks_dtype dt = dtype_of_format(v->format, v->itemsize);
        if (dt != info.dtype) {
            char got[64];
            format_name(v->format, v->itemsize, got, sizeof got);
            raise_fmt(KS_STATUS_INVALID_ARGUMENT,
                      "input '%s' has dtype %s; the model expects %s (convert with "
                      "x.astype(numpy.%s))",
                      info.name, got, dtype_numpy_name(info.dtype), dtype_numpy_name(info.dtype));
            goto done;
        }
        if (v->ndim > KS_MAX_RANK) {
            raise_fmt(KS_STATUS_INVALID_SHAPE, "input '%s' has rank %d, above %d", info.name,
                      v->ndim, KS_MAX_RANK);
            goto done;
        }
        memset(&new_shapes[i], 0, sizeof new_shapes[i]);
        new_shapes[i].rank = v->ndim;
        for (int d = 0; d < v->ndim; d++)
            new_shapes[i].dims[d] = v->shape[d];
        if (!same_shape(&new_shapes[i], &self->shapes[i])) need_reshape = 1;
    }
    if (need_reshape && self->n_views > 0) {
        raise_fmt(KS_STATUS_INVALID_STATE,
                  "run(): these inputs re-plan the session's memory (new shapes, or outputs "
                  "switched on or off), while %zd array(s) from run(copy=False) still view it; "
                  "delete them (or keep copies) first",
                  self->n_views);
        goto done;
    }
    ks_status st = KS_STATUS_OK;
    int stage = 0; /* 1: reshape failed, 2: input view failed, 3: size mismatch, 4: run */
    uint32_t bad = 0;
    size_t bad_bytes = 0;
    PyThreadState *save = PyEval_SaveThread();
    if (need_reshape) {
        st = ks_session_reshape(self->session, new_shapes);
        if (st != KS_STATUS_OK) stage = 1;
    }
    for (uint32_t i = 0; st == KS_STATUS_OK && i < (uint32_t)n; i++) {
        ks_tensor t;
        st = ks_session_input(self->session, i, &t);
        if (st != KS_STATUS_OK) {
            stage = 2;
            bad = i;
        } else if (t.size_bytes != (size_t)views[i].len) {
            st = KS_STATUS_INVALID_SHAPE;
            stage = 3;
            bad = i;
            bad_bytes = t.size_bytes;
        } else if (t.size_bytes) {
            memcpy(t.data, views[i].buf, t.size_bytes);
        }
    }
    if (st == KS_STATUS_OK) {
        st = ks_session_run(self->session);
        if (st != KS_STATUS_OK) stage = 4;
    }
    PyEval_RestoreThread(save);
    if (need_reshape) {
        if (stage == 1) {
            self->planned = 0;
        } else {
            memcpy(self->shapes, new_shapes, sizeof(ks_tensor_shape) * (size_t)n);
            self->planned = 1;
        }
    }
    if (st != KS_STATUS_OK) {
        if (stage == 3)
            raise_fmt(st, "input %u holds %zd bytes; the planned tensor has %zu", (unsigned)bad,
                      views[bad].len, bad_bytes);
        else
            raise_status(st, ks_last_error(self->session));
        goto done;
    }
    result = PyList_New(self->n_outputs);
    if (!result) goto done;
    for (uint32_t o = 0; o < self->n_outputs; o++) {
        ks_tensor t;
        if (!ks_session_output_needed(self->session, o) ||
            ks_session_output(self->session, o, &t) != KS_STATUS_OK) {
            Py_INCREF(Py_None);
            PyList_SET_ITEM(result, o, Py_None);
            continue;
        }
        PyObject *data = views_out
                             ? output_view_new(self, t.data, t.size_bytes)
                             : PyByteArray_FromStringAndSize(t.data, (Py_ssize_t)t.size_bytes);
        PyObject *shape = data ? shape_tuple(&t.info.shape) : NULL;
        PyObject *item =
            shape ? Py_BuildValue("(NsN)", data, dtype_numpy_name(t.info.dtype), shape) : NULL;
        if (!item) {
            Py_XDECREF(data);
            Py_XDECREF(shape);
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, o, item);
    }
done:
    for (Py_ssize_t i = 0; i < n_views; i++)
        PyBuffer_Release(&views[i]);
    Py_DECREF(seq);
    self->busy = 0;
    return result;
}

static PyObject *Session_run(SessionObject *self, PyObject *arg) {
    return session_run_impl(self, arg, 0);
}

static PyObject *Session_run_views(SessionObject *self, PyObject *arg) {
    return session_run_impl(self, arg, 1);
}

static PyObject *Session_set_output_needed(SessionObject *self, PyObject *args) {
    unsigned int index;
    int needed;
    if (!PyArg_ParseTuple(args, "Ip", &index, &needed)) return NULL;
    if (session_check(self)) return NULL;
    ks_status st = ks_session_set_output_needed(self->session, index, needed);
    if (st != KS_STATUS_OK) return raise_status(st, ks_last_error(self->session));
    self->planned = 0; /* takes effect at the next reshape */
    Py_RETURN_NONE;
}

static PyObject *Session_close(SessionObject *self, PyObject *unused) {
    if (self->busy)
        return raise_status(KS_STATUS_INVALID_STATE,
                            "close(): the session is running on another thread");
    if (self->n_views > 0)
        self->close_pending = 1; /* closed now; destroyed when the last view goes */
    else
        session_release(self);
    Py_RETURN_NONE;
}

static PyObject *Session_get_closed(SessionObject *self, void *unused) {
    return PyBool_FromLong(self->session == NULL || self->close_pending);
}

static PyObject *Session_get_backend(SessionObject *self, void *unused) {
    if (session_check(self)) return NULL;
    return PyUnicode_FromString(ks_backend_string(ks_session_backend(self->session)));
}

static PyObject *Session_get_shapes(SessionObject *self, void *unused) {
    if (session_check(self)) return NULL;
    if (!self->planned) Py_RETURN_NONE;
    PyObject *list = PyList_New(self->n_inputs);
    if (!list) return NULL;
    for (uint32_t i = 0; i < self->n_inputs; i++) {
        PyObject *t = shape_tuple(&self->shapes[i]);
        if (!t) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, t);
    }
    return list;
}

/* Per-op profile of one run: [(op, node, kernel, elapsed_ns, flops, node_index)]. */
typedef struct profile_acc {
    PyObject *list;
    int failed;
} profile_acc;

static void profile_cb(void *user, const ks_op_profile *p) {
    profile_acc *acc = user;
    if (acc->failed) return;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *t =
        Py_BuildValue("(sssKKI)", p->op_name ? p->op_name : "", p->node_name ? p->node_name : "",
                      p->kernel_name ? p->kernel_name : "", (unsigned long long)p->elapsed_ns,
                      (unsigned long long)p->flops, (unsigned)p->node_index);
    if (!t || PyList_Append(acc->list, t) != 0) acc->failed = 1;
    Py_XDECREF(t);
    PyGILState_Release(g);
}

static PyObject *Session_profile(SessionObject *self, PyObject *unused) {
    if (session_check(self)) return NULL;
    if (!self->planned)
        return raise_status(KS_STATUS_INVALID_STATE, "profile(): run the session once first");
    profile_acc acc = {PyList_New(0), 0};
    if (!acc.list) return NULL;
    ks_session_set_profiler(self->session, profile_cb, &acc);
    ks_status st;
    self->busy = 1;
    PyThreadState *save = PyEval_SaveThread();
    st = ks_session_run(self->session);
    PyEval_RestoreThread(save);
    self->busy = 0;
    ks_session_set_profiler(self->session, NULL, NULL);
    if (acc.failed) {
        Py_DECREF(acc.list);
        return NULL;
    }
    if (st != KS_STATUS_OK) {
        Py_DECREF(acc.list);
        return raise_status(st, ks_last_error(self->session));
    }
    return acc.list;
}

static PyMethodDef Session_methods[] = {
    {"run", (PyCFunction)Session_run, METH_O, "run(inputs) -> [(bytearray, dtype, shape)]"},
    {"run_views", (PyCFunction)Session_run_views, METH_O,
     "run_views(inputs) -> [(OutputView, dtype, shape)]: the outputs without a copy"},
    {"set_output_needed", (PyCFunction)Session_set_output_needed, METH_VARARGS, NULL},
    {"profile", (PyCFunction)Session_profile, METH_NOARGS, "one profiled run"},
    {"close", (PyCFunction)Session_close, METH_NOARGS, "destroy the session"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Session_getset[] = {
    {"closed", (getter)Session_get_closed, NULL, NULL, NULL},
    {"backend", (getter)Session_get_backend, NULL, NULL, NULL},
    {"input_shapes", (getter)Session_get_shapes, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject SessionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kestrel._native.Session",
    .tp_basicsize = sizeof(SessionObject),
    .tp_dealloc = (destructor)Session_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A session on a model (use kestrel.Session).",
    .tp_methods = Session_methods,
    .tp_getset = Session_getset,
    .tp_new = Session_new,
};

/* ---------------------------------------------------------------------------------------- */
/* Tasks                                                                                     */

enum task_kind {
    TASK_FACE_DETECTOR = 0,
    TASK_FACE_LANDMARKER = 1,
    TASK_POSE_LANDMARKER = 2,
    TASK_HAND_LANDMARKER = 3,
    TASK_SEGMENTER = 4,
    TASK_OBJECT_DETECTOR = 5,
    TASK_IMAGE_CLASSIFIER = 6,
    TASK_KIND_COUNT
};

typedef struct TaskObject {
    PyObject_HEAD int kind;
    void *handle;
    int busy;
    int swapping; /* swap_model calls in progress (GIL released); close() waits for none */
    int64_t last_timestamp_us;
} TaskObject;

static void task_destroy(TaskObject *self) {
    void *h = self->handle;
    self->handle = NULL;
    if (!h) return;
    switch (self->kind) {
    case TASK_FACE_DETECTOR:
        ks_face_detector_destroy(h);
        break;
    case TASK_FACE_LANDMARKER:
        ks_face_landmarker_destroy(h);
        break;
    case TASK_POSE_LANDMARKER:
        ks_pose_landmarker_destroy(h);
        break;
    case TASK_HAND_LANDMARKER:
        ks_hand_landmarker_destroy(h);
        break;
    case TASK_SEGMENTER:
        ks_segmenter_destroy(h);
        break;
    case TASK_OBJECT_DETECTOR:
        ks_object_detector_destroy(h);
        break;
    case TASK_IMAGE_CLASSIFIER:
        ks_image_classifier_destroy(h);
        break;
    default:
        break;
    }
}

static void Task_dealloc(TaskObject *self) {
    task_destroy(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* "O&" converter: None -> NULL, else PyUnicode_FSConverter (a bytes path to release). */
static int optional_path(PyObject *arg, void *out) {
    if (arg == Py_None) {
        *(PyObject **)out = NULL;
        return 1;
    }
    return PyUnicode_FSConverter(arg, out);
}

static PyObject *Task_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"kind",        "mode",       "threads",   "min_score",
                             "max_results", "model_path", "precision", "backend",
                             "variant",     "flag",       "value",     "rotation",
                             "mirror",      "smoothing",  "extra",     NULL};
    int kind, mode = 0, threads = 1, max_results = 0, precision = 0, backend = 0, variant = 0;
    int flag = 0, rotation = 0, mirror = 0, extra = 0;
    float min_score = 0.0f, value = 0.0f, smoothing = 0.0f;
    PyObject *path_obj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "i|iifiO&iiiifiifi", kwlist, &kind, &mode,
                                     &threads, &min_score, &max_results, optional_path, &path_obj,
                                     &precision, &backend, &variant, &flag, &value, &rotation,
                                     &mirror, &smoothing, &extra))
        return NULL;
    if (kind < 0 || kind >= TASK_KIND_COUNT) {
        Py_XDECREF(path_obj);
        return raise_fmt(KS_STATUS_INVALID_ARGUMENT, "unknown task kind %d", kind);
    }
    ks_task_options task = {.mode = (ks_running_mode)mode,
                            .num_threads = threads,
                            .min_score = min_score,
                            .max_results = max_results,
                            .rotation = (ks_rotation)rotation,
                            .mirror = mirror,
                            .smoothing = smoothing,
                            .model_path = path_obj ? PyBytes_AS_STRING(path_obj) : NULL,
                            .precision = (ks_precision)precision,
                            .backend = (ks_backend)backend};
    void *h = NULL;
    ks_status st = KS_STATUS_OK;
    char message[1024] = "";
    PyThreadState *save = PyEval_SaveThread();
    switch (kind) {
    case TASK_FACE_DETECTOR: {
        ks_face_detector_desc d = {
            .task = task, .model = (ks_face_detector_model)variant, .tiles = extra};
        st = ks_face_detector_create(&d, (ks_face_detector **)&h);
        break;
    }
    case TASK_FACE_LANDMARKER: {
        ks_face_landmarker_desc d = {.task = task,
                                     .detector = (ks_face_detector_model)variant,
                                     .refine_landmarks = flag,
                                     .min_tracking_score = value};
        st = ks_face_landmarker_create(&d, (ks_face_landmarker **)&h);
        break;
    }
    case TASK_POSE_LANDMARKER: {
        ks_pose_landmarker_desc d = {.task = task,
                                     .model = (ks_pose_model)variant,
                                     .min_presence = value,
                                     .output_segmentation = flag};
        st = ks_pose_landmarker_create(&d, (ks_pose_landmarker **)&h);
        break;
    }
    case TASK_HAND_LANDMARKER: {
        ks_hand_landmarker_desc d = {
            .task = task, .model = (ks_hand_model)variant, .min_presence = value};
        st = ks_hand_landmarker_create(&d, (ks_hand_landmarker **)&h);
        break;
    }
    case TASK_SEGMENTER: {
        ks_segmenter_desc d = {.task = task,
                               .model = (ks_segmenter_model)variant,
                               .output_u8 = flag,
                               .mask_size = (ks_mask_size)extra};
        st = ks_segmenter_create(&d, (ks_segmenter **)&h);
        break;
    }
    case TASK_OBJECT_DETECTOR: {
        ks_object_detector_desc d = {.task = task};
        st = ks_object_detector_create(&d, (ks_object_detector **)&h);
        break;
    }
    default: {
        ks_image_classifier_desc d = {.task = task};
        st = ks_image_classifier_create(&d, (ks_image_classifier **)&h);
        break;
    }
    }
    if (st != KS_STATUS_OK) snprintf(message, sizeof message, "%s", ks_last_error(NULL));
    PyEval_RestoreThread(save);
    Py_XDECREF(path_obj);
    if (st != KS_STATUS_OK) return raise_status(st, message);
    TaskObject *self = (TaskObject *)type->tp_alloc(type, 0);
    if (!self) {
        TaskObject tmp = {.kind = kind, .handle = h};
        task_destroy(&tmp);
        return NULL;
    }
    self->kind = kind;
    self->handle = h;
    self->last_timestamp_us = INT64_MIN;
    return (PyObject *)self;
}

static PyObject *floats_bytes(const float *data, size_t count) {
    return PyByteArray_FromStringAndSize((const char *)data, (Py_ssize_t)(count * sizeof(float)));
}

static PyObject *box_tuple(const ks_box *b) {
    return Py_BuildValue("(ffff)", b->x, b->y, b->w, b->h);
}

static PyObject *faces_list(const ks_faces *r) {
    PyObject *list = PyList_New(r->count);
    for (uint32_t i = 0; list && i < r->count; i++) {
        const ks_face *f = &r->items[i];
        PyObject *item =
            Py_BuildValue("(NfiN)", box_tuple(&f->box), f->score, f->id,
                          floats_bytes(&f->keypoints[0].x, 2 * KS_FACE_KEYPOINT_COUNT));
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *meshes_list(const ks_face_meshes *r) {
    PyObject *list = PyList_New(r->count);
    for (uint32_t i = 0; list && i < r->count; i++) {
        const ks_face_mesh *f = &r->items[i];
        const ks_face_expressions *e = &f->expressions;
        PyObject *item =
            Py_BuildValue("(NfiNfffNN(fffff))", box_tuple(&f->box), f->score, f->id,
                          floats_bytes(&f->landmarks[0].x, 3 * (size_t)f->num_landmarks),
                          f->pitch_deg, f->yaw_deg, f->roll_deg, floats_bytes(f->pose_matrix, 16),
                          floats_bytes(f->projection_matrix, 16), e->mouth_open, e->left_eye_blink,
                          e->right_eye_blink, e->brow_raise, e->smile);
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *poses_list(const ks_poses *r) {
    PyObject *list = PyList_New(r->count);
    size_t mask_px = (size_t)r->mask_width_px * (size_t)r->mask_height_px;
    for (uint32_t i = 0; list && i < r->count; i++) {
        const ks_pose *p = &r->items[i];
        PyObject *mask = NULL;
        if (p->mask && mask_px) {
            mask = floats_bytes(p->mask, mask_px);
        } else {
            mask = Py_None;
            Py_INCREF(mask);
        }
        PyObject *item =
            Py_BuildValue("(iNfNNN)", p->id, box_tuple(&p->box), p->score,
                          floats_bytes(&p->landmarks[0].x, 5 * KS_POSE_NUM_LANDMARKS),
                          floats_bytes(&p->world_landmarks[0].x, 3 * KS_POSE_NUM_LANDMARKS), mask);
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, item);
    }
    if (!list) return NULL;
    return Py_BuildValue("(Nii)", list, r->mask_width_px, r->mask_height_px);
}

static PyObject *hands_list(const ks_hands *r) {
    PyObject *list = PyList_New(r->count);
    for (uint32_t i = 0; list && i < r->count; i++) {
        const ks_hand *h = &r->items[i];
        PyObject *item = Py_BuildValue(
            "(iNfsfNN)", h->id, box_tuple(&h->box), h->score, ks_handedness_string(h->handedness),
            h->handedness_score, floats_bytes(&h->landmarks[0].x, 3 * KS_HAND_NUM_LANDMARKS),
            floats_bytes(&h->world_landmarks[0].x, 3 * KS_HAND_NUM_LANDMARKS));
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *segmentation_tuple(const ks_segmentation *r) {
    size_t px = (size_t)r->width_px * (size_t)r->height_px;
    PyObject *u8 = Py_None;
    if (r->mask_u8) {
        u8 = PyByteArray_FromStringAndSize((const char *)r->mask_u8, (Py_ssize_t)px);
    } else {
        Py_INCREF(u8);
    }
    return Py_BuildValue("(iiNNfii)", r->width_px, r->height_px, floats_bytes(r->mask, px), u8,
                         r->person_fraction, r->image_width_px, r->image_height_px);
}

static PyObject *objects_list(const ks_detected_objects *r) {
    PyObject *list = PyList_New(r->count);
    for (uint32_t i = 0; list && i < r->count; i++) {
        const ks_detected_object *o = &r->items[i];
        PyObject *item = Py_BuildValue("(Nisfi)", box_tuple(&o->box), o->class_id,
                                       o->label ? o->label : "", o->score, o->track_id);
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *classes_list(const ks_classifications *r) {
    PyObject *list = PyList_New(r->count);
    for (uint32_t i = 0; list && i < r->count; i++) {
        const ks_class_score *c = &r->items[i];
        PyObject *item = Py_BuildValue("(isf)", c->class_id, c->label ? c->label : "", c->score);
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, item);
    }
    return list;
}

/* Task.detect(image, timestamp_us): image is an HxWx3 (RGB) or HxWx4 (RGBA) uint8 buffer whose
 * pixels and channels are packed; rows may be strided (a crop of a larger array is zero-copy). */
static PyObject *Task_detect(TaskObject *self, PyObject *args) {
    PyObject *image_obj;
    long long ts = 0;
    if (!PyArg_ParseTuple(args, "OL", &image_obj, &ts)) return NULL;
    if (!self->handle) return raise_status(KS_STATUS_INVALID_STATE, "the task is closed");
    if (self->busy)
        return raise_status(KS_STATUS_INVALID_STATE,
                            "the task is running on another thread (one thread at a time)");
    Py_buffer v;
    self->busy = 1; /* getting a buffer may run Python code (and so let another thread in) */
    if (PyObject_GetBuffer(image_obj, &v, PyBUF_RECORDS_RO) != 0) {
        PyErr_Clear();
        self->busy = 0;
        return raise_fmt(KS_STATUS_INVALID_ARGUMENT,
                         "image: a %s is not an array (expected an HxWx3 uint8 NumPy array)",
                         Py_TYPE(image_obj)->tp_name);
    }
    PyObject *result = NULL;
    if (dtype_of_format(v.format, v.itemsize) != KS_DTYPE_U8 || v.ndim != 3 ||
        (v.shape[2] != 3 && v.shape[2] != 4)) {
        char got[64];
        format_name(v.format, v.itemsize, got, sizeof got);
        raise_fmt(KS_STATUS_INVALID_ARGUMENT,
                  "image: expected an HxWx3 (RGB) or HxWx4 (RGBA) uint8 array, got %d "
                  "dimensions of %s",
                  v.ndim, got);
        goto done;
    }
    Py_ssize_t c = v.shape[2];
    if (v.strides[2] != 1 || v.strides[1] != c || v.strides[0] < v.shape[1] * c) {
        raise_status(KS_STATUS_INVALID_ARGUMENT,
                     "image: pixels and channels must be packed (rows may be strided); pass "
                     "numpy.ascontiguousarray(image)");
        goto done;
    }
    if (v.shape[0] < 1 || v.shape[1] < 1 || v.shape[0] > KS_IMAGE_MAX_DIM_PX ||
        v.shape[1] > KS_IMAGE_MAX_DIM_PX) {
        raise_fmt(KS_STATUS_INVALID_ARGUMENT, "image: %zd x %zd pixels is outside 1..%d",
                  v.shape[1], v.shape[0], KS_IMAGE_MAX_DIM_PX);
        goto done;
    }
    ks_image img = {.format = c == 3 ? KS_PIXEL_FORMAT_RGB : KS_PIXEL_FORMAT_RGBA,
                    .width_px = (int32_t)v.shape[1],
                    .height_px = (int32_t)v.shape[0],
                    .planes = {v.buf},
                    .stride_bytes = {(int32_t)v.strides[0]}};
    void *out = NULL;
    ks_status st;
    void *h = self->handle;
    PyThreadState *save = PyEval_SaveThread();
    switch (self->kind) {
    case TASK_FACE_DETECTOR:
        st = ks_face_detect(h, &img, ts, (ks_faces **)&out);
        break;
    case TASK_FACE_LANDMARKER:
        st = ks_face_landmarker_detect(h, &img, ts, (ks_face_meshes **)&out);
        break;
    case TASK_POSE_LANDMARKER:
        st = ks_pose_detect(h, &img, ts, (ks_poses **)&out);
        break;
    case TASK_HAND_LANDMARKER:
        st = ks_hands_detect(h, &img, ts, (ks_hands **)&out);
        break;
    case TASK_SEGMENTER:
        st = ks_segment(h, &img, ts, (ks_segmentation **)&out);
        break;
    case TASK_OBJECT_DETECTOR:
        st = ks_object_detect(h, &img, ts, (ks_detected_objects **)&out);
        break;
    default:
        st = ks_image_classify(h, &img, ts, (ks_classifications **)&out);
        break;
    }
    PyEval_RestoreThread(save);
    if (st != KS_STATUS_OK) {
        raise_status(st, ks_last_error(h));
        goto done;
    }
    switch (self->kind) {
    case TASK_FACE_DETECTOR:
        result = faces_list(out);
        ks_faces_release(out);
        break;
    case TASK_FACE_LANDMARKER:
        result = meshes_list(out);
        ks_face_meshes_release(out);
        break;
    case TASK_POSE_LANDMARKER:
        result = poses_list(out);
        ks_poses_release(out);
        break;
    case TASK_HAND_LANDMARKER:
        result = hands_list(out);
        ks_hands_release(out);
        break;
    case TASK_SEGMENTER:
        result = segmentation_tuple(out);
        ks_segmentation_release(out);
        break;
    case TASK_OBJECT_DETECTOR:
        result = objects_list(out);
        ks_detected_objects_release(out);
        break;
    default:
        result = classes_list(out);
        ks_classifications_release(out);
        break;
    }
done:
    PyBuffer_Release(&v);
    self->busy = 0;
    return result;
}

static ks_status task_swap(int kind, void *h, const ks_task_options *src) {
    switch (kind) {
    case TASK_FACE_DETECTOR:
        return ks_face_detector_swap_model(h, src);
    case TASK_FACE_LANDMARKER:
        return ks_face_landmarker_swap_model(h, src);
    case TASK_POSE_LANDMARKER:
        return ks_pose_landmarker_swap_model(h, src);
    case TASK_HAND_LANDMARKER:
        return ks_hand_landmarker_swap_model(h, src);
    case TASK_SEGMENTER:
        return ks_segmenter_swap_model(h, src);
    case TASK_OBJECT_DETECTOR:
        return ks_object_detector_swap_model(h, src);
    default:
        return ks_image_classifier_swap_model(h, src);
    }
}

/* Live swap (vision.h "Live swap"): the C call may run while detect runs on another thread, so
 * only close() is excluded (it refuses while a swap is in progress). */
static PyObject *Task_swap_model(TaskObject *self, PyObject *args) {
    PyObject *path_obj = NULL;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path_obj)) return NULL;
    if (!self->handle) {
        Py_DECREF(path_obj);
        return raise_status(KS_STATUS_INVALID_STATE, "swap_model(): the task is closed");
    }
    void *h = self->handle;
    int kind = self->kind;
    ks_task_options src = {.model_path = PyBytes_AS_STRING(path_obj)};
    ks_status st = KS_STATUS_OK;
    self->swapping++;
    PyThreadState *save = PyEval_SaveThread();
    st = task_swap(kind, h, &src);
    PyEval_RestoreThread(save);
    self->swapping--;
    Py_DECREF(path_obj);
    /* Same OS thread as the call: its thread-local message is the swap's. */
    if (st) return raise_status(st, ks_last_error(NULL));
    Py_RETURN_NONE;
}

/* ks_task_stats.model_generation: the swaps the task has taken. */
static PyObject *Task_get_model_generation(TaskObject *self, void *unused) {
    if (!self->handle)
        return raise_status(KS_STATUS_INVALID_STATE, "model_generation: the task is closed");
    if (self->busy)
        return raise_status(KS_STATUS_INVALID_STATE,
                            "model_generation: the task is running on another thread");
    ks_task_stats ts;
    ks_status st;
    switch (self->kind) {
    case TASK_FACE_DETECTOR:
        st = ks_face_detector_stats(self->handle, &ts);
        break;
    case TASK_FACE_LANDMARKER:
        st = ks_face_landmarker_stats(self->handle, &ts);
        break;
    case TASK_POSE_LANDMARKER:
        st = ks_pose_landmarker_stats(self->handle, &ts);
        break;
    case TASK_HAND_LANDMARKER:
        st = ks_hand_landmarker_stats(self->handle, &ts);
        break;
    case TASK_SEGMENTER:
        st = ks_segmenter_stats(self->handle, &ts);
        break;
    case TASK_OBJECT_DETECTOR:
        st = ks_object_detector_stats(self->handle, &ts);
        break;
    default:
        st = ks_image_classifier_stats(self->handle, &ts);
        break;
    }
    if (st) return raise_status(st, "model_generation: the task's stats are unavailable");
    return PyLong_FromUnsignedLongLong((unsigned long long)ts.model_generation);
}

static PyObject *Task_close(TaskObject *self, PyObject *unused) {
    if (self->swapping)
        return raise_status(KS_STATUS_INVALID_STATE, "close(): a swap_model call is in progress");
    if (self->busy)
        return raise_status(KS_STATUS_INVALID_STATE, "close(): the task is running on another "
                                                     "thread");
    task_destroy(self);
    Py_RETURN_NONE;
}

static PyObject *Task_get_closed(TaskObject *self, void *unused) {
    return PyBool_FromLong(self->handle == NULL);
}

static PyMethodDef Task_methods[] = {
    {"detect", (PyCFunction)Task_detect, METH_VARARGS, "detect(image, timestamp_us)"},
    {"close", (PyCFunction)Task_close, METH_NOARGS, "destroy the task"},
    {"swap_model", (PyCFunction)Task_swap_model, METH_VARARGS, "swap_model(path)"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Task_getset[] = {
    {"closed", (getter)Task_get_closed, NULL, NULL, NULL},
    {"model_generation", (getter)Task_get_model_generation, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject TaskType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kestrel._native.Task",
    .tp_basicsize = sizeof(TaskObject),
    .tp_dealloc = (destructor)Task_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A vision task (use the classes of kestrel.vision).",
    .tp_methods = Task_methods,
    .tp_getset = Task_getset,
    .tp_new = Task_new,
};

/* ---------------------------------------------------------------------------------------- */
/* Effects (.kfx)                                                                            */

/* Opens the package at `path_obj` with the GIL released; on failure raises and returns NULL. */
static ks_effect *effect_open(PyObject *path_arg) {
    PyObject *path_obj = NULL;
    if (!PyUnicode_FSConverter(path_arg, &path_obj)) return NULL;
    ks_effect *fx = NULL;
    char message[1024] = "";
    const char *path = PyBytes_AS_STRING(path_obj);
    ks_status st;
    PyThreadState *save = PyEval_SaveThread();
    st = ks_effect_open_file(path, NULL, &fx);
    if (st != KS_STATUS_OK) snprintf(message, sizeof message, "%s", ks_last_error(NULL));
    PyEval_RestoreThread(save);
    Py_DECREF(path_obj);
    if (st != KS_STATUS_OK) {
        raise_status(st, message);
        return NULL;
    }
    return fx;
}

static PyObject *native_effect_validate(PyObject *mod, PyObject *arg) {
    ks_effect *fx = effect_open(arg);
    if (!fx) return NULL;
    ks_effect_destroy(fx);
    Py_RETURN_NONE;
}

static PyObject *str_or_empty(const char *s) {
    return PyUnicode_DecodeUTF8(s ? s : "", s ? (Py_ssize_t)strlen(s) : 0, "replace");
}

static PyObject *str_list(const char *const *items, uint32_t n) {
    PyObject *list = PyList_New(n);
    for (uint32_t i = 0; list && i < n; i++) {
        PyObject *v = str_or_empty(items ? items[i] : NULL);
        if (!v)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, v);
    }
    return list;
}

static PyObject *caps_list(uint32_t caps) {
    PyObject *list = PyList_New(0);
    for (int c = 0; list && c < KS_EFFECT_CAP_COUNT; c++) {
        if (!(caps & (1u << c))) continue;
        PyObject *v = PyUnicode_FromString(ks_effect_capability_string((ks_effect_capability)c));
        if (!v || PyList_Append(list, v) < 0) Py_CLEAR(list);
        Py_XDECREF(v);
    }
    return list;
}

static PyObject *layer_dict(const ks_effect_layer *l) {
    PyObject *anchors = PyList_New(l->num_anchor_landmarks);
    for (uint32_t i = 0; anchors && i < l->num_anchor_landmarks; i++) {
        PyObject *v = PyLong_FromUnsignedLong(l->anchor_landmarks[i]);
        if (!v)
            Py_CLEAR(anchors);
        else
            PyList_SET_ITEM(anchors, i, v);
    }
    if (!anchors) return NULL;
    return Py_BuildValue(
        "{s:N,s:s,s:O,s:s,s:f,s:N,s:f,s:N,s:f,s:O,s:N,s:N,s:N,s:N,s:N,s:f,s:(ffff)}", "name",
        str_or_empty(l->name), "kind", ks_effect_layer_kind_string(l->kind), "visible",
        l->visible ? Py_True : Py_False, "blend", ks_effect_blend_string(l->blend), "opacity",
        l->opacity, "anchor_landmarks", anchors, "scale", l->scale, "frames",
        str_list(l->frames, l->num_frames), "fps", l->fps, "loop", l->loop ? Py_True : Py_False,
        "texture", str_or_empty(l->texture), "lut", str_or_empty(l->lut), "mesh",
        str_or_empty(l->mesh), "shader", str_or_empty(l->shader), "region",
        str_or_empty(l->kind == KS_EFFECT_LAYER_MAKEUP ? ks_effect_makeup_region_string(l->region)
                                                       : ""),
        "intensity", l->intensity, "color", l->color[0], l->color[1], l->color[2], l->color[3]);
}

static PyObject *param_dict(const ks_effect_param *p) {
    return Py_BuildValue("{s:N,s:s,s:f,s:f,s:f,s:N,s:N,s:(ffff)}", "name", str_or_empty(p->name),
                         "type", ks_effect_param_type_string(p->type), "min", p->min, "max", p->max,
                         "default", p->default_value, "options",
                         str_list(p->options, p->num_options), "default_image",
                         str_or_empty(p->default_image), "default_color", p->default_color[0],
                         p->default_color[1], p->default_color[2], p->default_color[3]);
}

/* Appends f(i) for i < n to a new list; NULL on failure. */
#define EFFECT_LIST(n, expr)                                                                       \
    do {                                                                                           \
        list = PyList_New(n);                                                                      \
        for (uint32_t i = 0; list && i < (n); i++) {                                               \
            PyObject *item_ = (expr);                                                              \
            if (!item_)                                                                            \
                Py_CLEAR(list);                                                                    \
            else                                                                                   \
                PyList_SET_ITEM(list, i, item_);                                                   \
        }                                                                                          \
    } while (0)

static PyObject *state_dict(const ks_effect *fx, const ks_effect_state *s) {
    PyObject *list;
    EFFECT_LIST(s->num_actions,
                Py_BuildValue("(sN)", ks_effect_action_kind_string(s->actions[i].kind),
                              str_or_empty(s->actions[i].layer < ks_effect_num_layers(fx)
                                               ? ks_effect_layer_at(fx, s->actions[i].layer)->name
                                               : "")));
    if (!list) return NULL;
    return Py_BuildValue("{s:N,s:N}", "name", str_or_empty(s->name), "actions", list);
}

static PyObject *trigger_dict(const ks_effect *fx, const ks_effect_trigger *t) {
    const ks_effect_state *s = ks_effect_state_at(fx, t->state);
    return Py_BuildValue("{s:s,s:f,s:N}", "event", ks_effect_event_string(t->event), "threshold",
                         t->threshold, "state", str_or_empty(s ? s->name : ""));
}

static PyObject *asset_dict(const ks_effect_asset *a) {
    return Py_BuildValue("{s:N,s:s,s:n,s:I,s:I}", "name", str_or_empty(a->name), "kind",
                         ks_effect_asset_kind_string(a->kind), "size_bytes",
                         (Py_ssize_t)a->size_bytes, "width_px", (unsigned)a->width_px, "height_px",
                         (unsigned)a->height_px);
}

/* effect_info(path) -> dict: the manifest summary, layers in render order, params, states,
 * triggers and assets (what `ks-effect info` prints). */
static PyObject *native_effect_info(PyObject *mod, PyObject *arg) {
    ks_effect *fx = effect_open(arg);
    if (!fx) return NULL;
    const ks_effect_info *in = ks_effect_get_info(fx);
    PyObject *layers = NULL, *params = NULL, *states = NULL, *triggers = NULL, *assets = NULL;
    PyObject *list, *result = NULL;
    EFFECT_LIST(ks_effect_num_layers(fx), layer_dict(ks_effect_layer_at(fx, i)));
    layers = list;
    EFFECT_LIST(ks_effect_num_params(fx), param_dict(ks_effect_param_at(fx, i)));
    params = list;
    EFFECT_LIST(ks_effect_num_states(fx), state_dict(fx, ks_effect_state_at(fx, i)));
    states = list;
    EFFECT_LIST(ks_effect_num_triggers(fx), trigger_dict(fx, ks_effect_trigger_at(fx, i)));
    triggers = list;
    EFFECT_LIST(ks_effect_num_assets(fx), asset_dict(ks_effect_asset_at(fx, i)));
    assets = list;
    if (in && layers && params && states && triggers && assets) {
        const ks_effect_state *init = ks_effect_state_at(fx, ks_effect_initial_state(fx));
        result = Py_BuildValue(
            "{s:(III),s:N,s:N,s:N,s:N,s:N,s:I,s:N,s:O,s:O,s:O,s:O,s:O}", "format_version",
            in->version_major, in->version_minor, in->version_patch, "id", str_or_empty(in->id),
            "name", str_or_empty(in->name), "author", str_or_empty(in->author), "thumbnail",
            str_or_empty(in->thumbnail), "required_capabilities",
            caps_list(in->required_capabilities), "max_faces", in->max_faces, "initial_state",
            str_or_empty(init ? init->name : ""), "layers", layers, "params", params, "states",
            states, "triggers", triggers, "assets", assets);
    }
    Py_XDECREF(layers);
    Py_XDECREF(params);
    Py_XDECREF(states);
    Py_XDECREF(triggers);
    Py_XDECREF(assets);
    ks_effect_destroy(fx);
    return result;
}
#undef EFFECT_LIST

/* ---------------------------------------------------------------------------------------- */
/* Effect rendering (headless EGL + ar_render)                                               */

#ifdef KS_PY_HAVE_EGL
/* A headless OpenGL ES 3.0 context, current on the calling thread: EGL's surfaceless platform
 * (Mesa) when it has one, else the default display, with a 1x1 pbuffer. */
typedef struct egl_ctx {
    EGLDisplay dpy;
    EGLContext ctx;
    EGLSurface surf;
} egl_ctx;

static void egl_close(egl_ctx *e) {
    if (e->dpy == EGL_NO_DISPLAY) return;
    eglMakeCurrent(e->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    if (e->surf != EGL_NO_SURFACE) eglDestroySurface(e->dpy, e->surf);
    if (e->ctx != EGL_NO_CONTEXT) eglDestroyContext(e->dpy, e->ctx);
    eglReleaseThread();
    e->dpy = EGL_NO_DISPLAY;
}

static ks_status egl_open(egl_ctx *e, char *err, size_t cap) {
    e->dpy = EGL_NO_DISPLAY;
    e->ctx = EGL_NO_CONTEXT;
    e->surf = EGL_NO_SURFACE;
    EGLDisplay dpy = EGL_NO_DISPLAY;
    PFNEGLGETPLATFORMDISPLAYEXTPROC get_platform =
        (PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
    EGLint major = 0, minor = 0;
    if (get_platform) {
        dpy = get_platform(0x31DD /* EGL_PLATFORM_SURFACELESS_MESA */, EGL_DEFAULT_DISPLAY, NULL);
        if (dpy != EGL_NO_DISPLAY && !eglInitialize(dpy, &major, &minor)) dpy = EGL_NO_DISPLAY;
    }
    if (dpy == EGL_NO_DISPLAY) {
        dpy = eglGetDisplay(EGL_DEFAULT_DISPLAY);
        if (dpy == EGL_NO_DISPLAY || !eglInitialize(dpy, &major, &minor)) {
            snprintf(err, cap, "no EGL display (EGL error 0x%x)", (unsigned)eglGetError());
            return KS_STATUS_UNSUPPORTED;
        }
    }
    e->dpy = dpy;
    if (!eglBindAPI(EGL_OPENGL_ES_API)) {
        snprintf(err, cap, "EGL: no OpenGL ES API");
        egl_close(e);
        return KS_STATUS_UNSUPPORTED;
    }
    const EGLint cfg_attrs[] = {EGL_RENDERABLE_TYPE,
                                0x40 /* EGL_OPENGL_ES3_BIT */,
                                EGL_SURFACE_TYPE,
                                EGL_PBUFFER_BIT,
                                EGL_RED_SIZE,
                                8,
                                EGL_GREEN_SIZE,
                                8,
                                EGL_BLUE_SIZE,
                                8,
                                EGL_ALPHA_SIZE,
                                8,
                                EGL_NONE};
    EGLConfig cfg = NULL;
    EGLint n = 0;
    if (!eglChooseConfig(dpy, cfg_attrs, &cfg, 1, &n) || n < 1) {
        snprintf(err, cap, "EGL: no OpenGL ES 3 configuration");
        egl_close(e);
        return KS_STATUS_UNSUPPORTED;
    }
    const EGLint ctx_attrs[] = {EGL_CONTEXT_CLIENT_VERSION, 3, EGL_NONE};
    e->ctx = eglCreateContext(dpy, cfg, EGL_NO_CONTEXT, ctx_attrs);
    const EGLint pb_attrs[] = {EGL_WIDTH, 1, EGL_HEIGHT, 1, EGL_NONE};
    if (e->ctx != EGL_NO_CONTEXT) e->surf = eglCreatePbufferSurface(dpy, cfg, pb_attrs);
    if (e->ctx == EGL_NO_CONTEXT || e->surf == EGL_NO_SURFACE ||
        !eglMakeCurrent(dpy, e->surf, e->surf, e->ctx)) {
        snprintf(err, cap, "EGL: cannot create an OpenGL ES 3 context (EGL error 0x%x)",
                 (unsigned)eglGetError());
        egl_close(e);
        return KS_STATUS_UNSUPPORTED;
    }
    return KS_STATUS_OK;
}
#endif

/* Runs the face landmarker on `img` (faces for the effect) and renders `fx` over `rgba`
 * (w x h, packed) into `out` (same size). Everything on the calling thread, GIL released. */
static ks_status render_effect(const ks_effect *fx, const ks_image *img, const uint8_t *rgba,
                               uint8_t *out, uint32_t *faces_out, char *err, size_t cap) {
#ifndef KS_PY_HAVE_EGL
    (void)fx, (void)img, (void)rgba, (void)out, (void)faces_out;
    snprintf(err, cap,
             "this build of the binding has no EGL (the AR renderer's GLES backend "
             "was not found at build time)");
    return KS_STATUS_UNSUPPORTED;
#else
    ks_status st = KS_STATUS_OK;
    ks_face_landmarker *lm = NULL;
    ks_face_meshes *meshes = NULL;
    ks_ar_face faces[KS_EFFECT_MAX_FACES];
    uint32_t nf = 0;
    const ks_effect_info *info = ks_effect_get_info(fx);
    if (info && (info->required_capabilities & (1u << KS_EFFECT_CAP_FACE_LANDMARKS))) {
        ks_face_landmarker_desc d = {.task = {.max_results = (int32_t)info->max_faces},
                                     .refine_landmarks = 1};
        st = ks_face_landmarker_create(&d, &lm);
        if (st == KS_STATUS_OK) st = ks_face_landmarker_detect(lm, img, 0, &meshes);
        if (st != KS_STATUS_OK) {
            snprintf(err, cap, "face landmarker: %s", ks_last_error(lm));
            goto done;
        }
        for (uint32_t i = 0; i < meshes->count && nf < KS_EFFECT_MAX_FACES; i++)
            if (ks_ar_face_from_mesh(&meshes->items[i], &faces[nf]) == KS_STATUS_OK) nf++;
    }
    egl_ctx egl;
    st = egl_open(&egl, err, cap);
    if (st != KS_STATUS_OK) goto done;
    ks_ar_renderer_desc rd = {.width_px = img->width_px, .height_px = img->height_px};
    ks_ar_renderer *r = NULL;
    st = ks_ar_renderer_create(&rd, fx, &r);
    if (st == KS_STATUS_OK) {
        ks_ar_frame frame = {.width_px = img->width_px,
                             .height_px = img->height_px,
                             .pixels = rgba,
                             .num_faces = nf,
                             .faces = faces};
        ks_ar_output o = {.pixels = out};
        st = ks_ar_render(r, &frame, &o);
        if (st != KS_STATUS_OK) snprintf(err, cap, "%s", ks_last_error(r));
        ks_ar_renderer_destroy(r);
    } else {
        snprintf(err, cap, "%s", ks_last_error(NULL));
    }
    egl_close(&egl);
    *faces_out = nf;
done:
    ks_face_meshes_release(meshes);
    ks_face_landmarker_destroy(lm);
    return st;
#endif
}

/* effect_render(path, image) -> (rgba bytearray, width, height, faces): image is an HxWx3 or
 * HxWx4 uint8 buffer, pixels packed (rows may be strided). */
static PyObject *native_effect_render(PyObject *mod, PyObject *args) {
    PyObject *path_arg, *image_obj;
    if (!PyArg_ParseTuple(args, "OO", &path_arg, &image_obj)) return NULL;
    Py_buffer v;
    if (PyObject_GetBuffer(image_obj, &v, PyBUF_RECORDS_RO) != 0) {
        PyErr_Clear();
        return raise_fmt(KS_STATUS_INVALID_ARGUMENT,
                         "image: a %s is not an array (expected an HxWx3 uint8 NumPy array)",
                         Py_TYPE(image_obj)->tp_name);
    }
    PyObject *result = NULL;
    uint8_t *rgba = NULL;
    ks_effect *fx = NULL;
    if (dtype_of_format(v.format, v.itemsize) != KS_DTYPE_U8 || v.ndim != 3 ||
        (v.shape[2] != 3 && v.shape[2] != 4) || v.strides[2] != 1 || v.strides[1] != v.shape[2] ||
        v.strides[0] < v.shape[1] * v.shape[2] || v.shape[0] < 1 || v.shape[1] < 1 ||
        v.shape[0] > 4096 || v.shape[1] > 4096) {
        raise_status(KS_STATUS_INVALID_ARGUMENT,
                     "image: expected an HxWx3 (RGB) or HxWx4 (RGBA) uint8 array of 1..4096 "
                     "pixels a side, pixels and channels packed");
        goto done;
    }
    fx = effect_open(path_arg);
    if (!fx) goto done;
    Py_ssize_t h = v.shape[0], w = v.shape[1], c = v.shape[2];
    rgba = PyMem_RawMalloc((size_t)(w * h * 4));
    result = PyByteArray_FromStringAndSize(NULL, w * h * 4);
    if (!rgba || !result) {
        Py_CLEAR(result);
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t y = 0; y < h; y++) {
        const uint8_t *src = (const uint8_t *)v.buf + y * v.strides[0];
        uint8_t *dst = rgba + y * w * 4;
        for (Py_ssize_t x = 0; x < w; x++) {
            dst[4 * x] = src[c * x];
            dst[4 * x + 1] = src[c * x + 1];
            dst[4 * x + 2] = src[c * x + 2];
            dst[4 * x + 3] = c == 4 ? src[c * x + 3] : 255;
        }
    }
    ks_image img = {.format = KS_PIXEL_FORMAT_RGBA,
                    .width_px = (int32_t)w,
                    .height_px = (int32_t)h,
                    .planes = {rgba},
                    .stride_bytes = {(int32_t)(w * 4)}};
    char message[1024] = "";
    uint32_t nf = 0;
    uint8_t *out = (uint8_t *)PyByteArray_AS_STRING(result);
    ks_status st;
    PyThreadState *save = PyEval_SaveThread();
    st = render_effect(fx, &img, rgba, out, &nf, message, sizeof message);
    PyEval_RestoreThread(save);
    if (st != KS_STATUS_OK) {
        Py_CLEAR(result);
        raise_status(st, message);
        goto done;
    }
    result = Py_BuildValue("(NnnI)", result, w, h, (unsigned)nf);
done:
    ks_effect_destroy(fx);
    PyMem_RawFree(rgba);
    PyBuffer_Release(&v);
    return result;
}

/* ---------------------------------------------------------------------------------------- */
/* Module                                                                                    */

static PyObject *native_version(PyObject *mod, PyObject *unused) {
    return PyUnicode_FromString(ks_version_string());
}

static PyObject *native_status_string(PyObject *mod, PyObject *arg) {
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return NULL;
    return PyUnicode_FromString(ks_status_string((ks_status)v));
}

static PyObject *native_set_models_dir(PyObject *mod, PyObject *arg) {
    PyObject *path_obj = NULL;
    if (arg != Py_None && !PyUnicode_FSConverter(arg, &path_obj)) return NULL;
    ks_status st = ks_set_models_dir(path_obj ? PyBytes_AS_STRING(path_obj) : NULL);
    Py_XDECREF(path_obj);
    if (st != KS_STATUS_OK) return raise_status(st, ks_last_error(NULL));
    Py_RETURN_NONE;
}

static PyObject *native_models_dir(PyObject *mod, PyObject *unused) {
    const char *d = ks_models_dir();
    return PyUnicode_DecodeFSDefault(d ? d : "");
}

static PyMethodDef native_methods[] = {
    {"version", native_version, METH_NOARGS, "ks_version_string()"},
    {"status_string", native_status_string, METH_O, "ks_status_string(status)"},
    {"load_model", (PyCFunction)(void (*)(void))native_load_model, METH_VARARGS | METH_KEYWORDS,
     "load_model(path, key=None, threads=0) -> Model"},
    {"set_models_dir", native_set_models_dir, METH_O, "ks_set_models_dir(dir or None)"},
    {"models_dir", native_models_dir, METH_NOARGS, "ks_models_dir()"},
    {"effect_validate", native_effect_validate, METH_O, "effect_validate(path): raises if invalid"},
    {"effect_info", native_effect_info, METH_O, "effect_info(path) -> dict"},
    {"effect_render", native_effect_render, METH_VARARGS,
     "effect_render(path, image) -> (rgba bytearray, width, height, faces)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef native_module = {PyModuleDef_HEAD_INIT,
                                           "kestrel._native",
                                           "Kestrel's C API, marshalled (internal).",
                                           -1,
                                           native_methods,
                                           NULL,
                                           NULL,
                                           NULL,
                                           NULL};

PyMODINIT_FUNC PyInit__native(void);

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&ModelType) < 0 || PyType_Ready(&SessionType) < 0 ||
        PyType_Ready(&OutputViewType) < 0 || PyType_Ready(&TaskType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&native_module);
    if (!m) return NULL;
    Py_INCREF(&ModelType);
    Py_INCREF(&SessionType);
    Py_INCREF(&TaskType);
    if (PyModule_AddObject(m, "Model", (PyObject *)&ModelType) < 0 ||
        PyModule_AddObject(m, "Session", (PyObject *)&SessionType) < 0 ||
        PyModule_AddObject(m, "Task", (PyObject *)&TaskType) < 0 ||
        PyModule_AddIntConstant(m, "KEYPOINTS_FACE", KS_FACE_KEYPOINT_COUNT) < 0 ||
        PyModule_AddIntConstant(m, "PRECISION_COUNT", KS_PRECISION_COUNT) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
