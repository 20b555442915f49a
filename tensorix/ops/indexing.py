"""Indexing ops: setitem (index_put_value), gather/scatter, index_* and masked_* families,
take_along_dim, nonzero.
"""

from __future__ import annotations

from .. import backend
from ..autograd.function import Function
from ..tensor import Tensor, _make
from ._common import lift
from .movement import GetItem, _raw_index

__all__ = ["nonzero"]


class IndexPutValue(Function):
    """``out = input`` with ``out[index] = value`` (value broadcast); the out-of-place half of
    ``input[index] = value``."""

    @staticmethod
    def forward(ctx, a, value, index):
        ctx.index = index
        out = a._data.copy()
        try:
            out[index] = value._data
        except (IndexError, ValueError) as e:
            raise type(e)(f"setitem(): {e} (tensor shape {list(a._data.shape)}, value shape "
                          f"{list(value._data.shape)})") from None
        return out

    @staticmethod
    def backward(ctx, g):
        na, nv = ctx.needs_input_grad[:2]
        ga = gv = None
        if na:
            ga = IndexPutValue.apply(g, _make(backend.array_module(g._data).zeros(
                (), dtype=g._data.dtype)), ctx.index)
        if nv:
            gv = GetItem.apply(g, ctx.index)
        return ga, gv, None


def index_put_value(input, index, value) -> Tensor:
    """``input`` with ``input[index] = value`` applied, out of place (setitem's core)."""
    index = _raw_index(index)
    value = lift(value, input.dtype, input, "setitem", "value")
    return IndexPutValue.apply(input, value, index)


class Nonzero(Function):
    _differentiable = False

    @staticmethod
    def forward(ctx, a):
        xp = backend.array_module(a._data)
        return xp.stack(xp.nonzero(a._data), axis=-1).astype(xp.int64)


def nonzero(input, *, as_tuple=False):
    """Indices of non-zero elements: an ``(n, ndim)`` int64 tensor, or a tuple of ``ndim``
    1-d tensors with ``as_tuple=True``."""
    out = Nonzero.apply(input)
    if as_tuple:
        if input.ndim == 0:
            return (out.reshape(-1),)
        return tuple(out[:, i] for i in range(input.ndim))
    return out


TENSOR_METHODS = {"nonzero": nonzero}

