"""Shared pieces of the golden-test scripts: model lookup, per-model input conventions,
reference runtimes and the comparison rules.

Runs inside $ROOT/.venv (made by scripts/setup from scripts/requirements-golden.txt).
"""

import hashlib
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))  # engine/tests/golden -> repo

# Exit status meaning "skipped" for ctest (SKIP_RETURN_CODE).
EXIT_SKIP = 77

# Where models and images are looked up, in order: the npm-fetched models/ of the checkout,
# then ../shared/data next to the checkout (developer and CI machines only).
SEARCH_ROOTS = [os.path.join(ROOT, "models"), os.path.join(os.path.dirname(ROOT), "shared", "data")]

# Sample photos present on a fresh machine after scripts/setup (copied from Debian packages).
IMAGES = ["images/skimage_astronaut.png", "images/opencv_messi5.jpg"]

# ---------------------------------------------------------------------------------------------
# Input conventions. Each model's image input is made from a photo as the model's own pipeline
# does it: resize (bilinear, whole image, no letterbox) to the input size, channel order, then
# `value = (pixel - mean) / std` per channel (pixel in 0..255), in the input's layout. uint8
# inputs take the raw pixels. Random inputs are uniform over the same value range (lo, hi)
# (full 0..255 for uint8), which is the range the model sees in use.
#
# | model (file stem)                          | order | mean, std            | range     |
# |--------------------------------------------|-------|----------------------|-----------|
# | MediaPipe detectors: face_detection_*,      | RGB   | 127.5, 127.5         | [-1, 1]   |
# |   pose_detection                           |       |                      |           |
# | MediaPipe landmarks/segmentation/palm:     | RGB   | 0, 255               | [0, 1]    |
# |   face_landmark*, pose_landmark_*,         |       |                      |           |
# |   hand_landmark_*, palm_detection_*,       |       |                      |           |
# |   selfie_segmentation*                     |       |                      |           |
# | UltraFace (version-*-320*, RFB/slim)       | RGB   | 127, 128             | ~[-1, 1]  |
# | YuNet (yunet_*)                            | BGR   | 0, 1                 | [0, 255]  |
# | YOLOX-nano                                 | BGR   | 0, 1                 | [0, 255]  |
# | NanoDet-m                                  | BGR   | (103.53, 116.28,     | ~[-2, 2.6]|
# |                                            |       |  123.675), (57.375,  |           |
# |                                            |       |  57.12, 58.395)      |           |
# | uint8 models (Coral MobileNets, DeepLab,   | RGB   | raw uint8            | [0, 255]  |
# |   MoveNet)                                 |       |                      |           |
#
# ONNX models are NCHW, TFLite NHWC. yunet_s_dynamic has symbolic dims; it is run at 1x3x480x640
# (non-square, multiple of 32) to exercise the dynamic path.
# ---------------------------------------------------------------------------------------------

_MP_SIGNED = dict(order="RGB", mean=(127.5,) * 3, std=(127.5,) * 3)
_MP_UNIT = dict(order="RGB", mean=(0.0,) * 3, std=(255.0,) * 3)
_ULTRAFACE = dict(order="RGB", mean=(127.0,) * 3, std=(128.0,) * 3)
_BGR_RAW = dict(order="BGR", mean=(0.0,) * 3, std=(1.0,) * 3)
_NANODET = dict(order="BGR", mean=(103.53, 116.28, 123.675), std=(57.375, 57.12, 58.395))
_U8 = dict(order="RGB", mean=None, std=None)

CONVENTIONS = [
    (r"^face_detection_", _MP_SIGNED),
    (r"^pose_detection$", _MP_SIGNED),
    (r"^(face_landmark|pose_landmark_|hand_landmark_|palm_detection_|selfie_segmentation)", _MP_UNIT),
    (r"^version-.*320|^(RFB|slim)-320", _ULTRAFACE),
    (r"^yunet_", _BGR_RAW),
    (r"^yolox", _BGR_RAW),
    (r"^nanodet", _NANODET),
]

# Fixed shapes for inputs with symbolic dimensions.
SHAPE_OVERRIDES = {"yunet_s_dynamic": {"input": (1, 3, 480, 640)}}

# Models with MediaPipe custom ops that LiteRT's reference resolver lacks
# (Convolution2DTransposeBias in selfie segmentation; TransformLandmarks, TransformTensorBilinear,
# Landmarks2TransformMatrix in face_landmark_with_attention). Their references come from
# mediapipe's own TFLite runtime with MediaPipe's kernels for these ops (mp_reference.py).
# (LiteRT's default resolver runs Convolution2DTransposeBias only through XNNPACK, not with the
# reference kernels used for every other model.)
MEDIAPIPE_RUNTIME = {"face_landmark_with_attention", "selfie_segmentation",
                     "selfie_segmentation_landscape"}


def stem(model_rel):
    return os.path.splitext(os.path.basename(model_rel))[0]


def convention(model_rel):
    s = stem(model_rel)
    for pattern, conv in CONVENTIONS:
        if re.search(pattern, s):
            return conv
    # Quantized models (uint8/int8 inputs) take raw RGB pixels.
    return _U8


MAX_NAME = 200  # KS_NPY_MAX_NAME in engine/tools/common/npy.h


def sanitize(name):
    """Tensor name -> file stem, as ks-run names its outputs (engine/tools/common/npy.c):
    characters outside [A-Za-z0-9._-] become '_'; names longer than MAX_NAME bytes keep a
    prefix plus '-' and the FNV-1a 64-bit hash of the whole name."""
    raw = name.encode("utf-8")
    if len(raw) <= MAX_NAME:
        return re.sub(rb"[^A-Za-z0-9._-]", b"_", raw).decode("ascii")
    h = 0xCBF29CE484222325
    for b in raw:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    stem = re.sub(rb"[^A-Za-z0-9._-]", b"_", raw[: MAX_NAME - 17]).decode("ascii")
    return "%s-%016x" % (stem, h)


def find_file(rel):
    for root in SEARCH_ROOTS:
        p = os.path.join(root, rel)
        if os.path.isfile(p):
            return p
    return None


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def skip(msg):
    print(f"SKIP: {msg}")
    sys.exit(EXIT_SKIP)


# ---------------------------------------------------------------------------------------------
# Model I/O description, independent of the runtime.
# ---------------------------------------------------------------------------------------------

class TensorInfo:
    def __init__(self, name, shape, dtype, scale=0.0, zero_point=0):
        self.name = name
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.scale = float(scale)
        self.zero_point = int(zero_point)

    def to_json(self):
        return dict(name=self.name, shape=list(self.shape), dtype=self.dtype.name,
                    scale=self.scale, zero_point=self.zero_point)

    @staticmethod
    def from_json(d):
        return TensorInfo(d["name"], d["shape"], d["dtype"], d["scale"], d["zero_point"])


def _ort_dtype(type_str):
    table = {"tensor(float)": np.float32, "tensor(uint8)": np.uint8, "tensor(int8)": np.int8,
             "tensor(int32)": np.int32, "tensor(int64)": np.int64, "tensor(float16)": np.float16,
             "tensor(bool)": np.bool_}
    if type_str not in table:
        raise ValueError(f"unsupported ONNX tensor type {type_str}")
    return table[type_str]


def model_io(model_path):
    """Return (inputs, outputs) as lists of TensorInfo, in the model's order."""
    s = stem(model_path)
    if model_path.endswith(".onnx"):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.log_severity_level = 3  # initializers listed as graph inputs (opset 9) warn loudly
        sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
        over = SHAPE_OVERRIDES.get(s, {})
        ins = []
        for i in sess.get_inputs():
            shape = over.get(i.name, i.shape)
            if any(not isinstance(d, int) for d in shape):
                raise ValueError(f"{model_path}: input {i.name} has symbolic shape {i.shape}; "
                                 "add it to SHAPE_OVERRIDES")
            ins.append(TensorInfo(i.name, shape, _ort_dtype(i.type)))
        outs = [TensorInfo(o.name, [d if isinstance(d, int) else -1 for d in o.shape],
                           _ort_dtype(o.type)) for o in sess.get_outputs()]
        return ins, outs
    from ai_edge_litert.interpreter import Interpreter
    it = Interpreter(model_path=model_path)  # does not prepare ops: fine for custom-op models

    def info(d):
        scale, zp = d["quantization"]
        return TensorInfo(d["name"], d["shape"], d["dtype"], scale, zp)
    return [info(d) for d in it.get_input_details()], [info(d) for d in it.get_output_details()]


# ---------------------------------------------------------------------------------------------
# Reference runtimes.
# ---------------------------------------------------------------------------------------------

def run_reference(model_path, feeds):
    """Run MODEL on {input name: array}; return ({output name: array}, runtime description)."""
    s = stem(model_path)
    if model_path.endswith(".onnx"):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.log_severity_level = 3
        sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        vals = sess.run(names, feeds)
        return dict(zip(names, vals)), f"onnxruntime {ort.__version__}"
    if s in MEDIAPIPE_RUNTIME:
        import mp_reference
        return mp_reference.run(model_path, feeds)
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    import importlib.metadata as md
    # TFLite's reference kernels define the op semantics. The default resolver (XNNPACK and the
    # optimized kernels) rounds quantized ops differently: up to 6 quanta on MobileNetV2-quant
    # outputs, far beyond the 1-quantum tolerance.
    it = Interpreter(model_path=model_path, num_threads=1,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    for d in it.get_input_details():
        if tuple(d["shape"]) != feeds[d["name"]].shape:
            it.resize_tensor_input(d["index"], feeds[d["name"]].shape)
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], feeds[d["name"]])
    it.invoke()
    outs = {d["name"]: np.array(it.get_tensor(d["index"])) for d in it.get_output_details()}
    return outs, f"ai-edge-litert {md.version('ai-edge-litert')} (reference kernels)"


# ---------------------------------------------------------------------------------------------
# Comparison rules.
# ---------------------------------------------------------------------------------------------

FP32_REL_L2 = 1e-4        # ||k - r|| / ||r||
REL_L2_FLOOR_RMS = 1e-3   # see compare()
FP32_ABS = 1e-3           # max |k - r| <= FP32_ABS * max(1, max |r|)
QUANT_MAX_QUANTA = 1      # every element within one quantum
QUANT_MIN_EXACT = 0.99    # and at least 99 % bit-exact
INT_MIN_EXACT = 0.99      # integer outputs (ArgMax labels): >= 99 % equal. Ties and near-ties
                          # between class scores legitimately flip labels under rounding
                          # differences of the quantized logits, so exact equality is not
                          # demanded.


def compare(ref, got, fp_rel_l2=FP32_REL_L2, fp_abs=FP32_ABS):
    """Compare one output. Returns dict(kind, rel_l2, max_abs, tol_abs, pct_exact, ok, why).
    fp_rel_l2 and fp_abs replace the float tolerances (the fp16 variant's are wider)."""
    r = dict(kind="", rel_l2=float("nan"), max_abs=float("nan"), tol_abs=float("nan"),
             pct_exact=float("nan"), ok=False, why="")
    if ref.dtype.kind == "f":
        r["kind"] = "fp"
    elif ref.dtype in (np.uint8, np.int8):
        r["kind"] = "quant"
    elif ref.dtype.kind in "iub":
        r["kind"] = "int"
    else:
        r["why"] = f"unsupported reference dtype {ref.dtype}"
        return r
    if got.shape != ref.shape:
        r["why"] = f"shape {list(got.shape)} != reference {list(ref.shape)}"
        return r
    if r["kind"] == "fp" and got.dtype.kind != "f":
        r["why"] = f"dtype {got.dtype} where reference is {ref.dtype}"
        return r
    if r["kind"] == "quant" and got.dtype != ref.dtype:
        r["why"] = f"dtype {got.dtype} where reference is {ref.dtype}"
        return r
    if r["kind"] == "int" and got.dtype.kind not in "iub":
        r["why"] = f"dtype {got.dtype} where reference is {ref.dtype}"
        return r
    rf = ref.astype(np.float64)
    gf = got.astype(np.float64)
    diff = np.abs(gf - rf)
    n = max(ref.size, 1)
    r["max_abs"] = float(diff.max()) if ref.size else 0.0
    r["pct_exact"] = 100.0 * float(np.count_nonzero(gf == rf)) / n
    # Relative L2 against max(||ref||, REL_L2_FLOOR_RMS * sqrt(n)): outputs that are almost all
    # ~0 (e.g. a saturated sigmoid mask on a random input) are then judged by their absolute
    # error. Without the floor, LiteRT+XNNPACK and MediaPipe disagree by 1.2e-4 on
    # selfie_segmentation's random input, where the largest value is 0.015.
    ref_norm = max(float(np.linalg.norm(np.where(np.isfinite(rf), rf, 0))),
                   REL_L2_FLOOR_RMS * np.sqrt(n))
    r["rel_l2"] = float(np.linalg.norm(np.where(np.isfinite(rf), gf - rf, 0))) / ref_norm
    if r["kind"] == "fp":
        if not np.all(np.isfinite(gf) == np.isfinite(rf)):
            r["why"] = "non-finite values differ"
            return r
        finite = np.isfinite(rf)
        diff = np.where(finite, diff, 0.0)
        r["max_abs"] = float(diff.max()) if ref.size else 0.0
        r["tol_abs"] = fp_abs * max(1.0, float(np.abs(np.where(finite, rf, 0)).max(initial=0.0)))
        r["ok"] = r["rel_l2"] <= fp_rel_l2 and r["max_abs"] <= r["tol_abs"]
        if not r["ok"]:
            r["why"] = f"tolerance rel_l2<={fp_rel_l2:g}, max_abs<={r['tol_abs']:.3g}"
    elif r["kind"] == "quant":
        r["tol_abs"] = QUANT_MAX_QUANTA
        r["ok"] = r["max_abs"] <= QUANT_MAX_QUANTA and r["pct_exact"] >= 100 * QUANT_MIN_EXACT
        if not r["ok"]:
            r["why"] = f"tolerance |diff|<={QUANT_MAX_QUANTA} quantum, >={100 * QUANT_MIN_EXACT:g}% exact"
    else:
        r["ok"] = r["pct_exact"] >= 100 * INT_MIN_EXACT
        if not r["ok"]:
            r["why"] = f"tolerance >={100 * INT_MIN_EXACT:g}% exact"
    return r
