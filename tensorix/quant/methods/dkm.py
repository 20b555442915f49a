"""Differentiable k-means weight clustering: DKM (Cho, Alizadeh-Vahid, Adya, Rastegari,
"DKM: Differentiable K-Means Clustering Layer for Neural Network Compression", ICLR 2022) with
eDKM's weight uniquification (Cho et al., "eDKM: An Efficient and Accurate Train-time Weight
Clustering for Large Language Models", 2023).

Each weight is softly assigned to 2^bits centroids by attention a = softmax(-(w - c)^2 / tau);
centroids are refined by k-means-like steps c = sum a w / sum a, and the clustered weight is
a @ c. Everything is written with tensorix ops, so training backpropagates through the
clustering into the weights and centroids (train-time clustering). eDKM's observation: a
weight tensor holds far fewer distinct values than elements (at most 65,536 in 16 bits), so
the attention map is computed once per distinct value, (U, k) instead of (N, k), with the
same values and gradients.
"""

from __future__ import annotations

from ...autograd import no_grad
from ...backend import array_module
from ...nn import functional as F
from ...ops.creation import zeros
from ...tensor import Tensor, _make

__all__ = ["dkm_cluster"]


def _distinct(flat: Tensor):
    """The distinct values of ``flat`` as a differentiable Tensor (each the mean of the equal
    elements it stands for, so every element gets its share of the gradient), and the index
    of each element's value."""
    a = flat.detach()._data
    xp = array_module(a)
    values, inverse, counts = xp.unique(a, return_inverse=True, return_counts=True)
    inverse = _make(inverse.reshape(-1).astype(xp.int64))
    sums = zeros(len(values), dtype=flat.dtype, device=flat.device).index_add(0, inverse, flat)
    return sums / _make(counts.astype(a.dtype)), inverse, _make(counts.astype(a.dtype))


def dkm_cluster(weight: Tensor, bits: int = 3, *, temperature: float | None = None,
                iters: int = 5, centroids: Tensor | None = None, unique: bool = True):
    """Cluster ``weight`` (any shape) into ``2**bits`` centroids, differentiably.

    ``temperature`` of the soft assignment defaults to 1e-2 times the weights' variance
    (smaller: closer to hard k-means); ``centroids`` (k,) start from evenly spaced quantiles
    unless given (the defaults are read from the data as constants: no gradient flows
    through them, as in DKM, where the previous step's centroids seed the next); ``iters``
    k-means steps refine them. ``unique`` computes the attention per distinct value (eDKM;
    the same result). Returns ``(clustered weight, centroids)``; assigning each weight to its
    nearest centroid gives the deployable k-entry palette.

    Example::

        w = tensorix.randn(64, 64, requires_grad=True)
        wc, c = dkm_cluster(w, bits=2)           # wc: (64, 64) near 4 values; c: (4,)
        ((wc - target) ** 2).mean().backward()   # gradients reach w
    """
    if not isinstance(weight, Tensor) or not weight.dtype.is_floating_point:
        raise TypeError("dkm_cluster(): argument 'weight' must be a floating-point Tensor")
    if not (isinstance(bits, int) and 1 <= bits <= 8):
        raise ValueError(f"dkm_cluster(): argument 'bits' must be an int in [1, 8], got {bits!r}")
    k = 2 ** bits
    flat = weight.reshape(-1)
    if unique:
        points, inverse, counts = _distinct(flat)
    else:
        points, inverse, counts = flat, None, None
    if temperature is None:
        temperature = 1e-2 * float(flat.detach().var().item()) + 1e-12
    if centroids is None:  # evenly spaced quantiles: every centroid starts with members
        xp = flat.xp
        qs = (xp.arange(k, dtype=flat._data.dtype) + 0.5) / k
        centroids = _make(xp.quantile(flat.detach()._data, qs).astype(flat._data.dtype))
    elif tuple(centroids.shape) != (k,):
        raise ValueError(f"dkm_cluster(): argument 'centroids' must have shape ({k},), got "
                         f"{tuple(centroids.shape)}")
    c = centroids
    for step in range(iters + 1):
        attention = F.softmax(-((points[:, None] - c[None, :]) ** 2) / temperature, -1)
        if step == iters:  # the last attention clusters; no further centroid update
            break
        mass = attention if counts is None else attention * counts[:, None]
        c = (mass * points[:, None]).sum(0) / (mass.sum(0) + 1e-12)
    clustered = attention @ c
    if inverse is not None:
        # the distinct values carry each element's share of the gradient through the
        # centroids; the direct path d(a(w) c)/dw must use each element's own upstream
        # gradient, so swap the averaged direct term for the exact one: a zero-valued
        # correction (w - p) * f'(p) with f' = d(a(p) c)/dp at fixed centroids (first
        # derivatives exact; the correction is not differentiated twice)
        with no_grad():
            slope = -2.0 * (points[:, None] - c[None, :]) / temperature
            fprime = (attention * c[None, :] * (slope - (attention * slope).sum(1, keepdim=True))
                      ).sum(1)
        clustered = clustered[inverse] + (flat - points[inverse]) * fprime[inverse]
    return clustered.reshape(weight.shape), c
