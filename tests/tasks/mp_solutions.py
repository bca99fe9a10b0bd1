"""Loads MediaPipe 0.10.21's legacy solutions (pose, hands) without cv2/matplotlib.

`import mediapipe` runs mediapipe/__init__.py and mediapipe/python/solutions/__init__.py, which
import the drawing utilities and so cv2; the golden venv (scripts/requirements-golden.txt) has no
opencv. Bare package modules with the right __path__ are registered instead, so that the solution
modules (which need only numpy, protobuf and mediapipe's framework bindings) load directly.
"""

import importlib.util
import subprocess
import sys
import types


def load(name):
    """Returns mediapipe.python.solutions.<name> (e.g. "pose", "hands")."""
    spec = importlib.util.find_spec("mediapipe")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the mediapipe package is not installed in this venv")
    root = list(spec.submodule_search_locations)[0]
    for mod, sub in (("mediapipe", ""), ("mediapipe.python.solutions", "/python/solutions")):
        if mod not in sys.modules:
            m = types.ModuleType(mod)
            m.__path__ = [root + sub]
            sys.modules[mod] = m
    return importlib.import_module("mediapipe.python.solutions." + name)


def load_rgb(path):
    """An image file as an HxWx3 uint8 RGB numpy array (Pillow)."""
    import numpy as np
    from PIL import Image
    with Image.open(path) as im:
        return np.ascontiguousarray(np.asarray(im.convert("RGB")))


def run_ks_vision(ks_vision, task, image, *extra):
    import json
    out = subprocess.run([ks_vision, task, image, "--json", *extra], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)
