"""The vision tasks (algos/include/kestrel/*.h) over HxWx3 uint8 RGB arrays.

Every task takes ``mode="image"`` (independent photos) or ``mode="video"`` (a stream: tracking,
stable ids, smoothing; timestamps must increase), the common options of ``ks_task_options``
(threads, min_score, max_results, rotation, mirror, smoothing, model_path, precision, backend)
and its own. Results are dataclasses with ``to_dict()``; coordinates are upright image pixels.

    >>> det = kestrel.FaceDetector()
    >>> faces = det.detect(image)          # image: HxWx3 uint8 (or a PIL image)
    >>> faces[0].box, faces[0].score

Images: HxWx3 (RGB) or HxWx4 (RGBA) uint8 arrays whose pixels are packed; rows may be strided,
so a crop ``image[y0:y1, x0:x1]`` is passed without a copy. PIL images are converted to RGB.
A task is used by one thread at a time; the GIL is released while it runs.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _native
from ._core import Backend, Precision, _enum_arg
from ._errors import InvalidArgumentError


class Mode(enum.IntEnum):
    """ks_running_mode."""

    IMAGE = 0
    VIDEO = 1


@dataclass
class Box:
    """Axis-aligned box in image pixels: top-left corner and size."""

    x: float
    y: float
    w: float
    h: float

    def to_list(self) -> List[float]:
        return [self.x, self.y, self.w, self.h]


def _box(t: Tuple[float, float, float, float]) -> Box:
    return Box(*t)


def _arr(data: Optional[bytearray], shape: Tuple[int, ...],
         dtype: Any = np.float32) -> Optional[np.ndarray]:
    if data is None:
        return None
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, Box):
        return v.to_list()
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


class _Result:
    def to_dict(self) -> Dict[str, Any]:
        """Plain lists, numbers and strings (json.dumps-ready)."""
        return {k: _jsonable(getattr(self, k)) for k in self.__dataclass_fields__}  # type: ignore[attr-defined]


@dataclass
class Face(_Result):
    """A detected face: box, score 0..1, tracking id (VIDEO; -1 in IMAGE mode) and six
    keypoints (right eye, left eye, nose tip, mouth, right ear, left ear) as a 6x2 array."""

    box: Box
    score: float
    id: int
    keypoints: np.ndarray


@dataclass
class FaceMesh(_Result):
    """A face's mesh: 468 (or 478 with irises) landmarks as an Nx3 array in pixels, head pose
    (Euler angles in degrees, 4x4 pose and projection matrices) and expression scores."""

    box: Box
    score: float
    id: int
    landmarks: np.ndarray
    pitch_deg: float
    yaw_deg: float
    roll_deg: float
    pose_matrix: np.ndarray
    projection_matrix: np.ndarray
    expressions: Dict[str, float] = field(default_factory=dict)


@dataclass
class Pose(_Result):
    """A person: 33 landmarks as a 33x5 array (x, y, z in pixels, visibility, presence), 33
    world landmarks in meters (33x3) and, with ``output_segmentation``, an HxW person mask."""

    id: int
    box: Box
    score: float
    landmarks: np.ndarray
    world_landmarks: np.ndarray
    mask: Optional[np.ndarray] = None


@dataclass
class Hand(_Result):
    """A hand: 21 landmarks (21x3, pixels), 21 world landmarks (meters) and handedness."""

    id: int
    box: Box
    score: float
    handedness: str
    handedness_score: float
    landmarks: np.ndarray
    world_landmarks: np.ndarray


@dataclass
class Segmentation(_Result):
    """A person mask: ``mask`` (HxW float32 probabilities), ``mask_u8`` (with
    ``output_u8=True``), the fraction of pixels >= 0.5 and the image size the mask spans."""

    mask: np.ndarray
    mask_u8: Optional[np.ndarray]
    person_fraction: float
    image_width: int
    image_height: int

    @property
    def width(self) -> int:
        return int(self.mask.shape[1])

    @property
    def height(self) -> int:
        return int(self.mask.shape[0])


@dataclass
class DetectedObject(_Result):
    """An object: box, class id and label (from the bundle), score and, in VIDEO mode, a
    stable track id (-1 otherwise)."""

    box: Box
    class_id: int
    label: str
    score: float
    track_id: int


@dataclass
class Classification(_Result):
    """One class of an image classification, by descending score."""

    class_id: int
    label: str
    score: float


def _image(image: Any) -> Any:
    if hasattr(image, "convert") and hasattr(image, "mode") and hasattr(image, "size"):
        # a PIL image (Pillow is optional: only objects that look like one get here)
        return np.asarray(image if image.mode in ("RGB", "RGBA") else image.convert("RGB"))
    return image


class _Task:
    _kind = -1

    def __init__(self, *, mode: Union[Mode, str, int] = Mode.IMAGE, threads: int = 1,
                 min_score: float = 0.0, max_results: int = 0,
                 model_path: Optional["os.PathLike[str] | str"] = None,
                 precision: Union[Precision, str, int] = Precision.DEFAULT,
                 backend: Union[Backend, str, int] = Backend.CPU, rotation: int = 0,
                 mirror: bool = False, smoothing: float = 0.0, **task: Any) -> None:
        if rotation not in (0, 90, 180, 270):
            raise InvalidArgumentError(f"rotation={rotation}: expected 0, 90, 180 or 270")
        self.mode = Mode(_enum_arg(Mode, mode, "mode"))
        self._ts = -1
        self._native = _native.Task(
            self._kind, mode=int(self.mode), threads=threads, min_score=float(min_score),
            max_results=max_results,
            model_path=os.fspath(model_path) if model_path is not None else None,
            precision=_enum_arg(Precision, precision, "precision"),
            backend=_enum_arg(Backend, backend, "backend"), rotation=rotation // 90,
            mirror=int(bool(mirror)), smoothing=float(smoothing), **task)

    def _call(self, image: Any, timestamp_us: Optional[int]) -> Any:
        if timestamp_us is None:
            # VIDEO needs increasing timestamps: without one, frames are 1/30 s apart.
            timestamp_us = 0 if self._ts < 0 else self._ts + 33333
        self._ts = int(timestamp_us)
        return self._native.detect(_image(image), self._ts)

    def swap_model(self, model_path: "os.PathLike[str] | str") -> None:
        """Live swap: loads a newer version of the task's models (a ``.ksb`` or ``.ksm``, e.g.
        a path from a store update) and makes the next :meth:`detect` use it. May be called from
        another thread while one detects; the task keeps every other option of its creation and
        its VIDEO tracks (landmarkers). A bad version raises and the task keeps running the
        current one (docs/delivery.md, "Live swap")."""
        self._native.swap_model(os.fspath(model_path))

    @property
    def model_generation(self) -> int:
        """How many :meth:`swap_model` versions the task has taken (0: its first models)."""
        return int(self._native.model_generation)

    @property
    def closed(self) -> bool:
        return bool(self._native.closed)

    def close(self) -> None:
        """Destroys the task; later calls raise :class:`InvalidStateError`."""
        self._native.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class FaceDetector(_Task):
    """BlazeFace face detection. ``model="short"`` (selfies, within ~2 m) or ``"full"`` (up to
    ~5 m); ``tiles`` 2..4 also searches N x N tiles for small faces."""

    _kind = 0

    def __init__(self, *, model: str = "short", tiles: int = 0, **options: Any) -> None:
        variant = {"short": 0, "full": 1}.get(model)
        if variant is None:
            raise InvalidArgumentError(f"model={model!r}: expected 'short' or 'full'")
        super().__init__(variant=variant, extra=tiles, **options)

    def detect(self, image: Any, timestamp_us: Optional[int] = None) -> List[Face]:
        """The faces of ``image``, best first."""
        return [Face(_box(b), s, i, _arr(kp, (6, 2)))  # type: ignore[arg-type]
                for b, s, i, kp in self._call(image, timestamp_us)]


class FaceLandmarker(_Task):
    """Face mesh (468 landmarks; 478 with ``refine_landmarks=True``), head pose and
    expressions. ``max_results`` 0 means one face."""

    _kind = 1

    def __init__(self, *, detector: str = "short", refine_landmarks: bool = False,
                 min_tracking_score: float = 0.0, **options: Any) -> None:
        variant = {"short": 0, "full": 1}.get(detector)
        if variant is None:
            raise InvalidArgumentError(f"detector={detector!r}: expected 'short' or 'full'")
        super().__init__(variant=variant, flag=int(refine_landmarks),
                         value=float(min_tracking_score), **options)

    def detect(self, image: Any, timestamp_us: Optional[int] = None) -> List[FaceMesh]:
        out = []
        for b, s, i, lm, pitch, yaw, roll, pm, proj, ex in self._call(image, timestamp_us):
            names = ("mouth_open", "left_eye_blink", "right_eye_blink", "brow_raise", "smile")
            out.append(FaceMesh(_box(b), s, i, _arr(lm, (-1, 3)), pitch, yaw, roll,  # type: ignore[arg-type]
                                _arr(pm, (4, 4)), _arr(proj, (4, 4)),  # type: ignore[arg-type]
                                dict(zip(names, ex))))
        return out


class PoseLandmarker(_Task):
    """BlazePose: 33 landmarks per person. ``model``: ``"full"``, ``"lite"`` or ``"heavy"``;
    ``output_segmentation=True`` adds a person mask to each pose."""

    _kind = 2

    def __init__(self, *, model: str = "full", min_presence: float = 0.0,
                 output_segmentation: bool = False, **options: Any) -> None:
        variant = {"full": 0, "lite": 1, "heavy": 2}.get(model)
        if variant is None:
            raise InvalidArgumentError(f"model={model!r}: expected 'full', 'lite' or 'heavy'")
        super().__init__(variant=variant, value=float(min_presence),
                         flag=int(output_segmentation), **options)

    def detect(self, image: Any, timestamp_us: Optional[int] = None) -> List[Pose]:
        poses, mw, mh = self._call(image, timestamp_us)
        return [Pose(i, _box(b), s, _arr(lm, (33, 5)), _arr(w, (33, 3)),  # type: ignore[arg-type]
                     _arr(m, (mh, mw)))
                for i, b, s, lm, w, m in poses]


class HandLandmarker(_Task):
    """Palm detection plus 21 hand landmarks. ``model``: ``"full"`` or ``"lite"``."""

    _kind = 3

    def __init__(self, *, model: str = "full", min_presence: float = 0.0,
                 **options: Any) -> None:
        variant = {"full": 0, "lite": 1}.get(model)
        if variant is None:
            raise InvalidArgumentError(f"model={model!r}: expected 'full' or 'lite'")
        super().__init__(variant=variant, value=float(min_presence), **options)

    def detect(self, image: Any, timestamp_us: Optional[int] = None) -> List[Hand]:
        return [Hand(i, _box(b), s, hd, hs, _arr(lm, (21, 3)), _arr(w, (21, 3)))  # type: ignore[arg-type]
                for i, b, s, hd, hs, lm, w in self._call(image, timestamp_us)]


class Segmenter(_Task):
    """Selfie segmentation. ``model``: ``"general"`` (256x256) or ``"landscape"``;
    ``mask_size``: ``"image"`` (the input's size) or ``"model"``; ``output_u8`` adds a uint8
    mask."""

    _kind = 4

    def __init__(self, *, model: str = "general", output_u8: bool = False,
                 mask_size: str = "image", **options: Any) -> None:
        variant = {"general": 0, "landscape": 1}.get(model)
        size = {"image": 0, "model": 1}.get(mask_size)
        if variant is None or size is None:
            raise InvalidArgumentError(f"model={model!r}, mask_size={mask_size!r}: expected "
                                       "'general'/'landscape' and 'image'/'model'")
        super().__init__(variant=variant, flag=int(output_u8), extra=size, **options)

    def segment(self, image: Any, timestamp_us: Optional[int] = None) -> Segmentation:
        w, h, mask, u8, frac, iw, ih = self._call(image, timestamp_us)
        return Segmentation(_arr(mask, (h, w)), _arr(u8, (h, w), np.uint8), frac, iw, ih)  # type: ignore[arg-type]


class ObjectDetector(_Task):
    """Object detection (the default bundle, or ``model_path``), objects by descending
    score."""

    _kind = 5

    def detect(self, image: Any, timestamp_us: Optional[int] = None) -> List[DetectedObject]:
        return [DetectedObject(_box(b), c, lab, s, t)
                for b, c, lab, s, t in self._call(image, timestamp_us)]


class ImageClassifier(_Task):
    """Image classification (MobileNet by default), classes by descending score."""

    _kind = 6

    def classify(self, image: Any, timestamp_us: Optional[int] = None) -> List[Classification]:
        return [Classification(c, lab, s) for c, lab, s in self._call(image, timestamp_us)]


def models_dir() -> str:
    """Where tasks find their default bundles (``KESTREL_MODELS_DIR`` wins)."""
    return str(_native.models_dir())


def set_models_dir(path: Optional["os.PathLike[str] | str"]) -> None:
    """Sets the default bundles folder (None: the built-in default)."""
    _native.set_models_dir(os.fspath(path) if path is not None else None)


__all__ = ["Mode", "Box", "Face", "FaceMesh", "Pose", "Hand", "Segmentation", "DetectedObject",
           "Classification", "FaceDetector", "FaceLandmarker", "PoseLandmarker",
           "HandLandmarker", "Segmenter", "ObjectDetector", "ImageClassifier", "models_dir",
           "set_models_dir"]
