#!/usr/bin/env python3
"""Writes small synthetic .ksb seeds for fuzz_bundle into DIR (argv[1]), following the byte
format in pipeline/include/kestrel/bundle.h (no real models)."""
import json
import os
import struct
import sys
import zlib

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def bundle(entries, checksum=True):
    table = 64
    off = (table + 128 * len(entries) + 63) // 64 * 64
    layout = []
    for name, kind, data in entries:
        off = (off + 63) // 64 * 64
        layout.append((name, kind, data, off))
        off += len(data)
    total = off
    buf = bytearray(total)
    struct.pack_into("<4sHHIIQII Q", buf, 0, b"KSBF", 1, 0, 64, 1 if checksum else 0, total,
                     len(entries), 0, table)
    for i, (name, kind, data, o) in enumerate(layout):
        e = table + 128 * i
        struct.pack_into("<IIQQII", buf, e, kind, 0, o, len(data),
                         zlib.crc32(data) & 0xffffffff, 0)
        buf[e + 32:e + 32 + len(name)] = name.encode()
        buf[o:o + len(data)] = data
    if checksum:
        struct.pack_into("<I", buf, 28, zlib.crc32(bytes(buf)) & 0xffffffff)
    return bytes(buf)


graph = json.dumps({"inputs": ["x"], "outputs": ["y"], "nodes": [
    {"type": "gate", "inputs": ["x", "x"], "outputs": ["y"]}]}).encode()
seeds = {
    "graph_only": bundle([("graph", 2, graph)]),
    "mixed": bundle([("graph", 2, graph), ("labels", 3, b"face\nhand\n"),
                     ("anchors", 4, b"{\"num_layers\":4}"), ("blob", 0, b"")]),
    "no_crc": bundle([("graph", 2, b"{\"nodes\":[]}")], checksum=False),
    "bad_model": bundle([("graph", 2, json.dumps({"nodes": [
        {"type": "infer", "inputs": [], "outputs": ["t"], "options": {"model": "m"}}]}).encode()),
        ("m", 1, b"KSMF" + bytes(60))]),
}
for name, data in seeds.items():
    with open(os.path.join(out, name + ".ksb"), "wb") as f:
        f.write(data)
