"""Logical and bitwise ops, and the Python operators ``& | ^ ~ << >>`` (with their reflected
and in-place forms).

Logical ops take any dtype (nonzero is True) and return bool. Bitwise ops take integer or bool
tensors (shifts: integers only) and keep the promoted dtype; none is differentiable. Shifting
by the bit width or more gives 0 (left) or the sign fill (right), as in PyTorch.
"""

from __future__ import annotations

from .. import dtypes as dt
from ..autograd.function import Function
from ..tensor import Tensor
from ._common import check_tensor, promote

__all__ = ["logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and",
           "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
           "bitwise_right_shift"]


class _Binary(Function):
    """``xp.<fn>(a, b)``, not differentiable: the base of the logical and bitwise ops here and
    of the comparisons in :mod:`.pointwise`."""

    _differentiable = False
    fn = "logical_and"

    @classmethod
    def forward(cls, ctx, a, b):
        return getattr(a.xp, cls.fn)(a._data, b._data)


class _Unary(Function):
    _differentiable = False
    fn = "logical_not"

    @classmethod
    def forward(cls, ctx, a):
        return getattr(a.xp, cls.fn)(a._data)


def _check_integral(a, op, allow_bool=True):
    ok = a._dtype.category == 1 or (allow_bool and a._dtype is dt.bool)
    if not ok:
        kinds = "integral or bool" if allow_bool else "integral"
        raise RuntimeError(f"{op}(): expected {kinds} tensors, got {a._dtype.name}")


def _binary(fn, public, doc, logical=False, allow_bool=True):
    cls = type("".join(p.title() for p in fn.split("_")), (_Binary,), {"fn": fn})

    def op(input, other) -> Tensor:
        a, b = promote(input, other, public)
        if not logical:
            _check_integral(a, public, allow_bool)
        return cls.apply(a, b)

    op.__name__ = public
    op.__doc__ = doc
    return cls, op


LogicalAnd, logical_and = _binary(
    "logical_and", "logical_and",
    "Elementwise ``input and other`` on truth values (nonzero is True), broadcast; returns "
    "bool. Example: ``tensorix.logical_and(x > 0, x < 1)``.", logical=True)
LogicalOr, logical_or = _binary(
    "logical_or", "logical_or", "Elementwise ``input or other`` on truth values; returns bool. "
    "Example: ``tensorix.logical_or(tensorix.tensor([0, 2]), tensorix.tensor([0, 0]))`` is "
    "``tensor([False, True])``.",
    logical=True)
LogicalXor, logical_xor = _binary(
    "logical_xor", "logical_xor", "Elementwise exclusive or of truth values; returns bool. "
    "Example: ``tensorix.logical_xor(tensorix.tensor([1, 1]), tensorix.tensor([1, 0]))`` is "
    "``tensor([False, True])``.",
    logical=True)
BitwiseAnd, bitwise_and = _binary(
    "bitwise_and", "bitwise_and",
    "Bitwise AND of integer or bool tensors (the ``&`` operator), broadcast. Example: "
    "``tensorix.tensor([12]) & 10`` is ``tensor([8])``.")
BitwiseOr, bitwise_or = _binary(
    "bitwise_or", "bitwise_or", "Bitwise OR of integer or bool tensors (the ``|`` operator). "
    "Example: ``tensorix.tensor([12]) | 3`` is ``tensor([15])``.")
BitwiseXor, bitwise_xor = _binary(
    "bitwise_xor", "bitwise_xor", "Bitwise XOR of integer or bool tensors (the ``^`` "
    "operator). Example: ``tensorix.tensor([12]) ^ 10`` is ``tensor([6])``.")
LeftShift, bitwise_left_shift = _binary(
    "left_shift", "bitwise_left_shift",
    "``input << other`` on integer tensors (0 once the shift reaches the bit width). "
    "Example: ``tensorix.tensor([1, 3]) << 2`` is ``tensor([4, 12])``.", allow_bool=False)
RightShift, bitwise_right_shift = _binary(
    "right_shift", "bitwise_right_shift",
    "``input >> other`` on integer tensors, arithmetic (sign-filling) for signed dtypes. "
    "Example: ``tensorix.tensor([-8, 8]) >> 1`` is ``tensor([-4, 4])``.",
    allow_bool=False)


class LogicalNot(_Unary):
    fn = "logical_not"


class BitwiseNot(_Unary):
    fn = "invert"


def logical_not(input) -> Tensor:
    """Elementwise ``not input`` on truth values; returns bool. Example:
    ``tensorix.logical_not(tensorix.tensor([0., 2.]))`` is ``tensor([True, False])``."""
    return LogicalNot.apply(check_tensor(input, "logical_not"))


def bitwise_not(input) -> Tensor:
    """Bitwise NOT (the ``~`` operator): ``-x - 1`` for integers, ``not`` for bools.

    Example: ``~tensorix.tensor([0, 5])`` is ``tensor([-1, -6])``.
    """
    check_tensor(input, "bitwise_not")
    _check_integral(input, "bitwise_not")
    return BitwiseNot.apply(input)


def _reflect(fn):
    def method(self, other):
        return fn(other, self)

    return method


def _methods():
    from .inplace import make

    m = {
        "logical_and": logical_and, "logical_or": logical_or, "logical_xor": logical_xor,
        "logical_not": logical_not, "bitwise_and": bitwise_and, "bitwise_or": bitwise_or,
        "bitwise_xor": bitwise_xor, "bitwise_not": bitwise_not,
        "bitwise_left_shift": bitwise_left_shift, "bitwise_right_shift": bitwise_right_shift,
    }
    for name in list(m):
        m[name + "_"] = make(m[name], name + "_")
    m.update({
        "__and__": bitwise_and, "__or__": bitwise_or, "__xor__": bitwise_xor,
        "__invert__": bitwise_not, "__lshift__": bitwise_left_shift,
        "__rshift__": bitwise_right_shift, "__rand__": _reflect(bitwise_and),
        "__ror__": _reflect(bitwise_or), "__rxor__": _reflect(bitwise_xor),
        "__rlshift__": _reflect(bitwise_left_shift),
        "__rrshift__": _reflect(bitwise_right_shift),
        "__iand__": m["bitwise_and_"], "__ior__": m["bitwise_or_"],
        "__ixor__": m["bitwise_xor_"], "__ilshift__": m["bitwise_left_shift_"],
        "__irshift__": m["bitwise_right_shift_"],
    })
    return m


TENSOR_METHODS = _methods()
