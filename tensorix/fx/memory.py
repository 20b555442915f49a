"""Memory planning: lifetimes of a schedule's values and a buffer assignment that reuses the
buffer of a value that died, reporting peak bytes with and without reuse.

Views (reshape, permute, expand, ...) allocate nothing: they extend the life of the buffer
they look into. Inputs, parameters and constants are not the plan's to place.

Example::

    plan = plan_memory(graph.nodes)
    print(plan)     # MemoryPlan(values=40, buffers=9, peak=1.2 MB, no_reuse=6.1 MB)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["MemoryPlan", "plan_memory", "last_uses", "best_fit"]


def _nbytes(meta) -> int:
    shape, dtype = meta.get("shape"), meta.get("dtype")
    if shape is None or dtype is None or any(not isinstance(d, int) for d in shape):
        return 0
    return math.prod(shape) * dtype.itemsize


@dataclass
class MemoryPlan:
    """``buffer_of[node]``: the buffer index a value lives in; ``sizes``: bytes per buffer;
    ``peak_bytes``: most bytes live at once; ``no_reuse_bytes``: one buffer per value."""

    buffer_of: dict = field(default_factory=dict)
    sizes: list = field(default_factory=list)
    peak_bytes: int = 0
    no_reuse_bytes: int = 0

    @property
    def planned_bytes(self) -> int:
        return sum(self.sizes)

    def __repr__(self):
        mb = 1 / 1e6
        return (f"MemoryPlan(values={len(self.buffer_of)}, buffers={len(self.sizes)}, "
                f"peak={self.peak_bytes * mb:.3g} MB, planned={self.planned_bytes * mb:.3g} "
                f"MB, no_reuse={self.no_reuse_bytes * mb:.3g} MB)")


def last_uses(steps, reads, outputs=()) -> dict:
    """``{value: index of the last step reading it}`` for ``steps`` where ``reads(step)``
    lists the values a step reads; ``outputs`` live to the end."""
    last = {}
    for i, step in enumerate(steps):
        for v in reads(step):
            last[v] = i
    for v in outputs:
        last[v] = len(steps)
    return last


def _is_view(node) -> bool:
    return node.is_call and getattr(node.op, "_view", False) or node.op == "getitem"


def plan_memory(nodes) -> MemoryPlan:
    """Greedy best-fit assignment over ``nodes`` in program order (a graph's nodes)."""
    nodes = [n for n in nodes if n.op != "output"]
    owner = {}  # view -> the node whose buffer it reads
    for n in nodes:
        if _is_view(n) and n.inputs:
            src = n.inputs[0]
            owner[n] = owner.get(src, src)
    index = {n: i for i, n in enumerate(nodes)}
    end = {}
    for n in nodes:
        for u in n.users:
            key = owner.get(n, n)
            end[key] = max(end.get(key, 0), index.get(u, len(nodes)))
    steps = [n for n in nodes if n.is_call and n not in owner]
    return best_fit(steps, lambda n: _nbytes(n.meta),
                    {n: end.get(n, index[n]) for n in steps}, index)


def best_fit(values, size_of, end, position=None) -> MemoryPlan:
    """Place ``values`` (in schedule order) in buffers, best fit: a value takes the smallest
    free buffer that holds it, and its buffer is free again after step ``end[value]`` (the
    last step reading it; ``position[value]`` is the value's own step, its index in
    ``values`` when not given). Used by :func:`plan_memory` and by the AOT C generator,
    which places only the values it materializes."""
    plan = MemoryPlan()
    free: list = []  # (size, buffer index)
    live = 0
    dying: dict = {}
    by_step = {}
    for i, n in enumerate(values):
        by_step.setdefault(position[n] if position else i, []).append(n)
    for step in sorted(set(by_step) | set(end.values())):
        for n in by_step.get(step, ()):
            size = size_of(n)
            plan.no_reuse_bytes += size
            fit = [f for f in free if f[0] >= size]
            if fit:
                best = min(fit)
                free.remove(best)
                buf = best[1]
            else:
                buf = len(plan.sizes)
                plan.sizes.append(size)
            plan.buffer_of[n] = buf
            live += size
            plan.peak_bytes = max(plan.peak_bytes, live)
            dying.setdefault(max(end.get(n, step), step), []).append(n)
        for d in dying.pop(step, ()):
            live -= size_of(d)
            free.append((plan.sizes[plan.buffer_of[d]], plan.buffer_of[d]))
    return plan
