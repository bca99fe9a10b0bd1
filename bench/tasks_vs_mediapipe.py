#!/usr/bin/env python3
"""Kestrel's task APIs side by side with MediaPipe's legacy solutions, on the same 640x480 frame.

Both are timed in one run, on one core when the whole script is pinned (the thread count of
MediaPipe's legacy graphs cannot be set; pinning matches them):

    taskset -c 0 .venv/bin/python bench/tasks_vs_mediapipe.py \
        --taskbench build/release/bench/ks-taskbench [--runs 30] [--rounds 3] [--json OUT.json]

Kestrel is timed by ks-taskbench (--json, one thread) on the NV21 frame an Android camera would
give and on the RGB frame; MediaPipe gets the RGB frame (its legacy API takes RGB arrays only).
The frame is ks-taskbench's own (--dump-frame), so every engine sees the same pixels. Modes:
face detection per image (no tracking), the landmark tasks in video mode (static_image_mode=False
against Kestrel's VIDEO mode, steady-state tracking on a repeated frame), selfie segmentation as a
stream. Medians of --runs calls after 3 warm-up calls, in --rounds interleaved rounds (Kestrel
NV21, Kestrel RGB, MediaPipe per round; the median round is reported). Not a test: it prints a
markdown table and, with --json, writes the numbers.

Needs mediapipe 0.10.21 (scripts/requirements-golden.txt) and, for its `solutions` package,
opencv-python-headless and matplotlib (bench/requirements-mediapipe.txt).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

WARMUP = 3

# (row, ks-taskbench task, Kestrel mode, MediaPipe solution factory name)
ROWS = [
    ("face detection (short range)", "face_detect", "IMAGE", "face_detection"),
    ("face landmarks (1 face, video)", "face_landmarks", "VIDEO", "face_mesh"),
    ("pose (full, video)", "pose", "VIDEO", "pose"),
    ("hands (full, video)", "hands", "VIDEO", "hands"),
    ("selfie segmentation (general)", "segment", "VIDEO", "selfie_segmentation"),
]


def read_ppm(path):
    with open(path, "rb") as f:
        data = f.read()
    parts = data.split(b"\n", 3)
    if parts[0] != b"P6" or parts[2] != b"255":
        raise SystemExit(f"{path}: not a binary 8-bit PPM")
    w, h = (int(v) for v in parts[1].split())
    return np.frombuffer(parts[3][: w * h * 3], np.uint8).reshape(h, w, 3).copy()


def make_solution(name):
    from mediapipe.python import solutions as mps

    if name == "face_detection":
        return mps.face_detection.FaceDetection(model_selection=0, min_detection_confidence=0.5)
    if name == "face_mesh":
        return mps.face_mesh.FaceMesh(static_image_mode=False, max_num_faces=1,
                                      refine_landmarks=False)
    if name == "pose":
        return mps.pose.Pose(static_image_mode=False, model_complexity=1,
                             enable_segmentation=False)
    if name == "hands":
        return mps.hands.Hands(static_image_mode=False, max_num_hands=2, model_complexity=1)
    if name == "selfie_segmentation":
        return mps.selfie_segmentation.SelfieSegmentation(model_selection=0)
    raise ValueError(name)


def time_mediapipe(name, frame, runs):
    sol = make_solution(name)
    times = []
    for i in range(WARMUP + runs):
        t0 = time.perf_counter()
        sol.process(frame)
        dt = (time.perf_counter() - t0) * 1e3
        if i >= WARMUP:
            times.append(dt)
    sol.close()
    return statistics.median(times)


def time_kestrel(taskbench, task, mode, fmt, runs):
    out = subprocess.run([taskbench, "--json", "--threads", "1", "--runs", str(runs), "--format",
                          fmt, "--task", task], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        d = json.loads(line)
        if d["mode"] == mode:
            return d
    raise SystemExit(f"ks-taskbench gave no {task} {mode} row")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--taskbench", required=True, help="path of ks-taskbench")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=5,
                    help="interleaved rounds (Kestrel NV21, Kestrel RGB, MediaPipe) per task; "
                         "the table has the median of the rounds' medians")
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args()
    if not 1 <= args.runs <= 1000 or not 1 <= args.rounds <= 20:
        raise SystemExit("--runs must be 1..1000 and --rounds 1..20")
    with tempfile.TemporaryDirectory() as tmp:
        ppm = os.path.join(tmp, "frame.ppm")
        subprocess.run([args.taskbench, "--dump-frame", ppm], check=True)
        frame = read_ppm(ppm)
    affinity = sorted(os.sched_getaffinity(0))
    results = []
    for row, task, mode, mp_name in ROWS:
        nv21, rgb, mp, inf = [], [], [], []
        for _ in range(args.rounds):  # interleaved, so drift on a shared machine hits all three
            d = time_kestrel(args.taskbench, task, mode, "nv21", args.runs)
            nv21.append(d["total_ms"])
            inf.append(d["inference_ms"])
            rgb.append(time_kestrel(args.taskbench, task, mode, "rgb", args.runs)["total_ms"])
            mp.append(time_mediapipe(mp_name, frame, args.runs))
        med = statistics.median
        results.append({"task": task, "mode": mode, "row": row, "mediapipe_ms": med(mp),
                        "kestrel_nv21_ms": med(nv21), "kestrel_rgb_ms": med(rgb),
                        "kestrel_inference_ms": med(inf),
                        "ratio_per_round": [a / b for a, b in zip(nv21, mp)],
                        "ratio": med([a / b for a, b in zip(nv21, mp)])})
    print(f"CPUs: {affinity}; per round the median of {args.runs} calls after {WARMUP} warm-up "
          f"calls, median of {args.rounds} interleaved rounds; Kestrel 1 thread.\n")
    print("| task | Kestrel NV21 (ms) | Kestrel RGB (ms) | MediaPipe 0.10.21 RGB (ms) "
          "| Kestrel NV21 / MediaPipe (median of the rounds' ratios) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for r in results:
        ratio = r["ratio"]
        fmt = lambda v: f"{v:.2f}" if v is not None else "n/a"
        print(f"| {r['row']} | {fmt(r['kestrel_nv21_ms'])} | {fmt(r['kestrel_rgb_ms'])} | "
              f"{fmt(r['mediapipe_ms'])} | {fmt(ratio)}x |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpus": affinity, "runs": args.runs, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
