"""Norms and vector products behind ``tensorix.linalg``: vector_norm (a primitive, for its
stable gradient at zero and at ties of the max), matrix_norm, norm, cond, cross and vecdot
(the top-level ``tensorix.norm`` with ``torch.norm``'s rules lives in ops/reduce.py).

Matrix norms compose vector norms and singular values, so their gradients come from those of
:func:`vector_norm` and ``svdvals``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import dtypes as dt
from ..autograd.dispatch import NARROW
from ..autograd.function import Function
from ..tensor import Tensor, _make
from ._common import check_same_dtype, check_tensor, norm_dim, norm_dims, promote
from .linalg_decomp import LinAlgError, check_float, check_matrix, inv, svdvals
from .pointwise import where

__all__ = ["vector_norm", "matrix_norm", "norm", "cond", "cross", "vecdot"]


def _real_dtype(d):
    if d.is_complex:
        return dt.float64 if d is dt.complex128 else dt.float32
    return d


class VectorNorm(Function):
    @staticmethod
    def forward(ctx, x, ord, dims, keepdim):
        ctx.ord, ctx.dims, ctx.keepdim = ord, dims, keepdim
        xp = x.xp
        a = xp.abs(x._data)
        # accumulate in fp32, round once; by hand rather than _widen16 (autograd/dispatch.py),
        # which would compute the backward in float32 too, where torch's (and ours) is 16-bit
        if x._dtype in NARROW:
            a = a.astype(np.float32)
        kw = {"axis": dims, "keepdims": keepdim}
        if ord == 0:
            out = (a != 0).sum(**kw).astype(a.dtype)
        elif ord == math.inf:
            out = a.max(**kw)
        elif ord == -math.inf:
            out = a.min(**kw)
        elif ord == 1:
            out = a.sum(**kw)
        elif ord == 2:
            out = xp.sqrt((a * a).sum(**kw))
        else:
            with np.errstate(divide="ignore"):  # 0 ** negative is inf; the norm is then 0
                out = (a ** ord).sum(**kw) ** (1.0 / ord)
        out = _make(xp.asarray(out).astype(_real_dtype(x._dtype).np))
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        # PyTorch's norm_backward: each case avoids 0/0 at a zero norm or a zero entry
        x, nrm = ctx.saved_tensors
        p = ctx.ord
        if not ctx.keepdim and ctx.dims:
            shape = tuple(1 if i in ctx.dims else s for i, s in enumerate(x.shape))
            g, nrm = g.reshape(shape), nrm.reshape(shape)
        if p == 0:
            return g * 0.0 * x.abs(), None, None, None
        if p == 1:
            return x.sgn() * g, None, None, None
        zero = nrm == 0
        safe = where(zero, 1.0, nrm)
        if p == 2:
            return g * (x / safe), None, None, None  # x is 0 wherever the norm is
        ax = x.abs()
        if math.isinf(p):  # the max/min entries share the gradient equally
            mask = (ax == nrm).to(nrm.dtype)
            count = mask.sum(ctx.dims, keepdim=True)
            return x.sgn() * ((g / count) * mask), None, None, None
        if p < 1:
            nz = x != 0
            scaled = x.sgn() * where(nz, where(nz, ax, 1.0) ** (p - 1), 0.0)
            return scaled * g * nrm ** (1 - p), None, None, None
        scaled = x.sgn() * ax ** (p - 1) if p < 2 else x * ax ** (p - 2)
        return scaled * where(zero, 0.0, g / safe ** (p - 1)), None, None, None


def _ord_number(op, ord):
    if isinstance(ord, bool) or not isinstance(ord, numbers.Real):
        raise RuntimeError(f"{op}: Expected a real number (or inf) as the order of the norm, "
                           f"got {ord!r}")
    return float(ord)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None) -> Tensor:
    """The vector ``ord``-norm of ``x`` over ``dim`` (None: all elements, as if flattened).

    ``ord``: any real, ``inf`` (max |x|), ``-inf`` (min |x|), 0 (count of non-zeros); the
    result is real (float32 for complex64). ``dtype`` casts ``x`` first.
    Shapes: ``(2, 3, 4)`` over ``dim=(1, 2)`` gives ``(2,)`` (``(2, 1, 1)`` with keepdim).
    Gradients match PyTorch (zero at a zero norm; ties of the max share it equally).
    Example: ``tensorix.linalg.vector_norm(tensorix.tensor([3., 4.]))`` is ``tensor(5.)``.
    """
    op = "linalg.vector_norm"
    check_tensor(x, op, "x")
    p = _ord_number(op, ord)
    if dtype is not None:
        x = x.to(dtype)
    if x._dtype.category < 2:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{x._dtype.name}")
    dims = tuple(range(x.ndim)) if dim is None or dim == () else norm_dims(dim, x.ndim, op)
    empty = any(x.shape[d] == 0 for d in dims) or (x.numel() == 0 and not dims)
    if empty and (p < 0 or math.isinf(p)):
        raise RuntimeError(f"{op}: cannot compute the {ord} norm on an empty tensor because "
                               "the operation does not have an identity")
    return VectorNorm.apply(x, p, dims, bool(keepdim))


def _matrix_dims(op, A, dim):
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {dim}")
    d0, d1 = (norm_dim(d, A.ndim, op) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"{op}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def _svd_norm(A, ord, d0, d1, keepdim):
    rest = [i for i in range(A.ndim) if i not in (d0, d1)]
    s = svdvals(A.permute(*(rest + [d0, d1])))
    if ord == "nuc":
        out = s.sum(-1)
    else:  # the largest/smallest singular value; ties share the gradient as amax does
        out = vector_norm(s, math.inf if ord == 2 else -math.inf, -1)
    if keepdim:
        for d in sorted((d0, d1)):
            out = out.unsqueeze(d)
    return out


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None) -> Tensor:
    """A matrix norm of the matrices spanned by ``dim`` (default the last two) of ``A``.

    ``ord``: 'fro' (Frobenius), 'nuc' (sum of singular values), 2 / -2 (largest / smallest
    singular value), 1 / -1 (max / min column abs-sum), inf / -inf (max / min row abs-sum).
    Shapes: ``(..., m, n) -> (...)`` (size-1 dims kept with ``keepdim``).
    Example: ``tensorix.linalg.matrix_norm(tensorix.eye(3), 'nuc')`` is ``tensor(3.)``.
    """
    op = "linalg.matrix_norm"
    check_tensor(A, op, "A")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if dtype is not None:
        A = A.to(dtype)
    if A._dtype.category < 2:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{A._dtype.name}")
    d0, d1 = _matrix_dims(op, A, dim)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord == "nuc" or (not isinstance(ord, str) and ord in (2, -2)):
        check_float(A, op)
        return _svd_norm(A, ord, d0, d1, keepdim)
    if isinstance(ord, str) or ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"{op}: Order {ord} not supported.")
    r, c = (d1, d0) if math.isinf(ord) else (d0, d1)  # sum over r, then max/min over c
    sums = vector_norm(A, 1, r, keepdim=True)
    out = vector_norm(sums, math.inf if ord > 0 else -math.inf, c, keepdim=True)
    return out if keepdim else out.squeeze((d0, d1))


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None) -> Tensor:
    """A vector or matrix norm, chosen as ``torch.linalg.norm`` does.

    With ``dim`` an int (or 1-tuple): :func:`vector_norm`; a 2-tuple: :func:`matrix_norm`.
    With ``dim=None``: ``ord=None`` gives the 2-norm of all elements; otherwise ``A`` must be
    1-d (vector norm) or 2-d (matrix norm).
    Example: ``tensorix.linalg.norm(tensorix.ones(2, 2))`` is ``tensor(2.)``.
    """
    op = "linalg.norm"
    check_tensor(A, op, "A")
    if dim is not None:
        dim = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
        if len(dim) not in (1, 2):
            raise RuntimeError(f"{op}: If dim is specified, it must be of length 1 or 2. Got "
                               f"{list(dim)}")
    elif ord is not None:
        if A.ndim not in (1, 2):
            raise RuntimeError(f"{op}: If dim is not specified but ord is, the input must be "
                               f"1D or 2D. Got {A.ndim}D.")
        dim = tuple(range(A.ndim))
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if len(dim) == 2:
        return matrix_norm(A, ord, dim, keepdim, dtype=dtype)
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


def cond(A, p=None) -> Tensor:
    """Condition number of ``A (..., m, n)`` in the norm ``p``: ``None``/2 is
    ``max(S) / min(S)``, -2 the reciprocal (any shape); the other matrix norms ('fro', 'nuc',
    1, -1, inf, -inf) use ``norm(A) * norm(inv(A))`` (square ``A``; inf when singular).
    Example: ``tensorix.linalg.cond(tensorix.eye(3))`` is ``tensor(1.)``.
    """
    op = "linalg.cond"
    check_matrix(A, op)
    if p is None or (not isinstance(p, str) and p in (2, -2)):
        s = svdvals(A)
        hi, lo = s[..., 0], s[..., -1]
        if p == -2:
            hi, lo = lo, hi
        zero = lo == 0
        return where(zero, math.inf, hi / where(zero, 1.0, lo))
    check_matrix(A, op, square=True)
    try:
        ainv = inv(A)
    except LinAlgError:
        return matrix_norm(A, p) * math.inf
    return matrix_norm(A, p) * matrix_norm(ainv, p)


class Cross(Function):
    @staticmethod
    def forward(ctx, a, b, dim):
        ctx.dim = dim
        ctx.save_for_backward(a, b)
        return a.xp.cross(a._data, b._data, axis=dim)

    @staticmethod
    def backward(ctx, g):
        # <g, a x b> = <a, b x g> = <b, g x a>
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad[:2]
        ga = Cross.apply(b.conj(), g, ctx.dim) if na else None
        gb = Cross.apply(g, a.conj(), ctx.dim) if nb else None
        return ga, gb, None


def cross(input, other, *, dim=-1) -> Tensor:
    """Cross product of 3-vectors along ``dim``; the other dims broadcast.

    Shapes: ``(..., 3)`` and ``(..., 3)`` give ``(..., 3)``.
    Example: ``tensorix.linalg.cross(e_x, e_y)`` is ``e_z``.
    """
    op = "linalg.cross"
    check_tensor(input, op, "input")
    check_tensor(other, op, "other")
    if input.ndim != other.ndim:
        raise RuntimeError(f"{op}: inputs must have the same number of dimensions, got "
                           f"{input.ndim} and {other.ndim}")
    check_same_dtype(op, ("input", input), ("other", other))  # no promotion, as in torch
    a, b = promote(input, other, op)
    d = norm_dim(dim, a.ndim, op, scalar=False)
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise RuntimeError(f"{op}: inputs dimension {dim} must have length 3. Got "
                           f"{a.shape[d]} and {b.shape[d]}")
    try:
        np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        raise RuntimeError(f"{op}: the shapes {list(a.shape)} and {list(b.shape)} are not "
                           "broadcastable") from None
    return Cross.apply(a, b, d - a.ndim)


def vecdot(x, y, *, dim=-1) -> Tensor:
    """``sum(x.conj() * y, dim)``: batched dot products over ``dim``, other dims broadcast.

    Example: ``tensorix.linalg.vecdot(tensorix.ones(4, 3), tensorix.ones(3))`` is
    ``tensor([3., 3., 3., 3.])``.
    """
    op = "linalg.vecdot"
    check_tensor(x, op, "x")
    check_tensor(y, op, "y")
    check_same_dtype(op, ("x", x), ("y", y))  # no promotion, as in torch
    nd = max(x.ndim, y.ndim, 1)
    d = norm_dim(dim, nd, op)
    sx = (1,) * (nd - x.ndim) + tuple(x.shape)
    sy = (1,) * (nd - y.ndim) + tuple(y.shape)
    if sx[d] != sy[d]:
        raise RuntimeError(f"{op}: x and y must have the same size along dim {dim}, got "
                           f"{sx[d]} and {sy[d]}")
    return ((x.conj() if x.is_complex() else x) * y).sum(d - nd)
