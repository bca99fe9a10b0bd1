#!/usr/bin/env bash
# The binding under ASan+UBSan (docs/python.md, "Tests"): python/src/native.c compiled with
# clang-14 -fsanitize=address,undefined, linked with a Release build's libraries, loaded into
# the test venv's interpreter with the ASan runtime preloaded, then the pytest suite (the RSS
# tests excluded: ASan's allocator holds freed memory in quarantine). Leak detection is off:
# the interpreter's own allocations at exit drown the report.
#
#   python/tests/asan_check.sh BUILD_DIR OUT_DIR     e.g. build/py build/py-asan
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$(cd "${1:?usage: asan_check.sh BUILD_DIR OUT_DIR}" && pwd)"
OUT="${2:?usage: asan_check.sh BUILD_DIR OUT_DIR}"
PY="$ROOT/.venv/bin/python"
mkdir -p "$OUT/kestrel"
OUT="$(cd "$OUT" && pwd)"
inc="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
suffix="$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
san=(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
clang-14 -std=c11 -O1 -g -fPIC "${san[@]}" -I"$inc" -I"$ROOT/engine/include" \
    -I"$ROOT/algos/include" -I"$ROOT/effects_format/include" -I"$ROOT/ar_render/include" \
    -DKS_PY_HAVE_EGL=1 -c "$ROOT/python/src/native.c" -o "$OUT/native.o"
clang-14 -shared "${san[@]}" -o "$OUT/kestrel/_native$suffix" "$OUT/native.o" \
    "$BUILD/algos/libkestrel_tasks.a" "$BUILD/algos/libkestrel_vision.a" \
    "$BUILD/pipeline/libkestrel_pipeline.a" "$BUILD/ar_render/libkestrel_ar.a" \
    "$BUILD/effects_format/libkestrel_effects.a" "$BUILD/engine/libkestrel.a" -lcjson -lsodium \
    -lz -lstb -lEGL -lGLESv2 -lm -ldl
cp "$BUILD"/python/kestrel/*.py "$BUILD/python/kestrel/py.typed" "$OUT/kestrel/"
LD_PRELOAD="$(clang-14 -print-file-name=libclang_rt.asan-x86_64.so)" \
    ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 PYTHONPATH="$OUT" \
    "$PY" -m pytest -q -p no:cacheprovider "$ROOT/python/tests" -k "not memory"
