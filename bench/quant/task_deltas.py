"""Task deltas of ks-quant int8 models against fp32 (docs/compression.md, ks-quant section).

    python task_deltas.py BUILD_DIR WORK_DIR [--models blazeface,selfie,...] [--variants full,max]

WORK_DIR is what bench/quant/measure.sh filled: <name>.ksm (fp32), <name>_int8_{fast,max,full}.ksm,
test/ (held-out photos). Task models run through ks-vision with bundles made by ks-task-bundle
from the same graph JSON, once with the fp32 model and once with the int8 one (other models of a
bundle stay fp32, so each row measures one model). UltraFace has no task; its raw outputs from
ks-run are decoded here (score > 0.7, NMS 0.3).
Prints one markdown table row per model and variant (models: blazeface, selfie, facemesh,
blazepose_full, yolox_nano, ultraface; default all; a model whose int8 file is missing is skipped),
with the output cosines ks-quant wrote into the variant's report (<name>_<variant>.md).
Variants w16 / w8 (measure.sh NOISE=...) are not ks-quant models but the fp32 model with fp16 /
int8 weight-only weights: the noise floor of the task metric. After the table, every miss of a
target (box IoU < 0.9, class change, missed or extra box, landmark deviation > 1 %, mask IoU <
0.95) is listed with its photo, box size and scores.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
from PIL import Image

ALL_MODELS = ["blazeface", "selfie", "facemesh", "blazepose_full", "yolox_nano", "ultraface"]
_ap = argparse.ArgumentParser()
_ap.add_argument("build")
_ap.add_argument("work")
_ap.add_argument("--models", default=",".join(ALL_MODELS))
_ap.add_argument("--variants", default="full,max,fast")
ARGS = _ap.parse_args()
BUILD, WORK = ARGS.build, ARGS.work
SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DATA = os.path.join(SRC, "..", "shared", "data")
TOOLS = os.path.join(BUILD, "engine", "tools")
VISION = os.path.join(BUILD, "algos", "ks-vision")
BUNDLER = os.path.join(BUILD, "algos", "ks-task-bundle")
TEST = sorted(os.path.join(WORK, "test", f) for f in os.listdir(os.path.join(WORK, "test")))


def run(args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def convert(src, name):
    out = os.path.join(WORK, name + ".ksm")
    if not os.path.exists(out):
        run([os.path.join(TOOLS, "ks-convert"), src, out, "--quiet"])
    return out


def bundle(name, graph, models, extra=()):
    out = os.path.join(WORK, name + ".ksb")
    args = [BUNDLER, "create", out, "--graph", graph]
    for k, v in models.items():
        args += ["--model", "%s=%s" % (k, v)]
    run(args + list(extra))
    return out


def vision(task, image, ksb, *extra):
    return json.loads(run([VISION, task, image, "--json", "--model", ksb] + list(extra)))


def iou(a, b):
    ax2, ay2, bx2, by2 = a[0] + a[2], a[1] + a[3], b[0] + b[2], b[1] + b[3]
    iw = max(0.0, min(ax2, bx2) - max(a[0], b[0]))
    ih = max(0.0, min(ay2, by2) - max(a[1], b[1]))
    inter = iw * ih
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


DETAILS = []  # (model, variant, text) of every target miss


def describe(o):
    b = o["box"]
    text = "box [%.0f, %.0f, %.0f x %.0f px]" % (b[0], b[1], b[2], b[3])
    if "label" in o or "class_id" in o:
        text += " %s" % o.get("label", o.get("class_id"))
    if "score" in o:
        text += " score %.3f" % o["score"]
    return text


def match_boxes(ref, got, same_class, where=None):
    """Greedy matching by IoU; returns (matched IoUs, unmatched ref, unmatched got, class errors).
    where = (model, variant, photo): misses of the targets go to DETAILS."""
    used, ious, class_err = set(), [], 0
    for r in ref:
        best, bi = 0.0, -1
        for j, g in enumerate(got):
            if j in used:
                continue
            v = iou(r["box"], g["box"])
            if v > best:
                best, bi = v, j
        if bi >= 0 and best > 0.3:
            used.add(bi)
            ious.append(best)
            changed = same_class and r.get("class_id") != got[bi].get("class_id")
            if changed:
                class_err += 1
            if where and (best < 0.9 or changed):
                DETAILS.append(where[:2] + ("%s: IoU %.3f, fp32 %s -> %s" % (
                    where[2], best, describe(r), describe(got[bi])),))
        elif where:
            DETAILS.append(where[:2] + ("%s: missed fp32 %s" % (where[2], describe(r)),))
    for j, g in enumerate(got):
        if where and j not in used:
            DETAILS.append(where[:2] + ("%s: extra %s" % (where[2], describe(g)),))
    return ious, len(ref) - len(ious), len(got) - len(used), class_err


MARGIN = 0.1  # score margin above the detector's threshold for the "confident" figures


class Confident:
    """The same comparison restricted to boxes scoring at least threshold + MARGIN (fp32 boxes
    for misses and IoU, int8 boxes for extras): what is left once the boxes a score tie at the
    threshold can flip are set aside (the noise floor shows them flipping without int8)."""

    def __init__(self, threshold):
        self.cut, self.ious = threshold + MARGIN, []
        self.miss, self.extra, self.cls, self.n = 0, 0, 0, 0

    def add(self, r, g, same_class):
        rc = [o for o in r if o.get("score", 1.0) >= self.cut]
        a, b, _, d = match_boxes(rc, g, same_class)
        self.ious += a
        self.miss, self.cls, self.n = self.miss + b, self.cls + d, self.n + len(rc)
        self.extra += sum(1 for o in g if o.get("score", 1.0) >= self.cut and
                          all(iou(o["box"], x["box"]) <= 0.3 for x in r))

    def text(self):
        return (" | confident (score >= %.2f): %d, min IoU %s, missed %d, extra %d, "
                "class changes %d" % (self.cut, self.n,
                                      "%.3f" % min(self.ious) if self.ious else "-", self.miss,
                                      self.extra, self.cls))


def det_row(task, key, ksb32, ksb8, same_class, where, threshold, extra=()):
    ious, miss, extra_n, cls, n = [], 0, 0, 0, 0
    conf = Confident(threshold)
    for img in TEST:
        r = vision(task, img, ksb32, *extra)[key]
        g = vision(task, img, ksb8, *extra)[key]
        a, b, c, d = match_boxes(r, g, same_class, where + (os.path.basename(img),))
        conf.add(r, g, same_class)
        ious += a
        miss, extra_n, cls, n = miss + b, extra_n + c, cls + d, n + len(r)
    return "%d objects; min IoU %.3f, mean %.3f; missed %d, extra %d, class changes %d%s" % (
        n, min(ious) if ious else float("nan"), float(np.mean(ious)) if ious else float("nan"),
        miss, extra_n, cls, conf.text())


def lm_row(task, key, ksb32, ksb8, where):
    """Mean landmark deviation per face/pose in % of max(box w, h). Pose landmarks carry a
    visibility: the deviation of the landmarks fp32 sees as visible (>= 0.5) is given too
    (occluded ones are the model's guesses and move most; see the noise floor)."""
    devs, vis_devs, n = [], [], 0
    for img in TEST:
        r = vision(task, img, ksb32)[key]
        g = vision(task, img, ksb8)[key]
        for a in r:
            best = max(g, key=lambda b: iou(a["box"], b["box"]), default=None)
            if best is None or iou(a["box"], best["box"]) < 0.5:
                continue
            la, lb = np.array(a["landmarks"])[:, :2], np.array(best["landmarks"])[:, :2]
            size = max(a["box"][2], a["box"][3])
            d = np.linalg.norm(la - lb, axis=1) / size
            devs.append(np.mean(d))
            n += 1
            full = np.array(a["landmarks"])
            if full.shape[1] >= 4 and np.any(full[:, 3] >= 0.5):
                vis_devs.append(np.mean(d[full[:, 3] >= 0.5]))
            if devs[-1] > 0.01:
                DETAILS.append(where + ("%s: %.2f %% of box, fp32 %s" % (
                    os.path.basename(img), 100 * devs[-1], describe(a)),))
    text = "%d %s; mean deviation %.2f %% of box (worst %.2f %%)" % (
        n, key, 100 * float(np.mean(devs)), 100 * float(np.max(devs)))
    if vis_devs:
        text += "; visible landmarks: %.2f %% (worst %.2f %%)" % (
            100 * float(np.mean(vis_devs)), 100 * float(np.max(vis_devs)))
    return text


def seg_row(ksb32, ksb8, where):
    ious = []
    for img in TEST:
        m = []
        for ksb in (ksb32, ksb8):
            out = os.path.join(WORK, "mask.png")
            run([VISION, "segment", img, "--json", "--model", ksb, "--mask-out", out])
            g = np.asarray(Image.open(out).convert("L"))
            m.append(g > 127)
            if ksb == ksb32:  # fragility: fp32 pixels within 0.05 of the 0.5 threshold
                near = float(np.mean(np.abs(g.astype(np.float32) - 127.5) < 12.75))
        inter, union = np.logical_and(*m).sum(), np.logical_or(*m).sum()
        ious.append(inter / union if union else 1.0)
        if ious[-1] < 0.95:
            DETAILS.append(where + ("%s: mask IoU %.4f, person %.1f %% of the photo in fp32, "
                                    "%d px differ, %.1f %% of the pixels within 0.05 of the "
                                    "threshold in fp32" % (os.path.basename(img), ious[-1],
                                                           100 * m[0].mean(), union - inter,
                                                           100 * near),))
    return "%d photos; mask IoU min %.4f, mean %.4f" % (len(ious), min(ious), float(np.mean(ious)))


def ultraface_boxes(ksm, img):
    im = Image.open(img).convert("RGB").resize((320, 240), Image.BILINEAR)
    x = (np.asarray(im, np.float32) - 127.0) / 128.0
    np.save(os.path.join(WORK, "uf_in.npy"), x.transpose(2, 0, 1)[None].copy())
    od = os.path.join(WORK, "uf_out")
    run([os.path.join(TOOLS, "ks-run"), ksm, "--input", os.path.join(WORK, "uf_in.npy"),
         "--output-dir", od])
    scores = np.load(os.path.join(od, "scores.npy"))[0, :, 1]
    boxes = np.load(os.path.join(od, "boxes.npy"))[0]
    keep = []
    w, h = Image.open(img).size
    px = np.stack([boxes[:, 0] * w, boxes[:, 1] * h, (boxes[:, 2] - boxes[:, 0]) * w,
                   (boxes[:, 3] - boxes[:, 1]) * h], axis=1)
    for i in np.argsort(-scores):
        if scores[i] < 0.7:
            break
        bb = list(px[i])
        if all(iou(bb, k["box"]) < 0.3 for k in keep):
            keep.append({"box": bb, "score": float(scores[i]), "anchor": int(i)})
    return keep, px


def ultraface_row(ksm32, ksm8, where):
    ious, miss, extra_n, n, same = [], 0, 0, 0, []
    conf = Confident(0.7)
    for img in TEST:
        (r, _), (g, px8) = ultraface_boxes(ksm32, img), ultraface_boxes(ksm8, img)
        # The int8 box of the anchor fp32 kept: how far the regression itself moved, apart
        # from NMS picking a neighbouring anchor (their scores are often within 0.01).
        same += [iou(o["box"], list(px8[o["anchor"]])) for o in r]
        a, b, c, _ = match_boxes(r, g, False, where + (os.path.basename(img),))
        conf.add(r, g, False)
        ious += a
        miss, extra_n, n = miss + b, extra_n + c, n + len(r)
    return "%d faces; min IoU %.3f, mean %.3f; missed %d, extra %d%s | same anchor: min IoU %s" % (
        n, min(ious) if ious else float("nan"), float(np.mean(ious)) if ious else float("nan"),
        miss, extra_n, conf.text(), "%.3f" % min(same) if same else "-")


def report_cosines(name, variant):
    """Output cosines and int8 layer count from ks-quant's markdown report, or ''."""
    path = os.path.join(WORK, "%s_%s.md" % (name, variant))
    if not os.path.exists(path):
        return ""
    cos, layers = [], ""
    with open(path) as f:
        for line in f:
            if line.startswith("- layers in int8:"):
                layers = line.split(":", 1)[1].strip().replace(" of ", "/")
            elif line.startswith("- `") and "`: " in line:
                cos.append(line.rsplit(": ", 1)[1].strip())
            elif line.startswith("| #"):
                break
    return "%s (%s int8)" % (" / ".join(cos), layers)


def main():
    models = os.path.join(SRC, "models")
    wanted = ARGS.models.split(",")
    det_short = os.path.join(WORK, "blazeface.ksm")
    if not os.path.exists(det_short):
        det_short = convert(os.path.join(models, "face_detection",
                                         "face_detection_short_range.tflite"), "blazeface")
    det_full = convert(os.path.join(models, "face_detection",
                                    "face_detection_full_range_sparse.tflite"), "face_det_full")
    pose_det = convert(os.path.join(models, "pose", "pose_detection.tflite"), "pose_det")
    geom = os.path.join(models, "face_landmarks", "geometry_pipeline_metadata_landmarks.binarypb")
    coco = os.path.join(DATA, "object_detection", "coco.names")
    if not os.path.exists(coco):
        coco = os.path.join(SRC, "algos", "detect", "coco80.names")
    for variant in ARGS.variants.split(","):
        def q(name):
            return os.path.join(WORK, "%s_int8_%s.ksm" % (name, variant))

        def want(name):
            return name in wanted and os.path.exists(q(name))

        rows = []
        if want("blazeface"):
            g = os.path.join(SRC, "algos", "face", "face_detector_short.json")
            b32 = bundle("fd32", g, {"face_detector": det_short})
            b8 = bundle("fd8", g, {"face_detector": q("blazeface")})
            rows.append(("BlazeFace (short)", "blazeface",
                         det_row("face_detect", "faces", b32, b8, False,
                                 ("blazeface", variant), 0.5)))
        if want("selfie"):
            g = os.path.join(SRC, "algos", "segment", "selfie_segmenter_general.json")
            b32 = bundle("seg32", g, {"selfie_segmentation": os.path.join(WORK, "selfie.ksm")})
            b8 = bundle("seg8", g, {"selfie_segmentation": q("selfie")})
            rows.append(("Selfie segmentation", "selfie", seg_row(b32, b8, ("selfie", variant))))
        if want("facemesh"):
            g = os.path.join(SRC, "algos", "face", "face_landmarker.json")
            common = {"face_detector_short": det_short, "face_detector_full": det_full}
            b32 = bundle("fl32", g, dict(common, face_landmarks=os.path.join(WORK, "facemesh.ksm")),
                         ["--file", "%s=%s" % (os.path.basename(geom), geom)])
            b8 = bundle("fl8", g, dict(common, face_landmarks=q("facemesh")),
                        ["--file", "%s=%s" % (os.path.basename(geom), geom)])
            rows.append(("FaceMesh", "facemesh", lm_row("face_landmarks", "faces", b32, b8,
                                                         ("facemesh", variant))))
        if want("blazepose_full"):
            g = os.path.join(SRC, "algos", "pose", "pose_landmarker.json")
            b32 = bundle("pl32", g, {"pose_detection": pose_det,
                                     "pose_landmark": os.path.join(WORK, "blazepose_full.ksm")})
            b8 = bundle("pl8", g, {"pose_detection": pose_det,
                                   "pose_landmark": q("blazepose_full")})
            rows.append(("BlazePose full", "blazepose_full", lm_row("pose", "poses", b32, b8,
                                                                    ("blazepose_full", variant))))
        if want("yolox_nano"):
            g = os.path.join(SRC, "algos", "detect", "object_detector_yolox.json")
            extra = ["--labels", "labels=" + coco, "--config",
                     "detector_config=" + os.path.join(SRC, "algos", "detect", "yolox_nano.json")]
            b32 = bundle("od32", g, {"detector": os.path.join(WORK, "yolox_nano.ksm")}, extra)
            b8 = bundle("od8", g, {"detector": q("yolox_nano")}, extra)
            rows.append(("YOLOX-nano", "yolox_nano", det_row("detect", "objects", b32, b8, True,
                                                                  ("yolox_nano", variant), 0.3)))
        if want("ultraface"):
            rows.append(("UltraFace RFB-320", "ultraface",
                         ultraface_row(os.path.join(WORK, "ultraface.ksm"), q("ultraface"),
                                       ("ultraface", variant))))
        for title, name, text in rows:
            print("| %s | %s | %s | %s |" % (title, variant, report_cosines(name, variant), text))
            sys.stdout.flush()
    if DETAILS:
        print("\nTarget misses (photo: what):")
        for model, variant, text in DETAILS:
            print("- %s %s, %s" % (model, variant, text))


main()
