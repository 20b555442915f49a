"""The numba row kernels' max/min helper: one function with the kind as a literal argument
(``_rowext(w, n, is_max)``, inlined) against the two mirror functions it replaced
(``_rowmax`` / ``_rowmin``, called), in the same process, interleaved.

    python benchmarks/bench_rowext.py            # softmax-like rows: max, then min
    python benchmarks/bench_rowext.py --rounds 50

Each case is the generated kernel of ``x - x.amax(-1, keepdim=True)`` (``amin`` for min) then
``exp`` and a row sum (the max/min over a stored row, then two passes): the same source
twice, one calling the old helper (its text kept here), each imported from its own file so
that numba compiles and caches both. Prints the best time of each and new / old.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

_OLD_MAX = '''

@numba.njit(cache=True, error_model="numpy")
def _rowmax(w, n):
    m0 = m1 = m2 = m3 = w[0]
    nan = 0
    i = 0
    while i + 4 <= n:
        a0, a1, a2, a3 = w[i], w[i + 1], w[i + 2], w[i + 3]
        m0 = a0 if a0 > m0 else m0
        m1 = a1 if a1 > m1 else m1
        m2 = a2 if a2 > m2 else m2
        m3 = a3 if a3 > m3 else m3
        nan += (a0 != a0) + (a1 != a1) + (a2 != a2) + (a3 != a3)
        i += 4
    while i < n:
        m0 = w[i] if w[i] > m0 else m0
        nan += w[i] != w[i]
        i += 1
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    m0 = m2 if m2 > m0 else m0
    return m0 if nan == 0 else (m0 - m0) / (m0 - m0)

'''
# the twin: the same text with the compares the other way
_OLD = _OLD_MAX + _OLD_MAX.replace("_rowmax", "_rowmin").replace(" > ", " < ")


def _plan(kind, shape, dtype):
    import tensorix as tx
    from tensorix._compile.codegen import KernelPlan
    from tensorix._compile.fusion import partition
    from tensorix.fx import symbolic_trace
    from tensorix.fx.passes import optimize

    def fn(x):
        e = (x - getattr(x, f"a{kind}")(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True)

    x = tx.randn(*shape, dtype=dtype)
    gm = symbolic_trace(fn, x)
    optimize(gm.graph)
    (group,) = [g for g in partition(gm.graph) if g.reductions]
    return KernelPlan(group), x.numpy()


def _kernels(plan, folder):
    from tensorix._compile import _precompile
    from tensorix._compile.codegen import numba_source

    new = numba_source(plan)
    old = re.sub(r"_rowext\((.*?), inner, (True|False)\)",
                 lambda m: f"_row{'max' if m.group(2) == 'True' else 'min'}({m.group(1)}, inner)",
                 new)
    assert old != new
    old += _OLD
    out = {}
    for name, src in (("new", new), ("old", old)):
        path = folder / f"rowext_{name}_{plan.key}.py"
        path.write_text(src)
        out[name] = _precompile.import_kernel(path, f"tensorix_bench.rowext_{name}_{plan.key}")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args(argv)
    import numpy as np

    import tensorix as tx
    from tensorix._compile import kernels

    folder = pathlib.Path(tempfile.mkdtemp(prefix="bench-rowext-"))
    print(f"{'case':34s} {'old (us)':>10s} {'new (us)':>10s} {'new/old':>8s}")
    for kind in ("max", "min"):
        for shape, dtype in (((2048, 64), tx.float32), ((64, 4096), tx.float32),
                             ((512, 512), tx.float64)):
            plan, x = _plan(kind, shape, dtype)
            fns = _kernels(plan, folder)
            call = kernels.run_arguments(plan, [x])
            results = {}
            for name, fn in fns.items():
                fn(*call)
                results[name] = [a.copy() for a in call[3:]]
            for a, b in zip(results["old"], results["new"]):
                np.testing.assert_array_equal(a, b)  # the same bits
            best = dict.fromkeys(fns, float("inf"))
            for _ in range(args.rounds):
                for name, fn in fns.items():
                    t = time.perf_counter()
                    for _ in range(5):
                        fn(*call)
                    best[name] = min(best[name], (time.perf_counter() - t) / 5)
            label = f"{kind} {shape[0]}x{shape[1]} {dtype.name}"
            print(f"{label:34s} {best['old'] * 1e6:10.1f} {best['new'] * 1e6:10.1f} "
                  f"{best['new'] / best['old']:8.3f}")


if __name__ == "__main__":
    main()
