"""View and movement primitives: reshape/view, expand, permute, getitem, clone, contiguous.

View ops (``_view = True``) return backend views that share memory and the version counter
with their input, as in PyTorch; their backward is the inverse movement.
"""

from __future__ import annotations

import numpy as np

from .. import backend
from .. import dtypes as dt
from ..autograd.function import Function, _mark_view, view_geometry
from ..tensor import Tensor, _make
from . import _index
from ._common import check_at_least_1d, check_tensor, norm_dim

__all__ = ["reshape", "view", "expand", "broadcast_to", "permute", "transpose", "clone",
           "contiguous", "squeeze", "unsqueeze", "getitem", "as_strided", "diagonal", "flatten",
           "unflatten", "narrow", "select", "unbind", "t", "movedim", "moveaxis", "swapaxes",
           "swapdims", "view_as_real", "view_as_complex"]


def _sizes(shape, op):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    for s in shape:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"{op}(): shape must be a sequence of ints, got {shape!r}")
    # an int subclass stays itself: export's symbolic sizes keep their expressions
    return tuple(s if isinstance(s, int) else int(s) for s in shape)


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


def _view_strides(old, strides, new):
    """PyTorch's ``computeStride``: element strides that view ``old`` (with ``strides``) as
    ``new``, or None when no view exists. Strides of size-1 dims follow torch, not NumPy."""
    if not old:
        return (1,) * len(new)
    if 0 in old:
        return strides if old == new else tuple(
            int(np.prod([max(n, 1) for n in new[i + 1:]], dtype=np.int64))
            for i in range(len(new)))
    out, view_d = [0] * len(new), len(new) - 1
    base, tensor_numel, view_numel = strides[-1], 1, 1
    for d in range(len(old) - 1, -1, -1):
        tensor_numel *= old[d]
        if d == 0 or (old[d - 1] != 1 and strides[d - 1] != tensor_numel * base):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                out[view_d] = view_numel * base
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                base, tensor_numel, view_numel = strides[d - 1], 1, 1
    return tuple(out) if view_d == -1 else None


def _restride(data, shape, strides):
    """``data`` seen with ``shape`` and element ``strides`` (a view)."""
    item = data.itemsize
    return backend.as_strided(data, shape, tuple(s * item for s in strides))


def _canonical(data):
    """C-contiguous with the standard stride on every dim (NumPy's flag ignores size-1 dims,
    whose odd strides torch carries into a view)."""
    if not data.flags.c_contiguous:
        return False
    acc = data.itemsize
    for n, s in zip(reversed(data.shape), reversed(data.strides)):
        if s != acc and n != 0:
            return False
        acc *= n
    return True


def _elem_strides(data):
    return tuple(s // data.itemsize for s in data.strides)


class Reshape(Function):
    """A view when the strides allow one (with torch's strides), a copy otherwise; ``strides``
    pins the view's strides (unsqueeze/squeeze)."""
    _codes = "move"  # storage codes: runs on the codes (autograd/dispatch.py)

    _view = True

    @classmethod
    def forward(cls, ctx, a, shape, strides=None):
        data = a._data
        ctx.shape = data.shape
        if strides is None and _canonical(data):
            return data.reshape(shape)  # NumPy's contiguous strides are torch's
        if strides is None:
            strides = _view_strides(data.shape, _elem_strides(data), shape)
        if strides is None:
            return cls.copy(data, shape)
        return _restride(data, shape, strides)

    @staticmethod
    def copy(data, shape):
        return backend.array_module(data).ascontiguousarray(data).reshape(shape)

    @staticmethod
    def backward(ctx, g):
        # what g.reshape(ctx.shape) runs once it has checked the shape (a known-valid one:
        # the input's), without those checks (~2 us a node)
        return Reshape.apply(g, ctx.shape)


class View(Reshape):
    @staticmethod
    def copy(data, shape):
        raise RuntimeError(
            f"view(): view size is not compatible with input tensor's size and stride "
            f"(input shape {list(data.shape)}, requested {list(shape)}); use .reshape(...) "
            "instead")


class Expand(Function):
    _codes = "move"  # storage codes: runs on the codes (autograd/dispatch.py)
    _view = True

    @staticmethod
    def forward(ctx, a, shape):
        data = a._data
        ctx.shape = data.shape
        out = backend.array_module(data).broadcast_to(data, shape)  # read-only
        lead = len(shape) - data.ndim
        strides = tuple(0 if i < lead or data.shape[i - lead] != n else s // data.itemsize
                        for i, (n, s) in enumerate(zip(shape, (0,) * lead + data.strides)))
        if strides != _elem_strides(out):  # kept size-1 dims keep their stride, as in torch
            repeats = any(st == 0 and n > 1 for st, n in zip(strides, shape))
            out = _restride(out if repeats else data, shape, strides)
        return out

    @staticmethod
    def backward(ctx, g):
        from .reduce import sum_to

        return sum_to(g, ctx.shape)


class Permute(Function):
    _codes = "move"  # storage codes: runs on the codes (autograd/dispatch.py)
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
    _codes = "move"  # storage codes: runs on the codes (autograd/dispatch.py)

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


def _strided(flat, geometry):
    """The window ``(size, stride, offset)`` (in elements) onto the flat array ``flat``."""
    size, stride, offset = geometry
    return backend.as_strided(flat[offset:], size, tuple(s * flat.itemsize for s in stride))


def _add_through(g, shape, window):
    """Zeros of ``shape`` with ``g`` added where ``window`` (applied to the flat element ids)
    took its elements: the backward of a strided view. Windows may overlap, so ids repeat and
    their gradients add."""
    xp = g.xp
    n = int(np.prod(shape, dtype=np.int64))
    out = xp.zeros(n, dtype=g._data.dtype)
    xp.add.at(out, window(xp.arange(n, dtype=xp.int64)), g._data)
    return out.reshape(shape)


class AsStrided(Function):
    """A strided window onto a contiguous tensor's memory (sizes, strides and offset in
    elements, like PyTorch)."""
    _codes = "move"  # storage codes: runs on the codes (autograd/dispatch.py)

    _view = True

    @staticmethod
    def forward(ctx, a, size, stride, offset):
        ctx.shape, ctx.geometry = a._data.shape, (size, stride, offset)
        return _strided(_flat_source(a._data), ctx.geometry)

    @staticmethod
    def backward(ctx, g):
        return AsStridedBackward.apply(g, ctx.shape, ctx.geometry)


class AsStridedBackward(Function):
    """Scatter-add through a (possibly overlapping) strided window, by index arrays."""

    @staticmethod
    def forward(ctx, g, shape, geometry):
        ctx.geometry = geometry
        return _add_through(g, shape, lambda ids: _strided(ids, geometry))

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


class StridedView(Function):
    """A view whose dims step through the input's dims by integer combinations (diagonal,
    unfold): output dim ``k`` has stride ``sum_j coefs[k][j] * input.stride(j)`` and starts at
    input element ``start``. Working on the input's own strides keeps it a view of
    non-contiguous tensors too; the backward scatter-adds through the same window of indices."""
    _codes = "move"  # storage codes: runs on the codes (autograd/dispatch.py)

    _view = True

    @staticmethod
    def forward(ctx, a, geometry):
        ctx.shape, ctx.geometry = a._data.shape, geometry
        return _window(a._data, geometry)

    @staticmethod
    def backward(ctx, g):
        return StridedViewBackward.apply(g, ctx.shape, ctx.geometry)


class StridedViewBackward(Function):
    @staticmethod
    def forward(ctx, g, shape, geometry):
        ctx.geometry = geometry  # windows may overlap (unfold with step < size)
        return _add_through(g, shape, lambda ids: _window(ids.reshape(shape), geometry))

    @staticmethod
    def backward(ctx, gg):
        return StridedView.apply(gg, ctx.geometry)


def _window(data, geometry):
    size, coefs, start = geometry
    xp = backend.array_module(data)
    if 0 in size:
        return xp.empty(size, dtype=data.dtype)
    origin = data[tuple(slice(i, None) for i in start)]
    strides = tuple(sum(c * s for c, s in zip(coef, data.strides)) for coef in coefs)
    return xp.lib.stride_tricks.as_strided(origin, size, strides)


def _unit(nd, *dims_coefs):
    v = [0] * nd
    for d, c in dims_coefs:
        v[d] += c
    return tuple(v)


def diagonal(input, offset=0, dim1=0, dim2=1) -> Tensor:
    """The diagonal of the ``(dim1, dim2)`` planes as a view, appended as the last dim;
    ``offset > 0`` is above the main diagonal, ``< 0`` below.

    Shapes: ``(2, 3, 4)`` with ``dim1=1, dim2=2`` gives ``(2, 3)``.
    Example: ``tensorix.eye(3).diagonal()`` is ``tensor([1., 1., 1.])``.
    """
    check_tensor(input, "diagonal")
    shape = input._data.shape
    nd = len(shape)
    d1, d2 = norm_dim(dim1, nd, "diagonal"), norm_dim(dim2, nd, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal(): diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = int(offset)
    n = min(shape[d1], shape[d2] - offset) if offset >= 0 else min(shape[d1] + offset,
                                                                   shape[d2])
    start = [0] * nd
    start[d2 if offset >= 0 else d1] = abs(offset)
    rest = [d for d in range(nd) if d not in (d1, d2)]
    size = tuple(shape[d] for d in rest) + (max(n, 0),)
    coefs = tuple(_unit(nd, (d, 1)) for d in rest) + (_unit(nd, (d1, 1), (d2, 1)),)
    return StridedView.apply(input, (size, coefs, tuple(start)))


def unfold(input, dimension, size, step) -> Tensor:
    """Sliding windows of ``size`` elements every ``step`` along ``dimension``, as a view:
    that dim becomes the window count ``(n - size) // step + 1`` and a new last dim of length
    ``size`` is appended (``Tensor.unfold``).

    Example: ``tensorix.arange(5.).unfold(0, 2, 2)`` is ``[[0., 1.], [2., 3.]]``.
    """
    check_tensor(input, "unfold")
    shape = input._data.shape
    nd = max(len(shape), 1)
    d = norm_dim(dimension, len(shape), "unfold")
    n = shape[d] if shape else 1
    if size > n:
        raise RuntimeError(f"unfold(): maximum size for tensor at dimension {d} is {n} but "
                           f"size is {size}")
    if size < 0:
        raise RuntimeError(f"unfold(): size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"unfold(): step is {step} but must be > 0")
    if not shape:  # a 0-d tensor unfolds as one element of length 1
        return getitem(input.reshape(1), slice(0, size))
    out = list(shape)
    out[d] = (n - size) // step + 1
    coefs = tuple(_unit(nd, (k, step if k == d else 1)) for k in range(nd)) + (_unit(nd, (d, 1)),)
    return StridedView.apply(input, (tuple(out) + (int(size),), coefs, (0,) * nd))


def flatten(input, start_dim=0, end_dim=-1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one (a view when strides allow, like reshape);
    a 0-d tensor becomes 1-d.

    Example: ``tensorix.zeros(2, 3, 4).flatten(1)`` has shape ``(2, 12)``.
    """
    check_tensor(input, "flatten")
    shape = input._data.shape
    s, e = norm_dim(start_dim, len(shape), "flatten"), norm_dim(end_dim, len(shape), "flatten")
    if s > e:
        raise RuntimeError("flatten(): flatten() has invalid args: start_dim cannot come after "
                           "end_dim")
    if not shape:
        return Reshape.apply(input, (1,))
    if s == e:
        return input
    merged = int(np.prod(shape[s:e + 1], dtype=np.int64))
    return Reshape.apply(input, shape[:s] + (merged,) + shape[e + 1:])


def unflatten(input, dim, sizes) -> Tensor:
    """Split dim ``dim`` into ``sizes`` (one entry may be -1); always a view.

    Example: ``tensorix.zeros(2, 12).unflatten(1, (3, -1))`` has shape ``(2, 3, 4)``.
    """
    check_tensor(input, "unflatten")
    shape = input._data.shape
    d = norm_dim(dim, len(shape), "unflatten")
    check_at_least_1d(input, "unflatten")
    sizes = _sizes(tuple(sizes), "unflatten")
    if not sizes:
        raise RuntimeError("unflatten(): sizes must be non-empty")
    try:
        sizes = _infer(sizes, shape[d], "unflatten", shape)
    except RuntimeError:
        raise RuntimeError(f"unflatten(): Provided sizes {list(sizes)} don't multiply up to "
                           f"the size of dim {dim} ({shape[d]}) in the input tensor") from None
    return Reshape.apply(input, shape[:d] + sizes + shape[d + 1:])


def narrow(input, dim, start, length) -> Tensor:
    """The view ``input[..., start:start + length, ...]`` along ``dim`` (``start`` may be
    negative or a 0-d integer tensor).

    Example: ``tensorix.arange(6).narrow(0, 2, 3)`` is ``tensor([2, 3, 4])``.
    """
    check_tensor(input, "narrow")
    shape = input._data.shape
    check_at_least_1d(input, "narrow")
    d = norm_dim(dim, len(shape), "narrow")
    start, length = _index._int(start, "narrow"), _index._int(length, "narrow")
    n = shape[d]
    if not -n <= start <= n:
        raise IndexError(f"narrow(): start out of range (expected to be in range of [{-n}, "
                         f"{n}], but got {start})")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    start = start + n if start < 0 else start
    if start + length > n:
        raise RuntimeError(f"narrow(): start ({start}) + length ({length}) exceeds dimension "
                           f"size ({n}).")
    return getitem(input, (slice(None),) * d + (slice(start, start + length),))


def select(input, dim, index) -> Tensor:
    """The view at ``index`` of ``dim``, with that dim removed (``x.select(1, 2)`` is
    ``x[:, 2]``).

    Example: ``tensorix.zeros(2, 3).select(1, -1)`` has shape ``(2,)``.
    """
    check_tensor(input, "select")
    shape = input._data.shape
    if not shape:
        raise IndexError("select(): select() cannot be applied to a 0-dim tensor.")
    d = norm_dim(dim, len(shape), "select")
    i = _index._int(index, "select")
    if not -shape[d] <= i < shape[d]:
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(shape)} "
                         f"at dimension {d}")
    return getitem(input, (slice(None),) * d + (i,))


def unbind(input, dim=0) -> tuple:
    """All slices along ``dim`` as a tuple of views (``dim`` removed).

    Example: ``a, b = tensorix.zeros(2, 3).unbind()`` gives two ``(3,)`` views.
    """
    check_tensor(input, "unbind")
    d = norm_dim(dim, input.ndim, "unbind")
    if not input.ndim:
        raise IndexError("unbind(): dimension specified as 0 but tensor has no dimensions")
    return tuple(select(input, d, i) for i in range(input._data.shape[d]))


def t(input) -> Tensor:
    """Transpose a tensor of at most 2 dims (0-d and 1-d come back as they are)."""
    check_tensor(input, "t")
    if input.ndim > 2:
        raise RuntimeError(f"t(): t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    return transpose(input, 0, 1) if input.ndim == 2 else input


def movedim(input, source, destination) -> Tensor:
    """Move dims ``source`` to positions ``destination`` (ints or sequences), the others
    keeping their order (a view). Example: ``x.movedim(0, -1)``; alias ``moveaxis``."""
    check_tensor(input, "movedim")
    nd = input.ndim
    src = tuple(source) if isinstance(source, (tuple, list)) else (source,)
    dst = tuple(destination) if isinstance(destination, (tuple, list)) else (destination,)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim(): Invalid source or destination dims: source "
                           f"({list(src)} dims) should contain the same number of dims as "
                           f"destination ({list(dst)} dims)")
    src = tuple(norm_dim(s, nd, "movedim") for s in src)
    dst = tuple(norm_dim(s, nd, "movedim") for s in dst)
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim(): repeated dim in `{name}` ({list(dims)})")
    if not nd:  # dims -1 and 0 of a 0-d tensor (checked above) move nothing
        return input
    order = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(nd) if d not in src)
    order = tuple(next(rest) if o is None else o for o in order)
    return Permute.apply(input, order)


def swapaxes(input, axis0, axis1) -> Tensor:
    """NumPy's name for :func:`transpose` (a view); alias ``swapdims``."""
    return transpose(input, axis0, axis1)


class ViewAsReal(Function):
    _view = True

    @staticmethod
    def forward(ctx, a):
        real = a._data.real  # a float view with the complex array's strides
        xp = backend.array_module(real)
        return xp.lib.stride_tricks.as_strided(real, real.shape + (2,),
                                               real.strides + (real.itemsize,))

    @staticmethod
    def backward(ctx, g):
        return view_as_complex(g.contiguous())


class ViewAsComplex(Function):
    _view = True

    @staticmethod
    def forward(ctx, a):
        cdt = dt.complex128 if a._dtype is dt.float64 else dt.complex64
        return a._data.view(cdt.np)[..., 0]

    @staticmethod
    def backward(ctx, g):
        return view_as_real(g)


def view_as_real(input) -> Tensor:
    """A complex tensor's memory seen as reals: shape ``(*s, 2)`` holding (real, imag)."""
    check_tensor(input, "view_as_real")
    if not input._dtype.is_complex:
        raise RuntimeError("view_as_real(): view_as_real is only supported for complex "
                           f"tensors, got {input._dtype.name}")
    return ViewAsReal.apply(input)


def view_as_complex(input) -> Tensor:
    """A float32/float64 tensor of shape ``(*s, 2)`` seen as complex of shape ``s``."""
    check_tensor(input, "view_as_complex")
    if input._dtype.name not in ("float32", "float64"):
        raise RuntimeError("view_as_complex(): view_as_complex is only supported for float "
                           f"and double tensors, but got a tensor of scalar type: "
                           f"{input._dtype.name}")
    st = input.stride()
    if not input.ndim or input._data.shape[-1] != 2:
        raise RuntimeError("view_as_complex(): Tensor must have a last dimension of size 2")
    if st[-1] != 1:
        raise RuntimeError("view_as_complex(): Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in st[:-1]):
        raise RuntimeError("view_as_complex(): Tensor must have a stride divisible by 2 for all "
                           "but last dimension")
    return ViewAsComplex.apply(input)


def _strided_view(view, base):
    """A function that rebuilds ``view``'s window from a contiguous tensor shaped like
    ``base`` (the in-place-on-a-view machinery replays it on the new base)."""
    size, stride, offset = view_geometry(view, base)

    def view_fn(b):
        return AsStrided.apply(b if b._data.flags.c_contiguous else b.contiguous(), size,
                               stride, offset)

    return view_fn


class GetItem(Function):
    """``input[index]`` for a parsed :class:`~._index.Index`: a view for basic indexing, a
    gathered copy when integer or boolean arrays take part. The index's tensors are arguments
    after it (a traced graph feeds the new ones: ``index.rebind``)."""
    _codes = "move"  # storage codes: runs on the codes (autograd/dispatch.py)

    @staticmethod
    def forward(ctx, a, index, *tensors):
        if tensors:
            index = index.rebind(tensors, a.device)
        ctx.shape, ctx.index, ctx.tensors = a._data.shape, index, tensors
        try:
            return index.get(a._data)
        except (IndexError, ValueError) as e:
            raise IndexError(f"getitem(): {e} (tensor shape {list(a._data.shape)})") from None

    @staticmethod
    def backward(ctx, g):
        return (IndexBackward.apply(g, ctx.shape, ctx.index, *ctx.tensors),) + \
            (None,) * (1 + len(ctx.tensors))


class IndexBool(GetItem):
    """:class:`GetItem` with a bool tensor in the index: the output shape depends on the data
    (a graph break in tensorix.fx, as nonzero and unique)."""


class IndexBackward(Function):
    """Scatter-add a gradient into zeros of the indexed tensor's shape (duplicates add)."""

    @staticmethod
    def forward(ctx, g, shape, index, *tensors):
        ctx.index, ctx.tensors = index, tensors
        out = g.xp.zeros(shape, dtype=g._data.dtype)
        index.rebind(tensors, g.device).scatter(out, g._data, accumulate=True)
        return out

    @staticmethod
    def backward(ctx, gg):
        return (GetItem.apply(gg, ctx.index, *ctx.tensors),) + (None,) * (2 + len(ctx.tensors))


def parse_index(input, index, op="getitem"):
    """``index`` parsed for ``input`` (PyTorch placement rules and error messages)."""
    return _index.parse(index, input._data.shape, input.device, op)


def getitem(input, index) -> Tensor:
    """``input[index]`` with PyTorch's semantics: ints, slices (positive steps), None and
    Ellipsis give a view sharing memory; integer tensors, lists and boolean masks gather a
    copy. Integers are applied before advanced indices, as in PyTorch, so ``x[0, :, [1, 2]]``
    on a ``(4, 5, 3)`` tensor has shape ``(5, 2)``.

    Example: ``x[0, 1:3]``, ``x[..., None]``, ``x[x > 0]``, ``x[tensorix.tensor([2, 0])]``.
    """
    check_tensor(input, "getitem")
    index = parse_index(input, index)
    out = (IndexBool if index.masked else GetItem).apply(input, index, *index.tensors)
    if not index.copies:
        _mark_view(out, input)
    return out


def reshape(input, *shape) -> Tensor:
    """The same data with a new shape: a view when strides allow, a copy otherwise.

    Example: ``tensorix.arange(6).reshape(2, -1)`` has shape ``(2, 3)``.
    """
    check_tensor(input, "reshape")
    shape = _infer(_sizes(shape, "reshape"), input.numel(), "reshape", input._data.shape)
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
        # the storage-only formats are uint8 codes on CUDA: d.storage gives the array dtype
        out = _make(input._data.view(d.storage(input.xp)), d)
        _mark_view(out, input)
        return out
    shape = _infer(_sizes(shape, "view"), input.numel(), "view", input._data.shape)
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
    d0, d1 = norm_dim(dim0, nd, "transpose"), norm_dim(dim1, nd, "transpose")
    if nd == 0:
        return input
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
    keep = [i for i in range(len(shape)) if i not in dims]
    st = input.stride()
    return Reshape.apply(input, tuple(shape[i] for i in keep), tuple(st[i] for i in keep))


def unsqueeze(input, dim) -> Tensor:
    """Insert a size-1 dim at ``dim`` (``-1`` appends)."""
    check_tensor(input, "unsqueeze")
    nd = input._data.ndim
    d = norm_dim(dim, nd + 1, "unsqueeze")
    shape, st = list(input._data.shape), list(input.stride())
    st.insert(d, shape[d] * st[d] if d < nd else 1)  # torch's stride for the new dim
    shape.insert(d, 1)
    return Reshape.apply(input, tuple(shape), tuple(st))


def clone(input) -> Tensor:
    """A copy with its own memory; gradients flow back unchanged."""
    return Clone.apply(check_tensor(input, "clone"))


moveaxis, swapdims = movedim, swapaxes


def contiguous(input) -> Tensor:
    """``input`` itself when C-contiguous, else a contiguous copy."""
    if input._data.flags.c_contiguous:
        return input
    return Clone.apply(input)


TENSOR_METHODS = {
    "reshape": reshape, "view": view, "expand": expand, "broadcast_to": broadcast_to,
    "permute": permute, "transpose": transpose, "clone": clone, "contiguous": contiguous,
    "squeeze": squeeze, "unsqueeze": unsqueeze, "__getitem__": getitem,
    "as_strided": as_strided, "diagonal": diagonal, "unfold": unfold, "flatten": flatten,
    "unflatten": unflatten, "narrow": narrow, "select": select, "unbind": unbind, "t": t,
    "movedim": movedim, "moveaxis": movedim, "swapaxes": swapaxes, "swapdims": swapaxes,
    "expand_as": lambda self, other: expand(self, tuple(other.shape)),
    "view_as": lambda self, other: view(self, tuple(other.shape)),
    "reshape_as": lambda self, other: reshape(self, tuple(other.shape)),
}
