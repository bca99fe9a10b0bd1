#!/usr/bin/env python3
"""Writes small synthetic .tflite flatbuffers (a few ops each) as the seed corpus of fuzz_tflite.

Usage: gen_seeds_tflite.py OUT_DIR

The files are built from scratch here with `struct` (no flatc, no real model content). They
cover the reader's main paths: builtin options, fused activations, constants, per-channel
quantization, fp16 DEQUANTIZE folding, DENSIFY of a CSR sparse constant, raw custom options
(Convolution2DTransposeBias) and FlexBuffer custom options (MediaPipe ops).

The layout is front-to-back (children after their parents), which FlatBuffers allows: uoffsets
only need to point forward and vtables may sit before their table.
"""
import os
import struct
import sys


class Table:
    def __init__(self, *fields):
        # fields: (index, kind, value); kind: b B h i I q Q f (scalars), 'ref' (child object)
        self.fields = fields


class Vec:
    def __init__(self, kind, items):
        self.kind = kind  # scalar struct code, or 'ref' for tables/strings
        self.items = items


class Str:
    def __init__(self, s):
        self.s = s.encode() if isinstance(s, str) else s


class Builder:
    def __init__(self):
        self.buf = bytearray()

    def align(self, n):
        while len(self.buf) % n:
            self.buf.append(0)

    def emit(self, obj):
        if isinstance(obj, Str):
            self.align(4)
            pos = len(self.buf)
            self.buf += struct.pack('<I', len(obj.s)) + obj.s + b'\0'
            return pos
        if isinstance(obj, Vec):
            if obj.kind == 'ref':
                self.align(4)
                pos = len(self.buf)
                self.buf += struct.pack('<I', len(obj.items))
                slots = []
                for _ in obj.items:
                    slots.append(len(self.buf))
                    self.buf += b'\0\0\0\0'
                for slot, item in zip(slots, obj.items):
                    target = self.emit(item)
                    struct.pack_into('<I', self.buf, slot, target - slot)
                return pos
            size = struct.calcsize('<' + obj.kind)
            self.align(max(4, size))
            if size == 8 and len(self.buf) % 8 == 0:
                self.buf += b'\0\0\0\0'  # elements 8-aligned after the count
            pos = len(self.buf)
            self.buf += struct.pack('<I', len(obj.items))
            for v in obj.items:
                self.buf += struct.pack('<' + obj.kind, v)
            return pos
        # Table: vtable first, then the table, then the children.
        fields = sorted(obj.fields, key=lambda f: f[0])
        layout, off = [], 4
        for idx, kind, val in fields:
            size = 4 if kind == 'ref' else struct.calcsize('<' + kind)
            while off % size:
                off += 1
            layout.append((idx, kind, val, off))
            off += size
        tbl_size = off
        nslots = (max([f[0] for f in fields]) + 1) if fields else 0
        vt = [0] * nslots
        for idx, kind, val, o in layout:
            vt[idx] = o
        self.align(2)
        vt_pos = len(self.buf)
        self.buf += struct.pack('<HH', 4 + 2 * nslots, tbl_size)
        for o in vt:
            self.buf += struct.pack('<H', o)
        self.align(8)
        if (len(self.buf) - vt_pos) > 0xFFFF:
            raise ValueError('vtable too far')
        pos = len(self.buf)
        self.buf += b'\0' * tbl_size
        struct.pack_into('<i', self.buf, pos, pos - vt_pos)
        refs = []
        for idx, kind, val, o in layout:
            if kind == 'ref':
                refs.append((pos + o, val))
            else:
                struct.pack_into('<' + kind, self.buf, pos + o, val)
        for slot, child in refs:
            target = self.emit(child)
            struct.pack_into('<I', self.buf, slot, target - slot)
        return pos


def model(tensors, inputs, outputs, ops, opcodes, buffers, description='synthetic seed'):
    sg = Table((0, 'ref', Vec('ref', tensors)), (1, 'ref', Vec('i', inputs)),
               (2, 'ref', Vec('i', outputs)), (3, 'ref', Vec('ref', ops)), (4, 'ref', Str('main')))
    root = Table((0, 'I', 3), (1, 'ref', Vec('ref', opcodes)), (2, 'ref', Vec('ref', [sg])),
                 (3, 'ref', Str(description)), (4, 'ref', Vec('ref', buffers)))
    b = Builder()
    b.buf += b'\0\0\0\0TFL3'
    pos = b.emit(root)
    struct.pack_into('<I', b.buf, 0, pos)
    return bytes(b.buf)


F32, F16, I32, U8, I64, I8 = 0, 1, 2, 3, 4, 9


def tensor(name, shape, ttype=F32, buffer=0, quant=None, sparsity=None):
    f = [(0, 'ref', Vec('i', shape)), (1, 'b', ttype), (2, 'I', buffer), (3, 'ref', Str(name))]
    if quant:
        scales, zps, dim = quant
        f.append((4, 'ref', Table((2, 'ref', Vec('f', scales)), (3, 'ref', Vec('q', zps)),
                                  (6, 'i', dim))))
    if sparsity:
        f.append((6, 'ref', sparsity))
    return Table(*f)


def buf(data=b''):
    return Table((0, 'ref', Vec('B', list(data)))) if data else Table()


def opcode(code, custom=None, version=1):
    f = [(0, 'b', min(code, 127)), (2, 'i', version), (3, 'i', code)]
    if custom:
        f.append((1, 'ref', Str(custom)))
    return Table(*f)


def op(idx, ins, outs, opt_type=0, opt=None, custom=None):
    f = [(0, 'I', idx), (1, 'ref', Vec('i', ins)), (2, 'ref', Vec('i', outs))]
    if opt is not None:
        f += [(3, 'B', opt_type), (4, 'ref', opt)]
    if custom is not None:
        f.append((5, 'ref', Vec('B', list(custom))))
    return Table(*f)


def f32s(vals):
    return struct.pack('<%df' % len(vals), *vals)


def seed_conv():
    w = f32s([0.1 * (i % 7) - 0.3 for i in range(3 * 3 * 3 * 2)])
    tensors = [tensor('input', [1, 4, 4, 2]), tensor('w', [3, 3, 3, 2], buffer=1),
               tensor('b', [3], buffer=2), tensor('conv', [1, 4, 4, 3]),
               tensor('c', [3], buffer=3), tensor('output', [1, 4, 4, 3])]
    conv_opt = Table((0, 'b', 0), (1, 'i', 1), (2, 'i', 1), (3, 'b', 1))
    add_opt = Table((0, 'b', 3))
    ops = [op(0, [0, 1, 2], [3], 1, conv_opt), op(1, [3, 4], [5], 11, add_opt)]
    return model(tensors, [0], [5], ops, [opcode(3), opcode(0)],
                 [buf(), buf(w), buf(f32s([0, 1, 2])), buf(f32s([1, 1, 1]))])


def seed_depthwise_pool():
    tensors = [tensor('input', [1, 6, 6, 2]), tensor('dw', [1, 3, 3, 4], buffer=1),
               tensor('dwout', [1, 3, 3, 4]), tensor('pool', [1, 1, 1, 4]),
               tensor('shape', [2], I32, buffer=2), tensor('flat', [1, 4]),
               tensor('prob', [1, 4])]
    dw_opt = Table((0, 'b', 1), (1, 'i', 2), (2, 'i', 2), (3, 'i', 2), (4, 'b', 3))
    pool_opt = Table((0, 'b', 1), (1, 'i', 1), (2, 'i', 1), (3, 'i', 3), (4, 'i', 3))
    sm_opt = Table((0, 'f', 1.0))
    ops = [op(0, [0, 1, -1], [2], 2, dw_opt), op(1, [2], [3], 5, pool_opt),
           op(2, [3, 4], [5], 17, Table((0, 'ref', Vec('i', [1, 4])))),
           op(3, [5], [6], 9, sm_opt)]
    return model(tensors, [0], [6], ops, [opcode(4), opcode(1), opcode(22), opcode(25)],
                 [buf(), buf(f32s([0.5] * 36)), buf(struct.pack('<2i', 1, 4))])


def seed_sparse_fp16():
    # 4x4 weights, rows stored CSR: values in fp16.
    vals = [1.0, -2.0, 0.5, 3.0, 4.0]
    half = b''.join(struct.pack('<e', v) for v in vals)
    dense_dim = Table((0, 'b', 0), (1, 'i', 4))
    sparse_dim = Table((0, 'b', 1), (2, 'B', 1), (3, 'ref', Table((0, 'ref', Vec('i', [0, 2, 3, 3, 5])))),
                       (4, 'B', 3), (5, 'ref', Table((0, 'ref', Vec('B', [0, 3, 1, 0, 2])))))
    sparsity = Table((0, 'ref', Vec('i', [0, 1])), (2, 'ref', Vec('ref', [dense_dim, sparse_dim])))
    tensors = [tensor('input', [1, 4]), tensor('w_sparse', [4, 4], F16, 1, sparsity=sparsity),
               tensor('w_f16', [4, 4], F16), tensor('w', [4, 4]), tensor('output', [1, 4])]
    ops = [op(0, [1], [2]), op(1, [2], [3]), op(2, [0, 3, -1], [4], 8, Table((0, 'b', 0)))]
    return model(tensors, [0], [4], ops, [opcode(124), opcode(6), opcode(9)],
                 [buf(), buf(half)])


def seed_quant():
    w = bytes((i * 37) % 256 for i in range(4 * 1 * 1 * 3))
    tensors = [tensor('input', [1, 2, 2, 3]),
               tensor('q', [1, 2, 2, 3], U8, quant=([0.02], [128], 0)),
               tensor('w', [4, 1, 1, 3], I8, 1, quant=([0.1, 0.2, 0.3, 0.4], [0, 0, 0, 0], 0)),
               tensor('bias', [4], I32, 2, quant=([0.002, 0.004, 0.006, 0.008], [0, 0, 0, 0], 0)),
               tensor('qc', [1, 2, 2, 4], U8, quant=([0.05], [10], 0)),
               tensor('output', [1, 2, 2, 4])]
    conv_opt = Table((0, 'b', 1), (1, 'i', 1), (2, 'i', 1), (3, 'b', 3))
    ops = [op(0, [0], [1]), op(1, [1, 2, 3], [4], 1, conv_opt), op(2, [4], [5])]
    return model(tensors, [0], [5], ops, [opcode(114), opcode(3), opcode(6)],
                 [buf(), buf(w), buf(struct.pack('<4i', 1, -2, 3, -4))])


def flex_map(entries):
    """Minimal FlexBuffer map encoder: ints (32-bit), floats (32-bit), int16 typed vectors."""
    out = bytearray()
    key_pos = {}
    for k in sorted(entries):
        key_pos[k] = len(out)
        out += k.encode() + b'\0'
    vec_pos = {}
    for k in sorted(entries):
        v = entries[k]
        if isinstance(v, list):
            while len(out) % 2:
                out.append(0)
            out += struct.pack('<H', len(v))
            vec_pos[k] = len(out)
            for x in v:
                out += struct.pack('<h', x)
    while len(out) % 4:
        out.append(0)
    keys = sorted(entries)
    out += struct.pack('<I', len(keys))  # keys vector length (width 4)
    keys_vec = len(out)
    for k in keys:
        out += struct.pack('<I', len(out) - key_pos[k])
    out += struct.pack('<I', len(out) - keys_vec)  # offset back to the keys vector
    out += struct.pack('<I', 4)  # keys byte width
    out += struct.pack('<I', len(keys))  # map length
    values = len(out)
    types = []
    for k in keys:
        v = entries[k]
        if isinstance(v, list):
            out += struct.pack('<I', len(out) - vec_pos[k])
            types.append((11 << 2) | 1)  # VECTOR_INT, 16-bit elements
        elif isinstance(v, float):
            out += struct.pack('<f', v)
            types.append((3 << 2) | 2)
        else:
            out += struct.pack('<i', v)
            types.append((1 << 2) | 2)
    out += bytes(types)
    root = len(out)
    out += struct.pack('<B', root - values)  # root: offset back to the map (width 1)
    out += bytes([(9 << 2) | 2, 1])  # MAP with 32-bit children; root width 1
    return bytes(out)


def seed_mediapipe():
    l2m = flex_map({'left_rotation_idx': 0, 'right_rotation_idx': 1, 'output_height': 4,
                    'output_width': 4, 'scale_x': 1.5, 'scale_y': 1.5,
                    'target_rotation_radians': 0.0, 'subset_idxs': [0, 1, 2, 3, 4]})
    ttb = flex_map({'output_height': 4, 'output_width': 4})
    tensors = [tensor('landmarks', [1, 6, 3]), tensor('features', [1, 8, 8, 2]),
               tensor('matrix', [1, 4, 4]), tensor('crop', [1, 4, 4, 2]),
               tensor('points', [1, 6, 2]), tensor('moved', [1, 6, 2]),
               tensor('w', [1, 2, 2, 2], buffer=1), tensor('b', [1], buffer=2),
               tensor('up', [1, 8, 8, 1])]
    tconv = struct.pack('<3i', 1, 2, 2)
    ops = [op(0, [0], [2], custom=l2m), op(1, [1, 2], [3], custom=ttb),
           op(2, [4, 2], [5], custom=b''), op(3, [3, 6, 7], [8], custom=tconv)]
    opcodes = [opcode(32, 'Landmarks2TransformMatrix', 2), opcode(32, 'TransformTensorBilinear', 2),
               opcode(32, 'TransformLandmarks', 2), opcode(32, 'Convolution2DTransposeBias')]
    return model(tensors, [0, 1, 4], [5, 8], ops, opcodes,
                 [buf(), buf(f32s([0.25] * 8)), buf(f32s([0.5]))])


def seed_misc():
    tensors = [tensor('input', [1, 4, 4, 2]), tensor('size', [2], I32, 1),
               tensor('up', [1, 8, 8, 2]), tensor('axes', [2], I32, 2), tensor('mean', [1, 1, 1, 2]),
               tensor('begin', [4], I32, 3), tensor('end', [4], I32, 4), tensor('strides', [4], I32, 5),
               tensor('sl', [1, 2, 2, 2]), tensor('flat', [8]), tensor('packed', [2, 8]),
               tensor('cat', [1, 8, 8, 4])]
    ops = [op(0, [0, 1], [2], 15, Table((2, 'B', 0), (3, 'B', 1))),
           op(1, [2, 3], [4], 27, Table((0, 'B', 1))),
           op(2, [0, 5, 6, 7], [8], 32, Table((0, 'i', 0), (1, 'i', 1), (4, 'i', 0))),
           op(3, [8], [9], 17, Table((0, 'ref', Vec('i', [8])))),
           op(4, [9, 9], [10], 59, Table((0, 'i', 2), (1, 'i', 0))),
           op(5, [2, 2], [11], 10, Table((0, 'i', 3), (1, 'b', 0)))]
    opcodes = [opcode(23), opcode(40), opcode(45), opcode(22), opcode(83), opcode(2)]
    bufs = [buf(), buf(struct.pack('<2i', 8, 8)), buf(struct.pack('<2i', 1, 2)),
            buf(struct.pack('<4i', 0, 1, 1, 0)), buf(struct.pack('<4i', 1, 3, 3, 2)),
            buf(struct.pack('<4i', 1, 1, 1, 1))]
    return model(tensors, [0], [4, 10, 11], ops, opcodes, bufs)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {'conv_add.tflite': seed_conv(), 'depthwise_pool_softmax.tflite': seed_depthwise_pool(),
             'sparse_fp16_fc.tflite': seed_sparse_fp16(), 'quant_conv.tflite': seed_quant(),
             'mediapipe_custom.tflite': seed_mediapipe(), 'misc_ops.tflite': seed_misc()}
    for name, data in seeds.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
        print('%s: %d bytes' % (name, len(data)))


if __name__ == '__main__':
    main()
