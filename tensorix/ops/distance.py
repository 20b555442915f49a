"""Distances: between sets of points, ``cdist``; between two tensors, ``dist``.

``cdist`` is its own primitive rather than a composite of ``(x1 - x2).norm(p)``: the composite's
gradient at a zero distance is 0/0 (NaN), where PyTorch defines it as 0 (the subgradient that
keeps coincident points, e.g. a point and itself, from poisoning training), and the Euclidean
case runs as one GEMM instead of materialising every difference. The backward is written with
tensorix ops, so it is differentiable again.
"""

from __future__ import annotations

import math

import numpy as np

from .. import backend
from ..autograd.function import Function
from ..tensor import Tensor
from ._common import check_tensor
from .linalg_norm import vector_norm
from .pointwise import sign, where

__all__ = ["cdist", "dist"]

_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
          "donot_use_mm_for_euclid_dist")


def _pnorm_raw(diff, p, xp):
    """The p-norm over the last axis of the raw differences ``diff``."""
    a = xp.abs(diff)
    if p == 0:
        return (a != 0).sum(-1).astype(diff.dtype)
    if p == 1:
        return a.sum(-1)
    if p == 2:
        return xp.sqrt((a * a).sum(-1))
    if math.isinf(p):
        return a.max(-1) if a.shape[-1] else a.sum(-1)
    return (a**p).sum(-1) ** (1.0 / p)


class CDist(Function):
    """Pairwise p-norm distances of two batches of row vectors (batch dims already equal)."""

    @staticmethod
    def forward(ctx, x1, x2, p, use_mm):
        ctx.save_for_backward(x1, x2)
        ctx.p, ctx.use_mm = p, use_mm
        a, b = x1._data, x2._data
        xp = backend.array_module(a)
        if p == 2 and use_mm:  # |a|^2 - 2 a.b + |b|^2, clamped as torch does
            sq = (a * a).sum(-1)[..., :, None] + (b * b).sum(-1)[..., None, :]
            sq = sq - 2 * (a @ xp.swapaxes(b, -1, -2))
            return xp.sqrt(xp.maximum(sq, 0))
        return _pnorm_raw(a[..., :, None, :] - b[..., None, :, :], p, xp)

    @staticmethod
    def backward(ctx, g):
        x1, x2 = ctx.saved_tensors
        p = ctx.p
        if p == 0:  # piecewise constant
            return x1 * 0, x2 * 0, None, None
        d = CDist.apply(x1, x2, p, ctx.use_mm)  # recomputed: in the graph for grad of grad
        live = d > 0  # torch's rule: the gradient at a zero distance is 0
        safe = where(live, d, d * 0 + 1)
        if p == 2:  # d(d_pr)/d(x1_p) = (x1_p - x2_r) / d_pr: two GEMMs, no differences
            w = where(live, g / safe, g * 0)
            g1 = w.sum(-1).unsqueeze(-1) * x1 - w @ x2
            g2 = w.sum(-2).unsqueeze(-1) * x2 - w.mT @ x1
            return g1, g2, None, None
        diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
        if p == 1:
            gd = sign(diff)
        elif math.isinf(p):  # the coordinates that attain the max
            gd = sign(diff) * (diff.abs() == d.unsqueeze(-1)).to(diff.dtype)
        else:
            nz = diff != 0
            mag = where(nz, diff.abs(), diff * 0 + 1) ** (p - 1)
            gd = where(nz, sign(diff) * mag, diff * 0) / safe.unsqueeze(-1) ** (p - 1)
        gd = gd * where(live, g, g * 0).unsqueeze(-1)
        return gd.sum(-2), -gd.sum(-3), None, None


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The p-norm distance between each row of ``x1`` and each row of ``x2``:
    ``(*, P, M)`` and ``(*, R, M)`` give ``(*, P, R)`` (batch dims broadcast). ``p >= 0``
    (``p=0`` counts differing coordinates, ``inf`` is the max-norm). For ``p=2`` the
    distances come from one GEMM when ``compute_mode`` allows (by default when P or R exceed
    25, as in torch; slightly less accurate for near-coincident points). Differentiable; the
    gradient at a zero distance is 0, as in torch.

    Example::

        >>> tensorix.cdist(tensorix.tensor([[0., 0.]]), tensorix.tensor([[3., 4.], [0., 0.]]))
        tensor([[5., 0.]])
    """
    check_tensor(x1, "cdist", "x1")
    check_tensor(x2, "cdist", "x2")
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist(): only supports at least 2D tensors, X1 got: {x1.ndim}D, "
                           f"X2 got: {x2.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"cdist(): X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    for arg, t in (("x1", x1), ("x2", x2)):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist(): only supports floating-point dtypes, {arg} got: "
                               f"{t.dtype}")
    if not isinstance(p, (int, float)) or isinstance(p, bool) or not p >= 0:
        raise RuntimeError(f"cdist(): only supports non-negative p values, got p={p!r}")
    if compute_mode not in _MODES:
        raise ValueError(f"cdist(): {compute_mode!r} is not a valid value for compute_mode; "
                         f"expected one of {_MODES}")
    if x1.dtype != x2.dtype:
        raise RuntimeError(f"cdist(): X1 and X2 must have the same dtype, got {x1.dtype} and "
                           f"{x2.dtype}")
    try:
        batch = tuple(np.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2])))
    except ValueError:
        raise RuntimeError(f"cdist(): batch dimensions {list(x1.shape[:-2])} and "
                           f"{list(x2.shape[:-2])} are not broadcastable") from None
    x1 = x1.expand(*batch, *x1.shape[-2:])
    x2 = x2.expand(*batch, *x2.shape[-2:])
    many = x1.shape[-2] > 25 or x2.shape[-2] > 25
    use_mm = compute_mode == "use_mm_for_euclid_dist" or (compute_mode == _MODES[0] and many)
    return CDist.apply(x1, x2, float(p), use_mm)


def dist(input, other, p=2) -> Tensor:
    """``vector_norm(input - other, p)`` over all elements (broadcast).

    Example: ``tensorix.dist(tensorix.tensor([3., 4.]), tensorix.zeros(2))`` is ``5.``.
    """
    check_tensor(input, "dist", "input")
    check_tensor(other, "dist", "other")
    return vector_norm(input - other, p)


TENSOR_METHODS = {"dist": dist}  # torch has no Tensor.cdist
