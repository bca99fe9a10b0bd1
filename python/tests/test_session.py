"""kestrel.Model / kestrel.Session against the reference runtimes (ONNX Runtime, LiteRT) on
standard models, with the golden tests' tolerances (engine/tests/golden/golden_common.py)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import golden_common as gc
import kestrel

# Small models of the standard set (engine/tests/golden/models.txt): fp32 TFLite, uint8-quantized
# TFLite, fp32 ONNX; each reference runs in ONNX Runtime or LiteRT's reference kernels.
MODELS = [
    "face_detection/face_detection_short_range.tflite",
    "classification/mobilenet_v1_0.25_128_quant.tflite",
    "face_detection/version-slim-320.onnx",
    "hand/palm_detection_lite.tflite",
]


def random_feeds(model_path: str, rng: np.random.Generator, shapes=None):
    """Uniform inputs over each model's value range (as the golden tests' random sets)."""
    conv = gc.convention(model_path)
    ins, _ = gc.model_io(model_path)
    feeds = {}
    for t in ins:
        shape = tuple((shapes or {}).get(t.name, t.shape))
        dtype = np.dtype(t.dtype)
        if dtype == np.uint8:
            feeds[t.name] = rng.integers(0, 256, shape, dtype=np.uint8)
            continue
        mean, std = np.array(conv["mean"] or (0,) * 3), np.array(conv["std"] or (1,) * 3)
        lo, hi = float(np.min((0 - mean) / std)), float(np.max((255 - mean) / std))
        feeds[t.name] = rng.uniform(lo, hi, shape).astype(dtype)
    return feeds


def check_against_reference(model_path: str, got, feeds):
    ref, runtime = gc.run_reference(model_path, feeds)
    assert set(got) == set(ref), f"outputs {sorted(got)} vs {runtime}'s {sorted(ref)}"
    for name, r in ref.items():
        res = gc.compare(r, got[name])
        assert res["ok"], f"{model_path} {name} vs {runtime}: {res}"


@pytest.mark.parametrize("rel", MODELS)
def test_run_matches_reference_runtime(convert_model, rel):
    src, ksm = convert_model(rel)
    rng = np.random.default_rng(7)
    with kestrel.Model.load(ksm) as model, kestrel.Session(model) as session:
        feeds = random_feeds(src, rng)
        ins, outs = gc.model_io(src)
        assert [t.name for t in model.inputs] == [t.name for t in ins]
        assert [t.name for t in model.outputs] == [t.name for t in outs]
        for mine, theirs in zip(model.inputs, ins):
            assert mine.dtype == np.dtype(theirs.dtype)
            assert mine.shape == tuple(theirs.shape)
        got = session.run(feeds)
        check_against_reference(src, got, feeds)
        for name, a in got.items():
            assert a.flags["C_CONTIGUOUS"] and a.flags["OWNDATA"] is False and a.base is not None
            assert a.dtype == next(t.dtype for t in model.outputs if t.name == name)


def test_reshape_on_new_shapes(convert_model):
    """yunet_s_dynamic has symbolic H, W: each new input shape re-plans the session."""
    src, ksm = convert_model("face_detection/yunet_s_dynamic.onnx")
    rng = np.random.default_rng(3)
    with kestrel.Model.load(ksm) as model, kestrel.Session(model, threads=2) as session:
        assert any(d < 0 for d in model.inputs[0].shape)
        name = model.inputs[0].name
        for hw in [(480, 640), (320, 320), (480, 640)]:
            feeds = random_feeds(src, rng, {name: (1, 3) + hw})
            got = session.run(feeds)
            check_against_reference(src, got, feeds)
            assert session._native.input_shapes == [(1, 3) + hw]


def test_outputs_are_independent_of_later_runs(blazeface):
    """Each run returns new arrays: a later run does not overwrite earlier results."""
    with kestrel.Model.load(blazeface) as model, kestrel.Session(model) as s:
        name = model.inputs[0].name
        a = s.run({name: np.zeros(model.inputs[0].shape, np.float32)})
        keep = {k: v.copy() for k, v in a.items()}
        b = s.run({name: np.ones(model.inputs[0].shape, np.float32)})
        for k in a:
            np.testing.assert_array_equal(a[k], keep[k])
            assert not np.array_equal(a[k], b[k])
        # the input forms: a bare array and a list in input order give the same result
        x = np.full(model.inputs[0].shape, 0.25, np.float32)
        r1, r2, r3 = s.run({name: x}), s.run(x), s.run([x])
        for k in r1:
            np.testing.assert_array_equal(r1[k], r2[k])
            np.testing.assert_array_equal(r1[k], r3[k])


def test_views_without_copy(blazeface):
    """run(copy=False): read-only arrays over the session's outputs, equal to the copies; the
    next same-shape run writes into them; close() waits for them; a re-plan is refused."""
    with kestrel.Model.load(blazeface) as model:
        s = kestrel.Session(model)
        name = model.inputs[0].name
        x0 = np.zeros(model.inputs[0].shape, np.float32)
        x1 = np.ones(model.inputs[0].shape, np.float32)
        want0, want1 = s.run({name: x0}), s.run({name: x1})
        v = s.run({name: x0}, copy=False)
        assert set(v) == set(want0)
        for k, a in v.items():
            np.testing.assert_array_equal(a, want0[k])
            assert not a.flags["WRITEABLE"] and not a.flags["OWNDATA"]
            with pytest.raises(ValueError):
                a[...] = 0  # read-only
            with pytest.raises(ValueError):
                a.setflags(write=True)
        # the same memory: a second run of the same shape shows its outputs in the views
        v2 = s.run({name: x1}, copy=False)
        for k in v:
            np.testing.assert_array_equal(v[k], want1[k])
            assert v[k].__array_interface__["data"][0] == v2[k].__array_interface__["data"][0]
        del v2
        # switching an output off re-plans the memory: refused while views live
        s._native.set_output_needed(0, False)
        with pytest.raises(kestrel.InvalidStateError, match="copy=False"):
            s.run({name: x0})
        s._native.set_output_needed(0, True)
        # close() closes at once for the caller; the views' memory stays valid until they go
        s.close()
        assert s.closed
        with pytest.raises(kestrel.InvalidStateError, match="closed"):
            s.run({name: x0})
        for k in v:
            np.testing.assert_array_equal(v[k], want1[k])
        del v, k  # the last view: the session is destroyed now
        assert s.closed


def test_session_options_and_metadata(blazeface):
    with kestrel.Model.load(blazeface) as model:
        assert "face_detection_short_range" in (model.metadata("source") or "")
        assert model.metadata("no such key") is None
        x = {model.inputs[0].name: np.random.default_rng(1).uniform(
            -1, 1, model.inputs[0].shape).astype(np.float32)}
        base = kestrel.Session(model).run(x)
        # the fp16 modes concern GPU backends: on the CPU they run as stored
        for kw in [dict(threads=2), dict(precision="f32"), dict(precision=kestrel.Precision.DEFAULT),
                   dict(backend="cpu"), dict(precision="fp16-storage"), dict(precision="fp16")]:
            with kestrel.Session(model, **kw) as s:
                assert s.backend == "cpu"
                got = s.run(x)
                for k in base:
                    np.testing.assert_allclose(got[k], base[k], rtol=1e-4, atol=1e-4)
        with pytest.raises(kestrel.InvalidArgumentError, match="precision"):
            kestrel.Session(model, precision="int3")
        with pytest.raises(kestrel.UnsupportedError, match="opencl"):
            kestrel.Session(model, backend="opencl")


def test_profile_names_ops_and_kernels(blazeface):
    with kestrel.Model.load(blazeface) as model, kestrel.Session(model) as s:
        s.run(np.zeros(model.inputs[0].shape, np.float32))
        prof = s.profile()
        assert len(prof) > 10
        assert {"op", "node", "kernel", "ms", "flops"} <= set(prof[0])
        assert any(p["op"].startswith("conv") for p in prof)
        assert sum(p["flops"] for p in prof) > 1e6


def test_gil_is_released_and_threads_get_their_own_sessions(blazeface):
    """Two threads, one session each, run at once (the GIL is released inside run); results are
    identical to a single-threaded run."""
    with kestrel.Model.load(blazeface) as model:
        x = np.random.default_rng(5).uniform(-1, 1, model.inputs[0].shape).astype(np.float32)
        want = kestrel.Session(model).run(x)
        errors = []

        def work():
            try:
                with kestrel.Session(model) as s:
                    for _ in range(30):
                        got = s.run(x)
                        for k in want:
                            np.testing.assert_array_equal(got[k], want[k])
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

        ts = [threading.Thread(target=work) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors, errors


def test_two_inputs_two_outputs_match_onnxruntime(tiny_model):
    src, ksm = tiny_model
    rng = np.random.default_rng(4)
    with kestrel.Model.load(ksm) as model, kestrel.Session(model) as s:
        assert [t.name for t in model.inputs] == ["a", "b"]
        assert [t.name for t in model.outputs] == ["y", "z"]
        feeds = {n: rng.standard_normal((1, 8, 16, 16)).astype(np.float32) for n in ("a", "b")}
        check_against_reference(src, s.run(feeds), feeds)
        # a dict in any order, or a list in input order
        rev = {"b": feeds["b"], "a": feeds["a"]}
        got1, got2 = s.run(rev), s.run([feeds["a"], feeds["b"]])
        for k in ("y", "z"):
            np.testing.assert_array_equal(got1[k], got2[k])


def test_one_session_two_threads_is_refused_not_raced(convert_model):
    """Two threads calling run() on one session: a call that finds the session running on the
    other thread gets InvalidStateError; every call that runs gives the right result."""
    src, ksm = convert_model("face_detection/version-slim-320.onnx")
    with kestrel.Model.load(ksm) as model, kestrel.Session(model) as s:
        x = np.random.default_rng(1).uniform(-1, 1, model.inputs[0].shape).astype(np.float32)
        want = s.run(x)
        refused, ran, errors = [], [], []

        def worker():
            for _ in range(100):  # until both outcomes were seen (a few runs, usually)
                if refused and len(ran) >= 10:
                    break
                try:
                    got = s.run(x)
                    for k in want:
                        np.testing.assert_array_equal(got[k], want[k])
                    ran.append(1)
                except kestrel.InvalidStateError as e:
                    refused.append(str(e))
                except Exception as e:  # pragma: no cover - reported below
                    errors.append(e)

        ts = [threading.Thread(target=worker) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors, errors
        assert len(ran) >= 10
        assert all("another thread" in m for m in refused), refused[:3]
        assert refused, "two threads never overlapped in 200 runs"
        s.run(x)  # the session is usable afterwards
