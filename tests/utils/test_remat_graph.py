"""The rematerialization planner for any module graph: optimal under its estimate (against
every subset), plans on a model with branches and residuals that give the plain gradients,
and measured memory that falls as the budget does."""

import copy
import itertools

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix.utils import remat


def _mlp(d, h):
    return nn.Sequential(nn.Linear(d, h), nn.GELU(), nn.Linear(h, d), nn.Tanh())


class Branchy(nn.Module):
    """Two branches into a mix, then residual blocks in a ModuleList: not a chain."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.mix = _mlp(16, 64), _mlp(16, 128), nn.Linear(16, 16)
        self.blocks = nn.ModuleList([_mlp(16, 256) for _ in range(3)])

    def forward(self, x):
        h = self.mix(self.a(x) + self.b(x.tanh()))
        for blk in self.blocks:
            h = h + blk(h)
        return h


@pytest.mark.parametrize("seed", range(4))
def test_plan_module_is_optimal_under_its_estimate(seed):
    rng = np.random.default_rng(seed)
    n = 7
    saved = rng.integers(1, 40, n)
    prof = remat.ModuleProfile([f"m{i}" for i in range(n)], list(saved),
                               list(np.minimum(saved, rng.integers(0, 8, n))),
                               list(rng.random(n)), int(rng.integers(0, 10)),
                               int(rng.integers(0, 10)))
    subsets = [set(c) for k in range(n + 1) for c in itertools.combinations(range(n), k)]
    peaks = sorted({remat_graph_estimate(prof, c) for c in subsets})
    for budget in peaks[::5]:
        p = remat.plan_module(prof, budget)
        assert p.peak <= budget
        best = min(sum(prof.seconds[i] for i in c) for c in subsets
                   if remat_graph_estimate(prof, c) <= budget)
        assert p.recompute_seconds == pytest.approx(best)
    with pytest.raises(ValueError, match=r"remat.plan_module\(\): no plan fits"):
        remat.plan_module(prof, peaks[0] - 1)


def remat_graph_estimate(prof, chosen):
    from tensorix.utils.remat_graph import _estimate

    return _estimate(prof, chosen)


def _train(model, x):
    """Bytes held from forward to backward, the backward peak, and the gradients."""
    x = x.detach().requires_grad_()
    model.zero_grad()
    with tx.memory.track():
        before = tx.memory.memory_allocated()
        y = model(x)
        kept = tx.memory.memory_allocated() - before
        tx.memory.reset_peak_memory_stats()
        y.pow(2).sum().backward()
        peak = tx.memory.max_memory_allocated() - before
    grads = {n.replace("_checkpoint_wrapped_module.", ""): p.grad.numpy().copy()
             for n, p in model.named_parameters()}
    return kept, peak, x.grad.numpy().copy(), grads


def test_planned_module_equals_plain_and_holds_less():
    tx.manual_seed(0)
    model = Branchy().to(tx.float64)
    x = tx.randn(32, 16, dtype=tx.float64)
    prof = remat.profile_module(model, x.requires_grad_())
    # the candidates: the branches, the mix and each block (the ModuleList looked through)
    assert prof.names == ["a", "b", "mix", "blocks.0", "blocks.1", "blocks.2"]
    assert all(s > 0 for s in prof.saved)
    plain = _train(model, x)
    # what the profile counts is what forward leaves for backward (the measure also counts
    # the output and the graph's Python objects: tracemalloc's)
    assert prof.end_of_forward <= plain[0] <= 1.05 * prof.end_of_forward
    assert remat.plan_module(prof, 10 ** 12).checkpointed == []
    top = prof.end_of_forward + prof.grads
    held = [plain[0]]
    for frac in (0.8, 0.6):
        p = remat.plan_module(prof, int(top * frac))
        assert p.peak <= top * frac and p.checkpointed
        planned = remat.apply(copy.deepcopy(model), p)
        for name in p.checkpointed:
            assert isinstance(planned.get_submodule(name), remat.CheckpointWrapper)
        kept, _, gx, grads = _train(planned, x)
        np.testing.assert_allclose(gx, plain[2], rtol=1e-13, atol=1e-15)
        assert grads.keys() == plain[3].keys()
        for k, g in grads.items():
            np.testing.assert_allclose(g, plain[3][k], rtol=1e-13, atol=1e-15, err_msg=k)
        held.append(kept)
    assert held[0] > held[1] > held[2]


def test_profile_module_errors():
    with pytest.raises(ValueError, match="no submodule"):
        remat.profile_module(nn.Module(), tx.zeros(2))
