"""Tensor and sequence parallelism (Megatron-LM): layers whose weights are split over the
ranks of a tensor-parallel group, and the four communication ops they are built from.

==========================  ======================  ==========================
op                          forward                 backward
==========================  ======================  ==========================
``copy_to_region``          identity                all-reduce
``reduce_from_region``      all-reduce              identity
``gather_from_region``      all-gather (last dim)   keep this rank's slice
``scatter_to_region``       keep this rank's slice  all-gather (last dim)
``scatter_to_sequence``     keep this rank's part   all-gather (seq dim)
``gather_from_sequence``    all-gather (seq dim)    reduce-scatter (seq dim)
``reduce_scatter_to_seq``   reduce-scatter (seq)    all-gather (seq dim)
==========================  ======================  ==========================

A ``ColumnParallelLinear`` keeps rows of the weight (output features), a ``RowParallelLinear``
columns (input features): an MLP ``Column -> GELU -> Row`` needs one all-reduce forward and one
backward. With ``sequence_parallel=True`` the activations between blocks are split along the
sequence (LayerNorm and dropout then work on 1/N of the tokens), the Column layer all-gathers
its input along the sequence and the Row layer reduce-scatters its output, in place of the
all-reduce. ``VocabParallelEmbedding`` and ``vocab_parallel_cross_entropy`` split the vocabulary.

Every layer is made from the plain layer (``from_module``), so a model built and seeded as usual
and then parallelized computes what the plain model does; ``parallelize_module`` applies a plan.

Example (``tensorix run -n 2 script.py``)::

    mlp = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64))
    parallelize_module(mlp, tp_group, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    y = mlp(x)                      # = the plain MLP's output, on every rank
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..nn import functional as F
from ..nn.module import Module
from ..nn.parameter import Parameter
from ..tensor import _make
from ..utils.checkpoint import checkpoint
from . import _collectives
from ._c10d import ReduceOp, _group

__all__ = ["copy_to_region", "reduce_from_region", "gather_from_region", "scatter_to_region",
           "scatter_to_sequence", "gather_from_sequence", "reduce_scatter_to_sequence",
           "ColumnParallelLinear", "RowParallelLinear", "VocabParallelEmbedding",
           "vocab_parallel_cross_entropy", "SequenceParallelLayerNorm", "ColwiseParallel",
           "RowwiseParallel", "parallelize_module", "ParallelSelfAttention"]


def _all_reduce(arr, group, op=ReduceOp.SUM):
    """A reduced copy of ``arr`` (collectives write in place; the input stays as it was)."""
    out = _make(np.array(arr, copy=True))
    _collectives.all_reduce(out, op, group)
    return out._data


def _all_gather(arr, dim, group):
    """Concatenate every rank's ``arr`` along ``dim``."""
    world = _group(group, "all_gather").size()
    moved = np.ascontiguousarray(np.moveaxis(arr, dim, 0))
    out = np.empty((world, *moved.shape), arr.dtype)
    _collectives.all_gather_into_tensor(_make(out), _make(moved), group)
    return np.moveaxis(out.reshape(world * moved.shape[0], *moved.shape[1:]), 0, dim)


def _reduce_scatter(arr, dim, group):
    """Sum over ranks, and keep this rank's block along ``dim``."""
    world = _group(group, "reduce_scatter").size()
    moved = np.ascontiguousarray(np.moveaxis(arr, dim, 0))
    _check_split(moved.shape[0], world, "reduce_scatter_to_sequence", dim)
    out = np.empty((moved.shape[0] // world, *moved.shape[1:]), arr.dtype)
    _collectives.reduce_scatter_tensor(_make(out), _make(moved), ReduceOp.SUM, group)
    return np.moveaxis(out, 0, dim)


def _split(arr, dim, group):
    g = _group(group, "scatter")
    _check_split(arr.shape[dim], g.size(), "scatter_to_region", dim)
    n = arr.shape[dim] // g.size()
    return np.ascontiguousarray(np.take(arr, np.arange(g.rank() * n, (g.rank() + 1) * n), dim))


def _check_split(size, world, op, dim):
    if size % world:
        raise ValueError(f"{op}(): dimension {dim} of size {size} does not split over "
                         f"{world} ranks")


class _Copy(Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x._data

    @staticmethod
    def backward(ctx, g):
        return _make(_all_reduce(g._data, ctx.group), g._dtype), None


class _Reduce(Function):
    @staticmethod
    def forward(ctx, x, group):
        return _all_reduce(x._data, group)

    @staticmethod
    def backward(ctx, g):
        return g, None


class _Gather(Function):
    @staticmethod
    def forward(ctx, x, dim, group):
        ctx.dim, ctx.group = dim, group
        return _all_gather(x._data, dim, group)

    @staticmethod
    def backward(ctx, g):
        return _make(_split(g._data, ctx.dim, ctx.group), g._dtype), None, None


class _Scatter(Function):
    @staticmethod
    def forward(ctx, x, dim, group):
        ctx.dim, ctx.group = dim, group
        return _split(x._data, dim, group)

    @staticmethod
    def backward(ctx, g):
        return _make(_all_gather(g._data, ctx.dim, ctx.group), g._dtype), None, None


class _GatherSeq(_Gather):
    """_Gather's forward; backward reduce-scatters (the ranks hold partial gradients)."""

    @staticmethod
    def backward(ctx, g):
        return _make(_reduce_scatter(g._data, ctx.dim, ctx.group), g._dtype), None, None


class _ReduceScatterSeq(_Scatter):
    """_Scatter's backward (all-gather); forward sums over the ranks before keeping a part."""

    @staticmethod
    def forward(ctx, x, dim, group):
        ctx.dim, ctx.group = dim, group
        return _reduce_scatter(x._data, dim, group)


def copy_to_region(x, group=None):
    """Identity forward, all-reduce of the gradient backward (before a Column layer)."""
    return _Copy.apply(x, group)


def reduce_from_region(x, group=None):
    """All-reduce forward, identity backward (after a Row layer)."""
    return _Reduce.apply(x, group)


def gather_from_region(x, group=None, dim=-1):
    """All-gather along ``dim`` forward; backward keeps this rank's slice (of a gradient that
    every rank holds whole, e.g. after a replicated layer: the end of a sequence-parallel
    stack)."""
    return _Gather.apply(x, dim, group)


def scatter_to_region(x, group=None):
    """Keep this rank's slice of the last dim forward; all-gather backward."""
    return _Scatter.apply(x, -1, group)


def gather_from_sequence(x, dim=1, group=None):
    """All-gather along the sequence ``dim`` forward; reduce-scatter backward."""
    return _GatherSeq.apply(x, dim, group)


def reduce_scatter_to_sequence(x, dim=1, group=None):
    """Reduce-scatter along the sequence ``dim`` forward; all-gather backward."""
    return _ReduceScatterSeq.apply(x, dim, group)


def scatter_to_sequence(x, dim=1, group=None):
    """Keep this rank's part of the sequence forward; all-gather backward."""
    return _Scatter.apply(x, dim, group)


# -- layers --------------------------------------------------------------------------------------
def _shard_rows(w, group, chunks=1):
    """This rank's rows of ``w`` (out, ...); with ``chunks`` > 1, its rows of each of the
    ``chunks`` equal blocks (a fused QKV weight keeps whole heads of Q, K and V)."""
    g = _group(group, "tensor_parallel")
    blocks = np.split(np.asarray(w), chunks, axis=0)
    _check_split(blocks[0].shape[0], g.size(), "ColumnParallelLinear", 0)
    n = blocks[0].shape[0] // g.size()
    return np.concatenate([b[g.rank() * n:(g.rank() + 1) * n] for b in blocks], axis=0)


class ColumnParallelLinear(Module):
    """``y = x W^T + b`` with W's rows (output features) split over the group: this rank
    computes ``out_features / N`` outputs. ``gather_output`` all-gathers them; otherwise the
    output stays split (the input of a RowParallelLinear). With ``sequence_parallel`` the input
    is split along ``seq_dim`` and all-gathered first.

    Example: ``ColumnParallelLinear.from_module(nn.Linear(64, 256), group)``.
    """

    def __init__(self, weight, bias, group=None, gather_output=True, sequence_parallel=False,
                 seq_dim=1):
        super().__init__()
        self.weight = Parameter(_make(weight))
        self.bias = Parameter(_make(bias)) if bias is not None else None
        self.group, self.gather_output = group, gather_output
        self.sequence_parallel, self.seq_dim = sequence_parallel, seq_dim

    @classmethod
    def from_module(cls, linear, group=None, chunks=1, **kwargs):
        """This rank's part of the plain ``nn.Linear`` ``linear``."""
        bias = None if linear.bias is None else _shard_rows(linear.bias._data, group, chunks)
        return cls(_shard_rows(linear.weight._data, group, chunks), bias, group, **kwargs)

    def forward(self, x):
        x = gather_from_sequence(x, self.seq_dim, self.group) if self.sequence_parallel else \
            copy_to_region(x, self.group)
        y = F.linear(x, self.weight, self.bias)
        return gather_from_region(y, self.group) if self.gather_output else y


class RowParallelLinear(Module):
    """``y = x W^T + b`` with W's columns (input features) split over the group: this rank
    takes its slice of the input (already split when ``input_is_parallel``), and the partial
    products are summed by an all-reduce (a reduce-scatter along ``seq_dim`` with
    ``sequence_parallel``); the bias, whole on every rank, is added after.

    Example: ``RowParallelLinear.from_module(nn.Linear(256, 64), group, input_is_parallel=True)``.
    """

    def __init__(self, weight, bias, group=None, input_is_parallel=False,
                 sequence_parallel=False, seq_dim=1):
        super().__init__()
        self.weight = Parameter(_make(weight))
        self.bias = Parameter(_make(bias)) if bias is not None else None
        self.group, self.input_is_parallel = group, input_is_parallel
        self.sequence_parallel, self.seq_dim = sequence_parallel, seq_dim

    @classmethod
    def from_module(cls, linear, group=None, **kwargs):
        """This rank's part of the plain ``nn.Linear`` ``linear``."""
        w = np.ascontiguousarray(_shard_rows(np.asarray(linear.weight._data).T, group).T)
        bias = None if linear.bias is None else np.array(linear.bias._data)
        return cls(w, bias, group, **kwargs)

    def forward(self, x):
        if not self.input_is_parallel:
            x = scatter_to_region(x, self.group)
        y = F.linear(x, self.weight)
        y = reduce_scatter_to_sequence(y, self.seq_dim, self.group) if \
            self.sequence_parallel else reduce_from_region(y, self.group)
        if self.bias is None:
            return y
        # with sequence parallelism each rank adds the bias to its own tokens: its gradient
        # is a sum over the sequence, so it must be summed over the ranks too
        bias = copy_to_region(self.bias, self.group) if self.sequence_parallel else self.bias
        return y + bias


class ParallelSelfAttention(Module):
    """Multi-head self-attention with its heads split over the group (Megatron's parallel
    attention): a ColumnParallelLinear makes this rank's q, k and v heads, the rank attends
    with them, a RowParallelLinear sums the output projection.

    ``recompute_core=True`` is Megatron's selective activation recomputation: the attention
    core (scores, softmax, dropout, the weighted sum of values) runs under
    ``utils.checkpoint``, so its ``(B, H/N, T, T)`` activations are not kept for backward but
    recomputed from q, k and v, the GEMM outputs, which are kept (the RNG state is replayed:
    dropout draws the same mask). Shapes: x ``(B, T, d)`` (``(B, T/N, d)`` with
    ``sequence_parallel``) -> the same.

    Example: ``blk.attn = ParallelSelfAttention.from_module(blk.attn, tp_group,
    recompute_core=True)`` for an attention with ``qkv``/``proj`` Linears and ``n_heads``.
    """

    def __init__(self, qkv, proj, n_heads, head_dim, causal=True, dropout_p=0.0,
                 recompute_core=False):
        super().__init__()
        self.qkv, self.proj = qkv, proj
        self.n_heads, self.head_dim = n_heads, head_dim
        self.causal, self.dropout_p, self.recompute_core = causal, dropout_p, recompute_core

    @classmethod
    def from_module(cls, attn, group=None, sequence_parallel=False, recompute_core=False,
                    causal=True, dropout_p=0.0):
        """This rank's heads of ``attn`` (a module with ``qkv`` (d -> 3d) and ``proj``
        Linears, ``n_heads`` and ``head_dim``, like the demo GPT's)."""
        world = _group(group, "ParallelSelfAttention").size()
        _check_split(attn.n_heads, world, "ParallelSelfAttention", "heads")
        qkv = ColumnParallelLinear.from_module(attn.qkv, group, 3, gather_output=False,
                                               sequence_parallel=sequence_parallel)
        proj = RowParallelLinear.from_module(attn.proj, group, input_is_parallel=True,
                                             sequence_parallel=sequence_parallel)
        return cls(qkv, proj, attn.n_heads // world, attn.head_dim, causal, dropout_p,
                   recompute_core)

    def _core(self, q, k, v):
        p = self.dropout_p if self.training else 0.0
        return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=self.causal)

    def forward(self, x):
        qkv = self.qkv(x)
        b, t = qkv.shape[:2]
        q, k, v = qkv.reshape(b, t, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4) \
            .unbind(0)
        if self.recompute_core and is_grad_enabled():
            y = checkpoint(self._core, q, k, v, use_reentrant=False)
        else:
            y = self._core(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(b, t, self.n_heads * self.head_dim))

    def extra_repr(self) -> str:
        return (f"heads={self.n_heads} (this rank), head_dim={self.head_dim}, "
                f"recompute_core={self.recompute_core}")


class VocabParallelEmbedding(Module):
    """An embedding whose rows (the vocabulary) are split over the group: each rank looks up
    the ids in its range, zeros the others, and an all-reduce sums the parts.

    Example: ``VocabParallelEmbedding.from_module(nn.Embedding(50304, 768), group)``.
    """

    def __init__(self, weight, start, group=None):
        super().__init__()
        self.weight = Parameter(_make(weight))
        self.start, self.group = start, group

    @classmethod
    def from_module(cls, embedding, group=None):
        """This rank's rows of the plain ``nn.Embedding`` ``embedding``."""
        g = _group(group, "VocabParallelEmbedding")
        _check_split(embedding.weight.shape[0], g.size(), "VocabParallelEmbedding", 0)
        n = embedding.weight.shape[0] // g.size()
        return cls(_shard_rows(embedding.weight._data, group), g.rank() * n, group)

    def forward(self, ids):
        n = self.weight.shape[0]
        local = ids - self.start
        outside = (local < 0) | (local >= n)
        out = F.embedding(local.masked_fill(outside, 0), self.weight)
        out = out.masked_fill(outside.unsqueeze(-1), 0.0)
        return reduce_from_region(out, self.group)


class _VocabParallelCE(Function):
    """Cross entropy over logits split along the vocabulary: three all-reduces of one number
    per token (max, sum of exponentials, target logit); backward is local."""

    @staticmethod
    def forward(ctx, logits, target, start, group):
        x = np.asarray(logits._data)
        t = np.asarray(target._data)
        m = x.max(-1)
        m = _all_reduce(m, group, ReduceOp.MAX)
        e = np.exp(x - m[..., None])
        s = _all_reduce(e.sum(-1), group)
        local = t - start
        inside = (local >= 0) & (local < x.shape[-1])
        picked = np.where(inside, np.take_along_axis(x, np.where(inside, local, 0)[..., None],
                                                     -1)[..., 0], 0.0)
        picked = _all_reduce(picked, group)
        ctx.softmax = e / s[..., None]
        ctx.local, ctx.inside = local, inside
        return (np.log(s) + m - picked).astype(x.dtype)

    @staticmethod
    def backward(ctx, g):
        grad = ctx.softmax.copy()
        idx = np.where(ctx.inside, ctx.local, 0)[..., None]
        hit = np.take_along_axis(grad, idx, -1) - ctx.inside[..., None]
        np.put_along_axis(grad, idx, hit, -1)
        return _make(grad * np.asarray(g._data)[..., None], g._dtype), None, None, None


def vocab_parallel_cross_entropy(logits, target, group=None):
    """Per-token cross entropy of logits split over the group along the last dim (this rank
    holds vocabulary entries ``[rank*V/N, (rank+1)*V/N)``): ``(..., V/N), (...) -> (...)``.
    Take ``.mean()`` for the usual loss.

    Example: ``loss = vocab_parallel_cross_entropy(head(h), targets, group).mean()``.
    """
    g = _group(group, "vocab_parallel_cross_entropy")
    return _VocabParallelCE.apply(logits, target, g.rank() * logits.shape[-1], group)


class SequenceParallelLayerNorm(Module):
    """A LayerNorm on this rank's part of the sequence; its weight and bias gradients are
    summed over the group (each rank sees only its tokens)."""

    def __init__(self, norm, group=None):
        super().__init__()
        self.weight, self.bias = norm.weight, norm.bias
        self.normalized_shape, self.eps, self.group = norm.normalized_shape, norm.eps, group

    def forward(self, x):
        w = None if self.weight is None else copy_to_region(self.weight, self.group)
        b = None if self.bias is None else copy_to_region(self.bias, self.group)
        return F.layer_norm(x, self.normalized_shape, w, b, self.eps)


# -- plans (torch.distributed.tensor.parallel's names, with a process group for the mesh) -------
class ColwiseParallel:
    """Plan entry: an ``nn.Linear`` becomes a ColumnParallelLinear whose output stays split
    (``gather_output=False``) unless ``use_local_output=False``; an ``nn.Embedding`` becomes a
    VocabParallelEmbedding. ``chunks`` splits a fused weight (QKV: 3) block by block."""

    def __init__(self, chunks=1, sequence_parallel=False, use_local_output=True):
        self.chunks, self.sequence_parallel = chunks, sequence_parallel
        self.gather = not use_local_output

    def apply(self, module, group):
        if type(module).__name__ == "Embedding":
            return VocabParallelEmbedding.from_module(module, group)
        return ColumnParallelLinear.from_module(module, group, self.chunks,
                                                gather_output=self.gather,
                                                sequence_parallel=self.sequence_parallel)


class RowwiseParallel:
    """Plan entry: an ``nn.Linear`` becomes a RowParallelLinear taking a split input."""

    def __init__(self, sequence_parallel=False, input_is_parallel=True):
        self.sequence_parallel, self.input_is_parallel = sequence_parallel, input_is_parallel

    def apply(self, module, group):
        return RowParallelLinear.from_module(module, group,
                                             input_is_parallel=self.input_is_parallel,
                                             sequence_parallel=self.sequence_parallel)


def parallelize_module(module, group, plan):
    """Replace the submodules named in ``plan`` ({dotted name: ColwiseParallel() |
    RowwiseParallel()}) by their tensor-parallel forms, in place; returns ``module``."""
    for name, style in plan.items():
        parent_name, _, leaf = name.rpartition(".")
        parent = module.get_submodule(parent_name) if parent_name else module
        child = parent._modules.get(leaf)
        if child is None:
            raise KeyError(f"parallelize_module(): no submodule {name!r}")
        parent._modules[leaf] = style.apply(child, group)
    return module
