"""Numerical integration along a dimension: ``trapezoid`` (and its older name ``trapz``) and
``cumulative_trapezoid``, composed of differentiable primitives (narrow, diff, sum, cumsum).
"""

from __future__ import annotations

from ..tensor import Tensor
from ._common import check_tensor
from .movement import narrow
from .reduce import cumsum
from .stats import diff

__all__ = ["trapezoid", "trapz", "cumulative_trapezoid"]
TENSOR_METHODS: dict = {}


def _terms(op, y, x, dx, dim):
    """The trapezoid areas along ``dim``: ``(y[i] + y[i+1]) / 2 * (x[i+1] - x[i])``."""
    check_tensor(y, op, "y")
    if y.ndim == 0:
        raise IndexError(f"{op}(): y must have at least one dimension, got a 0-d tensor")
    dim = dim % y.ndim
    n = y.shape[dim]
    pairs = narrow(y, dim, 0, max(n - 1, 0)) + narrow(y, dim, min(1, n), max(n - 1, 0))
    if x is None:
        return pairs * ((1.0 if dx is None else dx) / 2)
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'x' must be a Tensor, got {type(x).__name__}; pass "
                        "a constant spacing as dx=")
    if x.ndim == 1:  # sample points shared along dim
        if x.shape[0] != n:
            raise RuntimeError(f"{op}(): there must be one `x` value for each sample point "
                               f"along dim {dim} ({n}), got {x.shape[0]}")
        steps = diff(x).reshape([n - 1 if d == dim else 1 for d in range(y.ndim)]) if n else x
    else:
        steps = diff(x, dim=dim - y.ndim + x.ndim)
    return pairs * steps / 2


def trapezoid(y, x=None, *, dx=None, dim=-1) -> Tensor:
    """The trapezoid rule along ``dim`` of ``y``, with sample points ``x`` (1-d along
    ``dim``, or broadcastable to ``y``) or constant spacing ``dx`` (default 1): ``y`` with
    ``dim`` removed. Example: ``trapezoid(tensorix.tensor([1., 2., 3.]))`` is ``4.``."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid(): pass either x or dx, not both")
    return _terms("trapezoid", y, x, dx, dim).sum(dim)


def trapz(y, x=None, *, dx=None, dim=-1) -> Tensor:
    """The older name of :func:`trapezoid`."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1) -> Tensor:
    """The running trapezoid rule along ``dim``: one fewer element than ``y`` there.
    Example: ``cumulative_trapezoid(tensorix.tensor([1., 2., 3.]))`` is ``[1.5, 4.]``."""
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid(): pass either x or dx, not both")
    return cumsum(_terms("cumulative_trapezoid", y, x, dx, dim), dim)
