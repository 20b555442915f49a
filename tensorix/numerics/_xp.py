"""Array plumbing shared by the numerics modules: Tensor/array unwrapping and the backend.

Numerics kernels work on raw backend arrays (``numpy`` or ``cupy``); public functions accept a
Tensor or an array and return the same kind. Nothing here imports cupy.
"""

from __future__ import annotations

import numpy as np

from ..autograd.grad_mode import modes
from ..backend import array_module
from ..tensor import Tensor

__all__ = ["raw", "xp_of", "is_tensor", "untraced"]


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


def untraced(op: str, *xs) -> None:
    """A graph break for a running trace (tensorix.compile, tensorix.fx) where ``op`` computes
    on the raw arrays of Tensors among ``xs`` outside any primitive: its result (a backend
    array, or one wrapped as a new Tensor) would be recorded as the example's constant, so
    the function runs eagerly instead. Inside a primitive's forward the hooks are off and
    nothing is reported."""
    state = modes.state
    if state.hooked and any(isinstance(x, Tensor) for x in xs):
        brk = getattr(state.tracer, "graph_break", None)
        if brk is not None:
            brk(f"{op}(): computed on raw arrays outside the dispatcher (a backend array "
                "result, or one wrapped as a new tensor)")
