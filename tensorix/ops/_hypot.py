"""The Hypot primitive (``tensorix.hypot``'s; out of ops/elementwise.py, which is at its line
budget).

float32 NumPy inputs (broadcast) compute ``sqrt(x*x + y*y)`` in float64, rounded once to
float32: the squares are exact in float64 and cannot overflow or underflow there, so the
result is correctly rounded but for a double-rounding tie (torch's AVX-512 kernel agrees bit
for bit on ordinary values; it is 1 ulp off on some results near the subnormal range, where
this is right). inf where either input is infinite (even with a NaN), the canonical NaN
otherwise for NaN inputs, as torch. numba's ``hypot32`` runs it in one pass split over the
pool (NumPy's hypot calls the C library per element: 10x torch's time); without numba the same
arithmetic on NumPy blocks gives the same bits. Other dtypes and GPU arrays take ``xp.hypot``.
"""

from __future__ import annotations

import numpy as np

from .. import _threads, kernels
from ..autograd.dispatch import kernel
from ..autograd.function import Function
from ..backend import quiet
from ..tensor import _make

__all__ = ["Hypot", "hypot_float32"]


def _hypot_block(out, a, b):
    """hypot32's arithmetic on NumPy blocks (float32 in, float32 out)."""
    with np.errstate(all="ignore"):  # per block: pool threads have their own errstate
        x, y = a.astype(np.float64), b.astype(np.float64)
        r = np.sqrt(x * x + y * y)
        r[np.isinf(x) | np.isinf(y)] = np.inf
        out[...] = r
    out.view(np.int32)[out != out] = 0x7FC00000  # the canonical NaN, as torch


def hypot_float32(a, b, compiled=None):
    """``hypot(a, b)`` of two float32 NumPy arrays of one shape, as a new float32 array:
    ``compiled`` (numba's ``hypot32``) in one pass (split over the pool from ``CHEAP``-element
    parts), or where it is None
    the same arithmetic on NumPy blocks; the same bits either way, for any thread count.

    Example: ``hypot_float32(np.float32([3.0]), np.float32([4.0]))`` is
    ``array([5.], dtype=float32)``.
    """
    out = np.empty(a.shape, np.float32)
    if compiled is None:
        return _threads.blockwise(_hypot_block, out, a, b)
    a, b = np.require(a, requirements="C"), np.require(b, requirements="C")
    # about 0.3 ns an element (a float64 sqrt per lane): split as a memory-bound pass
    return _threads.elementwise(lambda o, x, y: compiled(
        o.reshape(-1).view(np.int32), x.reshape(-1), y.reshape(-1)), out, a, b,
        min_part=_threads.CHEAP)


class Hypot(Function):
    """``sqrt(a^2 + b^2)``; d/da = a / out, d/db = b / out."""

    _kernels = {"forward": (kernels.jit("hypot32", ("float32",), lambda: (
        np.empty(1, np.int32), np.ones(1, np.float32), np.ones(1, np.float32))),)}

    @staticmethod
    def forward(ctx, a, b):
        x, y = a._data, b._data
        if type(x) is np.ndarray and type(y) is np.ndarray and x.dtype == y.dtype == np.float32:
            if x.shape != y.shape:
                x, y = np.broadcast_arrays(x, y)
            out = _make(hypot_float32(x, y, kernel(Hypot, "forward", a.device, a._dtype)))
        else:
            with quiet():
                out = _make(a.xp.hypot(x, y))
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b, out = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        return (g * a / out if na else None), (g * b / out if nb else None)
