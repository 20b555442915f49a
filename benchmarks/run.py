"""The tensorix-vs-PyTorch benchmark suite: ``python benchmarks/run.py``.

Runs every workload of ``workloads.py`` (float32, CPU) in one process per framework, both with
the same thread count (``tensorix.set_num_threads`` and ``torch.set_num_threads``; no
environment variable), and writes
a markdown table of median and min time per iteration and the tensorix/torch ratio of medians
to ``benchmarks/results.md`` (and stdout).

How it measures, for a shared and noisy machine:

* the two worker processes stay alive for the whole run and take turns: each round runs one
  timed sample of the case in each process (the first to go alternates), so a load change hits
  both alike; the idle process is blocked reading its stdin;
* a sample is ``n`` back-to-back calls, ``n`` chosen per framework so that a sample lasts about
  ``--min-time`` seconds; the per-iteration time of a sample is its wall time over ``n``; the
  table gives the median and the min over ``--repeat`` rounds;
* the training cases first check correctness: torch initialises the model, its weights go to
  the tensorix process through a ``.npz`` file, both train two steps on the same two batches and
  print their losses, which must agree (relative difference below ``--loss-rtol``).

Options: ``--threads N`` (default: the cores this process may use, both frameworks' default),
``--background-load N`` (start N CPU-bound processes for the run and stop them after: the
defaults must be fast on a busy machine), ``--repeat``, ``--min-time``, ``--cases a,b``,
``--quick``,
``--native-blas`` (unset OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for the two workers only, so
a current OpenBLAS picks its own kernel; the table header says which kernel ran).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

_HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
from workloads import CASES, TRAIN  # noqa: E402

FRAMEWORKS = ("tensorix", "torch")
# target: the largest allowed median ratio tensorix/torch (issue 3)
TARGETS = {"matmul_1024": 1.05, "matmul_256": 1.05, "einsum_bmm": 1.05, "einsum_chain": 1.05,
           "mlp_step": 1.05, "add_overhead": 1.0, "gpt_step": 1.2, "cnn_step": 1.5,
           "gelu_fwd": 1.3, "gelu_fwd_bwd": 1.3, "add_overhead_no_grad": 1.0,
           "gelu_exact_fwd": 2.0}


class Worker:
    """A framework's benchmark process, spoken to in JSON lines."""

    def __init__(self, framework, threads, env):
        self.framework = framework
        self.proc = subprocess.Popen(
            [sys.executable, str(_HERE / "_worker.py"), framework, str(threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True, bufsize=1)

    def ask(self, **cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.framework} worker died (see its stderr above)")
        ans = json.loads(line)
        if "error" in ans:
            raise RuntimeError(f"{self.framework} worker, {cmd}: {ans['error']}")
        return ans

    def close(self):
        try:
            self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait(timeout=60)


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class BackgroundLoad:
    """``n`` CPU-bound processes (busy Python loops) for the length of a ``with`` block."""

    def __init__(self, n):
        self.procs = []
        self.n = n

    def __enter__(self):
        loop = "while True:\n    pass"
        self.procs = [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(self.n)]
        return self

    def __exit__(self, *exc):
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            proc.wait(timeout=30)


def _env(threads, native_blas):
    env = dict(os.environ)
    if native_blas:
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_HERE.parent),
                                                      env.get("PYTHONPATH")]))
    return env


def _loss_check(case, losses, rtol):
    ref, got = losses["torch"], losses["tensorix"]
    diff = max(abs(a - b) / max(abs(a), 1e-12) for a, b in zip(ref, got))
    ok = len(ref) == len(got) == 2 and diff <= rtol
    print(f"  losses {case}: torch {ref[0]:.6f} {ref[1]:.6f} | tensorix {got[0]:.6f} "
          f"{got[1]:.6f} | max rel diff {diff:.1e} {'OK' if ok else 'MISMATCH'}", flush=True)
    return {"torch": ref, "tensorix": got, "rel_diff": diff, "ok": ok}


def run_case(workers, case, args, tmp):
    """Set the case up in both workers, then interleave timed samples; returns a result dict."""
    npz = os.path.join(tmp, f"{case}.npz")
    setup = {}
    for fw in ("torch", "tensorix"):  # torch first: it makes the weights tensorix loads
        setup[fw] = workers[fw].ask(op="setup", case=case, save=npz if fw == "torch" else None,
                                    load=npz if fw == "tensorix" and case in TRAIN else None)
    res = {"case": case, "per_iter": {fw: [] for fw in FRAMEWORKS},
           "cpu": {fw: [] for fw in FRAMEWORKS}}
    if case in TRAIN:
        res["losses"] = _loss_check(case, {fw: setup[fw]["losses"] for fw in FRAMEWORKS},
                                    args.loss_rtol)
    n = {fw: max(1, round(args.min_time / max(setup[fw]["t1"], 1e-9))) for fw in FRAMEWORKS}
    per_call = setup["torch"]["per_call"]
    for r in range(args.repeat):
        order = FRAMEWORKS if r % 2 == 0 else FRAMEWORKS[::-1]
        for fw in order:
            if args.settle:  # let the other process's BLAS/OpenMP threads stop spinning
                time.sleep(args.settle)
            ans = workers[fw].ask(op="time", case=case, n=n[fw])
            res["per_iter"][fw].append(ans["seconds"] / (n[fw] * per_call))
            res["cpu"][fw].append(ans["cpu"] / (n[fw] * per_call))
    for fw in FRAMEWORKS:
        workers[fw].ask(op="drop", case=case)
    res["n"] = n
    res["unit"] = "us/op" if per_call > 1 else "ms"
    return res


def _fmt(seconds, unit):
    return f"{seconds * (1e6 if unit == 'us/op' else 1e3):.3f}"


def _row(res):
    if "error" in res:
        return f"| {CASES[res['case']]} | failed: {res['error']} |" + " |" * 7
    case, unit, t = res["case"], res["unit"], res["per_iter"]
    med = {fw: statistics.median(t[fw]) for fw in FRAMEWORKS}
    ratio = med["tensorix"] / med["torch"]
    target = TARGETS.get(case)
    met = "" if target is None else ("yes" if ratio <= target else "**no**")
    cells = [CASES[case], unit]
    for fw in FRAMEWORKS:
        cells += [_fmt(med[fw], unit), _fmt(min(t[fw]), unit)]
    cells += [f"{ratio:.2f}", f"<= {target}" if target else "", met]
    return "| " + " | ".join(cells) + " |"


def _blas_line(info):
    parts = []
    for d in info.get("blas", []):
        if "internal_api" in d:
            arch = f" {d['architecture']}" if d.get("architecture") else ""
            parts.append(f"{d['internal_api']}{arch} ({d['num_threads']} threads)")
    return ", ".join(parts) or "unknown"


def _machine():
    model = platform.processor() or "?"
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} logical CPUs"


def report(results, infos, args, load_before, load_after):
    cmd = " ".join(["python benchmarks/run.py"] + sys.argv[1:])
    lines = [
        "# tensorix vs PyTorch: benchmark results", "",
        f"Generated by `{cmd}` on {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}.", "",
        f"- machine: {_machine()}; load average before {load_before}, after {load_after}",
        f"- threads: {args.threads} per framework (tensorix.set_num_threads, "
        "torch.set_num_threads; no environment variable); background load: "
        f"{args.background_load} CPU-bound processes",
        f"- tensorix {infos['tensorix']['version']} on NumPy {infos['tensorix']['numpy']}, BLAS: "
        f"{_blas_line(infos['tensorix'])}",
        f"- torch {infos['torch']['version']}, built with {infos['torch'].get('own_blas') or '?'}"
        f"; threadpools seen: {_blas_line(infos['torch'])}",
        f"- OPENBLAS_CORETYPE={infos['tensorix']['env']['OPENBLAS_CORETYPE']}, "
        f"OPENBLAS_L2_SIZE={infos['tensorix']['env']['OPENBLAS_L2_SIZE']} in the workers",
        f"- {args.repeat} interleaved rounds per case, samples of about {args.min_time}s"
        f"{f', {args.settle}s pause before each' if args.settle else ''}; float32 throughout",
        "",
        "| workload | unit | tensorix median | tensorix min | torch median | torch min | "
        "ratio (median) | target | met |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [_row(r) for r in results]
    lines += ["", "Process CPU time per iteration (median; with one thread this leaves out time "
              "spent waiting for a core, so it is steadier on a loaded machine):", "",
              "| workload | unit | tensorix CPU median | torch CPU median | ratio |",
              "|---|---|---|---|---|"]
    for r in results:
        if "error" not in r:
            cpu = {fw: statistics.median(r["cpu"][fw]) for fw in FRAMEWORKS}
            lines.append(f"| {CASES[r['case']]} | {r['unit']} | "
                         f"{_fmt(cpu['tensorix'], r['unit'])} | {_fmt(cpu['torch'], r['unit'])} "
                         f"| {cpu['tensorix'] / cpu['torch']:.2f} |")
    trained = [r for r in results if "losses" in r]
    if trained:
        lines += ["", "First two training losses from identical weights and batches:", "",
                  "| workload | torch loss 1 | torch loss 2 | tensorix loss 1 | tensorix loss 2 "
                  "| max rel diff | agree |", "|---|---|---|---|---|---|---|"]
        for r in trained:
            lo = r["losses"]
            lines.append(f"| {r['case']} | {lo['torch'][0]:.6f} | {lo['torch'][1]:.6f} | "
                         f"{lo['tensorix'][0]:.6f} | {lo['tensorix'][1]:.6f} | "
                         f"{lo['rel_diff']:.1e} | {'yes' if lo['ok'] else '**no**'} |")
    return "\n".join(lines) + "\n"


def _loadavg():
    try:
        return " ".join(pathlib.Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=_cores())
    p.add_argument("--background-load", type=int, default=0,
                   help="CPU-bound processes to run beside the benchmark")
    p.add_argument("--repeat", type=int, default=15, help="interleaved rounds per case")
    p.add_argument("--min-time", type=float, default=0.1, help="seconds per timed sample")
    p.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    p.add_argument("--quick", action="store_true", help="3 rounds of short samples")
    p.add_argument("--native-blas", action="store_true",
                   help="unset OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for the workers")
    p.add_argument("--settle", type=float, default=None,
                   help="seconds to pause before each sample (default 0, or 0.2 with more "
                        "than one thread: idle BLAS/OpenMP threads of the other process spin)")
    p.add_argument("--loss-rtol", type=float, default=1e-3)
    p.add_argument("--out", default=str(_HERE / "results.md"))
    args = p.parse_args(argv)
    if args.quick:
        args.repeat, args.min_time = 3, 0.02
    if args.settle is None:
        args.settle = 0.2 if args.threads > 1 else 0.0
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        p.error(f"unknown case(s) {unknown}; known: {', '.join(CASES)}")
    env = _env(args.threads, args.native_blas)
    workers = {fw: Worker(fw, args.threads, env) for fw in FRAMEWORKS}
    load_before = _loadavg()
    results, bad = [], []
    try:
        with BackgroundLoad(args.background_load):
            infos = _run_all(workers, cases, args, results, bad)
    finally:
        for w in workers.values():
            w.close()
    text = report(results, infos, args, load_before, _loadavg())
    out = pathlib.Path(args.out)
    old = out.read_text() if out.exists() else ""
    marker = "<!-- bench_elementwise: begin -->"  # bench_elementwise.py's table is kept
    out.write_text(text + ("\n" + marker + old.split(marker, 1)[1] if marker in old else ""))
    print("\n" + text)
    if bad:
        print(f"failed or losses disagree with torch: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


def _run_all(workers, cases, args, results, bad):
    """Every case in turn; results and failed case names are appended. Returns the infos."""
    infos = {fw: workers[fw].ask(op="info") for fw in FRAMEWORKS}
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            print(f"{case}: {CASES[case]}", flush=True)
            try:
                res = run_case(workers, case, args, tmp)
            except RuntimeError as e:  # a broken case is reported, the others still run
                print(f"  FAILED: {e}", file=sys.stderr, flush=True)
                bad.append(case)
                results.append({"case": case, "error": str(e).splitlines()[-1]})
                continue
            print("  " + _row(res), flush=True)
            results.append(res)
            if "losses" in res and not res["losses"]["ok"]:
                bad.append(case)
    return infos


if __name__ == "__main__":
    sys.exit(main())
