#!/usr/bin/env python3
"""Compares `ks-vision pose` with MediaPipe 0.10.21's legacy Pose solution on photos.

Usage: .venv/bin/python tests/tasks/compare_pose.py --ks-vision build/algos/ks-vision \
           [--complexity 0|1|2] [--threshold 2.0] IMAGE...

Both run in IMAGE mode (static_image_mode=True, one person) on the same RGB pixels. For each
image it reports the mean 2D landmark distance over the 33 landmarks as a percentage of the body
box size (the longer side of MediaPipe's landmark bounding box), the max, and the world-landmark
mean error in cm. Exit status 1 when any image exceeds --threshold percent or either side finds no
pose where the other does.

Pixel convention: MediaPipe's normalized landmarks times the image size are OpenCV pixel indices
(integer = pixel centre); Kestrel's are continuous (pixel i spans [i, i+1)), so 0.5 px is added
to MediaPipe's. "visible" repeats the error over the landmarks MediaPipe rates visible (> 0.5).
"""

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mp_solutions  # noqa: E402

MODEL_NAMES = {0: "lite", 1: "full", 2: "heavy"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ks-vision", required=True)
    ap.add_argument("--complexity", type=int, default=1, choices=(0, 1, 2))
    ap.add_argument("--bundle", help="pose_landmarker_<variant>.ksb (default: the build's)")
    ap.add_argument("--threshold", type=float, default=2.0)
    ap.add_argument("--bundles", help="bundles dir (default: <ks-vision dir>/../bundles)")
    ap.add_argument("images", nargs="+")
    args = ap.parse_args()
    bundles = (Path(args.bundles) if args.bundles else
               Path(args.ks_vision).resolve().parent.parent / "bundles")
    bundle = args.bundle or str(bundles /
                                f"pose_landmarker_{MODEL_NAMES[args.complexity]}.ksb")
    mp_solutions.require_files(args.ks_vision, bundle)
    images = mp_solutions.existing_images(args.images)
    try:
        pose = mp_solutions.load("pose")
    except ImportError as e:
        mp_solutions.skip(f"mediapipe not importable: {e}")
    ok = True
    for path in images:
        rgb = mp_solutions.load_rgb(path)
        h, w = rgb.shape[:2]
        with pose.Pose(static_image_mode=True, model_complexity=args.complexity,
                       enable_segmentation=False) as p:
            ref = p.process(rgb)
        ks = mp_solutions.run_ks_vision(args.ks_vision, "pose", path, "--model", bundle)
        name = Path(path).name
        if ref.pose_landmarks is None or not ks["poses"]:
            both_empty = ref.pose_landmarks is None and not ks["poses"]
            print(f"{name}: mediapipe {'no pose' if ref.pose_landmarks is None else 'pose'}, "
                  f"kestrel {len(ks['poses'])} pose(s)")
            ok = ok and both_empty
            continue
        r = [(l.x * w + 0.5, l.y * h + 0.5) for l in ref.pose_landmarks.landmark]
        k = [(l[0], l[1]) for l in ks["poses"][0]["landmarks"]]
        xs, ys = [p[0] for p in r], [p[1] for p in r]
        size = max(max(xs) - min(xs), max(ys) - min(ys))
        d = [math.dist(a, b) for a, b in zip(r, k)]
        mean_pct = 100.0 * sum(d) / len(d) / size
        vd = [e for e, l in zip(d, ref.pose_landmarks.landmark) if l.visibility > 0.5]
        vis_pct = 100.0 * sum(vd) / max(len(vd), 1) / size
        max_pct = 100.0 * max(d) / size
        rw = [(l.x, l.y, l.z) for l in ref.pose_world_landmarks.landmark]
        kw = ks["poses"][0]["world_landmarks"]
        world_cm = 100.0 * sum(math.dist(a, b) for a, b in zip(rw, kw)) / len(rw)
        vis = sum(abs(l.visibility - kl[3]) for l, kl in
                  zip(ref.pose_landmarks.landmark, ks["poses"][0]["landmarks"])) / 33
        verdict = "ok" if mean_pct <= args.threshold else "FAIL"
        ok = ok and mean_pct <= args.threshold
        print(f"{name}: landmark mean error {mean_pct:.2f}% of body size ({size:.0f} px), "
              f"max {max_pct:.2f}%, visible {vis_pct:.2f}% ({len(vd)}), world {world_cm:.2f} cm, visibility |d| {vis:.3f} "
              f"[{verdict}]")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
