"""float32 math written once, run two ways: exp, log, expm1, log1p, sinh, cosh, atanh,
softplus, lgamma, digamma, i0, tan, atan2, erf, erfc, exact GELU and silu with their
backwards, and logcumsumexp's scan.

NumPy's float32 ``expm1``, ``log1p``, ``sinh``, ``cosh`` and ``arctanh`` call the C library
once per element (5-9x torch's vectorised kernels). Each function here is Cephes' float32
algorithm (range reduction, then a short polynomial) written with float32 arithmetic, bit
casts and selects only, so that the same source runs

* on NumPy float32 arrays, as written (the fallback; ``_threads.blockwise`` runs it in
  cache-sized blocks split over the pool), and
* element by element under numba (the ``jit`` extra): ``_cpu_jit.py`` recompiles these
  functions with the scalar forms of the four helpers below, and LLVM vectorises the loop.

Both run the same float32 operations in the same order (numba contracts no multiply-add
without fastmath; fused ones are written ``_fma``, exact on NumPy too), so they give the same
bits; tests/test_math32.py checks that and each function's ulp bound (``ULP``) on a sweep.

Rules for the bodies: every constant a module-level ``np.float32`` or a small int; no
``if`` (both sides are computed, ``_sel`` keeps one); bit casts only through ``_bits`` and
``_float``; NaN inputs are swapped for 0 early and restored at the end (a float to int
conversion of NaN is undefined in LLVM).
"""

from __future__ import annotations

import numpy as np

from ._fma32 import fma32 as _fma  # a * b + c rounded once (numba: the CPU's fma)

__all__ = ["KERNELS", "BODIES", "ULP", "GAMMA_BOUNDS", "exp32", "log32", "expm1_32",
           "log1p32", "sinh32", "cosh32", "atanh32", "softplus32", "lgamma32", "digamma32",
           "i0_32", "gelu32", "gelu_grad32", "GRAD_KERNELS", "GELU_GRAD_ULP", "silu32",
           "silu_grad32", "SILU_ULP", "SILU_GRAD_ULP", "tan32", "TAN_LIMIT", "atan2_32",
           "BINARY", "ATAN2_ULP", "erf32", "erfc32", "logaddexp32", "logaddexp2_32"]


# -- the helpers, NumPy forms (``_cpu_jit.py`` supplies the scalar ones) ----------------------
def _sel(c, a, b):
    return np.where(c, a, b)


def _bits(x):
    """float32 -> int32 with the same bits."""
    return x.view(np.int32)


def _float(i):
    """int32 (or wider, in range) -> float32 with the same bits."""
    return i.astype(np.int32, copy=False).view(np.float32)


def _tofloat(i):
    """An integer's value as float32 (exact: |i| < 2^24 here)."""
    return i.astype(np.float32)


def _sqrt(x):
    return np.sqrt(x)  # correctly rounded, as LLVM's sqrt: the same bits


def _wide(x):
    """float32 -> float64 (exact)."""
    return x.astype(np.float64)


def _narrow(x):
    """float64 -> float32, rounded to nearest."""
    return x.astype(np.float32)


_F = np.float32
_ZERO, _HALF, _ONE, _F23 = _F(0), _F(0.5), _F(1), _F(23)
_INF, _NAN = _F(np.inf), _F(np.nan)
_ROUND = _F(12582912.0)  # 1.5 * 2^23: (v + R) - R rounds |v| < 2^22 to the nearest integer
_LOG2E = _F(1.44269504088896341)
_LN2_HI, _LN2_LO = _F(0.693359375), _F(-2.12194440e-4)  # ln 2 = HI + LO, HI of 9 bits
# exp overflows above HI and underflows to 0 below LO; below -87.3 (n < -125) the scale
# 2^(n-1) has no normal bits, so it is built as 2^(n+31) and the product scaled by 2^-32
_EXP_HI, _EXP_LO = _F(88.72283935546875), _F(-104.0)
_SUBNORMAL_N, _N_SHIFT, _TWO_M32 = _F(-125.0), _F(32.0), _F(2.0 ** -32)
_EXP_P = tuple(_F(c) for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                               4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1))
_SQRT_HALF, _SQRT_TWO = _F(0.70710678118654752440), _F(1.41421356237309504880)
_LOG_P = tuple(_F(c) for c in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1,
                               -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
                               2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1))
_TINY = _F(1.17549435e-38)  # the smallest normal float32
_TWO23 = _F(8388608.0)
# expm1 on |x| < 1/2: the Taylor series' x^2 .. x^9 coefficients 1/2!, ..., 1/9!, Horner
_EXPM1_T = tuple(_F(c) for c in (1 / 362880, 1 / 40320, 1 / 5040, 1 / 720, 1 / 120, 1 / 24,
                                 1 / 6, 1 / 2))
_BIG = _F(88.0)  # sinh/cosh beyond: e^|x| / 2 = e^(|x| - 88) * e^88 / 2, which is finite
_HALF_E88 = _F(0.5 * np.exp(88.0))
_LN2 = _F(np.log(2.0))


def _poly(x, c):
    p = x * c[0] + c[1]
    for k in c[2:]:
        p = p * x + k
    return p


def _polyf(x, c):
    """_poly with each step fused (one rounding, and half the instructions)."""
    p = _fma(x, c[0], c[1])
    for k in c[2:]:
        p = _fma(p, x, k)
    return p


def exp32(x):
    """e^x: x = n ln2 + r (|r| <= ln2/2), e^r = 1 + r + r^2 P(r), times 2^n built from bits
    (as 2 e^r 2^(n-1), so that n = 128 at the top still has a normal scale). Within 1 ulp
    (``ULP``) of e^x, subnormal results included; inf above 88.72, 0 below -104."""
    ok = x == x
    v = _sel(ok, x, _ZERO)
    v = _sel(v > _EXP_HI, _EXP_HI, v)
    v = _sel(v < _EXP_LO, _EXP_LO, v)
    n = (v * _LOG2E + _ROUND) - _ROUND
    r = v - n * _LN2_HI
    r = r - n * _LN2_LO
    y = _exp_scale(n, _poly(r, _EXP_P) * (r * r) + r + _ONE)
    y = _sel(x > _EXP_HI, _INF, y)
    y = _sel(x < _EXP_LO, _ZERO, y)
    return _sel(ok, y, x)


def _exp_fused(n, r):
    """e^(n ln2 + r), integer-valued n in [-152, 128], |r| <= ln2/2: exp32's polynomial fused."""
    return _exp_scale(n, _fma(_polyf(r, _EXP_P), r * r, r) + _ONE)


def _exp_neg(v):
    """e^v for v <= 0 (or nan): exp32 without its overflow side, its steps fused."""
    w = _sel(v >= _EXP_LO, v, _EXP_LO)  # nan too (restored at the end)
    n = _fma(w, _LOG2E, _ROUND) - _ROUND
    y = _exp_fused(n, _fma(-n, _LN2_LO, _fma(-n, _LN2_HI, w)))
    y = _sel(v < _EXP_LO, _ZERO, y)
    return _sel(v == v, y, v)


def _exp_scale(n, p):
    """p 2^n for e^r's polynomial p: 2^n built from bits, as 2 p 2^(n-1) (exp32's last steps)."""
    low = n < _SUBNORMAL_N
    n = _sel(low, n + _N_SHIFT, n)
    y = (p + p) * _float((_bits(n + _ROUND) - _bits(_ROUND) + 126) << 23)
    return _sel(low, y * _TWO_M32, y)


def _log_core(f, e):
    """log(1 + f) + e ln2 for f in [sqrt(1/2) - 1, sqrt(2) - 1] (Cephes' logf polynomial)."""
    z = f * f
    y = f * z * _poly(f, _LOG_P)
    y = y + e * _LN2_LO
    y = y - z * _HALF
    r = f + y
    return r + e * _LN2_HI


def _split(u):
    """(f, e) with u = (1 + f) 2^e, 1 + f in [sqrt(1/2), sqrt(2)), for positive finite u."""
    sub = u < _TINY
    u = _sel(sub, u * _TWO23, u)
    i = _bits(u)
    m = _float((i & 0x007FFFFF) | 0x3F000000)  # the mantissa in [1/2, 1)
    e = _tofloat((i >> 23) - 126) - _sel(sub, _F23, _ZERO)
    low = m < _SQRT_HALF
    m = _sel(low, m + m, m)
    e = _sel(low, e - _ONE, e)
    return m - _ONE, e


def _log_special(x, y):
    """log's values off (0, inf): -inf at 0, nan below 0 and at nan, inf at inf."""
    y = _sel(x == _ZERO, -_INF, y)
    y = _sel(x < _ZERO, _NAN, y)
    y = _sel(x == _INF, _INF, y)
    return _sel(x == x, y, x)


def log32(x):
    """log(x) within 1 ulp (``ULP``), subnormal inputs included."""
    u = _sel((x > _ZERO) & (x < _INF), x, _ONE)
    f, e = _split(u)
    return _log_special(x, _log_core(f, e))


def log1p32(x):
    """log(1 + x): the polynomial on x itself where 1 + x is in [sqrt(1/2), sqrt(2)); else
    log(u) for u = 1 + x, plus the rounding of u corrected to first order, (x - (u - 1)) / u."""
    u = x + _ONE
    uu = _sel((u > _ZERO) & (u < _INF), u, _ONE)
    f, e = _split(uu)
    near = (u >= _SQRT_HALF) & (u < _SQRT_TWO)
    c = (x - (uu - _ONE)) / uu
    f = _sel(near, x, f)
    e = _sel(near, _ZERO, e)
    c = _sel(near, _ZERO, c)
    y = _log_core(f, e) + c
    # off (0, inf) uu = 1, so y = c = x: already inf at inf and NaN (x's) at NaN; only u = 0
    # and u < 0 need selects (not _log_special's four: with two more constants live, numba's
    # loop ran 3x slower; the same bits, checked on all 2^32 inputs)
    y = _sel(u == _ZERO, -_INF, y)
    y = _sel(u < _ZERO, _NAN, y)
    return _sel(x == _ZERO, x, y)  # -0 stays -0


def expm1_32(x):
    """e^x - 1: the Taylor series to x^9 on |x| < 1/2, else exp32(x) - 1 (no cancellation
    beyond one ulp there: |e^x - 1| >= 0.39)."""
    small = (x < _HALF) & (x > -_HALF)
    t = _sel(small, x, _ZERO)
    s = t + t * t * _poly(t, _EXPM1_T)
    s = _sel(small, s, exp32(x) - _ONE)
    return _sel(x == _ZERO, x, s)  # -0 stays -0


def _exp_parts(ax):
    """(E, big): E = e^y - 1 for y = |x|, or y = |x| - 88 where |x| > 88 (``big``)."""
    big = ax > _BIG
    return expm1_32(_sel(big, ax - _BIG, ax)), big


def sinh32(x):
    """sinh(x) = (E + E / (E + 1)) / 2 for E = e^|x| - 1 (no cancellation at small x), with
    the sign of x; e^|x| / 2 as e^(|x| - 88) e^88 / 2 where e^|x| alone would overflow."""
    ax = _sel(x < _ZERO, -x, x)
    em, big = _exp_parts(ax)
    y = _sel(big, (em + _ONE) * _HALF_E88, (em + em / (em + _ONE)) * _HALF)
    y = _sel(x < _ZERO, -y, y)
    return _sel(x == _ZERO, x, y)


def cosh32(x):
    """cosh(x) = (e + 1 / e) / 2 for e = e^|x|, as in sinh32 beyond |x| = 88."""
    ax = _sel(x < _ZERO, -x, x)
    em, big = _exp_parts(ax)
    e = em + _ONE
    return _sel(big, e * _HALF_E88, (e + _ONE / e) * _HALF)


def atanh32(x):
    """atanh(x) = sign(x) log1p(2|x| / (1 - |x|)) / 2: inf at +-1, nan beyond."""
    ax = _sel(x < _ZERO, -x, x)
    y = log1p32((ax + ax) / (_ONE - ax)) * _HALF
    y = _sel(ax > _ONE, _NAN, y)
    y = _sel(x < _ZERO, -y, y)
    return _sel(x == _ZERO, x, y)


def softplus32(x):
    """log(1 + e^x) = max(x, 0) + log1p(e^-|x|), without overflow."""
    ax = _sel(x < _ZERO, -x, x)
    return _sel(x > _ZERO, x, _ZERO) + log1p32(exp32(-ax))


# -- the gamma family ------------------------------------------------------------------------
_PI, _LOG_PI = _F(np.pi), _F(np.log(np.pi))
_TWO_60, _TWO_M60 = _F(2.0 ** 60), _F(2.0 ** -60)
_LOG_PI_M60 = _F(np.log(np.pi) - 60 * np.log(2.0))
_HALF_LOG_2PI = _F(0.5 * np.log(2 * np.pi))
_TWO, _EIGHT, _TEN = _F(2), _F(8), _F(10)
# sin(pi t) / t and cos(pi t) on |t| <= 1/2: Taylor series in t^2 (error below 1e-9)
_SINPI = tuple(_F((-1) ** k * np.pi ** (2 * k + 1) / np.prod(np.arange(1, 2 * k + 2.0)))
               for k in range(7, -1, -1))
_COSPI = tuple(_F((-1) ** k * np.pi ** (2 * k) / np.prod(np.arange(1, 2 * k + 1.0)))
               for k in range(7, -1, -1))
# lgamma(2 + t) / t on t in [0, 1]: a degree-8 fit at 400 Chebyshev nodes to mpmath's loggamma
# (relative error 2.9e-10)
_LGAMMA2 = tuple(_F(c) for c in (
    -4.0518609562616285e-05, 0.0002770345169553121, -0.001000344419251816,
    0.002789831442424445, -0.007353289989838135, 0.02057486346223154, -0.06735174432841436,
    0.3224670131630113, 0.422784335220627))
# Stirling's series for lgamma beyond 8: 1/(12 x) - 1/(360 x^3) + 1/(1260 x^5), in 1/x^2
_STIRLING = (_F(1 / 1260), _F(-1 / 360), _F(1 / 12))
# digamma's asymptotic series beyond 10: B_2k / (2k) for k = 7 .. 1, in 1/x^2
_PSI = tuple(_F(c) for c in (1 / 12, -691 / 32760, 1 / 132, -1 / 240, 1 / 252, -1 / 120,
                             1 / 12))


def _sincospi(x):
    """(sin(pi x), cos(pi x)) with x reduced to r in [-1, 1] first (exact: x - 2 round(x / 2)),
    so sin is exactly 0 at every integer; every |x| >= 2^23 is an integer."""
    big = ~(x < _TWO23) | ~(x > -_TWO23)  # nan too
    h = _sel(big, _ZERO, x * _HALF)
    r = x - ((h + _ROUND) - _ROUND) * _F(2.0)
    r = _sel(big, _ZERO, r)
    a = _sel(r < _ZERO, -r, r)
    far = a > _HALF
    t = _sel(far, _ONE - a, a)
    z = t * t
    sn = _poly(z, _SINPI[:-1]) * z + _SINPI[-1]
    sn = sn * t
    cs = _poly(z, _COSPI[:-1]) * z + _COSPI[-1]
    sn = _sel(r < _ZERO, -sn, sn)
    cs = _sel(far, -cs, cs)
    return sn, cs


def _lgamma_pos(x):
    """lgamma(x) for x > 0 (0 and inf handled by the caller): Stirling from 8 on; below,
    x = n + t with t = x - floor(x) exact, lgamma(2 + t) = t P(t) (no cancellation at the
    zeros x = 1 and 2), and the recurrence's product (x (x + 1), x, or (2 + t) ... (n - 1 + t))
    under one log."""
    xs = _sel(x < _EIGHT, x, _EIGHT)
    n = (xs + _ROUND) - _ROUND
    n = _sel(n > xs, n - _ONE, n)  # floor
    t = xs - n
    w = _ONE
    for k in range(2, 7):
        kf = _F(k)
        w = _sel(kf < n, w * (kf + t), w)
    q = _sel(x < _ONE, x * (x + _ONE), x)
    low = x < _TWO
    large = ~(x < _EIGHT)
    lg = log32(_sel(large, x, _sel(low, q, w)))
    mid = t * _poly(t, _LGAMMA2) + _sel(low, -lg, lg)
    inv = _ONE / x
    inv2 = inv * inv
    # (x - 1/2) log x - x as x (log x - 1) - log(x) / 2: no overflow below lgamma's own
    stir = x * (lg - _ONE) - _HALF * lg + _HALF_LOG_2PI + inv * _poly(inv2, _STIRLING)
    return _sel(large, stir, mid)


def lgamma32(x):
    """log|Gamma(x)|: the positive branch above, and lgamma(1 - x) reflected for x < 0,
    log(pi / |sin(pi x)|) - lgamma(1 - x); inf at 0, the negative integers and +-inf."""
    neg = x < _ZERO
    v = _sel(neg, _ONE - x, x)
    v = _sel(v < _INF, v, _ONE)  # +-inf: any finite value, replaced below
    lp = _lgamma_pos(v)
    sn, cs = _sincospi(x)
    sn = _sel(sn < _ZERO, -sn, sn)
    # |x| < 2^-60: sin(pi x) = pi x, but pi x rounds coarsely among the subnormals; so
    # log(pi |x|) = log(|x| 2^60) + (log(pi) - 60 log 2), on a normal number
    tiny = (x > -_TWO_M60) & (x < _ZERO)
    ls = log32(_sel(tiny, -x * _TWO_60, sn))
    ls = _sel(tiny, ls + _LOG_PI_M60, ls)
    y = _sel(neg, _LOG_PI - ls - lp, lp)
    y = _sel(neg & (sn == _ZERO), _INF, y)  # the poles (inf - inf above)
    y = _sel(x == _ZERO, _INF, y)
    y = _sel((x == _INF) | (x == -_INF), _INF, y)
    return _sel(x == x, y, x)


def digamma32(x):
    """psi(x) (torch's float algorithm): psi(x) = psi(x + 1) - 1/x up to x >= 10, then the
    asymptotic series; psi(1 - x) - pi cot(pi x) for x < 0. -inf/+inf at +0/-0, nan at the
    negative integers and -inf."""
    neg = x < _ZERO
    v = _sel(neg, _ONE - x, x)
    v = _sel((v < _INF) & (v > _ZERO), v, _ONE)
    acc = _ZERO
    for _ in range(10):
        small = v < _TEN
        acc = acc - _sel(small, _ONE / v, _ZERO)
        v = _sel(small, v + _ONE, v)
    inv = _ONE / v
    inv2 = inv * inv
    y = acc + log32(v) - _HALF * inv - inv2 * _poly(inv2, _PSI)
    sn, cs = _sincospi(x)
    y = _sel(neg, y - _PI * cs / sn, y)
    y = _sel(x == _ZERO, _sel(_bits(x) < 0, _INF, -_INF), y)
    y = _sel(neg & (sn == _ZERO), _NAN, y)
    y = _sel(x == _INF, _INF, y)
    y = _sel(x == -_INF, _NAN, y)
    return _sel(x == x, y, x)


# -- i0 ----------------------------------------------------------------------------------------
# Chebyshev series (fits at 200 nodes to mpmath, relative error 1e-10 and 1e-11) of
# e^-x I0(x) on [0, 8] in t = x / 4 - 1, and of sqrt(x) e^-x I0(x) on [8, inf) in t = 16 / x - 1
_I0_NEAR = tuple(_F(c) for c in (
    0.33839763720473803, -0.30468267234319824, 0.17162090152220874, -0.09490109704804758,
    0.04930528423967076, -0.02373741480589949, 0.010546460394595026, -0.004324309995050546,
    0.0016394756169414006, -0.0005763755745386211, 0.00018850288509586341,
    -5.7541950100771214e-05, 1.6448448070820738e-05, -4.416738358333826e-06,
    1.1173875389830395e-06, -2.6707938523254583e-07, 6.04699502253557e-08,
    -1.3000249987626949e-08, 2.6598236946284723e-09, -5.189794372029158e-10,
    9.675804601982924e-11))
_I0_FAR = tuple(_F(c) for c in (
    0.4022452055070544, 0.0033691164782556986, 6.889758346916778e-05, 2.89137052083702e-06,
    2.048918589429502e-07, 2.266668990801024e-08, 3.396232027552682e-09, 4.940602441700845e-10,
    1.1889147132071457e-11, -3.149916352057637e-11, -1.3215811951738937e-11))
_QUARTER, _SIXTEEN = _F(0.25), _F(16)


def _cheb(t, c):
    """c[0] + sum c[k] T_k(t), by Clenshaw's recurrence."""
    t2 = t + t
    b1 = _ZERO
    b2 = _ZERO
    for k in c[:0:-1]:
        b0 = t2 * b1 - b2 + k
        b2 = b1
        b1 = b0
    return t * b1 - b2 + c[0]


def i0_32(x):
    """I0(x) = e^|x| (e^-|x| I0(|x|)), the scaled part from the two series above and e^|x| as
    e^(|x|/2) squared, so that it overflows only where I0 does (x ~ 91.9; e^x alone would at
    88.7); nan at +-inf, as torch's and the float64 kernel's."""
    ax = _sel(x < _ZERO, -x, x)
    near = ax <= _EIGHT
    fa = _cheb(_sel(near, ax, _EIGHT) * _QUARTER - _ONE, _I0_NEAR)
    af = _sel(near, _EIGHT, ax)
    fb = _cheb(_SIXTEEN / af - _ONE, _I0_FAR) / _sqrt(af)
    e = exp32(ax * _HALF)
    return (e * _sel(near, fa, fb)) * e  # inf * 0 at +-inf


# -- Phi's tail, e^(-a^2/2) K(a): exact GELU, its backward, and erfc -------------------------
# Phi(-a) = e^(-a^2/2) K(a) for a >= 0, with K = P / Q a rational of degrees 4 / 5 with
# positive coefficients (so Horner in float32 is well conditioned for a >= 0), fitted to
# e^(a^2/2) Phi(-a) on [0, 14.5] at Chebyshev nodes by reweighted least squares on the relative
# error (7.4e-9; P / Q tends to 1 / (sqrt(2 pi) a), K's asymptote). One exp and one rational
# for all x: Phi(x) = 1 - Phi(-a) for x > 0 (Phi(-a) <= 1/2), and the left tail accurate.
_PHI_P = (0.004202317107934171, 0.041195086717401914, 0.18487224184486298,
          0.4404556347971274, 0.5000000036840618)  # highest power first
_PHI_Q = (0.010533539247049832, 0.10326667295331673, 0.47379991485421014,
          1.2092244798444178, 1.6787963417034757, 1.0)
_PHI_PF, _PHI_QF = tuple(_F(c) for c in _PHI_P), tuple(_F(c) for c in _PHI_Q)
# erfcx(z) = e^(z^2) erfc(z) = 2 K(z sqrt 2): the same fit in z (z^j's coefficient times
# 2^(j/2), P's times 2), rounded once; z sqrt 2 is never formed (its rounding would enter e^)
_ERFCX_P = tuple(_F(2 * c * 2 ** ((len(_PHI_P) - 1 - i) / 2)) for i, c in enumerate(_PHI_P))
_ERFCX_Q = tuple(_F(c * 2 ** ((len(_PHI_Q) - 1 - i) / 2)) for i, c in enumerate(_PHI_Q))
_GELU_AMAX = _F(14.5)  # beyond, x Phi(x) rounds to 0 (and e^(-a^2/2) stays in _exp_fused's n)
_ERFC_ZMAX = _F(10.25)  # beyond, erfc rounds to 0
_ABS = 0x7FFFFFFF  # all bits but the sign
_RSQRT_2PI, _TWO_M64 = _F(0.3989422804014327), _F(2.0 ** -64)


def _exp_neg_sq(a, s):
    """2^64 e^(-s a^2) for s = 1/2 or 1 and 0 <= a <= 14.5 within about one ulp (a normal
    float32: no subnormal scale; the caller's last product takes 2^-64): s a^2 = h + c
    exactly (h = (s a) a rounded, c = fma(s a, a, -h) its rounding error; s a is exact), and c
    is subtracted after the range reduction (a rounded a^2 would put its rounding into the
    exponent: 50 ulp at a = 10)."""
    sa = s * a
    h = sa * a
    c = _fma(sa, a, -h)
    n = _fma(-h, _LOG2E, _ROUND) - _ROUND
    r = _fma(-n, _LN2_LO, _fma(-n, _LN2_HI, -h)) - c  # the first exact: ulp(h)'s multiple < h
    p = _fma(_polyf(r, _EXP_P), r * r, r) + _ONE
    return (p + p) * _float((_bits(n + _ROUND) - _bits(_ROUND) + 190) << 23)  # 2^(n + 64)


def _phi_parts(x):
    """(a, e, k) for float32 x: a = |x| clamped to 14.5 (nan to 14.5), e = 2^64 e^(-a^2/2)
    and k = K(a), so Phi(-a) = e k 2^-64."""
    a = _float(_bits(x) & _ABS)  # +0 at -0, so that gelu(-0) = -0 - 0 is -0
    a = _sel(a < _GELU_AMAX, a, _GELU_AMAX)
    return a, _exp_neg_sq(a, _HALF), _polyf(a, _PHI_PF) / _polyf(a, _PHI_QF)


def gelu32(x):
    """x Phi(x) (exact GELU): -a Phi(-a) for x < 0, x - a Phi(-a) above, a = |x|, a Phi(-a) as
    ((a k) e) 2^-64 (only that last product may be subnormal); nan at -inf, inf at inf."""
    a, e, k = _phi_parts(x)
    y = ((a * k) * e) * _TWO_M64
    y = _sel(x < _ZERO, -y, x - y)
    y = _sel(x == -_INF, _NAN, y)
    return _sel(x == x, y, x)


def gelu_grad32(x, g):
    """g (Phi(x) + x phi(x)), exact GELU's backward: m = Phi(-a) - a phi(a) below 0 and 1 - m
    above (the derivatives at x and -x add up to 1); nan at +-inf and nan."""
    a, e, k = _phi_parts(x)
    m = (e * _fma(-a, _RSQRT_2PI, k)) * _TWO_M64
    m = _sel(a < _GELU_AMAX, m, _ZERO)  # 0 beyond the clamp (within a subnormal ulp at 14.5)
    d = _sel(x < _ZERO, m, _ONE - m)
    d = _sel((x == _INF) | (x == -_INF) | (x != x), _NAN, d)
    return g * d


def erfc32(x):
    """erfc(x) = e^(-z^2) erfcx(z) for z = |x| (relative accuracy down to the subnormals), and
    2 minus that for x < 0; 0 at inf, 2 at -inf."""
    z = _float(_bits(x) & _ABS)
    z = _sel(z < _ERFC_ZMAX, z, _ERFC_ZMAX)
    t = ((_polyf(z, _ERFCX_P) / _polyf(z, _ERFCX_Q)) * _exp_neg_sq(z, _ONE)) * _TWO_M64
    y = _sel(x < _ZERO, _TWO - t, t)
    return _sel(x == x, y, x)


# -- erf: Eigen's generic_fast_erf_float, x P(x^2) / Q(x^2) on x clipped to [-4, 4] -----------
# (degrees 13 / 8; the approximation itself is within 6.5e-8 of erf; no exp, so it stays one
# cheap pass: its absolute error near 1 is what erfc32 above avoids)
_ERF_P = tuple(_F(c) for c in (  # x^13 ... x^1 (odd numerator, Horner in x^2)
    -2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
    -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
    -1.60960333262415e-02))
_ERF_Q = tuple(_F(c) for c in (  # x^8 ... x^0 (even denominator)
    -1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
    -7.37332916720468e-03, -1.42647390514189e-02))
_FOUR = _F(4)


def erf32(x):
    """erf(x) as x (P / Q) (one rounding at subnormal x, where x P would lose bits), clipped to
    [-1, 1] (the rounding may reach 1 + 1 ulp); nan stays nan."""
    c = _sel(x < -_FOUR, -_FOUR, x)
    c = _sel(c > _FOUR, _FOUR, c)
    x2 = c * c
    y = c * (_poly(x2, _ERF_P) / _poly(x2, _ERF_Q))
    y = _sel(y < -_ONE, -_ONE, y)
    return _sel(y > _ONE, _ONE, y)


# -- tan ---------------------------------------------------------------------------------------
# x reduced by pi/4 in float64 (j even, z = x - j pi/4 with pi/4 = HI + LO, HI of 33 bits so
# j HI is exact for j < 2^20: z keeps its relative accuracy next to the multiples of pi, where
# a float32 reduction loses hundreds of ulp), then Cephes' tanf on z in float32: tan z =
# z + z^3 P(z^2), and -1/tan z for the odd quadrants. ops/unary.py's Tan takes NumPy's tan
# beyond |x| = 2^19 (TAN_LIMIT).
_FOPI64 = 4 / np.pi
_PIO4_HI, _PIO4_LO = 0.7853981633670628, 3.038550253253096e-11
_TAN_P = tuple(_F(c) for c in (9.38540185543e-3, 3.11992232697e-3, 2.44301354525e-2,
                               5.34112807005e-2, 1.33387994085e-1, 3.33331568548e-1))
TAN_LIMIT = 524288.0


def tan32(x):
    """tan(x) for |x| <= 2^19 (nan beyond, and at +-inf and nan)."""
    ax = _sel(x < _ZERO, -x, x)
    ok = ax <= _F(TAN_LIMIT)  # nan too
    w = _wide(_sel(ok, ax, _ZERO))
    j = np.floor(w * _FOPI64)
    y = j + (j - 2.0 * np.floor(j * 0.5))  # the even one of j, j + 1
    z = _narrow((w - y * _PIO4_HI) - y * _PIO4_LO)
    flip = (y - 4.0 * np.floor(y * 0.25)) == 2.0  # an odd multiple of pi/2 below
    zz = z * z
    p = _poly(zz, _TAN_P) * zz * z + z
    p = _sel(flip, -_ONE / p, p)
    p = _sel(x < _ZERO, -p, p)
    p = _sel(ok, p, _NAN)
    return _sel(x == _ZERO, x, p)  # -0 stays -0


# -- atan2 -------------------------------------------------------------------------------------
# a = min(|y|, |x|) / max(|y|, |x|) in [0, 1]; Cephes' atanf on it (a - 1 over a + 1 plus pi/4
# above tan(pi/8)), then pi/2 -+ r where |y| > |x| and pi - r where x < 0, each constant in
# two parts; IEEE's values at zeros and infinities.
_ATAN_P = tuple(_F(c) for c in (8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1,
                                -3.33329491539e-1))
_TAN_PI8 = _F(0.4142135623730950)
_PIO2_HI, _PIO2_LO = _F(1.5707963705062866), _F(-4.371138828673793e-08)
_PI_HI, _PI_LO = _F(3.1415927410125732), _F(-8.742277657347586e-08)
_PIO4_HI32, _PIO4_LO32 = _F(0.7853981852531433), _F(-2.1855694143368964e-08)
_THREE_PIO4 = _F(3 * np.pi / 4)


def atan2_32(y, x):
    """The angle of (x, y) in [-pi, pi], with the sign of y (zeros included); pi at y = +-0,
    x < 0 or -0; nan where either is nan."""
    ay = _sel(y < _ZERO, -y, y)
    ax = _sel(x < _ZERO, -x, x)
    swap = ay > ax
    den = _sel(swap, ay, ax)
    a = _sel(swap, ax, ay) / _sel(den == _ZERO, _ONE, den)
    big = a > _TAN_PI8
    t = _sel(big, (a - _ONE) / (a + _ONE), a)
    z = t * t
    r = _poly(z, _ATAN_P) * z * t + t
    r = _sel(big, (r + _PIO4_LO32) + _PIO4_HI32, r)
    left = x < _ZERO
    # pi/2 - r, pi/2 + r (x < 0), or pi - r: one subtraction from the leading part each, so
    # r = 0 gives the rounded constant
    up = _sel(left, (r + _PIO2_LO) + _PIO2_HI, (_PIO2_HI - r) + _PIO2_LO)
    r = _sel(swap, up, _sel(left, (_PI_HI - r) + _PI_LO, r))
    both_inf = (ay == _INF) & (ax == _INF)
    r = _sel(both_inf, _sel(x < _ZERO, _THREE_PIO4, _PIO4_HI32), r)
    r = _sel((ay == _ZERO) & (_bits(x) < 0), _PI_HI, r)  # x = -0 (x < 0 is covered above)
    r = _sel(_bits(y) < 0, -r, r)
    return _sel((x == x) & (y == y), r, _NAN)


# -- silu: x sigmoid(x), and its derivative s (1 + x (1 - s)) ---------------------------------
def _sigmoid_parts(x):
    """(s, c) = (sigmoid(x), 1 - sigmoid(x)) from e = e^-|x| (no overflow, and each side of
    the pair is a product, not a difference: no cancellation near 1)."""
    e = _exp_neg(-_sel(x < _ZERO, -x, x))
    q = _ONE / (_ONE + e)
    eq = e * q
    return _sel(x < _ZERO, eq, q), _sel(x < _ZERO, q, eq)


def silu32(x):
    """x sigmoid(x): x / (1 + e^-x) for x >= 0, x e^x / (1 + e^x) below (no overflow of e^-x
    in the left tail): one exp and one division. nan at -inf (as -inf * 0)."""
    e = _exp_neg(-_sel(x < _ZERO, -x, x))
    return _sel(x < _ZERO, x * e, x) / (_ONE + e)


def silu_grad32(x, g):
    """g s (1 + x (1 - s)) for s = sigmoid(x), silu's backward; nan at -inf and nan."""
    s, c = _sigmoid_parts(x)
    return g * (s * _fma(x, c, _ONE))


KERNELS = ("exp32", "log32", "log1p32", "expm1_32", "sinh32", "cosh32", "atanh32",
           "softplus32", "lgamma32", "digamma32", "i0_32", "gelu32", "silu32",
           "tan32", "erf32", "erfc32")
GRAD_KERNELS = ("gelu_grad32", "silu_grad32")  # two inputs: out = f(x, g)
BINARY = ("atan2_32", "logaddexp32", "logaddexp2_32")  # two inputs: out = f(y, x)
# what _cpu_jit.py recompiles as scalar functions, inlined into the loops below
BODIES = ("_poly", "_polyf", "_exp_fused", "_exp_neg", "_exp_scale",
          "_log_core", "_split", "_log_special", "_exp_parts", "_sincospi", "_lgamma_pos",
          "_cheb", "_exp_neg_sq", "_phi_parts", "_sigmoid_parts", "_logaddexp32") + KERNELS + \
    GRAD_KERNELS + BINARY


# The element loops numba compiles (``_cpu_jit.py``), one per kernel and defined here so that
# numba's on-disk cache is keyed to this file: an edit to a body recompiles them. NumPy never
# calls them.
def _loop_exp32(out, x):
    for i in range(x.shape[0]):
        out[i] = exp32(x[i])


def _loop_log32(out, x):
    for i in range(x.shape[0]):
        out[i] = log32(x[i])


def _loop_log1p32(out, x):
    for i in range(x.shape[0]):
        out[i] = log1p32(x[i])


def _loop_expm1_32(out, x):
    for i in range(x.shape[0]):
        out[i] = expm1_32(x[i])


def _loop_sinh32(out, x):
    for i in range(x.shape[0]):
        out[i] = sinh32(x[i])


def _loop_cosh32(out, x):
    for i in range(x.shape[0]):
        out[i] = cosh32(x[i])


def _loop_atanh32(out, x):
    for i in range(x.shape[0]):
        out[i] = atanh32(x[i])


def _loop_softplus32(out, x):
    for i in range(x.shape[0]):
        out[i] = softplus32(x[i])
# stated bounds in float32 ulp of the exact value, checked by tests/test_math32.py
# (measured on that sweep: 0.97, 0.78, 1.18, 1.67, 2.09, 1.47, 1.94, softplus32 1.71,
# i0_32 6.7: e^(|x|/2) squared and the Clenshaw sums);
# lgamma and digamma: (ulp where the result is at least 1/2, else absolute), x > 0 and x < 0
# (measured lgamma 3.17 / 1.7e-7 and 17.6 / 9.8e-7; digamma 14.0 / 7.0e-7 and 28.6 / 1.7e-6,
# torch's float digamma 14.0 / 7.0e-7 and 20.8 / 1.2e-6 on the same sweep)
ULP = {"exp32": 1, "log32": 1, "log1p32": 2, "expm1_32": 2, "sinh32": 3, "cosh32": 2,
       "atanh32": 3, "softplus32": 3, "i0_32": 7, "gelu32": 6, "tan32": 3,  # tan32: 2.40
       "erf32": 8, "erfc32": 8}
# gelu32 (fused steps: _polyf, _exp_fused) measured 5.27 on tests/test_gelu_exact.py's sweep,
# 5.57 on every 211th float32 of [-15, 15] (7.19 / 7.31 unfused), erfc32 6.08 there (7.69
# unfused), erf32 7.7 / 7.95 (Eigen's coefficients); gelu_grad32's bound, in ulp of |Phi(x)| +
# |x phi(x)| (the derivative has a zero at -0.75, where no float32 sum of the two terms keeps
# relative accuracy): 3.47 there (5.31 unfused, at -13.3, where e^(-x^2/2) was subnormal)
GELU_GRAD_ULP = 6
# silu32, and silu_grad32 in ulp of |s| + |s x (1 - s)| (a zero of the derivative at -1.28),
# where e^x is normal (x >= -87.3; below, within 2^-142 absolute); measured 3.16 and 3.90 on
# every 211th float32 of [-15, 15] (tests/test_fast_kernels.py)
SILU_ULP, SILU_GRAD_ULP = 4, 5
ATAN2_ULP = 3  # atan2_32, measured 2.59 (tests/test_fast_kernels.py)
GAMMA_BOUNDS = {"lgamma32": ((4, 2e-7), (18, 1e-6)), "digamma32": ((15, 8e-7), (30, 2e-6))}


def _loop_lgamma32(out, x):
    for i in range(x.shape[0]):
        out[i] = lgamma32(x[i])


def _loop_digamma32(out, x):
    for i in range(x.shape[0]):
        out[i] = digamma32(x[i])


def _loop_i0_32(out, x):
    for i in range(x.shape[0]):
        out[i] = i0_32(x[i])


def _loop_gelu32(out, x):
    for i in range(x.shape[0]):
        out[i] = gelu32(x[i])


def _loop_gelu_grad32(out, x, g):
    for i in range(x.shape[0]):
        out[i] = gelu_grad32(x[i], g[i])


def _loop_silu32(out, x):
    for i in range(x.shape[0]):
        out[i] = silu32(x[i])


def _loop_silu_grad32(out, x, g):
    for i in range(x.shape[0]):
        out[i] = silu_grad32(x[i], g[i])


def _loop_erf32(out, x):
    for i in range(x.shape[0]):
        out[i] = erf32(x[i])


def _loop_erfc32(out, x):
    for i in range(x.shape[0]):
        out[i] = erfc32(x[i])


def _loop_tan32(out, x):
    for i in range(x.shape[0]):
        out[i] = tan32(x[i])


def _loop_atan2_32(out, y, x):
    for i in range(x.shape[0]):
        out[i] = atan2_32(y[i], x[i])


def _loop_logaddexp32(out, a, b):
    for i in range(a.shape[0]):
        out[i] = logaddexp32(a[i], b[i])


def _loop_logaddexp2_32(out, a, b):
    for i in range(a.shape[0]):
        out[i] = logaddexp2_32(a[i], b[i])


# Scans (``_cpu_jit.py`` compiles them with the loops above): along axis 1 of 3-d arrays, each
# row in order as torch's CPU scan does (NumPy's fallback, ops/_along.scan, pairs elements in
# log2(n) steps instead: the same formula per pair, but other pairs, so other roundings)
SCANS = ("logcumsumexp32",)


def _logaddexp32(a, b):
    """log(e^a + e^b) as kernels.logaddexp's float32 formula: max + softplus32(-|a - b|), and
    a + log 2 where a == b (inf, inf gives inf)."""
    d = a - b
    d = _sel(d < _ZERO, d, -d)
    m = _sel(a < b, b, a)
    return _sel(a == b, a + _LN2, m + softplus32(d))


def logaddexp32(a, b):
    """log(e^a + e^b) (kernels.logaddexp's float32 op, one pass)."""
    return _logaddexp32(a, b)


def logaddexp2_32(a, b):
    """log2(2^a + 2^b) = max + softplus32(-|a - b| ln 2) / ln 2, and a + 1 where a == b."""
    d = a - b
    d = _sel(d < _ZERO, d, -d)
    m = _sel(a < b, b, a)
    return _sel(a == b, a + _ONE, m + softplus32(d * _LN2) / _LN2)


def _loop_logcumsumexp32(out, x):
    if x.shape[2] == 1:  # along the last axis: blocks of rows, transposed, scanned side by
        # side (one row's scan is a chain of exp and log1p latencies, ~60 ns an element;
        # 16 independent chains fill the vector lanes); each element's operation unchanged
        n = x.shape[1]
        blk = np.empty((n, 16), x.dtype)
        o = 0
        while o < x.shape[0]:
            w = min(16, x.shape[0] - o)
            for r in range(w):
                for i in range(n):
                    blk[i, r] = x[o + r, i, 0]
            for i in range(1, n):
                prev, cur = blk[i - 1], blk[i]
                for r in range(w):
                    cur[r] = _logaddexp32(prev[r], cur[r])
            for r in range(w):
                for i in range(n):
                    out[o + r, i, 0] = blk[i, r]
            o += w
        return
    for o in range(x.shape[0]):
        for k in range(x.shape[2]):
            out[o, 0, k] = x[o, 0, k]
        for i in range(1, x.shape[1]):
            for k in range(x.shape[2]):
                out[o, i, k] = _logaddexp32(out[o, i - 1, k], x[o, i, k])
