"""Comparisons, where, sign, clamp, rounding and the elementwise predicates: the selection and
piecewise-constant primitives.

Comparisons and predicates (isnan, isfinite, signbit, isclose, ...) return bool tensors and are
not differentiable; ``where`` and ``clamp`` route the gradient to where each element came from.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import _threads, backend, kernels
from .. import dtypes as dt
from ..autograd.dispatch import kernel
from ..autograd.function import Function
from ..backend import quiet
from ..tensor import Tensor, _make
from ._common import check_tensor, lift, promote, same_device
from ._one_pass import example32, fast32, one_pass
from .bitwise import _Binary

__all__ = ["eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
           "less_equal", "not_equal", "where", "sign", "sgn", "clamp", "clip", "clamp_min",
           "clamp_max", "isnan", "isinf", "isposinf", "isneginf", "isfinite", "isreal",
           "signbit", "nan_to_num", "heaviside", "isclose", "allclose", "equal", "trunc", "fix",
           "floor", "ceil", "round", "frac", "floor_divide"]


def _zeros(g):
    """The gradient of a piecewise-constant op: zeros (not g * 0, which is nan where g is
    inf)."""
    return g.new_zeros(tuple(g.shape))


def _compare(fn_name, public):
    # storage codes: compared as their float32 values (autograd/dispatch.py)
    cls = type(fn_name.title().replace("_", ""), (_Binary,), {"fn": fn_name, "_codes": "math"})

    def op(input, other) -> Tensor:
        a, b = promote(input, other, public)
        return cls.apply(a, b)

    op.__name__ = public
    op.__doc__ = (f"Elementwise ``{public}`` comparison with broadcasting; returns a bool tensor."
                  f"\n\n    Example: ``tensorix.{public}(tensorix.tensor([1, 2, 3]), 2)``.")
    return cls, op


Eq, eq = _compare("equal", "eq")
Ne, ne = _compare("not_equal", "ne")
Lt, lt = _compare("less", "lt")
Le, le = _compare("less_equal", "le")
Gt, gt = _compare("greater", "gt")
Ge, ge = _compare("greater_equal", "ge")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


# NumPy's where branches per element: on a random mask that costs ~4 ns an element on this
# kind of CPU, ten times a bitwise select, so large selects of one dtype go through the bits
# (an identical result: each element's bits come from a or from b).
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _select(c, a, b):
    """``where(c, a, b)`` for arrays ``a`` and ``b`` of one dtype."""
    if type(c) is np.ndarray and c.size >= 4096 and a.dtype == b.dtype and \
            a.dtype.kind in "fiub" and a.dtype.itemsize in _UINT:
        u = _UINT[a.dtype.itemsize]
        m = c.astype(u)
        np.negative(m, out=m)  # 1 -> all bits set
        ai, bi = a.view(u), b.view(u)
        if bi.ndim == 0 and bi == 0:  # where(c, a, 0.0), as in ReLU's backward
            return np.bitwise_and(ai, m).view(a.dtype)
        return np.bitwise_xor(bi, np.bitwise_and(np.bitwise_xor(ai, bi), m)).view(a.dtype)
    return backend.array_module(a).where(c, a, b)


class Where(Function):
    _codes = "move"  # storage codes: runs on the codes (autograd/dispatch.py)

    @staticmethod
    def forward(ctx, cond, a, b):
        ctx.cond = cond
        return _select(cond._data, a._data, b._data)

    @staticmethod
    def backward(ctx, g):
        na, nb = ctx.needs_input_grad[1:]
        zero = g.new_zeros(())
        ga = where(ctx.cond, g, zero) if na else None
        gb = where(ctx.cond, zero, g) if nb else None
        return None, ga, gb


def where(condition, input=None, other=None) -> Tensor:
    """``input`` where ``condition`` holds, else ``other`` (broadcast together).
    With only ``condition``, the same as ``nonzero(condition, as_tuple=True)``.

    Example: ``tensorix.where(x > 0, x, 0.0)``.
    """
    check_tensor(condition, "where", "condition")
    if input is None and other is None:
        from .indexing import nonzero

        return nonzero(condition, as_tuple=True)
    if condition._dtype is not dt.bool:
        if condition._dtype is dt.uint8:
            condition = condition.to(dt.bool)
        else:
            raise RuntimeError(f"where(): expected condition to be a bool tensor, got "
                               f"{condition._dtype.name}")
    a, b = promote(input, other, "where")
    if type(condition._data) is not type(a._data):
        same_device("where", condition, a, b)
    return Where.apply(condition, a, b)


class Sign(Function):
    # float32: one vectorised pass (NumPy's form takes three, 8x torch's time)
    _kernels = {"forward32": (kernels.jit("sign32", ("float32",), example32(1)),)}

    @classmethod
    def forward(cls, ctx, a):
        xp = a.xp
        if fast32(a._data) and (fused := kernel(cls, "forward32", a.device)) is not None:
            return one_pass(fused, (a._data,))
        if a._dtype.is_complex:
            mag = xp.abs(a._data)
            return xp.where(mag == 0, 0, a._data / xp.where(mag == 0, 1, mag)).astype(
                a._data.dtype)
        if a._dtype is dt.bool:
            return a._data.copy()
        # PyTorch's (0 < a) - (a < 0): nan gives 0, -0.0 gives 0
        return ((a._data > 0).astype(a._data.dtype) - (a._data < 0).astype(a._data.dtype))

    @staticmethod
    def backward(ctx, g):
        return _zeros(g)


def sign(input) -> Tensor:
    """-1, 0 or 1 by the sign of each element (``nan`` gives 0, as in PyTorch; zero
    gradient). Example: ``tensorix.sign(tensorix.tensor([-2., 0., 3.]))``."""
    check_tensor(input, "sign")
    if input._dtype.is_complex:
        raise RuntimeError("sign(): unsupported for complex tensors; use sgn()")
    return Sign.apply(input)


def sgn(input) -> Tensor:
    """``sign`` for reals; ``z / |z|`` (0 at 0) for complex.
    Example: ``tensorix.sgn(tensorix.tensor([3 + 4j]))`` is ``tensor([0.6000+0.8000j])``."""
    return Sign.apply(check_tensor(input, "sgn"))


# -- clamp -----------------------------------------------------------------------------------
class Clamp(Function):
    """``min(max(x, lo), hi)`` (so ``hi`` wins when ``lo > hi``), with PyTorch's gradient
    rules: ``x`` gets the gradient where lo <= x <= hi, ``lo`` where x < lo < hi, ``hi`` where
    x > hi or hi < lo. Missing bounds are None."""

    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x, lo, hi)
        xp = x.xp
        out = x._data
        with quiet():
            if lo is not None:
                out = xp.maximum(out, lo._data)
            if hi is not None:
                out = xp.minimum(out, hi._data)
        return out if out is not x._data else out.copy()

    @staticmethod
    def backward(ctx, g):
        x, lo, hi = ctx.saved_tensors
        nx, nlo, nhi = ctx.needs_input_grad
        inside = None
        if lo is not None:
            inside = x >= lo
        if hi is not None:
            inside = (x <= hi) if lo is None else inside.logical_and(x <= hi)
        gx = where(inside, g, 0) if nx else None  # where: an inf gradient stays out cleanly
        glo = ghi = None
        if nlo:
            to_lo = x < lo if hi is None else (x < lo).logical_and(lo < hi)
            glo = where(to_lo, g, 0)
        if nhi:
            to_hi = x > hi if lo is None else (x > hi).logical_or(hi < lo)
            ghi = where(to_hi, g, 0)
        return gx, glo, ghi


class ClampScalar(Clamp):
    """Clamp by number bounds (0-d Tensors once lifted), as torch's scalar kernel on a float
    NumPy array: an element equal to a bound is kept (``clamp(-0.0, min=0.0)`` is -0.0, where
    NumPy's maximum, and torch's Tensor-bound kernel, give the bound), a nan bound gives nan
    everywhere. float32: one pass (numba), else two masked copies; the same bits."""

    _kernels = {"forward32": (kernels.jit("clamp32", ("float32",), example32(
        1, np.float32(0), np.float32(1))),)}

    @classmethod
    def forward(cls, ctx, x, lo, hi):
        if x._data.dtype.kind != "f":  # integers have no -0.0 and no nan
            return Clamp.forward(ctx, x, lo, hi)
        ctx.save_for_backward(x, lo, hi)
        return _clamp_scalar(cls, x, lo, hi)


def _clamp_scalar(cls, x, lo, hi):
    data = x._data
    if type(data) is not np.ndarray:  # a GPU array: the bounds stay on the device (no sync)
        xp, out = x.xp, data
        with quiet():  # maximum/minimum propagate nan; the where keeps x on a tie
            if lo is not None:
                out = xp.where(out == lo._data, out, xp.maximum(out, lo._data))
            if hi is not None:
                out = xp.where(out == hi._data, out, xp.minimum(out, hi._data))
        return out
    typ = data.dtype.type
    lo_v = typ(-np.inf) if lo is None else typ(lo._data)
    hi_v = typ(np.inf) if hi is None else typ(hi._data)
    if lo_v != lo_v or hi_v != hi_v:
        return np.full(data.shape, np.nan, data.dtype)
    if fast32(data) and (fused := kernel(cls, "forward32", x.device)) is not None:
        return one_pass(fused, (data,), (lo_v, hi_v))
    out = data.copy()
    np.copyto(out, lo_v, where=data < lo_v)
    np.copyto(out, hi_v, where=out > hi_v)
    return out


def _bound_dtype(input, bounds):
    """PyTorch's clamp promotion: the result type of input and the given bounds."""
    return dt.result_type(input, *[b for b in bounds if b is not None])


def clamp(input, min=None, max=None) -> Tensor:  # noqa: A002 - torch's names
    """Limit each element to [``min``, ``max``]; either bound may be a number, a tensor
    (broadcast) or None, and the result type promotes with them (an int tensor clamped by 0.5
    is float). Where ``min > max`` the result is ``max``; ``nan`` propagates (a nan bound
    gives nan). As in torch, an element equal to a number bound is kept (``-0.0`` clamped by
    ``min=0.0`` stays ``-0.0``), while a Tensor bound replaces it.

    Example: ``tensorix.clamp(tensorix.tensor([-2., 0.5, 3.]), min=0, max=1)`` is
    ``tensor([0.0000, 0.5000, 1.0000])``. Alias ``clip``.
    """
    check_tensor(input, "clamp")
    if min is None and max is None:
        raise RuntimeError("clamp(): at least one of 'min' or 'max' must not be None")
    for name, v in (("min", min), ("max", max)):
        if v is not None and not isinstance(v, (Tensor, numbers.Number, np.generic)):
            raise TypeError(f"clamp(): argument '{name}' must be a Tensor, a number or None, "
                            f"not {type(v).__name__}")
        if isinstance(v, complex) or isinstance(v, Tensor) and v._dtype.is_complex:
            raise RuntimeError("clamp(): not supported for complex bounds")
    if input._dtype.is_complex:
        raise RuntimeError("clamp(): not supported for complex tensors")
    d = _bound_dtype(input, (min, max))
    x = lift(input, d, op="clamp", arg="input")
    lo = None if min is None else lift(min, d, x, "clamp", "min")
    hi = None if max is None else lift(max, d, x, "clamp", "max")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        same_device("clamp", x, lo, hi)
        return Clamp.apply(x, lo, hi)
    return ClampScalar.apply(x, lo, hi)


clip = clamp


def clamp_min(input, min) -> Tensor:  # noqa: A002
    """``clamp(input, min=min)``: elements below ``min`` become ``min``.
    Example: ``tensorix.clamp_min(tensorix.tensor([-1.0, 2.0]), 0)`` is ``tensor([0., 2.])``."""
    if min is None:
        raise RuntimeError("clamp_min(): argument 'min' must not be None")
    return clamp(input, min=min)


def clamp_max(input, max) -> Tensor:  # noqa: A002
    """``clamp(input, max=max)``: elements above ``max`` become ``max``.
    Example: ``tensorix.clamp_max(tensorix.tensor([-1.0, 2.0]), 0)`` is ``tensor([-1., 0.])``."""
    if max is None:
        raise RuntimeError("clamp_max(): argument 'max' must not be None")
    return clamp(input, max=max)


# -- predicates ------------------------------------------------------------------------------
class _Predicate(Function):
    """A bool-valued elementwise test; integer and bool inputs get the answer for finite
    numbers without a float conversion."""

    _differentiable = False
    fn = "isnan"
    for_ints = False  # the answer for every integer element

    @classmethod
    def forward(cls, ctx, a):
        xp = a.xp
        if a._dtype.category < 2:
            return xp.full(a._data.shape, cls.for_ints, dtype=bool)
        return getattr(xp, cls.fn)(a._data)


def _predicate(fn, for_ints, doc, codes=None):
    cls = type(fn.title(), (_Predicate,), {"fn": fn, "for_ints": for_ints, "_codes": codes})

    def op(input) -> Tensor:
        return cls.apply(check_tensor(input, fn))

    op.__name__ = fn
    op.__doc__ = (doc + " Returns a bool tensor of the input's shape.\n\n    Example: "
                  f"``tensorix.{fn}(tensorix.tensor([1.0, float('nan'), float('inf')]))``.")
    return cls, op


IsNan, isnan = _predicate("isnan", False, "True where an element is nan.", "math")
IsInf, isinf = _predicate("isinf", False, "True where an element is +inf or -inf.", "math")
IsPosInf, isposinf = _predicate("isposinf", False, "True where an element is +inf.")
IsNegInf, isneginf = _predicate("isneginf", False, "True where an element is -inf.")
IsFinite, isfinite = _predicate("isfinite", True, "True where an element is neither inf nor "
                                "nan.", "math")


class SignBit(Function):
    _differentiable = False

    @staticmethod
    def forward(ctx, a):
        if a._dtype.category < 2:
            return a._data < 0
        return a.xp.signbit(a._data)


def signbit(input) -> Tensor:
    """True where the sign bit is set: negative numbers, ``-0.0`` and negative nans.
    Example: ``tensorix.signbit(tensorix.tensor([-0.0, 0.0, -1.0]))`` is
    ``tensor([True, False, True])``."""
    check_tensor(input, "signbit")
    if input._dtype.is_complex:
        raise RuntimeError("signbit(): not implemented for complex tensors")
    return SignBit.apply(input)


def isreal(input) -> Tensor:
    """True where an element has no imaginary part (everywhere for real dtypes).
    Example: ``tensorix.isreal(tensorix.tensor([1 + 0j, 1j]))`` is ``tensor([ True, False])``."""
    check_tensor(input, "isreal")
    xp = input.xp
    if not input._dtype.is_complex:
        return _make(xp.ones(input._data.shape, dtype=bool))
    return _make(input._data.imag == 0)


class NanToNum(Function):
    _kernels = {"forward32": (kernels.jit("nan_to_num32", ("float32",), example32(
        1, *(np.float32(0),) * 3)),)}

    @classmethod
    def forward(cls, ctx, a, nan, posinf, neginf):
        ctx.save_for_backward(a)
        xp, x = a.xp, a._data
        typ = x.dtype.type
        if fast32(x) and (fused := kernel(cls, "forward32", a.device)) is not None:
            return one_pass(fused, (x,), (typ(nan), typ(posinf), typ(neginf)))
        if type(x) is np.ndarray:
            # a copy, and masked stores only when there is a non-finite element (one cheap
            # pass finds out): the three whole-array wheres below cost 15x torch's time
            out = x.copy()
            if not np.isfinite(x).all():
                with quiet():
                    masks = (np.isnan(x), x == np.inf, x == -np.inf)  # of x: a new value
                for m, v in zip(masks, (nan, posinf, neginf)):    # may itself be inf/nan
                    np.copyto(out, typ(v), where=m)
            return out
        out = xp.where(xp.isnan(x), typ(nan), x)
        out = xp.where(x == np.inf, typ(posinf), out)
        return xp.where(x == -np.inf, typ(neginf), out).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return where(isfinite(a), g, 0), None, None, None


def nan_to_num(input, nan=0.0, posinf=None, neginf=None) -> Tensor:
    """Replace ``nan`` by ``nan``, ``+inf`` by ``posinf`` and ``-inf`` by ``neginf`` (default:
    the dtype's largest and lowest finite values); integer tensors are copied unchanged. The
    gradient is zero at replaced elements.

    Example: ``tensorix.nan_to_num(tensorix.tensor([float('nan'), float('inf')]), posinf=1.)``
    is ``tensor([0., 1.])``.
    """
    check_tensor(input, "nan_to_num")
    for name, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if v is not None and not isinstance(v, (numbers.Real, np.generic)):
            raise TypeError(f"nan_to_num(): argument '{name}' must be a number or None, not "
                            f"{type(v).__name__}")
    if input._dtype.category < 2:
        return input.clone()
    if input._dtype.is_complex:
        raise RuntimeError("nan_to_num(): not implemented for complex tensors")
    info = dt.finfo(input._dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    return NanToNum.apply(input, float(nan), float(posinf), float(neginf))


class Heaviside(Function):
    _differentiable = False  # PyTorch defines no derivative either

    @staticmethod
    def forward(ctx, a, values):
        xp, x = a.xp, a._data
        # PyTorch: a == 0 ? values : a > 0 (so nan gives 0)
        return xp.where(x == 0, values._data, (x > 0).astype(x.dtype))


def heaviside(input, values) -> Tensor:
    """The step function: 0 where ``input < 0``, ``values`` where ``input == 0``, 1 where
    ``input > 0`` (``nan`` gives 0, as in PyTorch). ``values`` must have ``input``'s dtype.

    Example: ``tensorix.heaviside(tensorix.tensor([-1., 0., 2.]), tensorix.tensor(0.5))`` is
    ``tensor([0.0000, 0.5000, 1.0000])``.
    """
    check_tensor(input, "heaviside")
    check_tensor(values, "heaviside", "values")
    if input._dtype is not values._dtype:
        raise RuntimeError(f"heaviside(): expected input and values to have the same dtype, "
                           f"got {input._dtype.name} and {values._dtype.name}")
    if input._dtype.is_complex:
        raise RuntimeError("heaviside(): not implemented for complex tensors")
    same_device("heaviside", input, values)
    return Heaviside.apply(input, values)


class IsClose(Function):
    _differentiable = False

    @staticmethod
    def forward(ctx, a, b, rtol, atol, equal_nan):
        xp, x, y = a.xp, a._data, b._data
        close = x == y
        if equal_nan and a._dtype.category >= 2:
            close |= xp.isnan(x) & xp.isnan(y)
        if rtol == 0 and atol == 0:
            return close
        # by hand, not _widen16: float16 compares in float16 (NumPy has its arithmetic); only
        # the formats without it (bfloat16, fp8) and integers widen
        if a._dtype.category < 2 or a._dtype.low_precision:
            x = x.astype(dt.get_default_dtype().np if a._dtype.category < 2 else np.float32)
            y = y.astype(x.dtype)
        with quiet():
            err = xp.abs(x - y)
            return close | (xp.isfinite(err) & (err <= atol + rtol * xp.abs(y)))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> Tensor:
    """True where ``|input - other| <= atol + rtol * |other|`` (or the two are equal, so
    equal infinities are close); ``nan`` is close to ``nan`` only with ``equal_nan``. Both
    tensors must have one dtype. Example: ``tensorix.isclose(x, x + 1e-9)`` is all True.
    """
    check_tensor(input, "isclose")
    check_tensor(other, "isclose", "other")
    if input._dtype is not other._dtype:
        raise RuntimeError(f"isclose(): expected both tensors to have the same dtype, got "
                           f"{input._dtype.name} and {other._dtype.name}")
    for name, v in (("rtol", rtol), ("atol", atol)):
        if not isinstance(v, numbers.Real) or v < 0:
            raise ValueError(f"isclose(): {name} must be a number >= 0, but got {v!r}")
    same_device("isclose", input, other)
    return IsClose.apply(input, other, float(rtol), float(atol), bool(equal_nan))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether ``isclose`` holds everywhere (a Python bool).
    Example: ``tensorix.allclose(tensorix.tensor([1.0]), tensorix.tensor([1.0 + 1e-7]))`` is
    ``True``."""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def equal(input, other) -> bool:
    """True if both tensors have the same shape and equal elements (a Python bool; ``nan`` is
    never equal). Example: ``tensorix.equal(x, x.clone())`` is True."""
    check_tensor(input, "equal")
    check_tensor(other, "equal", "other")
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(eq(input, other)._data.all())


# -- rounding --------------------------------------------------------------------------------
class _Rounding(Function):
    """floor/ceil/trunc/round: piecewise constant, so the gradient is zero."""

    fn = "trunc"

    @classmethod
    def forward(cls, ctx, a):
        return getattr(a.xp, cls.fn)(a._data)

    @staticmethod
    def backward(ctx, g):
        return _zeros(g)


class Trunc(_Rounding):
    fn = "trunc"


class Floor(_Rounding):
    fn = "floor"


class Ceil(_Rounding):
    fn = "ceil"


class Round(_Rounding):
    """Half to even, like PyTorch; ``decimals`` scales by 10**|decimals| as PyTorch does."""

    @staticmethod
    def forward(ctx, a, decimals):
        xp = a.xp
        if decimals == 0:
            return xp.rint(a._data)
        scale = a._data.dtype.type(10.0 ** (decimals if decimals > 0 else -decimals))
        with quiet():
            if decimals > 0:
                return xp.rint(a._data * scale) / scale
            return xp.rint(a._data / scale) * scale

    @staticmethod
    def backward(ctx, g):
        return _zeros(g), None


class Frac(Function):
    _kernels = {"forward32": (kernels.jit("frac32", ("float32",), example32(1)),)}

    @classmethod
    def forward(cls, ctx, a):
        if fast32(a._data) and (fused := kernel(cls, "forward32", a.device)) is not None:
            return one_pass(fused, (a._data,))
        with quiet():  # inf - inf: nan, as in PyTorch
            return a._data - a.xp.trunc(a._data)

    @staticmethod
    def backward(ctx, g):
        return g


class FloorDivide(Function):
    _differentiable = False
    # float32: NumPy's loop calls the C library's fmodf per element (8x torch's time); the
    # kernels repeat its steps on an exact fmod that vectorises (kernels/_cpu_jit.py's fmod32)
    _kernels = {"fmod32": (kernels.jit("fmod32", ("float32",), example32(2)),),
                "forward32": (kernels.jit("floor_divide32", ("float32",), example32(3)),)}

    @classmethod
    def forward(cls, ctx, a, b):
        xp, x, y = a.xp, a._data, b._data
        if fast32(x) and (fast32(x, y) or type(y) is np.ndarray and y.ndim == 0
                          and y.dtype == np.float32) \
                and (fused := kernel(cls, "forward32", a.device)) is not None \
                and (fmod := kernel(cls, "fmod32", a.device)) is not None:
            if y.ndim == 0:  # one divisor: the kernels read its one element
                one = (y.reshape(1),)
                mod = one_pass(fmod, (x,), one, min_part=_threads.COSTLY)
                return one_pass(fused, (x, mod), one, min_part=_threads.COSTLY)
            mod = one_pass(fmod, (x, y), min_part=_threads.COSTLY)
            return one_pass(fused, (x, mod, y), min_part=_threads.COSTLY)
        if a._dtype.category < 2 and bool((b._data == 0).any()):
            raise ZeroDivisionError("floor_divide(): integer division by zero")
        with quiet():
            return xp.floor_divide(a._data, b._data)



def trunc(input) -> Tensor:
    """Round toward zero (integers pass through).
    Example: ``tensorix.trunc(tensorix.tensor([-1.7, 1.7]))`` is ``tensor([-1., 1.])``."""
    check_tensor(input, "trunc")
    return input if input._dtype.category < 2 else Trunc.apply(input)


fix = trunc


def floor(input) -> Tensor:
    """Round down (integers pass through).
    Example: ``tensorix.floor(tensorix.tensor([-1.5, 1.5]))`` is ``tensor([-2., 1.])``."""
    check_tensor(input, "floor")
    return input if input._dtype.category < 2 else Floor.apply(input)


def ceil(input) -> Tensor:
    """Round up (integers pass through).
    Example: ``tensorix.ceil(tensorix.tensor([-1.5, 1.5]))`` is ``tensor([-1., 2.])``."""
    check_tensor(input, "ceil")
    return input if input._dtype.category < 2 else Ceil.apply(input)


def round(input, *, decimals=0) -> Tensor:  # noqa: A001 - torch's name
    """Round half to even, to ``decimals`` decimal places (negative: to tens, hundreds...).

    Integers pass through when ``decimals`` is 0. Example: ``tensorix.round(tensorix.tensor(
    [0.5, 1.5, 1.2345]), decimals=0)`` is ``tensor([0., 2., 1.])``.
    """
    check_tensor(input, "round")
    if not isinstance(decimals, (int, np.integer)) or isinstance(decimals, bool):
        raise TypeError(f"round(): argument 'decimals' must be an int, not "
                        f"{type(decimals).__name__}")
    if input._dtype.is_complex:
        raise RuntimeError("round(): not implemented for complex tensors")
    if input._dtype.category < 2:
        if decimals != 0:
            raise RuntimeError(f"round(): decimals is not implemented for {input._dtype.name} "
                               "tensors")
        return input
    return Round.apply(input, int(decimals))


def frac(input) -> Tensor:
    """``input - trunc(input)`` (keeps the sign: ``frac(-1.5)`` is -0.5); floating only.
    Example: ``tensorix.frac(tensorix.tensor([-1.25, 2.5]))`` is ``tensor([-0.2500, 0.5000])``."""
    check_tensor(input, "frac")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"frac(): expected a floating point tensor, got {input._dtype.name}")
    return Frac.apply(input)


def floor_divide(input, other) -> Tensor:
    """``floor(input / other)``, keeping integer dtypes (like Python's ``//``).
    Example: ``tensorix.floor_divide(tensorix.tensor([7, -7]), 2)`` is ``tensor([ 3, -4])``."""
    a, b = promote(input, other, "floor_divide")
    return FloorDivide.apply(a, b)


def _equality(fn):
    """``==`` / ``!=``: other types are not comparable (NotImplemented), so ``x == None`` is
    False and ``x in [None, x]`` works, as with PyTorch tensors."""
    def method(self, other):
        if not isinstance(other, (Tensor, numbers.Number)):
            return NotImplemented
        return fn(self, other)

    method.__name__ = fn.__name__
    return method


def _methods():
    from .inplace import make

    m = {
        "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "greater": gt,
        "greater_equal": ge, "less": lt, "less_equal": le, "not_equal": ne,
        "__eq__": _equality(eq), "__ne__": _equality(ne), "__lt__": lt, "__le__": le,
        "__gt__": gt, "__ge__": ge,
        "where": lambda self, condition, other: where(condition, self, other),
        "sign": sign, "sgn": sgn, "clamp": clamp, "clip": clamp, "clamp_min": clamp_min,
        "clamp_max": clamp_max, "isnan": isnan, "isinf": isinf, "isposinf": isposinf,
        "isneginf": isneginf, "isfinite": isfinite, "isreal": isreal, "signbit": signbit,
        "nan_to_num": nan_to_num, "heaviside": heaviside, "isclose": isclose,
        "allclose": allclose, "equal": equal, "trunc": trunc, "fix": fix, "floor": floor,
        "ceil": ceil, "round": round, "frac": frac, "floor_divide": floor_divide,
        "__floordiv__": floor_divide,
        "__rfloordiv__": lambda self, other: floor_divide(other, self),
        "__round__": lambda self, ndigits=None: round(self, decimals=ndigits or 0),
    }
    for name in ("eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
                 "less_equal", "not_equal", "sign", "sgn", "clamp", "clip", "clamp_min",
                 "clamp_max", "nan_to_num", "heaviside", "trunc", "fix", "floor", "ceil", "round",
                 "frac", "floor_divide"):
        m[name + "_"] = make(m[name], name + "_")
    m["__ifloordiv__"] = m["floor_divide_"]
    return m


TENSOR_METHODS = _methods()
