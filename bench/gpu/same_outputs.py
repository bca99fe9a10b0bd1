"""Whether two ks-run output folders hold the same bits: `same_outputs.py DIR_A DIR_B LABEL...`
prints the labels, the number of outputs and "identical" or "DIFFER" (NaNs equal). Used by the
A/B device scripts (bench/gpu/s27*_device_run.sh)."""
import glob
import os
import sys

import numpy as np

a, b, labels = sys.argv[1], sys.argv[2], sys.argv[3:]
files = sorted(glob.glob(os.path.join(a, "*.npy")))
same = bool(files) and all(
    np.array_equal(np.load(f), np.load(os.path.join(b, os.path.basename(f))), equal_nan=True)
    for f in files)
print(*labels, len(files), "outputs", "identical" if same else "DIFFER")
