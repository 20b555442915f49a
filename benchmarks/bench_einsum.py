"""Time tensorix.einsum against numpy.einsum(optimize=True) and torch.einsum, same process.

Prints a markdown table: best-of-N wall time per call (ms; the libraries take turns in every
round) and the ratios tensorix/torch and tensorix/numpy (below 1: tensorix is faster).
Run: ``python benchmarks/bench_einsum.py`` (``--repeat N``, ``--quick`` for smaller problems).
torch is optional.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # run from a checkout
import tensorix as tx  # noqa: E402

try:
    import torch
except ImportError:  # the table then has no torch column
    torch = None

CASES = [
    ("bij,bjk->bik", [(64, 128, 128), (64, 128, 128)]),
    ("ij,jk,kl->il", [(512, 512), (512, 512), (512, 512)]),
    ("ij,jk->ik", [(1024, 1024), (1024, 1024)]),
    ("bhqd,bhkd->bhqk", [(8, 8, 128, 64), (8, 8, 128, 64)]),
    ("ea,fb,abcd,gc,hd->efgh", [(10, 10), (10, 10), (10, 10, 10, 10), (10, 10), (10, 10)]),
    ("ii->i", [(2048, 2048)]),
]
QUICK = [
    ("bij,bjk->bik", [(16, 64, 64), (16, 64, 64)]),
    ("ij,jk,kl->il", [(128, 128), (128, 128), (128, 128)]),
]


def _inner(fn, min_time):
    """How many calls make one timed run last about ``min_time`` seconds."""
    fn()
    t0 = time.perf_counter()
    fn()
    return max(1, int(min_time / max(time.perf_counter() - t0, 1e-7)))


def best_ms(fns, repeat, min_time=0.02):
    """Best per-call time (ms) of each function. The functions take turns in every round (a
    load change on a shared machine hits them alike), starting from a different one each
    round, after a short pause: torch's OpenMP threads keep spinning for a while after a call
    and would otherwise slow down whatever runs right after torch."""
    inner = [_inner(f, min_time) for f in fns]
    best = [float("inf")] * len(fns)
    for r in range(repeat):
        for j in range(len(fns)):
            i = (r + j) % len(fns)
            f, n = fns[i], inner[i]
            time.sleep(0.02)
            f()  # untimed: wakes this library's threads
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            best[i] = min(best[i], (time.perf_counter() - t0) / n)
    return [b * 1e3 for b in best]


def run(cases, repeat):
    rng = np.random.default_rng(0)
    rows = []
    for eq, shapes in cases:
        arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        tx_ops = [tx.tensor(a) for a in arrays]
        fns = [lambda: tx.einsum(eq, *tx_ops), lambda: np.einsum(eq, *arrays, optimize=True)]
        if torch is not None:
            t_ops = [torch.from_numpy(a) for a in arrays]
            fns.append(lambda: torch.einsum(eq, *t_ops))
        times = best_ms(fns, repeat)
        rows.append((eq, shapes, times[0], times[1], times[2] if torch is not None else None))
    return rows


def table(rows):
    lines = ["| equation | shapes | tensorix ms | numpy ms | torch ms | tx/torch | tx/numpy |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for eq, shapes, t_tx, t_np, t_torch in rows:
        shp = " ".join("x".join(map(str, s)) for s in shapes)
        tt = "-" if t_torch is None else f"{t_torch:.3f}"
        rt = "-" if t_torch is None else f"{t_tx / t_torch:.2f}"
        lines.append(f"| `{eq}` | {shp} | {t_tx:.3f} | {t_np:.3f} | {tt} | {rt} | "
                     f"{t_tx / t_np:.2f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    threads = torch.get_num_threads() if torch is not None else "-"
    print(f"numpy {np.__version__}, torch {torch.__version__ if torch else '-'} "
          f"({threads} threads), float32, best of {args.repeat}\n")
    print(table(run(QUICK if args.quick else CASES, args.repeat)))


if __name__ == "__main__":
    main()
