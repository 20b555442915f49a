"""``tensorix.stft`` and ``tensorix.istft``: short-time Fourier transforms as in PyTorch.

Both are composites of differentiable ops: framing is ``unfold`` (a strided view whose
backward adds overlapping windows back), the transform is the ``fft`` package's primitives,
and the inverse's overlap-add is one ``index_add`` of all frames at once. Gradients flow to the
signal and to the window.
"""

from __future__ import annotations

import warnings

from .. import dtypes as dt
from ..ops import arange, index_add, pad, view_as_real
from ..ops._common import check_tensor
from ..tensor import Tensor
from . import fft as _fft
from . import ifft as _ifft
from . import irfft as _irfft
from . import rfft as _rfft

__all__ = ["stft", "istft"]

_NO_WINDOW = ("A window was not provided. A rectangular window will be applied, which is known "
              "to cause spectral leakage. Other windows such as tensorix.hann_window are "
              "recommended to reduce spectral leakage. To suppress this warning and use a "
              "rectangular window, explicitly set `window=tensorix.ones(n_fft)`.")


def _lengths(op, n_fft, hop_length, win_length):
    if isinstance(n_fft, bool) or not isinstance(n_fft, int) or n_fft <= 0:
        raise RuntimeError(f"{op}(): expected 0 < n_fft, but got n_fft={n_fft}")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if not isinstance(hop, int) or hop <= 0:
        raise RuntimeError(f"{op}(): expected hop_length > 0, but got hop_length={hop}")
    if not isinstance(win, int) or not 0 < win <= n_fft:
        raise RuntimeError(f"{op}(): expected 0 < win_length <= n_fft, but got "
                           f"win_length={win}")
    return hop, win


def _full_window(op, window, n_fft, win, like: Tensor) -> Tensor | None:
    """The window zero-padded (centred) to ``n_fft`` points; None for the rectangular one."""
    if window is None:
        warnings.warn(_NO_WINDOW, UserWarning, stacklevel=3)
        if win == n_fft:
            return None
        window = like.new_ones((win,), dtype=like._dtype.to_real())
    check_tensor(window, op, "window")
    if window.ndim != 1 or window.shape[0] != win:
        raise RuntimeError(f"{op}(): expected a 1D window tensor of size equal to "
                           f"win_length={win}, but got window with size {list(window.shape)}")
    left = (n_fft - win) // 2
    return pad(window, (left, n_fft - win - left)) if win < n_fft else window


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None):
    """Short-time Fourier transform of a signal ``(L,)`` or batch ``(B, L)``.

    Frames of ``n_fft`` samples every ``hop_length`` (default ``n_fft // 4``), each multiplied
    by ``window`` (``win_length`` points, centred and zero-padded to ``n_fft``; default
    rectangular, with PyTorch's warning), then transformed. ``center`` pads ``n_fft // 2`` on
    both sides with ``pad_mode`` first. Output ``(B?, F, frames)`` with ``F = n_fft // 2 + 1``
    when ``onesided`` (default for real input and window) else ``n_fft``; ``normalized``
    scales by ``n_fft ** -0.5``. ``return_complex`` must be given for real inputs; False gives
    the deprecated ``(..., 2)`` real view.

    Example::

        x = tensorix.randn(1000)
        S = tensorix.stft(x, 64, window=tensorix.hann_window(64), return_complex=True)
        S.shape   # (33, 63)
    """
    check_tensor(input, "stft")
    if return_complex is None and not input.dtype.is_complex and not (
            window is not None and window.dtype.is_complex):
        raise RuntimeError("stft requires the return_complex parameter be given for real "
                           "inputs, and will further require that return_complex=True in a "
                           "future PyTorch release.")
    if return_complex is False:
        warnings.warn("stft with return_complex=False is deprecated. In a future release, stft "
                      "will return complex tensors for all inputs, and return_complex=False "
                      "will raise an error. Note: you can still call view_as_real on the "
                      "complex output to recover the old return format.", UserWarning,
                      stacklevel=2)
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft(): expected a 1D or 2D tensor, but got {input.ndim}D")
    hop, win = _lengths("stft", n_fft, hop_length, win_length)
    x = input if input.ndim == 2 else input.unsqueeze(0)
    if x.dtype.category < 2:
        x = x.to(dt.get_default_dtype())
    if center:
        p = n_fft // 2
        x = pad(x.unsqueeze(0), (p, p), mode=pad_mode).squeeze(0)
    length = x.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(f"stft(): expected 0 < n_fft <= {length}, but got n_fft={n_fft}")
    w = _full_window("stft", window, n_fft, win, x)
    complex_in = x.dtype.is_complex or (w is not None and w.dtype.is_complex)
    onesided = not complex_in if onesided is None else onesided
    if onesided and complex_in:
        raise RuntimeError("stft(): Cannot have onesided output if window or input is complex")
    frames = x.unfold(-1, n_fft, hop)  # (B, n_frames, n_fft)
    if w is not None:
        frames = frames * w
    norm = "ortho" if normalized else "backward"
    out = (_rfft if onesided else _fft)(frames, dim=-1, norm=norm).transpose(-1, -2)
    if input.ndim == 1:
        out = out.squeeze(0)
    return out if return_complex or return_complex is None else view_as_real(out)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """Inverse of :func:`stft` by windowed overlap-add: ``input`` is the complex ``(B?, F,
    frames)`` output of ``stft`` with the same ``n_fft``, ``hop_length``, ``win_length``,
    ``window``, ``center`` and ``normalized``. Each frame is inverse-transformed, multiplied by
    the window and added at its offset; the sum is divided by the overlap-added squared window
    (which must not vanish: the NOLA condition). Output ``(B?, length)``, by default
    ``n_fft + hop * (frames - 1)`` less the centre padding; a real signal unless
    ``return_complex``.

    Example::

        w = tensorix.hann_window(64)
        S = tensorix.stft(x, 64, window=w, return_complex=True)
        tensorix.istft(S, 64, window=w, length=x.shape[-1])   # x again
    """
    check_tensor(input, "istft")
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"istft(): expected a tensor with 2 or 3 dimensions of complex "
                           f"dtype, but got {input.ndim}D")
    hop, win = _lengths("istft", n_fft, hop_length, win_length)
    spec = input if input.ndim == 3 else input.unsqueeze(0)
    n_freq, n_frames = spec.shape[-2], spec.shape[-1]
    onesided = n_freq != n_fft if onesided is None else onesided
    if n_freq != (n_fft // 2 + 1 if onesided else n_fft):
        expect = "n_fft / 2 + 1" if onesided else "n_fft"
        raise RuntimeError(f"istft(): expected the frequency dimension (3rd to the last) of "
                           f"the input tensor to match {expect} when onesided={onesided}, but "
                           f"got {n_freq}")
    w = _full_window("istft", window, n_fft, win, spec)
    if return_complex and onesided:
        raise RuntimeError("istft(): cannot have onesided output if window or input is "
                           "complex (return_complex=True needs onesided=False)")
    norm = "ortho" if normalized else "backward"
    frames = spec.transpose(-1, -2)  # (B, n_frames, n_freq)
    if return_complex:
        frames = _ifft(frames, dim=-1, norm=norm)
    else:
        if not onesided:
            frames = frames.narrow(-1, 0, n_fft // 2 + 1)
        frames = _irfft(frames, n=n_fft, dim=-1, norm=norm)
    if w is not None:
        frames = frames * w
    total = n_fft + hop * (n_frames - 1)
    index = (arange(n_frames, device=spec.device).unsqueeze(-1) * hop
             + arange(n_fft, device=spec.device)).reshape(-1)
    batch = frames.shape[0]
    y = index_add(frames.new_zeros((batch, total)), -1, index, frames.reshape(batch, -1))
    square = frames.new_ones((n_fft,), dtype=frames.dtype.to_real()) if w is None else w * w
    envelope = index_add(square.new_zeros((total,)), 0, index, square.repeat(n_frames))
    start = n_fft // 2 if center else 0
    end = total if length is None else start + length
    if length is None and center:
        end = total - n_fft // 2
    end = min(end, total)
    y, envelope = y[..., start:end], envelope[start:end]
    if y.shape[-1] and float(envelope.abs().min()) < 1e-11:
        raise RuntimeError(f"istft(): window overlap add min: {float(envelope.abs().min())}: "
                           "the window fails the nonzero overlap-add (NOLA) condition for "
                           f"hop_length={hop}")
    y = y / envelope
    if length is not None and y.shape[-1] < length:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", UserWarning, stacklevel=2)
        y = pad(y, (0, length - y.shape[-1]))
    return y.squeeze(0) if input.ndim == 2 else y
