"""Time the einsum semirings (max-plus, min-product, log-sum-exp) against torch in the same
run: tensorix.einsum(..., semiring=...) forward, and forward + backward, against torch's brute
force of the same contraction ((a[:, :, None] + b[None]).amax(1), torch.logsumexp, ...).

Run: ``PYTHONPATH=$PWD python benchmarks/bench_semiring.py [--size 128] [--repeat 5]``. Prints
one row per case: best-of-repeat milliseconds and the ratio tensorix / torch.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tensorix as tx


def _best(fn, repeat):
    fn()  # warm (plans, caches)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e3


def _torch_case(torch, semiring):
    def run(a, b):
        if semiring == "max-plus":
            return (a[:, :, None] + b[None]).amax(1)
        if semiring == "min-product":
            return (a[:, :, None] * b[None]).amin(1)
        return torch.logsumexp(a[:, :, None] + b[None], 1)
    return run


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    tx.set_num_threads(1)
    n = args.size
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n)).astype(np.float32), rng.random((n, n)).astype(np.float32)
    print(f"{'case':28} {'tensorix ms':>12} {'torch ms':>10} {'ratio':>7}")
    for semiring in ("max-plus", "min-product", "log-sum-exp"):
        for grad in (False, True):
            def ours():
                x = tx.tensor(a, requires_grad=grad)
                y = tx.tensor(b, requires_grad=grad)
                z = tx.einsum("ij,jk->ik", x, y, semiring=semiring)
                if grad:
                    z.sum().backward()

            ref = None
            if torch is not None:
                fn = _torch_case(torch, semiring)

                def ref():
                    x = torch.tensor(a, requires_grad=grad)
                    y = torch.tensor(b, requires_grad=grad)
                    z = fn(x, y)
                    if grad:
                        z.sum().backward()

            t_ours = _best(ours, args.repeat)
            t_ref = _best(ref, args.repeat) if ref else float("nan")
            name = f"{semiring} {n}^3" + (" fwd+bwd" if grad else " fwd")
            print(f"{name:28} {t_ours:12.2f} {t_ref:10.2f} {t_ours / t_ref:7.2f}")


if __name__ == "__main__":
    main()
