#!/bin/sh
# Regenerates the AR renderer's golden images (ar_render/tests/golden/*.png) from the current
# renderer on headless Mesa (llvmpipe). Run after an intended rendering change, look at the new
# PNGs, and commit them with the change.
#
#   ar_render/tests/regen_golden.sh [BUILD_DIR]      (default: build)
#
# With --fixture it also remakes the landmark fixture from the face landmarker (only needed when
# the fixture format changes; the goldens must be regenerated after it):
#   ar_render/tests/regen_golden.sh BUILD_DIR --fixture
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
if [ "${2:-}" = "--fixture" ]; then
    cmake --build "$build" --target ks-vision
    KESTREL_MODELS_DIR=$build/bundles "$build/algos/ks-vision" face_landmarks \
        "$root/models/images/skimage_astronaut.png" --json > "$build/astronaut_face.raw.json"
    python3 - "$build/astronaut_face.raw.json" "$here/fixtures/astronaut_face.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
out = {"source": "ks-vision face_landmarks models/images/skimage_astronaut.png --json "
                 "(made once; see ar_render/tests/regen_golden.sh)",
       "width": 512, "height": 512, "faces": []}
for i, f in enumerate(d["faces"]):
    f = dict(f)
    f["id"] = i + 1
    out["faces"].append(f)
open(sys.argv[2], "w").write(json.dumps(out, separators=(",", ":")) + "\n")
PY
    echo "wrote $here/fixtures/astronaut_face.json"
fi
cmake --build "$build" --target test_ar_gl
KS_AR_REGEN_GOLDEN=1 "$build/ar_render/test_ar_gl"
