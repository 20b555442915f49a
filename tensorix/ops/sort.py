"""Sorting and order statistics: sort, argsort, msort, topk, kthvalue, median, nanmedian,
quantile, nanquantile, mode, unique, unique_consecutive, searchsorted, bucketize.

Positions are computed by the order primitives of ``order.py`` (a stable sort, NaN as the
largest value, as in PyTorch) and the values taken from them by ``indexing.Gather``, so a
traced graph recomputes both for new inputs, gradients go to the selected elements and double
backward works. unique and searchsorted return data without gradients.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import dtypes as dt
from ..autograd.function import Function
from ..tensor import Tensor, _make
from ._along import return_type, scan
from ._common import check_tensor, norm_dim
from .indexing import Gather
from .order import ArgSort, SearchSorted
from .pointwise import isnan, where
from .reduce import EvenSelect

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "quantile",
           "nanquantile", "mode", "unique", "unique_consecutive", "searchsorted", "bucketize"]

_SORT, _TOPK, _KTH = return_type("sort"), return_type("topk"), return_type("kthvalue")
_MEDIAN, _NANMEDIAN, _MODE = return_type("median"), return_type("nanmedian"), return_type("mode")
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _as_1d(x):
    """0-d tensors are sorted as one-element vectors (PyTorch accepts dim 0 / -1 for them)."""
    return x.reshape(1) if x.ndim == 0 else x


def _dim0(x, dim, op):
    check_tensor(x, op)
    return norm_dim(dim, x.ndim, op)


def _scalar_back(input, values, ind):
    """0-d inputs were sorted as one-element vectors: their results are 0-d again."""
    if input.ndim == 0:
        return values.reshape(()), ind.reshape(())
    return values, ind


def sort(input, dim=-1, descending=False, stable=False):
    """Sort along ``dim``: a ``(values, indices)`` named tuple. The sort is always stable
    (``stable`` is accepted for PyTorch compatibility); NaN sorts as the largest value.

    Shapes: both outputs have the input's shape. Example:
    ``tensorix.tensor([3., 1., 2.]).sort(descending=True)`` gives values ``[3., 2., 1.]`` and
    indices ``[0, 2, 1]``.
    """
    d = _dim0(input, dim, "sort")
    x = _as_1d(input)
    ind = ArgSort.apply(x, d, bool(descending), None)
    return _SORT(*_scalar_back(input, Gather.apply(x, d, ind), ind))


def argsort(input, dim=-1, descending=False, stable=False) -> Tensor:
    """The int64 indices that sort ``input`` along ``dim`` (stable, see :func:`sort`).

    Example: ``tensorix.tensor([2, 1, 2, 1]).argsort(descending=True)`` is
    ``tensor([0, 2, 1, 3])``.
    """
    d = _dim0(input, dim, "argsort")
    return ArgSort.apply(_as_1d(input), d, bool(descending), None).reshape(input.shape)


def msort(input) -> Tensor:
    """``sort(input, dim=0).values``. Example: ``tensorix.msort(tensorix.tensor([2., 1.]))``."""
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - torch's name
    """The ``k`` largest (or smallest) elements along ``dim``: ``(values, indices)``, in sorted
    order (``sorted=False`` is allowed and returns them sorted too); equal elements keep their
    input order.

    Shapes: ``(3, 5)`` with ``k=2`` gives ``(3, 2)``. Example:
    ``tensorix.tensor([1., 4., 2.]).topk(2)`` gives values ``[4., 2.]``, indices ``[1, 2]``.
    """
    d = _dim0(input, dim, "topk")
    x = _as_1d(input)
    n = x.shape[d]
    if not isinstance(k, (int, np.integer)) or not 0 <= k <= n:
        raise RuntimeError(f"topk(): selected index k out of range (k={k}, size of dim {d} is "
                           f"{n})")
    ind = ArgSort.apply(x, d, bool(largest), int(k))
    return _TOPK(*_scalar_back(input, Gather.apply(x, d, ind), ind))


def _taken(input, x, d, ind, keepdim, rtype):
    """``(values, indices)`` at the int64 positions ``ind`` (the dim kept) along ``d``: the
    values are a Gather, so gradients reach the selected elements."""
    values = Gather.apply(x, d, ind)
    if not keepdim and input.ndim > 0:
        values, ind = values.squeeze(d), ind.squeeze(d)
    return rtype(*_scalar_back(input, values, ind))


def _nonempty(x, d, op):
    if x.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest element (1-based) along ``dim``: ``(values, indices)``.

    Example: ``tensorix.tensor([3., 1., 2.]).kthvalue(2)`` gives value ``2.``, index ``2``.
    """
    d = _dim0(input, dim, "kthvalue")
    x = _as_1d(input)
    n = x.shape[d]
    if not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    ind = ArgSort.apply(x, d, False, int(k)).narrow(d, int(k) - 1, 1)
    return _taken(input, x, d, ind, keepdim, _KTH)


def _median_dim(input, dim, keepdim, op, ignore_nan, rtype):
    """Lower median along ``dim``; NaN rows give their first NaN (``ignore_nan``: the median
    of the others; all NaN: the row's first element). The position in sorted order is
    computed with ops from the row's NaN count, so it stays a function of the input."""
    d = _dim0(input, dim, op)
    x = _as_1d(input)
    _nonempty(x, d, op)
    n = x.shape[d]
    order = ArgSort.apply(x, d, False, None)
    if x._dtype.category < 2:  # no NaN: the middle, a fixed position
        return _taken(input, x, d, order.narrow(d, (n - 1) // 2, 1), keepdim, rtype)
    nans = isnan(x).sum(d, keepdim=True)
    if ignore_nan:
        m = n - nans
        pos = where(m > 0, (m - 1) // 2, 0)
    else:
        pos = where(nans > 0, n - nans, (n - 1) // 2)
    return _taken(input, x, d, Gather.apply(order, d, pos), keepdim, rtype)


def _median_all(input, how):
    """median() of all elements; ties at the median share the gradient, as in PyTorch."""
    if not input.numel():
        return _make(input.xp.full((), np.nan, dtype=input._data.dtype))
    return EvenSelect.apply(input, how, tuple(range(input.ndim)), False)


def median(input, dim=None, keepdim=False):
    """The lower median (of an even count, the smaller middle value). Without ``dim``: a value
    over all elements (NaN if any element is NaN); with ``dim``: ``(values, indices)``.

    Example: ``tensorix.tensor([[1., 3., 2., 4.]]).median(1)`` gives value ``2.``, index ``2``.
    """
    check_tensor(input, "median")
    if dim is None:
        return _median_all(input, "median")
    return _median_dim(input, dim, keepdim, "median", False, _MEDIAN)


def nanmedian(input, dim=None, keepdim=False):
    """:func:`median` ignoring NaN (NaN only where all elements are NaN). Example:
    ``tensorix.tensor([1., float('nan'), 3., 2.]).nanmedian()`` is ``tensor(2.)``."""
    check_tensor(input, "nanmedian")
    if dim is None:
        return _median_all(input, "nanmedian")
    return _median_dim(input, dim, keepdim, "nanmedian", True, _NANMEDIAN)


def _check_q(input, q, op):
    """Validate ``q`` and return it as a 1-d tensor of the input's dtype plus whether it was
    a scalar."""
    if input._dtype not in (dt.float32, dt.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if not input.numel():
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
        if q._dtype is not input._dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
        qa = q._data.reshape(-1)
        if not bool(((qa >= 0) & (qa <= 1)).all()):
            raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
        return q.reshape(-1), q.ndim == 0
    if not isinstance(q, numbers.Real) or not 0 <= q <= 1:
        raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q}")
    return _make(input.xp.asarray([q], dtype=input._data.dtype)), True


def _quantile(input, q, dim, keepdim, interpolation, op, ignore_nan):
    check_tensor(input, op)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    qt, scalar = _check_q(input, q, op)
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        d = norm_dim(dim, input.ndim, op)
        x = _as_1d(input)
    xs = sort(x, d).values
    perm = tuple(k for k in range(xs.ndim) if k != d) + (d,)
    xs = xs.permute(perm)  # rows x n, sorted (NaN last)
    n, nq = xs.shape[-1], qt.shape[0]
    # torch's ranks, in the input's dtype: q * (count - 1), a NaN row at its last element
    nans = isnan(xs).sum(-1, keepdim=True)
    qb = qt.reshape((nq,) + (1,) * xs.ndim)
    if ignore_nan:
        m = (n - nans).to(xs.dtype)
        rank = where(m > 0, qb * (m - 1), 0)  # an all-NaN row reads its first (NaN) element
    else:
        rank = where(nans > 0, n - 1, qb * (n - 1))
    rank = rank.expand((nq,) + tuple(xs.shape[:-1]) + (1,))
    out = _interpolate(xs.unsqueeze(0).expand((nq,) + tuple(xs.shape)), rank, interpolation)
    out = out.reshape(out.shape[:-1])  # (Q, rows...)
    if keepdim:
        kept = (1,) * input.ndim if dim is None else _keep(input.shape, d)
        out = out.reshape((nq,) + kept)
    return out.reshape(out.shape[1:]) if scalar else out


def _keep(shape, d):
    return tuple(1 if i == d else s for i, s in enumerate(shape))


def _interpolate(xs, rank, interpolation):
    """Values of sorted rows ``xs`` at fractional positions ``rank`` (last axis)."""
    if interpolation == "nearest":
        rank = rank.round()  # half to even, as torch.round
    lower = rank.floor().to(dt.int64)
    if interpolation in ("lower", "nearest"):
        return Gather.apply(xs, xs.ndim - 1, lower)
    upper = rank.ceil().to(dt.int64)
    if interpolation == "higher":
        return Gather.apply(xs, xs.ndim - 1, upper)
    below, above = Gather.apply(xs, xs.ndim - 1, lower), Gather.apply(xs, xs.ndim - 1, upper)
    w = 0.5 if interpolation == "midpoint" else (rank - rank.floor()).detach()
    return below + (above - below) * w


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear") -> Tensor:
    """The ``q``-quantiles (``q`` a number or 1-d tensor in [0, 1]) along ``dim`` (of all
    elements when None); ``interpolation`` between the neighbouring sorted values is one of
    'linear', 'lower', 'higher', 'midpoint', 'nearest'. A row with NaN gives NaN.

    Shapes: a 1-d ``q`` of length Q prepends a dim: ``(3, 4)``, ``dim=1`` gives ``(Q, 3)``.
    Example: ``tensorix.quantile(tensorix.tensor([1., 2., 3., 4.]), 0.5)`` is ``2.5``.
    """
    return _quantile(input, q, dim, keepdim, interpolation, "quantile", False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear") -> Tensor:
    """:func:`quantile` ignoring NaN (NaN only where all of a row is NaN). Example:
    ``tensorix.nanquantile(tensorix.tensor([1., float('nan'), 3.]), 0.5)`` is ``2.``."""
    return _quantile(input, q, dim, keepdim, interpolation, "nanquantile", True)


class ModeRank(Function):
    """Position, in rows sorted along ``dim``, ending the first longest run of equal values:
    the smallest most frequent value at its last occurrence in the input (int64, the dim
    kept). A primitive so that a trace recomputes it; no ONNX form (run lengths)."""

    _differentiable = False
    _codes = "math"

    @staticmethod
    def forward(ctx, s, dim):
        xp, data = s.xp, s._data
        new = xp.ones(data.shape, dtype=bool)
        cut = [slice(None)] * data.ndim
        prev = [slice(None)] * data.ndim
        cut[dim], prev[dim] = slice(1, None), slice(0, -1)
        new[tuple(cut)] = data[tuple(cut)] != data[tuple(prev)]
        pos = xp.arange(data.shape[dim]).reshape((-1,) + (1,) * (data.ndim - dim - 1))
        start = scan(xp, xp.where(new, pos, 0), dim, xp.maximum)
        return xp.argmax(pos - start + 1, axis=dim, keepdims=True).astype(np.int64)


def mode(input, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest one on ties) and the index of its
    last occurrence: ``(values, indices)``.

    Example: ``tensorix.tensor([1., 2., 2., 1., 3.]).mode()`` gives value ``1.``, index ``3``.
    """
    d = _dim0(input, dim, "mode")
    x = _as_1d(input)
    _nonempty(x, d, "mode")
    order = ArgSort.apply(x, d, False, None)
    pos = ModeRank.apply(Gather.apply(x, d, order), d)
    return _taken(input, x, d, Gather.apply(order, d, pos), keepdim, _MODE)


def _runs(s, xp):
    """Boolean starts of runs of equal values in a 1-d array (NaN never equals NaN)."""
    new = xp.ones(s.shape, dtype=bool)
    if s.shape[0] > 1:
        new[1:] = s[1:] != s[:-1]
    return new


def _results(out, return_inverse, return_counts):
    values, inverse, counts = out
    picked = (values,) + ((inverse,) if return_inverse else ()) + \
        ((counts,) if return_counts else ())
    return picked[0] if len(picked) == 1 else picked


def _counts(new, n, xp):
    starts = xp.nonzero(new)[0]
    return xp.diff(xp.concatenate([starts, xp.asarray([n])])).astype(np.int64)


class Unique(Function):
    """The distinct elements (sorted), each element's int64 position among them, and their
    counts. A primitive although it is no math: its output shape depends on the data, which
    a trace must see (a graph break in tensorix.fx) rather than keep the example's result."""

    _differentiable = False

    @staticmethod
    def forward(ctx, a, dim):
        xp = a.xp
        if dim is not None:
            values, inverse, counts = xp.unique(a._data, return_inverse=True,
                                                return_counts=True, axis=dim)
            return values, inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)
        flat = a._data.reshape(-1)
        order = xp.argsort(flat, kind="stable")
        s = flat[order]
        new = _runs(s, xp)
        inverse = xp.empty(flat.shape, dtype=np.int64)
        inverse[order] = xp.cumsum(new) - 1
        return s[new], inverse.reshape(a._data.shape), _counts(new, s.shape[0], xp)


class UniqueConsecutive(Function):
    """Runs of equal consecutive elements (or slices along ``dim``) collapsed, with the
    inverse and the run lengths; a primitive for the reason :class:`Unique` is."""

    _differentiable = False

    @staticmethod
    def forward(ctx, a, dim):
        xp = a.xp
        if dim is None:
            flat = a._data.reshape(-1)
            new = _runs(flat, xp)
            return (flat[new], (xp.cumsum(new) - 1).reshape(a._data.shape),
                    _counts(new, flat.shape[0], xp))
        moved = xp.moveaxis(a._data, dim, 0)
        n = moved.shape[0]
        new = xp.ones(n, dtype=bool)
        if n > 1:
            diff = (moved[1:] != moved[:-1]).reshape(n - 1, -1)
            new[1:] = diff.any(axis=1)
        return xp.moveaxis(moved[new], 0, dim), xp.cumsum(new) - 1, _counts(new, n, xp)


def unique(input, sorted=True, return_inverse=False, return_counts=False,  # noqa: A002
           dim=None):
    """The distinct elements, sorted (``sorted=False`` also returns them sorted); with
    ``return_inverse`` the int64 position of each input element in the result, with
    ``return_counts`` how often each occurs. NaNs are all distinct, as in PyTorch. ``dim``
    finds unique slices along that dim. No gradient.

    Example: ``tensorix.unique(tensorix.tensor([3, 1, 3]), return_counts=True)`` gives
    ``(tensor([1, 3]), tensor([1, 2]))``.
    """
    check_tensor(input, "unique")
    d = None if dim is None else norm_dim(dim, input.ndim, "unique")
    return _results(Unique.apply(input, d), return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive elements (of the flattened input, or of slices
    along ``dim``); ``return_inverse`` / ``return_counts`` as in :func:`unique`. No gradient.

    Example: ``tensorix.unique_consecutive(tensorix.tensor([1, 1, 2, 1]))`` is
    ``tensor([1, 2, 1])``.
    """
    check_tensor(input, "unique_consecutive")
    d = None if dim is None else norm_dim(dim, input.ndim, "unique_consecutive")
    return _results(UniqueConsecutive.apply(input, d), return_inverse, return_counts)


def _side(op, right, side):
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"{op}(): side can only be 'left' or 'right' but got {side!r}")
        if right and side == "left":
            raise RuntimeError(f"{op}(): side and right can't be set to opposites, got side "
                               "of left while right was True")
        return side
    return "right" if right else "left"


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None) -> Tensor:
    """Insertion points of ``input`` into ``sorted_sequence`` along its last dim (a 1-d
    sequence, or one whose leading dims match ``input``'s). ``right``/``side='right'`` puts
    equal values after their matches. ``input`` may be a number (0-d result). No gradient.

    Example: ``tensorix.searchsorted(tensorix.tensor([1, 3, 5]), tensorix.tensor([3, 4]))``
    is ``tensor([1, 2])``.
    """
    check_tensor(sorted_sequence, "searchsorted", "sorted_sequence")
    side = _side("searchsorted", right, side)
    seq = sorted_sequence
    if sorter is not None:
        check_tensor(sorter, "searchsorted", "sorter")
        if tuple(sorter.shape) != tuple(seq.shape) or sorter._dtype is not dt.int64:
            raise RuntimeError(f"searchsorted(): expected sorter to be an int64 tensor of the "
                               f"boundaries' shape {list(seq.shape)}, got {sorter._dtype.name} "
                               f"of shape {list(sorter.shape)}")
        seq = Gather.apply(seq, seq.ndim - 1, sorter)
    vals = input if isinstance(input, Tensor) else \
        _make(seq.xp.asarray(input, dtype=seq._data.dtype))  # a number: a 0-d constant
    if seq.ndim != 1 and (vals.ndim != seq.ndim or vals.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError(f"searchsorted(): boundaries tensor should be 1 dimension or the "
                           f"first N-1 dimensions of boundaries tensor and input value tensor "
                           f"must match, but we got boundaries tensor {list(seq.shape)} and "
                           f"input value tensor {list(vals.shape)}")
    return SearchSorted.apply(seq, vals, side, np.int32 if out_int32 else np.int64)


def bucketize(input, boundaries, *, out_int32=False, right=False) -> Tensor:
    """The bucket of each element of ``input`` given 1-d increasing ``boundaries``: index
    ``i`` with ``boundaries[i-1] < x <= boundaries[i]`` (``<=`` / ``<`` swapped with
    ``right=True``). No gradient.

    Example: ``tensorix.bucketize(tensorix.tensor([3, 4]), tensorix.tensor([1, 3, 5]))`` is
    ``tensor([1, 2])``.
    """
    check_tensor(boundaries, "bucketize", "boundaries")
    if boundaries.ndim != 1:
        raise RuntimeError(f"bucketize(): boundaries tensor must be 1 dimension, but got "
                           f"dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


TENSOR_METHODS = {
    "sort": sort, "argsort": argsort, "msort": msort, "topk": topk, "kthvalue": kthvalue,
    "median": median, "nanmedian": nanmedian, "quantile": quantile,
    "nanquantile": nanquantile, "mode": mode, "unique": unique,
    "unique_consecutive": unique_consecutive,
}
