"""Registry entries for ops/stats.py (diff, bincount, histc, histogram, cov, corrcoef)."""

from __future__ import annotations

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, register
from ._samples import uniform

WITH_INT = (tx.float32, tx.float64, tx.int64)


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


register(
    OpInfo("diff", _diff_samples, _np_diff, dtypes=WITH_INT, gradgrad=True),
    OpInfo("bincount", _bincount_samples, _np_bincount, dtypes=(tx.int64,), grad=False),
    OpInfo("histc", _histc_samples, _np_histc, grad=False),
    OpInfo("histogram", _histogram_samples, _np_histogram, grad=False),
    OpInfo("cov", _cov_samples, _np_cov, gradgrad=True),
    OpInfo("corrcoef", lambda r, d: [Sample((uniform(r, (3, 6)),))], np.corrcoef,
           gradgrad=True),
)
