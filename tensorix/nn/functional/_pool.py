"""Pooling: max pooling as a primitive (forward keeps the argmax; backward scatters to it),
average and adaptive pooling composed from the Unfold primitive and reductions."""

from __future__ import annotations

import itertools

import numpy as np

from ... import _threads
from ...autograd.function import Function
from ...ops.creation import ones, tensor, zeros
from ...ops.shape import pad as pad_op
from ...ops.shape import stack
from ...tensor import Tensor, _make
from ._conv import Unfold, _fold_raw, _tuple, _unfold_raw

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d",
           "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "lp_pool1d", "lp_pool2d", "max_unpool1d", "max_unpool2d",
           "max_unpool3d"]


def _pool_out(size, k, s, p, d, ceil_mode):
    num = size + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:  # the last window must start inside the input
        out -= 1
    return out


class MaxPool(Function):
    """Max over windows; ties go to the first maximum (as PyTorch on CPU)."""

    @staticmethod
    def forward(ctx, x, kernel, stride, padding, dilation, out_sizes, with_indices=False):
        xp = x.xp
        nd = len(kernel)
        data = x._data
        extra = [max(0, (out_sizes[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1
                     - (data.shape[2 + i] + 2 * padding[i])) for i in range(nd)]
        fast = _tiled(data, kernel, stride, padding, dilation, extra)
        if fast is not None and not with_indices:
            ctx.geometry = (data.shape, kernel, stride, padding, dilation, extra, out_sizes)
            out, ctx.idx = _tiled_max(data, kernel, out_sizes)
            if out is not None:
                return out
        fill = -xp.inf if data.dtype.kind == "f" else xp.iinfo(data.dtype).min
        padded = xp.pad(data, [(0, 0), (0, 0)] + [(padding[i], padding[i] + extra[i])
                                                   for i in range(nd)], constant_values=fill)
        win = _unfold_raw(padded, kernel, stride, (0,) * nd, dilation)
        win = win[(slice(None), slice(None)) + (slice(None),) * nd
                  + tuple(slice(0, o) for o in out_sizes)]
        n, c = data.shape[:2]
        k = 1
        for s in kernel:
            k *= s
        flat = xp.moveaxis(win.reshape(n, c, k, *out_sizes), 2, -1)
        idx = flat.argmax(axis=-1)
        ctx.geometry = (data.shape, kernel, stride, padding, dilation, extra, out_sizes)
        ctx.idx = idx
        out = xp.take_along_axis(flat, idx[..., None], axis=-1)[..., 0]
        if not with_indices:
            return out
        indices = _make(_flat_indices(xp, idx, data.shape[2:], kernel, stride, padding,
                                      dilation))
        ctx.mark_non_differentiable(indices)
        return out, indices

    @staticmethod
    def backward(ctx, g, *_):
        return MaxPoolBackward.apply(g, ctx.idx, ctx.geometry), None, None, None, None, None, \
            None


_SIGN = {2: np.uint16(1 << 15), 4: np.uint32(1 << 31), 8: np.uint64(1 << 63)}


def _tiled(data, kernel, stride, padding, dilation, extra):
    """True for windows that tile the input (stride == kernel, no padding, dilation or
    ceil-mode overhang) of a NumPy real array: the fast path of max pooling."""
    if type(data) is not np.ndarray or data.dtype.kind not in "fiu" or \
            (data.dtype.kind == "f" and data.itemsize not in _SIGN):
        return None
    if tuple(stride) != tuple(kernel) or any(padding) or any(d != 1 for d in dilation) or \
            any(extra):
        return None
    return True


def _tile_views(data, kernel, out_sizes):
    """One strided view per kernel offset, in row-major kernel order: view p holds element p
    of every window."""
    return [data[(slice(None), slice(None)) + tuple(slice(o, o + n * k, k) for o, n, k in
                                                    zip(offs, out_sizes, kernel))]
            for offs in itertools.product(*[range(k) for k in kernel])]


def _tiled_max(data, kernel, out_sizes):
    """Max over tiling windows and the first position of the max, from elementwise maxima of
    the tile views: several times faster than gathering the windows. Returns (None, None)
    where it could differ from the general path's argmax in the sign of a zero (a -0.0 in
    the input) or the place of a NaN. Samples are independent, so runs of them are split
    over the pool (``_threads.COSTLY`` elements a part: ~10 passes over each element, as a
    transcendental kernel's cost); the bits do not depend on the split."""
    out = np.empty(data.shape[:2] + tuple(out_sizes), dtype=data.dtype)
    idx = np.empty(out.shape, dtype=np.intp)
    exact = []  # False from a part with a NaN or a -0.0

    def rows(a, b):
        exact.append(_tiled_max_into(data[a:b], kernel, out_sizes, out[a:b], idx[a:b]))

    _threads.parallel(data.shape[0], rows, _rows_per_part(data), pieces=1)
    return (out, idx) if all(exact) else (None, None)


def _rows_per_part(data):
    """Samples (rows of axis 0) of ``data`` worth a part of a split multi-pass kernel."""
    row = max(1, data[:1].size)
    return max(1, -(-_threads.COSTLY // row))


def _tiled_max_into(data, kernel, out_sizes, out, idx):
    """:func:`_tiled_max` of ``data`` into ``out`` and ``idx``; False where it could differ
    from the general path."""
    views = _tile_views(data, kernel, out_sizes)
    if len(views) > 1:
        np.maximum(views[0], views[1], out=out)
    else:
        np.copyto(out, views[0])
    for v in views[2:]:
        np.maximum(out, v, out=out)
    if data.dtype.kind == "f" and (np.isnan(out).any() or np.equal(
            data.view(_SIGN[data.itemsize].dtype), _SIGN[data.itemsize]).any()):
        return False
    # the first position of the max = how many leading views miss it, counted in bytes
    miss = np.not_equal(views[0], out)
    count = miss.view(np.uint8).copy()
    for v in views[1:-1]:
        miss &= np.not_equal(v, out)
        count += miss.view(np.uint8)
    np.copyto(idx, count)
    return True


def _tiled_scatter(g, idx, shape, kernel, out_sizes):
    """MaxPoolBackward for tiling windows: each gradient goes to one place, no fold needed.
    Equal, bit for bit, to the general path's ``(idx == p) * g`` added into zeros. Split by
    samples over the pool as :func:`_tiled_max`."""
    full = np.empty(shape, dtype=g.dtype)

    def rows(a, b):
        _tiled_scatter_into(g[a:b], idx[a:b], full[a:b], kernel, out_sizes)

    _threads.parallel(shape[0], rows, _rows_per_part(full), pieces=1)
    return full


def _tiled_scatter_into(g, idx, full, kernel, out_sizes):
    """:func:`_tiled_scatter` of samples ``g`` into ``full`` (their input's shape)."""
    shape = full.shape
    size = 1
    for k in kernel:
        size *= k
    pos = idx.astype(np.uint8) if size <= 256 else idx  # byte compares: 8x less memory
    offsets = itertools.product(*[range(k) for k in kernel])
    if any(shape[2 + i] != o * k for i, (o, k) in enumerate(zip(out_sizes, kernel))):
        full[...] = 0  # a rim no window covers stays zero
        part = np.empty_like(g)
        for p, view in enumerate(_tile_views(full, kernel, out_sizes)):
            view += np.multiply(pos == p, g, out=part)
        return
    # write each offset's share straight into an (N, C, o1, k1, o2, k2, ...) layout of the
    # input; then 0 + x, as adding into zeros gives (a -0.0 becomes 0.0)
    tiles = full.reshape(tuple(shape[:2]) + sum(zip(out_sizes, kernel), ()))
    for p, offs in enumerate(offsets):
        at = (slice(None), slice(None)) + sum(((slice(None), o) for o in offs), ())
        np.multiply(pos == p, g, out=tiles[at])
    tiles += 0


def _flat_indices(xp, idx, spatial, kernel, stride, padding, dilation):
    """Window argmax positions as PyTorch's indices: flat offsets into each (N, C) plane."""
    nd = len(kernel)
    offsets = xp.unravel_index(idx, kernel)
    flat = xp.zeros(idx.shape, dtype=xp.int64)
    for d in range(nd):
        pos = xp.arange(idx.shape[2 + d]).reshape((-1,) + (1,) * (nd - 1 - d))
        coord = pos * stride[d] - padding[d] + offsets[d] * dilation[d]
        flat = flat * spatial[d] + coord
    return flat


class MaxPoolBackward(Function):
    """Scatter the gradient to each window's argmax (its own backward gathers again)."""

    @staticmethod
    def forward(ctx, g, idx, geometry):
        ctx.idx, ctx.geometry = idx, geometry
        shape, kernel, stride, padding, dilation, extra, out_sizes = geometry
        xp = g.xp
        if _tiled(g._data, kernel, stride, padding, dilation, extra):
            return _tiled_scatter(g._data, idx, shape, kernel, out_sizes)
        nd = len(kernel)
        n, c = shape[:2]
        k = 1
        for s in kernel:
            k *= s
        onehot = (idx[..., None] == xp.arange(k)) * g._data[..., None]  # (N, C, *O, K)
        cols = xp.moveaxis(onehot, -1, 2).reshape(n, c, *kernel, *out_sizes)
        padded = (n, c) + tuple(shape[2 + i] + extra[i] for i in range(nd))
        full = _fold_raw(cols, padded, kernel, stride, padding, dilation)
        return full[(slice(None), slice(None)) + tuple(slice(0, s) for s in shape[2:])]

    @staticmethod
    def backward(ctx, gg):
        shape, kernel, stride, padding, dilation, extra, out_sizes = ctx.geometry
        nd = len(kernel)
        pads = []
        for i in reversed(range(nd)):
            pads += [padding[i], padding[i] + extra[i]]
        win = Unfold.apply(pad_op(gg, pads), kernel, stride, (0,) * nd, dilation)
        n, c = shape[:2]
        win = win[(slice(None), slice(None)) + (slice(None),) * nd
                  + tuple(slice(0, o) for o in out_sizes)]
        flat = win.reshape(n, c, -1, *out_sizes).movedim(2, -1)
        return flat.gather(-1, tensor(ctx.idx[..., None])).squeeze(-1), None, None


def _windows(x, kernel_size, stride, padding, dilation, ceil_mode, nd, op):
    """The checked window geometry of a pooling op on batched ``x`` (N, C, *spatial):
    kernel, stride (default: the kernel), padding and dilation tuples, and output sizes."""
    if x.ndim != nd + 2:
        raise RuntimeError(f"{op}(): expected a {nd + 1}D or {nd + 2}D input, got shape "
                           f"{list(x.shape)}")
    k = _tuple(kernel_size, nd, "kernel_size", op)
    s = k if stride is None or stride == [] else _tuple(stride, nd, "stride", op)
    p = _tuple(padding, nd, "padding", op)
    d = _tuple(dilation, nd, "dilation", op)
    if any(2 * p[i] > k[i] for i in range(nd)):
        raise RuntimeError(f"{op}(): pad should be at most half of effective kernel size, but "
                           f"got pad={list(p)}, kernel_size={list(k)}")
    outs = tuple(_pool_out(x.shape[2 + i], k[i], s[i], p[i], d[i], ceil_mode)
                 for i in range(nd))
    if any(o <= 0 for o in outs):
        raise RuntimeError(f"{op}(): output size is too small for input {list(x.shape)}")
    return k, s, p, d, outs


def _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd, op):
    if x.ndim == nd + 1:
        out = _max_pool(x.unsqueeze(0), kernel_size, stride, padding, dilation, ceil_mode,
                        return_indices, nd, op)
        return tuple(o.squeeze(0) for o in out) if return_indices else out.squeeze(0)
    k, s, p, d, outs = _windows(x, kernel_size, stride, padding, dilation, ceil_mode, nd, op)
    return MaxPool.apply(x, k, s, p, d, outs, bool(return_indices))


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False) -> Tensor:
    """Max over sliding windows of (N, C, L)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     1, "max_pool1d")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False) -> Tensor:
    """Max over sliding windows of (N, C, H, W); stride defaults to the kernel size.

    Example: ``F.max_pool2d(tensorix.randn(1, 3, 8, 8), 2)`` has shape (1, 3, 4, 4).
    """
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     2, "max_pool2d")


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False) -> Tensor:
    """Max over sliding windows of (N, C, D, H, W)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     3, "max_pool3d")


def _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
              nd, op):
    if x.ndim == nd + 1:
        return _avg_pool(x.unsqueeze(0), kernel_size, stride, padding, ceil_mode,
                         count_include_pad, divisor_override, nd, op).squeeze(0)
    k, s, p, _, outs = _windows(x, kernel_size, stride, padding, 1, ceil_mode, nd, op)
    # ceil_mode windows may run past the padded input: pad the end with zeros that no
    # divisor counts
    extra = [max(0, (outs[i] - 1) * s[i] + k[i] - (x.shape[2 + i] + 2 * p[i]))
             for i in range(nd)]
    pads = []
    for i in reversed(range(nd)):
        pads += [p[i], p[i] + extra[i]]
    cols = Unfold.apply(pad_op(x, pads), k, s, (0,) * nd, (1,) * nd)  # (N, C, *K, *O)
    cols = cols[(slice(None),) * (2 + nd) + tuple(slice(0, o) for o in outs)]
    dims = tuple(range(2, 2 + nd))
    total = cols.sum(dim=dims)
    if divisor_override:
        return total / divisor_override
    ksize = 1
    for v in k:
        ksize *= v
    if not any(extra) and (count_include_pad or not any(p)):
        return total / ksize
    # the divisor of each window: its cells inside the padded (count_include_pad) or the
    # original input
    if count_include_pad:
        padded = [x.shape[2 + i] + 2 * p[i] for i in range(nd)]
        counts_src = pad_op(ones(1, 1, *padded, dtype=x.dtype, device=x.device),
                            [e for i in reversed(range(nd)) for e in (0, extra[i])])
    else:
        counts_src = pad_op(ones(1, 1, *x.shape[2:], dtype=x.dtype, device=x.device), pads)
    counts = Unfold.apply(counts_src, k, s, (0,) * nd, (1,) * nd)
    counts = counts[(slice(None),) * (2 + nd) + tuple(slice(0, o) for o in outs)]
    return total / counts.sum(dim=dims)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True) -> Tensor:
    """Mean over sliding windows of (N, C, L)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None,
                     1, "avg_pool1d")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None) -> Tensor:
    """Mean over sliding windows of (N, C, H, W)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, 2, "avg_pool2d")


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None) -> Tensor:
    """Mean over sliding windows of (N, C, D, H, W)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, 3, "avg_pool3d")


def _adaptive(x, output_size, nd, reduce, op):
    """PyTorch's adaptive windows: start = floor(i*L/O), end = ceil((i+1)*L/O)."""
    if x.ndim == nd + 1:
        return _adaptive(x.unsqueeze(0), output_size, nd, reduce, op).squeeze(0)
    out = _tuple(output_size, nd, "output_size", op)
    out = tuple(x.shape[2 + i] if o is None else o for i, o in enumerate(out))
    result = x
    for i in range(nd):  # separable: pool one spatial dim at a time
        dim = 2 + i
        size = result.shape[dim]
        pieces = []
        for j in range(out[i]):
            a, b = (j * size) // out[i], -(-((j + 1) * size) // out[i])
            piece = result.narrow(dim, a, b - a)
            pieces.append(piece.mean(dim=dim) if reduce == "mean" else piece.amax(dim=dim))
        result = stack(pieces, dim=dim)
    return result


def adaptive_avg_pool1d(input, output_size) -> Tensor:
    """Average pooling to a fixed output length."""
    return _adaptive(input, output_size, 1, "mean", "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size) -> Tensor:
    """Average pooling to a fixed (H_out, W_out); ``1`` gives global average pooling."""
    return _adaptive(input, output_size, 2, "mean", "adaptive_avg_pool2d")


def _adaptive_argmax(x, output_size, nd, op):
    """Flat per-plane indices of each adaptive window's first maximum (PyTorch's)."""
    import itertools

    xp = x.xp
    data = x._data if x.ndim == nd + 2 else x._data[None]
    spatial = data.shape[2:]
    out = _tuple(output_size, nd, "output_size", op)
    out = tuple(spatial[i] if o is None else o for i, o in enumerate(out))
    idx = xp.zeros(data.shape[:2] + out, dtype=xp.int64)
    for cell in itertools.product(*[range(o) for o in out]):
        bounds = [((j * spatial[i]) // out[i], -(-((j + 1) * spatial[i]) // out[i]))
                  for i, j in enumerate(cell)]
        win = data[(slice(None), slice(None)) + tuple(slice(a, b) for a, b in bounds)]
        local = xp.unravel_index(win.reshape(win.shape[:2] + (-1,)).argmax(-1), win.shape[2:])
        flat = 0
        for i in range(nd):
            flat = flat * spatial[i] + local[i] + bounds[i][0]
        idx[(slice(None), slice(None)) + cell] = flat
    return _make(idx if x.ndim == nd + 2 else idx[0])


def adaptive_max_pool1d(input, output_size, return_indices=False) -> Tensor:
    """Max pooling to a fixed output length."""
    out = _adaptive(input, output_size, 1, "max", "adaptive_max_pool1d")
    if return_indices:
        return out, _adaptive_argmax(input, output_size, 1, "adaptive_max_pool1d")
    return out


def adaptive_max_pool2d(input, output_size, return_indices=False) -> Tensor:
    """Max pooling to a fixed (H_out, W_out); ``return_indices`` also gives the flat index of
    each maximum in its (H, W) plane."""
    out = _adaptive(input, output_size, 2, "max", "adaptive_max_pool2d")
    if return_indices:
        return out, _adaptive_argmax(input, output_size, 2, "adaptive_max_pool2d")
    return out


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False) -> Tensor:
    """Power-average pooling: (sum over window of x**p) ** (1/p)."""
    k = _tuple(kernel_size, 2, "kernel_size", "lp_pool2d")
    out = avg_pool2d(input ** norm_type, k, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(k[0] * k[1]) ** (1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False) -> Tensor:
    """Power-average pooling over (N, C, L)."""
    out = avg_pool1d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(kernel_size if isinstance(kernel_size, int)
                                               else kernel_size[0]) ** (1.0 / norm_type)


def _max_unpool(x, indices, kernel_size, stride, padding, output_size, nd, op):
    if x.ndim == nd + 1:
        return _max_unpool(x.unsqueeze(0), indices.unsqueeze(0), kernel_size, stride, padding,
                           output_size, nd, op).squeeze(0)
    if x.ndim != nd + 2 or tuple(indices.shape) != tuple(x.shape):
        raise RuntimeError(f"{op}(): expected a {nd + 2}D input and indices of its shape, got "
                           f"{list(x.shape)} and {list(indices.shape)}")
    k = _tuple(kernel_size, nd, "kernel_size", op)
    s = k if stride is None else _tuple(stride, nd, "stride", op)
    p = _tuple(padding, nd, "padding", op)
    default = [(x.shape[2 + i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(nd)]
    if output_size is None:
        size = default
    else:
        size = list(output_size)[-nd:]
        if len(list(output_size)) not in (nd, nd + 2):
            raise ValueError(f"{op}(): output_size must have {nd} or {nd + 2} elements, got "
                             f"{list(output_size)}")
        for i in range(nd):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not lo < size[i] < hi:
                raise ValueError(f"{op}(): invalid output_size {list(output_size)} (dim {i} "
                                 f"must be between {lo} and {hi})")
    n, c = x.shape[:2]
    plane = 1
    for v in size:
        plane *= v
    idx = indices.reshape(n, c, -1)
    if idx.numel() and (int(idx._data.max()) >= plane or int(idx._data.min()) < 0):
        bad = int(idx._data.max()) if int(idx._data.max()) >= plane else int(idx._data.min())
        raise RuntimeError(f"{op}(): Found an invalid max index: {bad} (output volumes are of "
                           f"size {'x'.join(map(str, size))})")
    out = zeros(n, c, plane, dtype=x.dtype, device=x.device)
    return out.scatter(2, idx, x.reshape(n, c, -1)).reshape(n, c, *size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of max_pool1d: values go back to their ``indices``, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1,
                       "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of max_pool2d(return_indices=True).

    Example: ``out, idx = F.max_pool2d(x, 2, return_indices=True);
    F.max_unpool2d(out, idx, 2)`` has x's shape.
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2,
                       "max_unpool2d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of max_pool3d(return_indices=True)."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3,
                       "max_unpool3d")
