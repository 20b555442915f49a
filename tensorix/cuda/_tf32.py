"""``tensorix.cuda.matmul.allow_tf32``: float32 matrix products on the TF32 tensor cores.

Off by default, as in PyTorch (TF32 keeps 10 mantissa bits: about 3e-4 relative error on
float32 products instead of about 1e-6). Setting it where there is no GPU only records it.
"""

from __future__ import annotations

from .. import backend

__all__ = ["matmul"]


class _MatmulFlags:
    def __init__(self):
        self._tf32 = False

    @property
    def allow_tf32(self) -> bool:
        """Whether float32 (and complex64) matmuls may use TF32 tensor cores."""
        return self._tf32

    @allow_tf32.setter
    def allow_tf32(self, value):
        if not isinstance(value, bool):
            raise TypeError(f"matmul.allow_tf32: expected a bool, got {type(value).__name__}")
        if backend.cuda_available():
            backend.set_tf32(value)
        self._tf32 = value

    def __repr__(self):
        return f"<tensorix.cuda.matmul allow_tf32={self._tf32}>"


matmul = _MatmulFlags()
