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

__version__: str  # read on first use from the package metadata (see __getattr__)

# Subpackages above the core load on first use (``tensorix.nn``, ``tensorix.linalg``, ...), so
# ``import tensorix`` stays fast and a subpackage's optional dependencies stay optional.
_LAZY = ("nn", "optim", "data", "io", "linalg", "logic", "numerics", "quant", "decomp", "tn",
         "compile", "distributed", "cuda", "testing", "utils",
         "fft", "special", "distributions", "backends", "accelerator", "amp", "func", "memory",
         "onnx")


_LAZY_ATTRS = {"save": "io", "load": "io", "serialization": "io", "autocast": "amp",
               "stft": "fft._stft", "istft": "fft._stft", "hann_window": "fft._windows",
               "hamming_window": "fft._windows", "blackman_window": "fft._windows",
               "bartlett_window": "fft._windows", "kaiser_window": "fft._windows"}
# torch's top-level names that live higher up in tensorix (the same functions; torch.conv2d is
# torch.nn.functional.conv2d), loaded on first use
_LAZY_ATTRS.update(dict.fromkeys(["GradScaler", "is_autocast_enabled", "get_autocast_dtype"],
                                 "amp"))
_LAZY_ATTRS.update(vmap="func", is_anomaly_enabled="autograd",
                   is_anomaly_check_nan_enabled="autograd")
# graph capture and the compiler: tensorix.fx, and the functions tensorix.compile / .export
_LAZY += ("fx",)
_LAZY_ATTRS.update(compile="_compile", export="fx.export")
_LAZY_ATTRS.update(dict.fromkeys([
    "set_float32_matmul_precision", "get_float32_matmul_precision",
    "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled"], "_settings"))
_LAZY_ATTRS.update(dict.fromkeys([
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "prelu", "rrelu", "threshold",
    "cosine_similarity", "pairwise_distance", "pdist", "bilinear", "max_pool1d", "max_pool2d",
    "max_pool3d", "avg_pool1d", "adaptive_avg_pool1d", "dropout", "alpha_dropout",
    "feature_alpha_dropout", "layer_norm", "group_norm", "rms_norm"], "nn.functional"))


def __getattr__(name):
    if name == "__version__":  # one source: the installed package's metadata (pyproject.toml)
        from importlib import metadata

        try:
            return metadata.version("tensorix")
        except metadata.PackageNotFoundError:  # a source tree that was never installed
            return "0+unknown"
    if name in _LAZY_ATTRS:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY_ATTRS[name]}"), name)
    if name in _LAZY:
        import importlib

        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:  # a subpackage not built yet: hasattr() must say no
            if e.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module 'tensorix' has no attribute {name!r}")


__all__ = (["Tensor", "Size", "Device", "device", "autograd", "no_grad", "enable_grad",
            "set_grad_enabled", "inference_mode", "is_grad_enabled",
            "is_inference_mode_enabled", "__version__", "set_printoptions",
            "get_printoptions", "printoptions", "set_num_threads", "get_num_threads",
            "set_num_interop_threads", "get_num_interop_threads"]
           + dtypes.__all__ + ops.__all__)
