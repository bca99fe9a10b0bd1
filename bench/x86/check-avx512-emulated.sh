#!/usr/bin/env bash
# Runs the image sampler's unit tests (engine/tests/unit/test_imgproc.c: every SIMD path against
# the scalar reference, bit for bit) with the AVX-512 sampler compiled against SIMDe's portable
# AVX-512 (simde_avx512/immintrin.h), on a machine without AVX-512: the dispatch is told the CPU
# has it (simde_avx512/cpu_isa_avx512.c), so both the emulated AVX-512 path and the native AVX2
# path are compared with the reference. A check of the logic, not of speed; the real thing runs
# on an AVX-512 CPU (CI machines with it, or bench/gpu/s24_device_run.sh).
#   bench/x86/check-avx512-emulated.sh [BUILD_DIR]   (default build/release, configured and built)
# Needs libsimde-dev (apt). Not part of scripts/test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
B=${1:-build/release}
here=bench/x86/simde_avx512
[[ -f /usr/include/simde/x86/avx512.h ]] || { echo "needs libsimde-dev (apt-get install libsimde-dev)" >&2; exit 2; }
cmake --build "$B" --target test_imgproc >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# -ffp-contract=off: the emulation's lane loops must not fuse a multiply and an add either
cc -O2 -std=gnu11 -ffp-contract=off -D_DEFAULT_SOURCE -mavx2 -mfma -mf16c -I"$here" \
  -Iengine/include -Iengine -Iengine/src \
  -c engine/backends/cpu/x86/avx512/imgproc_avx512.c -o "$out/imgproc_avx512.o"
cc -O2 -c "$here/cpu_isa_avx512.c" -o "$out/isa.o"
libs=$(cd "$B" && ninja -t commands engine/tests/unit/test_imgproc | tail -1 |
       sed -e 's/.* -o engine\/tests\/unit\/test_imgproc //' -e 's/ && :$//')
(cd "$B" && cc -O2 engine/tests/unit/CMakeFiles/test_imgproc.dir/test_imgproc.c.o \
   "$out/imgproc_avx512.o" "$out/isa.o" -Wl,--wrap=ks__cpu_isa -o "$out/test_imgproc" $libs)
"$out/test_imgproc"
