#!/bin/bash
# Thirtieth session, first device call: conv2d_gemm's tiles (specialization constants) and
# PREFETCH, and pool2d_wide's 256 invocations with subgroup reductions. (1) per-node profiles of
# every benchmark model with each tile forced (KS_VK_TILE), with PREFETCH off (KS_VK_PREFETCH=0),
# and with the portable pool reduction (KS_VK_SUBGROUP=0), fp32: the data
# for the cost model's tile rule (bench/gpu/tiles.py); (2) the new build against the session's
# starting build (.dev/s30/base/ks-bench), alternated, whole models, one round, last (a timeout may cut it); (3) bench/gpu/run.py
# (Kestrel against ncnn) on the folder bench/gpu/pack.py made (.dev/gpu, with this build's
# libkestrel.so and the .ksm files the two steps above time: weights stored as int8 codes,
# decoded to fp32 at load). Carry [".gl", ".dev/gpu", ".dev/s30"]; the profiles come back as
# $OUT/profiles.tgz, run.py's results as $OUT/gpu.json.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
N=.dev/s30/new/ks-bench
B=.dev/s30/base/ks-bench
P=$OUT/p; mkdir -p $P
for m in .dev/gpu/*/model.ksm; do
  n=$(basename $(dirname $m))
  for t in 32x32 16x32 32x16 16x16 64x32 32x64; do
    KS_VK_TILE=$t $N $m --backend vulkan --runs 100 --profile-nodes > $P/$n.f32.$t.txt 2>&1
  done
  KS_VK_PREFETCH=0 $N $m --backend vulkan --runs 100 --profile-nodes > $P/$n.f32.nopf.txt 2>&1
  echo "$n $(grep -E '^latency' $P/$n.f32.32x32.txt)"
  (cd $OUT && tar czf profiles.tgz p)
done
for n in selfie_seg blazepose_heavy; do
  m=.dev/gpu/$n/model.ksm
  KS_VK_SUBGROUP=0 $N $m --backend vulkan --runs 100 --profile-nodes > $P/$n.f32.nosg.txt 2>&1
  $B $m --backend vulkan --runs 100 --profile-nodes > $P/$n.f32.base.txt 2>&1
done
(cd $OUT && tar czf profiles.tgz p && rm -rf p) # again after each model above: a timeout keeps them
echo "=== run.py"
pip install --no-deps --no-index --target /tmp/ncnn .dev/gpu/ncnn-*.whl > /dev/null 2>&1
LD_LIBRARY_PATH=$PWD/.dev/gpu PYTHONPATH=/tmp/ncnn python3 bench/gpu/run.py .dev/gpu --rounds 6 --out $OUT/gpu.json 2>&1 | tail -30
echo "=== A/B: base new, median ms of 200 runs"
for round in 1; do
  for m in .dev/gpu/*/model.ksm; do
    n=$(basename $(dirname $m))
    for pr in f32 fp16; do
      a=$($B $m --backend vulkan --precision $pr --runs 200 2>&1 | grep -E '^latency' | awk '{print $6}')
      b=$($N $m --backend vulkan --precision $pr --runs 200 2>&1 | grep -E '^latency' | awk '{print $6}')
      echo "$round $n $pr base $a new $b" | tee -a $OUT/ab.txt
    done
  done
done
