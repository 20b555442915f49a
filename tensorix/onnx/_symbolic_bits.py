"""Symbolics of integer-code primitives, all exact integer arithmetic at opset 17:

* ``linalg_lu.LUPermutation``: LAPACK's sequential row swaps unrolled over the static pivot
  count (each swap a GatherElements and two ScatterElements on the row order), then
  ``P[r, c] = (order[c] == r)``;
* ``numerics.packing`` PackFp4/UnpackFp4/PackFp6/UnpackFp6: byte packing as int32 products
  and quotients by powers of two and Mod (no Bitwise op, so no opset 18);
* ``number._Raw`` gcd and lcm: Euclid's algorithm unrolled for the dtype's worst case (the
  Fibonacci bound on its steps); nextafter has no ONNX form (refused).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..numerics import packing
from ..ops import linalg_lu, number
from ._symbolic import refuse, symbolic

__all__: list = []


@symbolic(linalg_lu.LUPermutation)
def lu_permutation(em, node, pivots, m, dtype):
    batch = pivots.shape[:-1]
    k = pivots.shape[-1]
    rows = int(np.prod(batch, dtype=np.int64))
    piv = em.op("Sub", em.op("Reshape", em.cast(pivots, dt.int64), em.ints([rows, k])),
                em.const(np.int64(1)))  # LAPACK's pivots are 1-based
    order = em.const(np.broadcast_to(np.arange(m, dtype=np.int64), (rows, m)).copy())
    for j in range(k):  # row j swaps with row piv[j], in order: a static count of steps
        pj = em.op("Slice", piv, em.ints([j]), em.ints([j + 1]), em.ints([1]))  # (rows, 1)
        at_j = em.const(np.full((rows, 1), j, dtype=np.int64))
        a = em.op("GatherElements", order, at_j, axis=1)
        b = em.op("GatherElements", order, pj, axis=1)
        order = em.op("ScatterElements", order, at_j, b, axis=1)
        order = em.op("ScatterElements", order, pj, a, axis=1)
    grid = em.const(np.arange(m, dtype=np.int64).reshape(1, m, 1))
    p = em.op("Equal", em.op("Unsqueeze", order, em.ints([1])), grid)  # (rows, m, m)
    return em.op("Reshape", em.cast(p, dtype), em.ints(list(batch) + [m, m]))


def _int32(em, v):
    return em.cast(v, dt.int32)


def _u8(em, name):
    return em.op("Cast", name, to=2)  # TensorProto.UINT8


def _split_last(em, x, shape, group):
    """``x`` (a name of ``shape``) as ``(..., shape[-1] // group, group)``."""
    return em.op("Reshape", x, em.ints(list(shape[:-1]) + [shape[-1] // group, group]))


def _padded(em, node, codes, group, pad):
    """int32 codes, padded with zero codes to a multiple of ``group`` (eager checks the rest)."""
    c = _int32(em, codes)
    shape = list(codes.shape)
    rem = shape[-1] % group
    if rem and pad:
        widths = [0] * len(shape) * 2
        widths[2 * len(shape) - 1] = group - rem
        c = em.op("Pad", c, em.ints(widths), em.const(np.int32(0)))
        shape[-1] += group - rem
    return c, shape


def _part(em, g, i):
    return em.op("Squeeze", em.op("Slice", g, em.ints([i]), em.ints([i + 1]), em.ints([-1])),
                 em.ints([-1]))


def _stack_last(em, parts, shape):
    """Parts of ``shape[:-1] + (n,)`` interleaved into ``shape[:-1] + (n * len(parts),)``."""
    stacked = em.op("Concat", *[em.op("Unsqueeze", p, em.ints([-1])) for p in parts], axis=-1)
    return em.op("Reshape", stacked, em.ints(list(shape[:-1]) + [shape[-1] * len(parts)]))


def _cut(em, x, n):
    if n is None:
        return x
    return em.op("Slice", x, em.ints([0]), em.ints([n]), em.ints([-1]))


@symbolic(packing.PackFp4)
def pack_fp4(em, node, codes, order, pad):
    c, shape = _padded(em, node, codes, 2, pad)
    g = _split_last(em, c, shape, 2)
    first, second = _part(em, g, 0), _part(em, g, 1)
    if order != "low_first":
        first, second = second, first
    return _u8(em, em.op("Add", first, em.op("Mul", second, em.const(np.int32(16)))))


@symbolic(packing.UnpackFp4)
def unpack_fp4(em, node, packed, n, order):
    p = _int32(em, packed)
    lo = em.op("Mod", p, em.const(np.int32(16)))
    hi = em.op("Div", p, em.const(np.int32(16)))  # non-negative: Div truncates = floor
    parts = [lo, hi] if order == "low_first" else [hi, lo]
    return _u8(em, _cut(em, _stack_last(em, parts, packed.shape), n))


@symbolic(packing.PackFp6)
def pack_fp6(em, node, codes, pad):
    c, shape = _padded(em, node, codes, 4, pad)
    g = _split_last(em, c, shape, 4)
    w = _part(em, g, 0)
    for i in (1, 2, 3):  # the 24-bit word c0 | c1 << 6 | c2 << 12 | c3 << 18, in int32
        w = em.op("Add", w, em.op("Mul", _part(em, g, i), em.const(np.int32(1 << (6 * i)))))
    byte = em.const(np.int32(256))
    parts = [em.op("Mod", w, byte), em.op("Mod", em.op("Div", w, byte), byte),
             em.op("Div", w, em.const(np.int32(1 << 16)))]
    return _u8(em, _stack_last(em, parts, shape[:-1] + [shape[-1] // 4]))


@symbolic(packing.UnpackFp6)
def unpack_fp6(em, node, packed, n):
    shape = list(packed.shape)
    g = _split_last(em, _int32(em, packed), shape, 3)
    w = _part(em, g, 0)
    for i in (1, 2):
        w = em.op("Add", w, em.op("Mul", _part(em, g, i), em.const(np.int32(1 << (8 * i)))))
    six = em.const(np.int32(64))
    parts = [em.op("Mod", em.op("Div", w, em.const(np.int32(1 << (6 * s)))), six)
             for s in range(4)]
    return _u8(em, _cut(em, _stack_last(em, parts, shape[:-1] + [shape[-1] // 3]), n))


def _euclid_steps(dtype) -> int:
    """An upper bound on Euclid's steps for |values| below 2**bits: the steps for (a, b) with
    b < F(s) are fewer than s (Lame), so the first Fibonacci number past the range bounds them."""
    bits = np.iinfo(dtype.np).bits
    f0, f1, steps = 0, 1, 0
    while f1 <= 2 ** bits:
        f0, f1, steps = f1, f0 + f1, steps + 1
    return steps


def _gcd(em, a, b, dtype):
    a, b = em.op("Abs", a), em.op("Abs", b)
    zero, one = em.const(np.asarray(0, dtype.np)), em.const(np.asarray(1, dtype.np))
    for _ in range(_euclid_steps(dtype)):  # (a, b) <- (b, a mod b) while b != 0
        done = em.op("Equal", b, zero)
        r = em.op("Mod", a, em.op("Where", done, one, b))
        a, b = em.op("Where", done, a, b), em.op("Where", done, zero, r)
    return a


@symbolic(number._Raw)
def raw_integer(em, node, fn, a, b):
    dtype = node.meta["dtype"]
    if fn not in ("gcd", "lcm"):
        raise refuse(em, node, f"{fn} (no ONNX op reaches a float's neighbour exactly)")
    if dtype.category != 1 or dtype is dt.bool:
        raise refuse(em, node, f"{fn} of {dtype.name}")
    if dtype.np.itemsize < 4:  # ONNX Mod/Abs on small integers: in int32, then back
        wide = dt.int32
        g = _gcd(em, em.cast(a, wide), em.cast(b, wide), wide)
        if fn == "gcd":
            return em.cast(g, dtype)
        a, b = em.cast(a, wide), em.cast(b, wide)
    else:
        wide = dtype
        g = _gcd(em, a, b, dtype)
        if fn == "gcd":
            return g
    zero = em.const(np.asarray(0, wide.np))
    one = em.const(np.asarray(1, wide.np))
    safe = em.op("Where", em.op("Equal", g, zero), one, g)
    lcm = em.op("Abs", em.op("Mul", em.op("Div", em.op("Abs", a), safe), em.op("Abs", b)))
    return em.cast(lcm, dtype) if wide is not dtype else lcm
