"""ONNX interchange: ``export`` a model to an ONNX file and ``load`` an ONNX model back as a
tensorix Module (the optional ``onnx`` extra; onnxruntime runs the tests). See docs/onnx.md
and README.md here for what lives where."""

from ._common import DEFAULT_OPSET, UnsupportedOperatorError
from ._export import export, export_graph
from ._load import OnnxModule, load

__all__ = ["export", "export_graph", "load", "OnnxModule", "UnsupportedOperatorError",
           "DEFAULT_OPSET", "supported_ops"]


def supported_ops(opset_version: int = DEFAULT_OPSET) -> list:
    """The primitives (Function classes) that export can write at ``opset_version``."""
    from ._symbolic import SYMBOLIC

    return sorted((cls for cls, (_, since) in SYMBOLIC.items() if since <= opset_version),
                  key=lambda c: c.__name__)
