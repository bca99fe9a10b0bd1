#!/usr/bin/env python3
"""Writes seeds for fuzz_package: gen_seeds_package.py OUT_DIR. Packages follow docs/delivery.md
("Package format") with a zero signature (the fuzzer re-signs what it verifies), plus two
self-test files."""
import hashlib
import os
import struct
import sys


def package(pkg_id, version, files, key_name=b"", issued=1, min_runtime=0x000100):
    manifest = bytes([len(pkg_id)]) + pkg_id
    manifest += struct.pack("<IIIIQ", *version, min_runtime, issued)
    manifest += bytes([len(key_name)]) + key_name
    manifest += struct.pack("<I", len(files))
    payload = b""
    for name, data in files:
        manifest += struct.pack("<H", len(name)) + name
        manifest += struct.pack("<Q", len(data)) + hashlib.sha256(data).digest()
        payload += data
    header = b"KSPKG\r\n\x1a" + struct.pack("<HHIQ", 1, 0, len(manifest), len(payload))
    header += bytes(8)  # key id
    return header + manifest + bytes(64) + payload


def selftest(model, inputs, outputs):
    d = b"KSTT" + struct.pack("<IH", 1, len(model)) + model
    d += struct.pack("<I", len(inputs))
    for i, data in inputs:
        d += struct.pack("<IQ", i, len(data)) + data
    d += struct.pack("<I", len(outputs))
    for i, tol, data in outputs:
        d += struct.pack("<IfQ", i, tol, len(data)) + data
    return d


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    x = struct.pack("<4f", 0.5, -1, 2, -3)
    seeds = {
        "one_file": package(b"face", (1, 0, 0), [(b"model.ksm", b"KSM0" + bytes(60))]),
        "folders": package(b"face.landmarks", (2, 3, 4),
                           [(b"model.ksm", bytes(100)), (b"effects/cat/ears.kfx", b"PK" + bytes(40)),
                            (b"notes/readme.txt", b"hello\n")], key_name=b"app-key-2026"),
        "empty_file": package(b"e", (0, 0, 1), [(b"a", b"")]),
        "selftest": selftest(b"model.ksm", [(0, x)], [(0, 1e-5, x)]),
        "selftest_face": b"KSTF" + struct.pack("<IH", 1, 5) + b"f.ksb" + struct.pack("<II", 2, 2)
        + bytes(12) + struct.pack("<IfI", 1, 0.5, 1) + struct.pack("<4f", 0, 0, 1, 1),
        "selftest_pkg": package(b"st", (1, 0, 0), [(b"selftest.kst", selftest(b"m.ksm", [(0, x)], [(0, 0.0, x)]))]),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
