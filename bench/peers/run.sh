#!/usr/bin/env bash
# Reproduces docs/benchmarks.md: pinned peer venv, Release build of Kestrel, model conversion,
# interleaved timing. Extra arguments go to run.py (e.g. --models yunet_s_640 --threads 1).
#   bench/peers/run.sh            full run (about 15 minutes on 2 cores)
#   bench/peers/run.sh --quick    5 rounds per cell: proves the harness, numbers are rough
# KS_BUILD_DIR overrides the build directory (default: build-bench at the repository root).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${KS_BUILD_DIR:-$repo/build-bench}"
export KS_BUILD_DIR="$build"

args=()
for a in "$@"; do
    if [[ "$a" == "--quick" ]]; then args+=(--rounds 5); else args+=("$a"); fi
done

"$here/setup.sh"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" kestrel ks-convert ks-bench
"$here/.venv/bin/python" "$here/convert.py"
"$here/.venv/bin/python" "$here/run.py" ${args[@]+"${args[@]}"}
