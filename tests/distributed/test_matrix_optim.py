"""DistributedMatrixOptimizer (Canzona-style): Muon, Shampoo and SOAP with whole matrices
assigned to ranks by a cost-balanced partition equal one process exactly on 2 and 4 ranks."""

import sys
from pathlib import Path

import numpy as np
import pytest

import tensorix as tx
from tensorix.distributed.optim import balanced_partition, matrix_cost

sys.path.insert(0, str(Path(__file__).parent / "_scripts"))
import matrix_opt as script  # noqa: E402


@pytest.mark.parametrize("n", [2, 4])
def test_split_matrix_optimizers_equal_one_process(mpirun, n):
    _, res = mpirun("matrix_opt.py", n)
    for name, (cls, kw) in script.kinds().items():
        params = script.build()
        script.train(params, cls(list(params), **kw))
        for r in res:
            for got, want in zip(r[name], params):
                # the same update of the same gradient, on another rank: bit for bit
                np.testing.assert_array_equal(np.array(got), want.detach().numpy(), name)
        # every matrix's state lives on exactly one rank; the loads are the partition's
        assert sum(r[f"{name}_held"] for r in res) == len(script.SHAPES)
        costs = [matrix_cost(s, cls, **kw) for s in script.SHAPES]
        assert res[0][f"{name}_loads"] == pytest.approx(
            [sum(c for c, o in zip(costs, balanced_partition(costs, n)) if o == r)
             for r in range(n)])
        assert sum(res[0][f"{name}_loads"]) == pytest.approx(sum(costs))


def test_partition_balances_cost_not_size():
    shapes = [(4096, 64), (512, 512), (4096, 64), (512, 512)]
    costs = [matrix_cost(s, tx.optim.Muon) for s in shapes]
    assert costs[1] / costs[0] > 11  # the same size, 1/12 of the Newton-Schulz work

    def loads(owner):
        return [sum(c for c, o in zip(costs, owner) if o == r) for r in range(2)]

    cost_loads = loads(balanced_partition(costs, 2))
    assert max(cost_loads) / min(cost_loads) == 1.0
    # balanced by size (ZeRO-1's rule) the two 512 x 512 land on one rank: ~12x its work
    size_loads = loads(balanced_partition([4096 * 64] * 4, 2))
    assert max(size_loads) / min(size_loads) > 11
    assert balanced_partition([5, 4, 3, 3, 3], 2) == [0, 1, 1, 0, 1]
    assert matrix_cost((7,), tx.optim.SOAP) == 7
