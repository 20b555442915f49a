"""Registry entries for ops/bitwise.py: logical ops (any dtype) and bitwise ops (integers and
bool). Samples are made directly in the tested dtype, since integer bit patterns matter."""

from __future__ import annotations

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, register
from ._samples import BROADCAST_PAIRS, uniform

INTS = (tx.int64, tx.int32, tx.uint8, tx.bool)


def _values(rng, shape, dtype, low=-100, high=100):
    if dtype is tx.bool:
        return np.asarray(rng.uniform(size=shape) < 0.5)
    if dtype.category == 1:
        info = np.iinfo(dtype.np)
        return np.asarray(rng.integers(max(low, info.min), min(high, info.max), size=shape,
                                       endpoint=True), dtype=dtype.np)
    x = uniform(rng, shape)
    return np.where(rng.uniform(size=shape) < 0.3, 0.0, x)  # zeros are False


def _logical(rng, dtype):
    return _binary(rng, dtype, scalar=False)  # torch's logical ops take tensors only


def _binary(rng, dtype, scalar=True):
    out = [Sample((_values(rng, a, dtype), _values(rng, b, dtype))) for a, b in BROADCAST_PAIRS]
    if scalar:
        out.append(Sample((_values(rng, (3, 2), dtype), True if dtype is tx.bool else 6),
                          name="scalar "))
    return out


def _unary(rng, dtype):
    return [Sample((_values(rng, s, dtype),)) for s in [(), (5,), (3, 4)]]


def _shifts(rng, dtype):
    bits = dtype.bits
    x = _values(rng, (3, 4), dtype)
    amount = rng.integers(0, bits + 2, size=(4,)).astype(dtype.np)  # past the width too
    return [Sample((x, amount)), Sample((x, 3), name="scalar "),
            Sample((x, np.array(bits - 1, dtype=dtype.np)))]


def _np_shift(fn):
    def ref(a, b):
        b = np.asarray(b)
        bits = np.asarray(a).dtype.itemsize * 8
        big = b >= bits
        safe = np.where(big, 0, b).astype(np.asarray(a).dtype)
        out = fn(a, safe)
        if fn is np.left_shift:
            return np.where(big, 0, out).astype(out.dtype)
        return np.where(big, np.where(np.asarray(a) < 0, -1, 0), out).astype(out.dtype)
    return ref


register(
    OpInfo("logical_and", _logical, np.logical_and, grad=False, dtypes=INTS + (tx.float32,)),
    OpInfo("logical_or", _logical, np.logical_or, grad=False, dtypes=INTS + (tx.float32,)),
    OpInfo("logical_xor", _logical, np.logical_xor, grad=False, dtypes=INTS + (tx.float32,)),
    OpInfo("logical_not", _unary, np.logical_not, grad=False, dtypes=INTS + (tx.float32,)),
    OpInfo("bitwise_and", _binary, np.bitwise_and, grad=False, dtypes=INTS),
    OpInfo("bitwise_or", _binary, np.bitwise_or, grad=False, dtypes=INTS),
    OpInfo("bitwise_xor", _binary, np.bitwise_xor, grad=False, dtypes=INTS),
    OpInfo("bitwise_not", _unary, np.invert, grad=False, dtypes=INTS),
    OpInfo("bitwise_left_shift", _shifts, _np_shift(np.left_shift), grad=False,
           dtypes=INTS[:3]),
    OpInfo("bitwise_right_shift", _shifts, _np_shift(np.right_shift), grad=False,
           dtypes=INTS[:3]),
)
