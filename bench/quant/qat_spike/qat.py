"""QAT by distillation, the seventh session's spike (docs/compression.md, "A QAT spike").
  python qat.py MODEL.tflite CROPS_DIR OUT.tflite [--steps 300] [--lr 2e-5] [--seed 0]
The student (int8 fake-quantized, min/max ranges from CROPS_DIR) learns the fp32 teacher's
landmark pixels (plus the other checked outputs) on augmented crops; the tuned weights are
written into a copy of MODEL. Then: ks-convert OUT.tflite OUT.ksm, ks-quant, task_deltas.py."""
import argparse
import time

import torch
import torchvision.transforms.v2 as T

from tfl_torch import Graph, TorchModel, calibrate, landmarks_xy, load_images, mean_dev_pct

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("crops")
ap.add_argument("out")
ap.add_argument("--steps", type=int, default=300)
ap.add_argument("--lr", type=float, default=2e-5)
ap.add_argument("--seed", type=int, default=0)
args = ap.parse_args()
torch.manual_seed(args.seed)
torch.set_num_threads(2)

G = Graph(args.model)
teacher = TorchModel(G).eval()
student = TorchModel(G)
imgs = load_images(args.crops)
calibrate(student, imgs)
student.quant = True
names = G.out_names
# relative weights of the other checked outputs (each normalized by its mean square)
other = {"Identity": 0.3, "Identity_1": 0.1, "Identity_3": 0.1, "Identity_4": 0.3}
with torch.no_grad():
    energy = [(o.flatten(1) ** 2).mean().clamp_min(1e-6) for o in teacher(imgs)]
lm = names.index("Identity")


def loss_of(so, to):
    d = (landmarks_xy(so[lm], 39) - landmarks_xy(to[lm], 39)) / 256.0 * 100
    loss = (d ** 2).sum(2).mean()
    for n, s, t, e in zip(names, so, to, energy):
        if n in other:
            loss = loss + 10 * other[n] * ((s - t) ** 2).mean() / e
    return loss


def evaluate():
    with torch.no_grad():
        so, to = student(imgs), teacher(imgs)
        return float(loss_of(so, to)), mean_dev_pct(landmarks_xy(so[lm]), landmarks_xy(to[lm]))


aug = T.Compose([T.RandomAffine(degrees=15, translate=(0.06, 0.06), scale=(0.85, 1.15)),
                 T.ColorJitter(0.25, 0.25, 0.25), T.RandomHorizontalFlip()])
opt = torch.optim.Adam(list(student.w.values()) + list(student.b.values()), lr=args.lr)
print("%d crops; start loss %.4f, simulated int8 landmark deviation %.3f %% of 256 px"
      % ((len(imgs),) + evaluate()), flush=True)
t0 = time.time()
for step in range(args.steps):
    idx = torch.randint(0, len(imgs), (8,))
    x = torch.stack([aug(imgs[i].permute(2, 0, 1)).permute(1, 2, 0) for i in idx]).clamp(0, 1)
    with torch.no_grad():
        to = teacher(x)
    loss = loss_of(student(x), to)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0 or step == args.steps - 1:
        print("step %d loss %.4f (%.0f s)" % (step, float(loss.detach()), time.time() - t0),
              flush=True)
print("end loss %.4f, simulated int8 landmark deviation %.3f %% of 256 px" % evaluate())
G.write(args.out, student.export())
print("wrote", args.out)
