"""The rematerialization planner against checkpointing every sqrt(n) layers.

A chain of 16 MLP blocks (every fourth four times wider), batch 256: for no checkpointing,
sqrt(n) segments, and the planner at sqrt(n)'s estimated peak, prints the estimated and the
measured peak (tensorix.memory, gradients already allocated, as after the first step) and the
time of forward + backward. Then the module-graph planner (``remat.plan_module``) on a model
with two branches and residual blocks: what forward keeps, the backward peak and the time, per
budget.
Run: ``python benchmarks/bench_remat.py``.
"""

from __future__ import annotations

import copy
import time

import tensorix as tx
from tensorix import nn
from tensorix.utils import remat, remat_graph


def chain():
    tx.manual_seed(0)
    return [nn.Sequential(nn.Linear(256, 1024 if i % 4 == 0 else 256), nn.GELU(),
                          nn.Linear(1024 if i % 4 == 0 else 256, 256), nn.Tanh())
            for i in range(16)]


def measure(layers, p, x, repeat=3):
    best, peak = float("inf"), 0
    for _ in range(repeat):
        for layer in layers:
            layer.zero_grad(set_to_none=False)
        with tx.memory.track() as mem:
            start = time.perf_counter()
            remat.run(layers, p, x).sum().backward()
            best = min(best, time.perf_counter() - start)
        peak = mem.peak
    return peak, best


def main():
    layers = chain()
    x = tx.randn(256, 256, requires_grad=True)
    (remat.run(layers, remat.Plan([(0, 16, False)], 0, 0.0), x)).sum().backward()  # grads
    prof = remat.profile(layers, x, repeat=3, grads_allocated=True)
    none = remat.Plan([(0, len(layers), False)], remat._peak(prof, [(0, len(layers), False)]),
                      0.0)
    sq = remat.sqrt_plan(prof)
    plans = [("none", none), ("sqrt(n)", sq),
             ("planner at sqrt(n)'s peak", remat.plan(prof, sq.peak))]
    for f in (1.5, 2.0, 3.0):
        plans.append((f"planner at {f} x that", remat.plan(prof, int(f * sq.peak))))
    print("| plan | segments (* recomputed) | estimated peak MiB | measured peak MiB | "
          "estimated recompute ms | fwd+bwd ms |")
    print("|---|---|---|---|---|---|")
    for name, p in plans:
        peak, seconds = measure(layers, p, x)
        segs = " ".join(f"[{a}:{b}]{'*' if c else ''}" for a, b, c in p.segments)
        print(f"| {name} | {segs} | {p.peak / 2**20:.1f} | {peak / 2**20:.1f} | "
              f"{p.recompute_seconds * 1e3:.0f} | {seconds * 1e3:.0f} |")


class Branchy(nn.Module):
    """Two MLP branches into a mix, then six residual MLP blocks (a ModuleList)."""

    def __init__(self, d=256):
        super().__init__()
        mlp = lambda h: nn.Sequential(nn.Linear(d, h), nn.GELU(), nn.Linear(h, d))  # noqa: E731
        self.a, self.b, self.mix = mlp(4 * d), mlp(2 * d), nn.Linear(d, d)
        self.blocks = nn.ModuleList([mlp((1 + i % 3) * d) for i in range(6)])

    def forward(self, x):
        h = self.mix(self.a(x) + self.b(x.tanh()))
        for blk in self.blocks:
            h = h + blk(h)
        return h


def graph():
    tx.manual_seed(0)
    model, x = Branchy(), tx.randn(256, 256, requires_grad=True)
    prof = remat.profile_module(model, x)
    top = prof.end_of_forward + prof.grads
    low = remat_graph._estimate(prof, set(range(len(prof.names))))  # everything recomputed
    print("\n| budget MiB | recomputed | estimated peak MiB | "
          "kept after forward MiB | measured peak MiB | fwd+bwd ms |")
    print("|---|---|---|---|---|---|")
    for frac in (0.0, 1 / 3, 2 / 3, 1.0):
        budget = int(top - frac * (top - low))
        p = remat.plan_module(prof, budget)
        m = remat.apply(copy.deepcopy(model), p)
        best = float("inf")
        for _ in range(3):
            m.zero_grad()
            with tx.memory.track() as mem:
                start = time.perf_counter()
                before = tx.memory.memory_allocated()
                y = m(x)
                kept = tx.memory.memory_allocated() - before
                y.sum().backward()
                best = min(best, time.perf_counter() - start)
        names = ", ".join(p.checkpointed) or "-"
        print(f"| {budget / 2**20:.1f} | {names} | {p.peak / 2**20:.1f} | "
              f"{kept / 2**20:.1f} | {mem.peak / 2**20:.1f} | {best * 1e3:.0f} |")


if __name__ == "__main__":
    main()
    graph()
