#!/usr/bin/env python3
"""Kestrel's Vulkan backend against ncnn's, and against Kestrel's own CPU path, on one GPU.

Runs on the GPU machine, from a folder made by pack.py (models, inputs, libkestrel.so). Every
engine below gets the same seeded input and is timed in this process around the call that runs
the graph, inputs uploaded and outputs read back (ncnn: a fresh extractor per run, input set,
every output extracted; Kestrel: ks_session_run through a ctypes binding), in interleaved
rounds after a warm-up, using bench/peers/run.py's burst method (one untimed call, then --burst
timed calls back to back, engines in a shuffled order each round). Medians are quoted. There is
no settle pause by default (--settle-ms 0), unlike the CPU benchmark: a GPU lowers its clocks
within milliseconds of idling (measured on the H100: ncnn's Vulkan YOLOX-nano 7.3 ms with a 20 ms
pause before each burst of 5, 3.6 ms back to back), and the question here is throughput of a
busy camera pipeline, as in ncnn's own benchncnn loop.

  kestrel_cpu      Kestrel, CPU backend, --threads threads
  kestrel_vk       Kestrel, Vulkan, fp32 (KS_PRECISION_DEFAULT)
  kestrel_vk_f16s  Kestrel, Vulkan, fp16 storage, fp32 arithmetic (KS_PRECISION_FP16_STORAGE)
  kestrel_vk_f16   Kestrel, Vulkan, fp16 storage and arithmetic (KS_PRECISION_FP16)
  ncnn_vk          ncnn with use_vulkan_compute (its defaults: fp16 storage and arithmetic
                   where the device has them)
  ncnn_vk_f32      ncnn with use_vulkan_compute and every fp16 option off
  ncnn_cpu         ncnn on the CPU, --threads threads

An engine that refuses a model (an unknown precision on an older libkestrel, a model ncnn
cannot read) loses its cell with the reason. Writes RESULTS.json and prints a Markdown table.

usage: run.py PACK_DIR [--models KEYS] [--engines E,..] [--rounds N] [--burst B] [--out F.json]
"""

import argparse
import datetime
import json
import pathlib
import platform
import random
import sys
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "peers"))

import common  # noqa: E402
import kestrel  # noqa: E402
import run as peers_run  # noqa: E402

KS_BACKEND_CPU, KS_BACKEND_VULKAN = 0, 1
KS_PRECISION_DEFAULT, KS_PRECISION_FP16_STORAGE, KS_PRECISION_FP16 = 0, 3, 4


def kestrel_runner(backend, precision):
    class Runner(peers_run.KestrelRunner):
        def __init__(self, path, threads, inputs, lib, model):
            self.s = kestrel.Session(lib, path, threads, backend=backend, precision=precision)
            if backend != KS_BACKEND_CPU and self.s.backend() != backend:
                raise RuntimeError("the session did not start on the GPU")
            for i, arr in enumerate(inputs):
                _, view = self.s.input(i)
                np.copyto(view, peers_run.adapt(arr, view.shape), casting="no")
            self.run = self.s.run

    return Runner


def ncnn_runner(vulkan, fp16):
    return type("Runner", (peers_run.NcnnRunner,), {"VULKAN": vulkan, "FP16": fp16})


ENGINES = {
    "kestrel_cpu": kestrel_runner(KS_BACKEND_CPU, KS_PRECISION_DEFAULT),
    "kestrel_vk": kestrel_runner(KS_BACKEND_VULKAN, KS_PRECISION_DEFAULT),
    "kestrel_vk_f16s": kestrel_runner(KS_BACKEND_VULKAN, KS_PRECISION_FP16_STORAGE),
    "kestrel_vk_f16": kestrel_runner(KS_BACKEND_VULKAN, KS_PRECISION_FP16),
    "ncnn_vk": ncnn_runner(True, True),
    "ncnn_vk_f32": ncnn_runner(True, False),
    "ncnn_cpu": ncnn_runner(False, True),
}


class PackedModel:
    def __init__(self, key, entry):
        self.key, self.title, self.fmt = key, entry["title"], entry["fmt"]


def gpu_name():
    try:
        import subprocess

        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
        return out or "unknown GPU"
    except Exception:  # noqa: BLE001
        return "unknown GPU"


def geomean(v):
    v = [x for x in v if x and x > 0]
    return float(np.exp(np.mean(np.log(v)))) if v else None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pack")
    ap.add_argument("--models")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--burst", type=int, default=10)
    ap.add_argument("--settle-ms", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="gpu_results.json")
    ap.add_argument("--lib", help="libkestrel.so to time (default: the pack's), e.g. an older "
                    "build for a before/after pair of runs")
    args = ap.parse_args()
    args.mode = "burst"
    pack = pathlib.Path(args.pack)
    manifest = json.loads((pack / "manifest.json").read_text())
    lib = kestrel.Library(pathlib.Path(args.lib) if args.lib else pack / "libkestrel.so")
    keys = args.models.split(",") if args.models else list(manifest["models"])
    engines = args.engines.split(",")
    rng = random.Random(args.seed)
    results = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               "command": " ".join(["bench/gpu/run.py"] + sys.argv[1:]),
               "gpu": gpu_name(), "cpu": peers_run.cpu_info(), "host": platform.node(),
               "kestrel": lib.version(), "threads": args.threads, "rounds": args.rounds,
               "burst": args.burst, "cells": {}}
    try:
        import importlib.metadata as md

        results["ncnn"] = md.version("ncnn")
    except Exception:  # noqa: BLE001
        results["ncnn"] = None
    for key in keys:
        entry = manifest["models"][key]
        model = PackedModel(key, entry)
        d = pack / key
        inputs = peers_run.inputs_from_spec(key, [(tuple(s), dt) for s, dt in entry["inputs"]],
                                            manifest["seed"])
        paths, notes = {}, {}
        for e in engines:
            if e.startswith("kestrel"):
                paths[e] = str(d / "model.ksm")
            elif entry["ncnn"]:
                paths[e] = str(d / entry["ncnn"])
            else:
                notes[e] = entry["ncnn_note"]
        t0 = time.time()
        cell = peers_run.bench_cell(model, args.threads, paths, inputs, lib, args, rng,
                                    kinds={e: ENGINES[e] for e in engines})
        for e, why in notes.items():
            cell[e] = {"skip": why}
        results["cells"][key] = cell
        line = "  ".join(f"{e}={c['median_ms']:.3f}" if "median_ms" in c else f"{e}=-"
                         for e, c in cell.items())
        print(f"{key:18s} {line}  [{time.time() - t0:.0f} s]", flush=True)
        for e, c in cell.items():
            if "skip" in c:
                print(f"    {e}: {c['skip']}", flush=True)
        pathlib.Path(args.out).write_text(json.dumps(results, indent=1))
    print_table(results, engines)
    return 0


def print_table(results, engines):
    def med(cell, e):
        c = cell.get(e, {})
        return c.get("median_ms")

    print(f"\n{results['gpu']}; Kestrel {results['kestrel']}, ncnn {results['ncnn']}; "
          f"median ms over {results['rounds']} rounds x {results['burst']} runs\n")
    print("| model | " + " | ".join(engines) + " | Kestrel VK / ncnn VK (fp32) | best Kestrel VK / "
          "best ncnn VK |")
    print("|---|" + "---:|" * (len(engines) + 2))
    r32, rbest = [], []
    for key, cell in results["cells"].items():
        row = [f"{med(cell, e):.3f}" if med(cell, e) else "-" for e in engines]
        a, b = med(cell, "kestrel_vk"), med(cell, "ncnn_vk_f32")
        ks = [v for v in (med(cell, e) for e in ("kestrel_vk", "kestrel_vk_f16s", "kestrel_vk_f16")) if v]
        nc = [v for v in (med(cell, e) for e in ("ncnn_vk", "ncnn_vk_f32")) if v]
        x = a / b if a and b else None
        y = min(ks) / min(nc) if ks and nc else None
        if x:
            r32.append(x)
        if y:
            rbest.append(y)
        row += [f"{x:.2f}" if x else "-", f"{y:.2f}" if y else "-"]
        print(f"| {key} | " + " | ".join(row) + " |")
    g32, gb = geomean(r32), geomean(rbest)
    print("\ngeometric mean of the ratios: fp32 " + (f"{g32:.2f}" if g32 else "-") +
          ", best mode " + (f"{gb:.2f}" if gb else "-"))


if __name__ == "__main__":
    sys.exit(main())
