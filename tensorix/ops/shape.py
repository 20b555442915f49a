"""Shape ops: joining (cat, stack and the h/v/d/column stacks), splitting (split, chunk,
tensor_split), repeating (repeat, repeat_interleave, tile), reordering (flip, roll, rot90),
padding (pad, used by ``nn.functional``), triangles (tril, triu), broadcasting helpers and
meshgrid.

Primitives are few: Cat, Flip, Roll, ConstantPad and Tri. Splits are narrow views, repeat is an
expand of a reshaped view, rot90 is flip + transpose, the reflect/replicate/circular pads and
tensor ``repeat_interleave`` are ``index_select`` with a computed index, so every gradient (and
the gradient of the gradient) comes from ops that already have one.
"""

from __future__ import annotations

import numpy as np

from .. import backend
from .. import dtypes as dt
from ..autograd.function import Function
from ..tensor import Size, Tensor, _make
from . import inplace
from ._common import check_at_least_1d, check_tensor, lift, norm_dim, same_device
from .creation import arange
from .indexing import index_select
from .movement import _sizes, getitem, narrow

__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack",
           "column_stack", "split", "chunk", "tensor_split", "repeat", "repeat_interleave",
           "tile", "flip", "fliplr", "flipud", "roll", "rot90", "pad", "tril", "triu",
           "meshgrid", "broadcast_tensors", "broadcast_shapes", "atleast_1d", "atleast_2d",
           "atleast_3d", "hsplit", "vsplit", "dsplit", "split_with_sizes", "unsafe_split",
           "unsafe_chunk", "unsafe_split_with_sizes", "ravel", "adjoint", "narrow_copy"]


def _tensor_list(tensors, op, empty_error=None):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (tuple, list)):
        raise TypeError(f"{op}(): argument 'tensors' must be a sequence of Tensors, not "
                        f"{type(tensors).__name__}")
    for i, t in enumerate(tensors):
        check_tensor(t, op, f"tensors[{i}]")
    if not tensors and empty_error:
        raise empty_error
    return list(tensors)


# -- joining -------------------------------------------------------------------------------------
class Cat(Function):
    """Concatenate along ``dim``; a 1-d empty tensor among higher-dim ones is skipped (legacy
    PyTorch behaviour) and gets an empty gradient."""
    _codes = "move"  # storage codes: runs on the codes (autograd/dispatch.py)

    @staticmethod
    def forward(ctx, dim, *tensors):
        nd = max(t._data.ndim for t in tensors)
        ctx.dim = dim
        ctx.sizes = [None if t._data.ndim != nd else t._data.shape[dim] for t in tensors]
        return tensors[0].xp.concatenate(
            [t._data for t in tensors if t._data.ndim == nd], axis=dim)

    @staticmethod
    def backward(ctx, g):
        out, start = [None], 0
        for need, n in zip(ctx.needs_input_grad[1:], ctx.sizes):
            if n is None:
                out.append(g.new_zeros((0,)) if need else None)
                continue
            out.append(narrow(g, ctx.dim, start, n) if need else None)
            start += n
        return tuple(out)


def _check_cat(tensors, d):
    ref = tensors[0]._data.shape
    for i, t in enumerate(tensors[1:], 1):
        shape = t._data.shape
        if len(shape) != len(ref):
            raise RuntimeError(f"cat(): Tensors must have same number of dimensions: got "
                               f"{len(ref)} and {len(shape)}")
        for k, (a, b) in enumerate(zip(ref, shape)):
            if k != d and a != b:
                raise RuntimeError(f"cat(): Sizes of tensors must match except in dimension "
                                   f"{d}. Expected size {a} but got size {b} for tensor number "
                                   f"{i} in the list.")


def cat(tensors, dim=0) -> Tensor:
    """Join tensors along an existing ``dim``; all other sizes must agree (1-d empty tensors
    are skipped, as in PyTorch). Dtypes promote like arithmetic.

    Shapes: ``(2, 3)`` and ``(4, 3)`` along ``dim=0`` give ``(6, 3)``.
    Example: ``tensorix.cat([tensorix.zeros(2, 3), tensorix.ones(1, 3)])``.
    """
    tensors = _tensor_list(tensors, "cat", ValueError(
        "cat(): expected a non-empty list of Tensors"))
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise RuntimeError(f"cat(): zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    same_device("cat", *tensors)
    d_type = dt.result_type(*tensors)
    kept = [t for t in tensors if t._data.shape != (0,)] or tensors[:1]
    d = norm_dim(dim, kept[0].ndim, "cat")
    _check_cat(kept, d)
    if len(kept) < len(tensors) and kept[0].ndim == 1:
        tensors = kept  # all 1-d: the empty ones join normally (and add nothing)
    return Cat.apply(d, *(lift(t, d_type, op="cat") for t in tensors))


concat = concatenate = cat


def stack(tensors, dim=0) -> Tensor:
    """Join equally shaped tensors along a new dim ``dim``.

    Shapes: three ``(2, 3)`` tensors with ``dim=1`` give ``(2, 3, 3)``.
    Example: ``tensorix.stack([x, y], dim=-1)``.
    """
    tensors = _tensor_list(tensors, "stack", RuntimeError(
        "stack(): stack expects a non-empty TensorList"))
    ref = tensors[0]._data.shape
    for i, t in enumerate(tensors[1:], 1):
        if t._data.shape != ref:
            raise RuntimeError(f"stack(): stack expects each tensor to be equal size, but got "
                               f"{list(ref)} at entry 0 and {list(t._data.shape)} at entry {i}")
    d = norm_dim(dim, len(ref) + 1, "stack")
    same_device("stack", *tensors)
    return cat([t.unsqueeze(d) for t in tensors], d)


def _atleast(tensors, nd, shape_fn):
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    items = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)) else \
        tensors
    out = []
    for t in items:
        check_tensor(t, f"atleast_{nd}d")
        out.append(t if t.ndim >= nd else t.reshape(shape_fn(tuple(t.shape))))
    return out[0] if single else tuple(out)


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (0-d becomes ``(1,)``); one tensor in, one out,
    several (or a list) in, a tuple out."""
    return _atleast(tensors, 1, lambda s: (1,))


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims: ``()`` -> ``(1, 1)``, ``(n,)`` -> ``(1, n)``."""
    return _atleast(tensors, 2, lambda s: (1,) * (2 - len(s)) + s)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims: ``()`` -> ``(1, 1, 1)``, ``(n,)`` -> ``(1, n, 1)``,
    ``(m, n)`` -> ``(m, n, 1)`` (like NumPy)."""
    return _atleast(tensors, 3, lambda s: (1, 1, 1) if not s else (1, s[0], 1)
                    if len(s) == 1 else s + (1,))


def hstack(tensors) -> Tensor:
    """Concatenate column-wise: along dim 0 for 1-d inputs, dim 1 otherwise."""
    tensors = atleast_1d(_tensor_list(tensors, "hstack"))
    return cat(tensors, 0 if tensors and tensors[0].ndim == 1 else 1)


def vstack(tensors) -> Tensor:
    """Concatenate row-wise (dim 0) after :func:`atleast_2d`; alias ``row_stack``."""
    return cat(atleast_2d(_tensor_list(tensors, "vstack")), 0)


def dstack(tensors) -> Tensor:
    """Concatenate depth-wise (dim 2) after :func:`atleast_3d`."""
    return cat(atleast_3d(_tensor_list(tensors, "dstack")), 2)


def column_stack(tensors) -> Tensor:
    """Stack 0-d/1-d tensors as columns (and 2-d ones as blocks of columns) along dim 1."""
    tensors = _tensor_list(tensors, "column_stack")
    return cat([t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in tensors], 1)


# -- splitting -------------------------------------------------------------------------------------
def split(tensor, split_size_or_sections, dim=0) -> tuple:
    """Views of ``split_size``-long pieces along ``dim`` (the last may be shorter), or of the
    given list of sizes (which must sum to the dim's size).

    Example: ``tensorix.arange(5).split([2, 3])`` gives ``([0, 1], [2, 3, 4])``.
    """
    check_tensor(tensor, "split")
    check_at_least_1d(tensor, "split")
    d = norm_dim(dim, tensor.ndim, "split")
    n = tensor._data.shape[d]
    s = split_size_or_sections
    if isinstance(s, (int, np.integer)):
        if s < 0:
            raise RuntimeError(f"split(): split expects split_size be non-negative, but got "
                               f"split_size={s}")
        if s == 0 and n:
            raise RuntimeError(f"split(): split_size can only be 0 if dimension size is 0, but "
                               f"got dimension size of {n}")
        sizes = [min(s, n - i) for i in range(0, n, s)] if n else [0]
    else:
        sizes = [int(k) for k in s]
        if any(k < 0 for k in sizes):
            raise RuntimeError(f"split(): split_with_sizes expects split_sizes have only "
                               f"non-negative entries, but got split_sizes={sizes}")
        if sum(sizes) != n:
            raise RuntimeError(f"split(): split_with_sizes expects split_sizes to sum exactly "
                               f"to {n} (input tensor's size at dimension {d}), but got "
                               f"split_sizes={sizes}")
    starts = np.cumsum([0] + sizes[:-1])
    return tuple(narrow(tensor, d, int(a), k) for a, k in zip(starts, sizes))


def chunk(input, chunks, dim=0) -> tuple:
    """Split into at most ``chunks`` views of ``ceil(n / chunks)`` along ``dim`` (fewer when
    the size does not allow ``chunks`` pieces, as in PyTorch).

    Example: ``tensorix.arange(5).chunk(3)`` gives pieces of 2, 2 and 1.
    """
    check_tensor(input, "chunk")
    if chunks <= 0:
        raise RuntimeError(f"chunk(): chunk expects `chunks` to be greater than 0, got: {chunks}")
    check_at_least_1d(input, "chunk")
    d = norm_dim(dim, input.ndim, "chunk")
    n = input._data.shape[d]
    if n == 0:
        return tuple(narrow(input, d, 0, 0) for _ in range(chunks))
    return split(input, -(-n // chunks), d)


def _section_bounds(spec, n, op):
    if isinstance(spec, Tensor):
        if spec._dtype.category != 1:
            raise RuntimeError(f"{op}(): tensor_split expected tensor_indices_or_sections to "
                               f"have dtype of long, but got {spec._dtype.name}")
        if spec.ndim > 1:
            raise RuntimeError(f"{op}(): tensor_split expected tensor_indices_or_sections to be "
                               f"a zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {spec.ndim} dims")
        spec = spec.item() if spec.ndim == 0 else spec.tolist()
    if isinstance(spec, (int, np.integer)):
        if spec <= 0:
            raise RuntimeError(f"{op}(): number of sections must be larger than 0, got {spec}")
        big, small = n % spec, n // spec
        sizes = [small + 1] * big + [small] * (spec - big)
        starts = np.cumsum([0] + sizes)
        return [(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]
    cuts = [0] + [int(i) for i in spec] + [n]
    bounds = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        r = range(n)[a:b] if (a, b) != (0, n) else range(n)
        start = min(r.start, n)
        bounds.append((start, start + len(r)))
    return bounds


def tensor_split(input, indices_or_sections, dim=0) -> tuple:
    """Views split into ``sections`` nearly equal pieces (the first ``n % sections`` one
    longer), or at the given ``indices`` (like ``numpy.array_split``; out-of-range indices give
    empty pieces).

    Example: ``tensorix.arange(7).tensor_split(3)`` gives pieces of 3, 2 and 2.
    """
    check_tensor(input, "tensor_split")
    check_at_least_1d(input, "tensor_split")
    d = norm_dim(dim, input.ndim, "tensor_split")
    bounds = _section_bounds(indices_or_sections, input._data.shape[d], "tensor_split")
    return tuple(narrow(input, d, a, b - a) for a, b in bounds)


def _split_dim(op, input, indices_or_sections, dim, min_ndim):
    check_tensor(input, op)
    if input.ndim < min_ndim:
        raise RuntimeError(f"{op}(): torch.{op} requires a tensor with at least {min_ndim} "
                           f"dimension, but got a tensor with {input.ndim} dimensions!")
    if isinstance(indices_or_sections, (int, np.integer)):
        n = input.shape[dim]
        if indices_or_sections == 0 or n % indices_or_sections:
            raise RuntimeError(f"{op}(): torch.{op} attempted to split along dimension {dim}, "
                               f"but the size of the dimension {n} is not divisible by the "
                               f"split_size {indices_or_sections}!")
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections) -> tuple:
    """Split along dim 1 (dim 0 for 1-d tensors) into equal sections (which must divide the
    size) or at the given indices, like ``numpy.hsplit``; views.

    Example: ``tensorix.hsplit(tensorix.zeros(2, 4), 2)`` gives two ``(2, 2)`` views.
    """
    check_tensor(input, "hsplit")
    return _split_dim("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input, indices_or_sections) -> tuple:
    """Split along dim 0 of a tensor of at least 2 dims (``numpy.vsplit``); views."""
    return _split_dim("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections) -> tuple:
    """Split along dim 2 of a tensor of at least 3 dims (``numpy.dsplit``); views."""
    return _split_dim("dsplit", input, indices_or_sections, 2, 3)


def split_with_sizes(input, split_sizes, dim=0) -> tuple:
    """Views of the given ``split_sizes`` (summing to the size of ``dim``) along ``dim``.

    Example: ``tensorix.arange(5).split_with_sizes([2, 3])``.
    """
    if isinstance(split_sizes, (int, np.integer)):
        raise TypeError("split_with_sizes(): argument 'split_sizes' must be a sequence of ints, "
                        "not int")
    return split(input, list(split_sizes), dim)


unsafe_split, unsafe_chunk, unsafe_split_with_sizes = split, chunk, split_with_sizes


def ravel(input) -> Tensor:
    """The elements as a contiguous 1-d tensor (a view when ``input`` is contiguous).

    Example: ``tensorix.ravel(tensorix.zeros(2, 3))`` has shape ``(6,)``.
    """
    check_tensor(input, "ravel")
    return input.contiguous().reshape(-1)


def adjoint(input) -> Tensor:
    """The conjugate transpose of the last two dims (a view for real tensors), ``x.mH``."""
    check_tensor(input, "adjoint")
    if input.ndim < 2:
        raise RuntimeError(f"adjoint(): tensor.adjoint() is only supported on matrices or "
                           f"batches of matrices. Got {input.ndim}-D tensor.")
    return input.mH


def narrow_copy(input, dim, start, length) -> Tensor:
    """:func:`narrow` as a copy with its own memory."""
    return narrow(input, dim, start, length).clone()


# -- repeating -----------------------------------------------------------------------------------
def repeat(input, *sizes) -> Tensor:
    """Tile ``input`` ``sizes[i]`` times along dim ``i`` (``sizes`` may add leading dims).

    Shapes: ``(2, 3).repeat(2, 1, 2)`` gives ``(2, 2, 6)``.
    Example: ``tensorix.tensor([1, 2]).repeat(2)`` is ``tensor([1, 2, 1, 2])``.
    """
    check_tensor(input, "repeat")
    sizes = _sizes(sizes, "repeat")
    if len(sizes) < input.ndim:
        raise RuntimeError("repeat(): Number of dimensions of repeat dims can not be smaller "
                           "than number of dimensions of tensor")
    shape = (1,) * (len(sizes) - input.ndim) + tuple(input.shape)
    out = tuple(r * s for r, s in zip(sizes, shape))
    if any(r < 0 for r in sizes):
        raise RuntimeError(f"repeat(): Trying to create tensor with negative dimension "
                           f"{min(out)}: {list(out)}")
    inter = tuple(v for s in shape for v in (1, s))
    wide = tuple(v for r, s in zip(sizes, shape) for v in (r, s))
    return input.reshape(inter).expand(wide).reshape(out)


def tile(input, dims) -> Tensor:
    """:func:`repeat` where ``dims`` shorter than ``input.ndim`` is padded with leading ones
    (NumPy's ``tile``). Example: ``x.tile((2,))`` repeats the last dim twice."""
    check_tensor(input, "tile")
    dims = _sizes(tuple(dims), "tile")
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


def _repeat_counts(repeats, n, op):
    """Per-element repeat counts as a host array of length ``n``."""
    if isinstance(repeats, Tensor):
        if repeats._dtype.category != 1:
            raise RuntimeError(f"{op}(): repeats has to be a Long tensor, got "
                               f"{repeats._dtype.name}")
        counts = np.asarray(backend.to_device(repeats._data, backend.cpu)).reshape(-1)
        if counts.size not in (1, n):
            raise RuntimeError(f"{op}(): repeats must have the same size as input along dim, "
                               f"but got repeats.size(0) = {counts.size} and input.size(0) = "
                               f"{n}")
    else:
        counts = np.asarray([int(repeats)])
    if (counts < 0).any():
        raise RuntimeError(f"{op}(): repeats can not be negative")
    return np.broadcast_to(counts, (n,)).astype(np.int64)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None) -> Tensor:
    """Repeat each element ``repeats`` times (an int, or a tensor of per-element counts) along
    ``dim`` (the flattened input when ``dim`` is None). With only a 1-d count tensor,
    returns ``arange(n)`` repeated by those counts.

    Example: ``tensorix.tensor([1, 2]).repeat_interleave(tensorix.tensor([1, 2]))`` is
    ``tensor([1, 2, 2])``.
    """
    check_tensor(input, "repeat_interleave")
    if repeats is None:  # the index form: input holds the counts
        return repeat_interleave(arange(input.numel(), device=input.device), input, 0)
    if dim is None:
        input, dim = input.reshape(-1), 0
    d = norm_dim(dim, input.ndim, "repeat_interleave", scalar=False)
    n = input._data.shape[d]
    counts = _repeat_counts(repeats, n, "repeat_interleave")
    if output_size is not None and int(counts.sum()) != output_size:
        raise RuntimeError(f"repeat_interleave(): output_size {output_size} does not match "
                           f"the sum of repeats {int(counts.sum())}")
    if not isinstance(repeats, Tensor):  # an expand, no index needed
        shape = list(input.shape)
        shape.insert(d + 1, int(counts[0]))
        out = list(input.shape)
        out[d] *= int(counts[0])
        return input.unsqueeze(d + 1).expand(tuple(shape)).reshape(tuple(out))
    idx = _make(input.device.xp.asarray(np.repeat(np.arange(n), counts)))
    return index_select(input, d, idx)


# -- reordering ----------------------------------------------------------------------------------
class Flip(Function):
    _codes = "move"  # storage codes: runs on the codes (autograd/dispatch.py)

    @staticmethod
    def forward(ctx, a, dims):
        ctx.dims = dims
        return a.xp.ascontiguousarray(a.xp.flip(a._data, dims))  # a copy, as in torch

    @staticmethod
    def backward(ctx, g):
        return Flip.apply(g, ctx.dims)


def _dim_list(dims, nd, op):
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    out = tuple(norm_dim(d, nd, op) for d in dims)
    for d in out:
        if out.count(d) > 1:
            raise RuntimeError(f"{op}(): dim {d} appears multiple times in the list of dims")
    return out


def flip(input, dims) -> Tensor:
    """Reverse the order of elements along ``dims`` (a copy, as in PyTorch).

    Example: ``tensorix.arange(3).flip(0)`` is ``tensor([2, 1, 0])``.
    """
    check_tensor(input, "flip")
    dims = _dim_list(dims, input.ndim, "flip")
    if input.ndim == 0 or not dims:
        return input.clone()
    return Flip.apply(input, dims)


def fliplr(input) -> Tensor:
    """Flip dim 1 (left/right); needs at least 2 dims."""
    check_tensor(input, "fliplr")
    if input.ndim < 2:
        raise RuntimeError("fliplr(): Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input) -> Tensor:
    """Flip dim 0 (up/down); needs at least 1 dim."""
    check_tensor(input, "flipud")
    if input.ndim < 1:
        raise RuntimeError("flipud(): Input must be >= 1-d.")
    return flip(input, (0,))


class Roll(Function):
    _codes = "move"  # storage codes: runs on the codes (autograd/dispatch.py)

    @staticmethod
    def forward(ctx, a, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        return a.xp.roll(a._data, shifts, axis=dims)

    @staticmethod
    def backward(ctx, g):
        return Roll.apply(g, tuple(-s for s in ctx.shifts), ctx.dims)


def roll(input, shifts, dims=None) -> Tensor:
    """Shift elements cyclically by ``shifts`` along ``dims`` (ints or tuples of equal
    length); with ``dims=None`` the flattened tensor is rolled and reshaped back.

    Example: ``tensorix.arange(4).roll(1)`` is ``tensor([3, 0, 1, 2])``.
    """
    check_tensor(input, "roll")
    shifts = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
    shifts = tuple(int(s) for s in shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"roll(): shifts and dimensions must align. shifts: "
                               f"{len(shifts)}, dims:0")
        return Roll.apply(input.reshape(-1), shifts, (0,)).reshape(tuple(input.shape))
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if len(dims) != len(shifts):
        raise RuntimeError(f"roll(): shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    dims = tuple(norm_dim(d, input.ndim, "roll", scalar=False) for d in dims)
    return Roll.apply(input, shifts, dims)


def rot90(input, k=1, dims=(0, 1)) -> Tensor:
    """Rotate by ``k * 90`` degrees in the plane of ``dims``, from the first dim towards the
    second (flip + transpose).

    Example: ``tensorix.tensor([[1, 2], [3, 4]]).rot90()`` is ``[[2, 4], [1, 3]]``.
    """
    check_tensor(input, "rot90")
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"rot90(): expected total rotation dims == 2, but got dims = "
                           f"{len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"rot90(): expected total dims >= 2, but got total dims = "
                           f"{input.ndim}")
    d0, d1 = (norm_dim(d, input.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"rot90(): expected rotation dims to be different, but got dim0 = "
                           f"{d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return flip(input, (d1,)).transpose(d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(input, (d0,)).transpose(d0, d1)
    return input.clone()


# -- padding ---------------------------------------------------------------------------------------
class ConstantPad(Function):
    """Place ``a`` inside a ``value``-filled tensor grown by ``pads`` = ((before, after), ...)
    per dim (non-negative; negative pads are crops applied before)."""

    @staticmethod
    def forward(ctx, a, pads, value):
        xp = a.xp
        shape = tuple(s + b + e for s, (b, e) in zip(a._data.shape, pads))
        out = xp.full(shape, value._data, dtype=a._data.dtype)
        ctx.inner = tuple(slice(b, b + s) for s, (b, _) in zip(a._data.shape, pads))
        ctx.pads = pads
        out[ctx.inner] = a._data
        return out

    @staticmethod
    def backward(ctx, g):
        gv = None
        if ctx.needs_input_grad[2]:
            gv = g.sum() - getitem(g, ctx.inner).sum()
        return getitem(g, ctx.inner), None, gv


def _pad_pairs(input, pad, op):
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError(f"{op}(): Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"{op}(): Padding length should be less than or equal to two times "
                           f"the input dimension but got padding length {len(pad)} and input "
                           f"of dimension {input.ndim}")
    lead = input.ndim - len(pad) // 2
    # pad lists the last dim first: (left, right, top, bottom, ...)
    return [(0, 0)] * lead + [(pad[2 * i], pad[2 * i + 1]) for i in
                              reversed(range(len(pad) // 2))]


def _pad_index(mode, n, before, after, d, shape):
    i = np.arange(-before, n + after)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    if mode == "circular":
        if before > n or after > n:
            raise RuntimeError("pad(): Padding value causes wrapping around more than once.")
        return i % n
    if before >= n or after >= n:
        raise RuntimeError(f"pad(): Argument #4: Padding size should be less than the "
                           f"corresponding input dimension, but got: padding ({before}, "
                           f"{after}) at dimension {d} of input {list(shape)}")
    return (n - 1) - np.abs((n - 1) - np.abs(i))


def _check_pad_mode(input, pad, mode, value):
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad(): Unrecognised padding mode {mode}")
    if mode == "constant":
        return
    if value is not None and value != 0:
        raise RuntimeError(f"pad(): Padding mode \"{mode}\" doesn't take in value argument")
    k = len(pad) // 2
    if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"pad(): Padding size {len(pad)} is not supported for {input.ndim}D input tensor. "
            "Non-constant padding pads the last 1, 2 or 3 dims of a 2D/3D, 3D/4D or 4D/5D "
            "input (padding size 2, 4 or 6)")
    if 0 in input.shape[input.ndim - k:]:
        raise RuntimeError(f"pad(): Expected non-zero sizes in the padded dims for mode "
                           f"{mode}, got input of shape {list(input.shape)}")


def _pad_by_index(input, pairs, mode):
    out, shape = input, tuple(input.shape)
    for d, (b, e) in enumerate(pairs):
        if (b, e) != (0, 0):
            idx = _pad_index(mode, shape[d], b, e, d, shape)
            out = index_select(out, d, _make(input.device.xp.asarray(idx)))
    return out


def pad(input, pad, mode="constant", value=None) -> Tensor:
    """Pad (or, with negative amounts, crop) the last ``len(pad) // 2`` dims, like
    ``torch.nn.functional.pad``: ``pad = (left, right)`` for the last dim, then
    ``(top, bottom)`` for the one before, and so on. ``mode`` is ``'constant'`` (with
    ``value``, default 0), ``'reflect'`` (mirror without the edge), ``'replicate'`` (repeat
    the edge) or ``'circular'`` (wrap around); the last three pad the last 1-3 dims of a
    batched input.

    Shapes: ``(2, 3)`` with ``pad=(1, 2)`` gives ``(2, 6)``.
    Example: ``tensorix.pad(tensorix.arange(3.).reshape(1, 3), (2, 0), mode='reflect')`` is
    ``[[2., 1., 0., 1., 2.]]``.
    """
    check_tensor(input, "pad")
    _check_pad_mode(input, pad, mode, value)
    pairs = _pad_pairs(input, pad, "pad")
    shape = tuple(input.shape)
    for d, (b, e) in enumerate(pairs):
        if shape[d] + b + e < 0:
            raise RuntimeError(f"pad(): The input size {shape[d]}, plus negative padding {b} "
                               f"and {e} resulted in a negative output size, which is invalid. "
                               f"Check dimension {d} of your input.")
    if mode in ("reflect", "replicate"):  # negative pads index the original edges
        return _pad_by_index(input, pairs, mode)
    crop = tuple(slice(max(-b, 0), s - max(-e, 0)) for s, (b, e) in zip(shape, pairs))
    if any(b < 0 or e < 0 for b, e in pairs):  # crop first: circular wraps the cropped tensor
        input = getitem(input, crop)
    pairs = tuple((max(b, 0), max(e, 0)) for b, e in pairs)
    if mode == "circular":
        return _pad_by_index(input, pairs, mode)
    fill = lift(0 if value is None else value, input._dtype, input, "pad", "value")
    return ConstantPad.apply(input, pairs, fill)


# -- triangles -----------------------------------------------------------------------------------
class Tri(Function):
    _codes = "move"  # storage codes: runs on the codes (autograd/dispatch.py)

    @staticmethod
    def forward(ctx, a, k, upper):
        ctx.k, ctx.upper = k, upper
        xp = a.xp
        return (xp.triu if upper else xp.tril)(a._data, k)

    @staticmethod
    def backward(ctx, g):
        return Tri.apply(g, ctx.k, ctx.upper)


def tril(input, diagonal=0) -> Tensor:
    """The lower triangle of the last two dims (on and below ``diagonal``), zeros elsewhere.

    Example: ``tensorix.ones(3, 3).tril(-1)`` keeps the strictly lower part.
    """
    check_tensor(input, "tril")
    if input.ndim < 2:
        raise RuntimeError("tril(): tril: input tensor must have at least 2 dimensions")
    return Tri.apply(input, int(diagonal), False)


def triu(input, diagonal=0) -> Tensor:
    """The upper triangle of the last two dims (on and above ``diagonal``), zeros elsewhere."""
    check_tensor(input, "triu")
    if input.ndim < 2:
        raise RuntimeError("triu(): triu: input tensor must have at least 2 dimensions")
    return Tri.apply(input, int(diagonal), True)


# -- broadcasting and grids ----------------------------------------------------------------------
def broadcast_shapes(*shapes) -> Size:
    """The shape that tensors of ``shapes`` (ints or sequences) broadcast to.

    Example: ``tensorix.broadcast_shapes((3, 1), (4,))`` is ``Size([3, 4])``.
    """
    dims = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes]
    out = [1] * max((len(s) for s in dims), default=0)
    for k, s in enumerate(dims):
        for i, n in enumerate(reversed(s)):
            j = len(out) - 1 - i
            if n < 0 or (out[j] != n and out[j] != 1 and n != 1):
                raise RuntimeError(f"broadcast_shapes(): Attempting to broadcast a dimension "
                                   f"of length {n} at {-1 - i}! Mismatching argument at index "
                                   f"{k} had {tuple(s)}; but expected shape should be "
                                   f"broadcastable to {out}")
            out[j] = n if out[j] == 1 else out[j]
    return Size(out)


def broadcast_tensors(*tensors) -> tuple:
    """Expand the tensors to their common broadcast shape (views).

    Example: ``a, b = tensorix.broadcast_tensors(tensorix.zeros(3, 1), tensorix.zeros(4))``.
    """
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    tensors = _tensor_list(list(tensors), "broadcast_tensors")
    shape = tuple(broadcast_shapes(*(t._data.shape for t in tensors)))
    for t in tensors:
        for i, (n, m) in enumerate(zip(reversed(t._data.shape), reversed(shape))):
            if n != m and n != 1:
                raise RuntimeError(f"broadcast_tensors(): The size of tensor a ({n}) must "
                                   f"match the size of tensor b ({m}) at non-singleton "
                                   f"dimension {len(shape) - 1 - i}")
    return tuple(t.expand(shape) for t in tensors)


def meshgrid(*tensors, indexing="ij") -> tuple:
    """Coordinate grids from 0-d/1-d tensors: with ``indexing='ij'`` output ``k`` varies along
    dim ``k``; ``'xy'`` swaps the first two dims (Cartesian, like NumPy's default). The
    outputs are expanded views.

    Example: ``X, Y = tensorix.meshgrid(tensorix.arange(3), tensorix.arange(2), indexing='xy')``
    gives two ``(2, 3)`` grids.
    """
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    tensors = _tensor_list(list(tensors), "meshgrid", RuntimeError(
        "meshgrid(): meshgrid expects a non-empty TensorList"))
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"meshgrid(): indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"meshgrid(): Expected 0D or 1D tensor in the tensor list but "
                               f"got a tensor of shape {list(t.shape)}")
        if t._dtype is not tensors[0]._dtype:
            raise RuntimeError("meshgrid(): meshgrid expects all tensors to have the same dtype")
    sizes = [t.numel() for t in tensors]
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        order[0], order[1] = 1, 0
    shape = tuple(sizes[order[k]] for k in range(len(tensors)))
    out = []
    for i, t in enumerate(tensors):
        view = [1] * len(tensors)
        view[order.index(i)] = sizes[i]
        out.append(t.reshape(tuple(view)).expand(shape))
    return tuple(out)


TENSOR_METHODS = {
    "repeat": repeat, "tile": tile, "repeat_interleave": repeat_interleave, "flip": flip,
    "fliplr": fliplr, "flipud": flipud, "roll": roll, "rot90": rot90, "tril": tril,
    "triu": triu, "split": split, "chunk": chunk, "tensor_split": tensor_split,
    "tril_": inplace.make(tril), "triu_": inplace.make(triu),
    "ravel": ravel, "hsplit": hsplit, "vsplit": vsplit, "dsplit": dsplit,
    "split_with_sizes": split_with_sizes, "unsafe_split": split, "unsafe_chunk": chunk,
    "unsafe_split_with_sizes": split_with_sizes, "adjoint": adjoint, "narrow_copy": narrow_copy,
}
