"""Helpers the structured layers share: factorizing a dimension into modes, TT-matrix rank
checks and initialisation scales, parameter counts."""

from __future__ import annotations

import math

from ...nn import init
from ...nn.layers._util import new_param


def prime_factors(n):
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out + ([n] if n > 1 else [])


def factorize(n, d):
    """``n`` as ``d`` factors as equal as possible (largest prime first into the smallest
    bucket; t3nsor's ``auto_shape`` rule): ``factorize(784, 3) == (7, 14, 8)`` up to order,
    returned descending. Example: ``factorize(1024, 2) == (32, 32)``."""
    buckets = [1] * d
    for p in sorted(prime_factors(n), reverse=True):
        buckets[buckets.index(min(buckets))] *= p
    return tuple(sorted(buckets, reverse=True))


def modes_for(op, arg, size, modes, d):
    """The ``d`` mode sizes of ``arg`` (a dimension of ``size``): given ones must multiply to
    ``size``; None factorizes ``size``."""
    if modes is None:
        return factorize(size, d)
    modes = tuple(int(m) for m in modes)
    if len(modes) != d or any(m < 1 for m in modes) or math.prod(modes) != size:
        raise ValueError(f"{op}: {arg} must be {d} positive ints whose product is {size}, "
                         f"got {modes}")
    return modes


def tt_matrix_ranks(op, row_modes, col_modes, rank):
    """Bond ranks ``(1, r_1, ..., r_{d-1}, 1)`` of a TT-matrix with cores
    ``(r_k, row_k, col_k, r_{k+1})``. An int is a bound (capped where the unfolding is
    smaller, as ``tensor_train``); an explicit list must be feasible as given."""
    sizes = [m * n for m, n in zip(row_modes, col_modes)]
    d = len(sizes)
    caps = [1] + [min(math.prod(sizes[:k]), math.prod(sizes[k:])) for k in range(1, d)] + [1]
    if isinstance(rank, int) and not isinstance(rank, bool):
        if rank < 1:
            raise ValueError(f"{op}: rank must be positive, got {rank}")
        return [min(rank, c) for c in caps]
    rank = [int(r) for r in rank]
    if len(rank) != d + 1 or rank[0] != 1 or rank[-1] != 1 or any(r < 1 for r in rank):
        raise ValueError(f"{op}: rank must be an int or {d + 1} positive ints starting and "
                         f"ending with 1, got {rank}")
    for k, (r, c) in enumerate(zip(rank, caps)):
        if r > c:
            raise ValueError(f"{op}: rank[{k}] = {r} exceeds {c}, the most that bond allows "
                             f"for modes {tuple(row_modes)} x {tuple(col_modes)}")
    return rank


def scaled_normal_(factors, variance, terms):
    """Fill ``factors`` N(0, std^2) so that the dense tensor they multiply out to has entry
    ``variance``: an entry is a sum of ``terms`` products of one entry of each factor, so
    ``variance = terms * std^(2 * len(factors))`` (Novikov et al. 2015 initialise TT cores so)."""
    std = (variance / terms) ** (1 / (2 * len(factors)))
    for f in factors:
        init.normal_(f, 0.0, std)


def tt_matrix_cores(row_modes, col_modes, ranks, variance, device=None, dtype=None):
    """Parameters for TT-matrix cores ``(r_k, row_k, col_k, r_k+1)`` whose full matrix has
    entry ``variance`` (an entry sums ``prod(ranks)`` products of ``d`` core entries)."""
    cores = [new_param(ranks[k], row_modes[k], col_modes[k], ranks[k + 1], device=device,
                       dtype=dtype) for k in range(len(row_modes))]
    scaled_normal_(cores, variance, math.prod(ranks))
    return cores


def check_features(op, input, features):
    """Raise unless ``input`` has shape ``(*, features)``."""
    if not input.ndim or input.shape[-1] != features:
        raise ValueError(f"{op}: expected input of shape (*, {features}), got "
                         f"{tuple(input.shape)}")

