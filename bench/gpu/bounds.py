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
import subprocess

ROW = re.compile(r"^\s*(\d+)\s+(\S+)\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")


def shapes(inspect, model):
    out = subprocess.run([inspect, model, "--nodes"], capture_output=True, text=True,
                         check=True).stdout
    shape, nodes, graph_in = {}, {}, None
    for line in out.splitlines():
        m = re.match(r"input \d+: \S+ \w+ \[([\d,]+)\]", line)
        if m and graph_in is None:
            graph_in = [int(x) for x in m.group(1).split(",")]
        if not line.startswith("#"):
            continue
        idx = int(line[1:].split()[0])
        dm = re.search(r"\[([\d,]*)\]", line)
        om = re.search(r" out=([\d,]+)", line)
        im = re.search(r" in=([\d,-]+)", line)
        ipm = re.search(r" ip=([-\d,]+)", line)
        fm = re.search(r"flops=(\d+)", line)
        dims = [int(x) for x in dm.group(1).split(",") if x] if dm else []
        outs = [int(x) for x in om.group(1).split(",")] if om else []
        ins = [int(x) for x in im.group(1).split(",") if x and x != "-1"] if im else []
        for t in outs:
            shape[t] = dims
        nodes[idx] = dict(dims=dims, ins=ins, outs=outs,
                          ip=[int(x) for x in ipm.group(1).split(",")] if ipm else [],
                          flops=int(fm.group(1)) if fm else 0)
    for n in nodes.values():
        n["in_dims"] = [shape.get(t, graph_in if i == 0 else None) for i, t in
                        enumerate(n["ins"][:1])]
    return nodes


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
        name, mode = os.path.basename(f)[:-4].rsplit(".", 1)
        model = os.path.join(a.models, name + ".ksm")
        if not os.path.exists(model):
            continue
        nodes = shapes(a.inspect, model)
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
            x = n["in_dims"][0] if n["in_dims"] else None
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
