"""A TFLite graph of the BlazePose family (conv, depthwise, add, pad, max pool, bilinear resize,
reshape, logistic; fp16 or fp32 constants) as a torch module, with optional int8 fake
quantization (per-channel symmetric weights, per-tensor activations), and the tuned weights
written back into a copy of the .tflite. The seventh session's QAT spike (docs/compression.md,
"A QAT spike"); an experiment, not a supported tool."""
import numpy as np
import tflite
import torch
import torch.nn.functional as F

OPN = {v: k for k, v in tflite.BuiltinOperator.__dict__.items() if not k.startswith("_")}


def buf_view(m, t):
    b = m.Buffers(t.Buffer())
    o = b._tab.Offset(4)
    if not o:
        return None, None
    start = b._tab.Vector(o)
    n = b._tab.VectorLen(o)
    return start, n


class Graph:
    def __init__(self, path):
        self.raw = bytearray(open(path, "rb").read())
        self.m = tflite.Model.GetRootAsModel(self.raw, 0)
        self.g = self.m.Subgraphs(0)
        g = self.g
        self.tensors = [g.Tensors(i) for i in range(g.TensorsLength())]
        self.const = {}   # tensor id -> np array (float32 for f16/f32)
        self.const_src = {}  # tensor id -> (offset, dtype) for writing back
        for i, t in enumerate(self.tensors):
            start, n = buf_view(self.m, t)
            if start is None or n == 0:
                continue
            dt = {tflite.TensorType.FLOAT32: np.float32, tflite.TensorType.FLOAT16: np.float16,
                  tflite.TensorType.INT32: np.int32}[t.Type()]
            a = np.frombuffer(bytes(self.raw[start:start + n]), dtype=dt).reshape(t.ShapeAsNumpy())
            self.const[i] = a
            self.const_src[i] = (start, dt)
        self.ops = []
        self.alias = {}  # DEQUANTIZE output -> its f16 input
        for k in range(g.OperatorsLength()):
            op = g.Operators(k)
            oc = self.m.OperatorCodes(op.OpcodeIndex())
            name = OPN[max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())]
            ins = list(op.InputsAsNumpy())
            outs = list(op.OutputsAsNumpy())
            if name == "DEQUANTIZE" and ins[0] in self.const:
                self.alias[outs[0]] = ins[0]
                continue
            self.ops.append((name, op, ins, outs))
        self.inputs = [g.Inputs(i) for i in range(g.InputsLength())]
        self.outputs = [g.Outputs(i) for i in range(g.OutputsLength())]
        self.out_names = [self.tensors[i].Name().decode() for i in self.outputs]

    def src(self, tid):
        return self.alias.get(tid, tid)

    def write(self, path, params):
        """params: tensor id -> float32 np array (TFLite layout)."""
        raw = bytearray(self.raw)
        for tid, a in params.items():
            start, dt = self.const_src[tid]
            b = np.ascontiguousarray(a.astype(dt)).tobytes()
            raw[start:start + len(b)] = b
        open(path, "wb").write(raw)


def same_pad(inp, k, s, d):
    out = (inp + s - 1) // s
    total = max((out - 1) * s + (k - 1) * d + 1 - inp, 0)
    return total // 2, total - total // 2


def act(x, a):
    if a == 0:
        return x
    if a == 1:
        return F.relu(x)
    if a == 3:
        return torch.clamp(x, 0.0, 6.0)
    raise ValueError("act %d" % a)


class FQ(torch.autograd.Function):
    """Fake quantization with a straight-through gradient (inside the range)."""

    @staticmethod
    def forward(ctx, x, scale, zp, lo, hi):
        q = torch.clamp(torch.round(x / scale) + zp, lo, hi)
        ctx.save_for_backward(x, torch.as_tensor(scale), torch.as_tensor(zp))
        ctx.lohi = (lo, hi)
        return (q - zp) * scale

    @staticmethod
    def backward(ctx, g):
        x, scale, zp = ctx.saved_tensors
        lo, hi = ctx.lohi
        inside = (x / scale + zp >= lo - 0.5) & (x / scale + zp <= hi + 0.5)
        return g * inside, None, None, None, None


def fq_weight(w):
    # per output channel symmetric int8 (torch layout: dim 0 = out channels)
    m = w.detach().abs().flatten(1).amax(1).clamp_min(1e-12)
    s = (m / 127.0).view(-1, *([1] * (w.dim() - 1)))
    return FQ.apply(w, s, torch.zeros_like(s), -127.0, 127.0)


class TorchModel(torch.nn.Module):
    def __init__(self, G):
        super().__init__()
        self.G = G
        self.w = torch.nn.ParameterDict()
        self.b = torch.nn.ParameterDict()
        self.layout = {}  # param key -> (tensor id, kind)
        self.qrange = {}  # tensor id -> (scale, zp) for activation fake quant
        self.quant = False
        self.fp32_outputs = set()
        for name, op, ins, outs in G.ops:
            if name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
                wid = G.src(ins[1])
                w = G.const[wid].astype(np.float32)
                if name == "CONV_2D":
                    wt = np.transpose(w, (0, 3, 1, 2))  # OHWI -> OIHW
                else:
                    wt = np.transpose(w, (3, 0, 1, 2))  # 1HWC -> C1HW
                key = "t%d" % wid
                self.w[key] = torch.nn.Parameter(torch.from_numpy(np.ascontiguousarray(wt)))
                self.layout[key] = (wid, name)
                if len(ins) > 2 and ins[2] >= 0:
                    bid = G.src(ins[2])
                    bk = "t%d" % bid
                    self.b[bk] = torch.nn.Parameter(torch.from_numpy(G.const[bid].astype(np.float32).copy()))
                    self.layout[bk] = (bid, "BIAS")

    def export(self):
        out = {}
        for key, p in list(self.w.items()) + list(self.b.items()):
            tid, kind = self.layout[key]
            a = p.detach().numpy()
            if kind == "CONV_2D":
                a = np.transpose(a, (0, 2, 3, 1))
            elif kind == "DEPTHWISE_CONV_2D":
                a = np.transpose(a, (1, 2, 3, 0))
            out[tid] = a
        return out

    def aq(self, tid, x):
        if not self.quant or tid not in self.qrange or tid in self.fp32_outputs:
            return x
        s, zp = self.qrange[tid]
        return FQ.apply(x, s, zp, -128.0, 127.0)

    def forward(self, x_nhwc, record=None):
        G = self.G
        v = {G.inputs[0]: self.aq(G.inputs[0], x_nhwc.permute(0, 3, 1, 2))}
        for name, op, ins, outs in G.ops:
            o = outs[0]
            if name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
                x = v[ins[0]]
                wid = G.src(ins[1])
                w = self.w["t%d" % wid]
                if self.quant:
                    w = fq_weight(w)
                b = self.b["t%d" % G.src(ins[2])] if len(ins) > 2 and ins[2] >= 0 else None
                if name == "CONV_2D":
                    opt = tflite.Conv2DOptions()
                else:
                    opt = tflite.DepthwiseConv2DOptions()
                t = op.BuiltinOptions()
                opt.Init(t.Bytes, t.Pos)
                sh, sw = opt.StrideH(), opt.StrideW()
                dh, dw = opt.DilationHFactor(), opt.DilationWFactor()
                kh, kw = w.shape[2], w.shape[3]
                if opt.Padding() == tflite.Padding.SAME:
                    pt, pb = same_pad(x.shape[2], kh, sh, dh)
                    pl, pr = same_pad(x.shape[3], kw, sw, dw)
                    x = F.pad(x, (pl, pr, pt, pb))
                groups = 1 if name == "CONV_2D" else x.shape[1]
                y = F.conv2d(x, w, b, (sh, sw), 0, (dh, dw), groups)
                y = act(y, opt.FusedActivationFunction())
            elif name == "ADD":
                opt = tflite.AddOptions()
                t = op.BuiltinOptions()
                opt.Init(t.Bytes, t.Pos)
                y = act(v[ins[0]] + v[ins[1]], opt.FusedActivationFunction())
            elif name == "PAD":
                p = G.const[ins[1]]  # NHWC pads [4, 2]
                y = F.pad(v[ins[0]], (int(p[2, 0]), int(p[2, 1]), int(p[1, 0]), int(p[1, 1]),
                                      int(p[3, 0]), int(p[3, 1])))
            elif name == "MAX_POOL_2D":
                opt = tflite.Pool2DOptions()
                t = op.BuiltinOptions()
                opt.Init(t.Bytes, t.Pos)
                x = v[ins[0]]
                kh, kw, sh, sw = opt.FilterHeight(), opt.FilterWidth(), opt.StrideH(), opt.StrideW()
                if opt.Padding() == tflite.Padding.SAME:
                    pt, pb = same_pad(x.shape[2], kh, sh, 1)
                    pl, pr = same_pad(x.shape[3], kw, sw, 1)
                    x = F.pad(x, (pl, pr, pt, pb), value=-float("inf"))
                y = F.max_pool2d(x, (kh, kw), (sh, sw))
            elif name == "RESIZE_BILINEAR":
                opt = tflite.ResizeBilinearOptions()
                t = op.BuiltinOptions()
                opt.Init(t.Bytes, t.Pos)
                size = [int(s) for s in G.const[ins[1]]]
                if opt.AlignCorners():
                    y = F.interpolate(v[ins[0]], size=size, mode="bilinear", align_corners=True)
                elif opt.HalfPixelCenters():
                    y = F.interpolate(v[ins[0]], size=size, mode="bilinear", align_corners=False)
                else:
                    raise ValueError("resize without half pixel")
            elif name == "RESHAPE":
                shape = [int(s) for s in G.tensors[o].ShapeAsNumpy()]
                y = v[ins[0]].permute(0, 2, 3, 1).reshape([v[ins[0]].shape[0]] + shape[1:])
            elif name == "LOGISTIC":
                y = torch.sigmoid(v[ins[0]])
            else:
                raise ValueError(name)
            if y.dim() == 4 and name != "RESHAPE" and name != "LOGISTIC":
                y = self.aq(o, y) if name in ("CONV_2D", "DEPTHWISE_CONV_2D", "ADD", "MAX_POOL_2D") else y
            v[o] = y
            if record is not None:
                record[o] = y
        outs = []
        for i in G.outputs:
            y = v[i]
            outs.append(y.permute(0, 2, 3, 1) if y.dim() == 4 else y)  # back to NHWC
        return outs


def load_images(folder, size=256):
    """Every PNG/JPEG in folder, resized to size x size, NHWC float in [0, 1]."""
    import glob
    from PIL import Image
    files = sorted(glob.glob(folder + "/*.png") + glob.glob(folder + "/*.jpg"))
    if not files:
        raise SystemExit("no .png / .jpg images in %s" % folder)
    return torch.stack([torch.from_numpy(
        np.asarray(Image.open(f).convert("RGB").resize((size, size)), dtype=np.float32) / 255.0)
        for f in files])


def calibrate(model, imgs):
    """min/max activation ranges over imgs (asymmetric int8, ks-quant's formula) and the fp32
    output layers (the conv behind each graph output, through RESHAPE / LOGISTIC)."""
    G = model.G
    rec = {}
    with torch.no_grad():
        for i in range(0, len(imgs), 8):
            r = {}
            model(imgs[i:i + 8], record=r)
            r[G.inputs[0]] = imgs[i:i + 8]
            for k, y in r.items():
                lo, hi = float(y.min()), float(y.max())
                a, b = rec.get(k, (0.0, 0.0))
                rec[k] = (min(a, lo), max(b, hi))
    for k, (lo, hi) in rec.items():
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        s = (hi - lo) / 255.0 if hi > lo else 1.0
        model.qrange[k] = (s, float(np.clip(np.round(-128 - lo / s), -128, 127)))
    prod = {outs[0]: (name, ins) for name, op, ins, outs in G.ops}
    for o in G.outputs:
        t = o
        while t in prod and prod[t][0] in ("RESHAPE", "LOGISTIC"):
            t = prod[t][1][0]
        model.fp32_outputs.add(t)


def landmarks_xy(identity, n=33):
    """BlazePose 'Identity' (N, 195) -> the first n landmarks' x, y in pixels (N, n, 2)."""
    return identity.view(-1, 39, 5)[:, :n, :2]


def mean_dev_pct(a, b, size=256):
    """Mean landmark distance in % of the input side."""
    return float((a - b).norm(dim=2).mean() / size * 100)
