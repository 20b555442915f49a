"""Element casts: exact real input -> format code -> value, with explicit rounding.

``encode`` rounds the exact value of its input once (R2) under one of the modes of R3, applies
the overflow policy of R4 and returns codes (uint8 / uint16, R1); ``decode`` maps codes back to
values exactly; ``quantize`` is the two together ("fake quant", differentiable with a
straight-through gradient on Tensors); ``cast`` gives a Tensor of the format's tensorix dtype.

How the rounding is done, once for every format and backend:

* the input becomes a float32 bit pattern that rounds like it: float16/bfloat16/float32 exactly,
  float64 with **round-to-odd** (truncate, OR the sticky bit into the LSB). float32 keeps at
  least two more bits than any target here, so rounding that value once equals rounding the
  float64 once (spec 1.2); ml_dtypes, torch and CuPy instead round float64 twice;
* the integer algorithm of spec 1.2 on those bits: ``e = max(floor(log2|x|), emin)`` from the
  exponent field (R7), ``q = sig / 2^shift``, round ``q`` to an integer ``n`` under the mode,
  and the magnitude code is ``((e - emin) << mbits) + n`` (monotone, so ``n = 2^(m+1)`` simply
  carries into the next binade and past ``max_code`` means overflow);
* fast paths that compute the same function: a 16384-entry table indexed by the float32 sign,
  exponent, four mantissa bits and a sticky bit for 8-bit formats with <= 3 mantissa bits (the
  table itself comes from the integer algorithm), and on the CPU ml_dtypes/NumPy for RNE to
  bf16/fp16 (spec 1.3 verified them at every rounding boundary for float32 input).

Example::

    >>> encode(np.array([464.0, 465.0]), "fp8_e4m3")          # the tie at 464 goes to 448
    array([126, 127], dtype=uint8)
    >>> encode(np.array([465.0]), "fp8_e4m3", saturate=True)
    array([126], dtype=uint8)
    >>> encode(np.float64(1 + 2**-8 + 2**-30), "bf16")        # single rounding: 0x3F81
    array(16257, dtype=uint16)
"""

from __future__ import annotations

import functools

import numpy as np

from ..autograd.function import Function
from ..backend import quiet
from ..tensor import Tensor, _make
from . import _jit
from ._xp import raw, xp_of
from .formats import ROUNDING_MODES, FormatSpec, get_format

__all__ = ["encode", "decode", "quantize", "cast", "f32_bits"]


# -- input -> float32 bits --------------------------------------------------------------------
def f32_bits(x):
    """uint32 bits of a float32 that every cast to a <= 22-bit-precision format rounds exactly
    like ``x``: float16/bf16/float32 exactly, float64 (and integers) by round-to-odd."""
    x = raw(x)
    xp = xp_of(x)
    kind = np.dtype(x.dtype).kind
    if kind == "c":
        raise TypeError("encode(): complex input is not supported; encode .real and .imag")
    if kind in "biu":
        x = x.astype(np.float64)
    if x.dtype == np.float64:
        return _round_to_odd_bits(x, xp)
    if x.dtype == np.float32:
        return x.view(np.uint32)  # same itemsize: a view for any strides
    return x.astype(np.float32).view(np.uint32)


def _round_to_odd_bits(x, xp):
    with quiet():
        f = x.astype(np.float32)  # RNE; fixed up to round-to-odd below
    bits = f.view(np.uint32)
    ax, ab = xp.abs(x), xp.abs(f.astype(np.float64))
    # RNE rounded the magnitude up (or to Inf): step back to the truncation. |x| >= 2^128 stays
    # Inf: it overflows every format here under every mode, as the spec's unbounded exponent says
    too_big = (ab > ax) & (ax < 2.0**128)
    bits = bits - too_big.astype(np.uint32)
    return bits | ((ab < ax) | too_big).astype(np.uint32)  # sticky bit on inexact results


# -- the integer algorithm (spec 1.2) -----------------------------------------------------------
def _round_up(mode, n, rem, shift, neg, rbits, sr_bits):
    """Whether to add one to ``n`` (the truncated ``q``); ``rem`` = the dropped low bits."""
    if mode == "rtz":
        return 0
    if mode == "rup":
        return (rem != 0) & ~neg
    if mode == "rdn":
        return (rem != 0) & neg
    half = np.int64(1) << (shift - 1)
    if mode == "rne":
        return (rem > half) | ((rem == half) & ((n & 1) == 1))
    if mode == "rna":
        return rem >= half
    # sr: d = RNE(frac(q) * 2^R), round up iff d + r >= 2^R (gfloat's Stochastic, R = sr_bits)
    xp = xp_of(n)
    r = rbits.astype(np.int64) & ((1 << sr_bits) - 1)
    t = shift - sr_bits
    tt = xp.maximum(t, 0)
    d_lo = rem << xp.maximum(-t, 0)  # exact when frac(q) has <= R bits
    d0 = rem >> tt
    r2 = rem - (d0 << tt)
    h2 = (np.int64(1) << tt) >> 1
    d_hi = d0 + ((tt > 0) & ((r2 > h2) | ((r2 == h2) & ((d0 & 1) == 1))))
    d = xp.where(t <= 0, d_lo, d_hi)
    return (d + r) >= (1 << sr_bits)


def _encode_bits(bits, f: FormatSpec, mode, saturate, rbits=None, sr_bits=32):
    """Codes (int64) of the float32 bit patterns ``bits``, plus the NaN mask and sign mask."""
    xp = xp_of(bits)
    u = bits.astype(np.int64)
    neg = (u >> 31) == 1
    mag = u & 0x7FFFFFFF
    e_field = mag >> 23
    sig = mag & 0x7FFFFF
    sig = xp.where(e_field > 0, sig | 0x800000, sig)
    e_eff = xp.maximum(e_field, 1)
    e = e_eff - 127
    if f.emin < -126:  # e8m0 reaches below float32's normals: floor(log2) of a subnormal
        sub_e = xp.frexp(sig.astype(np.float64))[1].astype(np.int64) - 150
        e = xp.where(e_field == 0, sub_e, e)
    e = xp.maximum(e, f.emin)
    shift = xp.minimum(e - f.mbits - e_eff + 150, 60)  # >= 23 - mbits; 60 keeps int64 exact
    n = sig >> shift
    rem = sig - (n << shift)
    n = n + _round_up(mode, n, rem, shift, neg, rbits, sr_bits)
    code = ((e - f.emin) << f.mbits) + n
    if f.kind == "e8m0":
        code = code - 1  # no subnormals: E = 0 is the normal 2^-127
    is_nan = mag > 0x7F800000
    over = (code > f.max_code) | (mag == 0x7F800000)
    if f.kind == "finite" or saturate:
        over_code = f.max_code
    else:
        over_code = f.inf_code if f.kind == "ieee" else f.nan_code
    code = xp.where(over, over_code, code)
    if f.kind == "e8m0":
        bad = ~is_nan & (neg | (code < 0))
        if bool(bad.any()):
            raise ValueError("encode(): e8m0 has no code for zero, negative values or values "
                             "<= 2^-128 (under the chosen rounding)")
    return code, is_nan, neg


def _finish(code, is_nan, neg, f: FormatSpec, nan_policy):
    xp = xp_of(code)
    if f.has_nan:
        code = xp.where(is_nan, f.nan_code, code)
    else:
        code = xp.where(is_nan, 0, code)
    if f.signed:
        sign = neg if f.has_nan else (neg & ~is_nan)
        code = code | (sign.astype(np.int64) << (f.bits - 1))
    return code.astype(f.code_dtype)


# -- fast paths ----------------------------------------------------------------------------
@functools.cache
def _table_np(f: FormatSpec, mode: str, saturate: bool):
    """16384 codes, one per (sign, exponent, top-4 mantissa bits, sticky) class of float32.
    Rounding boundaries of a <= 3-mantissa-bit format have bits 18..0 zero, so every member
    of a class rounds alike; the class representative goes through the integer algorithm."""
    k = np.arange(1 << 14, dtype=np.uint32)
    rep = ((k >> 1) << 19) | (k & 1)
    code, is_nan, neg = _encode_bits(rep, f, mode, saturate)
    return _finish(code, is_nan, neg, f, "zero")


_TABLES: dict = {}


def _table(f, mode, saturate, xp):
    if xp is np:
        return _table_np(f, mode, saturate)
    key = (f, mode, saturate, id(xp))
    if key not in _TABLES:
        _TABLES[key] = xp.asarray(_table_np(f, mode, saturate))
    return _TABLES[key]


def _encode_table(bits, f, mode, saturate):
    xp = xp_of(bits)
    if xp is np and _jit.usable(bits.size) and bits.flags.c_contiguous:
        out = _jit.encode_codes(bits, f, mode, saturate)
        if out is not None:  # the same codes from finer tables, compiled (numba)
            return out
    # key = bits >> 18 with bit 18 replaced by "any of bits 18..0 set": (low18 + 0x3FFFF) has
    # bit 18 set exactly when low18 != 0, so four in-place integer passes build the key
    key = bits & np.uint32(0x3FFFF)
    key += np.uint32(0x3FFFF)
    key |= bits
    key >>= np.uint32(18)
    if xp is np:
        key = key.astype(np.intp)  # NumPy's take converts other index dtypes more slowly
    return xp.take(_table(f, mode, saturate, xp), key)


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


def _ml_dtypes_rne(x, f, saturate):
    """RNE to bf16/fp16 by ml_dtypes/NumPy on the CPU (correct for float32 input; float64 goes
    through round-to-odd first for bf16, while NumPy's float64 -> float16 is already single)."""
    if saturate:
        x = np.clip(x, -f.max, f.max)  # Inf -> max, NaN stays NaN
    if f.name == "bf16":
        if x.dtype != np.float32:
            x = f32_bits(x).view(np.float32)
        import ml_dtypes

        return x.astype(ml_dtypes.bfloat16).view(np.uint16)
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float32)
    with quiet():
        return x.astype(np.float16).view(np.uint16)


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
    a = raw(x)
    rb = None if rbits is None else raw(rbits)
    _check_args(f, rounding, rb, sr_bits, nan_policy, a.shape)
    xp = xp_of(a)
    if not f.has_nan and nan_policy == "raise" and np.dtype(a.dtype).kind == "f" and \
            bool(xp.isnan(a).any()):
        raise ValueError(f"encode(): NaN has no encoding in {f.name}; pass nan_policy='zero' "
                         "to map it to +0")
    if rounding == "rne" and xp is np and f.name in ("bf16", "fp16"):
        return _ml_dtypes_rne(a, f, saturate)
    bits = f32_bits(a)
    if rb is not None:
        rb = xp.broadcast_to(rb, bits.shape)
    if rounding == "sr" and f.name == "bf16" and sr_bits >= 16:
        return _bf16_sr(bits, rb, int(sr_bits), bool(saturate))
    if rounding != "sr" and f.bits <= 8 and f.mbits <= 3 and f.kind != "e8m0":
        return _encode_table(bits, f, rounding, bool(saturate))
    code, is_nan, neg = _encode_bits(bits, f, rounding, bool(saturate), rb, int(sr_bits))
    return _finish(code, is_nan, neg, f, nan_policy)


# -- decode ----------------------------------------------------------------------------------
@functools.cache
def _decode_table_np(f: FormatSpec, out: np.dtype):
    vals = np.empty(1 << f.bits, dtype=np.float64)
    half = 1 << (f.bits - 1) if f.signed else 1 << f.bits
    for c in range(half):
        vals[c] = f.value_of_magnitude_code(c)
    if f.signed:
        vals[half:] = -vals[:half]
    if f.inf_code is not None:
        vals[f.inf_code] = np.inf
        vals[f.inf_code | f.sign_bit] = -np.inf
        nan_codes = [c for c in range(1 << f.bits) if (c & ~f.sign_bit) > f.inf_code]
        vals[nan_codes] = np.nan
    elif f.nan_code is not None:
        vals[f.nan_code] = np.nan
        vals[f.nan_code | f.sign_bit] = np.nan  # e8m0: sign_bit is 0, the same code
    if f.signed and f.nan_code is not None:
        vals[f.nan_code | f.sign_bit] = -np.nan
    return vals.astype(out)


def _decode_table(f, out, xp):
    if xp is np:
        return _decode_table_np(f, np.dtype(out))
    key = ("dec", f, np.dtype(out), id(xp))
    if key not in _TABLES:
        _TABLES[key] = xp.asarray(_decode_table_np(f, np.dtype(out)))
    return _TABLES[key]


def decode(codes, fmt, out_dtype=np.float32, check=True):
    """Values of ``codes`` in format ``fmt`` as ``out_dtype`` (float32 or float64; exact).

    8-bit and narrower formats decode through a lookup table (the same on both backends), bf16
    by shifting into float32 bits, fp16 through the float16 dtype. ``check`` rejects codes with
    bits above the format's width (R1: high bits zero).
    Example: ``decode(np.array([0x38, 0x7E, 0x7F], np.uint8), "fp8_e4m3")`` is
    ``[1., 448., nan]``.
    """
    f = get_format(fmt)
    c = raw(codes)
    xp = xp_of(c)
    out = np.dtype(out_dtype)
    if out not in (np.float32, np.float64):
        raise TypeError(f"decode(): argument 'out_dtype' must be float32 or float64, got {out}")
    if np.dtype(c.dtype).kind not in "ui":
        raise TypeError(f"decode(): codes must be an unsigned integer array, got dtype "
                        f"{c.dtype}")
    if check and c.size and bool((c.astype(np.int64) >> f.bits).any()):
        raise ValueError(f"decode(): codes out of range for {f.bits}-bit format {f.name}")
    if f.bits <= 8:
        return xp.take(_decode_table(f, out, xp), c.astype(np.uint8))
    with quiet():  # signalling-NaN codes warn when widened
        if f.name == "bf16":
            return (c.astype(np.uint32) << 16).view(np.float32).astype(out, copy=False)
        if f.name == "fp16":
            return c.astype(np.uint16).view(np.float16).astype(out)
    return xp.take(_decode_table(f, out, xp), c.astype(np.intp))  # study formats <= 16 bits


# -- Tensor level ------------------------------------------------------------------------------
def _out_dtype(a):
    return a.dtype if a.dtype in (np.float32, np.float64) else np.dtype(np.float32)


class FakeQuantize(Function):
    """x -> decode(encode(x)); the gradient passes straight through (STE)."""

    @staticmethod
    def forward(ctx, x, f, kw):
        a = x._data
        return decode(encode(a, f, **kw), f, _out_dtype(a), check=False)

    @staticmethod
    def backward(ctx, g):
        return g, None, None


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
        return FakeQuantize.apply(x, f, kw)
    a = raw(x)
    return decode(encode(a, f, **kw), f, _out_dtype(a), check=False)


class _CastTo(Function):
    @staticmethod
    def forward(ctx, x, f, kw):
        codes = encode(x._data, f, **kw)
        return _make(codes.view(f.tx_dtype.np), f.tx_dtype)

    @staticmethod
    def backward(ctx, g):
        return g, None, None  # the engine casts g back to the input's dtype


def cast(x, fmt, rounding="rne", saturate=False, rbits=None, nan_policy="raise", sr_bits=32):
    """``x`` (a Tensor) as a Tensor of the format's tensorix dtype, rounded by the rules of
    :func:`encode` (unlike ``Tensor.to``, which inherits ml_dtypes' double rounding from float64
    and has no saturation). Differentiable; the gradient is cast back.

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
    return _CastTo.apply(x, f, kw)
