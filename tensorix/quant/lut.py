"""LUT-based mixed-precision GEMM (LUT Tensor Core, Mo et al. 2024, arXiv 2408.06003; T-MAC)
and the Bipolar-INT weight format it pairs with.

A low-bit weight is a sum of bit-planes, ``W = sum_j 2^j B_j``. For a group of ``g``
consecutive activations ``a`` (along K), every possible bit pattern ``p`` of a plane's ``g``
bits has a precomputed partial sum ``T[p] = sum_i s_i(p) a_i`` (``2^g`` entries); the GEMM is
then table lookups indexed by the weight's bit patterns, summed over groups and planes:

    ``Y[m, n] = sum_j 2^j sum_groups T_m,group[pattern_j(n, group)]``

- no multiplications by weights: one table per activation group serves every output column
  and every plane, which is what makes mixed precision (int1-int4 weights x int8/fp16
  activations) cheap in hardware.

**Bipolar-INT**: each bit stands for -1 or +1 instead of 0 or 1, so ``c = sum_j 2^j (2 b_j -
1)`` takes the odd values ``-(2^k - 1) .. 2^k - 1``: symmetric around 0 (no zero point, no
wasted code), and its tables are antisymmetric, ``T[~p] = -T[p]``, so only half of them are
built (the table symmetrization of LUT Tensor Core). Unsigned bit-planes (``bipolar=False``)
give the usual ``0 .. 2^k - 1`` integer codes.

With integer activations the lookups add integers: :func:`lut_gemm` equals the GEMM of the
dequantized weight exactly (tested); with float activations, to rounding.

Example::

    >>> codes, scale = bipolar_quantize(w, bits=2)          # w (N, K): odd codes in [-3, 3]
    >>> y = lut_gemm(x_int8, to_bitplanes(codes, 2)) * scale.T  # = x @ (codes * scale).T
"""

from __future__ import annotations

import numpy as np

from ..backend import array_module
from ..tensor import Tensor, _make

__all__ = ["bipolar_quantize", "to_bitplanes", "from_bitplanes", "lut_tables", "lut_gemm"]


def _raw(x, op, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not {type(x).__name__}")
    return x._data


def _check_bits(bits, op):
    if not isinstance(bits, int) or not 1 <= bits <= 8:
        raise ValueError(f"{op}(): argument 'bits' must be an int in [1, 8], got {bits!r}")


def bipolar_quantize(w, bits: int):
    """Bipolar-INT codes of ``w`` (N, K) per output row: the odd integers ``c`` in
    ``[-(2^bits - 1), 2^bits - 1]`` nearest ``w / s`` with ``s = max|w_row| / (2^bits - 1)``.
    Returns ``(codes int8 (N, K), scale float32 (N, 1))``; ``codes * scale`` approximates ``w``.
    Example: ``bipolar_quantize(tensorix.tensor([[3., -1.]]), 1)`` gives codes ``[[1, -1]]``.
    """
    _check_bits(bits, "bipolar_quantize")
    a = _raw(w, "bipolar_quantize", "w")
    if a.ndim != 2:
        raise ValueError(f"bipolar_quantize(): argument 'w' must be 2-d (N, K), got shape "
                         f"{tuple(a.shape)}")
    xp = array_module(a)
    top = 2 ** bits - 1
    scale = xp.maximum(xp.abs(a).max(axis=1, keepdims=True) / top, 1e-12).astype(np.float32)
    c = _nearest_odd(a / scale, xp)
    return _make(xp.clip(c, -top, top).astype(np.int8)), _make(scale)


def _nearest_odd(v, xp):
    # odd integers are 2k + 1: round (v - 1) / 2 to the nearest k
    return 2 * xp.rint((v - 1) / 2) + 1


def to_bitplanes(codes, bits: int, bipolar: bool = True):
    """Bit-planes ``B (bits, N, K)`` of 0/1 (uint8) with ``codes = sum_j 2^j (2 B_j - 1)``
    (bipolar: odd codes in ``[-(2^bits - 1), 2^bits - 1]``) or ``sum_j 2^j B_j`` (unsigned
    codes in ``[0, 2^bits - 1]``). Example: ``to_bitplanes(tensorix.tensor([[3, -1]]), 2)``
    has planes ``[[[1, 0]], [[1, 0]]]``."""
    _check_bits(bits, "to_bitplanes")
    c = _raw(codes, "to_bitplanes", "codes").astype(np.int64)
    xp = array_module(c)
    top = 2 ** bits - 1
    if bipolar:
        if c.size and bool(((c % 2 == 0) | (xp.abs(c) > top)).any()):
            raise ValueError(f"to_bitplanes(): bipolar codes must be odd integers in "
                             f"[-{top}, {top}]")
        u = (c + top) // 2  # c = 2u - top with u in [0, top]: u's bits are the planes
    else:
        if c.size and bool(((c < 0) | (c > top)).any()):
            raise ValueError(f"to_bitplanes(): unsigned codes must lie in [0, {top}]")
        u = c
    return _make(xp.stack([(u >> j) & 1 for j in range(bits)]).astype(np.uint8))


def from_bitplanes(planes, bipolar: bool = True):
    """Inverse of :func:`to_bitplanes`: (bits, N, K) planes -> int64 codes (N, K).
    Example: ``from_bitplanes(to_bitplanes(c, 2))`` equals ``c``."""
    p = _raw(planes, "from_bitplanes", "planes").astype(np.int64)
    weights = 2 ** np.arange(p.shape[0]).reshape(-1, 1, 1)
    s = (2 * p - 1) if bipolar else p
    return _make((s * array_module(p).asarray(weights)).sum(0))


def _patterns(g, bipolar, xp):
    # (2^g, g): the +-1 (or 0/1) value of bit i of each pattern index
    bits = (np.arange(2 ** g)[:, None] >> np.arange(g)[None, :]) & 1
    return xp.asarray(2 * bits - 1 if bipolar else bits)


def lut_tables(a, g: int = 4, bipolar: bool = True):
    """The lookup tables of activations ``a`` (M, K) (K a multiple of ``g``): ``(M, K / g,
    2^g)``, entry ``[m, t, p]`` the partial sum of group ``t`` under bit pattern ``p``. For
    bipolar tables only patterns with the top bit clear are computed; the rest are their
    negations (``T[~p] = -T[p]``). Example: ``lut_tables(x, 4).shape`` is ``(M, K // 4, 16)``.
    """
    xp = array_module(a)
    m, k = a.shape
    groups = a.reshape(m, k // g, g)
    pats = _patterns(g, bipolar, xp)
    if not bipolar:
        return groups @ pats.T.astype(groups.dtype)
    half = groups @ pats[:2 ** (g - 1)].T.astype(groups.dtype)  # top bit clear
    # pattern p with the top bit set is the complement of (2^g - 1 - p): its negated entry
    return xp.concatenate([half, -half[..., ::-1]], -1)


def lut_gemm(a, planes, g: int = 4, bipolar: bool = True):
    """``a @ W^T`` for a bit-plane weight (codes of :func:`to_bitplanes`) by table lookups:
    ``a`` (M, K) Tensor (int activations give an exact int64 result, float ones a float64
    one), ``planes`` (bits, N, K) uint8 Tensor; returns (M, N). ``g`` activations per table
    (``K % g == 0``). Multiply by the weight scales (and the activation scale) after.
    Example: ``lut_gemm(x, to_bitplanes(c, 3))`` equals ``x @ c.T`` for odd codes ``c``.
    """
    ar = _raw(a, "lut_gemm", "a")
    pr = _raw(planes, "lut_gemm", "planes")
    if ar.ndim != 2 or pr.ndim != 3 or ar.shape[1] != pr.shape[2]:
        raise ValueError(f"lut_gemm(): expected a (M, K) and planes (bits, N, K), got shapes "
                         f"{tuple(ar.shape)} and {tuple(pr.shape)}")
    if not isinstance(g, int) or g < 1 or ar.shape[1] % g:
        raise ValueError(f"lut_gemm(): argument 'g' must divide K = {ar.shape[1]}, got {g!r}")
    xp = array_module(ar)
    acc = np.int64 if ar.dtype.kind in "iu" else np.float64
    tables = lut_tables(ar.astype(acc), g, bipolar)  # (M, K/g, 2^g)
    bits, n, k = pr.shape
    weights = (1 << xp.arange(g)).astype(np.int64)
    idx = (pr.reshape(bits, n, k // g, g).astype(np.int64) * weights).sum(-1)  # (bits, N, K/g)
    t_idx = xp.arange(k // g)[None, :]
    out = xp.zeros((ar.shape[0], n), dtype=acc)
    step = max(1, (1 << 22) // max(1, ar.shape[0] * (k // g)))  # columns per (M, cols, K/g)
    for lo in range(0, n, step):
        for j in range(bits):  # one lookup-and-add pass per plane, weighted 2^j
            looked = tables[:, t_idx, idx[j, lo:lo + step]]  # (M, cols, K/g)
            out[:, lo:lo + step] += looked.sum(-1) * (1 << j)
    return _make(out)
