#!/usr/bin/env bash
# The WASM face landmarker beside the native one (issue 19; docs/editor.md "Speed": the goal is a
# WASM per-frame time within 2.5x of native on the same machine, SIMD128 on).
#
#   bench/wasm/run.sh [--rounds R (3)] [--frames N (60)] [--warmup W (5)] [--bundle KSB]
#                     [--photo PNG] [--tol PX (1.0)] [--no-build]
#
# One program, bench/wasm/landmarker_bench.c, built twice: natively (ks-landmarker-bench in
# build/release, bench/CMakeLists.txt) and for Node with Emscripten (kestrel_landmarker_bench.js
# in build/wasm/cmake, editor/wasm/CMakeLists.txt, built by `scripts/editor --bench`, which also
# makes the wasm deps and configures that tree if they are missing). Each times
# ks_face_landmarker_detect in VIDEO mode, one thread, on the photo panned a few pixels per frame,
# and prints one JSON line (median/p10/p90 ms, faces, a checksum of the last frame's landmarks).
# Each round runs, one after the other so machine load hits all alike: native, wasm, and wasm
# with --scalar (KS_FORCE_SCALAR=1: the reference kernels, what wasm ran before its SIMD128
# kernels). Pinned to CPU 0 with taskset where there is one. Prints one row per round and the
# median over rounds: native ms, wasm ms, their ratio, wasm --scalar ms, and the difference of
# the landmark checksums (sum of x + y over 468 points, in pixels) of wasm and wasm --scalar
# against native; they agree when within --tol and the face counts match.
# Default bundle build/release/bundles/face_landmarker.ksb (ninja -C build/release ks_bundles),
# photo models/images/skimage_astronaut.png (scripts/setup). JOBS (default 2) caps the build.
# Exit status: 0; 1 when a run fails or the checksums disagree; 2 on bad arguments; 77 when
# emscripten or node is missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
ROUNDS=3
FRAMES=60
WARMUP=5
BUNDLE="build/release/bundles/face_landmarker.ksb"
PHOTO="models/images/skimage_astronaut.png"
TOL=1.0
BUILD=1
JOBS="${JOBS:-2}"
while [[ $# -gt 0 ]]; do
    case "$1" in
    --rounds) ROUNDS="${2:?--rounds needs a count}"; shift 2 ;;
    --frames) FRAMES="${2:?--frames needs a count}"; shift 2 ;;
    --warmup) WARMUP="${2:?--warmup needs a count}"; shift 2 ;;
    --bundle) BUNDLE="${2:?--bundle needs a path}"; shift 2 ;;
    --photo) PHOTO="${2:?--photo needs a path}"; shift 2 ;;
    --tol) TOL="${2:?--tol needs pixels}"; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h | --help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --rounds needs a count >= 1" >&2; exit 2; }
NATIVE="build/release/bench/ks-landmarker-bench"
WASM="build/wasm/cmake/kestrel_landmarker_bench.js"

if ! command -v node >/dev/null; then
    echo "run.sh: node is not installed" >&2
    exit 77
fi
if [[ $BUILD -eq 1 ]]; then
    # ninja also rebuilds what changed (new kernels), so each run times the current sources.
    echo "== build: $NATIVE"
    [[ -f build/release/build.ninja ]] ||
        cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DKS_WERROR=ON >/dev/null
    ninja -C build/release -j "$JOBS" ks-landmarker-bench >/tmp/ks-landmarker-bench-build.$$.log \
        2>&1 || { tail -30 /tmp/ks-landmarker-bench-build.$$.log >&2; exit 1; }
    rm -f /tmp/ks-landmarker-bench-build.$$.log
    echo "== build: $WASM (scripts/editor --bench)"
    KS_EDITOR_JOBS="$JOBS" scripts/editor --bench
fi
for f in "$NATIVE" "$WASM" "$BUNDLE" "$PHOTO"; do
    [[ -f "$f" ]] || { echo "run.sh: $f is missing" >&2; exit 1; }
done

PIN=()
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then PIN=(taskset -c 0); fi
ARGS=(--bundle "$BUNDLE" --photo "$PHOTO" --frames "$FRAMES" --warmup "$WARMUP")

# One run: prints its JSON line, or fails with the program's error.
bench() {
    local out
    if ! out="$("${PIN[@]}" "$@" "${ARGS[@]}" 2>&1)"; then
        echo "run.sh: '$*' failed:" >&2
        echo "$out" | tail -c 2000 >&2
        exit 1
    fi
    grep '^{' <<<"$out" | tail -1 | grep . || { echo "run.sh: no JSON from '$*'" >&2; exit 1; }
}
# field JSON NAME: the value of NAME in a one-line JSON object of plain values.
field() { sed -n "s/.*\"$2\": \"\{0,1\}\([^,\"}]*\).*/\1/p" <<<"$1"; }

cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)"
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), ${cpu:-unknown CPU}, node $(node --version)," \
    "${PIN[*]:-not pinned}, $FRAMES frames after $WARMUP, $ROUNDS rounds"
rows=()
ok=1
for ((r = 1; r <= ROUNDS; r++)); do
    n="$(bench "$NATIVE")"
    w="$(bench node "$WASM")"
    s="$(bench node "$WASM" --scalar)"
    [[ $r -eq 1 ]] && echo "   isa: native $(field "$n" isa), wasm $(field "$w" isa)," \
        "wasm --scalar $(field "$s" isa); faces: $(field "$n" faces)"
    for j in "$w" "$s"; do
        [[ "$(field "$j" faces)" == "$(field "$n" faces)" ]] || ok=0
    done
    row="$r"
    for k in median_ms landmarks_checksum; do
        row+=" $(field "$n" $k) $(field "$w" $k) $(field "$s" $k)"
    done
    rows+=("$row")
done
printf '%s\n' "${rows[@]}" | awk -v tol="$TOL" -v ok="$ok" '
    function abs(x) { return x < 0 ? -x : x }
    function med(a, n,   i, j, t) {
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    BEGIN {
        printf "%-7s %10s %10s %13s %12s %14s %14s\n", "round", "native ms", "wasm ms",
            "wasm/native", "scalar ms", "d wasm (px)", "d scalar (px)"
    }
    {
        n[NR] = $2; w[NR] = $3; s[NR] = $4; dw = $6 - $5; ds = $7 - $5
        if (abs(dw) > tol || abs(ds) > tol) ok = 0
        if (abs(dw) > maxd) maxd = abs(dw)
        if (abs(ds) > maxd) maxd = abs(ds)
        printf "%-7s %10.3f %10.3f %12.2fx %12.3f %+14.6f %+14.6f\n", $1, $2, $3, $3 / $2, $4,
            dw, ds
    }
    END {
        mn = med(n, NR); mw = med(w, NR); ms = med(s, NR)
        printf "%-7s %10.3f %10.3f %12.2fx %12.3f\n", "median", mn, mw, mw / mn, ms
        printf "checksums: %s (largest difference %.6f px, tolerance %s px%s)\n",
            ok ? "agree" : "DISAGREE", maxd, tol, ok ? "" : "; or the face counts differ"
        exit ok ? 0 : 1
    }'
