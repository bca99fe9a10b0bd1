#!/usr/bin/env bash
# The WebAssembly SIMD128 kernels against the reference kernels, on real models (issue 19).
#
#   bench/wasm/check.sh [--no-build] [MODEL.ksm ...]
#
# The native ks-engine-check (build/release) runs each model with the reference kernels
# (KS_FORCE_SCALAR) on fixed pseudo-random inputs and writes the outputs; the same program built
# for Node (build/wasm/cmake, `scripts/editor --bench`) runs them with the SIMD128 kernels and
# compares: every float output within 1e-4 relative L2 (or 1e-5 absolute), integer outputs
# equal. Default models: the converted models in build/release/bundles/ksm (ks_bundles).
# Exit status: 0 all agree; 1 a model disagrees or fails; 77 without node or emscripten.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
BUILD=1
if [[ "${1:-}" == "--no-build" ]]; then
    BUILD=0
    shift
fi
command -v node >/dev/null || { echo "check: node is not installed" >&2; exit 77; }
NATIVE=build/release/bench/ks-engine-check
WASM=build/wasm/cmake/editor/wasm/kestrel_engine_check.js
[[ -f "$WASM" ]] || WASM=build/wasm/cmake/kestrel_engine_check.js
if [[ $BUILD -eq 1 ]]; then
    cmake --build build/release --target ks-engine-check >/dev/null
    rc=0
    scripts/editor --bench || rc=$?
    [[ $rc -ne 0 ]] && exit "$rc"
    WASM=build/wasm/cmake/editor/wasm/kestrel_engine_check.js
    [[ -f "$WASM" ]] || WASM=build/wasm/cmake/kestrel_engine_check.js
fi
if [[ $# -gt 0 ]]; then
    MODELS=("$@")
else
    mapfile -t MODELS < <(ls build/release/bundles/ksm/*.ksm 2>/dev/null | grep -v quant || true)
fi
if [[ ${#MODELS[@]} -eq 0 ]]; then
    echo "check: no models (build the ks_bundles target of build/release)" >&2
    exit 1
fi
IMGPROC="${WASM%kestrel_engine_check.js}kestrel_imgproc_check.js"
if [[ -f "$IMGPROC" ]]; then
    echo "== wasm SIMD128 image sampler against the scalar reference"
    node "$IMGPROC"
fi
DUMP="$(mktemp -d)"
trap 'rm -rf "$DUMP"' EXIT
"$NATIVE" --scalar --dump "$DUMP" "${MODELS[@]}" >/dev/null
echo "== wasm SIMD128 kernels against the native reference kernels, ${#MODELS[@]} models"
node "$WASM" --dump "$DUMP" "${MODELS[@]}"
