"""Pointwise odds and ends of the torch API: addcmul/addcdiv, gcd/lcm, ldexp/frexp,
nextafter, positive, conj_physical and resolve_conj/resolve_neg (the activations, softmax
among them, are in activation.py and softmax.py).

The arithmetic ones are compositions of primitives, so their gradients (and higher ones) come
from those; the integer and bit-level ones (gcd, lcm, frexp, nextafter) are not
differentiable, as in PyTorch.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import dtypes as dt
from ..autograd.function import Function
from ..backend import quiet
from ..tensor import Tensor, _make
from ._common import check_tensor, promote
from .elementwise import float_power
from .inplace import apply_inplace
from .unary import conj, exp2

__all__ = ["addcmul", "addcdiv", "gcd", "lcm", "ldexp", "frexp", "nextafter", "positive",
           "conj_physical", "resolve_conj", "resolve_neg"]

FrexpResult = namedtuple("FrexpResult", ["mantissa", "exponent"])


def _three(op, input, tensor1, tensor2):
    for arg, t in (("input", input), ("tensor1", tensor1), ("tensor2", tensor2)):
        check_tensor(t, op, arg)
    return dt.result_type(input, tensor1, tensor2)


def addcmul(input, tensor1, tensor2, *, value=1) -> Tensor:
    """``input + value * tensor1 * tensor2`` (all three broadcast; the result takes their
    promoted dtype, and an integral result truncates ``value`` as PyTorch does).

    Example: ``tensorix.addcmul(tensorix.zeros(3), tensorix.ones(3), tensorix.ones(3),
    value=2)`` is ``[2., 2., 2.]``.
    """
    d = _three("addcmul", input, tensor1, tensor2)
    if d.category < 2:
        value = int(value)
    prod = tensor1 * tensor2
    return input + (prod if value == 1 else value * prod)


def addcdiv(input, tensor1, tensor2, *, value=1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (broadcast, promoted); ``tensor1`` and
    ``tensor2`` may not both be integral (PyTorch removed that integer division).

    Example: ``tensorix.addcdiv(x, a, b, value=0.5)``.
    """
    _three("addcdiv", input, tensor1, tensor2)
    if tensor1._dtype.category < 2 and tensor2._dtype.category < 2:
        raise RuntimeError("addcdiv(): Integer division with addcdiv is no longer supported; "
                           "use (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype)"
                           " for the historic integer behaviour, or pass floating tensors")
    quot = tensor1 / tensor2
    return input + (quot if value == 1 else value * quot)


class _Raw(Function):
    """A non-differentiable elementwise ``xp.<fn>`` of one or two operands."""

    _differentiable = False

    @staticmethod
    def forward(ctx, fn, *args):
        with quiet():
            return getattr(args[0].xp, fn)(*[a._data for a in args])


def _integral_pair(op, input, other):
    a, b = promote(input, other, op)
    if a._dtype.category != 1:
        raise RuntimeError(f"{op}(): \"{op}_cpu\" not implemented for '{a._dtype.name}' "
                           "(integer tensors only)")
    return a, b


def gcd(input, other) -> Tensor:
    """Elementwise greatest common divisor of integer tensors (non-negative; ``gcd(0, 0)``
    is 0). Example: ``tensorix.gcd(tensorix.tensor([4, 6]), tensorix.tensor([6, -9]))`` is
    ``[2, 3]``."""
    return _Raw.apply("gcd", *_integral_pair("gcd", input, other))


def lcm(input, other) -> Tensor:
    """Elementwise least common multiple of integer tensors (non-negative; 0 if either is 0).
    Example: ``tensorix.lcm(tensorix.tensor([4, 6]), tensorix.tensor([6, -9]))`` is
    ``[12, 18]``."""
    return _Raw.apply("lcm", *_integral_pair("lcm", input, other))


def ldexp(input, other) -> Tensor:
    """``input * 2 ** other`` in the promoted floating dtype (integers give the default
    float). Example: ``tensorix.ldexp(tensorix.tensor([1.0]), tensorix.tensor([3]))`` is
    ``[8.]``."""
    check_tensor(input, "ldexp")
    d = dt.result_type(input, other)
    if d.category < 2:
        d = dt.get_default_dtype()
    x = input.to(d)
    e = other.to(d) if isinstance(other, Tensor) else other
    return x * exp2(e) if isinstance(e, Tensor) else x * float(2.0 ** e)


def frexp(input) -> FrexpResult:
    """Split floats into ``mantissa`` (same dtype, ``0.5 <= |m| < 1`` or 0) and an int32
    ``exponent`` with ``input = mantissa * 2 ** exponent``; not differentiable.

    Example: ``tensorix.frexp(tensorix.tensor([8.0]))`` is ``(tensor([0.5]),
    tensor([4], dtype=tensorix.int32))``.
    """
    check_tensor(input, "frexp")
    if not input._dtype.is_floating_point:
        raise RuntimeError("frexp(): torch.frexp() only supports floating-point dtypes, got "
                           f"{input._dtype.name}")
    data = input._data
    # bfloat16 and fp8 formats: their exponent and mantissa are exact in float32 (frexp is not
    # a Function, so there is no class to declare _widen16 on)
    wide = data.dtype if data.dtype.kind == "f" else np.float32
    m, e = input.xp.frexp(data.astype(wide, copy=False))
    return FrexpResult(_make(m.astype(data.dtype, copy=False), input._dtype),
                       _make(e.astype(np.int32, copy=False)))


def nextafter(input, other) -> Tensor:
    """The next floating-point value after ``input`` towards ``other`` (promoted, float only;
    not differentiable). Example: ``tensorix.nextafter(one, two) - one`` is the machine
    epsilon of the dtype."""
    a, b = promote(input, other, "nextafter")
    if not a._dtype.is_floating_point:
        raise RuntimeError(f"nextafter(): \"nextafter_cpu\" not implemented for "
                           f"'{a._dtype.name}' (floating tensors only)")
    if a._dtype.low_precision:
        raise RuntimeError(f"nextafter(): not implemented for {a._dtype.name}")
    return _Raw.apply("nextafter", a, b)


def positive(input) -> Tensor:
    """``+input``: the tensor itself (bool tensors are refused, as in PyTorch)."""
    check_tensor(input, "positive")
    if input._dtype is dt.bool:
        raise RuntimeError("positive(): The `+` operator, on a bool tensor is not supported.")
    return input


def conj_physical(input) -> Tensor:
    """The complex conjugate, materialised (tensorix has no lazy conjugate bit, so this is
    :func:`conj`); real tensors come back as they are."""
    check_tensor(input, "conj_physical")
    return conj(input)


def resolve_conj(input) -> Tensor:
    """``input`` itself: tensorix conjugates eagerly, so there is no conjugate bit to
    resolve (PyTorch returns ``input`` too when the bit is not set)."""
    return check_tensor(input, "resolve_conj")


def resolve_neg(input) -> Tensor:
    """``input`` itself: tensorix has no lazy negative bit (see :func:`resolve_conj`)."""
    return check_tensor(input, "resolve_neg")


def _float_power_(self, exponent):
    check_tensor(self, "float_power_")
    if self._dtype not in (dt.float64, dt.complex128):
        want = "ComplexDouble" if self._dtype.is_complex or (
            isinstance(exponent, Tensor) and exponent._dtype.is_complex) else "Double"
        raise RuntimeError(f"float_power_(): the base given to float_power_ has dtype "
                           f"{self._dtype.name} but the operation's result requires dtype "
                           f"{want}")
    return apply_inplace(self, float_power, exponent, op="float_power_")


def _methods():
    from .inplace import make

    m = {"addcmul": addcmul, "addcdiv": addcdiv, "gcd": gcd, "lcm": lcm, "ldexp": ldexp,
         "frexp": frexp, "nextafter": nextafter, "positive": positive,
         "conj_physical": conj_physical, "resolve_conj": resolve_conj,
         "resolve_neg": resolve_neg, "float_power_": _float_power_}
    for fn in (addcmul, addcdiv, gcd, lcm, ldexp, nextafter, conj_physical):
        m[fn.__name__ + "_"] = make(fn)
    return m


TENSOR_METHODS = _methods()
