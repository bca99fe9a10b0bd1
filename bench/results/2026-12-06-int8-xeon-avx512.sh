#!/bin/bash
# The new AVX2 kernels on the Xeon host (AVX-512): the quantized models as stored and at f32,
# one thread, and the per-op rows of the kernels this session added.
export LD_LIBRARY_PATH=$PWD/.dev/cpu
B=.dev/cpu/ks-bench
lscpu | grep "Model name"
for r in 1 2; do
for m in deeplabv3_mnv2_pascal_quant movenet_single_pose_lightning_ptq mobilenet_v2_1.0_224_quant pose_detection; do
  for p in stored f32; do
    v=$(taskset -c 2 $B .dev/cpu/$m.ksm --runs 30 --precision $p --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])')
    echo "round $r | $m | $p | $v ms"
  done
done
done
for m in deeplabv3_mnv2_pascal_quant movenet_single_pose_lightning_ptq pose_detection; do
  echo "--- $m profile (stored)"
  taskset -c 2 $B .dev/cpu/$m.ksm --runs 20 --profile 2>&1 | sed -n '/per-op/,/total/p' | head -14
done
