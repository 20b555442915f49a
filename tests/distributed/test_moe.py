"""Expert-parallel MoE on 2 and 4 ranks equals the single-process MoE applied to each rank's
tokens: outputs, load-balancing loss, and gradients of the router and of every expert."""

import sys
from pathlib import Path

import numpy as np
import pytest

import tensorix as tx

sys.path.insert(0, str(Path(__file__).parent / "_scripts"))
import moe as script  # noqa: E402


def _reference(world, capacity):
    x, w = script.tokens(world)
    moe = script.build(None, capacity)
    outs, auxes = [], []
    for r in range(world):
        part = slice(r * script.PER_RANK, (r + 1) * script.PER_RANK)
        y, total = script.loss(moe, x[part], w[part])
        total.backward()  # gradients add up over the chunks, as over the ranks
        outs.append(y.detach().numpy())
        auxes.append(moe.aux_loss.item())
    return outs, auxes, moe


@pytest.mark.parametrize("n", [2, 4])
def test_expert_parallel_moe_matches_one_process(mpirun, n):
    _, res = mpirun("moe.py", n)
    for name, capacity in (("capacity", 1.0), ("no_drop", None)):
        outs, auxes, moe = _reference(n, capacity)
        router = sum(np.array(r[name]["router"]) for r in res)
        np.testing.assert_allclose(router, moe.router.gate.weight.grad.numpy(), rtol=1e-10,
                                   atol=1e-12)
        owned = {}
        for rank, r in enumerate(res):
            np.testing.assert_allclose(r[name]["y"], outs[rank], rtol=1e-12, atol=1e-12)
            assert abs(r[name]["aux"] - auxes[rank]) < 1e-12
            owned.update(r[name]["experts"])
        assert sorted(owned) == [str(e) for e in range(script.EXPERTS)]
        for e, grads in owned.items():
            for g, p in zip(grads, moe.experts[int(e)].parameters()):
                want = p.grad.numpy() if p.grad is not None else np.zeros(p.shape)
                np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12,
                                           err_msg=f"{name} expert {e}")


def test_router_capacity_and_aux_loss():
    from tensorix.distributed.moe import MoE, TopKRouter

    tx.manual_seed(0)
    router = TopKRouter(4, 4, top_k=1, capacity_factor=0.5).to(tx.float64)
    with tx.no_grad():
        router.gate.weight.zero_()
        router.gate.weight[0, 0] = 10.0  # every token with x0 > 0 prefers expert 0
    x = tx.tensor(np.abs(np.random.default_rng(0).standard_normal((8, 4))))
    weights, experts, keep, aux = router(x)
    # capacity ceil(0.5 * 8 * 1 / 4) = 1: expert 0 keeps its first token only
    assert experts[:, 0].tolist() == [0] * 8 and keep[:, 0].tolist() == [True] + [False] * 7
    np.testing.assert_allclose(weights.detach().numpy(), 1.0)
    probs = tx.nn.functional.softmax(router.gate(x), -1).detach().numpy()
    assert abs(aux.item() - 4 * probs[:, 0].mean()) < 1e-12  # f = (1, 0, 0, 0)
    with pytest.raises(ValueError, match="top_k"):
        TopKRouter(4, 4, top_k=5)
    moe = MoE(4, 8, 4, top_k=2).to(tx.float64)
    assert moe(tx.randn(2, 3, 4, dtype=tx.float64)).shape == (2, 3, 4)
