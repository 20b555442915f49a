"""DDP and FSDP with "cuda" parameters under the "nccl" backend (the CuPy stand-in): the
gradient buckets and the flat shards stay on the device. Each rank reports the final weights
(three Adam steps on its slice of the batch) and the device-to-host copies that backward made
beyond those of the same backward without DDP/FSDP (none: the reductions stayed on the
device)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import sharded  # noqa: E402
from _common import report  # noqa: E402

import tensorix as tx  # noqa: E402
import tensorix.distributed as dist  # noqa: E402
from tensorix import fakecupy, nn  # noqa: E402
from tensorix.distributed import fsdp  # noqa: E402
from tensorix.nn.parallel import DistributedDataParallel  # noqa: E402


def train(model, rank, world):
    """Three steps; returns the device-to-host copies made inside each backward."""
    opt = sharded.adam(model.parameters())
    per, copies = sharded.GLOBAL_BATCH // world, []
    for step in range(sharded.STEPS):
        x, y = sharded.batch(step)
        x, y = x[rank * per:(rank + 1) * per].to("cuda"), y[rank * per:(rank + 1) * per]
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x).reshape(-1, sharded.VOCAB),
                                           y.to("cuda").reshape(-1))
        fakecupy.reset_counts()
        loss.backward()
        copies.append(fakecupy.counts()["d2h"])
        opt.step()
    return copies


def main():
    with tx.backend.fake_cuda():
        dist.init_process_group("nccl")
        rank, world = dist.get_rank(), dist.get_world_size()
        out = {"plain_copies": train(sharded.build(0, tx.float64).to("cuda"), 0, world)}
        for name, wrap in (("ddp", DistributedDataParallel),
                           ("fsdp", lambda m: fsdp.FullyShardedDataParallel(
                               m, auto_wrap_policy=fsdp.ModuleWrapPolicy({sharded.Block})))):
            model = wrap(sharded.build(0, tx.float64).to("cuda"))
            out[f"{name}_copies"] = train(model, rank, world)
            sd = (model.module if name == "ddp" else model).state_dict()
            out[name] = {k: v.to("cpu").numpy() for k, v in sd.items()}
            out[f"{name}_devices"] = sorted({str(p.device) for p in model.parameters()})
    report(rank, out)


if __name__ == "__main__":
    main()
