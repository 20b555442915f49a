"""float32 ``2^x`` written once under ``_math32``'s rules (selects, bit casts through its
helpers), run as NumPy blocks from here and as a numba loop by ``_jit_13pw.py`` (the same
float32 operations: the same bits). NumPy's float32 exp2 calls the C library per element (4-5x
torch's time on 1M elements); this one vectorises.

x = n + f (n the nearest integer, f exact, |f| <= 1/2); 2^f = 1 + f P(f) (Cephes' exp2f
polynomial), times 2^n as two normal scales 2^h 2^(n-h), h = round(n/2): the first product is
exact and the second rounds once, subnormal results included, with no select (an x from 128
up overflows to inf by itself, a nan stays nan through the arithmetic). Within ``EXP2_ULP``
ulp of 2^x (1 on a dense sweep, tests/test_pointwise_fast.py); 0 below -150.
"""

from __future__ import annotations

from ._math32 import _F, _HALF, _ONE, _ROUND, _bits, _float, _poly, _sel

__all__ = ["exp2_32", "EXP2_ULP"]

EXP2_ULP = 1
_HI, _LO = _F(128.0), _F(-151.0)  # 2^128 overflows; 2^-151 rounds to 0
_EXP2_P = tuple(_F(c) for c in (1.535336188319500e-4, 1.339887440266574e-3,
                                9.618437357674640e-3, 5.550332471162809e-2,
                                2.402264791363012e-1, 6.931472028550421e-1))


def _scale(k):
    """2^k for an integer-valued float32 k in [-126, 127], from bits."""
    return _float((_bits(k + _ROUND) - _bits(_ROUND) + 127) << 23)


def exp2_32(x):
    """2^x for float32 ``x`` (an array, or a scalar in the numba form)."""
    v = _sel(x > _HI, _HI, x)  # (a nan fails both tests and flows through)
    v = _sel(v < _LO, _LO, v)
    n = (v + _ROUND) - _ROUND
    f = v - n
    p = f * _poly(f, _EXP2_P) + _ONE
    h = (n * _HALF + _ROUND) - _ROUND  # n in [-151, 128]: h and n - h in [-76, 64]
    return p * _scale(h) * _scale(n - h)


# The element loop numba compiles (``_jit_13pw.py``), defined here so that numba's disk cache
# is keyed to this file (after an edit to _math32's _poly alone, clear __pycache__)
def _loop_exp2_32(out, x):
    for i in range(x.shape[0]):
        out[i] = exp2_32(x[i])
