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
