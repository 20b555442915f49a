"""The rematerialization planner: optimal under its estimate (against brute force), plans that
run to the plain gradients, and the sqrt(n) rule as a special case."""

import itertools

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix.utils import remat


def _segmentations(n):
    """Every way to cut n layers into segments, each kept or checkpointed."""
    for cuts in itertools.product([False, True], repeat=n - 1):
        bounds = [0] + [i + 1 for i, c in enumerate(cuts) if c] + [n]
        segs = list(zip(bounds, bounds[1:]))
        for flags in itertools.product([False, True], repeat=len(segs)):
            yield [(a, b, c) for (a, b), c in zip(segs, flags)]


@pytest.mark.parametrize("seed", range(4))
def test_plan_is_optimal_under_its_estimate(seed):
    rng = np.random.default_rng(seed)
    n = 6
    prof = remat.Profile(saved=list(rng.integers(1, 20, n)), output=list(rng.integers(1, 5, n)),
                         seconds=list(rng.random(n)), input_bytes=3,
                         params=list(rng.integers(0, 4, n)))
    every = list(_segmentations(n))
    for budget in sorted({remat._peak(prof, s) for s in every})[::7]:
        p = remat.plan(prof, budget)
        assert p.peak <= budget
        best = min(sum(sum(prof.seconds[a:b]) for a, b, c in s if c)
                   for s in every if remat._peak(prof, s) <= budget)
        assert p.recompute_seconds == pytest.approx(best)
    with pytest.raises(ValueError, match="no plan fits"):
        remat.plan(prof, 1)


def test_planned_run_equals_plain_gradients():
    tx.manual_seed(0)
    layers = [nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8)) for _ in range(6)]
    x = tx.randn(4, 8, requires_grad=True)
    prof = remat.profile(layers, x, repeat=1)
    assert len(prof.saved) == 6 and all(s > 0 for s in prof.saved)
    sq = remat.sqrt_plan(prof)
    assert [c for *_, c in sq.segments] == [True, False]  # round(sqrt(6)) = 2 segments
    plans = [remat.plan(prof, sq.peak), remat.plan(prof, 10 * sq.peak), sq]
    assert plans[1].recompute_seconds == 0  # a large budget keeps everything
    grads = []
    for p in [remat.Plan([(0, 6, False)], 0, 0.0)] + plans:
        for layer in layers:
            layer.zero_grad()
        x.grad = None
        remat.run(layers, p, x).pow(2).sum().backward()
        grads.append([x.grad.numpy().copy()] + [q.grad.numpy().copy() for layer in layers
                                                for q in layer.parameters()])
    for g in grads[1:]:
        for a, b in zip(g, grads[0]):
            np.testing.assert_array_equal(a, b)
