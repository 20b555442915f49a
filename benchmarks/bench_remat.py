"""The rematerialization planner against checkpointing every sqrt(n) layers.

A chain of 16 MLP blocks (every fourth four times wider), batch 256: for no checkpointing,
sqrt(n) segments, and the planner at sqrt(n)'s estimated peak, prints the estimated and the
measured peak (tensorix.memory, gradients already allocated, as after the first step) and the
time of forward + backward. Run: ``python benchmarks/bench_remat.py``.
"""

from __future__ import annotations

import time

import tensorix as tx
from tensorix import nn
from tensorix.utils import remat


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


if __name__ == "__main__":
    main()
