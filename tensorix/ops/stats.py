"""Differences, counts and moments: diff, bincount, histc, histogram, var, std, var_mean,
std_mean, cov, corrcoef.

``diff``, ``cov`` and ``corrcoef`` are compositions of primitives (differentiable to any
order); the counting ops return counts, which PyTorch does not differentiate either.
"""

from __future__ import annotations

import math
import warnings
from collections import namedtuple

import numpy as np

from .. import dtypes as dt
from ..autograd.function import Function
from ..tensor import Tensor, _make
from ._common import check_tensor, norm_dim
from .movement import narrow
from .pointwise import clamp
from .reduce import PNorm, Sum, _count, _dims, _squeeze, _upcast, mean
from .shape import cat

__all__ = ["diff", "bincount", "histc", "histogram", "var", "std", "var_mean", "std_mean", "cov",
           "corrcoef"]

HistogramResult = namedtuple("HistogramResult", ["hist", "bin_edges"])


def diff(input, n=1, dim=-1, prepend=None, append=None) -> Tensor:
    """The ``n``-th forward difference ``out[i] = x[i + 1] - x[i]`` along ``dim``, after
    concatenating ``prepend`` and ``append`` (same shape except along ``dim``) to ``input``;
    bool tensors give ``x[i + 1] != x[i]``. Each order shortens ``dim`` by one (to empty).

    Example: ``tensorix.diff(tensorix.tensor([1., 4., 9.]))`` is ``[3., 5.]``.
    """
    check_tensor(input, "diff")
    if input.ndim == 0:
        raise RuntimeError("diff(): diff expects input to be at least one-dimensional")
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise RuntimeError(f"diff(): order must be non-negative but got {n}")
    d = norm_dim(dim, input.ndim, "diff")
    parts = []
    for name, extra in (("prepend", prepend), (None, input), ("append", append)):
        if extra is None:
            continue
        if name is not None:
            check_tensor(extra, "diff", name)
            if extra.ndim != input.ndim:
                raise RuntimeError("diff(): diff expects prepend or append to be the same "
                                   "dimension as input")
        parts.append(extra)
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(int(n)):
        length = x.shape[d]
        if length == 0:
            break
        hi, lo = narrow(x, d, 1, length - 1), narrow(x, d, 0, length - 1)
        x = hi.logical_xor(lo) if x._dtype is dt.bool else hi - lo
    return x


def bincount(input, weights=None, minlength=0) -> Tensor:
    """Counts of each value in a 1-d tensor of non-negative integers: ``out[v]`` is the
    number of times ``v`` occurs (the sum of the ``weights`` at those positions); length
    ``max(input) + 1``, at least ``minlength``. Counts are int64; weighted sums keep a float
    weight dtype (float64 otherwise). Not differentiable.

    Example: ``tensorix.bincount(tensorix.tensor([1, 1, 3]))`` is ``[0, 2, 0, 1]``.
    """
    check_tensor(input, "bincount")
    if input._dtype.category != 1:
        raise RuntimeError(f"bincount(): \"bincount_cpu\" not implemented for "
                           f"'{input._dtype.name}' (integer inputs only)")
    if minlength < 0:
        raise RuntimeError("bincount(): minlength should be >= 0")
    data = input._data
    if input.ndim != 1 or (data.size and int(data.min()) < 0):
        raise RuntimeError("bincount(): bincount only supports 1-d non-negative integral "
                           "inputs.")
    out_dtype = dt.int64
    if weights is not None:
        check_tensor(weights, "bincount", "weights")
        if weights.ndim != 1 or weights.shape[0] != data.shape[0]:
            raise RuntimeError("bincount(): weights should be 1-d and have the same length as "
                               "input")
        out_dtype = weights._dtype if weights._dtype.is_floating_point else dt.float64
    return Bincount.apply(input, weights, int(minlength), out_dtype)


class Bincount(Function):
    """bincount's counts (weighted sums): a primitive (no gradient, as in torch) whose output
    length is the data's maximum + 1, so a trace breaks the graph there (tensorix.fx's
    DATA_DEPENDENT) rather than keep the example's counts."""

    _differentiable = False

    @staticmethod
    def forward(ctx, a, weights, minlength, out_dtype):
        data = a._data
        w = None if weights is None else weights._data.astype(np.float64)
        size = max(int(data.max()) + 1 if data.size else 0, minlength)
        counts = a.xp.bincount(data.astype(np.int64), weights=w, minlength=size)
        return _make(counts.astype(out_dtype.np, copy=False), out_dtype)


def _float_only(input, op):
    check_tensor(input, op)
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"{op}(): \"histogram_cpu\" not implemented for "
                           f"'{input._dtype.name}' (floating inputs only)")


def histc(input, bins=100, min=0, max=0) -> Tensor:  # noqa: A002 - torch's names
    """A histogram of ``bins`` equal-width bins over ``[min, max]`` (the data's range when
    both are 0; widened by 1 each way when it is a single value); values outside are ignored,
    ``max`` itself falls in the last bin. The counts have ``input``'s dtype.

    Example: ``tensorix.histc(tensorix.tensor([1., 2., 1.]), bins=4, min=0, max=3)`` is
    ``[0., 2., 1., 0.]``.
    """
    _float_only(input, "histc")
    if bins <= 0:
        raise RuntimeError(f"histc(): bins must be > 0, but got {bins} for dimension 0")
    return Histc.apply(input, int(bins), min, max)


class Histc(Function):
    """histc's counts: a primitive (no gradient, as in torch), so a traced graph recomputes
    them, and the data's range where ``min == max == 0`` (as raw arrays wrapped outside the
    dispatcher, a compiled call replayed the example's counts)."""

    _differentiable = False

    @staticmethod
    def forward(ctx, a, bins, min, max):  # noqa: A002 - torch's names
        xp = a.xp
        data = a._data.reshape(-1)
        wide = data.dtype if data.dtype.kind == "f" else np.dtype(np.float32)
        data = data.astype(wide, copy=False)
        lo, hi = wide.type(min), wide.type(max)
        if lo == hi and data.size:
            finite = data[xp.isfinite(data)]
            if finite.size:
                lo, hi = wide.type(float(finite.min())), wide.type(float(finite.max()))
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if not lo < hi:
            raise RuntimeError("histc(): torch.histc: max must be larger than min")
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise RuntimeError(f"histc(): range of [{lo}, {hi}] is not finite")
        inside = data[(data >= lo) & (data <= hi)]
        # the bin as PyTorch's kernel computes it, in the input's precision
        pos = ((inside - lo) * wide.type(bins) / (hi - lo)).astype(np.int64)
        pos = xp.minimum(pos, bins - 1)
        counts = xp.bincount(pos, minlength=bins)[:bins]
        return _make(counts.astype(a._data.dtype), a._dtype)


def histogram(input, bins, *, range=None, weight=None, density=False) -> HistogramResult:  # noqa: A002
    """``(hist, bin_edges)``: ``bins`` equal-width bins over ``range`` (default: the data's
    min and max) or the given increasing 1-d tensor of edges; the last bin includes its right
    edge. ``weight`` weighs each element; ``density=True`` normalises to unit integral.

    Example: ``tensorix.histogram(tensorix.tensor([1., 2., 1.]), 4, range=(0., 3.))``.
    """
    _float_only(input, "histogram")
    if isinstance(bins, Tensor):
        if bins.ndim != 1 or bins.numel() < 2:
            raise RuntimeError("histogram(): bins must be a 1-d tensor with at least 2 edges")
    else:
        if bins <= 0:
            raise RuntimeError(f"histogram(): bins must be > 0, but got {bins} for dimension 0")
        bins = int(bins)
        if range is not None:
            range = float(range[0]), float(range[1])  # noqa: A001
            if range[0] > range[1]:
                raise RuntimeError(f"histogram(): min should not exceed max, but got min "
                                   f"{range[0]} max {range[1]}")
    if weight is not None:
        check_tensor(weight, "histogram", "weight")
        if tuple(weight.shape) != tuple(input.shape):
            raise RuntimeError("histogram(): if weight tensor is provided it should have the "
                               "same shape as the input tensor")
    return HistogramResult(*Histogram.apply(input, bins, range, weight, bool(density)))


class Histogram(Function):
    """histogram's (hist, bin_edges): a primitive (no gradient, as in torch) for the reason
    :class:`Histc` is; ``bins`` is a count or a tensor of edges (a graph input then), the
    edges of a count span ``range`` or the data's min and max (recomputed per call)."""

    _differentiable = False

    @staticmethod
    def forward(ctx, a, bins, range, weight, density):  # noqa: A002 - torch's names
        xp = a.xp
        data = a._data.reshape(-1)
        if isinstance(bins, Tensor):
            edges = bins._data.astype(data.dtype)
        else:
            if range is not None:
                lo, hi = range
            elif data.size:
                lo, hi = float(data.min()), float(data.max())
            else:
                lo, hi = 0.0, 0.0
            if lo > hi:
                raise RuntimeError(f"histogram(): min should not exceed max, but got min {lo} "
                                   f"max {hi}")
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            edges = xp.linspace(lo, hi, bins + 1).astype(data.dtype)
        w = None if weight is None else weight._data.reshape(-1)
        nbins = edges.shape[0] - 1
        pos = xp.searchsorted(edges, data, side="right") - 1
        pos = xp.where(data == edges[-1], nbins - 1, pos)
        keep = (pos >= 0) & (pos < nbins) & (data >= edges[0]) & (data <= edges[-1])
        hist = xp.bincount(pos[keep], weights=None if w is None else w[keep].astype(np.float64),
                           minlength=nbins)[:nbins].astype(np.float64)
        if density:
            total = hist.sum()
            hist = hist / (total * xp.diff(edges.astype(np.float64)))
        return _make(hist.astype(data.dtype), a._dtype), _make(edges, a._dtype)


# -- moments: var and std share one pass for the mean ---------------------------------------
def _correction(op, dim, unbiased, correction):
    if isinstance(dim, bool):  # legacy var(x, unbiased)
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}(): pass either 'unbiased' or 'correction', not both")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, correction


def _var(input, dim, unbiased, keepdim, correction, op, root=False):
    """(var, mean, dtype) over ``dim``; with ``root`` the first is the standard deviation,
    ``||x - mean|| / sqrt(dof)``: the 2-norm primitive's gradient is 0 where the spread is 0
    (PyTorch's), where ``sqrt(var)``'s would be 0/0 = NaN for a constant feature."""
    check_tensor(input, op)
    if input._dtype.category != 2:
        raise RuntimeError(f"{op}(): std and var only support floating point dtypes, got "
                           f"{input._dtype.name}")
    dim, correction = _correction(op, dim, unbiased, correction)
    x = _upcast(input)
    dims = _dims(dim, x.ndim, op)
    mu = mean(x, dims, keepdim=True)
    dev = x - mu
    dof = _count(x.shape, dims) - correction
    if dof <= 0:
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=3)
    mu = mu if keepdim else _squeeze(mu, dims)
    if root and dof > 0:
        return PNorm.apply(dev, 2, dims, keepdim) / math.sqrt(dof), mu, input._dtype
    ss = Sum.apply(dev * dev, dims, keepdim, x._dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = ss / dof if dof > 0 else ss * float("inf" if dof == 0 else "nan")
    if root:  # no degrees of freedom: NaN or inf, and NaN gradients, as in PyTorch
        from .unary import sqrt

        v = sqrt(v)
    return v, mu, input._dtype


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None) -> Tensor:
    """Variance over ``dim``: ``sum((x - mean)^2) / (N - correction)``; ``correction`` defaults
    to 1 (Bessel); the legacy ``unbiased=False`` means ``correction=0``.

    Shapes: ``(2, 3)`` with ``dim=1`` gives ``(2,)``. Example:
    ``tensorix.tensor([1., 2., 3., 4.]).var()`` is ``tensor(1.6667)``.
    """
    v, _, d = _var(input, dim, unbiased, keepdim, correction, "var")
    return v.to(d)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None) -> Tensor:
    """Standard deviation, ``sqrt(var(...))``; arguments and shapes as :func:`var`. Example:
    ``tensorix.tensor([1., 3.]).std()`` is ``tensor(1.4142)``; the gradient where all
    elements are equal is 0, as in PyTorch."""
    s, _, d = _var(input, dim, unbiased, keepdim, correction, "std", root=True)
    return s.to(d)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` over ``dim``, sharing the mean; arguments and shapes as :func:`var`.
    Example: ``v, m = tensorix.var_mean(x, 1)`` for ``x`` of shape ``(2, 3)`` gives ``(2,)``
    each."""
    v, mu, d = _var(input, dim, unbiased, keepdim, correction, "var_mean")
    return v.to(d), mu.to(d)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` over ``dim``; arguments and shapes as :func:`var`. Example:
    ``s, m = tensorix.std_mean(tensorix.tensor([1., 3.]))`` gives ``1.4142`` and ``2.``."""
    s, mu, d = _var(input, dim, unbiased, keepdim, correction, "std_mean", root=True)
    return s.to(d), mu.to(d)


def _check_weights(name, w, n, integral):
    check_tensor(w, "cov", name)
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {w.ndim} dimensions")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {w.numel()} != {n}")
    if integral and w._dtype.category != 1:
        raise RuntimeError(f"cov(): expected {name} to have integral dtype but got "
                           f"{name} with {w._dtype.name} dtype")
    if not integral and not w._dtype.is_floating_point:
        raise RuntimeError(f"cov(): expected {name} to have floating point dtype but got "
                           f"{name} with {w._dtype.name} dtype")
    if w.numel() and bool((w._data < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(input, *, correction=1, fweights=None, aweights=None) -> Tensor:
    """The covariance matrix of the variables in the rows of ``input`` (``(v, n)``: ``v``
    variables, ``n`` observations; a 1-d input is one variable, giving a 0-d result).
    ``correction=1`` is Bessel's correction; ``fweights`` (integer frequencies) and
    ``aweights`` (observation weights) follow ``numpy.cov``/PyTorch.

    Example: ``tensorix.cov(tensorix.tensor([[0., 1., 2.], [2., 1., 0.]]))`` is
    ``[[1., -1.], [-1., 1.]]``.
    """
    check_tensor(input, "cov")
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if x._dtype.category < 2:
        x = x.to(dt.get_default_dtype())
    n = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, n, True)
        w = fweights.reshape(-1)
    if aweights is not None:
        _check_weights("aweights", aweights, n, False)
        aw = aweights.reshape(-1)
        w = aw if w is None else w * aw
    if w is not None and w._dtype is not x._dtype and not x._dtype.is_complex:
        w = w.to(x._dtype)
    w_sum = w.sum() if w is not None else n
    avg = (x * w if w is not None else x).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        aw = aweights.reshape(-1).to(w._dtype)
        norm_factor = w_sum - correction * (w * aw).sum() / w_sum
    else:
        norm_factor = w_sum - correction
    if float(norm_factor) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm_factor = 0 * norm_factor
    xc = x - avg.unsqueeze(1)
    other = (xc * w if w is not None else xc).mT
    c = xc @ (other.conj() if other.is_complex() else other)
    return (c / norm_factor).squeeze()


def corrcoef(input) -> Tensor:
    """Pearson correlation coefficients of the rows of ``input`` (see :func:`cov`), clipped
    to ``[-1, 1]``.

    Example: ``tensorix.corrcoef(tensorix.tensor([[0., 1., 2.], [2., 1., 0.]]))`` is
    ``[[1., -1.], [-1., 1.]]``.
    """
    check_tensor(input, "corrcoef")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal()
    std = (d.real if d.is_complex() else d).sqrt()
    c = c / std.reshape(-1, 1)
    c = c / std.reshape(1, -1)
    if c.is_complex():
        from .creation import complex as make_complex

        return make_complex(clamp(c.real, -1, 1), clamp(c.imag, -1, 1))
    return clamp(c, -1, 1)


TENSOR_METHODS = {"diff": diff, "bincount": bincount, "histc": histc, "histogram": histogram,
                  "var": var, "std": std, "var_mean": var_mean, "std_mean": std_mean, "cov": cov,
                  "corrcoef": corrcoef}
