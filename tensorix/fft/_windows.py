"""The window functions PyTorch keeps at the top level for :func:`tensorix.stft`:
``tensorix.hann_window``, ``hamming_window``, ``blackman_window``, ``bartlett_window`` and
``kaiser_window``.

Each takes ``window_length`` and ``periodic`` (default True: the window of length ``N + 1``
with its last point dropped, the one that tiles for spectral analysis; False: the symmetric
window of length ``N``), and the creation keywords ``dtype`` (a floating dtype, default the
default dtype), ``device`` and ``requires_grad``. Values are computed in float64 on the host
and rounded once to ``dtype``, as torch's are within rounding.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..ops import tensor
from ..ops.special import bessel_kernel

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


def _window(op, window_length, periodic, dtype, device, requires_grad, layout, shape):
    if isinstance(window_length, bool) or not isinstance(window_length, (int, np.integer)):
        raise TypeError(f"{op}(): argument 'window_length' must be an int, not "
                        f"{type(window_length).__name__}")
    if window_length < 0:
        raise RuntimeError(f"{op}(): requires non-negative window_length, got "
                           f"window_length={window_length}")
    d = dt.get_default_dtype() if dtype is None else dt.as_dtype(dtype)
    if not d.is_floating_point:
        raise RuntimeError(f"{op}(): expects floating point dtypes, got: {d.name}")
    if window_length <= 1:
        values = np.ones(window_length)
    else:
        n = window_length + 1 if periodic else window_length
        values = shape(np.arange(n, dtype=np.float64), n)[:window_length]
    return tensor(values, dtype=d, device=device, requires_grad=requires_grad)


def _cosine_sum(*coefs):
    """sum_k (-1)^k a_k cos(2 pi k i / (N - 1)): Hann, Hamming and Blackman."""
    def shape(i, n):
        return sum((-1) ** k * a * np.cos(2 * math.pi * k * i / (n - 1))
                   for k, a in enumerate(coefs))
    return shape


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                requires_grad=False):
    """The Hann window ``0.5 - 0.5 cos(2 pi i / (N - 1))``, shape ``(window_length,)``.
    Example: ``tensorix.hann_window(4)`` is ``tensor([0.0000, 0.5000, 1.0000, 0.5000])``."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   layout, _cosine_sum(0.5, 0.5))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, requires_grad=False):
    """The Hamming window ``alpha - beta cos(2 pi i / (N - 1))``, shape ``(window_length,)``.
    Example: ``tensorix.hamming_window(4)[0]`` is ``0.08``."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   layout, _cosine_sum(alpha, beta))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """The Blackman window ``0.42 - 0.5 cos(2 pi i / (N - 1)) + 0.08 cos(4 pi i / (N - 1))``.
    Example: ``tensorix.blackman_window(5, periodic=False)[2]`` is ``1.0``."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   layout, _cosine_sum(0.42, 0.5, 0.08))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """The triangular Bartlett window ``1 - |2 i / (N - 1) - 1|``.
    Example: ``tensorix.bartlett_window(5, periodic=False)`` is ``[0., 0.5, 1., 0.5, 0.]``."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   layout, lambda i, n: 1 - np.abs(2 * i / (n - 1) - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, requires_grad=False):
    """The Kaiser window ``I0(beta sqrt(1 - (2 i / (N - 1) - 1)^2)) / I0(beta)``.
    Example: ``tensorix.kaiser_window(3, periodic=False, beta=0.0)`` is all ones."""
    def shape(i, n):
        r = 2 * i / (n - 1) - 1
        arg = beta * np.sqrt(np.clip(1 - r * r, 0.0, None))
        return bessel_kernel(arg, 0) / bessel_kernel(np.asarray(float(beta)), 0)
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   layout, shape)
