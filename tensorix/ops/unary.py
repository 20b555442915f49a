"""Unary math primitives (abs, sqrt, trig, tanh, rounding, ...) and helpers.

Integer inputs to floating functions give the default float dtype, as in PyTorch.
"""

from __future__ import annotations

import numpy as np

from .. import backend
from ..autograd.function import Function
from ..tensor import Tensor, _make
from ._common import check_tensor, float_input, promote

__all__ = ["conj", "abs", "absolute", "sqrt", "tanh", "relu", "trunc", "fix", "floor",
           "ceil", "floor_divide"]


def _xp(t):
    return backend.array_module(t._data)


class Conj(Function):
    @staticmethod
    def forward(ctx, a):
        return _xp(a).conj(a._data)

    @staticmethod
    def backward(ctx, g):
        return conj(g)


class Abs(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _xp(a).abs(a._data)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        from .pointwise import sgn

        return g * sgn(a)


class Sqrt(Function):
    @staticmethod
    def forward(ctx, a):
        with np.errstate(invalid="ignore"):
            out = _make(_xp(a).sqrt(a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g / (2 * out.conj())


class Tanh(Function):
    @staticmethod
    def forward(ctx, a):
        out = _make(_xp(a).tanh(a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * (1 - out * out).conj()


class Relu(Function):
    @staticmethod
    def forward(ctx, a):
        out = _make(_xp(a).maximum(a._data, 0).astype(a._data.dtype, copy=False))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * (out > 0)


class _Rounding(Function):
    """floor/ceil/trunc/round: piecewise constant, so the gradient is zero."""

    fn = "trunc"

    @classmethod
    def forward(cls, ctx, a):
        return getattr(_xp(a), cls.fn)(a._data)

    @staticmethod
    def backward(ctx, g):
        return g * 0


class Trunc(_Rounding):
    fn = "trunc"


class Floor(_Rounding):
    fn = "floor"


class Ceil(_Rounding):
    fn = "ceil"


class FloorDivide(Function):
    _differentiable = False

    @staticmethod
    def forward(ctx, a, b):
        xp = _xp(a)
        if a._dtype.category < 2 and bool((b._data == 0).any()):
            raise ZeroDivisionError("floor_divide(): integer division by zero")
        with np.errstate(divide="ignore", invalid="ignore"):
            return xp.floor_divide(a._data, b._data)


def conj(input) -> Tensor:
    """Complex conjugate; real tensors are returned unchanged (no copy)."""
    check_tensor(input, "conj")
    if not input._dtype.is_complex:
        return input
    return Conj.apply(input)


def abs(input) -> Tensor:  # noqa: A001
    """``|input|`` elementwise (complex inputs give their real magnitude)."""
    return Abs.apply(check_tensor(input, "abs"))


absolute = abs


def sqrt(input) -> Tensor:
    """Square root (``nan`` for negative reals)."""
    return Sqrt.apply(float_input(input, "sqrt"))


def tanh(input) -> Tensor:
    """Hyperbolic tangent."""
    return Tanh.apply(float_input(input, "tanh"))


def relu(input) -> Tensor:
    """``max(input, 0)``. Example: ``tensorix.relu(tensorix.tensor([-1., 2.]))`` is
    ``tensor([0., 2.])``."""
    return Relu.apply(check_tensor(input, "relu"))


def trunc(input) -> Tensor:
    """Round toward zero (integers pass through)."""
    check_tensor(input, "trunc")
    return input if input._dtype.category < 2 else Trunc.apply(input)


fix = trunc


def floor(input) -> Tensor:
    """Round down (integers pass through)."""
    check_tensor(input, "floor")
    return input if input._dtype.category < 2 else Floor.apply(input)


def ceil(input) -> Tensor:
    """Round up (integers pass through)."""
    check_tensor(input, "ceil")
    return input if input._dtype.category < 2 else Ceil.apply(input)


def floor_divide(input, other) -> Tensor:
    """``floor(input / other)``, keeping integer dtypes (like Python's ``//``)."""
    a, b = promote(input, other, "floor_divide")
    return FloorDivide.apply(a, b)


def where_finite_log(a) -> Tensor:
    """log(a) with 0 where a == 0: the exponent gradient of ``0 ** b`` is 0, not nan."""
    from .elementwise import log
    from .pointwise import where

    safe = where(a == 0, 1, a)
    return log(safe)


TENSOR_METHODS = {
    "conj": conj, "abs": abs, "absolute": abs, "sqrt": sqrt, "tanh": tanh, "relu": relu,
    "trunc": trunc, "fix": fix, "floor": floor, "ceil": ceil, "floor_divide": floor_divide,
    "__abs__": abs, "__floordiv__": floor_divide,
    "__rfloordiv__": lambda self, other: floor_divide(other, self),
}
