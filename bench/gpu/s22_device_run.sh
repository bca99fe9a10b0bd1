#!/bin/bash
# Twenty-second session, one device call: the task calls on the device host's CPU (Intel Xeon,
# AVX-512), one thread, issue 17's per-stage split, with the twentieth session's build beside
# this one in interleaved rounds; and selfie segmentation's model alone before and after the
# conv_before_resize pass. Carried (git-ignored): .dev/s22 (ks-taskbench and ks-bench from
# build/release, libsodium.so.23 libjpeg.so.62 libstb.so.0 libcjson.so.1, bundles/ with
# face_detector_short face_landmarker hand_landmarker_full selfie_segmenter .ksb,
# m/selfie_old.ksm (converted before the pass) m/selfie_new.ksm m/facemesh.ksm,
# skimage_astronaut.png) and .dev/s20t (the twentieth session's ks-taskbench, its libraries and
# bundles but the hand landmarker's, which did not change and is taken from .dev/s22 there).
cp .dev/s22/bundles/hand_landmarker_full.ksb .dev/s20t/bundles/
lscpu | grep -E "Model name"; grep -o -w -E "avx512f|avx512_vnni|avx2" /proc/cpuinfo | sort | uniq -c
run_tb() { # build task
  LD_LIBRARY_PATH=$PWD/.dev/$1 taskset -c 3 .dev/$1/ks-taskbench --json --task $2 --runs 200 --threads 1 \
    --models .dev/$1/bundles --image .dev/s22/skimage_astronaut.png 2>/dev/null
}
echo "=== 1. tasks, interleaved rounds (s20t: twentieth session's build, s22: this one), JSON per task and mode"
for r in 1 2 3; do
for t in face_detect face_landmarks segment hands; do
  for s in s20t s22; do run_tb $s $t | sed "s/^/$s r$r /"; done
done
done
echo "=== 2. selfie segmentation model alone (ks-bench, 1 thread), old / new conversion, 3 rounds"
for r in 1 2 3; do for m in selfie_old selfie_new facemesh; do
  LD_LIBRARY_PATH=$PWD/.dev/s22 taskset -c 3 .dev/s22/ks-bench .dev/s22/m/$m.ksm --runs 300 --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print("'$m' r'$r' median %.4f min %.4f" % (d["median_ms"], d["min_ms"]))'
done; done
