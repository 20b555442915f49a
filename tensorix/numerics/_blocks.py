"""Blocking along one axis, shared by the block formats (MX, NVFP4, HiFloat4).

A block format groups ``block`` consecutive elements along ``axis``. We move that axis last,
zero-pad it to a multiple of ``block`` when allowed (zeros cannot change a block's amax) and
view the data as ``(..., nblocks, block)``; ``unblock`` undoes exactly that. The layout is
recorded in a small :class:`Layout`, so codes can be stored in the input's own layout (padded
axis) with scales shaped like the input with the axis replaced by its block count.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..tensor import Tensor, _make

__all__ = ["Layout", "to_blocks", "from_blocks", "as_tensor_field", "field_array"]


@dataclasses.dataclass(frozen=True)
class Layout:
    shape: tuple  # the unpadded input shape
    axis: int  # normalised, non-negative
    block: int

    @property
    def length(self) -> int:
        return self.shape[self.axis]

    @property
    def padded(self) -> int:
        return -(-self.length // self.block) * self.block

    @property
    def nblocks(self) -> int:
        return self.padded // self.block


class Blocked:
    """Base of the quantized-array dataclasses (MXArray, NVFP4Array, HiF4Array): their
    :class:`Layout`, from their ``shape``, ``axis`` and ``block`` fields."""

    @property
    def layout(self) -> Layout:
        return Layout(tuple(self.shape), self.axis, self.block)


def to_blocks(a, axis, block, pad, op):
    """``a`` with ``axis`` moved last, padded and split: ``(..., nblocks, block)``."""
    if a.ndim == 0:
        raise ValueError(f"{op}(): input must have at least one dimension")
    if not isinstance(axis, (int, np.integer)) or not -a.ndim <= axis < a.ndim:
        raise ValueError(f"{op}(): axis {axis} is out of range for a {a.ndim}-d input")
    lay = Layout(tuple(a.shape), int(axis) % a.ndim, int(block))
    if lay.length % block and not pad:
        raise ValueError(f"{op}(): the length of axis {axis} ({lay.length}) must be a multiple "
                         f"of the block size {block}; pass pad=True to zero-pad it")
    from ._xp import xp_of

    xp = xp_of(a)
    m = xp.moveaxis(a, lay.axis, -1)
    if lay.padded != lay.length:
        widths = [(0, 0)] * (m.ndim - 1) + [(0, lay.padded - lay.length)]
        m = xp.pad(m, widths)
    return m.reshape(m.shape[:-1] + (lay.nblocks, block)), lay


def from_blocks(b, lay: Layout, keep_padding=False):
    """Inverse of :func:`to_blocks` for element-shaped ``(..., nblocks, block)`` data."""
    from ._xp import xp_of

    xp = xp_of(b)
    m = b.reshape(b.shape[:-2] + (lay.padded,))
    if not keep_padding:
        m = m[..., :lay.length]
    return xp.moveaxis(m, -1, lay.axis)


def scales_from_blocks(s, lay: Layout):
    """``(..., nblocks)`` per-block data into the input layout (axis -> nblocks)."""
    from ._xp import xp_of

    return xp_of(s).moveaxis(s, -1, lay.axis)


def scales_to_blocks(s, lay: Layout):
    from ._xp import xp_of

    return xp_of(s).moveaxis(s, lay.axis, -1)


def as_tensor_field(arr):
    return _make(arr)


def field_array(t):
    return t._data if isinstance(t, Tensor) else t
