#!/bin/bash
# Twenty-seventh session, third device call (an experiment not kept: copy4.comp was reverted after it; run with the build that had it): copies in units of four elements (copy4.comp: CONCAT,
# SPLIT, TRANSPOSE... where the innermost run and every offset come in fours) against the element
# copy, everything else the same (KS_VK_VEC4 unset against KS_VK_VEC4=gemm,dw): (1) same bits,
# (2) medians of 100 runs, 3 alternated rounds, fp32 and fp16.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
D=.dev/s27
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
MODELS="yolox_nano nanodet_m yunet_s_640 ultraface_rfb320 blazepose_heavy selfie_seg"
echo "=== 1. same bits: copy4 vs element copy"
for m in $MODELS; do
  for pr in f32 fp16; do
    $D/ks-run $D/m/$m.ksm --input $D/in/$m.npy --output-dir /tmp/o/$m/$pr/a --backend vulkan --precision $pr > /dev/null 2>&1
    KS_VK_VEC4=gemm,dw $D/ks-run $D/m/$m.ksm --input $D/in/$m.npy --output-dir /tmp/o/$m/$pr/b --backend vulkan --precision $pr > /dev/null 2>&1
    python3 bench/gpu/same_outputs.py /tmp/o/$m/$pr/a /tmp/o/$m/$pr/b $m $pr
  done
done
echo "=== 2. speed: median ms of 100 runs: [copy4 f32] [element f32] [copy4 fp16] [element fp16], 3 rounds"
med() { "$@" --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["median_ms"])'; }
for r in 1 2 3; do
  for m in $MODELS; do
    a=$(med $D/ks-bench $D/m/$m.ksm --backend vulkan --runs 100)
    b=$(KS_VK_VEC4=gemm,dw med $D/ks-bench $D/m/$m.ksm --backend vulkan --runs 100)
    c=$(med $D/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 100)
    e=$(KS_VK_VEC4=gemm,dw med $D/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 100)
    echo "r$r $m c4_f32 $a c1_f32 $b c4_f16 $c c1_f16 $e"
  done
done
echo "=== 3. profile yolox_nano fp32: copy4, element"
$D/ks-bench $D/m/yolox_nano.ksm --backend vulkan --runs 50 --profile 2>&1 | sed -n '/per-op/,/total/p' | grep -E "copy|total"
KS_VK_VEC4=gemm,dw $D/ks-bench $D/m/yolox_nano.ksm --backend vulkan --runs 50 --profile 2>&1 | sed -n '/per-op/,/total/p' | grep -E "copy|total"
