"""Minimal ctypes binding to libkestrel.so (engine/include/kestrel/engine.h), enough to time
ks_session_run in-process, like the Python bindings of the peer engines."""

import ctypes

import numpy as np

KS_MAX_RANK = 8
# ks_dtype values (engine/include/kestrel/tensor.h; frozen)
DTYPES = {1: np.float32, 2: np.float16, 3: np.int32, 4: np.int64, 5: np.uint8, 6: np.int8,
          7: np.bool_, 8: np.int16}


class TensorShape(ctypes.Structure):
    _fields_ = [("rank", ctypes.c_int32), ("dims", ctypes.c_int64 * KS_MAX_RANK)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("shape", TensorShape),
                ("scale", ctypes.c_float), ("zero_point", ctypes.c_int32)]


class Tensor(ctypes.Structure):
    _fields_ = [("info", TensorInfo), ("data", ctypes.c_void_p), ("size_bytes", ctypes.c_size_t)]


class SessionDesc(ctypes.Structure):
    # Mirrors ks_session_desc in engine/include/kestrel/engine.h (keep in step with it).
    _fields_ = [("num_threads", ctypes.c_int32), ("precision", ctypes.c_int),
                ("flags", ctypes.c_uint32), ("allocator", ctypes.c_void_p),
                ("max_memory_bytes", ctypes.c_size_t), ("tune", ctypes.c_int),
                ("tune_cache_path", ctypes.c_char_p), ("backend", ctypes.c_int)]


class KestrelError(RuntimeError):
    pass


class Library:
    def __init__(self, path):
        lib = ctypes.CDLL(str(path))
        vp = ctypes.c_void_p
        lib.ks_version_string.restype = ctypes.c_char_p
        lib.ks_status_string.restype = ctypes.c_char_p
        lib.ks_status_string.argtypes = [ctypes.c_int]
        lib.ks_last_error.restype = ctypes.c_char_p
        lib.ks_last_error.argtypes = [vp]
        lib.ks_model_load_file.argtypes = [ctypes.c_char_p, vp, ctypes.POINTER(vp)]
        lib.ks_model_destroy.argtypes = [vp]
        lib.ks_model_destroy.restype = None
        lib.ks_model_num_inputs.argtypes = [vp]
        lib.ks_model_num_inputs.restype = ctypes.c_uint32
        lib.ks_model_num_outputs.argtypes = [vp]
        lib.ks_model_num_outputs.restype = ctypes.c_uint32
        lib.ks_session_create.argtypes = [vp, ctypes.POINTER(SessionDesc), ctypes.POINTER(vp)]
        lib.ks_session_destroy.argtypes = [vp]
        lib.ks_session_destroy.restype = None
        lib.ks_session_reshape.argtypes = [vp, vp]
        lib.ks_session_input.argtypes = [vp, ctypes.c_uint32, ctypes.POINTER(Tensor)]
        lib.ks_session_output.argtypes = [vp, ctypes.c_uint32, ctypes.POINTER(Tensor)]
        lib.ks_session_run.argtypes = [vp]
        lib.ks_session_backend.argtypes = [vp]
        lib.ks_session_backend.restype = ctypes.c_int
        self.lib = lib

    def version(self):
        return self.lib.ks_version_string().decode()

    def check(self, status, handle, what):
        if status:
            msg = self.lib.ks_last_error(handle).decode(errors="replace")
            name = self.lib.ks_status_string(status).decode()
            raise KestrelError(f"{what}: {name}: {msg}")


class Session:
    """A model plus one session reshaped to the model's own input shapes."""

    def __init__(self, lib, model_path, num_threads, backend=0, precision=0):
        self.lib = lib
        self.model = ctypes.c_void_p()
        self.session = ctypes.c_void_p()
        L = lib.lib
        lib.check(L.ks_model_load_file(str(model_path).encode(), None, ctypes.byref(self.model)),
                  None, f"load {model_path}")
        desc = SessionDesc(num_threads=num_threads, backend=backend, precision=precision)
        lib.check(L.ks_session_create(self.model, ctypes.byref(desc), ctypes.byref(self.session)),
                  None, "session create")
        lib.check(L.ks_session_reshape(self.session, None), self.session, "reshape")
        self._run = L.ks_session_run
        self._sess = self.session

    def _view(self, fn, index):
        t = Tensor()
        self.lib.check(fn(self.session, index, ctypes.byref(t)), self.session, "tensor view")
        dims = [t.info.shape.dims[d] for d in range(t.info.shape.rank)]
        dtype = DTYPES[t.info.dtype]
        buf = (ctypes.c_char * t.size_bytes).from_address(t.data)
        return t.info.name.decode(), np.frombuffer(buf, dtype=dtype).reshape(dims)

    def num_inputs(self):
        return self.lib.lib.ks_model_num_inputs(self.model)

    def num_outputs(self):
        return self.lib.lib.ks_model_num_outputs(self.model)

    def input(self, index):
        """(name, writable numpy view of the session's input memory)"""
        return self._view(self.lib.lib.ks_session_input, index)

    def output(self, index):
        return self._view(self.lib.lib.ks_session_output, index)

    def run(self):
        status = self._run(self._sess)
        if status:
            self.lib.check(status, self.session, "run")

    def backend(self):
        """ks_backend the session runs on (0 CPU, 1 Vulkan)."""
        return self.lib.lib.ks_session_backend(self.session)

    def close(self):
        self.lib.lib.ks_session_destroy(self.session)
        self.lib.lib.ks_model_destroy(self.model)
        self.session = self.model = None
