#!/usr/bin/env python3
"""Writes small synthetic ONNX models (hand-encoded protobuf, no onnx package) as fuzz seeds.

Usage: gen_seeds_onnx.py OUTDIR

Each model has a couple of nodes and tiny constants; none is derived from a real model.
Field numbers follow onnx.proto (ModelProto 1 ir_version, 7 graph, 8 opset_import; GraphProto
1 node, 5 initializer, 11 input, 12 output; NodeProto 1 input, 2 output, 3 name, 4 op_type,
5 attribute; AttributeProto 1 name, 2 f, 3 i, 4 s, 7 floats, 8 ints, 20 type; TensorProto 1 dims,
2 data_type, 8 name, 9 raw_data).
"""
import os
import struct
import sys


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def f_int(field, v):
    return key(field, 0) + varint(v)


def f_bytes(field, b):
    if isinstance(b, str):
        b = b.encode()
    return key(field, 2) + varint(len(b)) + b


def f_float(field, v):
    return key(field, 5) + struct.pack("<f", v)


def attr_i(name, v):
    return f_bytes(5, f_bytes(1, name) + f_int(3, v) + f_int(20, 2))


def attr_f(name, v):
    return f_bytes(5, f_bytes(1, name) + f_float(2, v) + f_int(20, 1))


def attr_s(name, v):
    return f_bytes(5, f_bytes(1, name) + f_bytes(4, v) + f_int(20, 3))


def attr_ints(name, vals):
    packed = b"".join(varint(v) for v in vals)
    return f_bytes(5, f_bytes(1, name) + f_bytes(8, packed) + f_int(20, 7))


def node(op, ins, outs, name, *attrs):
    b = b"".join(f_bytes(1, i) for i in ins) + b"".join(f_bytes(2, o) for o in outs)
    return f_bytes(1, b + f_bytes(3, name) + f_bytes(4, op) + b"".join(attrs))


def tensor(name, dims, vals, dtype=1):
    fmt = {1: "<%df", 7: "<%dq"}[dtype]
    raw = struct.pack(fmt % len(vals), *vals)
    b = b"".join(f_int(1, d) for d in dims) + f_int(2, dtype) + f_bytes(8, name) + f_bytes(9, raw)
    return f_bytes(5, b)


def value_info(field, name, dims, elem=1):
    shape = b"".join(
        f_bytes(1, f_bytes(2, d) if isinstance(d, str) else f_int(1, d)) for d in dims
    )
    tt = f_int(1, elem) + f_bytes(2, shape)
    return f_bytes(field, f_bytes(1, name) + f_bytes(2, f_bytes(1, tt)))


def model(nodes, inits, inputs, outputs, opset=11):
    g = b"".join(nodes) + f_bytes(2, "seed") + b"".join(inits)
    g += b"".join(value_info(11, *i) for i in inputs)
    g += b"".join(value_info(12, *o) for o in outputs)
    return f_int(1, 7) + f_bytes(8, f_bytes(1, "") + f_int(2, opset)) + f_bytes(7, g)


def seeds():
    w = [0.1 * ((i * 7) % 5 - 2) for i in range(2 * 3 * 3 * 3)]
    yield "conv_bn_relu", model(
        [
            node("Conv", ["x", "w", "b"], ["c"], "conv", attr_ints("kernel_shape", [3, 3]),
                 attr_ints("pads", [1, 1, 1, 1]), attr_ints("strides", [1, 1])),
            node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"], "bn",
                 attr_f("epsilon", 1e-5)),
            node("Relu", ["n"], ["y"], "relu"),
        ],
        [tensor("w", [2, 3, 3, 3], w), tensor("b", [2], [0.1, -0.1]),
         tensor("s", [2], [1.0, 0.5]), tensor("bb", [2], [0.0, 0.2]),
         tensor("m", [2], [0.1, 0.0]), tensor("v", [2], [1.0, 2.0])],
        [("x", [1, 3, 5, 5])], [("y", [1, 2, 5, 5])])
    yield "pool_concat_softmax", model(
        [
            node("MaxPool", ["x"], ["p"], "pool", attr_ints("kernel_shape", [2, 2]),
                 attr_ints("strides", [2, 2])),
            node("GlobalAveragePool", ["x"], ["g"], "gap"),
            node("Flatten", ["p"], ["f"], "flat", attr_i("axis", 1)),
            node("Softmax", ["f"], ["y"], "sm", attr_i("axis", 1)),
            node("Sigmoid", ["g"], ["z"], "sig"),
        ],
        [], [("x", [1, 2, 4, 4])], [("y", [1, 8]), ("z", [1, 2, 1, 1])], opset=9)
    yield "dynamic_shape_reshape", model(
        [
            node("Shape", ["x"], ["s"], "shape"),
            node("Gather", ["s", "i0"], ["n"], "gather", attr_i("axis", 0)),
            node("Unsqueeze", ["n"], ["nu"], "unsq", attr_ints("axes", [0])),
            node("Concat", ["nu", "minus1"], ["shp"], "cat", attr_i("axis", 0)),
            node("Transpose", ["x"], ["t"], "tr", attr_ints("perm", [0, 2, 3, 1])),
            node("Reshape", ["t", "shp"], ["y"], "reshape"),
        ],
        [tensor("i0", [], [0], 7), tensor("minus1", [1], [-1], 7)],
        [("x", ["N", 3, "H", "W"])], [("y", ["N", "D"])])
    yield "resize_slice_split", model(
        [
            node("Resize", ["x", "roi", "sc"], ["r"], "resize", attr_s("mode", "nearest"),
                 attr_s("coordinate_transformation_mode", "asymmetric"),
                 attr_s("nearest_mode", "floor")),
            node("Slice", ["r", "st", "en", "ax"], ["sl"], "slice"),
            node("Split", ["sl"], ["a", "b"], "split", attr_i("axis", 1),
                 attr_ints("split", [1, 1])),
            node("Add", ["a", "b"], ["y"], "add"),
        ],
        [tensor("roi", [0], []), tensor("sc", [4], [1, 1, 2, 2]),
         tensor("st", [1], [0], 7), tensor("en", [1], [2], 7), tensor("ax", [1], [1], 7)],
        [("x", [1, 3, 2, 2])], [("y", [1, 1, 4, 4])])
    yield "gemm_clip_pad", model(
        [
            node("Pad", ["x", "pads"], ["p"], "pad", attr_s("mode", "constant")),
            node("Flatten", ["p"], ["f"], "flat"),
            node("Gemm", ["f", "gw", "gb"], ["g"], "gemm", attr_i("transB", 1)),
            node("Clip", ["g", "lo", "hi"], ["y"], "clip"),
        ],
        [tensor("pads", [8], [0, 0, 1, 1, 0, 0, 1, 1], 7),
         tensor("gw", [2, 16], [0.01 * i for i in range(32)]), tensor("gb", [2], [0.5, -0.5]),
         tensor("lo", [], [0.0]), tensor("hi", [], [6.0])],
        [("x", [1, 1, 2, 2])], [("y", [1, 2])])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in seeds():
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
