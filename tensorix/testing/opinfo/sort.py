"""Registry entries for ops/sort.py.

Float samples are continuous random draws (no ties), so sort orders and selected indices are
unique and must match NumPy and torch exactly; ops whose point is repetition (mode, unique)
draw small integers instead and have no gradient check beyond torch's.
"""

from __future__ import annotations

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, register
from ._samples import uniform


def _ints(rng, shape, high=4):
    """Small integers as floats: repeated values on purpose."""
    return rng.integers(0, high, size=shape).astype(np.float64)


def _sort_samples(rng, dtype):
    x = uniform(rng, (3, 5))
    return [Sample((x,)), Sample((x, 0)), Sample((x, -1, True)),
            Sample((uniform(rng, (2, 3, 4)), 1), {"descending": True}),
            Sample((uniform(rng, (4,)),), {"stable": True})]


def _np_order(x, dim=-1, descending=False):
    if not descending:
        return np.argsort(x, axis=dim, kind="stable")
    n = x.shape[dim]
    return np.flip(n - 1 - np.argsort(np.flip(x, axis=dim), axis=dim, kind="stable"), axis=dim)


def _np_sort(x, dim=-1, descending=False, stable=False):
    idx = _np_order(x, dim, descending)
    return np.take_along_axis(x, idx, dim), idx


def _np_topk(x, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    values, idx = _np_sort(x, dim, largest)
    take = np.arange(k)
    return np.take(values, take, axis=dim), np.take(idx, take, axis=dim)


def _topk_samples(rng, dtype):
    x = uniform(rng, (3, 6))
    return [Sample((x, 2)), Sample((x, 3, 0)), Sample((x, 6), {"largest": False}),
            Sample((uniform(rng, (2, 3, 4)), 1, 1))]


def _np_rank(rank):
    """(values, indices) at the sorted position ``rank(n)`` along dim."""
    def ref(x, *args, dim=-1, keepdim=False):
        values, idx = _np_sort(x, dim)
        r = rank(x.shape[dim], *args)
        v, i = np.take(values, [r], axis=dim), np.take(idx, [r], axis=dim)
        if not keepdim:
            v, i = np.squeeze(v, axis=dim), np.squeeze(i, axis=dim)
        return v, i
    return ref


def _kth_samples(rng, dtype):
    x = uniform(rng, (3, 5))
    return [Sample((x, 1)), Sample((x, 5)), Sample((x, 2), {"dim": 0, "keepdim": True}),
            Sample((uniform(rng, (7,)), 4))]


def _median_samples(rng, dtype):
    x = uniform(rng, (3, 4))
    return [Sample((x,)), Sample((uniform(rng, (5,)),)), Sample((x,), {"dim": 1}),
            Sample((x,), {"dim": 0, "keepdim": True}), Sample((uniform(rng, (2, 5, 3)),),
                                                              {"dim": 1})]


def _np_median(x, dim=None, keepdim=False):
    if dim is None:
        return np.sort(x, axis=None)[(x.size - 1) // 2]
    return _np_rank(lambda n: (n - 1) // 2)(x, dim=dim, keepdim=keepdim)


def _np_nanmedian(x, dim=None, keepdim=False):
    if dim is None:
        flat = np.sort(x[~np.isnan(x)], axis=None)
        return flat[(flat.size - 1) // 2]
    values, idx = _np_sort(x, dim)
    m = np.sum(~np.isnan(x), axis=dim, keepdims=True)
    r = (m - 1) // 2
    v, i = np.take_along_axis(values, r, dim), np.take_along_axis(idx, r, dim)
    return (v, i) if keepdim else (np.squeeze(v, dim), np.squeeze(i, dim))


def _nan_median_samples(rng, dtype):
    x = uniform(rng, (3, 5))
    x[0, 1] = x[2, 0] = x[2, 4] = np.nan
    return [Sample((x,)), Sample((x,), {"dim": 1}), Sample((x,), {"dim": 0, "keepdim": True})]


def _quantile_samples(rng, dtype):
    x = uniform(rng, (3, 6))
    q = np.array([0.13, 0.5, 0.77])
    out = [Sample((x, 0.3)), Sample((x, q, 1), grad=(0,)),
           Sample((x, 0.61, 0, True), name="keepdim "),
           Sample((x, q), {"keepdim": True}, grad=(0,))]
    for mode in ("lower", "higher", "midpoint", "nearest"):
        out.append(Sample((x, q, 1), {"interpolation": mode}, grad=(0,)))
    return out


def _np_quantile(fn):
    def ref(x, q, dim=None, keepdim=False, interpolation="linear"):
        return fn(x, q, axis=dim, keepdims=keepdim, method=interpolation)
    return ref


def _nan_quantile_samples(rng, dtype):
    x = uniform(rng, (3, 6))
    x[0, 2] = x[1, 0] = x[1, 5] = np.nan
    q = np.array([0.13, 0.5, 0.77])
    return [Sample((x, q, 1), grad=(0,)), Sample((x, 0.4), grad=(0,)),
            Sample((x, 0.2, 0, True), grad=(0,))]


def _mode_samples(rng, dtype):
    """Rows with one most frequent value (so the value is unique), repeated elsewhere too."""
    rows = np.array([[2, 0, 2, 1, 3, 2, 1], [1, 1, 0, 3, 0, 1, 2], [3, 0, 0, 0, 2, 3, 1]],
                    dtype=np.float64)
    return [Sample((rows,)), Sample((rows.T, 0)), Sample((rows, 1, True)),
            Sample((np.array([0.5, 1.5, 1.5, 0.5, 1.5]),))]


def _np_mode(x, dim=-1, keepdim=False):
    moved = np.moveaxis(x, dim, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    values, idx = [], []
    for row in flat:
        u, c = np.unique(row, return_counts=True)
        v = u[np.argmax(c)]  # the smallest of the most frequent
        values.append(v)
        idx.append(np.flatnonzero(row == v)[-1])  # its last occurrence
    shape = moved.shape[:-1]
    v, i = np.array(values).reshape(shape), np.array(idx, dtype=np.int64).reshape(shape)
    if keepdim:
        v, i = np.expand_dims(v, dim), np.expand_dims(i, dim)
    return v, i


def _unique_samples(rng, dtype):
    x = _ints(rng, (3, 5))
    return [Sample((x,), grad=()), Sample((x,), {"return_inverse": True}, grad=()),
            Sample((x,), {"return_counts": True, "return_inverse": True}, grad=()),
            Sample((x[:, :2],), {"dim": 0, "return_counts": True}, grad=())]


def _np_unique(x, sorted=True, return_inverse=False, return_counts=False,  # noqa: A002
               dim=None):
    out = np.unique(x, return_inverse=True, return_counts=True, axis=dim)
    values, inverse, counts = out
    inverse = inverse.reshape(x.shape) if dim is None else inverse.reshape(-1)
    res = (values,) + ((inverse,) if return_inverse else ()) + \
        ((counts,) if return_counts else ())
    return res[0] if len(res) == 1 else res


def _np_unique_consecutive(x, return_inverse=False, return_counts=False, dim=None):
    moved = np.moveaxis(x, 0 if dim is None else dim, 0) if dim is not None else x.reshape(-1)
    n = moved.shape[0]
    new = np.ones(n, dtype=bool)
    for i in range(1, n):
        new[i] = not np.array_equal(moved[i], moved[i - 1])
    values = moved[new] if dim is None else np.moveaxis(moved[new], 0, dim)
    inverse = np.cumsum(new) - 1
    counts = np.diff(np.append(np.flatnonzero(new), n))
    if dim is None:
        inverse = inverse.reshape(x.shape)
    res = (values,) + ((inverse,) if return_inverse else ()) + \
        ((counts,) if return_counts else ())
    return res[0] if len(res) == 1 else res


def _unique_consecutive_samples(rng, dtype):
    x = _ints(rng, (4, 6), 2)
    return [Sample((x,), grad=()), Sample((x,), {"return_inverse": True,
                                                 "return_counts": True}, grad=()),
            Sample((x[:, :2],), {"dim": 0, "return_counts": True}, grad=())]


def _search_samples(rng, dtype):
    seq = np.sort(uniform(rng, (7,)))
    rows = np.sort(uniform(rng, (2, 5)), axis=-1)
    vals = np.concatenate([uniform(rng, (4,)), seq[[1, 4]]])
    return [Sample((seq, vals), grad=()), Sample((seq, vals), {"right": True}, grad=()),
            Sample((seq, vals), {"side": "right", "out_int32": True}, grad=()),
            Sample((rows, uniform(rng, (2, 3))), grad=())]


def _np_searchsorted(seq, x, out_int32=False, right=False, side=None):
    side = side or ("right" if right else "left")
    if seq.ndim == 1:
        out = np.searchsorted(seq, x, side=side)
    else:
        out = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(seq, x)])
    return out.astype(np.int32 if out_int32 else np.int64)


def _bucketize_samples(rng, dtype):
    bounds = np.sort(uniform(rng, (6,)))
    x = np.concatenate([uniform(rng, (5,)), bounds[[0, 3]]]).reshape(7)
    return [Sample((x, bounds), grad=()), Sample((x.reshape(7, 1), bounds), {"right": True},
                                                grad=())]


register(
    OpInfo("sort", _sort_samples, _np_sort, gradgrad=True),
    OpInfo("argsort", _sort_samples, lambda x, dim=-1, descending=False, stable=False:
           _np_order(x, dim, descending), grad=False),
    OpInfo("msort", lambda r, d: [Sample((uniform(r, (4, 3)),))],
           lambda x: np.sort(x, axis=0)),
    OpInfo("topk", _topk_samples, _np_topk),
    OpInfo("kthvalue", _kth_samples, _np_rank(lambda n, k, *a: k - 1)),
    OpInfo("median", _median_samples, _np_median),
    OpInfo("nanmedian", _nan_median_samples, _np_nanmedian),
    OpInfo("quantile", _quantile_samples, _np_quantile(np.quantile)),
    OpInfo("nanquantile", _nan_quantile_samples, _np_quantile(np.nanquantile)),
    # mode's samples need ties, which finite differences break: its gradient is checked
    # against torch in float32 only, with no float64 numerical check
    OpInfo("mode", _mode_samples, _np_mode, dtypes=(tx.float32,)),
    OpInfo("unique", _unique_samples, _np_unique, grad=False),
    OpInfo("unique_consecutive", _unique_consecutive_samples, _np_unique_consecutive,
           grad=False),
    OpInfo("searchsorted", _search_samples, _np_searchsorted, grad=False),
    OpInfo("bucketize", _bucketize_samples,
           lambda x, b, right=False: np.searchsorted(b, x, side="right" if right else "left"),
           grad=False),
)
