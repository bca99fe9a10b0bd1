#!/bin/bash
# Twenty-seventh session, second device call: why the vector-load shaders were slower in the fp16
# arithmetic mode on BlazePose full and heavy (s27_device_run.sh): KS_VK_VEC4 = both (unset),
# gemm (conv2d_gemm4 only), dw (conv2d_dw4 only), 0 (neither); medians of 100 runs in 3
# alternated rounds, fp16 and fp16-storage, and the per-op profile of heavy in fp16 for each.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
D=.dev/s27
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
med() { "$@" --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["median_ms"])'; }
for r in 1 2 3; do
  for m in blazepose_heavy blazepose_full yolox_nano; do
    for pr in fp16 fp16-storage; do
      line="r$r $m $pr"
      for v in both gemm dw 0; do
        if [ $v = both ]; then t=$(med $D/ks-bench $D/m/$m.ksm --backend vulkan --precision $pr --runs 100)
        else t=$(KS_VK_VEC4=$v med $D/ks-bench $D/m/$m.ksm --backend vulkan --precision $pr --runs 100); fi
        line="$line $v $t"
      done
      echo "$line"
    done
  done
done
echo "=== profile blazepose_heavy fp16 per op: both, gemm, dw, 0"
for v in both gemm dw 0; do
  echo "--- KS_VK_VEC4=$v"
  if [ $v = both ]; then $D/ks-bench $D/m/blazepose_heavy.ksm --backend vulkan --precision fp16 --runs 50 --profile 2>&1 | sed -n '/per-op/,/total/p'
  else KS_VK_VEC4=$v $D/ks-bench $D/m/blazepose_heavy.ksm --backend vulkan --precision fp16 --runs 50 --profile 2>&1 | sed -n '/per-op/,/total/p'; fi
done
