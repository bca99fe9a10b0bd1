"""How far the torch int8 simulation is from the engine's int8 model of the same weights.
  python simcheck.py TUNED.tflite TUNED_INT8.ksm ORIGINAL.tflite CROPS_DIR KS_RUN [N]
Prints mean landmark deviations (% of 256 px) over the first N crops (default 4)."""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

from tfl_torch import Graph, TorchModel, calibrate, landmarks_xy, load_images, mean_dev_pct

tuned, ksm, original, crops, ks_run = sys.argv[1:6]
n = int(sys.argv[6]) if len(sys.argv) > 6 else 4
model, orig = TorchModel(Graph(tuned)), TorchModel(Graph(original))
imgs = load_images(crops)
calibrate(model, imgs)
x = imgs[:n]
lm = model.G.out_names.index("Identity")
with torch.no_grad():
    model.quant = True
    sim = landmarks_xy(model(x)[lm])
    model.quant = False
    own = landmarks_xy(model(x)[lm])
    ref = landmarks_xy(orig(x)[lm])
eng = []
with tempfile.TemporaryDirectory() as d:
    for i in range(n):
        np.save(os.path.join(d, "in.npy"), x[i:i + 1].numpy())
        subprocess.run([ks_run, ksm, "--input", os.path.join(d, "in.npy"), "--output-dir", d],
                       check=True, capture_output=True)
        eng.append(landmarks_xy(torch.from_numpy(np.load(os.path.join(d, "Identity.npy"))))[0])
eng = torch.stack(eng)
print("simulated int8 vs its fp32 %.3f %%; engine int8 vs its fp32 %.3f %%; simulated vs engine "
      "%.3f %%; tuned fp32 vs original fp32 %.3f %%; engine int8 vs original fp32 %.3f %%"
      % (mean_dev_pct(sim, own), mean_dev_pct(eng, own), mean_dev_pct(sim, eng),
         mean_dev_pct(own, ref), mean_dev_pct(eng, ref)))
