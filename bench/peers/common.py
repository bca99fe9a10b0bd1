"""Shared definitions of the peer benchmark: the model set, paths and small helpers.

The model set is fixed here so that convert.py and run.py always agree. Every model is looked
up first in the repository's models/ directory (fetched by scripts/setup) and then in the shared
data directory (KS_DATA, default /work/shared/data).
"""

import os
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
WORK = HERE / "work"  # converted models and raw results; gitignored
DATA_DIRS = [REPO / "models", pathlib.Path(os.environ.get("KS_DATA", "/work/shared/data"))]


class Model:
    """One benchmark model.

    key:   short id used for file names and tables.
    title: name shown in the report.
    src:   path relative to a data directory (.onnx or .tflite).
    ncnn:  None for "convert ONNX with pnnx", or a data-relative stem of an upstream
           .param/.bin pair to use as is.
    """

    def __init__(self, key, title, src, ncnn=None):
        self.key = key
        self.title = title
        self.src = src
        self.ncnn = ncnn

    @property
    def fmt(self):
        return "onnx" if self.src.endswith(".onnx") else "tflite"

    def source_path(self):
        return find_data(self.src)


MODELS = [
    Model("ultraface_rfb320", "UltraFace RFB-320", "face_detection/version-RFB-320.onnx",
          ncnn="face_detection/RFB-320"),
    Model("yunet_s_640", "YuNet-s 640", "face_detection/yunet_s_640_640.onnx"),
    Model("yolox_nano", "YOLOX-nano 416", "object_detection/yolox_nano.onnx"),
    Model("nanodet_m", "NanoDet-m 416", "object_detection/nanodet_m.onnx"),
    Model("blazeface_short", "BlazeFace short-range",
          "face_detection/face_detection_short_range.tflite"),
    Model("facemesh", "FaceMesh", "face_landmarks/face_landmark.tflite"),
    Model("blazepose_lite", "BlazePose lite", "pose/pose_landmark_lite.tflite"),
    Model("blazepose_full", "BlazePose full", "pose/pose_landmark_full.tflite"),
    Model("blazepose_heavy", "BlazePose heavy", "pose/pose_landmark_heavy.tflite"),
    Model("selfie_seg", "Selfie segmentation", "segmentation/selfie_segmentation.tflite"),
    Model("mobilenetv2_u8", "MobileNetV2 1.0 224 uint8",
          "classification/mobilenet_v2_1.0_224_quant.tflite"),
]

ENGINES = ["kestrel", "onnxruntime", "litert", "mnn", "ncnn"]
ENGINE_TITLES = {
    "kestrel": "Kestrel",
    "onnxruntime": "ONNX Runtime",
    "litert": "LiteRT (XNNPACK)",
    "mnn": "MNN",
    "ncnn": "ncnn",
}


def find_data(rel):
    for d in DATA_DIRS:
        p = d / rel
        if p.exists():
            return p
    return None


def build_dir():
    return pathlib.Path(os.environ.get("KS_BUILD_DIR", str(REPO / "build-bench")))


def model_dir(model):
    return WORK / "models" / model.key


def ncnn_param_bin(model):
    """Paths of the ncnn .param/.bin for a model, wherever convert.py put or found them."""
    if model.ncnn:
        param = find_data(model.ncnn + ".param")
        binf = find_data(model.ncnn + ".bin")
        if param and binf:
            return param, binf
    d = model_dir(model)
    return d / "model.ncnn.param", d / "model.ncnn.bin"


def parse_ncnn_param(path):
    """Input blob names (outputs of Input layers) and output blobs (never consumed) of a .param."""
    lines = pathlib.Path(path).read_text().split("\n")
    if not lines or lines[0].strip() != "7767517":
        raise ValueError(f"{path}: not an ncnn text .param (magic {lines[0]!r})")
    inputs, produced, consumed = [], [], set()
    for line in lines[2:]:
        f = line.split()
        if len(f) < 4:
            continue
        kind, n_in, n_out = f[0], int(f[2]), int(f[3])
        ins = f[4:4 + n_in]
        outs = f[4 + n_in:4 + n_in + n_out]
        consumed.update(ins)
        produced.extend(outs)
        if kind == "Input":
            inputs.extend(outs)
    outputs = [b for b in produced if b not in consumed]
    return inputs, outputs
