"""``tensorix.fft``: discrete Fourier transforms with the names and semantics of ``torch.fft``.

* complex transforms: :func:`fft`, :func:`ifft`, :func:`fft2`, :func:`ifft2`, :func:`fftn`,
  :func:`ifftn` (a real input is transformed as complex);
* real-input transforms: :func:`rfft`, :func:`irfft`, :func:`rfft2`, :func:`irfft2`,
  :func:`rfftn`, :func:`irfftn` (one-sided spectra: the last transformed dim keeps
  ``n // 2 + 1`` bins);
* Hermitian transforms: :func:`hfft`, :func:`ihfft`, :func:`hfft2`, :func:`ihfft2`,
  :func:`hfftn`, :func:`ihfftn`;
* helpers: :func:`fftfreq`, :func:`rfftfreq`, :func:`fftshift`, :func:`ifftshift`.

``n`` / ``s`` zero-pad or trim the input along the transformed dims first; ``norm`` is
``"backward"`` (default: no scaling forward, ``1/n`` inverse), ``"ortho"`` (``1/sqrt(n)``
both ways) or ``"forward"`` (``1/n`` forward, none inverse). float32 inputs give complex64,
float64 give complex128; integers go to the default dtype. Every transform is differentiable
(twice), on every device: the backward is the adjoint transform (see ``_core.py``).
``tensorix.stft`` / ``tensorix.istft`` live in ``_stft.py``, the window functions
(``tensorix.hann_window``, ...) in ``_windows.py``.

Example::

    import tensorix as tx
    x = tx.randn(8, requires_grad=True)
    X = tx.fft.rfft(x)                      # shape (5,), complex64
    tx.fft.irfft(X, n=8).sub(x).abs().max() # ~1e-7
    X.abs().sum().backward()
"""

from __future__ import annotations

from .. import dtypes as dt
from ..ops import arange, conj, roll, where
from ..ops._common import check_tensor, norm_dims
from ._core import C2C, C2R, R2C, check_norm, check_size, fft_input, plan_dims, resize, swap_norm

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
           "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


# -- the three drivers: sizes and dims, then one primitive --------------------------------------
def _c2c(input, s, dim, norm, inverse, op, default_dim=None):
    x = fft_input(input, op, to_complex=True)
    norm = check_norm(norm, op)
    axes, sizes = plan_dims(x, s, dim, op, default_dim)
    for a, n in zip(axes, sizes):
        if n is not None:
            x = resize(x, a, n)
    if not axes:
        return x.clone()
    return C2C.apply(x, axes, norm, inverse)


def _r2c(input, s, dim, norm, op, default_dim=None):
    x = fft_input(input, op, real_only=True)
    norm = check_norm(norm, op)
    axes, sizes = plan_dims(x, s, dim, op, default_dim)
    if not axes:
        raise RuntimeError(f"{op}(): must transform at least one axis")
    for a, n in zip(axes, sizes):
        if n is not None:
            x = resize(x, a, n)
    return R2C.apply(x, axes, norm)


def _c2r(input, s, dim, norm, op, default_dim=None):
    x = fft_input(input, op, to_complex=True)
    norm = check_norm(norm, op)
    axes, sizes = plan_dims(x, s, dim, op, default_dim)
    if not axes:
        raise RuntimeError(f"{op}(): must transform at least one axis")
    for a, n in zip(axes[:-1], sizes[:-1]):
        if n is not None:
            x = resize(x, a, n)
    last = axes[-1]
    n = sizes[-1] if sizes[-1] is not None else check_size(2 * (x.shape[last] - 1), op)
    return C2R.apply(resize(x, last, n // 2 + 1), axes, norm, n)


def _one(n, op):
    return None if n is None else (check_size(n, op),)


# -- one dimension -----------------------------------------------------------------------------
def fft(input, n=None, dim=-1, norm=None):
    """1-D discrete Fourier transform along ``dim``; output complex, ``dim`` of size ``n``
    (default: the input's). Example: ``tensorix.fft.fft(tensorix.tensor([1., 0., 0., 0.]))``
    is ``tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])``."""
    return _c2c(input, _one(n, "fft"), dim, norm, False, "fft")


def ifft(input, n=None, dim=-1, norm=None):
    """1-D inverse DFT along ``dim`` (scaled by ``1/n`` with the default norm).
    Example: ``tensorix.fft.ifft(tensorix.fft.fft(x))`` equals ``x`` (as complex)."""
    return _c2c(input, _one(n, "ifft"), dim, norm, True, "ifft")


def rfft(input, n=None, dim=-1, norm=None):
    """1-D DFT of a real input: the ``n // 2 + 1`` non-negative frequency bins along ``dim``.
    Example: ``tensorix.fft.rfft(tensorix.ones(4))`` is ``tensor([4.+0.j, 0.+0.j, 0.+0.j])``."""
    return _r2c(input, _one(n, "rfft"), dim, norm, "rfft")


def irfft(input, n=None, dim=-1, norm=None):
    """Inverse of :func:`rfft`: a real signal of ``n`` points (default ``2 * (m - 1)`` for
    ``m`` input bins) along ``dim``. Example: ``tensorix.fft.irfft(tensorix.fft.rfft(x), n=
    x.shape[-1])`` equals ``x``."""
    return _c2r(input, _one(n, "irfft"), dim, norm, "irfft")


def hfft(input, n=None, dim=-1, norm=None):
    """DFT of a Hermitian-symmetric signal given by its one-sided half: a real output of ``n``
    points (default ``2 * (m - 1)``). Example: ``tensorix.fft.hfft(tensorix.fft.ihfft(x),
    n=x.shape[-1])`` equals ``x`` for real ``x``."""
    norm = swap_norm(check_norm(norm, "hfft"))
    return _c2r(conj(fft_input(input, "hfft")), _one(n, "hfft"), dim, norm, "hfft")


def ihfft(input, n=None, dim=-1, norm=None):
    """Inverse of :func:`hfft`: the ``n // 2 + 1`` one-sided bins of the inverse DFT of a real
    input. Example: ``tensorix.fft.ihfft(tensorix.ones(4))`` is ``tensor([1.+0.j, 0.+0.j,
    0.+0.j])``."""
    norm = swap_norm(check_norm(norm, "ihfft"))
    return conj(_r2c(input, _one(n, "ihfft"), dim, norm, "ihfft"))


# -- two and n dimensions ----------------------------------------------------------------------
def fftn(input, s=None, dim=None, norm=None):
    """N-D DFT over ``dim`` (default: all dims, or the last ``len(s)``), each padded or
    trimmed to ``s``. Example: ``tensorix.fft.fftn(tensorix.ones(2, 3))`` is 6 at ``[0, 0]``,
    0 elsewhere."""
    return _c2c(input, s, dim, norm, False, "fftn")


def ifftn(input, s=None, dim=None, norm=None):
    """N-D inverse DFT (see :func:`fftn` for ``s`` and ``dim``).
    Example: ``tensorix.fft.ifftn(tensorix.fft.fftn(x))`` equals ``x`` (as complex)."""
    return _c2c(input, s, dim, norm, True, "ifftn")


def rfftn(input, s=None, dim=None, norm=None):
    """N-D DFT of a real input; the last dim of ``dim`` keeps ``n // 2 + 1`` bins.
    Example: ``tensorix.fft.rfftn(tensorix.ones(2, 4)).shape`` is ``(2, 3)``."""
    return _r2c(input, s, dim, norm, "rfftn")


def irfftn(input, s=None, dim=None, norm=None):
    """Inverse of :func:`rfftn`: a real output of sizes ``s`` (default: the input's, and
    ``2 * (m - 1)`` on the last dim). Example: ``tensorix.fft.irfftn(tensorix.fft.rfftn(x),
    s=x.shape)`` equals ``x``."""
    return _c2r(input, s, dim, norm, "irfftn")


def hfftn(input, s=None, dim=None, norm=None):
    """N-D DFT of a Hermitian-symmetric input given as the one-sided half on the last dim of
    ``dim``; real output. Example: ``tensorix.fft.hfftn(tensorix.fft.ihfftn(x), s=x.shape)``
    equals ``x`` for real ``x``."""
    norm = swap_norm(check_norm(norm, "hfftn"))
    return _c2r(conj(fft_input(input, "hfftn")), s, dim, norm, "hfftn")


def ihfftn(input, s=None, dim=None, norm=None):
    """Inverse of :func:`hfftn`: the one-sided N-D inverse DFT of a real input.
    Example: ``tensorix.fft.ihfftn(tensorix.ones(2, 4)).shape`` is ``(2, 3)``."""
    norm = swap_norm(check_norm(norm, "ihfftn"))
    return conj(_r2c(input, s, dim, norm, "ihfftn"))


_LAST2 = (-2, -1)


def fft2(input, s=None, dim=_LAST2, norm=None):
    """2-D DFT over ``dim`` (default the last two). Example: ``tensorix.fft.fft2(tensorix.ones(
    2, 2))`` is ``[[4, 0], [0, 0]]`` (complex)."""
    return _c2c(input, s, dim, norm, False, "fft2")


def ifft2(input, s=None, dim=_LAST2, norm=None):
    """2-D inverse DFT over ``dim``. Example: ``tensorix.fft.ifft2(tensorix.fft.fft2(x))``
    equals ``x``."""
    return _c2c(input, s, dim, norm, True, "ifft2")


def rfft2(input, s=None, dim=_LAST2, norm=None):
    """2-D DFT of a real input (last dim halved). Example: ``tensorix.fft.rfft2(tensorix.ones(
    3, 4)).shape`` is ``(3, 3)``."""
    return _r2c(input, s, dim, norm, "rfft2")


def irfft2(input, s=None, dim=_LAST2, norm=None):
    """Inverse of :func:`rfft2`. Example: ``tensorix.fft.irfft2(tensorix.fft.rfft2(x), s=x.shape
    [-2:])`` equals ``x``."""
    return _c2r(input, s, dim, norm, "irfft2")


def hfft2(input, s=None, dim=_LAST2, norm=None):
    """2-D :func:`hfftn`. Example: ``tensorix.fft.hfft2(tensorix.fft.ihfft2(x), s=x.shape)``
    equals ``x`` for a real 2-D ``x``."""
    return hfftn(input, s, dim, norm)


def ihfft2(input, s=None, dim=_LAST2, norm=None):
    """2-D :func:`ihfftn`. Example: ``tensorix.fft.ihfft2(tensorix.ones(3, 4)).shape`` is
    ``(3, 3)``."""
    return ihfftn(input, s, dim, norm)


# -- frequencies and shifts --------------------------------------------------------------------
def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False, layout=None):
    """The sample frequencies of an ``n``-point DFT with sample spacing ``d``: ``[0, 1, ...,
    (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``. Example: ``tensorix.fft.fftfreq(4)`` is
    ``tensor([0.0000, 0.2500, -0.5000, -0.2500])``."""
    n = _freq_n(n, "fftfreq")
    k = arange(n, dtype=_freq_dtype(dtype, "fftfreq"), device=device)
    out = where(k <= (n - 1) // 2, k, k - n) / (d * n)
    return out.requires_grad_() if requires_grad else out


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False, layout=None):
    """The ``n // 2 + 1`` non-negative sample frequencies of :func:`rfft`: ``[0, 1, ..., n //
    2] / (d * n)``. Example: ``tensorix.fft.rfftfreq(4)`` is ``tensor([0.0000, 0.2500,
    0.5000])``."""
    n = _freq_n(n, "rfftfreq")
    out = arange(n // 2 + 1, dtype=_freq_dtype(dtype, "rfftfreq"), device=device) / (d * n)
    return out.requires_grad_() if requires_grad else out


def _freq_n(n, op):
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"{op}(): argument 'n' must be an int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"{op}(): n must be non-negative, got {n}")
    return int(n)


def _freq_dtype(dtype, op):
    d = dt.get_default_dtype() if dtype is None else dt.as_dtype(dtype)
    if not (d.is_floating_point or d.is_complex):
        raise RuntimeError(f"{op}(): expected a floating or complex dtype, got {d.name}")
    return d


def fftshift(input, dim=None):
    """Move the zero-frequency bin to the centre of ``dim`` (default: all dims): a roll by
    ``n // 2``. Example: ``tensorix.fft.fftshift(tensorix.fft.fftfreq(4))`` is ``[-0.5,
    -0.25, 0., 0.25]``."""
    return _shift(input, dim, "fftshift", 1)


def ifftshift(input, dim=None):
    """Inverse of :func:`fftshift` (a roll by ``-(n // 2)``). Example:
    ``tensorix.fft.ifftshift(tensorix.fft.fftshift(x))`` equals ``x``."""
    return _shift(input, dim, "ifftshift", -1)


def _shift(input, dim, op, sign):
    check_tensor(input, op)
    dims = norm_dims(dim, input.ndim, op)
    if not dims:
        return input.clone()
    return roll(input, tuple(sign * (input.shape[d] // 2) for d in dims), dims)
