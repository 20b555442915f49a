"""Matrix inverses, solvers, determinants and decompositions behind ``tensorix.linalg``.

Each is a Function whose forward calls ``xp.linalg`` (LAPACK through NumPy, cuSOLVER through
CuPy) and whose backward is written with tensorix ops on the saved inputs and outputs, so it
is itself differentiable (second derivatives, Hessian-vector products). The formulas are the
standard ones, in the form PyTorch uses: Giles 2008, "Collected matrix derivative results for
forward and reverse mode AD" (inv, solve, det); Murray 2016 / Seeger et al. 2017 (Cholesky);
Townsend 2016 and Ionescu et al. 2015 (SVD, eigh); Walter & Lehmann 2018 (QR); Golub &
Pereyra 1973 (pseudo-inverse).

Inputs are batches ``(..., m, n)``; errors match PyTorch's (a singular ``inv``/``solve`` or a
non-positive-definite ``cholesky`` raises :class:`LinAlgError`, a ``RuntimeError``). Dtypes:
float32/float64 and complex64/complex128, as in PyTorch; complex gradients follow PyTorch's
convention (the conjugate Wirtinger derivative) and are checked against it.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor, _make
from ._common import check_tensor, norm_dim
from .linalg_values import Eigvalsh, SVDVals
from .movement import diagonal as _diagonal_view
from .pointwise import where
from .shape import cat

__all__ = ["LinAlgError", "inv", "solve", "solve_triangular", "det", "slogdet", "logdet",
           "cholesky", "qr", "svd", "svdvals", "eigh", "eigvalsh", "pinv", "lstsq",
           "matrix_rank", "diagonal"]

SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
LstsqResult = namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])


class LinAlgError(RuntimeError):
    """A singular matrix, a non-positive-definite matrix, or a failed factorization (the
    counterpart of ``torch.linalg.LinAlgError``, also a ``RuntimeError``)."""


def _lapack(xp, fn, message, a, *rest, nan="whole", **kw):
    """``fn(a, *rest, **kw)`` (an ``xp.linalg`` routine on a batch of matrices ``a``), with a failed
    factorisation raised as :class:`LinAlgError` carrying ``message``.

    A matrix holding NaN is no failure: with ``nan='whole'`` its result is all NaN, as
    PyTorch's LU gives (LAPACK would return a half-NaN inverse, and CuPy's non-finite result
    would read as singular); ``'pass'`` leaves NaN to the routine (a triangular solve spreads
    it as far as it reaches); ``'raise'`` where PyTorch's factorisation fails on NaN (Cholesky,
    SVD)."""
    if nan == "pass" or not bool(xp.isnan(a).any()):
        nan = None
    elif nan == "raise":
        raise LinAlgError(message)
    else:
        nan = xp.isnan(a).any(axis=(-2, -1))
        eye = xp.eye(a.shape[-1], dtype=a.dtype)
        a = xp.where(nan[..., None, None], eye, a)  # a stand-in LAPACK can factor
    try:
        with np.errstate(invalid="ignore"):
            out = fn(a, *rest, **kw)
    except getattr(xp.linalg, "LinAlgError", np.linalg.LinAlgError):
        raise LinAlgError(message) from None
    # NumPy's LAPACK wrappers raise on a zero pivot or a failed Cholesky; CuPy's return
    # inf/nan instead, so there a non-finite result from finite input is the signal
    if xp is not np and not all(bool(xp.isfinite(o).all()) for o in _arrays(out)) and \
            all(bool(xp.isfinite(x).all()) for x in (a, *rest)):
        raise LinAlgError(message)
    return out if nan is None else xp.where(nan[..., None, None], xp.nan, out)


def _arrays(out):
    return tuple(out) if isinstance(out, tuple) else (out,)


_SVD_NAN = ("linalg.svd: The algorithm failed to converge because the input matrix contained "
            "non-finite values.")


def _svd(xp, a, **kw):
    """``xp.linalg.svd`` raising :class:`LinAlgError` (a RuntimeError, as PyTorch's) for NaN
    input or no convergence, never NumPy's ValueError (inf gives NaN, as in PyTorch)."""
    return _lapack(xp, xp.linalg.svd, _SVD_NAN, a, nan="raise", **kw)


# -- argument checks ------------------------------------------------------------------------
_SUPPORTED = ("float32", "float64", "complex64", "complex128")


def check_matrix(A, op, arg="A", square=False):
    """Raise unless ``A`` is a float/complex Tensor of >= 2 dims (square if asked)."""
    check_tensor(A, op, arg)
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {arg} must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: {arg} must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    check_float(A, op)
    return A


def check_float(A, op):
    d = A._dtype
    if d.category < 2:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. "
                           f"Got {d.name}")
    if d.name not in _SUPPORTED:
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {d.name}")


def _same_dtype(op, A, B):
    if A._dtype is not B._dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of type "
                           f"{A._dtype.name} and B of type {B._dtype.name} instead")


def _batch_shape(op, a_shape, b_shape):
    try:
        return tuple(np.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2])))
    except ValueError:
        raise RuntimeError(f"{op}: the batch dimensions of A {list(a_shape[:-2])} and B "
                           f"{list(b_shape[:-2])} are not broadcastable") from None


# -- small differentiable helpers (masks and index gathers; any order) ----------------------
def _const(xp_array):
    return _make(xp_array)


def diagonal_of(x):
    """The main diagonal of the last two dims: ``(..., m, n) -> (..., min(m, n))``."""
    return _diagonal_view(x, 0, -2, -1)


def diag_embed(v):
    """``(..., n) -> (..., n, n)`` with ``v`` on the diagonal, zeros elsewhere."""
    xp = v.xp
    return where(_const(xp.eye(v.shape[-1], dtype=bool)), v.unsqueeze(-2), 0.0)


def tril(x, k=0):
    """Lower triangle (on and below diagonal ``k``) of the last two dims."""
    xp = x.xp
    return where(_const(xp.tri(x.shape[-2], x.shape[-1], k, dtype=bool)), x, 0.0)


def triu(x, k=0):
    """Upper triangle (on and above diagonal ``k``) of the last two dims."""
    xp = x.xp
    return where(_const(~xp.tri(x.shape[-2], x.shape[-1], k - 1, dtype=bool)), x, 0.0)


def _eye_bool(n, like):
    return _const(like.xp.eye(n, dtype=bool))


# -- inv, solve, solve_triangular -------------------------------------------------------------
_SINGULAR = "{op}: The input matrix is singular, so it cannot be inverted or solved against."


class Inv(Function):
    @staticmethod
    def forward(ctx, a):
        xp = a.xp
        out = _make(_lapack(xp, xp.linalg.inv, _SINGULAR.format(op="linalg.inv"), a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        # d(A^-1) = -A^-1 dA A^-1  =>  gA = -A^-H g A^-H
        (ainv,) = ctx.saved_tensors
        h = ainv.mH
        return -(h @ g @ h)


def inv(A) -> Tensor:
    """Inverse of each square matrix in a batch ``(..., n, n)``.

    Raises :class:`LinAlgError` for a singular matrix (as PyTorch). Gradient:
    ``-A^-H g A^-H``; twice differentiable.
    Example: ``tensorix.linalg.inv(A) @ A`` is the identity, up to rounding.
    """
    check_matrix(A, "linalg.inv", square=True)
    return Inv.apply(A)


def _solve(xp, op, a, b, msg, nan="whole"):
    """``xp.linalg.solve(a, b)`` on raw arrays with their batch dims broadcast; a singular
    ``a`` (LAPACK's error or a non-finite result) raises :class:`LinAlgError` with ``msg``;
    ``nan`` as in :func:`_lapack`."""
    batch = _batch_shape(op, a.shape, b.shape)
    A = xp.broadcast_to(a, batch + a.shape[-2:])
    B = xp.broadcast_to(b, batch + b.shape[-2:])
    return _lapack(xp, xp.linalg.solve, msg, A, B, nan=nan)


class Solve(Function):
    """X with A X = B for batches (..., n, n) and (..., n, k), batch dims broadcast."""

    @staticmethod
    def forward(ctx, a, b):
        x = _make(_solve(a.xp, "linalg.solve", a._data, b._data,
                         _SINGULAR.format(op="linalg.solve")))
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, g):
        # gB = A^-H g,  gA = -gB X^H (Giles 2008, section 2.3.1)
        a, x = ctx.saved_tensors
        gb = Solve.apply(a.mH, g)
        ga = -(gb @ x.mH) if ctx.needs_input_grad[0] else None
        return ga, gb


def _is_vector_rhs(A, B):
    # PyTorch's rule: B is a (batch of) vector(s) if 1-d, or shaped exactly A.shape[:-1]
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve(A, B, *, left=True) -> Tensor:
    """Solve ``A X = B`` (or ``X A = B`` with ``left=False``) for square ``A (..., n, n)``.

    ``B`` is ``(..., n, k)``, or a batch of vectors ``(..., n)`` (when 1-d or shaped
    ``A.shape[:-1]``); batch dims broadcast. Raises :class:`LinAlgError` for a singular ``A``.
    Twice differentiable in both arguments.
    Example: ``x = tensorix.linalg.solve(A, b)`` satisfies ``A @ x ≈ b``.
    """
    op = "linalg.solve"
    check_matrix(A, op, square=True)
    check_tensor(B, op, "B")
    check_float(B, op)
    _same_dtype(op, A, B)
    vector = _is_vector_rhs(A, B)
    if not left:
        if vector:
            raise RuntimeError(f"{op}: Vector broadcasting of the right-hand side is not "
                               "supported for left=False; pass B as a matrix (..., k, n)")
        return solve(A.mT, B.mT).mT
    b = B.unsqueeze(-1) if vector else B
    n = A.shape[-1]
    if b.ndim < 2 or b.shape[-2] != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{n} and {'x'.join(map(str, B.shape))})")
    x = Solve.apply(A, b)
    return x.squeeze(-1) if vector else x


class SolveTriangular(Function):
    """X with T X = B where T is the upper/lower triangle of A (unit diagonal if asked)."""

    @staticmethod
    def forward(ctx, a, b, upper, unitriangular):
        ctx.upper, ctx.unit = upper, unitriangular
        xp = a.xp
        t = xp.triu(a._data) if upper else xp.tril(a._data)
        if unitriangular:
            n = t.shape[-1]
            t = xp.where(xp.eye(n, dtype=bool), xp.ones((), dtype=t.dtype), t)
        msg = "linalg.solve_triangular: The triangular matrix is singular (a zero on its diagonal)"
        # an LU solve of the triangle: NumPy ships no batched triangular solver
        x = _make(_solve(xp, "linalg.solve_triangular", t, b._data, msg, nan="pass"))
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        gb = SolveTriangular.apply(a.mH, g, not ctx.upper, ctx.unit)
        ga = None
        if ctx.needs_input_grad[0]:
            ga = -(gb @ x.mH)
            k = 1 if ctx.unit else 0
            ga = triu(ga, k) if ctx.upper else tril(ga, -k)
        return ga, gb, None, None


def solve_triangular(A, B, *, upper, left=True, unitriangular=False) -> Tensor:
    """Solve ``T X = B`` (``X T = B`` with ``left=False``) where ``T`` is the upper
    (``upper=True``) or lower triangle of ``A (..., n, n)``; the other triangle of ``A`` is
    not read. ``unitriangular=True`` takes the diagonal as ones. ``B`` is ``(..., n, k)``
    (``(..., k, n)`` for ``left=False``); batch dims broadcast.

    Unlike PyTorch, a zero on the diagonal raises :class:`LinAlgError` instead of giving inf.
    Example: ``tensorix.linalg.solve_triangular(L, b, upper=False)``.
    """
    op = "linalg.solve_triangular"
    check_matrix(A, op, square=True)
    check_matrix(B, op, arg="B")
    _same_dtype(op, A, B)
    if not left:
        return solve_triangular(A.mT, B.mT, upper=not upper, unitriangular=unitriangular).mT
    if B.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    return SolveTriangular.apply(A, B, bool(upper), bool(unitriangular))


# -- det, slogdet, logdet -------------------------------------------------------------------------
class Det(Function):
    @staticmethod
    def forward(ctx, a):
        with np.errstate(invalid="ignore"):  # NaN in, NaN out, as in PyTorch: no warning
            out = _make(a.xp.linalg.det(a._data))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        # d det = det tr(A^-1 dA)  =>  gA = g conj(det) A^-H  (the adjugate, conjugated)
        a, d = ctx.saved_tensors
        try:
            ainv = Inv.apply(a)
        except LinAlgError:
            return _DetSingularGrad.apply(a, g)
        return (g * d.conj()).unsqueeze(-1).unsqueeze(-1) * ainv.mH


class _DetSingularGrad(Function):
    """gA = g adj(A)^H at a singular A, with adj(A) = det(U) det(V^H) V diag(prod_{j!=i} s_j)
    U^H from the SVD (valid at any A). First order only: its backward raises."""

    @staticmethod
    def forward(ctx, a, g):
        xp = a.xp
        u, s, vh = _svd(xp, a._data)
        n = s.shape[-1]
        others = xp.where(xp.eye(n, dtype=bool), xp.ones((), s.dtype), s[..., None, :])
        p = others.prod(axis=-1)
        sign = xp.linalg.det(u) * xp.linalg.det(vh)
        adj = sign[..., None, None] * ((vh.conj().swapaxes(-1, -2) * p[..., None, :])
                                       @ u.conj().swapaxes(-1, -2))
        return g._data[..., None, None] * adj.conj().swapaxes(-1, -2)

    @staticmethod
    def backward(ctx, gg):
        raise RuntimeError("linalg.det: the second derivative of det at a singular matrix is "
                           "not implemented")


def det(A) -> Tensor:
    """Determinant of each square matrix: ``(..., n, n) -> (...)``.

    Gradient ``g * conj(det) * A^-H`` (twice differentiable); at an exactly singular matrix
    the gradient is the adjugate from an SVD (first order only).
    Example: ``tensorix.linalg.det(2 * tensorix.eye(3))`` is ``tensor(8.)``.
    """
    check_matrix(A, "linalg.det", square=True)
    return Det.apply(A)


class Slogdet(Function):
    @staticmethod
    def forward(ctx, a):
        xp = a.xp
        with np.errstate(invalid="ignore"):
            sign, logabs = xp.linalg.slogdet(a._data)
        if a._dtype.category == 2:  # a NaN determinant has sign 0, as PyTorch's (sign(nan))
            sign = xp.where(xp.isnan(logabs), 0, sign).astype(sign.dtype)
        sign, logabs = _make(sign), _make(logabs)
        ctx.mark_non_differentiable(sign)
        ctx.save_for_backward(a)
        return sign, logabs

    @staticmethod
    def backward(ctx, gsign, glog):
        # d log|det A| = Re tr(A^-1 dA)  =>  gA = g A^-H
        (a,) = ctx.saved_tensors
        return glog.unsqueeze(-1).unsqueeze(-1) * Inv.apply(a).mH


def slogdet(A) -> SlogdetResult:
    """Sign and log of the absolute value of the determinant, ``(sign, logabsdet)``, each of
    shape ``(...)`` for ``A (..., n, n)``; stable where ``det`` under- or overflows.

    ``sign`` is not differentiable (also for complex inputs, where PyTorch's is);
    ``logabsdet`` has gradient ``g A^-H``.
    Example: ``sign, logabs = tensorix.linalg.slogdet(A)``; ``det = sign * logabs.exp()``.
    """
    check_matrix(A, "linalg.slogdet", square=True)
    return SlogdetResult(*Slogdet.apply(A))


def logdet(input) -> Tensor:
    """``log(det(A))`` for real ``A (..., n, n)``: nan where the determinant is negative,
    -inf where it is zero. Example: ``tensorix.logdet(2 * tensorix.eye(2))`` is ``log 4``."""
    check_matrix(input, "logdet", square=True)
    if input.is_complex():
        raise RuntimeError("logdet: complex inputs are not supported; use linalg.slogdet")
    sign, logabs = Slogdet.apply(input)
    return where(sign < 0, float("nan"), logabs)


# -- cholesky ---------------------------------------------------------------------------------
class Cholesky(Function):
    @staticmethod
    def forward(ctx, a):
        xp = a.xp
        msg = ("linalg.cholesky: The factorization could not be completed because the input is "
               "not positive-definite.")
        # reads the lower triangle; NaN fails the factorisation, as in PyTorch
        low = _make(_lapack(xp, xp.linalg.cholesky, msg, a._data, nan="raise"))
        ctx.save_for_backward(low)
        return low

    @staticmethod
    def backward(ctx, g):
        # Murray 2016: gA = L^-H Phi(L^H gL) L^-1 with Phi taking the lower triangle and
        # halving the diagonal, then made Hermitian (the input is read as Hermitian)
        (low,) = ctx.saved_tensors
        p = tril(low.mH @ g)
        p = 0.5 * (p + tril(p, -1).mH)
        ga = solve_triangular(low.mH, p, upper=True)
        return solve_triangular(low, ga, upper=False, left=False)


def cholesky(A, *, upper=False) -> Tensor:
    """Cholesky factor of Hermitian positive-definite matrices ``(..., n, n)``: ``L`` lower
    triangular with ``A = L L^H`` (``U = L^H`` with ``A = U^H U`` when ``upper=True``).

    Only the lower triangle of ``A`` is read, and the gradient is Hermitian (Murray 2016);
    twice differentiable. Raises :class:`LinAlgError` if ``A`` is not positive-definite.
    Example: ``L = tensorix.linalg.cholesky(A)``; ``L @ L.mT`` reproduces ``A``.
    """
    check_matrix(A, "linalg.cholesky", square=True)
    low = Cholesky.apply(A)
    return low.mH if upper else low


# -- qr ------------------------------------------------------------------------------------------
class QR(Function):
    @staticmethod
    def forward(ctx, a, mode):
        ctx.mode = mode
        xp = a.xp
        if mode == "r":
            r = xp.linalg.qr(a._data, mode="r")
            q = xp.empty((0,), dtype=a._data.dtype)
        else:
            q, r = xp.linalg.qr(a._data, mode=mode)
        q, r = _make(q), _make(r)
        ctx.save_for_backward(q, r)
        return q, r

    @staticmethod
    def backward(ctx, gq, gr):
        q, r = ctx.saved_tensors
        if ctx.mode == "r":
            raise RuntimeError("linalg.qr: The derivative of linalg.qr depends on Q, which is "
                               "not computed when mode='r'. Please use linalg.qr(A, "
                               "mode='reduced') if you are going to differentiate through "
                               "linalg.qr.")
        m, n = q.shape[-2], r.shape[-1]
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("linalg.qr: The QR decomposition is not differentiable when "
                               "mode='complete' and nrows > ncols.")
        if m >= n:
            return _qr_backward_tall(gq, gr, q, r), None
        # wide A = [X | Y]: X = Q R1 is a square QR and R2 = Q^H Y, so Y's gradient is
        # Q gR2 and Q receives the extra Y gR2^H (with Y = Q R2)
        r1, r2, gr2 = r[..., :m], r[..., m:], gr[..., m:]
        gx = _qr_backward_tall(gq + (q @ r2) @ gr2.mH, gr[..., :m], q, r1)
        return cat([gx, q @ gr2], -1), None


def _qr_backward_tall(gq, gr, q, r):
    """m >= n: gA = [gQ + Q copyltu(M)] R^-H, M = R gR^H - gQ^H Q (Walter & Lehmann 2018)."""
    b = triu(gr @ r.mH - q.mH @ gq)
    d = diagonal_of(b)
    b = b + b.mH - diag_embed(0.5 * (d + d.conj()) if b.is_complex() else d)
    return solve_triangular(r.mH, q @ b + gq, upper=False, left=False)


def qr(A, mode="reduced") -> QRResult:
    """QR decomposition ``A = Q R`` of ``A (..., m, n)``, with ``k = min(m, n)``.

    ``mode='reduced'``: ``Q (..., m, k)``, ``R (..., k, n)``; ``'complete'``: ``Q (..., m, m)``,
    ``R (..., m, n)``; ``'r'``: ``R`` only (``Q`` is empty). Differentiable (twice) except for
    ``mode='r'`` and for ``mode='complete'`` with ``m > n`` (as in PyTorch). Q and R are
    unique up to the signs of R's diagonal (LAPACK's choice; PyTorch's is the same).
    Example: ``Q, R = tensorix.linalg.qr(A)``.
    """
    check_matrix(A, "linalg.qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"linalg.qr: qr received unrecognized mode '{mode}' but expected "
                           "one of 'reduced' (default), 'r', or 'complete'")
    return QRResult(*QR.apply(A, mode))


# -- svd, eigh -----------------------------------------------------------------------------------
class SVD(Function):
    @staticmethod
    def forward(ctx, a, full_matrices):
        ctx.set_materialize_grads(False)  # svdvals alone must not touch the 1/(s_i^2-s_j^2)
        ctx.full = full_matrices
        u, s, vh = _svd(a.xp, a._data, full_matrices=full_matrices)
        u, s, vh = _make(u), _make(s), _make(vh)
        ctx.save_for_backward(u, s, vh)
        return u, s, vh

    @staticmethod
    def backward(ctx, gu, gs, gvh):
        u, s, vh = ctx.saved_tensors
        k = s.shape[-1]
        if ctx.full:  # the extra columns of U / rows of Vh are arbitrary: PyTorch drops them
            u, vh = u[..., :k], vh[..., :k, :]
            gu = None if gu is None else gu[..., :k]
            gvh = None if gvh is None else gvh[..., :k, :]
        return svd_backward(gu, gs, gvh, u, s, vh), None


def _skew(x):
    return x - x.mH


def svd_backward(gu, gs, gvh, u, s, vh):
    """Reverse-mode rule of the reduced SVD (PyTorch's ``svd_backward``; Townsend 2016)."""
    m, n = u.shape[-2], vh.shape[-1]
    if gu is None and gvh is None:  # only the singular values: gA = U diag(gS) Vh
        return u @ (gs.unsqueeze(-1) * vh) if m >= n else (u * gs.unsqueeze(-2)) @ vh
    uhgu = _skew(u.mH @ gu) if gu is not None else None
    vhgv = _skew(vh @ gvh.mH) if gvh is not None else None
    s2 = s * s
    # E_ij = s_j^2 - s_i^2 off the diagonal, 1 on it (its diagonal terms are zero anyway)
    e = s2.unsqueeze(-2) - s2.unsqueeze(-1) + _eye_bool(s.shape[-1], s).to(s.dtype)
    if uhgu is not None and vhgv is not None:
        ret = (uhgu * s.unsqueeze(-2) + s.unsqueeze(-1) * vhgv) / e
    elif uhgu is not None:
        ret = uhgu * (s.unsqueeze(-2) / e)
    else:
        ret = s.unsqueeze(-1) * (vhgv / e)
    if gs is not None:
        ret = ret + diag_embed(gs)
    if u.is_complex() and uhgu is not None:
        ret = ret + diag_embed(diagonal_of(uhgu) / (2 * s))
    if m > n and gu is not None:
        ga = u @ ret
        gu_sinv = gu / s.unsqueeze(-2)
        ga = ga + gu_sinv - u @ (u.mH @ gu_sinv)
        return ga @ vh
    if m < n and gvh is not None:
        ga = ret @ vh
        sinv_gvh = gvh / s.unsqueeze(-1)
        ga = ga + sinv_gvh - (sinv_gvh @ vh.mH) @ vh
        return u @ ga
    return u @ (ret @ vh) if m >= n else (u @ ret) @ vh


def svd(A, full_matrices=True) -> SVDResult:
    """Singular value decomposition ``A = U diag(S) Vh`` of ``A (..., m, n)``, ``k = min(m, n)``.

    ``full_matrices=True``: ``U (..., m, m)``, ``Vh (..., n, n)``; ``False``: ``U (..., m, k)``,
    ``Vh (..., k, n)``. ``S (..., k)`` is real and descending.

    Gradients follow PyTorch: they are well defined only for distinct, non-zero singular values
    and a loss that does not depend on the signs (phases) of the singular vectors; repeated
    singular values give inf/nan gradients through U and Vh (not through S). With
    ``full_matrices=True`` the gradient ignores the extra columns of U / rows of Vh, which are
    not unique.
    Example: ``U, S, Vh = tensorix.linalg.svd(A, full_matrices=False)``.
    """
    check_matrix(A, "linalg.svd")
    return SVDResult(*SVD.apply(A, bool(full_matrices)))


def svdvals(A) -> Tensor:
    """Singular values ``(..., k)`` of ``A (..., m, n)``, descending; gradient
    ``U diag(g) Vh`` (defined for repeated singular values too). Example:
    ``tensorix.linalg.svdvals(A)[..., 0]`` is the spectral norm."""
    check_matrix(A, "linalg.svdvals")
    if A.requires_grad and is_grad_enabled():  # U and Vh are needed only for the gradient
        return SVD.apply(A, False)[1]
    return SVDVals.apply(A)


class Eigh(Function):
    @staticmethod
    def forward(ctx, a, uplo):
        ctx.set_materialize_grads(False)
        w, v = a.xp.linalg.eigh(a._data, UPLO=uplo)
        w, v = _make(w), _make(v)
        ctx.save_for_backward(w, v)
        return w, v

    @staticmethod
    def backward(ctx, gw, gv):
        w, v = ctx.saved_tensors
        if gv is None:  # eigenvalues only: gA = V diag(gw) V^H
            return (v * gw.unsqueeze(-2)) @ v.mH, None
        # gA = V (diag(gw) + skew(V^H gV) / E) V^H with E_ij = w_j - w_i (Ionescu et al.)
        vhgv = v.mH @ gv
        vhgv = 0.5 * (vhgv - vhgv.mH)
        eye = _eye_bool(w.shape[-1], w)
        e = w.unsqueeze(-2) - w.unsqueeze(-1) + eye.to(w.dtype)
        ret = vhgv / e
        ret = where(eye, 0.0, ret) if gw is None else where(eye, gw.unsqueeze(-2), ret)
        return v @ (ret @ v.mH), None


def _check_uplo(op, uplo):
    if uplo not in ("L", "U"):
        raise RuntimeError(f"{op}: Expected UPLO argument to be 'L' or 'U', but got {uplo}")


def eigh(A, UPLO="L") -> EighResult:
    """Eigenvalues (ascending, real) and orthonormal eigenvectors of Hermitian matrices
    ``(..., n, n)``: ``A = Q diag(L) Q^H``. Only the ``UPLO`` triangle ('L' or 'U') is read.

    Gradients follow PyTorch: defined for distinct eigenvalues and a loss that does not
    depend on the signs (phases) of the eigenvectors; repeated eigenvalues give inf/nan
    gradients through the eigenvectors (not through the eigenvalues). The gradient is
    Hermitian.
    Example: ``L, Q = tensorix.linalg.eigh(A)``; ``Q @ diag(L) @ Q.mT`` reproduces ``A``.
    """
    check_matrix(A, "linalg.eigh", square=True)
    _check_uplo("linalg.eigh", UPLO)
    return EighResult(*Eigh.apply(A, UPLO))


def eigvalsh(A, UPLO="L") -> Tensor:
    """Eigenvalues (ascending) of Hermitian matrices ``(..., n, n)``; gradient
    ``Q diag(g) Q^H``. Example: ``tensorix.linalg.eigvalsh(A)[..., -1]`` is the largest."""
    check_matrix(A, "linalg.eigvalsh", square=True)
    _check_uplo("linalg.eigvalsh", UPLO)
    if A.requires_grad and is_grad_enabled():
        return Eigh.apply(A, UPLO)[0]
    return Eigvalsh.apply(A, UPLO)


# -- pinv, matrix_rank, lstsq ----------------------------------------------------------------------
def _tolerances(A, atol, rtol, op):
    """PyTorch's rule: rtol defaults to eps * max(m, n) unless atol > 0 is given."""
    for name, v in (("atol", atol), ("rtol", rtol)):
        if isinstance(v, Tensor):
            raise TypeError(f"{op}: argument '{name}' as a Tensor is not supported; pass a float")
    if rtol is None:
        eps = float(np.finfo(A._data.real.dtype if A.is_complex() else A._data.dtype).eps)
        rtol = eps * max(A.shape[-2], A.shape[-1]) if atol is None or atol <= 0 else 0.0
    return float(atol or 0.0), float(rtol)


def _singular_cutoff(xp, s, atol, rtol):
    smax = s.max(axis=-1, keepdims=True) if s.shape[-1] else xp.zeros(s.shape[:-1] + (1,))
    return xp.maximum(atol, rtol * smax)


class Pinv(Function):
    @staticmethod
    def forward(ctx, a, atol, rtol, hermitian):
        xp = a.xp
        data = a._data
        if hermitian:
            w, v = xp.linalg.eigh(data)
            keep = xp.abs(w) > _singular_cutoff(xp, xp.abs(w), atol, rtol)
            winv = xp.where(keep, 1 / xp.where(keep, w, 1), 0)
            out = (v * winv[..., None, :]) @ v.conj().swapaxes(-1, -2)
        else:
            u, s, vh = _svd(xp, data, full_matrices=False)
            keep = s > _singular_cutoff(xp, s, atol, rtol)
            sinv = xp.where(keep, 1 / xp.where(keep, s, 1), 0).astype(s.dtype)
            out = (vh.conj().swapaxes(-1, -2) * sinv[..., None, :]) @ u.conj().swapaxes(-1, -2)
        out = _make(out.astype(data.dtype))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        # Golub & Pereyra 1973, in PyTorch's arrangement (valid where the rank is constant)
        a, p = ctx.saved_tensors
        m, n = a.shape[-2], a.shape[-1]
        ph, gh = p.mH, g.mH
        if m <= n:
            k = gh @ p
            kph = k @ ph
            return (-(p @ k).mH + kph - (a @ p) @ kph + (ph @ p) @ (gh - k @ a)), None, None, None
        k = p @ gh
        phk = ph @ k
        return (-(k @ p).mH + ((gh - a @ k) @ p) @ ph + phk - (phk @ p) @ a), None, None, None


def pinv(A, *, atol=None, rtol=None, hermitian=False) -> Tensor:
    """Moore-Penrose pseudo-inverse ``(..., n, m)`` of ``A (..., m, n)``, from an SVD (an
    eigendecomposition with ``hermitian=True``). Singular values at or below
    ``max(atol, rtol * max(S))`` count as zero; ``rtol`` defaults to ``eps * max(m, n)``
    (to 0 when only ``atol > 0`` is given), as in PyTorch.

    Gradient: Golub & Pereyra's formula (no 1/(s_i - s_j) terms, so repeated singular values
    are fine; it assumes the rank is locally constant). Twice differentiable.
    Example: ``tensorix.linalg.pinv(A) @ b`` is the minimum-norm least-squares solution.
    """
    op = "linalg.pinv"
    check_matrix(A, op, square=bool(hermitian))
    atol, rtol = _tolerances(A, atol, rtol, op)
    return Pinv.apply(A, atol, rtol, bool(hermitian))


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False) -> Tensor:
    """Numerical rank (int64, shape ``(...)``): the number of singular values above
    ``max(atol, rtol * max(S))``, with :func:`pinv`'s defaults. Not differentiable.
    Example: ``tensorix.linalg.matrix_rank(tensorix.ones(3, 3))`` is ``tensor(1)``."""
    op = "linalg.matrix_rank"
    check_matrix(A, op, square=bool(hermitian))
    atol, rtol = _tolerances(A, atol, rtol, op)
    xp = A.xp
    if hermitian:
        s = xp.abs(xp.linalg.eigvalsh(A._data))
    else:
        s = _svd(xp, A._data, compute_uv=False)
    return _make((s > _singular_cutoff(xp, s, atol, rtol)).sum(axis=-1).astype(np.int64))


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None) -> LstsqResult:
    """Least-squares solution of ``A X = B`` for ``A (..., m, n)``, ``B (..., m, k)`` (or a
    1-d ``B (m,)``), batch dims broadcast. Returns ``(solution, residuals, rank,
    singular_values)`` as ``torch.linalg.lstsq``:

    * ``solution (..., n, k)``: the minimum-norm solution, ``pinv(A) @ B`` with singular values
      below ``rcond * max(S)`` dropped (``rcond`` defaults to ``eps * max(m, n)``);
    * ``residuals (..., k)``: squared residual norms, only when ``m > n``, every matrix has full
      rank and ``driver`` is not 'gelsy' (else empty);
    * ``rank (...)``: numerical ranks (empty for driver 'gels');
    * ``singular_values (..., min(m, n))``: only for drivers 'gelsd' and 'gelss' (else empty).

    ``driver`` (default 'gelsy') selects which extra outputs are filled, as in PyTorch; the
    solution is always computed the same way. Gradients flow to A and B through the
    solution and the residuals (via :func:`pinv`).
    Example: ``x = tensorix.linalg.lstsq(A, b).solution``.
    """
    op = "linalg.lstsq"
    check_matrix(A, op)
    check_tensor(B, op, "B")
    check_float(B, op)
    _same_dtype(op, A, B)
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError(f"{op}: parameter `driver` should be one of {_DRIVERS}, but got "
                           f"'{driver}'")
    vector = B.ndim == 1
    b = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2], A.shape[-1]
    if b.shape[-2] != m:
        raise RuntimeError(f"{op}: input.size(-2) should match other.size(-2), got {m} and "
                           f"{b.shape[-2]}")
    eps = float(np.finfo(A._data.dtype).eps)
    rtol = eps * max(m, n) if rcond is None or rcond < 0 else float(rcond)
    x = Pinv.apply(A, 0.0, rtol, False) @ b
    xp = A.xp
    empty_f = _make(xp.empty((0,), dtype=A._data.real.dtype))
    full_rank = matrix_rank(A.detach(), rtol=rtol)
    rank = full_rank if driver != "gels" else _make(xp.empty((0,), dtype=np.int64))
    residuals = empty_f
    if m > n and driver != "gelsy" and bool((full_rank == n).all()):
        r = A @ x - b
        residuals = (r.abs() * r.abs() if r.is_complex() else r * r).sum(-2)
    svals = svdvals(A.detach()) if driver in ("gelsd", "gelss") else empty_f
    return LstsqResult(x.squeeze(-1) if vector else x, residuals, rank, svals)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1) -> Tensor:
    """The diagonal ``offset`` (0 main, > 0 above, < 0 below) of the matrices spanned by
    ``dim1`` and ``dim2``, as a new last dimension (a view; ``tensorix.diagonal`` with
    matrix-style defaults).

    Shapes: ``(2, 3, 4)`` with the defaults gives ``(2, 3)``.
    Example: ``tensorix.linalg.diagonal(tensorix.eye(3))`` is ``tensor([1., 1., 1.])``.
    """
    check_tensor(A, "linalg.diagonal", "A")
    for d in (dim1, dim2):  # IndexError for a dim out of range first, as in torch
        norm_dim(d, A.ndim, "linalg.diagonal")
    if A.ndim < 2:
        raise RuntimeError("linalg.diagonal: The input tensor A must have at least 2 "
                           "dimensions.")
    return _diagonal_view(A, offset, dim1, dim2)
