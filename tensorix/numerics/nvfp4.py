"""NVFP4 (NVIDIA) and HiFloat4 [P] block formats.

**NVFP4** (spec 1.6): fp4_e2m1 elements in blocks of 16 along the reduction axis, one E4M3
scale per block (sign unused) and one float32 scale per tensor, 4.5 bits per value. Every step
is one float32 operation rounded to nearest, in the order of the recipe (the order is part of
bit-exactness)::

    s_enc = (6 * 448) / amax_t         s_dec = 1 / s_enc
    s_b   = e4m3_rne_sat((amax_b / 6) * s_enc)
    s_enc_b = s_enc / s_b  (0 if s_b == 0)       q = e2m1_sat(x * s_enc_b)
    x_hat = (q * s_b) * s_dec

``per_tensor=False`` is the single-level variant (``s_enc = s_dec = 1``). An all-zero tensor
uses ``s_enc = 1``.

**HiFloat4** (HiF4, Huawei arXiv 2602.11287) is **provisional [P]**: the element encoding, the
E6M2 scale and the rounding of each level come from a third-party emulation, not the paper
(spec 1.7, open item 2). A unit is 64 elements with one E6M2 base scale (bias 48, no
subnormals, range [2^-48, 49152]), 8 one-bit exponents (per 8 values) and 16 one-bit exponents
(per 4 values); elements are S1P2 (sign and a magnitude in {0, 0.25, ..., 1.75}). Do not call it
bit-exact before the paper's definition is confirmed.

Example::

    >>> q = nvfp4_quantize(np.float32(np.linspace(-3, 3, 32)))
    >>> nvfp4_dequantize(q).shape
    (32,)
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..backend import quiet
from ..tensor import Tensor, _make
from . import _blocks, _jit
from ._xp import raw, untraced, xp_of
from .casting import decode, encode
from .packing import pack_fp4

__all__ = ["NVFP4Array", "nvfp4_quantize", "nvfp4_dequantize", "HiF4Array", "hif4_quantize",
           "hif4_dequantize"]

F32 = np.float32


@dataclasses.dataclass
class NVFP4Array(_blocks.Blocked):
    """fp4_e2m1 ``codes`` (uint8, one per byte, input layout with the axis padded to 16), E4M3
    ``scale_codes`` (uint8, axis -> number of blocks) and the float32 ``tensor_scale``
    (``s_dec``)."""

    codes: Tensor
    scale_codes: Tensor
    tensor_scale: float
    axis: int
    shape: tuple
    block: int = 16

    def packed(self, order="low_first") -> Tensor:
        """The element codes two per byte along the (padded) axis."""
        c = _blocks.field_array(self.codes)
        xp = xp_of(c)
        moved = xp.moveaxis(c, self.axis, -1)
        return _make(xp.moveaxis(pack_fp4(moved, order=order), -1, self.axis))

    def dequantize(self) -> Tensor:
        return nvfp4_dequantize(self)


def nvfp4_quantize(x, axis=-1, per_tensor=True, rounding="rne", pad=False, rbits=None,
                   block=16) -> NVFP4Array:
    """Quantize ``x`` to NVFP4 along ``axis`` (16-element blocks); returns an
    :class:`NVFP4Array`. ``rounding`` applies to the elements (``"sr"`` with ``rbits`` is the
    gradient recipe); scales are always RNE and saturating. A trace breaks the graph here
    (the tensor scale is a Python float of the data)."""
    untraced("nvfp4_quantize", x, rbits)
    a = raw(x).astype(F32)
    xp = xp_of(a)
    block = _blocks.check_block(block, "nvfp4_quantize")
    if xp is np and rounding == "rne" and rbits is None and _jit.usable(a.size):
        blocks, lay = _blocks.to_blocks(a, axis, block, pad, "nvfp4_quantize")
        r = _jit.nvfp4_quantize(np.ascontiguousarray(blocks).reshape(-1, block), per_tensor)
        if r is not None and r[2] != 0:  # the same steps compiled (numba); raises for NaN/Inf
            # as below; s_dec = 0 means s_enc overflowed: the general path rescales first
            codes, s_b_codes, s_dec = r
            return NVFP4Array(
                _make(_blocks.from_blocks(codes.reshape(blocks.shape), lay, keep_padding=True)),
                _make(_blocks.scales_from_blocks(s_b_codes.reshape(blocks.shape[:-1]), lay)),
                float(s_dec), lay.axis, lay.shape, block)
    if not bool(xp.isfinite(a).all()):
        raise ValueError("nvfp4_quantize(): input must be finite (NVFP4 has no NaN/Inf)")
    blocks, lay = _blocks.to_blocks(a, axis, block, pad, "nvfp4_quantize")
    amax_b = xp.abs(blocks).max(axis=-1)
    with quiet():
        if per_tensor:
            amax_t = F32(xp.abs(a).max().item()) if a.size else F32(0)  # .item(): CuPy too
            s_enc = F32(F32(6 * 448) / amax_t) if amax_t > 0 else F32(1)
            if not np.isfinite(s_enc):
                return _rescaled(a, amax_t, axis, rounding, pad, rbits, block)
            s_dec = F32(F32(1) / s_enc)
        else:
            s_enc = s_dec = F32(1)
        s_b_codes = encode((amax_b / F32(6)).astype(F32) * s_enc, "fp8_e4m3", saturate=True)
        s_b = decode(s_b_codes, "fp8_e4m3")
        s_enc_b = xp.where(s_b == 0, F32(0), s_enc / xp.where(s_b == 0, F32(1), s_b))
        y = blocks * s_enc_b.astype(F32)[..., None]
    rb = None if rbits is None else xp.broadcast_to(raw(rbits), y.shape)
    codes = encode(y, "fp4_e2m1", rounding=rounding, saturate=True, rbits=rb)
    return NVFP4Array(_make(_blocks.from_blocks(codes, lay, keep_padding=True)),
                      _make(_blocks.scales_from_blocks(s_b_codes, lay)), float(s_dec),
                      lay.axis, lay.shape, block)


def _rescaled(a, amax_t, axis, rounding, pad, rbits, block):
    """NVFP4 of a tensor so small (amax < 2688 / float32 max, about 7.9e-36) that ``s_enc``
    overflows float32: the recipe is scale-invariant under exact power-of-two scaling, so it
    runs on ``a * 2^k`` with amax in [1, 2) (exact: scaling up in float64) and the tensor
    scale absorbs ``2^-k`` (kept as a Python float, where float32 would underflow). The codes
    are those the recipe gives in unbounded exponent range."""
    k = 1 - int(np.frexp(np.float64(amax_t))[1])
    up = (a.astype(np.float64) * 2.0**k).astype(F32)
    q = nvfp4_quantize(up, axis, True, rounding, pad, rbits, block)
    q.tensor_scale = q.tensor_scale * 2.0**-k
    return q


def nvfp4_dequantize(q: NVFP4Array) -> Tensor:
    """``x_hat = (q * s_b) * s_dec`` in float32 (``q * s_b`` is exact), padding removed."""
    if not isinstance(q, NVFP4Array):
        raise TypeError(f"nvfp4_dequantize(): expected an NVFP4Array, got {type(q).__name__}")
    untraced("nvfp4_dequantize", q.codes, q.scale_codes)
    lay = q.checked_layout("nvfp4_dequantize", 4)
    sc = _blocks.scales_to_blocks(_blocks.field_array(q.scale_codes), lay)
    codes = _blocks.field_array(q.codes)
    xp = xp_of(codes)
    cb = xp.moveaxis(codes, lay.axis, -1).reshape(sc.shape + (lay.block,))
    s_dec = q.tensor_scale
    if xp is np and float(F32(s_dec)) == s_dec and _jit.usable(cb.size):
        vals = _jit.nvfp4_dequantize(np.ascontiguousarray(cb).reshape(-1, lay.block),
                                     np.ascontiguousarray(sc).reshape(-1), q.tensor_scale)
        if vals is not None:  # the same float32 steps compiled (numba)
            return _make(_blocks.from_blocks(vals.reshape(cb.shape), lay))
    vals = decode(cb, "fp4_e2m1", check=False) * decode(sc, "fp8_e4m3")[..., None]
    # (q * s_b) * s_dec: the float64 product is exact, so one rounding to float32, as the
    # float32 product of the recipe rounds, also where s_dec is no float32 (_rescaled)
    return _make(_blocks.from_blocks((vals.astype(np.float64) * s_dec).astype(F32), lay))


# -- HiFloat4 [P] ------------------------------------------------------------------------------
def _bf16(v):
    return decode(encode(v, "bf16"), "bf16")


def _e6m2(v):
    """RNE to 2 mantissa bits, clamped to [2^-48, 49152]; returns (value, code)."""
    xp = xp_of(v)
    m, e = xp.frexp(v.astype(np.float64))  # v = m 2^e, m in [0.5, 1)
    n = xp.rint(m * 8)  # 1.M with 2 mantissa bits: 2m in [1, 2) times 4, to nearest even
    val = xp.ldexp(n, e - 3)
    val = xp.clip(val, 2.0**-48, 49152.0)
    m2, e2 = xp.frexp(val)
    code = ((e2.astype(np.int64) - 1 + 48) << 2) | (xp.rint(m2 * 8).astype(np.int64) - 4)
    return val.astype(F32), code.astype(np.uint8)


@dataclasses.dataclass
class HiF4Array(_blocks.Blocked):
    """HiFloat4 [P]: 4-bit S1P2 ``codes`` (sign bit 3, magnitude index 0..7 = m/0.25), per
    64-unit E6M2 ``scale_codes``, and the level bits ``l2`` (per 8) and ``l3`` (per 4)."""

    codes: Tensor
    scale_codes: Tensor
    l2: Tensor
    l3: Tensor
    axis: int
    shape: tuple
    block: int = 64

    def dequantize(self) -> Tensor:
        return hif4_dequantize(self)


def hif4_quantize(x, axis=-1, pad=False) -> HiF4Array:
    """HiFloat4 [P] quantization in 64-element units along ``axis`` (spec 1.7); a trace breaks
    the graph here (computed on raw arrays)."""
    untraced("hif4_quantize", x)
    a = raw(x).astype(F32)
    xp = xp_of(a)
    if not bool(xp.isfinite(a).all()):
        raise ValueError("hif4_quantize(): input must be finite (HiFloat4 has no NaN/Inf)")
    blocks, lay = _blocks.to_blocks(a, axis, 64, pad, "hif4_quantize")
    ab = xp.abs(blocks)
    amax = ab.max(axis=-1)
    sf = _bf16(amax * _bf16(xp.asarray(F32(1 / 7))))
    sf, sf_code = _e6m2(sf)
    zero = amax == 0
    sf = xp.where(zero, F32(2.0**-48), sf)
    sf_code = xp.where(zero, 0, sf_code).astype(np.uint8)
    rec = _bf16(F32(1) / sf)
    g8 = ab.reshape(ab.shape[:-1] + (8, 8)).max(axis=-1)
    l2 = (g8 * rec[..., None] >= 4).astype(np.int64)
    g4 = ab.reshape(ab.shape[:-1] + (16, 4)).max(axis=-1)
    l3 = (g4 * rec[..., None] / xp.repeat(2.0 ** l2, 2, axis=-1) >= 2).astype(np.int64)
    lvl = xp.repeat(xp.repeat(l2, 2, axis=-1) + l3, 4, axis=-1)
    m = ab * rec[..., None] / (2.0 ** lvl).astype(F32)
    idx = xp.minimum(xp.floor(m * 4 + 0.5), 7).astype(np.uint8)  # half-up to 0.25; 2 -> 1.75
    codes = idx | (xp.signbit(blocks) & (idx > 0)).astype(np.uint8) << 3
    return HiF4Array(_make(_blocks.from_blocks(codes, lay, keep_padding=True)),
                     _make(_blocks.scales_from_blocks(sf_code, lay)),
                     _make(l2.astype(np.uint8)), _make(l3.astype(np.uint8)), lay.axis, lay.shape)


def hif4_dequantize(h: HiF4Array) -> Tensor:
    """``sign * m * 2^(L2+L3) * sf`` in float32 [P]."""
    if not isinstance(h, HiF4Array):
        raise TypeError(f"hif4_dequantize(): expected a HiF4Array, got {type(h).__name__}")
    untraced("hif4_dequantize", h.codes, h.scale_codes, h.l2, h.l3)
    lay = h.checked_layout("hif4_dequantize", 4)
    sc = _blocks.scales_to_blocks(_blocks.field_array(h.scale_codes), lay).astype(np.int64)
    xp = xp_of(sc)
    sf = xp.ldexp((4 + (sc & 3)).astype(F32) / 4, ((sc >> 2) - 48).astype(np.int32))
    codes = _blocks.field_array(h.codes)
    cb = xp.moveaxis(codes, lay.axis, -1).reshape(sc.shape + (64,)).astype(np.int64)
    l2, l3 = _blocks.field_array(h.l2), _blocks.field_array(h.l3)
    lvl = xp.repeat(xp.repeat(l2.astype(np.int64), 2, axis=-1) + l3, 4, axis=-1)
    mag = (cb & 7).astype(F32) * F32(0.25) * (2.0 ** lvl).astype(F32) * sf[..., None]
    vals = xp.where((cb >> 3) == 1, -mag, mag)
    return _make(_blocks.from_blocks(vals, lay))
