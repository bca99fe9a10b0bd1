#!/usr/bin/env python3
"""One peer engine, one model: setup, one untimed inference, then N inferences.

  peer_infer.py ENGINE MODEL_FILE N [C,H,W]

C,H,W: the input shape for ncnn .param files whose Input layer does not declare one (pnnx's).

ENGINE is onnxruntime, litert, mnn or ncnn. Run by bench/arm/run-peers under qemu-aarch64 (the
arm64 Python of build/arm64-peers/sysroot and the peers' aarch64 wheels) with the instruction
counting plugin, once with N and once with 2N: everything before the loop (imports, model load,
session creation, the input, the first inference and its lazy one-time work such as weight
packing) is identical in the two runs, so (count(2N) - count(N)) / N is one inference.

One thread everywhere, fp32 compute everywhere (ncnn's automatic fp16 storage and arithmetic and
MNN's low precision are off; each engine's graph optimizations are left at their defaults). The
input is seeded uniform noise in [-1, 1] (cast for integer inputs): the instruction count of
these models does not depend on the values. The last line printed is "ok ENGINE N OUTPUTS" where
OUTPUTS is the number of output values of the last inference, so a run that silently did
nothing is caught.
"""

import sys

import numpy as np

SEED = 22


def noise(shape, dtype):
    rng = np.random.default_rng(SEED)
    x = rng.uniform(-1.0, 1.0, size=shape)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        x = (x + 1.0) * 0.5 * (info.max - info.min) + info.min
    return np.ascontiguousarray(x.astype(dtype))


def onnxruntime_runner(path):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    types = {"tensor(float)": np.float32, "tensor(uint8)": np.uint8, "tensor(int8)": np.int8}
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = noise(shape, types[i.type])

    def run():
        return sum(o.size for o in sess.run(None, feeds))

    return run


def litert_runner(path):
    from ai_edge_litert.interpreter import Interpreter

    # The default op resolver applies the XNNPACK delegate, as on Android.
    it = Interpreter(model_path=path, num_threads=1)
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], noise(d["shape"], d["dtype"]))
    outs = it.get_output_details()

    def run():
        it.invoke()
        return sum(it.get_tensor(o["index"]).size for o in outs)

    return run


def mnn_runner(path):
    import MNN

    it = MNN.Interpreter(path)
    # precision "normal" is MNN's default: fp32 on the CPU backend ("low" would select the
    # ARMv8.2 fp16 backend)
    sess = it.createSession({"backend": "CPU", "numThread": 1, "precision": "normal"})
    for name, t in it.getSessionInputAll(sess).items():
        shape = t.getShape()
        host = MNN.Tensor(shape, MNN.Halide_Type_Float, noise(shape, np.float32),
                          t.getDimensionType())
        t.copyFrom(host)
    outs = it.getSessionOutputAll(sess)

    def run():
        it.runSession(sess)
        return sum(int(np.prod(o.getShape())) for o in outs.values())

    return run


def ncnn_runner(path, chw=None):
    import ncnn

    sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/../peers")
    import common  # bench/peers/common.py: the .param parser

    net = ncnn.Net()
    net.opt.num_threads = 1
    net.opt.use_vulkan_compute = False
    for flag in ("use_fp16_packed", "use_fp16_storage", "use_fp16_arithmetic",
                 "use_bf16_storage"):
        setattr(net.opt, flag, False)
    binf = path[:-len(".param")] + ".bin"
    if net.load_param(path) or net.load_model(binf):
        raise RuntimeError(f"ncnn cannot load {path}")
    inputs, outputs = common.parse_ncnn_param(path)
    shapes = {}
    for line in open(path).read().split("\n")[2:]:
        f = line.split()
        if f and f[0] == "Input":
            # Input layer params: 0=w 1=h 2=c
            p = dict(kv.split("=") for kv in f[4 + int(f[2]) + int(f[3]):])
            if "0" in p and "1" in p:
                shapes[f[4 + int(f[2])]] = (int(p.get("2", 1)), int(p["1"]), int(p["0"]))
    mats = {}
    for name in inputs:
        if name not in shapes and not chw:
            raise RuntimeError(f"{path}: Input {name} has no shape; pass C,H,W")
        c, h, w = shapes.get(name) or chw
        mats[name] = ncnn.Mat(noise((c, h, w), np.float32))

    def run():
        ex = net.create_extractor()
        for name, m in mats.items():
            ex.input(name, m)
        total = 0
        for name in outputs:
            ret, out = ex.extract(name)
            if ret:
                raise RuntimeError(f"ncnn extract {name} failed ({ret})")
            total += out.w * out.h * out.d * out.c
        return total

    return run


RUNNERS = {"onnxruntime": onnxruntime_runner, "litert": litert_runner, "mnn": mnn_runner,
           "ncnn": ncnn_runner}


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[1] not in RUNNERS:
        print(__doc__, file=sys.stderr)
        return 2
    engine, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if len(sys.argv) == 5:
        run = RUNNERS[engine](path, tuple(int(v) for v in sys.argv[4].split(",")))
    else:
        run = RUNNERS[engine](path)
    values = run()  # the first inference: lazy one-time work belongs to setup
    for _ in range(n):
        values = run()
    if not values:
        print(f"{engine}: the inference produced no output", file=sys.stderr)
        return 1
    print(f"ok {engine} {n} {values}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
