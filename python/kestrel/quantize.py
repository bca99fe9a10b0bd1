"""Post-training int8 quantization (ks-quant) with a report.

    >>> report = kestrel.quantize("face.ksm", "face_int8.ksm", calibration=images)
    >>> report.outputs          # {output name: cosine similarity vs fp32}
    >>> report.layers[0]        # the worst layer first: node, op, precision, cosine, ...

``calibration`` is a folder of images, or an iterable of image paths and/or HxWx3 uint8 arrays
(written as BMP files into a temporary folder for the tool; no Pillow needed).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Union

import numpy as np

from ._errors import InvalidArgumentError
from ._tools import Progress, progress_callback, run_tool

# Python keyword -> (ks-quant flag, kind): "value" passes str(value), "flag" passes the flag when
# true, "negated" passes it when false, "list" joins names with commas.
_OPTIONS = {
    "method": ("--calibration-method", "value"),
    "preprocess": ("--preprocess", "value"),
    "percentile": ("--percentile", "value"),
    "calibration_crops": ("--calibration-crops", "value"),
    "skip": ("--skip", "list"),
    "min_cosine": ("--min-cosine", "value"),
    "min_output_cosine": ("--min-output-cosine", "value"),
    "fallback": ("--fallback", "value"),
    "outputs": ("--outputs", "list"),
    "max_images": ("--max-images", "value"),
    "eval_images": ("--eval-images", "value"),
    "speed_check": ("--no-speed-check", "negated"),
    "equalize": ("--no-equalize", "negated"),
    "bias_correction": ("--bias-correction", "value"),
    "weight_rounding": ("--weight-rounding", "value"),
    "fallback_weights": ("--fallback-weights", "value"),
    "weights_only": ("--weights-only", "flag"),
    "int8_output_layers": ("--int8-output-layers", "flag"),
    "bench": ("--bench", "value"),
    "entropy": ("--entropy", "flag"),
}


@dataclass
class QuantReport:
    """What ks-quant did: per-output cosine similarity vs fp32, the layers worst first (node,
    op, precision, cosine, layer_cosine, output_gain, fp32_us, int8_us), sizes, and the tool's
    summary line (with ``bench=N``, the fp32 and int8 timings)."""

    path: str
    outputs: Dict[str, float]
    layers: List[Dict[str, Any]]
    fp32_bytes: int
    int8_bytes: int
    int8_layers: int
    summary: str
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return dict(self.raw, path=self.path, summary=self.summary)


def _write_bmp(path: str, image: np.ndarray) -> None:
    """A 24-bit BMP (bottom-up BGR rows padded to 4 bytes), which the tools' decoder reads."""
    a = np.asarray(image)
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3:
        raise InvalidArgumentError(f"calibration arrays are HxWx3 uint8, got {a.shape} {a.dtype}")
    h, w = a.shape[:2]
    row = (w * 3 + 3) & ~3
    body = np.zeros((h, row), np.uint8)
    body[:, : w * 3] = a[::-1, :, ::-1].reshape(h, w * 3)
    header = struct.pack("<2sIHHI", b"BM", 54 + body.size, 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, body.size, 2835, 2835, 0, 0)
    with open(path, "wb") as f:
        f.write(header + info + body.tobytes())


def _write_tensor(path: str, tensor: Any) -> None:
    """A preprocessed model input as .npy (float32; ks-quant copies it into the input as is)."""
    a = np.asarray(tensor)
    if a.dtype != np.float32:
        raise InvalidArgumentError(
            f"calibration tensors are float32 model inputs, got {a.dtype} (convert with "
            f"x.astype(numpy.float32))")
    np.save(path, np.ascontiguousarray(a))


def quantize(model: "os.PathLike[str] | str", output: "os.PathLike[str] | str", *,
             calibration: Union[str, "os.PathLike[str]", Iterable[Any]],
             progress: Progress = None, **options: Any) -> QuantReport:
    """Quantizes a float .ksm into ``output`` with ks-quant. ``calibration``: a folder (of images,
    or of ``.npy`` float32 input tensors), or an iterable of image paths, HxWx3 uint8 images
    (preprocessed by ks-quant, ``preprocess="mean=...,scale=..."``) or float32 arrays that are
    the model input itself (already preprocessed, the input's shape; images and tensors do not
    mix). ``options`` are ks-quant's flags in
    snake_case (``method="mse"``, ``skip=["conv_3"]``, ``speed_check=False``, ``bench=20``,
    ...). ``progress``: a bar per stage (calibration, each search, the checks; see
    :func:`kestrel._tools.progress_callback`: by default on a terminal with tqdm), ``False`` for
    none, or a callable ``(stage, done, total)``. Ctrl-C stops ks-quant and removes ``output``.
    Raises :class:`ToolError` with the tool's message when it fails."""
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise InvalidArgumentError(f"quantize(): unknown options {unknown}; known: "
                                   f"{sorted(_OPTIONS)}")
    out = os.fspath(output)
    with tempfile.TemporaryDirectory(prefix="kestrel-quant-") as tmp:
        if isinstance(calibration, (str, os.PathLike)):
            calib_dir = os.fspath(calibration)
        else:
            calib_dir = os.path.join(tmp, "calibration")
            os.makedirs(calib_dir)
            n = 0
            for i, item in enumerate(calibration):
                if isinstance(item, (str, os.PathLike)):
                    src = os.fspath(item)
                    shutil.copyfile(src, os.path.join(calib_dir, f"{i:05d}_{os.path.basename(src)}"))
                elif np.asarray(item).dtype.kind == "f":
                    _write_tensor(os.path.join(calib_dir, f"{i:05d}.npy"), item)
                else:
                    _write_bmp(os.path.join(calib_dir, f"{i:05d}.bmp"), item)
                n += 1
            if n == 0:
                raise InvalidArgumentError("quantize(): the calibration set is empty")
        report_path = os.path.join(tmp, "report.json")
        args: List[str] = [os.fspath(model), out, "--calibration", calib_dir, "--report",
                           report_path]
        for key, value in options.items():
            flag, kind = _OPTIONS[key]
            if kind == "value" and value is not None:
                args += [flag, str(value)]
            elif kind == "list" and value:
                args += [flag, value if isinstance(value, str) else ",".join(value)]
            elif kind == "flag" and value:
                args.append(flag)
            elif kind == "negated" and not value:
                args.append(flag)
        cb = progress_callback(progress)
        if cb is not None:
            args.append("--progress-lines")
        done = run_tool("ks-quant", args, output=out, progress=cb)
        with open(report_path) as f:
            raw = json.load(f)
    return QuantReport(
        path=out, outputs={o["name"]: o["cosine"] for o in raw.get("outputs", [])},
        layers=list(raw.get("layers_worst_first", [])), fp32_bytes=int(raw.get("fp32_bytes", 0)),
        int8_bytes=int(raw.get("int8_bytes", 0)), int8_layers=int(raw.get("int8_layers", 0)),
        summary=str(done.stdout).strip(), raw=raw)


__all__ = ["QuantReport", "quantize"]
