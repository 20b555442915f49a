"""Per-op overhead of tensorix against torch, same process: tiny tensors, so the time is the
framework's Python/C++ bookkeeping, not arithmetic.

Cases (each run is ``--ops`` ops, 10,000 by default; the libraries take turns in every round
so a load change on a shared machine hits them alike; the best round counts):

* ``a + b`` forward, both requiring grad (records a node per op);
* ``a + b`` forward under no_grad;
* ``a * 0.5`` forward, requiring grad (a Python scalar lifted at the boundary);
* a chain ``y = y + b`` of ``--ops`` ops, forward and backward (per op).

Prints a markdown table of us/op and the ratio tensorix/torch (below 1: tensorix is faster).
Run: ``python benchmarks/bench_overhead.py`` (``--repeat N``, ``--ops N``).
"""

from __future__ import annotations

import argparse
import gc
import time

import tensorix as tx

try:
    import torch
except ImportError:  # the table then has no torch column
    torch = None


def _cases(m, n):
    """name -> a function running one round of ``n`` ops with module ``m`` (tx or torch)."""
    a = m.ones(3, requires_grad=True)
    b = m.ones(3, requires_grad=True)

    def add():
        for _ in range(n):
            a + b

    def add_no_grad():
        with m.no_grad():
            for _ in range(n):
                a + b

    def mul_scalar():
        for _ in range(n):
            a * 0.5

    def chain():
        y = a
        for _ in range(n):
            y = y + b
        y.sum().backward()
        a.grad = b.grad = None

    return {"a + b, requires_grad (forward)": add,
            "a + b, no_grad (forward)": add_no_grad,
            "a * 0.5, requires_grad (forward)": mul_scalar,
            "chain y = y + b (forward + backward)": chain}


def run(ops, repeat):
    libs = [("tensorix", _cases(tx, ops))]
    if torch is not None:
        torch.set_num_threads(1)
        libs.append(("torch", _cases(torch, ops)))
    names = list(libs[0][1])
    best = {(lib, name): float("inf") for lib, _ in libs for name in names}
    gc.collect()
    for _ in range(repeat):
        for name in names:
            for lib, cases in libs:  # take turns, so both see the same machine load
                t0 = time.perf_counter()
                cases[name]()
                best[lib, name] = min(best[lib, name], (time.perf_counter() - t0) / ops)
    head = "| case | tensorix us/op |" + (" torch us/op | ratio |" if torch else "")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name in names:
        mine = best["tensorix", name] * 1e6
        row = f"| {name} | {mine:.2f} |"
        if torch is not None:
            ref = best["torch", name] * 1e6
            row += f" {ref:.2f} | {mine / ref:.2f} |"
        print(row)
    if torch is not None:
        print(f"\n(torch {torch.__version__}, {ops} ops per round, best of {repeat} rounds)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args(argv)
    run(args.ops, args.repeat)


if __name__ == "__main__":
    main()
