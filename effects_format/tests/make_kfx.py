#!/usr/bin/env python3
"""Builds the worked example effect package of docs/effects-format.md ("cat ears").

Usage: make_kfx.py OUT.kfx

Standard library only (zipfile, zlib, struct), so it runs at test time on any machine; the
images are generated here rather than committed. gen_seeds_effect.py imports `build_example`
and `png` to make fuzzer seeds.
"""
import json
import struct
import sys
import zipfile
import zlib


def png(width, height, pixel):
    """RGBA PNG; pixel(x, y) -> (r, g, b, a)."""
    rows = bytearray()
    for y in range(height):
        rows.append(0)  # filter: none
        for x in range(width):
            rows.extend(pixel(x, y))

    def chunk(tag, data):
        return (struct.pack(">I", len(data)) + tag + data +
                struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) +
            chunk(b"IDAT", zlib.compress(bytes(rows), 9)) + chunk(b"IEND", b""))


def identity_lut():
    """512x512 LUT: 8x8 tiles of 64x64; tile index = blue, x/y inside a tile = red/green."""
    def px(x, y):
        b = (y // 64) * 8 + x // 64
        return (int((x % 64) * 255 / 63), int((y % 64) * 255 / 63), int(b * 255 / 63), 255)
    return png(512, 512, px)


def glb():
    """Smallest valid binary glTF 2.0: header + a JSON chunk with an empty asset."""
    doc = json.dumps({"asset": {"version": "2.0"}}).encode()
    doc += b" " * (-len(doc) % 4)
    body = struct.pack("<II", len(doc), 0x4E4F534A) + doc
    return struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body


SHADER = b"""#version 300 es
precision mediump float;
in vec2 v_uv;
uniform sampler2D u_texture;
uniform float u_opacity;
out vec4 frag_color;
void main() {
    vec4 c = texture(u_texture, v_uv);
    frag_color = vec4(c.rgb, c.a * u_opacity);
}
"""

MANIFEST = {
    "format_version": "1.0.0",
    "id": "com.example.cat_ears",
    "name": "Cat ears",
    "author": "Kestrel examples",
    "thumbnail": "thumb.png",
    "requires": ["face_landmarks", "segmentation"],
    "max_faces": 2,
    "parameters": [
        {"name": "lip_color", "type": "color", "default": "#C8102EFF"},
        {"name": "lip_strength", "type": "float", "min": 0, "max": 1, "default": 0.6},
        {"name": "style", "type": "enum", "options": ["day", "night"], "default": "night"},
        {"name": "backdrop", "type": "image", "default": "bg.jpg"},
    ],
    "layers": [
        {"name": "bg", "kind": "background", "texture": "bg.jpg"},
        {"name": "smooth", "kind": "beauty", "smoothing": 0.5, "whitening": 0.2,
         "eye_enlarge": 0.1},
        {"name": "lips", "kind": "makeup", "region": "lips", "color": [0.8, 0.1, 0.2, 1.0],
         "color_param": "lip_color", "intensity": 0.6, "intensity_param": "lip_strength",
         "blend": "soft_light"},
        {"name": "whiskers", "kind": "face_texture", "texture": "whiskers.png",
         "blend": "multiply"},
        {"name": "ears", "kind": "sticker",
         "anchor": {"landmarks": [10, 338, 109], "offset": [0.0, -0.6], "scale": 1.4},
         "sprite": {"frames": ["ears/0.png", "ears/1.png"], "fps": 12, "loop": True},
         "shader": "shaders/tint.frag"},
        {"name": "hat", "kind": "mesh3d", "mesh": "hat.glb", "visible": False},
        {"name": "grade", "kind": "lut", "lut": "lut.png", "intensity": 0.8},
    ],
    "states": [
        {"name": "idle", "actions": [{"action": "hide_layer", "layer": "hat"}]},
        {"name": "surprised", "actions": [{"action": "show_layer", "layer": "hat"},
                                          {"action": "start_animation", "layer": "ears"}]},
    ],
    "initial_state": "idle",
    "triggers": [
        {"on": "mouth_open", "threshold": 0.4, "state": "surprised"},
        {"on": "face_lost", "state": "idle"},
    ],
}


def jpeg_stub():
    """A tiny real JPEG is awkward to write by hand; use a PNG under a .jpg name? No: the reader
    checks magic bytes, so emit a minimal baseline JPEG (8x8 grey) assembled from fixed tables."""
    return bytes.fromhex(
        "ffd8ffe000104a46494600010100000100010000ffdb004300080606070605080707070909080a0c140d0c"
        "0b0b0c1912130f141d1a1f1e1d1a1c1c20242e2720222c231c1c2837292c30313434341f27393d38323c2e"
        "333432ffc0000b080008000801011100ffc4001f0000010501010101010100000000000000000102030405"
        "060708090a0bffc400b5100002010303020403050504040000017d01020300041105122131410613516107"
        "227114328191a1082342b1c11552d1f02433627282090a161718191a25262728292a3435363738393a4344"
        "45464748494a535455565758595a636465666768696a737475767778797a838485868788898a9293949596"
        "9798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae1e2e3"
        "e4e5e6e7e8e9eaf1f2f3f4f5f6f7f8f9faffda0008010100003f00d2cf20ffd9")


def build_example():
    """Returns [(name, bytes, compress)] of the example package."""
    ears = [png(64, 32, lambda x, y, k=k: (200, 120 + 40 * k, 90, 255 if y > x // 4 else 0))
            for k in range(2)]
    return [
        ("manifest.json", json.dumps(MANIFEST, indent=2).encode(), True),
        ("thumb.png", png(32, 32, lambda x, y: (x * 8, y * 8, 128, 255)), False),
        ("bg.jpg", jpeg_stub(), False),
        ("whiskers.png", png(64, 64, lambda x, y: (0, 0, 0, 255 if y % 16 == 0 else 0)), True),
        ("ears/0.png", ears[0], False),
        ("ears/1.png", ears[1], False),
        ("shaders/tint.frag", SHADER, True),
        ("hat.glb", glb(), True),
        ("lut.png", identity_lut(), True),
    ]


def write(path, files):
    with zipfile.ZipFile(path, "w") as z:
        for name, data, compress in files:
            z.writestr(name, data,
                       compress_type=zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    write(sys.argv[1], build_example())
