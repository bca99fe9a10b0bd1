#!/usr/bin/env python3
"""Upper bounds on what the Vulkan shaders not built yet could gain (issue 24, docs/vulkan.md).

Reads `ks-bench --backend vulkan --profile-nodes` outputs (one file per model and mode, as
bench/gpu/s28a_device_run.sh writes them: NAME.MODE.txt) and the node shapes of the same models
(`ks-inspect --nodes`), and sums the GPU time of the nodes each missing shader would replace:
  - Winograd: CONV2D with one group, a 3x3 kernel, stride 1, dilation 1;
  - subgroup reductions: SOFTMAX, the REDUCE ops and global pooling (vk_pool2d_wide);
  - a packed layout for channels not in fours: nodes that read or write a tensor whose last
    dimension is not a multiple of 4 (they run the scalar-load shaders).
A shader can at most remove its nodes' time, so each sum bounds its gain.

    bench/gpu/bounds.py --profiles DIR --models .dev/s27/m --inspect build/release/engine/tools/ks-inspect
"""
import argparse
import glob
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ksm_nodes import parse_nodes  # noqa: E402

ROW = re.compile(r"^\s*(\d+)\s+(\S+)\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profiles", required=True)
    ap.add_argument("--models", default=".dev/s27/m")
    ap.add_argument("--inspect", default="build/release/engine/tools/ks-inspect")
    a = ap.parse_args()
    print("| model | mode | run ms | kernels ms | dispatches | Winograd (3x3 s1 one-group convs) "
          "| subgroup reductions (softmax, reduce, global pool) | channels not in fours |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for f in sorted(glob.glob(os.path.join(a.profiles, "*.txt"))):
        stem = os.path.basename(f)[:-4]
        if "." not in stem:  # not a MODEL.MODE profile (a summary)
            continue
        name, mode = stem.rsplit(".", 1)
        model = os.path.join(a.models, name + ".ksm")
        if not os.path.exists(model):
            continue
        nodes = parse_nodes(a.inspect, model)
        text = open(f).read()
        lat = re.search(r"median ([\d.]+) ms", text)
        dev = re.search(r"^device\s+(.*)$", text, re.M)
        disp = re.search(r"(\d+) dispatches", text)
        kern = re.search(r"kernels? ([\d.]+) ms", text)
        wino = red = odd = total = 0.0
        nw = nr = no = 0
        on = False
        for line in text.splitlines():
            if line.startswith("per-node profile"):
                on = True
                continue
            m = ROW.match(line) if on else None
            if not m:
                continue
            idx, op, k, ms = int(m.group(1)), m.group(2), m.group(3), float(m.group(4))
            if not k.startswith("vk_"):
                continue
            total += ms
            n = nodes.get(idx)
            if not n:
                continue
            d = n["dims"]
            x = n["in0"]
            if op == "conv2d" and x and len(x) == 4 and len(d) == 4 and n["ip"][:4] == [1, 1, 1, 1] \
                    and len(n["ip"]) > 9 and n["ip"][9] == 1 and n["flops"]:
                kk = n["flops"] / (2 * math.prod(d) * x[3])
                if abs(kk - 9) < 1e-6:
                    wino += ms
                    nw += 1
            if op in ("softmax", "log_softmax", "mean", "sum", "reduce_max", "reduce_min",
                      "reduce_prod") or k == "vk_pool2d_wide":
                red += ms
                nr += 1
            if (d and d[-1] % 4) or (x and x[-1] % 4):
                odd += ms
                no += 1
        print(f"| {name} | {mode} | {lat.group(1) if lat else '?'} | "
              f"{kern.group(1) if kern else f'{total:.3f}'} | {disp.group(1) if disp else '?'} | "
              f"{wino:.3f} ({nw}) | {red:.3f} ({nr}) | {odd:.3f} ({no}) |")


if __name__ == "__main__":
    main()
