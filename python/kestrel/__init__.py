"""Kestrel: on-device inference and vision tasks, with NumPy arrays in and out.

    >>> import kestrel
    >>> kestrel.convert("face_detection_short_range.tflite", "blazeface.ksm")
    >>> with kestrel.Model.load("blazeface.ksm") as model, kestrel.Session(model) as s:
    ...     out = s.run({model.inputs[0].name: x})      # {output name: numpy array}

See docs/python.md for the walk-through, the tasks and the ``kestrel`` command.
"""

from __future__ import annotations

import os as _os

from . import _native
from ._core import Backend, Model, Precision, Session, TensorInfo, version
from ._errors import (ChecksumMismatchError, InternalError, InvalidArgumentError,
                      InvalidModelError, InvalidShapeError, InvalidStateError, KestrelError,
                      KestrelIOError, KestrelMemoryError, LimitExceededError, TamperedError,
                      ToolError, UnsupportedError, VersionMismatchError)
from ._tools import convert
from . import effects, protect
from .quantize import QuantReport, quantize
from .visualize import visualize
from .vision import (Box, Classification, DetectedObject, Face, FaceDetector, FaceLandmarker,
                     FaceMesh, Hand, HandLandmarker, ImageClassifier, Mode, ObjectDetector, Pose,
                     PoseLandmarker, Segmentation, Segmenter)

__version__ = version()

# The tasks' default bundles: those of the build tree or of the wheel (KESTREL_MODELS_DIR, read
# by the library itself, still wins).
try:
    from . import _build_config as _cfg

    if _os.path.isdir(_cfg.MODELS_DIR):
        _native.set_models_dir(_cfg.MODELS_DIR)
except ImportError:
    pass

__all__ = [
    "Backend", "Box", "ChecksumMismatchError", "Classification", "DetectedObject", "Face",
    "FaceDetector", "FaceLandmarker", "FaceMesh", "Hand", "HandLandmarker", "ImageClassifier",
    "InternalError", "InvalidArgumentError", "InvalidModelError", "InvalidShapeError",
    "InvalidStateError", "KestrelError", "KestrelIOError", "KestrelMemoryError",
    "LimitExceededError", "Mode", "Model", "ObjectDetector", "Pose", "PoseLandmarker",
    "Precision", "QuantReport", "Segmentation", "Segmenter", "Session", "TamperedError", "TensorInfo",
    "ToolError", "UnsupportedError", "VersionMismatchError", "convert", "effects", "protect",
    "quantize", "version", "visualize",
]
