"""The three discrete Fourier transform primitives and the argument handling they share.

Every transform in ``tensorix.fft`` reduces to one of three primitives over a tuple of axes:

* :class:`C2C`: complex to complex, forward or inverse (``fftn`` / ``ifftn``);
* :class:`R2C`: real to the one-sided (Hermitian) half spectrum, halving the last axis
  (``rfftn``);
* :class:`C2R`: one-sided half spectrum to a real signal (``irfftn``).

Each forward is one ``xp.fft`` call on the device's array module. Each backward is the adjoint
transform, written with these same primitives on Tensors, so grad of grad works:

* the adjoint of a DFT is the opposite-direction DFT with the normalization swapped
  (``backward`` <-> ``forward``, ``ortho`` stays), because ``F^H = conj(F) = n * F^-1``;
* R2C keeps the first ``n // 2 + 1`` bins of a full C2C transform, so its adjoint pads the
  cotangent back with zeros, applies the inverse C2C and keeps the real part (the input is
  real);
* C2R reads each bin ``0 < k < n/2`` twice (as ``X_k`` and as its mirror ``conj(X_k)``) and the
  DC and Nyquist bins once, ignoring their imaginary parts, so its adjoint is an R2C of the
  cotangent times that Hermitian weight (2 for doubled bins, 1 otherwise).

Sizes (``n`` / ``s``) are applied before a primitive by zero padding or trimming with
differentiable ops (:func:`resize`), so the primitives see exactly the sizes they transform.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..autograd.function import Function
from ..ops import cat, narrow, real
from ..ops._common import check_tensor, norm_dim
from ..tensor import Tensor, _make

NORMS = ("backward", "ortho", "forward")
_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def swap_norm(norm: str) -> str:
    """The normalization of the adjoint (and of hfft/ihfft in terms of irfft/rfft)."""
    return _SWAP[norm]


class C2C(Function):
    """``fftn`` (``inverse=False``) or ``ifftn`` of a complex tensor over ``axes``."""

    @staticmethod
    def forward(ctx, x, axes, norm, inverse):
        ctx.axes, ctx.norm, ctx.inverse = axes, norm, inverse
        fft = x.xp.fft
        return (fft.ifftn if inverse else fft.fftn)(x._data, axes=axes, norm=norm)

    @staticmethod
    def backward(ctx, g):
        return C2C.apply(g, ctx.axes, swap_norm(ctx.norm), not ctx.inverse), None, None, None


class R2C(Function):
    """``rfftn`` of a real tensor over ``axes``: the last axis keeps ``n // 2 + 1`` bins."""

    @staticmethod
    def forward(ctx, x, axes, norm):
        ctx.axes, ctx.norm, ctx.n = axes, norm, x._data.shape[axes[-1]]
        return x.xp.fft.rfftn(x._data, axes=axes, norm=norm)

    @staticmethod
    def backward(ctx, g):
        full = resize(g, ctx.axes[-1], ctx.n)  # the dropped mirror bins got no gradient
        return real(C2C.apply(full, ctx.axes, swap_norm(ctx.norm), True)), None, None


class C2R(Function):
    """``irfftn`` of a one-sided spectrum over ``axes``, to ``n`` points on the last axis
    (the input's last axis must already hold ``n // 2 + 1`` bins)."""

    @staticmethod
    def forward(ctx, x, axes, norm, n):
        ctx.axes, ctx.norm, ctx.n = axes, norm, n
        s = [x._data.shape[a] for a in axes[:-1]] + [n]
        return x.xp.fft.irfftn(x._data, s=s, axes=axes, norm=norm)

    @staticmethod
    def backward(ctx, g):
        spec = R2C.apply(g, ctx.axes, swap_norm(ctx.norm))
        return spec * hermitian_weight(spec, ctx.axes[-1], ctx.n), None, None, None


def hermitian_weight(like: Tensor, axis: int, n: int) -> Tensor:
    """Per bin of a one-sided spectrum of ``n`` points, how many times a C2R transform reads it
    (1 for DC and, for even ``n``, Nyquist; 2 for the rest), shaped to broadcast on ``axis``."""
    xp = like.xp
    m = n // 2 + 1
    w = xp.full(m, 2.0, dtype=like._dtype.to_real().np)
    w[0] = 1.0
    if n % 2 == 0:
        w[m - 1] = 1.0
    shape = [1] * like.ndim
    shape[axis] = m
    return _make(w.reshape(shape))


def resize(x: Tensor, axis: int, size: int) -> Tensor:
    """``x`` trimmed or zero-padded at the end of ``axis`` to ``size`` (differentiably)."""
    have = x.shape[axis]
    if size == have:
        return x
    if size < have:
        return narrow(x, axis, 0, size)
    pad_shape = list(x.shape)
    pad_shape[axis] = size - have
    return cat([x, x.new_zeros(tuple(pad_shape))], dim=axis)


# -- argument handling shared by the public functions ------------------------------------------
def check_norm(norm, op: str) -> str:
    if norm is None:
        return "backward"
    if norm not in NORMS:
        raise RuntimeError(f"{op}(): Invalid normalization mode: {norm!r} (expected one of "
                           f"{', '.join(NORMS)} or None)")
    return norm


def fft_input(x, op: str, *, real_only=False, to_complex=False) -> Tensor:
    """``x`` in a dtype the transform computes in: integers and bool go to the default float
    dtype; half precision is refused as on PyTorch's CPU; ``real_only`` refuses complex input
    (rfft family); ``to_complex`` casts a real input to its complex dtype (c2c and c2r)."""
    check_tensor(x, op)
    if x._dtype.category < 2:
        x = x.to(dt.get_default_dtype())
    if x._dtype not in (dt.float32, dt.float64, dt.complex64, dt.complex128):
        raise RuntimeError(f"{op}(): Unsupported dtype {x._dtype.name} (expected float32, "
                           "float64, complex64 or complex128)")
    if real_only and x._dtype.is_complex:
        raise RuntimeError(f"{op}(): expects a real input tensor, but got {x._dtype.name}")
    if to_complex and not x._dtype.is_complex:
        x = x.to(x._dtype.to_complex())
    return x


def check_size(n, op: str, arg: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{op}(): argument '{arg}' must be an int, not {type(n).__name__}")
    if n < 1:
        raise RuntimeError(f"{op}(): Invalid number of data points ({n}) specified")
    return int(n)


def plan_dims(x: Tensor, s, dim, op: str, default_dim=None):
    """The transformed axes (in the given order: the last one is the halved one of the real
    transforms) and the requested size per axis (None: keep the input's), as torch reads
    ``s`` and ``dim``: both given must match in length; ``s`` alone means the last ``len(s)``
    axes; neither means ``default_dim`` or all axes; a size of -1 means no change."""
    ndim = x.ndim
    if dim is None and s is None:
        dim = default_dim
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        dim = (dim,)
    if s is not None:
        s = tuple(s)
        if dim is None:
            if len(s) > ndim:
                raise RuntimeError(f"{op}(): Got shape with {len(s)} values but input tensor "
                                   f"only has {ndim} dimensions.")
            dim = tuple(range(ndim - len(s), ndim))
        elif len(s) != len(tuple(dim)):
            raise RuntimeError(f"{op}(): When given, dim and shape arguments must have the "
                               f"same length (got s={list(s)} and dim={list(dim)})")
    axes = tuple(range(ndim)) if dim is None else tuple(
        _fft_dim(d, ndim, op) for d in dim)
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"{op}(): FFT dims must be unique (got dim={list(dim)})")
    sizes = [None] * len(axes) if s is None else [
        None if n == -1 else check_size(n, op, "s") for n in s]
    return axes, sizes


def _fft_dim(d, ndim, op):
    if ndim == 0:
        raise IndexError(f"{op}(): Dimension specified as {d} but tensor has no dimensions")
    return norm_dim(d, ndim, op)
