#!/usr/bin/env python3
"""Kestrel against an earlier build of itself, on the peer benchmark's models, in one run.

Proves that a change kept the speed: both libraries (libkestrel.so of two build directories)
are loaded into this process and timed on the same .ksm files and the same seeded inputs, in
interleaved rounds, by run.py's own timing loop (bench_cell), so drift of a shared machine hits
both alike. The .ksm files are converted by the "after" build's ks-convert (the file format is
the same on both sides; an older library that cannot read them fails its cell with the reason).

    # build the old commit somewhere, e.g.
    git worktree add /tmp/before <commit>
    cmake -S /tmp/before -B /tmp/before/build -G Ninja -DCMAKE_BUILD_TYPE=Release
    ninja -C /tmp/before/build kestrel
    bench/peers/before_after.py --before /tmp/before/build [--after build-bench] \\
        [--models blazeface_short,facemesh] [--threads 1,2] [--budget-s 10]

Prints one line per (model, threads) cell: both medians and after/before, then the geometric
mean and the largest ratio. Writes work/before_after.json. Exit status 0 (it measures; judging
is the reader's, with the machine's noise in mind).
Needs numpy, onnxruntime and ai-edge-litert (to read the source models' input shapes): the
peer venv (setup.sh) or any venv with them.
"""

import argparse
import json
import math
import pathlib
import random
import subprocess
import sys
import time

import common
import kestrel
import run

def convert(ks_convert, model, src):
    out_dir = common.WORK / "before_after" / model.key
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / "model.ksm"
    p = subprocess.run([str(ks_convert), str(src), str(out), "--quiet"], capture_output=True,
                       text=True)
    if p.returncode != 0 or not out.exists():
        raise RuntimeError(f"ks-convert {src}: {(p.stderr or p.stdout).strip()[:300]}")
    return out

def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="build directory of the earlier Kestrel")
    ap.add_argument("--after", default=str(common.build_dir()),
                    help="build directory of the current Kestrel (default: KS_BUILD_DIR or "
                         "build-bench)")
    ap.add_argument("--models", help="comma-separated model keys (default: all)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--min-rounds", type=int, default=5)
    ap.add_argument("--max-rounds", type=int, default=60)
    ap.add_argument("--budget-s", type=float, default=15.0)
    ap.add_argument("--mode", choices=["burst", "frame"], default="burst")
    ap.add_argument("--settle-ms", type=float, default=20.0)
    ap.add_argument("--burst", type=int, default=5)
    ap.add_argument("--gap-ms", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    after_dir, before_dir = pathlib.Path(args.after), pathlib.Path(args.before)
    libs = {}
    for name, d in (("after", after_dir), ("before", before_dir)):
        p = d / "engine" / "libkestrel.so"
        if not p.exists():
            print(f"{p} not found: build the 'kestrel' target there first", file=sys.stderr)
            return 2
        libs[name] = kestrel.Library(p)
    ks_convert = after_dir / "engine" / "tools" / "ks-convert"
    if not ks_convert.exists():
        print(f"{ks_convert} not found", file=sys.stderr)
        return 2

    class BeforeRunner(run.KestrelRunner):
        def __init__(self, path, threads, inputs, lib, model):
            super().__init__(path, threads, inputs, libs["before"], model)

    run.RUNNERS["kestrel_before"] = BeforeRunner
    common.ENGINES[:] = ["kestrel", "kestrel_before"]

    keys = args.models.split(",") if args.models else [m.key for m in common.MODELS]
    threads = [int(t) for t in args.threads.split(",")]
    rng = random.Random(args.seed)
    results = {"before": str(before_dir), "after": str(after_dir), "cells": {}}
    ratios = []
    for model in common.MODELS:
        if model.key not in keys:
            continue
        src = model.source_path()
        if not src:
            print(f"{model.key:18s} skipped: {model.src} not found")
            continue
        ksm = convert(ks_convert, model, src)
        paths = {"kestrel": str(ksm), "kestrel_before": str(ksm)}
        inputs = run.make_inputs(model, src, args.seed)
        for t in threads:
            t0 = time.time()
            cell = run.bench_cell(model, t, paths, inputs, libs["after"], args, rng)
            results["cells"][f"{model.key}/{t}"] = cell
            a, b = cell.get("kestrel", {}), cell.get("kestrel_before", {})
            if "median_ms" in a and "median_ms" in b:
                r = a["median_ms"] / b["median_ms"]
                ratios.append((r, f"{model.key} t={t}"))
                print(f"{model.key:18s} t={t}  after {a['median_ms']:7.3f} ms  before "
                      f"{b['median_ms']:7.3f} ms  after/before {r:.3f}  [{a['runs']} runs, "
                      f"{time.time() - t0:.0f} s]", flush=True)
            else:
                print(f"{model.key:18s} t={t}  failed: {a.get('skip') or b.get('skip')}",
                      flush=True)
    if ratios:
        gm = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
        worst = max(ratios)
        print(f"geometric mean after/before {gm:.3f} over {len(ratios)} cells; largest "
              f"{worst[0]:.3f} ({worst[1]})")
        results["geomean"] = gm
    (common.WORK / "before_after.json").write_text(json.dumps(results, indent=1))
    return 0

if __name__ == "__main__":
    sys.exit(main())
