"""Models and sessions: kestrel.Model, kestrel.Session (engine/include/kestrel/engine.h)."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native
from ._errors import InvalidArgumentError

PathLike = Union[str, "os.PathLike[str]"]


class Precision(enum.IntEnum):
    """ks_precision: how a quantized model's int8 layers run (models without int8 ignore it),
    and the GPU's number format (the fp16 modes; on the CPU they run as stored)."""

    DEFAULT = 0  #: as stored: int8 layers run int8
    F32 = 1  #: every int8 layer that has a float form runs in fp32
    FASTEST = 2  #: per layer the faster of int8 and fp32 on this CPU (timed at create)
    FP16_STORAGE = 3  #: GPU: tensors in fp16, arithmetic in fp32 (docs/vulkan.md, "Precision")
    FP16 = 4  #: GPU: fp16 arithmetic too where the device has it; sums stay fp32


class Backend(enum.IntEnum):
    """ks_backend: where a session runs."""

    CPU = 0
    VULKAN = 1
    OPENCL = 2  #: not in this version: always refused
    AUTO = 3  #: the fastest of the CPU and the GPU backends that open here (timed at create)


def _enum_arg(enum_type: Any, value: Any, what: str) -> int:
    if isinstance(value, str):
        key = {"stored": "DEFAULT", "fp32": "F32"}.get(
            value.lower(), value.upper().replace("-", "_")
        )
        try:
            return int(enum_type[key])
        except KeyError:
            names = ", ".join(m.name.lower() for m in enum_type)
            raise InvalidArgumentError(f"{what}={value!r}: expected one of {names}") from None
    try:
        return int(enum_type(value))
    except ValueError:
        raise InvalidArgumentError(f"{what}={value!r} is not a valid {enum_type.__name__}") from None


@dataclass(frozen=True)
class TensorInfo:
    """A graph input or output: its name, shape (-1 marks a dimension known only at run time),
    NumPy dtype and, for quantized tensors, ``real = scale * (q - zero_point)`` (scale 0: not
    quantized)."""

    name: str
    shape: Tuple[int, ...]
    dtype: np.dtype
    scale: float = 0.0
    zero_point: int = 0

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype.name,
                "scale": self.scale, "zero_point": self.zero_point}


def _infos(raw: List[Tuple[str, str, Tuple[int, ...], float, int]]) -> List[TensorInfo]:
    return [TensorInfo(n, tuple(s), np.dtype(d), sc, zp) for n, d, s, sc, zp in raw]


class Model:
    """A Kestrel model (.ksm), loaded once and shared by any number of sessions.

    Weights are used in place from a read-only mapping of the file. Close it with
    :meth:`close` or a ``with`` block; sessions made from it stay valid until they close (the
    model's memory goes with the last of them).
    """

    def __init__(self, native: Any, path: str) -> None:
        self._native = native
        self.path = path
        self._inputs = _infos(native.inputs())
        self._outputs = _infos(native.outputs())

    @classmethod
    def load(cls, path: PathLike, key: Optional[bytes] = None) -> "Model":
        """Loads a .ksm file; ``key`` is the 32-byte key of a model encrypted with
        ``kestrel protect`` (ks-protect). Raises :class:`KestrelError` (for example
        :class:`InvalidModelError` for a truncated file, :class:`KestrelIOError` for a missing
        one)."""
        p = os.fspath(path)
        return cls(_native.load_model(p, key), p)

    @property
    def inputs(self) -> List[TensorInfo]:
        """The graph inputs, in order."""
        return list(self._inputs)

    @property
    def outputs(self) -> List[TensorInfo]:
        """The graph outputs, in order."""
        return list(self._outputs)

    def metadata(self, key: str) -> Optional[str]:
        """A metadata value of the file (``"source"``, ``"producer"``, ...) or None."""
        return self._native.metadata(key)

    @property
    def closed(self) -> bool:
        return bool(self._native.closed)

    def close(self) -> None:
        """Releases the model (deferred while sessions made from it are open)."""
        self._native.close()

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        ins = ", ".join(f"{t.name}{list(t.shape)}:{t.dtype.name}" for t in self._inputs)
        return f"<kestrel.Model {os.path.basename(self.path)!r} inputs=[{ins}]>"


ArrayFeeds = Union[Mapping[str, Any], Sequence[Any], np.ndarray]


class Session:
    """Runs a model: ``Session(model, threads=1, precision="default", backend="cpu")``.

    ``run({name: array})`` returns ``{output name: array}``. Inputs must have the model's dtype
    and be C-contiguous (they are copied once into the session's memory, with no conversion);
    a new input shape re-plans the session (``ks_session_reshape``) and later runs with that
    shape plan nothing. Outputs are new NumPy arrays that own their memory, or, with
    ``run(feeds, copy=False)``, read-only views of the session's own output tensors (no copy;
    see :meth:`run`). The GIL is released while the model runs. A session is used by one thread
    at a time: a second thread gets :class:`InvalidStateError`.
    """

    def __init__(self, model: Model, threads: int = 1,
                 precision: Union[Precision, str, int] = Precision.DEFAULT,
                 backend: Union[Backend, str, int] = Backend.CPU) -> None:
        if not isinstance(model, Model):
            raise InvalidArgumentError(f"Session(model=...) takes a kestrel.Model, not "
                                       f"{type(model).__name__}")
        self.model = model
        self._native = _native.Session(model._native, threads=threads,
                                       precision=_enum_arg(Precision, precision, "precision"),
                                       backend=_enum_arg(Backend, backend, "backend"))
        self._in_names = [t.name for t in model._inputs]
        self._out_names = [t.name for t in model._outputs]
        self._index = {n: i for i, n in enumerate(self._in_names)}
        self._out_dtypes = {t.dtype.name: t.dtype for t in model._outputs}

    @property
    def backend(self) -> str:
        """Where the session runs: ``"cpu"`` or ``"vulkan"`` (``"auto"`` resolved)."""
        return str(self._native.backend)

    def _ordered(self, feeds: ArrayFeeds) -> List[Any]:
        if type(feeds) is dict and len(feeds) == len(self._in_names):
            try:  # the common case, kept short: run() is called per frame
                return [feeds[n] for n in self._in_names]
            except KeyError:
                pass
        if isinstance(feeds, Mapping):
            if len(feeds) != len(self._in_names) or any(k not in self._index for k in feeds):
                unknown = [k for k in feeds if k not in self._index]
                missing = [n for n in self._in_names if n not in feeds]
                raise InvalidArgumentError(
                    f"run(): inputs {self._in_names} expected; unknown {unknown}, missing "
                    f"{missing}")
            return [feeds[n] for n in self._in_names]
        if isinstance(feeds, np.ndarray):
            return [feeds]
        return list(feeds)

    def run(self, feeds: ArrayFeeds, copy: bool = True) -> Dict[str, np.ndarray]:
        """Runs the model once. ``feeds``: ``{input name: array}`` (or, for a one-input model,
        the array itself, or a list in input order). Returns ``{output name: array}``.

        ``copy=False`` returns read-only arrays that view the session's output tensors instead
        of copies (nothing is allocated or copied per output). They stay valid memory as long as
        they live, but they show the session's latest outputs: the next ``run`` with the same
        input shapes writes into them. A ``run`` that would re-plan the memory (other input
        shapes, outputs switched on or off) raises :class:`InvalidStateError` while such arrays
        live, and ``close()`` takes effect at once for the caller but frees the memory only when
        the last of them is gone. Copy what you keep (``x.copy()``)."""
        ordered = self._ordered(feeds)
        raw = self._native.run(ordered) if copy else self._native.run_views(ordered)
        out: Dict[str, np.ndarray] = {}
        ndarray, dtypes = np.ndarray, self._out_dtypes
        for name, r in zip(self._out_names, raw):
            if r is not None:
                # a view of the bytearray (or the session's memory), which it keeps alive
                out[name] = ndarray(r[2], dtypes.get(r[1]) or np.dtype(r[1]), r[0])
        return out

    def profile(self) -> List[Dict[str, Any]]:
        """Runs once more on the last inputs with the per-op profiler on: one dict per op
        (``op``, ``node`` (its name), ``index`` (the node's index in the model's graph),
        ``kernel``, ``ms``, ``flops``)."""
        return [{"op": op, "node": node, "kernel": kern, "ms": ns / 1e6, "flops": fl,
                 "index": idx}
                for op, node, kern, ns, fl, idx in self._native.profile()]

    @property
    def closed(self) -> bool:
        return bool(self._native.closed)

    def close(self) -> None:
        """Destroys the session; later calls raise :class:`InvalidStateError`."""
        self._native.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def version() -> str:
    """The linked library's version string (``ks_version_string``)."""
    return str(_native.version())
