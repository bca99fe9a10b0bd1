"""kestrel.effects and `kestrel effect` on the sample packages of samples/effects (packaged as
the build packages them: manifest.json first, then the folder's files) and on damaged ones."""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from typing import List

import pytest

import kestrel
from kestrel import effects
from kestrel.cli import main

from conftest import ROOT

SAMPLES = os.path.join(ROOT, "samples", "effects")


def sample_names() -> List[str]:
    if not os.path.isdir(SAMPLES):
        return []
    return sorted(n for n in os.listdir(SAMPLES)
                  if os.path.isfile(os.path.join(SAMPLES, n, "manifest.json")))


def package(name: str, out_dir, manifest: bytes = b"") -> str:
    """samples/effects/NAME zipped into OUT_DIR/NAME.kfx (DEFLATE); `manifest` replaces the
    manifest.json when given."""
    src = os.path.join(SAMPLES, name)
    files = sorted(os.path.relpath(os.path.join(d, f), src)
                   for d, _, fs in os.walk(src) for f in fs)
    files.remove("manifest.json")
    out = os.path.join(str(out_dir), name + ".kfx")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        if manifest:
            z.writestr("manifest.json", manifest)
        else:
            z.write(os.path.join(src, "manifest.json"), "manifest.json")
        for f in files:
            z.write(os.path.join(src, f), f.replace(os.sep, "/"))
    return out


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    names = sample_names()
    if not names:
        pytest.skip(f"no sample effects under {SAMPLES}")
    d = tmp_path_factory.mktemp("kfx")
    return {n: package(n, d) for n in names}


def test_samples_validate_and_info(samples, capsys):
    assert len(samples) >= 5
    for name, path in samples.items():
        assert effects.validate(path) is None
        fx = effects.info(path)
        with open(os.path.join(SAMPLES, name, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
        assert fx.id == manifest["id"] and fx.name == manifest["name"]
        assert [layer["name"] for layer in fx.layers] == [lyr["name"] for lyr in manifest["layers"]]
        assert [layer["kind"] for layer in fx.layers] == [lyr["kind"]
                                                          for lyr in manifest["layers"]]
        assert "manifest.json" in {a["name"] for a in fx.assets}
        assert all(a["size_bytes"] > 0 for a in fx.assets)
        json.dumps(fx.to_dict())  # JSON-ready
        assert main(["effect", "info", path, "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == fx.to_dict()
    assert main(["effect", "validate", samples["cat_ears"]]) == 0
    assert capsys.readouterr().out.strip().endswith(": ok")


def test_cli_equals_ks_effect(samples, capsys):
    ks = os.path.join(os.environ.get("KS_TEST_BUILD_DIR", ""), "effects_format", "ks-effect")
    if not os.access(ks, os.X_OK):
        pytest.skip(f"{ks} not built")
    for path in samples.values():
        r = subprocess.run([ks, "validate", path], capture_output=True, text=True)
        assert r.returncode == 0
        assert main(["effect", "validate", path]) == 0
        assert capsys.readouterr().out == r.stdout


def test_damaged_packages(samples, tmp_path, capsys):
    good = open(samples["cat_ears"], "rb").read()
    cases = {}
    (tmp_path / "truncated.kfx").write_bytes(good[: len(good) // 2])
    cases["truncated.kfx"] = kestrel.InvalidModelError
    flipped = bytearray(good)
    # a byte inside the last entry's data, just before the central directory
    first_cd = flipped.find(b"PK\x01\x02")
    assert first_cd > 40
    flipped[first_cd - 40] ^= 0xFF
    (tmp_path / "flipped.kfx").write_bytes(bytes(flipped))
    cases["flipped.kfx"] = kestrel.KestrelError
    (tmp_path / "garbage.kfx").write_bytes(os.urandom(3000))
    cases["garbage.kfx"] = kestrel.InvalidModelError
    with open(os.path.join(SAMPLES, "cat_ears", "manifest.json"), encoding="utf-8") as f:
        m = json.load(f)
    m["layers"][0]["anchor"]["landmarks"][0] = 500
    os.replace(package("cat_ears", tmp_path, json.dumps(m).encode()), tmp_path / "landmark.kfx")
    cases["landmark.kfx"] = kestrel.InvalidModelError
    for name, exc in cases.items():
        path = tmp_path / name
        with pytest.raises(exc) as e:
            effects.validate(path)
        assert e.value.message and e.value.status > 0, name
        with pytest.raises(exc):
            effects.info(path)
        assert main(["effect", "validate", str(path)]) == 1
        assert "effect" in capsys.readouterr().err
    with pytest.raises(kestrel.InvalidModelError, match="500"):
        effects.validate(tmp_path / "landmark.kfx")
    with pytest.raises(kestrel.KestrelIOError):
        effects.info(tmp_path / "missing.kfx")


def render_or_skip(path, image):
    try:
        return effects.render(path, image)
    except kestrel.UnsupportedError as e:  # no EGL / OpenGL ES 3 on this machine or build
        pytest.skip(str(e))


def test_render_draws_on_the_faces(samples, tmp_path, capsys):
    import numpy as np

    from conftest import load_rgb

    image = load_rgb("images/coral_face.jpg")  # two faces
    frame = render_or_skip(samples["glasses_3d"], image)
    assert frame.shape == image.shape and frame.dtype == np.uint8
    changed = np.abs(frame.astype(int) - image).sum(-1) > 30
    assert changed.sum() > 500  # glasses drawn
    ys, xs = np.nonzero(changed)
    with kestrel.FaceLandmarker(max_results=4) as lm:
        boxes = [f.box for f in lm.detect(image)]
    assert len(boxes) == 2
    # every changed pixel lies near a face (the glasses), the rest of the photo is untouched
    near = np.zeros_like(changed)
    for b in boxes:
        near[max(0, int(b.y - 0.3 * b.h)):int(b.y + 1.3 * b.h),
             max(0, int(b.x - 0.3 * b.w)):int(b.x + 1.3 * b.w)] = True
    assert changed[~near].sum() < 0.01 * changed.sum()
    assert changed[int(ys.mean()) - 60:int(ys.mean()) + 60].any()
    # RGBA in, RGBA out; same picture
    rgba = np.dstack([image, np.full(image.shape[:2], 255, np.uint8)])
    frame4 = effects.render(samples["glasses_3d"], rgba)
    assert frame4.shape == rgba.shape
    assert np.abs(frame4[..., :3].astype(int) - frame).max() <= 2
    # the CLI writes the PNG
    out = tmp_path / "out.png"
    img_path = tmp_path / "in.png"
    from PIL import Image

    Image.fromarray(image).save(img_path)
    assert main(["effect", "render", samples["glasses_3d"], str(img_path), "-o", str(out),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["width"] == image.shape[1]
    assert np.abs(np.asarray(Image.open(out)).astype(int) - frame).max() <= 2


def test_render_bad_input(samples, tmp_path):
    import numpy as np

    good = np.zeros((64, 64, 3), np.uint8)
    render_or_skip(samples["vintage_lut"], good)  # a frame-wide effect, no face needed
    with pytest.raises(kestrel.InvalidArgumentError, match="uint8"):
        effects.render(samples["vintage_lut"], np.zeros((64, 64, 3), np.float32))
    with pytest.raises(kestrel.InvalidArgumentError, match="packed"):
        effects.render(samples["vintage_lut"], np.zeros((64, 64, 3), np.uint8)[:, ::2])
    (tmp_path / "t.kfx").write_bytes(open(samples["cat_ears"], "rb").read()[:500])
    with pytest.raises(kestrel.InvalidModelError):
        effects.render(tmp_path / "t.kfx", good)
