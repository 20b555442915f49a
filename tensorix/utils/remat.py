"""A rematerialization planner for a chain of layers: what to recompute under a memory budget.

``profile(layers, x)`` runs the chain once and measures, per layer, the bytes its ops save for
backward (through autograd.graph.saved_tensors_hooks; parameters and repeats not counted), the
bytes of its output and of its parameters' gradients, and its forward time. ``plan(profile,
budget)`` then cuts the chain into segments, each either kept (its saved tensors stay: no
recomputation) or checkpointed (only its input stays; its forward runs again in backward).

The peak is estimated by following backward through the chain: while backward is in a
segment, memory holds what the segments before it keep, the segment's saved tensors
(recomputed, plus its input, if checkpointed), the parameter gradients made so far and the
incoming gradient; at the end of forward, everything the segments keep. The plan is the one
with the least recomputation time whose peak fits: a dynamic program over the cut points that
keeps the (bytes kept, time) pairs no other pair beats. ``run(layers, plan, x)`` executes it
with ``tensorix.utils.checkpoint``. ``sqrt_plan`` is the classic alternative: sqrt(n) equal
segments, all checkpointed but the last.

Example::

    prof = profile(list(model), x)
    p = plan(prof, budget=prof.total_saved // 3)
    y = run(list(model), p, x)              # then y.sum().backward()
"""

from __future__ import annotations

import dataclasses
import math
import time

from ..autograd.graph import saved_tensors_hooks
from .checkpoint import checkpoint
from .remat_graph import (  # general module graphs, at submodule granularity
    CheckpointWrapper,
    ModulePlan,
    ModuleProfile,
    _pareto,
    apply,
    plan_module,
    profile_module,
)

__all__ = ["Profile", "Plan", "profile", "plan", "sqrt_plan", "run"]


@dataclasses.dataclass
class Profile:
    """Per layer: bytes saved for backward, output bytes, forward seconds, parameter-gradient
    bytes; and the input's bytes."""
    saved: list
    output: list
    seconds: list
    input_bytes: int
    params: list  # bytes of the gradients of each layer's parameters (made during backward)

    @property
    def total_saved(self) -> int:
        return sum(self.saved)


@dataclasses.dataclass
class Plan:
    """Segments ``(start, end, checkpointed)`` covering the chain, with the estimated peak
    bytes and recomputation seconds."""
    segments: list
    peak: int
    recompute_seconds: float

    def __str__(self):
        parts = [f"[{a}:{b}]{'*' if c else ''}" for a, b, c in self.segments]
        return (f"{' '.join(parts)}  (* recomputed; estimated peak {self.peak / 2**20:.1f} "
                f"MiB, recompute {self.recompute_seconds * 1e3:.1f} ms)")


def profile(layers, x, repeat=1, grads_allocated=False) -> Profile:
    """Run ``layers`` (a list of callables applied in turn) on ``x`` with grad on: once to
    count what each saves, ``repeat`` times more to time it (the fastest run counts). With
    ``grads_allocated`` (``zero_grad(set_to_none=False)`` training) the parameter gradients
    exist before backward, so they add nothing to its peak."""
    saved, output, seconds, seen = [], [], [], set()
    input_bytes = x.numel() * x.element_size()
    for layer in layers:
        nbytes = [0]

        def pack(t, nbytes=nbytes):
            # parameters are held anyway, and an activation saved twice (by the last op of
            # one layer and the first of the next) counts once
            key = t.data_ptr()
            if not (t.is_leaf and t.requires_grad) and key not in seen:
                seen.add(key)
                nbytes[0] += t.numel() * t.element_size()
            return t

        with saved_tensors_hooks(pack, lambda t: t):
            y = layer(x)
        best = math.inf
        for _ in range(repeat):  # timed without the hooks
            start = time.perf_counter()
            layer(x)
            best = min(best, time.perf_counter() - start)
        saved.append(nbytes[0])
        output.append(y.numel() * y.element_size())
        seconds.append(best)
        x = y
    params = [0 if grads_allocated or not hasattr(layer, "parameters") else
              sum(p.numel() * p.element_size() for p in layer.parameters() if p.requires_grad)
              for layer in layers]
    return Profile(saved, output, seconds, input_bytes, params)


def _segment_cost(prof, a, b):
    return sum(prof.saved[a:b]), sum(prof.seconds[a:b])


def _needs(prof, before, a, b, checkpointed):
    """The most bytes held while backward runs through segment [a, b), layer by layer from the
    last: what the segments before it keep, the saved tensors of its layers not yet done
    (all recomputed at once, plus its input, if checkpointed), the parameter gradients made so
    far and the incoming gradient."""
    base = before + (_inputs(prof)[a] if checkpointed else 0)
    return max(base + sum(prof.saved[a:l + 1]) + sum(prof.params[l:]) + prof.output[l]
               for l in range(a, b))


def _inputs(prof):
    return [prof.input_bytes] + prof.output[:-1]  # what a checkpointed segment keeps


def _keeps(prof, a, b, checkpointed):
    """Bytes segment [a, b) holds from its forward until its backward."""
    return _inputs(prof)[a] if checkpointed else sum(prof.saved[a:b])


def _peak(prof, segs):
    before, peak = 0, 0
    for a, b, c in segs:
        peak = max(peak, _needs(prof, before, a, b, c))
        before += _keeps(prof, a, b, c)
    return max(peak, before)


def plan(prof: Profile, budget: int) -> Plan:
    """The segmentation with the least recomputation whose estimated peak fits ``budget``
    (raises ValueError if even checkpointing everything does not fit)."""
    n = len(prof.saved)
    # front[i]: the (bytes kept, seconds recomputed, segments) of the first i layers that no
    # other choice beats on both counts, each within the budget so far
    front = [[(0, 0.0, ())]] + [[] for _ in range(n)]
    for i in range(n):
        front[i] = _pareto(front[i])
        for kept, sec, segs in front[i]:
            for j in range(i + 1, n + 1):
                for c in (False, True):
                    if _needs(prof, kept, i, j, c) <= budget:
                        front[j].append((kept + _keeps(prof, i, j, c),
                                         sec + (sum(prof.seconds[i:j]) if c else 0.0),
                                         segs + ((i, j, c),)))
    done = [f for f in _pareto(front[n]) if f[0] <= budget]
    if not done:
        raise ValueError(f"remat.plan(): no plan fits {budget} bytes (checkpointing every layer "
                         f"needs about {_peak(prof, [(i, i + 1, True) for i in range(n)])})")
    kept, sec, segs = min(done, key=lambda f: (f[1], f[0]))
    segs = list(_merge(segs))
    return Plan(segs, _peak(prof, segs), sec)


def _merge(segs):
    """Adjacent kept segments as one."""
    out = []
    for a, b, c in segs:
        if out and not c and not out[-1][2]:
            out[-1] = (out[-1][0], b, False)
        else:
            out.append((a, b, c))
    return out


def sqrt_plan(prof: Profile) -> Plan:
    """sqrt(n) equal segments, all but the last checkpointed (checkpoint_sequential's rule),
    with the same estimates as ``plan``."""
    n = len(prof.saved)
    k = max(1, round(math.sqrt(n)))
    size = n // k
    segs = [(i * size, (i + 1) * size, True) for i in range(k - 1)] + \
        [((k - 1) * size, n, False)]
    return Plan(segs, _peak(prof, segs), sum(sum(prof.seconds[a:b]) for a, b, c in segs if c))


def run(layers, p: Plan, x):
    """Apply ``layers`` to ``x`` following plan ``p`` (checkpointed segments recompute)."""
    for a, b, c in p.segments:
        chunk = layers[a:b]

        def forward(t, chunk=chunk):
            for layer in chunk:
                t = layer(t)
            return t

        x = checkpoint(forward, x, use_reentrant=False) if c else forward(x)
    return x


__all__ += ["CheckpointWrapper", "ModulePlan", "ModuleProfile", "apply", "plan_module",
            "profile_module"]
