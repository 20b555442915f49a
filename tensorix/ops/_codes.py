"""The storage-only float formats on CUDA: uint8 codes, one mechanism (docs/gpu.md).

CuPy 14 has no float8_e4m3fn / float8_e5m2 / float8_e8m0fnu / float6_* / float4_e2m1fn arrays
("Unsupported dtype"; numerics spec R8), so on CUDA a tensor of those dtypes keeps its tensorix
dtype in ``Tensor._dtype`` and its data as uint8 codes: the same bytes as the ml_dtypes array
the CPU holds (``dtype.storage(xp)`` names the array dtype). Conversions go through tables
built once with ml_dtypes on the host, so they are bit-identical to the CPU's casts:

* decode: code -> any dtype, a 256-entry table per (format, target) (``table[codes]``);
* encode: any real dtype -> float32 on the device, then a table indexed by the float32 sign,
  exponent, the format's mantissa bits plus one (the round bit) and a sticky bit. A correctly
  rounded cast depends on nothing else, so the table gives exactly ml_dtypes' result, quirks
  included (float64 is double-rounded through float32 as ml_dtypes does, NaN to fp6/fp4 gives
  a zero, E8M0 rounds half up); checked against ml_dtypes on every float32 subnormal, every
  float16/bfloat16 and millions of other inputs.

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

import functools

import ml_dtypes
import numpy as np

from .. import backend
from .. import dtypes as dt
from ..autograd import function as _function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor, _make

__all__ = ["on_codes", "encode", "decode", "scalar_code", "cast", "to_device", "dispatch"]

_U8 = np.dtype(np.uint8)


def on_codes(t) -> bool:
    """True for a tensor of a storage-only format held as uint8 codes (on CUDA)."""
    return t._dtype.storage_only and type(t._data) is not np.ndarray


# -- tables (host, built once with ml_dtypes) ---------------------------------------------------
@functools.cache
def _encode_table_np(name):
    fmt = dt._BY_NAME[name].np
    kept = ml_dtypes.finfo(fmt).nmant + 1  # mantissa bits, plus the round bit
    shift = 23 - kept
    keys = np.arange(1 << (9 + kept + 1), dtype=np.uint32)
    bits = ((keys >> 1) << shift) | (keys & 1)  # the lowest bit stands for the sticky bits
    with np.errstate(all="ignore"):
        codes = bits.view(np.float32).astype(fmt).view(np.uint8)
    return shift, codes


@functools.cache
def _decode_table_np(name, target):
    with np.errstate(all="ignore"):  # ml_dtypes' own TypeError where it has no such cast
        return np.arange(256, dtype=np.uint8).view(dt._BY_NAME[name].np).astype(target)


_DEVICE_TABLES: dict = {}


def _on_device(host, like, key):
    """A host table on the device of array ``like``: one transfer per table and device."""
    xp, dev = backend.array_module(like), like.device.id
    full_key = (id(xp), dev, key)
    table = _DEVICE_TABLES.get(full_key)
    if table is None:
        with xp.cuda.Device(dev):
            table = _DEVICE_TABLES[full_key] = xp.asarray(host)
    return table


# -- conversions ---------------------------------------------------------------------------------
def encode(arr, d: dt.dtype):
    """uint8 codes of format ``d`` for a device array of any real, integer or bool dtype,
    rounded exactly as ml_dtypes rounds on the CPU."""
    if arr.dtype.kind == "c":
        arr = arr.real
    x = arr if arr.dtype == np.float32 else arr.astype(np.float32)
    shift, host = _encode_table_np(d.name)
    table = _on_device(host, arr, ("enc", d.name))
    bits = (x if x.flags.c_contiguous else x.copy()).view(np.uint32)
    key = ((bits >> shift) << 1) | ((bits & ((1 << shift) - 1)) != 0)
    return table[key]


def decode(codes, d: dt.dtype, target):
    """Device codes of format ``d`` as ``target`` (a NumPy dtype; uint8 for a format's codes
    of another format), as ml_dtypes converts on the CPU."""
    target = np.dtype(target)
    host = _decode_table_np(d.name, target)
    if target in dt.STORAGE_ONLY_NP:
        host = host.view(np.uint8)
    return _on_device(host, codes, ("dec", d.name, target.name, target.str))[codes]


def scalar_code(value, d: dt.dtype) -> int:
    """The code of a Python number in format ``d``, converted on the host as the CPU converts
    it (``full``, a scalar operand)."""
    with np.errstate(all="ignore"):
        return int(np.asarray(value, dtype=d.np).view(np.uint8))


def cast(a: Tensor, d: dt.dtype) -> Tensor:
    """``a`` (on CUDA) cast to ``d`` where either side is a storage-only format."""
    data = a._data
    if a._dtype.storage_only:
        out = decode(data, a._dtype, d.np)
    else:
        if data.dtype.kind == "c":
            data = data.real
        out = encode(data, d)
    return _make(out, d)


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
