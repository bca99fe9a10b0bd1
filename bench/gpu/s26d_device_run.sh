#!/bin/bash
# Twenty-sixth session, fourth device call: models whose last host nodes moved to the device.
# The face mesh with attention (MediaPipe's transforms now on the device: 4 partitions -> 1) and
# RFB-320 without postprocessing (the atrous pattern folded by ks-convert: 3 partitions -> 1), each
# with the session's first build (old/, its own conversion) and this one (new/), alternated in 3
# rounds of ks-bench --backend vulkan --runs 200 (fp32), plus the CPU at 1 thread for scale.
# Carried: .gl, .dev/s26 (.dev/s26d: old/ and new/ ks-bench, m/*.ksm; the same face-mesh file for both).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
D=.dev/s26d
export LD_LIBRARY_PATH=$PWD/.dev/s26d/old
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
med() { "$@" --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.4f" % d["median_ms"])'; }
for r in 1 2 3; do
  echo "r$r fla old $(med $D/old/ks-bench $D/m/fla_old.ksm --backend vulkan --runs 200) new $(med $D/new/ks-bench $D/m/face_landmark_with_attention.ksm --backend vulkan --runs 200) cpu $(med $D/new/ks-bench $D/m/face_landmark_with_attention.ksm --runs 200)"
  echo "r$r rfbnp old $(med $D/old/ks-bench $D/m/rfbnp_old.ksm --backend vulkan --runs 200) new $(med $D/new/ks-bench $D/m/rfbnp_new.ksm --backend vulkan --runs 200) cpu $(med $D/new/ks-bench $D/m/rfbnp_new.ksm --runs 200)"
done
$D/new/ks-bench $D/m/face_landmark_with_attention.ksm --backend vulkan --runs 50 --profile 2>&1 | grep -A1 "^device"
$D/old/ks-bench $D/m/fla_old.ksm --backend vulkan --runs 50 --profile 2>&1 | grep -A1 "^device"
