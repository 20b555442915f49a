"""Structured writes and diagonals: diag, diag_embed, diagflat, the ``*_scatter`` family
(slice, select, diagonal, as_strided), fill_diagonal_, put, index_reduce, renorm and
``torch.cross``.

Every ``*_scatter`` op is "``input`` with one view of it replaced by ``src``", out of place:
the graph node is :class:`ViewScatter`, the same node an in-place write to a view records
(``inplace.CopySlices``), so the gradient is ``g`` with the window zeroed for ``input`` and
``g``'s window for ``src``, itself differentiable. ``diag``/``diag_embed`` are a
``diagonal_scatter`` into zeros.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..tensor import Tensor, _make
from ._common import check_tensor, lift, norm_dim
from .creation import zeros
from .indexing import Scatter, ScatterAdd, _source_args, scatter_reduce
from .inplace import CopySlices, apply_inplace, make
from .linalg_norm import cross as linalg_cross
from .linalg_norm import vector_norm
from .movement import as_strided, diagonal, getitem
from .pointwise import where

__all__ = ["diag", "diag_embed", "diagflat", "slice_scatter", "select_scatter",
           "diagonal_scatter", "as_strided_scatter", "put", "index_reduce", "renorm", "cross"]


class ViewScatter(CopySlices):
    """``input`` with the window ``view_fn(input)`` replaced by ``src`` (a copy)."""

    @classmethod
    def name(cls) -> str:
        return "ViewScatterBackward"


def _scatter_view(op, input, src, view_fn):
    check_tensor(input, op, "input")
    check_tensor(src, op, "src")
    window = view_fn(input)
    if tuple(window.shape) != tuple(src.shape):
        raise RuntimeError(f"{op}(): expected src to have a size equal to the slice of self. "
                           f"src size = {list(src.shape)}, slice size = {list(window.shape)}")
    if src._dtype is not input._dtype:
        src = src.to(input._dtype)
    return ViewScatter.apply(input, src, view_fn)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1) -> Tensor:
    """``input`` with ``input[..., start:end:step, ...]`` (along ``dim``) replaced by ``src``,
    which must have exactly that slice's shape; a copy.

    Example: ``tensorix.slice_scatter(tensorix.zeros(3, 4), tensorix.ones(3, 2), 1, 0, 2)``
    sets the first two columns to one.
    """
    check_tensor(input, "slice_scatter", "input")
    d = norm_dim(dim, input.ndim, "slice_scatter")
    if step <= 0:
        raise RuntimeError(f"slice_scatter(): slice step must be positive, got {step}")
    index = (slice(None),) * d + (slice(start, end, step),)
    return _scatter_view("slice_scatter", input, src, lambda t: getitem(t, index))


def select_scatter(input, src, dim, index) -> Tensor:
    """``input`` with ``input.select(dim, index)`` replaced by ``src`` (of that shape).

    Example: ``tensorix.select_scatter(tensorix.zeros(2, 3), tensorix.ones(3), 0, 1)`` sets
    row 1 to one.
    """
    check_tensor(input, "select_scatter", "input")
    if input.ndim == 0:
        raise IndexError("select_scatter(): select() cannot be applied to a 0-dim tensor.")
    d = norm_dim(dim, input.ndim, "select_scatter")
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select_scatter(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {d}")
    key = (slice(None),) * d + (int(index),)
    return _scatter_view("select_scatter", input, src, lambda t: getitem(t, key))


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1) -> Tensor:
    """``input`` with ``input.diagonal(offset, dim1, dim2)`` replaced by ``src``.

    Example: ``tensorix.diagonal_scatter(tensorix.zeros(3, 3), tensorix.ones(3))`` is the
    identity.
    """
    check_tensor(input, "diagonal_scatter", "input")
    diagonal(input, offset, dim1, dim2)  # argument checks with diagonal's messages
    return _scatter_view("diagonal_scatter", input, src,
                         lambda t: diagonal(t, offset, dim1, dim2))


def as_strided_scatter(input, src, size, stride, storage_offset=0) -> Tensor:
    """``input`` with the strided window ``input.as_strided(size, stride, storage_offset)``
    (over its contiguous memory) replaced by ``src``. Overlapping windows write an unspecified
    one of the values, as in PyTorch.

    Example: ``tensorix.as_strided_scatter(tensorix.zeros(4), tensorix.ones(2), (2,), (2,))``
    is ``[1., 0., 1., 0.]``.
    """
    size, stride = tuple(size), tuple(stride)
    offset = 0 if storage_offset is None else int(storage_offset)
    check_tensor(input, "as_strided_scatter", "input")
    return _scatter_view("as_strided_scatter", input, src,
                         lambda t: as_strided(t.contiguous(), size, stride, offset))


def diag_embed(input, offset=0, dim1=-2, dim2=-1) -> Tensor:
    """A tensor whose ``(dim1, dim2)`` planes hold the last dim of ``input`` on diagonal
    ``offset``, zeros elsewhere; one more dim than ``input``.

    Shapes: ``(2, 3)`` gives ``(2, 3, 3)``; with ``offset=1``, ``(2, 4, 4)``.
    Example: ``tensorix.diag_embed(tensorix.ones(2, 3))`` is two 3x3 identities.
    """
    check_tensor(input, "diag_embed")
    nd = input.ndim + 1
    d1, d2 = norm_dim(dim1, nd, "diag_embed"), norm_dim(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diag_embed(): diagonal dimensions cannot be identical {dim1}, "
                           f"{dim2}")
    shape = list(input.shape)  # at least 1-d: dim1/dim2 index a 2-d or larger result
    n = shape.pop() + abs(int(offset))
    batch = iter(shape)
    out_shape = tuple(n if k in (d1, d2) else next(batch) for k in range(nd))
    base = zeros(out_shape, dtype=input.dtype, device=input.device)
    return ViewScatter.apply(base, input, lambda t: diagonal(t, offset, d1, d2))


def diag(input, diagonal=0) -> Tensor:
    """A 1-d input becomes a square matrix with it on diagonal ``diagonal``; a 2-d input
    gives a copy of that diagonal.

    Example: ``tensorix.diag(tensorix.tensor([1., 2.]))`` is ``[[1., 0.], [0., 2.]]``;
    ``tensorix.diag(tensorix.eye(3), 1)`` is ``[0., 0.]``.
    """
    check_tensor(input, "diag")
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim == 2:
        from .movement import diagonal as _diagonal

        return _diagonal(input, diagonal, 0, 1).clone()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def diagflat(input, offset=0) -> Tensor:
    """The flattened ``input`` on diagonal ``offset`` of a square matrix.

    Example: ``tensorix.diagflat(tensorix.ones(2, 2))`` is the 4x4 identity.
    """
    check_tensor(input, "diagflat")
    return diag_embed(input.reshape(-1), offset, 0, 1)


# -- fill_diagonal_, put, index_reduce ---------------------------------------------------------
def _filled_diagonal(self, fill_value, wrap=False):
    """``self`` with torch's fill_diagonal_ positions set to ``fill_value`` (out of place)."""
    shape = tuple(self.shape)
    if len(shape) < 2:
        raise RuntimeError("fill_diagonal_(): dimensions must larger than 1")
    height, width = shape[0], shape[1]
    if len(shape) > 2 and any(s != height for s in shape[1:]):
        raise RuntimeError("fill_diagonal_(): all dimensions of input must be of equal length")
    numel = int(np.prod(shape))
    step = sum(int(np.prod(shape[i + 1:])) for i in range(len(shape)))  # C-strides summed
    positions = [i * step for i in range(min(height, width))]
    if wrap and len(shape) == 2 and height > width + 1:
        count = (numel + width) // (width + 1) - len(positions)
        positions += [width * (width + 1) + j * step for j in range(count)]
    xp = self.xp
    mask = np.zeros(numel, dtype=bool)
    mask[[p for p in positions if p < numel]] = True
    mask = _make(xp.asarray(mask.reshape(shape)))
    return where(mask, lift(fill_value, self._dtype, self, "fill_diagonal_", "fill_value"),
                 self)


def _fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal (all indices equal) in place; ``wrap=True`` continues the
    diagonal below a tall matrix every ``width + 1`` rows, as NumPy and PyTorch do."""
    check_tensor(self, "fill_diagonal_")
    return apply_inplace(self, _filled_diagonal, fill_value, wrap, op="fill_diagonal_")


def put(input, index, source, accumulate=False) -> Tensor:
    """``input`` (seen flat, row-major) with ``source`` written at the flat positions
    ``index`` (negative ones count from the end); ``accumulate=True`` adds, summing repeats.

    Example: ``tensorix.zeros(2, 2).put(tensorix.tensor([0, 3]), tensorix.ones(2))`` is the
    identity.
    """
    check_tensor(input, "put", "input")
    check_tensor(index, "put", "index")
    check_tensor(source, "put", "source")
    if index._dtype is not dt.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{index._dtype.name}")
    if source._dtype is not input._dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {input._dtype.name} and source.dtype = "
                           f"{source._dtype.name}")
    if index.numel() != source.numel():
        raise RuntimeError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {source.numel()}, "
                           f"index.numel() = {index.numel()}")
    n = input.numel()
    if index.numel():
        bad = index._data[(index._data >= n) | (index._data < -n)]
        if bad.size:
            raise IndexError(f"put(): out of range: tried to access index {int(bad[0])} on a "
                             f"tensor of {n} elements.")
    # Scatter (ScatterAdd) with the index as a tensor: a traced graph reads the index; the
    # gradient for source is the read at index (every repeat gets it, as torch's put)
    put_op = ScatterAdd if accumulate else Scatter
    flat = put_op.apply(input.reshape(-1), 0, index.reshape(-1) % max(n, 1), source.reshape(-1))
    return flat.reshape(tuple(input.shape))


_INDEX_REDUCES = ("prod", "mean", "amax", "amin")


def index_reduce(input, dim, index, source, reduce, *, include_self=True) -> Tensor:
    """``input`` with each slice ``source[.., i, ..]`` (along ``dim``) combined into slice
    ``index[i]`` by ``reduce``: ``'prod'``, ``'mean'``, ``'amax'`` or ``'amin'``; with
    ``include_self=False`` the old values of the slices that receive anything are left out.
    Gradients follow ``scatter_reduce`` (ties share evenly).

    Example: ``tensorix.ones(2).index_reduce(0, tensorix.tensor([0, 0]),
    tensorix.tensor([2., 3.]), 'prod')`` is ``[6., 1.]``.
    """
    if reduce not in _INDEX_REDUCES:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    check_tensor(input, "index_reduce", "input")
    d, index, source = _source_args(input, dim, index, source, "index_reduce")
    if input.ndim == 0:
        return index_reduce(input.reshape(1), 0, index, source.reshape(1), reduce,
                            include_self=include_self).reshape(())
    view = [1] * input.ndim
    view[d] = -1
    spread = index.reshape(view).expand(tuple(source.shape))
    return scatter_reduce(input, d, spread, source, reduce, include_self=include_self)


def renorm(input, p, dim, maxnorm) -> Tensor:
    """Rescale each slice ``input.select(dim, i)`` whose ``p``-norm exceeds ``maxnorm`` to
    norm ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``, as PyTorch); other slices are kept.

    Example: ``tensorix.renorm(x, 2, 0, 1.0)`` caps every row's Euclidean norm at 1.
    """
    check_tensor(input, "renorm")
    if input.ndim < 2:
        raise RuntimeError(f"renorm(): input needs at least 2 dimensions, got {input.ndim} "
                           "dimensions")
    if p <= 0:
        raise RuntimeError("renorm(): non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm(): expected maxnorm to be >= 0 but got {maxnorm}")
    d = norm_dim(dim, input.ndim, "renorm")
    others = tuple(k for k in range(input.ndim) if k != d)
    norm = vector_norm(input, p, others, keepdim=True)
    if norm._dtype is not input._dtype and not input._dtype.is_complex:
        norm = norm.to(input._dtype)
    factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return input * factor


def cross(input, other, dim=None) -> Tensor:
    """``torch.cross``: the cross product of 3-vectors along ``dim``; without ``dim``, the
    first dimension of size 3 (PyTorch's deprecated default; pass ``dim``, or use
    ``tensorix.linalg.cross``, whose default is the last dim).

    Example: ``tensorix.cross(a, b, dim=1)`` for ``(n, 3)`` inputs.
    """
    check_tensor(input, "cross", "input")
    check_tensor(other, "cross", "other")
    if dim is None:
        try:
            shape = np.broadcast_shapes(tuple(input.shape), tuple(other.shape))
        except ValueError:
            shape = tuple(input.shape)
        sizes = [k for k, s in enumerate(shape) if s == 3]
        if not sizes:
            raise RuntimeError("cross(): no dimension of size 3 in input")
        dim = sizes[0]
    return linalg_cross(input, other, dim=dim)


def _methods():
    m = {"diag": diag, "diag_embed": diag_embed, "diagflat": diagflat,
         "slice_scatter": slice_scatter, "select_scatter": select_scatter,
         "diagonal_scatter": diagonal_scatter, "as_strided_scatter": as_strided_scatter,
         "put": put, "index_reduce": index_reduce, "renorm": renorm, "cross": cross,
         "fill_diagonal_": _fill_diagonal_}
    for fn in (put, index_reduce, renorm):
        m[fn.__name__ + "_"] = make(fn)
    return m


TENSOR_METHODS = _methods()
