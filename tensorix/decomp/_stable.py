"""Stable CP: the error-preserving correction (EPC) of Phan, Sobolev, Sozykin, Ermilov,
Gusak, Tichavsky, Glukhov, Oseledets & Cichocki, "Stable low-rank tensor decomposition for
compression of convolutional neural network" (ECCV 2020).

A CP fit at high rank is often *degenerate*: some rank-1 terms grow huge and cancel each
other. The fit is then fragile (a small change of one factor, as fine-tuning makes, changes the
tensor a lot). EPC keeps the fit's error and minimises the sensitivity instead,

    min  ss(A) = sum_n I_n sum_r prod_{k != n} ||a_r^(k)||^2    s.t.  ||X - [[A]]|| <= delta,

(``ss`` is the expected squared change of the tensor when every factor entry moves by unit
noise), one factor at a time: for factor ``n`` it is a quadratically constrained least-squares
problem, ``A_n = G (Phi + rho W)^-1`` with the ALS right-hand side ``G``, Gram ``Phi`` and the
diagonal sensitivity weights ``W``, and the Lagrange multiplier ``rho`` set (by bisection on a
scalar function, after one eigendecomposition) so that the error is exactly ``delta``.
"""

from __future__ import annotations

import math

from ..backend import array_module
from ..tensor import _make
from ._base import _fro
from ._cp import CPTensor, _cast, _full, _grams, _mttkrp, _prepare

__all__ = ["cp_stabilize", "cp_sensitivity"]


def _sensitivity(xp, factors):
    """``ss`` of raw factor arrays (weights absorbed), and each mode's per-term weights."""
    norms2 = [(f * f).sum(0) for f in factors]
    sizes = [f.shape[0] for f in factors]
    total = sum(size * math.prod(norms2[k] for k in range(len(factors)) if k != n)
                for n, size in enumerate(sizes))
    return float(total.sum()), norms2, sizes


def cp_sensitivity(cp):
    """The sensitivity of a CP tensor ``[[w; A_0, ..., A_{N-1}]]`` (weights absorbed into the
    first factor): ``sum_n I_n sum_r prod_{k != n} ||a_r^(k)||^2``, the expected squared
    change of the full tensor when every factor entry takes unit-variance noise. Large for
    degenerate fits (huge, cancelling rank-1 terms). Example: ``cp_sensitivity(cp)``, a float.
    """
    weights, factors = cp if isinstance(cp, CPTensor) else CPTensor(cp)
    arrays = [f.detach()._data for f in factors]
    arrays[0] = arrays[0] * weights.detach()._data
    return _sensitivity(array_module(arrays[0]), arrays)[0]


def _balance(xp, factors):
    """Rescale each rank-1 term's factors (same term) to the norms that minimise its
    sensitivity: ``||a_r^(n)||^2`` proportional to ``I_n`` (Lagrange on ``sum_n I_n prod_{k !=
    n} ||a^(k)||^2`` at a fixed product of norms). The ALS-like sweeps alone rebalance slowly.
    """
    norms = [xp.sqrt((f * f).sum(0)) for f in factors]
    product = math.prod(norms)
    sizes = [f.shape[0] for f in factors]
    unit = (product / math.prod(math.sqrt(i) for i in sizes)) ** (1 / len(factors))
    return [f * xp.where(nrm == 0, 0, math.sqrt(i) * unit / xp.where(nrm == 0, 1, nrm))
            for f, nrm, i in zip(factors, norms, sizes)]


def _error2(c, lam, rho, least2):
    """``||X - A(rho) Z^T||^2`` in the eigenbasis: the least-squares residual ``least2`` plus
    ``sum c rho^2 / (lam (lam + rho)^2)``; increases with ``rho``. Why not ``||X||^2 - sum c
    (lam + 2 rho) / (lam + rho)^2``: at a small ``delta`` that form cancels almost every digit
    (at 1e-6, twelve), so the bound it enforces was off by ~1e-4 relative."""
    return least2 + float((c * rho * rho / (lam * (lam + rho) ** 2)).sum())


def _multiplier(c, lam, least2, delta2):
    """The smallest ``rho >= 0`` whose error reaches ``delta^2`` (0 when even the least-squares
    solution exceeds it), by bracketing and bisection on ``log rho``."""
    if least2 >= delta2:
        return 0.0
    lo, hi = 0.0, 1.0
    while _error2(c, lam, hi, least2) < delta2 and hi < 1e300:
        lo, hi = hi, hi * 10
    for _ in range(60):
        mid = math.sqrt(lo * hi) if lo > 0 else hi / 1e6
        if _error2(c, lam, mid, least2) < delta2:
            lo = mid
        else:
            hi = mid
    return lo  # the feasible side: the error stays at most delta


def cp_stabilize(tensor, cp, delta=None, n_iter_max=100, tol=1e-6, return_errors=False):
    """The error-preserving correction (EPC, Phan et al. 2020) of a CP fit ``cp`` of
    ``tensor (I_0, ..., I_{N-1})``: factors of the same rank with relative error at most
    ``delta`` (default: ``cp``'s own error) and the smallest sensitivity
    (:func:`cp_sensitivity`) that sweeps of the per-factor constrained problem reach, which
    bounds the norms of the rank-1 terms a degenerate fit lets grow.

    Stops when the sensitivity falls by a relative ``tol`` or less in a sweep. Returns a
    :class:`CPTensor` with unit weights (the scale stays in the balanced factors; with
    ``return_errors``, also the sensitivity after each sweep).

    Example::

        cp = parafac(K, rank=40, random_state=0)            # K: a conv kernel (T, S, kh, kw)
        stable = cp_stabilize(K, cp)                        # same error, bounded terms
        cp_sensitivity(stable) <= cp_sensitivity(cp)        # True
    """
    op = "cp_stabilize"
    cp = cp if isinstance(cp, CPTensor) else CPTensor(cp)
    work, _ = _prepare(op, tensor, cp.rank, None)
    if cp.shape != tuple(tensor.shape):
        raise ValueError(f"{op}: cp has shape {cp.shape}, the tensor {tuple(tensor.shape)}")
    if delta is not None and not delta >= 0:
        raise ValueError(f"{op}: delta must be a relative error >= 0, got {delta!r}")
    if not isinstance(n_iter_max, int) or n_iter_max < 1:
        raise ValueError(f"{op}: n_iter_max must be a positive int, got {n_iter_max!r}")
    x = work._data
    xp = array_module(x)
    factors = [f.detach().to(work.dtype).to(work.device)._data for f in cp.factors]
    weights = cp.weights.detach().to(work.dtype).to(work.device)._data
    factors[0] = factors[0] * weights  # absorb the weights
    factors = _balance(xp, factors)
    norm_x = max(_fro(x), 1e-300)
    own = _fro(x - _full(xp.ones_like(weights), factors, x.shape)) / norm_x
    delta2 = ((own if delta is None else max(delta, own)) * norm_x) ** 2
    ones = xp.ones_like(weights)
    history = [_sensitivity(xp, factors)[0]]
    for _ in range(n_iter_max):
        for n in range(len(factors)):
            _, norms2, sizes = _sensitivity(xp, factors)
            w = sum(size * math.prod(norms2[k] for k in range(len(factors)) if k not in (n, m))
                    for m, size in enumerate(sizes) if m != n)
            w = xp.maximum(w, 1e-300)
            grams = _grams(factors)
            phi = math.prod(g for k, g in enumerate(grams) if k != n)
            g = _mttkrp(x, ones, factors, n)
            # eigenbasis of W^-1/2 Phi W^-1/2: the error as a function of rho is a scalar sum
            inv_root = 1 / xp.sqrt(w)
            lam, vec = xp.linalg.eigh(inv_root[:, None] * phi * inv_root[None, :])
            # why the floor: a (numerically) zero eigenvalue has c ~ 0 (G lies in Phi's
            # range); flooring it keeps 0/0 out of the error and the solution
            lam = xp.maximum(lam, 1e-13 * float(lam.max()))
            h = (g * inv_root) @ vec
            c = (h * h).sum(0)
            # the least-squares residual measured, not by the cancelling formula
            factors[n] = ((h / lam) @ vec.T) * inv_root
            least2 = _fro(x - _full(ones, factors, x.shape)) ** 2
            target = delta2
            for _ in range(3):
                rho = _multiplier(c, lam, least2, target)
                factors[n] = ((h / (lam + rho)) @ vec.T) * inv_root
                # why measured again: the floored eigenvalues make the scalar model miss the
                # true error by a hair; aim that much lower so the bound holds as measured
                miss = _fro(x - _full(ones, factors, x.shape)) ** 2 - delta2 if rho else 0.0
                if miss <= 0:
                    break
                target -= miss
        factors = _balance(xp, factors)
        history.append(_sensitivity(xp, factors)[0])
        if history[-2] - history[-1] <= tol * history[-2]:
            break
    result = _cast(CPTensor((_make(ones), [_make(f) for f in factors])), tensor.dtype)
    return (result, history) if return_errors else result
