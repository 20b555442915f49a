"""Tensor train (TT, Oseledets 2011) by TT-SVD, TT rounding, and tensor ring (TR, Zhao et al.
2016) by TR-SVD, with TensorLy's names and core layout ``(r_k, I_k, r_{k+1})``.
"""

from __future__ import annotations

import math

from ..autograd import no_grad
from ..backend import array_module
from ..linalg import qr
from ..ops.linalg import tensordot
from ..tensor import _make
from ._base import _fro, check_tensor, make_generator, random_like, svd_interface, working

__all__ = ["TTTensor", "TRTensor", "tt_to_tensor", "tr_to_tensor", "tensor_train", "tt_round",
           "tensor_ring", "tensor_ring_als"]


def _check_cores(op, factors, ring):
    factors = list(factors)
    if not factors:
        raise ValueError(f"{op}: expected at least one core")
    for i, f in enumerate(factors):
        check_tensor(op, f, f"factors[{i}]", min_ndim=3)
        if f.ndim != 3:
            raise ValueError(f"{op}: cores must be 3-d (r_k, I_k, r_k+1), factors[{i}] has "
                             f"shape {tuple(f.shape)}")
    links = [(f.shape[2], g.shape[0]) for f, g in zip(factors, factors[1:] + factors[:1])]
    inner_ok = all(a == b for a, b in links[:-1])
    ends_ok = links[-1][0] == links[-1][1] if ring else links[-1] == (1, 1)
    if not (inner_ok and ends_ok):
        what = "r_N == r_0" if ring else "r_0 == r_N == 1"
        raise ValueError(f"{op}: core ranks do not chain (need factors[k].shape[2] == "
                         f"factors[k+1].shape[0] and {what}); got shapes "
                         f"{[tuple(f.shape) for f in factors]}")
    return factors


def _chain(factors):
    """Contract cores left to right: ``(r_0 * I_0 * ... * I_{N-1}, r_N)``."""
    result = factors[0].reshape(-1, factors[0].shape[2])
    for f in factors[1:]:
        result = (result @ f.reshape(f.shape[0], -1)).reshape(-1, f.shape[2])
    return result


class TTTensor:
    """A tensor train: ``factors[k] (r_k, I_k, r_{k+1})`` with ``r_0 = r_N = 1``.

    Example: ``TTTensor(tensor_train(X, 3).factors).to_tensor()`` approximates ``X``.
    """

    def __init__(self, factors):
        self.factors = _check_cores("TTTensor", factors, ring=False)

    @property
    def shape(self):
        return tuple(f.shape[1] for f in self.factors)

    @property
    def rank(self):
        return tuple(f.shape[0] for f in self.factors) + (1,)

    def __iter__(self):
        return iter(self.factors)

    def __len__(self):
        return len(self.factors)

    def __getitem__(self, i):
        return self.factors[i]

    def __repr__(self):
        return f"TTTensor(shape={self.shape}, rank={self.rank})"

    def to_tensor(self):
        """The full tensor ``(I_0, ..., I_{N-1})``; differentiable in every core."""
        return _chain(self.factors).reshape(self.shape)


class TRTensor(TTTensor):
    """A tensor ring: ``factors[k] (r_k, I_k, r_{k+1})`` with ``r_N = r_0`` (the ends are
    traced together). Example: ``tensor_ring(X, 2).to_tensor()`` approximates ``X``."""

    def __init__(self, factors):
        self.factors = _check_cores("TRTensor", factors, ring=True)

    @property
    def rank(self):
        return tuple(f.shape[0] for f in self.factors) + (self.factors[0].shape[0],)

    def __repr__(self):
        return f"TRTensor(shape={self.shape}, rank={self.rank})"

    def to_tensor(self):
        """The full tensor ``(I_0, ..., I_{N-1})``: the trace over ``r_0 = r_N``."""
        r0, last = self.factors[0].shape[0], self.factors[-1]
        if len(self.factors) == 1:
            return last.diagonal(0, 0, 2).sum(-1)
        # the trace folded into the last contraction (as TensorLy): never forms the r0^2-times
        # larger open chain, which made the reconstruction 20x slower than TensorLy's
        ring = _chain(self.factors[:-1]).reshape(r0, -1, last.shape[0])
        return tensordot(ring, last, dims=([0, 2], [2, 0])).reshape(self.shape)


def tt_to_tensor(factors):
    """Full tensor ``(I_0, ..., I_{N-1})`` of a tensor train (cores or :class:`TTTensor`).
    Example: ``tt_to_tensor([G0, G1, G2])`` with cores ``(r_k, I_k, r_k+1)``."""
    return (factors if isinstance(factors, TTTensor) else TTTensor(factors)).to_tensor()


def tr_to_tensor(factors):
    """Full tensor ``(I_0, ..., I_{N-1})`` of a tensor ring (cores or :class:`TRTensor`).
    Example: ``tr_to_tensor([G0, G1, G2])`` with ``G2.shape[2] == G0.shape[0]``."""
    return (factors if isinstance(factors, TRTensor) else TRTensor(factors)).to_tensor()


def _caps(shape):
    """The largest useful TT rank at each bond: the smaller side of that unfolding."""
    return [1] + [min(math.prod(shape[:k]), math.prod(shape[k:]))
                  for k in range(1, len(shape))] + [1]


def _check_rank(op, shape, rank, ring):
    n = len(shape)
    caps = _caps(shape)
    if isinstance(rank, int) and not isinstance(rank, bool):
        if rank < 1:
            raise ValueError(f"{op}: rank must be positive, got {rank}")
        if ring:
            return [rank] * (n + 1)
        return [min(rank, c) for c in caps]  # an int is a bound: capped where dims are small
    rank = list(rank)
    ends = rank[0] == rank[-1] if ring else rank[0] == rank[-1] == 1
    if len(rank) != n + 1 or not ends or any(not isinstance(r, int) or r < 1 for r in rank) \
            or (not ring and any(r > c for r, c in zip(rank, caps))):
        what = "rank[0] == rank[-1]" if ring else f"rank[0] == rank[-1] == 1 and rank <= {caps}"
        raise ValueError(f"{op}: rank must be an int or {n + 1} positive ints with {what} for "
                         f"a tensor of shape {tuple(shape)}, got {rank}")
    return rank


def _sweep(op, unfolding, shape, rank, first, svd, gen, strict):
    """The TT-SVD sweep from bond ``first``: split off one core per mode by truncated SVD."""
    factors = []
    for k in range(first, len(shape) - 1):
        unfolding = unfolding.reshape(rank[k] * shape[k], -1)
        r = min(rank[k + 1], *unfolding.shape)
        if strict and r < rank[k + 1]:
            shape_k = tuple(unfolding.shape)
            raise ValueError(f"{op}: rank[{k + 1}] = {rank[k + 1]} exceeds the {shape_k} "
                             "unfolding it is taken from")
        U, S, Vh = svd_interface(op, unfolding, r, svd, gen)
        rank[k + 1] = r
        factors.append(U.reshape(rank[k], shape[k], r))
        unfolding = S[:, None] * Vh
    return factors, unfolding


def tensor_train(tensor, rank, svd="truncated_svd", random_state=None):
    """Tensor-train decomposition of ``tensor (I_0, ..., I_{N-1})`` by TT-SVD.

    ``rank``: one int (a bound for every bond, capped where the dimensions are smaller) or
    ``N + 1`` ints ``(1, r_1, ..., r_{N-1}, 1)``. Returns a :class:`TTTensor` with cores
    ``(r_k, I_k, r_{k+1})``; error at most ``sqrt(sum of discarded sigma^2)``.
    Example: ``tt = tensor_train(X, rank=[1, 3, 3, 1]); tt.to_tensor()`` approximates ``X``.
    """
    op = "tensor_train"
    check_tensor(op, tensor, min_ndim=2, finite=True)
    shape = tuple(tensor.shape)
    strict = not isinstance(rank, int)  # an explicit list must be feasible as given
    rank = _check_rank(op, shape, rank, ring=False)
    # on the raw array: the sweep is not differentiated, and Tensor dispatch would dominate
    factors, last = _sweep(op, working(tensor)._data, shape, rank, 0, svd,
                           make_generator(random_state), strict)
    factors.append(last.reshape(last.shape[0], shape[-1], 1))
    return TTTensor([_make(f).to(tensor.dtype) for f in factors])


def _truncation_rank(s, max_rank, delta):
    """Smallest rank keeping ``sum of discarded s^2 <= delta^2``, capped at ``max_rank``."""
    tail = (s.flip(0) ** 2).cumsum(0).flip(0).tolist() + [0.0]  # tail[r] = sum_{i>=r} s_i^2
    r = next(r for r in range(1, len(tail)) if tail[r] <= delta ** 2)
    return max(1, min(r, max_rank))


def tt_round(tt, max_rank=None, tol=None):
    """TT rounding (Oseledets 2011, Alg. 2): orthogonalise right to left by QR, then truncate
    left to right by SVD to ranks at most ``max_rank`` (int or ``N + 1`` ints) and/or a
    relative error at most ``tol``. Returns a new :class:`TTTensor`; differentiable.

    Example: ``tt_round(tt, tol=1e-8)`` removes the redundant rank of a sum of TT tensors.
    """
    op = "tt_round"
    tt = tt if isinstance(tt, TTTensor) else TTTensor(tt)
    if max_rank is None and tol is None:
        raise ValueError(f"{op}: give max_rank, tol or both")
    n = len(tt.factors)
    if max_rank is None:
        max_rank = [math.inf] * (n + 1)
    elif isinstance(max_rank, int):
        max_rank = [max_rank] * (n + 1)
    if len(max_rank) != n + 1 or any(r < 1 for r in max_rank):
        raise ValueError(f"{op}: max_rank must be a positive int or {n + 1} of them, got "
                         f"{max_rank}")
    if tol is not None and not tol >= 0:
        raise ValueError(f"{op}: tol must be >= 0, got {tol}")
    cores = list(tt.factors)
    for k in range(n - 1, 0, -1):  # right-orthogonalise: the norm gathers in cores[0]
        r0, size, r1 = cores[k].shape
        q, r = qr(cores[k].reshape(r0, size * r1).mT)
        cores[k] = q.mT.reshape(-1, size, r1)
        cores[k - 1] = (cores[k - 1].reshape(-1, r0) @ r.mT).reshape(
            cores[k - 1].shape[0], cores[k - 1].shape[1], -1)
    delta = 0.0 if tol is None else tol * float(cores[0].norm()) / math.sqrt(max(n - 1, 1))
    for k in range(n - 1):
        r0, size, r1 = cores[k].shape
        U, S, Vh = svd_interface(op, cores[k].reshape(r0 * size, r1), None, "truncated_svd",
                                 None)
        with no_grad():
            keep = _truncation_rank(S, max_rank[k + 1], delta)
        cores[k] = U[:, :keep].reshape(r0, size, keep)
        nxt = cores[k + 1]
        cores[k + 1] = ((S[:keep].unsqueeze(1) * Vh[:keep]) @ nxt.reshape(nxt.shape[0], -1)
                        ).reshape(keep, nxt.shape[1], nxt.shape[2])
    return TTTensor(cores)


def tensor_ring(tensor, rank, mode=0, svd="truncated_svd", random_state=None):
    """Tensor-ring decomposition of ``tensor (I_0, ..., I_{N-1})`` by TR-SVD (Zhao et al. 2016,
    as TensorLy): the first split at mode ``mode`` takes rank ``r_mode * r_{mode+1}``.

    ``rank``: one int or ``N + 1`` ints with ``rank[0] == rank[-1]``. Returns a
    :class:`TRTensor` with cores ``(r_k, I_k, r_{k+1})``.
    Example: ``tr = tensor_ring(X, rank=[2, 3, 3, 2]); tr.to_tensor()`` approximates ``X``.
    """
    op = "tensor_ring"
    check_tensor(op, tensor, min_ndim=2, finite=True)
    n = tensor.ndim
    if not isinstance(mode, int) or not 0 <= mode < n:
        raise ValueError(f"{op}: mode must be an int in [0, {n - 1}], got {mode!r}")
    rank = _check_rank(op, tuple(tensor.shape), rank, ring=True)
    # roll the modes so that the first split is at ``mode``
    order = list(range(mode, n)) + list(range(mode))
    work = working(tensor).permute(*order)
    shape, rank = tuple(work.shape), [rank[i] for i in order] + [rank[mode]]
    unfolding = work._data.reshape(shape[0], -1)  # raw arrays, as in tensor_train
    if rank[0] * rank[1] > min(unfolding.shape):
        raise ValueError(f"{op}: rank[{mode}] * rank[{mode + 1}] = {rank[0] * rank[1]} "
                         f"exceeds the {tuple(unfolding.shape)} first unfolding; reduce "
                         "the ranks or choose another mode")
    gen = make_generator(random_state)
    U, S, Vh = svd_interface(op, unfolding, rank[0] * rank[1], svd, gen)
    first = U.reshape(shape[0], rank[0], rank[1]).transpose(1, 0, 2)
    unfolding = (S[:, None] * Vh).reshape(rank[0], rank[1], -1).transpose(1, 2, 0)
    factors, last = _sweep(op, unfolding, shape, rank, 1, svd, gen, strict=True)
    factors = [first] + factors + [last.reshape(last.shape[0], shape[-1], rank[0])]
    factors = factors[n - mode:] + factors[:n - mode] if mode else factors
    xp = array_module(unfolding)
    return TRTensor([_make(xp.ascontiguousarray(f)).to(tensor.dtype) for f in factors])


def _ring_unfolding(xp, data, k):
    """``X`` with its modes rolled to ``k, k+1, ..., k-1`` and unfolded ``(I_k, rest)``."""
    n = data.ndim
    order = list(range(k, n)) + list(range(k))
    return xp.ascontiguousarray(data.transpose(order)).reshape(data.shape[k], -1)


def _ring_design(cores, k):
    """The subchain of every core but ``k`` as the ``(rest, r_k * r_{k+1})`` design matrix of
    core ``k``'s least-squares problem (rest in the order of :func:`_ring_unfolding`)."""
    n = len(cores)
    chain = cores[(k + 1) % n]
    for j in range(2, n):
        nxt = cores[(k + j) % n]
        chain = (chain.reshape(-1, chain.shape[-1]) @ nxt.reshape(nxt.shape[0], -1)
                 ).reshape(chain.shape[0], -1, nxt.shape[-1])
    # chain (r_{k+1}, rest, r_k) -> (rest, r_k, r_{k+1})
    return chain.transpose(1, 2, 0).reshape(chain.shape[1], -1)


def tensor_ring_als(tensor, rank, n_iter_max=100, tol=1e-6, init=None, random_state=None,
                    return_errors=False):
    """Tensor-ring decomposition of ``tensor (I_0, ..., I_{N-1})`` by alternating least
    squares (Zhao et al. 2016, Alg. 2; TensorLy's ``tensor_ring_als``): each sweep solves for
    one core at a time with the others fixed, by least squares against the product of the
    others (minimum-norm, so ranks above what the data need are harmless).

    ``rank``: one int or ``N + 1`` ints with ``rank[0] == rank[-1]`` (``rank[0] == 1`` closes
    the ring into a tensor train). ``init``: None (normal cores, seeded by ``random_state``)
    or a :class:`TRTensor` / list of cores of those ranks to start from (a warm start). Stops
    when the relative error decreases by less than ``tol`` in a sweep. Returns a
    :class:`TRTensor` with cores ``(r_k, I_k, r_{k+1})`` (and the relative error after each
    sweep with ``return_errors``).

    Example: ``tr = tensor_ring_als(X, rank=[2, 3, 3, 2], random_state=0)``;
    ``tr.to_tensor()`` approximates ``X``.
    """
    op = "tensor_ring_als"
    check_tensor(op, tensor, min_ndim=2, finite=True)
    shape, n = tuple(tensor.shape), tensor.ndim
    rank = _check_rank(op, shape, rank, ring=True)
    if not isinstance(n_iter_max, int) or n_iter_max < 1:
        raise ValueError(f"{op}: n_iter_max must be a positive int, got {n_iter_max!r}")
    work = working(tensor)
    data = work._data
    xp = array_module(data)
    if init is None:
        gen = make_generator(random_state)
        cores = [random_like((rank[k], shape[k], rank[k + 1]), data, gen) for k in range(n)]
    else:
        given = init if isinstance(init, TRTensor) else TRTensor(init)
        if given.shape != shape or list(given.rank) != rank:
            raise ValueError(f"{op}: init must have shape {shape} and ranks {rank}, got shape "
                             f"{given.shape} and ranks {list(given.rank)}")
        cores = [working(f).to(device=work.device)._data.copy() for f in given.factors]
    norm_x = max(_fro(data), 1e-300)
    unfoldings = [_ring_unfolding(xp, data, k) for k in range(n)]  # fixed: computed once
    errors = []
    for _ in range(n_iter_max):
        for k in range(n):
            design = _ring_design(cores, k)
            sol = xp.linalg.lstsq(design, unfoldings[k].T, rcond=None)[0]
            cores[k] = xp.ascontiguousarray(
                sol.reshape(rank[k], rank[k + 1], shape[k]).transpose(0, 2, 1))
        # the last solve's residual is the whole tensor's error: no reconstruction needed
        errors.append(_fro(design @ sol - unfoldings[n - 1].T) / norm_x)
        if len(errors) > 1 and errors[-2] - errors[-1] < tol:
            break
    result = TRTensor([_make(c).to(tensor.dtype) for c in cores])
    return (result, errors) if return_errors else result
