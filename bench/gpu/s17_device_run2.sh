#!/bin/bash
# Second device call (seventeenth session): Vulkan tuning and quantized models on the GPU.
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json LD_LIBRARY_PATH=$PWD/.dev/gpu
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
B=.dev/gpu/ks-bench; M=.dev/gpu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
j() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print("%.4f %s reshape %.1f" % (d["median_ms"], d["backend"], d["reshape_ms"]))'; }
echo "=== 1. tuning: plain / first tuned process (times) / second (from the file)"
rm -f /tmp/tc*
for r in 1 2; do
for m in yolox_nano nanodet_m selfie_segmentation pose_landmark_heavy face_detection_short_range; do
  a=$($B $M/$m.ksm --backend vulkan --runs 100 --json 2>/dev/null | j)
  [ $r = 1 ] && rm -f /tmp/tc_$m*
  b=$($B $M/$m.ksm --backend vulkan --runs 100 --json --tune fast --tune-cache /tmp/tc_$m 2>/dev/null | j)
  c=$($B $M/$m.ksm --backend vulkan --runs 100 --json --tune fast --tune-cache /tmp/tc_$m 2>/dev/null | j)
  echo "round $r | $m | plain $a | tuned $b | tuned again $c | direct $(grep -c direct$ /tmp/tc_$m.vktune) of $(( $(wc -l < /tmp/tc_$m.vktune) - 1 ))"
done
done
echo "--- a tune file"; head -5 /tmp/tc_yolox_nano.vktune
echo "=== 2. quantized models: cpu (int8) / vulkan (dequantized) / fp16 / auto"
for r in 1 2; do
for m in mobilenet_v2_1.0_224_quant deeplabv3_mnv2_pascal_quant movenet_single_pose_lightning_ptq; do
  for cfg in "--backend cpu" "--backend cpu --precision f32" "--backend vulkan" "--backend vulkan --precision fp16" "--backend auto"; do
    echo "round $r | $m | $cfg | $($B $M/$m.ksm $cfg --runs 50 --json 2>/dev/null | j)"
  done
done
done
$B $M/movenet_single_pose_lightning_ptq.ksm --backend vulkan --runs 30 --profile 2>&1 | sed -n '/per-op/,/total/p'
echo "=== 3. test_vulkan on the NVIDIA driver"
timeout 300 $M/test_vulkan 2>&1 | grep -E "^\[  |OK \]|FAIL|tuning pass|PASSED|SKIPPED \]" | head -70
