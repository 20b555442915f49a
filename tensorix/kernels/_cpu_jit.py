"""numba kernels for the CPU, imported only by ``_cpu.jit_kernel`` (which falls back to the
ops' NumPy code when this import or a compile fails). Compiled code is cached next to this
file (``cache=True``); the kernels release the GIL, so ``_threads.blockwise`` runs them on
the library's threads.

Each kernel repeats, per element, the float32 operations of the NumPy block kernel it
replaces, in the same order (numba contracts no multiply-add without fastmath), so both give
the same bits; tests/test_threads_elementwise.py checks them against each other.
"""

import types

import llvmlite.ir
import numba
import numba.extending
import numpy as np

from . import _math32

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


def _recompile():
    """``_math32``'s bodies as scalar functions (inlined), over a copy of its namespace in
    which the helpers are the scalar ones above, and its element loops compiled over them."""
    ns = dict(vars(_math32))
    ns.update(_sel=_sel, _bits=_bits, _float=_float, _tofloat=_tofloat, _sqrt=_sqrt)
    for name in _math32.BODIES:
        fn = getattr(_math32, name)
        ns[name] = _inline(types.FunctionType(fn.__code__, ns, name, fn.__defaults__))
    return {name: _jit(types.FunctionType(getattr(_math32, "_loop_" + name).__code__, ns,
                                          name))
            for name in _math32.KERNELS + _math32.GRAD_KERNELS}


# ``exp32(out, x)`` etc. on 1-d float32 arrays: _math32's kernel of that name, in one pass
globals().update(_recompile())
