"""Registry entries for ops/reduce.py.

Samples of selecting ops (max with dim, cummax, ...) have no ties, so indices are unique and
NumPy, torch and tensorix must agree on them exactly.
"""

from __future__ import annotations

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, register
from ._samples import positive, uniform

LOWP = (tx.float32, tx.float64, tx.bfloat16)


def _reductions(rng, dtype):
    x = uniform(rng, (2, 3, 4))
    return [Sample((x,)), Sample((x,), {"dim": 1}), Sample((x,), {"dim": (0, 2)}),
            Sample((x,), {"dim": -1, "keepdim": True}), Sample((uniform(rng, ()),))]


def _one_dim(rng, dtype, gen=uniform):
    x = gen(rng, (3, 4))
    return [Sample((x,)), Sample((x, 1)), Sample((x, 0), {"keepdim": True}),
            Sample((gen(rng, (2, 3, 2)), -2)), Sample((gen(rng, ()),))]


def _along(rng, dtype):
    """Samples of ops with a required dim (cumulative ops)."""
    return [Sample((uniform(rng, (3, 4)), 1)), Sample((uniform(rng, (2, 3, 2)), 0)),
            Sample((uniform(rng, (5,)), -1))]


def _np_reduce(fn):
    def ref(x, dim=None, keepdim=False, **kw):
        return fn(x, axis=dim, keepdims=keepdim, **kw)
    return ref


def _np_select(pick, arg):
    """(values, indices) of max/min with a dim; a plain value without one."""
    def ref(x, dim=None, keepdim=False):
        if dim is None:
            return pick(x)
        return pick(x, axis=dim, keepdims=keepdim), arg(x, axis=dim, keepdims=keepdim)
    return ref


def _np_arg(fn):
    def ref(x, dim=None, keepdim=False):
        return np.asarray(fn(x, axis=dim, keepdims=keepdim))
    return ref


def _sum_to_samples(rng, dtype):
    return [Sample((uniform(rng, (2, 3, 4)), (3, 1))), Sample((uniform(rng, (3, 4)), (4,)))]


def _np_sum_to(x, shape):
    lead = x.ndim - len(shape)
    x = x.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and x.shape[i] != 1)
    return x.sum(axis=axes, keepdims=True).reshape(shape)


def _prod_samples(rng, dtype):
    x = positive(rng, (3, 4), 0.5, 1.5)
    z = x.copy()
    z[1, 2] = 0.0
    z2 = x.copy()
    z2[0, 1] = z2[0, 3] = 0.0
    return [Sample((x,)), Sample((x, 1)), Sample((x, 0), {"keepdim": True}),
            Sample((z, 1), name="one zero "), Sample((z,), name="one zero "),
            Sample((z2, 1), name="two zeros ")]


def _np_prod(x, dim=None, keepdim=False):
    return np.prod(x, axis=dim, keepdims=keepdim)


def _var_samples(rng, dtype):
    x = uniform(rng, (3, 4))
    return [Sample((x,)), Sample((x, 1)), Sample((x, (0, 1)), {"correction": 0}),
            Sample((x, 0), {"keepdim": True, "correction": 2}),
            Sample((x, 1, False), name="unbiased=False ")]


def _np_var(fn):
    def ref(x, dim=None, unbiased=None, keepdim=False, correction=None):
        ddof = correction if correction is not None else (0 if unbiased is False else 1)
        return fn(x, axis=dim, ddof=ddof, keepdims=keepdim)
    return ref


def _np_mean_like(x, dim=None, unbiased=None, keepdim=False, correction=None):
    return np.mean(x, axis=dim, keepdims=keepdim)


def _np_logsumexp(x, dim=None, keepdim=False):
    m = np.max(x, axis=dim, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=dim, keepdims=True)) + m
    return out if keepdim else np.squeeze(out, axis=dim)


def _lse_samples(rng, dtype):
    x = uniform(rng, (3, 4), -30, 30)
    return [Sample((x, 1)), Sample((x, (0, 1))), Sample((x, 0, True)),
            Sample((uniform(rng, (2, 3)) + 500, 1), name="large ")]


def _norm_samples(rng, dtype):
    x = uniform(rng, (3, 4))
    return [Sample((x,)), Sample((x, 2, 1)), Sample((x, 1, 0)), Sample((x, 3, 1, True)),
            Sample((x, 0.5, (0, 1))), Sample((x, float("inf"), 1)),
            Sample((x, -float("inf"), 0)), Sample((x, "fro", (0, 1)))]


def _np_norm(x, p="fro", dim=None, keepdim=False):
    a = np.abs(x)
    if p == "fro":
        p = 2
    if p == np.inf:
        return a.max(axis=dim, keepdims=keepdim)
    if p == -np.inf:
        return a.min(axis=dim, keepdims=keepdim)
    return (a ** p).sum(axis=dim, keepdims=keepdim) ** (1.0 / p)


def _cumprod_samples(rng, dtype):
    x = positive(rng, (3, 4), 0.5, 1.5)
    z = x.copy()
    z[0, 1] = 0.0
    z[2, 0] = z[2, 2] = 0.0
    return [Sample((x, 1)), Sample((x, 0)), Sample((z, 1), name="zeros ")]


def _np_cum_extreme(ufunc):
    def ref(x, dim):
        values = ufunc.accumulate(x, axis=dim)
        moved = np.moveaxis(x, dim, -1)
        idx = np.zeros(moved.shape, dtype=np.int64)
        for i in range(1, moved.shape[-1]):
            prev = np.take_along_axis(moved, idx[..., i - 1:i], -1)[..., 0]
            better = ufunc(moved[..., i], prev) == moved[..., i]
            idx[..., i] = np.where(better, i, idx[..., i - 1])
        return values, np.moveaxis(idx, -1, dim)
    return ref


def _logical_samples(rng, dtype):
    x = uniform(rng, (3, 4))
    x[0, 1] = x[2, 3] = 0.0
    x[1] = 0.0
    return [Sample((x,), grad=()), Sample((x, 1), grad=()), Sample((x, 0, True), grad=()),
            Sample((x > 0, (0, 1)), grad=())]


def _nan_samples(rng, dtype):
    x = uniform(rng, (3, 4))
    x[0, 1] = x[2, 0] = x[2, 3] = np.nan
    return [Sample((x,)), Sample((x, 1)), Sample((x, 0, True))]


register(
    OpInfo("sum", _reductions, _np_reduce(np.sum), gradgrad=True, dtypes=LOWP),
    OpInfo("mean", _reductions, _np_reduce(np.mean), gradgrad=True, dtypes=LOWP),
    OpInfo("sum_to", _sum_to_samples, _np_sum_to, torch=lambda x, s: x.sum_to_size(s)),
    OpInfo("prod", _prod_samples, _np_prod, gradgrad=True),
    OpInfo("max", _one_dim, _np_select(np.max, np.argmax), dtypes=LOWP),
    OpInfo("min", _one_dim, _np_select(np.min, np.argmin)),
    OpInfo("amax", _reductions, _np_reduce(np.amax), dtypes=LOWP),
    OpInfo("amin", _reductions, _np_reduce(np.amin)),
    OpInfo("aminmax", lambda r, d: [Sample((uniform(r, (3, 4)),)),
                                    Sample((uniform(r, (3, 4)),), {"dim": 1, "keepdim": True})],
           lambda x, dim=None, keepdim=False: (np.min(x, axis=dim, keepdims=keepdim),
                                               np.max(x, axis=dim, keepdims=keepdim))),
    OpInfo("argmax", _one_dim, _np_arg(np.argmax), grad=False),
    OpInfo("argmin", _one_dim, _np_arg(np.argmin), grad=False),
    OpInfo("var", _var_samples, _np_var(np.var), gradgrad=True),
    OpInfo("std", _var_samples, _np_var(np.std)),
    OpInfo("var_mean", _var_samples,
           lambda *a, **k: (_np_var(np.var)(*a, **k), _np_mean_like(*a, **k))),
    OpInfo("std_mean", _var_samples,
           lambda *a, **k: (_np_var(np.std)(*a, **k), _np_mean_like(*a, **k))),
    OpInfo("logsumexp", _lse_samples, _np_logsumexp, gradgrad=True),
    OpInfo("norm", _norm_samples, _np_norm, gradgrad=True),
    OpInfo("cumsum", _along, lambda x, d: np.cumsum(x, axis=d), gradgrad=True),
    OpInfo("cumprod", _cumprod_samples, lambda x, d: np.cumprod(x, axis=d), gradgrad=True),
    OpInfo("cummax", _along, _np_cum_extreme(np.maximum)),
    OpInfo("cummin", _along, _np_cum_extreme(np.minimum)),
    OpInfo("logcumsumexp", lambda r, d: [Sample((uniform(r, (3, 4), -20, 20), 1)),
                                         Sample((uniform(r, (2, 5)), 0))],
           lambda x, d: np.logaddexp.accumulate(x, axis=d), gradgrad=True),
    OpInfo("all", _logical_samples, _np_reduce(np.all), grad=False),
    OpInfo("any", _logical_samples, _np_reduce(np.any), grad=False),
    OpInfo("count_nonzero", lambda r, d: [Sample(s.args[:2], grad=())
                                          for s in _logical_samples(r, d)],
           lambda x, dim=None: np.asarray(np.count_nonzero(x, axis=dim)), grad=False),
    OpInfo("nansum", _nan_samples, _np_reduce(np.nansum)),
    OpInfo("nanmean", _nan_samples, _np_reduce(np.nanmean)),
)
