"""Distributed matrix optimizers (Canzona-style): the per-matrix work of Muon, Shampoo and SOAP
(Newton-Schulz iterations, preconditioner roots and rotations) split over the ranks.

Every rank holds all parameters and the same (averaged) gradients. The matrices are assigned
to ranks whole, by a balanced partition of their estimated cost (longest processing time
first: the costliest matrix to the least loaded rank), not of their size: a 4096 x 64 matrix
and a 512 x 512 one have the same size but Newton-Schulz on the first costs 1/12 as much. Each
rank runs the wrapped optimizer on its matrices only (their state lives there alone), then one
all-gather of the packed updated matrices gives every rank every new value. The update of each
matrix is the wrapped optimizer's own, so the weights equal a single-process run's exactly.
"""

from __future__ import annotations

import numpy as np

from ... import backend
from ...tensor import _make
from .. import _collectives
from .zero import ZeroRedundancyOptimizer

__all__ = ["DistributedMatrixOptimizer", "balanced_partition", "matrix_cost"]


def matrix_cost(shape, optimizer_class, **options) -> float:
    """Estimated flops of one update of a parameter of ``shape`` by ``optimizer_class``:
    Muon's Newton-Schulz on the short side ``s`` and long side ``l`` (``ns_steps`` x
    ``4 s^2 l + 2 s^3``), Shampoo's and SOAP's products (``~4 m n (m + n)``) plus their
    eigendecompositions (``~10 (m^3 + n^3)`` every ``precondition_frequency`` steps);
    anything else, or a non-matrix, its number of elements.

    Example: ``matrix_cost((4096, 64), Muon) < matrix_cost((512, 512), Muon)``."""
    name = getattr(optimizer_class, "__name__", "")
    if len(shape) != 2:
        return float(np.prod(shape, dtype=np.float64))
    m, n = (float(s) for s in shape)
    if name == "Muon":
        s, l_ = min(m, n), max(m, n)
        return options.get("ns_steps", 5) * (4 * s * s * l_ + 2 * s ** 3)
    if name in ("Shampoo", "SOAP"):
        freq = max(1, int(options.get("precondition_frequency", 1 if name == "Shampoo"
                                      else 10)))
        return 4 * m * n * (m + n) + 10 * (m ** 3 + n ** 3) / freq
    return m * n


def balanced_partition(costs, world: int) -> list:
    """Owner rank of each item: longest processing time first (the costliest item to the
    least loaded rank; ties to the lowest rank), a 4/3-approximation of the best makespan.
    Example: ``balanced_partition([5, 4, 3, 3, 3], 2) == [0, 1, 1, 0, 1]``."""
    load, owner = [0.0] * world, [0] * len(costs)
    for i in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        r = min(range(world), key=lambda r: (load[r], r))
        owner[i] = r
        load[r] += costs[i]
    return owner


class DistributedMatrixOptimizer(ZeroRedundancyOptimizer):
    """Split ``optimizer_class``'s per-matrix work (Muon, Shampoo, SOAP) over the ranks of
    ``process_group``, balanced by :func:`matrix_cost`; every rank ends each step with every
    updated parameter (one all-gather). ``loads``: the estimated cost per rank.

    Example (``tensorix run -n 4 train.py``; gradients equal on all ranks, e.g. after DDP)::

        opt = DistributedMatrixOptimizer([l.weight for l in linears], tensorix.optim.Muon,
                                         lr=0.02)
        loss.backward(); opt.step()     # each rank orthogonalises about 1/4 of the work
    """

    def _partition(self, params):
        costs = [matrix_cost(tuple(p.shape), self.optimizer_class, **self.defaults)
                 for p in params]
        owner = balanced_partition(costs, self.world)
        self.loads = [sum(c for c, o in zip(costs, owner) if o == r) for r in range(self.world)]
        return {id(p): r for p, r in zip(params, owner)}

    def _share(self):
        """All-gather everyone's new values (per dtype, each rank's part packed and padded to
        the longest)."""
        params = [p for gr in self.param_groups for p in gr["params"]]
        for dtype in dict.fromkeys(p._data.dtype for p in params):
            self._gather([p for p in params if p._data.dtype == dtype], dtype)

    def _gather(self, params, dtype):
        by_rank = [[p for p in params if self._owner[id(p)] == r] for r in range(self.world)]
        longest = max(sum(p.numel() for p in ps) for ps in by_rank)
        if longest == 0:
            return
        send = np.zeros(longest, dtype)
        at = 0
        for p in by_rank[self.rank]:
            send[at:at + p.numel()] = backend.to_device(p._data, backend.cpu).reshape(-1)
            at += p.numel()
        got = np.empty(self.world * longest, dtype)
        _collectives.all_gather_into_tensor(_make(got), _make(send), self.process_group)
        for r, ps in enumerate(by_rank):
            at = r * longest
            for p in ps:
                if r != self.rank:
                    p._data[...] = backend.to_device(
                        got[at:at + p.numel()].reshape(p._data.shape),
                        backend.get_device(p._data))
                    p._version[0] += 1
                at += p.numel()

    def __repr__(self):
        return (f"DistributedMatrixOptimizer(rank={self.rank}/{self.world}, "
                f"{self.optimizer_class.__name__}, loads={[f'{x:.3g}' for x in self.loads]})")
