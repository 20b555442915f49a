"""Registry entries for ops/linalg.py."""

from __future__ import annotations

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, register
from ._samples import uniform


def _matmul_samples(rng, dtype):
    pairs = [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
             ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2))]
    return [Sample((uniform(rng, a), uniform(rng, b))) for a, b in pairs]


register(
    OpInfo("matmul", _matmul_samples, np.matmul, gradgrad=True,
           dtypes=(tx.float32, tx.float64, tx.bfloat16, tx.float16),
           tol={"bfloat16": (3e-2, 3e-2), "float16": (3e-3, 3e-3)}),
    OpInfo("mm", lambda r, d: [Sample((uniform(r, (3, 4)), uniform(r, (4, 2))))], np.matmul),
    OpInfo("bmm", lambda r, d: [Sample((uniform(r, (2, 3, 4)), uniform(r, (2, 4, 2))))],
           np.matmul),
)
