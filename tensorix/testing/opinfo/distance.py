"""Registry entries for ops/distance.py: dist, and cdist with every p torch special-cases (0,
1, 2, inf) and a general one, batched and broadcast, on both the direct and the GEMM
Euclidean paths.
The zero-distance gradient rule is tested in tests/test_torch_names.py."""

from __future__ import annotations

import numpy as np

from ..registry import OpInfo, Sample, register
from ._samples import uniform


def _np_cdist(a, b, p=2.0, compute_mode=None):
    d = np.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        return (d != 0).sum(-1).astype(a.dtype)
    if np.isinf(p):
        return d.max(-1)
    return (d**p).sum(-1) ** (1.0 / p)


def _cdist_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 4)), uniform(rng, (5, 4)))),
            Sample((uniform(rng, (2, 3, 4)), uniform(rng, (2, 5, 4)), 1.0)),
            Sample((uniform(rng, (3, 2)), uniform(rng, (4, 2)), 3.0)),
            Sample((uniform(rng, (3, 2)), uniform(rng, (4, 2)), 0.0)),
            Sample((uniform(rng, (3, 3)), uniform(rng, (4, 3)), float("inf"))),
            Sample((uniform(rng, (2, 26, 3)), uniform(rng, (4, 3))), name="gemm"),
            Sample((uniform(rng, (3, 3)), uniform(rng, (2, 3))),
                   {"compute_mode": "use_mm_for_euclid_dist"})]


def _dist_samples(rng, dtype):
    a, b = uniform(rng, (3, 4)), uniform(rng, (4,))
    return [Sample((a, b)), Sample((a, b, 1)), Sample((a, b, 3)), Sample((a, b, np.inf))]


def _np_dist(a, b, p=2):
    return np.linalg.norm(np.ravel(a - b), p)


register(
    OpInfo("cdist", _cdist_samples, _np_cdist),
    OpInfo("dist", _dist_samples, _np_dist, gradgrad=True),
)
