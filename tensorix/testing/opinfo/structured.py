"""Registry entries for ops/structured.py (diag family, ``*_scatter``, put, index_reduce,
renorm, cross), ops/stats.py (diff, bincount, histc, histogram, cov, corrcoef) and
ops/tensor_api.py (ravel, the split aliases, adjoint, dist, narrow_copy).

index_reduce samples draw distinct values (ties in amax/amin split the gradient, a rule
checked in tests/test_api_completion.py); renorm samples keep every slice's norm well away
from ``maxnorm``, where the op has a kink.
"""

from __future__ import annotations

import warnings

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, exempt, register
from ._samples import uniform

FLOATS = (tx.float32, tx.float64)
WITH_INT = (tx.float32, tx.float64, tx.int64)


def _torch_quiet(name):
    """A torch function called with its warnings silenced (index_reduce is a beta API)."""
    def fn(*args, **kwargs):
        import torch

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return getattr(torch, name)(*args, **kwargs)
    return fn


# -- diag family and scatters -------------------------------------------------------------------
def _np_diag_embed(x, offset=0, dim1=-2, dim2=-1):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n), dtype=x.dtype)
    idx = np.arange(x.shape[-1])
    rows, cols = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    out[..., rows, cols] = x
    return np.moveaxis(out, (-2, -1), (dim1, dim2))


def _diag_samples(rng, dtype):
    return [Sample((uniform(rng, (4,)),)), Sample((uniform(rng, (3,)), 2)),
            Sample((uniform(rng, (3,)), -1)), Sample((uniform(rng, (3, 4)),)),
            Sample((uniform(rng, (4, 3)), -1)), Sample((uniform(rng, (3, 4)), 2))]


def _diag_embed_samples(rng, dtype):
    return [Sample((uniform(rng, (2, 3)),)), Sample((uniform(rng, (3,)), 1)),
            Sample((uniform(rng, (2, 3)), -1, 0, 2)), Sample((uniform(rng, (2, 4)), 0, 2, 0))]


def _diagflat_samples(rng, dtype):
    return [Sample((uniform(rng, (2, 2)),)), Sample((uniform(rng, (3,)), 1)),
            Sample((uniform(rng, (3,)), -2))]


def _np_slice_scatter(x, src, dim=0, start=None, end=None, step=1):
    out = np.array(x)
    out[(slice(None),) * (dim % x.ndim) + (slice(start, end, step),)] = src
    return out


def _slice_scatter_samples(rng, dtype):
    x = uniform(rng, (3, 5))
    return [Sample((x, uniform(rng, (3, 2))), {"dim": 1, "start": 1, "end": 3}),
            Sample((x, uniform(rng, (3, 3))), {"dim": 1, "step": 2}),
            Sample((x, uniform(rng, (1, 5))), {"dim": 0, "start": -1}),
            Sample((uniform(rng, (4,)), uniform(rng, (4,))))]


def _np_select_scatter(x, src, dim, index):
    out = np.array(x)
    out[(slice(None),) * (dim % x.ndim) + (index,)] = src
    return out


def _select_scatter_samples(rng, dtype):
    x = uniform(rng, (3, 4))
    return [Sample((x, uniform(rng, (4,)), 0, 1)), Sample((x, uniform(rng, (3,)), -1, -2)),
            Sample((uniform(rng, (2, 3, 2)), uniform(rng, (2, 2)), 1, 0))]


def _np_diagonal_scatter(x, src, offset=0, dim1=0, dim2=1):
    out = np.array(x)
    view = np.moveaxis(out, (dim1, dim2), (-2, -1))
    n = src.shape[-1]
    idx = np.arange(n)
    rows, cols = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    view[..., rows, cols] = src
    return out


def _diagonal_scatter_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 3)), uniform(rng, (3,)))),
            Sample((uniform(rng, (3, 4)), uniform(rng, (3,))), {"offset": 1}),
            Sample((uniform(rng, (4, 3)), uniform(rng, (2,))), {"offset": -2}),
            Sample((uniform(rng, (2, 3, 3)), uniform(rng, (3, 2))), {"dim1": 0, "dim2": 2})]


def _np_as_strided_scatter(x, src, size, stride, storage_offset=0):
    out = np.array(x)
    flat = out.reshape(-1)
    view = np.lib.stride_tricks.as_strided(flat[storage_offset:], size,
                                           tuple(s * flat.itemsize for s in stride))
    view[...] = src
    return out


def _as_strided_scatter_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 4)), uniform(rng, (2, 2)), (2, 2), (4, 1))),
            Sample((uniform(rng, (6,)), uniform(rng, (3,)), (3,), (2,), 1))]


def _np_put(x, index, source, accumulate=False):
    out = np.array(x).reshape(-1)
    if accumulate:
        np.add.at(out, index.reshape(-1), source.reshape(-1))
    else:
        out[index.reshape(-1)] = source.reshape(-1)
    return out.reshape(x.shape)


def _put_samples(rng, dtype):
    x = uniform(rng, (3, 4))
    return [Sample((x, np.array([0, 5, -1]), uniform(rng, (3,)))),
            Sample((x, np.array([[1, 1], [2, 11]]), uniform(rng, (2, 2))),
                   {"accumulate": True})]


_UFUNCS = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum, "mean": np.add}
_IDENTITY = {"prod": 1.0, "amax": -np.inf, "amin": np.inf, "mean": 0.0}


def _np_index_reduce(x, dim, index, source, reduce, include_self=True):
    out = np.moveaxis(np.array(x, dtype=np.float64), dim, 0)
    src = np.moveaxis(source, dim, 0)
    if not include_self:
        out[index] = _IDENTITY[reduce]
    _UFUNCS[reduce].at(out, index, src)
    if reduce == "mean":
        count = np.zeros(out.shape[0]) + (1 if include_self else 0)
        np.add.at(count, index, 1)
        out = out / np.maximum(count, 1).reshape((-1,) + (1,) * (out.ndim - 1))
    return np.moveaxis(out, 0, dim)


def _index_reduce_samples(rng, dtype):
    def distinct(shape):
        n = int(np.prod(shape))
        # a random offset per call keeps self and source values apart too: torch drops the
        # gradient share of an excluded self value that ties (see test_indexing)
        offset = rng.uniform(0.001, 0.01)
        return (rng.permutation(n) / n * 3 + 0.5 + offset).reshape(shape) * \
            rng.choice([-1, 1], shape)
    index = np.array([0, 2, 0, 3, 0])
    out = []
    for reduce in ("prod", "mean", "amax", "amin"):
        out.append(Sample((distinct((4, 3)), 0, index, distinct((5, 3)), reduce)))
    out.append(Sample((distinct((3, 4)), 1, np.array([1, 1, 3]), distinct((3, 3)), "amax"),
                      {"include_self": False}))
    out.append(Sample((distinct((3, 4)), 1, np.array([2, 2]), distinct((3, 2)), "mean"),
                      {"include_self": False}))
    return out


def _np_renorm(x, p, dim, maxnorm):
    others = tuple(k for k in range(x.ndim) if k != dim % x.ndim)
    norm = np.sum(np.abs(x) ** p, axis=others, keepdims=True) ** (1 / p)
    return x * np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)


def _renorm_samples(rng, dtype):
    x = uniform(rng, (4, 3))
    x[::2] *= 0.1  # rows 0 and 2 stay below maxnorm, rows 1 and 3 get scaled
    y = np.moveaxis(x, 0, 1).copy()
    return [Sample((x, 2, 0, 1.0)), Sample((y, 1, 1, 1.2)), Sample((x, 3.0, 0, 0.9))]


def _cross_samples(rng, dtype):
    return [Sample((uniform(rng, (4, 3)), uniform(rng, (4, 3))), {"dim": 1}),
            Sample((uniform(rng, (3, 2)), uniform(rng, (3, 2))), {"dim": 0}),
            Sample((uniform(rng, (2, 3)), uniform(rng, (1, 3))), {"dim": -1})]


# -- stats ---------------------------------------------------------------------------------------
def _np_diff(x, n=1, dim=-1, prepend=None, append=None):
    return np.diff(x, n, axis=dim, prepend=prepend, append=append) if \
        prepend is not None or append is not None else np.diff(x, n, axis=dim)


def _diff_samples(rng, dtype):
    x = uniform(rng, (3, 5))
    return [Sample((x,)), Sample((x, 2, 0)), Sample((x, 3)),
            Sample((x, 1, 1), {"prepend": uniform(rng, (3, 2)), "append": uniform(rng, (3, 1))}),
            Sample((uniform(rng, (4,)), 5))]


def _bincount_samples(rng, dtype):
    x = rng.integers(0, 6, size=12)
    return [Sample((x,)), Sample((x,), {"minlength": 9}),
            Sample((x, rng.uniform(-1, 1, size=12))), Sample((np.zeros(0, dtype=np.int64),),
                                                             {"minlength": 3})]


def _np_bincount(x, weights=None, minlength=0):
    return np.bincount(x, weights, minlength)


def _np_histc(x, bins=100, min=0, max=0):  # noqa: A002
    lo, hi = float(min), float(max)
    if lo == hi:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    return np.histogram(x, bins, (lo, hi))[0].astype(x.dtype)


def _histc_samples(rng, dtype):
    x = uniform(rng, (5, 6), -3, 3)
    return [Sample((x,), {"bins": 7}), Sample((x,), {"bins": 4, "min": -1, "max": 2}),
            Sample((np.array([1.0, 1.0, 1.0]),), {"bins": 4})]


def _histogram_samples(rng, dtype):
    x = uniform(rng, (20,), -3, 3)
    return [Sample((x, 5)), Sample((x, 4), {"range": (-1.0, 2.0)}),
            Sample((x, np.array([-3.0, -1.0, 0.5, 3.0]))),
            Sample((x, 3), {"weight": rng.uniform(0, 2, size=20), "density": True})]


def _np_histogram(x, bins, range=None, weight=None, density=False):  # noqa: A002
    return np.histogram(x, bins, range, weights=weight, density=density)


def _cov_samples(rng, dtype):
    x = uniform(rng, (3, 6))
    return [Sample((x,)), Sample((x,), {"correction": 0}), Sample((uniform(rng, (5,)),)),
            Sample((x,), {"fweights": rng.integers(1, 4, size=6)}),
            Sample((x,), {"aweights": rng.uniform(0.5, 2, size=6), "correction": 2}),
            Sample((x,), {"fweights": rng.integers(1, 4, size=6),
                          "aweights": rng.uniform(0.5, 2, size=6)})]


def _np_cov(x, correction=1, fweights=None, aweights=None):
    return np.cov(x, ddof=correction, fweights=fweights, aweights=aweights)


# -- tensor_api ----------------------------------------------------------------------------------
def _split_samples(sections):
    def samples(rng, dtype):
        return [Sample((uniform(rng, (4, 6, 4)), s)) for s in sections]
    return samples


def _np_split_with_sizes(x, sizes, dim=0):
    return np.split(x, np.cumsum(sizes)[:-1], axis=dim)


def _dist_samples(rng, dtype):
    a, b = uniform(rng, (3, 4)), uniform(rng, (4,))
    return [Sample((a, b)), Sample((a, b, 1)), Sample((a, b, 3)), Sample((a, b, np.inf))]


def _np_dist(a, b, p=2):
    return np.linalg.norm(np.ravel(a - b), p)


register(
    OpInfo("diag", _diag_samples, np.diag, dtypes=WITH_INT, gradgrad=True),
    OpInfo("diag_embed", _diag_embed_samples, _np_diag_embed, dtypes=WITH_INT),
    OpInfo("diagflat", _diagflat_samples, np.diagflat, dtypes=WITH_INT),
    OpInfo("slice_scatter", _slice_scatter_samples, _np_slice_scatter, dtypes=WITH_INT,
           gradgrad=True),
    OpInfo("select_scatter", _select_scatter_samples, _np_select_scatter, dtypes=WITH_INT),
    OpInfo("diagonal_scatter", _diagonal_scatter_samples, _np_diagonal_scatter,
           dtypes=WITH_INT),
    # torch 2.x's as_strided_scatter backward sends ``input`` the window's gradient instead
    # of its complement; values are compared with torch, gradients by gradcheck
    OpInfo("as_strided_scatter", _as_strided_scatter_samples, _np_as_strided_scatter,
           skip_torch_grad=True),
    OpInfo("put", _put_samples, _np_put, dtypes=WITH_INT),
    OpInfo("index_reduce", _index_reduce_samples, _np_index_reduce,
           torch=_torch_quiet("index_reduce")),
    OpInfo("renorm", _renorm_samples, _np_renorm, gradgrad=True),
    OpInfo("cross", _cross_samples, lambda a, b, dim: np.cross(a, b, axis=dim),
           dtypes=WITH_INT),
    OpInfo("diff", _diff_samples, _np_diff, dtypes=WITH_INT, gradgrad=True),
    OpInfo("bincount", _bincount_samples, _np_bincount, dtypes=(tx.int64,), grad=False),
    OpInfo("histc", _histc_samples, _np_histc, grad=False),
    OpInfo("histogram", _histogram_samples, _np_histogram, grad=False),
    OpInfo("cov", _cov_samples, _np_cov, gradgrad=True),
    OpInfo("corrcoef", lambda r, d: [Sample((uniform(r, (3, 6)),))], np.corrcoef,
           gradgrad=True),
    OpInfo("ravel", lambda r, d: [Sample((uniform(r, (3, 4))[:, ::2],)),
                                  Sample((uniform(r, (2, 3)),))], np.ravel, dtypes=WITH_INT),
    OpInfo("hsplit", _split_samples((2, 3, [1, 4])), np.hsplit, dtypes=WITH_INT),
    OpInfo("vsplit", _split_samples((2, [1, 3])), np.vsplit, dtypes=WITH_INT),
    OpInfo("dsplit", _split_samples((2, [3])), np.dsplit, dtypes=WITH_INT),
    OpInfo("split_with_sizes", lambda r, d: [Sample((uniform(r, (5, 3)), [2, 3])),
                                             Sample((uniform(r, (2, 4)), [1, 0, 3], 1))],
           _np_split_with_sizes, aliases=("unsafe_split_with_sizes",)),
    OpInfo("unsafe_split", lambda r, d: [Sample((uniform(r, (5, 3)), 2))],
           lambda x, s: np.split(x, [2, 4])),
    OpInfo("unsafe_chunk", lambda r, d: [Sample((uniform(r, (3, 5)), 2, 1))],
           lambda x, c, dim: np.split(x, [3], axis=dim)),
    OpInfo("adjoint", lambda r, d: [Sample((uniform(r, (2, 3, 4)),))],
           lambda x: np.conj(np.swapaxes(x, -1, -2))),
    OpInfo("dist", _dist_samples, _np_dist, gradgrad=True),
    OpInfo("nonzero_static", lambda r, d: [
        Sample((np.round(uniform(r, (3, 4))),), {"size": 9}),
        Sample((np.array([0.0, 1.0, 0.0, 2.0]),), {"size": 1, "fill_value": -5})],
        lambda x, size, fill_value=-1: np.concatenate(
            [np.argwhere(x)[:size], np.full((max(size - np.count_nonzero(x), 0), x.ndim),
                                            fill_value)]), dtypes=WITH_INT, grad=False),
    OpInfo("narrow_copy", lambda r, d: [Sample((uniform(r, (4, 3)), 0, 1, 2))],
           lambda x, dim, start, length: x[start:start + length].copy(), dtypes=WITH_INT),
)

exempt("layout constants (tensorix.strided, the only layout), tested in "
       "tests/test_api_completion.py", "layout", "strided")
