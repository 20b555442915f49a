"""The subspace power method (Kileel & Pereira 2019) for symmetric tensors of order ``d``,
``n = d // 2`` (odd orders flatten to ``(I^n, I^(n+1))``; below, even ``d = 2n``):
``T = sum_i lambda_i a_i^(x d)`` with unit ``a_i``, rank up to ``binom(I + n - 1, n)``
(far above the dimension ``I``, where orthogonal-tensor power iterations no longer apply).

The flattening ``M = T.reshape(I^n, I^n)`` has the column space ``A = span(a_i^(x n))``. Each
component is the maximiser on the sphere of ``||P_A(x^(x n))||^2`` (which is 1 exactly at the
``a_i``), found by a power iteration; its weight is ``1 / (v^T M^+ v)`` with ``v = a^(x n)``,
and deflation removes it from ``M`` by a rank-one update of the small eigendecomposition.
"""

from __future__ import annotations

import math

from ..backend import array_module
from ..tensor import _make
from ._base import check_tensor, make_generator, random_like, working
from ._cp import CPTensor

__all__ = ["subspace_power_method"]


def _power(x, n):
    """``x^(x n)`` flattened: ``(I^n,)``."""
    out = x
    for _ in range(n - 1):
        out = (out[:, None] * x[None, :]).reshape(-1)
    return out


def subspace_power_method(tensor, rank, n_restarts=10, n_iter_max=2000, tol=1e-12,
                          random_state=None):
    """Symmetric CP decomposition ``tensor ~ sum_r w_r a_r o a_r o ... o a_r`` of a symmetric
    ``tensor (I, ..., I)`` of order ``d >= 3`` by the subspace power method.

    ``rank`` may exceed ``I`` (up to ``binom(I + n - 1, n)`` with ``n = d // 2``, the generic
    identifiability range of the method). Each component takes the best of ``n_restarts``
    random starts of a power iteration (stopped when the iterate moves by less than ``tol``).
    Returns a :class:`CPTensor` with ``weights (R,)`` and ``d`` copies of one factor ``(I, R)`` with
    unit columns (signs are arbitrary for even order; for odd order the sign is in the
    weight's). Runs without autograd.

    Example::

        cp = subspace_power_method(T, rank=6)   # T of shape (5, 5, 5, 5)
        cp = subspace_power_method(T3, rank=4)  # T3 of shape (5, 5, 5): odd order
    """
    op = "subspace_power_method"
    check_tensor(op, tensor, min_ndim=2, finite=True)
    d, size = tensor.ndim, tensor.shape[0]
    if d < 3 or any(s != size for s in tensor.shape):
        raise ValueError(f"{op}: expected a tensor of order >= 3 with equal dims (I, ..., I), "
                         f"got shape {tuple(tensor.shape)}")
    n = d // 2
    bound = math.comb(size + n - 1, n)
    if not isinstance(rank, int) or isinstance(rank, bool) or not 1 <= rank <= bound:
        what = "binom(I + n - 1, n), n = d // 2"
        raise ValueError(f"{op}: rank must be an int in [1, {bound}] for shape "
                         f"{tuple(tensor.shape)} ({what}), got {rank!r}")
    work = working(tensor)
    t = work._data
    xp = array_module(t)
    # the flattening must be symmetric (even order); for odd order, a transposition and a
    # cycle of the modes generate every permutation
    perms = [tuple(range(n, d)) + tuple(range(n))] if d % 2 == 0 else \
        [(1, 0) + tuple(range(2, d)), tuple(range(1, d)) + (0,)]
    scale = max(float(xp.abs(t).max()), 1e-300)
    if any(float(xp.abs(t - t.transpose(p)).max()) > 1e-8 * scale for p in perms):
        raise ValueError(f"{op}: tensor is not symmetric (T != T with its modes permuted)")
    if d % 2:
        return _odd(op, tensor, work, rank, n, n_restarts, n_iter_max, tol, random_state)
    flat = t.reshape(size ** n, size ** n)
    evals, evecs = xp.linalg.eigh((flat + flat.T) / 2)
    keep = xp.argsort(-abs(evals))[:rank]
    U, D = evecs[:, keep], evals[keep]
    gen = make_generator(random_state)
    weights, factors = [], []
    for _ in range(rank):
        a = _component(xp, U, work, gen, n, n_restarts, n_iter_max, tol)
        coef = U.T @ _power(a, n)                  # v in the eigenbasis
        lam = 1.0 / float(coef @ (coef / D))       # 1 / (v^T M^+ v)
        weights.append(lam)
        factors.append(a)
        # deflation: M - lam v v^T within span(U) has one zero eigenvalue; drop it
        small = xp.diag(D) - lam * coef[:, None] * coef[None, :]
        evals, q = xp.linalg.eigh((small + small.T) / 2)
        order = xp.argsort(-abs(evals))[:U.shape[1] - 1]
        U, D = U @ q[:, order], evals[order]
    return _result(xp, tensor, weights, factors, d)


def _component(xp, U, work, gen, n, n_restarts, n_iter_max, tol):
    """The best of ``n_restarts`` random power iterations: one component ``a (I,)``."""
    starts = random_like((n_restarts, work.shape[0]), work, gen)._data
    return max((_ascend(xp, U, x / xp.linalg.norm(x), n, n_iter_max, tol) for x in starts),
               key=lambda r: r[1])[0]


def _result(xp, tensor, weights, factors, d):
    w = _make(xp.asarray(weights, dtype=factors[0].dtype)).to(tensor.dtype)
    A = _make(xp.stack(factors, 1)).to(tensor.dtype)
    return CPTensor((w, [A] * d))


def _odd(op, tensor, work, rank, n, n_restarts, n_iter_max, tol, random_state):
    """Odd order ``d = 2n + 1`` (the SPM paper covers every order, rank ``O(I^floor(d/2))``):
    the flattening ``M (I^(n+1), I^n) = P diag(lam) Q^T`` with ``p_i = a_i^(x (n+1))``,
    ``q_i = a_i^(x n)`` has column space ``span(p_i)`` while the ``q_i`` are independent
    (``rank <= binom(I + n - 1, n)``), so the components are the maximisers of
    ``||P_A(x^(x (n+1)))||`` (why the taller side: for ``d = 3`` the other side's objective
    ``||P_A x||`` is 1 on the whole span, not only at the ``a_i``); ``lam = 1 / (q^T M^+ p)``
    (``Q^+ q_i = P^+ p_i = e_i``) and deflation is the rank-one update ``M - lam p q^T``, kept
    as ``U C V^T`` in the shrinking subspaces."""
    t = work._data
    xp = array_module(t)
    size = t.shape[0]
    U, S, Vh = xp.linalg.svd(t.reshape(size ** (n + 1), size ** n), full_matrices=False)
    U, C, Vh = U[:, :rank], xp.diag(S[:rank]), Vh[:rank]
    gen = make_generator(random_state)
    weights, factors = [], []
    for _ in range(rank):
        a = _component(xp, U, work, gen, n + 1, n_restarts, n_iter_max, tol)
        p, q = U.T @ _power(a, n + 1), Vh @ _power(a, n)
        lam = 1.0 / float(q @ xp.linalg.solve(C, p))
        weights.append(lam)
        factors.append(a)
        u, s, vh = xp.linalg.svd(C - lam * p[:, None] * q[None, :])
        keep = U.shape[1] - 1
        U, C, Vh = U @ u[:, :keep], xp.diag(s[:keep]), vh[:keep] @ Vh
    return _result(xp, tensor, weights, factors, 2 * n + 1)


def _ascend(xp, U, x, n, n_iter_max, tol):
    """Power iteration for ``max ||P_A(x^(x n))||^2`` on the unit sphere; returns ``(x, f)``.

    The step is the objective's gradient direction ``P_A(x^(x n)) . x^(x (n-1))``, shifted by
    ``x`` (as in Kileel & Pereira), which makes each step an ascent."""
    size = x.shape[0]
    for _ in range(n_iter_max):
        proj = U @ (U.T @ _power(x, n))
        grad = proj.reshape(size, -1) @ _power(x, n - 1) if n > 1 else proj
        step = grad + x * math.sqrt(n)
        new = step / xp.linalg.norm(step)
        moved = float(xp.linalg.norm(new - x))
        x = new
        if moved < tol:  # why x, not f: f is flat at its maximum, f to 1e-14 is x to 1e-7
            break
    proj = U @ (U.T @ _power(x, n))
    return x, float(proj @ proj)
