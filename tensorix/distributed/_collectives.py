"""The tensor collectives and point-to-point calls, with torch.distributed's signatures.

``src``/``dst`` are global ranks, as in torch. Each call writes its result into the given
tensors in place; ``async_op=True`` returns a ``Work`` instead of waiting.
"""

from __future__ import annotations

import numpy as np

from .. import backend as _backend
from ._c10d import ReduceOp, _group, _op_name, _root, _run, _same, _Staged


def _xp(array):
    """NumPy for host buffers, CuPy for the device buffers of the nccl backend."""
    return _backend.array_module(array)


def _stack(arrays):
    return _xp(arrays[0]).stack(arrays)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over the ranks of ``group``; every rank gets the result in place.

    Example: rank r holds ``[r, r]``; after ``all_reduce(t)`` every rank holds
    ``[sum(r), sum(r)]``."""
    g = _group(group, "all_reduce")
    s = _Staged(tensor, "all_reduce", "tensor", g)
    name = _op_name(op, "all_reduce", s.host.dtype)
    return _run(g, "all_reduce", lambda: g.comm.iallreduce(s.host, name), [s], async_op,
                [s.host])


def reduce(tensor, dst=0, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over the ranks into ``dst``'s tensor (the others keep theirs)."""
    g = _group(group, "reduce")
    root = _root(g, dst, "reduce", "dst")
    s = _Staged(tensor, "reduce", "tensor", g)
    name = _op_name(op, "reduce", s.host.dtype)
    staged = [s] if g.rank() == root else []
    return _run(g, "reduce", lambda: g.comm.ireduce(s.host, name, root), staged, async_op,
                [s.host])


def broadcast(tensor, src=0, group=None, async_op=False):
    """Copy ``src``'s ``tensor`` into every rank's ``tensor`` (same shape and dtype)."""
    g = _group(group, "broadcast")
    root = _root(g, src, "broadcast", "src")
    s = _Staged(tensor, "broadcast", "tensor", g)
    return _run(g, "broadcast", lambda: g.comm.ibroadcast(s.host, root), [s], async_op,
                [s.host])


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Concatenate every rank's ``input_tensor`` (shape S) along dim 0 into ``output_tensor``
    (shape ``[world*S0, ...]``) or stack it (shape ``[world, *S]``)."""
    g = _group(group, "all_gather_into_tensor")
    out = _Staged(output_tensor, "all_gather_into_tensor", "output_tensor", g)
    inp = _Staged(input_tensor, "all_gather_into_tensor", "input_tensor", g)
    if out.host.size != inp.host.size * g.size() or out.host.dtype != inp.host.dtype:
        raise ValueError(f"all_gather_into_tensor(): expected output_tensor of {g.size()} x "
                         f"{inp.host.size} elements of {inp.host.dtype} (got "
                         f"{tuple(out.host.shape)}, {out.host.dtype})")
    return _run(g, "all_gather_into_tensor", lambda: g.comm.iallgather(out.host, inp.host),
                [out], async_op, [inp.host])


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[r]`` receives rank r's ``tensor`` (all ranks' shapes and dtypes equal)."""
    g = _group(group, "all_gather")
    inp = _Staged(tensor, "all_gather", "tensor", g)
    if len(tensor_list) != g.size():
        raise ValueError(f"all_gather(): expected tensor_list of {g.size()} tensors (got "
                         f"{len(tensor_list)})")
    _same(tensor_list, inp.host.shape, inp.host.dtype, "all_gather", "tensor_list")
    outs = [_Staged(t, "all_gather", "tensor_list", g) for t in tensor_list]
    flat = _xp(inp.host).empty((g.size(), *inp.host.shape), inp.host.dtype)
    work = _run(g, "all_gather", lambda: g.comm.iallgather(flat, inp.host),
                [_Split(outs, flat)], async_op, [inp.host])
    return work


class _Split:
    """After a gather into one buffer, hand block r to the r-th output tensor."""

    def __init__(self, outs, flat):
        self.outs, self.flat = outs, flat

    def back(self, statuses=None):
        for s, block in zip(self.outs, self.flat):
            s.host[...] = block.reshape(s.host.shape)
            s.back()


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` (``world`` blocks along dim 0) over the ranks; rank r gets block r in
    ``output``."""
    g = _group(group, "reduce_scatter_tensor")
    out = _Staged(output, "reduce_scatter_tensor", "output", g)
    inp = _Staged(input, "reduce_scatter_tensor", "input", g)
    if inp.host.size != out.host.size * g.size() or out.host.dtype != inp.host.dtype:
        raise ValueError(f"reduce_scatter_tensor(): expected input of {g.size()} x "
                         f"{out.host.size} elements of {out.host.dtype} (got "
                         f"{tuple(inp.host.shape)}, {inp.host.dtype})")
    name = _op_name(op, "reduce_scatter_tensor", out.host.dtype)
    return _run(g, "reduce_scatter_tensor",
                lambda: g.comm.ireduce_scatter(out.host, inp.host, name), [out], async_op,
                [out.host])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Rank r's ``output`` gets the reduction over ranks of their ``input_list[r]``."""
    g = _group(group, "reduce_scatter")
    out = _Staged(output, "reduce_scatter", "output", g)
    if len(input_list) != g.size():
        raise ValueError(f"reduce_scatter(): expected input_list of {g.size()} tensors (got "
                         f"{len(input_list)})")
    _same(input_list, out.host.shape, out.host.dtype, "reduce_scatter", "input_list")
    flat = _stack([_Staged(t, "reduce_scatter", "input_list", g).host for t in input_list])
    name = _op_name(op, "reduce_scatter", out.host.dtype)
    return _run(g, "reduce_scatter", lambda: g.comm.ireduce_scatter(out.host, flat, name),
                [out], async_op, [out.host])


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Split ``input`` along dim 0 (``input_split_sizes[r]`` rows, equal when None) and send
    part r to rank r; ``output`` receives the parts in rank order (``output_split_sizes``)."""
    g = _group(group, "all_to_all_single")
    out = _Staged(output, "all_to_all_single", "output", g)
    inp = _Staged(input, "all_to_all_single", "input", g)
    if out.host.dtype != inp.host.dtype:
        raise TypeError(f"all_to_all_single(): expected output and input of one dtype (got "
                        f"{out.host.dtype} and {inp.host.dtype})")
    send = _splits(inp.host, input_split_sizes, g.size(), "input")
    recv = _splits(out.host, output_split_sizes, g.size(), "output")
    return _run(g, "all_to_all_single",
                lambda: g.comm.ialltoallv(out.host, inp.host, send, recv), [out], async_op,
                [inp.host.reshape(-1)[:0]])


def _splits(array, sizes, world, arg):
    """Row counts per rank as byte counts, checked against the array."""
    rows = array.shape[0] if array.ndim else 1
    row_bytes = array.nbytes // rows if rows else 0
    if sizes is None:
        if rows % world:
            raise ValueError(f"all_to_all_single(): {arg} has {rows} rows, not divisible by "
                             f"the world size {world}; pass {arg}_split_sizes")
        sizes = [rows // world] * world
    sizes = [int(x) for x in sizes]
    if len(sizes) != world or sum(sizes) != rows or min(sizes) < 0:
        raise ValueError(f"all_to_all_single(): expected {arg}_split_sizes of {world} "
                         f"non-negative row counts summing to {rows} (got {sizes})")
    return [x * row_bytes for x in sizes]


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Send ``input_tensor_list[r]`` to rank r; ``output_tensor_list[r]`` receives rank r's."""
    g = _group(group, "all_to_all")
    for arg, lst in (("output_tensor_list", output_tensor_list),
                     ("input_tensor_list", input_tensor_list)):
        if len(lst) != g.size():
            raise ValueError(f"all_to_all(): expected {arg} of {g.size()} tensors (got "
                             f"{len(lst)})")
    ins = [_Staged(t, "all_to_all", "input_tensor_list", g) for t in input_tensor_list]
    outs = [_Staged(t, "all_to_all", "output_tensor_list", g) for t in output_tensor_list]
    dtypes = {s.host.dtype for s in ins + outs}
    if len(dtypes) != 1:
        raise TypeError(f"all_to_all(): expected tensors of one dtype (got "
                        f"{sorted(map(str, dtypes))})")
    xp = _xp(ins[0].host)
    send = xp.concatenate([s.host.reshape(-1).view(np.uint8) for s in ins])
    recv = xp.empty(sum(s.host.nbytes for s in outs), np.uint8)
    counts_in = [s.host.nbytes for s in ins]
    counts_out = [s.host.nbytes for s in outs]
    return _run(g, "all_to_all", lambda: g.comm.ialltoallv(recv, send, counts_in, counts_out),
                [_Unpack(outs, recv)], async_op, [send[:0]])


class _Unpack:
    """Copy consecutive byte runs of ``recv`` into each output."""

    def __init__(self, outs, recv):
        self.outs, self.recv = outs, recv

    def back(self, statuses=None):
        start = 0
        for s in self.outs:
            block = self.recv[start:start + s.host.nbytes]
            s.host[...] = block.view(s.host.dtype).reshape(s.host.shape)
            start += s.host.nbytes
            s.back()


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """``dst`` receives every rank's ``tensor`` in ``gather_list`` (None on other ranks)."""
    g = _group(group, "gather")
    root = _root(g, dst, "gather", "dst")
    inp = _Staged(tensor, "gather", "tensor", g)
    if g.rank() == root:
        if gather_list is None or len(gather_list) != g.size():
            raise ValueError(f"gather(): expected gather_list of {g.size()} tensors on the "
                             "destination rank")
        _same(gather_list, inp.host.shape, inp.host.dtype, "gather", "gather_list")
        outs = [_Staged(t, "gather", "gather_list", g) for t in gather_list]
        flat = _xp(inp.host).empty((g.size(), *inp.host.shape), inp.host.dtype)
        staged = [_Split(outs, flat)]
    elif gather_list:
        raise ValueError("gather(): gather_list should be given only on the destination rank")
    else:
        flat, staged = None, []
    return _run(g, "gather", lambda: g.comm.igather(flat, inp.host, root), staged, async_op,
                [inp.host])


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """Rank r's ``tensor`` receives ``scatter_list[r]`` from ``src``."""
    g = _group(group, "scatter")
    root = _root(g, src, "scatter", "src")
    out = _Staged(tensor, "scatter", "tensor", g)
    flat = None
    if g.rank() == root:
        if scatter_list is None or len(scatter_list) != g.size():
            raise ValueError(f"scatter(): expected scatter_list of {g.size()} tensors on the "
                             "source rank")
        _same(scatter_list, out.host.shape, out.host.dtype, "scatter", "scatter_list")
        flat = _stack([_Staged(t, "scatter", "scatter_list", g).host for t in scatter_list])
    elif scatter_list:
        raise ValueError("scatter(): scatter_list should be given only on the source rank")
    return _run(g, "scatter", lambda: g.comm.iscatter(out.host, flat, root), [out], async_op,
                [out.host])


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of ``group`` reaches the barrier (bounded by the timeout)."""
    g = _group(group, "barrier")
    return _run(g, "barrier", g.comm.ibarrier, [], async_op)


# -- point to point ----------------------------------------------------------------------------
def isend(tensor, dst, group=None, tag=0):
    """Start sending ``tensor`` to global rank ``dst``; returns a Work."""
    g = _group(group, "isend")
    peer = _root(g, dst, "isend", "dst")
    s = _Staged(tensor, "isend", "tensor", g)
    return _run(g, "isend", lambda: g.comm.isend(s.host, peer, tag), [], True)


def irecv(tensor, src=None, group=None, tag=0):
    """Start receiving into ``tensor`` from global rank ``src`` (any rank when None); the
    Work's ``result()`` is then the sender's rank in ``group``."""
    g = _group(group, "irecv")
    peer = None if src is None else _root(g, src, "irecv", "src")
    s = _Staged(tensor, "irecv", "tensor", g)
    return _run(g, "irecv", lambda: g.comm.irecv(s.host, peer, tag), [s], True)


def send(tensor, dst, group=None, tag=0):
    """Send ``tensor`` to global rank ``dst`` and wait until it has left."""
    isend(tensor, dst, group, tag).wait()


def recv(tensor, src=None, group=None, tag=0):
    """Receive into ``tensor`` from ``src`` (any rank when None); returns the sender's global
    rank."""
    work = irecv(tensor, src, group, tag)
    work.wait()
    return _group(group, "recv").ranks[work.result()]
