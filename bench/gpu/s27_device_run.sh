#!/bin/bash
# Twenty-seventh session, one device call: the convolutions with vector loads (conv2d_gemm4:
# conv2d_gemm.comp built with -DKS_VEC4, where ic % 4 == 0; conv2d_dw4: conv2d.comp built so,
# depthwise with four channels per invocation where channels % 4 == 0) against the scalar-load
# shaders (KS_VK_VEC4=0), same binary: (1) whether both give the same bits (ks-run outputs compared
# exactly, fp32 and fp16), (2) speed: ks-bench --backend vulkan medians of 100 runs,
# alternated in 3 rounds, fp32 and fp16, (3) per-op profile of the heavy models.
# Carried (git-ignored): .gl (the Vulkan loader package) and .dev/s27: ks-bench and ks-run of this
# build, m/KEY.ksm (the GPU set, ks-convert --weights int8 to fit the transfer), in/KEY.npy.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
D=.dev/s27
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
MODELS="ultraface_rfb320 yunet_s_640 yolox_nano nanodet_m blazeface_short facemesh blazepose_lite blazepose_full blazepose_heavy selfie_seg"
echo "=== 1. same bits: vec4 vs KS_VK_VEC4=0 outputs, fp32 and fp16"
for m in $MODELS; do
  for pr in f32 fp16; do
    $D/ks-run $D/m/$m.ksm --input $D/in/$m.npy --output-dir /tmp/o/$m/$pr/v4 --backend vulkan --precision $pr > /dev/null 2>&1
    KS_VK_VEC4=0 $D/ks-run $D/m/$m.ksm --input $D/in/$m.npy --output-dir /tmp/o/$m/$pr/v1 --backend vulkan --precision $pr > /dev/null 2>&1
    python3 bench/gpu/same_outputs.py /tmp/o/$m/$pr/v4 /tmp/o/$m/$pr/v1 $m $pr
  done
done
echo "=== 2. speed: median ms of 100 runs: [vec4 f32] [scalar f32] [vec4 fp16] [scalar fp16], 3 rounds"
med() { "$@" --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["median_ms"])'; }
for r in 1 2 3; do
  for m in $MODELS; do
    a=$(med $D/ks-bench $D/m/$m.ksm --backend vulkan --runs 100)
    b=$(KS_VK_VEC4=0 med $D/ks-bench $D/m/$m.ksm --backend vulkan --runs 100)
    c=$(med $D/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 100)
    e=$(KS_VK_VEC4=0 med $D/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 100)
    echo "r$r $m v4_f32 $a v1_f32 $b v4_f16 $c v1_f16 $e"
  done
done
echo "=== 3. profile (fp32), per op: vec4 then scalar"
for m in blazepose_heavy yolox_nano; do
  $D/ks-bench $D/m/$m.ksm --backend vulkan --runs 50 --profile 2>&1 | sed -n '/per-op/,/total/p;/^device/,+1p'
  KS_VK_VEC4=0 $D/ks-bench $D/m/$m.ksm --backend vulkan --runs 50 --profile 2>&1 | sed -n '/per-op/,/total/p'
done
