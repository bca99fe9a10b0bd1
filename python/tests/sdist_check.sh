#!/usr/bin/env bash
# The sdist check (docs/python.md "The sdist"; ctest python.sdist, and python.sdist_wheel with
# KS_PY_SDIST_WHEEL=1 at configure time):
#
#   python/tests/sdist_check.sh WORK_DIR           build the sdist from python/, check that it
#       carries the C sources (every git-tracked CMakeLists.txt, *.cmake, *.c, *.h, *.inc of the
#       modules the package builds, outside tests/) and python/'s CMake inputs, and no tests/,
#       jni/, objc/ or editor/; unpack it and configure CMake from it as a wheel build does (the
#       from-sdist override's source directory, pyproject.toml's defines): no module or bundle
#       skipped but the bundles whose models the sdist leaves out, every build target defined.
#       About 15 s (plus a one-time venv of the pinned build tools).
#   python/tests/sdist_check.sh WORK_DIR --wheel   also `python -m build python` (sdist, then the
#       wheel from the unpacked sdist: the C library from scratch, minutes), the wheel installed
#       with --no-index into a fresh venv, and a smoke test run outside the source tree.
#
# Exit 77 (skip) when the pinned build tools cannot be installed (no package index).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK="${1:?usage: sdist_check.sh WORK_DIR [--wheel]}"
MODE="${2:-}"
PY="${KS_PY_WHEEL_PYTHON:-/usr/bin/python3}"
# The frontend and the backend's pin (python/pyproject.toml), installed once into WORK/tools;
# the builds below use them with --no-isolation, so no further download.
TOOLS_REQ=(build==1.6.1 pyproject_hooks==1.3.3 packaging==26.4 scikit-build-core==1.1.2
    pathspec==1.1.1)
mkdir -p "$WORK"
cd "$WORK"
t0=$SECONDS
if ! tools/bin/python -c 'import build, scikit_build_core' 2>/dev/null; then
    rm -rf tools
    "$PY" -m venv tools
    if ! tools/bin/pip install -q --disable-pip-version-check --no-deps "${TOOLS_REQ[@]}"; then
        echo "SKIP: could not install ${TOOLS_REQ[*]} (no package index?)"
        exit 77
    fi
fi
t_tools=$((SECONDS - t0))

rm -rf dist unpacked cmake-build
tools/bin/python -m build --sdist --no-isolation --outdir dist "$ROOT/python"
sdist="$(ls dist/*.tar.gz)"
t_sdist=$((SECONDS - t0 - t_tools))

# What the sdist must carry, listed independently of the backend: git's tracked sources.
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$ROOT" ls-files -- CMakeLists.txt cmake engine pipeline algos effects_format \
        ar_render delivery | grep -E '(CMakeLists\.txt|\.cmake|\.c|\.h|\.inc)$' \
        | grep -vE '(^|/)tests/' >expected.txt || true
else
    : >expected.txt
fi
mkdir unpacked
tar xzf "$sdist" -C unpacked
top="$(ls unpacked)"
tools/bin/python - "$sdist" "unpacked/$top" expected.txt <<'EOF'
import sys, tarfile, tomllib
from pathlib import Path

sdist, top, expected = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
names = {m.name.split("/", 1)[1] for m in tarfile.open(sdist).getmembers() if "/" in m.name}
size_mb = Path(sdist).stat().st_size / 1e6
csrc = sorted(n for n in names if n.startswith("_csrc/"))
print(f"sdist_check: {sdist}: {size_mb:.1f} MB, {len(names)} files, {len(csrc)} under _csrc/")
problems = []
must = ["pyproject.toml", "PKG-INFO", "_kestrel_build/kestrel_build_backend.py", "src/native.c",
        "kestrel/__init__.py", "_csrc/kestrel/CMakeLists.txt", "_csrc/kestrel/cmake/options.cmake",
        "_csrc/kestrel/python/CMakeLists.txt", "_csrc/kestrel/python/src/native.c",
        "_csrc/kestrel/python/wheel_build_config.py", "_csrc/kestrel/python/kestrel/vision.py",
        "_csrc/kestrel/ar_render/tests/no_gles/GLES3/gl3.h"]
tracked = [l.strip() for l in open(expected) if l.strip()]
if not tracked:
    print("sdist_check: no git checkout: the C sources are checked by the configure only")
must += [f"_csrc/kestrel/{n}" for n in tracked]
problems += [f"missing {n}" for n in must if n not in names]
for n in csrc:
    parts = n.split("/")
    if parts[2] in ("jni", "objc", "editor", "samples", "bench", "docs", "scripts", "tests",
                    "build"):
        problems.append(f"unexpected {n}")
    elif "tests" in parts[3:-1] and not n.startswith("_csrc/kestrel/ar_render/tests/no_gles/"):
        problems.append(f"unexpected test file {n}")
    elif "__pycache__" in parts or n.endswith(".pyc"):
        problems.append(f"unexpected {n}")
if size_mb > 40:
    problems.append(f"{size_mb:.1f} MB: over the 40 MB budget (docs/python.md)")
if problems:
    sys.exit("sdist_check: " + "\n  ".join(["the sdist is wrong:", *problems[:40]]))

# The wheel build's CMake arguments, from the unpacked sdist's own pyproject.toml.
cfg = tomllib.loads((top / "pyproject.toml").read_text())["tool"]["scikit-build"]
src_dir = [o["cmake"]["source-dir"] for o in cfg.get("overrides", [])
           if o.get("if", {}).get("from-sdist") is True and "source-dir" in o.get("cmake", {})]
if len(src_dir) != 1:
    sys.exit("sdist_check: pyproject.toml has no from-sdist override of cmake.source-dir")
with open("cmake-args.txt", "w") as f:
    f.write(str(top / src_dir[0]) + "\n")
    for k, v in cfg["cmake"]["define"].items():
        f.write(f"-D{k}={v}\n")
    f.write(f"-DCMAKE_BUILD_TYPE={cfg['cmake']['build-type']}\n")
with open("targets.txt", "w") as f:
    f.write("\n".join(cfg["build"]["targets"]) + "\n")
# Bundles that may be skipped: those whose source model the sdist left out.
sys.path.insert(0, str(top / "_kestrel_build"))
import kestrel_build_backend as kb  # noqa: E402
with open("may-skip.txt", "w") as f:
    for rel in kb.BUNDLE_MODELS:
        arc = ("_csrc/kestrel/" + rel).replace("kestrel/../", "")  # ../shared -> _csrc/shared
        if arc not in names:
            f.write(Path(rel).name + "\n")
EOF
mapfile -t args <cmake-args.txt
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "${args[0]}" -B cmake-build "${gen[@]}" "${args[@]:1}" \
    -DPython3_EXECUTABLE="$(command -v "$PY")" >configure.log 2>&1 ||
    { tail -30 configure.log; echo "sdist_check: CMake configure from the sdist failed"; exit 1; }
if grep -E 'python: skipped|skipped \(needs' configure.log; then
    echo "sdist_check: the configure from the sdist skipped the package or its tools"; exit 1
fi
while read -r line; do
    model="$(sed -n 's/.*(\(.*\) is missing.*/\1/p' <<<"$line")"
    if ! grep -qxF "$(basename "$model")" may-skip.txt; then
        echo "sdist_check: $line (the sdist should carry that model)"; exit 1
    fi
    echo "sdist_check: expected: $line"
done < <(grep -E '^-- bundle .*: skipped' configure.log || true)
if [ ${#gen[@]} -gt 0 ]; then
    ninja -C cmake-build -t targets all >all-targets.txt
    while read -r t; do
        grep -q "^$t:" all-targets.txt || { echo "sdist_check: no target $t"; exit 1; }
    done <targets.txt
fi
t_configure=$((SECONDS - t0 - t_tools - t_sdist))
echo "sdist_check: tools ${t_tools} s, sdist ${t_sdist} s, unpack+check+configure ${t_configure} s"
[ "$MODE" = --wheel ] || exit 0

# The issue's command: sdist, then the wheel from the unpacked sdist.
rm -rf dist
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    tools/bin/python -m build --no-isolation --outdir dist "$ROOT/python"
t_wheel=$((SECONDS - t0 - t_tools - t_sdist - t_configure))
wheel="$PWD/$(ls dist/*.whl)"
# The venv and the smoke test's files outside the source tree (WORK may be in a build folder
# inside it).
OUTSIDE="$(mktemp -d "${TMPDIR:-/tmp}/kestrel-sdist-smoke.XXXXXX")"
trap 'rm -rf "$OUTSIDE"' EXIT
cd "$OUTSIDE"
"$PY" -m venv venv
venv/bin/pip install -q --disable-pip-version-check numpy==1.26.4 pillow==13.0.0
venv/bin/pip install -q --disable-pip-version-check --no-index --no-deps "$wheel"
mkdir smoke
cd smoke
cp "$ROOT/models/face_detection/face_detection_short_range.tflite" \
    "$ROOT/models/images/skimage_astronaut.png" .
env -u PYTHONPATH -u KESTREL_TOOLS_DIR ../venv/bin/python - <<'EOF'
import os, sys
import numpy as np
from PIL import Image
import kestrel

here = os.path.dirname(os.path.abspath(kestrel.__file__))
assert os.path.realpath(here).startswith(os.path.realpath(os.path.join("..", "venv"))), here
kestrel.convert("face_detection_short_range.tflite", "blazeface.ksm")
model = kestrel.Model.load("blazeface.ksm")
x = np.zeros(model.inputs[0].shape, np.float32)
with kestrel.Session(model) as s:
    out = s.run({model.inputs[0].name: x})
assert out and all(np.isfinite(v).all() for v in out.values()), out
image = np.asarray(Image.open("skimage_astronaut.png").convert("RGB"))
with kestrel.FaceDetector() as det:
    faces = det.detect(image)
assert len(faces) == 1 and faces[0].score > 0.5, faces
print(f"smoke: kestrel from {here}; session outputs {sorted(out)}; face {faces[0].box} "
      f"score {faces[0].score:.2f}")
EOF
env -u PYTHONPATH ../venv/bin/kestrel ops | head -3
test "$(env -u PYTHONPATH ../venv/bin/kestrel ops | wc -l)" -gt 10
echo "sdist_check: tools ${t_tools} s, sdist ${t_sdist} s, configure check ${t_configure} s," \
    "python -m build python ${t_wheel} s, total $((SECONDS - t0)) s"
