"""Tensor creation: tensor, as_tensor, from_numpy, from_dlpack, zeros, ones, full, empty, ranges,
eye, tril/triu indices and the ``*_like`` variants.

Dtype inference follows PyTorch: Python ``float`` gives the default dtype, ``int`` gives int64,
``bool`` gives bool, ``complex`` gives the default complex dtype; NumPy arrays, NumPy scalars and
tensors keep their dtype; a (nested) sequence takes the promotion of all its leaves. Random
creation (rand, randn, ...) lives in ``ops/random.py`` with the Generator.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _codec, backend
from .. import dtypes as dt
from ..autograd.function import Function
from ..tensor import Size, Tensor, _copy_kinds, _make, register_creation
from .unary import cos, imag, real, sin

__all__ = ["tensor", "as_tensor", "asarray", "from_numpy", "from_dlpack", "zeros", "ones",
           "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like", "arange",
           "linspace", "logspace", "eye", "scalar_tensor", "tril_indices", "triu_indices",
           "complex", "polar"]

_pycomplex = complex  # the builtin: this module defines tensorix.complex below
_PY_SCALARS = (bool, int, float, _pycomplex)


# -- inference ---------------------------------------------------------------------------------
def _python_scalar_dtype(types):
    """The promoted dtype of a set of Python scalar types (bool < int < float < complex)."""
    if _pycomplex in types:
        return dt.get_default_dtype().to_complex()
    if float in types:
        return dt.get_default_dtype()
    return dt.int64 if int in types else dt.bool


def _leaf_dtype(x, op):
    """The dtype one leaf of the data takes part in inference as."""
    if isinstance(x, Tensor):
        return x._dtype
    if isinstance(x, (np.ndarray, np.generic)):
        if x.dtype == object:
            raise TypeError(f"{op}(): can't convert an array of dtype object")
        return _np_dtype(x.dtype, op)
    if isinstance(x, _PY_SCALARS):
        return _python_scalar_dtype({type(x)})
    if isinstance(x, numbers.Number):  # e.g. fractions.Fraction: treated as a float
        return dt.get_default_dtype()
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{op}(): invalid data type '{type(x).__name__}'")
    raise RuntimeError(f"{op}(): could not infer dtype of {type(x).__name__}")


def _np_dtype(np_dtype, op):
    try:
        return dt.from_numpy_dtype(np_dtype)
    except TypeError:
        names = ", ".join(d.name for d in dt.ALL)
        raise TypeError(f"{op}(): can't convert an array of type {np.dtype(np_dtype)}; the "
                        f"supported types are: {names}") from None


def _scan(data, depth, shape, op):
    """Walk a nested sequence: record its shape in ``shape`` (a list whose last entry is the
    number of dimensions once a leaf fixed it, checking the data is not ragged) and return the
    promoted dtype of its leaves (None for an empty sequence)."""
    if isinstance(data, (list, tuple)):
        n = len(data)
        _check_dim(shape, depth, n, op)
        types = set(map(type, data))
        if types and types <= set(_PY_SCALARS):  # a row of plain numbers: no per-item walk
            _leaf_shape((), depth + 1, shape, op)
            return _python_scalar_dtype(types)
        result = None
        for item in data:
            d = _scan(item, depth + 1, shape, op)
            result = d if result is None else (result if d is None else
                                               _promote_leaf(result, d, op))
        return result
    d = _leaf_dtype(data, op)
    _leaf_shape(tuple(data.shape) if isinstance(data, Tensor) else tuple(np.shape(data)),
                depth, shape, op)
    return d


def _check_dim(shape, depth, n, op):
    dims, ndim = shape
    if ndim is not None and depth >= ndim:
        raise ValueError(f"{op}(): expected a scalar at dim {depth} (got a sequence of length "
                         f"{n})")
    if len(dims) == depth:
        dims.append(n)
    elif dims[depth] != n:
        raise ValueError(f"{op}(): expected sequence of length {dims[depth]} at dim {depth} "
                         f"(got {n})")


def _leaf_shape(leaf_shape, depth, shape, op):
    dims, ndim = shape
    for k, n in enumerate(leaf_shape):
        _check_dim(shape, depth + k, n, op)
    full = depth + len(leaf_shape)
    if ndim is None and len(dims) > full:
        raise ValueError(f"{op}(): expected sequence of length {dims[full]} at dim {full} "
                         "(got a scalar)")
    if ndim is not None and ndim != full:
        raise ValueError(f"{op}(): expected a sequence at dim {full} (got a scalar)")
    shape[1] = full


def _promote_leaf(a, b, op):
    try:
        return dt.promote_types(a, b)
    except TypeError as e:
        raise TypeError(f"{op}(): {e}") from None


def _unwrap_nested(data):
    """Tensors inside a sequence become host arrays (NumPy then stacks them)."""
    if isinstance(data, Tensor):
        return data.__array__()
    if isinstance(data, (list, tuple)):
        if set(map(type, data)) <= set(_PY_SCALARS):
            return data
        return [_unwrap_nested(d) for d in data]
    return data


def _from_sequence(data, dtype, op):
    shape: list = [[], None]
    inferred = _scan(data, 0, shape, op)
    d = dt.as_dtype(dtype) if dtype is not None else (inferred or dt.get_default_dtype())
    src = (inferred or d)
    # build in a dtype that holds every leaf exactly, then cast (complex -> real drops imag)
    build = np.complex128 if src.is_complex else np.float64 if src.is_floating_point else \
        np.int64 if src.category == 1 else np.bool_
    try:
        arr = np.asarray(_unwrap_nested(data), dtype=build).reshape(shape[0])
    except OverflowError:
        raise RuntimeError(f"{op}(): value cannot be converted to type {src.name} without "
                           "overflow") from None
    return arr, d


def _to_array(data, dtype=None, device=None, copy=True, op="tensor"):
    """The backend array for ``data`` in ``dtype`` on ``device`` (a copy unless ``copy`` is
    False and no conversion is needed)."""
    return _to_array_d(data, dtype, device, copy, op)[0]


def _tensor_from(data, dtype=None, device=None, copy=True, op="tensor") -> Tensor:
    arr, d = _to_array_d(data, dtype, device, copy, op)
    return _make(arr, d if d.storage_only else None)


def _to_array_d(data, dtype, device, copy, op):
    """``_to_array`` and the tensorix dtype (the array's own, except for CUDA codes)."""
    if isinstance(data, Tensor):
        arr, d = data._data, dt.as_dtype(dtype) if dtype is not None else data._dtype
    elif isinstance(data, (list, tuple)):
        arr, d = _from_sequence(data, dtype, op)
    elif isinstance(data, _PY_SCALARS):
        arr, d = _from_sequence([data], dtype, op)
        arr = arr.reshape(())
    elif isinstance(data, (np.ndarray, np.generic)):
        arr = np.asarray(data)
        d = dt.as_dtype(dtype) if dtype is not None else _leaf_dtype(arr, op)
    elif hasattr(data, "__cuda_array_interface__") or hasattr(data, "__array__"):
        # cupy arrays stay on their device; other array-likes convert through NumPy
        arr = data if backend.array_module(data) is not np else np.asarray(data)
        d = dt.as_dtype(dtype) if dtype is not None else _np_dtype(arr.dtype, op)
    elif hasattr(data, "__dlpack__"):
        arr = from_dlpack(data)._data
        d = dt.as_dtype(dtype) if dtype is not None else _np_dtype(arr.dtype, op)
    else:
        _leaf_dtype(data, op)  # raises the right error for str, None, objects
        arr, d = _from_sequence([data], dtype, op)
    dev = backend.Device(device) if device is not None else backend.get_device(arr)
    if (d.storage_only or isinstance(data, Tensor) and data._dtype.storage_only) and \
            (dev.type != "cpu" or type(arr) is not np.ndarray):  # CUDA codes: ops/_codes.py
        out = (data.detach() if isinstance(data, Tensor) else _make(arr)).to(dev).to(d)
        same = out._data is arr
        return (dev.xp.array(out._data, copy=True) if copy and same else out._data), d
    arr = backend.to_device(arr, dev)
    if arr.dtype != d.np:
        return _cast_array(arr, d), d
    return (dev.xp.array(arr, copy=True) if copy else arr), d


def _cast_array(arr, d):
    """Cast an array to dtype ``d`` (complex to real keeps the real part, like PyTorch)."""
    if dt._BY_NP.get(arr.dtype) is not None and _codec.needs_codec(dt._BY_NP[arr.dtype], d):
        return _codec.cast_array(arr, d)  # low-precision formats: one exact codec
    if arr.dtype.kind == "c" and not d.is_complex:
        arr = arr.real
    if d.category < 2 and arr.dtype.kind == "f":
        xp = backend.array_module(arr)
        if d is dt.bool:
            return arr != 0
        arr = xp.trunc(arr.astype(np.float64))
        with np.errstate(invalid="ignore"):  # nan/inf to int: unspecified, as in PyTorch
            return arr.astype(d.np)
    return arr.astype(d.np)


def _finish(t, requires_grad):
    return t.requires_grad_() if requires_grad else t


# -- from data ---------------------------------------------------------------------------------
def tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor copying ``data``: a number, a (nested) sequence of numbers / tensors /
    arrays, a NumPy array, a Tensor or any array-like.

    Example::

        >>> tensorix.tensor([[1, 2], [3, 4]])          # int64
        >>> tensorix.tensor([1, 2.5])                    # float32 (the default dtype)
        >>> tensorix.tensor(np.ones(3, np.float16))      # float16, like the array
    """
    return _finish(_tensor_from(data, dtype, device), requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like :func:`tensor` but shares memory with an array or Tensor when no dtype or device
    conversion is needed (``from_numpy`` semantics for arrays).

    Example: ``tensorix.as_tensor(np.zeros(3))`` writes through to the array.
    """
    if isinstance(data, Tensor) and (dtype is None or dt.as_dtype(dtype) is data.dtype) and \
            (device is None or backend.Device(device) is data.device):
        return data
    return _tensor_from(data, dtype, device, copy=False, op="as_tensor")


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    """``torch.asarray``: share memory when possible; ``copy=True`` forces a copy and
    ``copy=False`` raises if one is needed.

    Example: ``tensorix.asarray([1, 2], dtype=tensorix.float64)``.
    """
    if copy is True:
        return _finish(_tensor_from(obj, dtype, device, op="asarray"), requires_grad)
    out = as_tensor(obj, dtype, device)
    if copy is False and isinstance(obj, (Tensor, np.ndarray)):
        src = obj._data if isinstance(obj, Tensor) else obj
        if out._data is not src and (backend.get_device(out._data) is not backend.get_device(src)
                                     or not backend.array_module(src).shares_memory(out._data,
                                                                                    src)):
            raise ValueError("asarray(): copy=False but the conversion needs a copy (dtype or "
                             "device differ)")
    return _finish(out, requires_grad) if not out.requires_grad else out


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with a NumPy array (writes show through both ways).

    Example: ``a = np.zeros(3); t = tensorix.from_numpy(a); t[0] = 1`` sets ``a[0]``.
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type(array).__name__})")
    return _make(array, _np_dtype(array.dtype, "from_numpy"))


def from_dlpack(ext) -> Tensor:
    """A tensor sharing memory with an object implementing ``__dlpack__`` (a torch tensor, a
    NumPy or CuPy array, another framework's tensor).

    Example: ``tensorix.from_dlpack(torch.arange(3))``.
    """
    if not hasattr(ext, "__dlpack__") or not hasattr(ext, "__dlpack_device__"):
        raise TypeError(f"from_dlpack(): expected an object with __dlpack__ and "
                        f"__dlpack_device__, got {type(ext).__name__}")
    if isinstance(ext, Tensor):
        return ext.detach()
    dev_type, _ = ext.__dlpack_device__()
    if dev_type not in (1, 2):  # kDLCPU, kDLCUDA
        raise BufferError(f"from_dlpack(): unsupported DLPack device type {dev_type}; expected "
                          "a CPU or CUDA tensor")
    xp = backend.Device("cuda").xp if dev_type == 2 else np
    try:
        arr = xp.from_dlpack(ext)
    except (BufferError, TypeError, RuntimeError) as e:
        raise BufferError(f"from_dlpack(): the array module can't import this tensor ({e}); "
                          "bfloat16 and float8 have no DLPack support in NumPy, cast first"
                          ) from None
    return _make(arr, _np_dtype(arr.dtype, "from_dlpack"))


# -- filled --------------------------------------------------------------------------------------
def _shape(size, op):
    """Normalise ``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` and ``f(Size)`` to a tuple."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = tuple(size[0])
    for s in size:
        if isinstance(s, Tensor) and s.ndim == 0 and s.dtype.category == 1:
            s = s.item()
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"{op}(): argument 'size' must be a tuple of ints, but found "
                            f"element of type {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"{op}(): trying to create tensor with negative dimension {s}: "
                               f"{[int(v) for v in size]}")
    return tuple(int(s) for s in size)


def _xp(device):
    return backend.Device(device if device is not None else "cpu").xp


def _new(fn, size, dtype, device, requires_grad, op):
    d = dt.as_dtype(dtype)
    xp = _xp(device)
    if fn == "ones" and d.storage_only and xp is not np:  # uint8 codes on CUDA: 1's code
        return full(_shape(size, op), 1, dtype=d, device=device, requires_grad=requires_grad)
    return _finish(_make(getattr(xp, fn)(_shape(size, op), dtype=d.storage(xp)), d),
                   requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros of shape ``size`` (default dtype unless ``dtype``).

    Example: ``tensorix.zeros(2, 3)`` or ``tensorix.zeros((2, 3))``.
    """
    return _new("zeros", size, dtype, device, requires_grad, "zeros")


def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones. Example: ``tensorix.ones((2, 3), dtype=tensorix.int64)``."""
    return _new("ones", size, dtype, device, requires_grad, "ones")


def empty(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor (memory contents unspecified). Example: ``tensorix.empty(4)``."""
    return _new("empty", size, dtype, device, requires_grad, "empty")


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value``; the dtype is inferred from the
    value like PyTorch (bool, int64, the default float or complex dtype).

    Example: ``tensorix.full((2, 2), 7)`` is an int64 tensor of sevens.
    """
    if isinstance(fill_value, Tensor):
        if fill_value.numel() != 1:
            raise RuntimeError(f"full(): fill_value must be a number or a one-element tensor, "
                               f"got a tensor with {fill_value.numel()} elements")
        fill_value = fill_value.item()
    if dtype is None:
        dtype = dt.scalar_dtype(fill_value.item() if isinstance(fill_value, np.generic)
                                else fill_value)
    d = dt.as_dtype(dtype)
    shape = _shape((size,), "full")
    xp = _xp(device)
    if isinstance(fill_value, _pycomplex) and not d.is_complex:
        raise RuntimeError(f"full(): value cannot be converted to type {d.name} without "
                           "overflow")
    data = xp.empty(shape, dtype=d.storage(xp))
    if d.low_precision and not isinstance(fill_value, _pycomplex):  # rounded by the one codec
        fill_value = _codec.cast_array(np.asarray(fill_value), d)
        if xp is not np:  # uint8 codes on CUDA, or the exact (float32) value of a bf16
            fill_value = int(fill_value.view(np.uint8)) if d.storage_only else \
                float(fill_value.astype(np.float32))
    data[...] = fill_value
    return _finish(_make(data, d), requires_grad)


def scalar_tensor(s, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A 0-d tensor holding ``s``, of the default dtype unless ``dtype`` (like PyTorch, even
    for ints and bools). Example: ``tensorix.scalar_tensor(3)`` is ``tensor(3.)``."""
    if isinstance(s, Tensor):
        s = s.item()
    return full((), s, dtype=dtype or dt.get_default_dtype(), device=device,
                requires_grad=requires_grad)


def _like(fn, input, dtype, device, requires_grad, op, *args):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not "
                        f"{type(input).__name__}")
    d = input.dtype if dtype is None else dtype
    dev = input.device if device is None else device
    return fn(tuple(input.shape), *args, dtype=d, device=dev, requires_grad=requires_grad)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    """Zeros with the shape (and, unless given, dtype and device) of ``input``."""
    return _like(zeros, input, dtype, device, requires_grad, "zeros_like")


def ones_like(input, *, dtype=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    """Ones with the shape (and, unless given, dtype and device) of ``input``."""
    return _like(ones, input, dtype, device, requires_grad, "ones_like")


def empty_like(input, *, dtype=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    """An uninitialised tensor shaped like ``input``."""
    return _like(empty, input, dtype, device, requires_grad, "empty_like")


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    """``fill_value`` in the shape, dtype and device of ``input`` (dtype kept, unlike
    :func:`full`). Example: ``tensorix.full_like(x, 0.5)``."""
    return _like(full, input, dtype, device, requires_grad, "full_like", fill_value)


# -- ranges ------------------------------------------------------------------------------------
def _number(v, op, arg):
    if isinstance(v, Tensor):
        if v.numel() != 1:
            raise RuntimeError(f"{op}(): argument '{arg}' must be a number or a one-element "
                               f"tensor, got a tensor with {v.numel()} elements")
        return v.item(), v.dtype
    if isinstance(v, np.generic):
        v = v.item()
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise TypeError(f"{op}(): argument '{arg}' must be a real number, not "
                        f"{type(v).__name__}")
    return v, dt.scalar_dtype(v)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Values in ``[start, end)`` spaced by ``step``: int64 when every argument is an integer,
    the default dtype otherwise. Floats are computed as ``start + i * step`` in float64.

    Example: ``tensorix.arange(5)`` is ``tensor([0, 1, 2, 3, 4])``;
    ``tensorix.arange(1, 2.5, 0.5)`` is ``tensor([1.0000, 1.5000, 2.0000])``.
    """
    if end is None:
        start, end = 0, start
    (start, ds), (end, de), (step, dst) = (_number(start, "arange", "start"),
                                           _number(end, "arange", "end"),
                                           _number(step, "arange", "step"))
    if dtype is None:
        is_int = all(d.category <= 1 for d in (ds, de, dst))
        dtype = dt.int64 if is_int else dt.get_default_dtype()
    d = dt.as_dtype(dtype)
    if d.category <= 1:  # integer results: the bounds are truncated first, like PyTorch
        start, end, step = int(start), int(end), int(step)
    for v in (start, end):
        if not math.isfinite(v):
            raise RuntimeError(f"arange(): unsupported range: {start} -> {end}")
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange(): upper bound and lower bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    xp = _xp(device)
    if d.category <= 1:
        data = xp.arange(start, end, step, dtype=np.int64)
    else:
        n = max(0, math.ceil((end - start) / step))
        data = xp.arange(n, dtype=np.float64) * step + start
    return _finish(_make(data.astype(d.np), d), requires_grad)


def _steps(steps, op):
    if isinstance(steps, Tensor):
        steps = steps.item()
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool):
        raise TypeError(f"{op}(): argument 'steps' must be an int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError(f"{op}(): number of steps must be non-negative, got {steps}")
    return int(steps)


def _symmetric_line(xp, start, end, steps, work):
    """PyTorch's linspace kernel: the first half steps up from ``start``, the second half steps
    down from ``end``, so both endpoints are exact (computed in ``work``)."""
    idx = xp.arange(steps)
    if steps == 1:
        return xp.full((1,), start, dtype=work)
    start, end = np.asarray(start, work)[()], np.asarray(end, work)[()]
    step = (end - start) / work.type(steps - 1)
    lo = start + step * idx.astype(work)
    hi = end - step * (steps - idx - 1).astype(work)
    return xp.where(idx < steps // 2, lo, hi)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (default dtype, or
    the default complex dtype for complex bounds).

    Example: ``tensorix.linspace(0, 1, 5)`` is ``tensor([0.0000, 0.2500, 0.5000, 0.7500,
    1.0000])``.
    """
    steps = _steps(steps, "linspace")
    start = start.item() if isinstance(start, Tensor) else start
    end = end.item() if isinstance(end, Tensor) else end
    cplx = isinstance(start, _pycomplex) or isinstance(end, _pycomplex)
    d = dt.as_dtype(dtype) if dtype is not None else (
        dt.get_default_dtype().to_complex() if cplx else dt.get_default_dtype())
    if d.category <= 1:  # integer results: the bounds are truncated first, like PyTorch
        start, end = int(start.real), int(end.real)
    xp = _xp(device)
    # float32/float64/complex compute in their own precision (as PyTorch does); integer and
    # low-precision results go through float64 and are truncated / rounded at the end
    work = d.np if d.np in (np.float32, np.float64, np.complex64, np.complex128) else (
        np.dtype(np.complex128) if cplx else np.dtype(np.float64))
    data = _symmetric_line(xp, start, end, steps, work) if steps else xp.empty(0, dtype=work)
    return _finish(_make(_cast_array(data, d), d), requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    """``base ** linspace(start, end, steps)`` (exponents computed in float64).

    Example: ``tensorix.logspace(0, 2, 3)`` is ``tensor([  1.,  10., 100.])``.
    """
    steps = _steps(steps, "logspace")
    start = start.item() if isinstance(start, Tensor) else start
    end = end.item() if isinstance(end, Tensor) else end
    d = dt.as_dtype(dtype)
    xp = _xp(device)
    exps = _symmetric_line(xp, start, end, steps, np.dtype(np.float64)) if steps else \
        xp.empty(0, dtype=np.float64)
    vals = xp.power(float(base), exps)
    return _finish(_make(_cast_array(vals, d), d), requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An ``n x m`` (default ``n x n``) matrix with ones on the diagonal.

    Example: ``tensorix.eye(2, 3)``.
    """
    for name, v in (("n", n), ("m", m)):
        if v is None:
            continue
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise TypeError(f"eye(): argument '{name}' must be an int, not {type(v).__name__}")
        if v < 0:
            raise RuntimeError(f"eye(): {name} must be greater or equal to 0, got {v}")
    d = dt.as_dtype(dtype)
    return _finish(_make(_xp(device).eye(n, n if m is None else m, dtype=d.np), d),
                   requires_grad)


def _tri_indices(row, col, offset, dtype, device, op, upper):
    for name, v in (("row", row), ("col", col), ("offset", offset)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise TypeError(f"{op}(): argument '{name}' must be an int, not "
                            f"{type(v).__name__}")
    for name, v in (("row", row), ("col", col)):
        if v < 0:
            raise RuntimeError(f"{op}(): {name} must be non-negative, got {v}")
    d = dt.as_dtype(dtype if dtype is not None else dt.int64)
    if d.category != 1:
        raise RuntimeError(f"{op}(): dtype must be an integer type, got {d.name}")
    xp = _xp(device)
    r, c = xp.triu_indices(row, offset, col) if upper else xp.tril_indices(row, offset, col)
    return _make(xp.stack([r, c]).astype(d.np).reshape(2, -1), d)


def tril_indices(row, col, offset=0, *, dtype=None, device=None) -> Tensor:
    """The ``2 x N`` (row, column) coordinates of the lower triangle of a ``row x col``
    matrix, below diagonal ``offset``, in row-major order.

    Example: ``tensorix.tril_indices(3, 3)`` is ``[[0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2]]``.
    """
    return _tri_indices(row, col, offset, dtype, device, "tril_indices", upper=False)


def triu_indices(row, col, offset=0, *, dtype=None, device=None) -> Tensor:
    """The ``2 x N`` coordinates of the upper triangle of a ``row x col`` matrix, above
    diagonal ``offset``. Example: ``tensorix.triu_indices(2, 2)`` is ``[[0, 0, 1], [0, 1, 1]]``.
    """
    return _tri_indices(row, col, offset, dtype, device, "triu_indices", upper=True)


# -- complex from parts --------------------------------------------------------------------------
class Complex(Function):
    """real + i * imag; the gradient splits the complex cotangent into its two parts."""

    @staticmethod
    def forward(ctx, re, im):
        xp = re.xp
        shape = np.broadcast_shapes(re._data.shape, im._data.shape)  # host shape arithmetic
        out = xp.empty(shape, dtype=np.complex128 if re._data.dtype == np.float64
                       else np.complex64)
        out.real[...] = re._data  # not re + 1j * im: 1j * inf would put a nan in the real part
        out.imag[...] = im._data
        return out

    @staticmethod
    def backward(ctx, g):
        return real(g), imag(g)


def _parts(a, b, op, names):
    for x, name in zip((a, b), names):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not "
                            f"{type(x).__name__}")
    if a.dtype is not b.dtype or a.dtype not in (dt.float16, dt.float32, dt.float64):
        raise RuntimeError(f"{op}(): expected both inputs to be Half, Float or Double tensors "
                           f"but got {a.dtype.name} and {b.dtype.name}")


def complex(real, imag) -> Tensor:  # noqa: A001 - torch's name
    """The complex tensor ``real + i * imag`` (broadcast); both float16/32/64 of one dtype.
    float32 gives complex64, float64 complex128; float16 gives complex64 (no complex32).

    Example: ``tensorix.complex(tensorix.tensor([1.]), tensorix.tensor([2.]))`` is
    ``tensor([1.+2.j])``.
    """
    _parts(real, imag, "complex", ("real", "imag"))
    return Complex.apply(real, imag)


def polar(abs, angle) -> Tensor:  # noqa: A002 - torch's argument name
    """``abs * (cos(angle) + i sin(angle))`` elementwise (same dtype rules as :func:`complex`).

    Example: ``tensorix.polar(tensorix.tensor([2.]), tensorix.tensor([0.]))`` is
    ``tensor([2.+0.j])``.
    """
    _parts(abs, angle, "polar", ("abs", "angle"))
    return Complex.apply(abs * cos(angle), abs * sin(angle))


def _rebuild(array, dtype_name, requires_grad, device, kinds=()):
    """Unpickle a tensor (see Tensor.__reduce__), restoring marks such as nn.Parameter."""
    t = tensor(array, dtype=dt._BY_NAME[dtype_name], device=device,
               requires_grad=requires_grad)
    _copy_kinds(None, t, kinds)
    return t


def _new_method(fn):
    """``x.new_zeros(size)`` and friends: ``x``'s dtype and device unless given."""
    def method(self, *size, dtype=None, device=None, requires_grad=False):
        return fn(*size, dtype=self.dtype if dtype is None else dtype,
                  device=self.device if device is None else device, requires_grad=requires_grad)

    method.__name__ = "new_" + fn.__name__
    method.__doc__ = f"A :func:`{fn.__name__}` tensor with this tensor's dtype and device."
    return method


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return full(size, fill_value, dtype=self.dtype if dtype is None else dtype,
                device=self.device if device is None else device, requires_grad=requires_grad)


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    return tensor(data, dtype=self.dtype if dtype is None else dtype,
                  device=self.device if device is None else device, requires_grad=requires_grad)


register_creation(_to_array, _rebuild)  # Tensor(data) and unpickling

TENSOR_METHODS: dict = {
    "new_zeros": _new_method(zeros), "new_ones": _new_method(ones),
    "new_empty": _new_method(empty), "new_full": _new_full, "new_tensor": _new_tensor,
}
