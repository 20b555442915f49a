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
    exponent in [-298, 256], so it is exact in float64; the float64 sum ``s = p + c`` is
    rounded to nearest, and TwoSum's ``err`` is the exact rest (no overflow: |p + c| < 2^257).
    Where ``err`` is nonzero and ``s``'s last bit is even, ``s`` steps one ulp toward ``err``:
    that is ``p + c`` rounded to odd at 53 bits, and a value rounded to odd with at least two
    more bits than the target, then rounded to nearest, is the exact value rounded to nearest
    once (Boldo and Melquiond, 2008), for float32's subnormal grid too (it is coarser still).
    inf and nan pass through float64 unchanged. tests/test_fma32.py checks it against exact
    rational arithmetic and against the CPU's instruction.

    Example: ``fma32(np.float32(0.1), np.float32(10), np.float32(-1))`` is
    ``array(1.4901161e-08, dtype=float32)`` (the unfused ``0.1 * 10 - 1`` gives 0).
    """
    p = np.multiply(a, b, dtype=np.float64)
    c = np.asarray(c, np.float64)
    s = p + c
    back = s - p  # TwoSum (Knuth): s + err is p + c exactly
    err = (p - (s - back)) + (c - back)
    bits = np.asarray(s).view(np.int64)
    inexact = (err != 0) & ((bits & 1) == 0) & np.isfinite(s)
    step = np.where((err > 0) == (s > 0), 1, -1)
    return np.where(inexact, bits + step, bits).view(np.float64).astype(np.float32)
