#!/bin/bash
# Twenty-sixth session, second device call: K chunks of 32 with the next chunk's loads in flight
# during the current products (conv2d_gemm.comp and conv2d_coop.comp), against the first call's
# build (chunks of 16, no prefetch; .dev/s26/ks-bench) in alternated rounds: fp32, and fp16 with
# cooperative matrices (new also with KS_VK_COOP=0: the tiled GEMM); then the new build's accuracy
# against the CPU (bench/gpu/s26_compare.py). Carried: .gl, .dev/s26 (old binaries at the top,
# new/ the new ones; m/ and in/ as bench/gpu/s26_device_run.sh).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
D=.dev/s26
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
MODELS="ultraface_rfb320 yunet_s_640 yolox_nano nanodet_m blazeface_short facemesh blazepose_lite blazepose_full blazepose_heavy selfie_seg"
med() { "$@" --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["median_ms"])'; }
echo "=== 1. median ms of 100 runs: old f32, new f32, old fp16 coop, new fp16 coop, new fp16 gemm"
for r in 1 2 3; do
  for m in $MODELS; do
    a=$(med $D/ks-bench $D/m/$m.ksm --backend vulkan --runs 100)
    b=$(med $D/new/ks-bench $D/m/$m.ksm --backend vulkan --runs 100)
    c=$(med $D/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 100)
    d=$(med $D/new/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 100)
    e=$(KS_VK_COOP=0 med $D/new/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 100)
    echo "r$r $m old_f32 $a new_f32 $b old_coop $c new_coop $d new_gemm16 $e"
  done
done
echo "=== 2. new build, accuracy: rel L2 to the CPU fp32 outputs: [coop fp16] [gemm fp16] [vulkan fp32]"
for m in $MODELS; do
  $D/new/ks-run $D/m/$m.ksm --input $D/in/$m.npy --output-dir /tmp/o/$m/cpu > /dev/null 2>&1
  $D/new/ks-run $D/m/$m.ksm --input $D/in/$m.npy --output-dir /tmp/o/$m/coop --backend vulkan --precision fp16 > /dev/null 2>&1
  KS_VK_COOP=0 $D/new/ks-run $D/m/$m.ksm --input $D/in/$m.npy --output-dir /tmp/o/$m/gemm --backend vulkan --precision fp16 > /dev/null 2>&1
  $D/new/ks-run $D/m/$m.ksm --input $D/in/$m.npy --output-dir /tmp/o/$m/f32 --backend vulkan > /dev/null 2>&1
  python3 bench/gpu/s26_compare.py $m /tmp/o/$m/cpu /tmp/o/$m/coop /tmp/o/$m/gemm /tmp/o/$m/f32
done
echo "=== 3. profile, new: fp32 and fp16 coop, per op"
for m in blazepose_heavy yolox_nano; do
  $D/new/ks-bench $D/m/$m.ksm --backend vulkan --runs 50 --profile 2>&1 | sed -n '/per-op/,/total/p' | grep -E "conv|total"
  $D/new/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 50 --profile 2>&1 | sed -n '/per-op/,/total/p' | grep -E "conv|total"
done
