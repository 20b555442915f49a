"""Tucker: ``X ~ core x_0 U_0 x_1 U_1 ...``, by HOSVD (De Lathauwer et al. 2000a) refined with
HOOI (De Lathauwer et al. 2000b), and non-negative Tucker by multiplicative updates (Kim &
Choi 2007), with TensorLy's names and defaults.
"""

from __future__ import annotations

import math

from ..autograd import no_grad
from ..backend import array_module
from ..linalg import qr
from ..tensor import _make
from ._base import (
    _fro,
    _mode_dot,
    _multi_mode_dot,
    _unfold,
    check_tensor,
    make_generator,
    multi_mode_dot,
    random_like,
    svd_interface,
    unfold,
    working,
)

__all__ = ["TuckerTensor", "tucker_to_tensor", "tucker", "non_negative_tucker",
           "tucker_rank_for_budget"]


class TuckerTensor:
    """A Tucker tensor: ``core (R_0, ..., R_{N-1})`` and ``factors[k] (I_k, R_k)``; unpacks as
    ``core, factors = tt``.

    Example: ``TuckerTensor((G, [A, B, C])).to_tensor().shape == (I, J, K)``.
    """

    def __init__(self, tucker_tensor):
        core, factors = tucker_tensor
        factors = list(factors)
        check_tensor("TuckerTensor", core, "core")
        for i, f in enumerate(factors):
            check_tensor("TuckerTensor", f, f"factors[{i}]", min_ndim=2)
        if len(factors) != core.ndim or any(
                f.ndim != 2 or f.shape[1] != r for f, r in zip(factors, core.shape)):
            raise ValueError("TuckerTensor: factors must be matrices (I_k, R_k) with R_k = "
                             f"core.shape[k]; got core {tuple(core.shape)} and factors "
                             f"{[tuple(f.shape) for f in factors]}")
        self.core, self.factors = core, factors

    @property
    def shape(self):
        return tuple(f.shape[0] for f in self.factors)

    @property
    def rank(self):
        return tuple(self.core.shape)

    def __iter__(self):
        return iter((self.core, self.factors))

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return (self.core, self.factors)[i]

    def __repr__(self):
        return f"TuckerTensor(shape={self.shape}, rank={self.rank})"

    def to_tensor(self):
        """The full tensor ``(I_0, ..., I_{N-1})``; differentiable in core and factors."""
        return multi_mode_dot(self.core, self.factors)

    def to_unfolded(self, mode):
        return unfold(self.to_tensor(), mode)


def tucker_to_tensor(tucker_tensor):
    """Full tensor of a :class:`TuckerTensor` or ``(core, factors)``.

    Example: ``tucker_to_tensor((G, [A, B]))`` equals ``A @ G @ B.T``.
    """
    tt = tucker_tensor if isinstance(tucker_tensor, TuckerTensor) else \
        TuckerTensor(tucker_tensor)
    return tt.to_tensor()


def _check_rank(op, tensor, rank):
    """An int applies to every mode (capped at each mode's size); a sequence must give one
    rank per mode, each in ``[1, I_k]``."""
    shape = tuple(tensor.shape)
    if isinstance(rank, int) and not isinstance(rank, bool):
        if rank < 1:
            raise ValueError(f"{op}: rank must be positive, got {rank}")
        return [min(rank, s) for s in shape]
    rank = list(rank)
    if len(rank) != len(shape) or any(not isinstance(r, int) or not 1 <= r <= s
                                      for r, s in zip(rank, shape)):
        raise ValueError(f"{op}: rank must be an int or {len(shape)} ints with 1 <= rank[k] <= "
                         f"shape[k] for a tensor of shape {shape}, got {rank}")
    return rank


def _initialize(op, tensor, rank, init, svd, gen):
    if isinstance(init, (TuckerTensor, tuple, list)):
        core, factors = init if isinstance(init, TuckerTensor) else TuckerTensor(init)
        if tuple(core.shape) != tuple(rank) or [f.shape[0] for f in factors] != list(
                tensor.shape):
            raise ValueError(f"{op}: init does not match shape {tuple(tensor.shape)} and rank "
                             f"{tuple(rank)}")
        return core, list(factors)
    if init == "svd":
        factors = [svd_interface(op, unfold(tensor, mode), r, svd, gen)[0]
                   for mode, r in enumerate(rank)]
    elif init == "random":
        factors = [qr(random_like((s, r), tensor, gen)).Q for s, r in zip(tensor.shape, rank)]
    else:
        raise ValueError(f"{op}: init must be 'svd', 'random' or a TuckerTensor, got {init!r}")
    return multi_mode_dot(tensor, factors, transpose=True), factors


def tucker(tensor, rank, n_iter_max=100, init="svd", svd="truncated_svd", tol=1e-4,
           random_state=None, return_errors=False):
    """Tucker decomposition of ``tensor (I_0, ..., I_{N-1})`` with multilinear ``rank``
    ``(R_0, ..., R_{N-1})`` (or one int for all modes): HOSVD (``init='svd'``, or random
    orthonormal factors with ``'random'``) followed by up to ``n_iter_max`` HOOI sweeps;
    ``n_iter_max=0`` gives the truncated HOSVD. Stops when the relative error changes by less
    than ``tol``. Returns a :class:`TuckerTensor` with ``core (R_0, ...)`` and orthonormal
    ``factors[k] (I_k, R_k)`` (and the relative errors with ``return_errors``).

    Example: ``core, factors = tucker(X, rank=[4, 5, 6])``.
    """
    op = "tucker"
    check_tensor(op, tensor, min_ndim=2, finite=True)
    rank = _check_rank(op, tensor, rank)
    work = working(tensor)
    gen = make_generator(random_state)
    with no_grad():
        core, factors = _initialize(op, work, rank, init, svd, gen)
    # why raw arrays from here: a HOOI sweep is many small ops, each costing Tensor dispatch
    core, factors, work = core._data, [f._data for f in factors], work._data
    norm_x = _fro(work)
    errors = []
    for iteration in range(n_iter_max):
        for mode in range(work.ndim):
            projected = _multi_mode_dot(work, factors, skip=mode, transpose=True)
            factors[mode] = svd_interface(op, _unfold(projected, mode), rank[mode], svd,
                                          gen)[0]
        # why the core from the last projection: X x_k U_k^T over all k, one product
        core = _mode_dot(projected, factors[-1].mT, work.ndim - 1)
        # orthonormal factors: ||X - [[G; U]]||^2 = ||X||^2 - ||G||^2
        errors.append(abs(norm_x ** 2 - _fro(core) ** 2) ** 0.5 / norm_x)
        if tol and iteration >= 1 and abs(errors[-2] - errors[-1]) < tol:
            break
    result = _result(core, factors, tensor.dtype)
    return (result, errors) if return_errors else result


def _result(core, factors, dtype):
    return TuckerTensor((_make(core).to(dtype), [_make(f).to(dtype) for f in factors]))


def non_negative_tucker(tensor, rank, n_iter_max=10, init="svd", tol=1e-4, random_state=None,
                        epsilon=1e-12, return_errors=False):
    """Non-negative Tucker decomposition by multiplicative updates (TensorLy's
    ``non_negative_tucker``): factors then core are rescaled by ``numerator / denominator``
    of the gradient's positive and negative parts, both clipped at ``epsilon``.

    ``tensor (I_0, ..., I_{N-1})`` should be non-negative; ``init='svd'`` takes the absolute
    value of the HOSVD. Returns a non-negative :class:`TuckerTensor` (and relative errors
    with ``return_errors``).
    Example: ``core, factors = non_negative_tucker(X.abs(), rank=[3, 3, 3], n_iter_max=50)``.
    """
    op = "non_negative_tucker"
    check_tensor(op, tensor, min_ndim=2, finite=True)
    rank = _check_rank(op, tensor, rank)
    work = working(tensor)
    gen = make_generator(random_state)
    with no_grad():
        if init == "random":
            core = random_like(rank, work, gen, uniform=True) + 0.01
            factors = [random_like((s, r), work, gen, uniform=True)
                       for s, r in zip(work.shape, rank)]
        else:
            core, factors = _initialize(op, work, rank, init, "truncated_svd", gen)
            core, factors = core.abs(), [f.abs() for f in factors]
    core, factors, work = core._data, [f._data for f in factors], work._data  # see tucker
    maximum = array_module(work).maximum
    norm_x = _fro(work)
    errors = []
    for iteration in range(n_iter_max):
        for mode in range(work.ndim):
            # B^T = unfold(core x_{k != mode} U_k, mode): the mode's design matrix
            b = _unfold(_multi_mode_dot(core, factors, skip=mode), mode).mT
            numerator = maximum(_unfold(work, mode) @ b, epsilon)
            denominator = maximum(factors[mode] @ (b.mT @ b), epsilon)
            factors[mode] = factors[mode] * numerator / denominator
        numerator = maximum(_multi_mode_dot(work, factors, transpose=True), epsilon)
        denominator = maximum(_multi_mode_dot(core, [f.mT @ f for f in factors]), epsilon)
        core = core * numerator / denominator
        errors.append(_fro(work - _multi_mode_dot(core, factors)) / norm_x)
        if tol and iteration >= 1 and abs(errors[-2] - errors[-1]) < tol:
            break
    result = _result(core, factors, tensor.dtype)
    return (result, errors) if return_errors else result


def _tucker_size(shape, rank):
    """Parameters of a Tucker model: the core plus the factors."""
    return math.prod(rank) + sum(s * r for s, r in zip(shape, rank))


def tucker_rank_for_budget(tensor, budget):
    """A multilinear rank ``(R_0, ..., R_{N-1})`` whose Tucker model (core plus factors) has at
    most ``budget`` parameters (an int, or a float in ``(0, 1]``: that fraction of
    ``tensor.numel()``), chosen greedily on the unfoldings' singular values ("Tucker
    packing"): from the full ranks, repeatedly lower the mode whose next discarded singular
    value costs the least squared error per parameter saved. The objective is the truncated
    HOSVD's error bound ``sum_k sum_{i >= R_k} sigma_{k,i}^2``, so modes of fast-decaying
    spectra give up rank first (a uniform fraction per mode, TensorLy's ``rank=0.5``, does
    not look at the data).

    Example: ``tk = tucker(X, rank=tucker_rank_for_budget(X, 0.1))`` (10% of X's size).
    """
    op = "tucker_rank_for_budget"
    check_tensor(op, tensor, min_ndim=2, finite=True)
    shape = tuple(tensor.shape)
    if isinstance(budget, float) and 0 < budget <= 1:
        budget = int(budget * math.prod(shape))
    smallest = _tucker_size(shape, [1] * len(shape))
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < smallest:
        raise ValueError(f"{op}: budget must be an int >= {smallest} (the size of a rank-"
                         f"(1, ..., 1) model of shape {shape}) or a float in (0, 1] giving at "
                         f"least that, got {budget!r}")
    work = working(tensor)._data
    xp = array_module(work)
    # the unfoldings' squared singular values, from their Gram matrices (I_k x I_k): only the
    # spectrum is needed, and eigvalsh of the Gram is far cheaper than an SVD of a wide matrix
    spectra = []
    for mode in range(len(shape)):
        u = _unfold(work, mode)
        spectra.append(sorted((max(float(v), 0.0) for v in xp.linalg.eigvalsh(u @ u.T)),
                              reverse=True))
    rank = [min(s, math.prod(shape) // s) for s in shape]
    while _tucker_size(shape, rank) > budget:
        best, choice = math.inf, None
        for mode, r in enumerate(rank):
            if r == 1:
                continue
            smaller = rank[:mode] + [r - 1] + rank[mode + 1:]
            saved = _tucker_size(shape, rank) - _tucker_size(shape, smaller)
            cost = spectra[mode][r - 1] / saved
            if cost < best:
                best, choice = cost, mode
        rank[choice] -= 1
    return rank
