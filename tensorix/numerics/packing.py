"""Packed storage for sub-byte codes: fp4 two per byte, fp6 four per three bytes.

* fp4 (R1): element ``2i`` in the low nibble and ``2i+1`` in the high nibble by default
  (``order="low_first"``, PyTorch ``float4_e2m1fn_x2`` and torchao); ``order="high_first"``
  is the other convention some code uses. The order is an explicit parameter.
* fp6 [P]: there is no agreed bit order. Ours is little-endian: the four codes form the 24-bit
  word ``c0 | c1 << 6 | c2 << 12 | c3 << 18``, stored low byte first. Provisional until a
  consumer fixes an interchange order.

Packing works along the last axis, whose length must be a multiple of 2 (fp4) or 4 (fp6), or
pass ``pad=True`` to pad with zero codes; unpacking takes the original length ``n`` to drop
the padding. Tensors in, Tensors out (uint8); arrays in, arrays out.

Example::

    >>> pack_fp4(np.array([0x1, 0x2, 0xF], np.uint8), pad=True)
    array([33, 15], dtype=uint8)
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor
from ._xp import raw, xp_of

__all__ = ["pack_fp4", "unpack_fp4", "pack_fp6", "unpack_fp6"]


def _codes(codes, op, width, group, pad):
    c = raw(codes)
    if np.dtype(c.dtype).kind not in "ui":
        raise TypeError(f"{op}(): codes must be an unsigned integer array, got dtype {c.dtype}")
    if c.ndim == 0:
        raise ValueError(f"{op}(): codes must have at least one dimension")
    xp = xp_of(c)
    if c.size and bool((c.astype(np.int64) >> width).any()):
        raise ValueError(f"{op}(): codes must fit in {width} bits (high bits zero)")
    c = c.astype(np.uint8)
    rem = c.shape[-1] % group
    if rem:
        if not pad:
            raise ValueError(f"{op}(): the last dimension ({c.shape[-1]}) must be a multiple of "
                             f"{group}; pass pad=True to pad with zero codes")
        widths = [(0, 0)] * (c.ndim - 1) + [(0, group - rem)]
        c = xp.pad(c, widths)
    return c, xp


def _order(order, op):
    if order not in ("low_first", "high_first"):
        raise ValueError(f"{op}(): argument 'order' must be 'low_first' or 'high_first', got "
                         f"{order!r}")
    return order == "low_first"


def _pack_fp4(codes, order="low_first", pad=False):
    low_first = _order(order, "pack_fp4")
    c, _ = _codes(codes, "pack_fp4", 4, 2, pad)
    even, odd = c[..., 0::2], c[..., 1::2]
    out = (even | (odd << 4)) if low_first else ((even << 4) | odd)
    return out.astype(np.uint8)


def _unpack_fp4(packed, n=None, order="low_first"):
    low_first = _order(order, "unpack_fp4")
    p, xp = _codes(packed, "unpack_fp4", 8, 1, False)
    lo, hi = p & 0x0F, p >> 4
    first, second = (lo, hi) if low_first else (hi, lo)
    out = xp.stack([first, second], axis=-1).reshape(p.shape[:-1] + (2 * p.shape[-1],))
    return _cut(out, n, "unpack_fp4")


def _cut(out, n, op):
    if n is None:
        return out
    if not 0 <= n <= out.shape[-1]:
        raise ValueError(f"{op}(): n = {n} is outside [0, {out.shape[-1]}]")
    return out[..., :n]


def _pack_fp6(codes, pad=False):
    c, xp = _codes(codes, "pack_fp6", 6, 4, pad)
    g = c.reshape(c.shape[:-1] + (-1, 4)).astype(np.uint32)
    w = g[..., 0] | (g[..., 1] << 6) | (g[..., 2] << 12) | (g[..., 3] << 18)
    out = xp.stack([w & 0xFF, (w >> 8) & 0xFF, w >> 16], axis=-1).astype(np.uint8)
    return out.reshape(c.shape[:-1] + (-1,))


def _unpack_fp6(packed, n=None):
    p, xp = _codes(packed, "unpack_fp6", 8, 3, False)
    b = p.reshape(p.shape[:-1] + (-1, 3)).astype(np.uint32)
    w = b[..., 0] | (b[..., 1] << 8) | (b[..., 2] << 16)
    out = xp.stack([(w >> s) & 0x3F for s in (0, 6, 12, 18)], axis=-1).astype(np.uint8)
    return _cut(out.reshape(p.shape[:-1] + (-1,)), n, "unpack_fp6")


class PackFp4(Function):
    """pack_fp4 on a Tensor: a primitive (codes have no gradient), so a compiled call packs the
    codes it is given (the wrapped raw array was the example's to a trace)."""

    _differentiable = False

    @staticmethod
    def forward(ctx, codes, order, pad):
        return _pack_fp4(codes._data, order, pad)


def pack_fp4(codes, order="low_first", pad=False):
    """``(..., n)`` 4-bit codes -> ``(..., ceil(n/2))`` bytes (see the module docstring)."""
    if isinstance(codes, Tensor):
        return PackFp4.apply(codes, order, pad)
    return _pack_fp4(codes, order, pad)


class UnpackFp4(Function):
    """unpack_fp4 on a Tensor: a primitive (codes have no gradient), so a compiled call unpacks
    the bytes it is given (the wrapped raw array was the example's to a trace)."""

    _differentiable = False

    @staticmethod
    def forward(ctx, packed, n, order):
        return _unpack_fp4(packed._data, n, order)


def unpack_fp4(packed, n=None, order="low_first"):
    """``(..., m)`` bytes -> ``(..., 2m)`` 4-bit codes, cut to ``n`` along the last axis."""
    if isinstance(packed, Tensor):
        return UnpackFp4.apply(packed, n, order)
    return _unpack_fp4(packed, n, order)


class PackFp6(Function):
    """pack_fp6 on a Tensor: a primitive (codes have no gradient), so a compiled call packs the
    codes it is given (the wrapped raw array was the example's to a trace)."""

    _differentiable = False

    @staticmethod
    def forward(ctx, codes, pad):
        return _pack_fp6(codes._data, pad)


def pack_fp6(codes, pad=False):
    """``(..., n)`` 6-bit codes -> ``(..., 3 ceil(n/4))`` bytes, little-endian [P]."""
    if isinstance(codes, Tensor):
        return PackFp6.apply(codes, pad)
    return _pack_fp6(codes, pad)


class UnpackFp6(Function):
    """unpack_fp6 on a Tensor: a primitive (codes have no gradient), so a compiled call unpacks
    the bytes it is given (the wrapped raw array was the example's to a trace)."""

    _differentiable = False

    @staticmethod
    def forward(ctx, packed, n):
        return _unpack_fp6(packed._data, n)


def unpack_fp6(packed, n=None):
    """``(..., 3m)`` bytes -> ``(..., 4m)`` 6-bit codes, cut to ``n`` along the last axis."""
    if isinstance(packed, Tensor):
        return UnpackFp6.apply(packed, n)
    return _unpack_fp6(packed, n)
