"""torch's composites that assemble tensors from others: ``block_diag``, ``cartesian_prod``,
``combinations``, ``vander``, ``row_stack``; the membership test ``isin`` and the index
arithmetic ``unravel_index``. Each is built from
differentiable primitives (pad, cat, meshgrid, index_select, pow), so gradients come free;
``isin`` returns booleans.
"""

from __future__ import annotations

import itertools

from .. import dtypes as dt
from ..autograd.function import Function
from ..tensor import Tensor, _make
from ._common import check_tensor
from .creation import as_tensor, ones_like, zeros
from .indexing import index_select
from .shape import cat, meshgrid, pad, stack, vstack

__all__ = ["block_diag", "cartesian_prod", "combinations", "vander", "row_stack", "isin",
           "unravel_index"]
TENSOR_METHODS: dict = {}


def block_diag(*tensors) -> Tensor:
    """The block-diagonal matrix of ``tensors`` (0-d is 1x1, 1-d a single row, 2-d as is):
    shape ``(sum of rows, sum of columns)``, dtypes promoted. Example:
    ``block_diag(tensorix.ones(1, 2), tensorix.tensor(3.))`` is ``[[1, 1, 0], [0, 0, 3]]``.
    """
    blocks = []
    for i, t in enumerate(tensors):
        check_tensor(t, "block_diag", f"tensors[{i}]")
        if t.ndim > 2:
            raise RuntimeError(f"block_diag(): Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {t.ndim} dimensions")
        blocks.append(t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1
                      else t)
    if not blocks:
        return zeros(1, 0)
    dtype = dt.result_type(*blocks)
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        right = width - left - b.shape[1]
        rows.append(pad(b.to(dtype), (left, right)))
        left += b.shape[1]
    return cat(rows, 0)


def cartesian_prod(*tensors) -> Tensor:
    """All tuples of one element from each 1-d tensor, in lexicographic order: shape
    ``(prod of lengths, len(tensors))`` (a single tensor is returned as is). Example:
    ``cartesian_prod(tensorix.tensor([1, 2]), tensorix.tensor([3, 4]))`` is
    ``[[1, 3], [1, 4], [2, 3], [2, 4]]``."""
    for i, t in enumerate(tensors):
        check_tensor(t, "cartesian_prod", f"tensors[{i}]")
        if t.ndim != 1:
            raise RuntimeError(f"cartesian_prod(): expect a 1D vector, but got shape "
                               f"{list(t.shape)} for tensors[{i}]")
    if len(tensors) == 1:
        return tensors[0]
    if len({t.dtype for t in tensors}) > 1:
        raise RuntimeError("cartesian_prod(): meshgrid expects all tensors to have the same "
                           "dtype")
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False) -> Tensor:
    """The length-``r`` combinations of the elements of the 1-d ``input`` (as
    ``itertools.combinations``, or ``combinations_with_replacement``): shape ``(count, r)``;
    ``r=0`` gives an empty 1-d tensor. Example: ``combinations(tensorix.tensor([1, 2, 3]))``
    is ``[[1, 2], [1, 3], [2, 3]]``."""
    check_tensor(input, "combinations")
    if input.ndim != 1:
        raise RuntimeError(f"combinations(): Expect a 1D vector, but got shape "
                           f"{list(input.shape)}")
    if not isinstance(r, int) or r < 0:
        raise RuntimeError(f"combinations(): Expect a non-negative number, but got {r!r}")
    if r == 0:
        return input[:0]
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = [i for combo in pick(range(input.shape[0]), r) for i in combo]
    xp = input.xp
    index = _make(xp.asarray(idx, dtype=xp.int64)).to(input.device)
    return index_select(input, 0, index).reshape(-1, r)


def vander(x, N=None, increasing=False) -> Tensor:
    """The Vandermonde matrix of the 1-d ``x``: columns ``x**(N-1), ..., x**0`` (or
    increasing powers), shape ``(len(x), N)``, ``N`` defaulting to ``len(x)``. Example:
    ``vander(tensorix.tensor([1, 2, 3]))`` is ``[[1, 1, 1], [4, 2, 1], [9, 3, 1]]``."""
    from .shape import stack

    check_tensor(x, "vander", "x")
    if x.ndim != 1:
        raise RuntimeError(f"vander(): x must be a one-dimensional tensor, got {x.ndim}D")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError(f"vander(): N must be non-negative, got {n}")
    if x.dtype == dt.bool:
        x = x.to(dt.int64)
    # x**0 and x**1 written out: pow's gradient k x^(k-1) is 0/0 at x = 0 for k = 0
    cols = [ones_like(x) if k == 0 else x if k == 1 else x**k for k in range(n)]
    if not cols:
        return x.reshape(-1, 1)[:, :0]
    out = stack(cols if increasing else cols[::-1], 1)
    return out


def isin(elements, test_elements, *, assume_unique=False, invert=False) -> Tensor:
    """Boolean tensor shaped like ``elements``: whether each element occurs in
    ``test_elements`` (either may be a Python scalar; ``invert`` negates). Example:
    ``isin(tensorix.tensor([1, 2, 3]), tensorix.tensor([2]))`` is ``[False, True, False]``."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): at least one of 'elements' and 'test_elements' must be a "
                        "Tensor")
    return IsIn.apply(elements, test_elements, bool(assume_unique), bool(invert))


class IsIn(Function):
    """isin's membership mask: a primitive (no gradient, as in torch), so a traced graph
    recomputes it (as a raw array wrapped outside the dispatcher, a compiled call replayed the
    example's mask). Either operand may be a Python scalar."""

    _differentiable = False

    @staticmethod
    def forward(ctx, elements, test_elements, assume_unique, invert):
        like = elements if isinstance(elements, Tensor) else test_elements
        a = elements._data if isinstance(elements, Tensor) else elements
        b = test_elements._data if isinstance(test_elements, Tensor) else test_elements
        xp = like.xp
        out = xp.isin(xp.asarray(a), xp.asarray(b), assume_unique=assume_unique, invert=invert)
        return _make(xp.asarray(out, dtype=bool), dt.bool)


def row_stack(tensors) -> Tensor:
    """torch's other name for :func:`tensorix.vstack` (rows stacked, 1-d inputs as rows)."""
    return vstack(tensors)


def unravel_index(indices, shape) -> tuple:
    """The coordinates in an array of ``shape`` of the flat (row-major) ``indices``: one
    integer tensor per dimension, each shaped like ``indices``. As torch, indices wrap
    (``-1`` is the last element). Example: ``unravel_index(tensorix.tensor(5), (2, 3))`` is
    ``(tensor(1), tensor(2))``."""
    if not isinstance(indices, Tensor):
        indices = as_tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype.is_complex or indices.dtype == dt.bool:
        raise TypeError(f"unravel_index(): expected 'indices' to be integer dtype, but got "
                        f"{indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"unravel_index(): 'shape' cannot have negative values, but got "
                         f"{shape}")
    flat = indices.to(dt.int64)
    coords = []
    for size in reversed(shape):  # row-major: the last dimension varies fastest
        coords.append(flat % size)
        flat = flat // size
    return tuple(reversed(coords))
