"""Convolutions as im2col: the ``Unfold`` primitive and its adjoint ``Fold``, for 1-3 spatial
dims; conv and conv-transpose are a matmul on top, so every derivative (of any order) is again
unfold / fold / matmul.

``Unfold`` takes (N, C, *spatial) to (N, C, *kernel, *out) windows through a strided view of the
padded input (no Python loop over pixels); ``Fold`` adds windows back with one vectorised
slice-add per kernel offset.
"""

from __future__ import annotations

import itertools

import numpy as np

from ... import _threads, backend
from ...autograd.function import Function
from ...ops._common import check_same_dtype, same_device
from ...ops.shape import pad as pad_op
from ...tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold"]


def _tuple(v, n, name, op):
    if isinstance(v, int):
        return (v,) * n
    v = tuple(v)
    if len(v) != n:
        raise ValueError(f"{op}(): expected {name} to be an int or a tuple of {n} ints, got {v}")
    return v


def _out_size(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


class Unfold(Function):
    """(N, C, *S) -> (N, C, *K, *O): every kernel window of the zero-padded input."""

    @staticmethod
    def forward(ctx, x, kernel, stride, padding, dilation):
        ctx.geometry = (x._data.shape, kernel, stride, padding, dilation)
        return _unfold_raw(x._data, kernel, stride, padding, dilation)

    @staticmethod
    def backward(ctx, g):
        shape, kernel, stride, padding, dilation = ctx.geometry
        return Fold.apply(g, shape, kernel, stride, padding, dilation)


class Fold(Function):
    """The adjoint of Unfold: sum windows (N, C, *K, *O) back into (N, C, *S)."""

    @staticmethod
    def forward(ctx, cols, shape, kernel, stride, padding, dilation):
        ctx.geometry = (kernel, stride, padding, dilation)
        return _fold_raw(cols._data, shape, kernel, stride, padding, dilation)

    @staticmethod
    def backward(ctx, g):
        return Unfold.apply(g, *ctx.geometry)


def _unfold_raw(x, kernel, stride, padding, dilation):
    xp = backend.array_module(x)
    nd = len(kernel)
    if any(padding):
        x = xp.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    x = xp.ascontiguousarray(x)
    spatial = x.shape[2:]
    out = tuple(_out_size(spatial[i], kernel[i], stride[i], 0, dilation[i]) for i in range(nd))
    st = x.strides
    shape = x.shape[:2] + tuple(kernel) + out
    strides = st[:2] + tuple(st[2 + i] * dilation[i] for i in range(nd)) + \
        tuple(st[2 + i] * stride[i] for i in range(nd))
    return xp.lib.stride_tricks.as_strided(x, shape=shape, strides=strides)


def _fold_raw(cols, shape, kernel, stride, padding, dilation):
    xp = backend.array_module(cols)
    nd = len(kernel)
    padded = shape[:2] + tuple(shape[2 + i] + 2 * padding[i] for i in range(nd))
    osz = cols.shape[2 + nd:]
    # conv's backward hands the windows over batch-inside, (C, *K, N, *O) in memory: then
    # fold in that order (contiguous slice adds, ~25% faster) and return a (N, C, *S) view
    inside = cols.transpose(1, *range(2, 2 + nd), 0, *range(2 + nd, 2 + 2 * nd))
    inside = inside if inside.flags.c_contiguous and not cols.flags.c_contiguous else None
    out = xp.zeros(padded if inside is None else (padded[1], padded[0]) + padded[2:],
                   dtype=cols.dtype)
    src = cols if inside is None else inside
    lead = 2 if inside is None else 1  # the windows' axes before the kernel's: (N, C) or (C,)

    def fold(a, b):  # out[a:b] (samples, or channels batch-inside) from src[a:b]: the same
        # slice-adds in the same order whatever the split; cut along out's first axis, since
        # NumPy runs a slice-add over part of a later axis up to 30% slower
        dst, part = out[a:b], src[a:b]
        for offs in itertools.product(*[range(k) for k in kernel]):
            sl = tuple(slice(offs[i] * dilation[i], offs[i] * dilation[i] + (osz[i] - 1)
                             * stride[i] + 1, stride[i]) for i in range(nd))
            dst[(slice(None), slice(None)) + sl] += part[(slice(None),) * lead + offs]

    n = out.shape[0]
    if type(out) is np.ndarray:  # independent rows: split over the pool
        _threads.parallel(n, fold, max(1, -(-_threads.COSTLY * n // max(1, cols.size))),
                          pieces=1)
    else:
        fold(0, n)
    if inside is not None:
        out = out.swapaxes(0, 1)
    if any(padding):
        out = out[(slice(None), slice(None)) + tuple(slice(p, p + shape[2 + i])
                                                      for i, p in enumerate(padding))]
    return out


def _same_padding(kernel, dilation, stride, op):
    if any(s != 1 for s in stride):
        raise ValueError(f"{op}(): padding='same' is not supported for strided convolutions")
    total = [d * (k - 1) for k, d in zip(kernel, dilation)]
    if any(t % 2 for t in total):
        return None, total  # asymmetric: pad explicitly
    return tuple(t // 2 for t in total), None


def _conv(x, weight, bias, stride, padding, dilation, groups, nd, op):
    """The convolution as one im2col GEMM per group (a precision policy reaches it through
    MatMul's dispatch rule: the reduction axis is ``C/G * prod(kernel)``, as in an
    implicit-GEMM tensor-core convolution)."""
    if x.ndim != nd + 2:
        if x.ndim == nd + 1:  # unbatched input, as PyTorch allows
            return _conv(x.unsqueeze(0), weight, bias, stride, padding, dilation, groups, nd,
                         op).squeeze(0)
        raise RuntimeError(f"{op}(): expected a {nd + 1}D (unbatched) or {nd + 2}D (batched) "
                           f"input, got input of shape {list(x.shape)}")
    same_device(op, x, weight, bias)
    check_same_dtype(op, ("input", x), ("weight", weight), ("bias", bias))
    n, c = x.shape[:2]
    o, cg = weight.shape[:2]
    kernel = tuple(weight.shape[2:])
    stride = _tuple(stride, nd, "stride", op)
    dilation = _tuple(dilation, nd, "dilation", op)
    if c != cg * groups:
        raise RuntimeError(f"{op}(): given groups={groups}, weight of size {list(weight.shape)},"
                           f" expected input{list(x.shape)} to have {cg * groups} channels, but "
                           f"got {c} channels instead")
    if o % groups:
        raise RuntimeError(f"{op}(): out_channels ({o}) must be divisible by groups ({groups})")
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * nd
        elif padding == "same":
            padding, total = _same_padding(kernel, dilation, stride, op)
            if padding is None:
                pads = []
                for t in reversed(total):
                    pads += [t // 2, t - t // 2]
                x = pad_op(x, pads)
                padding = (0,) * nd
        else:
            raise ValueError(f"{op}(): invalid padding string {padding!r}; expected 'valid' or "
                             "'same'")
    padding = _tuple(padding, nd, "padding", op)
    sizes = [_out_size(x.shape[2 + i], kernel[i], stride[i], padding[i], dilation[i])
             for i in range(nd)]
    if any(s <= 0 for s in sizes):
        raise RuntimeError(f"{op}(): kernel size {list(kernel)} (dilated) is larger than the "
                           f"padded input {list(x.shape[2:])}")
    cols = Unfold.apply(x, kernel, stride, padding, dilation)  # (N, C, *K, *O)
    k = 1
    for s in kernel:
        k *= s
    length = 1
    for s in sizes:
        length *= s
    # one GEMM per group for the whole batch, (O/G, C/G*K) @ (C/G*K, N*L), not one small
    # GEMM per sample: the windows go batch-inside, (C, *K, N, *O), in the one copy that
    # im2col makes anyway, and the result (O, N, *O) is returned as a (N, O, *O) view
    perm = (1, *range(2, 2 + nd), 0, *range(2 + nd, 2 + 2 * nd))
    cols = cols.permute(perm).reshape(groups, cg * k, n * length)
    w = weight.reshape(groups, o // groups, cg * k)
    out = w @ cols
    out = out.reshape(o, n, *sizes).transpose(0, 1)  # (G, O/G, N*L) -> (N, O, *O)
    if bias is not None:
        out = out + bias.reshape(o, *([1] * nd))
    return out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """1-d convolution (cross-correlation, as PyTorch).

    Shapes: input (N, C_in, L), weight (C_out, C_in/groups, K) -> (N, C_out, L_out).
    Example: ``F.conv1d(tensorix.randn(2, 3, 10), tensorix.randn(4, 3, 3), padding='same')``.
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """2-d convolution. Shapes: (N, C_in, H, W) with weight (C_out, C_in/groups, kH, kW) ->
    (N, C_out, H_out, W_out); ``padding`` may be an int, a pair, 'valid' or 'same'.

    Example: ``F.conv2d(tensorix.randn(8, 1, 28, 28), tensorix.randn(16, 1, 3, 3), padding=1)``.
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """3-d convolution: (N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation, nd, op):
    if x.ndim == nd + 1:
        return _conv_transpose(x.unsqueeze(0), weight, bias, stride, padding, output_padding,
                               groups, dilation, nd, op).squeeze(0)
    if x.ndim != nd + 2:
        raise RuntimeError(f"{op}(): expected a {nd + 2}D input, got shape {list(x.shape)}")
    same_device(op, x, weight, bias)
    check_same_dtype(op, ("input", x), ("weight", weight), ("bias", bias))
    n, c = x.shape[:2]
    cin, og = weight.shape[:2]
    kernel = tuple(weight.shape[2:])
    if c != cin:
        raise RuntimeError(f"{op}(): weight of size {list(weight.shape)} expects {cin} input "
                           f"channels, got {c}")
    stride = _tuple(stride, nd, "stride", op)
    padding = _tuple(padding, nd, "padding", op)
    dilation = _tuple(dilation, nd, "dilation", op)
    output_padding = _tuple(output_padding, nd, "output_padding", op)
    sizes = [(x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1)
             + output_padding[i] + 1 for i in range(nd)]
    k = 1
    for s in kernel:
        k *= s
    length = 1
    for s in x.shape[2:]:
        length *= s
    w = weight.reshape(groups, cin // groups, og * k).transpose(1, 2)  # (G, O/G*K, C/G)
    cols = w @ x.reshape(n, groups, cin // groups, length)  # (N, G, O/G*K, L)
    cols = cols.reshape(n, groups * og, *kernel, *x.shape[2:])
    out = Fold.apply(cols, (n, groups * og, *sizes), kernel, stride, padding, dilation)
    if bias is not None:
        out = out + bias.reshape(groups * og, *([1] * nd))
    return out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1) -> Tensor:
    """Transposed 1-d convolution (the gradient of conv1d w.r.t. its input).

    Shapes: (N, C_in, L) with weight (C_in, C_out/groups, K) -> (N, C_out, L_out).
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 1, "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1) -> Tensor:
    """Transposed 2-d convolution: (N, C_in, H, W), weight (C_in, C_out/groups, kH, kW).

    Example: ``F.conv_transpose2d(x, w, stride=2)`` doubles H and W (minus kernel effects).
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 2, "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1) -> Tensor:
    """Transposed 3-d convolution."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 3, "conv_transpose3d")


def unfold(input, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sliding local blocks of a 4-d batch (PyTorch's F.unfold / im2col):
    (N, C, H, W) -> (N, C*kH*kW, L)."""
    if input.ndim != 4:
        raise RuntimeError(f"unfold(): expected a 4D input (N, C, H, W), got "
                           f"{list(input.shape)}")
    k = _tuple(kernel_size, 2, "kernel_size", "unfold")
    cols = Unfold.apply(input, k, _tuple(stride, 2, "stride", "unfold"),
                        _tuple(padding, 2, "padding", "unfold"),
                        _tuple(dilation, 2, "dilation", "unfold"))
    n, c = input.shape[:2]
    return cols.reshape(n, c * k[0] * k[1], -1)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Combine sliding blocks into a 4-d batch (the adjoint of :func:`unfold`):
    (N, C*kH*kW, L) -> (N, C, H, W)."""
    k = _tuple(kernel_size, 2, "kernel_size", "fold")
    out = _tuple(output_size, 2, "output_size", "fold")
    s, p, d = (_tuple(v, 2, name, "fold") for v, name in
               ((stride, "stride"), (padding, "padding"), (dilation, "dilation")))
    n, ck, length = input.shape
    if ck % (k[0] * k[1]):
        raise RuntimeError(f"fold(): expected size of input's dimension 1 to be divisible by "
                           f"the product of kernel_size, but got {ck}")
    c = ck // (k[0] * k[1])
    o = [_out_size(out[i], k[i], s[i], p[i], d[i]) for i in range(2)]
    if o[0] * o[1] != length:
        raise RuntimeError(f"fold(): expected input's dimension 2 to match the calculated "
                           f"number of sliding blocks {o[0]} * {o[1]} = {o[0] * o[1]}, but got "
                           f"{length}")
    cols = input.reshape(n, c, k[0], k[1], o[0], o[1])
    return Fold.apply(cols, (n, c, out[0], out[1]), k, s, p, d)
