"""Symbolics of the counting primitives with a fixed output shape: ``stats.Histc`` as a
one-hot count of each element's bin (torch's bin formula, in the input's precision),
``indexing.NonzeroStatic`` as ONNX NonZero padded with the fill value and cut to ``size``
rows, ``combine.IsIn`` as a count of equal pairs, ``stats.Histogram`` as a one-hot (weighted)
count of each element's bin among its edges. (``bincount`` and ``nonzero`` have
data-dependent output shapes.)"""

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


def _linspace(em, lo, hi, n, like):
    """NumPy's ``linspace(lo, hi, n)`` in float64 (``lo + i * ((hi - lo) / (n - 1))``, the
    last exactly ``hi``) from two 0-d float64 names, cast to ``like``'s dtype: the edges
    ``Histogram.forward`` makes from the data's range."""
    f64 = em.const(np.arange(n, dtype=np.float64))
    step = em.op("Div", em.op("Sub", hi, lo), em.const(np.float64(n - 1)))
    edges = em.op("Add", em.op("Mul", f64, step), lo)
    last = em.const(np.arange(n) == n - 1)
    return em.cast(Value(em.op("Where", last, hi, edges), (n,), dt.float64), like.dtype)


@symbolic(stats.Histogram)
def histogram(em, node, a, bins, range, weight, density):  # noqa: A002 - torch's names
    """(hist, bin_edges) as eager computes them: the edges given, or a linspace over
    ``range`` (a constant) or the data's min and max (ReduceMin/ReduceMax, widened by 0.5
    where equal); each element's bin is the count of edges at or below it, minus one (NumPy's
    searchsorted on the right), the last edge in the last bin; the counts (the weights) are
    summed in float64 over a one-hot of the bins."""
    if a.dtype not in (dt.float32, dt.float64):
        raise refuse(em, node, f"histogram of {a.dtype.name} (float32 and float64 are written)")
    x = Value(em.op("Reshape", a, em.ints([-1])), (-1,), a.dtype)
    if isinstance(bins, Value):
        nbins = bins.shape[0] - 1
        edges = em.cast(bins, a.dtype)
    elif range is not None:
        nbins = bins
        lo, hi = range
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = em.const(np.linspace(lo, hi, bins + 1).astype(a.dtype.np))
    else:
        if 0 in a.shape:
            raise refuse(em, node, "an empty input without a range")
        nbins = bins
        lo = em.cast(Value(_reduce(em, "ReduceMin", x, None, False), (), a.dtype), dt.float64)
        hi = em.cast(Value(_reduce(em, "ReduceMax", x, None, False), (), a.dtype), dt.float64)
        same = em.op("Equal", lo, hi)
        half = em.const(np.float64(0.5))
        lo = em.op("Where", same, em.op("Sub", lo, half), lo)
        hi = em.op("Where", same, em.op("Add", hi, half), hi)
        edges = _linspace(em, lo, hi, bins + 1, a)
    first = em.op("Gather", edges, em.const(np.int64(0)), axis=0)
    last = em.op("Gather", edges, em.const(np.int64(-1)), axis=0)
    column = em.op("Unsqueeze", x, em.ints([1]))
    below = em.cast(Value(em.op("GreaterOrEqual", column, em.op("Unsqueeze", edges,
                                                                 em.ints([0]))),
                          (-1, nbins + 1), dt.bool), dt.int64)
    pos = em.op("Sub", em.op("ReduceSum", below, em.ints([1]), keepdims=0),
                em.const(np.int64(1)))
    pos = em.op("Where", em.op("Equal", x, last), em.const(np.int64(nbins - 1)), pos)
    keep = em.op("And", em.op("GreaterOrEqual", x, first), em.op("LessOrEqual", x, last))
    slots = em.const(np.arange(nbins, dtype=np.int64))
    hit = em.op("And", em.op("Equal", em.op("Unsqueeze", pos, em.ints([1])), slots),
                em.op("Unsqueeze", keep, em.ints([1])))
    counts = em.cast(Value(hit, (-1, nbins), dt.bool), dt.float64)
    if weight is not None:
        w = em.op("Reshape", em.cast(weight, dt.float64), em.ints([-1, 1]))
        counts = em.op("Mul", counts, w)
    hist = em.op("ReduceSum", counts, em.ints([0]), keepdims=0)
    if density:
        wide = em.cast(Value(edges, (nbins + 1,), a.dtype), dt.float64)
        widths = em.op("Sub", em.op("Slice", wide, em.ints([1]), em.ints([nbins + 1])),
                       em.op("Slice", wide, em.ints([0]), em.ints([nbins])))
        total = em.op("ReduceSum", hist, em.ints([0]), keepdims=1)
        hist = em.op("Div", hist, em.op("Mul", total, widths))
    return [em.cast(Value(hist, (nbins,), dt.float64), a.dtype), edges]


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
