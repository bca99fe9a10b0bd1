#!/bin/bash
# Twenty-seventh session, fourth device call: the face mesh with attention in the fp16 modes, its
# MediaPipe transforms now on the device as nodes kept in fp32 (1 partition) against the
# twenty-sixth session's build (those nodes on the host: 4 partitions); fp32 beside. Medians of
# 200 runs, 3 alternated rounds; then the new build's --profile device line per mode.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
D=.dev/s27
M=$D/m/face_landmark_with_attention.ksm
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
med() { "$@" --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["median_ms"])'; }
for r in 1 2 3; do
  for pr in fp16 fp16-storage f32; do
    a=$(med $D/ks-bench $M --backend vulkan --precision $pr --runs 200)
    b=$(med $D/ks-bench-s26 $M --backend vulkan --precision $pr --runs 200)
    echo "r$r $pr new $a s26 $b"
  done
done
for pr in fp16 fp16-storage f32; do
  echo "--- new $pr"; $D/ks-bench $M --backend vulkan --precision $pr --runs 100 --profile 2>&1 | grep -A1 "^device"
  echo "--- s26 $pr"; $D/ks-bench-s26 $M --backend vulkan --precision $pr --runs 100 --profile 2>&1 | grep -A1 "^device"
done
echo "--- CPU, 1 thread"; $D/ks-bench $M --runs 200 2>&1 | grep latency
