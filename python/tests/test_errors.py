"""Bad input raises a KestrelError subclass with the status and the library's message, and
never takes the interpreter down."""

from __future__ import annotations

import gc as pygc
import os

import numpy as np
import pytest

import kestrel


def test_missing_file(tmp_path):
    with pytest.raises(kestrel.KestrelIOError) as e:
        kestrel.Model.load(tmp_path / "nope.ksm")
    assert e.value.status == 3 and "nope.ksm" in e.value.message
    assert isinstance(e.value, OSError) and isinstance(e.value, kestrel.KestrelError)


@pytest.mark.parametrize("keep", [0, 16, 100, 0.5, -1])
def test_truncated_model(blazeface, tmp_path, keep):
    data = open(blazeface, "rb").read()
    n = int(len(data) * keep) if isinstance(keep, float) else (keep if keep >= 0 else len(data) - 1)
    bad = tmp_path / "truncated.ksm"
    bad.write_bytes(data[:n])
    with pytest.raises(kestrel.KestrelError) as e:
        kestrel.Model.load(bad)
    assert e.value.status in (1, 4, 7), e.value  # invalid argument/model or checksum mismatch
    assert e.value.message


def test_garbage_model(tmp_path):
    bad = tmp_path / "garbage.ksm"
    bad.write_bytes(os.urandom(4096))
    with pytest.raises(kestrel.InvalidModelError) as e:
        kestrel.Model.load(bad)
    assert e.value.status == 4 and e.value.status_name == "invalid model"


def test_key_for_a_plain_model(blazeface):
    with pytest.raises(kestrel.InvalidArgumentError, match="key"):
        kestrel.Model.load(blazeface, key=bytes(32))


@pytest.fixture
def session(blazeface):
    model = kestrel.Model.load(blazeface)
    s = kestrel.Session(model)
    yield model, s
    s.close()
    model.close()


def test_wrong_dtype(session):
    model, s = session
    name = model.inputs[0].name
    with pytest.raises(kestrel.InvalidArgumentError, match="float64.*float32"):
        s.run({name: np.zeros(model.inputs[0].shape)})
    with pytest.raises(kestrel.InvalidArgumentError, match="uint8"):
        s.run({name: np.zeros(model.inputs[0].shape, np.uint8)})
    with pytest.raises(kestrel.InvalidArgumentError, match="not an array"):
        s.run({name: "pixels"})
    # big-endian data is refused rather than misread
    with pytest.raises(kestrel.InvalidArgumentError):
        s.run({name: np.zeros(model.inputs[0].shape, ">f4")})


def test_wrong_shape_then_recovers(session):
    model, s = session
    name, shape = model.inputs[0].name, model.inputs[0].shape
    with pytest.raises(kestrel.InvalidShapeError) as e:
        s.run({name: np.zeros((1, 3, 3, 3), np.float32)})
    assert e.value.status == 8 and e.value.message
    with pytest.raises(kestrel.KestrelError):
        s.run({name: np.zeros((5,), np.float32)})
    # the session still works with the right shape afterwards
    out = s.run({name: np.zeros(shape, np.float32)})
    assert all(np.isfinite(a).all() for a in out.values())


def test_non_contiguous(session):
    model, s = session
    name, shape = model.inputs[0].name, model.inputs[0].shape
    x = np.zeros(shape[:3] + (shape[3] * 2,), np.float32)[..., ::2]
    assert not x.flags["C_CONTIGUOUS"]
    with pytest.raises(kestrel.InvalidArgumentError, match="C-contiguous"):
        s.run({name: x})
    xt = np.zeros((shape[0], shape[3], shape[1], shape[2]), np.float32).transpose(0, 2, 3, 1)
    with pytest.raises(kestrel.InvalidArgumentError, match="ascontiguousarray"):
        s.run({name: xt})
    s.run({name: np.ascontiguousarray(xt)})


def test_wrong_names_and_counts(session):
    model, s = session
    x = np.zeros(model.inputs[0].shape, np.float32)
    with pytest.raises(kestrel.InvalidArgumentError, match="unknown"):
        s.run({"nope": x})
    with pytest.raises(kestrel.InvalidArgumentError, match="1 inputs, 2 were given"):
        s.run([x, x])
    with pytest.raises(kestrel.InvalidArgumentError):
        kestrel.Session("model.ksm")  # type: ignore[arg-type]
    with pytest.raises(kestrel.InvalidArgumentError, match="threads"):
        kestrel.Session(model, threads=-3)


def test_closed_session_and_model(blazeface):
    model = kestrel.Model.load(blazeface)
    name, shape = model.inputs[0].name, model.inputs[0].shape
    x = np.zeros(shape, np.float32)
    with kestrel.Session(model) as s:
        s.run({name: x})
    assert s.closed
    with pytest.raises(kestrel.InvalidStateError, match="closed"):
        s.run({name: x})
    s.close()  # twice is fine
    # closing the model while a session lives defers the release; the session keeps working
    s2 = kestrel.Session(model)
    model.close()
    assert model.closed
    with pytest.raises(kestrel.InvalidStateError, match="closed"):
        kestrel.Session(model)
    with pytest.raises(kestrel.InvalidStateError):
        model.metadata("source")
    assert s2.run({name: x})
    s2.close()
    # dropping every reference without close() is fine too
    m3 = kestrel.Model.load(blazeface)
    s3 = kestrel.Session(m3)
    del m3
    s3.run(x)
    del s3
    pygc.collect()


def test_closed_task():
    det = kestrel.FaceDetector()
    det.close()
    with pytest.raises(kestrel.InvalidStateError, match="closed"):
        det.detect(np.zeros((64, 64, 3), np.uint8))


def test_task_bad_images():
    with kestrel.FaceDetector() as det:
        for bad, what in [(np.zeros((64, 64), np.uint8), "HxWx3"),
                          (np.zeros((64, 64, 3), np.float32), "uint8"),
                          (np.zeros((64, 64, 2), np.uint8), "HxWx3"),
                          (np.zeros((0, 64, 3), np.uint8), "outside"),
                          (np.zeros((64, 128, 3), np.uint8)[:, ::2], "packed"),
                          (np.zeros((64, 64, 3), np.uint8).transpose(1, 0, 2), "packed"),
                          ([1, 2, 3], "not an array")]:
            with pytest.raises(kestrel.InvalidArgumentError, match=what):
                det.detect(bad)
        # a crop of a larger image (strided rows) is accepted as is
        assert det.detect(np.zeros((200, 300, 3), np.uint8)[10:110, 20:220]) == []
    with pytest.raises(kestrel.KestrelError):
        kestrel.FaceDetector(model_path="/nonexistent.ksb")
    with pytest.raises(kestrel.InvalidArgumentError):
        kestrel.FaceDetector(model="medium")


def test_convert_errors(tmp_path):
    with pytest.raises(kestrel.KestrelIOError):
        kestrel.convert(tmp_path / "none.onnx", tmp_path / "out.ksm")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage" * 10)
    with pytest.raises(kestrel.ToolError, match="ks-convert"):
        kestrel.convert(bad, tmp_path / "out.ksm")
    assert not (tmp_path / "out.ksm").exists()
