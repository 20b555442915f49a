"""CPU fast path of MX quantize / dequantize: the same bits as the general path, fewer passes.

The general path (``mx.py`` with ``casting.encode``) works on whole arrays, so every one of its
dozen or so NumPy passes streams the data through memory. Here the blocks are cut into chunks
that stay in the CPU cache (quantize does everything for a chunk before the next, so the input
is read from memory once), each element sees a handful of vectorised passes, and the chunks can
be split over threads (``tensorix.set_num_threads``; NumPy releases the GIL inside each pass):

* block amax: ``bits << 1`` (drops the sign; NaN/Inf still sort on top) and one
  ``maximum.reduceat`` over the blocks; the E8M0 exponents from bit fields (int32);
* scaling: one contiguous float32 multiply by ``2^-k`` repeated per element (a power of two;
  the general path does the same multiply, so the two agree bit for bit, float32 subnormals
  included);
* element encode: one gather from a table indexed by the **top 20 bits** of the scaled float32.
  For formats with <= 3 mantissa bits every rounding boundary is a multiple of 2^12 in bit
  space, so those bits decide the code, except that the dropped 12 bits can only matter by
  being zero or not (an exact tie; Inf vs NaN). Those keys hold the marker 0xFF, and the few
  elements that hit one (about 1 in 500 for random data) are settled by their dropped bits
  from two more tables. A real code 0xFF (-NaN) takes the same route, which is only slower;
* decode: the code's bits moved into a float32 bit pattern by integer ops (sign extension,
  shift, mask) and one multiply by ``2^(127 - bias + k)``. A float32 with the format's exponent
  field and mantissa is ``value * 2^(bias - 127)`` - subnormal codes become float32 subnormals -
  so the multiply restores the value and applies the block scale at once, exactly. NaN/Inf
  element codes are found by two max-reductions and patched when present.

Used for NumPy float32 input, the deterministic rounding modes and the float element formats;
float64, SR, MXINT8 and CuPy keep the general path. ``tests/numerics/test_mx_fast.py`` checks the
two paths against each other.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import _threads
from .._codec import decode_table_np, encode_bits, finish
from ..backend import quiet
from . import _jit

__all__ = ["eligible", "quantize_blocks", "dequantize_blocks", "key_tables"]

_ROWS = 8192  # blocks per chunk: 256 Ki elements of 32-blocks, 1 MiB per 32-bit buffer
_KEY_SHIFT = 12  # table index = the float32's top 20 bits (1 MiB tables)
_MARK = 0xFF
ENABLED = True  # tests switch it off to get the general path as the reference


def _parallel(nb, work):
    """``work(a, b)`` over ``[0, nb)`` blocks, split over the numerics threads in parts of at
    least ``2 * _ROWS`` blocks (read per call: the tests shrink it)."""
    _threads.parallel(nb, work, 2 * _ROWS)


def eligible(f, rounding) -> bool:
    """Whether the fast path computes ``encode(.., f, rounding, saturate=True)`` exactly."""
    return ENABLED and f.bits <= 8 and f.mbits <= 3 and f.kind in ("ieee", "fn", "finite") and \
        rounding in ("rne", "rtz", "rna", "rup", "rdn")


def _codes_of(bits, f, mode, saturate):
    code, is_nan, neg = encode_bits(bits, f, mode, saturate)
    return finish(code, is_nan, neg, f).astype(np.uint8)


@functools.cache
def key_tables(f, mode, saturate=True):
    """``(table, exact, above)``: codes by the top ``32 - _KEY_SHIFT`` bits of a float32.

    ``exact`` is the code when the dropped bits are zero and ``above`` when they are not
    (rounding is monotone and no boundary lies strictly inside the dropped range, so one
    representative stands for all of them; the tests check that); ``table`` is their common
    value, or ``_MARK`` where they differ."""
    k = np.arange(1 << (32 - _KEY_SHIFT), dtype=np.uint32) << np.uint32(_KEY_SHIFT)
    exact = _codes_of(k, f, mode, saturate)
    above = _codes_of(k | np.uint32(1), f, mode, saturate)
    table = np.where(exact == above, exact, np.uint8(_MARK))
    for t in (table, exact, above):
        t.setflags(write=False)
    return table, exact, above


def _scale_exponents(ab, emax, vmax, scale_mode):
    """int32 k per block from finite amax bits (spec 2.2; the same rules as
    ``mx.e8m0_scale_exponents``, in 32-bit integers)."""
    if scale_mode == "floor":
        e = (ab >> np.uint32(23)).astype(np.int32)
        k = np.where(e == 0, np.int32(-127), e - np.int32(127 + emax))
        return np.clip(k, -127, 127, out=k)
    with quiet():
        d = (ab.view(np.float32) / np.float32(vmax)).view(np.uint32)  # one fp32 division, RNE
    e = (d >> np.uint32(23)).astype(np.int32)
    m = d & np.uint32(0x7FFFFF)
    code = np.where(e > 0, e + (m != 0), (m > 0x400000).astype(np.int32))
    return np.minimum(code, 254, out=code) - np.int32(127)


def quantize_blocks(x2d, f, emax, vmax, scale_mode, rounding, flush):
    """MX codes and scale codes of C-contiguous float32 blocks ``x2d`` (``(nb, block)``):
    returns ``(codes uint8 (nb, block), scale_codes uint8 (nb,))``.

    One chunk at a time, while it is in cache: block amax, scale exponents, the scaled values,
    their codes; so the input streams through memory once."""
    nb, blk = x2d.shape
    table, exact, above = key_tables(f, rounding, True)
    if _jit.usable(x2d.size):
        r = _jit.quantize_blocks(x2d, f, emax, vmax, scale_mode, rounding,
                                   (table, exact, above), flush)
        if r is not None:
            return r
    codes = np.empty((nb, blk), np.uint8)
    scale_codes = np.empty(nb, np.uint8)
    scale = np.empty(nb, np.float32)
    xf, cf = x2d.reshape(-1), codes.reshape(-1)
    marks, zeroed = [], []  # list.append is atomic: threads may share them

    def work(a, b):
        rows = min(b - a, _ROWS)
        buf = np.empty(rows * blk, np.uint32)
        starts = np.arange(0, rows * blk, blk, dtype=np.intp)
        with quiet():  # NaN/Inf blocks get scale 0 (Inf * 0); their codes are zeroed
            for r0 in range(a, b, rows):
                r1 = min(b, r0 + rows)
                n, lo, hi = r1 - r0, r0 * blk, r1 * blk
                t = np.left_shift(xf[lo:hi].view(np.uint32), np.uint32(1), out=buf[:n * blk])
                ab = np.maximum.reduceat(t, starts[:n])
                ab >>= np.uint32(1)  # |x| bits; NaN/Inf sort on top
                special = ab >= np.uint32(0x7F800000)
                zero = special if special.any() else None
                if zero is not None:
                    ab[special] = 0
                k = _scale_exponents(ab, emax, vmax, scale_mode)
                sc = np.ldexp(np.ones(n, np.float32), -k)
                if flush:
                    zero = (ab < np.uint32(0x00800000)) | special  # an fp32-subnormal amax
                if zero is not None and zero.any():
                    sc[zero] = 0
                    zeroed.append(np.flatnonzero(zero) + r0)
                scale[r0:r1] = sc
                k += np.int32(127)
                k[special] = 0xFF
                scale_codes[r0:r1] = k
                # the scale repeated per element: one contiguous SIMD multiply, exact
                y = np.multiply(xf[lo:hi], np.repeat(sc, blk), out=buf[:n * blk].view(np.float32))
                key = np.right_shift(y.view(np.uint32), np.uint32(_KEY_SHIFT), out=buf[:n * blk])
                c = cf[lo:hi]
                np.take(table, key, out=c, mode="wrap")  # fastest mode; keys < 2^20
                idx = np.flatnonzero(c == _MARK)
                if idx.size:
                    marks.append(idx + lo)

    _parallel(nb, work)
    if marks:  # a few elements: settled by their dropped bits
        idx = np.concatenate(marks)
        with quiet():
            yb = (xf[idx] * scale[idx // blk]).view(np.uint32)  # the same y as above
        kk = yb >> np.uint32(_KEY_SHIFT)
        low_zero = (yb & np.uint32((1 << _KEY_SHIFT) - 1)) == 0
        cf[idx] = np.where(low_zero, exact[kk], above[kk])
    if zeroed:
        codes[np.concatenate(zeroed)] = 0  # also turns the -0 of a flushed negative into +0
    return codes, scale_codes


def _special_threshold(f):
    """The smallest magnitude code that is Inf or NaN, or None for finite formats."""
    if f.kind == "ieee":
        return f.inf_code
    return f.nan_code if f.kind == "fn" else None


def dequantize_blocks(codes2d, scale_codes, f):
    """float32 ``decode(codes2d) * 2^k`` for C-contiguous ``(nb, block)`` uint8 codes and their
    E8M0 scale codes; blocks with scale 0xFF are NaN."""
    nb, blk = codes2d.shape
    if _jit.usable(codes2d.size):
        out = _jit.dequantize_blocks(codes2d, scale_codes, f)
        if out is not None:
            return out
    out = np.empty((nb, blk), np.float32)
    nan_blocks = scale_codes == 0xFF
    k = scale_codes.astype(np.int32) - np.int32(127)
    k[nan_blocks] = 0  # 2^128 does not exist; the factor becomes NaN below
    fold = 127 - f.bias
    if nb and int(k.max()) > 127 - fold:  # 2^(fold + k) overflows: scale in two exact steps
        pre, post = np.float32(2.0 ** fold), np.ldexp(np.ones(nb, np.float32), k)
    else:
        pre, post = None, np.ldexp(np.ones(nb, np.float32), k + np.int32(fold))
    post[nan_blocks] = np.nan
    shift = 23 - f.mbits
    mag = (1 << (f.ebits + f.mbits)) - 1
    mask = np.uint32(0x80000000 | (mag << shift)).view(np.int32)
    src, of = codes2d.reshape(-1), out.reshape(-1)

    def work(a, b):
        rows = min(b - a, _ROWS)
        tbuf = np.empty(rows * blk, np.int32)
        with quiet():
            for r0 in range(a, b, rows):
                r1 = min(b, r0 + rows)
                c, o = src[r0 * blk:r1 * blk], of[r0 * blk:r1 * blk]
                t = tbuf[:c.size]
                if f.bits == 8:
                    np.copyto(t, c.view(np.int8))  # sign extension: the mask clears the copies
                    np.left_shift(t, np.int32(shift), out=t)
                else:  # the sign to bit 31; an arithmetic shift puts the magnitude in place
                    np.copyto(t, c)
                    np.left_shift(t, np.int32(32 - f.bits), out=t)
                    np.right_shift(t, np.int32(8 - f.ebits), out=t)
                np.bitwise_and(t, mask, out=t)
                v = t.view(np.float32)
                if pre is not None:
                    v = np.multiply(v, pre, out=v)
                np.multiply(v, np.repeat(post[r0:r1], blk), out=o)

    _parallel(nb, work)
    threshold = _special_threshold(f)
    if threshold is not None and nb and (int(src.view(np.int8).max()) >= threshold or
                                         int(src.max()) >= threshold | f.sign_bit):
        _patch_specials(out, src, threshold, f, post)
    return out


def _patch_specials(out, src, threshold, f, post):
    """NaN/Inf element codes (the quantizer never emits them): table value times the block
    factor, so a NaN scale still wins."""
    idx = np.flatnonzero((src & np.uint8(~f.sign_bit & 0xFF)) >= threshold)
    vals = decode_table_np(f, np.dtype(np.float32))[src[idx]]
    with quiet():
        out.reshape(-1)[idx] = vals * post[idx // out.shape[1]]
