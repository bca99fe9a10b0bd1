#!/usr/bin/env python3
"""Turn a photo into the raw 640x480 NV21 frame bench/arm/imgproc_count reads.

    make_nv21.py PHOTO OUT.nv21

The photo is center-cropped to 4:3, resized to 640x480 and converted to BT.601 video-range YUV
(what an Android camera delivers), with each chroma sample the mean of its 2x2 block, stored as
NV21: the Y plane, then interleaved V, U. Needs Pillow and NumPy (the project venv has both).
"""
import sys

import numpy as np
from PIL import Image

W, H = 640, 480


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    img = Image.open(sys.argv[1]).convert("RGB")
    w, h = img.size
    if w * 3 > h * 4:  # too wide: crop the sides
        cw, ch = h * 4 // 3, h
    else:
        cw, ch = w, w * 3 // 4
    left, top = (w - cw) // 2, (h - ch) // 2
    img = img.crop((left, top, left + cw, top + ch)).resize((W, H), Image.BILINEAR)
    rgb = np.asarray(img, dtype=np.float64)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    # BT.601 video range: Y 16..235, chroma 16..240
    y = 16 + 0.256788 * r + 0.504129 * g + 0.097906 * b
    u = 128 - 0.148223 * r - 0.290993 * g + 0.439216 * b
    v = 128 + 0.439216 * r - 0.367788 * g - 0.071427 * b

    def sub(c: np.ndarray) -> np.ndarray:
        return (c[0::2, 0::2] + c[1::2, 0::2] + c[0::2, 1::2] + c[1::2, 1::2]) / 4

    def q(c: np.ndarray) -> np.ndarray:
        return np.clip(np.rint(c), 0, 255).astype(np.uint8)

    vu = np.stack([q(sub(v)), q(sub(u))], axis=-1)  # NV21: V first
    with open(sys.argv[2], "wb") as f:
        f.write(q(y).tobytes())
        f.write(vu.tobytes())
    return 0


if __name__ == "__main__":
    sys.exit(main())
