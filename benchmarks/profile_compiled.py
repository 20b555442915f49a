"""Per-step CPU time of the compiled GPT training step: ``python benchmarks/profile_compiled.py``.

Builds the whole compiled step of ``bench_compile.gpt_case`` (1 thread), settles its kernels,
then wraps every closure of every ``CompiledGraph`` it ran (the forward and backward graphs,
tensorix._compile.executor) with a CPU timer and prints the costliest steps, summed over
``--n`` steps and by kind ("group" = a fused kernel, "call" = a primitive's ``apply``, the
executor's view and GEMM steps by name). The timer adds ~1 us per step (~400 steps), so small
totals are upper bounds. ``--top`` steps are listed, each with its node or group.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))


def _label(graph, step):
    kind = step[0]
    if kind == "group":
        group = graph.groups[step[1]]
        ops = collections.Counter(getattr(n.op, "__name__", str(n.op)) for n in group.nodes)
        shape = group.nodes[-1].meta.get("shape")
        return "group", f"group {step[1]} {shape} " + ",".join(f"{k}x{v}" for k, v in
                                                                ops.most_common(6))
    if kind == "call":
        op = step[2].__self__.__name__
        return op, f"call {op} #{step[1]}"
    return kind, f"{kind} #{step[1]}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=30, help="steps timed")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)

    import bench_compile as bc

    import tensorix as tx
    from tensorix._compile import executor

    tx.set_num_threads(1)
    graphs = []
    init = executor.CompiledGraph.__init__

    def record(self, *a, **k):
        init(self, *a, **k)
        graphs.append(self)

    executor.CompiledGraph.__init__ = record
    step, _, _ = bc.gpt_case(tx, True, compile_fn=tx.compile, whole=True)
    bc.settle(step)
    for _ in range(3):
        step()
    totals = {}
    for gi, g in enumerate(graphs):
        runs = g._runs
        for si, (run, st) in enumerate(zip(runs, g._steps)):
            kind, label = _label(g, st)
            key = (gi, si)
            totals[key] = [0.0, kind, f"g{gi} " + label]

            def timed(env, run=run, cell=totals[key], clock=time.thread_time):
                t = clock()
                run(env)
                cell[0] += clock() - t
            runs[si] = timed
    c0 = time.thread_time()
    for _ in range(args.n):
        step()
    whole = (time.thread_time() - c0) / args.n * 1e3
    per = {k: v[0] / args.n * 1e3 for k, v in totals.items()}
    by_kind = collections.Counter()
    for k, v in totals.items():
        by_kind[v[1]] += per[k]
    inside = sum(per.values())
    print(f"step: {whole:.2f} ms CPU (calling thread), {inside:.2f} inside executor steps, "
          f"{sum(len(g._runs) for g in graphs)} steps in {len(graphs)} graphs")
    print("by kind (ms per step):")
    for kind, t in by_kind.most_common():
        print(f"  {kind:20s} {t:7.3f}")
    print(f"top {args.top} steps (ms per step):")
    for k in sorted(per, key=per.get, reverse=True)[:args.top]:
        print(f"  {per[k]:7.3f}  {totals[k][2]}")
    print(f"load average: {pathlib.Path('/proc/loadavg').read_text().split()[:3]}")


if __name__ == "__main__":
    main()
