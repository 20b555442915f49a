"""The "nccl" backend on the CuPy stand-in (its nccl module runs NCCL's calls over MPI): every
collective on "cuda" tensors; each rank reports the results (as host lists) and how many
device-to-host copies the collectives made (none: the data stays on the device)."""

import sys
from pathlib import Path

import numpy as np

import tensorix as tx


def main():
    sys.path.insert(0, str(Path(__file__).parent))
    from _common import report

    import tensorix.distributed as dist
    from tensorix import fakecupy

    with tx.backend.fake_cuda():
        dist.init_process_group("nccl")
        rank, world = dist.get_rank(), dist.get_world_size()
        out = {"backend": dist.get_backend(), "available": dist.is_nccl_available()}

        def t(values, dtype=tx.float64):
            return tx.tensor(np.asarray(values), dtype=dtype, device="cuda")

        def host(x):
            return x.to("cpu").to(tx.float64).numpy() if x.dtype != tx.bool else \
                x.to("cpu").numpy()

        fakecupy.reset_counts()
        for op in ("SUM", "AVG", "MAX", "MIN", "PRODUCT"):
            x = t(np.arange(4.0) + rank + 1)
            dist.all_reduce(x, op=getattr(dist.ReduceOp, op))
            out[f"all_reduce_{op}"] = host(x)
            out["device"] = str(x.device)
        out["d2h"] = fakecupy.counts()["d2h"] - 5  # the 5 host() copies above
        for name, dtype in (("bfloat16", tx.bfloat16), ("int64", tx.int64),
                            ("float32", tx.float32)):
            x = t(np.arange(3) + rank, dtype)
            dist.all_reduce(x)
            out[f"sum_{name}"] = host(x)
        flag = t([rank == 1, False], tx.bool)
        dist.all_reduce(flag)
        out["bool_or"] = host(flag)
        x = t(np.full(3, rank + 1.0))
        dist.reduce(x, dst=1)
        out["reduce"] = host(x)
        x = t(np.full(2, float(rank)))
        dist.broadcast(x, src=world - 1)
        out["broadcast"] = host(x)
        g = t(np.zeros(2 * world))
        dist.all_gather_into_tensor(g, t([rank, 10.0 * rank]))
        out["all_gather_into_tensor"] = host(g)
        lst = [t(np.zeros(2)) for _ in range(world)]
        dist.all_gather(lst, t([rank, -rank]))
        out["all_gather"] = [host(a) for a in lst]
        rs = t(np.zeros(2))
        dist.reduce_scatter_tensor(rs, t(np.arange(2.0 * world) * (rank + 1)))
        out["reduce_scatter_tensor"] = host(rs)
        dist.reduce_scatter(rs, [t([r, rank]) for r in range(world)], op=dist.ReduceOp.MAX)
        out["reduce_scatter_max"] = host(rs)
        # uneven all_to_all_single: rank r sends r + 1 rows to every rank
        send = t(np.full((world * (rank + 1), 2), float(rank)))
        recv = t(np.zeros((sum(r + 1 for r in range(world)), 2)))
        dist.all_to_all_single(recv, send, [r + 1 for r in range(world)],
                               [rank + 1] * world)
        out["all_to_all_single"] = host(recv)
        outs = [t(np.zeros(1)) for _ in range(world)]
        dist.all_to_all(outs, [t([100.0 * rank + r]) for r in range(world)])
        out["all_to_all"] = [host(a) for a in outs]
        gl = [t(np.zeros(2)) for _ in range(world)] if rank == 0 else None
        dist.gather(t([rank, rank]), gl, dst=0)
        out["gather"] = [host(a) for a in gl] if gl else None
        sc = t(np.zeros(2))
        dist.scatter(sc, [t([r, 2.0 * r]) for r in range(world)] if rank == 1 else None, src=1)
        out["scatter"] = host(sc)
        # a ring: isend to the right, irecv from the left
        right, left = (rank + 1) % world, (rank - 1) % world
        buf = t(np.zeros(3))
        works = [dist.isend(t(np.full(3, float(rank))), right), dist.irecv(buf, left)]
        for w in works:
            w.wait()
        out["ring"] = host(buf)
        dist.barrier()
        evens = dist.new_group([r for r in range(world) if r % 2 == 0])
        if rank % 2 == 0:
            x = t([1.0 + rank])
            dist.all_reduce(x, group=evens)
            out["evens"] = host(x)
        got = [None] * world
        dist.all_gather_object(got, {"rank": rank})  # host bytes: through MPI
        out["objects"] = got
        try:
            dist.all_reduce(t([1], tx.int64), op=dist.ReduceOp.BAND)
        except ValueError as e:
            out["band_error"] = str(e)
        report(rank, out)


if __name__ == "__main__":
    main()
