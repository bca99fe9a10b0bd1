#!/bin/bash
# One device call: Kestrel Vulkan on the real GPU (seventeenth session).
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json LD_LIBRARY_PATH=$PWD/.dev/gpu
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
B=.dev/gpu/ks-bench; M=.dev/gpu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
lscpu | grep "Model name"
echo "=== 1. selfie segmentation, per-node device profile (pool2d rows)"
$B $M/selfie_segmentation.ksm --backend vulkan --runs 50 --profile-nodes 2>&1 | head -45
echo "=== 2. AUTO across processes (tune cache /tmp/kc)"
rm -f /tmp/kc*
for m in yolox_nano selfie_segmentation face_detection_short_range; do
  for i in 1 2; do
    echo "--- $m process $i"
    s=$(date +%s%N); $B $M/$m.ksm --backend auto --tune-cache /tmp/kc --runs 20 2>&1 | grep -iE "auto|median|create|backend" | head -6; e=$(date +%s%N)
    echo "process wall $(( (e - s) / 1000000 )) ms"
  done
done
cat /tmp/kc.auto
echo "=== 3. medians, interleaved rounds: cpu / vulkan fp32 / fp16-storage / fp16"
$B $M/face_detection_short_range.ksm --backend vulkan --runs 3 --json 2>&1 | tail -2
for r in 1 2 3; do
  for m in selfie_segmentation yolox_nano nanodet_m pose_landmark_heavy pose_landmark_lite face_detection_short_range; do
    for cfg in "--backend cpu" "--backend vulkan" "--backend vulkan --precision fp16-storage" "--backend vulkan --precision fp16"; do
      v=$($B $M/$m.ksm $cfg --runs 50 --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["median_ms"], d["backend"], "create", d.get("create_ms"), "reshape", d.get("reshape_ms"))' 2>&1)
      echo "round $r | $m | $cfg | $v"
    done
  done
done
echo "=== 4. fp32 nodes inside fp16 (diagnostic) on the GPU"
for l in "" "0-999" "5-20"; do
  KS_VULKAN_FP32_NODES=$l $B $M/face_detection_short_range.ksm --backend vulkan --precision fp16-storage --runs 50 2>&1 | grep -i median | head -2
done
echo "=== 5. test_vulkan (shader families on the NVIDIA driver; model tests skip: no data)"
timeout 300 $M/test_vulkan 2>&1 | grep -E "RUN|OK|FAIL|PASSED|SKIPPED|rel L2" | sed 's/device upload.*//' | head -80
