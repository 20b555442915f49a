"""Sample generators shared by the registry entries."""

from __future__ import annotations

import numpy as np

from ..registry import Sample

SHAPES = [(), (5,), (3, 4), (2, 3, 4)]
BROADCAST_PAIRS = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (3,)),
                   ((5,), ())]


def uniform(rng, shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, size=shape)


def positive(rng, shape, low=0.5, high=3.0):
    return rng.uniform(low, high, size=shape)


def away_from(rng, shape, points=(0.0,), margin=0.1, low=-2.0, high=2.0):
    """Uniform values kept ``margin`` away from kinks (finite differences stay valid)."""
    x = rng.uniform(low, high, size=shape)
    for p in points:
        near = np.abs(x - p) < margin
        x = np.where(near, p + np.sign(x - p + 1e-12) * margin * 2, x)
    return x


def unary(gen=uniform, shapes=SHAPES, **kw):
    """A samples function: one array argument per shape, values from ``gen``."""
    def samples(rng, dtype):
        return [Sample((gen(rng, s),), dict(kw)) for s in shapes]
    return samples


def binary(gen_a=uniform, gen_b=uniform, pairs=BROADCAST_PAIRS, scalars=(2.5, -1), **kw):
    """Array-array samples over broadcasting pairs, plus array-scalar ones."""
    def samples(rng, dtype):
        out = [Sample((gen_a(rng, a), gen_b(rng, b)), dict(kw)) for a, b in pairs]
        for s in scalars:
            out.append(Sample((gen_a(rng, (3, 2)), s), dict(kw), name="scalar "))
        return out
    return samples
