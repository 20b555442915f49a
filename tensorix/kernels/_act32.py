"""float32 activations written once, run two ways (``_math32``'s scheme): sigmoid, softplus with
torch's ``beta`` and ``threshold``, logsigmoid, logit and glu's gate, on ``_math32``'s exp32,
log32 and log1p32.

NumPy's float32 ``exp`` is fast but the composites around it made four to seven passes (sigmoid
7.5x torch's time at 1M elements, softplus 4x, glu 18x). Each body here is one pass: on NumPy
float32 blocks as written (the fallback: ``ops/_act_fast.float32_act`` runs it block by block
over the pool), and element by element under numba, where ``_jit_13act.py`` recompiles these
bodies with ``_math32``'s scalar helpers, so that both give the same bits. The same rules as
``_math32``'s bodies: float32 constants, no ``if`` (``_sel`` keeps one side), bit casts only
through ``_bits``/``_float``. Bounds (``ULP``) are checked against float64 in
tests/test_act_fast.py.
"""

from __future__ import annotations

import numpy as np

from ._math32 import (
    _F,
    _HALF,
    _INF,
    _ONE,
    _SQRT_HALF,
    _SQRT_TWO,
    _ZERO,
    _exp_neg,
    _log_core,
    _log_special,
    _sel,
    _split,
    exp32,
)

_SQRT_TWO_M1 = _F(np.sqrt(2.0) - 1)

__all__ = ["BODIES", "LOOPS", "ULP", "sigmoid32", "softplus_bt32", "logsigmoid32", "logit32",
           "glu32"]


def sigmoid32(x):
    """1 / (1 + e) for x >= 0, e / (1 + e) below, e = e^-|x| (no overflow, no cancellation):
    0 at -inf, 1 at inf, nan at nan."""
    e = _exp_neg(-_sel(x < _ZERO, -x, x))
    return _sel(x < _ZERO, e, _ONE) / (_ONE + e)


def _log1p_unit(t):
    """log(1 + t) for t in [0, 1] (or nan) within an ulp, without a division: 1 + t = (1 + f)
    2^e with f = t (e = 0) below sqrt(2) - 1, else f = (t - 1) / 2 (e = 1); both reductions
    are exact (Sterbenz), so log_core sees t itself, unrounded."""
    up = t >= _SQRT_TWO_M1
    return _log_core(_sel(up, (t - _ONE) * _HALF, t), _sel(up, _ONE, _ZERO))


def _softplus(x):
    """log(1 + e^x) = max(x, 0) + log1p(e^-|x|): softplus32's formula with the log1p of a
    number in (0, 1] taken by ``_log1p_unit`` (no split of the exponent, no division)."""
    ax = _sel(x < _ZERO, -x, x)
    return _sel(x > _ZERO, x, _ZERO) + _log1p_unit(exp32(-ax))


def softplus_bt32(x, beta, threshold):
    """torch's softplus: x where x beta > threshold, else softplus(x beta) / beta (the
    float32 operations of ``Softplus``'s other paths, in their order)."""
    z = x * beta
    return _sel(z > threshold, x, _softplus(z) / beta)


def logsigmoid32(x):
    """log(sigmoid(x)) = 0 - softplus(-x) (+0 for large x, as torch; -x far left)."""
    return _ZERO - _softplus(-x)


def logit32(x, lo, hi):
    """log(u) for u = z / (1 - z), z = x clamped to [lo, hi] (nan stays; lo, hi = -inf, inf
    for no eps), with one log: where u is near 1 (z near 1/2, logit near 0) the log's
    polynomial runs on w = (2z - 1) / (1 - z) = u - 1 itself (2z - 1 is exact from z = 1/4,
    1 - z from 1/2: no cancellation); elsewhere |log u| > 0.34, so u's rounding is not
    magnified. -inf at 0 (-0 too), inf at 1, nan outside [0, 1]."""
    z = _sel(x < lo, lo, x)
    z = _sel(z > hi, hi, z)
    d = _ONE - z
    u = z / d
    w = ((z + z) - _ONE) / d
    near = (u >= _SQRT_HALF) & (u < _SQRT_TWO)
    uu = _sel((u > _ZERO) & (u < _INF), u, _ONE)
    f, e = _split(uu)
    y = _log_core(_sel(near, w, f), _sel(near, _ZERO, e))
    return _log_special(u, y)


def glu32(a, b):
    """a sigmoid(b), glu's two halves."""
    return a * sigmoid32(b)


# Measured bounds against float64 (tests/test_act_fast.py), in ulp of the result (glu: of
# |a| sigmoid(b), where sigmoid(b) is a normal float32: b > -87).
ULP = {"sigmoid32": 3, "softplus_bt32": 2, "logsigmoid32": 2, "logit32": 5, "glu32": 4}
# what _jit_13act.py recompiles as scalar functions, inlined into the loops below
BODIES = ("_log1p_unit", "_softplus", "sigmoid32", "softplus_bt32",
          "logsigmoid32", "logit32", "glu32")
LOOPS = ("sigmoid32", "softplus_bt32", "logsigmoid32", "logit32", "glu32")


# The element loops numba compiles (``_jit_13act.py``), defined here so that numba's disk
# cache is keyed to this file. NumPy never calls them.
def _loop_sigmoid32(out, x):
    for i in range(x.shape[0]):
        out[i] = sigmoid32(x[i])


def _loop_softplus_bt32(out, x, beta, threshold):
    for i in range(x.shape[0]):
        out[i] = softplus_bt32(x[i], beta, threshold)


def _loop_logsigmoid32(out, x):
    for i in range(x.shape[0]):
        out[i] = logsigmoid32(x[i])


def _loop_logit32(out, x, lo, hi):
    for i in range(x.shape[0]):
        out[i] = logit32(x[i], lo, hi)


def _loop_glu32(out, x):
    """out (m, 1, n) = x[:, 0] sigmoid(x[:, 1]) for x (m, 2, n), both C-contiguous."""
    for o in range(x.shape[0]):
        for i in range(x.shape[2]):
            out[o, 0, i] = glu32(x[o, 0, i], x[o, 1, i])
