"""Two-site DMRG (White 1992; the MPS form of Schollwoeck 2011, sec. 6) and TEBD (Vidal 2004)
with second-order Trotter gates, in real and imaginary time.

DMRG and TEBD are iterative fits: they run under ``no_grad`` (their iterates are not what one
differentiates) and return plain MPS leaves, as the decompositions in ``tensorix.decomp`` do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import linalg as _linalg
from ..autograd import no_grad
from ..backend import array_module
from ..ops.einsum import einsum
from ..tensor import _make
from ._mps import MPO, MPS, check_bond, check_data, svd_split

__all__ = ["dmrg2", "DMRGResult", "lanczos_ground", "tebd", "trotter_gates"]


def _lanczos(matvec, x, xp, krylov, tol, restarts):
    """Restarted Lanczos with full reorthogonalisation on raw arrays of the tensors' backend.

    Why raw arrays: a local DMRG step runs hundreds of small products, and through Tensor ops
    their dispatch costs several times the arithmetic (``tensorix.decomp``'s HALS sweep makes
    the same choice). The tridiagonal eigenproblem is k x k on the host.
    """
    import numpy as np

    shape = x.shape
    x = x.reshape(-1) / xp.linalg.norm(x)
    value = math.inf
    size = x.size
    steps = min(krylov, size)
    # the Krylov basis as the rows of one array: reorthogonalisation is two GEMVs per step,
    # not 2k vector updates in Python (which were a third of a DMRG's time)
    basis = xp.empty((steps, size), dtype=x.dtype)
    complex_basis = xp.iscomplexobj(basis)

    def apply(v):
        return matvec(v.reshape(shape)).reshape(-1)

    for _ in range(restarts):
        basis[0] = x
        alphas, betas = [], []
        w = apply(x)
        for j in range(steps):
            alphas.append(float(xp.vdot(basis[j], w).real))
            # full reorthogonalisation, twice ("twice is enough", Giraud et al. 2005): one
            # classical Gram-Schmidt pass leaves components of size eps * ||w|| / ||w_new||
            live = basis[:j + 1]
            # why not always .conj(): on a real array it copies the whole basis, twice a step
            dual = live.conj() if complex_basis else live
            for _ in range(2):
                w = w - live.T @ (dual @ w)
            b = float(xp.linalg.norm(w))
            # an invariant subspace (the Krylov space exhausted a small block): relative test,
            # or w / b would be rounding noise and the Ritz values spurious
            scale = abs(alphas[-1]) + (betas[-1] if betas else 0.0)
            if b <= 1e-10 * scale or j == steps - 1:
                break
            betas.append(b)
            basis[j + 1] = w / b
            w = apply(basis[j + 1])
        k = len(alphas)
        t = np.diag(alphas) + np.diag(betas[:k - 1], 1) + np.diag(betas[:k - 1], -1)
        vals, vecs = np.linalg.eigh(t)
        x = xp.asarray(vecs[:, 0].astype(basis.dtype)) @ basis[:k]
        x = x / xp.linalg.norm(x)
        hx = apply(x)
        new = float(xp.vdot(x, hx).real)  # the Rayleigh quotient: never below the spectrum
        residual = float(xp.linalg.norm(hx - new * x))
        # the energy error is the residual squared: stop once that is below tol
        if residual < math.sqrt(tol) or k < krylov or abs(new - value) < tol * 1e-3:
            return new, x.reshape(shape)
        value = new
    return value, x.reshape(shape)


def lanczos_ground(matvec, x0, krylov=24, tol=1e-12, restarts=20):
    """Lowest eigenpair of a Hermitian operator given as ``matvec`` (Tensor -> Tensor of the
    same shape), by restarted Lanczos with full reorthogonalisation from ``x0``.

    Returns ``(value, vector)`` with the vector normalised. Runs without autograd.
    Example: for a symmetric matrix ``A``, ``lanczos_ground(lambda v: A @ v, tensorix.randn(n))``.
    """
    check_data("lanczos_ground", x0, "x0")
    with no_grad():
        value, x = _lanczos(lambda a: matvec(_make(a))._data, x0._data,
                            x0.xp, krylov, tol, restarts)
    return value, _make(x)


def _two_site_matvec(xp, left, w1, w2, right):
    """``theta -> H_eff theta`` for the two-site tensor ``theta (a, s, t, b)``, with ``left
    (a', w, a)``, MPO cores ``w1 (w, s', s, v)``, ``w2 (v, t', t, u)`` and ``right (b', u, b)``.

    Why two GEMMs on prefused halves: the environment and its MPO core are contracted once per
    local step into matrices ``(a' s' v, a s)`` and ``(v t b, t' b')``, so that each of the
    ~20 Lanczos products is two GEMMs on free reshapes of ``theta``; the four ``tensordot``
    calls they replace copied a transposed intermediate each (half a DMRG's time)."""
    d1, d2, dv = w1.shape[1], w2.shape[1], w1.shape[3]
    lw = xp.tensordot(left, w1, axes=([1], [0]))                       # a' a s' s v
    lw = xp.ascontiguousarray(lw.transpose(0, 2, 4, 1, 3)).reshape(
        left.shape[0] * d1 * dv, left.shape[2] * w1.shape[2])
    wr = xp.tensordot(w2, right, axes=([3], [1]))                      # v t' t b' b
    wr = xp.ascontiguousarray(wr.transpose(0, 2, 4, 1, 3)).reshape(
        dv * w2.shape[2] * right.shape[2], d2 * right.shape[0])

    def matvec(theta):
        a, s, t, b = theta.shape
        y = lw @ theta.reshape(a * s, t * b)                      # (a' s' v, t b)
        y = y.reshape(-1, dv * t * b) @ wr                        # (a' s', t' b')
        return y.reshape(left.shape[0], d1, d2, right.shape[0])
    return matvec


def _grow_left(env, a, w):
    return einsum("xwa,xsy,wsth,atb->yhb", env, a.conj() if a.dtype.is_complex else a, w, a)


def _grow_right(env, a, w):
    return einsum("ywb,xsy,hstw,atb->xha", env, a.conj() if a.dtype.is_complex else a, w, a)


@dataclass
class DMRGResult:
    """``energy`` (the last sweep's), the ground-state ``state`` (an :class:`MPS`),
    ``energies`` per sweep and the largest discarded weight of the last sweep."""
    energy: float
    state: MPS
    energies: list = field(default_factory=list)
    converged: bool = False


def dmrg2(mpo, bond_dims=(8, 16, 32, 64), cutoff=1e-10, sweeps=10, tol=1e-9, initial=None,
          seed=0, krylov=24):
    """Ground state of the Hamiltonian ``mpo`` by two-site DMRG: sweeps right and left,
    optimising each pair of neighbouring cores with Lanczos on the effective Hamiltonian and
    splitting it back by a truncated SVD (bond ``<= bond_dims[sweep]``, the last entry for
    later sweeps; relative cut error ``<= cutoff``). Stops when two sweeps' energies differ by
    less than ``tol``.

    Example::

        >>> res = dmrg2(heisenberg_mpo(10, dtype=tensorix.float64), bond_dims=[16, 32])
        >>> round(res.energy, 6)
        -4.258035
    """
    if not isinstance(mpo, MPO):
        raise TypeError(f"dmrg2: expected an MPO, got {type(mpo).__name__}")
    bond_dims = [bond_dims] if isinstance(bond_dims, int) else list(bond_dims)
    for b in bond_dims:
        check_bond("dmrg2", b, cutoff)
    for i, w in enumerate(mpo.cores):
        check_data("dmrg2", w, f"mpo.cores[{i}]")
    L = mpo.L
    with no_grad():
        psi = initial if initial is not None else MPS.random(
            L, int(mpo.cores[0].shape[1]), min(bond_dims[0], 8), dtype=mpo.dtype,
            device=mpo.device, seed=seed)
        psi = psi.canonicalize(0)
        cores = [c.to(mpo.dtype) for c in psi.cores]
        ws = mpo.cores
        one = cores[0].new_ones(1, 1, 1)
        lefts, rights = [one] + [None] * L, [None] * L + [one]
        for i in range(L - 1, 0, -1):
            rights[i] = _grow_right(rights[i + 1], cores[i], ws[i])
        energies, energy = [], math.inf
        for sweep in range(sweeps):
            chi = bond_dims[min(sweep, len(bond_dims) - 1)]
            order = [(i, True) for i in range(L - 1)] + [(i, False) for i in range(L - 2, -1, -1)]
            for i, rightward in order:
                theta0 = einsum("asb,btc->astc", cores[i], cores[i + 1])._data
                xp = array_module(theta0)
                matvec = _two_site_matvec(xp, lefts[i]._data, ws[i]._data, ws[i + 1]._data,
                                          rights[i + 2]._data)
                energy, theta = _lanczos(matvec, theta0, xp, krylov, tol=1e-12, restarts=20)
                theta = _make(theta)
                Dl, d1, d2, Dr = theta.shape
                U, S, Vh = svd_split(theta.reshape(Dl * d1, d2 * Dr), chi, cutoff)
                S = S.to(U.dtype)
                if rightward:
                    cores[i] = U.reshape(Dl, d1, -1)
                    cores[i + 1] = (S.unsqueeze(1) * Vh).reshape(-1, d2, Dr)
                    lefts[i + 1] = _grow_left(lefts[i], cores[i], ws[i])
                else:
                    cores[i] = (U * S).reshape(Dl, d1, -1)
                    cores[i + 1] = Vh.reshape(-1, d2, Dr)
                    rights[i + 1] = _grow_right(rights[i + 2], cores[i + 1], ws[i + 1])
            converged = bool(energies) and abs(energies[-1] - energy) < tol
            energies.append(energy)
            if converged and sweep + 1 >= len(bond_dims):
                break
        return DMRGResult(energy, MPS(cores, center=0), energies, converged)


# -- TEBD --------------------------------------------------------------------------------------

def trotter_gates(h2, dt, imaginary=False):
    """``exp(-i h dt)`` (real time) or ``exp(-h dt)`` (imaginary time) of a Hermitian two-site
    term ``h2 (d*d, d*d)``, by its eigendecomposition (exact for Hermitian ``h2``)."""
    check_data("trotter_gates", h2, "h2")
    vals, vecs = _linalg.eigh(h2)
    if imaginary:
        phase = (-dt * vals).exp().to(vecs.dtype)
    else:
        dtype = vecs.dtype if vecs.dtype.is_complex else vecs.dtype.to_complex()
        vecs = vecs.to(dtype)
        phase = (vals.to(dtype) * (-1j * dt)).exp()
    return (vecs * phase) @ (vecs.conj() if vecs.dtype.is_complex else vecs).mT


def tebd(psi, h2, dt, steps, imaginary=False, max_bond=None, cutoff=1e-12):
    """Evolve ``psi`` under ``H = sum_i h2`` on bonds ``(i, i+1)`` (``h2 (d*d, d*d)``, one term
    for every bond, or a list of ``L - 1`` terms) for ``steps`` steps of ``dt`` with
    second-order Trotter splitting (half steps on even bonds around a full step on odd ones):
    ``exp(-i H t)|psi>`` or, with ``imaginary``, ``exp(-H t)|psi>`` renormalised (which flows
    to the ground state). Real time on a real state works in the complex dtype.

    Example: ``tebd(MPS.product_state('0101'), h, 0.05, 20, imaginary=True, max_bond=16)``.
    """
    if not isinstance(psi, MPS):
        raise TypeError(f"tebd: expected an MPS, got {type(psi).__name__}")
    check_bond("tebd", max_bond, cutoff)
    L = psi.L
    terms = list(h2) if isinstance(h2, (list, tuple)) else [h2] * (L - 1)
    if len(terms) != L - 1:
        raise ValueError(f"tebd: expected {L - 1} bond terms for {L} sites, got {len(terms)}")
    with no_grad():
        half = [trotter_gates(h, dt / 2, imaginary) for h in terms]
        full = [trotter_gates(h, dt, imaginary) for h in terms]
        dtype = full[0].dtype
        if dtype.is_complex and not psi.dtype.is_complex:
            psi = MPS([c.to(dtype) for c in psi.cores], psi.center)
        even, odd = range(0, L - 1, 2), range(1, L - 1, 2)
        for _ in range(int(steps)):
            for layer, gates in ((even, half), (odd, full), (even, half)):
                for i in layer:
                    psi = psi.apply_gate(gates[i], i, max_bond, cutoff)
            if imaginary:
                psi = psi.normalize()
        return psi
