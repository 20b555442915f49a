"""Expert-parallel MoE: each rank routes its chunk of the tokens; reports outputs, the
load-balancing loss and gradients (router: this rank's part; experts: those it owns)."""

import sys
from pathlib import Path

import numpy as np

import tensorix as tx

D, HIDDEN, EXPERTS, TOP_K, PER_RANK = 6, 12, 4, 2, 8


def build(group=None, capacity=1.0):
    from tensorix.distributed.moe import MoE

    tx.manual_seed(0)
    return MoE(D, HIDDEN, EXPERTS, TOP_K, capacity_factor=capacity, group=group).to(tx.float64)


def tokens(world):
    rng = np.random.default_rng(1)
    return rng.standard_normal((world * PER_RANK, D)), rng.standard_normal((world * PER_RANK, D))


def loss(moe, x, w):
    y = moe(tx.tensor(x))
    return y, (y * tx.tensor(w)).sum() + 0.1 * moe.aux_loss


def main():
    sys.path.insert(0, str(Path(__file__).parent))
    from _common import report

    import tensorix.distributed as dist

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    x, w = tokens(world)
    part = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
    out = {}
    group = dist.new_group(list(range(world)))
    for name, capacity in (("capacity", 1.0), ("no_drop", None)):
        moe = build(group, capacity)
        y, total = loss(moe, x[part], w[part])
        total.backward()
        out[name] = {"y": y.detach().numpy(), "aux": moe.aux_loss.item(),
                     "router": moe.router.gate.weight.grad.numpy(),
                     "experts": {str(moe.first + i): [p.grad.numpy() if p.grad is not None
                                                      else np.zeros(p.shape)
                                                      for p in e.parameters()]
                                 for i, e in enumerate(moe.experts)}}
    report(rank, out)


if __name__ == "__main__":
    main()
