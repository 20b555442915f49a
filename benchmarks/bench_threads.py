"""Where splitting over tensorix's pool pays: ``python benchmarks/bench_threads.py``.

The measurements behind the split thresholds of ``tensorix/_threads.py`` (docs/benchmarks.md,
"Issue 13, part A, third pass"), on this machine, with the library's thread count (default:
the usable cores):

* ``handoff``: an op split in two parts that do nothing (the caller's cost of offering a part
  to the pool: a queue put; the caller takes both parts when no pool thread is quicker), and a
  split whose parts each take ~0.1 ms (the whole round trip: waking a pool thread, both parts,
  waiting for the other's), also without steering the pool threads off the caller's CPU
  (``_threads._steer``: without it they often run on the caller's CPU, one part after the
  other);
* ``gemm``: float32 GEMMs, square 64..1024 and the shapes inside the MLP/CNN/GPT steps
  (``profile_case.py --gemms`` lists them), four ways: one call on a one-thread BLAS
  ("whole"), split by rows or columns over the pool with a one-thread BLAS in each part
  ("split"), the same without steering ("not steered"), and one call with the BLAS allowed
  two threads ("blas2", through threadpoolctl);
* ``elementwise``: memory-bound (add, mul, relu) and transcendental (tanh, exp, gelu_tanh's
  fused kernel) float32 ops on 64 Ki..4 Mi elements, whole and split in two.

Each case runs its variants in interleaved rounds (a load change hits them alike); the table
gives per variant the 10th percentile over rounds (the closest to a quiet machine:
moments when both cores were free) and the median, in
microseconds, and the ratio of split to whole. ``--rounds``, ``--min-time``, ``--only
handoff,gemm,elementwise``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

import numpy as np

_HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(1, str(_HERE.parent))

from tensorix import _threads  # noqa: E402
from tensorix.ops import activation  # noqa: E402

# (m, k, n) of the GEMMs inside the benchmark's model steps (profile_case.py --gemms)
MODEL_GEMMS = {
    "MLP fc1 fwd": (128, 784, 512), "MLP fc1 dW": (512, 128, 784),
    "MLP fc2 fwd": (128, 512, 256), "MLP fc2 dX": (128, 256, 512),
    "CNN conv1 fwd": (16, 9, 25088), "CNN conv2 fwd": (32, 144, 6272),
    "CNN conv2 dW": (32, 6272, 144), "CNN conv2 dX": (144, 32, 6272),
    "GPT qkv fwd": (1024, 128, 384), "GPT proj fwd": (1024, 128, 128),
    "GPT fc fwd": (1024, 128, 512), "GPT fc2 fwd": (1024, 512, 128),
    "GPT fc dW": (128, 1024, 512), "GPT head fwd": (1024, 128, 65),
}


def _sample(fn, min_time):
    """(wall, CPU) seconds per call of a sample lasting about ``min_time``."""
    fn()
    t0 = time.perf_counter()
    fn()
    n = max(1, int(min_time / max(time.perf_counter() - t0, 1e-7)))
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n, (time.process_time() - c0) / n


def measure(variants, rounds, min_time, setup=None, settle=None):
    """{name: (10th percentile of wall, median wall, median CPU)} in us over interleaved
    rounds. On a loaded machine the low percentile of many short samples stands for the
    moments when both cores were free (a quiet machine); the median for the load.
    ``setup[name]()`` runs before each sample of that variant (untimed); ``settle[name]``
    seconds pass after it (the BLAS's own idle threads spin for a while after a threaded
    call: without the pause they take a core from the next variant's sample)."""
    setup, settle = setup or {}, settle or {}
    got = {k: [] for k in variants}
    for r in range(rounds):
        names = list(variants) if r % 2 == 0 else list(variants)[::-1]
        for k in names:
            if k in setup:
                setup[k]()
            got[k].append(_sample(variants[k], min_time))
            if settle.get(k):
                time.sleep(settle[k])
    return {k: (float(np.percentile([w for w, _ in v], 10)) * 1e6,
                statistics.median(w for w, _ in v) * 1e6,
                statistics.median(c for _, c in v) * 1e6) for k, v in got.items()}


def _forced(fn, **low):
    """``fn`` run with ``_threads``' thresholds lowered (``low``) so that it always splits."""
    def run():
        old = {k: getattr(_threads, k) for k in low}
        for k, v in low.items():
            setattr(_threads, k, v)
        try:
            return fn()
        finally:
            for k, v in old.items():
                setattr(_threads, k, v)
    return run


def _unsteer():
    """The pool threads back on every CPU, as before _threads._steer existed."""
    pool = _threads._get_pool()
    for tid in pool.tids if pool.cpus else ():
        os.sched_setaffinity(tid, pool.cpus)
    pool.steered = None


def _unsteered(fn):
    """``fn`` run without _threads._steer (the pool threads go where the kernel puts them:
    often on the caller's own CPU, where the parts run one after another)."""
    return _forced(fn, _steer=lambda pool: None)


def _row(label, res, base, others):
    cells = [label, f"{res[base][0]:.1f} / {res[base][1]:.1f}"]
    for k in others:
        cells += [f"{res[k][0]:.1f} / {res[k][1]:.1f}",
                  f"{res[k][0] / res[base][0]:.2f} / {res[k][1] / res[base][1]:.2f}"]
    cells.append(" ".join(f"{res[k][2]:.0f}" for k in [base] + others))
    return "| " + " | ".join(cells) + " |"


def handoff(args):
    print("\n| hand-off | us p10 / median | CPU us |\n|---|---|---|")
    # two halves of one np.tanh, ~0.1 ms of one core each (32 Ki elements before: ~13 us)
    x = np.ones(1 << 19, np.float32)
    out = np.empty_like(x)
    half = x.size // 2
    parts = [lambda: np.tanh(x[:half], out=out[:half]), lambda: np.tanh(x[half:], out=out[half:])]
    variants = {
        "empty split (2 parts)": lambda: _threads._run_parts([lambda: None, lambda: None]),
        "two parts of ~0.1 ms, split": lambda: _threads._run_parts(parts),
        "two parts of ~0.1 ms, split, not steered": _unsteered(lambda: _threads._run_parts(
            parts)),
        "two parts of ~0.1 ms, in turn": lambda: [part() for part in parts],
    }
    res = measure(variants, args.rounds, args.min_time,
                  setup={"two parts of ~0.1 ms, split, not steered": _unsteer})
    for k, (lo, med, cpu) in res.items():
        print(f"| {k} | {lo:.1f} / {med:.1f} | {cpu:.1f} |")


def gemm(args):
    from threadpoolctl import threadpool_limits

    print("\n| GEMM m x k x n | MACs | whole us p10 / med | split us p10 / med | split/whole "
          "| not steered us p10 / med | not steered/whole | blas2 us p10 / med | blas2/whole "
          "| CPU us whole split not-steered blas2 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    shapes = {f"{s}^3": (s, s, s) for s in (64, 128, 192, 256, 384, 512, 1024)}
    shapes.update(MODEL_GEMMS)
    _threads.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))  # pin the BLAS

    def blas2(a, b):
        with threadpool_limits(2, user_api="blas"):
            return a @ b

    for label, (m, k, n) in shapes.items():
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        split = _forced(lambda: _threads.matmul(a, b), _GEMM_MIN_PART=1)
        variants = {"whole": lambda: a @ b, "split": split,
                    "not steered": _unsteered(split), "blas2": lambda: blas2(a, b)}
        res = measure(variants, args.rounds, args.min_time, setup={"not steered": _unsteer},
                      settle={"blas2": 0.15})
        row = _row(f"{label} ({m}x{k}x{n})", res, "whole", ["split", "not steered", "blas2"])
        print(row.replace(" | ", f" | 2^{np.log2(m * n * k):.1f} | ", 1), flush=True)


def _gelu_tanh(out, x):
    _threads.blockwise(activation._gelu_tanh_kernel, out, x)


def elementwise(args):
    print("\n| op, elements | whole us p10 / med | split us p10 / med | split/whole "
          "| CPU us whole split |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    ops = {"add": lambda o, x, y: np.add(x, y, out=o), "mul": lambda o, x, y: np.multiply(
        x, y, out=o), "relu": lambda o, x, y: np.maximum(x, 0, out=o),
        "tanh": lambda o, x, y: np.tanh(x, out=o), "exp": lambda o, x, y: np.exp(x, out=o)}
    for size in (1 << 16, 1 << 18, 1 << 20, 1 << 22):
        x = rng.standard_normal(size, dtype=np.float32)
        y = rng.standard_normal(size, dtype=np.float32)
        out = np.empty_like(x)
        for name, fn in ops.items():
            variants = {"whole": lambda fn=fn: fn(out, x, y),
                        "split": lambda fn=fn: _threads.elementwise(fn, out, x, y, min_part=1)}
            res = measure(variants, args.rounds, args.min_time)
            print(_row(f"{name} {size >> 10} Ki", res, "whole", ["split"]), flush=True)
        variants = {"whole": _forced(lambda: _gelu_tanh(out, x), _threads=1),
                    "split": _forced(lambda: _gelu_tanh(out, x), BLOCKWISE_MIN_PART=1)}
        res = measure(variants, args.rounds, args.min_time)
        print(_row(f"gelu_tanh {size >> 10} Ki", res, "whole", ["split"]), flush=True)


def main(argv=None):
    _threads._machine_busy = lambda: False  # measure the split itself, whatever the load
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=41)
    p.add_argument("--min-time", type=float, default=0.003, help="seconds per sample")
    p.add_argument("--only", default="handoff,gemm,elementwise")
    args = p.parse_args(argv)
    print(f"threads {_threads.get_num_threads()}; load average "
          f"{' '.join(pathlib.Path('/proc/loadavg').read_text().split()[:3])}")
    for part in args.only.split(","):
        {"handoff": handoff, "gemm": gemm, "elementwise": elementwise}[part](args)


if __name__ == "__main__":
    main()
