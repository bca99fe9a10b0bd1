#!/bin/bash
# Twenty-third session, on the GPU machine's AVX-512 Xeon host CPU: (1) the kernel unit tests that
# exercise the AVX-512 variants changed this session (SiLU, smallc, pad / concat copies,
# transposes), which this AVX2-only workstation cannot run; (2) YOLOX-nano at 1 thread, the
# ks-bench before the SiLU change (old) and after (new) alternated, 3 rounds. Carried
# (git-ignored): .dev/s23 (the test binaries, ks-bench, ks-bench-old, libcmocka, libsodium,
# yolox.ksm, nanodet new.ksm).
export LD_LIBRARY_PATH=$PWD/.dev/s23
grep -o -w 'avx512f\|avx512_vnni\|avx512bw' /proc/cpuinfo | sort | uniq -c
for t in test_fused_act test_impl_conv test_impl_dwconv test_impl_smallc test_impl_elementwise \
    test_impl_perf test_impl_winograd test_impl_fewout; do
    if .dev/s23/$t > /tmp/$t.log 2>&1; then echo "PASS $t"; else echo "FAIL $t"; tail -20 /tmp/$t.log; fi
done
grep -i "max rel" /tmp/test_fused_act.log
for r in 1 2 3; do for b in ks-bench-old ks-bench; do
    echo "yolox r$r $b $(taskset -c 2 .dev/s23/$b .dev/s23/yolox.ksm --threads 1 --runs 60 --json 2>/dev/null | tail -1)"
done; done
taskset -c 2 .dev/s23/ks-bench .dev/s23/new.ksm --threads 1 --runs 60 --json 2>/dev/null | tail -1
