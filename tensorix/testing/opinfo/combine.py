"""Registry entries for ops/combine.py (block_diag, cartesian_prod, combinations, vander,
isin) and ops/integrate.py (trapezoid, trapz, cumulative_trapezoid)."""

from __future__ import annotations

import itertools

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, register
from ._samples import uniform

FLOATS = (tx.float32, tx.float64)


def _np_block_diag(*blocks):
    blocks = [np.atleast_2d(b) if b.ndim < 2 else b for b in blocks]
    out = np.zeros((sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)),
                   np.result_type(*blocks))
    r = c = 0
    for b in blocks:
        out[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def _np_cartesian_prod(*ts):
    if len(ts) == 1:
        return ts[0]
    return np.stack([g.reshape(-1) for g in np.meshgrid(*ts, indexing="ij")], 1)


def _np_combinations(x, r=2, with_replacement=False):
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = list(pick(range(len(x)), r))
    return x[np.array(idx, dtype=np.int64).reshape(-1, r)]


def _np_vander(x, N=None, increasing=False):
    return np.vander(x, N, increasing=increasing)


def _np_trapezoid(y, x=None, *, dx=None, dim=-1):
    return np.trapezoid(y, x, dx=1.0 if dx is None else dx, axis=dim)


def _np_cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    y = np.moveaxis(y, dim, -1)
    if x is None:
        steps = 1.0 if dx is None else dx
    else:
        steps = np.diff(x if x.ndim == 1 else np.moveaxis(x, dim, -1), axis=-1)
    out = np.cumsum((y[..., 1:] + y[..., :-1]) * steps / 2, axis=-1)
    return np.moveaxis(out, -1, dim)


def _block_samples(rng, dtype):
    return [Sample((uniform(rng, (2, 3)), uniform(rng, (1, 2)))),
            Sample((uniform(rng, ()), uniform(rng, (3,)), uniform(rng, (2, 2)))),
            Sample((uniform(rng, (0, 2)), uniform(rng, (2, 0)), uniform(rng, (1, 1))))]


def _cartesian_samples(rng, dtype):
    return [Sample((uniform(rng, (3,)), uniform(rng, (2,)))),
            Sample((uniform(rng, (2,)), uniform(rng, (2,)), uniform(rng, (3,)))),
            Sample((uniform(rng, (4,)),))]


def _combination_samples(rng, dtype):
    x = uniform(rng, (4,))
    return [Sample((x,)), Sample((x, 3)), Sample((x, 2, True)), Sample((x, 1)),
            Sample((x, 5))]


def _vander_samples(rng, dtype):
    return [Sample((uniform(rng, (4,)),)), Sample((uniform(rng, (3,)), 5)),
            Sample((uniform(rng, (3,)),), {"increasing": True}),
            Sample((np.array([0.0, 1.5, -2.0]), 4))]  # x = 0: the gradient stays finite


def _isin_samples(rng, dtype):
    return [Sample((rng.integers(0, 6, (3, 4)), rng.integers(0, 6, (5,)))),
            Sample((rng.integers(0, 6, (7,)), rng.integers(0, 6, (2, 2))), {"invert": True})]


def _np_unravel_index(indices, shape):
    size = int(np.prod(shape))
    return np.unravel_index(np.mod(indices, size), shape)


def _unravel_samples(rng, dtype):
    return [Sample((rng.integers(-6, 6, (2, 3)), (2, 3))), Sample((np.array(5), (3, 2))),
            Sample((rng.integers(0, 24, (5,)), (2, 3, 4)))]


def _row_stack_samples(rng, dtype):
    return [Sample(([uniform(rng, (3,)), uniform(rng, (3,))],)),
            Sample(([uniform(rng, (2, 3)), uniform(rng, (1, 3))],))]


def _trapezoid_samples(rng, dtype):
    return [Sample((uniform(rng, (5,)),)),
            Sample((uniform(rng, (3, 4)),), {"dx": 0.5, "dim": 0}),
            Sample((uniform(rng, (2, 4)), np.sort(uniform(rng, (4,))))),
            Sample((uniform(rng, (4, 3)), np.sort(uniform(rng, (4, 3)), axis=0)), {"dim": 0}),
            Sample((uniform(rng, (2, 1)),))]


register(
    OpInfo("block_diag", _block_samples, _np_block_diag),
    OpInfo("cartesian_prod", _cartesian_samples, _np_cartesian_prod),
    OpInfo("combinations", _combination_samples, _np_combinations),
    # torch.vander's own backward fails (it edits a saved tensor in place): fp64 gradcheck only
    OpInfo("vander", _vander_samples, _np_vander, skip_torch_grad=True),
    OpInfo("isin", _isin_samples, np.isin, dtypes=(tx.int64,), grad=False),
    OpInfo("unravel_index", _unravel_samples, _np_unravel_index, dtypes=(tx.int64,),
           grad=False),
    OpInfo("row_stack", _row_stack_samples, lambda ts: np.vstack(ts)),
    OpInfo("trapezoid", _trapezoid_samples, _np_trapezoid),
    OpInfo("trapz", _trapezoid_samples, _np_trapezoid),
    OpInfo("cumulative_trapezoid", _trapezoid_samples, _np_cumulative_trapezoid),
)
