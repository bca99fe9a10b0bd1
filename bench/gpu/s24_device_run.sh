#!/bin/bash
# Twenty-fourth session, one device call on the GPU machine's AVX-512 Xeon host CPU: (1) the
# image sampler's unit tests, which compare the new AVX-512 path (and the AVX2 one) with the
# scalar reference bit for bit, and the smoother test; (2) face_landmarks (issue 17's per-stage
# split, one thread, pinned) of the previous build (old) and this one (new) alternated in three
# rounds; (3) ks-imgbench's crops with the AVX-512 sampler, the AVX2 one (KS_ISA_MAX=avx2) and
# the previous build; (3b) the other task calls once each; (4) the face mesh model alone.
# Carried (git-ignored): .dev/s24 (new/ and old/ ks-taskbench + ks-imgbench, new/ test binaries
# and ks-bench, the shared libraries, bundles/, facemesh.ksm, skimage_astronaut.png).
D=$PWD/.dev/s24
export LD_LIBRARY_PATH=$D/lib
lscpu | grep -E "Model name"; grep -o -w -E "avx512f|avx512_vnni|avx2" /proc/cpuinfo | sort | uniq -c
echo "=== 1. tests"
for t in test_imgproc test_vision_tracking; do
    if $D/new/$t > /tmp/$t.log 2>&1; then echo "PASS $t"; else echo "FAIL $t"; tail -30 /tmp/$t.log; fi
done
echo "=== 2. face_landmarks, interleaved rounds (old: previous main d5eeacd, new: this build), JSON per mode"
tb() { taskset -c 3 $D/$1/ks-taskbench --json --task $2 --runs 200 --threads 1 --models $D/bundles \
      --image $D/skimage_astronaut.png 2>/dev/null | sed "s/^/$1 r$3 /"; }
for r in 1 2 3; do for s in old new; do tb $s face_landmarks $r; done; done
echo "=== 3. ks-imgbench (median ms of 3 rounds of 300 calls): AVX-512, KS_ISA_MAX=avx2, old"
for r in 1; do
    echo "-- round $r new (AVX-512)"; taskset -c 3 $D/new/ks-imgbench --runs 300 --rounds 3 | grep -E "face_crop|seg |pose_crop"
    echo "-- round $r new KS_ISA_MAX=avx2"; KS_ISA_MAX=avx2 taskset -c 3 $D/new/ks-imgbench --runs 300 --rounds 3 | grep -E "face_crop|seg |pose_crop"
    echo "-- round $r old"; taskset -c 3 $D/old/ks-imgbench --runs 300 --rounds 3 | grep -E "face_crop|seg |pose_crop"
done
echo "=== 4. face mesh model alone (ks-bench, 1 thread), 3 rounds"
for r in 1 2 3; do
  taskset -c 3 $D/new/ks-bench $D/facemesh.ksm --threads 1 --runs 300 --json 2>/dev/null | tail -1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print("facemesh r'$r' median %.4f min %.4f" % (d["median_ms"], d["min_ms"]))'
done
echo "=== 3b. the other tasks, one round each, old then new"
for t in face_detect pose segment; do for s in old new; do tb $s $t 1; done; done
