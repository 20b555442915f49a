"""The PyTorch compatibility table: ``python benchmarks/bench_compat.py``.

Runs every program of ``tests/compat/programs`` unmodified on torch and on tensorix (``torch``
mapped to tensorix by one import alias, see ``tests/compat/_alias.py``) from the same weights
and data, and writes docs/compat.md: whether it ran, the largest relative loss difference over
the steps, and the wall time per step of each framework (after one warm-up run of each) and
their ratio. Both run in this process with their default threads.
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import sys
import traceback
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.compat._alias import PROGRAMS, program_names, run_pair  # noqa: E402


def _doc(name):
    text = (PROGRAMS / f"{name}.py").read_text()
    return text.split('"""')[1].split(".")[0].replace("\n", " ").strip()


def measure(name, steps):
    try:
        run_pair(name, 2)  # warm-up: imports, plan caches, allocator
        lt, lx, st, sx = run_pair(name, steps)
    except Exception as e:  # a program that does not run is a row of the table, not a crash
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return f"| {name} | no: {type(e).__name__} at {pathlib.Path(tb.filename).name}:" \
               f"{tb.lineno} | | | | |"
    diff = np.max(np.abs(lx - lt) / np.maximum(np.abs(lt), 1e-12))
    return f"| {name} | yes | {diff:.1e} | {st * 1e3:.1f} | {sx * 1e3:.1f} | {sx / st:.2f} |"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--out", default=str(ROOT / "docs" / "compat.md"))
    args = ap.parse_args()
    warnings.simplefilter("ignore", FutureWarning)  # torch's deprecation notices
    import torch

    rows = []
    for name in program_names():
        rows.append(measure(name, args.steps))
        print(rows[-1], flush=True)
    what = "\n".join(f"- **{n}**: {_doc(n)}." for n in program_names())
    text = (
        "# PyTorch programs on tensorix\n\n"
        "Each program in `tests/compat/programs/` is written as public PyTorch code is (the\n"
        "idioms of nanoGPT, pytorch/examples and common tutorials) and runs unmodified: the only\n"
        "change is that `torch` resolves to `tensorix` (one import alias,\n"
        "`tests/compat/_alias.py`). Both frameworks start from the same weights (torch's,\n"
        "copied) and data, and train for the same steps. `tests/compat/test_compat.py` asserts\n"
        "the losses agree step by step; this table is written by\n"
        f"`python benchmarks/bench_compat.py` ({args.steps} steps, after a warm-up run,\n"
        f"default threads, torch {torch.__version__}, {platform.processor() or platform.machine()},"
        " one process).\n\n"
        "| program | runs | max rel. loss diff | torch ms/step | tensorix ms/step | ratio |\n"
        "|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n## The programs\n\n" + what + "\n"
    )
    pathlib.Path(args.out).write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
