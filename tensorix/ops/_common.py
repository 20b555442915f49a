"""Boundary helpers shared by the op families: argument lifting and checks.

Python scalars are lifted to 0-d tensors here, once, so one ``Add`` serves tensor+tensor and
tensor+scalar alike; dtype promotion happens here too, so op forwards see operands of the
result dtype.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import _codec
from .. import dtypes as dt
from ..tensor import Tensor, _make

# the dtypes a raw-array backward (``grad_mode.untraced_first_order``) computes as NumPy does
RAW_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

__all__ = ["lift", "promote", "check_tensor", "norm_dim", "norm_dims", "float_input",
           "same_device", "check_at_least_1d", "check_same_dtype"]


def check_tensor(x, op: str, arg: str = "input") -> Tensor:
    """Raise a TypeError naming ``op`` and ``arg`` unless ``x`` is a Tensor."""
    if type(x) is not Tensor and not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' must be a Tensor, not {type(x).__name__}")
    return x


def lift(x, dtype: dt.dtype, like: Tensor | None = None, op: str = "op",
         arg: str = "other") -> Tensor:
    """A Tensor of ``dtype``: a Python number becomes a 0-d tensor on ``like``'s device; a
    Tensor of another dtype is cast (differentiably)."""
    if type(x) is Tensor:
        return x if x._dtype is dtype else x.to(dtype)
    if isinstance(x, (numbers.Number, np.generic)):
        xp = np if like is None else like.xp
        return _make(_scalar(xp, x, dtype.np), dtype)
    if isinstance(x, Tensor):
        return x if x._dtype is dtype else x.to(dtype)
    raise TypeError(f"{op}(): argument '{arg}' must be a Tensor or a number, "
                    f"not {type(x).__name__}")


def _scalar(xp, value, dtype):
    """A 0-d array of a number on xp's device. On a GPU ``full`` fills it in a kernel that
    takes the number as an argument; ``asarray`` would copy it from the host (a transfer per
    ``x * 0.5``). On the CPU asarray is the faster of the two."""
    if dtype in dt.LOW_PRECISION_NP and not (
            xp is np and dtype not in dt.STORAGE_ONLY_NP and type(value) is float and
            float(np.float32(value)) == value):  # (bf16 of a float32 value: one rounding)
        # rounded by the one codec (CUDA: uint8 codes, or bf16)
        arr = _codec.cast_array(np.asarray(value), dt._BY_NP[dtype])
        if xp is np:
            return arr
        value, dtype = (arr.view(np.uint8), np.uint8) if arr.dtype in dt.STORAGE_ONLY_NP else \
            (arr.astype(np.float32), dtype)
        return xp.full((), value.item(), dtype=dtype)
    if xp is np:
        return xp.asarray(value, dtype=dtype)
    return xp.full((), value, dtype=dtype)


def same_device(op, *tensors):
    """Raise when tensors of one op live on different devices."""
    devs = {t.device for t in tensors if isinstance(t, Tensor) and t._data.ndim >= 0}
    if len(devs) > 1:
        names = " and ".join(sorted(str(d) for d in devs))
        raise RuntimeError(f"{op}(): expected all tensors to be on the same device, but found "
                           f"at least two devices, {names}")


def promote(a, b, op: str):
    """Lift and promote two operands of a binary op; returns (a, b) as Tensors of one dtype."""
    if type(a) is Tensor and type(b) is Tensor:
        if a._dtype is b._dtype:
            if type(a._data) is not type(b._data):
                same_device(op, a, b)
            return a, b
        d = dt.result_type(a, b)
        if type(a._data) is not type(b._data):
            same_device(op, a, b)
        return lift(a, d, op=op), lift(b, d, op=op)
    # fast path for the common ``x * 0.5``: a Python float or int with a floating/complex
    # tensor takes the tensor's dtype (PyTorch's rule), skipping result_type and lift
    tb = type(b)
    if (tb is float or tb is int) and type(a) is Tensor and a._dtype.category >= 2:
        return a, _make(_scalar(a.xp, b, a._dtype.np), a._dtype)
    ta = type(a)
    if (ta is float or ta is int) and tb is Tensor and b._dtype.category >= 2:
        return _make(_scalar(b.xp, a, b._dtype.np), b._dtype), b
    if type(a) is not Tensor and not isinstance(a, Tensor):
        if not isinstance(b, Tensor):
            raise TypeError(f"{op}(): expected at least one Tensor operand, got "
                            f"{type(a).__name__} and {type(b).__name__}")
        d = _result_type(a, b, op)
        return lift(a, d, b, op, "input"), lift(b, d, op=op)
    d = _result_type(a, b, op)
    return lift(a, d, op=op, arg="input"), lift(b, d, a, op)


def _result_type(a, b, op):
    """dt.result_type, naming the op and argument when an operand is not a number."""
    for arg, x in (("input", a), ("other", b)):
        if not isinstance(x, (Tensor, numbers.Number)):
            raise TypeError(f"{op}(): argument '{arg}' must be a Tensor or a number, not "
                            f"{type(x).__name__}")
    return dt.result_type(a, b)


def float_input(x, op: str) -> Tensor:
    """``x`` as a floating tensor: integers and bool go to the default dtype, like PyTorch."""
    x = check_tensor(x, op)
    if x._dtype.category < 2:
        return x.to(dt.get_default_dtype())
    return x


def check_same_dtype(op: str, *named) -> None:
    """Raise torch's RuntimeError unless the tensors of ``named`` ((argument, tensor) pairs;
    None tensors are skipped) share one dtype. Products (matmul, conv, ...) do not promote,
    as in torch: a float64 weight must not silently turn a float32 model into float64."""
    named = [(arg, t) for arg, t in named if t is not None]
    first = named[0][1]._dtype
    if any(t._dtype is not first for _, t in named[1:]):
        got = ", ".join(f"{arg} {t._dtype.name}" for arg, t in named)
        raise RuntimeError(f"{op}(): expected all inputs to have the same dtype, but got "
                           f"{got}; cast one with .to()")


def norm_dim(dim, ndim: int, op: str, scalar: bool = True) -> int:
    """``dim`` in [0, ndim), raising IndexError outside [-ndim, ndim). A 0-d tensor accepts
    dims -1 and 0 (as torch: it acts as one dimension of size 1) and gives 0; ops that torch
    refuses any dim on 0-d input (roll, take_along_dim, ...) pass ``scalar=False``."""
    n = max(ndim, 1)
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{op}(): argument 'dim' must be an int, not {type(dim).__name__}")
    if not ndim and not scalar:
        raise IndexError(f"{op}(): dimension specified as {dim} but tensor has no dimensions")
    if not -n <= dim < n:
        raise IndexError(f"{op}(): dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return int(dim) % n


def check_at_least_1d(x, op: str) -> None:
    """Raise torch's RuntimeError for ops that refuse a 0-d tensor outright (split, chunk,
    narrow, ...), before any dim check could give a different error."""
    if not x.ndim:
        raise RuntimeError(f"{op}() cannot be applied to a 0-dim tensor: it expects at least "
                           "a 1-dimensional tensor")


def norm_dims(dim, ndim: int, op: str) -> tuple:
    """Normalise ``dim`` (None, int or sequence) to a sorted tuple of axes; None means all."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        dim = (dim,)
    dims = tuple(norm_dim(d, ndim, op) for d in dim)  # checked even on 0-d input
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"{op}(): dim {tuple(dim)} appears multiple times in the list of "
                           "dims")
    # a 0-d tensor has no axis to reduce over: dim -1 or 0 leaves it as it is
    return tuple(sorted(dims)) if ndim else ()
