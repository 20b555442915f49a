"""OCP Microscaling (MX v1.0) block formats: MXFP8 (E4M3, E5M2), MXFP6, MXFP4 and MXINT8.

A block is ``block`` (32) consecutive elements along one axis sharing one E8M0 scale ``2^k``;
``value = decode(P_i) * 2^k`` (spec section 2). Two scale rules (``scale_mode``):

* ``"floor"`` (OCP v1.0 sample algorithm): ``k = floor(log2 amax) - emax_elem`` from the
  exponent bits (R7), clamped to >= -127. Elements past max saturate (e.g. E4M3 464..512 -> 448);
* ``"rceil"`` (MXFP8 pre-training recipe, Mishra et al. 2025; cuDNN/TE): ``d = fp32(amax /
  max_elem)`` and ``k = ceil(log2 d)`` from d's bits, clamped to [-127, 127].

Elements are ``encode(V * 2^-k, elem, rounding, saturate=True)`` (one exact power-of-two
multiply, then a single rounding). A block holding NaN or +-Inf gets scale 0xFF and decodes to
all NaN; an all-zero block gets scale 0x00. MXINT8 elements are int8 two's complement times
2^-6, encoded with the symmetric clamp [-127, 127]; 0x80 decodes as -2.

Example::

    >>> mx = mx_quantize(np.float32([500, 150, 1, 0.5] + [0] * 28), "fp8_e4m3", scale_mode="floor")
    >>> mx.scale_codes.tolist(), mx_dequantize(mx).numpy()[:4].tolist()
    ([127], [448.0, 144.0, 1.0, 0.5])
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import _codec
from .._codec import decode_table
from ..autograd.function import Function
from ..backend import quiet
from ..formats import get_format
from ..tensor import Tensor, _make
from . import _blocks, _mxfast
from ._xp import raw, untraced, xp_of
from .casting import encode

__all__ = ["MXArray", "MX_ELEMENTS", "mx_quantize", "mx_dequantize", "mx_fake_quant",
           "e8m0_scale_exponents"]

# element name -> (emax_elem, max normal); int8 is the MXINT8 fixed-point element
MX_ELEMENTS = {
    "fp8_e4m3": (8, 448.0), "fp8_e5m2": (15, 57344.0), "fp6_e3m2": (4, 28.0),
    "fp6_e2m3": (2, 7.5), "fp4_e2m1": (2, 6.0), "int8": (0, 127 / 64),
}


def _elem_name(elem, op="mx_quantize"):
    if elem in ("int8", "mxint8"):
        return "int8"
    try:
        name = get_format(elem).name
    except ValueError:
        name = elem
    if name not in MX_ELEMENTS:
        raise ValueError(f"{op}(): element format {name!r} is not an MX element; expected "
                         f"one of {sorted(MX_ELEMENTS)}")
    return name


@dataclasses.dataclass
class MXArray(_blocks.Blocked):
    """Codes and scales of an MX-quantized tensor.

    ``codes``: uint8 Tensor in the input's layout with ``axis`` padded to a multiple of
    ``block`` (one code per byte, high bits zero); ``scale_codes``: uint8 E8M0 codes shaped like
    the input with ``axis`` replaced by the number of blocks; ``shape``: the unpadded shape.
    """

    codes: Tensor
    scale_codes: Tensor
    elem: str
    block: int
    axis: int
    shape: tuple
    scale_mode: str = "rceil"

    @property
    def bits_per_value(self) -> float:
        bits = 8 if self.elem == "int8" else get_format(self.elem).bits
        return bits + 8 / self.block

    def dequantize(self, out_dtype=np.float32) -> Tensor:
        return mx_dequantize(self, out_dtype)

    def __repr__(self):
        return (f"MXArray(elem={self.elem}, block={self.block}, axis={self.axis}, "
                f"shape={tuple(self.shape)}, scale_mode={self.scale_mode})")


# -- scales ------------------------------------------------------------------------------------
def _amax_bits(blocks):
    """Per-block max of |x| as magnitude bits (uint32 for float32, uint64 for float64); bit
    order equals value order for non-negative floats, and NaN/Inf sort on top."""
    if blocks.dtype == np.float64:
        return (blocks.view(np.uint64) & np.uint64(0x7FFFFFFFFFFFFFFF)).max(axis=-1)
    return (blocks.view(np.uint32) & np.uint32(0x7FFFFFFF)).max(axis=-1)


def e8m0_scale_exponents(amax, elem, scale_mode="rceil"):
    """Scale exponents ``k`` (int64, in [-127, 127]) from per-block ``amax`` (float32 or
    float64, finite, >= 0), by the ``floor`` or ``rceil`` rule of spec 2.2. The E8M0 code is
    ``k + 127``."""
    a = raw(amax)
    xp = xp_of(a)
    emax, vmax = MX_ELEMENTS[_elem_name(elem)]
    if scale_mode == "floor":
        if a.dtype == np.float32:
            e_field = (a.view(np.uint32) >> 23).astype(np.int64)
            k = xp.where(e_field == 0, -127, e_field - 127 - emax)
        else:
            m, e = xp.frexp(a)
            k = xp.where(a == 0, -127, e.astype(np.int64) - 1 - emax)
        return xp.clip(k, -127, 127)
    if scale_mode != "rceil":
        raise ValueError(f"mx_quantize(): argument 'scale_mode' must be 'rceil' or 'floor', got "
                         f"{scale_mode!r}")
    if a.dtype == np.float32:
        d = (a / np.float32(vmax)).astype(np.float32)  # one fp32 division, RNE
        b = d.view(np.uint32).astype(np.int64)
        e_field, mant = b >> 23, b & 0x7FFFFF
        code = xp.where(e_field > 0, e_field + (mant != 0), (mant > 0x400000).astype(np.int64))
        return xp.minimum(code, 254) - 127
    d = a / vmax
    m, e = xp.frexp(d)
    k = e.astype(np.int64) - (m == 0.5)  # ceil(log2 d): exact powers of two keep e - 1
    return xp.clip(xp.where(d == 0, -127, k), -127, 127)


def _pow2(k, dtype):
    """2^k as ``dtype`` (exact, including float32's subnormal 2^-127)."""
    xp = xp_of(k)
    return xp.ldexp(xp.ones(k.shape, dtype=dtype), k.astype(np.int32))


# -- element encoding ------------------------------------------------------------------------
def _encode_int8(y, rounding, rbits, sr_bits):
    """MXINT8 elements: round(y * 64) clamped to [-127, 127], as two's-complement bytes."""
    xp = xp_of(y)
    v = y.astype(np.float64) * 64.0  # exact
    if rounding == "rne":
        n = xp.rint(v)
    elif rounding == "rtz":
        n = xp.trunc(v)
    elif rounding == "rna":
        n = xp.sign(v) * xp.floor(xp.abs(v) + 0.5)
    elif rounding == "rup":
        n = xp.ceil(v)
    elif rounding == "rdn":
        n = xp.floor(v)
    elif rounding == "sr":
        fl = xp.floor(v)
        d = xp.rint((v - fl) * 2.0**sr_bits)  # frac has <= 24 bits: exact
        r = (rbits.astype(np.int64) & ((1 << sr_bits) - 1)).astype(np.float64)
        n = fl + (d + r >= 2.0**sr_bits)
    else:
        raise ValueError(f"mx_quantize(): unknown rounding {rounding!r}")
    return xp.clip(n, -127, 127).astype(np.int8).view(np.uint8)


def _int8_table(out):
    vals = np.arange(256, dtype=np.uint8).view(np.int8).astype(np.float64) / 64.0
    return vals.astype(out)


# -- public API ----------------------------------------------------------------------------
def mx_quantize(x, elem="fp8_e4m3", block=32, axis=-1, scale_mode="rceil", rounding="rne",
                flush_fp32_subnorms=False, pad=False, rbits=None, sr_bits=32) -> MXArray:
    """Quantize ``x`` to an MX format along ``axis``; returns an :class:`MXArray`.

    ``elem``: ``"fp8_e4m3"``, ``"fp8_e5m2"``, ``"fp6_e3m2"``, ``"fp6_e2m3"``, ``"fp4_e2m1"`` or
    ``"int8"``. ``scale_mode``: ``"rceil"`` (default, recommended) or ``"floor"`` (OCP).
    ``rounding`` of the elements: ``"rne"``, ``"rna"``, ``"rtz"``, ``"rup"``, ``"rdn"`` or
    ``"sr"`` (with ``rbits`` shaped like the padded, axis-last blocks or broadcastable).
    ``flush_fp32_subnorms``: a block whose amax is a float32 subnormal becomes zero.
    The axis length must be a multiple of ``block`` unless ``pad=True`` (zero padding).
    """
    name = _elem_name(elem)
    untraced("mx_quantize", x, rbits)  # an MXArray of raw codes: no graph value
    a = raw(x)
    if np.dtype(a.dtype).kind != "f" or a.dtype not in (np.float32, np.float64):
        a = a.astype(np.float32)
    xp = xp_of(a)
    blocks, lay = _blocks.to_blocks(a, axis, block, pad, "mx_quantize")
    if scale_mode not in ("rceil", "floor"):
        raise ValueError(f"mx_quantize(): argument 'scale_mode' must be 'rceil' or 'floor', got "
                         f"{scale_mode!r}")
    if xp is np and a.dtype == np.float32 and name != "int8" and rbits is None and \
            _mxfast.eligible(get_format(name), rounding) and blocks.size:
        emax, vmax = MX_ELEMENTS[name]
        x2d = np.ascontiguousarray(blocks).reshape(-1, lay.block)
        codes, scale_codes = _mxfast.quantize_blocks(x2d, get_format(name), emax, vmax,
                                                     scale_mode, rounding, flush_fp32_subnorms)
        return _mx_array(codes.reshape(blocks.shape), scale_codes.reshape(blocks.shape[:-1]),
                         lay, name, scale_mode)
    amax_bits = _amax_bits(blocks)
    special = amax_bits >= (0x7FF0000000000000 if a.dtype == np.float64 else 0x7F800000)
    amax = amax_bits.view(a.dtype)
    if bool(special.any()):
        amax = xp.where(special, 0, amax)
    k = e8m0_scale_exponents(amax, name, scale_mode)
    scale_codes = xp.where(special, 255, k + 127).astype(np.uint8)
    with quiet():
        y = blocks * _pow2(-k, a.dtype)[..., None]
    if bool(special.any()):
        y = xp.where(special[..., None], 0, y)
    if flush_fp32_subnorms:
        tiny = (amax < np.float32(2.0**-126)) & ~special
        y = xp.where(tiny[..., None], 0, y)
    rb = None if rbits is None else xp.broadcast_to(raw(rbits), y.shape)
    if name == "int8":
        codes = _encode_int8(y, rounding, rb, sr_bits)
    else:
        codes = encode(y, name, rounding=rounding, saturate=True, rbits=rb, sr_bits=sr_bits)
    return _mx_array(codes, scale_codes, lay, name, scale_mode)


def _float32_capped(codes, scale_codes, name):
    """``codes`` with every element whose value ``P * 2^k`` passes float32's max lowered to the
    largest element that does not. (Why: ``rceil`` near the top of float32's range picks k with
    ``amax / 2^k`` just under the element's max, and rounding up can reach 2^128, e.g. MXFP4 of
    3e38 -> 4 * 2^126; the block must still dequantize to finite float32 values.)"""
    if name == "int8":  # |P| < 2 and k <= 127: always finite
        return codes
    f = get_format(name)
    xp = xp_of(codes)
    k = scale_codes.astype(np.int64) - 127
    risky = (scale_codes != 255) & (k + f.emax + 1 >= 128)  # |P| < 2^(emax + 1)
    if not bool(risky.any()):
        return codes
    limit = xp.ldexp(np.float64(np.finfo(np.float32).max), -k.astype(np.int32))[..., None]
    sign = np.uint8(f.sign_bit)
    over = risky[..., None] & (_codec.decode_array(codes & ~sign, f, np.float64) > limit)
    cap = _codec.encode_array(xp.broadcast_to(limit, codes.shape), f, rounding="rtz",
                              saturate=True)  # the largest element <= the limit
    return xp.where(over, cap | (codes & sign), codes)


def _mx_array(codes, scale_codes, lay, name, scale_mode):
    """An MXArray from block-shaped ``(..., nblocks, block)`` codes and their scales."""
    codes = _blocks.from_blocks(_float32_capped(codes, scale_codes, name), lay,
                                keep_padding=True)
    return MXArray(_make(codes), _make(_blocks.scales_from_blocks(scale_codes, lay)), name,
                   lay.block, lay.axis, lay.shape, scale_mode)


def _element_table(elem, out, like):
    if elem == "int8":
        t = _int8_table(np.dtype(out))
        return t if xp_of(like) is np else xp_of(like).asarray(t)
    return decode_table(get_format(elem), out, like)


def mx_dequantize(mx: MXArray, out_dtype=np.float32) -> Tensor:
    """The values of an :class:`MXArray`: ``decode(P) * 2^k`` (exact in float32 for finite
    inputs), NaN for blocks with scale 0xFF, padding removed, as a Tensor."""
    if not isinstance(mx, MXArray):
        raise TypeError(f"mx_dequantize(): expected an MXArray, got {type(mx).__name__}")
    untraced("mx_dequantize", mx.codes, mx.scale_codes)
    out = np.dtype(out_dtype)
    name = _elem_name(mx.elem, "mx_dequantize")
    lay = mx.checked_layout("mx_dequantize", 8 if name == "int8" else get_format(name).bits)
    codes = _blocks.field_array(mx.codes)
    xp = xp_of(codes)
    sc = _blocks.scales_to_blocks(_blocks.field_array(mx.scale_codes), lay)
    cb = xp.moveaxis(codes, lay.axis, -1).reshape(sc.shape + (lay.block,))
    if xp is np and out == np.float32 and mx.elem != "int8" and cb.size and \
            _mxfast.eligible(get_format(mx.elem), "rne"):
        vals = _mxfast.dequantize_blocks(np.ascontiguousarray(cb).reshape(-1, lay.block),
                                         np.ascontiguousarray(sc).reshape(-1),
                                         get_format(mx.elem))
        return _make(_blocks.from_blocks(vals.reshape(cb.shape), lay))
    vals = xp.take(_element_table(mx.elem, out, cb), cb)
    k = sc.astype(np.int64) - 127
    with quiet():  # k = 128 (the NaN scale) overflows; it becomes NaN just below
        scale = _pow2(k, out)
        scale = xp.where(sc == 255, np.nan, scale).astype(out)
        vals *= scale[..., None]
    return _make(_blocks.from_blocks(vals, lay))


class _MXFakeQuant(Function):
    @staticmethod
    def forward(ctx, x, kw):
        mx = mx_quantize(x._data, **kw)
        out = mx_dequantize(mx, x._data.dtype if x._data.dtype == np.float64 else np.float32)
        return out._data

    @staticmethod
    def backward(ctx, g):
        return g, None  # straight-through


def mx_fake_quant(x, elem="fp8_e4m3", block=32, axis=-1, scale_mode="rceil", rounding="rne",
                  flush_fp32_subnorms=False, pad=False, rbits=None, sr_bits=32):
    """``mx_dequantize(mx_quantize(x, ...))`` in one call; Tensors get a straight-through
    gradient, arrays stay arrays."""
    kw = dict(elem=elem, block=block, axis=axis, scale_mode=scale_mode, rounding=rounding,
              flush_fp32_subnorms=flush_fp32_subnorms, pad=pad, rbits=rbits, sr_bits=sr_bits)
    if isinstance(x, Tensor):
        return _MXFakeQuant.apply(x, kw)
    a = raw(x)
    out = mx_dequantize(mx_quantize(a, **kw), a.dtype if a.dtype == np.float64 else np.float32)
    return out._data


