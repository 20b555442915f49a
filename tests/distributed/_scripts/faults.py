"""Failure modes, chosen by argv[2]: raise (a rank dies), raise_async (a rank dies while the
others' non-blocking all-reduce is tested by the progress thread), timeout (a rank joins late),
mismatch (ranks disagree on a shape; also times the check)."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import report  # noqa: E402

import tensorix as tx  # noqa: E402
import tensorix.distributed as dist  # noqa: E402


def main(mode):
    if mode == "timeout":
        dist.init_process_group("mpi", timeout=1.0)
    else:
        dist.init_process_group("mpi")
    rank, out = dist.get_rank(), {}
    if mode == "raise":
        if rank == 1:
            raise ValueError("boom on rank 1")
        dist.all_reduce(tx.ones(3))  # waits for rank 1, which never comes
    elif mode == "raise_async":
        if rank == 1:
            time.sleep(0.5)  # the others' all-reduce is pending in the progress thread
            raise ValueError("boom on rank 1")
        work = dist.all_reduce(tx.ones(2**18), async_op=True)
        time.sleep(1.0)
        work.wait()  # rank 1 never comes
    elif mode == "timeout":
        t = tx.ones(3)
        if rank == 0:
            start = time.monotonic()
            try:
                dist.all_reduce(t)
                out["error"] = None
            except dist.DistBackendError as e:
                out["error"], out["seconds"] = str(e), time.monotonic() - start
        else:
            time.sleep(2.5)  # join late so that the job ends cleanly
            dist.all_reduce(t)
        dist.barrier(async_op=True).wait(timeout=30)  # longer than the group's 1 s
    elif mode == "mismatch":
        for level in ("OFF", "DETAIL"):  # the check's cost on a tiny all_reduce
            dist.set_debug_level(level)
            t = tx.ones(4)
            dist.barrier()
            start = time.perf_counter()
            for _ in range(200):
                dist.all_reduce(t)
            out[f"us_{level}"] = (time.perf_counter() - start) / 200 * 1e6
        try:
            dist.all_reduce(tx.ones(3 + rank))
            out["error"] = None
        except dist.DistError as e:
            out["error"] = str(e)
    report(rank, out)


if __name__ == "__main__":
    main(sys.argv[2])
