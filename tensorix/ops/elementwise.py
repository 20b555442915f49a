"""Elementwise arithmetic primitives: add, sub, mul, div, neg, pow, exp, log, cast and the
Python operators.

Each op is one Function class (forward on raw ``xp`` arrays, backward with tensorix ops, side
by side) and a lowercase wrapper that lifts scalars and promotes dtypes at the boundary.
Broadcasting gradients are reduced by the engine, not here.
"""

from __future__ import annotations

import numpy as np

from .. import backend
from .. import dtypes as dt
from ..autograd.function import Function
from ..tensor import Tensor, _make
from ._common import check_tensor, float_input, promote

__all__ = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "neg",
           "negative", "pow", "exp", "log", "rsub", "to"]


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a._data + b._data

    @staticmethod
    def backward(ctx, g):
        return g, g


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a._data - b._data

    @staticmethod
    def backward(ctx, g):
        return g, (-g if ctx.needs_input_grad[1] else None)


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a._data * b._data

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        return (g * b.conj() if na else None), (g * a.conj() if nb else None)


class Div(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a._data / b._data

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        ga = g / b.conj() if na else None
        gb = -g * (a / (b * b)).conj() if nb else None
        return ga, gb


class Neg(Function):
    @staticmethod
    def forward(ctx, a):
        return -a._data

    @staticmethod
    def backward(ctx, g):
        return -g


class Pow(Function):
    @staticmethod
    def forward(ctx, a, b):
        out = a._data ** b._data
        ctx.save_for_backward(a, b)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        ga = gb = None
        if na:
            ga = g * b * a ** (b - 1)
        if nb:
            from .unary import where_finite_log

            gb = g * a ** b * where_finite_log(a)
        return ga, gb


class Exp(Function):
    @staticmethod
    def forward(ctx, a):
        xp = backend.array_module(a._data)
        out = _make(xp.exp(a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * out.conj()


class Log(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        xp = backend.array_module(a._data)
        with np.errstate(divide="ignore", invalid="ignore"):
            return xp.log(a._data)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g / a.conj()


class Cast(Function):
    """Dtype conversion; the gradient is cast back by the engine."""

    @staticmethod
    def forward(ctx, a, dtype):
        data = a._data
        if data.dtype.kind == "c" and dtype.category < 3:
            data = data.real
        return data.astype(dtype.np)

    @staticmethod
    def backward(ctx, g):
        return g


class ToDevice(Function):
    @staticmethod
    def forward(ctx, a, device):
        ctx.src = a.device
        return backend.to_device(a._data, device)

    @staticmethod
    def backward(ctx, g):
        return to(g, ctx.src)


def add(input, other, *, alpha=1) -> Tensor:
    """``input + alpha * other`` with broadcasting and type promotion.

    Example: ``tensorix.add(tensorix.ones(2, 3), tensorix.ones(3), alpha=2)``.
    """
    a, b = promote(input, other, "add")
    if alpha != 1:
        b = mul(b, alpha)
    return Add.apply(a, b)


def sub(input, other, *, alpha=1) -> Tensor:
    """``input - alpha * other`` (bool tensors are refused, as in PyTorch)."""
    a, b = promote(input, other, "sub")
    if a._dtype is dt.bool:
        raise RuntimeError("sub(): subtraction with two bool tensors is not supported; use "
                           "logical_xor() instead")
    if alpha != 1:
        b = mul(b, alpha)
    return Sub.apply(a, b)


subtract = sub


def rsub(input, other, *, alpha=1) -> Tensor:
    """``other - alpha * input``."""
    return sub(other, input, alpha=alpha)


def mul(input, other) -> Tensor:
    """Elementwise product with broadcasting. Example: ``tensorix.mul(x, 2.0)``."""
    a, b = promote(input, other, "mul")
    return Mul.apply(a, b)


multiply = mul


def div(input, other, *, rounding_mode=None) -> Tensor:
    """True division (integers give the default float dtype), or ``rounding_mode`` 'trunc' /
    'floor' which keeps integer dtypes like PyTorch.

    Example: ``tensorix.div(tensorix.tensor([5, -5]), 2, rounding_mode='floor')``.
    """
    a, b = promote(input, other, "div")
    if rounding_mode is None:
        if a._dtype.category < 2:
            a, b = a.to(dt.get_default_dtype()), b.to(dt.get_default_dtype())
        return Div.apply(a, b)
    if rounding_mode not in ("trunc", "floor"):
        raise ValueError(f"div(): expected rounding_mode to be one of None, 'trunc' or 'floor' "
                         f"but found {rounding_mode!r}")
    from .unary import floor_divide, trunc

    if rounding_mode == "floor":
        return floor_divide(a, b)
    if a._dtype.category < 2:
        return _int_trunc_div(a, b)
    return trunc(Div.apply(a, b))


def _int_trunc_div(a, b):
    xp = backend.array_module(a._data)
    if bool((b._data == 0).any()):
        raise ZeroDivisionError("div(): integer division by zero")
    q = xp.abs(a._data) // xp.abs(b._data)
    return _make((q * xp.sign(a._data) * xp.sign(b._data)).astype(a._dtype.np), a._dtype)


divide = true_divide = div


def neg(input) -> Tensor:
    """``-input``."""
    check_tensor(input, "neg")
    if input._dtype is dt.bool:
        raise RuntimeError("neg(): negation, the `-` operator, on a bool tensor is not "
                           "supported; use logical_not() instead")
    return Neg.apply(input)


negative = neg


def pow(input, exponent) -> Tensor:  # noqa: A001 - torch's name
    """``input ** exponent`` elementwise; either may be a Python number.

    Example: ``tensorix.pow(x, 2)``; ``tensorix.pow(2, x)``.
    """
    a, b = promote(input, exponent, "pow")
    if a._dtype.category == 1 and bool((b._data < 0).any()):
        raise RuntimeError("pow(): integers to negative integer powers are not allowed")
    return Pow.apply(a, b)


def exp(input) -> Tensor:
    """``e ** input``; integer inputs give the default float dtype."""
    return Exp.apply(float_input(input, "exp"))


def log(input) -> Tensor:
    """Natural logarithm (``-inf`` at 0, ``nan`` below, like PyTorch)."""
    return Log.apply(float_input(input, "log"))


def to(input, *args, dtype=None, device=None, copy=False, non_blocking=False) -> Tensor:
    """Convert dtype and/or device: ``x.to(tensorix.float64)``, ``x.to('cuda')``,
    ``x.to(other)``. Returns ``input`` itself when nothing changes (unless ``copy``)."""
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (dt.dtype, np.dtype, type)):
            dtype = a
        elif isinstance(a, (str, backend.Device)):
            device = a
        else:
            raise TypeError(f"to(): expected a dtype, a device or a Tensor, got {a!r}")
    out = input
    if device is not None:
        device = backend.Device(device)
        if device is not input.device:
            out = ToDevice.apply(out, device)
    if dtype is not None:
        d = dt.as_dtype(dtype)
        if d is not out._dtype:
            out = Cast.apply(out, d)
    if copy and out is input:
        from .movement import clone

        out = clone(input)
    return out


def _cast_method(d):
    def method(self, memory_format=None):
        return to(self, d)

    method.__name__ = d.name
    method.__doc__ = f"``self.to({d.name})``."
    return method


def _reflect(fn):
    def method(self, other):
        return fn(other, self)

    return method


def _type(self, dtype=None):
    if dtype is None:
        return f"tensorix.{self.dtype.name}"
    return to(self, dtype)


TENSOR_METHODS = {
    "add": add, "sub": sub, "subtract": sub, "mul": mul, "multiply": mul, "div": div,
    "divide": div, "true_divide": div, "neg": neg, "negative": neg, "pow": pow, "exp": exp,
    "log": log, "to": to, "type": _type,
    "__add__": add, "__radd__": add, "__sub__": sub, "__rsub__": _reflect(sub),
    "__mul__": mul, "__rmul__": mul, "__truediv__": div, "__rtruediv__": _reflect(div),
    "__neg__": neg, "__pow__": pow, "__rpow__": _reflect(pow), "__pos__": lambda self: self,
    "float": _cast_method(dt.float32), "double": _cast_method(dt.float64),
    "half": _cast_method(dt.float16), "bfloat16": _cast_method(dt.bfloat16),
    "int": _cast_method(dt.int32), "long": _cast_method(dt.int64),
    "short": _cast_method(dt.int16), "char": _cast_method(dt.int8),
    "byte": _cast_method(dt.uint8), "bool": _cast_method(dt.bool),
    "cfloat": _cast_method(dt.complex64), "cdouble": _cast_method(dt.complex128),
    "cpu": lambda self: to(self, "cpu"),
    "cuda": lambda self, device=None: to(self, "cuda" if device is None else
                                         f"cuda:{device}" if isinstance(device, int) else device),
}
