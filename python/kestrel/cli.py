"""The ``kestrel`` command: convert, quantize, inspect, ops, visualize, run, bench, vision,
effect, protect.

Human-readable output by default, one JSON document on stdout with ``--json``. Errors print one
line on stderr and exit 1 (2 for bad usage); Ctrl-C stops cleanly (exit 130) and leaves no
partial output file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, Iterable, List, Optional, Sequence

import numpy as np

from . import _tools
from ._core import Model, Session, version
from ._errors import KestrelError


def _emit(args: argparse.Namespace, doc: Dict[str, Any], human: Iterable[str]) -> None:
    if args.json:
        print(json.dumps(doc, indent=None, separators=(",", ":")))
    else:
        for line in human:
            print(line)


def _progress(total: int, desc: str, enabled: bool) -> Any:
    """A tqdm bar on stderr when tqdm is installed and stderr is a terminal; else nothing."""
    if enabled and sys.stderr.isatty():
        try:
            from tqdm import tqdm

            return tqdm(total=total, desc=desc, unit="run", leave=False)
        except ImportError:
            pass
    return None


# --- convert --------------------------------------------------------------------------------

def cmd_convert(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    _tools.convert(args.src, args.dst, optimize=not args.no_optimize, weights=args.weights,
                   entropy=args.entropy, coder=args.coder, block=args.block, pack=args.pack,
                   progress=False if args.json else None)
    dt = time.perf_counter() - t0
    size = os.path.getsize(args.dst)
    _emit(args, {"src": args.src, "dst": args.dst, "size_bytes": size, "seconds": round(dt, 3)},
          [f"{args.src} -> {args.dst}: {size / 1e6:.2f} MB in {dt:.2f} s"])
    return 0


# --- inspect --------------------------------------------------------------------------------

def _load_any(path: str, tmpdir: str) -> str:
    """A .ksm path for PATH: the file itself, or a conversion of a .tflite/.onnx into tmpdir."""
    if path.endswith((".tflite", ".onnx")):
        dst = os.path.join(tmpdir, os.path.splitext(os.path.basename(path))[0] + ".ksm")
        _tools.convert(path, dst)
        return dst
    return path


def _shape_str(shape: Sequence[int]) -> str:
    return "x".join("?" if d < 0 else str(d) for d in shape) or "scalar"


def cmd_inspect(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as tmpdir:
        ksm = _load_any(args.model, tmpdir)
        with Model.load(ksm) as m:
            meta = {k: m.metadata(k) for k in ("source", "producer") if m.metadata(k)}
            doc = {"model": args.model, "size_bytes": os.path.getsize(ksm), "metadata": meta,
                   "inputs": [t.to_dict() for t in m.inputs],
                   "outputs": [t.to_dict() for t in m.outputs]}
            ops = _tools.run_tool("ks-inspect", [ksm, "--ops-only"]).stdout.split()
            doc["ops"] = ops
            human = [f"model: {args.model} ({doc['size_bytes'] / 1e6:.2f} MB)"]
            human += [f"  {k}: {v}" for k, v in meta.items()]
            for kind in ("inputs", "outputs"):
                human.append(f"{kind}:")
                for t in getattr(m, kind):
                    q = f" (scale {t.scale:g}, zero point {t.zero_point})" if t.scale else ""
                    human.append(f"  {t.name}: {_shape_str(t.shape)} {t.dtype.name}{q}")
            human.append(f"ops ({len(ops)}): {' '.join(ops)}")
            if args.nodes:
                text = _tools.run_tool("ks-inspect", [ksm, "--nodes"]).stdout
                doc["ks_inspect"] = text
                human.append(text.rstrip())
    _emit(args, doc, human)
    return 0


# --- ops ------------------------------------------------------------------------------------

def cmd_ops(args: argparse.Namespace) -> int:
    """Without a model: the operators each importer (TFLite, ONNX) converts, with their
    constraints (``ks-convert --list-ops``; ``--format`` keeps one importer). With models: the
    Kestrel IR ops each needs (a .tflite/.onnx is converted first, so an unsupported op shows as
    the converter's error naming it)."""
    if not args.models:
        return _list_ops(args)
    result: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmpdir:
        for path in args.models:
            entry: Dict[str, Any] = {"model": path}
            try:
                ksm = _load_any(path, tmpdir)
                entry["ops"] = _tools.run_tool("ks-inspect", [ksm, "--ops-only"]).stdout.split()
                entry["supported"] = True
            except KestrelError as e:
                entry["supported"] = False
                entry["error"] = e.message
            result.append(entry)
    human = []
    for e in result:
        if e["supported"]:
            human.append(f"{e['model']}: {len(e['ops'])} ops: {' '.join(e['ops'])}")
        else:
            human.append(f"{e['model']}: NOT SUPPORTED: {e['error']}")
    _emit(args, {"models": result}, human)
    return 0 if all(e["supported"] for e in result) else 1


def _list_ops(args: argparse.Namespace) -> int:
    doc = _tools.list_ops()
    if args.format:
        doc["importers"] = [im for im in doc["importers"] if im["format"] == args.format]
    if args.json:
        _emit(args, doc, [])
    elif not args.format:
        # ks-convert's own text, unchanged (the same table, one source)
        sys.stdout.write(_tools.run_tool("ks-convert", ["--list-ops"]).stdout)
    else:
        for im in doc["importers"]:
            print(f"{im['format']} importer: {len(im['ops'])} ops ({im['notes']})")
            for op in im["ops"]:
                c = op["constraints"]
                print(f"  {op['name']:<28} {c}" if c else f"  {op['name']}")
    return 0


# --- visualize ------------------------------------------------------------------------------

def cmd_visualize(args: argparse.Namespace) -> int:
    from .visualize import visualize

    out = visualize(args.model, args.output, session=args.session, threads=args.threads,
                    backend=args.backend, optimize=not args.no_optimize)
    size = os.path.getsize(out)
    _emit(args, {"model": args.model, "output": out, "size_bytes": size,
                 "session": bool(args.session)},
          [f"{args.model} -> {out} ({size / 1e3:.1f} KB; open it in a browser, offline)"])
    return 0


# --- effect -------------------------------------------------------------------------------

def cmd_effect(args: argparse.Namespace) -> int:
    from . import effects

    if args.action == "render":
        return _effect_render(args)
    if args.action == "validate":
        effects.validate(args.path)
        _emit(args, {"path": args.path, "valid": True}, [f"{args.path}: ok"])
        return 0
    fx = effects.info(args.path)
    doc = fx.to_dict()
    human = [f"{fx.path}: {fx.name} ({fx.id}), format {doc['format_version']}"
             + (f", by {fx.author}" if fx.author else ""),
             f"  requires: {', '.join(fx.required_capabilities) or '(none)'}; "
             f"max faces {fx.max_faces}",
             f"layers ({len(fx.layers)}, render order):"]
    human += [f"  [{i}] {layer['name']:<16} {layer['kind']:<12} blend={layer['blend']} "
              f"opacity={layer['opacity']:.2f}" + ("" if layer["visible"] else " hidden")
              for i, layer in enumerate(fx.layers)]
    if fx.params:
        human.append(f"params ({len(fx.params)}): " +
                     ", ".join(f"{p['name']} ({p['type']})" for p in fx.params))
    if fx.states:
        human.append(f"states ({len(fx.states)}, initial {fx.initial_state or '-'}): " +
                     ", ".join(s["name"] for s in fx.states))
    if fx.triggers:
        human.append("triggers: " + ", ".join(f"{t['event']} -> {t['state']}"
                                             for t in fx.triggers))
    human.append(f"assets ({len(fx.assets)}):")
    human += [f"  {a['name']:<28} {a['kind']:<10} {a['size_bytes']:>9} B" +
              (f"  {a['width_px']}x{a['height_px']}" if a["width_px"] else "")
              for a in fx.assets]
    _emit(args, doc, human)
    return 0


def _effect_render(args: argparse.Namespace) -> int:
    from . import effects

    try:
        from PIL import Image
    except ImportError:
        raise KestrelError("kestrel effect render reads images with Pillow: pip install "
                           "pillow") from None
    if not args.image or not args.output:
        raise KestrelError("effect render: needs PKG IMAGE -o OUT.png")
    with Image.open(args.image) as im:
        image = np.asarray(im.convert("RGB"))
    t0 = time.perf_counter()
    frame = effects.render(args.path, image)
    ms = (time.perf_counter() - t0) * 1e3
    tmp = args.output + ".part.png"
    try:
        Image.fromarray(frame).save(tmp)
        os.replace(tmp, args.output)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    _emit(args, {"effect": args.path, "image": args.image, "output": args.output,
                 "width": int(frame.shape[1]), "height": int(frame.shape[0]), "ms": round(ms, 1)},
          [f"{args.path} over {args.image} -> {args.output} ({frame.shape[1]}x{frame.shape[0]}, "
           f"{ms:.0f} ms)"])
    return 0


# --- run / bench ----------------------------------------------------------------------------

def _feeds(model: Model, inputs: Sequence[str], seed: int) -> Dict[str, np.ndarray]:
    given: Dict[str, np.ndarray] = {}
    for i, spec in enumerate(inputs):
        name, sep, path = spec.partition("=")
        if not sep:
            name, path = model.inputs[i].name, spec
        given[name] = np.load(path)
    rng = np.random.default_rng(seed)
    feeds = {}
    for t in model.inputs:
        if t.name in given:
            feeds[t.name] = np.ascontiguousarray(given[t.name])
            continue
        if any(d < 0 for d in t.shape):
            raise KestrelError(f"input {t.name} has dynamic shape {_shape_str(t.shape)}: give "
                               f"it as --input {t.name}=FILE.npy")
        if t.dtype.kind == "f":
            feeds[t.name] = rng.uniform(-1, 1, t.shape).astype(t.dtype)
        elif t.dtype == np.bool_:
            feeds[t.name] = rng.integers(0, 2, t.shape).astype(np.bool_)
        else:
            info = np.iinfo(t.dtype)
            feeds[t.name] = rng.integers(max(info.min, -128), min(info.max, 255) + 1,
                                         t.shape).astype(t.dtype)
    return feeds


def _stats(a: np.ndarray) -> Dict[str, Any]:
    f = a.astype(np.float64) if a.size else np.zeros(1)
    return {"shape": list(a.shape), "dtype": a.dtype.name, "min": float(f.min()),
            "max": float(f.max()), "mean": float(f.mean())}


def cmd_run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as tmpdir:
        ksm = _load_any(args.model, tmpdir)
        with Model.load(ksm) as m, Session(m, threads=args.threads, precision=args.precision,
                                           backend=args.backend) as s:
            feeds = _feeds(m, args.input, args.seed)
            t0 = time.perf_counter()
            outs = s.run(feeds)
            ms = (time.perf_counter() - t0) * 1e3
    if args.output_dir:
        os.makedirs(args.output_dir, exist_ok=True)
        for name, a in outs.items():
            safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
            np.save(os.path.join(args.output_dir, safe + ".npy"), a)
    doc = {"model": args.model, "ms": round(ms, 3), "outputs": {n: _stats(a) for n, a in outs.items()}}
    human = [f"{args.model}: one run in {ms:.2f} ms"]
    for n, st in doc["outputs"].items():
        human.append(f"  {n}: {_shape_str(st['shape'])} {st['dtype']}  min {st['min']:.6g}  "
                     f"max {st['max']:.6g}  mean {st['mean']:.6g}")
    _emit(args, doc, human)
    return 0


def _time_runs(s: Session, feeds: Dict[str, np.ndarray], runs: int, bar: Any) -> List[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.run(feeds)
        times.append((time.perf_counter() - t0) * 1e3)
        if bar is not None:
            bar.update(1)
    return times


def cmd_bench(args: argparse.Namespace) -> int:
    """Times session.run. With --native, ks-bench runs the same model with the same warm-up
    and threads, interleaved with the Python runs in 10 rounds (each a ks-bench block, then a
    session.run block of as many runs, so both see the same machine state); the overhead is the
    median over rounds of the ratio of the two blocks' medians, and, less sensitive to other
    load on the machine, the ratio of the two minima."""
    rounds = 10 if args.native else 1
    per_round = max(1, args.runs // rounds)
    with tempfile.TemporaryDirectory() as tmpdir:
        ksm = _load_any(args.model, tmpdir)
        with Model.load(ksm) as m, Session(m, threads=args.threads, precision=args.precision,
                                           backend=args.backend) as s:
            feeds = _feeds(m, args.input, args.seed)
            for _ in range(args.warmup):
                s.run(feeds)
            bar = _progress(per_round * rounds, "bench", not args.json)
            times: List[float] = []
            py_medians: List[float] = []
            native_rounds: List[Dict[str, Any]] = []
            for _ in range(rounds):
                if args.native:
                    native_rounds.append(_native_bench(args, ksm, per_round))
                t = _time_runs(s, feeds, per_round, bar)
                py_medians.append(statistics.median(t))
                times += t
            if bar is not None:
                bar.close()
            backend = s.backend
    doc: Dict[str, Any] = {
        "model": args.model, "threads": args.threads, "backend": backend, "runs": len(times),
        "min_ms": min(times), "median_ms": statistics.median(times), "max_ms": max(times),
        "mean_ms": statistics.fmean(times)}
    human = [f"{args.model}: {len(times)} runs on {backend}, {args.threads} thread(s): "
             f"min {doc['min_ms']:.3f} ms, median {doc['median_ms']:.3f} ms, "
             f"max {doc['max_ms']:.3f} ms (session.run from Python)"]
    if args.native:
        ratios = [p / r["median_ms"] for p, r in zip(py_medians, native_rounds)]
        c_min = min(r["min_ms"] for r in native_rounds)
        doc["native"] = {"rounds": native_rounds, "min_ms": c_min,
                         "median_ms": statistics.median(r["median_ms"] for r in native_rounds)}
        doc["python_round_medians_ms"] = py_medians
        doc["overhead_pct"] = 100.0 * (statistics.median(ratios) - 1.0)
        doc["overhead_min_pct"] = 100.0 * (doc["min_ms"] / c_min - 1.0)
        human.append(f"interleaved in {rounds} rounds of {per_round} runs: session.run vs "
                     f"ks-bench, median of the round ratios {doc['overhead_pct']:+.1f} %, "
                     f"minimum {doc['min_ms']:.4f} vs {c_min:.4f} ms "
                     f"({doc['overhead_min_pct']:+.1f} %)")
    _emit(args, doc, human)
    return 0


def _native_bench(args: argparse.Namespace, ksm: str, runs: int) -> Dict[str, Any]:
    """ks-bench on the same model with the same warm-up and threads (its --json last line)."""
    cmd = [ksm, "--runs", str(runs), "--warmup", str(args.warmup), "--threads",
           str(args.threads), "--json"]
    out = _tools.run_tool("ks-bench", cmd).stdout.strip().splitlines()[-1]
    doc = json.loads(out)
    lat = doc.get("latency", doc)
    return {k: lat[k] for k in ("min_ms", "median_ms", "mean_ms", "max_ms") if k in lat}


# --- quantize / protect ----------------------------------------------------------------------

def cmd_quantize(args: argparse.Namespace) -> int:
    from .quantize import quantize

    opts: Dict[str, Any] = {"method": args.method, "max_images": args.max_images,
                            "eval_images": args.eval_images, "bench": args.bench_runs,
                            "speed_check": not args.no_speed_check}
    if args.skip:
        opts["skip"] = args.skip
    rep = quantize(args.src, args.dst, calibration=args.calibration,
                   progress=False if args.json else None,
                   **{k: v for k, v in opts.items() if v is not None})
    human = [rep.summary] + [f"  {n}: cosine {c:.5f}" for n, c in rep.outputs.items()]
    human += [f"  worst layer: {rep.layers[0].get('node')} ({rep.layers[0].get('op')}, "
              f"{rep.layers[0].get('precision')}, cosine {rep.layers[0].get('cosine')})"
              ] if rep.layers else []
    _emit(args, rep.to_dict(), human)
    return 0


def cmd_protect(args: argparse.Namespace) -> int:
    from . import protect

    if args.action == "keygen":
        protect.keygen(args.paths[0])
        doc: Dict[str, Any] = {"key_file": args.paths[0]}
        human = [f"wrote a new key to {args.paths[0]} (keep it out of the app's files)"]
    elif args.action == "info":
        text = protect.info(args.paths[0])
        doc, human = {"model": args.paths[0], "info": text}, [text.rstrip()]
    else:
        if len(args.paths) != 2 or not args.key_file:
            raise KestrelError(f"protect {args.action}: needs --key-file KEY IN OUT")
        fn = protect.encrypt if args.action == "encrypt" else protect.decrypt
        fn(args.paths[0], args.paths[1], args.key_file)
        doc = {"src": args.paths[0], "dst": args.paths[1]}
        human = [f"{args.action}ed {args.paths[0]} -> {args.paths[1]}"]
    _emit(args, doc, human)
    return 0


# --- vision ---------------------------------------------------------------------------------

_TASKS = {"face_detect": ("FaceDetector", "detect", "faces"),
          "face_landmarks": ("FaceLandmarker", "detect", "faces"),
          "pose": ("PoseLandmarker", "detect", "poses"),
          "hands": ("HandLandmarker", "detect", "hands"),
          "segment": ("Segmenter", "segment", None),
          "detect": ("ObjectDetector", "detect", "objects"),
          "classify": ("ImageClassifier", "classify", "classes")}


def cmd_vision(args: argparse.Namespace) -> int:
    from . import vision

    try:
        from PIL import Image
    except ImportError:
        raise KestrelError("kestrel vision reads images with Pillow: pip install pillow") from None
    image = np.asarray(Image.open(args.image).convert("RGB"))
    cls_name, method, key = _TASKS[args.task]
    options: Dict[str, Any] = {"threads": args.threads, "min_score": args.min_score,
                               "max_results": args.max_results, "model_path": args.model}
    if args.task == "face_landmarks" and not args.max_results:
        options["max_results"] = 16  # every face of a photo, as ks-vision
    with getattr(vision, cls_name)(**options) as task:
        res = getattr(task, method)(image)
    if key is None:
        doc = {"width": res.width, "height": res.height, "person_fraction": res.person_fraction}
        human = [f"mask {res.width}x{res.height}, person fraction {res.person_fraction:.3f}"]
    else:
        doc = {key: [r.to_dict() for r in res]}

        def fmt(v: Any) -> str:
            if isinstance(v, float):
                return f"{v:.3f}"
            if isinstance(v, list):
                return "[" + ", ".join(f"{x:.1f}" for x in v) + "]"
            return str(v)

        noun = "class" if key == "classes" else key[:-1]
        human = [f"{noun} {i}: " + ", ".join(f"{k} {fmt(v)}" for k, v in r.to_dict().items()
                                             if not isinstance(v, (list, dict)) or k == "box")
                 for i, r in enumerate(res)] or [f"no {key} found"]
    _emit(args, doc, human)
    return 0


# --- main -----------------------------------------------------------------------------------

def _session_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, default=1, help="session threads (default 1)")
    p.add_argument("--precision", default="default", choices=["default", "stored", "f32", "fastest", "fp16-storage", "fp16"])
    p.add_argument("--backend", default="cpu", choices=["cpu", "vulkan", "auto"])
    p.add_argument("--input", action="append", default=[], metavar="[NAME=]FILE.npy",
                   help="real data for an input (others: seeded random values)")
    p.add_argument("--seed", type=int, default=1)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="kestrel", description="Kestrel's tool chain from Python.")
    ap.add_argument("--version", action="version", version=f"kestrel {version()}")
    sub = ap.add_subparsers(dest="command", required=True)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--json", action="store_true", help="print one JSON document")
        return p

    p = add("convert", "convert a TFLite or ONNX model into a .ksm (ks-convert)")
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--no-optimize", action="store_true")
    p.add_argument("--weights", default="fp32", choices=["fp32", "fp16", "int8", "int4"])
    p.add_argument("--entropy", action="store_true")
    p.add_argument("--coder", choices=["best", "rans", "wcode"])
    p.add_argument("--block", type=int)
    p.add_argument("--pack", action="store_true")
    p.set_defaults(fn=cmd_convert)

    p = add("inspect", "a model's inputs, outputs, metadata and ops")
    p.add_argument("model", help=".ksm, or .tflite/.onnx (converted first)")
    p.add_argument("--nodes", action="store_true", help="also every node (ks-inspect --nodes)")
    p.set_defaults(fn=cmd_inspect)

    p = add("ops", "the operators each importer supports, with their constraints; with models: "
                   "the Kestrel ops each needs, or why it cannot be converted")
    p.add_argument("models", nargs="*")
    p.add_argument("--format", choices=["tflite", "onnx"], help="list one importer's ops only")
    p.set_defaults(fn=cmd_ops)

    p = add("visualize", "draw a model's graph as one self-contained HTML file")
    p.add_argument("model", help=".ksm, or .tflite/.onnx (converted first)")
    p.add_argument("-o", "--output", required=True, help="the HTML file to write")
    p.add_argument("--session", action="store_true",
                   help="run once with the profiler and show the kernel chosen per node")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--backend", default="cpu", choices=["cpu", "vulkan", "auto"])
    p.add_argument("--no-optimize", action="store_true", help="with a .tflite/.onnx input")
    p.set_defaults(fn=cmd_visualize)

    p = add("effect", "AR effect packages (.kfx): validate PKG, info PKG, "
                      "render PKG IMAGE -o OUT.png (headless EGL)")
    p.add_argument("action", choices=["validate", "info", "render"])
    p.add_argument("path")
    p.add_argument("image", nargs="?", help="render: the photo")
    p.add_argument("-o", "--output", help="render: the PNG to write")
    p.set_defaults(fn=cmd_effect)

    p = add("run", "run a model once and summarize (or save) its outputs")
    p.add_argument("model")
    _session_flags(p)
    p.add_argument("--output-dir", help="save each output as NAME.npy")
    p.set_defaults(fn=cmd_run)

    p = add("bench", "time session.run")
    p.add_argument("model")
    _session_flags(p)
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--native", action="store_true",
                   help="also time ks-bench (C) and report session.run's overhead")
    p.set_defaults(fn=cmd_bench)

    p = add("quantize", "post-training int8 quantization (ks-quant) with a report")
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--calibration", required=True, help="folder of calibration images")
    p.add_argument("--method", choices=["minmax", "percentile", "kl", "mse"])
    p.add_argument("--max-images", type=int)
    p.add_argument("--eval-images", type=int)
    p.add_argument("--bench-runs", type=int, help="time fp32 and int8, N runs")
    p.add_argument("--skip", action="append", help="layers kept in fp32")
    p.add_argument("--no-speed-check", action="store_true")
    p.set_defaults(fn=cmd_quantize)

    p = add("protect", "encrypted models (ks-protect): keygen KEY, encrypt/decrypt IN OUT, info IN")
    p.add_argument("action", choices=["keygen", "encrypt", "decrypt", "info"])
    p.add_argument("paths", nargs="+")
    p.add_argument("--key-file")
    p.set_defaults(fn=cmd_protect)

    p = add("vision", "run a vision task on an image file (needs Pillow)")
    p.add_argument("task", choices=sorted(_TASKS))
    p.add_argument("image")
    p.add_argument("--model", help="a bundle (.ksb) or a replacement .ksm")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--min-score", type=float, default=0.0)
    p.add_argument("--max-results", type=int, default=0)
    p.set_defaults(fn=cmd_vision)
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except KeyboardInterrupt:
        print("kestrel: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `kestrel ops | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KestrelError as e:
        print(f"kestrel {args.command}: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"kestrel {args.command}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
