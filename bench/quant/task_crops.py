"""Calibration crops for second-stage landmark models (ks-quant --calibration).

    python task_crops.py KS_VISION pose|face_landmarks PHOTO_DIR OUT_DIR [--jitter N] [--seed S]

A landmark model in its task never sees a whole photo stretched to its input: it sees the region
of interest the task cut around a detected person / face, rotated upright and scaled. This runs
`KS_VISION TASK PHOTO --json` (default fp32 bundles) on every photo of PHOTO_DIR and writes, per
detected pose / face, the crop the landmark model would see, plus N jittered variants (scale
0.9-1.1, shift up to 5 % of the side, rotation up to 10 degrees), as PNGs of the model's input
size into OUT_DIR. Photos without a detection (or that ks-vision cannot read) are skipped.

The ROI follows the tracking rule of the tasks (algos/common/landmarks.c presets, computed here
from the landmarks that ks-vision prints, since the detector keypoints are not printed):
- pose (BlazePose, 256x256): POSE_FROM_* presets, alignment points: centre = hip centre
  (mid of landmarks 23/24), rotation so that hip centre -> shoulder centre points up, side =
  2 * radius * 1.25 where radius is the largest distance from the hip centre to any of the 33
  landmarks (stand-in for the detector's body-circle keypoint);
- face_landmarks (FaceMesh, 192x192): FACE_FROM_LANDMARKS, bounding box of the 468 landmarks,
  square on its long side, scale 1.5, rotation from outer eye corner 33 -> 263 to horizontal.
Sampling is bilinear with replicated border, like the task's image_to_tensor (no border_zero).
"""
import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np
from PIL import Image

TASKS = {
    # task: (JSON key, input side in px)
    "pose": ("poses", 256),
    "face_landmarks": ("faces", 192),
}
IMAGE_EXTS = (".jpg", ".jpeg", ".png", ".bmp")


def normalize_radians(a):
    return a - 2.0 * math.pi * math.floor((a + math.pi) / (2.0 * math.pi))


def rotation(x0, y0, x1, y1, target_deg):
    """Angle that turns the vector (x0, y0) -> (x1, y1) (pixels) to target_deg (landmarks.c)."""
    return normalize_radians(math.radians(target_deg) - math.atan2(-(y1 - y0), x1 - x0))


def pose_roi(lm):
    """(centre x, centre y, side, rotation) in pixels / radians from 33 pose landmarks."""
    hip = (lm[23, :2] + lm[24, :2]) / 2.0
    shoulder = (lm[11, :2] + lm[12, :2]) / 2.0
    radius = float(np.max(np.linalg.norm(lm[:33, :2] - hip, axis=1)))
    rot = rotation(hip[0], hip[1], shoulder[0], shoulder[1], 90.0)
    return float(hip[0]), float(hip[1]), 2.0 * radius * 1.25, rot


def face_roi(lm):
    x0, y0 = np.min(lm[:, :2], axis=0)
    x1, y1 = np.max(lm[:, :2], axis=0)
    rot = rotation(lm[33, 0], lm[33, 1], lm[263, 0], lm[263, 1], 0.0)
    side = max(x1 - x0, y1 - y0) * 1.5
    return float((x0 + x1) / 2.0), float((y0 + y1) / 2.0), float(side), rot


def crop(img, cx, cy, side, rot, size):
    """The size x size crop of img (HxWx3 float) for the rotated square ROI; bilinear, border
    replicated. Crop pixel centre (u, v) maps to the ROI point ((u + .5) / size - .5) * side,
    rotated by rot about the centre (ks__landmarks_project)."""
    h, w = img.shape[:2]
    t = (np.arange(size, dtype=np.float64) + 0.5) / size - 0.5
    a, b = np.meshgrid(t, t)  # a: x in ROI units, b: y
    c, s = math.cos(rot), math.sin(rot)
    x = cx + (c * a - s * b) * side - 0.5
    y = cy + (s * a + c * b) * side - 0.5
    x = np.clip(x, 0.0, w - 1.0)
    y = np.clip(y, 0.0, h - 1.0)
    x0 = np.floor(x).astype(np.int64)
    y0 = np.floor(y).astype(np.int64)
    x1, y1 = np.minimum(x0 + 1, w - 1), np.minimum(y0 + 1, h - 1)
    fx, fy = (x - x0)[..., None], (y - y0)[..., None]
    top = img[y0, x0] * (1 - fx) + img[y0, x1] * fx
    bot = img[y1, x0] * (1 - fx) + img[y1, x1] * fx
    return np.clip(top * (1 - fy) + bot * fy + 0.5, 0, 255).astype(np.uint8)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("vision", help="ks-vision binary")
    ap.add_argument("task", choices=sorted(TASKS))
    ap.add_argument("photos", help="folder of photos")
    ap.add_argument("out", help="output folder for the PNG crops")
    ap.add_argument("--jitter", type=int, default=7, help="jittered variants per detection")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quiet", action="store_true",
                    help="no line per photo without a detection, no summary (errors still)")
    args = ap.parse_args()
    key, size = TASKS[args.task]
    if not os.access(args.vision, os.X_OK):
        sys.exit("task_crops: %s is not an executable ks-vision" % args.vision)
    if not os.path.isdir(args.photos):
        sys.exit("task_crops: no photo folder '%s'" % args.photos)
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    num_crops = num_photos = 0
    for name in sorted(os.listdir(args.photos)):
        path = os.path.join(args.photos, name)
        if not name.lower().endswith(IMAGE_EXTS):
            continue
        proc = subprocess.run([args.vision, args.task, path, "--json"], capture_output=True,
                              text=True)
        if proc.returncode != 0:
            print("task_crops: skip %s: %s" % (name, proc.stderr.strip()), file=sys.stderr)
            continue
        items = json.loads(proc.stdout).get(key, [])
        if not items:
            if not args.quiet:
                print("task_crops: skip %s: no detection" % name, file=sys.stderr)
            continue
        num_photos += 1
        img = np.asarray(Image.open(path).convert("RGB"), np.float32)
        stem = os.path.splitext(name)[0]
        for i, item in enumerate(items):
            lm = np.asarray(item["landmarks"], np.float64)
            cx, cy, side, rot = pose_roi(lm) if args.task == "pose" else face_roi(lm)
            for j in range(args.jitter + 1):
                if j == 0:
                    k, dx, dy, dr = 1.0, 0.0, 0.0, 0.0
                else:
                    k = rng.uniform(0.9, 1.1)
                    dx, dy = rng.uniform(-0.05, 0.05, 2) * side
                    dr = math.radians(rng.uniform(-10.0, 10.0))
                out = crop(img, cx + dx, cy + dy, side * k, rot + dr, size)
                Image.fromarray(out).save(os.path.join(args.out, "%s_%d_%d.png" % (stem, i, j)))
                num_crops += 1
    if num_crops == 0:
        print("task_crops: no detection in %s" % args.photos, file=sys.stderr)
    elif not args.quiet:
        print("task_crops: %d crops from %d photos with a detection" % (num_crops, num_photos))
    return 0 if num_crops else 1


if __name__ == "__main__":
    sys.exit(main())
