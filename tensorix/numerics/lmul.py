"""L-Mul: multiplication by integer addition (Luo & Sun 2024, arXiv 2410.00907; spec 4).

For x = (1 + x_m) 2^x_e and y = (1 + y_m) 2^y_e with m-bit mantissas, L-Mul replaces the
mantissa product by ``1 + x_m + y_m + 2^-l(m)`` with ``l(m) = m (m <= 3), 3 (m = 4), 4 (m > 4)``.
Two variants, because the integer adder is *not* the formula when ``x_m + y_m + offset >= 1``:

* ``variant="bitadd"`` (default; what hardware and public kernels do): add the sign-less codes
  as integers and subtract ``C = (bias << m) - 2^(m - l(m))`` (bf16 0x3F78, e4m3 0x37, fp32
  0x3F780000); the sign is the XOR. A zero input gives 0, a result field <= 0 flushes to 0, a
  field at or past the Inf code gives Inf (NaN for e4m3fn, max for finite formats); NaN and Inf
  inputs propagate as in a multiply;
* ``variant="formula"``: the literal expression, evaluated exactly (float64) and returned as
  is (the spec's vector table lists these unrounded values, e.g. 2.125 for e4m3 1.5 x 1.5);
  ``round_result=True`` rounds it once (RNE) to the format instead.

Inputs are first rounded (RNE) to the format; results are values (float32, float64 for fp32).
``lmul_matmul`` uses L-Mul for the products and sums them in float64, rounding once to
``acc_dtype`` (R6); ``lmul_attention`` is softmax attention with both matmuls in L-Mul. They
are for studying the arithmetic, not for speed (and have no gradient).

Example::

    >>> lmul(np.float32([1.5, 1.75]), np.float32([1.5, 1.75]))          # bf16 bit-add
    array([2.125, 3.125], dtype=float32)
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function
from ..backend import quiet
from ..formats import get_format
from ..tensor import Tensor, _make
from ._xp import raw, untraced, xp_of
from .casting import decode, encode

__all__ = ["lmul", "lmul_offset_bits", "lmul_matmul", "lmul_attention"]


def lmul_offset_bits(m: int) -> int:
    """l(m) of the paper: the offset is 2^-l(m)."""
    return m if m <= 3 else (3 if m == 4 else 4)


def _fp32(fmt):
    return isinstance(fmt, str) and fmt.lower() in ("fp32", "float32")


def _bitadd_fp32(a, b):
    xp = xp_of(a)
    ua, ub = a.view(np.uint32).astype(np.int64), b.view(np.uint32).astype(np.int64)
    ma, mb = ua & 0x7FFFFFFF, ub & 0x7FFFFFFF
    sign = (ua ^ ub) & 0x80000000
    r = ma + mb - 0x3F780000
    r = xp.where(r >= 0x7F800000, 0x7F800000, xp.maximum(r, 0))
    r = xp.where((ma == 0) | (mb == 0), 0, r)
    out = (r | sign).astype(np.uint32).view(np.float32)
    with quiet():
        exact = a * b  # NaN / Inf propagation, as a multiply would
    special = ~xp.isfinite(a) | ~xp.isfinite(b)
    return xp.where(special, exact, out)


def _bitadd(ca, cb, f):
    xp = xp_of(ca)
    sb = f.sign_bit
    ma, mb = ca.astype(np.int64) & ~sb, cb.astype(np.int64) & ~sb
    sign = (ca.astype(np.int64) ^ cb.astype(np.int64)) & sb
    C = (f.bias << f.mbits) - (1 << (f.mbits - lmul_offset_bits(f.mbits)))
    r = xp.maximum(ma + mb - C, 0)
    if f.kind == "ieee":
        top = f.inf_code
    elif f.kind == "fn":
        top = f.nan_code
    else:
        top = f.max_code + 1
    over = f.max_code if f.kind == "finite" else top
    r = xp.where(r >= top, over, r)
    r = xp.where((ma == 0) | (mb == 0), 0, r)
    return (r | sign).astype(f.code_dtype)


def _formula(x, y, f, m, round_result):
    xp = xp_of(x)
    mx_, ex = xp.frexp(xp.abs(x))  # |x| = mx 2^ex, mx in [0.5, 1): 1 + x_m = 2 mx
    my_, ey = xp.frexp(xp.abs(y))
    mant = 2 * mx_ - 1 + 2 * my_ - 1 + 1 + 2.0 ** -lmul_offset_bits(m)
    with quiet():
        v = xp.ldexp(mant, (ex - 1 + ey - 1).astype(np.int32)) * xp.sign(x) * xp.sign(y)
        v = xp.where((x == 0) | (y == 0), 0.0, v)
        special = ~xp.isfinite(x) | ~xp.isfinite(y)
        v = xp.where(special, x * y, v)
    if f is None or not round_result:
        return v.astype(np.float32)
    return decode(encode(v, f, nan_policy="zero"), f)


def lmul(x, y, fmt="bf16", variant="bitadd", round_result=False):
    """Elementwise L-Mul of ``x`` and ``y`` (broadcasting) in format ``fmt`` (any element format
    or study format such as ``"e4m4"``, or ``"fp32"``). Returns values; Tensors in, Tensor out
    (no gradient)."""
    if isinstance(x, Tensor) or isinstance(y, Tensor):
        return LMul.apply(x, y, fmt, variant, round_result)
    a, b = raw(x), raw(y)
    xp = xp_of(a)
    a, b = xp.broadcast_arrays(xp.asarray(a), xp.asarray(b))
    if variant not in ("bitadd", "formula"):
        raise ValueError(f"lmul(): argument 'variant' must be 'bitadd' or 'formula', got "
                         f"{variant!r}")
    if _fp32(fmt):
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
        out = _bitadd_fp32(a32, b32) if variant == "bitadd" else \
            _formula(a32.astype(np.float64), b32.astype(np.float64), None, 23, False)
    else:
        f = get_format(fmt)
        if f.kind == "e8m0":
            raise ValueError("lmul(): e8m0 has no mantissa; choose an element format")
        ca, cb = encode(a, f, nan_policy="zero"), encode(b, f, nan_policy="zero")
        if variant == "bitadd":
            out = decode(_bitadd(ca, cb, f), f)
            va, vb = decode(ca, f), decode(cb, f)
            special = ~xp.isfinite(va) | ~xp.isfinite(vb)
            if bool(special.any()):  # NaN / Inf propagate as in a multiply
                with quiet():
                    out = xp.where(special, va * vb, out)
        else:
            out = _formula(decode(ca, f, np.float64), decode(cb, f, np.float64), f, f.mbits,
                           round_result)
    return out


class LMul(Function):
    """lmul on Tensors: a primitive (no gradient), so a compiled call multiplies the values it
    is given (a wrapped raw array was the example's result to a trace)."""

    _differentiable = False

    @staticmethod
    def forward(ctx, x, y, fmt, variant, round_result):
        return _make(lmul(raw(x), raw(y), fmt, variant, round_result))


def lmul_matmul(A, B, fmt="bf16", variant="bitadd", acc_dtype=np.float32, chunk=64):
    """``A @ B`` with every product an L-Mul in ``fmt``: ``(..., n, k) @ (k, m)`` or matching
    batch dims. Sums are float64, rounded once to ``acc_dtype``."""
    if isinstance(A, Tensor) or isinstance(B, Tensor):
        return LMulMatmul.apply(A, B, fmt, variant, acc_dtype, chunk)
    a, b = raw(A), raw(B)
    xp = xp_of(a)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"lmul_matmul(): shapes {tuple(a.shape)} and {tuple(b.shape)} cannot "
                         "be multiplied")
    out_shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    a = xp.broadcast_to(a, out_shape[:-2] + a.shape[-2:]).reshape((-1,) + a.shape[-2:])
    b = xp.broadcast_to(b, out_shape[:-2] + b.shape[-2:]).reshape((-1,) + b.shape[-2:])
    out = xp.empty((a.shape[0], a.shape[1], b.shape[2]), dtype=np.float64)
    for i in range(a.shape[0]):
        for r in range(0, a.shape[1], chunk):  # bound the (rows, k, m) product tensor
            p = lmul(a[i, r:r + chunk, :, None], b[i, None, :, :], fmt, variant)
            out[i, r:r + chunk] = p.astype(np.float64).sum(axis=1)
    return out.reshape(out_shape).astype(acc_dtype)


class LMulMatmul(Function):
    """lmul_matmul on Tensors: a primitive (no gradient), recomputed by a compiled call."""

    _differentiable = False

    @staticmethod
    def forward(ctx, a, b, fmt, variant, acc_dtype, chunk):
        return _make(lmul_matmul(raw(a), raw(b), fmt, variant, acc_dtype, chunk))


def lmul_attention(q, k, v, fmt="bf16", variant="bitadd", scale=None, causal=False):
    """Softmax attention ``softmax(q k^T * scale) v`` with both matmuls in L-Mul (spec 4: "L-Mul
    in attention is nearly lossless"). Shapes ``(..., L, d)``; the softmax is float32."""
    is_t = isinstance(q, Tensor)
    untraced("lmul_attention", q, k, v)
    qa, ka, va = raw(q), raw(k), raw(v)
    xp = xp_of(qa)
    d = qa.shape[-1]
    s = lmul_matmul(qa, xp.swapaxes(ka, -1, -2), fmt, variant)
    s = s * np.float32(d ** -0.5 if scale is None else scale)
    if causal:
        L, S = s.shape[-2], s.shape[-1]
        mask = xp.triu(xp.ones((L, S), dtype=bool), 1)
        s = xp.where(mask, -np.inf, s)
    s = s - s.max(axis=-1, keepdims=True)
    p = xp.exp(s)
    p = p / p.sum(axis=-1, keepdims=True)
    out = lmul_matmul(p.astype(np.float32), va, fmt, variant)
    return _make(out) if is_t else out
