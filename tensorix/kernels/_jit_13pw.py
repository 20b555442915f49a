"""numba kernels of the pointwise ops of issue 13's elementwise table (sign, clamp, nan_to_num,
frac, floor_divide, copysign, lerp, rsqrt, addcmul, addcdiv, exp2), imported by ``_cpu_jit.py``
(so ``_cpu.jit`` / ``jit_kernel`` reach them by name). This module imports nothing of
``_cpu_jit`` at module level (that would be an import cycle): ``exp2_32``, which needs its
scalar forms of ``_math32``, is built on first access (the module's ``__getattr__``).

Each takes 1-d float32 arrays (``out`` first) and is one pass written branch-free (selects and
bit operations) so that LLVM vectorises it; each computes, element by element, the float32
operations of the NumPy form its op keeps as fallback, in the same order, so both give the same
bits. Constants are float32 scalars: a Python float would make numba's arithmetic float64.
"""

import math
import types

import numba
import numba.extending
import numpy as np

from . import _exp2_32, _math32
from ._jit_13gelu import fma as _fma  # torch's vec::fmadd in lerp and addcmul

# _cpu_jit's options (its _jit): cached, GIL released, NumPy's float errors (no check per
# element, which would keep LLVM from vectorising)
_jit = numba.njit(boundscheck=False, cache=True, nogil=True, error_model="numpy")

__all__ = ["sign32", "clamp32", "nan_to_num32", "frac32", "copysign32", "rsqrt32", "lerp32",
           "addcmul32", "addcdiv32", "floor_divide32", "exp2_32"]  # noqa: F822 - exp2_32: __getattr__

_ZERO, _ONE = np.float32(0), np.float32(1)
_INF = np.float32(np.inf)


@_jit
def sign32(out, x):
    """out = (x > 0) - (x < 0): torch's sign (nan and -0.0 give +0.0)."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = (_ONE if v > 0 else _ZERO) - (_ONE if v < 0 else _ZERO)


@_jit
def clamp32(out, x, lo, hi):
    """out = hi if (x < lo ? lo : x) > hi, else that: torch's clamp by scalar bounds (an x
    equal to a bound is kept, so -0.0 stays -0.0; nan stays; hi wins where lo > hi). The
    caller passes -inf / inf for a missing bound and takes nan bounds elsewhere."""
    for i in range(x.shape[0]):
        v = x[i]
        v = lo if v < lo else v
        out[i] = hi if v > hi else v


@_jit
def nan_to_num32(out, x, nan, posinf, neginf):
    """out = nan where x is nan, posinf where x is inf, neginf where -inf, else x."""
    for i in range(x.shape[0]):
        v = x[i]
        r = nan if v != v else v
        r = posinf if v == _INF else r
        out[i] = neginf if v == -_INF else r


@_jit
def frac32(out, x):
    """out = x - trunc(x) (inf gives nan, as NumPy's and torch's)."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v - np.trunc(v)


@_jit
def copysign32(out, a, b):
    """out = a's magnitude bits with b's sign bit (LLVM's copysign: a bit operation, nan
    payloads kept, as C's)."""
    for i in range(a.shape[0]):
        out[i] = math.copysign(a[i], b[i])


@_jit
def rsqrt32(out, x):
    """out = 1 / sqrt(x), two correctly rounded float32 operations (torch's and NumPy's)."""
    for i in range(x.shape[0]):
        out[i] = _ONE / np.sqrt(x[i])


@_jit
def lerp32(out, s, e, w):
    """torch's vectorised lerp: fma(w, e - s, s) where |w| < 0.5, else fma(w - 1, e - s, e)
    (one rounding each); ``w`` of length 1 (one weight for all) or of s's length."""
    if w.shape[0] == 1:
        wv = w[0]
        small = abs(wv) < 0.5
        coeff = wv if small else wv - _ONE
        if small:
            for i in range(s.shape[0]):
                out[i] = _fma(coeff, e[i] - s[i], s[i])
        else:
            for i in range(s.shape[0]):
                out[i] = _fma(coeff, e[i] - s[i], e[i])
        return
    for i in range(s.shape[0]):
        wv = w[i]
        small = abs(wv) < 0.5
        out[i] = _fma(wv if small else wv - _ONE, e[i] - s[i], s[i] if small else e[i])


@_jit
def addcmul32(out, x, t1, t2, value):
    """out = fma(value * t1, t2, x): torch's vectorised addcmul."""
    for i in range(x.shape[0]):
        out[i] = _fma(value * t1[i], t2[i], x[i])


@_jit
def addcdiv32(out, x, t1, t2, value):
    """out = x + value * t1 / t2, in torch's order ((value t1) / t2, then the sum)."""
    for i in range(x.shape[0]):
        out[i] = x[i] + value * t1[i] / t2[i]


@_jit
def floor_divide32(out, a, mod, b):
    """out = floor(a / b) as NumPy's npy_floor_divide (and torch's div_floor) compute it, from
    ``mod`` = fmod(a, b) (``_cpu_jit.fmod32``'s, exact): div = (a - mod) / b, one less where
    mod's sign differs from b's, then snapped to the nearest integer; a / b where b is 0. ``b``
    of length 1 (one divisor) or of a's length."""
    one = b.shape[0] == 1
    half = np.float32(0.5)
    for i in range(a.shape[0]):
        x = a[i]
        y = b[0] if one else b[i]
        m = mod[i]
        q = x / y
        div = (x - m) / y
        div = div - _ONE if (m != 0 and (y < 0) != (m < 0)) else div
        fl = np.floor(div)
        fl = fl + _ONE if div - fl > half else fl
        res = fl if div != 0 else math.copysign(_ZERO, q)
        out[i] = q if y == 0 else res


def _exp2_loop(cpu_jit):
    """``_exp2_32``'s loop over its body in scalar form (``_cpu_jit``'s scalar helpers and
    ``_math32`` bodies)."""
    ns = dict(vars(_exp2_32))
    ns.update((k, cpu_jit._SCALAR[k]) for k in ("_sel", "_bits", "_float", "_tofloat",
                                                 "_sqrt") + _math32.BODIES)
    cpu_jit._scalars(_exp2_32, ("_scale", "exp2_32"), ns)
    return _jit(types.FunctionType(_exp2_32._loop_exp2_32.__code__, ns, "exp2_32"))


def __getattr__(name):
    """``exp2_32(out, x)`` on 1-d float32 arrays: 2^x within ``_exp2_32.EXP2_ULP``, built on
    first access, once ``_cpu_jit`` has its scalar helpers (importing it here may itself ask
    for exp2_32, through its ``import *`` of this module: then that inner call builds it)."""
    if name != "exp2_32":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import _cpu_jit

    if "exp2_32" not in globals():
        globals()["exp2_32"] = _exp2_loop(_cpu_jit)
    return globals()["exp2_32"]
