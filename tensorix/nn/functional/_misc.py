"""Channel dropouts, alpha dropout, distances, one_hot, pixel (un)shuffle and embedding_bag,
all composed from ops."""

from __future__ import annotations

import warnings

import numpy as np

from ... import backend
from ... import dtypes as dt
from ...ops._common import check_tensor
from ...ops.creation import arange, triu_indices, zeros
from ...ops.pointwise import where
from ...ops.shape import broadcast_tensors
from ...ops.sort import searchsorted
from ...tensor import Tensor, _make
from ._core import DropoutMask, embedding, padding_index

__all__ = ["dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
           "cosine_similarity", "pairwise_distance", "pdist", "one_hot", "pixel_shuffle",
           "pixel_unshuffle", "channel_shuffle", "embedding_bag"]


def _check_p(p, op):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}(): dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(x, p, feature, generator):
    """Bernoulli(1 - p) keep mask, per element or per (sample, channel) when ``feature``."""
    shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2) if feature else tuple(x.shape)
    return DropoutMask.apply(x, shape, p, generator, False)


def _feature_dropout(x, p, training, inplace, generator):
    if not training or p == 0.0:
        return x
    if p == 1.0:
        mask = x * 0
    else:
        mask = _keep_mask(x, p, True, generator).to(x.dtype) * (1.0 / (1.0 - p))
    return x.mul_(mask) if inplace else x * mask


def dropout1d(input, p=0.5, training=True, inplace=False, generator=None) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) with probability ``p`` (scale the rest by
    ``1/(1-p)``). Example: ``F.dropout1d(x, 0.2, training=True)``."""
    check_tensor(input, "dropout1d")
    _check_p(p, "dropout1d")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           "input. Note that dropout1d exists to provide channel-wise dropout "
                           "on inputs with 1 spatial dimension, a channel dimension, and an "
                           "optional batch dimension (i.e. 2D or 3D inputs).")
    if input.ndim == 2 and training:
        return _feature_dropout(input.unsqueeze(0), p, training, False, generator).squeeze(0)
    return _feature_dropout(input, p, training, inplace, generator)


def dropout2d(input, p=0.5, training=True, inplace=False, generator=None) -> Tensor:
    """Zero whole channels of (N, C, H, W) with probability ``p``. A 3-d input is read as
    (N, C, L), as PyTorch does (with its warning)."""
    check_tensor(input, "dropout2d")
    _check_p(p, "dropout2d")
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead.",
                      UserWarning, stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. To maintain the 1D "
                      "channel-wise dropout behavior, please switch to using dropout1d instead.",
                      UserWarning, stacklevel=2)
    return _feature_dropout(input, p, training, inplace, generator)


def dropout3d(input, p=0.5, training=True, inplace=False, generator=None) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability ``p``."""
    check_tensor(input, "dropout3d")
    _check_p(p, "dropout3d")
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is "
                      "deprecated and will result in an error in a future release.",
                      UserWarning, stacklevel=2)
    if input.ndim == 4 and training:
        return _feature_dropout(input.unsqueeze(0), p, training, False, generator).squeeze(0)
    return _feature_dropout(input, p, training, inplace, generator)


_ALPHA = 1.7580993408473766  # -SELU's negative saturation value (scale * alpha)


def _alpha_dropout(x, p, training, feature, generator):
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0
    keep = _keep_mask(x, p, feature, generator).to(x.dtype)
    a = 1.0 / np.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = (keep - 1) * (_ALPHA * a) + _ALPHA * a * p
    return x * (keep * a) + b


def alpha_dropout(input, p=0.5, training=False, inplace=False, generator=None) -> Tensor:
    """Dropout for SELU networks: dropped elements take SELU's saturation value and the
    result is affinely corrected to keep zero mean and unit variance."""
    check_tensor(input, "alpha_dropout")
    _check_p(p, "alpha_dropout")
    out = _alpha_dropout(input, p, training, False, generator)
    return input.copy_(out) if inplace and out is not input else out


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False,
                          generator=None) -> Tensor:
    """:func:`alpha_dropout` of whole channels."""
    check_tensor(input, "feature_alpha_dropout")
    _check_p(p, "feature_alpha_dropout")
    out = _alpha_dropout(input, p, training, True, generator)
    return input.copy_(out) if inplace and out is not input else out


def cosine_similarity(x1, x2, dim=1, eps=1e-8) -> Tensor:
    """``x1 . x2 / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim`` (after broadcasting;
    the clamp does not cut the gradient, as in PyTorch).

    Example: ``F.cosine_similarity(tensorix.randn(4, 8), tensorix.randn(4, 8))`` has shape (4,).
    """
    check_tensor(x1, "cosine_similarity", "x1")
    check_tensor(x2, "cosine_similarity", "x2")
    a, b = broadcast_tensors(x1, x2)
    na, nb = a.norm(2, dim, keepdim=True), b.norm(2, dim, keepdim=True)
    # PyTorch clamps the norms under no_grad: the gradient passes as if unclamped
    na = na + (na.detach().clamp_min(eps) - na.detach())
    nb = nb + (nb.detach().clamp_min(eps) - nb.detach())
    return ((a / na) * (b / nb)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False) -> Tensor:
    """``||x1 - x2 + eps||_p`` over the last dim. Shapes: (N, D) and (N, D) -> (N,)."""
    check_tensor(x1, "pairwise_distance", "x1")
    check_tensor(x2, "pairwise_distance", "x2")
    return (x1 - x2 + eps).norm(p, -1 if max(x1.ndim, x2.ndim) else None, keepdim=keepdim)


def pdist(input, p=2.0) -> Tensor:
    """The p-norm distance between every pair of rows of (N, M): the upper triangle of the
    distance matrix, flattened row by row, shape (N * (N - 1) / 2,)."""
    check_tensor(input, "pdist")
    if input.ndim != 2:
        raise RuntimeError(f"pdist(): only supports 2D tensors, got: {input.ndim}D")
    i, j = triu_indices(input.shape[0], input.shape[0], 1)
    return (input[i] - input[j]).norm(p, -1)


def one_hot(tensor, num_classes=-1) -> Tensor:
    """int64 one-hot encoding: shape (*) -> (*, num_classes); ``-1`` infers max + 1.

    Example: ``F.one_hot(tensorix.tensor([0, 2]), 3)`` is ``[[1, 0, 0], [0, 0, 1]]``.
    """
    check_tensor(tensor, "one_hot", "tensor")
    if tensor.dtype is not dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    data = tensor._data
    xp = backend.array_module(data)
    if num_classes == -1:
        if data.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(data.max()) + 1
    if data.size and int(data.min()) < 0:
        raise RuntimeError("one_hot(): Class values must be non-negative.")
    if data.size and int(data.max()) >= num_classes:
        raise RuntimeError("one_hot(): Class values must be smaller than num_classes.")
    return _make((data[..., None] == xp.arange(num_classes)).astype(np.int64))


def pixel_shuffle(input, upscale_factor) -> Tensor:
    """Rearrange (*, C * r**2, H, W) into (*, C, H * r, W * r).

    Example: ``F.pixel_shuffle(tensorix.randn(1, 8, 3, 3), 2)`` has shape (1, 2, 6, 6).
    """
    check_tensor(input, "pixel_shuffle")
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    if r <= 0 or c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor) -> Tensor:
    """Rearrange (*, C, H * r, W * r) into (*, C * r**2, H, W) (inverse of pixel_shuffle)."""
    check_tensor(input, "pixel_unshuffle")
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    if r <= 0 or h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by "
                           f"downscale_factor, but got height={h}, width={w} and "
                           f"downscale_factor={r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input, groups) -> Tensor:
    """Interleave the channels of (N, C, *) across ``groups`` (ShuffleNet)."""
    n, c = input.shape[:2]
    if groups <= 0 or c % groups:
        raise RuntimeError(f"channel_shuffle(): number of channels ({c}) must be divisible by "
                           f"groups ({groups})")
    rest = tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


def _bags(input, offsets, include_last_offset, op):
    """The flat indices and the bag id of each (Tensors: the ids come from ops on ``offsets``,
    so a compiled call follows new offsets), plus the bag count."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found "
                             f"offsets of type {type(offsets).__name__}")
        b, length = input.shape
        # row r of the input is bag r: a function of the shape alone
        return input.reshape(-1), arange(b, device=input.device).repeat_interleave(length), b
    if input.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.ndim != 1:
        raise ValueError(f"offsets has to be a 1D Tensor, but got Tensor of dimension "
                         f"{offsets.ndim}")
    # the checks read the values given (a compiled call checks its example's offsets only)
    off = offsets._data.astype(np.int64)
    if off.size and int(off[0]) != 0:
        raise RuntimeError(f"{op}: offsets[0] has to be 0, i.e., the first sequence in the "
                           f"mini-batch has to start from position 0. However, got "
                           f"{int(off[0])}")
    n = input.shape[0]
    if off.size and int(off[-1]) > n:
        raise RuntimeError(f"{op}: offsets[-1] can not be greater than input's length {n}, "
                           f"but got offsets[-1] of {int(off[-1])}")
    starts = (offsets[:-1] if include_last_offset else offsets).to(dt.int64)
    # as PyTorch, the last bag runs to the end of input (include_last_offset's end unused)
    bag = searchsorted(starts, arange(n, device=input.device), right=True) - 1
    return input, bag, starts.shape[0]


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None) -> Tensor:
    """Sums, means or maxima of bags of embeddings, without materialising the lookups per bag.

    Bags are the rows of a 2-d ``input`` (B, L), or the segments of a 1-d ``input`` that start
    at ``offsets`` (B,). ``padding_idx`` entries are left out (and not counted by 'mean'); an
    empty bag gives zeros. ``per_sample_weights`` (shaped like ``input``) scales each looked-up
    row (mode 'sum' only). Result: (B, embedding_dim).
    """
    op = "embedding_bag"
    check_tensor(input, op)
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"{op}(): mode has to be one of sum, mean or max, got {mode!r}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                      f"per_sample_weights is only supported for mode='sum' "
                                      f"(got mode='{mode}').")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"embedding_bag: If per_sample_weights "
                             f"({list(per_sample_weights.shape)}) is not None, then it must "
                             f"have the same shape as the input ({list(input.shape)})")
    flat, bag, nbags = _bags(input, offsets, include_last_offset, op)
    num, dim = weight.shape
    padding_idx = padding_index(padding_idx, num, op)
    # every looked-up row is kept; a row left out (padding, or before the first offset) goes to
    # an extra bag ``nbags``, cut off at the end: no shape depends on the data, so a compiled
    # call recomputes the bags of new indices and offsets (a selection of the kept rows did not)
    keep = bag >= 0
    if padding_idx is not None:
        keep = keep & (flat != padding_idx)
    ids = where(keep, bag, nbags)
    rows = embedding(flat, weight, None, max_norm, norm_type)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1).unsqueeze(1)
    base = zeros(nbags + 1, dim, dtype=weight.dtype, device=weight.device)
    if mode == "max":
        return base.scatter_reduce(0, ids.unsqueeze(1).expand(-1, dim), rows, "amax",
                                   include_self=False)[:nbags]
    out = base.index_add(0, ids, rows)[:nbags]
    if mode == "sum":
        return out
    counts = zeros(nbags + 1, dtype=weight.dtype, device=weight.device).index_add(
        0, ids, keep.to(weight.dtype))[:nbags]
    return out / counts.clamp(min=1).unsqueeze(1)
