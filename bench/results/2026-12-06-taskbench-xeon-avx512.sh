#!/bin/bash
# Kestrel's task calls on the device host's CPU (an Intel Xeon with AVX-512), one thread.
export LD_LIBRARY_PATH=$PWD/.dev/cpu
lscpu | grep -E "Model name|Flags" | sed 's/Flags:.*avx512f.*/Flags: ... avx512f .../'
B=.dev/cpu/ks-taskbench
for r in 1 2; do
for t in face_detect face_landmarks segment hands; do
  taskset -c 3 $B --task $t --runs 200 --threads 1 --models .dev/cpu/bundles --image .dev/cpu/skimage_astronaut.png 2>&1 | grep -E "^\| $t " 
done
done
