"""Indexing ops: gather/scatter, the index_* and masked_* families, index_put (setitem's core),
take, take_along_dim, nonzero and argwhere.

The primitives are Gather, ScatterAdd, Scatter, ScatterReduce, IndexSelect, IndexAdd,
IndexCopy, IndexFill, IndexPut and MaskedScatter; each backward is written with these same
ops, so gather and scatter_add are each other's gradient and double backward comes free.
Everything else (masked_fill, masked_select, take, take_along_dim) composes them with
``where`` and getitem. In-place variants (``scatter_``, ``index_add_``, ``masked_fill_``...)
come from :func:`tensorix.ops.inplace.make`.
"""

from __future__ import annotations

import numpy as np

from .. import backend
from .. import dtypes as dt
from ..autograd.function import Function
from ..tensor import Tensor, _make
from . import inplace
from ._along import _full_index
from ._common import check_tensor, lift, norm_dim, same_device
from .movement import GetItem, getitem, parse_index
from .pointwise import where

__all__ = ["gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add",
           "index_copy", "index_fill", "index_put", "masked_fill", "masked_scatter",
           "masked_select", "take", "take_along_dim", "nonzero", "argwhere", "nonzero_static"]

_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _check_index(index, op, int32=False):
    check_tensor(index, op, "index")
    ok = ("int64", "int32") if int32 else ("int64",)
    if index._dtype.name not in ok:
        want = "int32 or int64" if int32 else "int64"
        raise RuntimeError(f"{op}(): Expected dtype {want} for index, got {index._dtype.name}")
    return index


def _check_bounds(index, size, dim, op, negative=False):
    """Indices must lie in ``[0, size)`` (``[-size, size)`` where torch wraps negatives)."""
    if index._data.size == 0:
        return
    lo, hi = int(index._data.min()), int(index._data.max())
    bad = hi if hi >= size else lo if lo < (-size if negative else 0) else None
    if bad is not None:
        raise IndexError(f"{op}(): index {bad} is out of bounds for dimension {dim} with size "
                         f"{size}")


def _same_dtype(a, b, op, arg="src"):
    if a._dtype is not b._dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to {arg}.dtype (got "
                           f"{a._dtype.name} and {b._dtype.name})")


def _leading(t, shape):
    """``t`` cut to ``shape`` (a view; its gradient pads with zeros)."""
    if t._data.shape == tuple(shape):
        return t
    return getitem(t, tuple(slice(0, s) for s in shape))


# -- gather / scatter ----------------------------------------------------------------------------
class Gather(Function):
    _codes = "move"  # storage codes: runs on the codes (autograd/dispatch.py)

    @staticmethod
    def forward(ctx, a, dim, index):
        ctx.dim, ctx.index, ctx.shape = dim, index, a._data.shape
        lead = tuple(slice(None) if d == dim else slice(0, n)  # index may be smaller
                     for d, n in enumerate(index._data.shape))
        return a.xp.take_along_axis(a._data[lead], index._data, axis=dim)

    @staticmethod
    def backward(ctx, g):
        return ScatterAdd.apply(g.new_zeros(ctx.shape), ctx.dim, ctx.index, g), None, None


def _scatter_shapes(a, dim, index, src, op):
    """torch's shape rules for gather/scatter: same ndim, index no larger than self (except at
    ``dim``) and than src."""
    if index.ndim != a.ndim and not (a.ndim <= 1 and index.ndim <= 1):
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as "
                           f"{'input' if src is None else 'self'} tensor")
    for d in range(index.ndim if a.ndim else 0):
        over_self = d != dim and index._data.shape[d] > a._data.shape[d]
        over_src = src is not None and index._data.shape[d] > src._data.shape[d]
        if over_self or over_src:
            extra = "" if src is None else f" and to be no larger size than src " \
                f"{list(src._data.shape)}"
            raise RuntimeError(f"{op}(): Size does not match at dimension {d} expected index "
                               f"{list(index._data.shape)} to be no larger than self "
                               f"{list(a._data.shape)} apart from dimension {dim}{extra}")


def gather(input, dim, index, *, sparse_grad=False) -> Tensor:
    """``out[i][j][k] = input[index[i][j][k]][j][k]`` (for ``dim=0``): values picked along
    ``dim``. ``index`` is int64 (or int32) with ``input``'s number of dims and is no larger
    than ``input`` outside ``dim``; the output has ``index``'s shape.

    Example: ``tensorix.tensor([[1, 2], [3, 4]]).gather(1, tensorix.tensor([[0, 0], [1, 0]]))``
    is ``[[1, 1], [4, 3]]``.
    """
    check_tensor(input, "gather")
    _check_index(index, "gather", int32=True)  # torch takes int32 indices here too
    same_device("gather", input, index)
    d = norm_dim(dim, input.ndim, "gather")
    _scatter_shapes(input, d, index, None, "gather")
    _check_bounds(index, input._data.shape[d] if input.ndim else 1, d, "gather")
    if input.ndim == 0:  # torch treats a 0-d input as 1-d here
        return Gather.apply(input.reshape(1), 0, index.reshape(-1)).reshape(tuple(index.shape))
    return Gather.apply(input, d, index)


class _Put(Function):
    """``a`` with ``src`` written at the positions ``at(xp, index, dim)`` addresses (the last
    write wins): the forward shared by scatter (element by element, ``_full_index``) and
    index_copy/index_fill (whole slices along ``dim``, ``_dim_ix``)."""

    @classmethod
    def forward(cls, ctx, a, dim, index, src):
        ctx.dim, ctx.index = dim, index
        xp, out = a.xp, a._data.copy()
        cls.write(xp, out, cls.at(xp, index._data, dim), src._data)
        return out

    @staticmethod
    def write(xp, out, ix, src):
        out[ix] = src


class _PutAdd(_Put):
    """:class:`_Put` adding instead (repeated positions sum); the gradient for ``src`` is the
    matching read ``take`` (gather or index_select), for ``a`` it is ``g`` itself."""

    @staticmethod
    def write(xp, out, ix, src):
        xp.add.at(out, ix, src)

    @classmethod
    def backward(cls, ctx, g):
        gs = cls.take.apply(g, ctx.dim, ctx.index) if ctx.needs_input_grad[3] else None
        return g, None, None, gs


class ScatterAdd(_PutAdd):
    at, take = staticmethod(_full_index), Gather


class Scatter(_Put):
    """Overwrite: ``out[.., index[i], ..] = src[i]`` (duplicates: the last write wins)."""

    at = staticmethod(_full_index)

    @staticmethod
    def backward(ctx, g):
        ga = gs = None
        if ctx.needs_input_grad[0]:
            zero = g.new_zeros(()).expand(tuple(ctx.index.shape))
            ga = Scatter.apply(g, ctx.dim, ctx.index, zero)
        if ctx.needs_input_grad[3]:
            gs = Gather.apply(g, ctx.dim, ctx.index)
        return ga, None, None, gs


def _scatter_args(input, dim, index, src, op):
    check_tensor(input, op)
    _check_index(index, op, int32=True)
    same_device(op, input, index, src)
    d = norm_dim(dim, input.ndim, op)
    _scatter_shapes(input, d, index, src, op)
    _check_bounds(index, input._data.shape[d] if input.ndim else 1, d, op)
    _same_dtype(input, src, op)
    if input.ndim == 0:  # torch treats a 0-d tensor as 1-d here
        return d, index.reshape(-1), src.reshape(-1)[:index.numel()]
    return d, index, _leading(src, index._data.shape)


def scatter(input, dim, index, src=None, *, value=None, reduce=None) -> Tensor:
    """``input`` with ``out[.., index[i][j], ..] = src[i][j]`` along ``dim`` (a copy). ``src``
    may be a tensor (cut to ``index``'s shape) or a number; ``reduce='add'`` or
    ``'multiply'`` combines instead of overwriting.

    Example: ``tensorix.zeros(3).scatter(0, tensorix.tensor([2, 0]), tensorix.tensor([5., 6.]))``
    is ``tensor([6., 0., 5.])``.
    """
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter(): missing argument 'src' (a Tensor) or 'value' (a number)")
    if not isinstance(src, Tensor):
        check_tensor(input, "scatter")
        src = lift(src, input._dtype, input, "scatter", "value").expand(tuple(index.shape))
    if reduce is not None:
        modes = {"add": "sum", "multiply": "prod"}
        if reduce not in modes:
            raise RuntimeError(f"scatter(): reduce argument must be either add or multiply, "
                               f"got {reduce}")
        return scatter_reduce(input, dim, index, src, modes[reduce])
    d, index, src = _scatter_args(input, dim, index, src, "scatter")
    if input.ndim == 0:
        return Scatter.apply(input.reshape(1), d, index, src).reshape(())
    return Scatter.apply(input, d, index, src)


def scatter_add(input, dim, index, src) -> Tensor:
    """``input`` with ``out[.., index[i][j], ..] += src[i][j]`` along ``dim``; duplicate
    indices add up. Its gradient for ``src`` is :func:`gather`.

    Example: ``tensorix.zeros(3).scatter_add(0, tensorix.tensor([0, 0]), tensorix.ones(2))``
    is ``tensor([2., 0., 0.])``.
    """
    d, index, src = _scatter_args(input, dim, index, src, "scatter_add")
    if input.ndim == 0:
        return ScatterAdd.apply(input.reshape(1), d, index, src).reshape(())
    return ScatterAdd.apply(input, d, index, src)


def _multiply_at(out, ix, vals):
    """``multiply.at`` in rounds of distinct targets: the k-th write to each position happens
    in round k. CuPy has ``ufunc.at`` only for add/subtract/maximum/minimum, so the one
    portable path is used on every backend."""
    xp = backend.array_module(out)
    flat = xp.ravel_multi_index(xp.broadcast_arrays(*ix), out.shape).reshape(-1)
    vals = xp.broadcast_to(vals, xp.broadcast_arrays(*ix)[0].shape).reshape(-1)
    order = xp.argsort(flat, kind="stable")
    sorted_flat = flat[order]
    starts = xp.concatenate([xp.ones(min(flat.size, 1), dtype=bool),
                             sorted_flat[1:] != sorted_flat[:-1]])
    group_start = xp.nonzero(starts)[0][xp.cumsum(starts) - 1]
    rank = xp.empty_like(order)
    rank[order] = xp.arange(flat.size) - group_start
    view = out.reshape(-1)  # out is a fresh contiguous copy, so this is a view
    for r in range(int(rank.max()) + 1 if flat.size else 0):
        sel = rank == r
        view[flat[sel]] *= vals[sel]


def _identity(reduce, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    big = np.inf if dtype.category >= 2 else np.iinfo(dtype.np).max
    return -big if reduce == "amax" else big


class ScatterReduce(Function):
    """``scatter_reduce``: combine ``src`` into ``input`` at ``index`` with sum, prod, mean,
    amax or amin; ``include_self=False`` leaves the old values out where something lands."""

    @staticmethod
    def forward(ctx, a, dim, index, src, reduce, include_self):
        xp = a.xp
        ix = _full_index(xp, index._data, dim)
        out = a._data.copy()
        if not include_self:
            out[ix] = _identity(reduce, a._dtype)
        if reduce == "prod":
            _multiply_at(out, ix, src._data)
        else:
            ufunc = {"sum": xp.add, "mean": xp.add, "amax": xp.maximum,
                     "amin": xp.minimum}[reduce]
            ufunc.at(out, ix, src._data)
        hit = xp.zeros(out.shape, dtype=xp.int64)
        xp.add.at(hit, ix, 1)
        ctx.mask = _make(hit > 0)
        if reduce == "mean":
            count = xp.maximum(hit + (1 if include_self else 0), 1).astype(out.dtype)
            out = out // count if a._dtype.category < 2 else out / count
            ctx.count = _make(count)
        res = _make(out)
        ctx.dim, ctx.index, ctx.reduce, ctx.include_self = dim, index, reduce, include_self
        ctx.save_for_backward(a, src, res)
        return res

    @staticmethod
    def backward(ctx, g):
        a, src, out = ctx.saved_tensors
        grads = _SR_GRADS[ctx.reduce](ctx, g, a, src, out)
        ga, gs = grads
        if not ctx.include_self:
            ga = masked_fill(ga, ctx.mask, 0)
        return ga, None, None, gs, None, None


def _sr_sum(ctx, g, a, src, out):
    return g, Gather.apply(g, ctx.dim, ctx.index)


def _sr_mean(ctx, g, a, src, out):
    gn = g / ctx.count
    return gn, Gather.apply(gn, ctx.dim, ctx.index)


def _sr_prod(ctx, g, a, src, out):
    """torch's rule: exclusive products for zeros (a single zero in a group gets the product of
    the others; two or more zeros give zero)."""
    dim, index, incl = ctx.dim, ctx.index, ctx.include_self
    xp = a.xp
    masked_self = masked_fill(a, _make(a._data == 0), 1)
    grad_self = g * scatter_reduce(masked_self, dim, index, src, "prod",
                                   include_self=incl) / masked_self
    src_zero = _make(src._data == 0)
    zeros_at = xp.zeros(a._data.shape, dtype=xp.int64)
    xp.add.at(zeros_at, _full_index(xp, index._data, dim), src_zero._data)
    single = _make(src_zero._data & (xp.take_along_axis(zeros_at, index._data, dim) == 1))
    masked_src_result = scatter_reduce(a, dim, index, masked_fill(src, single, 1), "prod",
                                       include_self=incl)
    grad_src = _where(single, Gather.apply(g * masked_src_result, dim, index),
                      Gather.apply(g * out, dim, index) / masked_fill(src, src_zero, 1))
    return grad_self, grad_src


def _sr_minmax(ctx, g, a, src, out):
    """The gradient is shared evenly between the elements equal to the result."""
    dim, index = ctx.dim, ctx.index
    self_is = a._data == out._data
    if not ctx.include_self:
        self_is &= ~ctx.mask._data
    self_is = _make(self_is.astype(a._data.dtype))
    src_is = _make((src._data == a.xp.take_along_axis(out._data, index._data, dim)).astype(
        a._data.dtype))
    share = g / scatter_add(self_is, dim, index, src_is)
    return self_is * share, src_is * Gather.apply(share, dim, index)


_SR_GRADS = {"sum": _sr_sum, "mean": _sr_mean, "prod": _sr_prod, "amax": _sr_minmax,
             "amin": _sr_minmax}


def _where(cond, a, b):
    return where(cond, a, b)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True) -> Tensor:
    """``input`` with each ``src[i][j]`` combined into ``out[.., index[i][j], ..]`` by
    ``reduce`` (``'sum'``, ``'prod'``, ``'mean'``, ``'amax'``, ``'amin'``); with
    ``include_self=False`` the old value of a position that receives anything is left out.

    Example: ``tensorix.zeros(2).scatter_reduce(0, tensorix.tensor([0, 0, 1]),
    tensorix.tensor([1., 3., 2.]), 'amax', include_self=False)`` is ``tensor([3., 2.])``.
    """
    if reduce not in _REDUCES:
        raise RuntimeError(f"scatter_reduce(): reduce argument must be either sum, prod, mean, "
                           f"amax or amin, got {reduce}")
    check_tensor(src, "scatter_reduce", "src")
    d, index, src = _scatter_args(input, dim, index, src, "scatter_reduce")
    if input.ndim == 0:
        return ScatterReduce.apply(input.reshape(1), d, index, src, reduce,
                                   bool(include_self)).reshape(())
    return ScatterReduce.apply(input, d, index, src, reduce, bool(include_self))


# -- index_* along one dim -----------------------------------------------------------------------
def _dim_ix(xp, index, dim):  # xp unused: the signature of _full_index, for _Put.at
    return (slice(None),) * dim + (index,)


class IndexSelect(Function):
    _codes = "move"  # storage codes: runs on the codes (autograd/dispatch.py)

    @staticmethod
    def forward(ctx, a, dim, index):
        ctx.dim, ctx.index, ctx.shape = dim, index, a._data.shape
        return a.xp.take(a._data, index._data, axis=dim)

    @staticmethod
    def backward(ctx, g):
        return IndexAdd.apply(g.new_zeros(ctx.shape), ctx.dim, ctx.index, g), None, None


def _index_args(input, dim, index, op, negative=False):
    check_tensor(input, op)
    _check_index(index, op, int32=True)
    same_device(op, input, index)
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, got {index.ndim} dims")
    d = norm_dim(dim, input.ndim, op)
    _check_bounds(index, input._data.shape[d] if input.ndim else 1, d, op, negative)
    return d, index.reshape(-1)


def index_select(input, dim, index) -> Tensor:
    """The entries of ``dim`` listed in the 1-d integer ``index`` (repeats allowed), as a copy:
    that dim gets ``len(index)``.

    Example: ``tensorix.arange(6).reshape(2, 3).index_select(1, tensorix.tensor([2, 0]))``
    is ``[[2, 0], [5, 3]]``.
    """
    d, index = _index_args(input, dim, index, "index_select")
    if input.ndim == 0:
        return IndexSelect.apply(input.reshape(1), 0, index).reshape(())
    return IndexSelect.apply(input, d, index)


class IndexAdd(_PutAdd):
    at, take = staticmethod(_dim_ix), IndexSelect


class IndexCopy(_Put):
    at = staticmethod(_dim_ix)

    @staticmethod
    def backward(ctx, g):
        ga = IndexFill.apply(g, ctx.dim, ctx.index, g.new_zeros(())) \
            if ctx.needs_input_grad[0] else None
        gs = IndexSelect.apply(g, ctx.dim, ctx.index) if ctx.needs_input_grad[3] else None
        return ga, None, None, gs


class IndexFill(_Put):
    at = staticmethod(_dim_ix)

    @staticmethod
    def backward(ctx, g):
        ga = gv = None
        if ctx.needs_input_grad[0]:
            ga = IndexFill.apply(g, ctx.dim, ctx.index, g.new_zeros(()))
        if ctx.needs_input_grad[3]:  # each filled slot once, even if index repeats
            n = g._data.shape[ctx.dim]
            uniq = _make(ctx.index.xp.unique(ctx.index._data % max(n, 1)))
            gv = IndexSelect.apply(g, ctx.dim, uniq).sum()
        return ga, None, None, gv


def _source_args(input, dim, index, source, op):
    d, index = _index_args(input, dim, index, op)
    check_tensor(source, op, "source")
    if input._dtype is not source._dtype:
        raise RuntimeError(f"{op}(): self ({input._dtype.name}) and source "
                           f"({source._dtype.name}) must have the same scalar type")
    shape, sshape = input._data.shape or (1,), source._data.shape or (1,)
    if len(shape) != len(sshape) or any(a != b for k, (a, b) in enumerate(zip(shape, sshape))
                                        if k != d):
        raise RuntimeError(f"{op}(): source tensor shape must match self tensor shape, "
                           f"excluding the specified dimension. Got self.shape = "
                           f"{list(input._data.shape)} source.shape = "
                           f"{list(source._data.shape)}")
    if sshape[d] != index._data.size:
        raise RuntimeError(f"{op}(): Number of indices ({index._data.size}) should be equal to "
                           f"source.size(dim): ({sshape[d]}), for dim: {d}")
    return d, index, source


def _on_1d(fn, input, d, index, extra):
    """Apply a dim-wise primitive, treating a 0-d tensor as 1-d like PyTorch."""
    if input.ndim == 0:
        if fn is not IndexFill:
            extra = extra.reshape(1)
        return fn.apply(input.reshape(1), 0, index, extra).reshape(())
    return fn.apply(input, d, index, extra)


def index_add(input, dim, index, source, *, alpha=1) -> Tensor:
    """``input`` with ``alpha * source[.., i, ..]`` added to slice ``index[i]`` of ``dim``
    (duplicates add up). ``source`` has ``input``'s shape with ``len(index)`` at ``dim``.

    Example: ``tensorix.zeros(3).index_add(0, tensorix.tensor([0, 0]), tensorix.ones(2))``
    is ``tensor([2., 0., 0.])``.
    """
    d, index, source = _source_args(input, dim, index, source, "index_add")
    if alpha != 1:
        source = source * alpha
    return _on_1d(IndexAdd, input, d, index, source)


def index_copy(input, dim, index, source) -> Tensor:
    """``input`` with slice ``index[i]`` of ``dim`` replaced by ``source[.., i, ..]``.

    Example: ``tensorix.zeros(3).index_copy(0, tensorix.tensor([2]), tensorix.ones(1))``
    is ``tensor([0., 0., 1.])``.
    """
    d, index, source = _source_args(input, dim, index, source, "index_copy")
    return _on_1d(IndexCopy, input, d, index, source)


def _scalar_value(value, input, op):
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"{op}(): {op} only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.ndim} dimension(s).")
    return lift(value, input._dtype, input, op, "value")


def index_fill(input, dim, index, value) -> Tensor:
    """``input`` with the slices ``index`` of ``dim`` set to ``value`` (a number or a 0-d
    tensor, which then gets the gradient).

    Example: ``tensorix.ones(2, 3).index_fill(1, tensorix.tensor([0, 2]), -1.)``.
    """
    d, index = _index_args(input, dim, index, "index_fill", negative=True)
    value = _scalar_value(value, input, "index_fill")
    return _on_1d(IndexFill, input, d, index, value)


# -- index_put / setitem -------------------------------------------------------------------------
class IndexPut(Function):
    """``out = input`` with ``out[index] = value`` (or ``+=`` with ``accumulate``), value
    broadcast to the indexed shape; setitem and ``index_put`` share it."""

    @staticmethod
    def _codes(args):
        """Storage codes: a write moves bytes; accumulating is a sum, which the CPU rounds per
        element, so it is refused (autograd/dispatch.py)."""
        return None if args[3] else "move"

    @staticmethod
    def forward(ctx, a, value, index, accumulate, op, *tensors):
        # the index's tensors are arguments (a traced graph feeds the new ones), as GetItem's
        index = index.rebind(tensors, a.device)
        ctx.index, ctx.accumulate, ctx.tensors = index, accumulate, tensors
        out = a._data.copy()
        try:
            index.scatter(out, value._data, accumulate)
        except ValueError:
            shape = index.get(a._data).shape
            raise RuntimeError(f"{op}(): shape mismatch: value tensor of shape "
                               f"{list(value._data.shape)} cannot be broadcast to indexing "
                               f"result of shape {list(shape)}") from None
        return out

    @staticmethod
    def backward(ctx, g):
        ga = gv = None
        tensors = ctx.tensors
        if ctx.needs_input_grad[0]:
            ga = g if ctx.accumulate else \
                IndexPut.apply(g, g.new_zeros(()), ctx.index, False, "index_put", *tensors)
        if ctx.needs_input_grad[1]:
            gv = GetItem.apply(g, ctx.index, *tensors)
        return (ga, gv) + (None,) * (3 + len(tensors))


def index_put_value(input, index, value) -> Tensor:
    """``input`` with ``input[index] = value`` applied, out of place (setitem's core; the
    value is cast to ``input``'s dtype and broadcast)."""
    index = parse_index(input, index, "setitem")
    value = lift(value, input.dtype, input, "setitem", "value")
    return IndexPut.apply(input, value, index, False, "setitem", *index.tensors)


def index_put(input, indices, values, accumulate=False) -> Tensor:
    """``input`` with ``input[indices] = values`` (``+=`` with ``accumulate=True``, where
    repeated indices add up); ``indices`` is a tuple of integer or boolean tensors.

    Example: ``tensorix.zeros(3).index_put((tensorix.tensor([0, 0]),), tensorix.ones(2),
    accumulate=True)`` is ``tensor([2., 0., 0.])``.
    """
    check_tensor(input, "index_put")
    if not isinstance(indices, (tuple, list)) or not all(
            isinstance(i, Tensor) or i is None for i in indices):
        raise TypeError("index_put(): argument 'indices' must be a tuple of Tensors")
    check_tensor(values, "index_put", "values")
    if values._dtype is not input._dtype:
        raise RuntimeError(f"index_put(): Index put requires the source and destination "
                           f"dtypes match, got {input._dtype.name} for the destination and "
                           f"{values._dtype.name} for the source.")
    index = parse_index(input, tuple(slice(None) if i is None else i for i in indices),
                        "index_put")
    return IndexPut.apply(input, values, index, bool(accumulate), "index_put", *index.tensors)


# -- masked ops ------------------------------------------------------------------------------------
def _check_mask(mask, op):
    check_tensor(mask, op, "mask")
    if mask._dtype is not dt.bool:
        raise RuntimeError(f"{op}(): {op} only supports boolean masks, but got mask with "
                           f"dtype {mask._dtype.name}")


def masked_fill(input, mask, value) -> Tensor:
    """``input`` with ``value`` (a number or 0-d tensor) where the bool ``mask`` (broadcast)
    is True. Example: ``x.masked_fill(x < 0, 0.)``."""
    check_tensor(input, "masked_fill")
    _check_mask(mask, "masked_fill")
    value = _scalar_value(value, input, "masked_fill")
    return _where(mask, value, input)


class MaskedScatter(Function):
    """Positions where ``mask`` holds take ``source``'s elements in row-major order."""

    @staticmethod
    def forward(ctx, a, mask, source):
        xp = a.xp
        shape = np.broadcast_shapes(a._data.shape, mask._data.shape)
        m = xp.broadcast_to(mask._data, shape)
        k = int(m.sum())
        if k > source._data.size:
            raise RuntimeError(f"masked_scatter(): Number of elements of source "
                               f"({source._data.size}) < number of ones in mask ({k})")
        out = xp.broadcast_to(a._data, shape).copy()
        out[m] = source._data.reshape(-1)[:k]
        ctx.mask, ctx.k, ctx.sshape = _make(m), k, source._data.shape
        return out

    @staticmethod
    def backward(ctx, g):
        ga = gs = None
        if ctx.needs_input_grad[0]:
            ga = masked_fill(g, ctx.mask, 0)
        if ctx.needs_input_grad[2]:
            from .shape import pad

            n = int(np.prod(ctx.sshape, dtype=np.int64))
            gs = pad(getitem(g, ctx.mask), (0, n - ctx.k)).reshape(ctx.sshape)
        return ga, None, gs


def masked_scatter(input, mask, source) -> Tensor:
    """``input`` with the positions where ``mask`` holds filled, in order, from ``source``'s
    elements (``source`` needs at least as many elements as ``mask`` has True values).

    Example: ``tensorix.zeros(3).masked_scatter(tensorix.tensor([True, False, True]),
    tensorix.tensor([1., 2.]))`` is ``tensor([1., 0., 2.])``.
    """
    check_tensor(input, "masked_scatter")
    _check_mask(mask, "masked_scatter")
    check_tensor(source, "masked_scatter", "source")
    same_device("masked_scatter", input, mask, source)
    if source._dtype is not input._dtype:
        raise RuntimeError(f"masked_scatter(): expected self and source to have same dtypes "
                           f"but got {input._dtype.name} and {source._dtype.name}")
    return MaskedScatter.apply(input, mask, source)


def masked_select(input, mask) -> Tensor:
    """A 1-d copy of the elements where the bool ``mask`` (broadcast with ``input``) holds.
    Example: ``x.masked_select(x > 0)``."""
    check_tensor(input, "masked_select")
    check_tensor(mask, "masked_select", "mask")
    if mask._dtype is not dt.bool:
        raise RuntimeError(f"masked_select(): expected BoolTensor for mask, got "
                           f"{mask._dtype.name}")
    shape = tuple(np.broadcast_shapes(input._data.shape, mask._data.shape))
    return getitem(input.expand(shape), mask.expand(shape))


# -- take, nonzero ------------------------------------------------------------------------------
def take(input, index) -> Tensor:
    """Elements of ``input`` viewed as 1-d, at integer ``index`` (output has its shape).

    Example: ``tensorix.tensor([[4, 3], [5, 6]]).take(tensorix.tensor([0, 3]))`` is
    ``tensor([4, 6])``.
    """
    check_tensor(input, "take")
    _check_index(index, "take", int32=True)
    n = input.numel()
    if index._data.size:
        lo, hi = int(index._data.min()), int(index._data.max())
        if hi >= n or lo < -n:
            raise IndexError(f"take(): out of range: tried to access index "
                             f"{hi if hi >= n else lo} on a tensor of {n} elements.")
    # a Gather with the index as a tensor (wrapped by ops): a traced graph reads the index
    # rather than baking its example value into a getitem's position table
    flat = Gather.apply(input.reshape(-1), 0, index.reshape(-1) % max(n, 1))
    return flat.reshape(tuple(index.shape))


def take_along_dim(input, indices, dim=None) -> Tensor:
    """:func:`gather` with broadcasting between ``input`` and ``indices`` outside ``dim``;
    with ``dim=None`` both are flattened first (pairs with ``argmax``/``argsort`` outputs).

    Example: ``x.take_along_dim(x.argsort(dim=1), dim=1)`` sorts each row.
    """
    check_tensor(input, "take_along_dim")
    _check_index(indices, "take_along_dim")
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    d = norm_dim(dim, input.ndim, "take_along_dim", scalar=False)
    if input.ndim != indices.ndim:
        raise RuntimeError(f"take_along_dim(): input and indices should have the same number "
                           f"of dimensions, but got {input.ndim} dimensions for input, and "
                           f"{indices.ndim} dimensions for indices")
    shape = []
    for k, (a, b) in enumerate(zip(input._data.shape, indices._data.shape)):
        if k != d and a != b and 1 not in (a, b):
            raise RuntimeError(f"take_along_dim(): The size of tensor a ({a}) must match the "
                               f"size of tensor b ({b}) at non-singleton dimension {k}")
        shape.append(max(a, b) if 0 not in (a, b) else 0)
    ishape = tuple(s if k != d else input._data.shape[d] for k, s in enumerate(shape))
    jshape = tuple(s if k != d else indices._data.shape[d] for k, s in enumerate(shape))
    return gather(input.expand(ishape), d, indices.expand(jshape))


class Nonzero(Function):
    _differentiable = False

    @staticmethod
    def forward(ctx, a):
        xp = a.xp
        if a._data.ndim == 0:
            return xp.zeros((int(a._data != 0), 0), dtype=xp.int64)
        return xp.stack(xp.nonzero(a._data), axis=-1).astype(xp.int64)


def nonzero(input, *, as_tuple=False):
    """Indices of non-zero elements: an ``(n, ndim)`` int64 tensor, or a tuple of ``ndim``
    1-d tensors with ``as_tuple=True`` (a 0-d input counts as 1-d there).

    Example: ``tensorix.tensor([0, 3, 0, 5]).nonzero()`` is ``[[1], [3]]``.
    """
    check_tensor(input, "nonzero")
    out = Nonzero.apply(input)
    if as_tuple:
        if input.ndim == 0:
            return (Nonzero.apply(input.reshape(1)).reshape(-1),)
        return tuple(out[:, i] for i in range(input.ndim))
    return out


def argwhere(input) -> Tensor:
    """``nonzero(input)``: an ``(n, ndim)`` int64 tensor of the non-zero positions."""
    return nonzero(input)


def nonzero_static(input, *, size, fill_value=-1) -> Tensor:
    """:func:`nonzero` with a fixed number of rows: ``(size, input.ndim)`` int64 indices,
    truncated or padded with ``fill_value`` (a shape known in advance, for compiled code).

    Example: ``tensorix.nonzero_static(tensorix.tensor([0, 1, 0, 2]), size=3)`` is
    ``[[1], [3], [-1]]``.
    """
    check_tensor(input, "nonzero_static")
    if not isinstance(size, (int, np.integer)) or size < 0:
        raise RuntimeError("nonzero_static(): 'size' must be an non-negative integer")
    return NonzeroStatic.apply(input, int(size), fill_value)


class NonzeroStatic(Function):
    """nonzero_static's ``(size, ndim)`` positions: a primitive with a fixed output shape, so a
    traced graph recomputes them (as raw arrays wrapped outside the dispatcher, a compiled call
    replayed the example's)."""

    _differentiable = False

    @staticmethod
    def forward(ctx, a, size, fill_value):
        xp = a.xp
        found = xp.argwhere(a._data).astype(np.int64)[:size]
        out = xp.full((size, a._data.ndim), fill_value, dtype=np.int64)
        out[:found.shape[0]] = found
        return out


TENSOR_METHODS = {
    "gather": gather, "scatter": scatter, "scatter_add": scatter_add,
    "scatter_reduce": scatter_reduce, "index_select": index_select, "index_add": index_add,
    "index_copy": index_copy, "index_fill": index_fill, "index_put": index_put,
    "masked_fill": masked_fill, "masked_scatter": masked_scatter,
    "masked_select": masked_select, "take": take, "take_along_dim": take_along_dim,
    "nonzero": nonzero, "argwhere": argwhere, "nonzero_static": nonzero_static,
    **{f.__name__ + "_": inplace.make(f) for f in (
        scatter, scatter_add, scatter_reduce, index_add, index_copy, index_fill, index_put,
        masked_fill, masked_scatter)},
}
