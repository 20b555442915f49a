"""Registry entries for ops/reduce.py."""

from __future__ import annotations

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, register
from ._samples import uniform


def _reductions(rng, dtype):
    x = uniform(rng, (2, 3, 4))
    return [Sample((x,)), Sample((x,), {"dim": 1}), Sample((x,), {"dim": (0, 2)}),
            Sample((x,), {"dim": -1, "keepdim": True}), Sample((uniform(rng, ()),))]


def _np_reduce(fn):
    def ref(x, dim=None, keepdim=False):
        return fn(x, axis=dim, keepdims=keepdim)
    return ref


def _sum_to_samples(rng, dtype):
    return [Sample((uniform(rng, (2, 3, 4)), (3, 1))), Sample((uniform(rng, (3, 4)), (4,)))]


def _np_sum_to(x, shape):
    lead = x.ndim - len(shape)
    x = x.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and x.shape[i] != 1)
    return x.sum(axis=axes, keepdims=True).reshape(shape)


register(
    OpInfo("sum", _reductions, _np_reduce(np.sum), gradgrad=True,
           dtypes=(tx.float32, tx.float64, tx.bfloat16)),
    OpInfo("mean", _reductions, _np_reduce(np.mean), gradgrad=True),
    OpInfo("sum_to", _sum_to_samples, _np_sum_to, torch=lambda x, s: x.sum_to_size(s)),
)
