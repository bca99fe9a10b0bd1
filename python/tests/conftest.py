"""Shared fixtures of the kestrel pytest suite (python/tests).

Models and images come from models/ (scripts/fetch-models) or ../shared/data, found as the golden
tests find them (engine/tests/golden/golden_common.py, reused here with its reference runtimes and
tolerances); a test whose file is absent skips with a message.
"""

from __future__ import annotations

import os
import sys
from typing import Dict

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "engine", "tests", "golden"))

import golden_common as gc  # noqa: E402

import kestrel  # noqa: E402


def data_file(rel: str) -> str:
    p = gc.find_file(rel)
    if p is None:
        pytest.skip(f"{rel} not found under {' or '.join(gc.SEARCH_ROOTS)} (run scripts/setup; "
                    "other files need ../shared/data)")
    return p


@pytest.fixture(scope="session")
def ksm_cache(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, str]:
    return {}


@pytest.fixture(scope="session")
def convert_model(tmp_path_factory: pytest.TempPathFactory, ksm_cache: Dict[str, str]):
    """convert_model("face_detection/x.tflite") -> (source path, .ksm path), once per run."""
    out_dir = tmp_path_factory.mktemp("ksm")

    def convert(rel: str):
        src = data_file(rel)
        if rel not in ksm_cache:
            dst = os.path.join(out_dir, gc.stem(rel) + ".ksm")
            kestrel.convert(src, dst)
            ksm_cache[rel] = dst
        return src, ksm_cache[rel]

    return convert


@pytest.fixture(scope="session")
def blazeface(convert_model) -> str:
    return convert_model("face_detection/face_detection_short_range.tflite")[1]


def load_rgb(rel: str):
    """An image file as HxWx3 uint8 (Pillow, from the test venv)."""
    np = pytest.importorskip("numpy")
    Image = pytest.importorskip("PIL.Image")
    with Image.open(data_file(rel)) as im:
        return np.ascontiguousarray(np.asarray(im.convert("RGB")))


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory):
    """A small two-input, two-output ONNX model (Conv+Relu+Add, Mul) made with onnx.helper and
    converted by kestrel.convert: (onnx path, ksm path). Runs in microseconds, so the memory
    test's 10,000 runs measure the binding, not the kernels."""
    np = pytest.importorskip("numpy")
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(11)
    w = numpy_helper.from_array(rng.standard_normal((8, 8, 3, 3)).astype(np.float32) * 0.1, "w")
    nodes = [
        helper.make_node("Conv", ["a", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Add", ["r", "b"], ["y"]),
        helper.make_node("Mul", ["a", "b"], ["z"]),
    ]
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 8, 16, 16])  # noqa: E731
    graph = helper.make_graph(nodes, "tiny", [vi("a"), vi("b")], [vi("y"), vi("z")], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    d = tmp_path_factory.mktemp("tiny")
    src, dst = str(d / "tiny.onnx"), str(d / "tiny.ksm")
    onnx.save(model, src)
    kestrel.convert(src, dst)
    return src, dst
