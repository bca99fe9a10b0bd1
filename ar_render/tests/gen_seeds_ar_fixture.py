#!/usr/bin/env python3
"""Seeds for fuzz_ar_fixture: the committed fixtures plus small variants (468/478 points, two
faces, missing optional keys). Usage: gen_seeds_ar_fixture.py OUT_DIR"""
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
base = json.load(open(os.path.join(here, "fixtures", "astronaut_face.json")))
face = base["faces"][0]
variants = {
    "astronaut.json": base,
    "minimal.json": {"faces": [{"landmarks": face["landmarks"]}]},
    "iris.json": {"width": 512, "height": 512,
                  "faces": [dict(face, landmarks=face["landmarks"] + [[1, 2, 3]] * 10)]},
    "two.json": {"faces": [dict(face, id=1), dict(face, id=2, expressions={"smile": 0.9})]},
    "empty.json": {"faces": []},
}
for name, doc in variants.items():
    with open(os.path.join(out, name), "w") as f:
        json.dump(doc, f)
