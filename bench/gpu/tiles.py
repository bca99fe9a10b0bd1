#!/usr/bin/env python3
"""conv2d_gemm's tiles on a real GPU: per node, the time of each tile, from the per-node profiles
that bench/gpu/s30a_device_run.sh writes (`ks-bench --profile-nodes` with KS_VK_TILE forced),
and the shapes from `ks-inspect --nodes` of the same .ksm files. Prints, per model and mode, the
GEMM convolutions' total time with every tile, with the best tile per node (the oracle), and with
the rule of backend.c's gemm_tile (rule() below, kept in step with it), so that a rule is judged
against the data.

usage: tiles.py PROFILE_DIR MODEL_DIR [--ks-inspect PATH] [--nodes]

MODEL_DIR holds MODEL.ksm or MODEL/model.ksm (a bench/gpu/pack.py folder).
"""
import argparse
import math
import os
import re
import subprocess
import sys

TILES = ["32x32", "16x32", "32x16", "16x16", "64x32", "32x64"]


def shapes(inspect, model):
    """node index -> (M, N, K) of the model's CONV2D nodes."""
    out = subprocess.run([inspect, model, "--nodes"], capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        m = re.match(r"#(\d+)\s+conv2d\s+\S+\s+\[(\d+),(\d+),(\d+),(\d+)\].*flops=(\d+)", line)
        if not m:
            continue
        idx, n, h, w, c, flops = map(int, m.groups())
        mm = n * h * w
        res[idx] = (mm, c, flops // (2 * mm * c) if mm * c else 0)
    return res


def profile(path):
    """node index -> (kernel, ms) of the GEMM convolutions in a --profile-nodes file."""
    res = {}
    if not os.path.exists(path):
        return res
    for line in open(path):
        m = re.match(r"\s*(\d+)\s+conv2d\s+(vk_conv2d_gemm\S*)\s+([\d.]+)", line)
        if m:
            res[int(m.group(1))] = (m.group(2), float(m.group(3)))
    return res


def groups(mm, n, tile):
    tm, tn = map(int, tile.split("x"))
    return math.ceil(mm / tm) * math.ceil(n / tn)


def rule(mm, n, k):
    """backend.c gemm_tile, in Python: 32x16 for every shape."""
    return "32x16"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profiles")
    ap.add_argument("models")
    ap.add_argument("--ks-inspect", default="build/release/engine/tools/ks-inspect")
    ap.add_argument("--nodes", action="store_true", help="print every node")
    a = ap.parse_args()
    files = os.listdir(a.profiles)
    models = sorted({f.split(".")[0] for f in files if f.endswith(".32x32.txt")})
    print("| model | mode | nodes | " + " | ".join(TILES) + " | best per node | rule |")
    print("|---|---|---:|" + "---:|" * (len(TILES) + 2))
    for model in models:
        path = os.path.join(a.models, model + ".ksm")
        if not os.path.exists(path):  # a pack.py folder: MODEL/model.ksm
            path = os.path.join(a.models, model, "model.ksm")
        sh = shapes(a.ks_inspect, path)
        for mode in ("f32", "fp16"):
            prof = {t: profile(os.path.join(a.profiles, f"{model}.{mode}.{t}.txt")) for t in TILES}
            nodes = sorted(prof["32x32"])
            if not nodes:
                continue
            tot = {t: sum(prof[t].get(i, (None, 0.0))[1] for i in nodes) for t in TILES}
            best = 0.0
            ruled = 0.0
            for i in nodes:
                times = {t: prof[t][i][1] for t in TILES if i in prof[t]}
                bt = min(times, key=times.get)
                best += times[bt]
                mm, n, k = sh.get(i, (0, 0, 0))
                r = rule(mm, n, k)
                ruled += times.get(r, times["32x32"])
                if a.nodes:
                    print(f"  {model} {mode} #{i} M={mm} N={n} K={k} groups32={groups(mm, n, '32x32')} "
                          + " ".join(f"{t}:{times.get(t, 0) * 1000:.1f}" for t in TILES)
                          + f" best {bt} rule {r}", file=sys.stderr)
            print(f"| {model} | {mode} | {len(nodes)} | "
                  + " | ".join(f"{tot[t]:.3f}" for t in TILES) + f" | {best:.3f} | {ruled:.3f} |")


if __name__ == "__main__":
    main()
