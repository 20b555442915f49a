"""numba kernels of issue 13's special and binary math ops (hypot, nextafter, mvlgamma),
imported by ``_cpu_jit.py`` (so reachable by ``jit`` / ``jit_kernel``) and only there.

Each repeats per element the arithmetic of the NumPy fallback its op keeps
(``ops/_hypot.py``, ``ops/number.py``, ``ops/special.py``), so both give the same bits:

* ``hypot32``: ``sqrt(x*x + y*y)`` in float64, rounded once to float32 (the squares of
  float32 values are exact in float64 and neither overflows nor underflows there, so the only
  rounding before the last is the sum's and the sqrt's: within half an ulp of float32 but for
  a double-rounding tie); inf where either input is infinite, else NaN as NaN (canonical).
* ``nextafter_bits32`` / ``nextafter_bits64``: the bit increment on the integer view, in one
  pass (NumPy's calls the C library per element, 9x torch's time), with C's rules: ``x ==
  y`` gives ``y``, ``0`` steps to the smallest subnormal with ``y``'s sign, NaN gives the
  canonical quiet NaN (torch's).
* ``mvlgamma32``: ``sum_j lgamma32(x - j/2)`` added in float64 with the constant last, one
  pass over ``x`` (the composite made a ``(n, p)`` temporary and a reduction over it).

The loops release the GIL, so ``_threads.elementwise`` runs them on the pool. Those inlining
``_math32``'s bodies (mvlgamma32, logaddexp32_passes, logaddexp2_32_passes) compile under
names carrying a digest of ``_math32.py``, so that numba's disk cache (keyed on this file)
never serves them with stale bodies; old entries stay in ``__pycache__`` until cleared.
"""

import hashlib
import math
import pathlib
import types

import numpy as np

__all__ = ["hypot32", "nextafter_bits32", "nextafter_bits64", "mvlgamma32", "igamma_lanes64",
           "logaddexp32_passes", "logaddexp2_32_passes"]


def _math32_file():
    from . import _math32

    return _math32.__file__


def _helpers():
    """_cpu_jit's decorators, its float32 -> int32 bit cast and _math32's lgamma32, exp32,
    log1p32 and select in scalar form (inlined). _cpu_jit imports this module at its end,
    when these exist; imported here, at call time, so that the two modules do not import each
    other at module level."""
    from . import _cpu_jit

    scalar = _cpu_jit._SCALAR
    return _cpu_jit._jit, _cpu_jit._inline, _cpu_jit._bits, scalar["lgamma32"], \
        scalar["exp32"], scalar["log1p32"], scalar["_sel"]


_jit, _inline, _bits, _lgamma32, _exp32, _log1p32, _sel = _helpers()
# The kernels that inline _math32's bodies are compiled under names carrying a digest of
# _math32.py: numba's disk cache checks only this file's stamp, so an edit to _math32 alone
# would otherwise leave them running the old bodies (a name not seen before compiles afresh).
_M32 = hashlib.sha1(pathlib.Path(_math32_file()).read_bytes()).hexdigest()[:10]
_BLOCK = 2048  # elements per block of mvlgamma32 (16 KiB of float64 sums: in L1)


@_jit
def hypot32(out, a, b):
    """out (the int32 view of the float32 result) = hypot(a, b) on 1-d float32 arrays (see
    the module's note). The NaN is written as bits: LLVM may fold a float select of NaNs."""
    qnan = np.int32(0x7FC00000)
    for i in range(a.shape[0]):
        x = np.float64(a[i])
        y = np.float64(b[i])
        r = np.sqrt(x * x + y * y)
        r = np.inf if (abs(x) == np.inf) | (abs(y) == np.inf) else r
        out[i] = qnan if r != r else _bits(np.float32(r))


def _nextafter_bits(out, a, b, ai, bi, one, sign, qnan):
    """out (the integer view of the result) = nextafter(a, b) on 1-d float arrays ``a``, ``b``
    and their integer views ``ai``, ``bi`` of the same width; ``one``, ``sign`` (the sign
    bit) and ``qnan`` (the quiet NaN's bits) integers of that width."""
    for i in range(a.shape[0]):
        x = a[i]
        y = b[i]
        xi = ai[i]
        # away from zero when y lies beyond x; the bits of a float grow with its magnitude
        r = xi + one if (x < y) == (x > 0) else xi - one
        r = (bi[i] & sign) | one if x == 0 else r
        r = bi[i] if x == y else r
        out[i] = qnan if (x != x) | (y != y) else r


def _named(fn, name):
    """``fn`` compiled as a numba function of its own name (numba's disk cache is keyed by
    name: nextafter's one per width, so that each compiles once, on its example, never in a
    pool thread; the _math32 users' per digest of _math32.py)."""
    code = fn.__code__.replace(co_name=name, co_qualname=name)
    return _jit(types.FunctionType(code, fn.__globals__, name))


nextafter_bits32 = _named(_nextafter_bits, "nextafter_bits32")
nextafter_bits64 = _named(_nextafter_bits, "nextafter_bits64")


def _mvlgamma32(out, x, p, const):
    """out = float32(sum_{j < p} lgamma32(x - j/2) + const) on 1-d float32 arrays, the sum in
    float64 in the order of j (``const`` a float64, p an int). By blocks, j outside, each
    lgamma32 pass a loop of its own: that is the loop LLVM vectorises (lgamma32 computes every
    branch and selects, which in scalar code costs many times more)."""
    half = np.float32(0.5)
    n = x.shape[0]
    acc = np.empty(min(n, _BLOCK))
    term = np.empty(min(n, _BLOCK), np.float32)
    for s in range(0, n, _BLOCK):
        m = min(n - s, _BLOCK)
        for k in range(m):
            acc[k] = 0.0
        for j in range(p):
            shift = np.float32(j) * half
            for k in range(m):
                term[k] = _lgamma32(x[s + k] - shift)
            for k in range(m):
                acc[k] += np.float64(term[k])
        for k in range(m):
            out[s + k] = np.float32(acc[k] + const)


# -- the regularised incomplete gamma, in lanes -----------------------------------------------
# _cpu_jit's igamma64 runs each element's series or continued fraction alone: a chain of
# dependent float64 divisions, one element at a time. Here _LANES elements of one kind advance
# together, each frozen when its own test stops it (the same terms, in the same order, as
# igamma64 and ops/special.py's igamma_kernel: the same bits), in branch-free loops over the
# lanes that LLVM vectorises (the "any lane live" test is an integer count: a float sum would
# not vectorise without reassociation). The group runs until its slowest lane stops.
_LANES = 32


@_inline
def _prefactor(a, x):
    return np.exp(a * np.log(x) - x - math.lgamma(a))  # igamma64's, the C library's


@_inline
def _series_lanes(term, total, ap, xs, live, tol):
    """P's series sums (before the prefactor) of the lanes (term = 1/a, total = term, ap = a,
    xs = x and live = 1 on entry; padding lanes live = 0)."""
    for _ in range(5000):
        count = 0
        for k in range(term.shape[0]):
            ak = ap[k] + 1.0
            t = term[k] * xs[k] / ak
            s = total[k] + t
            on = live[k]
            ap[k] = ak
            term[k] = t
            total[k] = s if on != 0.0 else total[k]
            on = on if abs(t) > abs(s) * tol else 0.0
            live[k] = on
            count += np.int64(on != 0.0)
        if count == 0:
            break


@_inline
def _fraction_lanes(av, b, c, d, h, live, tol):
    """Lentz's continued fraction for Q (before the prefactor) of the lanes (av = a,
    b = x + 1 - a, c = 1/tiny, d = h = 1/b and live = 1 on entry; padding lanes live = 0)."""
    tiny = 1e-300
    for it in range(1, 5000):
        count = 0
        for k in range(av.shape[0]):
            an = -it * (it - av[k])
            bk = b[k] + 2.0
            dk = an * d[k] + bk
            dk = tiny if abs(dk) < tiny else dk
            ck = bk + an / c[k]
            ck = tiny if abs(ck) < tiny else ck
            dk = 1.0 / dk
            delta = dk * ck
            b[k], d[k], c[k] = bk, dk, ck
            on = live[k]
            h[k] = h[k] * delta if on != 0.0 else h[k]
            on = on if abs(delta - 1.0) > tol else 0.0
            live[k] = on
            count += np.int64(on != 0.0)
        if count == 0:
            break


@_jit
def igamma_lanes64(out, a, x, upper, tol):
    """out = P(a, x) (``upper`` False) or Q(a, x) on 1-d float64 arrays, igamma64's values
    (its edges, its series / fraction choice and stopping test) with _LANES elements of a
    kind at a time."""
    inf = np.inf
    n = x.shape[0]
    series, fraction = np.empty(n, np.int64), np.empty(n, np.int64)
    ns = nf = 0
    for i in range(n):
        ai, xi = a[i], x[i]
        if ai != ai or xi != xi or ai < 0 or xi < 0 or (ai == 0 and xi == 0) or \
                (ai == inf and xi == inf):
            out[i] = np.nan
        elif (xi == 0 and ai > 0) or (ai == inf and xi >= 0):
            out[i] = 1.0 if upper else 0.0
        elif (ai == 0 and xi > 0) or (xi == inf and ai > 0):
            out[i] = 0.0 if upper else 1.0
        elif xi < ai + 1.0:
            series[ns] = i
            ns += 1
        else:
            fraction[nf] = i
            nf += 1
    v1, v2, v3, v4, v5 = np.empty(_LANES), np.empty(_LANES), np.empty(_LANES), \
        np.empty(_LANES), np.empty(_LANES)
    live = np.empty(_LANES)
    for lo in range(0, ns, _LANES):
        m = min(ns - lo, _LANES)
        for k in range(_LANES):
            i = series[lo + min(k, m - 1)]  # padding lanes repeat the last element, frozen
            v1[k] = 1.0 / a[i]
            v2[k] = v1[k]
            v3[k] = a[i]
            v4[k] = x[i]
            live[k] = 1.0 if k < m else 0.0
        _series_lanes(v1, v2, v3, v4, live, tol)
        for k in range(m):
            i = series[lo + k]
            p = v2[k] * _prefactor(a[i], x[i])
            out[i] = 1.0 - p if upper else p
    tiny = 1e-300
    for lo in range(0, nf, _LANES):
        m = min(nf - lo, _LANES)
        for k in range(_LANES):
            i = fraction[lo + min(k, m - 1)]
            v1[k] = a[i]
            v2[k] = x[i] + 1.0 - a[i]
            v3[k] = 1.0 / tiny
            v4[k] = 1.0 / v2[k]
            v5[k] = v4[k]
            live[k] = 1.0 if k < m else 0.0
        _fraction_lanes(v1, v2, v3, v4, v5, live, tol)
        for k in range(m):
            i = fraction[lo + k]
            q = v5[k] * _prefactor(a[i], x[i])
            out[i] = q if upper else 1.0 - q


# -- logaddexp / logaddexp2 in three passes ------------------------------------------------------
# _math32's logaddexp32 = max + softplus32(-|a - b|) = max + (max(d, 0) + log1p32(exp32(-|d|))):
# its one element loop ran 1.5-2x the time of an exp32 loop, a log1p32 loop and a combining
# loop run one after the other over the whole array (the large fused body runs slower per
# operation than its parts; measured on this machine, not explained). Here: exp32's part into
# ``out``, log1p32 on it in place, then the rest; the same float32 operations on each element in
# the same order, so logaddexp32's bits (checked on random bit patterns and special values).
@_inline
def _softplus_arg(a, b, scale):
    """(d, m): logaddexp's -|a - b| (times ``scale``: 1, or ln 2 for base 2) and max(a, b)."""
    d = a - b
    d = _sel(d < np.float32(0), d, -d)
    return d * scale, _sel(a < b, b, a)


@_inline
def _logaddexp_pass(out, a, b, scale):
    n = a.shape[0]
    zero = np.float32(0)
    for k in range(n):  # exp32's part, into out
        d, _ = _softplus_arg(a[k], b[k], scale)
        out[k] = _exp32(-_sel(d < zero, -d, d))
    for k in range(n):
        out[k] = _log1p32(out[k])


def _logaddexp32_passes(out, a, b):
    """out = _math32.logaddexp32(a, b) on 1-d float32 arrays, in three passes."""
    _logaddexp_pass(out, a, b, np.float32(1))
    zero, ln2 = np.float32(0), np.float32(np.log(2.0))
    for k in range(a.shape[0]):
        ai, bi = a[k], b[k]
        d, mx = _softplus_arg(ai, bi, np.float32(1))
        out[k] = _sel(ai == bi, ai + ln2, mx + (_sel(d > zero, d, zero) + out[k]))


def _logaddexp2_32_passes(out, a, b):
    """out = _math32.logaddexp2_32(a, b) on 1-d float32 arrays, in three passes."""
    ln2 = np.float32(np.log(2.0))
    _logaddexp_pass(out, a, b, ln2)
    zero, one = np.float32(0), np.float32(1)
    for k in range(a.shape[0]):
        ai, bi = a[k], b[k]
        d, mx = _softplus_arg(ai, bi, ln2)
        out[k] = _sel(ai == bi, ai + one, mx + (_sel(d > zero, d, zero) + out[k]) / ln2)


mvlgamma32 = _named(_mvlgamma32, "mvlgamma32_" + _M32)
logaddexp32_passes = _named(_logaddexp32_passes, "logaddexp32_passes_" + _M32)
logaddexp2_32_passes = _named(_logaddexp2_32_passes, "logaddexp2_32_passes_" + _M32)
