"""Element casts: exact real input -> format code -> value, with explicit rounding.

``encode`` rounds the exact value of its input once (R2) under one of the modes of R3, applies
the overflow policy of R4 and returns codes (uint8 / uint16, R1); ``decode`` maps codes back to
values exactly; ``quantize`` is the two together ("fake quant", differentiable with a
straight-through gradient on Tensors); ``cast`` gives a Tensor of the format's tensorix dtype.

The rounding itself is ``tensorix/_codec.py``, the one codec every cast uses (``Tensor.to`` on
the CPU and on CUDA too): round-to-odd float32 bits for float64 input, then the integer
algorithm of spec 1.2 or a table of its results; here are the argument checks, the NaN policy,
stochastic rounding and the compiled (numba) fast paths, which give the same codes.

Example::

    >>> encode(np.array([464.0, 465.0]), "fp8_e4m3")          # the tie at 464 goes to 448
    array([126, 127], dtype=uint8)
    >>> encode(np.array([465.0]), "fp8_e4m3", saturate=True)
    array([126], dtype=uint8)
    >>> encode(np.float64(1 + 2**-8 + 2**-30), "bf16")        # single rounding: 0x3F81
    array(16257, dtype=uint16)
"""

from __future__ import annotations

import numpy as np

from .. import _codec
from ..autograd.function import Function
from ..formats import ROUNDING_MODES, get_format
from ..tensor import Tensor, _make
from . import _jit
from ._xp import raw, untraced, xp_of

__all__ = ["encode", "decode", "quantize", "cast", "f32_bits"]


def f32_bits(x):
    """uint32 bits of a float32 that every cast to a <= 22-bit-precision format rounds exactly
    like ``x`` (a Tensor or array): float16/bf16/float32 exactly, float64 (and integers) by
    round-to-odd (spec 1.2). Example: ``f32_bits(np.float64(1 + 2**-30))`` is ``0x3F800001``.
    """
    return _codec.f32_bits(raw(x))


def _encode_table(bits, f, mode, saturate):
    if _jit.usable(bits.size) and xp_of(bits) is np and bits.flags.c_contiguous:
        out = _jit.encode_codes(bits, f, mode, saturate)
        if out is not None:  # the same codes from finer tables, compiled (numba)
            return out
    return _codec.encode_table(bits, f, mode, saturate)


def _bf16_sr(bits, rbits, sr_bits, saturate):
    """f32 -> bf16 SR as in spec 3: ``(bits + r16) >> 16``. bf16 drops the same 16 bits in every
    binade (subnormals included) and the carry walks codes monotonically into Inf, so with
    ``R >= 16`` random bits ``r16 = r >> (R - 16)`` is the general rule exactly."""
    xp = xp_of(bits)
    if xp is np and _jit.usable(bits.size) and bits.flags.c_contiguous and \
            rbits.flags.c_contiguous:  # encode broadcast rbits to bits' shape
        out = _jit.bf16_sr(bits, rbits, sr_bits, saturate)
        if out is not None:  # one compiled pass instead of six NumPy ones
            return out
    r = rbits.astype(np.uint32)
    if sr_bits < 32:
        r = r & np.uint32((1 << sr_bits) - 1)
    out = (bits + (r >> np.uint32(sr_bits - 16))) >> np.uint32(16)
    nan = (bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    out = xp.where(nan, (bits >> np.uint32(16)) | np.uint32(0x7FC0), out)
    if saturate:
        out = xp.where(~nan & ((out & np.uint32(0x7FFF)) == np.uint32(0x7F80)),
                       (out & np.uint32(0x8000)) | np.uint32(0x7F7F), out)
    return out.astype(np.uint16)


def _check_args(f, rounding, rbits, sr_bits, nan_policy, shape):
    if rounding not in ROUNDING_MODES:
        raise ValueError(f"encode(): argument 'rounding' must be one of {ROUNDING_MODES}, "
                         f"got {rounding!r}")
    if nan_policy not in ("raise", "zero"):
        raise ValueError(f"encode(): argument 'nan_policy' must be 'raise' or 'zero', got "
                         f"{nan_policy!r}")
    if f.mbits > 20 or f.emin < -127:
        raise ValueError(f"encode(): format {f.name} is wider than the casts support "
                         "(mbits <= 20)")
    if rounding == "sr":
        if rbits is None:
            raise ValueError("encode(): rounding='sr' needs explicit random bits 'rbits' (a "
                             "uint32 array, e.g. from tensorix.numerics.random_bits)")
        if np.dtype(rbits.dtype).kind not in "ui":
            raise TypeError(f"encode(): argument 'rbits' must be an unsigned integer array, "
                            f"got dtype {rbits.dtype}")
        if not 1 <= sr_bits <= 32:
            raise ValueError(f"encode(): argument 'sr_bits' must be in [1, 32], got {sr_bits}")
        try:
            np.broadcast_shapes(tuple(rbits.shape), tuple(shape))
        except ValueError:
            raise ValueError(f"encode(): rbits of shape {tuple(rbits.shape)} does not "
                             f"broadcast to the input shape {tuple(shape)}") from None


def encode(x, fmt, rounding="rne", saturate=False, rbits=None, nan_policy="raise",
           sr_bits=32):
    """Round ``x`` once to format ``fmt`` and return its codes (uint8, or uint16 for bf16/fp16).

    ``x``: a Tensor or array of any real dtype (float64 is rounded once, not through float32).
    ``rounding``: ``"rne"`` (default), ``"rtz"``, ``"rna"`` (ties away), ``"rup"`` (toward +inf),
    ``"rdn"`` (toward -inf) or ``"sr"`` (stochastic: round up iff ``RNE(frac*2^R) + r >= 2^R``
    with ``r`` the low ``sr_bits`` bits of ``rbits``, which must broadcast to ``x``).
    ``saturate``: overflow and +-Inf give +-max instead of Inf (bf16/fp16/e5m2) or NaN (e4m3);
    fp6/fp4 always saturate. ``nan_policy``: NaN into fp6/fp4 raises ValueError, or with
    ``"zero"`` gives +0. The result is a backend array with the shape of ``x``.

    Example: ``encode(np.array([17., 19.]), "fp8_e4m3")`` is ``[0x58, 0x5A]`` (16 and 20).
    """
    f = get_format(fmt)
    untraced("encode", x, rbits)
    a = raw(x)
    rb = None if rbits is None else raw(rbits)
    _check_args(f, rounding, rb, sr_bits, nan_policy, a.shape)
    xp = xp_of(a)
    if rounding == "rne" and f.name in ("bf16", "fp16"):
        return _codec.encode_array(a, f, saturate=saturate)
    bits = _codec.f32_bits(a)
    if not f.has_nan and nan_policy == "raise" and \
            bool(((bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)).any()):
        raise ValueError(f"encode(): NaN has no encoding in {f.name}; pass nan_policy='zero' "
                         "to map it to +0")
    if rb is not None:
        rb = xp.broadcast_to(rb, bits.shape)
    if rounding == "sr" and f.name == "bf16" and sr_bits >= 16:
        return _bf16_sr(bits, rb, int(sr_bits), bool(saturate))
    if rounding != "sr" and f.bits <= 8 and f.mbits <= 3 and f.kind != "e8m0":
        return _encode_table(bits, f, rounding, bool(saturate))
    code, is_nan, neg = _codec.encode_bits(bits, f, rounding, bool(saturate), rb, int(sr_bits))
    return _codec.finish(code, is_nan, neg, f)


# -- decode ----------------------------------------------------------------------------------
def decode(codes, fmt, out_dtype=np.float32, check=True):
    """Values of ``codes`` in format ``fmt`` as ``out_dtype`` (float32 or float64; exact).

    8-bit and narrower formats decode through a lookup table (the same on both backends), bf16
    by shifting into float32 bits, fp16 through the float16 dtype. ``check`` rejects codes with
    bits above the format's width (R1: high bits zero).
    Example: ``decode(np.array([0x38, 0x7E, 0x7F], np.uint8), "fp8_e4m3")`` is
    ``[1., 448., nan]``.
    """
    f = get_format(fmt)
    untraced("decode", codes)  # returns a backend array: no graph value
    c = raw(codes)
    out = np.dtype(out_dtype)
    if out not in (np.float32, np.float64):
        raise TypeError(f"decode(): argument 'out_dtype' must be float32 or float64, got {out}")
    if np.dtype(c.dtype).kind not in "ui":
        raise TypeError(f"decode(): codes must be an unsigned integer array, got dtype "
                        f"{c.dtype}")
    if check and c.size and bool((c.astype(np.int64) >> f.bits).any()):
        raise ValueError(f"decode(): codes out of range for {f.bits}-bit format {f.name}")
    return _codec.decode_array(c, f, out)


# -- Tensor level ------------------------------------------------------------------------------
def _out_dtype(a):
    return a.dtype if a.dtype in (np.float32, np.float64) else np.dtype(np.float32)


def _with_rbits(kw, rbits):
    """``kw`` with the random bits given to the op as a Tensor argument (an argument, not a
    value in ``kw``, so that a trace records it as a graph input and not the example's)."""
    return kw if rbits is None else {**kw, "rbits": rbits._data}


def _split_rbits(kw):
    """``(rbits as a Tensor or None, kw without it)``: arrays stay in ``kw``."""
    rb = kw.get("rbits")
    if isinstance(rb, Tensor):
        return rb, {**kw, "rbits": None}
    return None, kw


class FakeQuantize(Function):
    """x -> decode(encode(x)); the gradient passes straight through (STE)."""

    @staticmethod
    def forward(ctx, x, rbits, f, kw):
        a = x._data
        return decode(encode(a, f, **_with_rbits(kw, rbits)), f, _out_dtype(a), check=False)

    @staticmethod
    def backward(ctx, g):
        return g, None, None, None


def quantize(x, fmt, rounding="rne", saturate=False, rbits=None, nan_policy="raise",
             sr_bits=32):
    """Fake quantization: the value of ``x`` rounded to ``fmt``, in ``x``'s dtype where that is
    float32/float64 (float32 otherwise). Tensors keep autograd with a straight-through gradient
    (d out / d x = 1). Arguments as in :func:`encode`.

    Example: ``quantize(tensorix.tensor([0.3, 5.0]), "fp4_e2m1")`` is ``tensor([0.5, 4.])``.
    """
    f = get_format(fmt)
    kw = dict(rounding=rounding, saturate=saturate, rbits=rbits, nan_policy=nan_policy,
              sr_bits=sr_bits)
    if isinstance(x, Tensor):
        if not x.dtype.is_floating_point:
            x = x.to(np.float32)
        rb, kw = _split_rbits(kw)
        return FakeQuantize.apply(x, rb, f, kw)
    a = raw(x)
    return decode(encode(a, f, **kw), f, _out_dtype(a), check=False)


class _CastTo(Function):
    @staticmethod
    def forward(ctx, x, rbits, f, kw):
        codes = encode(x._data, f, **_with_rbits(kw, rbits))
        return _make(codes.view(f.tx_dtype.np), f.tx_dtype)

    @staticmethod
    def backward(ctx, g):
        return g, None, None, None  # the engine casts g back to the input's dtype


def cast(x, fmt, rounding="rne", saturate=False, rbits=None, nan_policy="raise", sr_bits=32):
    """``x`` (a Tensor) as a Tensor of the format's tensorix dtype, rounded by the rules of
    :func:`encode` (``Tensor.to`` rounds the same way, RNE, but has no saturation and no other
    modes). Differentiable; the gradient is cast back.

    On GPU only bf16 and fp16 exist as dtypes (CuPy rejects the others): use :func:`encode`
    codes or :func:`quantize` there.
    Example: ``cast(tensorix.tensor([480.]), "fp8_e4m3", saturate=True)`` holds 448.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"cast(): argument 'x' must be a Tensor, not {type(x).__name__}")
    f = get_format(fmt)
    if f.tx_dtype is None:
        raise ValueError(f"cast(): format {f.name} has no tensorix dtype; use encode/quantize")
    if x.device.type != "cpu" and f.name not in ("bf16", "fp16"):
        raise TypeError(f"cast(): {f.tx_dtype.name} has no CuPy dtype; use encode() for codes "
                        "or quantize() for values on the GPU")
    if not x.dtype.is_floating_point:
        x = x.to(np.float64)
    kw = dict(rounding=rounding, saturate=saturate, rbits=rbits, nan_policy=nan_policy,
              sr_bits=sr_bits)
    rb, kw = _split_rbits(kw)
    return _CastTo.apply(x, rb, f, kw)
