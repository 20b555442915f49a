"""Index parsing for getitem, setitem and index_put, with PyTorch's placement rules.

PyTorch applies integers, slices, None and Ellipsis first (that part is a view), then the
advanced indices (integer and boolean tensors) to the view. NumPy instead counts integers as
advanced indices, which places dims differently for ``x[0, :, [1, 2]]`` (torch: ``(5, 2)``,
NumPy: ``(2, 5)``). Splitting an index into those two steps gives torch's shapes from NumPy's
indexing; the checks here give torch's error messages (naming the dim and its size).
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import backend
from ..tensor import Tensor

__all__: list = []

_FULL = slice(None)


class Index:
    """A parsed index: ``basic`` (ints, slices, None; ends with Ellipsis so the result is
    always an array view) then ``adv`` (arrays and slices, or None when nothing is left)."""

    __slots__ = ("basic", "adv", "copies", "new_dims", "tensors", "sources", "masked")

    def __init__(self, basic, adv, copies, new_dims=(), tensors=(), sources=()):
        # copies: integer or boolean arrays take part (Python bools too: torch makes them 0-d
        # bool tensors), so the result is gathered, not a view
        self.basic, self.adv, self.copies = basic, adv, copies
        # (position in the basic result, next input dim) for each None: torch gives the new
        # dim the stride size * stride of that input dim (1 past the end), NumPy gives 0
        self.new_dims = new_dims
        # the index's integer and bool tensors and their positions in ``adv``: the primitive
        # takes them as arguments and rebinds them (a traced graph reads the new ones rather
        # than keep the example's arrays); a bool tensor makes the output shape data-dependent
        self.tensors, self.sources = tensors, sources
        self.masked = bool(tensors) and any(t._dtype.category == 0 or t._dtype.name == "uint8"
                                            for t in tensors)

    def rebind(self, tensors, dev):
        """This index with the arrays of ``tensors`` (standing for ``self.tensors``, same
        dtypes) at their positions, as :func:`parse` would place them."""
        if not tensors:
            return self
        adv = list(self.adv)
        for pos, t in zip(self.sources, tensors):
            adv[pos] = _array_item(t._data, t._dtype.name, "getitem", dev)[1]
        return Index(self.basic, tuple(adv), self.copies, self.new_dims)

    def get(self, data):
        """``data`` indexed: a view unless ``copies`` (integer or boolean arrays)."""
        region = data[self.basic]
        if self.adv is not None:
            region = region[self.adv]
        elif self.new_dims:
            strides = list(region.strides)
            for pos, d in self.new_dims:
                strides[pos] = data.shape[d] * data.strides[d] if d < data.ndim else \
                    data.itemsize
            region = backend.as_strided(region, region.shape, tuple(strides))
        return region

    def scatter(self, out, value, accumulate=False):
        """Write (or add, with ``accumulate``: duplicates add up) ``value`` into ``out``."""
        region = out[self.basic]
        if not self.copies:
            view = region if self.adv is None else region[self.adv]
            if accumulate:
                view += value
            else:
                view[...] = value
        elif accumulate:
            backend.array_module(out).add.at(region, self.int_adv(), value)
        else:
            region[self.adv] = value

    def int_adv(self):
        """``adv`` with boolean masks expanded into integer arrays (for ``ufunc.at``)."""
        out = []
        for a in self.adv:
            if isinstance(a, slice) or a.dtype.kind != "b" or a.ndim == 0:
                out.append(a)
            else:
                out.extend(backend.array_module(a).nonzero(a))
        return tuple(out)

    def __repr__(self):
        return f"Index(basic={self.basic!r}, adv={self.adv!r})"


def _int(v, op):
    if isinstance(v, Tensor):
        return v.__index__()
    if v is None or isinstance(v, (int, np.integer)):
        return None if v is None else int(v)
    raise TypeError(f"{op}(): slice indices must be integers or None, got {type(v).__name__}")


def _slice(s, op):
    step = _int(s.step, op)
    if step is not None and step <= 0:
        raise ValueError(f"{op}(): step must be greater than zero (PyTorch has no negative "
                         "slice steps; use flip())")
    return slice(_int(s.start, op), _int(s.stop, op), step)


def _from_list(items):
    vals = [i.tolist() if isinstance(i, Tensor) else i for i in items]
    arr = np.asarray(vals)
    return arr.astype(np.int64) if arr.size == 0 else arr


def _array_item(arr, kind_of, op, dev):
    """Classify an index array: ``int`` (0-d integer: a select), ``mask`` (boolean, 0-d
    included) or ``array``."""
    kind = np.dtype(arr.dtype).kind
    if kind == "b" or np.dtype(arr.dtype) == np.uint8:
        return "mask", backend.to_device(arr, dev).astype(bool, copy=False)
    if kind not in "iu":
        raise IndexError(f"{op}(): tensors used as indices must be long, int, byte or bool "
                         f"tensors, got {kind_of}")
    if arr.ndim == 0:
        return "int", int(arr)
    return "array", backend.to_device(arr, dev)


def _item(item, op, dev):
    if item is None:
        return "none", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, (bool, np.bool_)):  # torch: a 0-d bool tensor, an advanced index
        return "mask", backend.to_device(np.asarray(bool(item)), dev)
    if isinstance(item, (int, np.integer)):
        return "int", int(item)
    if isinstance(item, slice):
        return "slice", _slice(item, op)
    if isinstance(item, Tensor):
        if item._dtype.category == 1 and item.ndim == 0 and item._dtype.name != "uint8":
            return "int", item.__index__()  # a select: the trace guards on the value read
        return _array_item(item._data, item._dtype.name, op, dev)
    if isinstance(item, list):
        arr = _from_list(item)
        return _array_item(arr, str(arr.dtype), op, dev)
    if hasattr(item, "__array_interface__") or hasattr(item, "__cuda_array_interface__"):
        return _array_item(item, str(item.dtype), op, dev)
    if isinstance(item, numbers.Number):
        raise IndexError(f"{op}(): only integers, slices (`:`), ellipsis (`...`), None and "
                         f"integer or boolean tensors are valid indices (got "
                         f"{type(item).__name__})")
    raise TypeError(f"{op}(): invalid index of type {type(item).__name__}")


def _consumed(kind, value):
    if kind in ("int", "slice", "array"):
        return 1
    return value.ndim if kind == "mask" else 0


def _check_int(i, size, d, op):
    if not -size <= i < size:
        raise IndexError(f"{op}(): index {i} is out of bounds for dimension {d} with size "
                         f"{size}")


def _check_array(arr, size, d, op):
    if arr.size == 0:
        return
    hi, lo = int(arr.max()), int(arr.min())
    if hi >= size:
        _check_int(hi, size, d, op)
    if lo < -size:
        _check_int(lo, size, d, op)


def _check_mask(mask, shape, d, op):
    for k, m in enumerate(mask.shape):
        if d + k >= len(shape) or shape[d + k] != m:
            raise IndexError(f"{op}(): the shape of the mask {list(mask.shape)} at index {k} "
                             f"does not match the shape of the indexed tensor {list(shape)} "
                             f"at index {d + k}")


def _place(kind, value, shape, d, op):
    """(basic entries, adv entries, dims consumed) for one item at input dim ``d``."""
    if kind == "none":
        return [None], [_FULL], 0
    if kind == "int":
        _check_int(value, shape[d], d, op)
        return [value], [], 1
    if kind == "slice":
        return [value], [_FULL], 1
    if kind == "array":
        _check_array(value, shape[d], d, op)
        return [_FULL], [value], 1
    _check_mask(value, shape, d, op)
    return [_FULL] * value.ndim, [value], value.ndim


def parse(index, shape, dev, op="getitem") -> Index:
    """Split ``index`` for a tensor of ``shape`` on ``dev`` into an :class:`Index`."""
    if isinstance(index, Index):
        return index
    raw = index if isinstance(index, tuple) else (index,)
    items = [_item(i, op, dev) for i in raw]
    used = sum(_consumed(k, v) for k, v in items)
    if used > len(shape):
        raise IndexError(f"{op}(): too many indices for tensor of dimension {len(shape)}")
    if sum(k == "ellipsis" for k, _ in items) > 1:
        raise IndexError(f"{op}(): an index can only have a single ellipsis ('...')")
    basic, adv, d, new_dims, tensors, sources = [], [], 0, [], [], []
    for item, (kind, value) in zip(raw, items):
        if (kind == "array" or kind == "mask") and isinstance(item, Tensor):
            tensors.append(item)
            sources.append(len(adv))
        if kind == "ellipsis":
            n = len(shape) - used
            basic += [_FULL] * n
            adv += [_FULL] * n
            d += n
            continue
        if kind == "none":
            new_dims.append((sum(not isinstance(b, int) for b in basic), d))  # dims so far
        b, a, n = _place(kind, value, shape, d, op)
        basic += b
        adv += a
        d += n
    copies = any(not isinstance(a, slice) for a in adv)
    while adv and isinstance(adv[-1], slice) and adv[-1] == _FULL:
        adv.pop()
    basic.append(Ellipsis)
    return Index(tuple(basic), tuple(adv) if adv else None, copies, tuple(new_dims),
                 tuple(tensors), tuple(sources))
