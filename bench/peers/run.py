#!/usr/bin/env python3
"""Times Kestrel against peer engines on the benchmark models and writes docs/benchmarks.md.

For every model and thread count, each engine that can run the model gets the same seeded input
(transposed to the engine's layout where needed). After a warm-up, the engines are timed in
interleaved rounds, so that drift of a shared, noisy machine (frequency, other tenants) hits all
engines alike. Two modes:

- burst (default): in each round every engine, in a shuffled order, first waits --settle-ms
  (longer than any engine keeps its worker threads spinning after a call: ONNX Runtime's spin
  for about 40 ms after each run, so with shorter pauses they steal a core from whichever
  engine runs next), then runs once untimed and --burst times back to back, timed one by one.
  This is the steady-state latency that benchmark tools (benchmark_model, onnxruntime_perf_test,
  MNN's benchmark) report.
- frame: every timed call is preceded by a --gap-ms pause and nothing else, as in an app that
  runs one inference per camera frame; worker threads that went to sleep pay their wake-up, and
  an engine whose threads still spin from its previous call keeps them busy (see above).

All engines are timed in this process around the call that runs the graph (Kestrel through a
ctypes binding of libkestrel.so). Medians are quoted.

Run convert.py first (run.sh does setup, build, convert and run).
"""

import argparse
import datetime
import gc
import importlib.metadata as md
import json
import math
import os
import pathlib
import platform
import random
import shlex
import subprocess
import sys
import time
import zlib

import numpy as np

import common
import kestrel

DOCS = common.REPO / "docs"
SIMD_FLAGS = ["sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
              "avx512dq", "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile",
              "asimd", "asimdhp", "asimddp", "i8mm", "sve", "sve2"]


# ---- inputs -------------------------------------------------------------------------------

def source_inputs(model, src):
    """[(shape, numpy dtype)] of the source model's inputs, in the source layout."""
    if model.fmt == "onnx":
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.log_severity_level = 3
        sess = ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"])
        types = {"tensor(float)": np.float32, "tensor(uint8)": np.uint8, "tensor(int8)": np.int8}
        return [(tuple(d if isinstance(d, int) else 1 for d in i.shape), types[i.type])
                for i in sess.get_inputs()]
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(src))
    return [(tuple(int(d) for d in det["shape"]), det["dtype"])
            for det in it.get_input_details()]


def make_inputs(model, src, seed):
    """Seeded inputs: floats uniform in [0,1) (inside the valid range of image models normalised
    to [0,1] or [-1,1]); 8-bit integers over their full range (quantized inputs are fed raw)."""
    return inputs_from_spec(model.key, source_inputs(model, src), seed)


def inputs_from_spec(key, spec, seed):
    """make_inputs from [(shape, dtype)] (bench/gpu carries the spec, not the source model)."""
    rng = np.random.default_rng([seed, zlib.crc32(key.encode())])
    arrays = []
    for shape, dtype in spec:
        dtype = np.dtype(dtype)
        if np.issubdtype(dtype, np.floating):
            arrays.append(rng.random(shape, dtype=np.float32).astype(dtype))
        else:
            info = np.iinfo(dtype)
            arrays.append(rng.integers(info.min, info.max, shape, endpoint=True, dtype=dtype))
    return arrays


def adapt(arr, shape):
    """arr (in the source model's layout) rearranged to `shape` (an engine's layout)."""
    shape = tuple(int(d) for d in shape)
    if arr.shape == shape:
        return arr
    if arr.ndim == 4:
        for perm in [(0, 2, 3, 1), (0, 3, 1, 2)]:
            t = arr.transpose(perm)
            if t.shape == shape:
                return np.ascontiguousarray(t)
        if arr.shape[0] == 1 and len(shape) == 3:
            return adapt(arr[0:1], (1,) + shape)[0]
    raise ValueError(f"cannot map an input of shape {arr.shape} onto {shape}")


# ---- engines ------------------------------------------------------------------------------

class KestrelRunner:
    def __init__(self, path, threads, inputs, lib, model):
        self.s = kestrel.Session(lib, path, threads)
        if self.s.num_inputs() != len(inputs):
            raise ValueError(f"{self.s.num_inputs()} inputs, source model has {len(inputs)}")
        for i, arr in enumerate(inputs):
            _, view = self.s.input(i)
            np.copyto(view, adapt(arr, view.shape), casting="no")
        self.run = self.s.run

    def close(self):
        self.s.close()


class OrtRunner:
    def __init__(self, path, threads, inputs, lib, model):
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.log_severity_level = 3
        self.sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        self.feed = {i.name: adapt(a, i.shape) for i, a in zip(self.sess.get_inputs(), inputs)}
        self.names = [o.name for o in self.sess.get_outputs()]

    def run(self):
        self.sess.run(self.names, self.feed)

    def close(self):
        self.sess = None


class LiteRtRunner:
    def __init__(self, path, threads, inputs, lib, model):
        from ai_edge_litert.interpreter import Interpreter

        # default op resolver: the XNNPACK delegate is applied automatically
        self.it = Interpreter(model_path=str(path), num_threads=threads)
        self.it.allocate_tensors()
        for det, arr in zip(self.it.get_input_details(), inputs):
            self.it.set_tensor(det["index"], adapt(arr, det["shape"]))
        self.run = self.it.invoke

    def close(self):
        self.it = None


class MnnRunner:
    def __init__(self, path, threads, inputs, lib, model):
        import MNN

        if len(inputs) != 1:
            raise ValueError("the MNN runner feeds single-input models only")
        self.it = MNN.Interpreter(str(path))
        self.sess = self.it.createSession({"numThread": threads, "precision": "normal"})
        inp = self.it.getSessionInput(self.sess)
        shape = inp.getShape()
        arr = adapt(inputs[0], shape)
        if arr.dtype != np.float32:
            raise ValueError(f"the MNN runner feeds float inputs only, not {arr.dtype}")
        tmp = MNN.Tensor(shape, MNN.Halide_Type_Float, arr, inp.getDimensionType())
        inp.copyFrom(tmp)

    def run(self):
        self.it.runSession(self.sess)

    def close(self):
        self.it = self.sess = None  # the session is released with its interpreter


class NcnnRunner:
    VULKAN = False  # bench/gpu's subclasses turn these
    FP16 = True  # False: every fp16 option off (ncnn's defaults otherwise)

    def __init__(self, path, threads, inputs, lib, model):
        import ncnn

        param = pathlib.Path(path)
        binf = param.with_suffix(".bin")
        self.ncnn = ncnn
        self.net = ncnn.Net()
        self.net.opt.use_vulkan_compute = self.VULKAN
        self.net.opt.num_threads = threads
        if not self.FP16:
            for opt in ("use_fp16_packed", "use_fp16_storage", "use_fp16_arithmetic"):
                setattr(self.net.opt, opt, False)
        if self.net.load_param(str(param)) or self.net.load_model(str(binf)):
            raise ValueError(f"ncnn cannot load {param}")
        in_names, self.out_names = common.parse_ncnn_param(param)
        if len(in_names) != len(inputs):
            raise ValueError(f"{len(in_names)} Input layers, source model has {len(inputs)}")
        # ncnn takes CHW without the batch dimension
        self.mats = [(n, ncnn.Mat(np.ascontiguousarray(a[0] if model.fmt == "onnx"
                                                       else a[0].transpose(2, 0, 1))))
                     for n, a in zip(in_names, inputs)]

    def run(self):
        # an extractor caches blobs, so a fresh one per inference (ncnn's documented usage)
        ex = self.net.create_extractor()
        for name, mat in self.mats:
            ex.input(name, mat)
        for name in self.out_names:
            ret, _ = ex.extract(name)
            if ret:
                raise RuntimeError(f"ncnn extract {name} failed ({ret})")

    def close(self):
        self.net.clear()
        self.net = None


RUNNERS = {"kestrel": KestrelRunner, "onnxruntime": OrtRunner, "litert": LiteRtRunner,
           "mnn": MnnRunner, "ncnn": NcnnRunner}


# ---- measurement --------------------------------------------------------------------------

def bench_cell(model, threads, paths, inputs, lib, args, rng, kinds=None):
    """Times one (model, threads) cell. Returns {engine: {...stats} or {"skip": reason}}.
    kinds: {engine: runner class} (default: RUNNERS for common.ENGINES; bench/gpu passes its
    own)."""
    out, runners = {}, {}
    kinds = kinds or {e: RUNNERS[e] for e in common.ENGINES}
    for engine, kind in kinds.items():
        path = paths.get(engine)
        if not path:
            continue
        try:
            r = kind(path, threads, inputs, lib, model)
            warm = []
            for _ in range(args.warmup):
                t0 = time.perf_counter_ns()
                r.run()
                warm.append((time.perf_counter_ns() - t0) * 1e-6)
            runners[engine] = (r, float(np.median(warm)) if warm else 0.0)
        except Exception as e:  # noqa: BLE001 - an engine failing only loses its cell
            out[engine] = {"skip": f"{type(e).__name__}: {e}".splitlines()[0][:300]}
    if not runners:
        return out
    if args.mode == "burst":
        est_round_s = sum(args.settle_ms * 1e-3 + (args.burst + 1) * w * 1e-3
                          for _, w in runners.values())
    else:
        est_round_s = sum(w for _, w in runners.values()) * 1e-3 + args.gap_ms * 1e-3 * len(runners)
    rounds = args.rounds or int(min(args.max_rounds, max(args.min_rounds,
                                                         args.budget_s / max(est_round_s, 1e-6))))
    samples = {e: [] for e in runners}
    order = list(runners)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            rng.shuffle(order)
            for engine in order:
                run = runners[engine][0].run
                if args.mode == "burst":
                    time.sleep(args.settle_ms * 1e-3)
                    run()  # untimed: brings this engine's threads and data back in
                    for _ in range(args.burst):
                        t0 = time.perf_counter_ns()
                        run()
                        samples[engine].append((time.perf_counter_ns() - t0) * 1e-6)
                else:
                    time.sleep(args.gap_ms * 1e-3)
                    t0 = time.perf_counter_ns()
                    run()
                    samples[engine].append((time.perf_counter_ns() - t0) * 1e-6)
    except Exception as e:  # noqa: BLE001
        out[engine] = {"skip": f"failed while timing: {type(e).__name__}: {e}"[:300]}
        samples.pop(engine, None)
    finally:
        if gc_was_enabled:
            gc.enable()
    for engine, (r, _) in runners.items():
        r.close()
        if engine in samples and samples[engine]:
            v = np.array(samples[engine])
            out[engine] = {"median_ms": float(np.median(v)), "min_ms": float(v.min()),
                           "max_ms": float(v.max()), "p90_ms": float(np.percentile(v, 90)),
                           "runs": int(v.size)}
    return out


# ---- report -------------------------------------------------------------------------------

def cpu_info():
    name, flags = platform.processor() or platform.machine(), set()
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "Model") and name in ("", platform.machine(), "x86_64"):
                name = value.strip()
            elif key in ("flags", "Features") and not flags:
                flags = set(value.split())
    except OSError:
        pass
    return {"name": name, "simd": [f for f in SIMD_FLAGS if f in flags],
            "logical_cpus": os.cpu_count(), "kernel": platform.release(),
            "machine": platform.machine()}


def versions(lib):
    v = {"kestrel": lib.version() if lib else "not built"}
    try:
        rev = subprocess.run(["git", "-C", str(common.REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(common.REPO), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True).stdout
        v["kestrel"] += f" (git {rev}{' + local changes' if dirty.strip() else ''})"
    except OSError:
        pass
    for pkg in ["onnxruntime", "ai-edge-litert", "MNN", "ncnn", "pnnx", "numpy"]:
        try:
            v[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            v[pkg] = "not installed"
    v["python"] = platform.python_version()
    return v


def geomean(values):
    return math.exp(sum(math.log(x) for x in values) / len(values)) if values else None


def ratios(results, threads):
    """{model key: (kestrel/best-peer ratio, best peer engine)} for cells where both ran."""
    out = {}
    for key, per_threads in results["cells"].items():
        cell = per_threads.get(str(threads), {})
        k = cell.get("kestrel", {}).get("median_ms")
        peers = [(c["median_ms"], e) for e, c in cell.items()
                 if e != "kestrel" and "median_ms" in c]
        if k and peers:
            best_ms, best = min(peers)
            out[key] = (k / best_ms, best)
    return out


def fmt_ms(c):
    if c is None:
        return "—"
    if "median_ms" not in c:
        return "fail"
    m = c["median_ms"]
    return f"{m:.2f}" if m < 100 else f"{m:.0f}"


def write_chart(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    threads_list = results["threads"]
    keys = [m.key for m in common.MODELS if m.key in results["cells"]]
    titles = {m.key: m.title for m in common.MODELS}
    engines = [e for e in common.ENGINES if any(
        "median_ms" in results["cells"][k].get(str(t), {}).get(e, {})
        for k in keys for t in threads_list)]
    fig, axes = plt.subplots(len(threads_list), 1, figsize=(13, 4.2 * len(threads_list)),
                             squeeze=False)
    colors = {"kestrel": "#d62728", "onnxruntime": "#1f77b4", "litert": "#2ca02c",
              "mnn": "#ff7f0e", "ncnn": "#9467bd"}
    handles = {}
    for ax, t in zip(axes[:, 0], threads_list):
        for i, k in enumerate(keys):
            cell = results["cells"][k].get(str(t), {})
            present = [e for e in engines if "median_ms" in cell.get(e, {})]
            width = 0.8 / max(1, len(present))
            for j, e in enumerate(present):  # bars of the engines that ran, centred on the model
                x = i + (j - (len(present) - 1) / 2) * width
                handles[e] = ax.bar(x, cell[e]["median_ms"], width, color=colors.get(e))
        ax.set_yscale("log")
        ax.set_ylabel("median latency, ms (log)")
        ax.set_title(f"{t} thread{'s' if t > 1 else ''} (lower is better)", fontsize=10)
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels([titles[k] for k in keys], rotation=20, ha="right", fontsize=8)
        ax.set_xlim(-0.6, len(keys) - 0.4)
        ax.grid(axis="y", which="both", alpha=0.3)
    fig.legend([handles[e] for e in engines if e in handles],
               [common.ENGINE_TITLES[e] for e in engines if e in handles],
               loc="upper center", ncol=len(handles), fontsize=9, bbox_to_anchor=(0.5, 0.965))
    fig.suptitle(f"Kestrel vs peers on {results['cpu']['name']}", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_report(results, md_path, png_path):
    cells = results["cells"]
    titles = {m.key: m for m in common.MODELS}
    engines = [e for e in common.ENGINES if any(
        e in per.get(str(t), {}) or per.get("paths", {}).get(e)
        for per in cells.values() for t in results["threads"])]
    cpu = results["cpu"]
    L = []
    L.append("# Benchmarks: Kestrel vs peer engines\n")
    L.append("Generated by `bench/peers/run.py`; do not edit by hand. Numbers from one machine "
             "and one run: read ratios, not absolute times, and regenerate after engine "
             "changes.\n")
    L.append("## Reproduce\n")
    L.append("```sh\nbench/peers/run.sh            # setup (pinned venv) + Release build + "
             "convert + run\nbench/peers/run.sh --quick    # 5 rounds per cell, for a smoke "
             "test\n```\n")
    L.append("`run.sh` creates `bench/peers/.venv` from `bench/peers/requirements.txt` (exact "
             "pins), builds Kestrel with `cmake -S . -B build-bench -G Ninja "
             "-DCMAKE_BUILD_TYPE=Release && ninja -C build-bench` (override the directory with "
             "`KS_BUILD_DIR`), converts the models into `bench/peers/work/` (`convert.py`) and "
             "times them (`run.py`), which rewrites this file and `docs/benchmarks.png`. "
             "`run.py --report-only` re-renders from `bench/peers/work/results.json`.\n")
    L.append("## Setup\n")
    L.append(f"- CPU: {cpu['name']} ({cpu['logical_cpus']} logical CPUs, {cpu['machine']}, "
             f"Linux {cpu['kernel']})")
    L.append(f"- SIMD flags: {' '.join(cpu['simd']) or 'none detected'}")
    L.append(f"- Date: {results['date']}; run took {results.get('elapsed_s', '?')} s")
    load = results.get("loadavg", {})
    if load:
        busy = max(load.get("start", 0), load.get("end", 0)) > (cpu["logical_cpus"] or 1)
        L.append(f"- Machine load (1-min load average) at start {load['start']:.1f}, at end "
                 f"{load['end']:.1f}" + (" — **more runnable threads than CPUs: multi-thread "
                                        "figures are dominated by scheduling and are not "
                                        "representative**" if busy else ""))
    L.append(f"- Command: `{results['command']}`")
    L.append("- Versions: " + ", ".join(f"{k} {v}" for k, v in results["versions"].items()))
    if results["min_rounds"] == results["max_rounds"]:
        rounds_text = f"{results['min_rounds']} rounds per cell"
    else:
        rounds_text = (f"{results['min_rounds']}–{results['max_rounds']} rounds per cell, as "
                       f"many as fit a {results['budget_s']:g} s budget")
    if results.get("mode", "frame") == "burst":
        how = (f"each round runs every engine in a shuffled order: a {results['settle_ms']:g} ms "
               f"pause (longer than any engine's threads keep spinning after a call), one "
               f"untimed call, then {results['burst']} timed calls back to back")
    else:
        how = (f"each round runs every engine once in a shuffled order, {results['gap_ms']} ms "
               f"pause before each call, as between camera frames")
    L.append(f"- Method: {results['warmup']} warm-up runs per engine, then interleaved rounds "
             f"({how}); {rounds_text}. Same seeded input for every "
             "engine (float inputs uniform in [0,1), uint8 inputs over their full range). "
             "All engines run in one Python process and are timed around the call that runs "
             "the graph: Kestrel `ks_session_run` via ctypes, ONNX Runtime `run` (CPU EP, all "
             "graph optimizations, sequential), LiteRT `invoke` (default resolver, so the "
             "XNNPACK delegate), MNN `runSession` (CPU, precision normal), ncnn "
             "`create_extractor` + `input` + `extract` of every output (CPU, Vulkan off). "
             "Each engine's own defaults otherwise.\n")
    for t in results["threads"]:
        r = ratios(results, t)
        L.append(f"## {t} thread{'s' if t > 1 else ''}: median latency (ms)\n")
        head = ["Model"] + [common.ENGINE_TITLES[e] for e in engines] + ["Kestrel / best peer"]
        L.append("| " + " | ".join(head) + " |")
        L.append("|" + "---|" * len(head))
        for key, per in cells.items():
            cell = per.get(str(t), {})
            row = [titles[key].title]
            for e in engines:
                c = cell.get(e)
                text = fmt_ms(c)
                if c and "median_ms" in c and key in r and e == r[key][1]:
                    text = f"**{text}**"
                row.append(text)
            row.append(f"{r[key][0]:.2f}×" if key in r else "—")
            L.append("| " + " | ".join(row) + " |")
        g = geomean([x for x, _ in r.values()])
        L.append("")
        if g:
            L.append(f"Geometric mean of Kestrel / best peer at {t} thread"
                     f"{'s' if t > 1 else ''}: **{g:.2f}×** over {len(r)} models (below 1: "
                     "Kestrel is faster than the fastest peer). Bold: the fastest peer.\n")
        else:
            L.append(f"No model ran on both Kestrel and a peer at {t} threads.\n")
    L.append(f"![median latency per model and engine]({png_path.name})\n")
    L.append("## Cells that did not run\n")
    L.append("— in a table means the engine cannot run that model here; the reasons:\n")
    grouped = {}  # (engine, reason) -> [model titles], so repeated reasons print once
    for key, per in cells.items():
        for e in engines:
            reason = per.get("notes", {}).get(e)
            if reason:
                grouped.setdefault((e, reason), []).append(titles[key].title)
            for t in results["threads"]:
                c = per.get(str(t), {}).get(e)
                if c and "skip" in c:
                    grouped.setdefault((e, f"failed at {t} thread(s): {c['skip']}"),
                                       []).append(titles[key].title)
    notes = [f"- {common.ENGINE_TITLES[e]}: {reason} — {', '.join(models)}"
             for (e, reason), models in grouped.items()]
    L.extend(notes or ["- none"])
    L.append("")
    L.append("## Notes\n")
    L.append("- ncnn models: UltraFace uses the upstream project's own ncnn export; the other "
             "ONNX models are converted with pnnx. ncnn and pnnx do not read TFLite, and ONNX "
             "Runtime does not either, so TFLite models compare Kestrel with LiteRT and MNN.")
    L.append("- MNN models are converted with MNN's converter (`_tools.mnnconvert`); its "
             "`mnnconvert` console script is avoided because it tries to install and call a "
             "usage-logging SDK.")
    L.append("- Medians of per-call wall time. The machine is shared and noisy; the interleaved "
             "rounds make drift hit every engine alike but do not remove it. p90 and min per "
             "cell are in `bench/peers/work/results.json`.")
    if results.get("mode", "frame") == "burst":
        L.append("- One call per camera frame instead of back-to-back calls: "
                 "`bench/peers/run.py --mode frame --gap-ms 33 --out docs/benchmarks-frame.md` "
                 "writes the same tables to `docs/benchmarks-frame.md` (workers asleep at each "
                 "call; see `bench/peers/README.md` for why the default changed).")
    # Sections written by other tools (bench/tasks.c: "## Task latency") are kept as they are.
    tail = ""
    if md_path.exists():
        old = md_path.read_text()
        at = old.find("\n## Task latency")
        if at >= 0:
            tail = old[at:]
    md_path.write_text("\n".join(L) + "\n" + tail)
    write_chart(results, png_path)


# ---- main ---------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", help="comma-separated model keys (default: all)")
    ap.add_argument("--engines", help=f"comma-separated subset of {','.join(common.ENGINES)}")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=0, help="fixed rounds per cell (0: budget)")
    ap.add_argument("--min-rounds", type=int, default=5)
    ap.add_argument("--max-rounds", type=int, default=60)
    ap.add_argument("--budget-s", type=float, default=25.0, help="timing budget per cell")
    ap.add_argument("--mode", choices=["burst", "frame"], default="burst",
                    help="burst: settle, then back-to-back calls; frame: a pause before each call")
    ap.add_argument("--settle-ms", type=float, default=60.0,
                    help="burst mode: pause before each engine's burst")
    ap.add_argument("--burst", type=int, default=5, help="burst mode: timed calls per burst")
    ap.add_argument("--gap-ms", type=float, default=10.0,
                    help="frame mode: pause before each timed call")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--report-only", action="store_true",
                    help="re-render docs/benchmarks.{md,png} from work/results.json")
    ap.add_argument("--out", default=str(DOCS / "benchmarks.md"))
    args = ap.parse_args()
    md_path = pathlib.Path(args.out)
    png_path = md_path.with_suffix(".png")
    results_path = common.WORK / "results.json"
    if args.report_only:
        write_report(json.loads(results_path.read_text()), md_path, png_path)
        print(f"wrote {md_path} and {png_path}")
        return 0
    if args.min_rounds < 5 and not args.rounds:
        print("note: fewer than 5 timed runs per cell make medians unreliable", file=sys.stderr)

    conv_path = common.WORK / "convert.json"
    if not conv_path.exists():
        print(f"{conv_path} missing: run convert.py first", file=sys.stderr)
        return 2
    conv = json.loads(conv_path.read_text())
    libpath = common.build_dir() / "engine" / "libkestrel.so"
    lib = kestrel.Library(libpath) if libpath.exists() else None
    keys = args.models.split(",") if args.models else [m.key for m in common.MODELS]
    engines = args.engines.split(",") if args.engines else common.ENGINES
    threads_list = [int(t) for t in args.threads.split(",")]
    rng = random.Random(args.seed)
    results = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join(shlex.quote(a) for a in ["bench/peers/run.py"] + sys.argv[1:]),
        "cpu": cpu_info(), "versions": versions(lib), "threads": threads_list,
        "warmup": args.warmup, "mode": args.mode, "settle_ms": args.settle_ms,
        "burst": args.burst, "gap_ms": args.gap_ms, "budget_s": args.budget_s,
        "min_rounds": args.rounds or args.min_rounds, "max_rounds": args.rounds or args.max_rounds,
        "seed": args.seed, "cells": {},
    }
    t_start = time.time()
    results["loadavg"] = {"start": os.getloadavg()[0]}
    for model in common.MODELS:
        if model.key not in keys:
            continue
        mc = conv.get(model.key, {})
        src = mc.get("source")
        paths, notes = {}, {}
        for e in engines:
            c = mc.get(e, {})
            if c.get("path"):
                paths[e] = c["path"]
            else:
                notes[e] = c.get("note") or "not converted (run convert.py)"
        if "kestrel" in paths and lib is None:
            notes["kestrel"] = f"{libpath} not built"
            paths.pop("kestrel")
        cell = results["cells"].setdefault(model.key, {"paths": paths, "notes": notes})
        if not src:
            continue
        inputs = make_inputs(model, src, args.seed)
        for t in threads_list:
            t0 = time.time()
            cell[str(t)] = bench_cell(model, t, paths, inputs, lib, args, rng)
            summary = "  ".join(
                f"{e}={c['median_ms']:.2f}ms" if "median_ms" in c else f"{e}=FAIL"
                for e, c in cell[str(t)].items())
            n = max((c.get("runs", 0) for c in cell[str(t)].values()), default=0)
            print(f"{model.key:18s} t={t}  {summary}  [{n} timed runs, {time.time() - t0:.0f} s]",
                  flush=True)
            for e, c in cell[str(t)].items():
                if "skip" in c:
                    print(f"    {e}: {c['skip']}", flush=True)
        results_path.write_text(json.dumps(results, indent=1))
    results["elapsed_s"] = round(time.time() - t_start)
    results["loadavg"]["end"] = os.getloadavg()[0]
    results_path.write_text(json.dumps(results, indent=1))
    write_report(results, md_path, png_path)
    print(f"wrote {md_path} and {png_path} in {results['elapsed_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
