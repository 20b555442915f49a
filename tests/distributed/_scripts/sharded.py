"""ZeRO-1 (ZeroRedundancyOptimizer under DDP) and FSDP (FULL_SHARD, SHARD_GRAD_OP, NO_SHARD,
nested units, a tied weight): each rank trains on its slice of a global batch and reports the
final full weights and what it holds."""

import sys
from pathlib import Path

import numpy as np

import tensorix as tx
from tensorix import nn

GLOBAL_BATCH, STEPS, VOCAB, DIM = 8, 3, 11, 6


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm, self.fc = nn.LayerNorm(DIM), nn.Linear(DIM, DIM)

    def forward(self, x):
        return x + self.fc(self.norm(x)).tanh()


class Net(nn.Module):
    """An embedding tied to the output head, three blocks, and a buffer."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.Sequential(Block(), Block(), Block())
        self.head = nn.Linear(DIM, VOCAB, bias=False)
        self.head.weight = self.emb.weight
        self.register_buffer("scale", tx.full((1,), 0.5))

    def forward(self, idx):
        return self.head(self.blocks(self.emb(idx)) * self.scale)


def build(seed, dtype):
    tx.manual_seed(seed)
    return Net().to(dtype)


def batch(step):
    rng = np.random.default_rng(step)
    return (tx.tensor(rng.integers(0, VOCAB, (GLOBAL_BATCH, 5))),
            tx.tensor(rng.integers(0, VOCAB, (GLOBAL_BATCH, 5))))


def train(model, opt, rank=0, world=1, steps=range(STEPS)):
    per = GLOBAL_BATCH // world
    for step in steps:
        x, y = batch(step)
        x, y = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
        opt.zero_grad()
        logits = model(x)
        nn.functional.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1)).backward()
        opt.step()


def adam(params):
    return tx.optim.Adam(params, lr=0.05)


def main():
    sys.path.insert(0, str(Path(__file__).parent))
    from _common import report

    import tensorix.distributed as dist
    from tensorix.distributed.fsdp import FullyShardedDataParallel as FSDP
    from tensorix.distributed.fsdp import MixedPrecision, ModuleWrapPolicy, ShardingStrategy
    from tensorix.distributed.optim import ZeroRedundancyOptimizer
    from tensorix.nn.parallel import DistributedDataParallel

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    out = {}
    for dtype in ("float64", "float32"):
        dt = getattr(tx, dtype)
        model = build(0, dt)
        ddp = DistributedDataParallel(model)
        zero = ZeroRedundancyOptimizer(ddp.parameters(), tx.optim.Adam, lr=0.05)
        train(ddp, zero, rank, world)
        out[f"zero1_{dtype}"] = {k: v.to(tx.float64).numpy() for k, v in
                                 model.state_dict().items()}
        out[f"zero1_state_{dtype}"] = sum(v.numel() for s in zero.state.values()
                                          for v in s.values() if isinstance(v, tx.Tensor)
                                          and v.dim() > 0)
        # (HYBRID_SHARD and the other FSDP options: fsdp_features.py)
        for strategy in (ShardingStrategy.FULL_SHARD, ShardingStrategy.SHARD_GRAD_OP,
                         ShardingStrategy.NO_SHARD):
            fsdp = FSDP(build(0, dt), sharding_strategy=strategy,
                        auto_wrap_policy=ModuleWrapPolicy({Block}))
            opt = adam(fsdp.parameters())
            train(fsdp, opt, rank, world)
            key = f"{strategy.name}_{dtype}"
            out[f"gathers_{key}"] = sum(m._handle.gathers for m in fsdp.modules()
                                        if isinstance(m, FSDP))
            out[key] = {k: v.to(tx.float64).numpy() for k, v in fsdp.state_dict().items()}
            out[f"held_{key}"] = sum(p.numel() for p in fsdp.parameters())
        # ZeRO-1 with a matrix optimizer: each matrix's SOAP state lives on its owner only
        if dtype == "float64":
            model = build(0, dt)
            ddp = DistributedDataParallel(model)
            zero = ZeroRedundancyOptimizer(ddp.parameters(), tx.optim.SOAP, lr=0.05,
                                           precondition_frequency=2)
            train(ddp, zero, rank, world)
            out["zero1_soap"] = {k: v.numpy() for k, v in model.state_dict().items()}
        # mixed precision: float32 compute and reduction on a float64 model
        fsdp = FSDP(build(0, tx.float64), auto_wrap_policy=ModuleWrapPolicy({Block}),
                    mixed_precision=MixedPrecision(tx.float32, tx.float32, tx.float32))
        train(fsdp, adam(fsdp.parameters()), rank, world)
        out["mixed"] = {k: v.numpy() for k, v in fsdp.state_dict().items()}
    report(rank, out)


if __name__ == "__main__":
    main()
