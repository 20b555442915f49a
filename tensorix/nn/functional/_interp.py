"""Resampling: ``interpolate`` / ``upsample`` (nearest, nearest-exact, linear, bilinear,
trilinear, bicubic, area).

Every mode is separable, so it runs one spatial dim at a time. Nearest modes pick source rows
with ``index_select``; the weighted modes multiply by an (out, in) interpolation matrix built on
the host with PyTorch's source-index rules, so the whole resample is a few matmuls whose
gradients (of any order) come for free.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ...ops._common import check_tensor
from ...ops.creation import tensor as _tensor
from ...tensor import Tensor

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]

_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")


def _scale(in_size, out_size, align_corners, scale):
    """PyTorch's ``area_pixel_compute_scale``: output-to-input coordinate ratio."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


def _nearest_index(in_size, out_size, scale, exact):
    if out_size == in_size and not exact:
        return np.arange(out_size)
    s = np.float32(1.0 / scale if scale is not None and scale > 0 else in_size / out_size)
    dst = np.arange(out_size, dtype=np.float32)
    src = np.floor((dst + np.float32(0.5)) * s if exact else dst * s).astype(np.int64)
    return np.minimum(src, in_size - 1)


def _linear_matrix(in_size, out_size, align_corners, scale):
    ratio = _scale(in_size, out_size, align_corners, scale)
    dst = np.arange(out_size, dtype=np.float64)
    src = ratio * dst if align_corners else np.maximum(ratio * (dst + 0.5) - 0.5, 0.0)
    i0 = src.astype(np.int64)
    lam = np.minimum(src - i0, 1.0)
    i1 = np.where(i0 < in_size - 1, i0 + 1, i0)
    w = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    np.add.at(w, (rows, i0), 1.0 - lam)
    np.add.at(w, (rows, i1), lam)
    return w


def _cubic_weights(t, a=-0.75):
    """Keys' cubic convolution weights for the 4 taps at offsets -1, 0, 1, 2."""
    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _cubic_matrix(in_size, out_size, align_corners, scale):
    ratio = _scale(in_size, out_size, align_corners, scale)
    dst = np.arange(out_size, dtype=np.float64)
    src = ratio * dst if align_corners else ratio * (dst + 0.5) - 0.5
    i = np.floor(src).astype(np.int64)
    t = src - i
    w = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    for k, wk in enumerate(_cubic_weights(t)):
        np.add.at(w, (rows, np.clip(i - 1 + k, 0, in_size - 1)), wk)
    return w


def _area_matrix(in_size, out_size):
    w = np.zeros((out_size, in_size))
    for j in range(out_size):
        a, b = (j * in_size) // out_size, -(-((j + 1) * in_size) // out_size)
        w[j, a:b] = 1.0 / (b - a)
    return w


def _along(x, dim, matrix):
    """Apply an (out, in) matrix along ``dim`` of x."""
    m = _tensor(matrix, dtype=x.dtype, device=x.device)
    if dim == x.ndim - 1:
        return x @ m.mT
    return (x.movedim(dim, -1) @ m.mT).movedim(-1, dim)


def _sizes(x, nd, size, scale_factor, recompute):
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None:
        sizes = [size] * nd if isinstance(size, int) else list(size)
        if len(sizes) != nd:
            raise ValueError(f"Input and output must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{list(x.shape[2:])} and output size of {sizes}. Please provide "
                             f"input tensor in (N, C, d1, d2, ...,dK) format and output size "
                             f"in (o1, o2, ...,oK) format.")
        return [int(s) for s in sizes], [None] * nd
    scales = [scale_factor] * nd if isinstance(scale_factor, (int, float)) else \
        list(scale_factor)
    if len(scales) != nd:
        raise ValueError(f"Input and scale_factor must have the same number of spatial "
                         f"dimensions, but got input with spatial dimensions of "
                         f"{list(x.shape[2:])} and scale_factor of shape {scales}.")
    sizes = [int(math.floor(float(x.shape[2 + i]) * scales[i])) for i in range(nd)]
    return sizes, ([None] * nd if recompute else [float(s) for s in scales])


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False) -> Tensor:
    """Resize the spatial dims of (N, C, *spatial) to ``size`` or by ``scale_factor``.

    Modes: 'nearest', 'nearest-exact', 'linear' (3-d input), 'bilinear'/'bicubic' (4-d),
    'trilinear' (5-d), 'area'. ``align_corners`` (linear modes only) maps corner pixel centres
    onto each other; with False the source coordinate is ``(dst + 0.5) / scale - 0.5``.
    Example: ``F.interpolate(x, scale_factor=2, mode='bilinear')``.
    """
    check_tensor(input, "interpolate")
    if mode not in _MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {input.ndim}D) for the modes: nearest | linear | "
                                  f"bilinear | bicubic | trilinear | area | nearest-exact "
                                  f"(got {mode})")
    if mode in ("nearest", "nearest-exact", "area"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if antialias:
        raise NotImplementedError("interpolate(): antialias=True is not supported")
    nd = input.ndim - 2
    if nd < 1 or nd > 3 or (mode in _MODE_DIMS and _MODE_DIMS[mode] != nd):
        want = _MODE_DIMS.get(mode)
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                  f"{want + 2 if want else '3D, 4D or 5D'}"
                                  f"{'D' if want else ''} input")
    sizes, scales = _sizes(input, nd, size, scale_factor, recompute_scale_factor)
    if any(s <= 0 for s in sizes):
        raise RuntimeError(f"interpolate(): output sizes must be positive, got {sizes}")
    x = input
    for i in range(nd):
        dim, n_in, n_out = 2 + i, input.shape[2 + i], sizes[i]
        if mode in ("nearest", "nearest-exact"):
            idx = _nearest_index(n_in, n_out, scales[i], mode == "nearest-exact")
            x = x.index_select(dim, _tensor(idx, device=x.device))
        elif mode == "area":
            x = _along(x, dim, _area_matrix(n_in, n_out))
        elif mode == "bicubic":
            x = _along(x, dim, _cubic_matrix(n_in, n_out, align_corners, scales[i]))
        else:
            x = _along(x, dim, _linear_matrix(n_in, n_out, align_corners, scales[i]))
    return x


def _deprecated(name):
    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", UserWarning, stacklevel=3)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None) -> Tensor:
    """Deprecated alias of :func:`interpolate` (warns, as PyTorch)."""
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None) -> Tensor:
    """``interpolate(..., mode='nearest')`` (deprecated; warns)."""
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None) -> Tensor:
    """``interpolate(..., mode='bilinear', align_corners=True)`` (deprecated; warns)."""
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
