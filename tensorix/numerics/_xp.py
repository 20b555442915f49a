"""Array plumbing shared by the numerics modules: Tensor/array unwrapping and the backend.

Numerics kernels work on raw backend arrays (``numpy`` or ``cupy``); public functions accept a
Tensor or an array and return the same kind. Nothing here imports cupy.
"""

from __future__ import annotations

import numpy as np

from ..backend import array_module
from ..tensor import Tensor

__all__ = ["raw", "xp_of", "is_tensor"]


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def raw(x):
    """The backend array behind ``x`` (a Tensor's data; arrays pass; lists become NumPy)."""
    if isinstance(x, Tensor):
        return x._data
    if isinstance(x, np.ndarray) or hasattr(x, "__cuda_array_interface__"):
        return x
    return np.asarray(x)


def xp_of(a):
    return array_module(a)
