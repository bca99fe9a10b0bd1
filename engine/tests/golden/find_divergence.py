#!/usr/bin/env python3
"""Find the first tensor where Kestrel departs from the reference runtime.

Usage:
    find_divergence.py MODEL.{tflite,onnx} MODEL.ksm --ks-run PATH
                       [--cache DIR] [--set NAME] [--input NAME=FILE.npy ...] [--all]

Runs the source model in its reference runtime keeping every intermediate tensor (LiteRT with
experimental_preserve_all_tensors and the reference kernels; ONNX Runtime with every node output
added as a graph output, optimizations off so names survive), runs `ks-run MODEL.ksm
--dump-all DIR`, matches tensors by name (file name = tensor name with characters outside
[A-Za-z0-9._-] replaced by '_'), and walks the reference graph in topological order. It prints
the first tensor beyond the golden tolerance with its producing op and errors (with --all, every
compared tensor). Kestrel may keep ONNX intermediates in NHWC where ONNX has NCHW: when shapes
differ by a permutation, the transposed comparison is tried and reported.

Inputs come from --input, else from the golden cache (--cache, set --set, default "random"),
else are made with make_reference's random generator.
Models with MediaPipe custom ops (golden_common.MEDIAPIPE_RUNTIME) cannot be run with all
intermediates by any available runtime; the script says so and exits 2.
"""

import argparse
import itertools
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_common as gc  # noqa: E402
import make_reference  # noqa: E402


def tflite_intermediates(model_path, feeds):
    """Return [(tensor name, op name, array)] in execution order, inputs first."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_path=model_path, num_threads=1,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                     experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], feeds[d["name"]])
    it.invoke()
    details = {d["index"]: d for d in it.get_tensor_details()}
    seq = [(d["name"], "input", np.array(it.get_tensor(d["index"]))) for d in it.get_input_details()]
    seen = {n for n, _, _ in seq}
    for op in it._get_ops_details():  # noqa: SLF001 (the public API has no op list)
        for t in op["outputs"]:
            if t < 0 or t not in details:
                continue
            name = details[t]["name"]
            if name in seen:
                continue
            seen.add(name)
            try:
                val = np.array(it.get_tensor(t))
            except ValueError:
                continue
            seq.append((name, op["op_name"], val))
    return seq


def onnx_intermediates(model_path, feeds):
    import onnx
    import onnxruntime as ort
    model = onnx.load(model_path)
    existing = {o.name for o in model.graph.output}
    order = []
    for node in model.graph.node:  # ONNX requires nodes in topological order
        for o in node.output:
            if o:
                order.append((o, node.op_type))
                if o not in existing:
                    model.graph.output.append(onnx.ValueInfoProto(name=o))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    vals = dict(zip(names, sess.run(names, feeds)))
    seq = [(n, "input", v) for n, v in feeds.items()]
    seq += [(n, op, vals[n]) for n, op in order if n in vals]
    return seq


def compare_any_layout(ref, got):
    """compare() as is, else on a transposed view of got when the shapes are a permutation."""
    if got.shape == ref.shape or got.size != ref.size:
        return gc.compare(ref, got), None
    if ref.ndim == got.ndim and sorted(ref.shape) == sorted(got.shape) and ref.ndim <= 6:
        best = None
        for perm in itertools.permutations(range(got.ndim)):
            if tuple(got.shape[p] for p in perm) != ref.shape:
                continue
            c = gc.compare(ref, np.ascontiguousarray(got.transpose(perm)))
            if best is None or c["rel_l2"] < best[0]["rel_l2"]:
                best = (c, perm)
        if best is not None:
            return best
    return gc.compare(ref, got.reshape(ref.shape)), "reshape"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("ksm")
    ap.add_argument("--ks-run", required=True)
    ap.add_argument("--cache", help="golden reference cache dir, for its inputs")
    ap.add_argument("--set", default="random")
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    ap.add_argument("--all", action="store_true", help="print every compared tensor")
    args = ap.parse_args(argv)

    model_path = os.path.abspath(args.model)
    if gc.stem(model_path) in gc.MEDIAPIPE_RUNTIME:
        print(f"{model_path}: has MediaPipe custom ops; no available runtime exposes its "
              "intermediates (golden references come from mediapipe's graph runtime)")
        return 2
    ins, _ = gc.model_io(model_path)
    feeds = {}
    for spec in args.input:
        name, _, path = spec.partition("=")
        feeds[name] = np.load(path)
    if not feeds and args.cache:
        meta = make_reference.ensure_reference(model_path, args.cache)
        st = next((s for s in meta["sets"] if s["name"] == args.set), None)
        if st is None:
            print(f"no input set {args.set!r} in the cache for {model_path}", file=sys.stderr)
            return 2
        base = os.path.join(args.cache, gc.stem(model_path))
        feeds = {n: np.load(os.path.join(base, rel)) for n, rel in st["inputs"].items()}
    for k, i in enumerate(ins):
        if i.name not in feeds:
            feeds[i.name] = make_reference._random_input(i, gc.convention(model_path), 1234 + k)

    seq = (onnx_intermediates if model_path.endswith(".onnx") else tflite_intermediates)(
        model_path, feeds)

    with tempfile.TemporaryDirectory(prefix="ks-divergence-") as tmp:
        cmd = [args.ks_run, args.ksm]
        for k, (name, arr) in enumerate(feeds.items()):
            p = os.path.join(tmp, f"in{k}.npy")
            np.save(p, arr)
            cmd += ["--input", f"{name}={p}"]
        dump = os.path.join(tmp, "dump")
        os.makedirs(dump)
        cmd += ["--dump-all", dump]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            print(f"ks-run failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout}")
            return 1
        num_compared = num_missing = 0
        for name, op, ref in seq:
            path = os.path.join(dump, gc.sanitize(name) + ".npy")
            if not os.path.isfile(path):
                num_missing += 1  # fused away or renamed by the converter
                continue
            got = np.load(path)
            num_compared += 1
            c, how = compare_any_layout(ref, got)
            layout = "" if how is None else f" (compared as {how if how == 'reshape' else 'transpose' + str(how)})"
            line = (f"{name} [{op}] {list(ref.shape)} {ref.dtype}: rel_l2={c['rel_l2']:.3g} "
                    f"max_abs={c['max_abs']:.3g} exact={c['pct_exact']:.2f}%{layout}")
            if not c["ok"]:
                print(f"FIRST DIVERGENCE: {line}" + (f" -- {c['why']}" if c["why"] else ""))
                print(f"({num_compared} tensors compared, {num_missing} reference tensors had no "
                      "Kestrel dump)")
                return 1
            if args.all:
                print(f"ok   {line}")
        print(f"no divergence: {num_compared} tensors matched by name agree "
              f"({num_missing} reference tensors had no Kestrel dump)")
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
