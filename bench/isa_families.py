#!/usr/bin/env python3
"""Where the AVX2 time goes, per op family, against the AVX-512 twins (issue 23).

Runs `ks-bench --profile-nodes` on every model at each dispatch level (`KS_ISA_MAX`), in
alternated rounds, and sums the per-node medians by kernel family. Compute-bound families (dense
and small-channel convolutions, Winograd, FC, the transcendental activations and softmax) are
rated in GFLOP/s against the measured single-core FMA peak of each level (`ks-kbench` prints
it); memory-bound families (depthwise, pooling, element-wise arithmetic, copies, resize) in GB/s
of activations read and written (from the
node shapes `ks-inspect --nodes` prints; weights not counted), whose roof is the same memory at
every level. Efficiency of a family = achieved / roof; the table gives AVX2's efficiency as a
fraction of its AVX-512 twin's (int8 families: the raw rate ratio, as their roofs differ by
instruction, not by width). Also every model's AVX2 / AVX-512 latency ratio.

    bench/isa_families.py --bin build/release/engine/tools --cpu 0 --rounds 3 \
        --peak avx2=134 --peak full=267 --out /tmp/isa.json [MODEL.ksm ...]

Without models: every bench/peers/work/models/*/model.ksm (bench/peers/run.sh converts them).
"""
import argparse
import glob
import json
import math
import os
import re
import statistics
import subprocess
import sys

from ksm_nodes import parse_nodes

COMPUTE = ("dense conv", "int8 dense conv", "winograd", "fully connected",
           "transcendental (sigmoid, tanh, exp, softmax)")


def family(op, kernel):
    k = kernel
    q8 = k.startswith("ks_q8_")
    if "dwconv" in k or "dwrow" in k:
        return "int8 depthwise" if q8 else "depthwise"
    if "wino" in k:
        return "winograd"
    if op in ("conv2d", "conv2d_transpose"):
        return "int8 dense conv" if q8 else "dense conv"
    if op in ("fully_connected", "matmul", "batch_matmul"):
        return "fully connected"
    if op.endswith("pool2d") or "pool" in op:
        return "pooling"
    if op in ("concat", "slice", "transpose", "split", "pad", "reshape", "strided_slice",
              "depth_to_space", "space_to_depth", "gather"):
        return "copies (concat, slice, transpose, pad)"
    if op in ("resize", "resize_bilinear", "resize_nearest"):
        return "resize"
    if op in ("sigmoid", "tanh", "exp", "elu", "softmax", "log_softmax"):
        return "transcendental (sigmoid, tanh, exp, softmax)"
    if op in ("mean", "reduce_max", "sum"):
        return "reductions"
    if q8 or op in ("quantize", "dequantize"):
        return "int8 element-wise, (de)quantize"
    return "element-wise and activations"


def inspect_bytes(inspect, model):
    """Per node index: elements of activations read and written (weights excluded)."""
    res = {}
    for idx, n in parse_nodes(inspect, model).items():
        e = sum(math.prod(n["shape"][t]) for t in n["ins"] if t in n["shape"])
        if n["ins"] and n["ins"][0] not in n["shape"] and n["in0"]:
            e += math.prod(n["in0"])  # the graph input
        res[idx] = e + sum(math.prod(n["shape"][t]) for t in n["outs"])
    return res


ROW = re.compile(r"^\s*(\d+)\s+(\S+)\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")


def bench(ks_bench, model, level, cpu, runs):
    env = dict(os.environ)
    env.pop("KS_ISA_MAX", None)
    if level != "full":
        env["KS_ISA_MAX"] = level
    cmd = [ks_bench, model, "--runs", str(runs), "--profile-nodes"]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu)] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    lat = float(re.search(r"median ([\d.]+) ms", out).group(1))
    nodes, on = {}, False
    for line in out.splitlines():
        if line.startswith("per-node profile"):
            on = True
            continue
        m = ROW.match(line) if on else None
        if m:
            nodes[int(m.group(1))] = (m.group(2), m.group(3), float(m.group(4)),
                                      float(m.group(5)))
    return lat, nodes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--bin", default="build/release/engine/tools")
    ap.add_argument("--levels", default="avx2,full")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--cpu", type=int)
    ap.add_argument("--peak", action="append", default=[],
                    help="LEVEL=GFLOP/s, the single-core FMA peak (ks-kbench)")
    ap.add_argument("--out")
    a = ap.parse_args()
    models = a.models or sorted(glob.glob("bench/peers/work/models/*/model.ksm"))
    if not models:
        sys.exit("no models: run bench/peers/run.sh first or name .ksm files")
    levels = a.levels.split(",")
    peak = {k: float(v) for k, v in (p.split("=") for p in a.peak)}
    ks_bench, inspect = os.path.join(a.bin, "ks-bench"), os.path.join(a.bin, "ks-inspect")
    elems = {m: inspect_bytes(inspect, m) for m in models}
    lat = {(m, l): [] for m in models for l in levels}
    node_ms = {}
    node_info = {}
    for r in range(a.rounds):
        for m in models:
            for l in (levels if r % 2 == 0 else levels[::-1]):
                t, nodes = bench(ks_bench, m, l, a.cpu, a.runs)
                lat[(m, l)].append(t)
                for idx, (op, kern, ms, mflop) in nodes.items():
                    node_ms.setdefault((m, l, idx), []).append(ms)
                    node_info[(m, l, idx)] = (op, kern, mflop)
                print(f"round {r + 1} {os.path.basename(os.path.dirname(m)) or m} {l} {t:.3f} ms",
                      file=sys.stderr)
    fam = {}
    for (m, l, idx), v in node_ms.items():
        op, kern, mflop = node_info[(m, l, idx)]
        f = family(op, kern)
        esize = 1 if kern.startswith(("ks_q8_", "ks_x8_", "ks_u8_", "ks_s8_")) else 4
        s = fam.setdefault((f, l), {"ms": 0.0, "mflop": 0.0, "mb": 0.0, "nodes": 0})
        s["ms"] += statistics.median(v)
        s["mflop"] += mflop
        s["mb"] += elems[m].get(idx, 0) * esize / 1e6
        s["nodes"] += 1
    res = {"levels": levels, "peak_gflops": peak, "models": {}, "families": {}}
    name = lambda m: os.path.basename(os.path.dirname(m)) if m.endswith("model.ksm") else \
        os.path.basename(m)
    print("\n| model | " + " | ".join(f"{l} ms" for l in levels) + " | ratio |")
    print("|---|" + "---:|" * (len(levels) + 1))
    for m in models:
        meds = [statistics.median(lat[(m, l)]) for l in levels]
        res["models"][name(m)] = dict(zip(levels, meds))
        print(f"| {name(m)} | " + " | ".join(f"{x:.3f}" for x in meds) +
              f" | {meds[0] / meds[-1]:.2f}x |")
    print("\n| family | " + " | ".join(f"{l}: ms, rate, of roof" for l in levels) +
          " | efficiency ratio |")
    print("|---|" + "---:|" * (len(levels) + 1))
    for f in sorted({f for f, _ in fam}, key=lambda f: -fam.get((f, levels[-1]), {"ms": 0})["ms"]):
        cells, eff = [], []
        for l in levels:
            s = fam.get((f, l))
            if not s or s["ms"] <= 0:
                cells.append("—")
                eff.append(None)
                continue
            if f in COMPUTE:
                rate = s["mflop"] / s["ms"]  # MFLOP/ms = GFLOP/s
                roof = peak.get(l)
                if f.startswith("int8"):
                    roof = None  # no single peak: VNNI, AVX-VNNI and maddubs differ
                e = rate / roof if roof else rate
                cells.append(f"{s['ms']:.2f}, {rate:.0f} GFLOP/s" +
                             (f", {100 * rate / roof:.0f} %" if roof else ""))
            else:
                rate = s["mb"] / s["ms"]  # MB/ms = GB/s
                e = rate
                extra = ""
                if f == "depthwise" and peak.get(l):  # also against the FMA peak
                    extra = f" ({100 * s['mflop'] / s['ms'] / peak[l]:.0f} % of FMA peak)"
                cells.append(f"{s['ms']:.2f}, {rate:.1f} GB/s{extra}")
            eff.append(e)
            res["families"].setdefault(f, {})[l] = dict(s, rate=rate)
        ratio = (f"{eff[0] / eff[-1]:.2f}" if eff[0] and eff[-1] else "—")
        print(f"| {f} | " + " | ".join(cells) + f" | {ratio} |")
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
