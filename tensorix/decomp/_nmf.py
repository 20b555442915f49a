"""Non-negative matrix factorisation ``X ~ W H``: the two-way case of non-negative CP (HALS or
Lee & Seung's multiplicative updates), and shift-invariant NMF (Morup, Madsen & Hansen 2008,
"ShiftNMF"), where each component may appear in each row delayed: ``X[n, t] ~ sum_d W[n, d]
H[d, t - tau[n, d]]``, fitted in the frequency domain, where a delay is a phase.
"""

from __future__ import annotations

from collections import namedtuple

from ..autograd import no_grad
from ..backend import array_module
from ..dtypes import finfo
from ..tensor import _make
from ._base import _fro, check_tensor, make_generator, random_like, working
from ._cp import non_negative_parafac

__all__ = ["non_negative_factorization", "shift_nmf", "ShiftNMFResult"]


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


def shift_nmf(X, n_components, n_iter_max=200, max_delay=None, tol=1e-7, random_state=None):
    """Shift-invariant NMF of a non-negative ``X (m, T)``: ``X[n] ~ sum_d W[n, d] *
    roll(H[d], delays[n, d])`` with ``W (m, k) >= 0``, ``H (k, T) >= 0`` and integer circular
    ``delays (m, k)``, ``|delays| <= max_delay`` (default ``T // 2``).

    Each iteration (Morup et al. 2008, in the frequency domain where a delay is a phase):
    the delays by the peak of the cross-correlation of each row's residual, without that
    component, with the component (one FFT per row and component); then ``W`` and ``H`` by
    multiplicative updates whose numerators and denominators are the positive and negative
    parts of the gradient, computed with the shifted spectra. Returns a
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
    work = working(X)
    gen = make_generator(random_state)
    with no_grad():
        W0 = random_like((m, n_components), work, gen, uniform=True) + 0.1
        H0 = random_like((n_components, T), work, gen, uniform=True) + 0.1
    x, W, H = work._data, W0._data, H0._data  # raw arrays: an iteration is many small ops
    xp = array_module(x)
    tiny = float(finfo(work.dtype).eps)
    delays = xp.zeros((m, n_components), dtype=x.dtype)
    lags = xp.fft.fftfreq(T, 1.0 / T)  # the signed lag of each correlation sample
    allowed = abs(lags) <= max_delay
    norm_x, errors = _fro(x), []
    for iteration in range(n_iter_max):
        delays = _update_delays(xp, x, W, H, delays, lags, allowed, T)
        W, H = _update_factors(xp, x, W, H, delays, T, tiny)
        recon = (W[:, :, None] * _irfft(xp, _shifted(xp, xp.fft.rfft(H)[None], delays, T),
                                        T)).sum(1)
        errors.append(_fro(x - recon) / norm_x)
        if tol and iteration >= 1 and abs(errors[-2] - errors[-1]) < tol:
            break
    dtype = X.dtype
    return ShiftNMFResult(_make(W).to(dtype), _make(H).to(dtype),
                          _make(xp.rint(delays).astype(xp.int64)), errors)


def _update_delays(xp, x, W, H, delays, lags, allowed, T):
    """Each ``delays[n, d]``: the lag maximising the correlation of row ``n``'s residual
    without component ``d`` with ``H[d]`` (components in turn, so each sees the others')."""
    h_hat = xp.fft.rfft(H)
    shifted = _irfft(xp, _shifted(xp, h_hat[None], delays, T), T) * W[:, :, None]  # (m, k, T)
    recon = shifted.sum(1)
    for d in range(H.shape[0]):
        residual = x - recon + shifted[:, d]
        corr = _irfft(xp, xp.fft.rfft(residual) * xp.conj(h_hat[d])[None], T)  # (m, T)
        corr = xp.where(allowed[None], corr, -xp.inf)
        best = corr.argmax(1)
        delays[:, d] = lags[best]
        new = _irfft(xp, _shifted(xp, h_hat[None, d:d + 1], delays[:, d:d + 1], T)[:, 0], T)
        recon = recon - shifted[:, d] + W[:, d:d + 1] * new
        shifted[:, d] = W[:, d:d + 1] * new
    return delays


def _update_factors(xp, x, W, H, delays, T, tiny):
    """Multiplicative updates of ``W`` then ``H`` for fixed delays: the gradient's positive
    and negative parts stay non-negative because a delayed non-negative signal is one."""
    h_shift = _irfft(xp, _shifted(xp, xp.fft.rfft(H)[None], delays, T), T)  # (m, k, T)
    recon = (W[:, :, None] * h_shift).sum(1)
    num = xp.einsum("nt,nkt->nk", x, h_shift)
    den = xp.einsum("nt,nkt->nk", recon, h_shift)
    W = W * xp.maximum(num, tiny) / xp.maximum(den, tiny)
    recon = (W[:, :, None] * h_shift).sum(1)
    # H's gradient: undo each row's delay (a phase of the opposite sign) and weight by W
    undo = -delays
    x_back = _irfft(xp, _shifted(xp, xp.fft.rfft(x)[:, None], undo, T), T)       # (m, k, T)
    r_back = _irfft(xp, _shifted(xp, xp.fft.rfft(recon)[:, None], undo, T), T)
    num = (W[:, :, None] * x_back).sum(0)
    den = (W[:, :, None] * r_back).sum(0)
    H = H * xp.maximum(num, tiny) / xp.maximum(den, tiny)
    scale = xp.sqrt((H * H).sum(1))  # why: the W-H scale is free; keep ||H[d]|| = 1
    return W * scale[None], H / scale[:, None]
