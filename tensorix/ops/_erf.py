"""The erf family's numerical kernels on float64 ``xp`` arrays: erf, erfc and erfinv.

NumPy has no erf and scipy is not a dependency, so these are vectorised xp formulas,
evaluated in float64 (the ops in ``unary.py`` cast to and from the input's dtype):

* |x| < 1:  erf(x) = x * P(x^2), the Maclaurin series cut after the x^37 term (< 1e-17);
* |x| >= 1: erfc(x) = exp(-x^2) / x * G(1/x), where G(s) = x e^{x^2} erfc(x) is smooth on
  s in [0, 1] (G(0) = 1/sqrt(pi)); G is a Chebyshev series on s in [1/2, 1] and on [0, 1/2],
  interpolating at 17 and 25 Chebyshev nodes (values from mpmath at 40 digits). exp(-x^2)
  splits x = hi + lo so that hi^2 is exact.

Measured max relative error against mpmath over [-27, 27]: erf 2.7e-16, erfc 1.1e-15.

float32 inputs of erf take ``erf_float32`` instead: Eigen's rational
approximation ``x P(x^2) / Q(x^2)`` on x clipped to [-4, 4] (degrees 13/8; the approximation
itself is within 6.5e-8 of erf), ``kernels/_math32.erf32``: one float32 pass (numba's, or
NumPy blocks with the same bits) split over the library's threads. Measured against the float64
kernel above on a dense sweep (every 97th float32 and 2^23 points of [-6, 6]): at most 7.7 ulp
(4.6e-7 absolute), never beyond +-1. float32 erfc is ``_math32.erfc32``, e^(-x^2) times a
degree 4 / 5 rational for erfcx (one pass, relative accuracy into the tail): at most 8 ulp.

float32 inputs of erfinv take ``erfinv_float32``: Giles' single-precision approximation
("Approximating the erfinv function", GPU Computing Gems, 2011), two degree-8 polynomials in
w = -log((1 - x)(1 + x)), all in float32: at most 3.7 ulp from the float64 kernel (measured on
every 97th float32 in (-1, 1) and 2^20 evenly spaced points), median 1.2.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _threads, backend
from ..backend import quiet
from ..kernels import _math32, float32_math

__all__ = ["erf_kernel", "erfc_kernel", "erfinv_kernel", "erf_float32", "ERF_FLOAT32_ULP",
           "erf32_block", "erfc_float32",
           "ERFC_FLOAT32_ULP", "erfinv_float32", "ERFINV_FLOAT32_ULP"]

_ERF_TAYLOR = tuple(2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1))
                    for n in range(19))
_ERFC_NEAR = (  # G(s) on s in [1/2, 1]  (x in [1, 2])
    0.4687089566349605, -0.041775068132475786, 0.0005040623963318858, 0.00016888702949542888,
    -2.5430051898348638e-05, 2.2949329159500325e-06, -1.2625248725454873e-07,
    -1.7887685298692902e-09, 1.6302900358124004e-09, -2.711525028381087e-10,
    3.109328807362968e-11, -2.6267244662324987e-12, 1.2274102870604831e-13,
    9.323059238415789e-15, -3.492427680395947e-15, 5.907283643597853e-16,
    -7.445774943261804e-17)
_ERFC_FAR = (  # G(s) on s in [0, 1/2]  (x >= 2)
    0.5427416308736758, -0.027456541627010337, -0.005256099448393948, 0.0007739396325011416,
    2.609208681438293e-06, -1.6601192411763388e-05, 2.4179794695158714e-06,
    7.310761646419786e-08, -9.093948871152924e-08, 1.5307873043283198e-08,
    2.670644802933083e-10, -6.890191671935908e-10, 1.496313147942708e-10,
    -4.7255357030400156e-12, -6.096261568026238e-12, 1.8588028922877377e-12,
    -1.849823660281097e-13, -5.0778550783670915e-14, 2.5476271426565075e-14,
    -4.61719601249863e-15, -1.461126150233593e-16, 3.3865723959989263e-16,
    -9.962442772932346e-17, 1.0153604345317473e-17, 3.018927296528285e-18)
_ERFC_MAX_X = 30.0  # erfc underflows to 0 beyond ~27.3


def _chebyshev(coeffs, t):
    """Clenshaw's recurrence for sum c_k T_k(t)."""
    t2 = 2 * t
    b1 = b2 = 0.0
    for c in coeffs[:0:-1]:
        b1, b2 = t2 * b1 - b2 + c, b1
    return t * b1 - b2 + coeffs[0]


def _exp_neg_sq(x):
    """exp(-x*x) without the rounding error of x*x: hi has 24 bits, so hi*hi is exact."""
    xp = _xp_of(x)
    hi = x.astype(np.float32).astype(np.float64)
    return xp.exp(-hi * hi) * xp.exp(-(x - hi) * (x + hi))


def _xp_of(arr):
    return backend.array_module(arr)


def _erf_small(x):
    """erf for |x| < 1 (Horner on the Maclaurin series in x^2)."""
    t = x * x
    p = _ERF_TAYLOR[-1]
    for c in _ERF_TAYLOR[-2::-1]:
        p = p * t + c
    return x * p


def _erfc_large(ax):
    """erfc for ax >= 1 (or nan); each element takes one of the two Chebyshev series."""
    xp = _xp_of(ax)
    ax = xp.minimum(ax, _ERFC_MAX_X)
    s = 1 / ax
    near = s > 0.5
    if xp is not np:  # a GPU: both series everywhere and a select (no mask syncs)
        g = xp.where(near, _chebyshev(_ERFC_NEAR, 4 * s - 3), _chebyshev(_ERFC_FAR, 4 * s - 1))
        return _exp_neg_sq(ax) * g * s
    g = xp.empty_like(s)
    g[near] = _chebyshev(_ERFC_NEAR, 4 * s[near] - 3)
    far = ~near
    g[far] = _chebyshev(_ERFC_FAR, 4 * s[far] - 1)
    return _exp_neg_sq(ax) * g * s


def erfc_float32(x):
    """erfc on a float32 NumPy array, within ``ERFC_FLOAT32_ULP`` ulp down to where erfc leaves
    the normal range (x ~ 9.2): ``kernels/_math32.erfc32``, e^(-x^2) erfcx(|x|) with erfcx a
    degree 4 / 5 rational, one pass (numba's, or NumPy blocks with the same bits).

    Example: ``erfc_float32(np.array([5.0], np.float32))`` is ``array([1.5375e-12],
    float32)``.
    """
    if type(x) is not np.ndarray:  # a GPU array: the float64 kernel
        return erfc_kernel(x.astype(np.float64)).astype(np.float32)
    return float32_math("erfc32", x)


def _by_size(x, small_fn, large_fn):
    """Evaluate ``small_fn`` where |x| < 1 and ``large_fn(x, |x|)`` elsewhere (nan included),
    each only on its own elements on the CPU. On a GPU boolean-mask indexing costs a device
    sync per mask (the count of selected elements), so there both run on every element and
    a select keeps the right one (their values off their range are finite or discarded)."""
    xp = _xp_of(x)
    ax = xp.abs(x)
    small = ax < 1
    if xp is not np:
        return xp.where(small, small_fn(x), large_fn(x, ax))
    out = xp.empty_like(x)
    large = ~small
    out[small] = small_fn(x[small])
    out[large] = large_fn(x[large], ax[large])
    return out


def _flat(kernel):
    """Run a kernel on 1-D data (NumPy turns 0-d results into scalars, which the masked
    assignments below cannot write into) and restore the shape."""
    def run(x):
        return kernel(x.reshape(-1)).reshape(x.shape)

    run.__name__, run.__doc__ = kernel.__name__, kernel.__doc__
    return run


@_flat
def erf_kernel(x):
    """erf on a float64 xp array."""
    xp = _xp_of(x)
    with quiet():
        return _by_size(x, _erf_small, lambda v, av: xp.copysign(1 - _erfc_large(av), v))


@_flat
def erfc_kernel(x):
    """erfc on a float64 xp array (accurate in the far tail, unlike 1 - erf)."""
    xp = _xp_of(x)

    def large(v, av):
        tail = _erfc_large(av)
        return xp.where(v > 0, tail, 2 - tail)

    with quiet():
        return _by_size(x, lambda v: 1 - _erf_small(v), large)


def _halley(x, residual, sign, steps=3):
    """Refine x for erf-like f with f'(x) = sign * 2/sqrt(pi) * exp(-x^2), f'' = -2x f'."""
    xp = _xp_of(x)
    for _ in range(steps):
        d = residual(x) / (sign * (2 / math.sqrt(math.pi)) * _exp_neg_sq(
            xp.minimum(x, _ERFC_MAX_X)))
        x = x - d / (1 + x * d)
    return x


@_flat
def erfinv_kernel(y):
    """erfinv on a float64 xp array: Winitzki's closed form (relative error < 2e-3) refined
    by three Halley steps. For |y| <= 1/2 (so |x| < 0.48) the steps solve erf(x) = |y| with
    the series alone; for |y| > 1/2 they solve erfc(x) = 1 - |y| (exact by Sterbenz), so the
    tail keeps full relative accuracy. Measured max relative error against mpmath: 3.7e-16."""
    xp = _xp_of(y)
    with quiet():
        ay = xp.abs(y)
        a = 0.147
        lg = xp.log1p(-ay * ay)
        u = 2 / (math.pi * a) + lg / 2
        x = xp.sqrt(xp.sqrt(u * u - lg / a) - u)
        center = ay <= 0.5
        tail = (ay > 0.5) & (ay < 1)
        if xp is not np:  # a GPU: both refinements everywhere and a select (no mask syncs)
            xc = _halley(x, lambda v: _erf_small(v) - ay, 1.0)
            xt = _halley(x, lambda v: erfc_kernel(v) - (1 - ay), -1.0)
            x = xp.where(center, xc, xp.where(tail, xt, x))
        else:
            yc, qt = ay[center], 1 - ay[tail]
            x[center] = _halley(x[center], lambda v: _erf_small(v) - yc, 1.0)
            x[tail] = _halley(x[tail], lambda v: erfc_kernel(v) - qt, -1.0)
        x = xp.where(ay == 1, np.inf, xp.where(ay > 1, np.nan, x))
        return xp.copysign(x, y)


# -- float32 erf (Eigen's generic_fast_erf_float coefficients, kernels/_math32.erf32) --------
# the stated bounds (measured 7.7 and 7.4 ulp; tests/test_erf_float32.py)
ERF_FLOAT32_ULP = _math32.ULP["erf32"]
ERFC_FLOAT32_ULP = _math32.ULP["erfc32"]
_ERF32_P, _ERF32_Q = _math32._ERF_P, _math32._ERF_Q  # one source (compile's codegen reads them)


def _horner(x2, coeffs):
    p = x2 * coeffs[0]
    p += coeffs[1]
    for c in coeffs[2:]:
        p *= x2
        p += c
    return p


def erf32_block(out, x):
    """``out = erf(x)`` on float32 ``xp`` arrays of one shape, ``_math32.erf32``'s operations
    in place where they can be (the GPU's form: CuPy runs no _math32 body)."""
    xp = _xp_of(x)
    xp.clip(x, np.float32(-4), np.float32(4), out=out)  # erf(+-4) is +-1 in float32
    x2 = out * out
    p = _horner(x2, _ERF32_P)
    p /= _horner(x2, _ERF32_Q)
    out *= p  # x * (P / Q): one rounding at subnormal x, where x * P would lose bits
    xp.clip(out, np.float32(-1), np.float32(1), out=out)  # rounding may reach 1 + 1 ulp


def erf_float32(x):
    """erf on a float32 ``xp`` array, within ``ERF_FLOAT32_ULP`` ulp; NaN stays NaN. On the CPU
    ``kernels/_math32.erf32`` in one pass (numba's, or NumPy blocks with the same bits).

    Example: ``erf_float32(np.array([0.5], np.float32))`` is ``array([0.5205], float32)``.
    """
    if type(x) is not np.ndarray:  # a GPU array: one pass of whole-array kernels
        out = _xp_of(x).empty(x.shape, dtype=np.float32)
        erf32_block(out, x)
        return out
    return float32_math("erf32", x)


# -- float32 erfinv (Giles 2011) ----------------------------------------------------------
ERFINV_FLOAT32_ULP = 4  # the stated bound (measured 3.7 ulp; tests/test_erf_float32.py)
_ERFINV32_CENTER = tuple(np.float32(c) for c in (  # in w - 2.5, for w < 5
    2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
    -0.00125372503, -0.00417768164, 0.246640727, 1.50140941))
_ERFINV32_TAIL = tuple(np.float32(c) for c in (  # in sqrt(w) - 3, for w >= 5
    -0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
    -0.0076224613, 0.00943887047, 1.00167406, 2.83297682))
# |x| above which w >= 5 may hold (w = 5 at |x| = 0.99662); the tail fix-up rechecks w
_ERFINV32_SPLIT = np.float32(0.9966)


def _erfinv32_w(x):
    """w = -log((1 - x)(1 + x)) in float32 (1 - x is exact for |x| >= 1/2, Sterbenz)."""
    w = np.float32(1) - x
    w *= np.float32(1) + x
    np.log(w, out=w)
    np.negative(w, out=w)
    return w


def _erfinv32_block(out, x):
    """out = x * P(w - 2.5): the central branch, right for every |x| < 0.9966."""
    w = _erfinv32_w(x)
    w -= np.float32(2.5)
    np.multiply(_horner(w, _ERFINV32_CENTER), x, out=out)


def _erfinv32_tail(out, x):
    """The elements with w >= 5 (or nan, or |x| >= 1), once per thread's part."""
    tail = np.flatnonzero(~(np.abs(x) < _ERFINV32_SPLIT))
    if not tail.size:
        return
    v = x[tail]
    w = _erfinv32_w(v)
    far = ~(w < np.float32(5))
    tail, v, w = tail[far], v[far], w[far]
    p = _horner(np.sqrt(w) - np.float32(3), _ERFINV32_TAIL) * v
    av = np.abs(v)
    # +-1 give +-inf (w is inf there), beyond is nan (the log of a negative number)
    out[tail] = np.where(av == 1, np.copysign(np.float32(np.inf), v),
                         np.where(av > 1, np.float32(np.nan), p))


def erfinv_float32(x):
    """erfinv on a float32 ``xp`` array, within ``ERFINV_FLOAT32_ULP`` ulp of the exact value;
    +-inf at +-1, nan beyond and at nan.

    Example: ``erfinv_float32(np.array([0.5], np.float32))`` is ``array([0.4769], float32)``.
    """
    if type(x) is not np.ndarray:  # a GPU array: the float64 kernel (no masked tail there)
        return erfinv_kernel(x.astype(np.float64)).astype(np.float32)
    with quiet():
        return _threads.blockwise(_erfinv32_block, np.empty(x.shape, np.float32), x,
                                  finish=_erfinv32_tail)
