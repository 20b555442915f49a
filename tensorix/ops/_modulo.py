"""fmod and remainder's forward (``elementwise.Fmod``, ``Remainder``): float32 through one
numba pass (``kernels/_cpu_jit.py``: ``fmod32``, ``remainder32``, the same bits as NumPy's
ufuncs, which the C library's bit-by-bit fmodf made ~20x slower than torch), everything else
(other dtypes, broadcasting but by a scalar divisor, GPU arrays, no numba) through the ufunc.
"""

from __future__ import annotations

import numpy as np

from .. import _threads, kernels

__all__ = ["modulo"]


def _kernel(name):
    one = np.ones(1, np.float32)
    return kernels.jit_kernel(name + "32", np.empty(1, np.float32), one, one)


def modulo(fn, a, b, xp):
    """``xp.fmod(a, b)`` (``fn`` "fmod") or ``xp.remainder(a, b)`` on arrays ``a``, ``b``."""
    if (type(a) is np.ndarray and type(b) is np.ndarray and a.dtype == b.dtype == np.float32
            and (b.shape == a.shape or b.size == 1 and b.ndim <= a.ndim) and a.size):
        fused = _kernel(fn)
        if fused is not None:
            x = np.ascontiguousarray(a).reshape(-1)
            y = np.ascontiguousarray(b).reshape(-1)
            out = np.empty(x.shape, np.float32)
            one = y.size == 1 and x.size != 1
            _threads.parallel(x.size, lambda lo, hi: fused(
                out[lo:hi], x[lo:hi], y if one else y[lo:hi]), _threads.CHEAP)
            return out.reshape(a.shape)
    return _threads.ufunc(getattr(xp, fn), a, b, min_part=_threads.CHEAP)
