"""Selection along a dim, shared by the reduce, sort and einsum (max/min semiring) families;
indexing's scatters address elements with its ``_full_index`` (private).

Every op that *selects* elements (max with dim, sort, topk, median, mode, cummax ...) computes
integer indices without autograd and takes its values with :class:`TakeAlong`; its backward,
:class:`PutAlong`, scatters into zeros and is differentiated by the gather again, so double
backward works. Also: the named-tuple results, two linear helpers (Flip, Shift) and a portable
scan.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import _threads
from ..autograd.dispatch import kernel
from ..autograd.function import Function
from ..tensor import Tensor

__all__ = ["return_type", "TakeAlong", "PutAlong", "take_along", "Flip", "Shift", "scan",
           "running", "running_extreme", "along_rows"]


def return_type(name, fields=("values", "indices")):
    """A named tuple class like ``torch.return_types.<name>`` (``out.values``, ``out[0]``)."""
    cls = namedtuple(name, fields)
    cls.__module__ = "tensorix.return_types"
    return cls


def _full_index(xp, index, dim):
    """Index arrays that address ``index``'s positions along ``dim`` and itself elsewhere."""
    nd = index.ndim
    return tuple(index if k == dim else
                 xp.arange(index.shape[k]).reshape((-1,) + (1,) * (nd - k - 1))
                 for k in range(nd))


class TakeAlong(Function):
    """``out[..i..] = a[..index[..i..]..]`` along ``dim`` (``take_along_axis``)."""

    @staticmethod
    def forward(ctx, a, index, dim):
        dim %= a._data.ndim  # _full_index compares non-negative dims
        ctx.shape, ctx.index, ctx.dim = a._data.shape, index, dim
        return a.xp.take_along_axis(a._data, index, axis=dim)

    @staticmethod
    def backward(ctx, g):
        return PutAlong.apply(g, ctx.index, ctx.dim, ctx.shape), None, None


class PutAlong(Function):
    """Scatter-add ``g`` into zeros of ``shape`` at ``index`` along ``dim`` (repeated indices
    add); the adjoint of :class:`TakeAlong`."""

    @staticmethod
    def forward(ctx, g, index, dim, shape):
        dim %= g._data.ndim
        ctx.index, ctx.dim = index, dim
        xp = g.xp
        out = xp.zeros(shape, dtype=g._data.dtype)
        xp.add.at(out, _full_index(xp, index, dim), g._data)
        return out

    @staticmethod
    def backward(ctx, gg):
        return TakeAlong.apply(gg, ctx.index, ctx.dim), None, None, None


def take_along(input, index, dim) -> Tensor:
    """Differentiable ``take_along_axis`` with a raw integer ``index`` array (internal)."""
    return TakeAlong.apply(input, index, dim)


class Flip(Function):
    """Reverse one dim (a linear map that is its own adjoint)."""

    @staticmethod
    def forward(ctx, a, dim):
        ctx.dim = dim
        return a.xp.flip(a._data, axis=dim).copy()

    @staticmethod
    def backward(ctx, g):
        return Flip.apply(g, ctx.dim), None


class Shift(Function):
    """Shift along ``dim`` by one (``step`` +1: towards higher indices), filling the vacated
    slot with ``fill``; its adjoint is the opposite shift filling 0."""

    @staticmethod
    def forward(ctx, a, dim, step, fill):
        ctx.dim, ctx.step = dim, step
        data = a._data
        out = a.xp.full(data.shape, fill, dtype=data.dtype)
        n = data.shape[dim]
        src = [slice(None)] * data.ndim
        dst = [slice(None)] * data.ndim
        src[dim], dst[dim] = (slice(0, n - 1), slice(1, n)) if step > 0 else \
            (slice(1, n), slice(0, n - 1))
        out[tuple(dst)] = data[tuple(src)]
        return out

    @staticmethod
    def backward(ctx, g):
        return Shift.apply(g, ctx.dim, -ctx.step, 0), None, None, None


def scan(xp, data, axis, op):
    """Inclusive scan of a binary ufunc along ``axis`` in log2(n) vectorised passes
    (Hillis-Steele); portable to every array module, stable for logaddexp."""
    out = xp.moveaxis(data, axis, -1).copy()
    n, step = out.shape[-1], 1
    with np.errstate(invalid="ignore", over="ignore"):
        while step < n:
            out[..., step:] = op(out[..., step:], out[..., :-step])
            step *= 2
    return xp.moveaxis(out, -1, axis)


def running(xp, data, d, op):
    """The inclusive scan of ``op`` (maximum or minimum: exact, any order) along ``d``. NumPy:
    ``op.accumulate`` (one pass) along the last axis, else one vectorised ``op`` per position
    along ``d`` when rows are wide (NumPy's accumulate over an outer axis is 4x slower than
    over the inner one); other
    array modules: the log-step ``scan``."""
    if xp is not np or data.size == 0:
        return scan(xp, data, d, op)
    n = data.shape[d]
    if d == data.ndim - 1 or data.size < 64 * n:  # a loop per position repays on wide rows
        return op.accumulate(data, axis=d)
    out = np.empty(data.shape, data.dtype)
    src, dst = np.moveaxis(data, d, 0), np.moveaxis(out, d, 0)
    dst[0] = src[0]
    for i in range(1, src.shape[0]):
        op(dst[i - 1], src[i], out=dst[i])
    return out


def along_rows(fused, data, d, out_dtypes, *args):
    """``fused(*outs, x, *args)`` on the NumPy array ``data`` viewed as (outer, n, inner) with
    ``n`` its length along ``d`` (a scan kernel's layout: rows are independent), split over
    the pool by outer rows; returns the outputs (one per dtype in ``out_dtypes``) in
    ``data``'s shape."""
    n = data.shape[d]
    x = np.ascontiguousarray(data).reshape(int(np.prod(data.shape[:d])), n, -1)
    outs = [np.empty(x.shape, t) for t in out_dtypes]
    _threads.parallel(x.shape[0], lambda lo, hi: fused(*[o[lo:hi] for o in outs], x[lo:hi],
                                                       *args),
                      max(1, _threads.CHEAP // max(1, x[0].size)))
    return [o.reshape(data.shape) for o in outs]


def running_extreme(cls, a, d, is_max):
    """(values, int64 indices) of the running maximum (``is_max``) or minimum of the Tensor
    ``a`` along ``d``, torch's index rule (the latest on ties, nan propagates from its
    position), as raw arrays, by the "cumextreme" kernel ``cls`` declares; or None where no
    kernel serves (numba's one pass, against five NumPy passes and a gather)."""
    fused = kernel(cls, "cumextreme", a.device, a._dtype)
    if fused is None or a._data.size == 0:
        return None
    return along_rows(fused, a._data, d, (a._data.dtype, np.int64), is_max)
