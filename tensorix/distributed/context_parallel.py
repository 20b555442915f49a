"""Context parallelism: attention over a sequence split across ranks, exact, differentiable.

- ``ring_attention``: each rank keeps its queries and passes its keys and values around the
  ring (N-1 steps); each step's block is combined by its log-sum-exp, as in online softmax, so
  the result is full attention's. Causal attention is load balanced: split the sequence into 2N
  chunks and give rank r chunks r and 2N-1-r (``load_balanced_positions``); blocks that the
  causal mask hides entirely are skipped.
- ``ulysses_attention`` (DeepSpeed-Ulysses): an all-to-all trades the sequence split for a
  split of the heads, each rank runs full attention on its heads, a second all-to-all trades
  back. Needs heads divisible by the ranks.

Both are written with tensorix ops and differentiable communication (the ring shift's backward
sends the gradient the other way; the all-to-all's backward is the inverse all-to-all), so
autograd gives exact gradients. By default the ring keeps every step's block for backward;
``recompute=True`` keeps only q, k, v, the output and its log-sum-exp, and backward goes round
the ring again, recomputing each block's probabilities (as FlashAttention and Ring Attention
do) while the key/value gradients travel with their block back to its owner.

Example (each rank holds (B, H, T/N, D) of q, k, v)::

    pos = load_balanced_positions(T, rank, world)
    out = ring_attention(q, k, v, pos, causal=True, group=group)
"""

from __future__ import annotations

import math

import numpy as np

from .. import backend
from ..autograd.function import Function, once_differentiable
from ..nn import functional as F
from ..ops.shape import stack
from ..tensor import _make
from . import _collectives
from ._c10d import _group
from .nn.functional import all_to_all

__all__ = ["ring_attention", "ulysses_attention", "load_balanced_positions"]

_NEG = -1e30  # a masked score: finite, so a fully masked block gives weights 0, not NaN


def load_balanced_positions(seq_len, rank, world):
    """Global positions of rank ``rank``'s tokens: chunks r and 2N-1-r of 2N equal chunks
    (equal causal work per rank)."""
    if seq_len % (2 * world):
        raise ValueError(f"load_balanced_positions(): seq_len {seq_len} must be a multiple "
                         f"of 2 x world ({2 * world})")
    c = seq_len // (2 * world)
    return np.concatenate([np.arange(rank * c, (rank + 1) * c),
                           np.arange((2 * world - 1 - rank) * c, (2 * world - rank) * c)])


class _RingShift(Function):
    """Send to the next rank, receive from the previous one; backward the other way."""

    @staticmethod
    def forward(ctx, x, step, group):
        ctx.step, ctx.group = step, group
        return _shift(np.asarray(x._data), step, group, +1)

    @staticmethod
    def backward(ctx, g):
        return _make(_shift(np.asarray(g._data), ctx.step, ctx.group, -1), g._dtype), None, \
            None


def _shift(arr, step, group, direction):
    g = _group(group, "ring_attention")
    world, rank = g.size(), g.rank()
    dst, src = g.ranks[(rank + direction) % world], g.ranks[(rank - direction) % world]
    send = _make(np.ascontiguousarray(arr))
    out = _make(np.empty_like(send._data))
    # one tag per ring step and direction: the backward of several steps may interleave
    tag = 2 * step + (direction < 0)
    work = _collectives.isend(send, dst, group, tag)
    _collectives.recv(out, src, group, tag)
    work.wait()
    return out._data


def ring_attention(q, k, v, positions, causal=False, group=None, scale=None,
                   recompute=False):
    """Attention of this rank's queries over the keys and values of all ranks.

    ``q, k, v``: (B, H, T_local, D), this rank's tokens, at global ``positions`` (T_local,)
    (the same split on every rank: contiguous, or ``load_balanced_positions`` for causal).
    Returns (B, H, T_local, D): full attention's rows for these tokens. ``recompute=True``
    keeps O(T_local) per row for backward instead of every block's (T_local, T_local)
    probabilities (its backward is not itself differentiable).
    """
    g = _group(group, "ring_attention")
    world, rank = g.size(), g.rank()
    pos = np.asarray(positions)
    if pos.shape != (q.shape[-2],):
        raise ValueError(f"ring_attention(): positions must have shape ({q.shape[-2]},), one "
                         f"per local token (got {pos.shape})")
    every = _all_positions(pos, group)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    if k.shape != v.shape:
        raise ValueError("ring_attention(): k and v must have the same shape")
    if recompute:
        return _RingAttention.apply(q, k, v, pos, every, causal, group, scale)
    kv = stack([k, v])
    lses, outs = [], []
    for step in range(world):
        if step:
            kv = _RingShift.apply(kv, step, group)
        kpos = every[(rank - step) % world]
        if causal and kpos.min() > pos.max():
            continue  # every key of this block is after every query: hidden by the mask
        s = (q @ kv[0].transpose(-2, -1)) * scale
        if causal:
            hidden = _make(kpos[None, :] > pos[:, None])
            s = s.masked_fill(hidden, _NEG)
        lse = s.logsumexp(-1, keepdim=True)
        lses.append(lse)
        outs.append((s - lse).exp() @ kv[1])
    total = stack(lses).logsumexp(0)
    out = None
    for lse, o in zip(lses, outs):
        part = (lse - total).exp() * o
        out = part if out is None else out + part
    return out


def _block_scores(q, k, qpos, kpos, causal, scale):
    """One block's scaled scores (B, H, Tq, Tk), the causal mask applied (host arrays)."""
    s = (q @ np.swapaxes(k, -1, -2)) * scale
    if causal:
        s = np.where(kpos[None, :] > qpos[:, None], _NEG, s)
    return s


class _RingAttention(Function):
    """Ring attention that keeps only q, k, v, out and the log-sum-exp for backward.

    Forward: online softmax over the blocks as they pass. Backward: the blocks pass again;
    each step recomputes the block's probabilities p = exp(s - lse) and adds
    dq += (p * (dO v^T - rowsum(dO * out))) k * scale, and the block's dk, dv, which travel
    with it; after N shifts every block, with its gradients, is back at its owner."""

    @staticmethod
    def forward(ctx, q, k, v, pos, every, causal, group, scale):
        device = backend.get_device(q._data)
        qa, ka, va = (np.asarray(backend.to_device(t._data, backend.cpu)) for t in (q, k, v))
        world, rank = every.shape[0], _group(group, "ring_attention").rank()
        kv = np.stack([ka, va])
        lse = out = None
        for step in range(world):
            if step:
                kv = _shift(kv, step, group, +1)
            kpos = every[(rank - step) % world]
            if causal and kpos.min() > pos.max():
                continue
            s = _block_scores(qa, kv[0], pos, kpos, causal, scale)
            m = s.max(-1, keepdims=True)
            block_lse = m + np.log(np.exp(s - m).sum(-1, keepdims=True))
            o = np.exp(s - block_lse) @ kv[1]
            if lse is None:
                lse, out = block_lse, o
            else:
                new = np.logaddexp(lse, block_lse)
                out = out * np.exp(lse - new) + o * np.exp(block_lse - new)
                lse = new
        ctx.save_for_backward(q, k, v)
        # kept as tensors, so that tensorix.memory counts what backward holds on to
        ctx.out, ctx.lse, ctx.device = _make(out), _make(lse), device
        ctx.meta = (pos, every, causal, group, scale)
        return backend.to_device(out.astype(qa.dtype, copy=False), device)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        q, k, v = ctx.saved_tensors
        pos, every, causal, group, scale = ctx.meta
        qa, ka, va = (np.asarray(backend.to_device(t._data, backend.cpu)) for t in (q, k, v))
        go = np.asarray(backend.to_device(g._data, backend.cpu))
        world, rank = every.shape[0], _group(group, "ring_attention").rank()
        delta = (go * ctx.out._data).sum(-1, keepdims=True)  # rowsum(dO * O)
        dq = np.zeros_like(qa)
        # the block and its gradients travel together: [k, v, dk, dv]
        ring = np.stack([ka, va, np.zeros_like(ka), np.zeros_like(va)])
        for step in range(world):
            if step:
                ring = _shift(ring, world + step, group, +1)
            kpos = every[(rank - step) % world]
            if causal and kpos.min() > pos.max():
                continue
            p = np.exp(_block_scores(qa, ring[0], pos, kpos, causal, scale) - ctx.lse._data)
            ring[3] += np.swapaxes(p, -1, -2) @ go
            ds = p * (go @ np.swapaxes(ring[1], -1, -2) - delta) * scale
            dq += ds @ ring[0]
            ring[2] += np.swapaxes(ds, -1, -2) @ qa
        grads = ring[2:] if world == 1 else \
            _shift(ring[2:], 2 * world, group, +1)  # block rank+1's goes home
        dev = ctx.device
        return (_make(backend.to_device(dq, dev), q._dtype),
                _make(backend.to_device(np.ascontiguousarray(grads[0]), dev), k._dtype),
                _make(backend.to_device(np.ascontiguousarray(grads[1]), dev), v._dtype),
                None, None, None, None, None)


def _all_positions(pos, group):
    g = _group(group, "ring_attention")
    out = _make(np.empty((g.size(), pos.size), np.int64))
    _collectives.all_gather_into_tensor(out, _make(pos.astype(np.int64)), group)
    return out._data


def ulysses_attention(q, k, v, causal=False, group=None, scale=None):
    """Attention over a sequence split contiguously over the ranks, by trading the sequence
    split for a head split (two all-to-alls each way).

    ``q, k, v``: (B, H, T/N, D) with rank r holding tokens [r T/N, (r+1) T/N); H divisible by
    N. Returns (B, H, T/N, D).
    """
    world = _group(group, "ulysses_attention").size()
    if q.shape[1] % world:
        raise ValueError(f"ulysses_attention(): {q.shape[1]} heads do not split over {world} "
                         "ranks")
    qh, kh, vh = (all_to_all(t, 1, 2, group=group) for t in (q, k, v))  # (B, H/N, T, D)
    out = F.scaled_dot_product_attention(qh, kh, vh, is_causal=causal, scale=scale)
    return all_to_all(out, 2, 1, group=group)
