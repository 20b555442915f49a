"""The storage-only float formats on CUDA: uint8 codes, one mechanism (docs/gpu.md).

CuPy 14 has no float8_e4m3fn / float8_e5m2 / float8_e8m0fnu / float6_* / float4_e2m1fn arrays
("Unsupported dtype"; numerics spec R8), so on CUDA a tensor of those dtypes keeps its tensorix
dtype in ``Tensor._dtype`` and its data as uint8 codes: the same bytes as the ml_dtypes array
the CPU holds (``dtype.storage(xp)`` names the array dtype). Conversions go through the one
codec the CPU uses too (``tensorix/_codec.py``: float64 rounds once, NaN to fp6/fp4 gives +0,
E8M0 rounds ties up), so they are bit-identical to the CPU's casts whatever ml_dtypes version
is installed.

Ops see codes through ``Function.apply``, which consults each op's declared ``_codes`` rule
(``tensorix/autograd/dispatch.py``): "move" ops only move bytes (views, reshapes, indexing, cat,
where, ...) and run on the codes, their uint8 outputs re-tagged with the format; "math" ops run
on the values decoded to float32, their float32 outputs encoded back (the CPU computes these in
float32 and rounds once too, so the bits match; reductions match where the summation order
does); every other op raises a clear error naming the op, the dtype and the device. This module
holds the conversions the ops that handle codes themselves (Cast, ToDevice, creation) use.
"""

from __future__ import annotations

import numpy as np

from .. import _codec, backend
from .. import dtypes as dt
from ..tensor import Tensor, _make

__all__ = ["encode", "decode", "scalar_code", "cast", "to_device"]


# -- conversions: the one codec (tensorix/_codec.py), as on the CPU ---------------------------
def encode(arr, d: dt.dtype):
    """uint8 codes of format ``d`` for a device array of any real, integer or bool dtype,
    rounded exactly as the CPU rounds."""
    return _codec.cast_array(arr, d)


def decode(codes, d: dt.dtype, target):
    """Device codes of format ``d`` as ``target`` (a NumPy dtype; uint8 codes for another
    storage-only format), converted exactly as the CPU converts."""
    return _codec.cast_array(codes, dt.from_numpy_dtype(target), d)


def scalar_code(value, d: dt.dtype) -> int:
    """The code of a Python number in format ``d``, converted on the host as the CPU converts
    it (``full``, a scalar operand)."""
    return int(_codec.cast_array(np.asarray(value), d).view(np.uint8))


def cast(a: Tensor, d: dt.dtype) -> Tensor:
    """``a`` (on CUDA) cast to ``d`` where either side is a storage-only format."""
    return _make(_codec.cast_array(a._data, d, a._dtype), d)


def to_device(a: Tensor, device) -> Tensor:
    """Move a storage-only tensor: its bytes travel as uint8 codes (backend.to_device); on
    the CPU they are viewed as the ml_dtypes dtype again."""
    out = backend.to_device(a._data, device)
    if type(out) is np.ndarray:
        out = out.view(a._dtype.np)
    return _make(out, a._dtype)
