"""The mpi backend's progress thread, at the MPI thread level named by argv[2] ("multiple",
"serialized" or "funneled"): non-blocking collectives and messages complete while the caller
makes no MPI call, DDP trains as one process does, and a collective nobody waits for does not
spoil exit."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import mpi4py  # noqa: E402

mpi4py.rc.thread_level = sys.argv[2]  # before MPI is initialised (by init_process_group)

import ddp as ddp_script  # noqa: E402
from _common import report  # noqa: E402

import tensorix as tx  # noqa: E402
import tensorix.distributed as dist  # noqa: E402
from tensorix.distributed import _c10d, _mpi  # noqa: E402
from tensorix.nn.parallel import DistributedDataParallel  # noqa: E402


def idle_until_done(work, seconds=30.0):
    """Sleep (no MPI call on this thread) until the progress thread has completed ``work``'s
    requests; True if it did."""
    deadline = time.monotonic() + seconds
    while not work._tested and time.monotonic() < deadline:
        time.sleep(1e-3)
    return work._tested


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    progress = _c10d._state.progress
    threaded = progress.threaded  # FUNNELED: Works listed for the exit, tested by no thread
    out = {"level": _mpi.thread_level(), "thread": threaded}

    # an all-reduce of 2 MB: several rounds of MPI's algorithm, each needing progress
    t = tx.full((2**18,), float(rank + 1), dtype=tx.float64)
    work = dist.all_reduce(t, async_op=True)
    out["allreduce_by_thread"] = idle_until_done(work) if threaded else None
    work.wait()
    out["allreduce_ok"] = bool((t.numpy() == world * (world + 1) / 2).all())

    # a 4 MB message between pairs (rendezvous protocol: both sides must progress)
    peer = rank ^ 1
    if peer < world:
        buf = tx.full((2**19,), float(rank), dtype=tx.float64)
        work = dist.isend(buf, peer) if rank % 2 == 0 else dist.irecv(buf, peer)
        out["p2p_by_thread"] = idle_until_done(work) if threaded else None
        work.wait()
        out["p2p_ok"] = bool((buf.numpy() == float(rank - rank % 2)).all())
        out["sender"] = work.result()

    model = ddp_script.build(rank, tx.float64)
    ddp = DistributedDataParallel(model, bucket_cap_mb=2e-5, find_unused_parameters=True)
    added = progress.added
    ddp_script.train(ddp, tx.float64, rank, world, ddp)
    out["ddp_works"] = progress.added - added  # buckets registered with the progress list
    out["weights"] = {k: v.numpy() for k, v in model.state_dict().items()}
    report(rank, out)
    # exit with a collective started and never waited for: the exit drains it (with no
    # thread, FUNNELED, too: Open MPI's finalize then freed its buffers twice, now and then)
    dist.all_reduce(tx.ones(2**18), async_op=True)


if __name__ == "__main__":
    main()
