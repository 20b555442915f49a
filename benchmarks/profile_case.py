"""Profile one tensorix benchmark workload: ``python benchmarks/profile_case.py CASE``.

Runs the workload of ``workloads.py`` (training cases start from a fixed NumPy-seeded
initialisation here, since only where the time goes matters) ``--n`` times under cProfile and
prints the functions with the most own time (``--sort tottime``) or cumulative time.
``--pyinstrument`` uses pyinstrument instead, if installed (a call-tree view).

``--summary`` (CASE may be a comma-separated list, or ``train``) prints instead, per step:
the ops run (``Function.apply`` calls, forward and backward), the CPU time of the process and
of the calling thread (the rest, "pool", ran on the pool's threads: the share of the step that
used a second core), and the share of the CPU time spent in GEMMs (profiled on one thread).
CPU times, unlike wall times, mean something on a loaded machine.

``--gemms`` (CASE as for ``--summary``) lists the GEMMs of one step, (m, k, n) with batch
dims and how many times each runs, as ``_threads.matmul`` / ``matmuls`` see them: the shapes
``bench_threads.py`` times to set the split thresholds ("(matmuls)": a layer's backward pair,
run side by side when balanced).
"""

from __future__ import annotations

import argparse
import cProfile
import pathlib
import pstats
import sys
import time

import numpy as np

_HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
sys.path.insert(1, str(_HERE.parent))

import workloads as wl  # noqa: E402

import tensorix  # noqa: E402
import tensorix.nn.functional  # noqa: E402, F401
import tensorix.optim  # noqa: E402, F401


def _weights(case):
    """Small random weights of the right shapes (no torch needed)."""
    model = wl._models(tensorix)[case]()
    rng = np.random.default_rng(0)
    return {k: (rng.standard_normal(v.shape) * 0.05).astype(np.float32)
            for k, v in model.state_dict().items()}


def _split_cpu(work, n):
    """(process CPU, calling thread's CPU) in ms per step."""
    p0, t0 = time.process_time(), time.thread_time()
    for _ in range(n):
        work.step()
    return ((time.process_time() - p0) / n * 1e3, (time.thread_time() - t0) / n * 1e3)


def _shares(work, n):
    """(ops per step, GEMM share of the CPU time) of a cProfile'd run on one thread (the
    profiler sees the calling thread only; the BLAS runs inside _threads' own functions)."""
    threads = tensorix.get_num_threads()
    tensorix.set_num_threads(1)
    prof = cProfile.Profile()
    try:
        prof.enable()
        for _ in range(n):
            work.step()
        prof.disable()
    finally:
        tensorix.set_num_threads(threads)
    stats = pstats.Stats(prof).stats
    total = sum(v[2] for v in stats.values()) or 1.0
    gemm = sum(v[2] for k, v in stats.items() if k[0].endswith("_threads.py")
               and k[2] in ("matmul", "matmuls", "task", "part"))
    ops = sum(v[1] for k, v in stats.items() if k[0].endswith("function.py")
                and k[2] == "apply")
    return ops / n, gemm / total


def gemms(cases):
    """Print the GEMM shapes of one step of each case (see ``--gemms``)."""
    import collections

    from tensorix import _threads

    seen = collections.Counter()
    matmul, matmuls = _threads.matmul, _threads.matmuls

    def counted(a, b):
        seen[(a.shape[:-2], a.shape[-2], a.shape[-1], b.shape[-1], "")] += 1
        return matmul(a, b)

    def counted_pairs(pairs):
        for a, b in pairs:
            seen[(a.shape[:-2], a.shape[-2], a.shape[-1], b.shape[-1], " (matmuls)")] += 1
        _threads.matmul = matmul  # its own fallback to matmul is not counted twice
        try:
            return matmuls(pairs)
        finally:
            _threads.matmul = counted

    for case in cases:
        work, _ = wl.build(tensorix, case, _weights(case) if case in wl.TRAIN else None)
        work.step()
        seen.clear()
        # a profiling tool's wrap, undone below: the library calls _threads.matmul(s) by name
        _threads.matmul, _threads.matmuls = counted, counted_pairs
        try:
            work.step()
        finally:
            _threads.matmul, _threads.matmuls = matmul, matmuls
        print(f"{case}: GEMMs per step (batch, m x k x n, multiply-adds)")
        for (batch, m, k, n, how), count in sorted(seen.items(), key=lambda kv: -kv[1]):
            macs = m * k * n * int(np.prod(batch))
            print(f"  {count:3d} x {str(batch or ''):14s} {m}x{k}x{n}  2^{np.log2(macs):.1f}{how}")


def summary(cases, n):
    """Print the per-step summary of ``--summary`` for ``cases``."""
    print(f"threads {tensorix.get_num_threads()}; GEMM share profiled on one thread")
    print(f"{'case':16s} {'ops':>7s} {'CPU ms':>8s} {'main ms':>8s} {'pool':>6s} "
          f"{'GEMM':>6s}")
    for case in cases:
        work, _ = wl.build(tensorix, case, _weights(case) if case in wl.TRAIN else None)
        work.step()
        cpu, main = _split_cpu(work, n)
        ops, gemm = _shares(work, max(1, n // 2))
        print(f"{case:16s} {ops:7.0f} {cpu:8.2f} {main:8.2f} {100 * (1 - main / cpu):5.0f}% "
              f"{100 * gemm:5.0f}%", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("case", help=f"one of {', '.join(wl.CASES)} (a list or 'train' with --summary)")
    p.add_argument("--n", type=int, default=20, help="calls to profile")
    p.add_argument("--sort", default="tottime", choices=["tottime", "cumulative"])
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--pyinstrument", action="store_true")
    p.add_argument("--summary", action="store_true", help="ops, CPU split and GEMM share per step")
    p.add_argument("--gemms", action="store_true", help="the GEMM shapes of one step")
    args = p.parse_args(argv)
    cases = list(wl.TRAIN) if args.case == "train" else args.case.split(",")
    bad = [c for c in cases if c not in wl.CASES]
    if bad:
        p.error(f"unknown case(s) {bad}; known: {', '.join(wl.CASES)}")
    if args.summary:
        summary(cases, args.n)
        return
    if args.gemms:
        gemms(cases)
        return
    weights = _weights(args.case) if args.case in wl.TRAIN else None
    work, _ = wl.build(tensorix, args.case, weights)
    work.step()  # warm up
    if args.pyinstrument:
        from pyinstrument import Profiler

        prof = Profiler(interval=0.0005)
        prof.start()
        for _ in range(args.n):
            work.step()
        prof.stop()
        print(prof.output_text(unicode=False, color=False, show_all=False))
        return
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.n):
        work.step()
    prof.disable()
    pstats.Stats(prof).strip_dirs().sort_stats(args.sort).print_stats(args.top)


if __name__ == "__main__":
    main()
