"""The kestrel command against the C tools (ks-convert, ks-inspect, ks-run, ks-vision)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import kestrel
from kestrel import _tools
from kestrel.cli import main

from conftest import data_file


def cli_json(capsys, *argv: str):
    rc = main([*argv, "--json"])
    out = capsys.readouterr().out
    return rc, json.loads(out)


def tool(name: str) -> str:
    try:
        return _tools.tool_path(name)
    except kestrel.ToolError as e:
        pytest.skip(str(e))


def test_convert_is_ks_convert(tmp_path, capsys):
    src = data_file("face_detection/face_detection_short_range.tflite")
    rc, doc = cli_json(capsys, "convert", src, str(tmp_path / "py.ksm"))
    assert rc == 0 and doc["size_bytes"] == os.path.getsize(tmp_path / "py.ksm")
    subprocess.run([tool("ks-convert"), src, str(tmp_path / "c.ksm"), "--quiet"], check=True)
    assert (tmp_path / "py.ksm").read_bytes() == (tmp_path / "c.ksm").read_bytes()
    # options reach the converter: fp16 weights make a smaller file
    rc, doc16 = cli_json(capsys, "convert", src, str(tmp_path / "h.ksm"), "--weights", "fp16")
    assert rc == 0 and doc16["size_bytes"] < 0.7 * doc["size_bytes"]


def test_convert_progress_and_interrupt(tmp_path):
    """kestrel.convert reports its four steps, and Ctrl-C (here raised by the progress callback)
    stops the converter and leaves no output file."""
    src = data_file("face_detection/face_detection_short_range.tflite")
    events = []
    kestrel.convert(src, tmp_path / "p.ksm", progress=lambda *e: events.append(e))
    assert events == [("converting", k, 4) for k in range(5)], events
    subprocess.run([tool("ks-convert"), src, str(tmp_path / "c.ksm"), "--quiet"], check=True)
    assert (tmp_path / "p.ksm").read_bytes() == (tmp_path / "c.ksm").read_bytes()

    def interrupt(what, done, total):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        kestrel.convert(src, tmp_path / "i.ksm", progress=interrupt)
    assert not (tmp_path / "i.ksm").exists()
    # progress=False and True both convert the same bytes (True: a bar or plain lines)
    kestrel.convert(src, tmp_path / "f.ksm", progress=False)
    kestrel.convert(src, tmp_path / "t.ksm", progress=True)
    assert (tmp_path / "f.ksm").read_bytes() == (tmp_path / "t.ksm").read_bytes() == \
        (tmp_path / "c.ksm").read_bytes()


def test_inspect_and_ops(blazeface, capsys):
    rc, doc = cli_json(capsys, "inspect", blazeface)
    assert rc == 0
    with kestrel.Model.load(blazeface) as m:
        assert doc["inputs"] == [t.to_dict() for t in m.inputs]
        assert doc["outputs"] == [t.to_dict() for t in m.outputs]
    c_ops = subprocess.run([tool("ks-inspect"), blazeface, "--ops-only"], check=True,
                           capture_output=True, text=True).stdout.split()
    assert doc["ops"] == c_ops and "conv2d" in " ".join(c_ops)
    rc, ops = cli_json(capsys, "ops", blazeface)
    assert rc == 0 and ops["models"][0]["ops"] == c_ops
    assert main(["inspect", blazeface]) == 0
    human = capsys.readouterr().out
    assert "inputs:" in human and m.inputs[0].name in human


def test_ops_reports_unconvertible_models(tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not an onnx model")
    rc, doc = cli_json(capsys, "ops", str(bad))
    assert rc == 1 and doc["models"][0]["supported"] is False and doc["models"][0]["error"]


def test_run_matches_ks_run(blazeface, tmp_path, capsys):
    with kestrel.Model.load(blazeface) as m:
        x = np.random.default_rng(2).uniform(-1, 1, m.inputs[0].shape).astype(np.float32)
        name = m.inputs[0].name
    np.save(tmp_path / "x.npy", x)
    rc, doc = cli_json(capsys, "run", blazeface, "--input", f"{name}={tmp_path / 'x.npy'}",
                       "--output-dir", str(tmp_path / "py"))
    assert rc == 0 and doc["outputs"]
    subprocess.run([tool("ks-run"), blazeface, "--input", f"{name}={tmp_path / 'x.npy'}",
                    "--output-dir", str(tmp_path / "c")], check=True, capture_output=True)
    for f in sorted(os.listdir(tmp_path / "c")):
        np.testing.assert_array_equal(np.load(tmp_path / "py" / f), np.load(tmp_path / "c" / f))
    assert len(os.listdir(tmp_path / "py")) == len(os.listdir(tmp_path / "c")) >= 2


def test_bench(blazeface, capsys):
    rc, doc = cli_json(capsys, "bench", blazeface, "--runs", "5", "--warmup", "1")
    assert rc == 0 and doc["runs"] == 5 and 0 < doc["min_ms"] <= doc["median_ms"] <= doc["max_ms"]


def test_vision_matches_ks_vision(capsys):
    img = data_file("images/skimage_astronaut.png")
    pytest.importorskip("PIL")
    rc, doc = cli_json(capsys, "vision", "face_detect", img)
    want = json.loads(subprocess.run([tool("ks-vision"), "face_detect", img, "--json"],
                                     check=True, capture_output=True, text=True,
                                     env=_tools.tool_env()).stdout)
    assert rc == 0 and len(doc["faces"]) == len(want["faces"])
    for a, b in zip(doc["faces"], want["faces"]):
        np.testing.assert_allclose(a["box"], b["box"], atol=0.006)


def test_errors_exit_cleanly(tmp_path, capsys):
    assert main(["inspect", str(tmp_path / "missing.ksm")]) == 1
    assert "i/o error" in capsys.readouterr().err
    r = subprocess.run([sys.executable, "-m", "kestrel", "--version"], capture_output=True,
                       text=True)
    assert r.returncode == 0 and kestrel.version() in r.stdout
    r = subprocess.run([sys.executable, "-m", "kestrel", "convert"], capture_output=True,
                       text=True)
    assert r.returncode == 2 and "usage" in r.stderr


def test_protect_and_quantize_commands(blazeface, tmp_path, capsys):
    rc, doc = cli_json(capsys, "protect", "keygen", str(tmp_path / "k"))
    assert rc == 0 and (tmp_path / "k").stat().st_size in (32, 64, 65)
    rc, doc = cli_json(capsys, "protect", "encrypt", blazeface, str(tmp_path / "e.ksm"),
                       "--key-file", str(tmp_path / "k"))
    assert rc == 0
    key = kestrel.protect._read_key(str(tmp_path / "k"))
    with kestrel.Model.load(tmp_path / "e.ksm", key=key) as m:
        assert m.inputs[0].name == "input"
    assert main(["protect", "encrypt", blazeface, str(tmp_path / "f.ksm")]) == 1
    assert "--key-file" in capsys.readouterr().err
    calib = tmp_path / "calib"
    calib.mkdir()
    for rel in ("images/skimage_astronaut.png", "images/coral_squat.bmp"):
        src = data_file(rel)
        (calib / os.path.basename(src)).write_bytes(open(src, "rb").read())
    rc, doc = cli_json(capsys, "quantize", blazeface, str(tmp_path / "q.ksm"), "--calibration",
                       str(calib), "--max-images", "2", "--eval-images", "1", "--no-speed-check")
    assert rc == 0 and doc["int8_bytes"] == os.path.getsize(tmp_path / "q.ksm")
    assert doc["int8_layers"] >= 1 and doc["outputs"]
