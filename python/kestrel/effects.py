"""AR effect packages (.kfx): validate, inspect and render them.

``validate`` and ``info`` run the C reader and validator (``kestrel/effect.h``, the same code an
app's renderer opens packages with) in-process, with the GIL released while the package is read:

    >>> kestrel.effects.validate("cat_ears.kfx")          # None, or raises
    >>> fx = kestrel.effects.info("cat_ears.kfx")
    >>> fx.name, [layer["kind"] for layer in fx.layers]
    >>> frame = kestrel.effects.render("cat_ears.kfx", photo)  # HxWx3 uint8 in and out

A broken package raises the :class:`KestrelError` subclass of the reader's status
(:class:`InvalidModelError` for a corrupt zip or manifest, :class:`ChecksumMismatchError` for a
CRC error, :class:`LimitExceededError`, :class:`UnsupportedError`, :class:`KestrelIOError`, ...)
with the reader's message (package entry, JSON path, offending value).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Tuple

from . import _native

__all__ = ["EffectInfo", "info", "render", "validate"]


@dataclass(frozen=True)
class EffectInfo:
    """What a .kfx package holds (``ks-effect info``): the manifest summary, the layers in render
    order (dicts: ``name``, ``kind``, ``blend``, ``opacity``, ``visible``, ``texture``, ``lut``,
    ``mesh``, ``shader``, ``frames``, ``anchor_landmarks``, ...), parameters, states (``name``,
    ``actions`` as (action, layer) pairs), triggers and assets (``name``, ``kind``,
    ``size_bytes``, ``width_px``, ``height_px``)."""

    path: str
    id: str
    name: str
    author: str
    format_version: Tuple[int, int, int]
    required_capabilities: List[str]
    max_faces: int
    thumbnail: str
    initial_state: str
    layers: List[Dict[str, Any]] = field(default_factory=list)
    params: List[Dict[str, Any]] = field(default_factory=list)
    states: List[Dict[str, Any]] = field(default_factory=list)
    triggers: List[Dict[str, Any]] = field(default_factory=list)
    assets: List[Dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["format_version"] = ".".join(map(str, self.format_version))
        return d


def validate(path: "os.PathLike[str] | str") -> None:
    """Checks the package at ``path`` as a renderer would open it (zip structure, CRCs, limits,
    the manifest's types and ranges, every asset reference, image sizes). Returns None when it
    is valid; raises a :class:`KestrelError` subclass with the reader's message otherwise."""
    _native.effect_validate(os.fspath(path))


def info(path: "os.PathLike[str] | str") -> EffectInfo:
    """The contents of the package at ``path`` (validated first, as :func:`validate`)."""
    p = os.fspath(path)
    d = _native.effect_info(p)
    d["states"] = [{"name": s["name"], "actions": [list(a) for a in s["actions"]]}
                   for s in d["states"]]
    for layer in d["layers"]:
        layer["color"] = list(layer["color"])
    for prm in d["params"]:
        prm["default_color"] = list(prm["default_color"])
    return EffectInfo(path=p, **d)


def render(effect: "os.PathLike[str] | str", image: Any) -> Any:
    """Renders the effect package ``effect`` over ``image`` (HxWx3 RGB or HxWx4 RGBA uint8, or a
    PIL image) and returns the frame as a new uint8 array of the same shape.

    Headless: an OpenGL ES 3.0 context on EGL's surfaceless platform (Mesa's llvmpipe where no
    GPU is present) is made for the call, the face landmarker (the default bundle, up to the
    effect's ``max_faces`` faces, 478 points) finds the faces when the effect requires face
    landmarks, and the AR renderer (``kestrel/ar.h``) draws every layer as an app would, at time
    0 and in the effect's initial state. No person mask is given, so background layers draw
    nothing. The GIL is released throughout.

    Raises :class:`UnsupportedError` when this build or machine has no EGL / OpenGL ES 3, the
    reader's :class:`KestrelError` for a damaged package, :class:`InvalidArgumentError` for an
    image that is not HxWx3/HxWx4 uint8 with packed pixels."""
    import numpy as np

    from .vision import _image

    arr = _image(image)
    rgba, w, h, _ = _native.effect_render(os.fspath(effect), arr)
    out = np.frombuffer(rgba, np.uint8).reshape(h, w, 4)
    channels = getattr(arr, "shape", (0, 0, 4))[-1]
    return np.ascontiguousarray(out[..., :3]) if channels == 3 else out
