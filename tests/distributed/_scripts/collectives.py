"""Every collective once, with rank-dependent inputs; results reported per rank."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import report  # noqa: E402

import tensorix as tx  # noqa: E402
import tensorix.distributed as dist  # noqa: E402
from tensorix.distributed.nn import functional as dfn  # noqa: E402


def data(rank, shape=(2, 3), dtype="float64"):
    """The input every test recomputes: rank r's values."""
    return (np.arange(np.prod(shape)).reshape(shape) + 10 * rank + 1).astype(dtype)


def global_gradcheck(fn, x0, rank, eps=1e-6):
    """Numerical gradient check of L = sum over ranks of <w_r, fn(x_r)> along a random
    direction v_r per rank: (sum_r <dL/dx_r, v_r>, the central difference of L). A per-rank
    check would not do: each rank's gradient carries the other ranks' cotangents."""
    rng = np.random.default_rng(100 + rank)
    v = rng.standard_normal(x0.shape)
    x = tx.tensor(x0, requires_grad=True)
    w = tx.tensor(rng.standard_normal(fn(x).shape))
    (fn(x) * w).sum().backward()
    vals = []
    for sign in (1, -1):
        vals.append(float((fn(tx.tensor(x0 + sign * eps * v)) * w).sum()))
    parts = tx.tensor([float((x.grad.numpy() * v).sum()), (vals[0] - vals[1]) / (2 * eps)])
    dist.all_reduce(parts)
    return parts.numpy()


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    out = {"rank": rank, "world": world, "init": dist.is_initialized(),
           "backend": dist.get_backend()}

    for op in ("SUM", "AVG", "MAX", "MIN", "PRODUCT"):
        t = tx.tensor(data(rank))
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        out[f"all_reduce_{op}"] = t.numpy()
    t = tx.tensor(data(rank, dtype="int64"))
    dist.all_reduce(t)
    out["all_reduce_int"] = t.numpy()
    t = tx.tensor(data(rank, dtype="float32")).to(tx.bfloat16)
    dist.all_reduce(t)
    out["all_reduce_bf16"] = t.float().numpy()
    base = tx.tensor(data(rank, (4, 4)))
    view = base[:, 1]  # not contiguous: staged, written back into the base
    dist.all_reduce(view)
    out["all_reduce_view"] = base.numpy()

    with tx.backend.fake_cuda():  # a device tensor: staged through host memory
        t = tx.tensor(data(rank), device="cuda")
        dist.all_reduce(t)
        out["all_reduce_cuda"] = [str(t.device), t.cpu().numpy()]

    t = tx.tensor(data(rank))
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    out["async"] = [work.is_completed(), t.numpy()]

    t = tx.tensor(data(rank))
    dist.reduce(t, dst=world - 1)
    out["reduce"] = t.numpy()
    t = tx.tensor(data(rank))
    dist.broadcast(t, src=1)
    out["broadcast"] = t.numpy()

    lst = [tx.zeros(2, 3, dtype=tx.float64) for _ in range(world)]
    dist.all_gather(lst, tx.tensor(data(rank)))
    out["all_gather"] = [x.numpy() for x in lst]
    big = tx.zeros(world * 2, 3, dtype=tx.float64)
    dist.all_gather_into_tensor(big, tx.tensor(data(rank)))
    out["all_gather_into_tensor"] = big.numpy()

    o = tx.zeros(2, 3, dtype=tx.float64)
    dist.reduce_scatter(o, [tx.tensor(data(rank) * (r + 1)) for r in range(world)])
    out["reduce_scatter"] = o.numpy()
    o = tx.zeros(2, 3, dtype=tx.float64)
    dist.reduce_scatter_tensor(o, tx.tensor(data(rank, (world * 2, 3))))
    out["reduce_scatter_tensor"] = o.numpy()

    # uneven all_to_all_single: rank r sends r + 1 rows (values 100 * r + dst) to each rank dst
    send = np.concatenate([np.full((rank + 1, 2), 100 * rank + d, np.float64)
                           for d in range(world)])
    recv = tx.zeros(sum(r + 1 for r in range(world)), 2, dtype=tx.float64)
    dist.all_to_all_single(recv, tx.tensor(send), [r + 1 for r in range(world)],
                           [rank + 1] * world)
    out["all_to_all_single"] = recv.numpy()
    outs = [tx.zeros(r + 1, dtype=tx.int32) for r in range(world)]
    dist.all_to_all(outs, [tx.full((rank + 1,), 10 * rank + d, dtype=tx.int32)
                           for d in range(world)])
    out["all_to_all"] = [x.numpy() for x in outs]

    glist = [tx.zeros(2, 3, dtype=tx.float64) for _ in range(world)] if rank == 0 else None
    dist.gather(tx.tensor(data(rank)), glist, dst=0)
    out["gather"] = [x.numpy() for x in glist] if glist else None
    t = tx.zeros(2, 3, dtype=tx.float64)
    dist.scatter(t, [tx.tensor(data(r)) for r in range(world)] if rank == 0 else None, src=0)
    out["scatter"] = t.numpy()

    # point to point: a ring, blocking and non-blocking
    t = tx.zeros(3, dtype=tx.float64)
    if rank % 2 == 0:
        dist.send(tx.full((3,), float(rank), dtype=tx.float64), (rank + 1) % world)
        sender = dist.recv(t, src=None)
    else:
        sender = dist.recv(t, src=(rank - 1) % world)
        dist.send(tx.full((3,), float(rank), dtype=tx.float64), (rank + 1) % world)
    out["ring"] = [sender, t.numpy()]
    t = tx.zeros(3, dtype=tx.float64)
    reqs = [dist.isend(tx.full((3,), float(rank), dtype=tx.float64), (rank + 1) % world),
            dist.irecv(t, (rank - 1) % world)]
    for r in reqs:
        r.wait()
    out["iring"] = t.numpy()

    # sub-groups: even ranks together
    evens = dist.new_group([r for r in range(world) if r % 2 == 0])
    t = tx.tensor(data(rank))
    if rank % 2 == 0:
        dist.all_reduce(t, group=evens)
        out["group"] = [dist.get_rank(evens), dist.get_world_size(evens), t.numpy()]
    else:
        out["group"] = [dist.get_rank(evens), None, None]
    dist.barrier()

    # objects
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank, "name": f"r{rank}"})
    out["all_gather_object"] = objs
    lst = [rank, "x" * rank] if rank == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    out["broadcast_object_list"] = lst
    got = [None] * world if rank == 0 else None
    dist.gather_object(("g", rank), got, dst=0)
    out["gather_object"] = got
    o = [None]
    dist.scatter_object_list(o, [f"s{r}" for r in range(world)] if rank == 0 else None, src=0)
    out["scatter_object_list"] = o

    # differentiable: grads of sum(w_r * f(x_r)) through each collective
    x = tx.tensor(data(rank), requires_grad=True)
    w = tx.tensor(data(rank + 5))
    (dfn.all_reduce(x) * w).sum().backward()
    out["grad_all_reduce"] = x.grad.numpy()
    x = tx.tensor(data(rank), requires_grad=True)
    gathered = dfn.all_gather(x)
    sum((g * tx.tensor(data(rank + 5 + i))).sum() for i, g in enumerate(gathered)).backward()
    out["grad_all_gather"] = [[g.detach().numpy() for g in gathered], x.grad.numpy()]
    x = tx.tensor(data(rank, (world, 2, 3)), requires_grad=True)
    y = dfn.reduce_scatter(None, list(x.unbind(0)))
    (y * tx.tensor(data(rank + 5))).sum().backward()
    out["grad_reduce_scatter"] = [y.detach().numpy(), x.grad.numpy()]
    x = tx.tensor(data(rank), requires_grad=True)
    y = dfn.broadcast(x, src=1)
    (y * tx.tensor(data(rank + 5))).sum().backward()
    out["grad_broadcast"] = [y.detach().numpy(), x.grad.numpy()]

    # the one differentiable all-to-all: equal parts along dims (Ulysses), uneven rows (MoE)
    y = dfn.all_to_all(tx.tensor(data(rank, (2, world, 3))), scatter_dim=1, gather_dim=0)
    out["a2a_dims"] = y.numpy()
    rows = sum(j + 1 for j in range(world))
    send, recv = [j + 1 for j in range(world)], [rank + 1] * world
    y = dfn.all_to_all_single(tx.empty(world * (rank + 1), 3), tx.tensor(data(rank, (rows, 3))),
                              recv, send)
    out["a2a_single"] = y.numpy()

    out["gradcheck"] = {
        "all_to_all_dims": global_gradcheck(
            lambda x: dfn.all_to_all(x.sin(), scatter_dim=1, gather_dim=2),
            data(rank, (2, world, 3)), rank),
        "all_to_all_single": global_gradcheck(
            lambda x: dfn.all_to_all_single(tx.empty(world * (rank + 1), 3), x * x, recv, send),
            data(rank, (rows, 3)) / 10, rank),
        "all_reduce": global_gradcheck(lambda x: dfn.all_reduce(x.sin()), data(rank), rank),
        "all_reduce_avg": global_gradcheck(
            lambda x: dfn.all_reduce(x * x, dist.ReduceOp.AVG), data(rank), rank),
        "all_gather": global_gradcheck(
            lambda x: tx.stack(dfn.all_gather(x.exp() / 100)), data(rank) / 10, rank),
        "reduce_scatter": global_gradcheck(
            lambda x: dfn.reduce_scatter(None, list((x * x).unbind(0))),
            data(rank, (world, 2, 3)), rank),
        "broadcast": global_gradcheck(lambda x: dfn.broadcast(x.cos(), src=1), data(rank),
                                      rank)}
    report(rank, out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
