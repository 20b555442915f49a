"""Losses beyond nll/cross-entropy, composed from ops (their gradients come from the ops'
rules), except binary_cross_entropy, a primitive for PyTorch's clamped log and gradient.

Every loss takes ``reduction`` ('none' | 'mean' | 'sum'; kl_div also 'batchmean') and
PyTorch's deprecated ``size_average``/``reduce`` pair, which is mapped onto it.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...ops._common import check_tensor
from ...ops.activation import logsigmoid, softplus
from ...ops.creation import arange
from ...ops.pointwise import where
from ...tensor import Tensor
from ._core import _check_reduction
from ._misc import pairwise_distance

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "cosine_embedding_loss",
           "margin_ranking_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
           "poisson_nll_loss", "gaussian_nll_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "multilabel_margin_loss", "multi_margin_loss",
           "hinge_embedding_loss"]


def _legacy(size_average, reduce, reduction):
    """PyTorch's mapping of the deprecated (size_average, reduce) flags onto ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.mean()


def _pair(input, target, op, reduction, warn_broadcast=True):
    check_tensor(input, op)
    check_tensor(target, op, "target")
    _check_reduction(reduction, op)
    # torch warns of a broadcast target for the regression losses only (mse, l1, smooth_l1,
    # huber); soft_margin_loss broadcasts silently and raises where shapes do not broadcast
    if warn_broadcast and tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({list(target.shape)}) that is different to the "
                      f"input size ({list(input.shape)}). This will likely lead to incorrect "
                      "results due to broadcasting. Please ensure they have the same size.",
                      UserWarning, stacklevel=3)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean",
             weight=None) -> Tensor:
    """Mean squared error ``(input - target)**2`` (optionally weighted elementwise).

    Example: ``F.mse_loss(pred, y)``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _pair(input, target, "mse_loss", reduction)
    d = input - target
    loss = d * d
    return _reduce(loss if weight is None else loss * weight, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean",
            weight=None) -> Tensor:
    """Mean absolute error ``|input - target|``."""
    reduction = _legacy(size_average, reduce, reduction)
    _pair(input, target, "l1_loss", reduction)
    loss = (input - target).abs()
    return _reduce(loss if weight is None else loss * weight, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean",
                   beta=1.0) -> Tensor:
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input -
    target``); ``beta=0`` is the L1 loss."""
    reduction = _legacy(size_average, reduce, reduction)
    _pair(input, target, "smooth_l1_loss", reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss(): smooth_l1_loss does not support negative values "
                           "for beta.")
    d = input - target
    z = d.abs()
    if beta == 0:
        return _reduce(z, reduction)
    return _reduce(where(z < beta, d * d * (0.5 / beta), z - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None) -> Tensor:
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``."""
    _pair(input, target, "huber_loss", reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss(): huber_loss does not support non-positive values for "
                           "delta.")
    d = input - target
    z = d.abs()
    loss = where(z < delta, d * d * 0.5, (z - 0.5 * delta) * delta)
    return _reduce(loss if weight is None else loss * weight, reduction)


class BinaryCrossEntropy(Function):
    """``-w (t log x + (1 - t) log(1 - x))`` with each log clamped at -100 (PyTorch), and
    PyTorch's gradients ``w (x - t) / max(x (1 - x), 1e-12)`` and ``w log((1 - x) / x)``."""

    @staticmethod
    def forward(ctx, x, t, w):
        xp = x.xp
        xd, td = x._data, t._data
        with np.errstate(all="ignore"):
            logx = xp.maximum(xp.log(xd), -100)
            log1mx = xp.maximum(xp.log1p(-xd), -100)
        out = -(td * logx + (1 - td) * log1mx)
        if w is not None:
            out = out * w._data
        ctx.save_for_backward(x, t, w)
        return out.astype(xd.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        x, t, w = ctx.saved_tensors
        nx, nt = ctx.needs_input_grad[:2]
        gw = g if w is None else g * w
        gx = gt = None
        if nx:
            gx = gw * (x - t) / (x * (1 - x)).clamp_min(1e-12)
        if nt:
            gt = gw * ((-x).log1p() - x.log())  # unclamped, as PyTorch
        return gx, gt, None


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean") -> Tensor:
    """Binary cross-entropy of probabilities ``input`` in [0, 1] against ``target``.

    Example: ``F.binary_cross_entropy(tensorix.sigmoid(logits), y)``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    check_tensor(input, "binary_cross_entropy")
    check_tensor(target, "binary_cross_entropy", "target")
    _check_reduction(reduction, "binary_cross_entropy")
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({list(target.shape)}) that is different to the "
                         f"input size ({list(input.shape)}) is deprecated. Please ensure they "
                         "have the same size.")
    data = input._data
    if data.size and (bool((data < 0).any()) or bool((data > 1).any())):
        raise RuntimeError("binary_cross_entropy(): all elements of input should be between 0 "
                           "and 1")
    if weight is not None:
        weight = weight.expand(input.shape)
    return _reduce(BinaryCrossEntropy.apply(input, target, weight), reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None) -> Tensor:
    """Binary cross-entropy of ``sigmoid(input)``, computed stably from the logits:
    ``(1 - t) x - (1 + (pos_weight - 1) t) logsigmoid(x)``.

    ``pos_weight`` (broadcast along the last dim) weights the positive term.
    """
    reduction = _legacy(size_average, reduce, reduction)
    check_tensor(input, "binary_cross_entropy_with_logits")
    _check_reduction(reduction, "binary_cross_entropy_with_logits")
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({list(target.shape)}) must be the same as input size "
                         f"({list(input.shape)})")
    if pos_weight is None:
        loss = (1 - target) * input - logsigmoid(input)
    else:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input - log_weight * logsigmoid(input)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean",
           log_target=False) -> Tensor:
    """Kullback-Leibler divergence with ``input`` as log-probabilities: pointwise
    ``target * (log(target) - input)`` (``exp(t) * (t - input)`` with ``log_target``).

    ``reduction='batchmean'`` divides the sum by the batch size (the mathematically correct
    KL); 'mean' divides by the element count, as PyTorch (with its warning).
    """
    reduction = _legacy(size_average, reduce, reduction)
    check_tensor(input, "kl_div")
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"kl_div(): {reduction!r} is not a valid value for reduction")
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns "
                      "with the KL div math definition.'mean' will be changed to behave the "
                      "same as 'batchmean' in the next major release.", UserWarning,
                      stacklevel=2)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = target.xlogy(target) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean") -> Tensor:
    """``1 - cos(x1, x2)`` for ``target == 1``, ``max(0, cos(x1, x2) - margin)`` for -1.

    Shapes: inputs (N, D) or (D,), target (N,) or ().
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "cosine_embedding_loss")
    if input1.ndim != input2.ndim or input1.ndim not in (1, 2):
        raise RuntimeError(f"cosine_embedding_loss(): expected 1D or 2D inputs of the same "
                           f"rank, got {input1.ndim}D and {input2.ndim}D")
    dim = input1.ndim - 1
    eps = 1e-12
    prod = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + eps
    mag2 = (input2 * input2).sum(dim) + eps
    cos = prod / (mag1 * mag2).sqrt()
    pos = where(target == 1, 1 - cos, 0.0)
    neg = where(target == -1, (cos - margin).clamp_min(0), 0.0)
    return _reduce(pos + neg, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "margin_ranking_loss")
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss(): All input tensors should have same "
                           f"dimension but got sizes: input1: {list(input1.shape)}, input2: "
                           f"{list(input2.shape)}, target: {list(target.shape)} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the pairwise p-distance; ``swap``
    uses ``min(d(a, n), d(p, n))`` as the negative distance."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "triplet_margin_loss")
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError(f"triplet_margin_loss(): The anchor, positive, and negative tensors "
                           f"are expected to have the same number of dimensions, but got: "
                           f"anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")
    if margin <= 0:
        raise ValueError(f"triplet_margin_loss: expected margin to be greater than 0, got "
                         f"{margin} instead")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean") -> Tensor:
    """:func:`triplet_margin_loss` with any ``distance_function(x1, x2)`` (default: the
    pairwise Euclidean distance)."""
    _check_reduction(reduction, "triplet_margin_with_distance_loss")
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater "
                         f"than 0, got {margin} instead")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp_min(0), reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean") -> Tensor:
    """Poisson negative log-likelihood: ``exp(input) - target * input`` (``log_input``) or
    ``input - target * log(input + eps)``; ``full`` adds Stirling's term for target > 1."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "poisson_nll_loss")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        t = target.detach()
        safe = where(t > 1, t, 1.0)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + where(t > 1, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean") -> Tensor:
    """Gaussian negative log-likelihood ``0.5 (log(var) + (input - target)**2 / var)``
    (+ ``0.5 log(2 pi)`` with ``full``); ``var`` is clamped to ``eps`` without cutting its
    gradient (as PyTorch). ``var`` may be shaped like input, lack its last dim, or have 1 there.
    """
    _check_reduction(reduction, "gaussian_nll_loss")
    if isinstance(var, (int, float)):
        from ...ops.creation import full_like

        var = full_like(input, float(var))
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    if var.numel() and bool((var._data < 0).any()):
        raise ValueError("var has negative entry/entries")
    with no_grad():
        shift = var.clamp_min(eps) - var
    var = var + shift
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None,
                     reduction="mean") -> Tensor:
    """``log(1 + exp(-target * input))`` for targets in {1, -1}."""
    reduction = _legacy(size_average, reduce, reduction)
    _pair(input, target, "soft_margin_loss", reduction, warn_broadcast=False)
    return _reduce(softplus(-target * input), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean") -> Tensor:
    """One-vs-all logistic loss over C labels, averaged over the labels per sample.

    Shapes: input and target (N, C) (target in {0, 1}); weight (C,).
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "multilabel_soft_margin_loss")
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(-1) / input.shape[-1]
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None,
                           reduction="mean") -> Tensor:
    """Multi-class multi-label hinge loss: target rows hold class indices, ended by the first
    -1; ``sum_{j in y, i not in y} max(0, 1 - (x[j] - x[i])) / C``."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "multilabel_margin_loss")
    squeeze = input.ndim == 1
    x = input.unsqueeze(0) if squeeze else input
    t = target.reshape(x.shape)
    c = x.shape[-1]
    valid = (t == -1).long().cumsum(-1) == 0  # entries before the first -1
    safe = where(valid, t, 0)
    # is_target[n, i]: i is one of the row's target classes
    cls = arange(c, device=x.device).reshape(1, 1, c)
    onehot = (safe.unsqueeze(-1) == cls).logical_and(valid.unsqueeze(-1))
    is_target = onehot.any(1)
    picked = x.gather(-1, safe)  # (N, K) the target scores
    margins = (1 - picked.unsqueeze(-1) + x.unsqueeze(1)).clamp_min(0)  # (N, K, C)
    mask = valid.unsqueeze(-1).logical_and(is_target.logical_not().unsqueeze(1))
    loss = where(mask, margins, 0.0).sum((1, 2)) / c
    if squeeze:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean") -> Tensor:
    """Multi-class hinge loss ``sum_{i != y} max(0, margin - x[y] + x[i])**p / C``
    (scaled by ``weight[y]``). Shapes: input (N, C) or (C,), target (N,) or ()."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "multi_margin_loss")
    if p not in (1, 2):
        raise ValueError("multi_margin_loss(): only p == 1 and p == 2 supported")
    squeeze = input.ndim == 1
    x = input.unsqueeze(0) if squeeze else input
    t = target.reshape(-1, 1)
    c = x.shape[-1]
    picked = x.gather(1, t)
    margins = (x - picked + margin).clamp_min(0)
    if p == 2:
        margins = margins * margins
    if weight is not None:
        margins = margins * weight[t.reshape(-1)].unsqueeze(1)
    loss = where(arange(c, device=x.device).reshape(1, c) == t, 0.0, margins).sum(1) / c
    if squeeze:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean") -> Tensor:
    """``input`` where ``target == 1``, ``max(0, margin - input)`` where ``target == -1``."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "hinge_embedding_loss")
    margin_part = where(target != 1, (margin - input).clamp_min(0), 0.0)
    self_part = where(target != -1, input, 0.0)
    return _reduce(margin_part + self_part, reduction)
