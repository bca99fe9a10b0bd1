#!/bin/bash
# Twenty-eighth session, first device call: where the GPU time goes, per node, on every model of
# the benchmark set (fp32 and fp16 arithmetic), to bound what the shaders not built yet could gain
# (Winograd for 3x3 stride-1 one-group convolutions, subgroup reductions for SOFTMAX / REDUCE /
# global pooling, a packed layout for channels not in fours): each is at most the time of the
# nodes it would replace. Per-node rows into $OUT, one file per model and mode.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
B=.dev/s28/ks-bench
for m in .dev/s27/m/*.ksm; do
  n=$(basename $m .ksm)
  for pr in f32 fp16; do
    $B $m --backend vulkan --precision $pr --runs 100 --profile-nodes > $OUT/$n.$pr.txt 2>&1
    echo "$n $pr $(grep -E '^latency' $OUT/$n.$pr.txt) | $(grep -A1 '^device' $OUT/$n.$pr.txt | tr '\n' ' ')"
  done
done
