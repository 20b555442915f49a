"""tensorix: a PyTorch-style tensor framework on NumPy (CPU) and CuPy (GPU).

The public surface is listed in ``__all__``: tensor creation and ops from ``tensorix.ops``,
dtypes, devices, grad modes and the ``autograd`` package.
"""

from . import _alloc, autograd, backend, dtypes, ops
from ._repr import get_printoptions, printoptions, set_printoptions
from ._threads import (
    get_num_interop_threads,
    get_num_threads,
    set_num_interop_threads,
    set_num_threads,
)
from .autograd import enable_grad, inference_mode, no_grad, set_grad_enabled
from .autograd.grad_mode import is_grad_enabled, is_inference_mode_enabled
from .backend import Device, device
from .dtypes import *
from .ops import *
from .tensor import Size, Tensor

_alloc.tune()  # keep freed array memory mapped for reuse (see _alloc.py)

__version__ = "0.1.0"

# Subpackages above the core load on first use (``tensorix.nn``, ``tensorix.linalg``, ...), so
# ``import tensorix`` stays fast and a subpackage's optional dependencies stay optional.
_LAZY = ("nn", "optim", "data", "io", "linalg", "logic", "numerics", "quant", "decomp",
         "compile", "distributed", "cuda", "testing", "utils")


_LAZY_ATTRS = {"save": "io", "load": "io"}


def __getattr__(name):
    if name in _LAZY_ATTRS:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY_ATTRS[name]}"), name)
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'tensorix' has no attribute {name!r}")


__all__ = (["Tensor", "Size", "Device", "device", "autograd", "no_grad", "enable_grad",
            "set_grad_enabled", "inference_mode", "is_grad_enabled",
            "is_inference_mode_enabled", "__version__", "set_printoptions",
            "get_printoptions", "printoptions", "set_num_threads", "get_num_threads",
            "set_num_interop_threads", "get_num_interop_threads"]
           + dtypes.__all__ + ops.__all__)
