"""The float32 fused multiply-add ``fma(a, b, c)`` (``a * b + c`` rounded once), in its two
forms: NumPy's (NumPy has no fma) and numba's (LLVM's ``llvm.fma.f32``, the CPU's vfmadd,
which vectorises). Both give the same bits, so ``_math32``'s bodies may use it and keep their
rule that the NumPy fallback and the numba loop agree bit for bit.

This module holds the NumPy form (``_math32`` imports it as its helper ``_fma``); the numba
form is ``_jit_13gelu.fma``, which ``_cpu_jit`` puts in its place when it recompiles the
bodies. Kept apart from ``_math32`` so that ops outside it (lerp, addcmul) can share it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fma32"]


def fma32(a, b, c):
    """``a * b + c`` rounded once to float32, for float32 NumPy arrays or scalars (broadcast).

    Why it is exact: the product of two float32 (24-bit significands) has at most 48 bits and an
    exponent in [-298, 256], so it is exact in float64, and ``s = p + c`` rounds it once more
    (no overflow: |p + c| < 2^257). Rounding ``s`` to float32 gives the single rounding of the
    exact value unless ``s`` landed exactly on a float32 rounding boundary (a midpoint between
    two float32, or the overflow threshold) that the exact value was not on: rounding is
    monotone and the boundaries are float64 numbers, so elsewhere both sit on the same side.
    Such an ``s`` has its 28 low bits zero (a boundary has at most 25 significant bits, fewer on
    the subnormal grid); only those elements take the exact path: ``s`` rounded to odd at 53
    bits (TwoSum's rest ``err``; where it is nonzero and ``s``'s last bit even, one step toward
    it), and a value rounded to odd with two or more extra bits, then rounded to nearest, is
    the exact value rounded once (Boldo and Melquiond, 2008). inf and nan pass through.
    tests/test_fma32.py checks it against exact rationals and the CPU's instruction.

    Example: ``fma32(np.float32(0.1), np.float32(10), np.float32(-1))`` is
    ``array(1.4901161e-08, dtype=float32)`` (the unfused ``0.1 * 10 - 1`` gives 0).
    """
    s = np.multiply(a, b, dtype=np.float64)
    s = np.add(s, c, out=s) if s.ndim and s.shape == np.shape(c) else s + np.float64(c)
    low = s.view(np.int64) & 0x0FFFFFFF
    risky = low == 0  # a possible float32 boundary (about one sum in 2^28, or exact ones)
    if risky.any():
        a, b, c = (np.broadcast_to(v, s.shape)[risky] for v in (a, b, c))
        s = np.array(s)  # writable, also where it is 0-d
        s[risky] = _round_to_odd_sum(np.multiply(a, b, dtype=np.float64), c.astype(np.float64))
    return s.astype(np.float32)


def _round_to_odd_sum(p, c):
    """p + c rounded to odd in float64 (float64 arrays of one shape)."""
    s = p + c
    back = s - p  # TwoSum (Knuth): s + err is p + c exactly
    err = (p - (s - back)) + (c - back)
    bits = s.view(np.int64)
    inexact = (err != 0) & ((bits & 1) == 0) & np.isfinite(s)
    step = np.where((err > 0) == (s > 0), 1, -1)
    return np.where(inexact, bits + step, bits).view(np.float64)
