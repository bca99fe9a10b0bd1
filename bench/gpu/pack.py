#!/usr/bin/env python3
"""Packs what bench/gpu/run.py needs into one folder that can travel to a GPU machine.

The GPU machine has no network and no model data: this runs on the development machine after
bench/peers/convert.py (ks-convert and pnnx) and copies, per model of the GPU set, the .ksm,
the ncnn .param/.bin (when ncnn can run the model) into OUT/KEY/, and OUT/manifest.json with
the source model's input shapes and dtypes (run.py makes the same seeded inputs from them as
bench/peers/run.py does from the source model). Packing into an existing OUT adds models. It also
copies libkestrel.so and its Vulkan module libkestrel_vulkan.so (and the ncnn wheel when --wheel
is given).

usage: pack.py OUT [--models KEYS] [--wheel NCNN.whl] [--seed S] [--weights fp16|int8]

--weights re-stores the .ksm weights (ks-convert --weights) to fit a transfer limit: Kestrel
decodes them to fp32 at load, so the graph and its run time are those of the fp32 model (the
outputs differ by the rounding of the weights, which does not matter for timing).
"""

import argparse
import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np  # noqa: F401 (dtype names)

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "peers"))

import common  # noqa: E402
import run as peers_run  # noqa: E402

# The models of docs/benchmarks-gpu.md: the ONNX detectors (ncnn reads them through pnnx) and
# the MediaPipe models (TFLite: Kestrel only, against its own CPU path).
GPU_MODELS = ["ultraface_rfb320", "yunet_s_640", "yolox_nano", "nanodet_m", "blazeface_short",
              "facemesh", "blazepose_lite", "blazepose_full", "blazepose_heavy", "selfie_seg"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--models", default=",".join(GPU_MODELS))
    ap.add_argument("--wheel", help="the ncnn wheel to carry (for the GPU machine's Python)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--weights", choices=["fp16", "int8"], help="re-store the .ksm weights")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    conv = json.loads((common.WORK / "convert.json").read_text())
    mpath = out / "manifest.json"
    manifest = json.loads(mpath.read_text()) if mpath.exists() else {"seed": args.seed,
                                                                      "models": {}}
    if manifest["seed"] != args.seed:
        raise SystemExit(f"{mpath} was packed with seed {manifest['seed']}, not {args.seed}")
    for model in common.MODELS:
        if model.key not in args.models.split(","):
            continue
        cells = conv.get(model.key, {})
        ksm = (cells.get("kestrel") or {}).get("path")
        src = cells.get("source")
        if not ksm or not src:
            print(f"{model.key}: not converted (run bench/peers/convert.py)", file=sys.stderr)
            continue
        d = out / model.key
        d.mkdir(exist_ok=True)
        if args.weights:
            tool = common.build_dir() / "engine" / "tools" / "ks-convert"
            subprocess.run([str(tool), ksm, str(d / "model.ksm"), "--weights", args.weights,
                            "--quiet"], check=True)
        else:
            shutil.copy(ksm, d / "model.ksm")
        entry = {"title": model.title, "fmt": model.fmt, "ncnn": None,
                 "weights": args.weights or "as converted",
                 "ncnn_note": (cells.get("ncnn") or {}).get("note", "not converted")}
        nc = (cells.get("ncnn") or {}).get("path")
        if nc:
            param = pathlib.Path(nc)
            shutil.copy(param, d / "model.ncnn.param")
            shutil.copy(param.with_suffix(".bin"), d / "model.ncnn.bin")
            entry["ncnn"] = "model.ncnn.param"
        entry["inputs"] = [[list(map(int, shape)), np.dtype(dtype).name]
                           for shape, dtype in peers_run.source_inputs(model, src)]
        manifest["models"][model.key] = entry
        print(f"{model.key:18s} ksm {'+ ncnn' if nc else '(no ncnn: ' + entry['ncnn_note'] + ')'}")
    lib = common.build_dir() / "engine" / "libkestrel.so"
    shutil.copy(lib, out / "libkestrel.so")
    # the Vulkan backend: a module the library opens from its own folder (docs/vulkan.md)
    module = lib.parent / "libkestrel_vulkan.so"
    if module.exists():
        shutil.copy(module, out / "libkestrel_vulkan.so")
    if args.wheel:
        shutil.copy(args.wheel, out / pathlib.Path(args.wheel).name)
    mpath.write_text(json.dumps(manifest, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
