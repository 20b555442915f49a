"""Reductions and scans: sum, mean, prod, max/min, amax/amin, argmax/argmin,
logsumexp, norm, cumulative ops, all/any, nan-aware sums; plus sum_to (the engine's
unbroadcast).

Backward of a reduction re-expands the gradient over the reduced axes with ``expand`` (a view),
so the second derivative is again a reduction. Ops that *select* an element (max with dim,
cummax ...) take their values through ``_along.TakeAlong``, so the gradient goes to the
selected index and double backward works. Low-precision inputs (bfloat16, float16) accumulate
in float32 and are rounded once.
"""

from __future__ import annotations

import builtins
import functools
import math

import numpy as np

from .. import dtypes as dt
from .. import kernels
from ..autograd.dispatch import NARROW, kernel
from ..autograd.function import Function
from ..tensor import Tensor, _make
from . import _along, _reduce32, elementwise
from ._along import Flip, Shift, return_type, running, scan
from ._common import check_tensor, float_input, norm_dim, norm_dims
from .elementwise import exp, log
from .indexing import Gather, ScatterAdd
from .order import ArgExtreme, median_position
from .pointwise import where
from .unary import abs as abs_

__all__ = ["sum", "mean", "sum_to", "prod", "max", "min", "amax", "amin", "aminmax", "argmax",
           "argmin", "logsumexp", "norm", "cumsum",
           "cumprod", "cummax", "cummin", "logcumsumexp", "all", "any", "count_nonzero",
           "nansum", "nanmean"]


_MAX, _MIN = return_type("max"), return_type("min")
_CUMMAX, _CUMMIN = return_type("cummax"), return_type("cummin")
_AMINMAX = return_type("aminmax", ("min", "max"))


def _restore(g, shape, dims, keepdim):
    """Expand a reduced gradient back to ``shape`` (re-inserting dims when not keepdim)."""
    if not keepdim and dims:
        g = g.reshape(tuple(1 if i in dims else s for i, s in enumerate(shape)))
    return g.expand(shape)


def _kept(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def _squeeze(t, dims):
    return t.reshape(tuple(s for i, s in enumerate(t.shape) if i not in dims))


def _dims(dim, ndim, op):
    """``norm_dims`` where an empty dim list means all dims, as in PyTorch's sum and friends."""
    if isinstance(dim, (tuple, list)) and not dim:
        dim = None
    return norm_dims(dim, ndim, op)


def _upcast(x):
    """``x`` in float32 when it is a low-precision float (composites then round once: a
    composite has no class to declare ``_widen16`` on)."""
    return x.to(dt.float32) if x._dtype in NARROW else x


# -- sum, mean, prod ---------------------------------------------------------------------------
class Sum(Function):
    _codes = "math"  # storage codes: on the values decoded to float32, encoded back

    @staticmethod
    def forward(ctx, a, dims, keepdim, dtype):
        ctx.shape, ctx.dims, ctx.keepdim = a._data.shape, dims, keepdim
        # accumulate in fp32, round once: by hand, as the accumulator follows the ``dtype``
        # argument (not the input's), and NumPy's dtype= needs no float32 copy of the input
        if dtype in NARROW:
            return a._data.sum(axis=dims, keepdims=keepdim, dtype="float32").astype(dtype.np)
        d = a._data
        if dtype is dt.float32 and _whole32(a, dims):  # lanes and float64 blocks, one pass
            out = _reduce32.sum32(d.reshape(-1), _reduce32.sum_kernel(False))
            return out.reshape((1,) * d.ndim) if keepdim else out
        return d.sum(axis=dims, keepdims=keepdim, dtype=dtype.np)

    @staticmethod
    def backward(ctx, g):
        return _restore(g, ctx.shape, ctx.dims, ctx.keepdim)


class SumTo(Function):
    """Sum ``a`` down to a broadcast-compatible ``shape`` (the inverse of expand)."""

    @staticmethod
    def forward(ctx, a, shape):
        ctx.shape = a._data.shape
        data = a._data
        lead = data.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                          if s == 1 and data.shape[lead + i] != 1)
        if axes:
            data = data.sum(axis=axes, keepdims=True)
        return data.reshape(shape)

    @staticmethod
    def backward(ctx, g):
        return g.expand(ctx.shape)


class Prod(Function):
    """Product over one dim or all; the gradient is exact when inputs contain zeros."""

    @staticmethod
    def forward(ctx, a, dims, keepdim, dtype):
        ctx.dims, ctx.keepdim = dims, keepdim
        acc = "float32" if dtype in NARROW else dtype.np  # follows the dtype argument (Sum)
        data = a._data
        if (type(data) is np.ndarray and data.dtype == acc == np.float32 and not keepdim
                and len(dims) == data.ndim and data.size >= _PROD_COLUMNS * 8
                and data.flags.c_contiguous and _reduce32.jit_ready()):
            out = _make(_reduce32.prod_columns(data.reshape(-1)))
        else:
            out = _make(data.prod(axis=dims, keepdims=keepdim, dtype=acc).astype(dtype.np))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        shape = tuple(a.shape)
        g = _restore(g, shape, ctx.dims, ctx.keepdim)
        if not bool((a._data == 0).any()):
            return g * _restore(out, shape, ctx.dims, ctx.keepdim) / a, None, None, None
        if len(ctx.dims) == 1:
            return g * _prod_others(a, ctx.dims[0]), None, None, None
        return g * _prod_others(a.reshape(-1), 0).reshape(shape), None, None, None


_PROD_COLUMNS = _reduce32.PROD_COLS


def _whole32(a, dims):
    """Whether ``a`` is a large C-contiguous float32 NumPy array reduced over all its dims:
    the case of ``_reduce32``'s one-pass kernels."""
    d = a._data
    return (type(d) is np.ndarray and d.dtype == np.float32 and len(dims) == d.ndim
            and d.size >= _reduce32.SUM_MIN and d.flags.c_contiguous and _reduce32.jit_ready())


def _prod_others(a, dim):
    """For every element, the product of the others along ``dim``, as exclusive cumulative
    products from both ends (no division, so zeros are exact)."""
    left = Shift.apply(cumprod(a, dim), dim, 1, 1)
    right = Flip.apply(Shift.apply(cumprod(Flip.apply(a, dim), dim), dim, 1, 1), dim)
    return left * right


def _acc_dtype(x, dtype):
    if dtype is not None:
        return dt.as_dtype(dtype)
    if x._dtype.category < 2:  # ints and bools sum in int64, as in PyTorch
        return dt.int64
    return x._dtype


def sum(input, dim=None, keepdim=False, *, dtype=None) -> Tensor:  # noqa: A001
    """Sum over ``dim`` (an int, a tuple, or None for all dims).

    Shapes: ``(2, 3, 4)`` summed over ``dim=1`` gives ``(2, 4)`` (``(2, 1, 4)`` with keepdim).
    Example: ``tensorix.ones(2, 3).sum(dim=0)`` is ``tensor([2., 2., 2.])``.
    """
    check_tensor(input, "sum")
    dims = _dims(dim, input.ndim, "sum")
    return Sum.apply(input, dims, keepdim, _acc_dtype(input, dtype))


def mean(input, dim=None, keepdim=False, *, dtype=None) -> Tensor:
    """Arithmetic mean over ``dim``; integer inputs need an explicit floating ``dtype``.

    Example: ``tensorix.tensor([[1., 2.], [3., 4.]]).mean(1)`` is ``tensor([1.5, 3.5])``.
    """
    check_tensor(input, "mean")
    d = input._dtype if dtype is None else dt.as_dtype(dtype)
    if d.category < 2:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {d.name}")
    dims = _dims(dim, input.ndim, "mean")
    n = _count(input.shape, dims)
    s = Sum.apply(input, dims, keepdim, d)
    return s / n if n else s * float("nan")


def _count(shape, dims):
    n = 1
    for i in dims:
        n *= shape[i]
    return n


def prod(input, dim=None, keepdim=False, *, dtype=None) -> Tensor:
    """Product of all elements, or over the single dim ``dim``. Integers and bools give int64.
    The gradient is exact with zeros in the input (product of the other elements).

    Shapes: ``(2, 3)`` with ``dim=1`` gives ``(2,)``. Example:
    ``tensorix.tensor([[1., 2.], [3., 4.]]).prod(0)`` is ``tensor([3., 8.])``.
    """
    check_tensor(input, "prod")
    d = None if dim is None else norm_dim(dim, input.ndim, "prod")  # checked on 0-d too
    dims = tuple(range(input.ndim)) if d is None else ((d,) if input.ndim else ())
    return Prod.apply(input, dims, keepdim, _acc_dtype(input, dtype))


def sum_to(input, shape) -> Tensor:
    """Reduce a broadcast result back to ``shape`` (used by the engine for unbroadcasting)."""
    shape = tuple(shape)
    if tuple(input.shape) == shape:
        return input
    return SumTo.apply(input, shape)


# -- max / min family --------------------------------------------------------------------------
class EvenSelect(Function):
    """A value chosen from ``a`` over ``dims``: ``how`` is "max" or "min" (the array
    module's reduction), or "median" / "nanmedian" (of all elements, the lower one); the
    gradient is shared evenly among the elements equal to it (NaN matches NaN), as in
    PyTorch. The value is computed here, inside the primitive, so a traced graph recomputes
    it for new inputs; the backward's mask is built with ops from the saved input and output,
    so a compiled joint graph recomputes it too."""

    @staticmethod
    def forward(ctx, a, how, dims, keepdim):
        xp, data = a.xp, a._data
        if how in ("median", "nanmedian"):
            flat = xp.sort(data.reshape(-1), kind="stable")  # NaN last
            pos = median_position(flat, flat.shape[0], 0, xp, how == "nanmedian")
            out = flat[int(pos.reshape(-1)[0])].reshape(())
        else:
            with np.errstate(invalid="ignore"):
                out = getattr(xp, how)(data, axis=dims, keepdims=keepdim)
        ctx.dims, ctx.keepdim = dims, keepdim
        out = _make(xp.asarray(out))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        from .pointwise import isnan

        a, out = ctx.saved_tensors
        shape = tuple(a.shape)
        o = out if ctx.keepdim else out.reshape(_kept(shape, ctx.dims))
        mask = a == o
        if a._dtype.category >= 2:
            mask = mask | (isnan(a) & isnan(o))
        count = Sum.apply(mask, ctx.dims, True, g._dtype)
        share = where(mask, g.reshape(_kept(shape, ctx.dims)) if not ctx.keepdim else g, 0)
        return share / where(count > 0, count, 1), None, None, None


def _check_nonempty(x, dims, op, specified):
    if x.numel():
        return
    if not specified:
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")
    for d in dims:
        if x.shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def _extreme(x, dim, keepdim, op, fn):
    check_tensor(x, op)
    specified = dim is not None and not (isinstance(dim, (tuple, list)) and not dim)
    dims = _dims(dim, x.ndim, op)
    _check_nonempty(x, dims, op, specified)
    return EvenSelect.apply(x, fn, dims, keepdim)


def amax(input, dim=(), keepdim=False) -> Tensor:
    """Maximum over ``dim`` (an int, a tuple; ``()`` or None: all dims). NaN propagates; ties
    share the gradient evenly (a slice whose maximum is NaN shares it among its NaNs, as
    PyTorch's ``max()`` does; PyTorch's ``amax`` gives NaN gradients there).

    Shapes: ``(2, 3, 4)`` with ``dim=(0, 2)`` gives ``(3,)``. Example:
    ``tensorix.tensor([[1., 5.], [4., 2.]]).amax(0)`` is ``tensor([4., 5.])``.
    """
    return _extreme(input, dim, keepdim, "amax", "max")


def amin(input, dim=(), keepdim=False) -> Tensor:
    """Minimum over ``dim``; see :func:`amax`. Example: ``x.amin((0, 1))`` of a ``(2, 3, 4)``
    tensor has shape ``(4,)``."""
    return _extreme(input, dim, keepdim, "amin", "min")


def _arg(x, dim, keepdim, op, fn):
    """Integer positions of the extreme (first occurrence; NaN counts as extreme)."""
    check_tensor(x, op)
    if dim is None:
        if not x.numel():
            raise IndexError(f"{op}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        return ArgExtreme.apply(x, fn, None, keepdim)
    d = norm_dim(dim, x.ndim, op)
    _check_nonempty(x, (d,), op, True)
    return ArgExtreme.apply(x, fn, d, keepdim and x.ndim > 0)


def argmax(input, dim=None, keepdim=False) -> Tensor:
    """Index of the maximum over ``dim`` (of the flattened tensor when None), int64; the first
    occurrence on ties, NaN counts as the maximum.

    Example: ``tensorix.tensor([[1., 5.], [4., 2.]]).argmax(1)`` is ``tensor([1, 0])``.
    """
    return _arg(input, dim, keepdim, "argmax", "argmax")


def argmin(input, dim=None, keepdim=False) -> Tensor:
    """Index of the minimum over ``dim``; see :func:`argmax`. Example:
    ``tensorix.tensor([[1., 5.], [4., 2.]]).argmin(1)`` is ``tensor([0, 1])``."""
    return _arg(input, dim, keepdim, "argmin", "argmin")


def _select(x, dim, keepdim, op, fn, rtype):
    """(values, indices) of the extreme along one dim; the gradient goes to that index."""
    idx = _arg(x, dim, True, op, fn)
    if x.ndim == 0:
        return rtype(x.reshape(()), idx)
    d = norm_dim(dim, x.ndim, op)
    values = Gather.apply(x, d, idx)
    if not keepdim:
        values, idx = _squeeze(values, (d,)), _squeeze(idx, (d,))
    return rtype(values, idx)


def _binary(name):
    return getattr(elementwise, name)


def max(input, dim=None, keepdim=False, *, other=None):  # noqa: A001
    """``max(x)``: the maximum of all elements (ties share the gradient).
    ``max(x, dim, keepdim=False)``: a ``(values, indices)`` named tuple along ``dim``, the
    index of the first maximum, the gradient to that index. ``max(x, other_tensor)``: the
    elementwise :func:`maximum`.

    Shapes: ``(2, 3)`` with ``dim=1`` gives values and indices of shape ``(2,)``. Example:
    ``tensorix.tensor([[1., 5.], [4., 2.]]).max(dim=1).indices`` is ``tensor([1, 0])``.
    """
    if isinstance(dim, Tensor) or other is not None:
        return _binary("maximum")(input, dim if other is None else other)
    if dim is None:
        return _extreme(input, None, False, "max", "max")
    return _select(input, dim, keepdim, "max", "argmax", _MAX)


def min(input, dim=None, keepdim=False, *, other=None):  # noqa: A001
    """Minimum; see :func:`max` (``min(x, other_tensor)`` is :func:`minimum`). Example:
    ``values, indices = x.min(dim=0)`` for ``x`` of shape ``(2, 3)`` gives shapes ``(3,)``."""
    if isinstance(dim, Tensor) or other is not None:
        return _binary("minimum")(input, dim if other is None else other)
    if dim is None:
        return _extreme(input, None, False, "min", "min")
    return _select(input, dim, keepdim, "min", "argmin", _MIN)


def aminmax(input, *, dim=None, keepdim=False):
    """``(min, max)`` named tuple over ``dim`` (all dims when None), like :func:`amin` and
    :func:`amax` together.

    Example: ``tensorix.aminmax(tensorix.tensor([3., 1., 2.]))`` gives ``min=1., max=3.``.
    """
    check_tensor(input, "aminmax")
    dims = norm_dims(dim, input.ndim, "aminmax")
    if builtins.any(input.shape[d] == 0 for d in dims) or (dim is None and not input.numel()):
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    return _AMINMAX(amin(input, dims, keepdim), amax(input, dims, keepdim))


# -- logsumexp, norms ------------------------------------------------------------
def _shift_constant(x, dims):
    """max over ``dims`` (kept), 0 where it is not finite: the stabiliser of log-sum-exp."""
    xp = x.xp
    if not x.numel():
        return _make(xp.zeros(_kept(x.shape, dims), dtype=x._data.dtype))
    with np.errstate(invalid="ignore"):
        m = x._data.max(axis=dims, keepdims=True)
    return _make(xp.where(xp.isfinite(m), m, 0).astype(x._data.dtype))


def logsumexp(input, dim=None, keepdim=False) -> Tensor:
    """``log(sum(exp(x)))`` over ``dim``, computed stably by shifting by the maximum; built from
    primitives, so its gradient is the softmax and second derivatives work.

    Shapes: as :func:`sum`. Example: ``tensorix.logsumexp(tensorix.tensor([0., 0.]), 0)`` is
    ``log(2) = 0.6931``.
    """
    x = _upcast(float_input(input, "logsumexp"))
    dims = _dims(dim, x.ndim, "logsumexp")
    d = x._data
    if type(d) is np.ndarray and input._dtype is dt.float32 and dims == (d.ndim - 1,) and \
            d.size and d.flags.c_contiguous and _reduce32.jit_ready():  # one pass a row
        return _reduce32.LogSumExp.apply(x, keepdim)
    m = _shift_constant(x, dims)
    out = log(Sum.apply(exp(x - m), dims, True, x._dtype)) + m
    out = out if keepdim else _squeeze(out, dims)
    return out.to(input._dtype) if input._dtype.category >= 2 else out


class PNorm(Function):
    """``(sum |x|^p)^(1/p)`` for finite p not in (0, 1): a primitive so that the gradient at
    a zero norm is PyTorch's subgradient 0 rather than the composite's 0/0."""

    @staticmethod
    def forward(ctx, a, p, dims, keepdim):
        ctx.p, ctx.dims, ctx.keepdim = p, dims, keepdim
        xp = a.xp
        # by hand, not _widen16: that would compute the backward in float32 too (other bits)
        data = a._data.astype("float32") if a._dtype in NARROW else a._data
        if p == 2 and type(data) is np.ndarray and data.dtype == np.float32 and \
                len(dims) == data.ndim and data.size >= 1 << 16:  # one BLAS pass, float64 sums
            s = np.float64(kernels.sum_squares(data)).reshape((1,) * data.ndim if keepdim else ())
        else:
            if p != 2 or a._dtype.is_complex:  # a real x's square needs no abs (a pass saved)
                data = xp.abs(data)
            s = (xp.square(data) if p == 2 else data ** p).sum(axis=dims, keepdims=keepdim)
        out = _make((xp.sqrt(s) if p == 2 else s ** (1.0 / p)).astype(data.dtype))
        out = _make(out._data.astype(a._dtype.to_real().np))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        from .pointwise import sgn, where
        a, out = ctx.saved_tensors
        p, shape = ctx.p, tuple(a.shape)
        o = _restore(out, shape, ctx.dims, ctx.keepdim)
        g = _restore(g, shape, ctx.dims, ctx.keepdim)
        zero = o == 0
        safe = where(zero, 1, o)
        if p == 2:
            return where(zero, 0, g / safe) * a, None, None, None
        mag = abs_(a)
        az = mag == 0
        scaled = sgn(a) * where(az, 0, where(az, 1, mag) ** (p - 1))
        return scaled * where(zero, 0, g / safe ** (p - 1)), None, None, None


def norm(input, p="fro", dim=None, keepdim=False, dtype=None) -> Tensor:
    """Vector p-norm over ``dim`` (all dims when None): ``p`` = 2 or 'fro' (Euclidean), 1,
    ``inf`` (max |x|), ``-inf`` (min |x|), 0 (count of non-zeros), or any other number.
    The gradient at a zero norm is 0, as in PyTorch.

    Shapes: ``(3, 4)`` with ``dim=1`` gives ``(3,)``. Example:
    ``tensorix.tensor([3., 4.]).norm()`` is ``tensor(5.)``.
    """
    check_tensor(input, "norm")
    x = input if dtype is None else input.to(dtype)
    if x._dtype.category < 2:
        raise RuntimeError(f"norm(): expected a floating point or complex input, got "
                           f"{x._dtype.name}")
    if p == "fro":
        p = 2
    if isinstance(p, str) or not isinstance(p, (int, float)):
        raise ValueError(f"norm(): p must be a number or 'fro', got {p!r} (nuclear norms are "
                         "not supported; use linalg)")
    dims = _dims(dim, x.ndim, "norm")
    if p == math.inf:
        return amax(abs_(x), dims, keepdim)
    if p == -math.inf:
        return amin(abs_(x), dims, keepdim)
    if p == 0:
        return Sum.apply((x != 0).to(x._dtype.to_real()), dims, keepdim, x._dtype.to_real())
    if p == 1:
        return Sum.apply(abs_(x), dims, keepdim, x._dtype.to_real())
    return PNorm.apply(x, float(p), dims, keepdim)


# -- cumulative ops ------------------------------------------------------------------------
def _cum_dim(x, dim, op):
    check_tensor(x, op)
    return norm_dim(dim, x.ndim, op)


def _reverse_cumsum(g, dim):
    return Flip.apply(cumsum(Flip.apply(g, dim), dim), dim)


def _scan32(cls, a, dim, dtype):
    """A float32 scan accumulated in float64 (torch's CPU bits; on every device, so that
    devices agree), or None for other dtypes."""
    if dtype is not dt.float32 or a._dtype is not dt.float32:
        return None
    data = a._data.reshape(1) if a._data.ndim == 0 else a._data
    fused = kernel(cls, "scan", a.device, a._dtype)
    return _reduce32.scan32(a.xp, data, dim, fused, cls is CumProd).reshape(a._data.shape)


class CumSum(Function):
    _kernels = {"scan": (_reduce32.SCAN_KERNELS["cumsum"],)}

    @staticmethod
    def forward(ctx, a, dim, dtype):
        ctx.dim = dim
        fast = _scan32(CumSum, a, dim, dtype)
        if fast is not None:
            return fast
        data = a._data.reshape(1) if a._data.ndim == 0 else a._data
        acc = "float32" if dtype in NARROW else dtype.np  # follows the dtype argument (Sum)
        return a.xp.cumsum(data, axis=dim, dtype=acc).astype(dtype.np).reshape(a._data.shape)

    @staticmethod
    def backward(ctx, g):
        if g.ndim == 0:
            return g, None, None
        return _reverse_cumsum(g, ctx.dim), None, None


class CumProd(Function):
    _kernels = {"scan": (_reduce32.SCAN_KERNELS["cumprod"],)}

    @staticmethod
    def forward(ctx, a, dim, dtype):
        ctx.dim = dim
        data = a._data.reshape(1) if a._data.ndim == 0 else a._data
        acc = "float32" if dtype in NARROW else dtype.np  # follows the dtype argument (Sum)
        fast = _scan32(CumProd, a, dim, dtype)
        out = _make(fast if fast is not None else a.xp.cumprod(data, axis=dim, dtype=acc)
                    .astype(dtype.np).reshape(a._data.shape))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        if a.ndim == 0:
            return g, None, None
        if not bool((a._data == 0).any()):
            return _reverse_cumsum(g * out, ctx.dim) / a, None, None
        return _cumprod_grad_with_zeros(a, g, ctx.dim), None, None


def _cumprod_grad_with_zeros(a, g, dim):
    """Exact cumprod gradient with zeros, through the (n, n) Jacobian rows: row j is the
    cumulative product of ``a`` with ``a_j`` replaced by 1, kept for i >= j."""
    nd = a.ndim
    perm = tuple(k for k in range(nd) if k != dim) + (dim,)
    inv = tuple(perm.index(k) for k in range(nd))
    am, gm = a.permute(perm), g.permute(perm)
    n = am.shape[-1]
    xp = a.xp
    eye = _make(xp.eye(n, dtype=bool))
    rows = where(eye, 1, am.unsqueeze(-2).expand(tuple(am.shape[:-1]) + (n, n)))
    jac = cumprod(rows, -1)  # jac[..., j, i] = prod_{k <= i, k != j} a_k
    upper = _make(xp.triu(xp.ones((n, n), dtype=bool)))
    grad = Sum.apply(jac * where(upper, gm.unsqueeze(-2), 0), (nd,), False, a._dtype)
    return grad.permute(inv)


def _cum_dtype(x, dtype):
    return _acc_dtype(x, dtype)


def cumsum(input, dim, *, dtype=None) -> Tensor:
    """Cumulative sum along ``dim``; integers and bools give int64 (unless ``dtype``).

    Shapes: same as the input. Example: ``tensorix.tensor([1, 2, 3]).cumsum(0)`` is
    ``tensor([1, 3, 6])``.
    """
    d = _cum_dim(input, dim, "cumsum")
    return CumSum.apply(input, d, _cum_dtype(input, dtype))


def cumprod(input, dim, *, dtype=None) -> Tensor:
    """Cumulative product along ``dim``; integers give int64. The gradient is exact with zeros
    (an O(n^2) path taken only when the input has zeros).

    Example: ``tensorix.tensor([1., 2., 3.]).cumprod(0)`` is ``tensor([1., 2., 6.])``.
    """
    d = _cum_dim(input, dim, "cumprod")
    return CumProd.apply(input, d, _cum_dtype(input, dtype))


class CumExtreme(Function):
    """Running maximum (``ufunc`` "maximum") or minimum along ``dim``: ``(values, int64
    indices)`` with torch's index rule (the latest position reaching the extreme; from a NaN
    on, the latest NaN). The indices are an output, so the backward scatters the gradient by
    the saved index tensor with ops, which a compiled joint graph records; one pass of the
    fused kernel where it builds (``_along.running_extreme``)."""

    _kernels = {"cumextreme": (kernels.jit("cumextreme", (
        "float32", "float64", "int32", "int64"), lambda: (
        np.empty((1, 1, 1), np.float32), np.empty((1, 1, 1), np.int64),
        np.ones((1, 1, 1), np.float32), True)),)}

    @staticmethod
    def forward(ctx, a, dim, ufunc):
        xp, data = a.xp, a._data
        fused = _along.running_extreme(CumExtreme, a, dim, ufunc == "maximum")
        if fused is not None:
            values, idx = fused
        else:
            with np.errstate(invalid="ignore"):
                extreme = running(xp, data, dim, getattr(xp, ufunc))
            hit = data == extreme
            if a._dtype.category >= 2:
                hit = hit | xp.isnan(data)
            pos = xp.arange(data.shape[dim]).reshape((-1,) + (1,) * (data.ndim - dim - 1))
            idx = running(xp, hit * pos, dim, xp.maximum).astype(np.int64, copy=False)
            values = xp.take_along_axis(data, idx, axis=dim)  # x[idx]: -0.0 stays -0.0
        indices = _make(idx)
        ctx.mark_non_differentiable(indices)
        ctx.dim, ctx.shape = dim, data.shape
        ctx.save_for_backward(indices)
        return _make(values), indices

    @staticmethod
    def backward(ctx, g, g_indices):
        (indices,) = ctx.saved_tensors
        return ScatterAdd.apply(g.new_zeros(ctx.shape), ctx.dim, indices, g), None, None


def _cum_extreme(x, dim, op, ufunc, rtype):
    d = _cum_dim(x, dim, op)
    if x.ndim == 0:
        return rtype(x.reshape(()), _make(x.xp.zeros((), dtype=np.int64)))
    return rtype(*CumExtreme.apply(x, d, ufunc))


def cummax(input, dim):
    """Running maximum along ``dim``: ``(values, indices)``; on ties the index of the latest
    maximum, NaN propagates. The gradient goes to the indexed elements.

    Example: ``tensorix.tensor([1., 3., 2.]).cummax(0)`` gives values ``[1., 3., 3.]`` and
    indices ``[0, 1, 1]``.
    """
    return _cum_extreme(input, dim, "cummax", "maximum", _CUMMAX)


def cummin(input, dim):
    """Running minimum along ``dim``; see :func:`cummax`. Example:
    ``tensorix.tensor([3., 1., 2.]).cummin(0).indices`` is ``tensor([0, 1, 1])``."""
    return _cum_extreme(input, dim, "cummin", "minimum", _CUMMIN)


class LogCumSumExp(Function):
    """``log(cumsum(exp(x)))`` as a primitive: a log-space scan, stable where the composite
    would overflow or underflow. float32: kernels.logaddexp's formula (NumPy's calls the C
    log1p per element), as numba's one sequential pass where it builds (torch's order)."""

    _kernels = {"scan32": (kernels.jit("logcumsumexp32", ("float32",), lambda: (
        np.empty((1, 2, 1), np.float32), np.ones((1, 2, 1), np.float32))),)}

    @staticmethod
    def forward(ctx, a, dim):
        ctx.dim = dim
        data = a._data.reshape(1) if a._data.ndim == 0 else a._data
        # by hand, not _widen16: that would compute the backward in float32 too (other bits)
        acc = data.astype("float32") if a._dtype in NARROW else data
        fused = kernel(LogCumSumExp, "scan32", a.device, acc.dtype)
        out = _along.along_rows(fused, acc, dim, (acc.dtype,))[0] if fused and acc.size else \
            scan(a.xp, acc, dim, functools.partial(kernels.logaddexp, "logaddexp"))
        out = _make(out.astype(a._data.dtype).reshape(a._data.shape))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        # d/dx_j = sum_{i>=j} g_i exp(x_j - out_i), split by the sign of g so each part is a
        # reverse log-cum-sum-exp (the TensorFlow/PyTorch formulation)
        a, out = ctx.saved_tensors
        if a.ndim == 0:
            return g, None
        lowest = float(np.finfo(np.float32 if a._dtype in NARROW else a._dtype.np).min)
        d = ctx.dim

        def rev(t):
            return Flip.apply(LogCumSumExp.apply(Flip.apply(t, d), d), d)

        with np.errstate(over="ignore"):  # lowest - out may round to -inf: exp gives 0
            log_abs = log(where(g == 0, 1, abs_(g)))
            pos = where(g > 0, log_abs, lowest) - out
            neg = where(g < 0, log_abs, lowest) - out
            return exp(rev(pos) + a) - exp(rev(neg) + a), None


def logcumsumexp(input, dim) -> Tensor:
    """``log(cumsum(exp(x), dim))`` computed stably.

    Example: ``tensorix.logcumsumexp(tensorix.tensor([0., 0.]), 0)`` is ``[0., 0.6931]``.
    """
    d = _cum_dim(input, dim, "logcumsumexp")
    if input._dtype.category < 2:
        raise RuntimeError(f"logcumsumexp(): expected a floating point input, got "
                           f"{input._dtype.name}")
    return LogCumSumExp.apply(input, d)


# -- logical and nan-aware reductions -------------------------------------------------------
class _Logical(Function):
    _differentiable = False

    @staticmethod
    def forward(ctx, a, fn, dims, keepdim):
        out = getattr(a.xp, fn)(a._data, axis=dims, keepdims=keepdim)
        return out.astype(np.uint8) if a._dtype is dt.uint8 else out


def all(input, dim=None, keepdim=False) -> Tensor:  # noqa: A001
    """True where every element over ``dim`` is non-zero (bool; uint8 stays uint8).

    Example: ``tensorix.tensor([[1, 0], [2, 3]]).all(1)`` is ``tensor([False, True])``.
    """
    check_tensor(input, "all")
    return _Logical.apply(input, "all", norm_dims(dim, input.ndim, "all"), keepdim)


def any(input, dim=None, keepdim=False) -> Tensor:  # noqa: A001
    """True where some element over ``dim`` is non-zero; see :func:`all`. Example:
    ``tensorix.tensor([[1, 0], [0, 0]]).any(1)`` is ``tensor([True, False])``."""
    check_tensor(input, "any")
    return _Logical.apply(input, "any", norm_dims(dim, input.ndim, "any"), keepdim)


def count_nonzero(input, dim=None) -> Tensor:
    """Number of non-zero elements over ``dim`` (int64).

    Example: ``tensorix.count_nonzero(tensorix.tensor([[0., 1.], [2., 0.]]), 0)`` is
    ``tensor([1, 1])``.
    """
    check_tensor(input, "count_nonzero")
    dims = norm_dims(dim, input.ndim, "count_nonzero")
    if _whole32(input, dims):
        return _reduce32.Count.apply(input, False, False)
    return sum(input != 0, dims)


def _not_nan(x):
    return x == x


def nansum(input, dim=None, keepdim=False, *, dtype=None) -> Tensor:
    """:func:`sum` treating NaN as zero (NaN positions get zero gradient).

    Example: ``tensorix.tensor([1., float('nan'), 2.]).nansum()`` is ``tensor(3.)``.
    """
    check_tensor(input, "nansum")
    if (dtype is None or dt.as_dtype(dtype) is dt.float32) and \
            _whole32(input, _dims(dim, input.ndim, "nansum")):
        return _reduce32.NanSum.apply(input, keepdim)
    x = input
    # the where only where there is a NaN (checked in one cheap pass on the CPU): the same
    # values and gradient, without three whole-array ops (17x torch's time on NaN-free data)
    if input._dtype.category >= 2 and (type(input._data) is not np.ndarray
                                       or bool(np.isnan(input._data).any())):
        x = where(_not_nan(input), input, 0)
    return sum(x, dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None) -> Tensor:
    """:func:`mean` over the non-NaN elements (NaN when all are NaN).

    Example: ``tensorix.tensor([1., float('nan'), 3.]).nanmean()`` is ``tensor(2.)``.
    """
    check_tensor(input, "nanmean")
    if input._dtype.category < 2:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype "
                           f"but got {input._dtype.name}")
    total = nansum(input, dim, keepdim, dtype=dtype)
    whole = _whole32(input, _dims(dim, input.ndim, "nanmean"))
    count = _reduce32.Count.apply(input, True, keepdim) if whole else \
        sum(_not_nan(input), dim, keepdim)
    with np.errstate(divide="ignore", invalid="ignore"):
        return total / count.to(total.dtype)


def _methods():
    from .inplace import make

    names = [n for n in __all__ if n != "sum_to"]
    m = {n: globals()[n] for n in names}
    m["sum_to_size"] = lambda self, *s: sum_to(
        self, s[0] if len(s) == 1 and isinstance(s[0], (tuple, list)) else s)
    m["cumsum_"], m["cumprod_"] = make(cumsum), make(cumprod)
    return m


TENSOR_METHODS = _methods()
