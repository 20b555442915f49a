"""Sharded checkpoint round trip: ``dcp.py OUT save DIR`` trains an FSDP model two steps and
saves model and Adam state; ``dcp.py OUT load DIR`` (any world size) loads them and trains the
third step. Each rank reports the final full weights."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import sharded  # noqa: E402
from _common import report  # noqa: E402

import tensorix as tx  # noqa: E402
import tensorix.distributed as dist  # noqa: E402
from tensorix.distributed import checkpoint as dcp  # noqa: E402
from tensorix.distributed.fsdp import FullyShardedDataParallel as FSDP  # noqa: E402
from tensorix.distributed.fsdp import ModuleWrapPolicy  # noqa: E402


def main():
    mode, folder = sys.argv[2], sys.argv[3]
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    # save with nested units, load into one flat unit: the layout need not match either
    policy = ModuleWrapPolicy({sharded.Block}) if mode != "load" else None
    model = FSDP(sharded.build(1 if mode == "load" else 0, tx.float64), auto_wrap_policy=policy)
    opt = sharded.adam(model.parameters())
    if mode == "save":
        sharded.train(model, opt, rank, world, steps=range(2))
        dcp.save(model, folder, optimizer=opt)
    elif mode == "async":
        # snapshot after two steps, train a third while the files are written: the files
        # hold the two-step state
        sharded.train(model, opt, rank, world, steps=range(2))
        pending = dcp.async_save(model, folder, optimizer=opt)
        sharded.train(model, opt, rank, world, steps=range(2, 3))
        pending.result()
        dist.barrier()
    else:
        dcp.load(model, folder, optimizer=opt)
        sharded.train(model, opt, rank, world, steps=range(2, 3))
    report(rank, {k: v.numpy() for k, v in model.state_dict().items()})


if __name__ == "__main__":
    main()
