"""Profile one tensorix benchmark workload: ``python benchmarks/profile_case.py CASE``.

Runs the workload of ``workloads.py`` (training cases start from a fixed NumPy-seeded
initialisation here, since only where the time goes matters) ``--n`` times under cProfile and
prints the functions with the most own time (``--sort tottime``) or cumulative time.
``--pyinstrument`` uses pyinstrument instead, if installed (a call-tree view).
"""

from __future__ import annotations

import argparse
import cProfile
import pathlib
import pstats
import sys

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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("case", choices=list(wl.CASES))
    p.add_argument("--n", type=int, default=20, help="calls to profile")
    p.add_argument("--sort", default="tottime", choices=["tottime", "cumulative"])
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--pyinstrument", action="store_true")
    args = p.parse_args(argv)
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
