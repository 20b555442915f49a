"""Registry entries for ops/structured.py (diag family, ``*_scatter``, put, index_reduce,
renorm, cross).

index_reduce samples draw distinct values (ties in amax/amin split the gradient, a rule
checked in tests/test_api_completion.py); renorm samples keep every slice's norm well away
from ``maxnorm``, where the op has a kink.
"""

from __future__ import annotations

import warnings

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, register
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
)
