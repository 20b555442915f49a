"""``tensorix.special``: the functions of ``torch.special`` under their names.

Most are tensorix ops re-exported (``erf``, ``gammaln`` = ``lgamma``, ``psi`` = ``digamma``,
``expit`` = ``sigmoid``, ``multigammaln`` = ``mvlgamma``, ``gammainc`` = ``igamma``, ...). The
rest are added here, differentiable exactly where PyTorch's are:

* differentiable: :func:`entr`, :func:`erfcx`, :func:`ndtr`, :func:`log_ndtr`, :func:`ndtri`,
  :func:`i1`, :func:`i0e`, :func:`i1e`, :func:`xlog1py` (backwards written with tensorix ops,
  so they differentiate again);
* values only (PyTorch has no derivative either): :func:`zeta` (the Hurwitz zeta, raising on
  backward as PyTorch does), :func:`bessel_j0`, :func:`bessel_j1`,
  :func:`modified_bessel_i0`, :func:`modified_bessel_i1`, :func:`spherical_bessel_j0` and
  the orthogonal polynomials (Chebyshev T/U/V/W and their shifted forms, Hermite H/He,
  Laguerre L, Legendre P), whose outputs carry no gradient.

Kernels run in float64 on the device's array module and round once to the input dtype.
``bessel_j0/j1`` integrate ``J_n(x) = 1/(2 pi) int cos(n t - x sin t) dt`` with the trapezoid
rule over a full period (exact to rounding for ``|x| <= 25`` with 96 nodes: the error is of
the size of ``J_96(25)``) and use Hankel's asymptotic series beyond. ``erfcx`` is
``exp(x^2) erfc(x)`` below 5 and a continued fraction above; ``ndtri`` refines ``sqrt(2)
erfinv(2p - 1)`` by Newton steps on ``log_ndtr`` so that tiny tails keep full relative accuracy.

Example::

    import tensorix as tx
    x = tx.linspace(-3, 3, 7, requires_grad=True)
    tx.special.log_ndtr(x).sum().backward()   # x.grad = pdf(x) / cdf(x)
"""

from __future__ import annotations

import math

import numpy as np

from . import dtypes as dt
from .autograd.function import Function
from .backend import array_module, quiet
from .ops import (
    digamma,
    erf,
    erfc,
    erfinv,
    exp2,
    expm1,
    i0,
    igamma,
    igammac,
    lgamma,
    log1p,
    log_softmax,
    logit,
    logsumexp,
    mvlgamma,
    polygamma,
    round,
    sigmoid,
    sinc,
    softmax,
    where,
    xlogy,
)
from .ops._common import check_tensor, promote
from .ops._erf import erfc_kernel, erfinv_kernel
from .ops.elementwise import x_times_log
from .ops.special import Bessel, _Kernel, bessel_kernel, zeta_kernel
from .tensor import Tensor, _make

__all__ = ["bessel_j0", "bessel_j1", "digamma", "entr", "erf", "erfc", "erfcx",
           "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln", "i0", "i0e",
           "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp",
           "modified_bessel_i0", "modified_bessel_i1", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "round", "sinc", "softmax", "spherical_bessel_j0", "xlog1py",
           "xlogy", "zeta", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
           "chebyshev_polynomial_v", "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"]

expit = sigmoid
gammaln = lgamma
psi = digamma
multigammaln = mvlgamma
gammainc = igamma
gammaincc = igammac

_SQRT2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _real(input, op):
    """A real floating tensor for ``op`` (ints and bools go to the default float dtype)."""
    check_tensor(input, op)
    if input._dtype.is_complex:
        raise RuntimeError(f"{op}(): not implemented for complex tensors (got "
                           f"{input._dtype.name})")
    return input.to(dt.get_default_dtype()) if input._dtype.category < 2 else input


def _pair(input, other, op):
    """Two real floating operands of one dtype (either may be a Python number)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"{op}(): expected at least one Tensor argument")
    a, b = promote(input, other, op)
    if a._dtype.is_complex:
        raise RuntimeError(f"{op}(): not implemented for complex tensors")
    if a._dtype.category < 2:
        a, b = a.to(dt.get_default_dtype()), b.to(dt.get_default_dtype())
    return a, b


# -- kernels (float64 xp arrays) ---------------------------------------------------------------
def erfcx_kernel(x):
    """exp(x^2) erfc(x): directly below 5 (erfc keeps its relative accuracy there), by the
    continued fraction 1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / ...)))) above."""
    xp = array_module(x)
    with quiet():
        small = x < 5
        xs = xp.where(small, x, 0.0)
        direct = xp.exp(xs * xs) * erfc_kernel(xs)
        xl = xp.where(small, 5.0, x)
        t = xl
        for k in range(60, 0, -1):
            t = xl + (k / 2) / t
        return xp.where(small, direct, 1 / (math.sqrt(math.pi) * t))


def _bessel_j_kernel(x, order):
    """J_0 or J_1 (see the module docstring for the method)."""
    xp = array_module(x)
    with quiet():
        ax = xp.abs(x)
        near = ax <= 25
        xn = xp.where(near, ax, 0.0)[..., None]
        nodes = 96
        theta = xp.arange(nodes, dtype=np.float64) * (2 * math.pi / nodes)
        quad = xp.cos(order * theta - xn * xp.sin(theta)).mean(-1)
        xf = xp.where(near, 30.0, ax)
        mu = 4.0 * order * order
        p, q, term = xp.ones_like(xf), xp.zeros_like(xf), xp.ones_like(xf)
        for k in range(1, 40):
            term = term * (mu - (2 * k - 1) ** 2) / (k * 8 * xf)
            if k % 2:
                q = q + (term if k % 4 == 1 else -term)
            else:
                p = p + (-term if k % 4 == 2 else term)
        chi = xf - (order / 2 + 0.25) * math.pi
        far = xp.sqrt(2 / (math.pi * xf)) * (p * xp.cos(chi) - q * xp.sin(chi))
        out = xp.where(near, quad, far)
        if order == 1:
            out = xp.where(x < 0, -out, out)
        return xp.where(xp.isnan(x), np.nan, xp.where(xp.isinf(x), 0.0, out))


def _ndtri_kernel(p):
    xp = array_module(p)
    with quiet():
        upper = p > 0.5
        q = xp.where(upper, 1 - p, p)  # the smaller tail: t = ndtri(q) <= 0
        valid = (q > 0) & (q <= 0.5)
        qv = xp.where(valid, q, 0.25)
        lq = xp.log(qv)
        deep = qv < 1e-8  # erfinv(2q - 1) rounds to -inf there; start from the tail formula
        ll = -2 * lq
        t = xp.where(deep, -xp.sqrt(xp.maximum(ll - xp.log(ll) - math.log(2 * math.pi), 0.0)),
                     _SQRT2 * erfinv_kernel(2 * qv - 1))
        for _ in range(4):  # Newton on log_ndtr(t) = log(q); its slope is pdf/cdf
            e = erfcx_kernel(-t / _SQRT2)
            f = xp.log(0.5 * e) - t * t / 2 - lq
            t = t - f * e / _SQRT_2_OVER_PI
        out = xp.where(upper, -t, t)
        out = xp.where(q == 0, xp.where(upper, np.inf, -np.inf), out)
        return xp.where((p < 0) | (p > 1) | xp.isnan(p), np.nan, out)


def _poly_kernel(x, n, kind):
    """The degree-``n`` polynomial of ``kind`` at ``x`` by its three-term recurrence
    (``n`` truncated to an integer; 0 for negative ``n``, as in PyTorch)."""
    xp = array_module(x)
    x, n = xp.broadcast_arrays(x, xp.trunc(n))
    shifted = kind.startswith("shifted_")
    if shifted:
        x = 2 * x - 1
        kind = kind[len("shifted_"):]
    p0 = xp.ones_like(x)
    p1 = {"t": x, "u": 2 * x, "v": 2 * x - 1, "w": 2 * x + 1, "h": 2 * x, "he": x,
          "l": 1 - x, "p": x}[kind]
    with quiet():
        out = xp.where(n == 0, p0, xp.where(n == 1, p1, 0.0))
        top = int(n.max()) if n.size else 0
        for k in range(1, top):
            if kind in ("t", "u", "v", "w"):
                p0, p1 = p1, 2 * x * p1 - p0
            elif kind == "h":
                p0, p1 = p1, 2 * x * p1 - 2 * k * p0
            elif kind == "he":
                p0, p1 = p1, x * p1 - k * p0
            elif kind == "l":
                p0, p1 = p1, ((2 * k + 1 - x) * p1 - k * p0) / (k + 1)
            else:
                p0, p1 = p1, ((2 * k + 1) * x * p1 - k * p0) / (k + 1)
            out = xp.where(n == k + 1, p1, out)
        return xp.where(xp.isnan(x), np.nan, out)


# -- differentiable primitives -----------------------------------------------------------------
class Erfcx(_Kernel):
    kernel = staticmethod(erfcx_kernel)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (2 * x * Erfcx.apply(x) - _TWO_OVER_SQRT_PI)


class ScaledBessel(_Kernel):
    """i0e and i1e: e^-|x| I_order(x); d i0e = i1e - sgn(x) i0e, d i1e = i0e - i1e (sgn(x) +
    1/x), 1/2 at 0."""

    kernel = staticmethod(lambda x, order: bessel_kernel(x, order, scaled=True))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if ctx.params[0] == 0:
            return g * (ScaledBessel.apply(x, 1) - x.sign() * ScaledBessel.apply(x, 0)), None
        zero = x == 0
        safe = x.masked_fill(zero, 1.0)
        d = ScaledBessel.apply(x, 0) - ScaledBessel.apply(safe, 1) * (safe.sign() + 1 / safe)
        return g * d.masked_fill(zero, 0.5), None


class Ndtri(_Kernel):
    kernel = staticmethod(_ndtri_kernel)

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        x = Ndtri.apply(p)  # dx/dp = 1 / pdf(x)
        return g * math.sqrt(2 * math.pi) * (x * x / 2).exp()


class Xlog1py(Function):
    """``x * log1p(y)``, 0 where x == 0 (unless y is nan), as PyTorch's xlog1py."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x_times_log(x._data, y._data, x.xp.log1p)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        nx, ny = ctx.needs_input_grad
        gx = g * Xlog1py.apply((x != 0).to(x.dtype), y) if nx else None
        return gx, (g * x / (y + 1) if ny else None)


class Zeta(Function):
    """The Hurwitz zeta; like PyTorch, it has no derivative."""

    @staticmethod
    def forward(ctx, s, q):
        xp = s.xp
        a, b = xp.broadcast_arrays(s._data.astype(np.float64), q._data.astype(np.float64))
        with quiet():
            ok = a > 1
            out = zeta_kernel(xp.where(ok, a, 2.0), b)
            out = xp.where(a == 1, np.inf, xp.where(ok, out, np.nan))
            out = xp.where((b < 0) & (b != xp.floor(b)) & (a != xp.floor(a)), np.nan, out)
            return out.astype(s._data.dtype)

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError("zeta: the derivative for 'zeta' is not implemented, as in "
                                  "PyTorch")


# -- differentiable functions ------------------------------------------------------------------
def entr(input) -> Tensor:
    """Elementwise entropy term: ``-x log x`` for x > 0, 0 at 0, ``-inf`` for x < 0.
    Example: ``tensorix.special.entr(tensorix.tensor([0.5, 0.0]))`` is ``[0.3466, 0.]``."""
    x = _real(input, "entr")
    pos = x > 0
    safe = where(pos, x, 1.0)  # so the unused branch stays finite under backward
    return where(pos, -safe * safe.log(), where(x == 0, 0.0, where(x < 0, -math.inf, x)))


def erfcx(input) -> Tensor:
    """The scaled complementary error function ``exp(x^2) erfc(x)``, finite for large x.
    Example: ``tensorix.special.erfcx(tensorix.tensor([0.0, 30.0]))`` is ``[1.0, 0.0188]``."""
    return Erfcx.apply(_real(input, "erfcx"))


def ndtr(input) -> Tensor:
    """The standard normal CDF ``(1 + erf(x / sqrt 2)) / 2``, elementwise.
    Example: ``tensorix.special.ndtr(tensorix.tensor([0.0]))`` is ``[0.5]``."""
    x = _real(input, "ndtr")
    return 0.5 * erfc(-x / _SQRT2)


def log_ndtr(input) -> Tensor:
    """``log(ndtr(x))``, accurate in the far left tail (through :func:`erfcx`).
    Example: ``tensorix.special.log_ndtr(tensorix.tensor([-40.0]))`` is ``[-804.6084]``."""
    x = _real(input, "log_ndtr")
    left = x < -1
    xl, xr = where(left, x, -1.0), where(left, 0.0, x)  # each branch on its own domain
    tail = (Erfcx.apply(-xl / _SQRT2) / 2).log() - xl * xl / 2
    return where(left, tail, (-0.5 * erfc(xr / _SQRT2)).log1p())


def ndtri(input) -> Tensor:
    """The standard normal quantile: the inverse of :func:`ndtr` on ``[0, 1]``.
    Example: ``tensorix.special.ndtri(tensorix.tensor([0.5, 0.975]))`` is ``[0., 1.9600]``."""
    return Ndtri.apply(_real(input, "ndtri"))


def i1(input) -> Tensor:
    """The modified Bessel function of the first kind of order one, elementwise.
    Example: ``tensorix.special.i1(tensorix.tensor([1.0]))`` is ``[0.5652]``."""
    return Bessel.apply(_real(input, "i1"), 1)


def i0e(input) -> Tensor:
    """The exponentially scaled ``exp(-|x|) i0(x)`` (no overflow for large x).
    Example: ``tensorix.special.i0e(tensorix.tensor([0.0, 1.0]))`` is ``[1.0, 0.4658]``."""
    return ScaledBessel.apply(_real(input, "i0e"), 0)


def i1e(input) -> Tensor:
    """The exponentially scaled ``exp(-|x|) i1(x)``.
    Example: ``tensorix.special.i1e(tensorix.tensor([1.0]))`` is ``[0.2079]``."""
    return ScaledBessel.apply(_real(input, "i1e"), 1)


def xlog1py(input, other) -> Tensor:
    """``input * log1p(other)``, 0 where ``input`` is 0 (broadcast; either may be a number).
    Example: ``tensorix.special.xlog1py(tensorix.tensor([0.0, 2.0]), 1.0)`` is
    ``[0.0, 1.3863]``."""
    return Xlog1py.apply(*_pair(input, other, "xlog1py"))


def zeta(input, other) -> Tensor:
    """The Hurwitz zeta ``sum_k (other + k) ** -input`` (broadcast; not differentiable, as
    in PyTorch). Example: ``tensorix.special.zeta(tensorix.tensor([2.0]), 1.0)`` is
    ``[1.6449]``."""
    return Zeta.apply(*_pair(input, other, "zeta"))


# -- values only (no gradient, as in PyTorch) --------------------------------------------------
def _values(kernel, input, op, *params):
    x = _real(input, op)
    out = kernel(x._data.astype(np.float64), *params)
    return _make(out.astype(x._data.dtype, copy=False), x._dtype)


def bessel_j0(input) -> Tensor:
    """The Bessel function of the first kind of order zero. Example:
    ``tensorix.special.bessel_j0(tensorix.tensor([0.0, 2.404825557695773]))`` is ``[1., 0.]``."""
    return _values(_bessel_j_kernel, input, "bessel_j0", 0)


def bessel_j1(input) -> Tensor:
    """The Bessel function of the first kind of order one.
    Example: ``tensorix.special.bessel_j1(tensorix.tensor([1.0]))`` is ``[0.4401]``."""
    return _values(_bessel_j_kernel, input, "bessel_j1", 1)


def modified_bessel_i0(input) -> Tensor:
    """I_0 (the values of :func:`i0`, without a gradient, as PyTorch's).
    Example: ``tensorix.special.modified_bessel_i0(tensorix.tensor([1.0]))`` is ``[1.2661]``."""
    return _values(bessel_kernel, input, "modified_bessel_i0", 0)


def modified_bessel_i1(input) -> Tensor:
    """I_1 (the values of :func:`i1`, without a gradient, as PyTorch's).
    Example: ``tensorix.special.modified_bessel_i1(tensorix.tensor([1.0]))`` is ``[0.5652]``."""
    return _values(bessel_kernel, input, "modified_bessel_i1", 1)


def spherical_bessel_j0(input) -> Tensor:
    """The spherical Bessel function ``sin(x) / x`` (1 at 0).
    Example: ``tensorix.special.spherical_bessel_j0(tensorix.tensor([0.0]))`` is ``[1.]``."""
    def kernel(x):
        return array_module(x).sinc(x / math.pi)
    return _values(kernel, input, "spherical_bessel_j0")


def _polynomial(kind, op):
    def fn(input, n) -> Tensor:
        x, deg = _pair(input, n, op)
        out = _poly_kernel(x._data.astype(np.float64), deg._data.astype(np.float64), kind)
        return _make(out.astype(x._data.dtype, copy=False), x._dtype)

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = (f"The {_POLY_NAMES[kind]} of degree ``n`` at ``input`` (broadcast; ``n`` "
                  "truncated to an integer, 0 for negative ``n``; no gradient, as in "
                  f"PyTorch). Example: ``tensorix.special.{op}(tensorix.tensor([0.5]), 2)``.")
    return fn


_POLY_NAMES = {"t": "Chebyshev polynomial of the first kind T", "u": "Chebyshev polynomial "
               "of the second kind U", "v": "Chebyshev polynomial of the third kind V",
               "w": "Chebyshev polynomial of the fourth kind W",
               "shifted_t": "shifted Chebyshev polynomial T*(x) = T(2x - 1)",
               "shifted_u": "shifted Chebyshev polynomial U*(x) = U(2x - 1)",
               "shifted_v": "shifted Chebyshev polynomial V*(x) = V(2x - 1)",
               "shifted_w": "shifted Chebyshev polynomial W*(x) = W(2x - 1)",
               "h": "physicists' Hermite polynomial H", "he": "probabilists' Hermite "
               "polynomial He", "l": "Laguerre polynomial L", "p": "Legendre polynomial P"}

chebyshev_polynomial_t = _polynomial("t", "chebyshev_polynomial_t")
chebyshev_polynomial_u = _polynomial("u", "chebyshev_polynomial_u")
chebyshev_polynomial_v = _polynomial("v", "chebyshev_polynomial_v")
chebyshev_polynomial_w = _polynomial("w", "chebyshev_polynomial_w")
shifted_chebyshev_polynomial_t = _polynomial("shifted_t", "shifted_chebyshev_polynomial_t")
shifted_chebyshev_polynomial_u = _polynomial("shifted_u", "shifted_chebyshev_polynomial_u")
shifted_chebyshev_polynomial_v = _polynomial("shifted_v", "shifted_chebyshev_polynomial_v")
shifted_chebyshev_polynomial_w = _polynomial("shifted_w", "shifted_chebyshev_polynomial_w")
hermite_polynomial_h = _polynomial("h", "hermite_polynomial_h")
hermite_polynomial_he = _polynomial("he", "hermite_polynomial_he")
laguerre_polynomial_l = _polynomial("l", "laguerre_polynomial_l")
legendre_polynomial_p = _polynomial("p", "legendre_polynomial_p")

