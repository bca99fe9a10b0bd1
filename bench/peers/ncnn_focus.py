#!/usr/bin/env python3
"""Makes pnnx's ncnn export of a YOLOX/YOLOv5 "Focus" stem loadable by ncnn.

usage: ncnn_focus.py MODEL.ncnn.param MODEL.ncnn.bin SOURCE.onnx

The Focus stem takes the four stride-2 pixel phases of the input and concatenates them along
channels: x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2] in
YOLOX. pnnx exports the four strided slices as `Tensor.slice` layers, which ncnn has no
implementation of, so ncnn refuses the whole model. ncnn's own `Reorg` layer (stride 2) makes
the same four phases, in its own channel order. This rewrites, in place:

  Input -> Split(4) -> 4 x Tensor.slice -> Concat   into   Input -> Reorg(stride 2)

and permutes the input channels of the convolution that reads the concatenation so that the
model computes what it did before. The slice parameters are not kept in the .param file, so
the phase order is found by running the rewritten model against ONNX Runtime on one random
input, over the 24 possible orders: the rewrite is kept only if one order matches to 1e-4
(relative L2); otherwise the files are left as they were and the script exits non-zero.

Prints "unchanged" when the model has no such stem, "rewrote ..." when it did. Needs ncnn,
numpy and onnxruntime.
"""

import itertools
import pathlib
import sys

import numpy as np

FP16_TAG = 0x01306B47  # ncnn .bin: a weight blob that starts with this tag is fp16
FP32_TAG = 0


def parse(lines):
    """[(type, name, bottoms, tops, params)] of the layer lines (after the two header lines)."""
    layers = []
    for line in lines:
        f = line.split()
        if not f:
            continue
        nb, nt = int(f[2]), int(f[3])
        layers.append((f[0], f[1], f[4:4 + nb], f[4 + nb:4 + nb + nt], f[4 + nb + nt:]))
    return layers


def fmt(layer):
    t, n, b, tops, p = layer
    return " ".join([f"{t:<24}", f"{n:<24}", str(len(b)), str(len(tops))] + b + tops + p)


def find_stem(layers):
    """Index of the Split whose four outputs each go through one Tensor.slice into one Concat."""
    for i, (t, _, bottoms, tops, _) in enumerate(layers):
        if t != "Split" or len(tops) != 4 or i + 5 >= len(layers):
            continue
        slices = layers[i + 1:i + 5]
        cat = layers[i + 5]
        if not all(s[0] == "Tensor.slice" and len(s[2]) == 1 and s[2][0] in tops for s in slices):
            continue
        if cat[0] != "Concat" or sorted(cat[2]) != sorted(s[3][0] for s in slices):
            continue
        return i
    return None


def conv_weight_span(layers, conv_index):
    """(offset, count, element size) of the weights of layers[conv_index] in the .bin file.
    Only layers without weights (Input, Split, Reorg, Concat) may precede it."""
    t, _, _, _, params = layers[conv_index]
    if t != "Convolution":
        raise ValueError(f"the stem feeds a {t}, not a Convolution")
    for layer in layers[:conv_index]:
        if layer[0] not in ("Input", "Split", "Reorg", "Concat", "Tensor.slice"):
            raise ValueError(f"a {layer[0]} with weights precedes the stem's convolution")
    kv = dict(p.split("=", 1) for p in params)
    return int(kv["6"])  # weight_data_size (elements)


def run_ncnn(param, binf, x):
    import ncnn

    net = ncnn.Net()
    net.opt.use_vulkan_compute = False
    net.opt.num_threads = 1
    if net.load_param(str(param)) or net.load_model(str(binf)):
        raise RuntimeError("ncnn cannot load the rewritten model")
    ex = net.create_extractor()
    ex.input(net.input_names()[0], ncnn.Mat(np.ascontiguousarray(x)))
    outs = []
    for name in net.output_names():
        ret, m = ex.extract(name)
        if ret:
            raise RuntimeError(f"ncnn extract {name} failed ({ret})")
        outs.append(np.array(m).reshape(-1))
    return outs


def main():
    param, binf, onnx = map(pathlib.Path, sys.argv[1:4])
    lines = param.read_text().splitlines()
    layers = parse(lines[2:])
    i = find_stem(layers)
    if i is None:
        print("unchanged")
        return 0
    split, cat = layers[i], layers[i + 5]
    reorg = ("Reorg", "focus_reorg", split[2], cat[3], ["0=2", "1=1"])
    new_layers = layers[:i] + [reorg] + layers[i + 6:]
    consumers = [k for k, layer in enumerate(new_layers) if cat[3][0] in layer[2]]
    if len(consumers) != 1:
        raise SystemExit("the stem's output feeds more than one layer")
    conv = consumers[0]
    count = conv_weight_span(new_layers, conv)
    raw = bytearray(binf.read_bytes())
    tag = int(np.frombuffer(bytes(raw[:4]), np.uint32)[0])
    if tag not in (FP16_TAG, FP32_TAG):
        raise SystemExit(f"unsupported weight tag {tag:#x}")
    dt = np.float16 if tag == FP16_TAG else np.float32
    nbytes = count * np.dtype(dt).itemsize
    w = np.frombuffer(bytes(raw[4:4 + nbytes]), dt).copy()
    kv = dict(p.split("=", 1) for p in new_layers[conv][4])
    out_c = int(kv["0"])
    in_c = count // (out_c * int(kv["1"]) * int(kv.get("11", kv["1"])))
    if in_c % 4:
        raise SystemExit(f"the stem's convolution reads {in_c} channels, not 4 phases")
    w = w.reshape(out_c, 4, in_c // 4, -1)

    n_blobs = int(lines[1].split()[1]) - (len(split[3]) + 4)  # the slices' outputs go too
    header = [lines[0], f"{len(new_layers)} {n_blobs}"]
    tmp_param = param.with_suffix(".focus.param")
    tmp_bin = binf.with_suffix(".focus.bin")
    tmp_param.write_text("\n".join(header + [fmt(layer) for layer in new_layers]) + "\n")

    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(onnx), so, providers=["CPUExecutionProvider"])
    shape = sess.get_inputs()[0].shape
    x = np.random.default_rng(0).random(shape, dtype=np.float32) * 255
    ref = [r.reshape(-1) for r in sess.run(None, {sess.get_inputs()[0].name: x})]
    best = None
    for perm in itertools.permutations(range(4)):
        raw2 = bytearray(raw)
        raw2[4:4 + nbytes] = np.ascontiguousarray(w[:, list(perm)]).tobytes()
        tmp_bin.write_bytes(bytes(raw2))
        got = run_ncnn(tmp_param, tmp_bin, x[0])
        if len(got) != len(ref) or any(g.size != r.size for g, r in zip(got, ref)):
            continue
        err = max(float(np.linalg.norm(g - r) / max(np.linalg.norm(r), 1e-12))
                  for g, r in zip(got, ref))
        if best is None or err < best[0]:
            best = (err, perm, bytes(raw2))
    if best is None or best[0] > 1e-4:
        tmp_param.unlink()
        tmp_bin.unlink(missing_ok=True)
        what = "no phase order" if best is None else f"best phase order off by {best[0]:.2e}"
        raise SystemExit(f"Focus stem found but {what} matches ONNX Runtime; files unchanged")
    tmp_bin.write_bytes(best[2])
    tmp_param.replace(param)
    tmp_bin.replace(binf)
    print(f"rewrote the Focus stem as Reorg (rel L2 {best[0]:.1e} vs ONNX Runtime)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
