"""Special functions: lgamma, digamma, polygamma, mvlgamma, i0, sinc, igamma, igammac.

NumPy has none of the gamma family and scipy is not a dependency, so each is a vectorised
``xp`` kernel evaluated in float64 and rounded once to the input's dtype:

* ``lgamma``: Lanczos (Godfrey's g = 607/128, 15 terms) for x >= 1/2, the reflection formula
  below, with ``sin(pi x)`` range-reduced so large negative x keep their accuracy;
* ``digamma``: the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic
  series to B_14; reflection for negative x;
* ``polygamma(n, x)`` (n >= 1): (-1)^(n+1) n! zeta(n + 1, x), the Hurwitz zeta by direct
  summation up to x + k >= n + 10 and the Euler-Maclaurin tail (12 Bernoulli terms);
* ``i0``: the power series (all terms positive) for |x| <= 20, Hankel's asymptotic series
  beyond; its derivative ``i1`` the same way;
* ``igamma``/``igammac`` (regularised incomplete gamma P and Q): the series for x < a + 1,
  Lentz's continued fraction otherwise (Numerical Recipes 6.2), each element stopped where it
  has converged (for a float32 result at 2^-33 of its sum: within 1 ulp of the float64 value);
  on the CPU numba runs them per element, in vectorised lanes (``kernels/_jit_13spec.py``'s
  ``igamma_lanes64``, igamma64's bits).

Measured against mpmath (tests/test_api_completion.py): relative error below 1e-13 in float64
away from the zeros of the functions, where the error is absolute (about 1e-16).

float32 inputs of lgamma (so mvlgamma), digamma (polygamma with n = 0) and i0 take the float32
kernels of kernels/_math32.py instead (numba's one pass where installed): lgamma within 4 ulp
for x > 0 (2e-7 absolute near its zeros at 1 and 2), 18 ulp or 1e-6 absolute for x < 0 (the
reflection cancels near the poles); digamma is torch's float algorithm, with its accuracy;
i0 within 7 ulp.
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
from ..tensor import Tensor
from ._common import check_tensor, promote
from .creation import arange
from .elementwise import exp, log
from .pointwise import where

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "i0", "sinc", "igamma", "igammac"]

_LANCZOS_G = 607 / 128
_LANCZOS = (0.99999999999999709182, 57.156235665862923517, -59.597960355475491248,
            14.136097974741747174, -0.49191381609762019978, 0.33994649984811888699e-4,
            0.46523628927048575665e-4, -0.98374475304879564677e-4, 0.15808870322491248884e-3,
            -0.21026444172410488319e-3, 0.21743961811521264320e-3, -0.16431810653676389022e-3,
            0.84418223983852743293e-4, -0.26190838401581408670e-4, 0.36899182659531622704e-5)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# B_2k / (2k) for the digamma asymptotic series, k = 1..7
_DIGAMMA_B = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)
# B_2j / (2j)! for the Euler-Maclaurin tail of the Hurwitz zeta, j = 1..12
_BERN = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
         43867 / 798, -174611 / 330, 854513 / 138, -236364091 / 2730)
_EM = tuple(b / math.factorial(2 * j + 2) for j, b in enumerate(_BERN))


def _xp(arr):
    return backend.array_module(arr)


def _sinpi(x):
    """sin(pi x) with the argument reduced to [-1, 1] first (exact zeros at integers)."""
    xp = _xp(x)
    r = x - 2 * xp.round(x / 2)
    return xp.where(r == xp.round(r), 0.0, xp.sin(math.pi * r))


def _cospi(x):
    xp = _xp(x)
    r = x - 2 * xp.round(x / 2)
    return xp.where(r - xp.round(r) == 0.5, 0.0, xp.cos(math.pi * r))


def _lgamma_pos(x):
    """log Gamma(x) for x >= 1/2 (Lanczos)."""
    xp = _xp(x)
    z = x - 1
    acc = xp.full_like(z, _LANCZOS[0])
    for k in range(len(_LANCZOS) - 1, 0, -1):
        acc = acc + _LANCZOS[k] / (z + k)
    t = z + _LANCZOS_G + 0.5
    return _HALF_LOG_2PI + (z + 0.5) * xp.log(t) - t + xp.log(acc)


def lgamma_kernel(x):
    """log|Gamma(x)| on a float64 xp array (inf at 0, the negative integers and +-inf)."""
    xp = _xp(x)
    with quiet():
        neg = x < 0.5
        xr = xp.where(neg, 1 - x, x)
        out = _lgamma_pos(xp.where(xp.isfinite(xr), xr, 1.0))
        refl = xp.log(math.pi / xp.abs(_sinpi(x))) - out
        out = xp.where(neg, refl, out)
        return xp.where(xp.isinf(x), np.inf, xp.where(xp.isnan(x), x, out))


def digamma_kernel(x):
    """psi(x) on a float64 xp array: -inf/+inf at +0/-0, nan at negative integers."""
    xp = _xp(x)
    with quiet():
        neg = x < 0
        refl = -math.pi * _cospi(x) / _sinpi(x)  # psi(x) = psi(1 - x) - pi cot(pi x)
        y = xp.where(neg, 1 - x, x)
        y = xp.where(xp.isfinite(y) & (y > 0), y, 1.0)
        acc = xp.zeros_like(y)
        for _ in range(10):  # psi(y) = psi(y + 1) - 1/y until y >= 10
            small = y < 10
            acc = acc - xp.where(small, 1 / y, 0.0)
            y = xp.where(small, y + 1, y)
        inv2 = 1 / (y * y)
        series = _DIGAMMA_B[-1]
        for c in _DIGAMMA_B[-2::-1]:
            series = series * inv2 + c
        out = acc + xp.log(y) - 0.5 / y - inv2 * series
        out = xp.where(neg, out + refl, out)
        out = xp.where(x == 0, xp.copysign(np.inf, -x), out)
        out = xp.where(neg & (x == xp.floor(x)), np.nan, out)
        out = xp.where(x == np.inf, np.inf, out)
        return xp.where((x == -np.inf) | xp.isnan(x), np.nan, out)


def zeta_kernel(s, q):
    """Hurwitz zeta(s, q) for an integer s >= 2 and float64 q (q not a non-positive integer;
    negative q are summed directly, as Cephes does)."""
    xp = _xp(q)
    with quiet():
        target = s + 10.0
        ok = xp.isfinite(q)
        qq = xp.where(ok, q, target)
        shifts = xp.maximum(xp.ceil(target - qq), 0)
        total = xp.zeros_like(qq)
        a = qq
        for _ in range(int(shifts.max()) if shifts.size else 0):
            take = shifts > 0
            total = total + xp.where(take, a ** -s, 0.0)
            a = xp.where(take, a + 1, a)
            shifts = shifts - 1
        inv = 1 / a
        lead = a ** -s
        total = total + a * lead / (s - 1) + 0.5 * lead
        # Euler-Maclaurin: sum_j B_2j/(2j)! s(s+1)...(s+2j-2) a^(-s-2j+1)
        term = lead * inv * s
        for j, c in enumerate(_EM):
            total = total + c * term
            term = term * ((s + 2 * j + 1) * (s + 2 * j + 2)) * inv * inv
        out = xp.where(q == np.inf, 0.0, total)
        return xp.where((q <= 0) & (q == xp.floor(q)), np.inf, out)


def polygamma_kernel(n, x):
    """The n-th derivative of digamma on a float64 xp array (n a Python int >= 0)."""
    if n == 0:
        return digamma_kernel(x)
    xp = _xp(x)
    with quiet():
        sign = 1.0 if n % 2 else -1.0
        fact = math.factorial(n) if n <= 170 else math.inf
        out = sign * fact * zeta_kernel(n + 1, x)
        return xp.where(xp.isnan(x) | (x == -np.inf), np.nan, out)


def _bessel_series(x, order):
    """sum_k (x/2)^(2k+order) / (k! (k+order)!) for |x| <= 20 (all terms of one sign)."""
    xp = _xp(x)
    h = x / 2
    q = h * h
    term = xp.ones_like(x) if order == 0 else h.copy()
    total = term
    for k in range(1, 48):
        term = term * q / (k * (k + order))
        total = total + term
    return total


def _bessel_asymptotic(ax, order, scaled=False):
    """Hankel's expansion e^x / sqrt(2 pi x) sum_k (-1)^k a_k(order) / x^k, for x > 20
    (without the e^x when ``scaled``, so that i0e/i1e never overflow)."""
    xp = _xp(ax)
    mu = 4.0 * order * order
    inv = 1 / (8 * ax)
    term = xp.ones_like(ax)
    total = term
    for k in range(1, 30):
        term = term * -(mu - (2 * k - 1) ** 2) / k * inv
        total = total + term
    return (1.0 if scaled else xp.exp(ax)) / xp.sqrt(2 * math.pi * ax) * total


def bessel_kernel(x, order, scaled=False):
    """The modified Bessel function I_order (order 0 or 1) on a float64 xp array, times
    e^-|x| when ``scaled`` (i0e, i1e)."""
    xp = _xp(x)
    with quiet():
        ax = xp.abs(x)
        small = ax <= 20
        series = _bessel_series(xp.where(small, x, 0.0), order)
        if scaled:
            series = series * xp.exp(-xp.where(small, ax, 0.0))
        out = xp.where(small, series, _bessel_asymptotic(xp.where(small, 21.0, ax), order,
                                                         scaled))
        if order == 1:
            out = xp.where(small, out, xp.copysign(out, x))
        return xp.where(xp.isnan(x), np.nan, out)


def _gamma_prefactor(a, x):
    """x^a e^-x / Gamma(a), through logs."""
    xp = _xp(x)
    return xp.exp(a * xp.log(x) - x - lgamma_kernel(a))


def _igamma_series(a, x, tol):
    """P(a, x) = prefactor / a * sum_n x^n / ((a+1)...(a+n)), for x < a + 1: each element
    stops at the first term below ``tol`` of its sum (kernels' igamma64 adds the same)."""
    xp = _xp(x)
    term = 1 / a
    total = term
    ap = a.copy()
    live = xp.ones(a.shape, dtype=bool)
    for _ in range(5000):
        ap = ap + 1
        term = term * x / ap
        total = xp.where(live, total + term, total)
        live = live & (xp.abs(term) > xp.abs(total) * tol)
        if not bool(live.any()):
            break
    return total * _gamma_prefactor(a, x)


def _igammac_fraction(a, x, tol):
    """Q(a, x) by Lentz's method on the continued fraction, for x >= a + 1; each element
    stops where its factor is within ``tol`` of 1."""
    xp = _xp(x)
    tiny = 1e-300
    b = x + 1 - a
    c = xp.full_like(x, 1 / tiny)
    d = 1 / b
    h = d
    live = xp.ones(a.shape, dtype=bool)
    for i in range(1, 5000):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = xp.where(xp.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = xp.where(xp.abs(c) < tiny, tiny, c)
        d = 1 / d
        delta = d * c
        h = xp.where(live, h * delta, h)
        live = live & (xp.abs(delta - 1) > tol)
        if not bool(live.any()):
            break
    return h * _gamma_prefactor(a, x)


def igamma_kernel(a, x, upper, tol=1e-17):
    """The regularised lower (P) or upper (Q) incomplete gamma on float64 xp arrays, with
    torch's values at the edges (nan for a < 0 or x < 0, P(0, x > 0) = 1, P(a, 0) = 0);
    ``tol`` the relative size of the last term each element adds (float32 results need
    IGAMMA_TOL32)."""
    xp = _xp(x)
    a, x = xp.broadcast_arrays(a, x)
    with quiet():
        inner = (a > 0) & (x > 0) & xp.isfinite(a) & xp.isfinite(x)
        use_series = inner & (x < a + 1)
        use_frac = inner & ~use_series
        # each side computes the smaller of P and Q; the other is its complement
        p, q = xp.zeros(a.shape, dtype=np.float64), xp.zeros(a.shape, dtype=np.float64)
        if bool(use_series.any()):
            ps = _igamma_series(a[use_series], x[use_series], tol)
            p[use_series], q[use_series] = ps, 1 - ps
        if bool(use_frac.any()):
            qf = _igammac_fraction(a[use_frac], x[use_frac], tol)
            p[use_frac], q[use_frac] = 1 - qf, qf
        out = q if upper else p
        edge_one = ((a == 0) & (x > 0)) | ((x == np.inf) & xp.isfinite(a) & (a > 0))
        edge_zero = ((x == 0) & (a > 0)) | ((a == np.inf) & xp.isfinite(x) & (x >= 0))
        out = xp.where(edge_one, 0.0 if upper else 1.0, out)
        out = xp.where(edge_zero, 1.0 if upper else 0.0, out)
        bad = (a < 0) | (x < 0) | ((a == 0) & (x == 0)) | xp.isnan(a) | xp.isnan(x) | \
            ((a == np.inf) & (x == np.inf))
        return xp.where(bad, np.nan, out)


# -- ops ------------------------------------------------------------------------------------
class _Kernel(Function):
    """``kernel(a)`` in float64, rounded once to the input's dtype; a float32 NumPy input
    takes the float32 kernel of kernels/_math32.py named by ``kernel32(params)`` where there
    is one (its stated bound there)."""

    @staticmethod
    def kernel32(params):
        return None

    @classmethod
    def forward(cls, ctx, a, *params):
        ctx.params = params
        ctx.save_for_backward(a)
        name = cls.kernel32(params)
        if name is not None and type(a._data) is np.ndarray and a._data.dtype == np.float32:
            return float32_math(name, a._data)
        out = cls.kernel(a._data.astype(np.float64), *params)
        with quiet():  # values beyond a low-precision dtype's range round to inf, quietly
            return out.astype(a._data.dtype, copy=False)


class Lgamma(_Kernel):
    kernel = staticmethod(lgamma_kernel)

    @staticmethod
    def kernel32(params):
        return "lgamma32"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * Polygamma.apply(a, 0)


class Polygamma(_Kernel):
    kernel = staticmethod(lambda x, n: polygamma_kernel(n, x))

    @staticmethod
    def kernel32(params):
        return "digamma32" if params[0] == 0 else None

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * Polygamma.apply(a, ctx.params[0] + 1), None


class Bessel(_Kernel):
    """I0 and I1; d I0 = I1 and d I1 = I0 - I1 / x (1/2 at x = 0)."""

    kernel = staticmethod(bessel_kernel)

    @staticmethod
    def kernel32(params):
        return "i0_32" if params[0] == 0 else None

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        if ctx.params[0] == 0:
            return g * Bessel.apply(a, 1), None
        zero = a == 0
        safe = a.masked_fill(zero, 1.0)
        return g * (Bessel.apply(a, 0) - Bessel.apply(safe, 1) / safe).masked_fill(
            zero, 0.5), None


class Sinc(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        with quiet():
            return _xp(a._data).sinc(a._data)

    @staticmethod
    def backward(ctx, g):
        # d/dx sin(pi x)/(pi x) = (cos(pi x) - sinc(x)) / x; at x = 0 its Taylor term
        # -pi^2 x / 3, so that the second derivative there is right too. x is made safe before
        # dividing so that the masked branch stays finite under double backward.
        (a,) = ctx.saved_tensors
        zero = a == 0
        safe = a.masked_fill(zero, 1.0)
        d = ((safe * math.pi).cos() - Sinc.apply(safe)) / safe
        return g * where(zero, a * (-math.pi ** 2 / 3), d).conj()


def _mvlgamma_block(out, x, p, const):
    """mvlgamma32's arithmetic on NumPy blocks: lgamma32 of each shift, added in float64."""
    acc = np.zeros(x.shape)
    with np.errstate(all="ignore"):  # per block: pool threads have their own errstate
        for j in range(p):
            acc += _math32.lgamma32(x - np.float32(j) * np.float32(0.5))
    out[...] = acc + const


class Mvlgamma(Function):
    """The multivariate log-gamma of float32 NumPy input in one pass (float32 only; the
    wrapper composes the others from Lgamma): ``sum_j lgamma32(x - j/2)`` added in float64,
    the constant last, rounded once (numba's ``mvlgamma32`` split over the pool, or the same
    arithmetic on NumPy blocks: the same bits). Each term is within lgamma32's bound, the sum
    rounds once. d/dx = sum_j digamma(x - j/2)."""

    _kernels = {"forward": (kernels.jit("mvlgamma32", ("float32",), lambda: (
        np.empty(1, np.float32), np.ones(1, np.float32), 1, 0.0)),)}

    @staticmethod
    def forward(ctx, x, p):
        ctx.p = p
        ctx.save_for_backward(x)
        data = np.require(x._data, requirements="C")  # keeps 0-d
        const = p * (p - 1) / 4 * math.log(math.pi)
        out = np.empty(data.shape, np.float32)
        fused = kernel(Mvlgamma, "forward", x.device, x._dtype)
        if fused is None:
            return _threads.blockwise(lambda o, v: _mvlgamma_block(o, v, p, const), out, data)
        return _threads.elementwise(
            lambda o, v: fused(o.reshape(-1), v.reshape(-1), p, const), out, data)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        shifts = arange(ctx.p, dtype=x.dtype, device=x.device) / 2
        return g * Polygamma.apply(x.unsqueeze(-1) - shifts, 0).sum(-1), None


# float32 results: each element stops once its next term is below 2^-33 of its sum (1/1000 of
# a float32 ulp; the neglected tail is at most a few such terms), about half the terms of
# float64's 1e-17
IGAMMA_TOL32 = 2.0 ** -33


class Igamma(Function):
    """P(a, x) (``upper=False``) or Q(a, x); differentiable in x only, as in PyTorch. On the
    CPU numba's series and continued fraction (``igamma_lanes64`` of kernels/_jit_13spec.py,
    the ``jit`` extra) stop each element when it has converged, 32 elements of a kind in
    vectorised lanes, where the NumPy kernel iterates the whole array until its slowest
    element has (7x torch's time at 1M elements); both add the same terms."""

    _kernels = {"forward": (kernels.jit("igamma_lanes64", ("float32", "float64"), lambda: (
        np.empty(1), np.ones(1), np.ones(1), False, 1e-17)),)}

    @staticmethod
    def forward(ctx, a, x, upper):
        ctx.upper = upper
        ctx.save_for_backward(a, x)
        tol = IGAMMA_TOL32 if x._data.dtype.itemsize <= 4 else 1e-17
        av, xv = (t._data.astype(np.float64) for t in (a, x))
        fused = kernel(Igamma, "forward", a.device, x._dtype)
        if fused is None:
            out = igamma_kernel(av, xv, upper, tol)
        else:  # one pass over contiguous copies, split over the pool
            av, xv = (np.require(v, requirements="C") for v in np.broadcast_arrays(av, xv))
            out = _threads.elementwise(lambda o, p, q: fused(
                o.reshape(-1), p.reshape(-1), q.reshape(-1), upper, tol),
                np.empty(av.shape), av, xv)
        return out.astype(x._data.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            name = "igammac" if ctx.upper else "igamma"
            raise NotImplementedError(f"{name}: the derivative with respect to 'input' (the "
                                      "shape parameter a) is not implemented, as in PyTorch")
        # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a)
        density = exp((a - 1) * log(x) - x - Lgamma.apply(a))
        return None, (-g if ctx.upper else g) * density, None


# -- wrappers -------------------------------------------------------------------------------
def _real(input, op):
    """A real floating tensor (ints and bools go to the default float dtype)."""
    check_tensor(input, op)
    if input._dtype.is_complex:
        raise RuntimeError(f"{op}(): not implemented for complex tensors (got "
                           f"{input._dtype.name})")
    if input._dtype.category < 2:
        return input.to(dt.get_default_dtype())
    return input


def lgamma(input) -> Tensor:
    """``log|Gamma(input)|`` elementwise (inf at 0 and the negative integers).

    Example: ``tensorix.lgamma(tensorix.tensor([0.5, 3.0]))`` is ``[0.5724, 0.6931]``.
    """
    return Lgamma.apply(_real(input, "lgamma"))


def digamma(input) -> Tensor:
    """``psi(x) = d/dx log Gamma(x)`` elementwise; ``-inf`` at ``+0`` (``inf`` at ``-0``),
    nan at the negative integers, as in PyTorch.

    Example: ``tensorix.digamma(tensorix.tensor([1.0]))`` is ``[-0.5772]`` (minus Euler's
    constant).
    """
    return Polygamma.apply(_real(input, "digamma"), 0)


def polygamma(n, input) -> Tensor:
    """The ``n``-th derivative of :func:`digamma` (``n >= 0``; ``n = 0`` is digamma).

    Example: ``tensorix.polygamma(1, tensorix.tensor([1.0]))`` is ``[1.6449]`` (pi^2 / 6).
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' must be an int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(): polygamma(n, x) does not support negative n.")
    return Polygamma.apply(_real(input, "polygamma"), int(n))


def mvlgamma(input, p) -> Tensor:
    """The multivariate log-gamma of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_{j < p} lgamma(input - j / 2)``, elementwise; every element
    must exceed ``(p - 1) / 2``. float32 CPU input sums the lgammas in float64 in one pass.

    Example: ``tensorix.mvlgamma(tensorix.tensor([2.5]), 2)``.
    """
    x = _real(input, "mvlgamma")
    if not isinstance(p, (int, np.integer)) or isinstance(p, bool):
        raise TypeError(f"mvlgamma(): argument 'p' must be an int, not {type(p).__name__}")
    if p < 1:
        raise RuntimeError("mvlgamma(): p has to be greater than or equal to 1")
    if not bool((x._data > (p - 1) / 2).all()):
        raise RuntimeError(f"mvlgamma(): All elements must be greater than (p-1)/2 = "
                           f"{(p - 1) / 2}")
    if type(x._data) is np.ndarray and x._data.dtype == np.float32:
        return Mvlgamma.apply(x, int(p))
    shifts = arange(p, dtype=x.dtype, device=x.device) / 2
    return Lgamma.apply(x.unsqueeze(-1) - shifts).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


def i0(input) -> Tensor:
    """The modified Bessel function of the first kind of order zero, elementwise.

    Example: ``tensorix.i0(tensorix.tensor([0.0, 1.0]))`` is ``[1.0000, 1.2661]``.
    """
    return Bessel.apply(_real(input, "i0"), 0)


def sinc(input) -> Tensor:
    """The normalised sinc ``sin(pi x) / (pi x)``, 1 at 0 (real or complex).

    Example: ``tensorix.sinc(tensorix.tensor([0.0, 0.5]))`` is ``[1.0000, 0.6366]``.
    """
    check_tensor(input, "sinc")
    if input._dtype.category < 2:
        input = input.to(dt.get_default_dtype())
    return Sinc.apply(input)


def _igamma(input, other, upper, op):
    a, x = promote(input, other, op)
    if a._dtype.is_complex:
        raise RuntimeError(f"{op}(): not implemented for complex tensors")
    if a._dtype.category < 2:
        a, x = a.to(dt.get_default_dtype()), x.to(dt.get_default_dtype())
    return Igamma.apply(a, x, upper)


def igamma(input, other) -> Tensor:
    """The regularised lower incomplete gamma ``P(a, x)`` with ``a = input`` and
    ``x = other`` (broadcast); differentiable in ``other`` only, as in PyTorch.

    Example: ``tensorix.igamma(tensorix.tensor([1.0]), tensorix.tensor([2.0]))`` is
    ``1 - exp(-2)``.
    """
    return _igamma(input, other, False, "igamma")


def igammac(input, other) -> Tensor:
    """The regularised upper incomplete gamma ``Q(a, x) = 1 - P(a, x)`` (see :func:`igamma`).

    Example: ``tensorix.igammac(tensorix.tensor([1.0]), tensorix.tensor([2.0]))`` is
    ``exp(-2)``.
    """
    return _igamma(input, other, True, "igammac")


def _methods():
    from .inplace import make

    m = {"lgamma": lgamma, "digamma": digamma, "i0": i0, "sinc": sinc, "igamma": igamma,
         "igammac": igammac, "mvlgamma": lambda self, p: mvlgamma(self, p),
         "polygamma": lambda self, n: polygamma(n, self)}
    for name in ("lgamma", "digamma", "i0", "sinc", "igamma", "igammac"):
        m[name + "_"] = make(globals()[name])
    m["mvlgamma_"] = make(lambda self, p: mvlgamma(self, p), "mvlgamma_")
    m["polygamma_"] = make(lambda self, n: polygamma(n, self), "polygamma_")
    return m


TENSOR_METHODS = _methods()
