"""Every elementwise and reduction op of the op registry, timed on 1M float32 elements against
torch, in one process: ``python benchmarks/bench_elementwise.py``.

The ops are the registry entries (``tensorix.testing.registry``) of the unary, elementwise,
special and reduce families that run in float32 and have a torch counterpart. Each op's
first sample whose array arguments share one shape is grown to 1024 x 1024 (``np.resize``
repeats its values, so the op's domain is kept) and both frameworks run it without grad; a
round times one sample of each (about ``--min-time`` seconds), the libraries alternate, and
the table gives the medians over ``--repeat`` rounds and the ratio tensorix/torch of wall
and of process CPU time (target: at most 2), worst first, and names the worst ten. ``--out``
writes the table into that file between the markers below (``benchmarks/results.md`` keeps
it when ``run.py`` rewrites the rest). Options: ``--threads N`` (both frameworks; default:
the usable cores), ``--ops a,b``.
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
sys.path.insert(0, str(_HERE.parent))

import tensorix as tx  # noqa: E402
from tensorix.testing.registry import all_opinfos  # noqa: E402

BEGIN, END = "<!-- bench_elementwise: begin -->", "<!-- bench_elementwise: end -->"
FAMILIES = ("unary", "elementwise", "special", "reduce")
SHAPE = (1024, 1024)
TARGET = 2.0


def _family_ops():
    """The registry entries of FAMILIES: each family module's registrations, in order."""
    import importlib

    from tensorix.testing.registry import REGISTRY

    names = set()
    for fam in FAMILIES:
        before = set(REGISTRY)
        importlib.import_module(f"tensorix.testing.opinfo.{fam}")
        names |= set(REGISTRY) - before
    return names


def _grown(info, rng):
    """The op's first sample with one shared array shape, grown to SHAPE; or None."""
    try:
        samples = info.samples(rng, tx.float32)
    except Exception:  # noqa: BLE001 - an entry without float32 samples is skipped
        return None
    for s in samples:
        shapes = {a.shape for a in s.args if isinstance(a, np.ndarray) and a.ndim}
        if len(shapes) == 1 and all(not isinstance(v, np.ndarray) for v in s.kwargs.values()):
            args = tuple(np.resize(a, SHAPE).astype(np.float32)
                         if isinstance(a, np.ndarray) and a.ndim and a.dtype.kind == "f"
                         else np.resize(a, SHAPE) if isinstance(a, np.ndarray) and a.ndim
                         else a for a in s.args)
            return args, s.kwargs
    return None


def _convert(args, make):
    return tuple(make(a) if isinstance(a, np.ndarray) else a for a in args)


def _sample_time(fn, min_time):
    """(wall, CPU) seconds per call: the CPU time is the process's, all threads together (on
    a shared machine the wall time also counts time spent waiting for a core)."""
    fn()
    n, t0, c0 = 0, time.perf_counter(), time.process_time()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time:
            return elapsed / n, (time.process_time() - c0) / n


def bench(ops, repeat, min_time):
    import torch

    rng = np.random.default_rng(0)
    rows, skipped = [], []
    family = _family_ops()
    for info in all_opinfos():
        if info.name not in family or tx.float32 not in info.dtypes \
                or (ops and info.name not in ops):
            continue
        tfn = info.torch_fn()
        grown = _grown(info, rng)
        if tfn is None or grown is None:
            skipped.append(info.name)
            continue
        args, kwargs = grown
        xa = _convert(args, tx.from_numpy)
        ta = _convert(args, torch.from_numpy)
        try:
            with tx.no_grad(), torch.no_grad():
                info.op(*xa, **kwargs)
                tfn(*ta, **kwargs)
        except Exception:  # noqa: BLE001 - e.g. a kwarg only one side accepts at this shape
            skipped.append(info.name)
            continue
        times = {"tensorix": [], "torch": []}
        cpu = {"tensorix": [], "torch": []}
        with tx.no_grad(), torch.no_grad():
            for r in range(repeat):
                order = (("tensorix", info.op, xa), ("torch", tfn, ta))
                for name, fn, a in order if r % 2 == 0 else order[::-1]:
                    wall, cpu_s = _sample_time(lambda f=fn, a=a: f(*a, **kwargs), min_time)
                    times[name].append(wall)
                    cpu[name].append(cpu_s)
        med = {k: statistics.median(v) for k, v in times.items()}
        mcpu = {k: statistics.median(v) for k, v in cpu.items()}
        rows.append((info.name, med["tensorix"], med["torch"], med["tensorix"] / med["torch"],
                     mcpu["tensorix"] / max(mcpu["torch"], 1e-9)))
        print(f"{info.name:24s} {med['tensorix'] * 1e3:9.3f} ms {med['torch'] * 1e3:9.3f} ms "
              f"{rows[-1][3]:6.2f}  CPU {rows[-1][4]:6.2f}", flush=True)
    return sorted(rows, key=lambda r: -r[3]), skipped


def table(rows, skipped, threads, repeat, load):
    import torch

    worst = [r[0] for r in rows[:10]]
    over = sum(r[3] > TARGET for r in rows)
    over_cpu = sum(r[4] > TARGET for r in rows)
    lines = [BEGIN, "", "## Elementwise and reduction ops, 1M float32 (bench_elementwise.py)", "",
             f"`python benchmarks/bench_elementwise.py --threads {threads} --repeat {repeat}`; "
             f"torch {torch.__version__}; no grad; medians; ratio tensorix/torch, target <= "
             f"{TARGET}; load average {load[0]:.1f} at the start, {load[1]:.1f} at the end "
             f"(on a shared machine the wall ratio counts waits for a core: read the CPU-time "
             f"ratio too, which counts every thread of the process, torch's spinning OpenMP "
             f"threads included). {len(rows)} ops, {over} above the target in wall time, "
             f"{over_cpu} in CPU time. Worst ten: {', '.join(worst)} (by wall ratio).", "",
             "| op | tensorix ms | torch ms | ratio | CPU-time ratio |", "|---|---|---|---|---|"]
    lines += [f"| {n} | {a * 1e3:.3f} | {b * 1e3:.3f} | {q:.2f}{' **' if q > TARGET else ''} "
              f"| {c:.2f} |" for n, a, b, q, c in rows]
    if skipped:
        lines += ["", f"Not timed (no torch counterpart, no float32 sample of one shape, or a "
                      f"call only one side accepts): {', '.join(sorted(skipped))}."]
    return "\n".join(lines + ["", END]) + "\n"


def write_section(path, text):
    """Put ``text`` (with its markers) into ``path``, replacing an earlier section."""
    p = pathlib.Path(path)
    old = p.read_text() if p.exists() else ""
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        old = head + rest.split(END, 1)[1].lstrip("\n")
    p.write_text(old.rstrip("\n") + "\n\n" + text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=tx.get_num_threads())
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--min-time", type=float, default=0.05)
    p.add_argument("--ops", default="", help="comma-separated op names (default: all)")
    p.add_argument("--out", default=str(_HERE / "results.md"))
    args = p.parse_args(argv)
    import torch

    tx.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    ops = {o.strip() for o in args.ops.split(",") if o.strip()}
    load0 = os.getloadavg()[0]
    rows, skipped = bench(ops, args.repeat, args.min_time)
    text = table(rows, skipped, args.threads, args.repeat, (load0, os.getloadavg()[0]))
    if args.out:
        write_section(args.out, text)
    print("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
