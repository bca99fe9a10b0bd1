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


SKIP_EXIT_CODE = 77  # ctest SKIP_RETURN_CODE (tests/tasks/CMakeLists.txt)


def skip(message):
    """Ends the run as skipped: an input (venv package, bundle, model, photo) is missing."""
    print("SKIP: " + message)
    sys.exit(SKIP_EXIT_CODE)


def require_files(*paths):
    """Skips the run unless every path exists."""
    import os
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        skip("missing " + ", ".join(missing))


def existing_images(paths):
    """The photos that exist (missing ones are reported); skips the run when none does."""
    import os
    found = [p for p in paths if os.path.exists(p)]
    for p in paths:
        if p not in found:
            print("note: photo not found, left out: " + p)
    if not found:
        skip("none of the photos exist")
    return found
