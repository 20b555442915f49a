"""The one exact codec of the low-precision formats, shared by every cast on every device.

tensorix's results must not depend on which ml_dtypes is installed, and its versions round
differently (0.5/0.6 round float64 twice, through float32; 0.7 rounds once; 0.5.0 rounds E8M0
ties otherwise; their float8 -> int casts and NaN -> fp4 disagree). So every conversion to or
from a low-precision format is computed here, from the format's declaration
(:mod:`tensorix.formats`), by one algorithm on NumPy and CuPy alike:

* the input becomes a float32 bit pattern that rounds like it (:func:`f32_bits`): float16,
  bfloat16 and float32 exactly, float64 by **round-to-odd** (truncate, OR the sticky bit into
  the LSB). float32 keeps at least two bits more than any target here, so rounding that value
  once equals rounding the float64 once (numerics spec 1.2);
* the integer algorithm of spec 1.2 on those bits (:func:`encode_bits`), or a 16384-entry table
  of its results for 8-bit formats with <= 3 mantissa bits (:func:`encode_table`);
* decoding is a table of exact values per code (:func:`decode_array`).

ml_dtypes stays the CPU storage dtype and does one cast itself, float32 -> bfloat16 RNE, which
every version rounds correctly (``tests/numerics/test_cast_reference.py`` checks it at every
rounding boundary against the integer algorithm).

:func:`cast_array` is ``Tensor.to``'s conversion for these formats (CPU arrays and CUDA codes),
``tensorix.numerics.encode`` / ``decode`` add argument checks, rounding modes and compiled
kernels on top. Example::

    >>> from tensorix import _codec, float8_e4m3fn
    >>> _codec.cast_array(np.array([1.0625 + 2**-40]), float8_e4m3fn).astype(float)
    array([1.125])
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

from . import dtypes as dt
from .backend import array_module, quiet
from .dtypes import FormatSpec

__all__ = ["f32_bits", "encode_bits", "finish", "encode_table", "encode_array", "decode_table",
           "decode_table_np", "decode_array", "format_of", "needs_codec", "cast_array"]


# -- input -> float32 bits ---------------------------------------------------------------------
def f32_bits(x):
    """uint32 bits of a float32 that every cast to a <= 22-bit-precision format rounds exactly
    like array ``x``: float16/bf16/float32 exactly, float64 (and integers, through float64) by
    round-to-odd."""
    xp = array_module(x)
    kind = np.dtype(x.dtype).kind
    if kind == "c":
        raise TypeError("encode(): complex input is not supported; encode .real and .imag")
    if kind in "biu":
        x = x.astype(np.float64)
    elif kind != "f" and x.dtype not in dt.LOW_PRECISION_NP:  # e.g. an object array of None
        raise TypeError(f"encode(): argument 'x' must be a real numeric array, got dtype "
                        f"{x.dtype}")
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
    xp = array_module(n)
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


def encode_bits(bits, f: FormatSpec, mode, saturate, rbits=None, sr_bits=32, invalid="raise"):
    """Codes (int64) of the float32 bit patterns ``bits``, plus the NaN mask and sign mask.
    ``invalid``: what e8m0 does with zero, negative and too-small inputs (no code exists):
    ``"raise"`` (ValueError), or ``"nan"`` as a Tensor cast does: NaN for zero and negative
    values, the smallest code (2^-127) for positive values below its rounding range."""
    xp = array_module(bits)
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
        if invalid == "nan":  # a Tensor cast: too small -> 2^-127; zero, negative -> NaN
            code = xp.where(bad, xp.where(neg | (mag == 0), f.nan_code, 0), code)
        elif bool(bad.any()):
            raise ValueError("encode(): e8m0 has no code for zero, negative values or values "
                             "<= 2^-128 (under the chosen rounding)")
    return code, is_nan, neg


def finish(code, is_nan, neg, f: FormatSpec):
    """The codes of :func:`encode_bits` with NaN (+0 where the format has none) and the sign."""
    xp = array_module(code)
    code = xp.where(is_nan, f.nan_code if f.has_nan else 0, code)
    if f.signed:
        sign = neg if f.has_nan else (neg & ~is_nan)
        code = code | (sign.astype(np.int64) << (f.bits - 1))
    return code.astype(f.code_dtype)


# -- tables, cached per format, mode and device -----------------------------------------------
_TABLES: dict = {}


def _on_device(host, like, key):
    """``host`` (a NumPy table) where array ``like`` lives: one transfer per table and device."""
    xp = array_module(like)
    if xp is np:
        return host
    dev = like.device.id
    full_key = key + (id(xp), dev)
    if full_key not in _TABLES:
        with xp.cuda.Device(dev):
            _TABLES[full_key] = xp.asarray(host)
    return _TABLES[full_key]


@functools.cache
def encode_table_np(f: FormatSpec, mode: str, saturate: bool):
    """16384 codes, one per (sign, exponent, top-4 mantissa bits, sticky) class of float32.
    Rounding boundaries of a <= 3-mantissa-bit format have bits 18..0 zero, so every member
    of a class rounds alike; the class representative goes through the integer algorithm."""
    k = np.arange(1 << 14, dtype=np.uint32)
    rep = ((k >> 1) << 19) | (k & 1)
    code, is_nan, neg = encode_bits(rep, f, mode, saturate)
    return finish(code, is_nan, neg, f)


def encode_table(bits, f, mode, saturate):
    """:func:`encode_bits` + :func:`finish` by table lookup (8-bit formats, <= 3 mantissa
    bits, deterministic modes; NaN into fp6/fp4 gives +0)."""
    xp = array_module(bits)
    # key = bits >> 18 with bit 18 replaced by "any of bits 18..0 set": (low18 + 0x3FFFF) has
    # bit 18 set exactly when low18 != 0, so four in-place integer passes build the key
    key = bits & np.uint32(0x3FFFF)
    key += np.uint32(0x3FFFF)
    key |= bits
    key >>= np.uint32(18)
    if xp is np:
        key = key.astype(np.intp)  # NumPy's take converts other index dtypes more slowly
    table = _on_device(encode_table_np(f, mode, saturate), bits, ("enc", f, mode, saturate))
    return xp.take(table, key)


@functools.cache
def decode_table_np(f: FormatSpec, out: np.dtype):
    """The exact value of every code of ``f`` as ``out``."""
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
    with quiet():  # e8m0's 2^127 overflows float16: Inf, as the value rounds
        return vals.astype(out)


def decode_table(f, out, like):
    """:func:`decode_table_np` on the device of array ``like``."""
    out = np.dtype(out)
    return _on_device(decode_table_np(f, out), like, ("dec", f, out.str))


# -- whole conversions -------------------------------------------------------------------------
def _rne_16(x, f, saturate):
    """RNE to bf16/fp16 codes: float32 input by ml_dtypes/NumPy (correct for float32 in every
    version), anything else through round-to-odd float32 first."""
    if x.dtype != np.float32:
        x = f32_bits(x).view(np.float32)
    if saturate:  # in float32, where both formats' max exist (float16 input would clip to Inf)
        x = array_module(x).clip(x, np.float32(-f.max), np.float32(f.max))  # NaN stays NaN
    target = ml_dtypes.bfloat16 if f.name == "bf16" else np.float16
    with quiet():  # overflow to Inf is the rule here, not an accident
        return x.astype(target).view(np.uint16)


def encode_array(a, f: FormatSpec, rounding="rne", saturate=False, rbits=None, sr_bits=32,
                 invalid="raise"):
    """Codes of array ``a`` (any real dtype) in format ``f``, rounded once; no argument checks
    (``tensorix.numerics.encode`` makes them). NaN into fp6/fp4 gives +0."""
    if rounding == "rne" and f.name in ("bf16", "fp16"):
        return _rne_16(a, f, saturate)
    bits = f32_bits(a)
    if rounding != "sr" and f.bits <= 8 and f.mbits <= 3 and f.kind != "e8m0":
        return encode_table(bits, f, rounding, bool(saturate))
    code, is_nan, neg = encode_bits(bits, f, rounding, bool(saturate), rbits, int(sr_bits),
                                    invalid)
    return finish(code, is_nan, neg, f)


def decode_array(codes, f: FormatSpec, out=np.float32):
    """Exact values of unsigned integer ``codes`` of format ``f`` as ``out`` (no checks)."""
    xp = array_module(codes)
    out = np.dtype(out)
    with quiet():  # signalling-NaN codes warn when widened
        if f.name == "bf16":
            return (codes.astype(np.uint32) << 16).view(np.float32).astype(out, copy=False)
        if f.name == "fp16":
            return codes.astype(np.uint16).view(np.float16).astype(out)
    index = codes.astype(np.uint8) if f.bits <= 8 else codes.astype(np.intp)
    return xp.take(decode_table(f, out, codes), index)


def format_of(d: dt.dtype) -> FormatSpec | None:
    """The FormatSpec of tensorix dtype ``d`` where the codec converts it, or None."""
    return d.format if d.low_precision else None


def needs_codec(src: dt.dtype, dst: dt.dtype) -> bool:
    """Whether a cast ``src -> dst`` goes through :func:`cast_array` rather than ``astype``:
    every cast from or to a storage-only format, and to bfloat16 from anything but float32,
    float16 and bool (those ml_dtypes rounds once in every version)."""
    if src is dst:
        return False
    return src.storage_only or dst.storage_only or (
        dst is dt.bfloat16 and src not in (dt.float32, dt.float16, dt.bool))


def cast_array(data, dst: dt.dtype, src: dt.dtype | None = None):
    """``data`` converted to tensorix dtype ``dst``, in ``dst.storage(xp)`` (uint8 codes for a
    storage-only format on CUDA). ``src`` is the tensorix dtype ``data`` holds (needed for CUDA
    codes; by default its array dtype's).

    The rules, the same on every device and for every ml_dtypes version: a value rounds once,
    to nearest even; overflow gives Inf (bf16, e5m2) or NaN (e4m3fn, e8m0), fp6/fp4 saturate
    and take NaN to +0; e8m0 takes zero and negative values to NaN and positive values too
    small for it to 2^-127. A format's value converts
    to another dtype as its exact float32 value does (to integers without NumPy's warning for
    NaN and out-of-range values, whose result is unspecified, as in PyTorch).
    """
    xp = array_module(data)
    src = dt.from_numpy_dtype(data.dtype) if src is None else src
    if data.dtype.kind == "c" and not dst.is_complex:
        data = data.real
    if src.storage_only:
        vals = decode_array(data.view(np.uint8), format_of(src), np.float32)
        if dst.low_precision:
            return cast_array(vals, dst, dt.float32)
        with quiet():
            return vals.astype(dst.np)
    f = format_of(dst)
    codes = encode_array(data, f, invalid="nan")
    return codes.view(dst.storage(xp)) if xp is np or not dst.storage_only else codes
