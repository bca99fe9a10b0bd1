#!/usr/bin/env python3
"""Seed corpus for fuzz_npy: small synthetic .npy files (versions 1-3, every dtype the reader
takes, scalars, empty and multi-dimensional shapes, a Fortran-order one), written by hand from
the format's definition (no NumPy needed).

    gen_seeds_npy.py OUTDIR
"""
import os
import struct
import sys


def npy(descr, shape, payload, version=1, fortran=False):
    dims = "".join(f"{d}, " for d in shape) if len(shape) == 1 else ", ".join(map(str, shape))
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (
        descr, "True" if fortran else "False", dims)
    pre = 10 if version == 1 else 12
    pad = 64 - (pre + len(header) + 1) % 64
    header = (header + " " * pad + "\n").encode("latin1")
    size = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header + payload


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {
        "f4_2x3": npy("<f4", (2, 3), struct.pack("<6f", *range(6))),
        "f2_4": npy("<f2", (4,), b"\x00\x3c" * 4),
        "i4_scalar": npy("<i4", (), struct.pack("<i", 7)),
        "i8_2": npy("<i8", (2,), struct.pack("<2q", 1, -1), version=2),
        "u1_1x2x2x3": npy("|u1", (1, 2, 2, 3), bytes(range(12)), version=3),
        "i1_3": npy("|i1", (3,), b"\x01\xff\x02"),
        "b1_2": npy("|b1", (2,), b"\x01\x00"),
        "i2_empty": npy("<i2", (0, 5), b""),
        "fortran": npy("<f4", (2, 2), struct.pack("<4f", 1, 2, 3, 4), fortran=True),
        "claims_more": npy("<f4", (1000000,), struct.pack("<4f", 1, 2, 3, 4)),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name + ".npy"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
