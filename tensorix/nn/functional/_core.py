"""The hot primitives of training: linear, nll_loss / cross_entropy, dropout and embedding
(layer_norm lives with the other norms in ``_norm.py``, softmax and log_softmax with the
activations in ``tensorix/ops/softmax.py``).

Linear and nll are primitives (one graph node each) for speed; their backwards are written
with tensorix ops, so they are differentiable again.
"""

from __future__ import annotations

import numpy as np

from ... import _threads, backend, kernels
from ...autograd.dispatch import NARROW, kernel
from ...autograd.function import Function
from ...autograd.grad_mode import modes, untraced_first_order
from ...ops._common import RAW_FLOATS, check_same_dtype, check_tensor, same_device
from ...ops.einsum import einsum
from ...ops.random import _gen, rand
from ...ops.softmax import log_softmax
from ...tensor import Tensor, _make

__all__ = ["linear", "bilinear", "nll_loss", "cross_entropy", "dropout", "embedding"]


class Linear(Function):
    @staticmethod
    def _gemm(matmul, x, w, b):
        """Under a GEMM policy (autograd/dispatch.py): one (B*T, in) GEMM for stacked inputs,
        so MX blocks and tensor scales see the rows as one matrix; the bias is added in the
        accumulator, before the policy rounds the output."""
        y = matmul(x.reshape(-1, x.shape[-1]), w.mT, b)
        return y.reshape(*x.shape[:-1], y.shape[-1])

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        xd = x._data
        if xd.ndim > 2:
            # one (B*T, in) GEMM: NumPy's stacked matmul is about 2x slower for (B, T, in);
            # a strided input (e.g. transposed to sequence-first) is worth one copy
            xp = backend.array_module(xd)
            flat = xp.ascontiguousarray(xd).reshape(-1, xd.shape[-1])
            out = _threads.matmul(flat, w._data.T).reshape(xd.shape[:-1] + (-1,))
        else:
            out = _threads.matmul(xd, w._data.T)
        if b is not None:
            out += b._data
        return out

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad
        # first order, no GEMM policy, no tracer: raw arrays (storage codes cannot reach here:
        # 16-bit and fp8 inputs take the matmul path in linear())
        if untraced_first_order() and modes.state.gemm is None:
            return _linear_grads(g._data, x._data, w._data, nx, nw, nb)
        gx = None
        if nx:
            gx = (g.reshape(-1, g.shape[-1]) @ w).reshape(x.shape) if g.ndim > 2 else g @ w
        gw = gb = None
        if nw or nb:
            g2 = g.reshape(-1, g.shape[-1])
            if nw:
                gw = g2.mT @ x.reshape(-1, x.shape[-1])
            if nb:
                gb = g2.sum(0)
        return gx, gw, gb


def _linear_grads(g, x, w, nx, nw, nb):
    """Linear's first-order gradients on raw arrays: the input's and the weight's GEMMs run
    at the same time on the pool (``_threads.matmuls``), the same bits as one after the
    other."""
    g2 = g.reshape(-1, g.shape[-1])
    pairs = ([(g2, w)] if nx else []) + ([(g2.T, x.reshape(-1, x.shape[-1]))] if nw else [])
    res = _threads.matmuls(pairs)
    gx = _make(res[0].reshape(x.shape)) if nx else None
    gw = _make(res[-1]) if nw else None
    return gx, gw, (_make(g2.sum(0)) if nb else None)


def linear(input, weight, bias=None) -> Tensor:
    """``input @ weight.T + bias``.

    Shapes: input (*, in), weight (out, in), bias (out,) -> (*, out).
    Example: ``F.linear(tensorix.randn(8, 4), tensorix.randn(3, 4))`` has shape (8, 3).
    """
    check_tensor(input, "linear", "input")
    check_tensor(weight, "linear", "weight")
    if weight.ndim != 2 or input.ndim < 1 or input.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"linear(): mat1 and mat2 shapes cannot be multiplied "
                           f"({'x'.join(map(str, input.shape))} and "
                           f"{weight.shape[1] if weight.ndim == 2 else '?'}x"
                           f"{weight.shape[0]})")
    if input.dtype is not weight.dtype or (bias is not None and bias.dtype is not input.dtype):
        raise RuntimeError(f"linear(): expected input, weight and bias of one dtype, got "
                           f"{input.dtype.name}, {weight.dtype.name}"
                           f"{', ' + bias.dtype.name if bias is not None else ''}")
    if input.dtype in NARROW or input.dtype.category < 2:
        out = input @ weight.mT  # matmul handles fp32 accumulation / integer checks
        return out if bias is None else out + bias
    if type(input._data) is not type(weight._data) or (
            bias is not None and type(bias._data) is not type(input._data)):
        same_device("linear", input, weight, bias)
    return Linear.apply(input, weight, bias)


def bilinear(input1, input2, weight, bias=None) -> Tensor:
    """``out[..., o] = input1 @ weight[o] @ input2 + bias[o]``.

    Shapes: input1 (*, in1), input2 (*, in2), weight (out, in1, in2), bias (out,) -> (*, out).
    """
    check_tensor(input1, "bilinear", "input1")
    check_tensor(input2, "bilinear", "input2")
    if weight.ndim != 3 or input1.shape[-1] != weight.shape[1] or \
            input2.shape[-1] != weight.shape[2] or input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input1 {list(input1.shape)}, input2 "
                           f"{list(input2.shape)} and weight {list(weight.shape)} do not fit "
                           "(*, in1), (*, in2), (out, in1, in2)")
    check_same_dtype("bilinear", ("input1", input1), ("input2", input2), ("weight", weight),
                     ("bias", bias))
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias


class NLLLoss(Function):
    _kernels = {"backward": (kernels.cuda.nll_backward,)}  # (N, C): the coefficient in one pass
    """Per-sample ``-w[y] * logp[y]`` summed with PyTorch's weighted-mean normaliser."""

    @staticmethod
    def forward(ctx, logp, target, weight, ignore_index, reduction):
        xp = logp.xp
        lp = logp._data if logp._data.ndim == 2 else xp.moveaxis(logp._data, 1, -1)  # (N, *, C)
        tgt = target._data
        valid = tgt != ignore_index
        safe = xp.where(valid, tgt, 0)
        c = lp.shape[-1]
        if tgt.size and bool(((safe < 0) | (safe >= c)).any()):  # one device sync, not two
            bad = int(safe.max()) if int(safe.max()) >= c else int(safe.min())
            raise IndexError(f"nll_loss(): target {bad} is out of bounds for {c} classes")
        if lp.ndim == 2:  # (N, C): a fancy index, ~2 us against ~14 for take_along_axis
            picked = lp[xp.arange(lp.shape[0]), safe]
        else:
            picked = xp.take_along_axis(lp, safe[..., None], axis=-1)[..., 0]
        w = valid.astype(lp.dtype) if weight is None else weight._data[safe] * valid
        losses = -picked * w
        ctx.shape, ctx.reduction, ctx.dtype = logp._data.shape, reduction, lp.dtype
        ctx.target, ctx.weight, ctx.ignore_index = target, weight, ignore_index
        if reduction == "none":
            ctx.denom = None
            return losses
        if reduction == "sum":
            ctx.denom = 1.0
            return losses.sum()
        ctx.denom = w.sum()
        return losses.sum() / ctx.denom

    @staticmethod
    def backward(ctx, g):
        if untraced_first_order() and type(g._data) is np.ndarray and \
                g._data.dtype == ctx.dtype and ctx.dtype in RAW_FLOATS:
            # first order, nothing recording or tracing: the two ops below on raw arrays
            # (the same NumPy calls, so the same bits; two dispatches fewer)
            coeff = NLLLossCoeff.forward(None, ctx.target, ctx.weight, ctx.ignore_index,
                                         ctx.reduction, ctx.shape, ctx.dtype, g)
            gd = g._data if ctx.reduction != "none" else np.expand_dims(g._data, 1)
            if type(coeff) is np.ndarray and coeff.dtype == gd.dtype:
                return _make(np.multiply(gd, coeff, out=coeff)), None, None, None, None
        # the coefficient is an op of the target (not an array made here): a traced backward
        # (tensorix.compile) then reads each call's target instead of freezing this one's
        coeff = NLLLossCoeff.apply(ctx.target, ctx.weight, ctx.ignore_index, ctx.reduction,
                                   ctx.shape, ctx.dtype, g)
        if ctx.reduction == "none":
            g = g.unsqueeze(1)
        return g * coeff, None, None, None, None


class NLLLossCoeff(Function):
    """d(nll_loss)/d(logp) per unit of upstream gradient: ``-w[y] / denom`` at the target
    class, 0 elsewhere, shaped like logp (N, C, ...); not differentiable."""

    _differentiable = False

    @staticmethod
    def forward(ctx, target, weight, ignore_index, reduction, shape, dtype, like):
        tgt = target._data
        xp = backend.array_module(tgt)
        valid = tgt != ignore_index
        safe = xp.where(valid, tgt, 0)
        w = valid.astype(dtype) if weight is None else weight._data[safe] * valid
        scale = -w if reduction == "none" else -w / (1.0 if reduction == "sum" else w.sum())
        fused = kernel(NLLLoss, "backward", like.device, like._dtype) if len(shape) == 2 \
            else None
        if fused is not None and scale.dtype == like._data.dtype:  # (N, C): one pass
            return fused(safe, scale, shape[1])
        if len(shape) == 2:  # (N, C): a fancy-index write (the put below costs ~7x more)
            onehot = xp.zeros(shape, dtype=w.dtype)
            onehot[xp.arange(shape[0]), safe] = scale
            return onehot
        onehot = xp.moveaxis(xp.zeros(shape, dtype=w.dtype), 1, -1)
        xp.put_along_axis(onehot, safe[..., None], scale[..., None], axis=-1)
        return xp.ascontiguousarray(xp.moveaxis(onehot, -1, 1))


_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(reduction, op):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}(): {reduction!r} is not a valid value for reduction; expected "
                         "'none', 'mean' or 'sum'")


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean") -> Tensor:
    """Negative log-likelihood of class indices given log-probabilities.

    Shapes: input (N, C) or (N, C, d1, ...), target (N,) or (N, d1, ...) of int64 class
    indices; ``reduction='mean'`` divides by the summed weights of non-ignored targets.
    """
    _check_reduction(reduction, "nll_loss")
    check_tensor(target, "nll_loss", "target")
    if target.dtype.category != 1:
        raise RuntimeError(f"nll_loss(): expected target of integer dtype (class indices), got "
                           f"{target.dtype.name}")
    if input.ndim == 1:  # a single sample: (C,) with a 0-d target
        out = nll_loss(input.unsqueeze(0), target.reshape(1), weight, ignore_index, reduction)
        return out.reshape(())
    if target.shape != (input.shape[0],) + tuple(input.shape[2:]):
        want = [input.shape[0]] + list(input.shape[2:])
        raise ValueError(f"nll_loss(): expected target shape {want}, got "
                         f"{list(target.shape)}")
    if weight is not None and tuple(weight.shape) != (input.shape[1],):
        raise RuntimeError(f"nll_loss(): weight should be a 1D tensor of size {input.shape[1]}, "
                           f"got shape {list(weight.shape)}")
    same_device("nll_loss", input, target, weight)
    return NLLLoss.apply(input, target, weight, ignore_index, reduction)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0) -> Tensor:
    """Cross-entropy of logits against class indices or class probabilities.

    Shapes: input (N, C) or (N, C, d1, ...); target (N, ...) int64 indices, or a float tensor
    shaped like input holding probabilities. ``label_smoothing`` mixes the target with the
    uniform distribution, as in PyTorch.
    Example: ``F.cross_entropy(logits, labels)``.
    """
    _check_reduction(reduction, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy(): label_smoothing must be between 0.0 and 1.0, got "
                         f"{label_smoothing}")
    cdim = 1 if input.ndim > 1 else 0
    logp = log_softmax(input, cdim)
    c = input.shape[cdim]
    if target.dtype.is_floating_point:  # class probabilities
        if tuple(target.shape) != tuple(input.shape):
            no_class = input.shape[:cdim] + input.shape[cdim + 1:]
            hint = (" It has the shape of class indices: those must be integers, e.g. "
                    "target.long()." if tuple(target.shape) == tuple(no_class) else "")
            raise RuntimeError(f"cross_entropy(): probability targets must have the input's "
                               f"shape {list(input.shape)}, got a {target.dtype.name} target "
                               f"of shape {list(target.shape)}; class indices must be "
                               f"int64.{hint}")
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / c
        wl = logp if weight is None else logp * weight.reshape(
            [c] + [1] * (input.ndim - cdim - 1))
        losses = -(wl * target).sum(cdim)
        if reduction == "none":
            return losses
        return losses.sum() if reduction == "sum" else losses.sum() / (losses.numel() or 1)
    loss = nll_loss(logp, target, weight, ignore_index, reduction)
    if not label_smoothing:
        return loss
    valid = (target != ignore_index)
    wl = logp if weight is None else logp * weight.reshape([c] + [1] * (input.ndim - cdim - 1))
    smooth = -wl.sum(cdim) * valid
    if reduction == "none":
        smooth_red = smooth
    elif reduction == "sum":
        smooth_red = smooth.sum()
    else:
        denom = valid.sum() if weight is None else (weight[target.clamp_min(0)] * valid).sum()
        smooth_red = smooth.sum() / denom
    return (1 - label_smoothing) * loss + (label_smoothing / c) * smooth_red


_DROPOUT_KERNELS = (kernels.cuda.dropout_mask,)  # a composite: its mask's kernels per device


class DropoutMask(Function):
    """The keep mask of a dropout, drawn from the generator inside the dispatcher, so a
    compiled graph holds the draw as a node that reads and advances the generator when it
    runs (the same masks as eager given the same generator state; torch's functionalized RNG
    makes the draw an op for the same reason). ``scaled``: the mask is ``keep / (1 - p)`` in
    ``like``'s dtype (dropout); else a bool ``keep`` of ``shape`` (channel dropout). The
    passes keep every draw (``fx.passes.is_pure``: no CSE, DCE or folding of a draw)."""

    _differentiable = False

    @staticmethod
    def forward(ctx, like, shape, p, generator, scaled):
        if not scaled:
            return (rand(*shape, generator=generator, dtype=like.dtype,
                         device=like.device) >= p)._data
        fused = kernels.select(_DROPOUT_KERNELS, like.device, like.dtype)
        if fused is not None:  # the mask from one 64-bit seed of the device's generator
            seed = int(_gen(generator, "dropout", like.device).integers(0, 1 << 63))
            return fused(shape, like.dtype.np, p, seed)
        keep = rand(*shape, generator=generator, device=like.device) >= p
        return (keep.to(like.dtype) * (1.0 / (1.0 - p)))._data


def dropout(input, p=0.5, training=True, inplace=False, generator=None) -> Tensor:
    """Zero elements with probability ``p`` and scale the rest by ``1/(1-p)`` (training only).

    Example: ``F.dropout(x, 0.1, training=model.training)``.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout(): dropout probability has to be between 0 and 1, but got "
                         f"{p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0
    mask = DropoutMask.apply(input, tuple(input._data.shape), p, generator, True)
    if inplace:
        return input.mul_(mask)
    return input * mask


class Embedding(Function):
    @staticmethod
    def forward(ctx, weight, idx, padding_idx):
        ctx.n, ctx.idx, ctx.padding_idx = weight._data.shape[0], idx._data, padding_idx
        return weight._data[idx._data]

    @staticmethod
    def backward(ctx, g):
        return EmbeddingBackward.apply(g, ctx.idx, ctx.n, ctx.padding_idx), None, None


class EmbeddingBackward(Function):
    """Scatter-add rows of the gradient into a (num_embeddings, dim) table."""

    @staticmethod
    def forward(ctx, g, idx, n, padding_idx):
        ctx.idx = idx
        xp = g.xp
        out = xp.zeros((n, g._data.shape[-1]), dtype=g._data.dtype)
        rows, flat = idx.reshape(-1), g._data.reshape(-1, g._data.shape[-1])
        if xp is np and rows.size:
            # sort + reduceat: several times faster than np.add.at, and the stable sort keeps
            # each row's summation order (so the result is the same)
            order = np.argsort(rows, kind="stable")
            keys = rows[order]
            starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
            out[keys[starts]] = np.add.reduceat(flat[order], starts, axis=0)
        else:
            xp.add.at(out, rows, flat)
        if padding_idx is not None:
            out[padding_idx] = 0
        return out

    @staticmethod
    def backward(ctx, gg):
        return gg[_make(ctx.idx)]


def padding_index(padding_idx, num_embeddings: int, op: str):
    """``padding_idx`` counted from the front (None stays None), raising unless it lies in
    [-num_embeddings, num_embeddings). The error is torch's AssertionError (F.embedding and
    nn.Embedding raise it), so code written for torch catches it."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise AssertionError(f"{op}(): Padding_idx must be within num_embeddings, "
                           f"{-num_embeddings} through {num_embeddings - 1}, but got "
                           f"{padding_idx}")
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False) -> Tensor:
    """Look up rows of ``weight`` (num_embeddings, dim) by integer ``input`` (*) -> (*, dim).
    The row at ``padding_idx`` receives no gradient."""
    check_tensor(input, "embedding", "input")
    if input.dtype.category != 1:
        raise RuntimeError(f"embedding(): expected input of integer dtype (indices), got "
                           f"{input.dtype.name}")
    n = weight.shape[0]
    idx = input._data
    # negative indices are out of range, as in torch (not counted from the end)
    if input.numel() and bool(((idx >= n) | (idx < 0)).any()):  # one device sync, not two
        raise IndexError(f"embedding(): index out of range in self (num_embeddings={n}, got "
                         f"indices in [{int(input._data.min())}, {int(input._data.max())}])")
    padding_idx = padding_index(padding_idx, n, "embedding")
    if max_norm is not None:
        from ...autograd.grad_mode import no_grad

        with no_grad():
            rows = weight[input.reshape(-1)]
            norms = (rows.abs() ** norm_type).sum(-1) ** (1.0 / norm_type)
            scale = (max_norm / (norms + 1e-7)).clamp(max=1.0)
            weight[input.reshape(-1)] = rows * scale.unsqueeze(-1)
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding(): scale_grad_by_freq and sparse gradients are not "
                                  "supported")
    same_device("embedding", weight, input)
    return Embedding.apply(weight, input, padding_idx)
