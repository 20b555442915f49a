"""The order primitives: the integer positions that sorting, selecting and searching compute.

sort, argsort, topk, kthvalue, median, quantile (``ops/sort.py``), argmax/argmin and max/min
along a dim (``ops/reduce.py``) and searchsorted/bucketize are composites of these and of
``indexing.Gather``: a primitive computes the int64 positions, a Gather takes the values. So
the positions are a node of a traced graph, recomputed for new inputs (they were raw arrays
computed outside the dispatcher, which a trace replayed and export refused), and gradients flow
through Gather's backward (a ScatterAdd of the saved index tensor: ops, not raw arrays, so a
compiled joint graph records it). The positions have no gradient.

Order is torch's: NaN sorts as the largest value, sorts are stable (descending keeps equal
elements in input order), argmax/argmin return the first extreme (a NaN counts as one).
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function

__all__ = ["ArgSort", "ArgExtreme", "SearchSorted", "order", "median_position"]


def order(data, dim, descending, xp):
    """Stable sort order along ``dim``; descending keeps equal elements in input order."""
    if not descending:
        return xp.argsort(data, axis=dim, kind="stable")
    idx = xp.argsort(xp.flip(data, axis=dim), axis=dim, kind="stable")
    return xp.flip(data.shape[dim] - 1 - idx, axis=dim)


def median_position(s, n, dim, xp, ignore_nan):
    """Position, in the sorted rows ``s`` (NaN last) of length ``n``, of the lower median:
    a row with NaN gives its first NaN, unless ``ignore_nan`` (the median of the others; an
    all-NaN row gives its first element)."""
    if s.dtype.kind == "f" or "float" in s.dtype.name:
        nans = xp.isnan(s).sum(axis=dim, keepdims=True)
    else:
        nans = xp.zeros(tuple(1 if i == dim else k for i, k in enumerate(s.shape)), np.int64)
    if ignore_nan:
        m = n - nans
        return xp.where(m > 0, (m - 1) // 2, 0).astype(np.int64)
    return xp.where(nans > 0, n - nans, (n - 1) // 2).astype(np.int64)


class ArgSort(Function):
    """The int64 positions that sort ``a`` along ``dim`` (stable; NaN largest), the first
    ``k`` of them when ``k`` is not None (topk's). ``a`` has at least one dim."""

    _differentiable = False
    _codes = "math"  # storage-code formats: ordered by their values

    @staticmethod
    def forward(ctx, a, dim, descending, k):
        idx = order(a._data, dim, descending, a.xp)
        if k is not None:
            idx = a.xp.take(idx, a.xp.arange(k), axis=dim)
        return idx.astype(np.int64, copy=False)


class ArgExtreme(Function):
    """Position of the maximum (``fn`` "argmax") or minimum ("argmin") along ``dim`` (of the
    flattened ``a`` when None; its ``keepdim`` shape is then all ones): the first one on ties,
    NaN counting as the extreme."""

    _differentiable = False
    _codes = "math"

    @staticmethod
    def forward(ctx, a, fn, dim, keepdim):
        xp, data = a.xp, a._data
        if dim is None:
            idx = getattr(xp, fn)(data.reshape(-1))
            return xp.asarray(idx, dtype=np.int64).reshape((1,) * data.ndim if keepdim else ())
        if data.ndim == 0:
            return xp.zeros((), dtype=np.int64)
        return getattr(xp, fn)(data, axis=dim, keepdims=keepdim).astype(np.int64, copy=False)


class SearchSorted(Function):
    """Insertion points of ``values`` into the rows of ``seq`` (sorted along its last dim; a
    1-d ``seq`` serves every value, else its leading dims match ``values``'): ``side`` "left"
    counts the row's elements ordered before a value, "right" those not after it (NaN
    largest, as numpy and torch search). ``out_dtype``: int64 or int32 (a numpy dtype)."""

    _differentiable = False
    _codes = "math"

    @staticmethod
    def forward(ctx, seq, values, side, out_dtype):
        xp, s, v = seq.xp, seq._data, values._data
        if s.ndim == 1:
            return xp.searchsorted(s, v, side=side).astype(out_dtype)
        rows_s, rows_v = s.reshape(-1, s.shape[-1]), v.reshape(-1, v.shape[-1])
        if not rows_s.shape[0]:
            return xp.zeros(v.shape, dtype=out_dtype)
        out = xp.stack([xp.searchsorted(r, w, side=side) for r, w in zip(rows_s, rows_v)])
        return out.reshape(v.shape).astype(out_dtype)
