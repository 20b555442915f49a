"""Symbolics of the order primitives (``ops/order.py``): sort positions as ONNX TopK, argmax and
argmin as ArgMax/ArgMin, searchsorted as torch's binary search unrolled, the full median, and
cummax/cummin (``reduce.CumExtreme``) as a comparison of every pair of positions.

torch's order is kept: NaN is the largest value, equal elements keep their input order
(ascending and descending), argmax/argmin return the first extreme and a NaN counts as one.
onnxruntime's TopK sorts NaN as the largest and breaks ties by the lower index (the ONNX spec
fixes the ties; NaN is onnxruntime's choice, which the tests check); its ArgMax/ArgMin skip
NaN, so the first NaN's position is chosen explicitly where a slice has one.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..ops import order, reduce
from ._emit import Value
from ._symbolic import _reduce, refuse, symbolic, typed

__all__ = ["median_all"]


def _orderable(em, node, a) -> Value:
    """``a`` in a type onnxruntime's TopK, ArgMax and ArgMin take, converted exactly (so the
    order is the same): 16-bit floats to float32, small integers and bool to int32."""
    d = a.dtype
    if d in (dt.float32, dt.float64, dt.int32, dt.int64):
        return a
    if d.category >= 2 and not d.is_complex:
        return typed(em, a, dt.float32)
    if d in (dt.bool, dt.int8, dt.int16, dt.uint8):
        return typed(em, a, dt.int32)
    raise refuse(em, node, f"ordering {d.name} values")


def _is_float(v) -> bool:
    return v.dtype.category >= 2


def _length(em, a, dim):
    """``a``'s size along ``dim`` as a 1-d int64 input (read from the shape when dynamic)."""
    if dim in a.dynamic:
        return em.op("Slice", em.op("Shape", a), em.ints([dim]), em.ints([dim + 1]))
    return em.ints([a.shape[dim]])


@symbolic(order.ArgSort)
def arg_sort(em, node, a, dim, descending, k):
    """The sort positions: TopK of all elements (or of the first ``k``), sorted."""
    x = _orderable(em, node, a)
    dim %= a.ndim
    count = _length(em, a, dim) if k is None else em.ints([k])
    _, positions = em.op("TopK", x, count, axis=dim, largest=int(bool(descending)), sorted=1,
                         n_out=2)
    return positions


@symbolic(order.ArgExtreme)
def arg_extreme(em, node, a, fn, dim, keepdim):
    """ArgMax/ArgMin (the first extreme); where a slice has a NaN, the first NaN's position
    (the ArgMax of the NaN mask), as in eager."""
    x = _orderable(em, node, a)
    flat = dim is None or a.ndim == 0
    if flat:
        x = Value(em.op("Reshape", x, em.ints([-1])), (int(np.prod(a.shape)),), x.dtype)
        axis, keep = 0, 0
    else:
        axis, keep = dim % a.ndim, int(keepdim)
    out = em.op("ArgMax" if fn == "argmax" else "ArgMin", x, axis=axis, keepdims=keep)
    if _is_float(x):
        nan = Value(em.op("Cast", em.op("IsNaN", x), to=1), x.shape, dt.float32)  # to float
        first = em.op("ArgMax", nan, axis=axis, keepdims=keep)
        has = _reduce(em, "ReduceMax", nan, [axis], keep)
        out = em.op("Where", em.cast(Value(has, (), dt.float32), dt.bool), first, out)
    if flat and keepdim:
        out = em.op("Reshape", out, em.ints([1] * a.ndim))
    return out


@symbolic(order.SearchSorted)
def search_sorted(em, node, seq, values, side, out_dtype):
    """torch's binary search unrolled: ``bit_length(n)`` steps, each a gather of the middle
    elements, one comparison and two Wheres, for every value at once (eager runs the same
    steps where a row is not sorted), so the graph equals eager on any sequence."""
    common = dt.promote_types(seq.dtype, values.dtype)
    if common is dt.bool or common.is_complex:
        raise refuse(em, node, f"searchsorted on {common.name}")
    if seq.dynamic:
        raise refuse(em, node, "a search whose sequence has dynamic dims (the step count "
                               "follows its length)")
    s, v = em.cast(seq, common), em.cast(values, common)
    n = seq.shape[-1]
    shape = em.op("Shape", v)

    def i64(value):
        return em.const(np.int64(value))

    start, end = em.op("Expand", i64(0), shape), em.op("Expand", i64(n), shape)
    for _ in range(int(n).bit_length()):
        active = em.op("Less", start, end)
        mid = em.op("Add", start, em.op("Div", em.op("Sub", end, start), i64(2)))
        at = em.op("Min", mid, i64(n - 1))
        got = em.op("Gather", s, at, axis=0) if seq.ndim == 1 else \
            em.op("GatherElements", s, at, axis=seq.ndim - 1)
        past = em.op("Not", em.op("Greater" if side == "right" else "GreaterOrEqual", got, v))
        start = em.op("Where", em.op("And", active, past), em.op("Add", mid, i64(1)), start)
        end = em.op("Where", em.op("And", active, em.op("Not", past)), mid, end)
    return em.cast(Value(start, node.meta["shape"], dt.int64), node.meta["dtype"])


def median_all(em, node, a, how):
    """The lower median of all elements: sort positions by TopK, the median's rank from the
    NaN count (a NaN gives the first NaN; nanmedian, the median of the others, or the first
    element when all are NaN), one Gather."""
    flat = Value(em.op("Reshape", a, em.ints([-1])), (int(np.prod(a.shape)),), a.dtype)
    size = em.op("Reshape", em.op("Size", a), em.ints([1]))
    _, positions = em.op("TopK", _orderable(em, node, flat), size, axis=0, largest=0,
                         sorted=1, n_out=2)
    n = em.op("Size", a)
    one, two, zero = (em.const(np.int64(v)) for v in (1, 2, 0))
    middle = em.op("Div", em.op("Sub", n, one), two)  # both >= 0: Div's truncation floors
    if not _is_float(a):
        rank = middle
    else:
        nans = em.op("ReduceSum", em.op("Cast", em.op("IsNaN", flat), to=7), em.ints([0]),
                     keepdims=0)  # to int64
        if how == "median":
            rank = em.op("Where", em.op("Greater", nans, zero), em.op("Sub", n, nans), middle)
        else:
            m = em.op("Sub", n, nans)
            rank = em.op("Where", em.op("Greater", m, zero),
                          em.op("Div", em.op("Sub", m, one), two), zero)
    return em.op("Gather", flat, em.op("Gather", positions, rank, axis=0), axis=0)


@symbolic(reduce.CumExtreme)
def cum_extreme(em, node, a, dim, ufunc):
    """cummax / cummin, which ONNX has no scan for, as an O(n^2) comparison along ``dim``:
    for each position i, the extreme of the elements j <= i, and the latest such j holding
    it (from a NaN on, the latest NaN), as eager and torch; the values gathered there."""
    if a.dtype is dt.bool or a.dynamic:
        raise refuse(em, node, "cummax/cummin of bools or along dynamic dims")
    nd, dim = a.ndim, dim % a.ndim
    n = a.shape[dim]
    perm = [d for d in range(nd) if d != dim] + [dim]
    back = [perm.index(d) for d in range(nd)]
    x = Value(em.op("Transpose", a, perm=perm), tuple(a.shape[d] for d in perm), a.dtype)
    c = _orderable(em, node, x)  # compared in a type onnxruntime's Where and Reduce* take
    cols = em.op("Unsqueeze", c, em.ints([-2]))  # [.., i, j] reads x_j
    upto = em.const(np.tril(np.ones((n, n), dtype=bool)))  # j <= i
    is_max = ufunc == "maximum"
    if c.dtype.category >= 2:
        fill = -np.inf if is_max else np.inf
    else:
        info = np.iinfo(c.dtype.np)
        fill = info.min if is_max else info.max
    seen = upto
    if a.dtype.category >= 2:
        nan = em.op("IsNaN", cols)
        seen = em.op("And", upto, em.op("Not", nan))
    pair = (x.shape[:-1]) + (n, n)
    best = _reduce(em, "ReduceMax" if is_max else "ReduceMin",
                   Value(em.op("Where", seen, cols, em.const(fill, c.dtype)), pair, c.dtype),
                   [nd], True)  # [.., i, 1]
    hit = em.op("And", upto, em.op("Equal", cols, best))
    if a.dtype.category >= 2:  # a NaN at or before i: the latest NaN
        nan_upto = em.op("And", upto, nan)
        any_nan = _reduce(em, "ReduceMax", Value(em.op("Cast", nan_upto, to=7), pair, dt.int64),
                          [nd], True)
        after_nan = em.cast(Value(any_nan, pair, dt.int64), dt.bool)
        hit = em.op("Or", em.op("And", after_nan, nan_upto),  # no Where on bools in ORT
                    em.op("And", em.op("Not", after_nan), hit))
    positions = em.const(np.arange(n, dtype=np.int64))
    candidates = em.op("Where", hit, positions, em.const(np.int64(-1)))
    latest = _reduce(em, "ReduceMax", Value(candidates, pair, dt.int64), [nd], False)
    values = em.op("GatherElements", x, latest, axis=nd - 1)
    return [em.op("Transpose", values, perm=back), em.op("Transpose", latest, perm=back)]
