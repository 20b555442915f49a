"""DDP training on each rank's slice of a global batch; reports the final weights."""

import sys
from pathlib import Path

import numpy as np

import tensorix as tx
from tensorix import nn

GLOBAL_BATCH, STEPS = 8, 3


class Net(nn.Module):
    """Two layers, a buffer, and a branch that forward uses only when asked."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.unused = nn.Linear(4, 8), nn.Linear(8, 1), nn.Linear(8, 1)
        self.register_buffer("scale", tx.ones(1))

    def forward(self, x, use_branch=False):
        h = self.fc1(x).tanh()
        out = self.fc2(h) * self.scale
        return out + self.unused(h) if use_branch else out


def build(seed, dtype):
    tx.manual_seed(seed)
    return Net().to(dtype)


def batch(step, dtype):
    rng = np.random.default_rng(step)
    x, y = rng.standard_normal((GLOBAL_BATCH, 4)), rng.standard_normal((GLOBAL_BATCH, 1))
    return tx.tensor(x).to(dtype), tx.tensor(y).to(dtype)


def train(model, dtype, rank=0, world=1, ddp=None):
    """STEPS SGD steps; step 1 accumulates two half-batches (under no_sync for the first)."""
    opt = tx.optim.SGD(model.parameters(), lr=0.1)
    per = GLOBAL_BATCH // world
    for step in range(STEPS):
        x, y = batch(step, dtype)
        x, y = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
        opt.zero_grad()
        if step == 1:
            half = per // 2
            with (ddp.no_sync() if ddp is not None else _null()):
                (((model(x[:half]) - y[:half]) ** 2).sum() / per).backward()
            (((model(x[half:]) - y[half:]) ** 2).sum() / per).backward()
        else:
            ((model(x) - y) ** 2).mean().backward()
        opt.step()


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main():
    sys.path.insert(0, str(Path(__file__).parent))
    from _common import report

    import tensorix.distributed as dist
    from tensorix.nn.parallel import DistributedDataParallel

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    out = {}
    for name, bucket_mb in (("float64", 25), ("float32", 2e-5)):
        dtype = getattr(tx, name)
        model = build(rank, dtype)  # different on every rank: DDP broadcasts rank 0's
        ddp = DistributedDataParallel(model, bucket_cap_mb=bucket_mb,
                                      find_unused_parameters=True)
        out[f"buckets_{name}"] = len(ddp._buckets)
        train(ddp, dtype, rank, world, ddp)
        out[name] = {k: v.detach().to(tx.float64).numpy() for k, v in model.state_dict().items()}
    # unused parameters: the branch is used only on rank 0
    model = build(rank, tx.float64)
    ddp = DistributedDataParallel(model, find_unused_parameters=True)
    x, y = batch(0, tx.float64)
    ((ddp(x, use_branch=rank == 0) - y) ** 2).mean().backward()
    out["unused_grad"] = {k: p.grad.numpy() for k, p in model.named_parameters()}
    # without find_unused_parameters the reduction cannot finish: the next forward says so
    ddp = DistributedDataParallel(build(rank, tx.float64))
    ((ddp(x) - y) ** 2).mean().backward()
    try:
        ddp(x)
        out["unfinished"] = None
    except RuntimeError as e:
        out["unfinished"] = str(e)
    report(rank, out)


if __name__ == "__main__":
    main()
