#!/usr/bin/env python3
"""Seed corpus for fuzz_glb (FORMAT=mesh3d_glb in engine/tests/fuzz/run_fuzzer.cmake).

Writes whole .glb files (a textured quad scene, a box without normals, an empty scene) and
JSON-only seeds (first byte '{'), which fuzz_glb wraps with its fixed BIN chunk (layout in
fuzz_glb.c). Usage: gen_seeds_mesh3d_glb.py OUT_DIR
"""
import json
import os
import struct
import sys


def glb(doc, bin_bytes=None):
    j = json.dumps(doc, separators=(",", ":")).encode()
    j += b" " * (-len(j) % 4)
    out = struct.pack("<II", len(j), 0x4E4F534A) + j
    if bin_bytes is not None:
        b = bin_bytes + b"\0" * (-len(bin_bytes) % 4)
        out += struct.pack("<II", len(b), 0x004E4942) + b
    return struct.pack("<III", 0x46546C67, 2, 12 + len(out)) + out


def box():
    pos = []
    for z in (-1, 1):
        for y in (-1, 1):
            for x in (-1, 1):
                pos += [0.5 * x, 0.5 * y, 0.5 * z]
    idx = [0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4,
           2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4, 6, 1, 3, 5, 3, 7, 5]
    b = struct.pack("<24f", *pos) + struct.pack("<36H", *idx)
    doc = {
        "asset": {"version": "2.0"},
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0, "rotation": [0, 0.3826834, 0, 0.9238795],
                   "translation": [0, 0, -1]}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 1,
                                    "material": 0}]}],
        "materials": [{"pbrMetallicRoughness": {"baseColorFactor": [0.2, 0.4, 0.9, 0.6]},
                       "alphaMode": "BLEND"}],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 8, "type": "VEC3"},
            {"bufferView": 1, "componentType": 5123, "count": 36, "type": "SCALAR"}],
        "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": 96},
                        {"buffer": 0, "byteOffset": 96, "byteLength": 72}],
        "buffers": [{"byteLength": 168}],
    }
    return glb(doc, b)


# JSON seeds against fuzz_glb's fixed BIN: floats at 0..128, u16 indices at 128..192, PNG at 192.
QUAD_JSON = {
    "asset": {"version": "2.0"},
    "scene": 0,
    "scenes": [{"nodes": [0]}],
    "nodes": [{"children": [1], "matrix": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, -2, 1]},
              {"mesh": 0, "scale": [1, -1, 1]}],
    "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "NORMAL": 1, "TEXCOORD_0": 2},
                                "indices": 3, "material": 0}]}],
    "materials": [{"pbrMetallicRoughness": {"baseColorFactor": [1, 1, 1, 1],
                                            "baseColorTexture": {"index": 0}},
                   "alphaMode": "MASK", "alphaCutoff": 0.3, "doubleSided": True}],
    "textures": [{"source": 0}],
    "images": [{"bufferView": 3, "mimeType": "image/png"}],
    "accessors": [
        {"bufferView": 0, "componentType": 5126, "count": 6, "type": "VEC3"},
        {"bufferView": 0, "byteOffset": 4, "componentType": 5126, "count": 6, "type": "VEC3"},
        {"bufferView": 1, "componentType": 5123, "normalized": True, "count": 6, "type": "VEC2"},
        {"bufferView": 2, "componentType": 5123, "count": 12, "type": "SCALAR"}],
    "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": 128, "byteStride": 20},
                    {"buffer": 0, "byteOffset": 0, "byteLength": 128},
                    {"buffer": 0, "byteOffset": 128, "byteLength": 64},
                    {"buffer": 0, "byteOffset": 192, "byteLength": 64}],
    "buffers": [{"byteLength": 256}],
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {
        "box.glb": box(),
        "empty.glb": glb({"asset": {"version": "2.0"}}),
        "quad.json": json.dumps(QUAD_JSON, separators=(",", ":")).encode(),
    }
    flat = dict(QUAD_JSON)
    flat.pop("scene")
    flat.pop("scenes")
    seeds["noscene.json"] = json.dumps(flat, separators=(",", ":")).encode()
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
