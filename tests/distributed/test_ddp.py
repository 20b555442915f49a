"""DistributedDataParallel on 2 and 4 ranks: the weights after training equal the
single-process run on the whole batch (the global batch split over ranks)."""

import sys
from pathlib import Path

import numpy as np
import pytest

import tensorix as tx

sys.path.insert(0, str(Path(__file__).parent / "_scripts"))
import ddp as script  # noqa: E402


@pytest.mark.parametrize("n", [2, 4])
def test_ddp_matches_single_process(mpirun, n):
    _, res = mpirun("ddp.py", n)
    for name, tol in (("float64", 1e-12), ("float32", 1e-5)):
        model = script.build(0, getattr(tx, name))
        script.train(model, getattr(tx, name))
        want = {k: v.detach().to(tx.float64).numpy() for k, v in model.state_dict().items()}
        for r in res:
            for k, v in want.items():
                # float32: the ranks sum in a different order than one process does
                np.testing.assert_allclose(r[name][k], v, rtol=tol, atol=tol,
                                           err_msg=f"{name} {k}")
    assert res[0]["buckets_float64"] == 1 and res[0]["buckets_float32"] > 3


def test_ddp_unused_parameters(mpirun):
    """Rank 0 uses a branch rank 1 does not: find_unused_parameters reduces zeros for it, so
    both ranks get the average of the per-rank gradients."""
    _, res = mpirun("ddp.py", 2)
    x, y = script.batch(0, tx.float64)
    grads = []
    for rank in range(2):
        model = script.build(0, tx.float64)
        ((model(x, use_branch=rank == 0) - y) ** 2).mean().backward()
        grads.append({k: (p.grad.numpy() if p.grad is not None else np.zeros(p.shape))
                      for k, p in model.named_parameters()})
    for r in res:
        for k in grads[0]:
            np.testing.assert_allclose(r["unused_grad"][k], (grads[0][k] + grads[1][k]) / 2,
                                       rtol=1e-12, atol=1e-15, err_msg=k)
        assert "find_unused_parameters=True" in r["unfinished"]
