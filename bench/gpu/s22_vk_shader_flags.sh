#!/bin/bash
# Twenty-second session: do the -g0 -Os, LEB128-embedded shaders run as fast as before on the
# H200? Kestrel Vulkan fp32, the twentieth session's ks-bench (old shaders) and this session's
# (new) alternated per model, 3 rounds, plain medians of 100 runs. Carried (git-ignored):
# .dev/s22g (old/ks-bench, new/ks-bench, their libraries, m/ = the bench/peers models as in
# s20_device_run.sh) and .gl (bench/gpu/README.md).
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json LD_LIBRARY_PATH=$PWD/.dev/s22g
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for m in ultraface_rfb320 yunet_s_640 yolox_nano nanodet_m blazeface_short facemesh blazepose_lite blazepose_full selfie_seg; do
  for r in 1 2 3; do for b in old new; do
    .dev/s22g/$b/ks-bench .dev/s22g/m/$m.ksm --backend vulkan --runs 100 --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print("'$m' r'$r' '$b' median %.4f min %.4f" % (d["median_ms"], d["min_ms"]))'
  done; done
done
