"""Sorting and order statistics: sort, argsort, msort, topk, kthvalue, median, nanmedian,
quantile, nanquantile, mode, unique, unique_consecutive, searchsorted, bucketize.

Indices are computed on the raw arrays with a stable sort (NaN sorts as the largest value, as
in PyTorch); values are taken with ``_along.TakeAlong``, so gradients go to the selected
elements and double backward works. unique and searchsorted return data without gradients.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import dtypes as dt
from ..tensor import Tensor, _make
from ._along import TakeAlong, return_type, scan
from ._common import check_tensor, norm_dim
from .reduce import EvenSelect

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "quantile",
           "nanquantile", "mode", "unique", "unique_consecutive", "searchsorted", "bucketize"]

_SORT, _TOPK, _KTH = return_type("sort"), return_type("topk"), return_type("kthvalue")
_MEDIAN, _NANMEDIAN, _MODE = return_type("median"), return_type("nanmedian"), return_type("mode")
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _as_1d(x):
    """0-d tensors are sorted as one-element vectors (PyTorch accepts dim 0 / -1 for them)."""
    return x.reshape(1) if x.ndim == 0 else x


def _order(data, dim, descending, xp):
    """Stable sort order along ``dim``; descending keeps equal elements in input order."""
    if not descending:
        return xp.argsort(data, axis=dim, kind="stable")
    idx = xp.argsort(xp.flip(data, axis=dim), axis=dim, kind="stable")
    return xp.flip(data.shape[dim] - 1 - idx, axis=dim)


def _pick(x, idx, d, keepdim, squeeze_ok=True):
    """Values at raw positions ``idx`` (kept dim of size 1) and the int64 indices tensor."""
    values = TakeAlong.apply(x, idx, d)
    ind = _make(idx.astype(np.int64))
    if not keepdim and squeeze_ok:
        shape = tuple(s for i, s in enumerate(values.shape) if i != d)
        values, ind = values.reshape(shape), ind.reshape(shape)
    return values, ind


def _dim0(x, dim, op):
    check_tensor(x, op)
    return norm_dim(dim, x.ndim, op)


def sort(input, dim=-1, descending=False, stable=False):
    """Sort along ``dim``: a ``(values, indices)`` named tuple. The sort is always stable
    (``stable`` is accepted for PyTorch compatibility); NaN sorts as the largest value.

    Shapes: both outputs have the input's shape. Example:
    ``tensorix.tensor([3., 1., 2.]).sort(descending=True)`` gives values ``[3., 2., 1.]`` and
    indices ``[0, 2, 1]``.
    """
    d = _dim0(input, dim, "sort")
    x = _as_1d(input)
    idx = _order(x._data, d, descending, x.xp)
    values, ind = _pick(x, idx, d, True)
    if input.ndim == 0:
        values, ind = values.reshape(()), ind.reshape(())
    return _SORT(values, ind)


def argsort(input, dim=-1, descending=False, stable=False) -> Tensor:
    """The int64 indices that sort ``input`` along ``dim`` (stable, see :func:`sort`).

    Example: ``tensorix.tensor([2, 1, 2, 1]).argsort(descending=True)`` is
    ``tensor([0, 2, 1, 3])``.
    """
    d = _dim0(input, dim, "argsort")
    idx = _order(_as_1d(input)._data, d, descending, input.xp)
    return _make(idx.astype(np.int64).reshape(input.shape))


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
    idx = _order(x._data, d, largest, x.xp)
    sl = [slice(None)] * x.ndim
    sl[d] = slice(0, int(k))
    values, ind = _pick(x, idx[tuple(sl)], d, True)
    if input.ndim == 0:
        values, ind = values.reshape(()), ind.reshape(())
    return _TOPK(values, ind)


def _select_rank(input, dim, keepdim, op, rank_fn, rtype):
    """Values and indices at a per-row sorted position chosen by ``rank_fn(sorted, n)``."""
    d = _dim0(input, dim, op)
    x = _as_1d(input)
    xp = x.xp
    if x.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    order = _order(x._data, d, False, xp)
    s = xp.take_along_axis(x._data, order, axis=d)
    pos = rank_fn(s, x.shape[d], d, xp)
    idx = xp.take_along_axis(order, pos, axis=d)
    values, ind = _pick(x, idx, d, keepdim, input.ndim > 0)
    if input.ndim == 0:
        values, ind = values.reshape(()), ind.reshape(())
    return rtype(values, ind)


def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest element (1-based) along ``dim``: ``(values, indices)``.

    Example: ``tensorix.tensor([3., 1., 2.]).kthvalue(2)`` gives value ``2.``, index ``2``.
    """
    d = _dim0(input, dim, "kthvalue")
    n = _as_1d(input).shape[d]
    if not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")

    def rank(s, n, d, xp):
        return xp.full(_keep(s.shape, d), int(k) - 1, dtype=np.int64)

    return _select_rank(input, dim, keepdim, "kthvalue", rank, _KTH)


def _keep(shape, d):
    return tuple(1 if i == d else s for i, s in enumerate(shape))


def _nan_count(s, d, xp):
    if s.dtype.kind != "f" and "float" not in s.dtype.name:
        return xp.zeros(_keep(s.shape, d), dtype=np.int64)
    return xp.isnan(s).sum(axis=d, keepdims=True)


def _median_rank(s, n, d, xp):
    """Lower median; a row with NaN gives its first NaN (NaNs sort last)."""
    nans = _nan_count(s, d, xp)
    return xp.where(nans > 0, n - nans, (n - 1) // 2).astype(np.int64)


def _nanmedian_rank(s, n, d, xp):
    """Lower median of the non-NaN elements; an all-NaN row gives its first element."""
    m = n - _nan_count(s, d, xp)
    return xp.where(m > 0, (m - 1) // 2, 0).astype(np.int64)


def _median_all(input, op, rank_fn):
    """median() of all elements; ties at the median share the gradient, as in PyTorch."""
    xp = input.xp
    if not input.numel():
        return _make(xp.full((), np.nan, dtype=input._data.dtype))

    def value(data, xp):  # inside the primitive: a traced graph recomputes it
        flat = data.reshape(-1)
        s = xp.sort(flat, kind="stable")
        pos = rank_fn(s.reshape(-1), flat.shape[0], 0, xp)
        return s[int(pos.reshape(-1)[0])].reshape(())

    return EvenSelect.apply(input, value, tuple(range(input.ndim)), False)


def median(input, dim=None, keepdim=False):
    """The lower median (of an even count, the smaller middle value). Without ``dim``: a value
    over all elements (NaN if any element is NaN); with ``dim``: ``(values, indices)``.

    Example: ``tensorix.tensor([[1., 3., 2., 4.]]).median(1)`` gives value ``2.``, index ``2``.
    """
    check_tensor(input, "median")
    if dim is None:
        return _median_all(input, "median", _median_rank)
    return _select_rank(input, dim, keepdim, "median", _median_rank, _MEDIAN)


def nanmedian(input, dim=None, keepdim=False):
    """:func:`median` ignoring NaN (NaN only where all elements are NaN). Example:
    ``tensorix.tensor([1., float('nan'), 3., 2.]).nanmedian()`` is ``tensor(2.)``."""
    check_tensor(input, "nanmedian")
    if dim is None:
        return _median_all(input, "nanmedian", _nanmedian_rank)
    return _select_rank(input, dim, keepdim, "nanmedian", _nanmedian_rank, _NANMEDIAN)


def _check_q(input, q, op):
    """Validate ``q`` and return it as a raw 1-d array plus whether it was a scalar."""
    if input._dtype not in (dt.float32, dt.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if not input.numel():
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    xp = input.xp
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
        if q._dtype is not input._dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
        qa = q._data.reshape(-1)
        if not bool(((qa >= 0) & (qa <= 1)).all()):
            raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
        return qa, q.ndim == 0
    if not isinstance(q, numbers.Real) or not 0 <= q <= 1:
        raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q}")
    return xp.asarray([q], dtype=input._data.dtype), True


def _quantile(input, q, dim, keepdim, interpolation, op, ignore_nan):
    check_tensor(input, op)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    qa, scalar = _check_q(input, q, op)
    xp = input.xp
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        d = norm_dim(dim, input.ndim, op)
        x = _as_1d(input)
    xs = sort(x, d).values
    perm = tuple(k for k in range(xs.ndim) if k != d) + (d,)
    xs = xs.permute(perm)  # rows x n, sorted (NaN last)
    n = xs.shape[-1]
    nans = xp.isnan(xs._data).sum(axis=-1, keepdims=True)
    if ignore_nan:
        m = n - nans
        # an all-NaN row reads its first (NaN) element, as torch
        rank = xp.where(m > 0, qa.reshape((-1,) + (1,) * xs.ndim) * (m - 1), 0)
    else:
        rank = xp.where(nans > 0, n - 1, qa.reshape((-1,) + (1,) * xs.ndim) * (n - 1))
    rank = xp.broadcast_to(rank, (qa.shape[0],) + tuple(xs.shape[:-1]) + (1,))
    out = _interpolate(xs.unsqueeze(0).expand((qa.shape[0],) + tuple(xs.shape)), rank,
                       interpolation, xp)
    out = out.reshape(out.shape[:-1])  # (Q, rows...)
    if keepdim:
        kept = (1,) * input.ndim if dim is None else _keep(input.shape, d)
        out = out.reshape((qa.shape[0],) + kept)
    return out.reshape(out.shape[1:]) if scalar else out


def _interpolate(xs, rank, interpolation, xp):
    """Values of sorted rows ``xs`` at fractional positions ``rank`` (last axis)."""
    if interpolation == "nearest":
        rank = xp.round(rank)  # half to even, as torch.round
    lower = xp.floor(rank).astype(np.int64)
    upper = xp.ceil(rank).astype(np.int64)
    if interpolation in ("lower", "nearest"):
        return TakeAlong.apply(xs, lower, -1)
    if interpolation == "higher":
        return TakeAlong.apply(xs, upper, -1)
    below, above = TakeAlong.apply(xs, lower, -1), TakeAlong.apply(xs, upper, -1)
    w = 0.5 if interpolation == "midpoint" else _make((rank - lower).astype(xs._data.dtype))
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


def _mode_rank(order_sorted, n, d, xp):
    """Position (in sorted order) ending the first longest run of equal values: the smallest
    most frequent value, at its last occurrence in the input."""
    s = order_sorted
    new = xp.ones(s.shape, dtype=bool)
    cut = [slice(None)] * s.ndim
    prev = [slice(None)] * s.ndim
    cut[d], prev[d] = slice(1, None), slice(0, -1)
    new[tuple(cut)] = s[tuple(cut)] != s[tuple(prev)]
    pos = xp.arange(n).reshape((-1,) + (1,) * (s.ndim - d - 1))
    start = scan(xp, xp.where(new, pos, 0), d, xp.maximum)
    run = pos - start + 1
    return xp.argmax(run, axis=d, keepdims=True).astype(np.int64)


def mode(input, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest one on ties) and the index of its
    last occurrence: ``(values, indices)``.

    Example: ``tensorix.tensor([1., 2., 2., 1., 3.]).mode()`` gives value ``1.``, index ``3``.
    """
    return _select_rank(input, dim, keepdim, "mode", _mode_rank, _MODE)


def _runs(s, xp):
    """Boolean starts of runs of equal values in a 1-d array (NaN never equals NaN)."""
    new = xp.ones(s.shape, dtype=bool)
    if s.shape[0] > 1:
        new[1:] = s[1:] != s[:-1]
    return new


def _results(values, inverse, counts, return_inverse, return_counts):
    out = (_make(values),)
    if return_inverse:
        out += (_make(inverse.astype(np.int64)),)
    if return_counts:
        out += (_make(counts.astype(np.int64)),)
    return out[0] if len(out) == 1 else out


def _counts(new, n, xp):
    starts = xp.nonzero(new)[0]
    return xp.diff(xp.concatenate([starts, xp.asarray([n])]))


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
    xp = input.xp
    if dim is not None:
        d = norm_dim(dim, input.ndim, "unique")
        values, inverse, counts = xp.unique(input._data, return_inverse=True,
                                            return_counts=True, axis=d)
        return _results(values, inverse.reshape(-1), counts, return_inverse, return_counts)
    flat = input._data.reshape(-1)
    order = xp.argsort(flat, kind="stable")
    s = flat[order]
    new = _runs(s, xp)
    inverse = xp.empty(flat.shape, dtype=np.int64)
    inverse[order] = xp.cumsum(new) - 1
    return _results(s[new], inverse.reshape(input.shape), _counts(new, s.shape[0], xp),
                    return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive elements (of the flattened input, or of slices
    along ``dim``); ``return_inverse`` / ``return_counts`` as in :func:`unique`. No gradient.

    Example: ``tensorix.unique_consecutive(tensorix.tensor([1, 1, 2, 1]))`` is
    ``tensor([1, 2, 1])``.
    """
    check_tensor(input, "unique_consecutive")
    xp = input.xp
    if dim is None:
        flat = input._data.reshape(-1)
        new = _runs(flat, xp)
        return _results(flat[new], (xp.cumsum(new) - 1).reshape(input.shape),
                        _counts(new, flat.shape[0], xp), return_inverse, return_counts)
    d = norm_dim(dim, input.ndim, "unique_consecutive")
    moved = xp.moveaxis(input._data, d, 0)
    n = moved.shape[0]
    new = xp.ones(n, dtype=bool)
    if n > 1:
        diff = (moved[1:] != moved[:-1]).reshape(n - 1, -1)
        new[1:] = diff.any(axis=1)
    values = xp.moveaxis(moved[new], 0, d)
    return _results(values, xp.cumsum(new) - 1, _counts(new, n, xp), return_inverse,
                    return_counts)


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
    xp = sorted_sequence.xp
    seq = sorted_sequence._data
    if sorter is not None:
        seq = xp.take_along_axis(seq, sorter._data, axis=-1)
    vals = input._data if isinstance(input, Tensor) else xp.asarray(input)
    out_dtype = np.int32 if out_int32 else np.int64
    if seq.ndim == 1:
        return _make(xp.searchsorted(seq, vals, side=side).astype(out_dtype))
    if vals.ndim != seq.ndim or vals.shape[:-1] != seq.shape[:-1]:
        raise RuntimeError(f"searchsorted(): boundaries tensor should be 1 dimension or the "
                           f"first N-1 dimensions of boundaries tensor and input value tensor "
                           f"must match, but we got boundaries tensor {list(seq.shape)} and "
                           f"input value tensor {list(vals.shape)}")
    rows_s = seq.reshape(-1, seq.shape[-1])
    rows_v = vals.reshape(-1, vals.shape[-1])
    out = xp.stack([xp.searchsorted(s, v, side=side) for s, v in zip(rows_s, rows_v)]) \
        if rows_s.shape[0] else xp.zeros(rows_v.shape, dtype=out_dtype)
    return _make(out.reshape(vals.shape).astype(out_dtype))


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
