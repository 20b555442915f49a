"""Unary math primitives: abs, roots and powers, the exp/log variants, trig and hyperbolic
functions, erf/erfc/erfinv, and angle/real/imag (rounding lives in ops/pointwise.py, relu
with the other activations in ops/activation.py).

float32 expm1, log1p, sinh, cosh, atanh and tan run the float32 kernels of
kernels/_math32.py (Cephes' algorithms, 2-3 ulp, numba's one pass where the ``jit`` extra is
installed).

Integer and bool inputs to floating functions give the default float dtype, as in PyTorch.
Every forward runs with NumPy's floating-point warnings silenced: like PyTorch, ``log(0)`` is
``-inf`` and ``sqrt(-1)`` is ``nan``, quietly.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _threads, backend, kernels
from .. import dtypes as dt
from ..autograd.dispatch import kernel
from ..autograd.function import Function
from ..backend import quiet
from ..kernels import _math32, float32_math
from ..kernels._cpu import _numpy_form
from ..kernels._exp2_32 import exp2_32
from ..tensor import Tensor, _make
from ._common import check_tensor, float_input
from ._erf import erf_float32, erf_kernel, erfc_float32, erfc_kernel, erfinv_float32, erfinv_kernel
from ._one_pass import example32, fast32, one_pass
from .elementwise import log
from .pointwise import where

__all__ = ["conj", "abs", "absolute", "sqrt", "rsqrt", "square", "reciprocal", "tanh",
           "exp2", "expm1", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos",
           "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsin", "arccos", "arctan",
           "arcsinh", "arccosh", "arctanh", "erf", "erfc", "erfinv", "deg2rad", "rad2deg",
           "angle", "real", "imag"]






def _real_float(x, op):
    """A real floating tensor for ``op`` (ints and bools go to the default float dtype)."""
    x = float_input(x, op)
    if x._dtype.is_complex:
        raise RuntimeError(f"{op}(): not implemented for complex tensors (got {x._dtype.name})")
    return x


def _apply_math(cls, x):
    """``xp.<cls.fn>(x)``, or for a float32 NumPy array the float32 kernel ``cls.kernel32`` of
    kernels/_math32.py where there is one (NumPy's float32 expm1, log1p, sinh, cosh and
    arctanh call the C library per element: 5-9x torch's time); large arrays split over the
    library's threads either way (same bits)."""
    if cls.kernel32 is not None and type(x) is np.ndarray and x.dtype == np.float32:
        return float32_math(cls.kernel32, x)
    with quiet():
        return _threads.ufunc(getattr(backend.array_module(x), cls.fn), x)


class _Math(Function):
    """``out = xp.<fn>(a)``, saving the input; subclasses write the backward."""

    fn = "negative"
    kernel32 = None  # the name of a float32 kernel in kernels/_math32.py

    @classmethod
    def forward(cls, ctx, a):
        ctx.save_for_backward(a)
        return _apply_math(cls, a._data)


class _MathOut(Function):
    """``out = xp.<fn>(a)``, saving the output (its derivative is a function of it)."""

    fn = "negative"
    kernel32 = None

    @classmethod
    def forward(cls, ctx, a):
        out = _make(_apply_math(cls, a._data))
        ctx.save_for_backward(out)
        return out


class Conj(Function):
    @staticmethod
    def forward(ctx, a):
        return a.xp.conj(a._data)

    @staticmethod
    def backward(ctx, g):
        return conj(g)


class Abs(_Math):
    fn = "abs"

    @classmethod
    def forward(cls, ctx, a):
        ctx.save_for_backward(a)
        x = a._data
        if type(x) is np.ndarray and x.dtype.kind != "c":
            # a real abs raises no FP warning (no quiet() to enter) and is memory-bound: split
            # only from CHEAP parts (the generic COSTLY split woke a thread for 1M elements)
            return _threads.ufunc(np.abs, x, min_part=_threads.CHEAP)
        return _apply_math(cls, x)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * a.sgn()


class Sqrt(_MathOut):
    fn = "sqrt"

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g / (2 * out.conj())


class Rsqrt(Function):
    # float32: 1 / sqrt(x) in one pass (numba), the same two correctly rounded operations
    _kernels = {"forward32": (kernels.jit("rsqrt32", ("float32",), example32(1)),)}

    @classmethod
    def forward(cls, ctx, a):
        if fast32(a._data) and (fused := kernel(cls, "forward32", a.device)) is not None:
            out = _make(one_pass(fused, (a._data,)))
            ctx.save_for_backward(out)
            return out
        with quiet():  # the reciprocal in place: one temporary, not two
            r = _threads.ufunc(a.xp.sqrt, a._data, min_part=_threads.CHEAP)
            out = _make(a.xp.divide(1, r, out=r) if r.ndim and r.dtype.kind in "fc" else 1 / r)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * (-0.5 * out * out * out).conj()


class Reciprocal(Function):
    @staticmethod
    def forward(ctx, a):
        with quiet():
            out = _make(1 / a._data)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return -g * (out * out).conj()


class Tanh(_MathOut):
    fn = "tanh"
    _widen16 = True  # torch's recipe: float32 math, the backward from the 16-bit output

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * (1 - out * out).conj()


# -- exp / log variants ----------------------------------------------------------------------
class Exp2(_MathOut):
    fn = "exp2"
    # float32: kernels/_exp2_32.py (within 1 ulp; NumPy's calls the C library per element)
    _kernels = {"forward32": (kernels.jit("exp2_32", ("float32",), example32(1)),)}

    @classmethod
    def forward(cls, ctx, a):
        x = a._data
        if type(x) is not np.ndarray or x.dtype != np.float32:
            return super().forward(ctx, a)
        fused = kernel(cls, "forward32", a.device)
        if fused is not None and fast32(x, min_size=1):  # (the NumPy blocks cost more)
            out = one_pass(fused, (x,), min_part=_threads.COSTLY)
        else:  # the same source on NumPy blocks: the same bits
            out = _threads.blockwise(_numpy_form(exp2_32), np.empty(x.shape, np.float32), x)
        out = _make(out)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * (out * math.log(2.0)).conj()


class Expm1(_MathOut):
    fn = "expm1"
    kernel32 = "expm1_32"

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * (out + 1).conj()


class Log2(_Math):
    fn = "log2"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g / (a * math.log(2.0)).conj()


class Log10(_Math):
    fn = "log10"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g / (a * math.log(10.0)).conj()


class Log1p(_Math):
    fn = "log1p"
    kernel32 = "log1p32"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g / (a + 1).conj()


# -- trigonometric and hyperbolic ------------------------------------------------------------
class Sin(_Math):
    fn = "sin"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * cos(a).conj()


class Cos(_Math):
    fn = "cos"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return -g * sin(a).conj()


class Tan(_MathOut):
    fn = "tan"
    kernel32 = "tan32"  # within 3 ulp up to |x| = 2^19; beyond, float64 tan (below)

    @classmethod
    def forward(cls, ctx, a):
        x = a._data
        out = _apply_math(cls, x)
        lim = _math32.TAN_LIMIT
        if out.dtype == np.float32 and type(x) is np.ndarray and x.size and not (
                x.max() <= lim and x.min() >= -lim):  # (a nan makes both False)
            far = np.abs(x) > lim
            with quiet():  # in float64: NumPy's float32 tan is 3.4 ulp on AVX-512 machines
                out[far] = np.tan(x[far].astype(np.float64))
        out = _make(out)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * (1 + out * out).conj()


class Asin(_Math):
    fn = "arcsin"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * rsqrt(1 - a * a).conj()


class Acos(_Math):
    fn = "arccos"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return -g * rsqrt(1 - a * a).conj()


class Atan(_Math):
    fn = "arctan"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g / (1 + a * a).conj()


class Sinh(_Math):
    fn = "sinh"
    kernel32 = "sinh32"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * cosh(a).conj()


class Cosh(_Math):
    fn = "cosh"
    kernel32 = "cosh32"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * sinh(a).conj()


class Asinh(_Math):
    fn = "arcsinh"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * rsqrt(a * a + 1).conj()


class Acosh(_Math):
    fn = "arccosh"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * rsqrt(a * a - 1).conj()


class Atanh(_Math):
    fn = "arctanh"
    kernel32 = "atanh32"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g / (1 - a * a).conj()


# -- erf family (kernels in _erf.py) ---------------------------------------------------------
class _Special(Function):
    """A float64 kernel applied in the input's dtype (low precision round once), or a float32
    kernel for float32 inputs where there is one (``kernel32``, with its stated ulp bound)."""

    kernel = staticmethod(erf_kernel)
    kernel32 = None

    @classmethod
    def forward(cls, ctx, a):
        x = a._data
        if cls.kernel32 is not None and x.dtype == np.float32:
            out = _make(cls.kernel32(x))
        else:
            out = _make(cls.kernel(x.astype(np.float64)).astype(x.dtype, copy=False))
        ctx.save_for_backward(a, out)
        return out


class Erf(_Special):
    kernel = staticmethod(erf_kernel)
    kernel32 = staticmethod(erf_float32)

    @staticmethod
    def backward(ctx, g):
        a, _ = ctx.saved_tensors
        return g * (2 / math.sqrt(math.pi)) * (-a * a).exp()


class Erfc(_Special):
    kernel = staticmethod(erfc_kernel)
    kernel32 = staticmethod(erfc_float32)

    @staticmethod
    def backward(ctx, g):
        a, _ = ctx.saved_tensors
        return g * (-2 / math.sqrt(math.pi)) * (-a * a).exp()


class Erfinv(_Special):
    kernel = staticmethod(erfinv_kernel)
    kernel32 = staticmethod(erfinv_float32)

    @staticmethod
    def backward(ctx, g):
        _, out = ctx.saved_tensors
        return g * (math.sqrt(math.pi) / 2) * (out * out).exp()


# -- complex parts ---------------------------------------------------------------------------
class Angle(Function):
    # a real input: one select pass (numba's; the NumPy form's wheres took 14-36x torch's time)
    _kernels = {"real": (kernels.jit("angle_real", ("float32", "float64"), lambda: (
        np.empty(1, np.float32), np.ones(1, np.float32), np.float32(math.pi))),)}

    @classmethod
    def forward(cls, ctx, a):
        ctx.save_for_backward(a)
        xp, x = a.xp, a._data
        if a._dtype.is_complex:
            return xp.angle(x)
        # PyTorch: nan stays nan, negative numbers give pi, everything else (-0.0 too) 0
        pi = x.dtype.type(math.pi)
        fused = kernel(cls, "real", a.device, a._dtype)
        if fused is None or x.size == 0:
            return xp.where(xp.isnan(x), x, xp.where(x < 0, pi, 0)).astype(x.dtype, copy=False)
        x = np.require(x, requirements="C")  # (ascontiguousarray makes 0-d 1-d)
        return _threads.elementwise(lambda o, v: fused(o.reshape(-1), v.reshape(-1), pi),
                                    np.empty(x.shape, x.dtype), x, min_part=_threads.CHEAP)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        if not a._dtype.is_complex:
            return g.new_zeros(tuple(g.shape))
        return (g * a / (a * a.conj()) * 1j).where(a != 0, 0)


class Real(Function):
    @staticmethod
    def forward(ctx, a):
        return a._data.real.copy()

    @staticmethod
    def backward(ctx, g):
        return g  # the engine casts it to the complex input dtype


class Imag(Function):
    @staticmethod
    def forward(ctx, a):
        return a._data.imag.copy()

    @staticmethod
    def backward(ctx, g):
        return g * 1j


# -- wrappers --------------------------------------------------------------------------------
def conj(input) -> Tensor:
    """Complex conjugate; real tensors are returned unchanged (no copy).
    Example: ``tensorix.conj(tensorix.tensor([1 + 2j]))`` is ``tensor([1.-2.j])``."""
    check_tensor(input, "conj")
    if not input._dtype.is_complex:
        return input
    return Conj.apply(input)


def abs(input) -> Tensor:  # noqa: A001
    """``|input|`` elementwise, same shape (complex inputs give their real magnitude).
    Example: ``tensorix.abs(tensorix.tensor([-1.5, 2.0]))`` is ``tensor([1.5, 2.])``."""
    check_tensor(input, "abs")
    if input._dtype is dt.bool:
        raise RuntimeError("abs(): not implemented for bool tensors")
    return Abs.apply(input)


absolute = abs


def sqrt(input) -> Tensor:
    """Square root (``nan`` for negative reals). Example: ``tensorix.sqrt(x)``."""
    return Sqrt.apply(float_input(input, "sqrt"))


def rsqrt(input) -> Tensor:
    """``1 / sqrt(input)`` (``inf`` at 0). Example: ``tensorix.rsqrt(tensorix.tensor([4.]))``
    is ``tensor([0.5])``."""
    return Rsqrt.apply(float_input(input, "rsqrt"))


def square(input) -> Tensor:
    """``input * input``; integers stay integers and bools give int64, like PyTorch.
    Example: ``tensorix.square(tensorix.tensor([-3, 2]))`` is ``tensor([9, 4])``."""
    check_tensor(input, "square")
    if input._dtype is dt.bool:
        input = input.to(dt.int64)
    return input * input


def reciprocal(input) -> Tensor:
    """``1 / input`` (integers give the default float dtype; ``inf`` at 0).
    Example: ``tensorix.reciprocal(tensorix.tensor([2, 0]))`` is ``tensor([0.5000, inf])``."""
    return Reciprocal.apply(float_input(input, "reciprocal"))


def tanh(input) -> Tensor:
    """Hyperbolic tangent, elementwise.
    Example: ``tensorix.tanh(tensorix.tensor([0.0, 100.0]))`` is ``tensor([0., 1.])``."""
    return Tanh.apply(float_input(input, "tanh"))


def exp2(input) -> Tensor:
    """``2 ** input`` elementwise. Example: ``tensorix.exp2(tensorix.tensor([3.]))`` is 8."""
    return Exp2.apply(float_input(input, "exp2"))


def expm1(input) -> Tensor:
    """``exp(input) - 1``, accurate for small ``input``.
    Example: ``tensorix.expm1(tensorix.tensor([1e-10]))`` is ``tensor([1.0000e-10])``."""
    return Expm1.apply(float_input(input, "expm1"))


def log2(input) -> Tensor:
    """Base-2 logarithm (``-inf`` at 0, ``nan`` below).
    Example: ``tensorix.log2(tensorix.tensor([8.0, 0.5]))`` is ``tensor([ 3., -1.])``."""
    return Log2.apply(float_input(input, "log2"))


def log10(input) -> Tensor:
    """Base-10 logarithm (``-inf`` at 0, ``nan`` below).
    Example: ``tensorix.log10(tensorix.tensor([1000.0]))`` is ``tensor([3.0000])``."""
    return Log10.apply(float_input(input, "log10"))


def log1p(input) -> Tensor:
    """``log(1 + input)``, accurate for small ``input``.
    Example: ``tensorix.log1p(tensorix.tensor([1e-10]))`` is ``tensor([1.0000e-10])``."""
    return Log1p.apply(float_input(input, "log1p"))


def sin(input) -> Tensor:
    """Sine, elementwise. Example: ``tensorix.sin(tensorix.tensor([0.]))`` is 0."""
    return Sin.apply(float_input(input, "sin"))


def cos(input) -> Tensor:
    """Cosine, elementwise.
    Example: ``tensorix.cos(tensorix.tensor([0.0]))`` is ``tensor([1.])``."""
    return Cos.apply(float_input(input, "cos"))


def tan(input) -> Tensor:
    """Tangent, elementwise.
    Example: ``tensorix.tan(tensorix.tensor([0.7853982]))`` is ``tensor([1.])``."""
    return Tan.apply(float_input(input, "tan"))


def asin(input) -> Tensor:
    """Inverse sine (``nan`` outside [-1, 1]); alias ``arcsin``.
    Example: ``tensorix.asin(tensorix.tensor([1.0, 2.0]))`` is ``tensor([1.5708, nan])``."""
    return Asin.apply(float_input(input, "asin"))


def acos(input) -> Tensor:
    """Inverse cosine (``nan`` outside [-1, 1]); alias ``arccos``.
    Example: ``tensorix.acos(tensorix.tensor([1.0]))`` is ``tensor([0.])``."""
    return Acos.apply(float_input(input, "acos"))


def atan(input) -> Tensor:
    """Inverse tangent; alias ``arctan``.
    Example: ``tensorix.atan(tensorix.tensor([float('inf')]))`` is ``tensor([1.5708])``."""
    return Atan.apply(float_input(input, "atan"))


def sinh(input) -> Tensor:
    """Hyperbolic sine, elementwise.
    Example: ``tensorix.sinh(tensorix.tensor([0.0]))`` is ``tensor([0.])``."""
    return Sinh.apply(float_input(input, "sinh"))


def cosh(input) -> Tensor:
    """Hyperbolic cosine, elementwise.
    Example: ``tensorix.cosh(tensorix.tensor([0.0]))`` is ``tensor([1.])``."""
    return Cosh.apply(float_input(input, "cosh"))


def asinh(input) -> Tensor:
    """Inverse hyperbolic sine; alias ``arcsinh``.
    Example: ``tensorix.asinh(tensorix.tensor([0.0]))`` is ``tensor([0.])``."""
    return Asinh.apply(float_input(input, "asinh"))


def acosh(input) -> Tensor:
    """Inverse hyperbolic cosine (``nan`` below 1); alias ``arccosh``.
    Example: ``tensorix.acosh(tensorix.tensor([1.0, 0.5]))`` is ``tensor([0., nan])``."""
    return Acosh.apply(float_input(input, "acosh"))


def atanh(input) -> Tensor:
    """Inverse hyperbolic tangent (``+-inf`` at +-1, ``nan`` beyond); alias ``arctanh``.
    Example: ``tensorix.atanh(tensorix.tensor([0.0, 1.0]))`` is ``tensor([0., inf])``."""
    return Atanh.apply(float_input(input, "atanh"))


arcsin, arccos, arctan = asin, acos, atan
arcsinh, arccosh, arctanh = asinh, acosh, atanh


def erf(input) -> Tensor:
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``, elementwise.
    Example: ``tensorix.erf(tensorix.tensor([0., 1.]))`` is ``tensor([0.0000, 0.8427])``."""
    return Erf.apply(_real_float(input, "erf"))


def erfc(input) -> Tensor:
    """``1 - erf(input)``, accurate far into the right tail (``erfc(10)`` is 2.1e-45).
    Example: ``tensorix.erfc(tensorix.tensor([0.0, 5.0]))`` is ``tensor([1.0000e+00,
    1.5375e-12])``."""
    return Erfc.apply(_real_float(input, "erfc"))


def erfinv(input) -> Tensor:
    """Inverse of ``erf`` on [-1, 1] (``+-inf`` at +-1, ``nan`` beyond).
    Example: ``tensorix.erfinv(tensorix.erf(x))`` recovers ``x``."""
    return Erfinv.apply(_real_float(input, "erfinv"))


def deg2rad(input) -> Tensor:
    """Degrees to radians (``input * pi / 180``).
    Example: ``tensorix.deg2rad(tensorix.tensor([180]))`` is ``tensor([3.1416])``."""
    return float_input(input, "deg2rad") * (math.pi / 180)


def rad2deg(input) -> Tensor:
    """Radians to degrees (``input * 180 / pi``).
    Example: ``tensorix.rad2deg(tensorix.tensor([3.14159265]))`` is ``tensor([180.])``."""
    return float_input(input, "rad2deg") * (180 / math.pi)


def angle(input) -> Tensor:
    """The argument of each element: ``atan2(imag, real)`` for complex input (real result);
    for real input ``pi`` where negative, 0 elsewhere, ``nan`` kept.

    Example: ``tensorix.angle(tensorix.tensor([1j, -1.0]))`` is ``tensor([1.5708, 3.1416])``.
    """
    return Angle.apply(float_input(input, "angle"))


def real(input) -> Tensor:
    """The real part of a complex tensor (a copy, not a view as in PyTorch); real tensors
    are returned unchanged.

    Example: ``tensorix.real(tensorix.tensor([1 + 2j]))`` is ``tensor([1.])``.
    """
    check_tensor(input, "real")
    return Real.apply(input) if input._dtype.is_complex else input


def imag(input) -> Tensor:
    """The imaginary part of a complex tensor (a copy, not a view as in PyTorch).
    Example: ``tensorix.imag(tensorix.tensor([1 + 2j]))`` is ``tensor([2.])``."""
    check_tensor(input, "imag")
    if not input._dtype.is_complex:
        raise RuntimeError("imag(): not implemented for tensors with non-complex dtypes "
                           f"(got {input._dtype.name})")
    return Imag.apply(input)


def where_finite_log(a) -> Tensor:
    """log(a) with 0 where a == 0: the exponent gradient of ``0 ** b`` is 0, not nan."""
    safe = where(a == 0, 1, a)
    return log(safe)


def _methods():
    from .inplace import make

    plain = {
        "conj": conj, "abs": abs, "absolute": abs, "sqrt": sqrt, "rsqrt": rsqrt,
        "square": square, "reciprocal": reciprocal, "tanh": tanh, "exp2": exp2,
        "expm1": expm1, "log2": log2, "log10": log10, "log1p": log1p, "sin": sin, "cos": cos,
        "tan": tan, "asin": asin, "acos": acos, "atan": atan, "sinh": sinh, "cosh": cosh,
        "asinh": asinh, "acosh": acosh, "atanh": atanh, "arcsin": asin, "arccos": acos,
        "arctan": atan, "arcsinh": asinh, "arccosh": acosh, "arctanh": atanh, "erf": erf,
        "erfc": erfc, "erfinv": erfinv, "deg2rad": deg2rad, "rad2deg": rad2deg,
        "angle": angle,
    }
    m = dict(plain)
    for name in ("abs", "sqrt", "rsqrt", "square", "reciprocal", "tanh", "exp2",
                 "expm1", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos",
                 "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsin", "arccos",
                 "arctan", "arcsinh", "arccosh", "arctanh", "erf", "erfc", "erfinv", "deg2rad",
                 "rad2deg", "absolute"):
        m[name + "_"] = make(plain[name], name + "_")
    m.update({"real": property(real), "imag": property(imag), "__abs__": abs})
    return m


TENSOR_METHODS = _methods()
