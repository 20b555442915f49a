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

__all__ = ["Layout", "Blocked", "check_block", "check_axis", "to_blocks", "from_blocks",
           "as_tensor_field", "field_array"]


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


def check_block(block, op) -> int:
    """``block`` as an int, or tensorix's error: every block format's ``block`` argument
    passes here (0 would divide by zero and -1 reshape, deep inside NumPy)."""
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)):
        raise TypeError(f"{op}(): argument 'block' must be a positive int, got "
                        f"{type(block).__name__}")
    if block <= 0:
        raise ValueError(f"{op}(): argument 'block' must be a positive int, got {block}")
    return int(block)


def check_axis(axis, ndim, op) -> int:
    """``axis`` normalised to [0, ndim), or tensorix's error."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or \
            not -ndim <= axis < ndim:
        raise ValueError(f"{op}(): axis {axis!r} is out of range for a {ndim}-d input")
    return int(axis) % ndim


class Blocked:
    """Base of the quantized-array dataclasses (MXArray, NVFP4Array, HiF4Array): their
    :class:`Layout`, from their ``shape``, ``axis`` and ``block`` fields."""

    @property
    def layout(self) -> Layout:
        return Layout(tuple(self.shape), self.axis, self.block)

    def checked_layout(self, op, code_bits=8) -> Layout:
        """The layout, after checking that the fields agree with each other (a hand-made or
        edited array gets tensorix's error, not NumPy's): ``block``, ``axis`` and ``shape``
        valid, uint8 ``codes`` of the padded shape below ``2^code_bits``, uint8
        ``scale_codes`` of the shape with ``axis`` -> number of blocks."""
        name = type(self).__name__
        block = check_block(self.block, op)
        try:
            shape = tuple(int(n) for n in self.shape)
        except TypeError:
            raise TypeError(f"{op}(): {name}.shape must be a tuple of ints, got "
                            f"{self.shape!r}") from None
        if not shape or min(shape) < 0:
            raise ValueError(f"{op}(): {name}.shape must be a non-empty shape, got {shape}")
        lay = Layout(shape, check_axis(self.axis, len(shape), op), block)
        padded = shape[:lay.axis] + (lay.padded,) + shape[lay.axis + 1:]
        blocks = shape[:lay.axis] + (lay.nblocks,) + shape[lay.axis + 1:]
        for field, want in (("codes", padded), ("scale_codes", blocks)):
            arr = field_array(getattr(self, field))
            if getattr(arr, "dtype", None) != np.uint8 or tuple(arr.shape) != want:
                raise ValueError(f"{op}(): {name}.{field} must be uint8 of shape {want} (from "
                                 f"shape={shape}, axis={lay.axis}, block={block}), got "
                                 f"{getattr(arr, 'dtype', type(arr).__name__)} of shape "
                                 f"{tuple(getattr(arr, 'shape', ()))}")
        codes = field_array(self.codes)
        if code_bits < 8 and codes.size and bool((codes >> code_bits).any()):
            raise ValueError(f"{op}(): {name}.codes holds invalid codes (>= {1 << code_bits}) "
                             f"for {code_bits}-bit elements")
        return lay


def to_blocks(a, axis, block, pad, op):
    """``a`` with ``axis`` moved last, padded and split: ``(..., nblocks, block)``."""
    if a.ndim == 0:
        raise ValueError(f"{op}(): input must have at least one dimension")
    lay = Layout(tuple(a.shape), check_axis(axis, a.ndim, op), check_block(block, op))
    if lay.length % lay.block and not pad:
        raise ValueError(f"{op}(): the length of axis {axis} ({lay.length}) must be a multiple "
                         f"of the block size {block}; pass pad=True to zero-pad it")
    from ._xp import xp_of

    xp = xp_of(a)
    m = xp.moveaxis(a, lay.axis, -1)
    if lay.padded != lay.length:
        widths = [(0, 0)] * (m.ndim - 1) + [(0, lay.padded - lay.length)]
        m = xp.pad(m, widths)
    return m.reshape(m.shape[:-1] + (lay.nblocks, lay.block)), lay


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
