#!/usr/bin/env python3
"""Compares Kestrel's object detector (ks-vision detect --json with the YOLOX and NanoDet
bundles) with ONNX Runtime running the same ONNX models, followed by the same decode written
independently in numpy (grid decode, class-wise NMS, letterbox undone).

The reference preprocessing reproduces the bundle config (algos/detect/*.json) exactly as
Kestrel samples it: each tensor pixel centre maps through the letterbox affine to the image and
is sampled bilinearly, taps outside the image reading the pad value. Per image it reports, for
every reference object, the IoU of the best Kestrel box of the same class, and whether both
found the same classes. Targets: box IoU >= 0.95 and the same classes.

Usage (repo root, after building ks-vision and the bundles; needs ../shared/data):
    .venv/bin/python tests/tasks/compare_detect.py --ks-vision build/algos/ks-vision \
        [--bundles build/bundles] [images ...]
Exits 1 when a target is missed.
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mp_solutions  # noqa: E402

try:
    import onnxruntime as ort
except ImportError as e:
    mp_solutions.skip(f"onnxruntime not importable: {e}")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "..", "shared", "data")
TARGET_IOU = 0.95
DETECTORS = {
    "yolox": ("object_detector_yolox.ksb", "yolox_nano.onnx", "yolox_nano.json"),
    "nanodet": ("object_detector_nanodet.ksb", "nanodet_m.onnx", "nanodet_m.json"),
}


def preprocess(rgb, pre):
    h, w = rgb.shape[:2]
    tw, th = pre["width"], pre["height"]
    r = min(tw / w, th / h)
    off_x = off_y = 0.0
    if pre["fit"] == "letterbox":
        off_x, off_y = -0.5 * (tw - w * r) / r, -0.5 * (th - h * r) / r
    elif pre["fit"] != "letterbox_top_left":
        raise ValueError("only letterbox fits are used by the detector bundles")
    sx = (np.arange(tw) + 0.5) / r + off_x - 0.5  # source coordinates of tensor pixel centres,
    sy = (np.arange(th) + 0.5) / r + off_y - 0.5  # in pixel-index units
    x0, y0 = np.floor(sx).astype(int), np.floor(sy).astype(int)
    fx, fy = (sx - x0)[None, :, None], (sy - y0)[:, None, None]
    pad = float(pre.get("pad_value", 0))
    img = rgb.astype(np.float32)

    def tap(yy, xx):
        valid = ((yy >= 0) & (yy < h))[:, None] & ((xx >= 0) & (xx < w))[None, :]
        v = img[np.clip(yy, 0, h - 1)][:, np.clip(xx, 0, w - 1)]
        return np.where(valid[..., None], v, pad)

    out = (tap(y0, x0) * (1 - fx) * (1 - fy) + tap(y0, x0 + 1) * fx * (1 - fy) +
           tap(y0 + 1, x0) * (1 - fx) * fy + tap(y0 + 1, x0 + 1) * fx * fy)
    if pre.get("channel_order", "rgb") == "bgr":
        out = out[..., ::-1]
    out = (out - np.array(pre.get("mean", [0, 0, 0]))) / np.array(pre.get("std", [1, 1, 1]))
    return out.transpose(2, 0, 1)[None].astype(np.float32), r, off_x, off_y


def grids(cfg):
    w, h = cfg["preprocess"]["width"], cfg["preprocess"]["height"]
    for s in cfg["strides"]:
        gw, gh = -(-w // s), -(-h // s)
        gy, gx = np.mgrid[0:gh, 0:gw]
        yield s, gx.reshape(-1).astype(np.float32), gy.reshape(-1).astype(np.float32)


def decode_yolox(outs, cfg):
    raw = outs[0].reshape(-1, 5 + cfg["num_classes"])
    boxes, n = [], 0
    for s, gx, gy in grids(cfg):
        p = raw[n:n + gx.size]
        n += gx.size
        cx, cy = (p[:, 0] + gx) * s, (p[:, 1] + gy) * s
        bw, bh = np.exp(p[:, 2]) * s, np.exp(p[:, 3]) * s
        boxes.append(np.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], 1))
    scores = raw[:, 4:5] * raw[:, 5:]
    return np.concatenate(boxes), scores


def decode_nanodet(outs, cfg):
    levels = len(cfg["strides"])
    bins = cfg.get("reg_max", 7) + 1
    off = cfg.get("center_offset", 0.5)
    boxes, scores = [], []
    for i, (s, gx, gy) in enumerate(grids(cfg)):
        cls = outs[i].reshape(-1, cfg["num_classes"])
        reg = outs[levels + i].reshape(-1, 4, bins)
        e = np.exp(reg - reg.max(-1, keepdims=True))
        dist = (e / e.sum(-1, keepdims=True) * np.arange(bins)).sum(-1) * s
        cx, cy = (gx + off) * s, (gy + off) * s
        boxes.append(np.stack([cx - dist[:, 0], cy - dist[:, 1], cx + dist[:, 2],
                               cy + dist[:, 3]], 1))
        scores.append(cls)
    return np.concatenate(boxes), np.concatenate(scores)


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def reference(session, rgb, cfg):
    x, r, off_x, off_y = preprocess(rgb, cfg["preprocess"])
    outs = session.run(None, {session.get_inputs()[0].name: x})
    boxes, scores = (decode_yolox if cfg["decoder"] == "yolox" else decode_nanodet)(outs, cfg)
    cls = scores.argmax(1)
    best = scores.max(1)
    keep = best >= cfg["score_threshold"]
    cand = sorted(zip(best[keep], cls[keep], boxes[keep]), key=lambda t: -t[0])
    kept = []
    for sc, c, b in cand:  # class-wise NMS: suppress when IoU > threshold
        if all(kc != c or iou(kb, b) <= cfg["nms_threshold"] for _, kc, kb in kept):
            kept.append((sc, c, b))
        if len(kept) == cfg["max_detections"]:
            break
    h, w = rgb.shape[:2]
    res = []
    for sc, c, b in kept:  # model pixels -> image pixels, clipped
        x0, x1 = np.clip([(b[0] / r) + off_x, (b[2] / r) + off_x], 0, w)
        y0, y1 = np.clip([(b[1] / r) + off_y, (b[3] / r) + off_y], 0, h)
        if x1 > x0 and y1 > y0:
            res.append((float(sc), int(c), [x0, y0, x1, y1]))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ks-vision", default=os.path.join(ROOT, "build", "algos", "ks-vision"))
    ap.add_argument("--bundles", default=None)
    ap.add_argument("images", nargs="*")
    args = ap.parse_args()
    bundles = args.bundles or os.path.join(os.path.dirname(os.path.dirname(args.ks_vision)),
                                           "bundles")
    images = args.images or [os.path.join(DATA, "images", f) for f in (
        "ultralytics_zidane.jpg", "darknet_person.jpg", "darknet_dog.jpg", "ultralytics_bus.jpg",
        "coral_kite_and_cold.jpg", "coral_pets.jpg")]
    mp_solutions.require_files(args.ks_vision, *(
        p for bundle, onnx, _ in DETECTORS.values()
        for p in (os.path.join(bundles, bundle), os.path.join(DATA, "object_detection", onnx))))
    images = mp_solutions.existing_images(images)
    ort.set_default_logger_severity(3)
    ok = True
    worst = 1.0
    for name, (bundle, onnx, cfg_file) in DETECTORS.items():
        cfg = json.load(open(os.path.join(ROOT, "algos", "detect", cfg_file)))
        sess = ort.InferenceSession(os.path.join(DATA, "object_detection", onnx),
                                    providers=["CPUExecutionProvider"])
        for path in images:
            rgb = np.asarray(Image.open(path).convert("RGB"))
            ref = reference(sess, rgb, cfg)
            out = subprocess.run([args.ks_vision, "detect", path, "--json", "--model",
                                  os.path.join(bundles, bundle)], check=True,
                                 capture_output=True, text=True).stdout
            ours = [(o["score"], o["class_id"], [o["box"][0], o["box"][1],
                                                 o["box"][0] + o["box"][2],
                                                 o["box"][1] + o["box"][3]])
                    for o in json.loads(out)["objects"]]
            ious = [max([iou(b, ob) for _, oc, ob in ours if oc == c] or [0.0])
                    for _, c, b in ref]
            same = sorted(c for _, c, _ in ref) == sorted(c for _, c, _ in ours)
            low = min(ious) if ious else 1.0
            worst = min(worst, low)
            good = same and low >= TARGET_IOU
            ok &= good
            print(f"{name:8s} {os.path.basename(path):26s} ref {len(ref):2d} ours {len(ours):2d} "
                  f"min box IoU {low:.4f} mean {np.mean(ious) if ious else 1:.4f} "
                  f"same classes {same}  {'ok' if good else 'MISS'}")
    print(f"worst box IoU {worst:.4f} (target >= {TARGET_IOU}); {'all ok' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
