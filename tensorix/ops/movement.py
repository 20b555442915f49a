"""View and movement primitives: reshape/view, expand, permute, getitem, clone, contiguous.

View ops (``_view = True``) return backend views that share memory and the version counter
with their input, as in PyTorch; their backward is the inverse movement.
"""

from __future__ import annotations

import numpy as np

from .. import backend
from ..autograd.function import Function, _mark_view
from ..tensor import Tensor, _make
from ._common import check_tensor, norm_dim

__all__ = ["reshape", "view", "expand", "broadcast_to", "permute", "transpose", "clone",
           "contiguous", "squeeze", "unsqueeze", "getitem", "as_strided"]


def _sizes(shape, op):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    for s in shape:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"{op}(): shape must be a sequence of ints, got {shape!r}")
    return tuple(int(s) for s in shape)


def _infer(shape, numel, op, src):
    if shape.count(-1) > 1:
        raise RuntimeError(f"{op}(): only one dimension can be inferred, got {list(shape)}")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"{op}(): invalid shape dimension {s}")
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"{op}(): shape '{list(shape)}' is invalid for input of size "
                               f"{numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"{op}(): shape '{list(shape)}' is invalid for input of size {numel} "
                           f"(input shape {list(src)})")
    return shape


class Reshape(Function):
    _view = True

    @staticmethod
    def forward(ctx, a, shape):
        ctx.shape = a._data.shape
        return a._data.reshape(shape)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape)


class View(Reshape):
    @staticmethod
    def forward(ctx, a, shape):
        ctx.shape = a._data.shape
        out = a._data.view()
        try:
            out.shape = shape  # raises instead of copying when strides do not allow a view
        except AttributeError:
            raise RuntimeError(
                f"view(): view size is not compatible with input tensor's size and stride "
                f"(input shape {list(a._data.shape)}, requested {list(shape)}); use "
                ".reshape(...) instead") from None
        return out


class Expand(Function):
    _view = True

    @staticmethod
    def forward(ctx, a, shape):
        ctx.shape = a._data.shape
        return backend.array_module(a._data).broadcast_to(a._data, shape)

    @staticmethod
    def backward(ctx, g):
        from .reduce import sum_to

        return sum_to(g, ctx.shape)


class Permute(Function):
    _view = True

    @staticmethod
    def forward(ctx, a, dims):
        ctx.dims = dims
        return a._data.transpose(dims)

    @staticmethod
    def backward(ctx, g):
        inv = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inv[d] = i
        return g.permute(tuple(inv))


class Clone(Function):
    @staticmethod
    def forward(ctx, a):
        return a._data.copy()

    @staticmethod
    def backward(ctx, g):
        return g


def _flat_source(data):
    """The C-contiguous flat array under ``data`` (its own flattening when it is contiguous)."""
    if not data.flags.c_contiguous:
        raise RuntimeError("as_strided(): the input must be contiguous (call .contiguous())")
    return data.reshape(-1)


class AsStrided(Function):
    """A strided window onto a contiguous tensor's memory (sizes, strides and offset in
    elements, like PyTorch)."""

    _view = True

    @staticmethod
    def forward(ctx, a, size, stride, offset):
        ctx.shape, ctx.geometry = a._data.shape, (size, stride, offset)
        flat = _flat_source(a._data)
        xp = backend.array_module(flat)
        item = flat.itemsize
        return xp.lib.stride_tricks.as_strided(flat[offset:], shape=size,
                                               strides=tuple(s * item for s in stride))

    @staticmethod
    def backward(ctx, g):
        return AsStridedBackward.apply(g, ctx.shape, ctx.geometry)


class AsStridedBackward(Function):
    """Scatter-add through a (possibly overlapping) strided window, by index arrays."""

    @staticmethod
    def forward(ctx, g, shape, geometry):
        ctx.geometry = geometry
        xp = backend.array_module(g._data)
        size, stride, offset = geometry
        n = 1
        for s in shape:
            n *= s
        ids = xp.lib.stride_tricks.as_strided(xp.arange(n)[offset:], shape=size,
                                              strides=tuple(s * 8 for s in stride))
        out = xp.zeros(n, dtype=g._data.dtype)
        xp.add.at(out, ids, g._data)
        return out.reshape(shape)

    @staticmethod
    def backward(ctx, gg):
        return AsStrided.apply(gg.contiguous(), *ctx.geometry)


def as_strided(input, size, stride, storage_offset=0) -> Tensor:
    """A view with explicit ``size``, ``stride`` (in elements) and ``storage_offset`` over a
    contiguous tensor's memory. Overlapping windows are allowed; their gradients add.

    Example: ``tensorix.arange(5.).as_strided((3, 3), (1, 1))`` gives sliding windows.
    """
    check_tensor(input, "as_strided")
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"as_strided(): mismatch in length of strides and shape "
                           f"({len(stride)} and {len(size)})")
    if any(s < 0 for s in stride) or storage_offset < 0:
        raise RuntimeError("as_strided(): negative strides or offsets are not supported")
    need = storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 \
        if all(size) else 0
    if need > input.numel():
        raise RuntimeError(f"as_strided(): setStorage: sizes {list(size)}, strides "
                           f"{list(stride)} and offset {storage_offset} need {need} elements "
                           f"but the input has {input.numel()}")
    return AsStrided.apply(input, size, stride, int(storage_offset))


def _strided_view(view, base):
    """A function that rebuilds ``view``'s window from a contiguous tensor shaped like
    ``base`` (the in-place-on-a-view machinery replays it on the new base)."""
    if not base._data.flags.c_contiguous:
        raise RuntimeError("in-place on a view: the base tensor must be contiguous to rebase "
                           "its gradient; call .contiguous() on it first")
    item = base._dtype.itemsize
    offset = (backend.data_ptr(view._data) - backend.data_ptr(base._data)) // item
    size = view._data.shape
    stride = tuple(s // item for s in view._data.strides)
    if any(s < 0 for s in stride):
        raise RuntimeError("in-place on a view with negative strides is not supported")

    def view_fn(b):
        return AsStrided.apply(b if b._data.flags.c_contiguous else b.contiguous(), size,
                               stride, offset)

    return view_fn


def _raw_index(index):
    """Convert Tensors inside an index to backend arrays; validate the index types."""
    if isinstance(index, tuple):
        return tuple(_raw_index(i) for i in index)
    if isinstance(index, Tensor):
        if index._dtype.category >= 2:
            raise IndexError("getitem(): tensors used as indices must be long, int, byte or "
                             f"bool tensors, got {index._dtype.name}")
        return index._data
    if isinstance(index, list):
        return np.asarray([_raw_index(i) for i in index]) if index and \
            isinstance(index[0], Tensor) else np.asarray(index)
    if isinstance(index, slice) and index.step is not None and index.step <= 0:
        raise ValueError("getitem(): step must be greater than zero (PyTorch has no negative "
                         "slice steps; use flip())")
    return index


def _is_basic(index):
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, slice, np.integer))
               for i in items)


class GetItem(Function):
    @staticmethod
    def forward(ctx, a, index):
        ctx.shape, ctx.index, ctx.dtype = a._data.shape, index, a._dtype
        try:
            return a._data[index]
        except IndexError as e:
            raise IndexError(f"getitem(): {e} (tensor shape {list(a._data.shape)})") from None

    @staticmethod
    def backward(ctx, g):
        return IndexBackward.apply(g, ctx.shape, ctx.index)


class IndexBackward(Function):
    """Scatter-add a gradient into zeros of the indexed tensor's shape (duplicates add)."""

    @staticmethod
    def forward(ctx, g, shape, index):
        ctx.index = index
        xp = backend.array_module(g._data)
        out = xp.zeros(shape, dtype=g._data.dtype)
        if _is_basic(index):
            out[index] = g._data
        else:
            xp.add.at(out, index, g._data)
        return out

    @staticmethod
    def backward(ctx, gg):
        return GetItem.apply(gg, ctx.index)


def getitem(input, index) -> Tensor:
    """``input[index]``: basic indexing returns a view; integer/boolean tensors gather a copy.

    Example: ``x[0, 1:3]``, ``x[..., None]``, ``x[x > 0]``, ``x[tensorix.tensor([2, 0])]``.
    """
    index = _raw_index(index)
    basic = _is_basic(index)
    out = GetItem.apply(input, index)
    if basic:
        _mark_view(out, input)
    return out


def reshape(input, *shape) -> Tensor:
    """The same data with a new shape: a view when strides allow, a copy otherwise.

    Example: ``tensorix.arange(6).reshape(2, -1)`` has shape ``(2, 3)``.
    """
    check_tensor(input, "reshape")
    shape = _infer(_sizes(shape, "reshape"), input._data.size, "reshape", input._data.shape)
    return Reshape.apply(input, shape)


def view(input, *shape) -> Tensor:
    """Like :func:`reshape` but always a view; raises when the strides forbid one.
    ``x.view(dtype)`` reinterprets the bytes as another dtype of the same size."""
    check_tensor(input, "view")
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list, np.integer)):
        from .. import dtypes as dt

        d = dt.as_dtype(shape[0])
        if d.itemsize != input._dtype.itemsize:
            raise RuntimeError(f"view(): dtype view needs equal element sizes, got "
                               f"{input._dtype.name} and {d.name}")
        out = _make(input._data.view(d.np), d)
        _mark_view(out, input)
        return out
    shape = _infer(_sizes(shape, "view"), input._data.size, "view", input._data.shape)
    return View.apply(input, shape)


def expand(input, *sizes) -> Tensor:
    """Broadcast size-1 dims to ``sizes`` without copying (-1 keeps a dim).

    Example: ``tensorix.ones(3, 1).expand(3, 4)``.
    """
    check_tensor(input, "expand")
    sizes = _sizes(sizes, "expand")
    nd = input._data.ndim
    if len(sizes) < nd:
        raise RuntimeError(f"expand(): the number of sizes provided ({len(sizes)}) must be "
                           f"greater or equal to the number of dimensions in the tensor ({nd})")
    lead = len(sizes) - nd
    shape = []
    for i, s in enumerate(sizes):
        src = input._data.shape[i - lead] if i >= lead else None
        if s == -1:
            if src is None:
                raise RuntimeError("expand(): -1 is not allowed in a leading, non-existing "
                                   "dimension")
            s = src
        elif src is not None and src != 1 and src != s:
            raise RuntimeError(f"expand(): the expanded size of the tensor ({s}) must match "
                               f"the existing size ({src}) at non-singleton dimension {i}. "
                               f"Target sizes: {list(sizes)}. Tensor sizes: "
                               f"{list(input._data.shape)}")
        shape.append(s)
    shape = tuple(shape)
    if shape == input._data.shape:
        return input
    return Expand.apply(input, shape)


def broadcast_to(input, shape) -> Tensor:
    """``input.expand(shape)``."""
    return expand(input, tuple(shape))


def permute(input, *dims) -> Tensor:
    """Reorder dimensions (a view). Example: ``x.permute(2, 0, 1)``."""
    check_tensor(input, "permute")
    dims = _sizes(dims, "permute")
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(f"permute(): number of dims don't match in permute: got "
                           f"{len(dims)} dims for a tensor of {nd} dims")
    dims = tuple(norm_dim(d, nd, "permute") for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError(f"permute(): repeated dim in {list(dims)}")
    return Permute.apply(input, dims)


def transpose(input, dim0, dim1) -> Tensor:
    """Swap two dimensions (a view)."""
    check_tensor(input, "transpose")
    nd = input._data.ndim
    if nd == 0:
        return input
    d0, d1 = norm_dim(dim0, nd, "transpose"), norm_dim(dim1, nd, "transpose")
    dims = list(range(nd))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return Permute.apply(input, tuple(dims))


def squeeze(input, dim=None) -> Tensor:
    """Remove size-1 dims (all, or those in ``dim``)."""
    check_tensor(input, "squeeze")
    shape = input._data.shape
    if dim is None:
        dims = {i for i, s in enumerate(shape) if s == 1}
    else:
        dd = dim if isinstance(dim, (tuple, list)) else (dim,)
        dims = {norm_dim(d, len(shape), "squeeze") for d in dd}
        dims = {d for d in dims if d < len(shape) and shape[d] == 1}
    return Reshape.apply(input, tuple(s for i, s in enumerate(shape) if i not in dims))


def unsqueeze(input, dim) -> Tensor:
    """Insert a size-1 dim at ``dim`` (``-1`` appends)."""
    check_tensor(input, "unsqueeze")
    nd = input._data.ndim
    d = norm_dim(dim, nd + 1, "unsqueeze")
    shape = list(input._data.shape)
    shape.insert(d, 1)
    return Reshape.apply(input, tuple(shape))


def clone(input) -> Tensor:
    """A copy with its own memory; gradients flow back unchanged."""
    return Clone.apply(check_tensor(input, "clone"))


def contiguous(input) -> Tensor:
    """``input`` itself when C-contiguous, else a contiguous copy."""
    if input._data.flags.c_contiguous:
        return input
    return Clone.apply(input)


TENSOR_METHODS = {
    "reshape": reshape, "view": view, "expand": expand, "broadcast_to": broadcast_to,
    "permute": permute, "transpose": transpose, "clone": clone, "contiguous": contiguous,
    "squeeze": squeeze, "unsqueeze": unsqueeze, "__getitem__": getitem,
    "as_strided": as_strided,
    "expand_as": lambda self, other: expand(self, tuple(other.shape)),
    "view_as": lambda self, other: view(self, tuple(other.shape)),
    "reshape_as": lambda self, other: reshape(self, tuple(other.shape)),
}
