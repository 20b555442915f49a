"""Numbers themselves: integer arithmetic (gcd, lcm) and the floating-point representation
(ldexp, frexp, nextafter).

gcd, lcm, frexp and nextafter are not differentiable, as in PyTorch; ldexp composes
primitives, so its gradients come from those.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import dtypes as dt
from ..autograd.function import Function
from ..backend import quiet
from ..tensor import Tensor, _make
from ._common import check_tensor, promote
from .inplace import make
from .unary import exp2

__all__ = ["gcd", "lcm", "ldexp", "frexp", "nextafter"]


FrexpResult = namedtuple("FrexpResult", ["mantissa", "exponent"])


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
    return FrexpResult(*Frexp.apply(input))


class Frexp(Function):
    """frexp's (mantissa, int32 exponent): a primitive, so a traced graph recomputes both
    (as raw arrays wrapped outside the dispatcher, a compiled call replayed the example's)."""

    _differentiable = False

    @staticmethod
    def forward(ctx, a):
        data = a._data
        # bfloat16 and fp8 formats: their exponent and mantissa are exact in float32 (by hand,
        # not _widen16: the exponent is an int32 output, which _widen16 would round back)
        wide = data.dtype if data.dtype.kind == "f" else np.float32
        m, e = a.xp.frexp(data.astype(wide, copy=False))
        return _make(m.astype(data.dtype, copy=False), a._dtype), \
            _make(e.astype(np.int32, copy=False))


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


def _methods():
    m = {"gcd": gcd, "lcm": lcm, "ldexp": ldexp, "frexp": frexp, "nextafter": nextafter}
    for fn in (gcd, lcm, ldexp, nextafter):
        m[fn.__name__ + "_"] = make(fn)
    return m


TENSOR_METHODS = _methods()
