"""Tensor renormalisation group for 2-D classical lattice models: TRG (Levin & Nave 2007) and
HOTRG (Xie et al. 2012), with the square-lattice Ising model and Onsager's exact free energy.

A site tensor ``T[l, u, r, d]`` is contracted with its four neighbours on the square lattice
(``r`` of one site with ``l`` of the next, ``d`` with ``u``). Each coarse-graining step merges
sites and truncates the new bond to ``chi`` by SVD; the tensor is rescaled by its norm at
every step and the logs of the scales, weighted by the sites each tensor stands for, give
``ln Z / N`` of the infinite lattice.
"""

from __future__ import annotations

import math

from .. import linalg as _linalg
from ..ops.einsum import einsum
from ._mps import check_data

__all__ = ["ising_tensor", "trg", "hotrg", "onsager_free_energy", "ISING_BETA_C"]

ISING_BETA_C = math.log(1 + math.sqrt(2)) / 2  # critical inverse temperature, J = 1


def ising_tensor(beta, h=0.0, dtype=None, device=None):
    """The site tensor ``T[l, u, r, d]`` of the ferromagnetic Ising model (``J = 1``, field
    ``h``) at inverse temperature ``beta``: each bond weight ``exp(beta s s')`` is split as
    ``M M^T`` and a site sums its spin over ``M`` on its four legs. Shape ``(2, 2, 2, 2)``.
    Example: ``trg(ising_tensor(0.4), chi=16)``."""
    from ..ops.creation import tensor

    c, s = math.sqrt(math.cosh(beta)), math.sqrt(math.sinh(abs(beta)))
    m = tensor([[c, s], [c, -s]], dtype=dtype, device=device)  # rows: spin +1, -1
    field = tensor([math.exp(beta * h), math.exp(-beta * h)], dtype=dtype, device=device)
    return einsum("s,sa,sb,sc,sd->abcd", field, m, m, m, m)


def onsager_free_energy(beta):
    """Onsager's exact free energy per site ``f = -ln(Z/N) / beta`` of the zero-field square
    Ising model (``J = 1``), by 400-point Gauss-Legendre quadrature of his integral (its
    integrand is analytic on the interval, so this is exact to rounding).
    Example: ``onsager_free_energy(ISING_BETA_C)`` is ``-2.10965...``."""
    import numpy as np

    k = 1.0 / math.sinh(2 * beta) ** 2
    x, w = np.polynomial.legendre.leggauss(400)
    theta = (x + 1) * math.pi / 2
    integrand = np.log(math.cosh(2 * beta) ** 2
                       + np.sqrt(1 + k * k - 2 * k * np.cos(2 * theta)) / k)
    integral = float(w @ integrand) * math.pi / 2
    return -(math.log(2) / 2 + integral / (2 * math.pi)) / beta


def _check(op, T, chi, steps):
    check_data(op, T, "T")
    if T.ndim != 4 or len(set(T.shape)) != 1:
        raise ValueError(f"{op}: expected a site tensor T[l, u, r, d] with four equal dims, got "
                         f"shape {tuple(T.shape)}")
    if not isinstance(chi, int) or chi < 1:
        raise ValueError(f"{op}: chi must be a positive int, got {chi!r}")
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"{op}: steps must be a positive int, got {steps!r}")


def _split(matrix, chi):
    """``matrix ~ A @ B`` with rank ``<= chi``, the singular values shared as square roots."""
    U, S, Vh = _linalg.svd(matrix, full_matrices=False)
    k = min(chi, S.shape[0])
    root = S[:k].sqrt()
    return U[:, :k] * root, root.unsqueeze(1) * Vh[:k]


def _log_z(T, chi, steps, step, sites_per_step):
    """Shared driver: rescale, coarse-grain ``steps`` times, close with the periodic trace."""
    log_z, sites = 0.0, 1.0
    for _ in range(steps):
        scale = T.norm()
        T = T / scale
        log_z = log_z + scale.log() / sites
        T = step(T, chi)
        sites *= sites_per_step
    return log_z + einsum("abab->", T).log() / sites


def _trg_step(T, chi):
    D = T.shape[0]
    # two diagonal splittings of every site: (l u | r d) and (u r | d l)
    a, b = _split(T.reshape(D * D, D * D), chi)
    s1, s3 = a.reshape(D, D, -1), b.reshape(-1, D, D)            # (l u x), (x r d)
    a, b = _split(T.permute(1, 2, 3, 0).reshape(D * D, D * D), chi)
    s2, s4 = a.reshape(D, D, -1), b.reshape(-1, D, D)            # (u r y), (y d l)
    # the plaquette: lower-right half of the top-left site, lower-left of the top-right, ...
    return einsum("aij,bki,lkc,jld->abcd", s3, s4, s1, s2)


def trg(T, chi=32, steps=40):
    """``ln Z / N`` of the infinite square lattice of site tensors ``T[l, u, r, d]`` by
    Levin-Nave TRG with bond dimension ``chi`` (each step halves the sites; after ``steps``
    the finite-size remainder is below rounding). Differentiable in ``T`` (so ``beta``
    derivatives give the energy). Cost ``O(chi^6)`` per step.

    Example::

        >>> beta = ISING_BETA_C
        >>> f = -float(trg(ising_tensor(beta, dtype=tensorix.float64), chi=32)) / beta
        >>> abs(f - onsager_free_energy(beta)) < 1e-5
        True
    """
    _check("trg", T, chi, steps)
    return _log_z(T, chi, steps, _trg_step, 2.0)


def _hotrg_step(T, chi):
    """Merge two sites along ``u-d`` and truncate their doubled ``l`` and ``r`` legs with the
    isometry from the better of the two sides (Xie et al. 2012), then rotate the lattice so
    that the next step merges along the other direction."""
    D = T.shape[0]
    # M M^H for the left (and the right) pair of legs without forming the merged M
    Tc = T.conj() if T.dtype.is_complex else T
    left = einsum("aurm,bmsd,eurn,fnsd->abef", T, T, Tc, Tc)
    right = einsum("luam,kmbd,luen,knfd->abef", T, T, Tc, Tc)
    isos = []
    for env in (left, right):
        vals, vecs = _linalg.eigh(env.reshape(D * D, D * D))
        k = min(chi, D * D)
        isos.append((vals[:-k].clamp_min(0).sum(), vecs[:, -k:]))
    U = (isos[0] if float(isos[0][0]) <= float(isos[1][0]) else isos[1])[1]
    U = U.reshape(D, D, -1)
    # T'[l, u, r, d] = U[l1 l2, l] T1[l1, u, r1, m] T2[l2, m, r2, d] U[r1 r2, r]
    new = einsum("abx,aurm,bmsd,rsy->xuyd", U.conj() if U.dtype.is_complex else U, T, T, U)
    return new.permute(1, 2, 3, 0)  # rotate by 90 degrees: the next step merges along l-r


def hotrg(T, chi=16, steps=40):
    """``ln Z / N`` like :func:`trg` by higher-order TRG (HOSVD truncation of merged pairs,
    alternating directions): more accurate than TRG at equal ``chi``, cost ``O(chi^7)``.
    Example: ``hotrg(ising_tensor(ISING_BETA_C, dtype=tensorix.float64), chi=16)``."""
    _check("hotrg", T, chi, steps)
    return _log_z(T, chi, steps, _hotrg_step, 2.0)
