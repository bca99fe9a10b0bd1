#!/usr/bin/env python3
"""Make golden inputs and reference outputs for one model.

Usage:
    make_reference.py MODEL --cache DIR [--force]

MODEL is a path, or a path relative to models/ or ../shared/data (e.g.
face_detection/face_detection_short_range.tflite). For each input set the script writes

    DIR/<model stem>/<set>/inputs/<sanitized input name>.npy
    DIR/<model stem>/<set>/ref/<sanitized output name>.npy

and DIR/<model stem>/meta.json describing the sets, tensors and the reference runtime. The sets
are one seeded random tensor per input ("random") and real photos preprocessed as the model's
pipeline does ("img_<photo>"; conventions table in golden_common.py). Nothing is recomputed when
meta.json matches the model's sha256 and this generator's version (use --force to redo).

References: LiteRT (ai-edge-litert) for .tflite, ONNX Runtime for .onnx, and MediaPipe's own
graph runtime for models with MediaPipe custom ops that LiteRT lacks (mp_reference.py).
"""

import argparse
import json
import os
import shutil
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_common as gc  # noqa: E402

# Bump when inputs or the reference procedure change, to invalidate caches.
GENERATOR_VERSION = 1


def _load_photo(path, width, height, order):
    from PIL import Image
    with Image.open(path) as im:
        rgb = im.convert("RGB").resize((width, height), Image.BILINEAR)
    a = np.asarray(rgb, dtype=np.uint8)
    return a[..., ::-1] if order == "BGR" else a


def _layout(info, model_path):
    """Return ('NHWC'|'NCHW', H, W) for an image-like input, else None."""
    s = info.shape
    if len(s) != 4:
        return None
    if model_path.endswith(".onnx") and s[1] in (1, 3):
        return "NCHW", s[2], s[3]
    if s[3] in (1, 3):
        return "NHWC", s[1], s[2]
    return None


def _value_range(conv, info):
    if info.dtype == np.uint8:
        return 0, 255
    if info.dtype == np.int8:
        return -128, 127
    if conv is None or conv["mean"] is None:
        return 0.0, 1.0
    lo = min((0.0 - m) / s for m, s in zip(conv["mean"], conv["std"]))
    hi = max((255.0 - m) / s for m, s in zip(conv["mean"], conv["std"]))
    return lo, hi


def _random_input(info, conv, seed):
    rng = np.random.default_rng(seed)
    lo, hi = _value_range(conv, info)
    if info.dtype.kind == "f":
        return rng.uniform(lo, hi, info.shape).astype(info.dtype)
    if info.dtype.kind in "iu":
        return rng.integers(lo, hi, info.shape, endpoint=True).astype(info.dtype)
    raise ValueError(f"input {info.name}: no random generator for dtype {info.dtype}")


def _photo_input(info, conv, model_path, photo_path):
    lay = _layout(info, model_path)
    if lay is None or conv is None:
        return None
    layout, h, w = lay
    px = _load_photo(photo_path, w, h, conv["order"])  # HWC uint8
    if info.dtype == np.uint8:
        x = px
    elif info.dtype.kind == "f" and conv["mean"] is not None:
        x = (px.astype(np.float32) - np.array(conv["mean"], np.float32)) / np.array(conv["std"], np.float32)
        x = x.astype(info.dtype)
    else:
        return None
    x = x[None]
    if layout == "NCHW":
        x = x.transpose(0, 3, 1, 2)
    return np.ascontiguousarray(x.reshape(info.shape))


def ensure_reference(model, cache_dir, force=False):
    """Make (or reuse) the cached sets of MODEL; returns the meta dict. Raises on failure."""
    model_path = model if os.path.isfile(model) else gc.find_file(model)
    if model_path is None:
        raise FileNotFoundError(model)
    model_path = os.path.abspath(model_path)
    s = gc.stem(model_path)
    out_dir = os.path.join(cache_dir, s)
    meta_path = os.path.join(out_dir, "meta.json")
    sha = gc.sha256_file(model_path)
    if not force and os.path.isfile(meta_path):
        try:
            with open(meta_path) as f:
                meta = json.load(f)
            if meta.get("model_sha256") == sha and meta.get("generator") == GENERATOR_VERSION:
                return meta
        except (OSError, ValueError):
            pass
    ins, outs = gc.model_io(model_path)
    conv = gc.convention(model_path)
    sets = []
    seed = zlib.crc32(s.encode())
    sets.append(("random", {i.name: _random_input(i, conv, seed + k) for k, i in enumerate(ins)}))
    for rel in gc.IMAGES:
        photo = gc.find_file(rel)
        if photo is None:
            continue
        feeds = {}
        for k, i in enumerate(ins):
            x = _photo_input(i, conv, model_path, photo)
            feeds[i.name] = x if x is not None else _random_input(i, conv, seed + 100 + k)
        sets.append(("img_" + gc.stem(rel).split("_", 1)[-1], feeds))

    tmp_dir = out_dir + ".tmp"
    shutil.rmtree(tmp_dir, ignore_errors=True)
    meta = dict(model=model_path, model_sha256=sha, generator=GENERATOR_VERSION,
                inputs=[i.to_json() for i in ins], outputs=[o.to_json() for o in outs],
                convention=conv, sets=[])
    for set_name, feeds in sets:
        refs, runtime = gc.run_reference(model_path, feeds)
        meta["runtime"] = runtime
        entry = dict(name=set_name, inputs={}, ref={})
        for d, kind, tensors in (("inputs", "inputs", feeds), ("ref", "ref", refs)):
            os.makedirs(os.path.join(tmp_dir, set_name, d), exist_ok=True)
            for name, arr in tensors.items():
                rel = os.path.join(set_name, d, gc.sanitize(name) + ".npy")
                np.save(os.path.join(tmp_dir, rel), arr)
                entry[kind][name] = rel
        meta["sets"].append(entry)
    with open(os.path.join(tmp_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.replace(tmp_dir, out_dir)
    return meta


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--cache", required=True)
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args(argv)
    try:
        meta = ensure_reference(args.model, args.cache, args.force)
    except FileNotFoundError as e:
        gc.skip(f"model {e} not found under {' or '.join(gc.SEARCH_ROOTS)}")
    for st in meta["sets"]:
        desc = []
        for name, rel in st["ref"].items():
            a = np.load(os.path.join(args.cache, gc.stem(meta["model"]), rel))
            desc.append(f"{name} {list(a.shape)} {a.dtype} [{a.min():.4g}, {a.max():.4g}]")
        print(f"{gc.stem(meta['model'])} {st['name']}: " + "; ".join(desc))
    print(f"reference runtime: {meta['runtime']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
