"""embedding_bag against torch, same process: a recommender-sized lookup (1-d indices with
offsets, padding left out), forward and forward + backward, modes sum, mean and max.

tensorix computes the bags with ops (searchsorted on the offsets, one index_add or
scatter_reduce into an extra bag for the left-out rows), so a compiled call follows new
indices and offsets. The libraries take turns in every round (a load change on the shared
machine hits both alike); the median and best rounds are printed with the ratio
tensorix/torch (below 1: tensorix is faster).
Run: ``python benchmarks/bench_embedding_bag.py`` (``--rounds N``, ``--bags N``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import tensorix as tx

try:
    import torch
except ImportError:
    torch = None


def _case(m, mode, backward, idx, off, weight):
    w = m.tensor(weight, requires_grad=backward)
    i, o = m.tensor(idx), m.tensor(off)
    F = m.nn.functional

    def run():
        y = F.embedding_bag(i, w, o, mode=mode, padding_idx=0)
        if backward:
            y.sum().backward()
            w.grad = None

    return run


def _time(fn, reps):
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t) / reps * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--bags", type=int, default=256)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 40, args.bags)
    off = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    idx = rng.integers(0, 20000, int(lengths.sum())).astype(np.int64)
    weight = rng.standard_normal((20000, 64)).astype(np.float32)
    print(f"{args.bags} bags, {idx.size} indices, table 20000 x 64 float32, padding_idx=0")
    print("| case | tensorix ms (median, best) | torch ms (median, best) | ratio (median) |")
    print("|---|---|---|---|")
    for mode in ("sum", "mean", "max"):
        for backward in (False, True):
            fns = {"tx": _case(tx, mode, backward, idx, off, weight)}
            if torch is not None:
                fns["torch"] = _case(torch, mode, backward, idx, off, weight)
            times = {k: [] for k in fns}
            for f in fns.values():
                f()  # warm up
            for _ in range(args.rounds):
                for k, f in fns.items():
                    times[k].append(_time(f, args.reps))
            med = {k: statistics.median(v) for k, v in times.items()}
            name = f"{mode}, {'forward + backward' if backward else 'forward'}"
            tr = f"{med['torch']:.3f}, {min(times['torch']):.3f}" if torch else "-"
            ratio = f"{med['tx'] / med['torch']:.2f}" if torch else "-"
            print(f"| {name} | {med['tx']:.3f}, {min(times['tx']):.3f} | {tr} | {ratio} |")


if __name__ == "__main__":
    main()
