#!/bin/bash
# Twenty-sixth session, third device call: cooperative matrices as a tuning candidate (not the
# default): fp16 mode, --tune full with a tune cache (timed), then the same cache read back (no
# timing), against --tune off; which shader each convolution got (the tune file's values) and the
# run medians. Carried: .gl, .dev/s26 (new/ks-bench, m/).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
D=.dev/s26
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
med() { "$@" --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.4f ms (reshape %.1f ms)" % (d["median_ms"], d["reshape_ms"]))'; }
for m in blazepose_heavy yolox_nano ultraface_rfb320 selfie_seg; do
  rm -f /tmp/t_$m.*
  echo "$m off:    $(med $D/new/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 100)"
  echo "$m timed:  $(med $D/new/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 100 --tune full --tune-cache /tmp/t_$m)"
  echo "$m cached: $(med $D/new/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 100 --tune full --tune-cache /tmp/t_$m)"
  echo "$m picks: $(tail -n +2 /tmp/t_$m.vktune | cut -f2 | sort | uniq -c | tr '\n' ' ')"
  $D/new/ks-bench $D/m/$m.ksm --backend vulkan --precision fp16 --runs 30 --tune full --tune-cache /tmp/t_$m --profile 2>&1 | sed -n '/per-op/,/total/p' | grep -E "conv2d "
done
