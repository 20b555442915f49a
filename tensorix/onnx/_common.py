"""What export and load share: the error type, the opset range, ONNX <-> tensorix dtypes.

``onnx`` is imported inside functions only: ``import tensorix`` (and ``import tensorix.onnx``)
must work where the optional extra is not installed.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt

__all__ = ["UnsupportedOperatorError", "DEFAULT_OPSET", "MIN_OPSET", "MAX_OPSET", "onnx_module",
           "to_elem_type", "from_elem_type", "check_opset"]

DEFAULT_OPSET = 17
# 13 is where Squeeze/Unsqueeze/ReduceSum/Split take their axes as inputs, which the builders
# emit; above 21 onnxruntime 1.2x does not run every op we emit
MIN_OPSET, MAX_OPSET = 13, 21


class UnsupportedOperatorError(RuntimeError):
    """An op with no ONNX form at the requested opset (export), or an ONNX op the interpreter
    does not know (load). A RuntimeError, as torch.onnx's exporter errors are."""


def onnx_module():
    """``onnx``, or an ImportError saying which extra installs it."""
    try:
        import onnx
    except ModuleNotFoundError as e:
        raise ImportError("tensorix.onnx needs the onnx package: pip install 'tensorix[onnx]' "
                          "(onnxruntime too, to run the exported models)") from e
    return onnx


def check_opset(where: str, opset) -> int:
    if isinstance(opset, bool) or not isinstance(opset, int):
        raise TypeError(f"{where}: expected opset_version to be an int, got "
                        f"{type(opset).__name__}")
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"{where}: opset_version {opset} is not supported; expected "
                         f"{MIN_OPSET} <= opset_version <= {MAX_OPSET}")
    return opset


def to_elem_type(dtype) -> int:
    """The ONNX TensorProto element type of a tensorix dtype (ValueError if it has none)."""
    onnx = onnx_module()
    try:
        return onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype.np))
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"tensorix.onnx: dtype {dtype} has no ONNX element type") from None


def from_elem_type(elem_type: int):
    """The tensorix dtype of an ONNX element type."""
    onnx = onnx_module()
    return dt.from_numpy_dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
