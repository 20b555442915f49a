"""Differentiable collectives: out-of-place versions whose backward is the adjoint collective
(torch.distributed.nn.functional). The backward of each calls another collective through
these same Functions, so double backward works too.

==================  =========================================
forward             backward
==================  =========================================
all_reduce (SUM)    all_reduce (SUM) of the gradient
all_reduce (AVG)    all_reduce (AVG) of the gradient
all_gather          reduce_scatter (SUM) of the gradients
reduce_scatter      all_gather of the gradient
broadcast           reduce (SUM) of the gradients to ``src``
all_to_all(_single) the reverse all-to-all of the gradient
==================  =========================================

Every rank must call backward through the same collectives (as in torch).
"""

from __future__ import annotations

import numpy as np

from ...autograd.function import Function
from ...ops.shape import stack
from ...tensor import _make
from .. import _collectives as c
from .._c10d import ReduceOp, _group


def _fresh(t):
    """A new tensor holding a copy of ``t``'s values (collectives write in place)."""
    return _make(np.array(t._data, copy=True) if type(t._data) is np.ndarray
                 else t._data.copy(), t._dtype)


class _AllReduce(Function):
    @staticmethod
    def forward(ctx, x, op, group):
        ctx.op, ctx.group = op, group
        out = _fresh(x)
        c.all_reduce(out, op, group)
        return out._data

    @staticmethod
    def backward(ctx, g):
        return _AllReduce.apply(g, ctx.op, ctx.group)


class _AllGather(Function):
    """Stack every rank's ``x`` along a new dim 0."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        world = _group(group, "all_gather").size()
        out = _make(np.empty((world, *x._data.shape), x._data.dtype), x._dtype)
        c.all_gather_into_tensor(out, _fresh(x), group)
        return out._data

    @staticmethod
    def backward(ctx, g):
        return _ReduceScatter.apply(g, ctx.group)


class _ReduceScatter(Function):
    """``x`` stacked by destination rank along dim 0; this rank gets the sum of block r."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        out = _make(np.empty(x._data.shape[1:], x._data.dtype), x._dtype)
        c.reduce_scatter_tensor(out, _fresh(x), ReduceOp.SUM, group)
        return out._data

    @staticmethod
    def backward(ctx, g):
        return _AllGather.apply(g, ctx.group)


class _Broadcast(Function):
    @staticmethod
    def forward(ctx, x, src, group):
        ctx.src, ctx.group = src, group
        out = _fresh(x)
        c.broadcast(out, src, group)
        return out._data

    @staticmethod
    def backward(ctx, g):
        return _ReduceTo.apply(g, ctx.src, ctx.group)


class _ReduceTo(Function):
    """Sum of every rank's ``x`` on ``dst``; zeros elsewhere (the adjoint of broadcast)."""

    @staticmethod
    def forward(ctx, x, dst, group):
        ctx.dst, ctx.group = dst, group
        out = _fresh(x)
        c.reduce(out, dst, ReduceOp.SUM, group)
        g = _group(group, "reduce")
        if g.ranks[g.rank()] != dst:  # only dst holds the sum; torch leaves others as input
            out._data[...] = 0
        return out._data

    @staticmethod
    def backward(ctx, g):
        return _Broadcast.apply(g, ctx.dst, ctx.group)


class _AllToAll(Function):
    """Split ``x`` along ``scatter_dim`` (``send[j]`` slices, equal when None) and send part j
    to rank j; concatenate what arrives along ``gather_dim`` (``recv[i]`` slices along
    ``scatter_dim`` from rank i). The one differentiable all-to-all: Ulysses' equal head/
    sequence swap and MoE's uneven token exchange; backward is the reverse exchange."""

    @staticmethod
    def forward(ctx, x, send, recv, scatter_dim, gather_dim, group):
        world = _group(group, "all_to_all").size()
        arr = np.asarray(x._data)
        scatter_dim %= max(arr.ndim, 1)
        gather_dim %= max(arr.ndim, 1)
        size = arr.shape[scatter_dim]
        if send is None or recv is None:
            if size % world:
                raise ValueError(f"all_to_all(): dimension {scatter_dim} of size {size} does "
                                 f"not split evenly over {world} ranks (pass split sizes)")
            send = send if send is not None else [size // world] * world
            recv = recv if recv is not None else [size // world] * world
        ctx.args = (list(recv), list(send), gather_dim, scatter_dim, group)
        moved = np.ascontiguousarray(np.moveaxis(arr, scatter_dim, 0))  # the parts as rows
        got = _make(np.empty((int(sum(recv)), *moved.shape[1:]), arr.dtype))
        c.all_to_all_single(got, _make(moved), list(recv), list(send), group)
        if scatter_dim == gather_dim:
            return np.moveaxis(got._data, 0, scatter_dim)
        parts = np.split(got._data, np.cumsum(recv)[:-1], axis=0)
        return np.concatenate([np.moveaxis(q, 0, scatter_dim) for q in parts], axis=gather_dim)

    @staticmethod
    def backward(ctx, g):
        recv, send, gather_dim, scatter_dim, group = ctx.args
        if gather_dim != scatter_dim:  # the reverse swap of equal parts
            recv = send = None
        return (_AllToAll.apply(g, recv, send, gather_dim, scatter_dim, group),
                None, None, None, None, None)


def all_to_all(x, scatter_dim=0, gather_dim=0, input_split_sizes=None,
               output_split_sizes=None, group=None):
    """Differentiable all-to-all along dims: part j of ``x`` along ``scatter_dim`` (equal
    parts, or ``input_split_sizes``) goes to rank j; the parts from ranks 0..N-1 are
    concatenated along ``gather_dim`` (uneven sizes only with ``scatter_dim == gather_dim``).

    Shapes: (B, H, T/N, D) with scatter_dim 1, gather_dim 2 gives (B, H/N, T, D) (Ulysses).
    Example: ``heads = all_to_all(q, scatter_dim=1, gather_dim=2)``."""
    if (input_split_sizes is None) != (output_split_sizes is None):
        raise ValueError("all_to_all(): pass both input_split_sizes and output_split_sizes, "
                         "or neither")
    if input_split_sizes is not None and scatter_dim != gather_dim:
        raise ValueError("all_to_all(): uneven split sizes need scatter_dim == gather_dim")
    return _AllToAll.apply(x, input_split_sizes, output_split_sizes, scatter_dim, gather_dim,
                           group)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None):
    """torch.distributed.nn.functional.all_to_all_single: rows of ``input`` (dim 0, split
    by ``input_split_sizes``) to the ranks; returns a new tensor of ``output``'s shape with
    the rows received (``output`` itself is not written, as the result is differentiable).

    Example: ``out = all_to_all_single(tx.empty(sum(recv), d), rows, recv, send)``."""
    out = all_to_all(input, 0, 0, input_split_sizes, output_split_sizes, group)
    if tuple(out.shape) != tuple(output.shape):
        raise ValueError(f"all_to_all_single(): received {tuple(out.shape)}, but output has "
                         f"shape {tuple(output.shape)}")
    return out


def all_reduce(tensor, op=ReduceOp.SUM, group=None):
    """Out-of-place, differentiable all-reduce (SUM or AVG). Shape: as ``tensor``.

    Example: ``loss = dist.nn.functional.all_reduce(local_loss) / world``."""
    if op not in (ReduceOp.SUM, ReduceOp.AVG):
        raise ValueError(f"all_reduce(): the differentiable all_reduce supports ReduceOp.SUM "
                         f"and ReduceOp.AVG (got {op})")
    return _AllReduce.apply(tensor, op, group)


def all_gather(tensor, group=None):
    """Every rank's ``tensor`` as a tuple (``world`` tensors of ``tensor``'s shape);
    gradients flow back to the rank each came from.

    Example: ``feats = torch_cat(dist.nn.functional.all_gather(local_feats))``."""
    return tuple(_AllGather.apply(tensor, group).unbind(0))


def reduce_scatter(output_shape_like, input_list, group=None):
    """Rank r gets the sum over ranks of ``input_list[r]``; returns a new tensor shaped like
    ``input_list[0]`` (``output_shape_like`` is accepted for torch's signature and unused)."""
    return _ReduceScatter.apply(stack(list(input_list)), group)


def broadcast(tensor, src=0, group=None):
    """``src``'s ``tensor`` on every rank; the gradient is summed back onto ``src``."""
    return _Broadcast.apply(tensor, src, group)
