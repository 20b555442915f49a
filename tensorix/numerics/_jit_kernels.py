"""numba kernels of ``_jit``: MX and NVFP4 quantize/dequantize, Philox4x32-10, bf16 SR.

Imported only by ``_jit.kernels()``, which falls back to the NumPy code when this import (or
a compile) fails. Compiled code is cached next to this file (``cache=True``). Every entry
point takes a range ``[a, b)`` (blocks, counters or elements) last, so that ``_jit._run`` can
split the work over threads.
"""

import numba
import numpy as np

# Serial kernels over a range that release the GIL: ``_threads.parallel`` splits the range
# over Python threads. (numba's own parallel loops run on GNU OpenMP, whose idle threads
# spin and starve OpenBLAS on a small CPU - a GPT step under MXFP8 took 4x longer - and which
# kills forked children.) The entry points still go through numba's parallel-accelerator
# pipeline with every automatic parallelisation off: its array analysis makes them about twice
# as fast (measured: quantize 9 ms instead of 17 ms for 16M values). numba then starts its
# thread pool, but no parallel region ever runs on it (a forked child works: a test checks).
_jit = numba.njit(boundscheck=False, cache=True, nogil=True)
_SERIAL = dict.fromkeys(("comprehension", "prange", "setitem", "reduction", "numpy", "stencil",
                         "fusion", "inplace_binop"), False)
_entry = numba.njit(boundscheck=False, cache=True, nogil=True, parallel=_SERIAL)
_CHUNK = 256  # blocks per encode loop: a 32 KiB float32 scratch that stays in cache


@_jit
def amax_bits(xb):
    # |x| as bits; bit order is value order, and NaN/Inf sort on top. A runtime trip count
    # lets LLVM vectorise this max (a constant 32 gets fully unrolled into scalar code).
    ab = np.uint32(0)
    for i in range(xb.shape[0]):
        v = xb[i] & np.uint32(0x7FFFFFFF)
        ab = v if v > ab else ab
    return ab


@_jit
def scale_exponent(ab, floor, emax, vmax):
    # _mxfast._scale_exponents for one finite amax
    if floor:
        e = np.int32(ab >> np.uint32(23))
        k = np.int32(-127) if e == 0 else e - np.int32(127 + emax)
        return max(np.int32(-127), min(np.int32(127), k))
    d = np.float32(np.uint32(ab).view(np.float32) / vmax).view(np.uint32)  # one RNE division
    e = np.int32(d >> np.uint32(23))
    m = d & np.uint32(0x7FFFFF)
    code = e + np.int32(m != 0) if e > 0 else np.int32(m > np.uint32(0x400000))
    return min(code, np.int32(254)) - np.int32(127)


@_jit
def encode_table(y, table, exact, above, cb):
    # _mxfast's lookup: the top 20 bits of y, the low 12 settling ties and Inf/NaN edges
    for i in range(y.shape[0]):
        yb = y[i]
        key = yb >> np.uint32(12)
        c = table[key]
        if c == 0xFF:
            c = exact[key] if (yb & np.uint32(0xFFF)) == 0 else above[key]
        cb[i] = c


@_jit
def rne_code(yb, emin_field, mbits, max_code, sign_shift):
    # The saturating RNE code of the float32 with bits yb. Round to nearest even by the FPU:
    # adding C = 2^(e' + 23 - mbits), e' the exponent of y clamped below at the format's emin,
    # rounds |y| to a multiple of the element's quantum 2^(e' - mbits) (C > 2|y|, so the sum
    # stays in C's binade), and the sum's bits minus C's are that multiple. Integer ops and
    # selects only, so loops over it vectorise. Checked against the key tables on every finite
    # float32 (see the tests).
    e = np.int32((yb >> np.uint32(23)) & np.uint32(0xFF))
    ep = e if e > emin_field else emin_field
    ep = ep if ep < np.int32(191) else np.int32(191)  # keeps C finite; saturates anyway
    cbits = np.int32((ep + np.int32(23) - mbits) << np.int32(23))
    a = np.uint32(yb & np.uint32(0x7FFFFFFF)).view(np.float32)
    r = np.float32(a + cbits.view(np.float32))
    mag = np.int32(((ep - emin_field) << mbits) + (r.view(np.int32) - cbits))
    mag = mag if mag < max_code else max_code  # saturate
    return np.uint8(mag | (np.int32(yb >> np.uint32(31)) << sign_shift))


@_jit
def encode_rne(y, emin_field, mbits, max_code, sign_shift, cb):
    for i in range(y.shape[0]):
        cb[i] = rne_code(y[i], emin_field, mbits, max_code, sign_shift)


@_entry
def quantize(xf, xu, blk, floor, emax, vmax, flush, rne, fmt, table, exact, above, p2,
             codes, scodes, a, b):
    # Blocks [a, b), _CHUNK at a time: scales and the scaled values y (in cache), then one
    # encode loop over the chunk. (An encode loop per 32-element block costs more than its
    # work: LLVM's vector loop is wider than a block.)
    y = np.empty(_CHUNK * blk, np.float32)
    for b0 in range(a, b, _CHUNK):
        b1 = min(b, b0 + _CHUNK)
        for blo in range(b0, b1):
            lo, off = blo * blk, (blo - b0) * blk
            ab = amax_bits(xu[lo:lo + blk])
            special = ab >= np.uint32(0x7F800000)
            k = scale_exponent(np.uint32(0) if special else ab, floor, emax, vmax)
            scodes[blo] = np.uint8(255) if special else np.uint8(k + 127)
            yb, xb = y[off:off + blk], xf[lo:lo + blk]
            if special or (flush and ab < np.uint32(0x00800000)):
                yb[:] = 0  # code 0
            else:
                s = p2[127 - k]
                for i in range(blk):
                    yb[i] = xb[i] * s  # the NumPy path's multiply (exact unless subnormal)
        cc, yu = codes[b0 * blk:b1 * blk], y[:(b1 - b0) * blk].view(np.uint32)
        if rne:
            encode_rne(yu, fmt[0], fmt[1], fmt[2], fmt[3], cc)
        else:
            encode_table(yu, table, exact, above, cc)


@_entry
def dequantize(codes, scodes, blk, dec, p2, out, a, b):
    for blo in range(a, b):
        f = p2[scodes[blo]]  # 2^(sc - 127); NaN for sc = 255
        o, c = out[blo * blk:blo * blk + blk], codes[blo * blk:blo * blk + blk]
        for i in range(blk):
            o[i] = dec[c[i]] * f


_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_MASK = np.uint64(0xFFFFFFFF)


@_entry
def philox(k0, k1, first, out, a, b):
    # sr.philox4x32 with 10 rounds for counters (first + j, 0, 0) with j in [a, b): the
    # four words of counter j go to out[4j:4j + 4] (a slice: see bf16_sr)
    o = out[4 * a:4 * b]
    for j in range(b - a):
        c = np.uint64(first) + np.uint64(a) + np.uint64(j)
        c0, c1, c2, c3 = c & _MASK, c >> np.uint64(32), np.uint64(0), np.uint64(0)
        w0, w1 = np.uint64(k0), np.uint64(k1)
        for r in range(10):
            if r:
                w0, w1 = (w0 + _W0) & _MASK, (w1 + _W1) & _MASK
            p0, p1 = _M0 * c0, _M1 * c2  # 32 x 32 -> 64-bit products
            c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ w0, p1 & _MASK,
                              (p0 >> np.uint64(32)) ^ c3 ^ w1, p0 & _MASK)
        o[4 * j] = np.uint32(c0)
        o[4 * j + 1] = np.uint32(c1)
        o[4 * j + 2] = np.uint32(c2)
        o[4 * j + 3] = np.uint32(c3)


@_entry
def bf16_sr(bits, r, mask, shift, saturate, out, a, b):
    # casting._bf16_sr element by element: (bits + r16) >> 16, NaN kept quiet, Inf saturated.
    # Selects, not branches, and slices, not out[i] with i from range(a, b): an index that
    # might be negative gets a wraparound check, and that stops LLVM vectorising (6x here).
    xs, rs, os_ = bits[a:b], r[a:b], out[a:b]
    for i in range(xs.shape[0]):
        x = np.uint32(xs[i])
        o = np.uint32((x + ((np.uint32(rs[i]) & mask) >> shift)) >> np.uint32(16))
        nan = (x & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
        inf = saturate and (o & np.uint32(0x7FFF)) == np.uint32(0x7F80)
        o = (o & np.uint32(0x8000)) | np.uint32(0x7F7F) if inf else o
        o = (x >> np.uint32(16)) | np.uint32(0x7FC0) if nan else o
        os_[i] = np.uint16(o)


@_entry
def block_amax(xu, blk, out, a, b):
    # |x| bits of each block's max (NaN/Inf sort on top): NVFP4's first pass
    o = out[a:b]
    for j in range(b - a):
        lo = (a + j) * blk
        o[j] = amax_bits(xu[lo:lo + blk])


@_entry
def nvfp4_quantize(xf, blk, amax, s_enc, e4m3, e2m1, dec_e4m3, codes, scodes, a, b):
    # nvfp4.nvfp4_quantize's float32 steps, in its order, block by block: the E4M3 block
    # scale s_b = RNE_sat((amax_b / 6) * s_enc), s_enc_b = s_enc / s_b (0 if s_b == 0), and
    # the elements RNE_sat(x * s_enc_b) in E2M1 - one rounding each, as NumPy does them
    y = np.empty(_CHUNK * blk, np.float32)
    for b0 in range(a, b, _CHUNK):
        b1 = min(b, b0 + _CHUNK)
        for j in range(b1 - b0):
            blo = b0 + j
            t = np.float32(np.float32(amax[blo] / np.float32(6)) * s_enc)
            sc = rne_code(t.view(np.uint32), e4m3[0], e4m3[1], e4m3[2], e4m3[3])
            scodes[blo] = sc
            s_b = dec_e4m3[sc]
            s = np.float32(0) if s_b == 0 else np.float32(s_enc / s_b)
            xb, yb = xf[blo * blk:blo * blk + blk], y[j * blk:j * blk + blk]
            for i in range(blk):
                yb[i] = xb[i] * s
        encode_rne(y[:(b1 - b0) * blk].view(np.uint32), e2m1[0], e2m1[1], e2m1[2], e2m1[3],
                   codes[b0 * blk:b1 * blk])


@_entry
def nvfp4_dequantize(codes, scodes, blk, dec_e2m1, dec_e4m3, s_dec, out, a, b):
    # (decode(q) * decode(s_b)) * s_dec in float32, as nvfp4_dequantize does
    for blo in range(a, b):
        s_b = dec_e4m3[scodes[blo]]
        o, c = out[blo * blk:blo * blk + blk], codes[blo * blk:blo * blk + blk]
        for i in range(blk):
            o[i] = np.float32(dec_e2m1[c[i]] * s_b) * s_dec


@_entry
def encode_keyed(y, table, exact, above, cb, a, b):
    # casting.encode's deterministic <= 8-bit casts: the key-table lookup over elements [a, b)
    encode_table(y[a:b], table, exact, above, cb[a:b])
