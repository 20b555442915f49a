"""Symbolics of the counting primitives with a fixed output shape: ``stats.Histc`` as a
one-hot count of each element's bin (torch's bin formula, in the input's precision),
``indexing.NonzeroStatic`` as ONNX NonZero padded with the fill value and cut to ``size``
rows, ``combine.IsIn`` as a count of equal pairs. (``histogram`` is not written yet;
``bincount`` and ``nonzero`` have data-dependent output shapes.)"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..ops import combine, indexing, stats
from ._emit import Value
from ._symbolic import _reduce, refuse, symbolic, typed

__all__: list = []


def _finite_range(em, x):
    """(lo, hi) names of the finite values' min and max as ``Histc.forward`` picks them:
    ``[-1, 1]`` without a finite value, ``[v - 1, v + 1]`` where all equal ``v``."""
    inf = em.scalar(np.inf, x)
    finite = em.op("Not", em.op("Or", em.op("IsNaN", x), em.op("IsInf", x)))
    lo = _reduce(em, "ReduceMin", Value(em.op("Where", finite, x, inf), x.shape, x.dtype), None,
                 False)
    hi = _reduce(em, "ReduceMax", Value(em.op("Where", finite, x, em.op("Neg", inf)), x.shape,
                                        x.dtype), None, False)
    none = em.op("Greater", lo, hi)  # no finite value (or no element): the range of 0
    zero, one = em.scalar(0, x), em.scalar(1, x)
    lo, hi = em.op("Where", none, zero, lo), em.op("Where", none, zero, hi)
    same = em.op("Equal", lo, hi)
    return (em.op("Where", same, em.op("Sub", lo, one), lo),
            em.op("Where", same, em.op("Add", hi, one), hi))


@symbolic(stats.Histc)
def histc(em, node, a, bins, min, max):  # noqa: A002 - torch's names
    if a.dtype not in (dt.float32, dt.float64):
        raise refuse(em, node, f"histc of {a.dtype.name} (float32 and float64 are written)")
    x = Value(em.op("Reshape", a, em.ints([-1])), (-1,), a.dtype)
    wide = a.dtype.np.type
    if min == max == 0:
        lo, hi = _finite_range(em, x)
    else:
        lo, hi = wide(min), wide(max)
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if not (lo < hi and np.isfinite(lo) and np.isfinite(hi)):
            raise refuse(em, node, "an empty or infinite range (eager raises)")
        lo, hi = em.scalar(lo, x), em.scalar(hi, x)
    inside = em.op("And", em.op("GreaterOrEqual", x, lo), em.op("LessOrEqual", x, hi))
    scaled = em.op("Div", em.op("Mul", em.op("Sub", x, lo), em.scalar(bins, x)),
                   em.op("Sub", hi, lo))
    # an outside or NaN element's position is masked out below, whatever Cast makes of it
    # int64, truncated toward zero (the values kept are >= 0): torch's bin
    pos = em.cast(em.op("Where", inside, scaled, em.scalar(0, x)), dt.int64)
    last = em.const(np.int64(bins - 1))
    pos = em.op("Where", em.op("Greater", pos, last), last, pos)
    slots = em.const(np.arange(bins, dtype=np.int64))
    hit = em.op("And", em.op("Equal", em.op("Unsqueeze", pos, em.ints([1])), slots),
                em.op("Unsqueeze", inside, em.ints([1])))
    return em.op("ReduceSum", em.cast(hit, a.dtype), em.ints([0]), keepdims=0)


@symbolic(indexing.NonzeroStatic)
def nonzero_static(em, node, a, size, fill_value):
    if a.ndim == 0:
        raise refuse(em, node, "a 0-d input (ONNX NonZero takes it as 1-d)")
    x = a if a.dtype in (dt.float32, dt.float64, dt.int32, dt.int64, dt.bool, dt.uint8) else \
        typed(em, a, dt.float32)  # zero stays zero and nonzero stays nonzero
    rows = em.op("Transpose", em.op("NonZero", x), perm=[1, 0])  # (n, ndim), row-major order
    pad = em.const(np.full((size, a.ndim), fill_value, dtype=np.int64))
    both = em.op("Concat", rows, pad, axis=0)
    return em.op("Slice", both, em.ints([0]), em.ints([size]), em.ints([0]))


@symbolic(combine.IsIn)
def isin(em, node, a, b, assume_unique, invert):
    """Each element compared with every test element (numpy's rule: NaN is in nothing); the
    values compared in int64 when both are integers, else in float64 (exact for both)."""
    kinds = [v.dtype for v in (a, b) if isinstance(v, Value)]
    ints = all(d.category <= 1 for d in kinds) and all(
        isinstance(v, (bool, int, np.integer)) for v in (a, b) if not isinstance(v, Value))
    common = dt.int64 if ints else dt.float64
    shape = a.shape if isinstance(a, Value) else ()
    left = em.cast(a, common) if isinstance(a, Value) else em.const(np.asarray(a), common)
    right = em.op("Reshape", em.cast(b, common), em.ints([-1])) if isinstance(b, Value) else \
        em.const(np.asarray([b]), common)
    hit = em.op("Equal", em.op("Unsqueeze", left, em.ints([-1])), right)
    count = _reduce(em, "ReduceSum", Value(em.cast(hit, dt.int32), shape + (-1,), dt.int32),
                    len(shape), False)
    found = em.op("Greater", count, em.const(np.int32(0)))
    return em.op("Not", found) if invert else found
