"""Numbers themselves: integer arithmetic (gcd, lcm) and the floating-point representation
(ldexp, frexp, nextafter).

gcd, lcm, frexp and nextafter are not differentiable, as in PyTorch; ldexp composes
primitives, so its gradients come from those.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import _threads, kernels
from .. import dtypes as dt
from ..autograd.dispatch import kernel
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


# nextafter on the integer view: (int dtype, the sign bit, the canonical quiet NaN) per width
_BITS = {np.dtype(np.float32): (np.int32, np.int32(-2 ** 31), np.int32(0x7FC00000)),
         np.dtype(np.float64): (np.int64, np.int64(-2 ** 63), np.int64(0x7FF8000000000000))}


def _example(width):
    f, (i, sign, qnan) = np.ones(1, width), _BITS[np.dtype(width)]
    return np.empty(1, i), f, f, f.view(i), f.view(i), i(1), sign, qnan


def _nextafter_block(out, a, b, ai, bi, one, sign, qnan):
    """nextafter_bits' arithmetic on NumPy blocks (``out`` the result's integer view)."""
    with np.errstate(all="ignore"):
        r = np.where((a < b) == (a > 0), ai + one, ai - one)
        r = np.where(a == 0, (bi & sign) | one, r)
        r = np.where(a == b, bi, r)
        out[...] = np.where((a != a) | (b != b), qnan, r)


class NextAfter(Function):
    """C's nextafter on float32 / float64 NumPy arrays of one shape as a bit increment of the
    integer view (numba's ``nextafter_bits`` in one pass, else the same on NumPy blocks): ``x
    == y`` gives ``y`` (so ``nextafter(0., -0.)`` is ``-0.``), 0 steps to the smallest
    subnormal of ``y``'s sign, and a NaN operand gives the canonical quiet NaN, bit for bit as
    torch (shapes broadcast). GPU arrays take ``xp.nextafter`` (the device's own NaN bits)."""

    _differentiable = False
    # one role per width (a role holds one kernel per device type)
    _kernels = {"float32": (kernels.jit("nextafter_bits32", ("float32",),
                                        lambda: _example(np.float32)),),
                "float64": (kernels.jit("nextafter_bits64", ("float64",),
                                        lambda: _example(np.float64)),)}

    @staticmethod
    def forward(ctx, a, b):
        x, y = a._data, b._data
        if not (type(x) is np.ndarray and type(y) is np.ndarray and x.dtype == y.dtype
                and x.dtype in _BITS):
            with quiet():
                return a.xp.nextafter(x, y)
        itype, sign, qnan = _BITS[x.dtype]
        if x.shape != y.shape:
            x, y = np.broadcast_arrays(x, y)
        x, y = (np.require(v, requirements="C") for v in (x, y))  # keeps 0-d
        out = np.empty(x.shape, x.dtype)
        fused = kernel(NextAfter, x.dtype.name, a.device, a._dtype)
        if fused is None:
            _threads.blockwise(lambda o, p, q: _nextafter_block(
                o.view(itype), p, q, p.view(itype), q.view(itype), itype(1), sign, qnan),
                out, x, y)
        else:  # a memory-bound pass: one thread below CHEAP-element parts
            _threads.elementwise(lambda o, p, q: fused(
                o.reshape(-1).view(itype), p.reshape(-1), q.reshape(-1),
                p.reshape(-1).view(itype), q.reshape(-1).view(itype), itype(1), sign, qnan),
                out, x, y, min_part=_threads.CHEAP)
        return out


def nextafter(input, other) -> Tensor:
    """The next floating-point value after ``input`` towards ``other`` (promoted, float only;
    not differentiable); ``other`` itself where the two are equal. Example:
    ``tensorix.nextafter(one, two) - one`` is the machine epsilon of the dtype."""
    a, b = promote(input, other, "nextafter")
    if not a._dtype.is_floating_point:
        raise RuntimeError(f"nextafter(): \"nextafter_cpu\" not implemented for "
                           f"'{a._dtype.name}' (floating tensors only)")
    if a._dtype.low_precision:
        raise RuntimeError(f"nextafter(): not implemented for {a._dtype.name}")
    return NextAfter.apply(a, b)


def _methods():
    m = {"gcd": gcd, "lcm": lcm, "ldexp": ldexp, "frexp": frexp, "nextafter": nextafter}
    for fn in (gcd, lcm, ldexp, nextafter):
        m[fn.__name__ + "_"] = make(fn)
    return m


TENSOR_METHODS = _methods()
