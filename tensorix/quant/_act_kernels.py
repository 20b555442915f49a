"""numba pass that quantizes float32 activations into the VNNI kernel's uint8 operand.

Imported only by ``_fused.py``. ``gemm.int_linear``'s NumPy route reads the (M, K) input five
times and writes four temporaries: ``min``, ``max``, ``rint(x * inv) + z``, ``clip``, the cast
to int8, then ``a ^ 0x80``. Here one pass per row block finds the range (with the finiteness
check), computes the scale and zero point, and writes ``u = clip(rint(x * inv) + z) + 128`` as
uint8; a per-token row (16 KiB at K = 4096) is read from memory once and quantized from L1.

Every value is the NumPy route's bits: each float32 operation is the one
``quantizer.qparams_from_range`` / ``quantizer.quantize`` do, in their order, one rounding each
(numba types float32 op float32 as float32 and contracts nothing into FMAs without fastmath);
tested on every route in ``tests/quant/test_fused.py``.

The range is found on the float bits as int32: ``b ^ ((b >> 31) & 0x7FFFFFFF)`` orders like the
floats (LLVM vectorizes integer min/max reductions; a float one it may not reorder without
fastmath: 4.8x slower, measured), and ``b & 0x7F800000`` is all ones in the exponent exactly for
Inf and NaN.
"""

import numba
import numpy as np

_jit = numba.njit(boundscheck=False, cache=True, nogil=True)

_EPS = np.float32(np.finfo(np.float32).eps)  # quantizer._EPS: the floor of every scale
_EXP = np.int32(0x7F800000)
_MAG = np.int32(0x7FFFFFFF)


@_jit
def _range(b, scratch):
    # (min, max, finite) of the float32 values whose bits are the int32 row ``b``; scratch: a
    # (2,) int32 array whose float32 view turns the bits back into floats
    lo, hi, e = np.int32(_MAG), np.int32(-_MAG - 1), np.int32(0)
    for i in range(b.size):
        v = b[i]
        k = v ^ ((v >> 31) & _MAG)
        lo, hi, e = min(lo, k), max(hi, k), max(e, v & _EXP)
    scratch[0] = lo ^ ((lo >> 31) & _MAG)
    scratch[1] = hi ^ ((hi >> 31) & _MAG)
    f = scratch.view(np.float32)
    return f[0], f[1], e != _EXP


@_jit
def _qparams(lo, hi, qmin, qmax, denom, symmetric):
    # quantizer.qparams_from_range on float32 scalars, op by op: (scale, zero point as float32)
    zero = np.float32(0)
    lo = lo if lo < zero else zero
    hi = hi if hi > zero else zero
    if symmetric:
        amax = -lo if -lo > hi else hi
        s = np.float32(amax / np.float32(denom))
        return (s if s > _EPS else _EPS), zero
    s = np.float32(np.float32(hi - lo) / np.float32(qmax - qmin))
    s = s if s > _EPS else _EPS
    z = np.float32(np.float32(qmin) - np.rint(np.float32(lo / s)))
    z = min(max(z, np.float32(qmin)), np.float32(qmax))
    return s, z


@_jit
def _quantize_row(x, u, s, z, qmin, qmax):
    # quantizer.quantize (rint(x * inv) + z, clipped; inv the float32 reciprocal) plus 128: the
    # int8 code a as the uint8 a ^ 0x80
    inv = np.float32(np.float32(1.0) / s)
    lo, hi = np.float32(qmin), np.float32(qmax)
    for i in range(x.size):
        r = np.float32(np.rint(np.float32(x[i] * inv)) + z)
        r = min(max(r, lo), hi)
        u[i] = np.uint8(np.int32(r) + 128)


@_jit
def quantize_dynamic(x, u, s_out, z_out, qmin, qmax, denom, symmetric, per_row):
    """x (M, K) float32 -> u[:, :K] uint8 codes + 128 with the scale and zero point of each row
    (``per_row``) or of the whole input (s_out, z_out (M,) or (1,) float32); False where x holds
    Inf or NaN (nothing quantized then)."""
    scratch = np.empty(2, np.int32)
    m = x.shape[0]
    if per_row:
        for r in range(m):
            lo, hi, ok = _range(x[r].view(np.int32), scratch)
            if not ok:
                return False
            s_out[r], z_out[r] = _qparams(lo, hi, qmin, qmax, denom, symmetric)
            _quantize_row(x[r], u[r], s_out[r], z_out[r], qmin, qmax)
        return True
    lo, hi, ok = _range(x.reshape(-1).view(np.int32), scratch)
    if not ok:
        return False
    s_out[0], z_out[0] = _qparams(lo, hi, qmin, qmax, denom, symmetric)
    for r in range(m):
        _quantize_row(x[r], u[r], s_out[0], z_out[0], qmin, qmax)
    return True


@_jit
def quantize_static(x, u, s, z, qmin, qmax):
    """x (M, K) float32 -> u[:, :K] with one given float32 scale ``s`` and zero point ``z``."""
    for r in range(x.shape[0]):
        _quantize_row(x[r], u[r], s, z, qmin, qmax)


@_jit
def prepare(x, u, s_rows, qmin, qmax, denom, symmetric, per_row, static, static_s, static_z,
            sums, start):
    """Everything the tiles read that depends on ``x``, in one call (from cold caches each
    Python step of the fused route cost 20-40 us): ``u[:, :K]`` and the pad columns (0), the
    scales ``s_rows`` (M, G) of each row (``static``: the one scale ``static_s`` and zero
    point ``static_z``, float32; else dynamic, per row or per tensor), and where the zero
    point z is not 0, ``start = sums * -(128 + z)`` modulo 2^32 (``sums`` uint32 (G, 32 P)).
    Returns (ok, z): ok False where a dynamic x holds Inf or NaN (nothing else is valid
    then)."""
    m, k = x.shape
    u[:, k:] = 0  # the padded weight is zero there
    rows = m if per_row else 1
    s_out, z_out = np.empty(rows, np.float32), np.empty(rows, np.float32)
    if static:
        s_out[0], z_out[0] = static_s, static_z
        for r in range(m):
            _quantize_row(x[r], u[r], static_s, static_z, qmin, qmax)
    elif not quantize_dynamic(x, u, s_out, z_out, qmin, qmax, denom, symmetric, per_row):
        return False, 0
    for r in range(m):
        s_rows[r, :] = s_out[r if per_row else 0]
    z = 0 if symmetric else np.int64(z_out[0])
    if z != 0:
        f = np.uint32((-(128 + z)) % (1 << 32))
        st = start.view(np.uint32)
        for g in range(sums.shape[0]):
            for n in range(sums.shape[1]):
                st[g, n] = sums[g, n] * f
    return True, z
