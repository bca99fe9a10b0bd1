#!/usr/bin/env python3
"""Compares `ks-vision hands` with MediaPipe 0.10.21's legacy Hands solution on photos.

Usage: .venv/bin/python tests/tasks/compare_hands.py --ks-vision build/algos/ks-vision \
           [--complexity 0|1] [--threshold 2.0] IMAGE...

Both run in IMAGE mode (static_image_mode=True, up to 2 hands) on the same RGB pixels. Hands are
paired by the nearest landmark-box centre. Per pair it reports the mean 2D landmark distance over
the 21 landmarks as a percentage of the hand box size (the longer side of MediaPipe's landmark
bounding box) and the handedness of both sides. Kestrel reports the person's real hand on a
non-mirrored photo, MediaPipe the opposite (it assumes a mirrored selfie image), so agreeing
labels are printed as "swapped as expected". Exit status 1 when a pair exceeds --threshold
percent, labels do not follow that rule, or the hand counts differ.

Pixel convention: MediaPipe's normalized landmarks times the image size are OpenCV pixel indices
(integer = pixel centre); Kestrel's are continuous (pixel i spans [i, i+1)), so 0.5 px is added
to MediaPipe's. It matters: 0.5 px is ~2 % of a 27 px hand.
"""

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mp_solutions  # noqa: E402

MODEL_NAMES = {0: "lite", 1: "full"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ks-vision", required=True)
    ap.add_argument("--complexity", type=int, default=1, choices=(0, 1))
    ap.add_argument("--bundle", help="hand_landmarker_<variant>.ksb (default: the build's)")
    ap.add_argument("--threshold", type=float, default=2.0)
    ap.add_argument("--bundles", help="bundles dir (default: <ks-vision dir>/../bundles)")
    ap.add_argument("images", nargs="+")
    args = ap.parse_args()
    bundles = (Path(args.bundles) if args.bundles else
               Path(args.ks_vision).resolve().parent.parent / "bundles")
    bundle = args.bundle or str(bundles /
                                f"hand_landmarker_{MODEL_NAMES[args.complexity]}.ksb")
    mp_solutions.require_files(args.ks_vision, bundle)
    images = mp_solutions.existing_images(args.images)
    try:
        hands = mp_solutions.load("hands")
    except ImportError as e:
        mp_solutions.skip(f"mediapipe not importable: {e}")
    ok = True
    for path in images:
        rgb = mp_solutions.load_rgb(path)
        h, w = rgb.shape[:2]
        with hands.Hands(static_image_mode=True, max_num_hands=2,
                         model_complexity=args.complexity) as mp_hands:
            ref = mp_hands.process(rgb)
        ks = mp_solutions.run_ks_vision(args.ks_vision, "hands", path, "--model", bundle)["hands"]
        refs = []
        for lms, cls in zip(ref.multi_hand_landmarks or [], ref.multi_handedness or []):
            pts = [(l.x * w + 0.5, l.y * h + 0.5) for l in lms.landmark]
            refs.append((pts, cls.classification[0].label.lower(), cls.classification[0].score))
        name = Path(path).name
        if len(refs) != len(ks):
            print(f"{name}: mediapipe {len(refs)} hand(s), kestrel {len(ks)} hand(s) [DIFFERENT]")
            ok = False
        used = set()
        for pts, label, label_score in refs:
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            size = max(max(xs) - min(xs), max(ys) - min(ys))
            c = (sum(xs) / 21, sum(ys) / 21)
            best, best_d = None, float("inf")
            for i, k in enumerate(ks):
                if i in used:
                    continue
                kc = (k["box"][0] + k["box"][2] / 2, k["box"][1] + k["box"][3] / 2)
                if math.dist(c, kc) < best_d:
                    best, best_d = i, math.dist(c, kc)
            if best is None:
                print(f"{name}: mediapipe hand at ({c[0]:.0f}, {c[1]:.0f}) not found by kestrel")
                ok = False
                continue
            used.add(best)
            k = ks[best]
            d = [math.dist(a, (b[0], b[1])) for a, b in zip(pts, k["landmarks"])]
            mean_pct = 100.0 * sum(d) / len(d) / size
            swapped = label != k["handedness"]
            # A score near 0.5 is MediaPipe's "cannot tell": either label is acceptable.
            undecided = label_score < 0.6
            good = mean_pct <= args.threshold and (swapped or undecided)
            ok = ok and good
            print(f"{name}: hand at ({c[0]:.0f}, {c[1]:.0f}) size {size:.0f} px: landmark mean "
                  f"error {mean_pct:.2f}% of hand size, max {100.0 * max(d) / size:.2f}%; "
                  f"handedness mediapipe {label} {label_score:.2f} / kestrel {k['handedness']} "
                  f"({'swapped as expected' if swapped else 'undecided' if undecided else 'NOT swapped'}) "
                  f"[{'ok' if good else 'FAIL'}]")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
