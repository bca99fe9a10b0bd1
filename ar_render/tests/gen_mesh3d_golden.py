#!/usr/bin/env python3
"""Regenerates the mesh3d test data.

    gen_mesh3d_golden.py fixture KS_VISION    # mesh3d_astronaut_face.json from the face landmarker
    gen_mesh3d_golden.py golden TEST_BINARY   # golden/mesh3d_glasses.png from test_ar_gl_mesh3d

`fixture` runs `ks-vision face_landmarks models/images/skimage_astronaut.png --json` and keeps
what the mesh3d tests need (468 landmarks and the row-major pose matrix), so the tests do not
depend on model changes. `golden` runs the GL test with KS_MESH3D_WRITE_GOLDEN set: the test then
writes the PNG it renders instead of comparing (look at it before committing).
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
IMAGE = "models/images/skimage_astronaut.png"


def fixture(ks_vision):
    out = subprocess.run([ks_vision, "face_landmarks", os.path.join(ROOT, IMAGE), "--json"],
                         check=True, capture_output=True, text=True).stdout
    faces = json.loads(out)["faces"]
    if len(faces) != 1:
        sys.exit("expected exactly one face, got %d" % len(faces))
    doc = {
        "source": IMAGE,
        "generator": "ks-vision face_landmarks (ar_render/tests/gen_mesh3d_golden.py)",
        "width": 512,
        "height": 512,
        "faces": [{"landmarks": faces[0]["landmarks"], "pose_matrix": faces[0]["pose_matrix"],
                   "euler_deg": faces[0]["euler_deg"]}],
    }
    path = os.path.join(HERE, "mesh3d_astronaut_face.json")
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", path)


def golden(test_binary):
    path = os.path.join(HERE, "golden", "mesh3d_glasses.png")
    env = dict(os.environ, KS_MESH3D_WRITE_GOLDEN=path)
    subprocess.run([test_binary], check=True, env=env)
    print("wrote", path)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("fixture", "golden"):
        sys.exit(__doc__)
    (fixture if sys.argv[1] == "fixture" else golden)(sys.argv[2])


if __name__ == "__main__":
    main()
