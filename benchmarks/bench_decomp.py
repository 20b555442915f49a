"""tensorix.decomp against TensorLy's NumPy backend: same input, same initialisation, equal
iterations (tol=0), float64 on the CPU, one BLAS thread each by default. Prints a markdown
table of the relative reconstruction errors and the best-of-``--repeat`` wall times, with the
ratio tensorix / TensorLy.

    python benchmarks/bench_decomp.py            # the table in docs/decomp.md
    python benchmarks/bench_decomp.py --quick    # small shapes, one repeat (a smoke run)
    python benchmarks/bench_decomp.py --issue    # the issue's sizes: CP 200^3, Tucker 100^4
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _low_rank_plus_noise(rng, shape, rank, noise=0.1):
    factors = [rng.standard_normal((s, rank)) for s in shape]
    letters = "abcdefgh"[:len(shape)]
    x = np.einsum(",".join(f"{c}r" for c in letters) + "->" + letters, *factors)
    return x + noise * np.linalg.norm(x) / np.sqrt(x.size) * rng.standard_normal(shape)


def _issue_cases():
    """The sizes the issue names: large enough that the BLAS/LAPACK work dominates."""
    import tensorly as tl
    from tensorly import decomposition as tld

    from tensorix import decomp

    return [
        ("parafac ALS 200^3 rank 20, 10 it", (200,) * 3, 20,
         lambda t: decomp.parafac(t, 20, n_iter_max=10, tol=0).to_tensor(),
         lambda x: tl.cp_to_tensor(tld.parafac(x, 20, n_iter_max=10, tol=0, init="svd"))),
        ("tucker HOOI 100^4 rank 10, 2 it", (100,) * 4, 10,
         lambda t: decomp.tucker(t, [10] * 4, n_iter_max=2, tol=0).to_tensor(),
         lambda x: tl.tucker_to_tensor(tld.tucker(x, [10] * 4, n_iter_max=2, tol=0,
                                                  init="svd"))),
    ]


def _cases(quick):
    """(name, shape, rank, tensorix call, TensorLy call, TensorLy reconstruction)."""
    import tensorly as tl
    from tensorly import decomposition as tld

    from tensorix import decomp

    n_cp, n_tk, n_tt = (12, 10, 8) if quick else (60, 30, 20)
    r_tr = 2 if quick else 4
    iters = 5 if quick else 50
    return [
        (f"parafac ALS {n_cp}^3 rank 10, {iters} it", (n_cp,) * 3, 10,
         lambda t: decomp.parafac(t, 10, n_iter_max=iters, tol=0).to_tensor(),
         lambda x: tl.cp_to_tensor(tld.parafac(x, 10, n_iter_max=iters, tol=0, init="svd"))),
        (f"parafac ALS + line search {n_cp}^3 rank 10, {iters} it", (n_cp,) * 3, 10,
         lambda t: decomp.parafac(t, 10, n_iter_max=iters, tol=0, linesearch=True).to_tensor(),
         # return_errors: TensorLy 0.10's line search reads its error list, which it only
         # fills when tol or return_errors is set
         lambda x: tl.cp_to_tensor(tld.parafac(x, 10, n_iter_max=iters, tol=0, init="svd",
                                               linesearch=True, return_errors=True)[0])),
        (f"non_negative_parafac HALS {n_cp // 2}^3 rank 5, 20 it", (n_cp // 2,) * 3, 5,
         lambda t: decomp.non_negative_parafac(t.abs(), 5, n_iter_max=20, tol=0).to_tensor(),
         lambda x: tl.cp_to_tensor(tld.non_negative_parafac_hals(np.abs(x), 5, n_iter_max=20,
                                                                 tol=0))),
        (f"tucker HOOI {n_tk}^4 rank 5, 10 it", (n_tk,) * 4, 5,
         lambda t: decomp.tucker(t, [5] * 4, n_iter_max=10, tol=0).to_tensor(),
         lambda x: tl.tucker_to_tensor(tld.tucker(x, [5] * 4, n_iter_max=10, tol=0,
                                                  init="svd"))),
        (f"non_negative_tucker MU {n_tk // 2}^3 rank 5, 20 it", (n_tk // 2,) * 3, 5,
         lambda t: decomp.non_negative_tucker(t.abs(), [5] * 3, n_iter_max=20,
                                              tol=0).to_tensor(),
         lambda x: tl.tucker_to_tensor(tld.non_negative_tucker(np.abs(x), [5] * 3,
                                                               n_iter_max=20, tol=0))),
        (f"tensor_train TT-SVD {n_tt}^4 rank 8", (n_tt,) * 4, 8,
         lambda t: decomp.tensor_train(t, 8).to_tensor(),
         lambda x: tl.tt_to_tensor(tld.tensor_train(x, 8))),
        (f"tensor_ring TR-SVD {n_tt}^4 rank {r_tr}", (n_tt,) * 4, r_tr,
         lambda t: decomp.tensor_ring(t, r_tr).to_tensor(),
         lambda x: tl.tr_to_tensor(tld.tensor_ring(x, r_tr))),
    ]


def _best_time(fn, arg, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn(arg)
        best = min(best, time.perf_counter() - start)
    return best, out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes, one repeat")
    parser.add_argument("--issue", action="store_true",
                        help="the issue's sizes (CP 200^3 rank 20, Tucker 100^4; ~2 GB)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="BLAS threads for both libraries (0: leave the BLAS default)")
    args = parser.parse_args(argv)
    if args.blas_threads:
        # why: both libraries call the same NumPy BLAS; on a busy machine its spinning
        # threads made one 60 x 3600 SVD take 0.3-1.5 s instead of 0.04 s, drowning the
        # comparison in noise. One thread each measures the libraries, not the machine's load.
        try:
            from threadpoolctl import threadpool_limits

            threadpool_limits(args.blas_threads)
        except ImportError:
            print("threadpoolctl not installed: BLAS threads left at their default")
    import tensorly as tl

    import tensorix as tx

    tl.set_backend("numpy")
    rng = np.random.default_rng(0)
    repeat = 1 if args.quick else args.repeat
    rows = ["| case | error tensorix | error TensorLy | ms tensorix | ms TensorLy | "
            "time ratio tensorix/TensorLy |", "|---|---|---|---|---|---|"]
    for name, shape, rank, ours, theirs in _issue_cases() if args.issue else _cases(args.quick):
        x = _low_rank_plus_noise(rng, shape, rank)
        t = tx.tensor(x)
        t_ours, rec_ours = _best_time(ours, t, repeat)
        t_theirs, rec_theirs = _best_time(theirs, x, repeat)
        ref = np.abs(x) if "non_negative" in name else x
        err_ours = np.linalg.norm(rec_ours.numpy() - ref) / np.linalg.norm(ref)
        err_theirs = np.linalg.norm(rec_theirs - ref) / np.linalg.norm(ref)
        rows.append(f"| {name} | {err_ours:.6f} | {err_theirs:.6f} | {t_ours * 1e3:.1f} | "
                    f"{t_theirs * 1e3:.1f} | {t_ours / t_theirs:.2f} |")
        print(rows[-1] if len(rows) > 3 else "\n".join(rows), flush=True)
    return "\n".join(rows)


if __name__ == "__main__":
    main()
