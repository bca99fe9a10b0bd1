#!/usr/bin/env python3
"""Writes fuzzer seeds for fuzz_effect into DIR: the documented example package (without its
LUT so seeds stay small), a one-sticker package, a few refusals, and bare manifests (which
fuzz_effect wraps into a package with the example's asset names).

Usage: gen_seeds_effect.py DIR
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_kfx  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    files = [f for f in make_kfx.build_example() if f[0] != "lut.png"]
    m = json.loads(files[0][1])
    m["layers"] = [layer for layer in m["layers"] if layer["kind"] != "lut"]
    files[0] = ("manifest.json", json.dumps(m).encode(), True)
    make_kfx.write(os.path.join(out, "example.kfx"), files)
    stored = [(n, d, False) for n, d, _ in files]
    make_kfx.write(os.path.join(out, "example_stored.kfx"), stored)

    tiny = make_kfx.png(4, 4, lambda x, y: (x * 60, y * 60, 0, 255))
    sticker = {"format_version": "1.0.0", "id": "s", "name": "s",
               "requires": ["face_landmarks"],
               "layers": [{"name": "a", "kind": "sticker", "anchor": {"landmarks": [1]},
                           "sprite": {"frames": ["a.png"]}}],
               "triggers": [{"on": "blink", "state": "x"}],
               "states": [{"name": "x", "actions": [{"action": "hide_layer", "layer": "a"}]}]}
    make_kfx.write(os.path.join(out, "sticker.kfx"),
                   [("manifest.json", json.dumps(sticker).encode(), False),
                    ("a.png", tiny, False)])
    bad = dict(sticker, format_version="9.0.0")
    make_kfx.write(os.path.join(out, "newer.kfx"),
                   [("manifest.json", json.dumps(bad).encode(), True), ("a.png", tiny, False)])
    # Manifest-only seeds (fuzz_effect wraps inputs starting with '{' into a package).
    with open(os.path.join(out, "manifest_example.json"), "wb") as f:
        f.write(json.dumps(make_kfx.MANIFEST).encode())
    with open(os.path.join(out, "manifest_sticker.json"), "wb") as f:
        f.write(json.dumps(dict(sticker, layers=[dict(sticker["layers"][0],
                                                           sprite={"frames": ["a.png"]})])).encode())
    make_kfx.write(os.path.join(out, "slip.kfx"),
                   [("manifest.json", json.dumps(sticker).encode(), False),
                    ("../a.png", tiny, False)])


if __name__ == "__main__":
    main()
