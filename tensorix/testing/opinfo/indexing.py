"""Registry entries for ops/indexing.py: gather/scatter, index_*, index_put, masked_*, take,
take_along_dim, nonzero, argwhere. NumPy references are written with ``ufunc.at`` and fancy
indexing; scatter samples that overwrite use duplicate-free indices (torch leaves the winner
of a duplicate write unspecified). A ``src`` larger than ``index`` is tested in
tests/test_indexing.py: torch's own scatter backward rejects it."""

from __future__ import annotations

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, register
from ._samples import uniform

WITH_INT = (tx.float32, tx.float64, tx.int64)


def _ix(index, dim):
    """The NumPy index tuple that addresses ``out[.., index[i], ..]`` (scatter/gather)."""
    return tuple(index if d == dim else np.arange(index.shape[d]).reshape(
        [-1 if k == d else 1 for k in range(index.ndim)]) for d in range(index.ndim))


def _np_gather(x, dim, index):
    return x[_ix(index, dim % x.ndim)]


def _np_scatter(x, dim, index, src=None, value=None):
    out = np.array(x)
    src = value if src is None else src
    if isinstance(src, np.ndarray):
        src = src[tuple(slice(0, n) for n in index.shape)]
    out[_ix(index, dim % x.ndim)] = src
    return out


def _np_scatter_add(x, dim, index, src):
    out = np.array(x)
    np.add.at(out, _ix(index, dim % x.ndim), src[tuple(slice(0, n) for n in index.shape)])
    return out


_UFUNCS = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
           "amin": np.minimum}
_IDENTITY = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "amax": -np.inf, "amin": np.inf}


def _np_scatter_reduce(x, dim, index, src, reduce, include_self=True):
    out = np.array(x)
    ix = _ix(index, dim % x.ndim)
    src = src[tuple(slice(0, n) for n in index.shape)]
    if not include_self:
        out[ix] = _IDENTITY[reduce]
    _UFUNCS[reduce].at(out, ix, src)
    if reduce == "mean":
        count = np.zeros(out.shape) + (1 if include_self else 0)
        np.add.at(count, ix, 1)
        out = out / np.maximum(count, 1)
    return out


def _perm_index(rng, shape, n, dim):
    """Duplicate-free indices along ``dim`` (each column a slice of a permutation)."""
    perms = np.stack([rng.permutation(n)[:shape[dim]] for _ in range(
        int(np.prod(shape)) // shape[dim])])
    return np.moveaxis(perms.reshape(tuple(s for d, s in enumerate(shape) if d != dim) +
                                     (shape[dim],)), -1, dim)


def _gather_samples(rng, dtype):
    x = uniform(rng, (3, 4))
    return [Sample((x, 0, rng.integers(0, 3, (2, 4)))),
            Sample((x, 1, rng.integers(0, 4, (3, 6)))),
            Sample((x, -1, rng.integers(0, 4, (2, 2))), name="smaller index "),
            Sample((uniform(rng, (2, 3, 4)), 1, rng.integers(0, 3, (2, 5, 4))))]


def _scatter_samples(rng, dtype):
    x = uniform(rng, (4, 5))
    return [Sample((x, 0, _perm_index(rng, (3, 5), 4, 0), uniform(rng, (3, 5)))),
            Sample((x, 1, _perm_index(rng, (2, 3), 5, 1), uniform(rng, (2, 3)))),
            Sample((x, -1, _perm_index(rng, (4, 2), 5, 1)), {"value": 1.5})]


def _scatter_add_samples(rng, dtype):
    x = uniform(rng, (4, 5))
    return [Sample((x, 0, rng.integers(0, 4, (6, 5)), uniform(rng, (6, 5)))),
            Sample((x, 1, rng.integers(0, 5, (2, 7)), uniform(rng, (2, 7))))]


def _scatter_reduce_samples(rng, dtype):
    x, idx = uniform(rng, (3, 4)), rng.integers(0, 3, (5, 4))
    out = []
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for incl in (True, False):
            out.append(Sample((x, 0, idx, uniform(rng, (5, 4)), reduce),
                              {"include_self": incl}, name=f"{reduce} {incl} "))
    src = uniform(rng, (5, 4))
    src[0, 0] = src[2, 1] = src[3, 1] = 0.0
    out.append(Sample((x, 0, idx, src, "prod"), name="prod with zeros "))
    return out


def _index_samples(rng, dtype):
    return [Sample((uniform(rng, (4, 3)), 0, np.array([2, 0, 2]))),
            Sample((uniform(rng, (2, 5, 3)), 1, np.array([4, 0]))),
            Sample((uniform(rng, (3,)), -1, np.array([1])))]


def _np_index_select(x, dim, index):
    return np.take(x, index, axis=dim)


def _index_source_samples(rng, dtype, unique=False):
    out = []
    for shape, dim, index in [((4, 3), 0, np.array([2, 0, 2])), ((2, 5, 3), 1,
                                                                  np.array([4, 0, 1, 4]))]:
        if unique:
            index = np.unique(index)
        src_shape = list(shape)
        src_shape[dim] = len(index)
        out.append(Sample((uniform(rng, shape), dim, index, uniform(rng, tuple(src_shape)))))
    return out


def _np_index_add(x, dim, index, source, alpha=1):
    out = np.array(x)
    np.add.at(out, (slice(None),) * (dim % x.ndim) + (index,), alpha * source)
    return out


def _np_index_copy(x, dim, index, source):
    out = np.array(x)
    out[(slice(None),) * (dim % x.ndim) + (index,)] = source
    return out


def _np_index_fill(x, dim, index, value):
    out = np.array(x)
    out[(slice(None),) * (dim % x.ndim) + (index,)] = value
    return out


def _index_fill_samples(rng, dtype):
    return [Sample((uniform(rng, (4, 3)), 0, np.array([2, 0, 2]), -1.5)),
            Sample((uniform(rng, (2, 5)), 1, np.array([4, 1, 4]), uniform(rng, ())),
                   name="tensor value ")]


def _index_put_samples(rng, dtype):
    x = uniform(rng, (4, 5))
    return [Sample((x, (np.array([0, 2, 0]),), uniform(rng, (3, 5)), True)),
            Sample((x, (np.array([1, 3]), np.array([4, 0])), uniform(rng, (2,)))),
            Sample((x, (np.array([[0], [3]]), np.array([1, 2])), uniform(rng, (2, 2)), True)),
            Sample((x, (x > 0.5,), uniform(rng, ()), False))]


def _np_index_put(x, indices, values, accumulate=False):
    out = np.array(x)
    if accumulate:
        np.add.at(out, indices, values)
    else:
        out[indices] = values
    return out


def _mask(rng, shape):
    return rng.uniform(size=shape) > 0.5


def _masked_fill_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 4)), _mask(rng, (3, 4)), -2.0)),
            Sample((uniform(rng, (3, 4)), _mask(rng, (4,)), uniform(rng, ())),
                   name="tensor value "),
            Sample((uniform(rng, (4,)), _mask(rng, (2, 4)), 0.5), name="mask broadcasts ")]


def _np_masked_fill(x, mask, value):
    return np.where(mask, np.asarray(value).astype(x.dtype), x)


def _masked_scatter_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 4)), _mask(rng, (3, 4)), uniform(rng, (3, 4)))),
            Sample((uniform(rng, (3, 4)), _mask(rng, (4,)), uniform(rng, (2, 7))))]


def _np_masked_scatter(x, mask, source):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    out = np.array(np.broadcast_to(x, shape))
    m = np.broadcast_to(mask, shape)
    out[m] = source.reshape(-1)[:m.sum()]
    return out


def _masked_select_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 4)), _mask(rng, (3, 4)))),
            Sample((uniform(rng, (3, 1)), _mask(rng, (2, 1, 4))))]


def _np_masked_select(x, mask):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return np.broadcast_to(x, shape)[np.broadcast_to(mask, shape)]


def _take_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 4)), rng.integers(-12, 12, (2, 3)))),
            Sample((uniform(rng, (5,)), np.array(3)))]


def _take_along_samples(rng, dtype):
    x = uniform(rng, (3, 4))
    return [Sample((x, rng.integers(0, 4, (3, 2))), {"dim": 1}),
            Sample((x, rng.integers(0, 3, (1, 4))), {"dim": 0}),
            Sample((x, rng.integers(0, 4, (3, 1)), 1), name="broadcast "),
            Sample((x, rng.integers(0, 12, (5,))), name="flat ")]


def _np_take_along(x, indices, dim=None):
    if dim is None:
        return np.take_along_axis(x.reshape(-1), indices.reshape(-1), 0)
    return np.take_along_axis(x, indices, dim)


def _nonzero_samples(rng, dtype):
    x = uniform(rng, (3, 4))
    x[x < 0] = 0
    return [Sample((x,)), Sample((x[0],), {"as_tuple": True}), Sample((x,), {"as_tuple": True}),
            Sample((np.zeros((2, 3)),))]


def _np_nonzero(x, as_tuple=False):
    return np.nonzero(x) if as_tuple else np.argwhere(x)


register(
    OpInfo("gather", _gather_samples, _np_gather, dtypes=WITH_INT, gradgrad=True),
    OpInfo("scatter", _scatter_samples, _np_scatter),
    OpInfo("scatter_add", _scatter_add_samples, _np_scatter_add, gradgrad=True),
    OpInfo("scatter_reduce", _scatter_reduce_samples, _np_scatter_reduce),
    OpInfo("index_select", _index_samples, _np_index_select, dtypes=WITH_INT, gradgrad=True),
    OpInfo("index_add", _index_source_samples, _np_index_add),
    OpInfo("index_copy", lambda rng, dt: _index_source_samples(rng, dt, unique=True),
           _np_index_copy),
    OpInfo("index_fill", _index_fill_samples, _np_index_fill),
    OpInfo("index_put", _index_put_samples, _np_index_put),
    OpInfo("masked_fill", _masked_fill_samples, _np_masked_fill, dtypes=WITH_INT),
    OpInfo("masked_scatter", _masked_scatter_samples, _np_masked_scatter),
    OpInfo("masked_select", _masked_select_samples, _np_masked_select),
    OpInfo("take", _take_samples, np.take, dtypes=WITH_INT),
    OpInfo("take_along_dim", _take_along_samples, _np_take_along),
    OpInfo("nonzero", _nonzero_samples, _np_nonzero, grad=False, dtypes=WITH_INT),
    OpInfo("argwhere", lambda rng, dt: _nonzero_samples(rng, dt)[::3], np.argwhere,
           grad=False, dtypes=WITH_INT),
    OpInfo("nonzero_static", lambda r, d: [
        Sample((np.round(uniform(r, (3, 4))),), {"size": 9}),
        Sample((np.array([0.0, 1.0, 0.0, 2.0]),), {"size": 1, "fill_value": -5})],
        lambda x, size, fill_value=-1: np.concatenate(
            [np.argwhere(x)[:size], np.full((max(size - np.count_nonzero(x), 0), x.ndim),
                                            fill_value)]), dtypes=WITH_INT, grad=False),
)
