"""Elementwise arithmetic: add, sub, mul, div, neg, pow, exp, log, the binary math ops (fmod,
remainder, maximum/minimum, fmax/fmin, lerp, hypot, atan2, copysign, xlogy, float_power,
logaddexp/logaddexp2), cast and the Python arithmetic operators.

Each op is one Function class (forward on raw ``xp`` arrays, backward with tensorix ops, side
by side) and a lowercase wrapper that lifts scalars and promotes dtypes at the boundary.
Broadcasting gradients are reduced by the engine, not here.
"""

from __future__ import annotations

import operator

import numpy as np

from .. import _codec, _threads, backend, kernels
from .. import dtypes as dt
from ..autograd.function import Function, binary
from ..backend import quiet
from ..tensor import Tensor, _make
from ._common import check_tensor, float_input, lift, promote, same_device
from ._hypot import Hypot
from ._lerp_copysign import Copysign, Lerp  # noqa: F401 - the primitives, re-exported
from ._modulo import modulo

__all__ = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "neg",
           "negative", "pow", "exp", "log", "rsub", "to", "fmod", "remainder", "maximum",
           "minimum", "fmax", "fmin", "lerp", "hypot", "atan2", "arctan2", "copysign", "xlogy",
           "float_power", "logaddexp", "logaddexp2"]


_add, _sub, _mul, _div = operator.add, operator.sub, operator.mul, operator.truediv


def _quiet_slow(fn, *args):
    with quiet():
        return fn(*args)


# The hottest forwards (add, sub, mul, div) run their ufunc inside a ready-made context whose
# errstate is "ignore" (backend.quiet_context): entering it with Context.run costs ~0.05 us,
# setting and resetting the error state ~0.2 us (an eighth of a small op). When another thread
# is inside, run raises RuntimeError and the call takes the slow way (a RuntimeError of the
# ufunc itself is raised again there, unchanged). NumPy < 2 has no context: always the slow way.
_ctx = backend.quiet_context()
_run_quiet = _quiet_slow if _ctx is None else _ctx.run
_SPLIT_SIZE = 2 * _threads.CHEAP  # elements (tests lower it with _threads.CHEAP)


def _quiet_op(fn, ufunc):
    """``fn(x, y)`` on raw arrays with NumPy's FP warnings off, the fast way unless another
    thread is in the ready-made context (then ``run`` raises RuntimeError and this takes the
    slow way). Arrays of ``_SPLIT_SIZE`` elements split over the pool as ``ufunc`` (same
    bits). One per operator: the op's ``_eager`` rule and its forward's whole work."""

    def quietly(x, y):
        if x.size >= _SPLIT_SIZE or y.size >= _SPLIT_SIZE:
            with quiet():
                return _threads.ufunc(ufunc, x, y, min_part=_threads.CHEAP)
        try:
            return _run_quiet(fn, x, y)
        except RuntimeError:
            return _quiet_slow(fn, x, y)

    return staticmethod(quietly)


# add, sub, mul, div: each forward is its ``_eager`` rule, which autograd.function.binary (their
# wrappers' call) runs alone where no node is recorded. Storage codes: "math" (decoded values).
class Add(Function):
    _codes, _eager = "math", _quiet_op(_add, np.add)

    @staticmethod
    def forward(ctx, a, b):
        return Add._eager(a._data, b._data)

    @staticmethod
    def backward(ctx, g):
        return g, g


class Sub(Function):
    _codes, _eager = "math", _quiet_op(_sub, np.subtract)

    @staticmethod
    def forward(ctx, a, b):
        return Sub._eager(a._data, b._data)

    @staticmethod
    def backward(ctx, g):
        return g, (-g if ctx.needs_input_grad[1] else None)


class Mul(Function):
    _codes, _eager = "math", _quiet_op(_mul, np.multiply)

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return Mul._eager(a._data, b._data)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        return (g * b.conj() if na else None), (g * a.conj() if nb else None)


class Div(Function):
    _codes, _eager = "math", _quiet_op(_div, np.true_divide)

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return Div._eager(a._data, b._data)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        ga = g / b.conj() if na else None
        gb = -g * (a / (b * b)).conj() if nb else None
        return ga, gb


class Neg(Function):
    _codes = "math"  # storage codes: on the values decoded to float32, encoded back

    @staticmethod
    def forward(ctx, a):
        return -a._data

    @staticmethod
    def backward(ctx, g):
        return -g


class Pow(Function):
    @staticmethod
    def forward(ctx, a, b):
        with quiet():
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
    _codes = "math"  # storage codes: on the values decoded to float32, encoded back

    @staticmethod
    def forward(ctx, a):
        xp = a.xp
        with quiet():
            out = _make(_threads.ufunc(xp.exp, a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * out.conj()


class Log(Function):
    _codes = "math"  # storage codes: on the values decoded to float32, encoded back

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        xp = a.xp
        with quiet():
            return _threads.ufunc(xp.log, a._data)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g / a.conj()


# -- binary math -----------------------------------------------------------------------------
def _zeros(g):
    return g.new_zeros(tuple(g.shape))


class _Modulo(Function):
    """fmod (sign of the dividend, C's fmod) and remainder (sign of the divisor, Python's %);
    d/db is -(a / b rounded the same way), as in PyTorch."""

    fn, rounding = "fmod", "trunc"

    @classmethod
    def forward(cls, ctx, a, b):
        if a._dtype.category < 2 and bool((b._data == 0).any()):
            raise ZeroDivisionError(f"{cls.fn}(): integer division by zero")
        ctx.save_for_backward(a, b)
        with quiet():  # float32: one numba pass (ops/_modulo.py)
            return modulo(cls.fn, a._data, b._data, a.xp)

    @classmethod
    def backward(cls, ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        gb = -g * div(a, b, rounding_mode=cls.rounding) if nb else None
        return (g if na else None), gb


class Fmod(_Modulo):
    fn, rounding = "fmod", "trunc"


class Remainder(_Modulo):
    fn, rounding = "remainder", "floor"


class _Extremum(Function):
    """maximum/minimum (nan propagates; a tie splits the gradient in half) and fmax/fmin (nan
    ignored; a tie sends the gradient to ``input``), with PyTorch's gradient rules. Masks are
    applied with ``where`` so an infinite gradient is not turned into nan by ``inf * 0``."""

    fn = "maximum"

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.save_for_backward(a, b)
        with quiet():
            return _threads.ufunc(getattr(a.xp, cls.fn), a._data,
                                  b._data, min_part=_threads.CHEAP)

    @staticmethod
    def split(a, b):
        """(mask of elements whose gradient goes to a, the same for b, ties or None)."""
        raise NotImplementedError

    @classmethod
    def backward(cls, ctx, g):
        a, b = ctx.saved_tensors
        to_a, to_b, tie = cls.split(a, b)
        na, nb = ctx.needs_input_grad
        if tie is not None:
            g = g.where(tie.logical_not(), g * 0.5)
        return (g.where(to_a, 0) if na else None), (g.where(to_b, 0) if nb else None)


class Maximum(_Extremum):
    _codes = "math"  # storage codes: on the values decoded to float32, encoded back
    fn = "maximum"

    @staticmethod
    def split(a, b):
        return (a < b).logical_not(), (a > b).logical_not(), a == b


class Minimum(_Extremum):
    _codes = "math"  # storage codes: on the values decoded to float32, encoded back
    fn = "minimum"

    @staticmethod
    def split(a, b):
        return (a > b).logical_not(), (a < b).logical_not(), a == b


class Fmax(_Extremum):
    fn = "fmax"

    @staticmethod
    def split(a, b):
        take_a = (a >= b).logical_or(b.isnan())
        return take_a, take_a.logical_not(), None


class Fmin(_Extremum):
    fn = "fmin"

    @staticmethod
    def split(a, b):
        take_a = (a <= b).logical_or(b.isnan())
        return take_a, take_a.logical_not(), None




class Atan2(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        with quiet():
            return kernels.atan2(a._data, b._data)  # float32: one pass (kernels/_math32.py)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        r2 = a * a + b * b
        # at the origin both partials are 0/0; PyTorch's (sub)gradient there is 0
        inv = (1 / r2.where(r2 != 0, 1)).where(r2 != 0, 0)
        return (g * b * inv if na else None), (-g * a * inv if nb else None)


def x_times_log(x, y, log):
    """``x * log(y)`` on raw arrays, 0 where x == 0 unless y is nan (xlogy's and xlog1py's
    rule; ``log`` is ``xp.log`` or ``xp.log1p``)."""
    xp = backend.array_module(x)
    with quiet():
        out = x * log(y)
        return xp.where((x == 0) & ~xp.isnan(y), 0, out).astype(out.dtype)


class Xlogy(Function):
    """``x * log(y)``, 0 where x == 0 (unless y is nan): the entropy term."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x_times_log(x._data, y._data, x.xp.log)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        nx, ny = ctx.needs_input_grad
        gx = xlogy(g, y).where(~((x == 0) & (y <= 0)), 0) if nx else None
        return gx, (g * x / y if ny else None)


class _LogAddExp(Function):
    """log(b^a + b^c) for base e / 2, computed without overflow; gradients are the softmax
    weights ``b^(a - out)``."""

    fn = "logaddexp"

    @classmethod
    def forward(cls, ctx, a, b):
        with quiet():
            out = _make(kernels.logaddexp(cls.fn, a._data, b._data))  # float32: 4 ulp
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def weight(d):
        return d.exp()

    @classmethod
    def backward(cls, ctx, g):
        a, b, out = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        return (g * cls.weight(a - out) if na else None), (g * cls.weight(b - out) if nb
                                                           else None)


class LogAddExp(_LogAddExp):
    fn = "logaddexp"


class LogAddExp2(_LogAddExp):
    fn = "logaddexp2"

    @staticmethod
    def weight(d):
        return d.exp2()


class Cast(Function):
    """Dtype conversion; the gradient is cast back by the engine."""
    _codes = "own"  # storage codes: handled by the op itself (ops/_codes.py)

    @staticmethod
    def forward(ctx, a, dtype):
        data = a._data
        if _codec.needs_codec(a._dtype, dtype):  # low-precision formats: one exact codec
            return _make(_codec.cast_array(data, dtype, a._dtype), dtype)
        if data.dtype.kind == "c" and dtype.category < 3:
            data = data.real
        return data.astype(dtype.np)

    @staticmethod
    def backward(ctx, g):
        return g


class ToDevice(Function):
    _codes = "own"  # storage codes: handled by the op itself (ops/_codes.py)

    @staticmethod
    def forward(ctx, a, device):
        ctx.src = a.device
        if a._dtype.storage_only:  # uint8 codes on CUDA, ml_dtypes arrays on the CPU
            from ._codes import to_device

            return to_device(a, device)
        return backend.to_device(a._data, device)

    @staticmethod
    def backward(ctx, g):
        return to(g, ctx.src)


def add(input, other, *, alpha=1) -> Tensor:
    """``input + alpha * other`` with broadcasting and type promotion.
    Example: ``tensorix.add(tensorix.ones(2, 3), tensorix.ones(3), alpha=2)``."""
    if type(input) is Tensor and type(other) is Tensor and input._dtype is other._dtype and \
            type(input._data) is type(other._data) and alpha == 1:
        return binary(Add, input, other)  # promote's first case, inlined: the hottest op
    a, b = promote(input, other, "add")
    if alpha != 1:
        b = mul(b, alpha)
    return binary(Add, a, b)


def sub(input, other, *, alpha=1) -> Tensor:
    """``input - alpha * other`` (bool tensors are refused, as in PyTorch).
    Example: ``tensorix.sub(tensorix.tensor([5, 3]), 2, alpha=2)`` is ``tensor([ 1, -1])``."""
    a, b = promote(input, other, "sub")
    if a._dtype is dt.bool:
        raise RuntimeError("sub(): subtraction with two bool tensors is not supported; use "
                           "logical_xor() instead")
    if alpha != 1:
        b = mul(b, alpha)
    return binary(Sub, a, b)


subtract = sub


def rsub(input, other, *, alpha=1) -> Tensor:
    """``other - alpha * input``.
    Example: ``tensorix.rsub(tensorix.tensor([1.0, 2.0]), 10)`` is ``tensor([9., 8.])``."""
    return sub(other, input, alpha=alpha)


def mul(input, other) -> Tensor:
    """Elementwise product with broadcasting. Example: ``tensorix.mul(x, 2.0)``."""
    a, b = promote(input, other, "mul")  # (a * call: Python could not run binary inline)
    return binary(Mul, a, b)


multiply = mul


def div(input, other, *, rounding_mode=None) -> Tensor:
    """True division (integers give the default float dtype), or ``rounding_mode`` 'trunc' /
    'floor' which keeps integer dtypes like PyTorch.
    Example: ``tensorix.div(tensorix.tensor([5, -5]), 2, rounding_mode='floor')``."""
    a, b = promote(input, other, "div")
    if rounding_mode is None:
        if a._dtype.category < 2:
            a, b = a.to(dt.get_default_dtype()), b.to(dt.get_default_dtype())
        return binary(Div, a, b)
    if rounding_mode not in ("trunc", "floor"):
        raise ValueError(f"div(): expected rounding_mode to be one of None, 'trunc' or 'floor' "
                         f"but found {rounding_mode!r}")
    from .pointwise import floor_divide, trunc

    if rounding_mode == "floor":
        return floor_divide(a, b)
    if a._dtype.category < 2:
        return _int_trunc_div(a, b)
    return trunc(Div.apply(a, b))


def _int_trunc_div(a, b):
    xp = a.xp
    if bool((b._data == 0).any()):
        raise ZeroDivisionError("div(): integer division by zero")
    q = xp.abs(a._data) // xp.abs(b._data)
    return _make((q * xp.sign(a._data) * xp.sign(b._data)).astype(a._dtype.np), a._dtype)


divide = true_divide = div


def neg(input) -> Tensor:
    """``-input``.
    Example: ``tensorix.neg(tensorix.tensor([1.5, -2.0]))`` is ``tensor([-1.5000, 2.0000])``."""
    check_tensor(input, "neg")
    if input._dtype is dt.bool:
        raise RuntimeError("neg(): negation, the `-` operator, on a bool tensor is not "
                           "supported; use logical_not() instead")
    return Neg.apply(input)


negative = neg


def pow(input, exponent) -> Tensor:  # noqa: A001 - torch's name
    """``input ** exponent`` elementwise; either may be a Python number.
    Example: ``tensorix.pow(x, 2)``; ``tensorix.pow(2, x)``."""
    a, b = promote(input, exponent, "pow")
    if a._dtype.category == 1 and bool((b._data < 0).any()):
        raise RuntimeError("pow(): integers to negative integer powers are not allowed")
    return Pow.apply(a, b)


def exp(input) -> Tensor:
    """``e ** input``; integer inputs give the default float dtype.
    Example: ``tensorix.exp(tensorix.tensor([0.0, 1.0]))`` is ``tensor([1.0000, 2.7183])``."""
    return Exp.apply(float_input(input, "exp"))


def log(input) -> Tensor:
    """Natural logarithm (``-inf`` at 0, ``nan`` below, like PyTorch).
    Example: ``tensorix.log(tensorix.tensor([1.0, 0.0]))`` is ``tensor([0., -inf])``."""
    return Log.apply(float_input(input, "log"))


def _float_pair(input, other, op):
    """Promote two operands and take integer/bool results to the default float dtype."""
    a, b = promote(input, other, op)
    if a._dtype.category < 2:
        d = dt.get_default_dtype()
        a, b = a.to(d), b.to(d)
    return a, b


def _real_pair(input, other, op):
    a, b = promote(input, other, op)
    if a._dtype.is_complex:
        raise RuntimeError(f"{op}(): not implemented for complex tensors")
    return a, b


def fmod(input, other) -> Tensor:
    """C-style remainder ``input - trunc(input / other) * other`` (sign of ``input``), with
    broadcasting; integer dtypes are kept and an integer zero divisor raises.

    Example: ``tensorix.fmod(tensorix.tensor([-7., 7.]), 3)`` is ``tensor([-1., 1.])``.
    """
    a, b = _real_pair(input, other, "fmod")
    if a._dtype is dt.bool:
        raise RuntimeError("fmod(): not implemented for bool tensors")
    return Fmod.apply(a, b)


def remainder(input, other) -> Tensor:
    """Python-style modulo ``input - floor(input / other) * other`` (sign of ``other``), the
    ``%`` operator; integer dtypes are kept and an integer zero divisor raises.

    Example: ``tensorix.remainder(tensorix.tensor([-7, 7]), 3)`` is ``tensor([2, 1])``.
    """
    a, b = _real_pair(input, other, "remainder")
    if a._dtype is dt.bool:
        raise RuntimeError("remainder(): not implemented for bool tensors")
    return Remainder.apply(a, b)


def maximum(input, other) -> Tensor:
    """Elementwise maximum with broadcasting; ``nan`` propagates (see ``fmax``).
    Example: ``tensorix.maximum(x, tensorix.zeros(()))`` is ``relu(x)``."""
    return Maximum.apply(*_real_pair(input, other, "maximum"))


def minimum(input, other) -> Tensor:
    """Elementwise minimum with broadcasting; ``nan`` propagates (see ``fmin``).
    Example: ``tensorix.minimum(tensorix.tensor([1.0, 5.0]), tensorix.tensor([3.0, 2.0]))`` is
    ``tensor([1., 2.])``."""
    return Minimum.apply(*_real_pair(input, other, "minimum"))


def fmax(input, other) -> Tensor:
    """Elementwise maximum that ignores ``nan`` (``nan`` only where both are).
    Example: ``tensorix.fmax(tensorix.tensor([float('nan'), 1.0]), tensorix.tensor([2.0,
    float('nan')]))`` is ``tensor([2., 1.])``."""
    return Fmax.apply(*_real_pair(input, other, "fmax"))


def fmin(input, other) -> Tensor:
    """Elementwise minimum that ignores ``nan`` (``nan`` only where both are).
    Example: ``tensorix.fmin(tensorix.tensor([float('nan'), 1.0]), tensorix.tensor([2.0,
    0.5]))`` is ``tensor([2.0000, 0.5000])``."""
    return Fmin.apply(*_real_pair(input, other, "fmin"))


def lerp(input, end, weight) -> Tensor:
    """Linear interpolation ``input + weight * (end - input)``, broadcast together.

    ``input`` and ``end`` must share one floating dtype; ``weight`` is a number or a tensor of
    that dtype. Example: ``tensorix.lerp(tensorix.zeros(3), tensorix.ones(3), 0.25)``.
    """
    check_tensor(input, "lerp")
    check_tensor(end, "lerp", "end")
    d = input._dtype
    if not (d.is_floating_point or d.is_complex):
        raise RuntimeError(f"lerp(): expected a floating point input, got {d.name}")
    for name, v in (("end", end), ("weight", weight)):
        if isinstance(v, Tensor) and v._dtype is not d:
            raise RuntimeError(f"lerp(): expected dtype {d.name} for `{name}` but got dtype "
                               f"{v._dtype.name}")
    w = lift(weight, d, input, "lerp", "weight")
    same_device("lerp", input, end, w)
    return Lerp.apply(input, end, w)


def hypot(input, other) -> Tensor:
    """``sqrt(input**2 + other**2)`` without intermediate overflow, with broadcasting.
    Example: ``tensorix.hypot(tensorix.tensor([3.0]), tensorix.tensor([4.0]))`` is
    ``tensor([5.])``."""
    return Hypot.apply(*_float_pair(*_real_pair(input, other, "hypot"), "hypot"))


def atan2(input, other) -> Tensor:
    """The angle of the point (``other``, ``input``): ``atan(input / other)`` in the right
    quadrant, in [-pi, pi]; alias ``arctan2``.

    Example: ``tensorix.atan2(tensorix.tensor([1.]), tensorix.tensor([-1.]))`` is 3*pi/4.
    """
    return Atan2.apply(*_float_pair(*_real_pair(input, other, "atan2"), "atan2"))


arctan2 = atan2


def copysign(input, other) -> Tensor:
    """``|input|`` with the sign of ``other`` (-0.0 counts as negative); floating result.
    Example: ``tensorix.copysign(tensorix.tensor([1.0, -2.0]), -0.0)`` is ``tensor([-1.,
    -2.])``."""
    return Copysign.apply(*_float_pair(*_real_pair(input, other, "copysign"), "copysign"))


def xlogy(input, other) -> Tensor:
    """``input * log(other)``, defined as 0 where ``input`` is 0 (unless ``other`` is nan).
    Example: ``tensorix.xlogy(tensorix.tensor([0., 2.]), tensorix.tensor([0., 1.]))`` is
    ``tensor([0., 0.])``."""
    return Xlogy.apply(*_float_pair(*_real_pair(input, other, "xlogy"), "xlogy"))


def float_power(input, exponent) -> Tensor:
    """``input ** exponent`` computed in float64 (complex128 for complex operands), whatever
    the input dtypes, like PyTorch. Example: ``tensorix.float_power(tensorix.tensor([2]), 3)``
    is ``tensor([8.], dtype=tensorix.float64)``."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power(): expected at least one Tensor operand")
    cplx = any(v._dtype.is_complex if isinstance(v, Tensor) else isinstance(v, complex)
               for v in (input, exponent))
    d = dt.complex128 if cplx else dt.float64
    a = input.to(d) if isinstance(input, Tensor) else input
    b = exponent.to(d) if isinstance(exponent, Tensor) else exponent
    return pow(a, b)


def logaddexp(input, other) -> Tensor:
    """``log(exp(input) + exp(other))`` without overflow, with broadcasting.
    Example: ``tensorix.logaddexp(tensorix.tensor([1000.0]), tensorix.tensor([1000.0]))`` is
    ``tensor([1000.6932])``."""
    return LogAddExp.apply(*_float_pair(*_real_pair(input, other, "logaddexp"), "logaddexp"))


def logaddexp2(input, other) -> Tensor:
    """``log2(2**input + 2**other)`` without overflow, with broadcasting.
    Example: ``tensorix.logaddexp2(tensorix.tensor([3.0]), tensorix.tensor([3.0]))`` is
    ``tensor([4.])``."""
    return LogAddExp2.apply(*_float_pair(*_real_pair(input, other, "logaddexp2"),
                                         "logaddexp2"))


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

    method.__name__, method.__doc__ = d.name, f"``self.to({d.name})``."
    return method


def _reflect(fn):
    return lambda self, other: fn(other, self)


def _type(self, dtype=None):
    if dtype is None:
        return f"tensorix.{self.dtype.name}"
    return to(self, dtype)


def _methods():
    from .inplace import make

    plain = {
        "add": add, "sub": sub, "subtract": sub, "mul": mul, "multiply": mul, "div": div,
        "divide": div, "true_divide": div, "neg": neg, "negative": neg, "pow": pow, "exp": exp,
        "log": log, "fmod": fmod, "remainder": remainder, "maximum": maximum,
        "minimum": minimum, "fmax": fmax, "fmin": fmin, "lerp": lerp, "hypot": hypot,
        "atan2": atan2, "arctan2": atan2, "copysign": copysign, "xlogy": xlogy,
        "float_power": float_power, "logaddexp": logaddexp, "logaddexp2": logaddexp2,
    }
    m = dict(plain)
    for name in ("exp", "log", "neg", "negative", "fmod", "remainder", "lerp", "hypot",
                 "atan2", "arctan2", "copysign", "xlogy", "true_divide", "subtract",
                 "multiply", "divide"):
        m[name + "_"] = make(plain[name], name + "_")
    m.update({
        "to": to, "type": _type,
        "__add__": add, "__radd__": add, "__sub__": sub, "__rsub__": _reflect(sub),
        "__mul__": mul, "__rmul__": mul, "__truediv__": div, "__rtruediv__": _reflect(div),
        "__neg__": neg, "__pow__": pow, "__rpow__": _reflect(pow),
        "__pos__": lambda self: self, "__mod__": remainder,
        "__rmod__": _reflect(remainder), "__imod__": m["remainder_"],
        "float": _cast_method(dt.float32), "double": _cast_method(dt.float64),
        "half": _cast_method(dt.float16), "bfloat16": _cast_method(dt.bfloat16),
        "int": _cast_method(dt.int32), "long": _cast_method(dt.int64),
        "short": _cast_method(dt.int16), "char": _cast_method(dt.int8),
        "byte": _cast_method(dt.uint8), "bool": _cast_method(dt.bool),
        "cfloat": _cast_method(dt.complex64), "cdouble": _cast_method(dt.complex128),
        "cpu": lambda self: to(self, "cpu"),
        "cuda": lambda self, device=None: to(self, "cuda" if device is None else
                                             f"cuda:{device}" if isinstance(device, int)
                                             else device),
    })
    return m


TENSOR_METHODS = _methods()
