#!/usr/bin/env python3
"""Renders the canonical face mesh UV template: every triangle of MediaPipe's canonical face
mesh drawn as a wireframe in texture (UV) space, the layout that face_texture layers and makeup
masks of effect packages (docs/effects-format.md) are painted in.

Usage (project venv: numpy + Pillow):
    .venv/bin/python scripts/render_uv_template.py [--size 1024] [--labels] [OUT.png]

Input: models/face_landmarks/geometry_pipeline_metadata_landmarks.binarypb (fetched by
scripts/setup), read with the tiny protobuf wire parser below. The message layout is the one in
algos/common/face_geometry.h: GeometryPipelineMetadata.canonical_mesh (field 1) is a Mesh3d with
vertex_buffer (field 3, floats x, y, z, u, v per vertex) and index_buffer (field 4, uint32
triangle indices).

Image orientation: pixel (0, 0) is texture coordinate (u, v) = (0, 0); u grows to the right and
v grows DOWNWARDS (image rows), which shows the face upright. A renderer that uploads the PNG
top row first (row 0 at t = 0) samples it with the mesh's (u, v) unchanged.
"""
import argparse
import os
import struct
import sys

import numpy as np
from PIL import Image, ImageDraw

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_IN = os.path.join(ROOT, "models", "face_landmarks",
                          "geometry_pipeline_metadata_landmarks.binarypb")


def varint(buf, pos):
    value, shift = 0, 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("truncated or overlong varint at byte %d" % pos)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def fields(buf):
    """Yields (field_number, wire_type, value); value is int for varint/fixed, bytes for LEN."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, pos = varint(buf, pos)
        elif wt == 1:
            v, pos = buf[pos:pos + 8], pos + 8
        elif wt == 2:
            n, pos = varint(buf, pos)
            if pos + n > len(buf):
                raise ValueError("field %d: length %d runs past the end" % (num, n))
            v, pos = buf[pos:pos + n], pos + n
        elif wt == 5:
            v, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError("unsupported wire type %d (field %d)" % (wt, num))
        yield num, wt, v


def read_mesh(path):
    data = open(path, "rb").read()
    mesh = next((v for num, wt, v in fields(data) if num == 1 and wt == 2), None)
    if mesh is None:
        raise ValueError("%s: no canonical_mesh (field 1)" % path)
    floats, indices = [], []
    for num, wt, v in fields(mesh):
        if num == 3 and wt == 2:
            floats.extend(struct.unpack("<%df" % (len(v) // 4), v))
        elif num == 3 and wt == 5:
            floats.append(struct.unpack("<f", v)[0])
        elif num == 4 and wt == 2:
            pos = 0
            while pos < len(v):
                i, pos = varint(v, pos)
                indices.append(i)
        elif num == 4 and wt == 0:
            indices.append(v)
    if len(floats) % 5 or len(indices) % 3:
        raise ValueError("vertex buffer %d floats / index buffer %d: not VERTEX_PT triangles"
                         % (len(floats), len(indices)))
    verts = np.asarray(floats, dtype=np.float32).reshape(-1, 5)
    tris = np.asarray(indices, dtype=np.int64).reshape(-1, 3)
    if tris.size and tris.max() >= len(verts):
        raise ValueError("triangle index %d >= %d vertices" % (tris.max(), len(verts)))
    return verts, tris


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", default="face_uv_template.png")
    ap.add_argument("--input", default=DEFAULT_IN)
    ap.add_argument("--size", type=int, default=1024, help="output width and height in pixels")
    ap.add_argument("--labels", action="store_true", help="draw vertex (landmark) indices")
    args = ap.parse_args()

    verts, tris = read_mesh(args.input)
    uv = verts[:, 3:5]
    s = args.size - 1
    px = np.stack([uv[:, 0] * s, uv[:, 1] * s], axis=1)
    img = Image.new("RGBA", (args.size, args.size), (255, 255, 255, 255))
    draw = ImageDraw.Draw(img)
    edges = set()
    for a, b, c in tris:
        for e in ((a, b), (b, c), (c, a)):
            edges.add((min(e), max(e)))
    for a, b in sorted(edges):
        draw.line([tuple(px[a]), tuple(px[b])], fill=(40, 90, 200, 255), width=1)
    r = max(1, args.size // 512)
    for i, (x, y) in enumerate(px):
        draw.ellipse([x - r, y - r, x + r, y + r], fill=(200, 30, 30, 255))
        if args.labels:
            draw.text((x + 2, y), str(i), fill=(0, 0, 0, 255))
    img.save(args.out)
    print("%s: %d vertices, %d triangles, %d edges, %dx%d" %
          (args.out, len(verts), len(tris), len(edges), args.size, args.size))


if __name__ == "__main__":
    sys.exit(main())
