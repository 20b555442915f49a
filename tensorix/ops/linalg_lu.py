"""LU factorisation and solves, the matrix exponential, Cholesky solves, and the legacy
``torch.*`` / ``Tensor.*`` linear-algebra names (cholesky, qr, svd, lu, lu_solve,
triangular_solve) that delegate to ``tensorix.linalg``.

* LU with partial pivoting is written here (NumPy has none): a right-looking elimination, one
  Python step per column, each step vectorised over the batch; pivots follow LAPACK (the row
  of largest ``|re| + |im|``, 1-based int32 pivots; a zero column is skipped). Its backward is
  PyTorch's ``linalg_lu_backward`` for square, wide and tall inputs, written with tensorix ops
  (so it is itself differentiable).
* ``lu_solve``, ``cholesky_solve`` and ``cholesky_inverse`` are compositions of triangular
  solves; they read only the triangles their factors define.
* ``matrix_exp`` is Higham's (2005) scaling and squaring with the degree-13 Pade approximant,
  evaluated in float64/complex128; its gradient is the upper-right block of
  ``exp([[A^H, G], [0, A^H]])`` (Najfeld & Havel 1995), so it is differentiable to any order.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import backend
from ..autograd.function import Function
from ..tensor import Tensor, _make
from . import linalg_decomp as _decomp
from ._common import check_tensor
from .creation import eye
from .linalg_decomp import _same_dtype, check_matrix, solve_triangular, tril, triu
from .shape import cat

# torch.* names; tensorix.linalg exports lu_factor, linalg_lu (as lu), linalg_lu_solve (as
# lu_solve) and matrix_exp
__all__ = ["lu", "lu_unpack", "lu_solve", "matrix_exp", "cholesky_solve", "cholesky_inverse",
           "triangular_solve", "cholesky", "qr", "svd", "geqrf", "orgqr", "ormqr"]

LUFactorResult = namedtuple("LUFactorResult", ["LU", "pivots"])
LUFactorExResult = namedtuple("LUFactorExResult", ["LU", "pivots", "info"])
LUResult = namedtuple("LUResult", ["P", "L", "U"])
SVDLegacy = namedtuple("SVDLegacy", ["U", "S", "V"])
TriangularSolveResult = namedtuple("TriangularSolveResult", ["solution", "cloned_coefficient"])
GeqrfResult = namedtuple("GeqrfResult", ["a", "tau"])


# -- LU ---------------------------------------------------------------------------------------
def lu_kernel(a):
    """LU with partial pivoting of an xp array ``(..., m, n)``: ``(LU, pivots)``."""
    xp = backend.array_module(a)
    *batch, m, n = a.shape
    k = min(m, n)
    lu_ = a.reshape((-1, m, n)).copy()
    piv = xp.zeros((lu_.shape[0], k), dtype=np.int32)
    rows = xp.arange(lu_.shape[0])
    for j in range(k):
        col = lu_[:, j:, j]
        mag = xp.abs(col.real) + xp.abs(col.imag) if xp.iscomplexobj(col) else xp.abs(col)
        p = xp.argmax(mag, axis=1) + j
        piv[:, j] = p + 1
        top, chosen = lu_[rows, j].copy(), lu_[rows, p].copy()
        lu_[rows, j], lu_[rows, p] = chosen, top
        pivot = lu_[:, j, j]
        safe = xp.where(pivot == 0, 1, pivot)
        mult = lu_[:, j + 1:, j] / safe[:, None]  # a zero pivot's column is all zeros
        lu_[:, j + 1:, j] = mult
        lu_[:, j + 1:, j + 1:] -= mult[:, :, None] * lu_[:, j, None, j + 1:]
    return lu_.reshape(a.shape), piv.reshape(tuple(batch) + (k,))


def _permutation(pivots, m, xp):
    """The permutation matrices P (..., m, m) with A = P L U from LAPACK pivots."""
    batch = pivots.shape[:-1]
    piv = pivots.reshape((-1, pivots.shape[-1])).astype(np.int64) - 1
    perm = xp.broadcast_to(xp.arange(m), (piv.shape[0], m)).copy()
    rows = xp.arange(piv.shape[0])
    for j in range(piv.shape[1]):
        a, b = perm[rows, j].copy(), perm[rows, piv[:, j]].copy()
        perm[rows, j], perm[rows, piv[:, j]] = b, a
    p = xp.zeros((piv.shape[0], m, m))
    p[rows[:, None], perm, xp.arange(m)[None, :]] = 1
    return p.reshape(tuple(batch) + (m, m))


def _unpack(lu_, k):
    """Unit-lower L (..., m, k) and upper U (..., k, n) from packed LU (differentiable)."""
    m = lu_.shape[-2]
    low = tril(lu_[..., :, :k], -1) + eye(m, k, dtype=lu_.dtype, device=lu_.device)
    return low, triu(lu_[..., :k, :])


def lu_backward(gl, gu, p, low, up):
    """PyTorch's ``linalg_lu_backward``: gA from gL and gU for A = P L U (m x n)."""
    m, n = low.shape[-2], up.shape[-1]
    k = min(m, n)
    if m == n:
        ga = tril(low.mH @ gl, -1) + triu(gu @ up.mH)
        ga = solve_triangular(up.mH, ga, upper=False, left=False)
        ga = solve_triangular(low.mH, ga, upper=True, unitriangular=True)
    elif m < n:  # wide: U = [U1 | U2]
        u1, gu1, gu2 = up[..., :k], gu[..., :k], gu[..., k:]
        ga = low.mH @ gl - triu(gu) @ up.mH
        ga = solve_triangular(u1.mH, tril(ga, -1), upper=False, left=False)
        ga = cat([ga + triu(gu1), gu2], -1)
        ga = solve_triangular(low.mH, ga, upper=True, unitriangular=True)
    else:  # tall: L = [L1; L2]
        l1, gl1, gl2 = low[..., :k, :], gl[..., :k, :], gl[..., k:, :]
        ga = gu @ up.mH - low.mH @ tril(gl, -1)
        ga = solve_triangular(l1.mH, triu(ga), upper=True, unitriangular=True)
        ga = cat([ga + tril(gl1, -1), gl2], -2)
        ga = solve_triangular(up.mH, ga, upper=False, left=False)
    return p @ ga


class LUFactor(Function):
    @staticmethod
    def forward(ctx, a):
        packed, piv = lu_kernel(a._data)
        packed, piv = _make(packed), _make(piv)
        ctx.mark_non_differentiable(piv)
        ctx.save_for_backward(packed, piv)
        return packed, piv

    @staticmethod
    def backward(ctx, g, _gpiv):
        packed, piv = ctx.saved_tensors
        m, n = packed.shape[-2], packed.shape[-1]
        k = min(m, n)
        low, up = _unpack(packed, k)
        p = LUPermutation.apply(piv, m, packed._dtype)
        gl, gu = tril(g[..., :, :k], -1), triu(g[..., :k, :])
        return lu_backward(gl, gu, p, low, up)


class LUPermutation(Function):
    """The permutation matrices ``P (..., m, m)`` of LAPACK pivots, in ``dtype``: a primitive
    (no gradient: P is piecewise constant), so a compiled lu_unpack, lu or lu_solve permutes
    by the pivots of each call (a wrapped raw array kept the example's P)."""

    _differentiable = False

    @staticmethod
    def forward(ctx, pivots, m, dtype):
        return _make(_permutation(pivots._data, m, pivots.xp).astype(dtype.np), dtype)


class LUInfo(Function):
    """LAPACK's info per matrix: 0, or the 1-based index of the first zero on U's diagonal
    (a primitive for the same reason as LUPermutation)."""

    _differentiable = False

    @staticmethod
    def forward(ctx, packed):
        xp = packed.xp
        zero = xp.diagonal(packed._data, axis1=-2, axis2=-1) == 0
        return xp.where(zero.any(-1), xp.argmax(zero, -1) + 1, 0).astype(np.int32)


def _lu_info(packed):
    return LUInfo.apply(packed)


def lu_factor_ex(A, *, pivot=True, check_errors=False) -> LUFactorExResult:
    """``torch.linalg.lu_factor_ex``: :func:`lu_factor` plus the int32 ``info`` per matrix
    (0, or ``i`` when ``U[i-1, i-1]`` is exactly zero); ``check_errors=True`` raises for a
    nonzero ``info`` instead.

    Example: ``LU, piv, info = tensorix.linalg.lu_factor_ex(A)``.
    """
    op = "linalg.lu_factor_ex" if not check_errors else "linalg.lu_factor"
    check_matrix(A, op)
    if not pivot:
        raise RuntimeError(f"{op}: LU without pivoting is not implemented on the CPU (as in "
                           "PyTorch)")
    packed, piv = LUFactor.apply(A)
    info = _lu_info(packed)
    if check_errors and bool((info._data > 0).any()):
        flat = info._data.reshape(-1)
        k = int(np.argmax(backend.to_device(flat > 0, backend.cpu)))
        where = f" (Batch element {k}):" if A.ndim > 2 else ""
        i = int(flat[k])
        from .linalg_decomp import LinAlgError

        raise LinAlgError(f"{op}:{where} U[{i},{i}] is zero and using it on lu_solve would "
                          "result in a division by zero. If you still want to perform the "
                          "factorization, consider calling linalg.lu(A, pivot) or "
                          "linalg.lu_factor_ex(A, pivot)")
    return LUFactorExResult(packed, piv, info)


def lu_factor(A, *, pivot=True) -> LUFactorResult:
    """``torch.linalg.lu_factor``: the LU factorisation with partial pivoting of ``A (..., m,
    n)``, packed: ``LU (..., m, n)`` holds the unit-lower ``L`` below the diagonal and ``U`` on
    and above it; ``pivots (..., min(m, n))`` (int32, 1-based) are LAPACK's row swaps.
    Differentiable in ``A`` (square, wide and tall) as in PyTorch. An exactly singular ``U``
    raises :class:`LinAlgError`, as in PyTorch (``lu_factor_ex`` and ``lu`` do not).

    Example: ``LU, piv = tensorix.linalg.lu_factor(A)``; ``tensorix.linalg.lu_solve(LU, piv,
    B)`` then solves ``A X = B``.
    """
    packed, piv, _ = lu_factor_ex(A, pivot=pivot, check_errors=True)
    return LUFactorResult(packed, piv)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True) -> LUResult:
    """``(P, L, U)`` from a packed LU and its pivots, with ``A = P @ L @ U``; ``P`` is
    ``(..., m, m)``, ``L (..., m, k)`` unit-lower, ``U (..., k, n)`` upper. The parts not asked
    for are empty tensors. Differentiable in ``LU_data``.

    Example: ``P, L, U = tensorix.lu_unpack(*tensorix.linalg.lu_factor(A))``.
    """
    check_matrix(LU_data, "lu_unpack", "LU_data")
    check_tensor(LU_pivots, "lu_unpack", "LU_pivots")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    if LU_pivots._dtype.category != 1 or tuple(LU_pivots.shape) != tuple(LU_data.shape[:-2]) + (
            k,):
        raise RuntimeError(f"lu_unpack: LU_pivots must be an integer tensor of shape "
                           f"{list(LU_data.shape[:-2]) + [k]}, got {LU_pivots._dtype.name} of "
                           f"shape {list(LU_pivots.shape)}")
    xp = LU_data.xp
    empty = _make(xp.empty((0,), dtype=LU_data._data.dtype))
    low = up = p = empty
    if unpack_data:
        low, up = _unpack(LU_data, k)
    if unpack_pivots:
        p = LUPermutation.apply(LU_pivots, m, LU_data._dtype)
    return LUResult(p, low, up)


def linalg_lu(A, *, pivot=True) -> LUResult:
    """``torch.linalg.lu``: ``A = P L U`` with ``P`` a permutation, ``L (..., m, k)`` unit
    lower triangular, ``U (..., k, n)`` upper triangular; differentiable in ``A``.

    Example: ``P, L, U = tensorix.linalg.lu(A)``; ``P @ L @ U`` reproduces ``A``.
    """
    packed, piv, _ = lu_factor_ex(A, pivot=pivot)
    return lu_unpack(packed, piv)


def linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False) -> Tensor:
    """``torch.linalg.lu_solve``: solve ``A X = B`` given ``lu_factor(A)``; ``adjoint=True``
    solves ``A^H X = B``, ``left=False`` solves ``X A = B`` (or ``X A^H = B``). ``B`` is
    ``(..., n, k)`` (``(..., k, n)`` with ``left=False``); batch dims broadcast.
    Differentiable in ``LU`` and ``B``.

    Example: ``X = tensorix.linalg.lu_solve(*tensorix.linalg.lu_factor(A), B)``.
    """
    op = "linalg.lu_solve"
    check_matrix(LU, op, "LU", square=True)
    check_matrix(B, op, "B")
    _same_dtype(op, LU, B)
    if not left:
        return linalg_lu_solve(LU, pivots, B.mH, adjoint=not adjoint).mH
    n = LU.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation AX = B "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    p, low, up = lu_unpack(LU, pivots)
    if adjoint:  # A^H = U^H L^H P^T
        y = solve_triangular(up.mH, B, upper=False)
        return p @ solve_triangular(low.mH, y, upper=True, unitriangular=True)
    y = solve_triangular(low, p.mT @ B, upper=False, unitriangular=True)
    return solve_triangular(up, y, upper=True)


def lu_solve(b, LU_data, LU_pivots) -> Tensor:
    """Legacy ``torch.lu_solve(b, LU_data, LU_pivots)``: ``linalg.lu_solve(LU_data,
    LU_pivots, b)``, solving ``A X = b`` from ``A``'s LU factorisation."""
    return linalg_lu_solve(LU_data, LU_pivots, b)


def lu(A, pivot=True, get_infos=False):
    """Legacy ``torch.lu``: ``(LU, pivots)`` of :func:`lu_factor`, plus int32 ``infos``
    (0, or ``i`` when ``U[i-1, i-1]`` is exactly zero) with ``get_infos=True``."""
    packed, piv, info = lu_factor_ex(A, pivot=pivot)
    return (packed, piv, info) if get_infos else (packed, piv)


# -- matrix_exp -----------------------------------------------------------------------------
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
           1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
           33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def expm_kernel(a):
    """exp of each square matrix of an xp array, by scaling and squaring (Pade 13)."""
    xp = backend.array_module(a)
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    x = a.astype(wide)
    n = x.shape[-1]
    norm1 = xp.abs(x).sum(-2).max(-1) if n else xp.zeros(x.shape[:-2])
    with np.errstate(divide="ignore"):
        s = xp.maximum(xp.ceil(xp.log2(norm1 / _THETA13)), 0)
    s = xp.where(xp.isfinite(s), s, 0).astype(np.int64)
    x = x / (2.0 ** s)[..., None, None]
    b = _PADE13
    eye = xp.eye(n, dtype=wide)
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    u = x @ (x6 @ (b[13] * x6 + b[11] * x4 + b[9] * x2) + b[7] * x6 + b[5] * x4 + b[3] * x2
             + b[1] * eye)
    v = x6 @ (b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 + \
        b[0] * eye
    r = xp.linalg.solve(v - u, v + u)
    for i in range(int(s.max()) if s.size else 0):
        r = xp.where((s > i)[..., None, None], r @ r, r)
    return r.astype(a.dtype, copy=False)


class MatrixExp(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        with np.errstate(invalid="ignore", over="ignore"):  # inf/NaN in, NaN out, as torch
            return expm_kernel(a._data)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        n = a.shape[-1]
        ah = a.mH
        top = cat([ah, g], -1)
        bottom = cat([g.new_zeros(tuple(g.shape)), ah], -1)
        return MatrixExp.apply(cat([top, bottom], -2))[..., :n, n:]


def matrix_exp(A) -> Tensor:
    """The matrix exponential ``sum_k A^k / k!`` of each square matrix ``(..., n, n)``.

    Example: ``tensorix.matrix_exp(tensorix.zeros(2, 2))`` is the identity;
    ``tensorix.linalg.matrix_exp`` is the same function.
    """
    check_matrix(A, "linalg.matrix_exp", square=True)
    return MatrixExp.apply(A)


# -- Cholesky solves ------------------------------------------------------------------------
def cholesky_solve(B, L, upper=False) -> Tensor:
    """``torch.cholesky_solve(B, L)``: solve ``A X = B`` with ``A = L L^H`` given its Cholesky
    factor (``A = U^H U`` with ``upper=True``); only that triangle of ``L`` is read and
    receives gradient. ``B (..., n, k)``; batch dims broadcast.

    Example: ``tensorix.cholesky_solve(B, tensorix.linalg.cholesky(A))`` equals
    ``tensorix.linalg.solve(A, B)``.
    """
    op = "cholesky_solve"
    check_matrix(L, op, "input2", square=True)
    check_matrix(B, op, "input")
    _same_dtype(op, L, B)
    if upper:
        return solve_triangular(L, solve_triangular(L.mH, B, upper=False), upper=True)
    return solve_triangular(L.mH, solve_triangular(L, B, upper=False), upper=True)


def cholesky_inverse(L, upper=False) -> Tensor:
    """``(L L^H)^-1`` from a Cholesky factor ``L`` (``(U^H U)^-1`` with ``upper=True``);
    only that triangle is read. Example: ``tensorix.cholesky_inverse(tensorix.linalg.
    cholesky(A))`` equals ``tensorix.linalg.inv(A)``."""
    check_matrix(L, "cholesky_inverse", "input", square=True)
    ident = eye(L.shape[-1], dtype=L.dtype, device=L.device)
    if upper:
        inv_u = solve_triangular(L, ident, upper=True)
        return inv_u @ inv_u.mH
    inv_l = solve_triangular(L, ident, upper=False)
    return inv_l.mH @ inv_l


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """Legacy ``torch.triangular_solve``: ``(X, A.clone())`` with ``op(T) X = b`` where ``T``
    is the upper (or lower) triangle of ``A`` and ``op`` transposes (not conjugates) it when
    ``transpose=True``. Prefer ``tensorix.linalg.solve_triangular``."""
    check_matrix(A, "triangular_solve", "A", square=True)
    check_matrix(b, "triangular_solve", "b")
    t = A.mT if transpose else A
    x = solve_triangular(t, b, upper=bool(upper) != bool(transpose),
                         unitriangular=unitriangular)
    return TriangularSolveResult(x, A.clone())


# -- Householder QR (LAPACK's geqrf / orgqr / ormqr) --------------------------------------------
class Geqrf(Function):
    @staticmethod
    def forward(ctx, a):
        xp = a.xp
        h, tau = xp.linalg.qr(a._data, mode="raw")  # h is LAPACK's a, transposed
        return xp.ascontiguousarray(xp.swapaxes(h, -1, -2)), tau

    @staticmethod
    def backward(ctx, ga, gtau):
        raise NotImplementedError("geqrf: the derivative for 'geqrf' is not implemented (as in "
                                  "PyTorch); differentiate through tensorix.linalg.qr instead")


def geqrf(input) -> GeqrfResult:
    """LAPACK's ``geqrf``: the QR decomposition in Householder form, ``(a, tau)``: ``R`` on and
    above the diagonal of ``a``, the Householder vectors (unit first entry implied) below it,
    and their scalar factors ``tau (..., min(m, n))``. Not differentiable, as in PyTorch.

    Example: ``a, tau = tensorix.geqrf(A)``; ``tensorix.linalg.householder_product(a, tau)``
    is the ``Q`` of ``tensorix.linalg.qr(A)``.
    """
    check_matrix(input, "geqrf", "input")
    return GeqrfResult(*Geqrf.apply(input))


def _reflect(x, v, t, side):
    """``H x`` (side 'left') or ``x H`` with ``H = I - t v v^H``; v (..., m, 1), t (..., 1, 1)."""
    if side == "left":
        return x - (t * v) @ (v.mH @ x)
    return x - ((x @ v) * t) @ v.mH


def _householder_vectors(a, k):
    m = a.shape[-2]
    return tril(a[..., :, :k], -1) + eye(m, k, dtype=a.dtype, device=a.device)


def householder_product(A, tau) -> Tensor:
    """The first ``n`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H``, for Householder
    vectors stored below the diagonal of ``A (..., m, n)`` (``m >= n >= k``); differentiable in
    ``A`` and ``tau``. ``torch.orgqr`` is the same function.

    Example: ``tensorix.linalg.householder_product(*tensorix.geqrf(A))`` is ``qr(A).Q``.
    """
    op = "linalg.householder_product"
    check_matrix(A, op, "input")
    check_tensor(tau, op, "tau")
    _same_dtype(op, A, tau)
    m, n, k = A.shape[-2], A.shape[-1], tau.shape[-1] if tau.ndim else 0
    if m < n:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    if tau.ndim != A.ndim - 1 or k > n or tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{op}: tau must have shape {list(A.shape[:-2])} + [k] with k <= "
                           f"input.shape[-1] = {n}, got {list(tau.shape)}")
    vecs = _householder_vectors(A, k)
    q = eye(m, n, dtype=A.dtype, device=A.device).expand(tuple(A.shape))
    for i in reversed(range(k)):
        q = _reflect(q, vecs[..., :, i:i + 1], tau[..., i:i + 1].unsqueeze(-1), "left")
    return q


orgqr = householder_product


def ormqr(input, tau, other, left=True, transpose=False) -> Tensor:
    """``Q @ other`` (``left=False``: ``other @ Q``) with ``Q = H_1 ... H_k`` the full
    ``(m, m)`` Householder product of ``geqrf``'s ``(input, tau)``; ``transpose=True`` uses
    ``Q^H``. Differentiable in all three.

    Example: ``tensorix.ormqr(*tensorix.geqrf(A), C)`` equals ``Q @ C`` for the complete Q.
    """
    op = "ormqr"
    check_matrix(input, op, "input")
    check_tensor(tau, op, "tau")
    check_matrix(other, op, "other")
    _same_dtype(op, input, other)
    k = tau.shape[-1] if tau.ndim else 0
    rows = other.shape[-2] if left else other.shape[-1]
    if input.shape[-2] != rows:
        raise RuntimeError(f"{op}: input.shape[-2] must be equal to other.shape"
                           f"[{-2 if left else -1}] ({input.shape[-2]} != {rows})")
    if k > input.shape[-1] or k > rows:
        raise RuntimeError(f"{op}: tau.shape[-1] must be less than or equal to "
                           f"input.shape[-1] and to {rows}, got {k}")
    vecs = _householder_vectors(input, k)
    taus = tau.conj() if transpose and tau.is_complex() else tau
    # Q C = H_1 (... (H_k C)); Q^H C = H_k^H (... H_1^H C); C Q = ((C H_1) ...) H_k
    order = range(k) if left == transpose else reversed(range(k))
    out = other
    for i in order:
        out = _reflect(out, vecs[..., :, i:i + 1], taus[..., i:i + 1].unsqueeze(-1),
                       "left" if left else "right")
    return out


# -- legacy names ---------------------------------------------------------------------------
def cholesky(A, upper=False) -> Tensor:
    """Legacy ``torch.cholesky``: ``tensorix.linalg.cholesky(A, upper=upper)``."""
    return _decomp.cholesky(A, upper=upper)


def qr(A, some=True):
    """Legacy ``torch.qr``: ``tensorix.linalg.qr(A, 'reduced' if some else 'complete')``."""
    return _decomp.qr(A, "reduced" if some else "complete")


def svd(A, some=True, compute_uv=True) -> SVDLegacy:
    """Legacy ``torch.svd``: ``(U, S, V)`` with ``A = U diag(S) V^H`` (``V``, not ``Vh``);
    ``some=False`` gives full ``U`` and ``V``; with ``compute_uv=False`` U and V are zero
    matrices of shapes ``(m, m)`` and ``(n, n)``, as in PyTorch."""
    check_matrix(A, "svd")
    if not compute_uv:
        xp = A.xp
        m, n = A.shape[-2], A.shape[-1]
        batch = tuple(A.shape[:-2])
        zeros_u = _make(xp.zeros(batch + (m, m), dtype=A._data.dtype))
        zeros_v = _make(xp.zeros(batch + (n, n), dtype=A._data.dtype))
        return SVDLegacy(zeros_u, _decomp.svdvals(A), zeros_v)
    u, s, vh = _decomp.svd(A, full_matrices=not some)
    return SVDLegacy(u, s, vh.mH)


_REMOVED = ("{name}(): This function was deprecated since version 1.9 and is now removed, as "
            "in PyTorch; use tensorix.linalg.{new} instead.")


def _removed(name, new):
    def method(self, *args, **kwargs):
        raise RuntimeError(_REMOVED.format(name=name, new=new))

    method.__name__ = name
    method.__doc__ = f"Removed in PyTorch 1.9: raises; use ``tensorix.linalg.{new}``."
    return method


def _methods():
    m = {"lu": lu, "lu_solve": lambda self, LU_data, LU_pivots: lu_solve(self, LU_data,
                                                                        LU_pivots),
         "matrix_exp": matrix_exp, "cholesky": cholesky, "qr": qr,
         "svd": svd, "cholesky_solve": cholesky_solve,
         "cholesky_inverse": cholesky_inverse, "triangular_solve": triangular_solve,
         "geqrf": geqrf, "orgqr": orgqr, "ormqr": ormqr}
    for name, new in (("solve", "solve"), ("lstsq", "lstsq"), ("eig", "eig"),
                      ("symeig", "eigh")):
        m[name] = _removed(name, new)
    return m


TENSOR_METHODS = _methods()
