"""numba kernels for the CPU, imported only by ``_cpu.jit_kernel`` (which falls back to the
ops' NumPy code when this import or a compile fails). Compiled code is cached next to this
file (``cache=True``); the kernels release the GIL, so ``_threads.blockwise`` runs them on
the library's threads.

Each kernel repeats, per element, the float32 operations of the NumPy block kernel it
replaces, in the same order (numba contracts no multiply-add without fastmath), so both give
the same bits; tests/test_threads_elementwise.py checks them against each other.
"""

import math
import types

import llvmlite.ir
import numba
import numba.extending
import numpy as np

from . import _gates, _math32
from ._jit_13gelu import fma as _fma

# error_model="numpy": a float division by zero gives inf, as in NumPy (the default raises,
# and its check per element keeps LLVM from vectorising the loop)
_jit = numba.njit(boundscheck=False, cache=True, nogil=True, error_model="numpy")


# -- the float32 math of _math32.py, element by element ----------------------------------------
# The same source recompiled with the scalar forms of its helpers: a select, and bit casts as
# LLVM bitcasts (which vectorise), so both forms run the same float32 operations.
@numba.extending.intrinsic
def _bitcast_f2i(typingctx, x):
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], llvmlite.ir.IntType(32))
    return numba.types.int32(numba.types.float32), codegen


@numba.extending.intrinsic
def _bitcast_i2f(typingctx, i):
    def codegen(context, builder, sig, args):
        v = args[0]
        if v.type.width != 32:
            v = builder.trunc(v, llvmlite.ir.IntType(32))
        return builder.bitcast(v, llvmlite.ir.FloatType())
    return numba.types.float32(i), codegen


_inline = numba.njit(inline="always")


@_inline
def _sel(c, a, b):
    return a if c else b


@_inline
def _bits(x):
    return _bitcast_f2i(x)


@_inline
def _float(i):
    return _bitcast_i2f(i)


@_inline
def _tofloat(i):
    return np.float32(i)


@_inline
def _sqrt(x):
    return np.sqrt(x)


def _scalars(module, names, ns):
    """``module``'s functions ``names`` as scalar functions (inlined) over ``ns``."""
    for name in names:
        fn = getattr(module, name)
        ns[name] = _inline(types.FunctionType(fn.__code__, ns, name, fn.__defaults__))
    return ns


@_inline
def _wide(x):
    return np.float64(x)


@_inline
def _narrow(x):
    return np.float32(x)


def _recompile():
    """``_math32``'s bodies as scalar functions (inlined), over a copy of its namespace in
    which the helpers are the scalar ones above, and its element loops compiled over them."""
    ns = dict(vars(_math32))
    ns.update(_sel=_sel, _bits=_bits, _float=_float, _tofloat=_tofloat, _sqrt=_sqrt,
              _wide=_wide, _narrow=_narrow, _fma=_fma)
    _SCALAR.update(_scalars(_math32, _math32.BODIES, ns))
    return {name: _jit(types.FunctionType(getattr(_math32, "_loop_" + name).__code__, ns,
                                          name))
            for name in _math32.KERNELS + _math32.GRAD_KERNELS + _math32.BINARY + _math32.SCANS}


_SCALAR: dict = {}  # _math32's namespace with its bodies in scalar form (the gate loops use it)


# ``exp32(out, x)`` etc. on 1-d float32 arrays: _math32's kernel of that name, in one pass
globals().update(_recompile())


# -- the recurrent layers' gate loops (_gates.py) ------------------------------------------------
# One source, compiled twice: over float32 activations (_gates' tanh32 / sigmoid32 on exp32,
# which vectorise) and float64 ones (the C library's tanh, as NumPy's float64 path). Each is a
# numba function of its own name (numba's disk cache is keyed by name and by _gates.py: after
# an edit to _math32's exp32 alone, clear __pycache__ to rebuild them).
def _gate_namespace():
    ns = dict(vars(_gates))
    ns.update((k, _SCALAR[k]) for k in ("_sel", "_bits", "_float", "_tofloat", "_sqrt")
              + _math32.BODIES)  # _math32's scalar forms replace its NumPy ones
    return _scalars(_gates, _gates.SCALARS, ns)


@_inline
def _sigmoid64(x):
    return 0.5 * np.tanh(0.5 * x) + 0.5  # the NumPy path's formula


@_inline
def _tanh64(x):
    return np.tanh(x)


def _gate_loops():
    """{name: f(*arrays)} for _gates.LOOPS: the float32 or float64 build, by the first
    array's dtype (the float64 one compiles on its first call)."""
    ns32 = _gate_namespace()
    ns32.update(_sig=ns32["sigmoid32"], _tanh=ns32["tanh32"], _ONE=np.float32(1))
    ns64 = dict(ns32, _sig=_sigmoid64, _tanh=_tanh64, _ONE=np.float64(1))
    loops = {}
    for name in _gates.LOOPS:
        code = getattr(_gates, "_loop_" + name).__code__
        table = {np.dtype(dt): _jit(types.FunctionType(
            code.replace(co_name=name + bits, co_qualname=name + bits), ns, name + bits))
            for dt, bits, ns in ((np.float32, "32", ns32), (np.float64, "64", ns64))}
        loops[name] = lambda *arrays, _t=table: _t[arrays[0].dtype](*arrays)
    return loops


# lstm_forward(acts, gemm, x, c_prev, c, tc, h) etc. on 2-d arrays: see _gates.py
globals().update(_gate_loops())


# -- the regularised incomplete gamma, element by element -------------------------------------
# ops/special.py's igamma_kernel with its series and continued fraction stopped per element at
# the same test (it freezes converged elements, so both add the same terms): the same float64
# arithmetic; only the prefactor's exp, log and lgamma are the C library's here (within an ulp
# of NumPy's, so the float32 results agree but for a boundary tie, about once in 10^8).
@numba.njit(inline="always")
def _igamma_inner(a, x, upper, tol):
    if x < a + 1.0:  # P by its series
        term = 1.0 / a
        total = term
        ap = a
        for _ in range(5000):
            ap = ap + 1.0
            term = term * x / ap
            total = total + term
            if not abs(term) > abs(total) * tol:
                break
        p = total * np.exp(a * np.log(x) - x - math.lgamma(a))
        return 1.0 - p if upper else p
    tiny = 1e-300  # Q by Lentz's method
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 5000):
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h = h * delta
        if not abs(delta - 1.0) > tol:
            break
    q = h * np.exp(a * np.log(x) - x - math.lgamma(a))
    return q if upper else 1.0 - q


@_jit
def igamma64(out, a, x, upper, tol):
    """out = P(a, x) (``upper`` False) or Q(a, x) on 1-d float64 arrays; ``tol`` the
    convergence test of igamma_kernel (its edge values first, in its order)."""
    inf = np.inf
    for i in range(x.shape[0]):
        ai, xi = a[i], x[i]
        if ai != ai or xi != xi or ai < 0 or xi < 0 or (ai == 0 and xi == 0) or \
                (ai == inf and xi == inf):
            out[i] = np.nan
        elif (xi == 0 and ai > 0) or (ai == inf and xi >= 0):
            out[i] = 1.0 if upper else 0.0
        elif (ai == 0 and xi > 0) or (xi == inf and ai > 0):
            out[i] = 0.0 if upper else 1.0
        else:
            out[i] = _igamma_inner(ai, xi, upper, tol)


@_jit
def _scan_row(vals, idx, x, is_max):
    """One row's running extreme (1-d C-contiguous arrays), torch's rule. Why this shape:
    between two new extremes the inner loop compares against a constant ``best`` (no chain
    through a select per element, which made the plain loop 2.5x slower), and the indices
    are unsigned (numba adds a wraparound test to every signed index: 2x more). A nan ends
    the runs; from it on only a later nan moves the index."""
    n = numba.uint64(x.shape[0])
    one = numba.uint64(1)
    i = numba.uint64(0)
    while i < n:  # i: a new extreme (the first element, or one that beat/tied ``best``)
        best = x[i]
        at = i
        if best != best:
            break
        vals[i] = best
        idx[i] = at
        i += one
        if is_max:
            while i < n and x[i] < best:  # a nan or a tie ends the run
                vals[i] = best
                idx[i] = at
                i += one
        else:
            while i < n and x[i] > best:
                vals[i] = best
                idx[i] = at
                i += one
    while i < n:  # from the first nan on (x[i] is one): the latest nan
        v = x[i]
        if v != v:
            best = v
            at = i
        vals[i] = best
        idx[i] = at
        i += one


@_jit
def cumextreme(vals, idx, x, is_max):
    """The running maximum (``is_max``) or minimum along axis 1 of the 3-d C-contiguous
    array ``x`` into ``vals``, with in ``idx`` the position it was taken from: torch's rule,
    the latest on ties, and nan once seen (the latest nan's position)."""
    if x.shape[2] == 1:  # along the last axis: rows scanned one by one
        n = x.shape[1]
        for o in range(x.shape[0]):
            _scan_row(vals[o].reshape(n), idx[o].reshape(n), x[o].reshape(n), is_max)
        return
    for o in range(x.shape[0]):
        for k in range(x.shape[2]):
            vals[o, 0, k] = x[o, 0, k]
            idx[o, 0, k] = 0
        for i in range(1, x.shape[1]):
            for k in range(x.shape[2]):
                v = x[o, i, k]
                best = vals[o, i - 1, k]
                take = v != v or (best == best and ((v >= best) if is_max else (v <= best)))
                vals[o, i, k] = v if take else best
                idx[o, i, k] = i if take else idx[o, i - 1, k]


# -- piecewise-linear activations of slope 0 or 1 (ops/activation.py's _Gate) ------------------
# Each is its NumPy form element by element (selects and one subtraction: the same values).
@_jit
def hardshrink(out, x, lambd):
    """out = 0 where -lambd <= x <= lambd, else x (nan stays)."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = 0 if (v >= -lambd and v <= lambd) else v


@_jit
def softshrink(out, x, lambd):
    """out = x - clip(x, -lambd, lambd) (nan stays)."""
    for i in range(x.shape[0]):
        v = x[i]
        c = -lambd if v < -lambd else v
        c = lambd if c > lambd else c
        out[i] = v - c


@_jit
def threshold(out, x, th, value):
    """out = value where x <= th, else x (nan stays, as in torch)."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = value if v <= th else v


@_jit
def angle_real(out, x, pi):
    """out = torch's angle of a real x: x where nan, pi where x < 0, else 0 (-0 too)."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v if v != v else (pi if v < 0 else 0)


@_jit
def hardswish(out, x, zero, three, six):
    """out = x * clip(x + 3, 0, 6) / 6 in that order (torch's; nan stays); the constants in
    x's dtype (a Python 3 would make the float32 arithmetic float64)."""
    for i in range(x.shape[0]):
        v = x[i]
        c = v + three
        c = zero if c < zero else c
        c = six if c > six else c
        out[i] = v * c / six


# elu's negative side on _math32's float32 expm1 (its scalar form, inlined: after an edit to
# _math32's expm1_32 alone, clear __pycache__ to rebuild this one, as for the gate loops)
_expm1_32 = _SCALAR["expm1_32"]


@_jit
def elu32(out, x, pos, neg, ipt):
    """out = x pos where x > 0, else expm1_32(x ipt) neg (torch's ELU with its coefficients
    poscoef, negcoef = alpha scale, negiptcoef); float32 arrays and scalars."""
    for i in range(x.shape[0]):
        v = x[i]
        e = _expm1_32(v * ipt) * neg
        out[i] = v * pos if v > 0 else e



# -- float32 fmod and remainder (ops/_modulo.py) --------------------------------------------------
# The C library's fmodf reduces bit by bit (~22 ns an element here, 20x torch's vectorised loop).
# fmod is exact, so it can be computed exactly another way: in float64, q = trunc(a / b), and
# a - q b is exact while |q| < 2^29 (q b then fits 53 bits). q is the true quotient's integer
# part: for float32 a, b, a / b lies at least ~2^-24 from any integer it is not (a - n b is a
# nonzero multiple of the smaller ulp of a and b), more than half an ulp of a float64 quotient
# below 2^29, so rounding the division never crosses an integer. Other quotients (huge, inf,
# nan, a zero divisor) take the C library's fmod. The same bits as NumPy's np.fmod; remainder
# then repeats NumPy's npy_divmodf on that fmod, in float32.
_Q_EXACT = float(1 << 29)


@_inline
def _fmod_fast(x, y):
    """fmod of two float32 values given as float64, exact for quotients below 2^29 (above),
    with selects only (so the loop vectorises); returns (value, whether the quotient was in
    range: else the value is to be replaced by the C library's)."""
    q = np.trunc(x / y)
    ok = abs(q) < _Q_EXACT
    r = x if q == 0 or not ok else x - q * y  # q == 0: x (an infinite y: not 0 * inf)
    return math.copysign(abs(r), x), ok  # a zero takes x's sign


@_jit
def _fmod_pass(out, a, b):
    """out = fmod(a, b) in float64 on 1-d float32 arrays (b of length 1: one divisor);
    returns how many quotients were out of range (their ``out`` still to be done)."""
    bad = 0
    if b.shape[0] == 1:
        y = np.float64(b[0])
        for i in range(a.shape[0]):
            r, ok = _fmod_fast(np.float64(a[i]), y)
            out[i] = r
            bad += not ok
    else:
        for i in range(a.shape[0]):
            r, ok = _fmod_fast(np.float64(a[i]), np.float64(b[i]))
            out[i] = r
            bad += not ok
    return bad


@_jit
def _fmod64(out, a, b):
    """float64 fmod of 1-d float32 arrays into ``out`` (float64): the fast pass, then the C
    library's fmod for the quotients it could not take."""
    if _fmod_pass(out, a, b) == 0:
        return
    one = b.shape[0] == 1
    for i in range(a.shape[0]):
        x, y = np.float64(a[i]), np.float64(b[0] if one else b[i])
        if not abs(np.trunc(x / y)) < _Q_EXACT:
            out[i] = np.fmod(x, y)


@_jit
def fmod32(out, a, b):
    """out = fmod(a, b) on 1-d float32 arrays (b of length 1: one divisor for all)."""
    wide = np.empty(a.shape[0], np.float64)
    _fmod64(wide, a, b)
    for i in range(a.shape[0]):
        out[i] = np.float32(wide[i])


@_jit
def remainder32(out, a, b):
    """out = a mod b with b's sign (NumPy's npy_divmodf on the exact fmod), 1-d float32."""
    wide = np.empty(a.shape[0], np.float64)
    _fmod64(wide, a, b)
    one = b.shape[0] == 1
    for i in range(a.shape[0]):
        y = b[0] if one else b[i]
        m = np.float32(wide[i])
        if y == 0:
            out[i] = m
        elif m != 0:
            out[i] = m + y if (y < 0) != (m < 0) else m
        else:
            out[i] = np.float32(math.copysign(0.0, y))
from ._jit_13act import *  # noqa: E402,F401,F403
from ._jit_13pw import *  # noqa: E402,F401,F403
from ._jit_13red import *  # noqa: E402,F401,F403
from ._jit_13spec import *  # noqa: E402,F401,F403
