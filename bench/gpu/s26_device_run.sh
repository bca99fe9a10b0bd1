#!/bin/bash
# Twenty-sixth session, one device call: convolutions on cooperative matrices (conv2d_coop.comp,
# VK_NV_cooperative_matrix) in the fp16 arithmetic mode, against the tiled GEMM shader of the same
# mode (KS_VK_COOP=0 switches the cooperative path off): (1) accuracy: ks-run's outputs of both
# against the CPU's fp32 outputs (relative L2, bench/gpu/s26_compare.py); (2) speed: ks-bench
# --backend vulkan --precision fp16, both alternated in 3 rounds of 100 runs, and fp32 beside;
# (3) where the time goes (--profile, heavy models); (4) tuning picks among coop, gemm and direct.
# Carried (git-ignored): .gl (the Vulkan loader package) and .dev/s26: ks-bench and ks-run of this
# build, m/KEY.ksm (the GPU set, ks-convert --weights int8 to fit the transfer), in/KEY.npy (seeded
# uniform inputs).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
D=.dev/s26
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
MODELS="ultraface_rfb320 yunet_s_640 yolox_nano nanodet_m blazeface_short facemesh blazepose_lite blazepose_full blazepose_heavy selfie_seg"
echo "=== 1. accuracy: rel L2 to the CPU fp32 outputs: [coop fp16] [gemm fp16] [vulkan fp32]"
for m in $MODELS; do
  $D/ks-run $D/m/$m.ksm --input $D/in/$m.npy --output-dir /tmp/o/$m/cpu > /dev/null 2>&1
  $D/ks-run $D/m/$m.ksm --input $D/in/$m.npy --output-dir /tmp/o/$m/coop --backend vulkan --precision fp16 > /tmp/o_$m.log 2>&1 || tail -3 /tmp/o_$m.log
  KS_VK_COOP=0 $D/ks-run $D/m/$m.ksm --input $D/in/$m.npy --output-dir /tmp/o/$m/gemm --backend vulkan --precision fp16 > /dev/null 2>&1
  $D/ks-run $D/m/$m.ksm --input $D/in/$m.npy --output-dir /tmp/o/$m/f32 --backend vulkan > /dev/null 2>&1
  python3 bench/gpu/s26_compare.py $m /tmp/o/$m/cpu /tmp/o/$m/coop /tmp/o/$m/gemm /tmp/o/$m/f32
done
echo "=== 2. speed: median ms of 100 runs, fp16 coop / fp16 gemm (KS_VK_COOP=0) / fp32, 3 rounds"
med() { "$@" --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["median_ms"])'; }
for r in 1 2 3; do
  for m in $MODELS; do
    a=$(med $D/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 100)
    b=$(KS_VK_COOP=0 med $D/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 100)
    c=$(med $D/ks-bench $D/m/$m.ksm --backend vulkan --runs 100)
    echo "r$r $m coop $a gemm $b f32 $c"
  done
done
echo "=== 3. profile (fp16), per op: coop then gemm"
for m in blazepose_heavy yolox_nano; do
  $D/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 50 --profile 2>&1 | sed -n '/per-op/,/total/p;/^device/,+1p'
  KS_VK_COOP=0 $D/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 50 --profile 2>&1 | sed -n '/per-op/,/total/p'
done
echo "=== 4. tuning (fp16, --tune full, a tune cache): picks per kernel, then plain medians"
for m in blazepose_heavy yolox_nano selfie_seg; do
  rm -f /tmp/t_$m.*
  $D/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 100 --tune full --tune-cache /tmp/t_$m --profile 2>&1 | sed -n '/per-op/,/total/p' | grep -E "conv|total"
  cut -f2 /tmp/t_$m.vktune 2>/dev/null | sort | uniq -c
done
