"""Non-negative matrix factorisation ``X ~ W H``: the two-way case of non-negative CP (HALS or
Lee & Seung's multiplicative updates), and shift-invariant NMF (Morup, Madsen & Hansen 2008,
"ShiftNMF"), where each component may appear in each row delayed: ``X[n, t] ~ sum_d W[n, d]
H[d, t - tau[n, d]]``, fitted in the frequency domain, where a delay is a phase; and
stretch-invariant NMF, where each component may appear stretched (``H_d(f / s[n, d])``): on a
logarithmic axis a stretch is a shift, so it is shift-invariant NMF of the log-resampled rows.
"""

from __future__ import annotations

import math
from collections import namedtuple

from ..backend import array_module
from ..tensor import _make
from ._base import _fro, check_tensor, make_generator, random_like, working
from ._cp import non_negative_parafac

__all__ = ["non_negative_factorization", "shift_nmf", "ShiftNMFResult", "stretch_nmf",
           "StretchNMFResult"]


def non_negative_factorization(X, n_components, method="hals", n_iter_max=200, init="svd",
                               tol=1e-8, random_state=None, return_errors=False):
    """NMF of a non-negative matrix ``X (m, n)``: ``W (m, k) >= 0``, ``H (k, n) >= 0`` with
    ``X ~ W @ H`` in the Frobenius norm, ``k = n_components``.

    ``method``: 'hals' (column-wise HALS, Cichocki & Phan 2009) or 'mu' (Lee & Seung 2001);
    ``init``: 'svd' (NNDSVDa, as TensorLy and scikit-learn) or 'random'. This is
    :func:`non_negative_parafac` on a matrix, with the weights folded into ``W``.
    Returns ``(W, H)`` (and the relative errors with ``return_errors``).

    Example::

        W, H = non_negative_factorization(X.abs(), 5)      # X.abs() ~ W @ H
    """
    op = "non_negative_factorization"
    check_tensor(op, X, "X", min_ndim=2)
    if X.ndim != 2:
        raise ValueError(f"{op}: expected a matrix X, got shape {tuple(X.shape)}; use "
                         "non_negative_parafac for tensors")
    cp, errors = non_negative_parafac(X, n_components, n_iter_max=n_iter_max, init=init,
                                      tol=tol, random_state=random_state, method=method,
                                      return_errors=True)
    W, H = cp.factors[0] * cp.weights, cp.factors[1].mT
    return (W, H, errors) if return_errors else (W, H)


ShiftNMFResult = namedtuple("ShiftNMFResult", ["W", "H", "delays", "errors"])
ShiftNMFResult.__doc__ = """Result of :func:`shift_nmf`: ``W (m, k)``, ``H (k, T)``, integer
``delays (m, k)`` (row ``n`` sees component ``d`` delayed by ``delays[n, d]`` samples,
circularly) and the relative error after each iteration."""


def _shifted(xp, spectra, delays, T):
    """Spectra ``(..., F)`` (broadcast to ``(m, k, F)``) delayed by ``delays (m, k)``: a delay
    by ``tau`` multiplies frequency ``f`` by ``exp(-2 pi i f tau / T)``."""
    freqs = xp.arange(spectra.shape[-1])
    return spectra * xp.exp(-2j * xp.pi * delays[:, :, None] * freqs / T)


def _irfft(xp, spectrum, T):
    return xp.fft.irfft(spectrum, n=T, axis=-1)


def shift_nmf(X, n_components, n_iter_max=200, max_delay=None, tol=1e-9, n_starts=8,
              random_state=None):
    """Shift-invariant NMF of a non-negative ``X (m, T)``: ``X[n] ~ sum_d W[n, d] *
    roll(H[d], delays[n, d])`` with ``W (m, k) >= 0``, ``H (k, T) >= 0`` and integer circular
    ``delays (m, k)``, ``|delays| <= max_delay`` (default ``T // 2``).

    The model is Morup et al.'s ShiftNMF with integer delays, fitted in the frequency domain
    (a delay is a phase) by exact block-coordinate steps: for each component in turn, every
    row's delay and weight from the peak of the cross-correlation of the row's residual with
    the component (one FFT product), then the component as the non-negative least-squares fit
    to the rows shifted back. Stops when the relative error changes by less than ``tol``;
    the best of ``n_starts`` starts is kept (a greedy one, then random ones seeded by
    ``random_state``): the problem has local minima (a component may slide onto another's
    waveform), so a tight ``max_delay`` and more starts help. Returns a
    :class:`ShiftNMFResult`; runs without autograd.

    Example::

        res = shift_nmf(X, 2)   # res.W (m, 2), res.H (2, T), res.delays (m, 2)
    """
    op = "shift_nmf"
    check_tensor(op, X, "X", min_ndim=2, finite=True)
    if X.ndim != 2:
        raise ValueError(f"{op}: expected a matrix X (rows, time), got shape {tuple(X.shape)}")
    if bool((X < 0).any()):
        raise ValueError(f"{op}: X must be non-negative (its minimum is {float(X.min()):g})")
    m, T = X.shape
    if not isinstance(n_components, int) or not 1 <= n_components <= min(m, T):
        raise ValueError(f"{op}: n_components must be an int in [1, {min(m, T)}] for X of "
                         f"shape {(m, T)}, got {n_components!r}")
    max_delay = T // 2 if max_delay is None else int(max_delay)
    if not isinstance(n_starts, int) or n_starts < 1:
        raise ValueError(f"{op}: n_starts must be a positive int, got {n_starts!r}")
    work = working(X)
    x = work._data  # raw arrays: an iteration is many small ops
    xp = array_module(x)
    lags = xp.fft.fftfreq(T, 1.0 / T)  # the signed lag of each correlation sample
    allowed = abs(lags) <= max_delay
    gen = make_generator(random_state)
    best = None
    for start in range(n_starts):
        # why several starts: block-coordinate descent stops in local minima where two
        # components share one waveform; the first start is greedy (each component from the
        # row the others explain worst), the others from random non-negative waveforms
        h0 = None if start == 0 else random_like((n_components, T), work, gen, uniform=True)
        fit = _fit_shift(xp, x, n_components, h0 if h0 is None else h0._data, lags, allowed,
                         n_iter_max, tol)
        if best is None or fit[-1][-1] < best[-1][-1]:
            best = fit
    W, H, delays, errors = best
    dtype = X.dtype
    return ShiftNMFResult(_make(W).to(dtype), _make(H).to(dtype),
                          _make(xp.rint(delays).astype(xp.int64)), errors)


def _fit_shift(xp, x, n_components, h0, lags, allowed, n_iter_max, tol):
    """One start of :func:`shift_nmf` on raw arrays; returns ``(W, H, delays, errors)``."""
    m, T = x.shape
    W = xp.zeros((m, n_components), dtype=x.dtype)
    H = xp.zeros((n_components, T), dtype=x.dtype)
    delays = xp.zeros((m, n_components), dtype=x.dtype)
    contrib = xp.zeros((m, n_components, T), dtype=x.dtype)
    residual = x
    for d in range(n_components):
        h = residual[int((residual * residual).sum(1).argmax())] if h0 is None else h0[d]
        for _ in range(3):
            W[:, d], h, delays[:, d], contrib[:, d] = _update_component(
                xp, residual, h, lags, allowed, T)
        H[d], residual = h, residual - contrib[:, d]
    recon = contrib.sum(1)  # (m, T); contrib (m, k, T): each component's delayed part
    norm_x, errors = _fro(x), []
    for iteration in range(n_iter_max):
        for d in range(n_components):
            residual = x - recon + contrib[:, d]
            W[:, d], H[d], delays[:, d], part = _update_component(
                xp, residual, H[d], lags, allowed, T)
            recon = recon - contrib[:, d] + part
            contrib[:, d] = part
        errors.append(_fro(x - recon) / norm_x)
        if tol and iteration >= 1 and abs(errors[-2] - errors[-1]) < tol:
            break
    return W, H, delays, errors


def _update_component(xp, residual, h, lags, allowed, T):
    """One exact block-coordinate step for component ``d`` against the ``residual (m, T)`` of
    the other components: for each row the delay and weight minimising ``||r_n - w roll(h,
    tau)||`` (the peak of the cross-correlation, one FFT product per row), then ``h`` as the
    non-negative least-squares fit to the rows shifted back (delays are orthogonal maps).
    Returns the weights ``(m,)``, ``h`` (unit norm), the delays and the new part ``(m, T)``."""
    r_hat = xp.fft.rfft(residual)
    corr = _irfft(xp, r_hat * xp.conj(xp.fft.rfft(h))[None], T)  # (m, lags)
    corr = xp.where(allowed[None], corr, -xp.inf)
    best = corr.argmax(1)
    tau = lags[best]
    hh = float((h * h).sum())
    w = xp.maximum(xp.take_along_axis(corr, best[:, None], 1)[:, 0], 0) / max(hh, 1e-300)
    if float((w * w).sum()) > 0:  # why: a component no row uses keeps its shape
        back = _irfft(xp, r_hat * xp.exp(2j * xp.pi * tau[:, None] *
                                         xp.arange(r_hat.shape[-1]) / T), T)
        h = xp.maximum((w[:, None] * back).sum(0), 0) / float((w * w).sum())
    scale = float(xp.sqrt((h * h).sum()))
    if scale > 0:  # the W-H scale is free: keep ||h|| = 1, the weights carry it
        h, w = h / scale, w * scale
    part = w[:, None] * _irfft(xp, _shifted(xp, xp.fft.rfft(h)[None, None], tau[:, None], T),
                               T)[:, 0]
    return w, h, tau, part


StretchNMFResult = namedtuple("StretchNMFResult", ["W", "H", "stretches", "grid", "errors"])
StretchNMFResult.__doc__ = """Result of :func:`stretch_nmf`: ``W (m, k)``, the components ``H (k,
L)`` sampled at the log-spaced axis values ``grid (L,)``, ``stretches (m, k)`` (row ``n`` sees
component ``d`` as ``H_d(f / stretches[n, d])``; one factor per component is free, as a delay
is in shift-invariant NMF) and the relative error on the log grid after each iteration."""


def stretch_nmf(X, n_components, axis=None, n_bins=None, max_stretch=2.0, n_iter_max=200,
                tol=1e-9, n_starts=8, random_state=None):
    """Stretch-invariant NMF of a non-negative ``X (m, F)`` sampled at positive, increasing
    ``axis (F,)`` values (default ``1, ..., F``; e.g. frequencies of spectra, where a change
    of pitch stretches the harmonic pattern): ``X[n](f) ~ sum_d W[n, d] H_d(f / s[n, d])``
    with ``W, H >= 0`` and ``1 / max_stretch <= s <= max_stretch``.

    On ``u = log f`` a stretch by ``s`` is a shift by ``log s`` (the constant-Q view of
    Morup & Schmidt's shift-invariant models), so the rows are resampled by linear
    interpolation onto ``n_bins`` (default ``2 F``) log-spaced points, zero-padded on both
    sides by the largest shift (so that the circular shifts do not wrap), and fitted by
    :func:`shift_nmf` in the frequency domain; the stretch is ``exp(delay * du)`` for the grid
    step ``du``, so its resolution is ``du``. Returns a :class:`StretchNMFResult` (errors
    measured on the log grid).

    Example::

        res = stretch_nmf(spectra, 2, max_stretch=1.5)   # res.stretches (m, 2)
    """
    op = "stretch_nmf"
    check_tensor(op, X, "X", min_ndim=2, finite=True)
    if X.ndim != 2:
        raise ValueError(f"{op}: expected a matrix X (rows, axis), got shape {tuple(X.shape)}")
    m, F = X.shape
    work = working(X)
    x = work._data
    xp = array_module(x)
    f = xp.arange(1, F + 1, dtype=x.dtype) if axis is None else \
        working(axis).to(work.dtype).to(work.device)._data
    if f.shape != (F,) or not bool((f > 0).all()) or not bool((f[1:] > f[:-1]).all()):
        raise ValueError(f"{op}: axis must hold {F} positive, increasing values (one per "
                         "column of X)")
    if not max_stretch > 1:
        raise ValueError(f"{op}: max_stretch must be > 1, got {max_stretch!r}")
    n_bins = 2 * F if n_bins is None else n_bins
    if not isinstance(n_bins, int) or n_bins < 2:
        raise ValueError(f"{op}: n_bins must be an int >= 2, got {n_bins!r}")
    lo, hi = float(xp.log(f[0])), float(xp.log(f[-1]))
    du = (hi - lo) / (n_bins - 1)
    reach = math.log(max_stretch) / du  # the largest shift, in grid steps
    pad = math.ceil(reach)
    u = lo + du * xp.arange(-pad, n_bins + pad, dtype=x.dtype)
    logf = xp.log(f)
    # outside the sampled range the rows are zero (the padding the shifts move into)
    rows = xp.stack([xp.interp(u, logf, x[n], left=0.0, right=0.0) for n in range(m)])
    res = shift_nmf(_make(rows), n_components, n_iter_max=n_iter_max, max_delay=int(reach), tol=tol,
                    n_starts=n_starts, random_state=random_state)
    stretches = xp.exp(res.delays._data.astype(x.dtype) * du)
    dtype = X.dtype
    return StretchNMFResult(res.W.to(dtype), res.H.to(dtype), _make(stretches).to(dtype),
                            _make(xp.exp(u)).to(dtype), res.errors)
