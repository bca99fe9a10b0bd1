#!/usr/bin/env python3
"""Side-by-side latency of models (e.g. fp32 and its ks-quant int8 model) on a noisy machine.

    pair_bench.py BUILD_DIR A.ksm B.ksm [C.ksm ...] [--rounds 8] [--runs 20] [--threads 1]

A model may carry a session precision: `int8.ksm@fastest` (or `@f32`, `@stored`) runs
`ks-bench --precision fastest` (docs/compression.md, "Precision at session create").

Runs `ks-bench --json` on the models in turn (the order rotates every round, so none always runs
right after another), `--runs` timed runs after 3 warm-up runs per call, and reports per model
the median of the per-call medians and its ratio to A, also per round (the spread of the
per-round ratios shows how much the machine's noise moved the result), and the median session
create time.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def split(spec):
    path, _, precision = spec.partition("@")
    return path, precision or "stored"


def bench(ks_bench, spec, runs, threads):
    path, precision = split(spec)
    out = subprocess.run(
        [ks_bench, path, "--runs", str(runs), "--threads", str(threads), "--json",
         "--precision", precision],
        check=True, capture_output=True, text=True).stdout
    plan = [line for line in out.splitlines() if line.startswith("precision")]
    last = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    return float(last["median_ms"]), float(last.get("create_ms", 0.0)), plan[-1] if plan else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if len(args.models) < 2:
        sys.exit("pair_bench: give at least two models")
    ks_bench = os.path.join(args.build, "engine", "tools", "ks-bench")
    if not os.access(ks_bench, os.X_OK):
        sys.exit(f"pair_bench: {ks_bench} is not built")
    for spec in args.models:
        path, precision = split(spec)
        if not os.path.isfile(path):
            sys.exit(f"pair_bench: no model '{path}'")
        if precision not in ("stored", "f32", "fastest"):
            sys.exit(f"pair_bench: '{spec}': the precision must be stored, f32 or fastest")
    n = len(args.models)
    times = [[] for _ in range(n)]
    creates = [[] for _ in range(n)]
    plans = [""] * n
    ratios = [[] for _ in range(n)]
    for r in range(args.rounds):
        order = list(range(n))
        order = order[r % n:] + order[:r % n]
        if r % 2:
            order.reverse()
        for i in order:
            t, c, plans[i] = bench(ks_bench, args.models[i], args.runs, args.threads)
            times[i].append(t)
            creates[i].append(c)
        for i in range(n):
            ratios[i].append(times[0][-1] / times[i][-1])
    med = [statistics.median(t) for t in times]
    for i, spec in enumerate(args.models):
        label = chr(ord("A") + i) if i < 26 else str(i)
        print(f"{label} {spec}: median {med[i]:.3f} ms, create {statistics.median(creates[i]):.1f} ms"
              f"  (per round: {' '.join(f'{t:.2f}' for t in times[i])})")
        if plans[i]:
            print(f"  {plans[i]}")
    for i in range(1, n):
        label = chr(ord("A") + i) if i < 26 else str(i)
        print(f"A/{label} {med[0] / med[i]:.3f}x  (per-round ratios: min {min(ratios[i]):.3f}, "
              f"median {statistics.median(ratios[i]):.3f}, max {max(ratios[i]):.3f}; "
              f"{args.threads} thread(s), {args.rounds} rounds x {args.runs} runs)")


if __name__ == "__main__":
    main()
