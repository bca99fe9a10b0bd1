#!/bin/bash
# Thirtieth session, second device call: the fp16 modes with the tile rule (32x16) and PREFETCH,
# which the first call (s30a) measured in fp32 only, after a whole-model run showed BlazePose
# heavy fp16 at 5.13 ms (4.70 the session before) with 32x32 + PREFETCH. Per model: fp16 with
# each of {32x32, 32x16} x {PREFETCH on, off} (env switches of the same binary, the new default
# build in .dev/s30/new), then fp32 with the default; median of 200 runs, two rounds, and one
# per-node profile of the fp16 default. Carry [".gl", ".dev/s30"] (the five models copied from .dev/gpu into .dev/s30/m).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
N=.dev/s30/new/ks-bench
med() { "$@" 2>&1 | grep -E '^latency' | awk '{print $6}'; }
for round in 1 2; do
  for n in blazepose_heavy nanodet_m yolox_nano selfie_seg ultraface_rfb320; do
    m=.dev/s30/m/$n/model.ksm
    line="$round $n"
    for t in 32x32 32x16; do
      line="$line fp16_${t}_pf $(KS_VK_TILE=$t med $N $m --backend vulkan --precision fp16 --runs 200)"
      line="$line fp16_${t}_nopf $(KS_VK_TILE=$t KS_VK_PREFETCH=0 med $N $m --backend vulkan --precision fp16 --runs 200)"
    done
    line="$line f32_default $(med $N $m --backend vulkan --runs 200)"
    echo "$line" | tee -a $OUT/fp16.txt
  done
done
$N .dev/s30/m/blazepose_heavy/model.ksm --backend vulkan --precision fp16 --runs 100 --profile > $OUT/heavy_fp16_profile.txt 2>&1
KS_VK_PREFETCH=0 $N .dev/s30/m/blazepose_heavy/model.ksm --backend vulkan --precision fp16 --runs 100 --profile > $OUT/heavy_fp16_nopf_profile.txt 2>&1
