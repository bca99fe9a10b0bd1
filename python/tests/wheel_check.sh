#!/usr/bin/env bash
# The from-scratch check of the package (opt-in: KS_PY_WHEEL=1 at configure time registers it
# as ctest test python.wheel; docs/python.md): a fresh venv outside the source tree,
# `pip install ./python` (builds the C library, the extension, the tools and the bundles), then
# the pytest suite against the installed package (no PYTHONPATH, no build tree).
#
#   python/tests/wheel_check.sh WORK_DIR
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK="${1:?usage: wheel_check.sh WORK_DIR}"
PY="${KS_PY_WHEEL_PYTHON:-/usr/bin/python3}"
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
t0=$SECONDS
"$PY" -m venv venv
# The reference runtimes and pytest, pinned as the repository's test venv pins them.
REQ="$ROOT/scripts/requirements-golden.txt"
extra=()
grep -q '^pytest==' "$REQ" || extra=(pytest==9.2.0 iniconfig==2.3.1 pluggy==1.7.0 pygments==2.21.0)
venv/bin/pip install -q --disable-pip-version-check --no-deps -r "$REQ" "${extra[@]}"
t_deps=$((SECONDS - t0))
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    venv/bin/pip install -q --disable-pip-version-check "$ROOT/python"
t_install=$((SECONDS - t0 - t_deps))
where="$(venv/bin/python -c 'import kestrel; print(kestrel.__file__)')"
case "$where" in
"$WORK"/venv/*) ;;
*) echo "wheel_check: kestrel imported from $where, not the venv" >&2; exit 1 ;;
esac
venv/bin/kestrel --version
env -u PYTHONPATH -u KESTREL_TOOLS_DIR venv/bin/python -m pytest -q -p no:cacheprovider \
    "$ROOT/python/tests"
echo "wheel_check: deps ${t_deps} s, pip install ./python ${t_install} s, total $((SECONDS - t0)) s"
