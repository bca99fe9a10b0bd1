"""kestrel ops (the importers' op lists, ks-convert --list-ops) and kestrel visualize (the
self-contained HTML graph), on the standard models of ../shared/data."""

from __future__ import annotations

import html.parser
import json
import re
import subprocess
from typing import Dict, List, Set

import pytest

import kestrel
from kestrel import _tools
from kestrel.cli import main
from kestrel.visualize import graph, layout

from conftest import data_file

TFLITE_MODELS = ["face_detection/face_detection_short_range.tflite",
                 "hand/palm_detection_lite.tflite", "hand/hand_landmark_lite.tflite",
                 "classification/mobilenet_v1_0.25_128_quant.tflite"]
ONNX_MODELS = ["face_detection/version-slim-320.onnx", "face_detection/yunet_s_640_640.onnx"]


def ks_convert() -> str:
    try:
        return _tools.tool_path("ks-convert")
    except kestrel.ToolError as e:
        pytest.skip(str(e))


def listed() -> Dict[str, Set[str]]:
    return {im["format"]: {op["name"] for op in im["ops"]} for im in _tools.list_ops()["importers"]}


def tflite_op_names(path: str) -> Set[str]:
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    interp = litert.Interpreter(model_path=path)
    return {d["op_name"] for d in interp._get_ops_details()}


def onnx_op_names(path: str) -> Set[str]:
    onnx = pytest.importorskip("onnx")
    return {n.op_type for n in onnx.load(path, load_external_data=False).graph.node}


def test_list_ops_covers_the_standard_models(tmp_path):
    ops = listed()
    assert set(ops) == {"tflite", "onnx"}
    assert len(ops["tflite"]) > 60 and len(ops["onnx"]) > 50
    for rel in TFLITE_MODELS:
        path = data_file(rel)
        need = tflite_op_names(path)
        assert need and need <= ops["tflite"], f"{rel}: {sorted(need - ops['tflite'])} not listed"
        kestrel.convert(path, tmp_path / "m.ksm")  # and the importer does convert them
    for rel in ONNX_MODELS:
        path = data_file(rel)
        need = onnx_op_names(path)
        assert need and need <= ops["onnx"], f"{rel}: {sorted(need - ops['onnx'])} not listed"
        kestrel.convert(path, tmp_path / "m.ksm")
    # an op the importers refuse is not listed
    assert "LSTM" not in ops["tflite"] and "LSTM" not in ops["onnx"]


def test_list_ops_constraints_and_notes():
    doc = _tools.list_ops()
    by = {im["format"]: im for im in doc["importers"]}
    assert "opset 7..18" in by["onnx"]["notes"]
    onnx_ops = {op["name"]: op["constraints"] for op in by["onnx"]["ops"]}
    assert "2-D" in onnx_ops["Conv"] and "select_last_index" in onnx_ops["ArgMax"]
    assert onnx_ops["Relu"] == ""
    tfl = {op["name"]: op["constraints"] for op in by["tflite"]["ops"]}
    assert "beta 1" in tfl["SOFTMAX"] and "Convolution2DTransposeBias" in tfl


def test_ops_cli_equals_ks_convert(capsys):
    exe = ks_convert()
    c_json = json.loads(subprocess.run([exe, "--list-ops", "--json"], check=True,
                                       capture_output=True, text=True).stdout)
    c_text = subprocess.run([exe, "--list-ops"], check=True, capture_output=True,
                            text=True).stdout
    assert main(["ops", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == c_json
    assert main(["ops"]) == 0
    assert capsys.readouterr().out == c_text
    assert main(["ops", "--format", "onnx", "--json"]) == 0
    only = json.loads(capsys.readouterr().out)
    assert [im["format"] for im in only["importers"]] == ["onnx"]
    # the C tool refuses stray arguments with --list-ops
    r = subprocess.run([exe, "--list-ops", "x.onnx"], capture_output=True, text=True)
    assert r.returncode == 2 and "--list-ops" in r.stderr


class _Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: List[str] = []
        self.attrs: List[str] = []
        self.text: List[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [v or "" for _, v in attrs]

    def handle_data(self, data):
        self.text.append(data)


def parse(path) -> _Page:
    p = _Page()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    p.close()
    return p


def test_visualize_names_every_node(convert_model, tmp_path, capsys):
    src, ksm = convert_model("face_detection/face_detection_short_range.tflite")
    g = graph(ksm)
    assert g["nodes"] and g["inputs"] and g["outputs"]
    out = tmp_path / "g.html"
    rc = main(["visualize", ksm, "-o", str(out), "--json"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["output"] == str(out)
    page = parse(out)
    body = out.read_text(encoding="utf-8")
    assert "svg" in page.tags and "script" in page.tags
    assert not re.search(r"https?://", body), "the page must work offline"
    assert not any(a.startswith(("http", "//")) for a in page.attrs)
    assert "link" not in page.tags  # no external style sheet or font
    titles = "\n".join(page.text)
    for n in g["nodes"]:  # by name, or by its first output for a node without one
        label = n["name"] or g["tensors"][n["outputs"][0]]["name"]
        assert label and label in titles, n
    # shapes and dtypes of the input, and the weight total
    t_in = g["tensors"][g["inputs"][0]]
    assert "x".join(map(str, t_in["shape"])) in body and t_in["dtype"] in body
    assert "kernel" not in json.loads(re.search(r"var D=(.*);\n", body).group(1))[0]
    # the layout is layered: every edge goes down
    pos = layout(g)
    producer = {t: i for i, n in enumerate(g["nodes"]) for t in n["outputs"]}
    for i, n in enumerate(g["nodes"]):
        for t in n["inputs"]:
            if t in producer:
                assert pos[producer[t]]["layer"] < pos[i]["layer"]


def test_visualize_session_kernels(convert_model, tmp_path):
    src, ksm = convert_model("face_detection/version-slim-320.onnx")
    out = tmp_path / "k.html"
    kestrel.visualize(src, out, session=True)  # an .onnx: converted on the way
    body = out.read_text(encoding="utf-8")
    details = json.loads(re.search(r"var D=(.*);\n", body).group(1))
    with kestrel.Model.load(ksm) as m, kestrel.Session(m) as s:
        import numpy as np

        s.run({m.inputs[0].name: np.zeros(m.inputs[0].shape, np.float32)})
        prof = {p["index"]: p for p in s.profile()}
    with_kernel = [d for d in details if "kernel" in d]
    assert len(with_kernel) >= len(details) // 2
    for d in with_kernel:  # the node's own kernel, by index, same op
        assert prof[d["index"]]["op"] == d["op"] and prof[d["index"]]["kernel"] == d["kernel"]
        assert d["kernel"] in body
    convs = [d for d in details if d["op"] == "conv2d"]
    assert convs and all("conv" in d.get("kernel", "") for d in convs)


def test_visualize_bad_model(tmp_path, capsys):
    bad = tmp_path / "bad.ksm"
    bad.write_bytes(b"KSM1" + b"\0" * 40)
    with pytest.raises(kestrel.ToolError):
        kestrel.visualize(bad, tmp_path / "x.html")
    assert not (tmp_path / "x.html").exists()
    assert main(["visualize", str(bad), "-o", str(tmp_path / "y.html")]) == 1
    assert "visualize" in capsys.readouterr().err
