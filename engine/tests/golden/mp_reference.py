"""Reference outputs for TFLite models with MediaPipe custom ops, computed by MediaPipe itself.

LiteRT's op resolver lacks MediaPipe's custom ops TransformLandmarks, TransformTensorBilinear
and Landmarks2TransformMatrix (used by face_landmark_with_attention.tflite), so LiteRT cannot
run that model. The mediapipe 0.10.21 wheel links TFLite together with MediaPipe's
implementations of these ops (registered by its TfLiteCustomOpResolverCalculator), and its
Python bindings can run any calculator graph. We run the graph

    Matrix (the raw float input, row-major)
      -> TensorConverterCalculator (copies the values, no normalization)
      -> InferenceCalculator (TFLite CPU, the MediaPipe custom-op resolver)
      -> SplitTensorVectorCalculator -> one TensorsToFloatsCalculator per output
      -> vector<float> packets read back in Python.

This gives the values of MediaPipe's own kernels for arbitrary float inputs. It was checked to
agree with LiteRT to ~3e-7 relative L2 on face_landmark.tflite (no custom ops).

Only mediapipe's framework bindings are imported. Importing the `mediapipe` package itself would
pull in its drawing utilities and so cv2 and matplotlib, which the golden venv leaves out (see
scripts/requirements-golden.txt); a bare package module with the right __path__ is registered
instead so that `mediapipe.python` can load without running mediapipe/__init__.py.
"""

import importlib.metadata
import importlib.util
import sys
import types

import numpy as np


def _import_mediapipe_bindings():
    if "mediapipe" not in sys.modules:
        spec = importlib.util.find_spec("mediapipe")
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError("the mediapipe package is not installed in this venv")
        pkg = types.ModuleType("mediapipe")
        pkg.__path__ = list(spec.submodule_search_locations)
        sys.modules["mediapipe"] = pkg
    from google.protobuf import text_format
    from mediapipe.calculators.core import split_vector_calculator_pb2  # noqa: F401 (options ext)
    from mediapipe.calculators.tensor import inference_calculator_pb2  # noqa: F401
    from mediapipe.calculators.tensor import tensor_converter_calculator_pb2  # noqa: F401
    from mediapipe.framework import calculator_pb2
    from mediapipe.python import packet_creator, packet_getter
    from mediapipe.python._framework_bindings import calculator_graph
    return text_format, calculator_pb2, packet_creator, packet_getter, calculator_graph


def _graph_text(model_path, num_outputs):
    if '"' in model_path or "\\" in model_path:
        raise ValueError(f"model path {model_path!r} cannot be quoted in a graph config")
    lines = ['input_stream: "matrix"']
    lines += [f'output_stream: "f{i}"' for i in range(num_outputs)]
    lines.append('node { calculator: "TfLiteCustomOpResolverCalculator" '
                 'output_side_packet: "OP_RESOLVER:op_resolver" }')
    lines.append('node { calculator: "TensorConverterCalculator" input_stream: "MATRIX:matrix" '
                 'output_stream: "TENSORS:in_tensors" options { '
                 '[mediapipe.TensorConverterCalculatorOptions.ext] { row_major_matrix: true '
                 'zero_center: false } } }')
    lines.append('node { calculator: "InferenceCalculator" input_stream: "TENSORS:in_tensors" '
                 'output_stream: "TENSORS:out_tensors" input_side_packet: "OP_RESOLVER:op_resolver" '
                 f'options {{ [mediapipe.InferenceCalculatorOptions.ext] {{ model_path: "{model_path}" '
                 'delegate { tflite {} } } } }')
    split_outs = " ".join(f'output_stream: "t{i}"' for i in range(num_outputs))
    ranges = " ".join(f"ranges {{ begin: {i} end: {i + 1} }}" for i in range(num_outputs))
    lines.append(f'node {{ calculator: "SplitTensorVectorCalculator" input_stream: "out_tensors" '
                 f'{split_outs} options {{ [mediapipe.SplitVectorCalculatorOptions.ext] {{ {ranges} }} }} }}')
    for i in range(num_outputs):
        lines.append(f'node {{ calculator: "TensorsToFloatsCalculator" input_stream: "TENSORS:t{i}" '
                     f'output_stream: "FLOATS:f{i}" }}')
    return "\n".join(lines)


def run(model_path, feeds):
    """Same contract as golden_common.run_reference for a single-float-input TFLite model."""
    from golden_common import model_io
    ins, outs = model_io(model_path)
    if len(ins) != 1 or ins[0].dtype != np.float32:
        raise ValueError(f"{model_path}: the MediaPipe reference path handles one float32 input")
    for o in outs:
        if o.dtype != np.float32:
            raise ValueError(f"{model_path}: output {o.name} is {o.dtype}, need float32")
    x = np.ascontiguousarray(feeds[ins[0].name], dtype=np.float32)
    if x.shape != ins[0].shape:
        raise ValueError(f"{model_path}: input shape {x.shape} != model {ins[0].shape}")
    text_format, calculator_pb2, packet_creator, packet_getter, calculator_graph = \
        _import_mediapipe_bindings()
    config = text_format.Parse(_graph_text(model_path, len(outs)),
                               calculator_pb2.CalculatorGraphConfig())
    graph = calculator_graph.CalculatorGraph(graph_config=config)
    got = {}
    for i in range(len(outs)):
        graph.observe_output_stream(
            f"f{i}", lambda stream, p: got.__setitem__(stream, np.array(
                packet_getter.get_float_list(p), dtype=np.float32)))
    graph.start_run()
    # One row holding every value: TensorConverter copies the matrix in row-major order, and
    # InferenceCalculator copies the bytes into the interpreter's input, so only the element
    # count has to match the model input.
    graph.add_packet_to_input_stream("matrix", packet_creator.create_matrix(x.reshape(1, -1)).at(0))
    graph.close()
    result = {}
    for i, o in enumerate(outs):
        v = got.get(f"f{i}")
        if v is None or v.size != int(np.prod(o.shape)):
            raise RuntimeError(f"{model_path}: mediapipe produced no/odd data for output {o.name}")
        result[o.name] = v.reshape(o.shape)
    return result, f"mediapipe {importlib.metadata.version('mediapipe')} (TFLite + MediaPipe custom ops)"
