"""Relative L2 distance of each output .npy in DIR_B (and DIR_C ...) from the same file in DIR_A.

usage: s26_compare.py LABEL DIR_A DIR_B [DIR_C ...]   (twenty-sixth session: the fp16 Vulkan
outputs with and without cooperative matrices against the CPU's fp32 outputs)"""
import pathlib
import sys

import numpy as np

label, ref, others = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3:]
for f in sorted(ref.glob("*.npy")):
    a = np.load(f).astype(np.float64).ravel()
    cells = []
    for o in others:
        p = pathlib.Path(o) / f.name
        if not p.exists():
            cells.append("missing")
            continue
        b = np.load(p).astype(np.float64).ravel()
        d = np.linalg.norm(a - b) / max(np.linalg.norm(a), 1e-30)
        cells.append(f"{d:.3g}")
    print(label, f.stem, " ".join(cells))
