"""Mixture of experts with expert parallelism (GShard / Switch / Megatron-Core MoE).

``MoE(d_model, d_hidden, num_experts, top_k)`` routes each token to its ``top_k`` experts
(a softmax router; the chosen probabilities renormalised to sum to 1), runs them and sums their
outputs weighted by those probabilities. Each expert takes at most
``capacity = ceil(capacity_factor * tokens * top_k / num_experts)`` tokens of one call (tokens
beyond it, in token order, are dropped for that expert: their output from it is zero);
``capacity_factor=None`` drops nothing. ``aux_loss`` is Switch Transformer's load-balancing loss,
``num_experts * sum_e f_e P_e`` (f_e: the fraction of routed slots that chose e, P_e: the mean
router probability of e), to be added to the training loss with a small weight.

With ``group`` (expert parallelism) the experts are split over its ranks, E/N each: every rank
routes its own tokens, an all-to-all sends each token to the ranks of its experts, they run
there, and a second all-to-all brings the outputs back. Both all-to-alls are differentiable
(the backward of one is the reverse exchange), so gradients reach every rank's router and the
experts' owners. The result equals the single-process MoE applied to each rank's tokens.

Example::

    moe = MoE(64, 256, num_experts=8, top_k=2, capacity_factor=1.25, group=ep_group)
    y = moe(x)                    # (B, T, 64) -> (B, T, 64)
    loss = task_loss(y) + 0.01 * moe.aux_loss
"""

from __future__ import annotations

import math

import numpy as np

from ..nn import GELU, Linear, Module, ModuleList, Sequential
from ..nn import functional as F
from ..ops import creation
from ..ops.shape import cat
from ..tensor import _make
from . import _c10d, _collectives
from .nn.functional import all_to_all

__all__ = ["MoE", "TopKRouter"]


class TopKRouter(Module):
    """``x (n, d) -> (weights (n, k), experts (n, k) int64, keep (n, k) bool, aux_loss)``."""

    def __init__(self, d_model, num_experts, top_k=2, capacity_factor=None):
        super().__init__()
        if not 1 <= top_k <= num_experts:
            raise ValueError(f"TopKRouter(): top_k must be in [1, num_experts={num_experts}] "
                             f"(got {top_k})")
        self.gate = Linear(d_model, num_experts, bias=False)
        self.num_experts, self.top_k, self.capacity_factor = num_experts, top_k, capacity_factor

    def forward(self, x):
        probs = F.softmax(self.gate(x), -1)
        top, experts = probs.topk(self.top_k, -1)
        weights = top / top.sum(-1, keepdim=True)
        chosen = np.asarray(experts._data)
        keep = np.ones(chosen.shape, bool)
        if self.capacity_factor is not None:
            cap = math.ceil(self.capacity_factor * x.shape[0] * self.top_k / self.num_experts)
            # slot-major priority: every token's first choice before any second choice
            flat = chosen.T.reshape(-1)
            rank_in_expert = np.zeros(flat.size, np.int64)
            for e in np.unique(flat):
                hits = np.nonzero(flat == e)[0]
                rank_in_expert[hits] = np.arange(hits.size)
            keep = (rank_in_expert < cap).reshape(chosen.T.shape).T
        counts = np.bincount(chosen.reshape(-1), minlength=self.num_experts)
        frac = _make((counts / chosen.size).astype(np.asarray(probs._data).dtype))
        aux = self.num_experts * (frac * probs.mean(0)).sum()
        return weights, experts, keep, aux


class MoE(Module):
    """A mixture-of-experts feed-forward layer (see the module docstring): ``(..., d_model)
    -> (..., d_model)``; the experts are ``Linear -> GELU -> Linear`` MLPs. With ``group``,
    this rank builds and keeps experts ``[r E/N, (r+1) E/N)`` only."""

    def __init__(self, d_model, d_hidden, num_experts, top_k=2, capacity_factor=None,
                 group=None):
        super().__init__()
        self.router = TopKRouter(d_model, num_experts, top_k, capacity_factor)
        self.group = group
        world = _c10d.get_world_size(group) if group is not None else 1
        if num_experts % world:
            raise ValueError(f"MoE(): num_experts {num_experts} must split over the {world} "
                             "ranks of the expert-parallel group")
        self.local = num_experts // world
        first = (_c10d.get_rank(group) if group is not None else 0) * self.local
        # every rank draws all experts' initial weights, so any split starts from one model
        experts = [Sequential(Linear(d_model, d_hidden), GELU(), Linear(d_hidden, d_model))
                   for _ in range(num_experts)]
        self.first = first
        self.experts = ModuleList(experts[first:first + self.local])
        self.aux_loss = None

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        weights, experts, keep, self.aux_loss = self.router(x)
        chosen, keep = np.asarray(experts._data), keep
        tok, slot = np.nonzero(keep)
        eid = chosen[tok, slot]
        order = np.argsort(eid, kind="stable")
        tok, slot, eid = tok[order], slot[order], eid[order]
        sent = x.index_select(0, _make(tok))
        y = self._run_experts(sent, eid)
        w = weights[_make(tok), _make(slot)].unsqueeze(-1)
        out = creation.zeros(x.shape, dtype=x.dtype).index_add(0, _make(tok), y * w)
        return out.reshape(shape)

    def _run_experts(self, rows, eid):
        """Rows sorted by expert id -> each row through its expert (on the owner's rank)."""
        if self.group is None:
            return self._local(rows, eid)
        world = _c10d.get_world_size(self.group)
        dest = eid // self.local
        send = np.bincount(dest, minlength=world)
        counts = _make(send.astype(np.int64))
        recv = _make(np.empty(world, np.int64))
        _collectives.all_to_all_single(recv, counts, group=self.group)
        recv = recv._data
        ids = all_to_all(_make(eid.astype(np.int64)), 0, 0, send, recv, self.group)._data
        got = all_to_all(rows, 0, 0, send, recv, self.group)
        order = np.argsort(ids, kind="stable")
        done = self._local(got.index_select(0, _make(order)), ids[order])
        back = done.index_select(0, _make(np.argsort(order, kind="stable")))
        return all_to_all(back, 0, 0, recv, send, self.group)

    def _local(self, rows, eid):
        parts = []
        for e in np.unique(eid):
            sel = np.nonzero(eid == e)[0]
            parts.append(self.experts[int(e) - self.first](
                rows[int(sel[0]):int(sel[-1]) + 1]))
        return cat(parts, 0) if parts else rows * 0
