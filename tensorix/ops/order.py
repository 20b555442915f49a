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
    """Insertion points of ``values`` into the rows of ``seq`` (its last dim; a 1-d ``seq``
    serves every value, else its leading dims match ``values``'): torch's binary search
    (``side`` "left": the first position whose element is not below the value, "right": not
    at or below it), step for step, so the result is torch's on any input: a sequence with
    NaN or one not sorted too, where a search has no single right answer. ``out_dtype``: a
    numpy int64 or int32."""

    _differentiable = False
    _codes = "math"

    @staticmethod
    def forward(ctx, seq, values, side, out_dtype):
        xp = seq.xp
        common = np.promote_types(seq._data.dtype, values._data.dtype)
        s, v = seq._data.astype(common, copy=False), values._data.astype(common, copy=False)
        if s.shape[-1] == 0:
            return xp.zeros(v.shape, dtype=out_dtype)
        if _sorted_rows(s, xp):  # one right answer: numpy's search finds it (in C)
            if s.ndim == 1:
                return xp.searchsorted(s, v, side=side).astype(out_dtype)
            rows_s, rows_v = s.reshape(-1, s.shape[-1]), v.reshape(-1, v.shape[-1])
            out = [xp.searchsorted(r, w, side=side) for r, w in zip(rows_s, rows_v)]
            return (xp.stack(out).reshape(v.shape) if out else
                    xp.zeros(v.shape, np.int64)).astype(out_dtype)  # no rows
        return binary_search(s, v, side == "right", xp).astype(out_dtype)


def _sorted_rows(s, xp) -> bool:
    """Whether every row is non-decreasing without NaN (a NaN compares false either way)."""
    if s.shape[-1] < 2:
        return not (s.dtype.kind == "f" and bool(xp.isnan(s).any()))
    return bool((s[..., 1:] >= s[..., :-1]).all())


def binary_search(s, v, right, xp):
    """torch's ``cus_lower_bound`` / ``cus_upper_bound`` for every value at once: ``start``
    moves past ``mid`` unless ``s[mid] >= v`` (``> v`` for ``right``), ``bit_length(n)``
    halvings in all (each halves the interval)."""
    n = s.shape[-1]
    start = xp.zeros(v.shape, np.int64)
    end = xp.full(v.shape, n, np.int64)
    with np.errstate(invalid="ignore"):
        for _ in range(int(n).bit_length()):
            active = start < end
            mid = start + ((end - start) >> 1)
            at = xp.minimum(mid, n - 1)
            got = s[at] if s.ndim == 1 else xp.take_along_axis(s, at, axis=-1)
            past = ~(got > v) if right else ~(got >= v)
            start = xp.where(active & past, mid + 1, start)
            end = xp.where(active & ~past, mid, end)
    return start
