"""Tensor creation: tensor, as_tensor, from_numpy, zeros, ones, full, empty, ranges, eye, *_like.

Random creation (rand, randn, ...) lives in ``ops/random.py`` with the Generator.
"""

from __future__ import annotations

import math

import numpy as np

from .. import backend
from .. import dtypes as dt
from ..tensor import Tensor, _make

__all__ = ["tensor", "as_tensor", "asarray", "from_numpy", "from_dlpack", "zeros", "ones",
           "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like", "arange",
           "linspace", "logspace", "eye", "scalar_tensor"]


def _infer_dtype(arr, from_python):
    """PyTorch's inference: Python floats -> default dtype, ints -> int64, arrays keep theirs."""
    if not from_python:
        return dt.from_numpy_dtype(arr.dtype)
    if arr.dtype.kind == "f":
        return dt.get_default_dtype()
    if arr.dtype.kind == "c":
        return dt.get_default_dtype().to_complex()
    if arr.dtype.kind in "iu":
        return dt.int64
    if arr.dtype.kind == "b":
        return dt.bool
    return dt.from_numpy_dtype(arr.dtype)


def _unwrap_nested(data):
    if isinstance(data, Tensor):
        return data.__array__()
    if isinstance(data, (list, tuple)):
        return [_unwrap_nested(d) for d in data]
    return data


def _to_array(data, dtype=None, device=None, copy=True):
    if isinstance(data, Tensor):
        arr = data._data
        d = dt.as_dtype(dtype) if dtype is not None else data._dtype
    else:
        from_python = isinstance(data, (list, tuple, int, float, complex, bool))
        if isinstance(data, (list, tuple)):
            data = _unwrap_nested(data)
        elif not isinstance(data, (np.ndarray, np.generic, int, float, complex, bool)) and \
                not hasattr(data, "__array__") and not hasattr(data, "__dlpack__"):
            raise TypeError(f"tensor(): could not infer a dtype from data of type "
                            f"{type(data).__name__}; expected a number, a (nested) sequence "
                            "or an array")
        d = dt.as_dtype(dtype) if dtype is not None else None
        if d is None and not isinstance(data, np.ndarray) and hasattr(data, "__array__") and \
                backend.array_module(data) is not np:
            arr = data  # a cupy array stays on its device
        else:
            arr = np.asarray(data)
            if arr.dtype == object:
                raise TypeError("tensor(): could not convert ragged or mixed data to a tensor")
        if d is None:
            d = _infer_dtype(arr, from_python)
    dev = backend.Device(device) if device is not None else backend.get_device(arr)
    arr = backend.to_device(arr, dev)
    xp = dev.xp
    if arr.dtype != d.np:
        arr = _cast_array(arr, d)
    elif copy:
        arr = xp.array(arr, copy=True)
    return arr


def _cast_array(arr, d):
    """Cast an array to dtype ``d``; low-precision targets go through float32 when needed."""
    if arr.dtype.kind == "c" and d.category < 3:
        arr = arr.real
    return arr.astype(d.np)


def tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor copying ``data`` (number, nested sequence, array or Tensor).

    Example: ``tensorix.tensor([[1, 2], [3, 4]], dtype=tensorix.float32)``.
    """
    t = _make(_to_array(data, dtype, device))
    if requires_grad:
        t.requires_grad_()
    return t


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like :func:`tensor` but shares memory with an array or Tensor when it can."""
    if isinstance(data, Tensor) and (dtype is None or dt.as_dtype(dtype) is data.dtype) and \
            (device is None or backend.Device(device) is data.device):
        return data
    return _make(_to_array(data, dtype, device, copy=False))


asarray = as_tensor


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with a NumPy array (writes show through both ways)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray, got {type(array).__name__}")
    return _make(array, dt.from_numpy_dtype(array.dtype))


def from_dlpack(ext) -> Tensor:
    """A tensor sharing memory with any object that implements ``__dlpack__``."""
    if not hasattr(ext, "__dlpack__"):
        raise TypeError(f"from_dlpack(): expected an object with __dlpack__, got "
                        f"{type(ext).__name__}")
    dev_type, _ = ext.__dlpack_device__()
    xp = backend.Device("cuda").xp if dev_type == 2 else np
    return _make(xp.from_dlpack(ext))


def _shape(size, op):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"{op}(): size must be a sequence of ints, got {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"{op}(): trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
    return tuple(int(s) for s in size)


def _new(fn, size, dtype, device, requires_grad, op, *args):
    d = dt.as_dtype(dtype)
    xp = backend.Device(device or "cpu").xp
    t = _make(getattr(xp, fn)(_shape(size, op), *args, dtype=d.np), d)
    return t.requires_grad_() if requires_grad else t


def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros. Example: ``tensorix.zeros(2, 3)``."""
    return _new("zeros", size, dtype, device, requires_grad, "zeros")


def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones. Example: ``tensorix.ones((2, 3), dtype=tensorix.int64)``."""
    return _new("ones", size, dtype, device, requires_grad, "ones")


def empty(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor (memory contents unspecified)."""
    return _new("empty", size, dtype, device, requires_grad, "empty")


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor filled with ``fill_value``; dtype inferred from the value like PyTorch."""
    if dtype is None:
        dtype = dt.scalar_dtype(fill_value.item() if isinstance(fill_value, Tensor)
                                else fill_value)
    d = dt.as_dtype(dtype)
    xp = backend.Device(device or "cpu").xp
    t = _make(xp.full(_shape((size,) if isinstance(size, int) else size, "full"),
                      fill_value, dtype=d.np), d)
    return t.requires_grad_() if requires_grad else t


def scalar_tensor(value, dtype=None, device=None) -> Tensor:
    return full((), value, dtype=dtype or dt.get_default_dtype(), device=device)


def _like(fn, x, dtype, device, requires_grad, *args):
    d = x.dtype if dtype is None else dtype
    dev = x.device if device is None else device
    return fn(tuple(x.shape), *args, dtype=d, device=dev, requires_grad=requires_grad)


def zeros_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(zeros, input, dtype, device, requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(ones, input, dtype, device, requires_grad)


def empty_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(empty, input, dtype, device, requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(full, input, dtype, device, requires_grad, fill_value)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Values in ``[start, end)`` spaced by ``step``; int64 for integer arguments.

    Example: ``tensorix.arange(5)`` is ``tensor([0, 1, 2, 3, 4])``.
    """
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange(): upper bound and larger bound inconsistent with step "
                           f"sign (start={start}, end={end}, step={step})")
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = dt.int64 if is_int else dt.get_default_dtype()
    d = dt.as_dtype(dtype)
    xp = backend.Device(device or "cpu").xp
    n = max(0, math.ceil((end - start) / step))
    if d.category < 2 and all(isinstance(v, (int, np.integer)) for v in (start, end, step)):
        data = xp.arange(int(start), int(end), int(step), dtype=np.int64)
    else:  # float64 steps, like PyTorch, so the last element is not off by rounding
        data = xp.arange(n, dtype=np.float64) * step + start
    t = _make(data.astype(d.np), d)
    return t.requires_grad_() if requires_grad else t


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    if not isinstance(steps, (int, np.integer)) or steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative, got {steps}")
    d = dt.as_dtype(dtype)
    xp = backend.Device(device or "cpu").xp
    t = _make(xp.linspace(start, end, int(steps), dtype=np.float64).astype(d.np), d)
    return t.requires_grad_() if requires_grad else t


def logspace(start, end, steps, base=10.0, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    """``base ** linspace(start, end, steps)``."""
    d = dt.as_dtype(dtype)
    xp = backend.Device(device or "cpu").xp
    vals = xp.power(float(base), xp.linspace(start, end, int(steps), dtype=np.float64))
    t = _make(vals.astype(d.np), d)
    return t.requires_grad_() if requires_grad else t


def eye(n, m=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An ``n x m`` identity matrix."""
    d = dt.as_dtype(dtype)
    xp = backend.Device(device or "cpu").xp
    t = _make(xp.eye(n, n if m is None else m, dtype=d.np), d)
    return t.requires_grad_() if requires_grad else t


def _rebuild(array, dtype_name, requires_grad, device):
    """Unpickle a tensor (see Tensor.__reduce__)."""
    return tensor(array, dtype=dt._BY_NAME[dtype_name], device=device,
                  requires_grad=requires_grad)


TENSOR_METHODS: dict = {}
