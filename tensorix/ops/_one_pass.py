"""The float32 fast path of the pointwise ops (issue 13): a numba kernel of
``kernels/_jit_13pw.py`` run in one pass over C-contiguous float32 NumPy arrays of one shape.

Why: NumPy's forms of these ops take several passes (clamp's maximum then minimum, lerp's
where over two formulas, addcmul's two temporaries) or loops it does not vectorise (sign,
nan_to_num's masks, float floor_divide's scalar fmod), 3-20x torch's time on 1M elements. The
kernels compute the same float32 operations in the same order, so each op's NumPy form, kept
for every other case (other dtypes, strided or broadcast operands, GPU arrays, no numba), gives
the same bits.
"""

from __future__ import annotations

import numpy as np

from .. import _threads
from ..kernels._fma32 import fma32  # re-exported: lerp's and addcmul's NumPy form

__all__ = ["fast32", "one_pass", "example32", "fma32", "MIN_SIZE"]

# Below this many elements the NumPy forms are as fast: a kernel call costs ~5 us more than
# the raw ufuncs (the kernel lookup, numba's argument checks), measured on 64 elements
MIN_SIZE = 1 << 12


def fast32(*arrays, min_size=None) -> bool:
    """True where every array is a C-contiguous float32 NumPy array of at least ``min_size``
    elements (default :data:`MIN_SIZE`), all of one shape: the case the kernels take."""
    first = arrays[0]
    if type(first) is not np.ndarray or first.dtype != np.float32 or \
            first.size < max(1, MIN_SIZE if min_size is None else min_size):
        return False
    shape = first.shape
    return all(type(a) is np.ndarray and a.dtype == np.float32 and a.shape == shape
               and a.flags.c_contiguous for a in arrays)


def one_pass(fused, arrays, params=(), min_part=None):
    """``fused(out, *arrays, *params)`` on the flattened arrays (see :func:`fast32`) into a
    new float32 array of their shape, split over the pool by ``_threads.elementwise`` where
    parts of ``min_part`` elements gain (default, for memory-bound kernels: CHEAP, so 1M
    elements stay on one thread, where a split costs a thread wake). ``params`` go whole to
    every part.

    Example: ``one_pass(k, (x,))`` with ``k = jit_kernel("sign32", ...)`` is ``sign(x)``.
    """
    min_part = _threads.CHEAP if min_part is None else min_part  # (read per call: tests shrink it)
    out = np.empty(arrays[0].shape, np.float32)
    if out.size < 2 * min_part:  # the common case: one call, no split plan
        fused(out.reshape(-1), *[a.reshape(-1) for a in arrays], *params)
        return out
    return _threads.elementwise(
        lambda o, *xs: fused(o.reshape(-1), *[v.reshape(-1) for v in xs], *params),
        out, *arrays, min_part=min_part)


def example32(arrays: int, *params):
    """The compile example of a kernel taking ``arrays`` 1-d float32 arrays after ``out`` and
    then ``params``: for ``kernels.jit(name, ("float32",), example32(1, ...))``."""
    return lambda: (np.empty(1, np.float32),) + tuple(
        np.ones(1, np.float32) for _ in range(arrays)) + params
