"""DistributedMatrixOptimizer: every rank computes the same full-batch gradient of a model
with matrices of mixed shapes; Muon, Shampoo and SOAP split their per-matrix work over the
ranks. Each rank reports the final weights, its estimated load and how many matrices' state
it holds."""

import sys
from pathlib import Path

import numpy as np

import tensorix as tx
from tensorix import nn

SHAPES = [(24, 8), (64, 24), (64, 64), (8, 64), (128, 8), (3, 128)]


def build():
    tx.manual_seed(0)
    return [nn.Parameter(tx.randn(*s, dtype=tx.float64) / s[1] ** 0.5) for s in SHAPES]


def loss(params, step):
    x = tx.tensor(np.random.default_rng(step).standard_normal((16, 8)))
    h = x
    for w in params[:5]:
        h = (h @ w.T).tanh()
    return ((h @ params[5].T) ** 2).mean()


def kinds():
    return {"Muon": (tx.optim.Muon, dict(lr=0.02)),
            "Shampoo": (tx.optim.Shampoo, dict(lr=0.05, precondition_frequency=2)),
            "SOAP": (tx.optim.SOAP, dict(lr=0.01, precondition_frequency=2))}


def train(params, opt, steps=3):
    for step in range(steps):
        opt.zero_grad()
        loss(params, step).backward()
        opt.step()


def main():
    sys.path.insert(0, str(Path(__file__).parent))
    from _common import report

    import tensorix.distributed as dist
    from tensorix.distributed.optim import DistributedMatrixOptimizer

    dist.init_process_group("mpi")
    out = {}
    for name, (cls, kw) in kinds().items():
        params = build()
        opt = DistributedMatrixOptimizer(list(params), cls, **kw)
        train(params, opt)
        out[name] = [p.detach().numpy() for p in params]
        out[f"{name}_loads"] = opt.loads
        out[f"{name}_held"] = len(opt.state)
    report(dist.get_rank(), out)


if __name__ == "__main__":
    main()
