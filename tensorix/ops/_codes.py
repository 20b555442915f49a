"""The storage-only float formats on CUDA: uint8 codes, one mechanism (docs/gpu.md).

CuPy 14 has no float8_e4m3fn / float8_e5m2 / float8_e8m0fnu / float6_* / float4_e2m1fn arrays
("Unsupported dtype"; numerics spec R8), so on CUDA a tensor of those dtypes keeps its tensorix
dtype in ``Tensor._dtype`` and its data as uint8 codes: the same bytes as the ml_dtypes array
the CPU holds (``dtype.storage(xp)`` names the array dtype). Conversions go through the one
codec the CPU uses too (``tensorix/_codec.py``: float64 rounds once, NaN to fp6/fp4 gives +0,
E8M0 rounds ties up), so they are bit-identical to the CPU's casts whatever ml_dtypes version
is installed.

Ops see codes through ``Function.apply``: for an op whose first argument is not a CPU tensor,
:func:`dispatch` looks for storage-only CUDA tensors among the arguments; where there are none
(every other CUDA op) it answers None. Otherwise the op's class decides (``_codes``, set at the
bottom of this file): "move" ops only move bytes (views, reshapes, indexing, cat, where, ...)
and run on the codes, their uint8 outputs re-tagged with the format; "math" ops run on the
values decoded to float32, their float32 outputs encoded back (the CPU computes these in
float32 and rounds once too, so the bits match; reductions match where the summation order
does); every other op raises a clear error naming the op, the dtype and the device. The CPU
never reaches this module: its tensors hold ml_dtypes arrays and ``apply`` skips the call.
"""

from __future__ import annotations

import numpy as np

from .. import _codec, backend
from .. import dtypes as dt
from ..autograd import function as _function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor, _make

__all__ = ["on_codes", "encode", "decode", "scalar_code", "cast", "to_device", "dispatch"]

def on_codes(t) -> bool:
    """True for a tensor of a storage-only format held as uint8 codes (on CUDA)."""
    return t._dtype.storage_only and type(t._data) is not np.ndarray


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


# -- the op guard (Function.apply calls dispatch for ops whose first argument is not a CPU
# tensor) -------------------------------------------------------------------------------------
_SKIP = [None]  # (cls, first argument) of the "move" call now running on codes


def _tensors(args):
    for a in args:
        if type(a) is Tensor or isinstance(a, Tensor):
            yield a
        elif type(a) in (list, tuple):
            yield from (x for x in a if isinstance(x, Tensor))


def dispatch(cls, args):
    """None where ``cls.apply(*args)`` may run as usual; else its result, computed on codes
    or on decoded values per ``cls._codes``, or a clear error."""
    skip = _SKIP[0]
    if skip is not None and skip[0] is cls and args and skip[1] is args[0]:
        _SKIP[0] = None
        return None
    found = [t for t in _tensors(args) if on_codes(t)]
    if not found:
        return None
    policy = getattr(cls, "_codes", None)
    if callable(policy):
        policy = policy(args)
    d, op = found[0]._dtype, _op_name(cls)
    where = f"{d.name} tensors on {found[0].device}"
    if policy == "own":
        return None
    if is_grad_enabled() and any(t._rg for t in found):
        raise RuntimeError(f"{op}: autograd is not supported for {where} (they are held as "
                           "uint8 codes); cast first, e.g. x.float(), or use no_grad()")
    if any(t._dtype is not d for t in found):
        raise TypeError(f"{op}: expected one storage-only dtype, got "
                        f"{', '.join(sorted({t._dtype.name for t in found}))}")
    if policy == "move":
        return _retag(_run_skipping(cls, args), d)
    if policy == "math":
        return _encode_outputs(cls.apply(*_decoded(args)), d)
    raise TypeError(f"{op}: not supported for {where} (CuPy has no {d.name} dtype: they are "
                    "held as uint8 codes, and this op would compute on the codes); cast first, "
                    f"e.g. x.float(), or compute on the CPU")


def _op_name(cls):
    return cls.__name__.lower() + "()"


def _run_skipping(cls, args):
    _SKIP[0] = (cls, args[0])
    try:
        return cls.apply(*args)
    finally:
        _SKIP[0] = None


def _retag(out, d):
    if type(out) is tuple:
        return tuple(_retag(o, d) for o in out)
    if type(out) is Tensor and out._dtype is dt.uint8 and type(out._data) is not np.ndarray:
        out._dtype = d
    return out


def _decoded(args):
    def dec(a):
        if isinstance(a, Tensor) and on_codes(a):
            return _make(decode(a._data, a._dtype, np.float32), dt.float32)
        if type(a) in (list, tuple):
            return type(a)(dec(x) for x in a)
        if type(a) is dt.dtype and a.storage_only:  # e.g. sum's result dtype: computed in f32
            return dt.float32
        return a
    return [dec(a) for a in args]


def _encode_outputs(out, d):
    if type(out) is tuple:
        return tuple(_encode_outputs(o, d) for o in out)
    if type(out) is Tensor and out._dtype is dt.float32:
        return _make(encode(out._data, d), d)
    return out


def _install():
    """Which ops run on codes ("move"), on decoded values ("math"), or handle codes
    themselves ("own"); every other op refuses storage-only CUDA tensors."""
    from . import elementwise, indexing, movement, pointwise, reduce, shape

    own = (elementwise.Cast, elementwise.ToDevice)
    move = (movement.Reshape, movement.View, movement.Expand, movement.Permute,
            movement.Clone, movement.AsStrided, movement.StridedView, movement.GetItem,
            shape.Cat, shape.Flip, shape.Roll, shape.Tri, pointwise.Where, indexing.Gather,
            indexing.IndexSelect)
    math = (elementwise.Add, elementwise.Sub, elementwise.Mul, elementwise.Div,
            elementwise.Neg, elementwise.Exp, elementwise.Log, elementwise.Maximum,
            elementwise.Minimum, pointwise.Eq, pointwise.Ne, pointwise.Lt, pointwise.Le,
            pointwise.Gt, pointwise.Ge, pointwise.IsNan, pointwise.IsInf, pointwise.IsFinite,
            reduce.Sum)
    for classes, policy in ((own, "own"), (move, "move"), (math, "math")):
        for cls in classes:
            cls._codes = policy
    # index_put/setitem write bytes; accumulating is a sum that the CPU rounds per element
    indexing.IndexPut._codes = staticmethod(lambda args: None if args[3] else "move")
    _function.device_codes = dispatch


_install()
