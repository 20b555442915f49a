"""ONNX interchange: ``export`` a model to an ONNX file and ``load`` an ONNX model back as a
tensorix Module (the optional ``onnx`` extra; onnxruntime runs the tests). See docs/onnx.md."""

from ._common import DEFAULT_OPSET, UnsupportedOperatorError
from ._load import OnnxModule, load

__all__ = ["load", "OnnxModule", "UnsupportedOperatorError", "DEFAULT_OPSET"]
