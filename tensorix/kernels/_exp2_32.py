"""float32 ``2^x`` written once under ``_math32``'s rules (selects, bit casts through its
helpers), run as NumPy blocks from here and as a numba loop by ``_jit_13pw.py`` (the same
float32 operations: the same bits). NumPy's float32 exp2 calls the C library per element (4-5x
torch's time on 1M elements); this one vectorises.

x = n + f (n the nearest integer, f exact, |f| <= 1/2), and 2^x = e^(f ln 2) 2^n by
``_math32._exp_reduced`` (exp32's polynomial and its exponent built from bits, subnormal
results included): within ``EXP2_ULP`` ulp of 2^x (the product f ln 2 rounds once, the
polynomial within 1 ulp); inf from 128 up, 0 below -150, nan kept.
"""

from __future__ import annotations

from ._math32 import _F, _INF, _LN2, _ROUND, _ZERO, _exp_reduced, _sel

__all__ = ["exp2_32", "EXP2_ULP"]

EXP2_ULP = 2
_HI, _LO = _F(128.0), _F(-151.0)  # 2^128 overflows; 2^-151 rounds to 0 (in _exp_reduced's range)


def exp2_32(x):
    """2^x for float32 ``x`` (an array, or a scalar in the numba form)."""
    ok = x == x
    v = _sel(ok, x, _ZERO)  # nan swapped out before the float -> int steps, restored below
    v = _sel(v > _HI, _HI, v)
    v = _sel(v < _LO, _LO, v)
    n = (v + _ROUND) - _ROUND
    y = _exp_reduced(n, (v - n) * _LN2)
    y = _sel(x >= _HI, _INF, y)
    return _sel(ok, y, x)


# The element loop numba compiles (``_jit_13pw.py``), defined here so that numba's disk cache
# is keyed to this file (after an edit to _math32's _exp_reduced alone, clear __pycache__)
def _loop_exp2_32(out, x):
    for i in range(x.shape[0]):
        out[i] = exp2_32(x[i])
