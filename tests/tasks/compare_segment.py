#!/usr/bin/env python3
"""Compares Kestrel's person segmentation (ks-vision segment --mask-out) with MediaPipe 0.10.21's
legacy selfie_segmentation solution on real photos.

Both masks are thresholded at 0.5 and compared by IoU (target >= 0.95), for model_selection 0
(general, 256x256: bundle selfie_segmenter.ksb) and 1 (landscape, 144x256:
selfie_segmenter_landscape.ksb). MediaPipe runs in static-image mode (no temporal smoothing),
with the same .tflite files as Kestrel (models/segmentation) unless --mp-models package.

Usage (from the repo root, after a build that made ks-vision and the bundles):
    .venv/bin/python tests/tasks/compare_segment.py --ks-vision build/algos/ks-vision \
        [--bundles build/bundles] [--mp-models ours|package] [images ...]

Only mediapipe's framework bindings and the solution module are imported (the `mediapipe`
package's __init__ pulls in cv2, which the golden venv leaves out). Images are read with Pillow.
Exits 1 when an image misses the target.
"""

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import types

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mp_solutions  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET_IOU = 0.95
MODELS = {0: ("selfie_segmenter.ksb", "selfie_segmentation.tflite"),
          1: ("selfie_segmenter_landscape.ksb", "selfie_segmentation_landscape.tflite")}


def import_selfie(models_dir):
    spec = importlib.util.find_spec("mediapipe")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("mediapipe is not installed in this venv")
    pkg_dir = list(spec.submodule_search_locations)[0]
    for name, path in (("mediapipe", pkg_dir),
                       ("mediapipe.python.solutions", os.path.join(pkg_dir, "python", "solutions"))):
        if name not in sys.modules:
            mod = types.ModuleType(name)
            mod.__path__ = [path]
            sys.modules[name] = mod
    from mediapipe.python import solution_base
    if models_dir is not None:
        real_set = solution_base.resource_util.set_resource_dir

        class _ResourceUtil:
            def __getattr__(self, attr):
                return getattr(solution_base.resource_util_real, attr)

            @staticmethod
            def set_resource_dir(_path):
                real_set(models_dir)

        solution_base.resource_util_real = solution_base.resource_util
        solution_base.resource_util = _ResourceUtil()
    from mediapipe.python.solutions import selfie_segmentation
    return selfie_segmentation


def our_model_tree():
    tmp = tempfile.mkdtemp(prefix="ks_seg_mp_")
    d = os.path.join(tmp, "mediapipe", "modules", "selfie_segmentation")
    os.makedirs(d)
    for _, tfl in MODELS.values():
        os.symlink(os.path.join(ROOT, "models", "segmentation", tfl), os.path.join(d, tfl))
    return tmp


def ks_mask(ks_vision, bundle, image):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "mask.png")
        subprocess.run([ks_vision, "segment", image, "--model", bundle, "--mask-out", out],
                       check=True, stdout=subprocess.DEVNULL)
        return np.asarray(Image.open(out), dtype=np.float32) / 255.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ks-vision", default=os.path.join(ROOT, "build", "algos", "ks-vision"))
    ap.add_argument("--bundles", default=None, help="bundles dir (default: build/bundles)")
    ap.add_argument("--mp-models", choices=["ours", "package"], default="ours")
    ap.add_argument("images", nargs="*")
    args = ap.parse_args()
    bundles = args.bundles or os.path.join(os.path.dirname(os.path.dirname(args.ks_vision)),
                                           "bundles")
    images = args.images or [os.path.join(ROOT, "models", "images", f)
                             for f in ("skimage_astronaut.png", "opencv_messi5.jpg")]
    shared = os.path.join(ROOT, "..", "shared", "data", "images")
    if not args.images and os.path.isdir(shared):
        images += [os.path.join(shared, f) for f in ("coral_grace_hopper.bmp", "coral_squat.bmp",
                                                     "ultralytics_zidane.jpg", "coral_face.jpg")]
    mp_solutions.require_files(args.ks_vision,
                               *(os.path.join(bundles, b) for b, _ in MODELS.values()))
    images = mp_solutions.existing_images(images)
    try:
        ss = import_selfie(our_model_tree() if args.mp_models == "ours" else None)
    except (ImportError, RuntimeError) as e:
        mp_solutions.skip(f"mediapipe not importable: {e}")
    worst = 1.0
    for sel, (bundle, _) in MODELS.items():
        with ss.SelfieSegmentation(model_selection=sel) as seg:
            for path in images:
                rgb = np.asarray(Image.open(path).convert("RGB"))
                ref = seg.process(rgb).segmentation_mask
                ours = ks_mask(args.ks_vision, os.path.join(bundles, bundle), path)
                a, b = ref >= 0.5, ours >= 0.5
                union = np.logical_or(a, b).sum()
                iou = np.logical_and(a, b).sum() / union if union else 1.0
                mad = float(np.abs(ref - ours).mean())
                worst = min(worst, iou)
                print(f"model {sel} {os.path.basename(path):28s} mask IoU {iou:.4f}  "
                      f"mean |diff| {mad:.4f}  {'ok' if iou >= TARGET_IOU else 'BELOW TARGET'}")
    print(f"worst IoU {worst:.4f} (target >= {TARGET_IOU})")
    return 0 if worst >= TARGET_IOU else 1


if __name__ == "__main__":
    sys.exit(main())
