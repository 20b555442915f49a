"""Measured (not simulated) pipeline bubbles and DDP overlap, with compute replaced by waits.

Run ``python benchmarks/bench_pipeline_measured.py [-n 2 4] [--t-f 0.02]``: it launches itself
under mpiexec once per rank count. Each stage's compute is a fixed-duration ``time.sleep``
(forward ``t_f``, backward ``2 t_f``, divided by v when a rank holds v stages) in a custom
autograd Function, so ranks need no core each: what is measured is the REAL pipeline engine
(``tensorix.distributed.pipeline``'s schedules, its non-blocking sends and blocking receives
over MPI) waiting on its inputs, not compute contention. Per rank, the time spent inside the
waits is its busy time; the step's makespan is from the first rank leaving a barrier to the
last rank finishing ``step``; the bubble is ``1 - sum(busy) / (p * makespan)`` (the definition
``pipeline.simulate`` uses), against the theory (p-1)/(m+p-1), (p-1)/(v m+p-1) interleaved.

DDP overlap, the same way: L layers whose backward waits ``2 t_f`` each and whose gradients
are a few MB (one bucket per layer): backward alone, backward under DDP (each bucket
all-reduced non-blocking as backward produces it, the backend's progress thread testing it
meanwhile), the same with the progress thread left out (MPI then advances a bucket only when
DDP tests it), backward under ``no_sync`` followed by the same all-reduces one after another,
and those all-reduces alone (blocking; and non-blocking, started together); hidden = (after -
DDP) / comm. Each kind is timed in turn within every repeat (interleaved), with this process's
CPU time beside the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

SCHEDULES = (("GPipe", "ScheduleGPipe", 1), ("1F1B", "Schedule1F1B", 1),
             ("interleaved 1F1B", "ScheduleInterleaved1F1B", 2))


def _wait_layer(tx, busy):
    """A module whose forward sleeps ``t`` and backward ``2 t`` (seconds), adding the time
    actually slept to ``busy[0]``; output = input + the first element of a parameter of
    ``numel`` elements, so that gradients flow and the parameter gets a gradient of that size."""
    from tensorix import nn

    def nap(t):
        t0 = time.perf_counter()
        time.sleep(t)
        busy[0] += time.perf_counter() - t0

    class Wait(tx.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, t):
            ctx.t, ctx.shape = t, w.shape
            nap(t)
            return x + w.reshape(-1)[:1]

        @staticmethod
        def backward(ctx, g):
            nap(2 * ctx.t)
            gw = tx.zeros(ctx.shape, dtype=g.dtype)
            gw.reshape(-1)[:1] = g.sum()  # why: a full-size gradient, as a real layer's
            return g, gw, None

    class WaitLayer(nn.Module):
        def __init__(self, t, numel=1):
            super().__init__()
            self.t = t
            self.w = nn.Parameter(tx.zeros(numel))

        def forward(self, x):
            return Wait.apply(x, self.w, self.t)

    return WaitLayer


def pipeline_bubbles(tx, dist, t_f, micro, repeat):
    """Per schedule and m: this rank's busy seconds and its step (start, end), per repeat."""
    from tensorix import nn
    from tensorix.distributed import pipeline as pp

    rank, world = dist.get_rank(), dist.get_world_size()
    busy = [0.0]
    WaitLayer = _wait_layer(tx, busy)
    rows = []
    for name, cls, v in SCHEDULES:
        for m in micro:
            ids = [rank + c * world for c in range(v)]
            # each rank does the same work whatever v: a stage waits t_f / v per forward
            stages = [pp.PipelineStage(WaitLayer(t_f / v), s, world * v) for s in ids]
            sched = getattr(pp, cls)(stages if v > 1 else stages[0], m,
                                     nn.functional.mse_loss)
            x, y = tx.zeros(m, 2), tx.zeros(m, 2)  # tiny: communication is latency only
            runs = []
            for _ in range(repeat + 1):  # the first is a warm-up
                busy[0] = 0.0
                dist.barrier()
                t0 = time.perf_counter()  # CLOCK_MONOTONIC: one clock for all local ranks
                sched.step(x if 0 in ids else None, target=y)
                runs.append((busy[0], t0, time.perf_counter()))
            rows.append({"schedule": name, "v": v, "m": m, "runs": runs[1:]})
    return rows


def ddp_overlap(tx, dist, t_f, layers, numel, repeat, interval=None):
    """Backward seconds (and this process's CPU seconds): alone, under DDP with the progress
    thread testing the open buckets (the default), under DDP without it, backward then the
    all-reduces, all-reduces alone (blocking, and non-blocking started together then waited
    for); and the progress thread's CPU seconds per DDP backward."""
    from tensorix import nn
    from tensorix.distributed import _c10d
    from tensorix.nn.parallel import DistributedDataParallel as DDP

    WaitLayer = _wait_layer(tx, [0.0])
    net = nn.Sequential(*[WaitLayer(t_f, numel) for _ in range(layers)])
    model = DDP(net, bucket_cap_mb=numel * 4 / 2**20)  # one bucket per layer
    buckets = [list(b.params) for b in model._buckets]
    assert len(buckets) == layers, f"expected one DDP bucket per layer, got {len(buckets)}"
    progress = _c10d._state.progress
    assert progress is not None and progress.threaded, \
        "expected the mpi backend to run a progress thread"
    if interval is not None:
        progress.interval = interval

    x = tx.zeros(2, 1)
    kinds = ("alone", "ddp", "ddp_no_thread", "after")
    times = {k: [] for k in (*kinds, "comm", "comm_async")}
    cpu = {k: [] for k in (*kinds, "thread")}
    for _ in range(repeat + 1):
        for kind in kinds:  # interleaved, so that a change in load hits every kind alike
            model.zero_grad()
            # why swap: the same DDP object, with Works registered with the thread or not
            _c10d._state.progress = None if kind == "ddp_no_thread" else progress
            if kind == "alone":
                out = net(x).sum()
            elif kind.startswith("ddp"):
                out = model(x).sum()
            else:
                with model.no_sync():
                    out = model(x).sum()
            dist.barrier()
            t0, c0, th0 = time.perf_counter(), time.process_time(), progress.cpu_seconds()
            out.backward()
            if kind == "after":
                t1 = time.perf_counter()
                for b in buckets:
                    flat = tx.cat([p.grad.reshape(-1) for p in b])
                    dist.all_reduce(flat)
                times["comm"].append(time.perf_counter() - t1)
            times[kind].append(time.perf_counter() - t0)
            cpu[kind].append(time.process_time() - c0)
            if kind == "ddp":
                cpu["thread"].append(progress.cpu_seconds() - th0)
            if kind == "after":
                # the same all-reduces non-blocking, as DDP issues them, then waited for:
                # tells a slower non-blocking algorithm apart from a lack of overlap
                flats = [tx.cat([p.grad.reshape(-1) for p in b]) for b in buckets]
                dist.barrier()
                t2 = time.perf_counter()
                for w in [dist.all_reduce(f, async_op=True) for f in flats]:
                    w.wait()
                times["comm_async"].append(time.perf_counter() - t2)
    _c10d._state.progress = progress
    out = {k: statistics.median(v[1:]) for k, v in times.items()}
    out.update({f"cpu_{k}": statistics.median(v[1:]) for k, v in cpu.items()})
    return out


def worker(out, t_f, micro, repeat, layers, numel, interval=None):
    import tensorix as tx
    import tensorix.distributed as dist

    dist.init_process_group("mpi")
    rank = dist.get_rank()
    rows = {"pipeline": pipeline_bubbles(tx, dist, t_f, micro, repeat)}
    if layers:
        rows["ddp"] = ddp_overlap(tx, dist, t_f, layers, numel, repeat, interval)
    with open(os.path.join(out, f"rank{rank}.json"), "w") as fh:
        json.dump(rows, fh)


def bubbles(ranks):
    """Rows (schedule, v, m, p, measured median, min, max, theory, excess seconds per step over
    the theory's makespan, the least busy seconds of any rank in any step) from every rank's
    runs."""
    p = len(ranks)
    out = []
    for i, row in enumerate(ranks[0]["pipeline"]):
        m, v = row["m"], row["v"]
        theory = (p - 1) / (v * m + p - 1)
        fr, excess = [], []
        for k in range(len(row["runs"])):
            runs = [r["pipeline"][i]["runs"][k] for r in ranks]
            makespan = max(e for _, _, e in runs) - min(s for _, s, _ in runs)
            busy = sum(b for b, _, _ in runs)
            fr.append(1.0 - busy / (p * makespan))
            # why: the makespan the theory gives for the waits as actually slept; the rest is
            # the engine's own time and message latency on the critical path
            excess.append(makespan - busy / p / (1.0 - theory))
        out.append({"schedule": row["schedule"], "v": v, "m": m, "p": p,
                    "measured": statistics.median(fr), "min": min(fr), "max": max(fr),
                    "theory": theory, "excess": statistics.median(excess),
                    "busy": min(b for r in ranks for b, _, _ in r["pipeline"][i]["runs"])})
    return out


def run(n, t_f=0.02, micro=(4, 8), repeat=3, layers=4, numel=2**20, timeout=600,
        interval=None):
    """Launch the worker on ``n`` ranks; return (bubble rows, DDP overlap dict or None).
    ``micro=()`` skips the pipelines; ``interval``: the progress thread's (seconds)."""
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(
                       os.path.abspath(__file__))), os.environ.get("PYTHONPATH", "")]))
        subprocess.run(["mpiexec", "--oversubscribe", "-n", str(n), sys.executable,
                        os.path.abspath(__file__), "--worker", out, "--t-f", str(t_f),
                        "--micro", *map(str, micro), "--repeat", str(repeat),
                        "--layers", str(layers), "--numel", str(numel),
                        *(["--interval", str(interval)] if interval else [])],
                       check=True, env=env, timeout=timeout)
        ranks = []
        for r in range(n):
            with open(os.path.join(out, f"rank{r}.json")) as fh:
                ranks.append(json.load(fh))
    return bubbles(ranks), ranks[0].get("ddp")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--t-f", type=float, default=0.02, help="forward wait per rank (s)")
    ap.add_argument("--micro", type=int, nargs="*", default=[4, 8],
                    help="micro-batch counts (none: skip the pipelines)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--layers", type=int, default=4, help="DDP layers (0: skip DDP)")
    ap.add_argument("--numel", type=int, default=2**20, help="float32 gradient per layer")
    ap.add_argument("--interval", type=float, default=None,
                    help="the MPI progress thread's sleep between polls (s)")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.t_f, args.micro, args.repeat, args.layers, args.numel,
                      args.interval)
    print(f"compute = waits: forward {1e3 * args.t_f:.0f} ms, backward twice that, per rank; "
          f"bubble = 1 - busy / (p * makespan), median of {args.repeat} steps [min, max]")
    print("| schedule | p | m | measured bubble | theory | excess ms/step |")
    print("|---|---|---|---|---|---|")
    ddp = {}
    for n in args.n:
        rows, ddp[n] = run(n, args.t_f, args.micro, args.repeat, args.layers, args.numel,
                           interval=args.interval)
        for r in rows:
            name = r["schedule"] + (f" (v={r['v']})" if r["v"] > 1 else "")
            print(f"| {name} | {r['p']} | {r['m']} | {r['measured']:.3f} "
                  f"[{r['min']:.3f}, {r['max']:.3f}] | {r['theory']:.3f} | "
                  f"{1e3 * r['excess']:.0f} |")
    if args.layers:
        mb = args.numel * 4 / 2**20
        print(f"\nDDP overlap: {args.layers} layers, backward {2e3 * args.t_f:.0f} ms each, "
              f"{mb:.0f} MB gradient each (one bucket per layer); rank 0, ms, median")
        print("| ranks | backward alone | backward, then all-reduces | all-reduces alone | "
              "non-blocking all-reduces alone | under DDP, no progress thread (hidden) | "
              "under DDP (hidden) | CPU ms: alone / DDP no thread / DDP (the thread's) |")
        print("|---|---|---|---|---|---|---|---|")
        for n, o in ddp.items():
            def hid(k, o=o):
                return 100 * (o["after"] - o[k]) / o["comm"] if o["comm"] else 0.0
            print(f"| {n} | {1e3 * o['alone']:.0f} | {1e3 * o['after']:.0f} | "
                  f"{1e3 * o['comm']:.0f} | {1e3 * o['comm_async']:.0f} | "
                  f"{1e3 * o['ddp_no_thread']:.0f} ({hid('ddp_no_thread'):.0f}%) | "
                  f"{1e3 * o['ddp']:.0f} ({hid('ddp'):.0f}%) | "
                  f"{1e3 * o['cpu_alone']:.1f} / {1e3 * o['cpu_ddp_no_thread']:.1f} / "
                  f"{1e3 * o['cpu_ddp']:.1f} ({1e3 * o['cpu_thread']:.1f}) |")

if __name__ == "__main__":
    main()
