"""``tensorix.backends.cuda``: torch's CUDA backend switches.

``matmul.allow_tf32`` is the same switch as ``tensorix.cuda.matmul.allow_tf32`` (one setting,
two names): on a GPU it sets cuBLAS's float32 compute type. ``is_built()`` is whether the CuPy
extra is installed (tensorix's CUDA build), whether or not a GPU is visible. The
scaled-dot-product-attention switches are recorded only: tensorix has one (math) kernel.

Example::

    tensorix.backends.cuda.matmul.allow_tf32 = True
    assert tensorix.cuda.matmul.allow_tf32
"""

from __future__ import annotations

import importlib.util

from ..cuda._tf32 import matmul as _cuda_matmul


def check_bool(name: str, value) -> bool:
    """torch's switches accept only a bool and raise RuntimeError otherwise (not TypeError)."""
    if not isinstance(value, bool):
        raise RuntimeError(f"{name} expects a bool, but got {type(value).__name__}")
    return value

__all__ = ["is_built", "matmul", "flash_sdp_enabled", "enable_flash_sdp",
           "mem_efficient_sdp_enabled", "enable_mem_efficient_sdp", "math_sdp_enabled",
           "enable_math_sdp", "cudnn_sdp_enabled", "enable_cudnn_sdp",
           "preferred_linalg_library"]


def is_built() -> bool:
    """Whether tensorix can run on CUDA here: CuPy is installed (a GPU may still be absent;
    ``tensorix.cuda.is_available()`` says whether one is)."""
    return importlib.util.find_spec("cupy") is not None


class _CuBLAS:
    """``backends.cuda.matmul``: ``allow_tf32`` forwards to ``tensorix.cuda.matmul``; the
    reduced-precision-reduction flags are recorded (tensorix's 16-bit GEMMs accumulate in
    float32 whatever they say)."""

    _names = ("allow_tf32", "allow_fp16_reduced_precision_reduction",
              "allow_bf16_reduced_precision_reduction")

    def __init__(self):
        object.__setattr__(self, "_recorded", {"allow_fp16_reduced_precision_reduction": True,
                                               "allow_bf16_reduced_precision_reduction": True})

    def __getattr__(self, name):
        if name == "allow_tf32":
            return _cuda_matmul.allow_tf32
        if name in self._recorded:
            return self._recorded[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name not in self._names:
            raise AttributeError(f"Unknown attribute {name}")
        value = check_bool(f"backends.cuda.matmul.{name}", value)
        if name == "allow_tf32":
            _cuda_matmul.allow_tf32 = value
        else:
            self._recorded[name] = value

    def __repr__(self):
        return f"<tensorix.backends.cuda.matmul allow_tf32={_cuda_matmul.allow_tf32}>"


matmul = _CuBLAS()

_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def _sdp_pair(kind):
    def enabled() -> bool:
        return _sdp[kind]

    def enable(value: bool) -> None:
        _sdp[kind] = check_bool(f"enable_{kind}_sdp", value)

    enabled.__doc__ = (f"Whether the {kind} attention kernel is enabled (a recorded flag; "
                       "tensorix runs the math kernel).")
    enable.__doc__ = f"Record whether the {kind} attention kernel may be used."
    return enabled, enable


flash_sdp_enabled, enable_flash_sdp = _sdp_pair("flash")
mem_efficient_sdp_enabled, enable_mem_efficient_sdp = _sdp_pair("mem_efficient")
math_sdp_enabled, enable_math_sdp = _sdp_pair("math")
cudnn_sdp_enabled, enable_cudnn_sdp = _sdp_pair("cudnn")


def preferred_linalg_library(backend=None) -> str:
    """The linear-algebra library used: NumPy's LAPACK on the CPU, cuSOLVER through CuPy on a
    GPU; ``backend`` is accepted and ignored (there is no choice to make)."""
    return "default"
