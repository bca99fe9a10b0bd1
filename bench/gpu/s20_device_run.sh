#!/bin/bash
# Twentieth session, one device call: (1) Kestrel Vulkan per model: dispatches per run and the
# time outside the kernels (ks-bench --profile's device line), with plain medians beside it;
# (2) the task calls on the host CPU (Xeon, AVX-512), one thread, issue 17's per-stage split.
# Run on the device machine with .dev/s20 and .gl carried (git-ignored). .dev/s20 holds ks-bench
# and ks-taskbench from build/release with libsodium.so.23, libjpeg.so.62, libstb.so.0 and
# libcjson.so.1 beside them; m/NAME.ksm, the bench/peers models converted with `ks-convert
# --weights int8` (decoded to fp32 at load; only to fit the 64 MiB transfer); bundles/ with
# face_detector_short, face_landmarker, selfie_segmenter and hand_landmarker_full .ksb; and
# skimage_astronaut.png. .gl: the Vulkan loader packages (bench/gpu/README.md). Output of the
# 2026-12-06 run: docs/benchmarks-gpu.md and docs/benchmarks.md (twentieth session).
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json LD_LIBRARY_PATH=$PWD/.dev/s20
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
B=.dev/s20/ks-bench; M=.dev/s20/m
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
lscpu | grep "Model name"
echo "=== 1. Vulkan fp32: plain median (100 runs), then --profile (50 runs): device line"
for m in ultraface_rfb320 yunet_s_640 yolox_nano nanodet_m blazeface_short facemesh blazepose_lite blazepose_full blazepose_heavy selfie_seg; do
  $B $M/$m.ksm --backend vulkan --runs 100 --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print("'$m' plain median %.4f ms" % d["median_ms"])'
  $B $M/$m.ksm --backend vulkan --runs 50 --profile --json 2>/dev/null > /tmp/p_$m.txt
  grep -A1 "^device" /tmp/p_$m.txt
  tail -1 /tmp/p_$m.txt | python3 -c 'import json,sys; d=json.load(sys.stdin); print("'$m' json", json.dumps(d.get("device")), "median %.4f" % d["median_ms"])'
done
echo "=== 1b. the same, fp16 storage"
for m in yolox_nano blazepose_heavy selfie_seg; do
  $B $M/$m.ksm --backend vulkan --precision fp16-storage --runs 50 --profile --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print("'$m' fp16s", json.dumps(d.get("device")), "median %.4f" % d["median_ms"])'
done
echo "=== 1c. where the dispatches go (yolox_nano, per op)"
sed -n '/per-op/,/total/p' /tmp/p_yolox_nano.txt
echo "=== 2. task calls on the host CPU, one thread, 640x480 NV21 (ks-taskbench)"
T=.dev/s20/ks-taskbench
for r in 1 2; do
for t in face_detect face_landmarks segment hands; do
  taskset -c 3 $T --task $t --runs 200 --threads 1 --models .dev/s20/bundles --image .dev/s20/skimage_astronaut.png 2>&1 | grep -E "^\| $t |stage|preprocess|inference|post" | head -12
done
done
echo "=== 2b. model alone: face_landmark, one thread"
for r in 1 2 3; do taskset -c 3 $B $M/facemesh.ksm --runs 300 --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print("facemesh cpu 1T median %.4f min %.4f" % (d["median_ms"], d["min_ms"]))'; done
