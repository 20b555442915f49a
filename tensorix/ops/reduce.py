"""Reductions: sum, mean and sum_to (the engine's unbroadcast).

Backward of a reduction re-expands the gradient over the reduced axes with ``expand`` (a view),
so the second derivative is again a reduction.
"""

from __future__ import annotations

from .. import backend
from .. import dtypes as dt
from ..autograd.function import Function
from ..tensor import Tensor
from ._common import check_tensor, norm_dims

__all__ = ["sum", "mean", "sum_to"]


def _restore(g, shape, dims, keepdim):
    """Expand a reduced gradient back to ``shape`` (re-inserting dims when not keepdim)."""
    if not keepdim and dims:
        g = g.reshape(tuple(1 if i in dims else s for i, s in enumerate(shape)))
    return g.expand(shape)


class Sum(Function):
    @staticmethod
    def forward(ctx, a, dims, keepdim, dtype):
        ctx.shape, ctx.dims, ctx.keepdim = a._data.shape, dims, keepdim
        if dtype.low_precision or dtype is dt.float16:  # accumulate in fp32, round once
            return a._data.sum(axis=dims, keepdims=keepdim, dtype="float32").astype(dtype.np)
        return a._data.sum(axis=dims, keepdims=keepdim, dtype=dtype.np)

    @staticmethod
    def backward(ctx, g):
        return _restore(g, ctx.shape, ctx.dims, ctx.keepdim)


class SumTo(Function):
    """Sum ``a`` down to a broadcast-compatible ``shape`` (the inverse of expand)."""

    @staticmethod
    def forward(ctx, a, shape):
        ctx.shape = a._data.shape
        data = a._data
        lead = data.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                          if s == 1 and data.shape[lead + i] != 1)
        if axes:
            data = data.sum(axis=axes, keepdims=True)
        return data.reshape(shape)

    @staticmethod
    def backward(ctx, g):
        return g.expand(ctx.shape)


def _acc_dtype(x, dtype):
    if dtype is not None:
        return dt.as_dtype(dtype)
    if x._dtype.category < 2:  # ints and bools sum in int64, as in PyTorch
        return dt.int64
    return x._dtype


def sum(input, dim=None, keepdim=False, *, dtype=None) -> Tensor:  # noqa: A001
    """Sum over ``dim`` (an int, a tuple, or None for all dims).

    Shapes: ``(2, 3, 4)`` summed over ``dim=1`` gives ``(2, 4)`` (``(2, 1, 4)`` with keepdim).
    Example: ``tensorix.ones(2, 3).sum(dim=0)`` is ``tensor([2., 2., 2.])``.
    """
    check_tensor(input, "sum")
    dims = norm_dims(dim, input.ndim, "sum")
    return Sum.apply(input, dims, keepdim, _acc_dtype(input, dtype))


def mean(input, dim=None, keepdim=False, *, dtype=None) -> Tensor:
    """Arithmetic mean over ``dim``; integer inputs need an explicit floating ``dtype``."""
    check_tensor(input, "mean")
    d = input._dtype if dtype is None else dt.as_dtype(dtype)
    if d.category < 2:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {d.name}")
    dims = norm_dims(dim, input.ndim, "mean")
    n = 1
    for i in dims:
        n *= input._data.shape[i]
    s = Sum.apply(input, dims, keepdim, d)
    return s / n if n else s * float("nan")


def sum_to(input, shape) -> Tensor:
    """Reduce a broadcast result back to ``shape`` (used by the engine for unbroadcasting)."""
    shape = tuple(shape)
    if tuple(input.shape) == shape:
        return input
    return SumTo.apply(input, shape)


def _xp(t):
    return backend.array_module(t._data)


TENSOR_METHODS = {"sum": sum, "mean": mean, "sum_to_size": lambda self, *s: sum_to(
    self, s[0] if len(s) == 1 and isinstance(s[0], (tuple, list)) else s)}
