#!/bin/bash
# Twenty-seventh session, fifth device call (an experiment not kept: run with a build that had it): conv2d_gemm4 in the fp16 modes with its fp16 input
# read as two 32-bit words and unpacked (unpackHalf2x16) instead of f16vec4 loads (which were
# slower than the scalar shader: s27b). KS_VK_VEC4=gemm,gemm16,dw (vector GEMM in fp16 too)
# against KS_VK_VEC4=gemm,dw (the default: scalar GEMM in fp16); same bits checked, medians of
# 100 runs, 3 alternated rounds, fp16 and fp16-storage.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
D=.dev/s27
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for m in blazepose_heavy yolox_nano; do
  $D/ks-run $D/m/$m.ksm --input $D/in/$m.npy --output-dir /tmp/o/$m/a --backend vulkan --precision fp16 > /dev/null 2>&1
  KS_VK_VEC4=gemm,gemm16,dw $D/ks-run $D/m/$m.ksm --input $D/in/$m.npy --output-dir /tmp/o/$m/b --backend vulkan --precision fp16 > /dev/null 2>&1
  python3 bench/gpu/same_outputs.py /tmp/o/$m/a /tmp/o/$m/b $m fp16
done
med() { "$@" --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["median_ms"])'; }
for r in 1 2 3; do
  for m in blazepose_heavy blazepose_full yolox_nano yunet_s_640 selfie_seg; do
    for pr in fp16 fp16-storage; do
      a=$(KS_VK_VEC4=gemm,gemm16,dw med $D/ks-bench $D/m/$m.ksm --backend vulkan --precision $pr --runs 100)
      b=$(KS_VK_VEC4=gemm,dw med $D/ks-bench $D/m/$m.ksm --backend vulkan --precision $pr --runs 100)
      echo "r$r $m $pr vec_u32 $a scalar $b"
    done
  done
done
