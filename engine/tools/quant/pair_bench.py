#!/usr/bin/env python3
"""Side-by-side latency of two models (e.g. fp32 and its ks-quant int8 model) on a noisy machine.

    pair_bench.py BUILD_DIR A.ksm B.ksm [--rounds 8] [--runs 20] [--threads 1]

Runs `ks-bench --json` on A and B alternately (order flipped every round, so neither always runs
right after the other), `--runs` timed runs after 3 warm-up runs per call, and reports per model
the median of the per-call medians and the ratio A/B, also per round (the spread of the per-round
ratios shows how much the machine's noise moved the result). With several `--pair` groups the
models of one row are still timed in the same minute.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def bench(ks_bench, model, runs, threads):
    out = subprocess.run(
        [ks_bench, model, "--runs", str(runs), "--threads", str(threads), "--json"],
        check=True, capture_output=True, text=True).stdout
    last = [line for line in out.splitlines() if line.startswith("{")][-1]
    return float(json.loads(last)["median_ms"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    ks_bench = os.path.join(args.build, "engine", "tools", "ks-bench")
    if not os.access(ks_bench, os.X_OK):
        sys.exit(f"pair_bench: {ks_bench} is not built")
    for m in (args.a, args.b):
        if not os.path.isfile(m):
            sys.exit(f"pair_bench: no model '{m}'")
    ta, tb, ratios = [], [], []
    for r in range(args.rounds):
        order = [(args.a, ta), (args.b, tb)]
        if r % 2:
            order.reverse()
        for model, times in order:
            times.append(bench(ks_bench, model, args.runs, args.threads))
        ratios.append(ta[-1] / tb[-1])
    ma, mb = statistics.median(ta), statistics.median(tb)
    print(f"A {args.a}: median {ma:.3f} ms  (per round: {' '.join(f'{t:.2f}' for t in ta)})")
    print(f"B {args.b}: median {mb:.3f} ms  (per round: {' '.join(f'{t:.2f}' for t in tb)})")
    print(f"A/B {ma / mb:.3f}x  (per-round ratios: min {min(ratios):.3f}, median "
          f"{statistics.median(ratios):.3f}, max {max(ratios):.3f}; {args.threads} thread(s), "
          f"{args.rounds} rounds x {args.runs} runs)")


if __name__ == "__main__":
    main()
