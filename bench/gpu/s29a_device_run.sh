#!/bin/bash
# Twenty-ninth session: conv2d_wide (few outputs, long K: one work group per output element)
# against the build before it (.dev/s28/ks-bench), alternated, on every benchmark model in fp32
# and fp16 arithmetic; then the per-node profile of UltraFace with it. Carry
# [".gl", ".dev/s27/m", ".dev/s28", ".dev/s29"].
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2 3; do
  for m in .dev/s27/m/*.ksm; do
    n=$(basename $m .ksm)
    for pr in f32 fp16; do
      for b in s28 s29; do
        echo "$round $n $pr $b $(.dev/$b/ks-bench $m --backend vulkan --precision $pr --runs 200 2>&1 | grep -E '^latency')"
      done
    done
  done
done
.dev/s29/ks-bench .dev/s27/m/ultraface_rfb320.ksm --backend vulkan --runs 100 --profile-nodes | head -40
