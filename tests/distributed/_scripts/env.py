"""Started by ``tensorix run``: reports torchrun's variables and one all_reduce."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import report  # noqa: E402

import tensorix as tx  # noqa: E402
import tensorix.distributed as dist  # noqa: E402

if __name__ == "__main__":
    dist.init_process_group("gloo")  # an alias of "mpi", as torch CPU code spells it
    t = tx.ones(2) * dist.get_rank()
    dist.all_reduce(t)
    report(dist.get_rank(), {k: os.environ.get(k) for k in
                             ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
           | {"sum": t.numpy(), "argv": sys.argv[1:]})
