"""Tensor-network structure search over tensor rings: which bond ranks (and, optionally, which
order of the modes around the ring) represent a tensor in the fewest parameters for the error.

* :func:`greedy_rank_search`: greedy rank growth (Hashemizadeh, Liu, Miller & Rabusseau,
  "Adaptive tensor learning with tensor networks", 2020): from all ranks 1, try raising each
  bond by one (a warm-started fit each), keep the bond that lowers the error most, refit, and
  stop at the error target.
* :func:`tnale`: alternating local enumeration (Li, Zeng, Tao, Zhao & Yokota, "Alternating
  local enumeration (TnALE): solving tensor network structure search with fewer evaluations",
  ICML 2023): one structure variable at a time (a bond rank, or the mode order), every value in
  a radius around the current one is fitted and scored, the best is kept; rounds repeat until
  none improves. The score is TNLS/TnALE's ``size / numel + lam * relative error``.

A ring whose closing bond ``rank[0]`` is 1 is a tensor train, so one search covers TR and TT
(``topology="tt"`` pins that bond to 1). Each candidate is fitted by TR-ALS
(:func:`tensorix.decomp.tensor_ring_als`), warm-started from the current network with the one
bond padded or truncated by SVD, so that a step costs a few sweeps rather than a fresh fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..decomp._base import check_tensor, make_generator
from ..decomp._tt import TRTensor, tensor_ring_als
from ..linalg import svd
from ..ops.random import randn
from ..ops.shape import cat

__all__ = ["StructureSearchResult", "greedy_rank_search", "tnale"]


@dataclass
class StructureSearchResult:
    """What a structure search found: ``network`` is a :class:`~tensorix.decomp.TRTensor` of
    ``tensor.permute(order)`` with bond ranks ``ranks`` (``ranks[0]`` closes the ring: 1 means
    a tensor train); ``error`` its relative error, ``size`` its parameter count,
    ``compression`` the dense size over ``size``; ``history`` one ``(ranks, order, error,
    size, score)`` per fitted candidate, in the order they were fitted.

    Example: ``res.to_tensor()`` approximates the searched tensor in its own mode order.
    """

    network: TRTensor
    ranks: tuple
    order: tuple
    error: float
    size: int
    compression: float
    score: float
    history: list = field(default_factory=list, repr=False)

    def to_tensor(self):
        """The network's full tensor in the input's mode order ``(I_0, ..., I_{N-1})``."""
        full = self.network.to_tensor()
        inverse = sorted(range(len(self.order)), key=self.order.__getitem__)
        return full.permute(*inverse)


class _Search:
    """The shared state of both searches: the target, the fit, the memo of fitted
    structures (a structure is never fitted twice) and the history."""

    def __init__(self, op, tensor, topology, lam, n_iter, tol, max_rank, random_state):
        check_tensor(op, tensor, min_ndim=2, finite=True)
        if topology not in ("tr", "tt"):
            raise ValueError(f"{op}: topology must be 'tr' or 'tt', got {topology!r}")
        for name, value in (("n_iter", n_iter), ("max_rank", max_rank)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{op}: {name} must be a positive int, got {value!r}")
        if not lam > 0:
            raise ValueError(f"{op}: lam must be > 0, got {lam!r}")
        self.op, self.tensor, self.ring = op, tensor, topology == "tr"
        self.lam, self.n_iter, self.tol, self.max_rank = lam, n_iter, tol, max_rank
        self.gen = make_generator(random_state)
        self.numel = tensor.numel()
        self.memo, self.history = {}, []

    def size(self, ranks, order):
        shape = [self.tensor.shape[m] for m in order]
        return sum(ranks[k] * shape[k] * ranks[(k + 1) % len(shape)] for k in range(len(shape)))

    def score(self, error, size):
        return size / self.numel + self.lam * error

    def fit(self, ranks, order, start=None):
        """``(network, error)`` of the ring with ``ranks`` over ``order``, warm-started from
        ``start`` (cores of those ranks) when given; memoised."""
        key = (tuple(ranks), tuple(order))
        if key not in self.memo:
            target = self.tensor.permute(*order)
            net, errors = tensor_ring_als(target, list(ranks) + [ranks[0]], self.n_iter,
                                          self.tol, init=start, random_state=self.gen,
                                          return_errors=True)
            size = self.size(ranks, order)
            self.memo[key] = (net, errors[-1])
            self.history.append((key[0], key[1], errors[-1], size,
                                 self.score(errors[-1], size)))
        return self.memo[key]

    def result(self, ranks, order):
        net, error = self.memo[(tuple(ranks), tuple(order))]
        size = self.size(ranks, order)
        return StructureSearchResult(net, tuple(ranks), tuple(order), error, size,
                                     self.numel / size, self.score(error, size), self.history)

    def resized(self, net, bond, r):
        """``net``'s cores with bond ``bond`` (between cores ``bond - 1`` and ``bond``) set to
        rank ``r``: padded with small noise (ALS fills it in) or cut by an SVD of the two
        cores it joins (the best approximation of their product at that rank)."""
        cores = list(net.factors)
        left, right = cores[bond - 1], cores[bond]
        old = right.shape[0]
        if r > old:
            scale = 1e-3 * float(right.abs().max())
            pad_l = scale * randn(left.shape[0], left.shape[1], r - old, generator=self.gen,
                                  dtype=left.dtype).to(left.device)
            pad_r = scale * randn(r - old, right.shape[1], right.shape[2], generator=self.gen,
                                  dtype=right.dtype).to(right.device)
            cores[bond - 1], cores[bond] = cat([left, pad_l], 2), cat([right, pad_r], 0)
        else:
            merged = left.reshape(-1, old) @ right.reshape(old, -1)
            U, S, Vh = svd(merged, full_matrices=False)
            root = S[:r].sqrt()
            cores[bond - 1] = (U[:, :r] * root).reshape(left.shape[0], left.shape[1], r)
            cores[bond] = (root.unsqueeze(1) * Vh[:r]).reshape(r, right.shape[1],
                                                              right.shape[2])
        return cores

    def pinned(self, bond):
        return bond == 0 and not self.ring


def _check_order(op, order, n):
    order = tuple(range(n)) if order is None else tuple(order)
    if sorted(order) != list(range(n)):
        raise ValueError(f"{op}: order must be a permutation of range({n}), got {order}")
    return order


def greedy_rank_search(tensor, tol=1e-6, max_rank=8, max_size=None, topology="tr", order=None,
                       n_iter=50, fit_tol=1e-10, lam=1.0, random_state=None):
    """Greedy rank growth for a tensor ring of ``tensor (I_0, ..., I_{N-1})`` (Hashemizadeh et
    al. 2020): start from all ranks 1; at each step fit every network with one bond raised by
    one (warm-started), keep the one with the lowest error, and stop once the relative error
    is at most ``tol``, or no bond can grow (``max_rank``; ``max_size`` parameters).

    ``topology``: ``"tr"`` (every bond may grow) or ``"tt"`` (the closing bond stays 1).
    ``order``: the modes' order around the ring (default: as given). ``n_iter``/``fit_tol``:
    TR-ALS sweeps and stopping tolerance per candidate. ``lam`` only weighs the reported
    ``score``. Returns a :class:`StructureSearchResult` (deterministic for an int
    ``random_state``).

    Example::

        res = greedy_rank_search(X, tol=1e-6, random_state=0)
        res.ranks, res.error, res.compression   # e.g. (1, 2, 3, 2), 3e-9, 12.5
    """
    op = "greedy_rank_search"
    search = _Search(op, tensor, topology, lam, n_iter, fit_tol, max_rank, random_state)
    order = _check_order(op, order, tensor.ndim)
    if not tol >= 0:
        raise ValueError(f"{op}: tol must be >= 0, got {tol!r}")
    n = tensor.ndim
    ranks = [1] * n
    net, error = search.fit(ranks, order)
    while error > tol:
        best = None
        for bond in range(n):
            if search.pinned(bond) or ranks[bond] >= max_rank:
                continue
            trial = ranks[:bond] + [ranks[bond] + 1] + ranks[bond + 1:]
            if max_size is not None and search.size(trial, order) > max_size:
                continue
            cand, cand_error = search.fit(trial, order, search.resized(net, bond, trial[bond]))
            # the largest decrease; a tie goes to the bond that adds fewer parameters
            key = (cand_error, search.size(trial, order))
            if best is None or key < best[0]:
                best = (key, trial, cand, cand_error)
        if best is None:
            break
        _, ranks, net, error = best
    return search.result(ranks, order)


def tnale(tensor, ranks=None, start=None, lam=1.0, radius=2, n_rounds=10, search_order=False,
          max_rank=8, topology="tr", order=None, n_iter=50, fit_tol=1e-10, random_state=None):
    """Tensor-network structure search by alternating local enumeration (TnALE, Li et al.
    2023) over the bond ranks of a tensor ring of ``tensor (I_0, ..., I_{N-1})`` and, with
    ``search_order``, the order of its modes around the ring.

    Minimises ``score = size / numel + lam * relative error``: in each round, for each bond
    in turn, every rank within ``radius`` of the current one (in ``[1, max_rank]``) is fitted
    warm-started and the best score is kept; with ``search_order``, every swap of two modes is
    then tried (each a fresh fit). The radius falls to 1 after the first round (the paper's
    coarse-then-fine schedule); the search stops after a round without improvement, or
    ``n_rounds``. ``ranks``: the start (``N`` ints, ``ranks[k]`` the bond entering core ``k``,
    ``ranks[0]`` closing the ring; default all 2, or a greedy result's ``ranks``).
    ``start``: a :class:`StructureSearchResult` (e.g. :func:`greedy_rank_search`'s) to begin
    from, its network as the warm start (its ranks and order replace ``ranks``/``order``).
    ``topology="tt"`` pins ``ranks[0]`` to 1. Returns a :class:`StructureSearchResult`.

    Example::

        res = tnale(X, lam=1.0, random_state=0)
        res.ranks, res.error, res.size
    """
    op = "tnale"
    search = _Search(op, tensor, topology, lam, n_iter, fit_tol, max_rank, random_state)
    if start is not None:
        if not isinstance(start, StructureSearchResult) or \
                start.network.shape != tuple(tensor.permute(*start.order).shape):
            raise ValueError(f"{op}: start must be a StructureSearchResult of this tensor, got "
                             f"{start!r}")
        ranks, order = start.ranks, start.order
    order = list(_check_order(op, order, tensor.ndim))
    n = tensor.ndim
    for name, value in (("radius", radius), ("n_rounds", n_rounds)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{op}: {name} must be a positive int, got {value!r}")
    if ranks is None:
        ranks = [min(2, max_rank)] * n
    ranks = list(ranks)
    if len(ranks) != n or any(not isinstance(r, int) or not 1 <= r <= max_rank for r in ranks):
        raise ValueError(f"{op}: ranks must be {n} ints in [1, max_rank={max_rank}], got "
                         f"{ranks}")
    if not search.ring:
        if start is not None and ranks[0] != 1:
            raise ValueError(f"{op}: topology='tt' needs a start whose closing bond is 1, got "
                             f"ranks {tuple(ranks)}")
        ranks[0] = 1
    state = _State(search, ranks, order, None if start is None else start.network)
    for _ in range(n_rounds):
        improved = False
        for bond in range(n):
            improved |= state.enumerate_bond(bond, radius)
        if search_order:
            improved |= state.enumerate_order()
        if not improved:
            break
        radius = 1
    return search.result(state.ranks, state.order)


class _State:
    """TnALE's current point (ranks, order, fitted network, score) and its two local moves."""

    def __init__(self, search, ranks, order, network):
        self.search, self.ranks, self.order = search, ranks, order
        self.net, error = search.fit(ranks, order, network)
        self.best = search.score(error, search.size(ranks, order))

    def _try(self, ranks, order, start):
        """Fit a candidate; move to it when it scores better. Returns whether it moved."""
        net, error = self.search.fit(ranks, order, start)
        score = self.search.score(error, self.search.size(ranks, order))
        if score < self.best:
            self.best, self.candidate = score, (ranks, order, net)
            return True
        return False

    def enumerate_bond(self, bond, radius):
        """Every rank of ``bond`` within ``radius`` (warm-started from the current network);
        the best is taken after all are scored, as TnALE's enumeration does."""
        if self.search.pinned(bond):
            return False
        moved = False
        r0 = self.ranks[bond]
        for r in range(max(1, r0 - radius), min(self.search.max_rank, r0 + radius) + 1):
            if r != r0:
                trial = self.ranks[:bond] + [r] + self.ranks[bond + 1:]
                moved |= self._try(trial, self.order, self.search.resized(self.net, bond, r))
        if moved:
            self.ranks, self.order, self.net = self.candidate
        return moved

    def enumerate_order(self):
        """Every swap of two modes around the ring (fresh fits: the cores do not carry over)."""
        moved = False
        n = len(self.order)
        base = list(self.order)
        for i in range(n):
            for j in range(i + 1, n):
                trial = list(base)
                trial[i], trial[j] = trial[j], trial[i]
                moved |= self._try(self.ranks, trial, None)
        if moved:
            self.ranks, self.order, self.net = self.candidate
        return moved
