#!/usr/bin/env python3
"""ks-taskbench of two builds side by side (e.g. main before and after a change), one thread, in
interleaved rounds so that drift on a shared machine hits both alike.

    taskset -c 0 python3 bench/tasks_before_after.py --old /tmp/base/build/bench/ks-taskbench \\
        --new build/release/bench/ks-taskbench [--runs 15] [--rounds 5] [--task face_detect,...]

The old binary may predate --json, --threads and --format: its markdown row is parsed (IMAGE 1T
and VIDEO 1T columns) and it runs on RGB frames. The new one runs on RGB and NV21. Bundles of
the detect and classify tasks are taken from --new-models when the old build has none. Prints a
markdown table: medians over the rounds of each round's median call.
"""
import argparse
import json
import os
import statistics
import subprocess

TASKS = ["face_detect", "face_landmarks", "pose", "hands", "segment", "detect", "classify"]


def old_run(binary, task, runs, models):
    cmd = [binary, "--task", task, "--runs", str(runs)]
    if models:
        cmd += ["--models", models]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    rows = [l for l in out.splitlines() if l.startswith("| " + task + " ")]
    if not rows:
        return None
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    try:
        return {"IMAGE": float(cells[2].split()[0]), "VIDEO": float(cells[4].split()[0])}
    except (ValueError, IndexError):
        return None


def new_run(binary, task, runs, fmt):
    out = subprocess.run([binary, "--task", task, "--runs", str(runs), "--threads", "1", "--json",
                          "--format", fmt], capture_output=True, text=True, check=True).stdout
    return {json.loads(l)["mode"]: json.loads(l) for l in out.splitlines()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--new-models", help="bundles for old-build tasks without their own")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--task", help="comma-separated subset")
    args = ap.parse_args()
    tasks = args.task.split(",") if args.task else TASKS
    new_models = args.new_models or os.path.join(os.path.dirname(os.path.dirname(args.new)),
                                                 "bundles")
    med = statistics.median
    print("| task | mode | before, RGB | now, RGB | now, NV21 | NV21: models | "
          "NV21: total / models | before / now (RGB) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for t in tasks:
        old, rgb, nv21 = [], [], []
        for _ in range(args.rounds):
            o = old_run(args.old, t, args.runs, None) or old_run(args.old, t, args.runs, new_models)
            if o:
                old.append(o)
            rgb.append(new_run(args.new, t, args.runs, "rgb"))
            nv21.append(new_run(args.new, t, args.runs, "nv21"))
        for mode in ("IMAGE", "VIDEO"):
            o = med(x[mode] for x in old) if old else float("nan")
            r = med(x[mode]["total_ms"] for x in rgb)
            n = med(x[mode]["total_ms"] for x in nv21)
            inf = med(x[mode]["inference_ms"] for x in nv21)
            ratio = med(x[mode]["total_ms"] / x[mode]["inference_ms"] for x in nv21)
            print(f"| {t} | {mode} | {o:.1f} | {r:.2f} | {n:.2f} | {inf:.2f} | {ratio:.2f} | "
                  f"{o / r:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
