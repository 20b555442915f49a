"""CP (CANDECOMP/PARAFAC): ``X ~ sum_r w_r a_r^(0) o a_r^(1) o ...``, fitted by alternating
least squares (with Bro's line-search extrapolation and EM imputation of masked entries) and,
for non-negative data, by HALS (Cichocki & Phan 2009). Names and defaults follow TensorLy.
"""

from __future__ import annotations

import math

from ..autograd import no_grad
from ..linalg import solve
from ..ops.creation import ones, zeros
from ..ops.pointwise import where
from ..ops.shape import cat
from ..tensor import Tensor, _make
from ._base import (
    check_tensor,
    khatri_rao,
    make_generator,
    nndsvda,
    norm,
    random_like,
    svd_interface,
    unfold,
    working,
)

__all__ = ["CPTensor", "cp_to_tensor", "cp_normalize", "cp_norm", "parafac",
           "non_negative_parafac"]


class CPTensor:
    """A CP tensor: ``weights (R,)`` and ``factors[k] (I_k, R)``; unpacks as
    ``weights, factors = cp``.

    Example: ``tensorix.decomp.CPTensor((w, [A, B, C])).to_tensor().shape == (I, J, K)``.
    """

    def __init__(self, cp):
        weights, factors = cp
        factors = list(factors)
        if not factors:
            raise ValueError("CPTensor: expected at least one factor")
        for i, f in enumerate(factors):
            check_tensor("CPTensor", f, f"factors[{i}]", min_ndim=2)
        rank = factors[0].shape[1]
        if any(f.ndim != 2 or f.shape[1] != rank for f in factors):
            raise ValueError("CPTensor: factors must be matrices (I_k, R) with one R, got "
                             f"shapes {[tuple(f.shape) for f in factors]}")
        if weights is None:
            weights = ones(rank, dtype=factors[0].dtype, device=factors[0].device)
        elif tuple(weights.shape) != (rank,):
            raise ValueError(f"CPTensor: weights must have shape ({rank},), got "
                             f"{tuple(weights.shape)}")
        self.weights, self.factors = weights, factors

    @property
    def shape(self):
        return tuple(f.shape[0] for f in self.factors)

    @property
    def rank(self):
        return self.factors[0].shape[1]

    def __iter__(self):
        return iter((self.weights, self.factors))

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return (self.weights, self.factors)[i]

    def __repr__(self):
        return f"CPTensor(shape={self.shape}, rank={self.rank})"

    def to_tensor(self):
        """The full tensor ``(I_0, ..., I_{N-1})``; differentiable in weights and factors."""
        return cp_to_tensor(self)

    def to_unfolded(self, mode):
        """``unfold(self.to_tensor(), mode)`` without forming the tensor first."""
        return (self.factors[mode] * self.weights) @ khatri_rao(self.factors,
                                                                skip_matrix=mode).mT

    def norm(self):
        """Frobenius norm, from the factors' Gram matrices (never forms the tensor)."""
        return cp_norm(self)

    def normalize(self):
        """A copy with unit-norm factor columns and the scale in the weights."""
        return cp_normalize(self)


def cp_to_tensor(cp, mask=None):
    """Full tensor of a CP tensor (or ``(weights, factors)``), optionally times ``mask``.

    Example: ``cp_to_tensor((None, [A, B]))`` equals ``A @ B.T``.
    """
    cp = cp if isinstance(cp, CPTensor) else CPTensor(cp)
    full = cp.to_unfolded(0).reshape(cp.shape)
    return full if mask is None else full * mask


def cp_norm(cp):
    """Frobenius norm of a CP tensor: ``sqrt(w^T (hadamard_k A_k^T A_k) w)``, a 0-d tensor.
    Example: ``cp_norm(cp)`` equals ``cp.to_tensor().norm()`` without forming the tensor."""
    weights, factors = cp if isinstance(cp, CPTensor) else CPTensor(cp)
    return _gram_product(weights, _grams(factors)).sum().abs().sqrt()


def cp_normalize(cp):
    """Columns of every factor scaled to unit norm, the norms multiplied into the weights
    (zero columns are left as they are). Example: ``w, factors = cp_normalize(cp)``."""
    weights, factors = cp if isinstance(cp, CPTensor) else CPTensor(cp)
    out = []
    for f in factors:
        scale = norm(f, axis=0)
        scale = scale + (scale == 0).to(scale.dtype)  # why: a zero column stays zero, not nan
        weights = weights * scale
        out.append(f / scale)
    return CPTensor((weights, out))


def _check_rank(op, tensor, rank):
    # any tensor has CP rank at most prod(shape) / max(shape); a larger rank is meaningless
    bound = math.prod(tensor.shape) // max(tensor.shape)
    if not isinstance(rank, int) or isinstance(rank, bool) or not 1 <= rank <= bound:
        raise ValueError(f"{op}: rank must be an int in [1, {bound}] for a tensor of shape "
                         f"{tuple(tensor.shape)} (its maximal CP rank), got {rank!r}")


def _initialize(op, tensor, rank, init, svd, gen, non_negative):
    if isinstance(init, (CPTensor, tuple, list)):
        cp = init if isinstance(init, CPTensor) else CPTensor(init)
        if cp.shape != tuple(tensor.shape) or cp.rank != rank:
            raise ValueError(f"{op}: init has shape {cp.shape} and rank {cp.rank}, expected "
                             f"{tuple(tensor.shape)} and {rank}")
        return [w.to(tensor.dtype) for w in [cp.weights] + cp.factors]
    if init == "random":
        factors = [random_like((s, rank), tensor, gen, uniform=True) for s in tensor.shape]
    elif init == "svd":
        factors = []
        for mode, size in enumerate(tensor.shape):
            unfolded = unfold(tensor, mode)
            k = min(rank, *unfolded.shape)
            U, S, Vh = svd_interface(op, unfolded, k, svd, gen)
            if non_negative:  # TensorLy's start for non-negative fits
                U = nndsvda(unfolded, U, S, Vh)
            if mode == 0:  # why: carry the tensor's scale, as TensorLy does
                U = U * S
            if k < rank:  # more components than this mode has dims: random extra columns
                extra = random_like((size, rank - k), tensor, gen)
                U = cat([U, extra], 1)
            factors.append(U)
    else:
        raise ValueError(f"{op}: init must be 'svd', 'random' or a CPTensor, got {init!r}")
    if non_negative:
        factors = [f.abs() for f in factors]
    return [ones(rank, dtype=tensor.dtype, device=tensor.device)] + factors


def _gram_product(weights, grams, skip=None):
    """Hadamard product of the Gram matrices ``A_k^T A_k`` (all, or all but ``skip``), scaled
    by the weights: with ``skip`` the normal matrix of that mode's least-squares problem,
    without it the Gram of the whole model (its squared norm is the sum)."""
    rank = weights.shape[0]
    product = ones(rank, rank, dtype=weights.dtype, device=weights.device)
    for i, g in enumerate(grams):
        if i != skip:
            product = product * g
    return weights.unsqueeze(1) * product * weights.unsqueeze(0)


def _grams(factors):
    # why kept between modes: each factor's Gram is reused by the other modes' normal
    # equations and by the error, so an ALS sweep computes each one once
    return [f.mT @ f for f in factors]


def _mttkrp(tensor, weights, factors, mode):
    """``unfold(X, mode) @ khatri_rao(factors, skip=mode) diag(w)``, the ALS right-hand side.

    Two-step (Phan, Tichavsky & Cichocki 2013): one GEMM contracts the modes right of
    ``mode`` on a free reshape of ``X``, then a broadcast product sums the left ones, so no
    unfolding is copied and only the smaller Khatri-Rao products are formed."""
    shape = tensor.shape
    left, size = math.prod(shape[:mode]), shape[mode]
    if mode == tensor.ndim - 1:
        result = tensor.reshape(left, size).mT @ khatri_rao(factors[:mode])
    else:
        right = khatri_rao(factors[mode + 1:])
        partial = tensor.reshape(left * size, -1) @ right  # (left * size, R)
        result = partial if mode == 0 else (
            partial.reshape(left, size, -1) * khatri_rao(factors[:mode]).unsqueeze(1)).sum(0)
    return result * weights


def _prepare(op, tensor, rank, mask):
    check_tensor(op, tensor, min_ndim=2)
    _check_rank(op, tensor, rank)
    work = working(tensor)
    if mask is None:
        check_tensor(op, work, finite=True)
        return work, None
    if not isinstance(mask, Tensor) or tuple(mask.shape) != tuple(tensor.shape):
        shape = tuple(mask.shape) if isinstance(mask, Tensor) else type(mask).__name__
        raise ValueError(f"{op}: mask must be a Tensor of the tensor's shape "
                         f"{tuple(tensor.shape)}, got {shape}")
    observed = mask.to(device=work.device) != 0
    if not bool((work.isfinite() | ~observed).all()):
        raise ValueError(f"{op}: tensor contains inf or nan values at observed entries (mask "
                         "!= 0); only the missing entries may hold them")
    # missing entries may hold anything (nan included): zero them before any arithmetic
    work = where(observed, work, zeros((), dtype=work.dtype, device=work.device))
    return work, observed.to(work.dtype)


def _error(tensor, norm_x, weights, factors, mask, mttkrp=None, grams=None):
    """Unnormalised error ``||X - [[w; A]]||`` and the (re-imputed) tensor. Without a mask it
    uses ``||X||^2 + ||[[w; A]]||^2 - 2 <X, [[w; A]]>`` from the last MTTKRP (no full tensor)."""
    if mask is None and mttkrp is not None:
        inner = (mttkrp * factors[-1]).sum()
        model2 = _gram_product(weights, grams or _grams(factors)).sum()
        err = (norm_x ** 2 + model2 - 2 * inner).abs().sqrt()
        # why: the expanded form cancels to ~sqrt(eps) relative; near convergence the exact
        # residual is needed to see progress below 1e-8 (exact recovery, tight tol)
        if float(err) > 1e-6 * float(norm_x):
            return err, tensor, norm_x
    recon = cp_to_tensor((weights, factors))
    if mask is not None:  # EM step: missing entries take the current model's values
        tensor = tensor * mask + recon * (1 - mask)
        norm_x = norm(tensor)
    return norm(tensor - recon), tensor, norm_x


def parafac(tensor, rank, n_iter_max=100, init="svd", svd="truncated_svd",
            normalize_factors=False, tol=1e-8, random_state=None, linesearch=False, mask=None,
            return_errors=False):
    """CP decomposition of ``tensor (I_0, ..., I_{N-1})`` at ``rank`` R by ALS.

    ``init``: 'svd' (leading singular vectors of each unfolding), 'random' (uniform, seeded by
    ``random_state``) or a :class:`CPTensor`. Stops when the relative error changes by less
    than ``tol``. ``linesearch`` extrapolates every other iteration (Bro 1998, as TensorLy).
    ``mask`` (same shape, 1 = observed) fits only observed entries; missing ones are imputed
    by the model (EM), and may hold nan. Returns a :class:`CPTensor` with ``weights (R,)`` and
    ``factors[k] (I_k, R)`` (and the list of relative errors with ``return_errors``).
    The fit runs without autograd; the result's ``to_tensor()`` is differentiable.

    Example: ``cp = parafac(X, rank=3, random_state=0); err = (cp.to_tensor() - X).norm()``.
    """
    op = "parafac"
    work, mask = _prepare(op, tensor, rank, mask)
    gen = make_generator(random_state)
    with no_grad():
        weights, *factors = _initialize(op, work, rank, init, svd, gen, False)
        norm_x = norm(work)
        if mask is not None:
            work = work * mask + cp_to_tensor((weights, factors)) * (1 - mask)
        errors, acc_pow, acc_fail = [], 2.0, 0
        for iteration in range(n_iter_max):
            if linesearch and iteration % 2 == 0:
                last_w, last_f = weights, list(factors)
            grams = _grams(factors)
            for mode in range(work.ndim):
                mttkrp = _mttkrp(work, weights, factors, mode)
                gram = _gram_product(weights, grams, mode)
                factors[mode] = solve(gram.mT, mttkrp.mT).mT
                grams[mode] = factors[mode].mT @ factors[mode]
            if linesearch and iteration % 2 == 0 and iteration > 5:
                jump = iteration ** (1.0 / acc_pow)
                new_w = last_w + (weights - last_w) * jump
                new_f = [lf + (f - lf) * jump for lf, f in zip(last_f, factors)]
                new_err, new_x, new_norm = _error(work, norm_x, new_w, new_f, mask)
                if float(new_err / new_norm) < errors[-1]:
                    weights, factors, work, norm_x, err = new_w, new_f, new_x, new_norm, new_err
                    acc_fail = 0
                else:
                    err, work, norm_x = _error(work, norm_x, weights, factors, mask, mttkrp,
                                               grams)
                    acc_fail += 1
                    if acc_fail == 4:  # why: too ambitious jumps; extrapolate less far
                        acc_pow, acc_fail = acc_pow + 1.0, 0
            else:
                err, work, norm_x = _error(work, norm_x, weights, factors, mask, mttkrp, grams)
            errors.append(float(err / norm_x))
            if tol and iteration >= 1 and abs(errors[-2] - errors[-1]) < tol:
                break
            if normalize_factors:
                weights, factors = cp_normalize((weights, factors))
        result = _cast(CPTensor((weights, factors)), tensor.dtype)
    return (result, errors) if return_errors else result


def _cast(cp, dtype):
    return CPTensor((cp.weights.to(dtype), [f.to(dtype) for f in cp.factors]))


def _hals_nnls(utm, utu, v, n_iter_max, epsilon, tol=1e-7):
    """Non-negative least squares ``min_{V >= 0} ||M - U V||`` by HALS row sweeps, from
    ``U^T M (R, n)``, ``U^T U (R, R)`` and a start ``V (R, n)``.

    Why on the raw arrays: the sweep is R sequential row updates of a few tiny ops each, so
    it is bound by per-op cost; the Tensor dispatch (~40 us an op) made it 10x slower than
    the arithmetic. The fit is not differentiated, so nothing is lost."""
    xp = utm.xp
    m, u, v = utm._data, utu._data, v._data.copy()
    diag = xp.diagonal(u)
    live = [k for k, d in enumerate(diag.tolist()) if d != 0]  # a zero column of U: keep row
    scale = xp.where(diag == 0, 1, diag)[:, None]
    m, u = m / scale, u / scale  # why: one division up front, not one per row and sweep
    for iteration in range(n_iter_max):
        before = v.copy()
        for k in live:
            v[k] = xp.maximum(m[k] - u[k] @ v + v[k], epsilon)
        change = float(((v - before) ** 2).sum())
        if iteration == 0:
            first = change
        elif change <= tol * first:
            break
    return _make(v)


def non_negative_parafac(tensor, rank, n_iter_max=100, init="svd", svd="truncated_svd",
                         tol=1e-8, random_state=None, inner_iter_max=5, epsilon=0.0,
                         return_errors=False):
    """Non-negative CP decomposition by HALS (TensorLy's ``non_negative_parafac_hals``):
    each factor update is a non-negative least-squares problem solved by ``inner_iter_max``
    column-wise HALS sweeps; entries stay ``>= epsilon``.

    ``tensor (I_0, ..., I_{N-1})`` should be non-negative. Returns a :class:`CPTensor` with
    non-negative ``factors[k] (I_k, R)`` (and relative errors with ``return_errors``).
    Example: ``cp = non_negative_parafac(X.abs(), rank=4, random_state=0)``.
    """
    op = "non_negative_parafac"
    work, _ = _prepare(op, tensor, rank, None)
    gen = make_generator(random_state)
    with no_grad():
        weights, *factors = _initialize(op, work, rank, init, svd, gen, True)
        norm_x = norm(work)
        errors = []
        for iteration in range(n_iter_max):
            grams = _grams(factors)
            for mode in range(work.ndim):
                mttkrp = _mttkrp(work, weights, factors, mode)
                gram = _gram_product(weights, grams, mode)
                factors[mode] = _hals_nnls(mttkrp.mT, gram, factors[mode].mT,
                                           inner_iter_max, epsilon).mT
                grams[mode] = factors[mode].mT @ factors[mode]
            err, _, _ = _error(work, norm_x, weights, factors, None, mttkrp, grams)
            errors.append(float(err / norm_x))
            if tol and iteration >= 1 and abs(errors[-2] - errors[-1]) < tol:
                break
        result = _cast(CPTensor((weights, factors)), tensor.dtype)
    return (result, errors) if return_errors else result
