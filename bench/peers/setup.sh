#!/usr/bin/env bash
# Creates bench/peers/.venv with the pinned peer engines (requirements.txt) plus pnnx (the
# ONNX -> ncnn converter). pnnx is installed without dependencies: its wheel ships a standalone
# binary, and its declared torch dependency (several GB of CUDA wheels) only serves the Python
# export helpers that we do not use.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
python="${PYTHON:-python3}"
PNNX_VERSION=20261020

if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    "pnnx==$PNNX_VERSION"
"$venv/bin/python" - <<'PY'
import importlib.metadata as md
for name in ["MNN", "onnxruntime", "ai-edge-litert", "ncnn", "pnnx", "numpy", "matplotlib"]:
    print(f"  {name} {md.version(name)}")
PY
