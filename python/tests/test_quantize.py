"""kestrel.quantize (ks-quant) on BlazeFace with a few photos as arrays: an int8 model that
loads, runs close to fp32, and a report whose figures match the files."""

from __future__ import annotations

import os

import numpy as np
import pytest

import kestrel

from conftest import load_rgb


def test_quantize_blazeface(blazeface, tmp_path):
    images = [load_rgb(p) for p in ("images/skimage_astronaut.png", "images/coral_grace_hopper.bmp",
                                    "images/coral_squat.bmp")]
    out = tmp_path / "bf_int8.ksm"
    events = []
    rep = kestrel.quantize(blazeface, out, calibration=images, max_images=3, eval_images=2,
                           speed_check=False, progress=lambda *e: events.append(e))
    # progress: each run of a stage counts up to its total (a stage may run again, from 0),
    # calibration among them
    stages = {}
    for what, done, total in events:
        last = stages.get(what)
        assert 0 <= done <= total, events
        assert last is None or done >= last[0] or (done == 0 and last[0] == last[1]), events
        stages[what] = (done, total)
    assert stages and all(d == t for d, t in stages.values()), stages
    assert any("calib" in w for w in stages), sorted(stages)
    assert rep.path == str(out) and os.path.getsize(out) == rep.int8_bytes
    assert rep.fp32_bytes == os.path.getsize(blazeface) and rep.int8_bytes < rep.fp32_bytes
    assert rep.int8_layers >= 1 and rep.layers and {"node", "op", "precision"} <= set(rep.layers[0])
    assert set(rep.outputs) == {"regressors", "classificators"}
    assert all(c > 0.99 for c in rep.outputs.values()), rep.outputs
    # a photo outside the calibration set, as the face detector's pipeline feeds it
    Image = pytest.importorskip("PIL.Image")
    photo = Image.fromarray(load_rgb("images/coral_posenet_test_image.bmp")).resize((128, 128))
    x = (np.asarray(photo, np.float32)[None] - 127.5) / 127.5
    with kestrel.Model.load(blazeface) as m, kestrel.Session(m) as s:
        want = s.run(x)["classificators"]
    with kestrel.Model.load(out) as m, kestrel.Session(m) as s:
        got = s.run(x)["classificators"]
    # (ks-quant checks the output cosine on its evaluation images; on a new photo the logits
    # still follow the fp32 ones closely)
    assert np.corrcoef(want.ravel(), got.ravel())[0, 1] > 0.9
    with pytest.raises(kestrel.InvalidArgumentError, match="unknown options"):
        kestrel.quantize(blazeface, out, calibration=images, colour="blue")
    with pytest.raises(kestrel.InvalidArgumentError, match="HxWx3"):
        kestrel.quantize(blazeface, out, calibration=[np.zeros((4, 4), np.uint8)])


def test_quantize_with_preprocessed_tensors(blazeface, tmp_path):
    """Calibration by float32 model inputs (preprocessed in Python, as an algorithm engineer
    has them): the same photos normalized to [-1, 1] give an int8 model close to fp32; a tensor
    of another shape, another dtype, or a mix with images is refused with a message."""
    Image = pytest.importorskip("PIL.Image")
    names = ("images/skimage_astronaut.png", "images/coral_grace_hopper.bmp",
             "images/coral_squat.bmp")
    tensors = [(np.asarray(Image.fromarray(load_rgb(p)).resize((128, 128)), np.float32)[None]
                - 127.5) / 127.5 for p in names]
    out = tmp_path / "bf_int8_tensors.ksm"
    rep = kestrel.quantize(blazeface, out, calibration=tensors, eval_images=2,
                           speed_check=False, progress=False)
    assert rep.int8_layers >= 1 and os.path.getsize(out) == rep.int8_bytes
    assert all(c > 0.99 for c in rep.outputs.values()), rep.outputs
    with kestrel.Model.load(out) as m, kestrel.Session(m) as s:
        got = s.run(tensors[0])["classificators"]
    with kestrel.Model.load(blazeface) as m, kestrel.Session(m) as s:
        want = s.run(tensors[0])["classificators"]
    assert np.corrcoef(want.ravel(), got.ravel())[0, 1] > 0.95
    with pytest.raises(kestrel.ToolError, match="shape 1x64x64x3"):
        kestrel.quantize(blazeface, out, calibration=tensors + [np.zeros((1, 64, 64, 3),
                                                                          np.float32)],
                         speed_check=False, progress=False)
    with pytest.raises(kestrel.InvalidArgumentError, match="float32"):
        kestrel.quantize(blazeface, out, calibration=[tensors[0].astype(np.float64)])
    with pytest.raises(kestrel.ToolError, match="mixes"):
        kestrel.quantize(blazeface, out, calibration=[tensors[0], load_rgb(names[0])],
                         progress=False)
