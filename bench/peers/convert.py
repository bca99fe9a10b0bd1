#!/usr/bin/env python3
"""Converts every benchmark model for the engines that need a conversion.

  Kestrel      ks-convert  -> work/models/KEY/model.ksm
  MNN          mnnconvert  -> work/models/KEY/model.mnn   (from ONNX or TFLite)
  ncnn         the model's upstream .param/.bin when the data set has one, else pnnx from ONNX
                           -> work/models/KEY/model.ncnn.{param,bin}; ncnn reads no TFLite
  ONNX Runtime and LiteRT run the source files as they are.

Writes work/convert.json: per model and engine, the file to run or the reason it cannot run.
Each conversion runs in a child process, so a converter that crashes only loses its cell.

MNN's `mnnconvert` console script is not used: after converting it tries to `pip install` a
logging SDK and upload usage statistics. The converter itself (`_tools.mnnconvert`) is called
directly instead.
"""

import argparse
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import common

TIMEOUT_S = 600


def run(cmd, cwd=None):
    """Runs cmd; returns (ok, last lines of its output)."""
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, errors="replace", timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {TIMEOUT_S} s"
    lines = [line.strip() for line in p.stdout.strip().splitlines() if line.strip()]
    tail = " | ".join(lines[-3:])
    if p.returncode < 0:
        last = lines[-1] if lines else ""
        return False, f"converter crashed (signal {-p.returncode}) after '{last}'"
    if p.returncode:
        return False, f"converter exited {p.returncode}: {tail}"
    return True, tail


def convert_kestrel(model, src, out_dir):
    tool = common.build_dir() / "engine" / "tools" / "ks-convert"
    if not tool.exists():
        return None, f"{tool} not built"
    out = out_dir / "model.ksm"
    ok, msg = run([str(tool), str(src), str(out), "--quiet"])
    return (out, "") if ok and out.exists() else (None, f"ks-convert: {msg}")


def convert_mnn(model, src, out_dir):
    out = out_dir / "model.mnn"
    out.unlink(missing_ok=True)
    # _tools.mnnconvert's return value is not a status (it is 1 on success); a missing output
    # file or a crash is what tells failure.
    code = ("import sys, _tools; _tools.mnnconvert(['mnnconvert', '-f', sys.argv[1], "
            "'--modelFile', sys.argv[2], '--MNNModel', sys.argv[3], '--bizCode', 'kestrel'])")
    ok, msg = run([sys.executable, "-c", code, model.fmt.upper(), str(src), str(out)])
    return (out, "") if ok and out.exists() else (None, f"mnnconvert: {msg}")


def onnx_input_shape(src):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3  # no warnings about initializers listed as graph inputs
    sess = ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"])
    inputs = sess.get_inputs()
    if len(inputs) != 1:
        raise ValueError(f"{len(inputs)} inputs")
    shape = inputs[0].shape
    if not all(isinstance(d, int) for d in shape):
        raise ValueError(f"dynamic input shape {shape}")
    return shape


def convert_ncnn(model, src, out_dir):
    if model.ncnn:
        param, binf = common.ncnn_param_bin(model)
        if param.exists() and binf.exists():
            return param, "upstream .param/.bin"
    if model.fmt != "onnx":
        return None, "ncnn has no TFLite importer (pnnx reads TorchScript and ONNX only)"
    # The pnnx package's __init__ imports torch (for its export helpers); only its bundled
    # standalone binary is needed, so find that without importing the package.
    spec = importlib.util.find_spec("pnnx")
    if spec is None or not spec.submodule_search_locations:
        return None, "pnnx is not installed"
    exe = pathlib.Path(list(spec.submodule_search_locations)[0]) / "pnnx"
    work = out_dir / "pnnx"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copy(src, work / "model.onnx")
    try:
        shape = onnx_input_shape(src)
    except Exception as e:  # noqa: BLE001 - any failure only skips this cell
        return None, f"pnnx: cannot read the ONNX input shape: {e}"
    # fp16=0: pnnx stores weights in fp16 by default, which costs YOLOX-nano 9 % relative error
    # against ONNX Runtime (measured); ncnn casts to fp16 at load where its options ask for it.
    ok, msg = run([str(exe), "model.onnx", "inputshape=[" + ",".join(map(str, shape)) + "]",
                   "fp16=0"], cwd=work)
    param, binf = work / "model.ncnn.param", work / "model.ncnn.bin"
    if not (ok and param.exists() and binf.exists()):
        return None, f"pnnx: {msg}"
    note = "pnnx from ONNX"
    ok, msg = run([sys.executable, str(common.HERE / "ncnn_focus.py"), str(param), str(binf),
                   str(src)])
    if not ok:
        return None, f"ncnn_focus.py: {msg}"
    if "rewrote" in msg:
        note += " (" + msg.split(" | ")[-1] + ")"
    # pnnx can leave operators that ncnn has no layer for (e.g. Tensor.slice); ncnn only says so
    # when loading, so load the result once here.
    code = ("import sys, ncnn; n = ncnn.Net(); n.opt.use_vulkan_compute = False; "
            "sys.exit(1 if n.load_param(sys.argv[1]) or n.load_model(sys.argv[2]) else 0)")
    ok, msg = run([sys.executable, "-c", code, str(param), str(binf)])
    if not ok:
        detail = msg.split(": ", 1)[-1].split(" | ")[0]
        return None, f"ncnn cannot load the pnnx output ({detail})"
    shutil.move(str(param), out_dir / "model.ncnn.param")
    shutil.move(str(binf), out_dir / "model.ncnn.bin")
    shutil.rmtree(work, ignore_errors=True)
    return out_dir / "model.ncnn.param", note


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", help="comma-separated model keys (default: all)")
    ap.add_argument("--force", action="store_true", help="convert again even if up to date")
    ap.add_argument("--engines", help="comma-separated converters to run (kestrel,mnn,ncnn; "
                                      "default: all)")
    args = ap.parse_args()
    keys = args.models.split(",") if args.models else [m.key for m in common.MODELS]
    result_path = common.WORK / "convert.json"
    results = json.loads(result_path.read_text()) if result_path.exists() else {}

    for model in common.MODELS:
        if model.key not in keys:
            continue
        src = model.source_path()
        cells = results.setdefault(model.key, {})
        if src is None:
            for e in common.ENGINES:
                cells[e] = {"path": None, "note": f"source {model.src} not found"}
            print(f"{model.key}: source {model.src} not found in {common.DATA_DIRS}")
            continue
        out_dir = common.model_dir(model)
        out_dir.mkdir(parents=True, exist_ok=True)
        cells["source"] = str(src)
        native = {"onnxruntime": "onnx", "litert": "tflite"}
        for engine, fmt in native.items():
            cells[engine] = ({"path": str(src), "note": ""} if model.fmt == fmt else
                             {"path": None, "note": f"{common.ENGINE_TITLES[engine]} does not "
                                                    f"read {'ONNX' if model.fmt == 'onnx' else 'TFLite'}"})
        converters = {"kestrel": convert_kestrel, "mnn": convert_mnn, "ncnn": convert_ncnn}
        for engine, fn in converters.items():
            if args.engines and engine not in args.engines.split(","):
                continue
            old = cells.get(engine)
            if (not args.force and engine != "kestrel" and old and old.get("path") and
                    os.path.exists(old["path"]) and
                    os.path.getmtime(old["path"]) >= os.path.getmtime(src)):
                print(f"{model.key:18s} {engine:8s} up to date")
                continue
            t0 = time.time()
            path, note = fn(model, src, out_dir)
            cells[engine] = {"path": str(path) if path else None, "note": note,
                             "seconds": round(time.time() - t0, 2)}
            state = "ok  " if path else "SKIP"
            print(f"{model.key:18s} {engine:8s} {state} {note}", flush=True)
        result_path.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
