#!/bin/sh
# Regenerates the makeup and beauty golden images (ar_render/tests/golden/makeup_*.png,
# beauty_*.png) by running their GL tests with KS_REGEN_GOLDEN=1, which makes them write the
# rendered crop instead of comparing it. Needs a build with EGL (Mesa llvmpipe is what the
# committed goldens were made with). Look at the new images before committing them.
#
# Usage: ar_render/tests/regen_golden_makeup_beauty.sh BUILD_DIR
set -eu
build=${1:?usage: $0 BUILD_DIR}
for t in test_ar_gl_makeup test_ar_gl_beauty; do
    exe="$build/ar_render/$t"
    [ -x "$exe" ] || { echo "$exe: not built (ninja -C $build $t)" >&2; exit 1; }
    KS_REGEN_GOLDEN=1 "$exe"
done
