"""Data-parallel memory and traffic per rank: DDP (ZeRO-0), ZeRO-1, ZeRO-2 and ZeRO-3.

Run ``python benchmarks/bench_sharded.py [-n 4]``: it launches itself under mpiexec. Each rank
trains the demo's CharGPT (d=256, 4 layers) for a few Adam steps under each scheme and reports

- the bytes it keeps between steps: parameters, gradients and optimizer state;
- the peak bytes during a step (tensorix.memory: array data plus Python objects);
- the payload it hands to each collective per step (tensorix.distributed.traffic), turned into
  ring-algorithm bytes sent per rank, next to the theory in units of the parameter bytes P:
  all-reduce 2(N-1)/N P, all-gather and reduce-scatter (N-1)/N P each;
- the time per step.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

STEPS, BATCH, CONTEXT = 3, 8, 64


def _ring_bytes(traffic, world):
    """Bytes this rank sends per the ring algorithms, from the payload given to each call."""
    f = (world - 1) / world
    sent = 0.0
    for what, (_, nbytes) in traffic.items():
        if what == "all_reduce":
            sent += 2 * f * nbytes
        elif what in ("all_gather_into_tensor", "reduce_scatter_tensor"):
            sent += (world - 1) * nbytes  # the payload counted is this rank's part
        elif what == "broadcast":
            sent += f * nbytes
    return sent


def _held(params, opt):
    """Bytes of parameters, gradients and optimizer state this rank keeps."""
    p = sum(t._data.nbytes for t in params)
    g = sum(t.grad._data.nbytes for t in params if t.grad is not None)
    s = sum(v._data.nbytes for st in opt.state.values() for v in st.values()
            if hasattr(v, "_data") and v.dim() > 0)
    return p, g, s


def worker(out):
    import tensorix as tx
    import tensorix.distributed as dist
    from tensorix.demo import Block, CharGPT
    from tensorix.distributed.fsdp import FullyShardedDataParallel as FSDP
    from tensorix.distributed.fsdp import ModuleWrapPolicy, ShardingStrategy
    from tensorix.distributed.optim import ZeroRedundancyOptimizer
    from tensorix.nn import functional as F
    from tensorix.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(rank)
    x = tx.tensor(rng.integers(0, 65, (BATCH, CONTEXT)))
    y = tx.tensor(rng.integers(0, 65, (BATCH, CONTEXT)))
    rows = {}
    for scheme in ("DDP (ZeRO-0)", "ZeRO-1", "ZeRO-2", "ZeRO-3"):
        tx.manual_seed(0)
        net = CharGPT(65, CONTEXT, d_model=256, n_heads=4, n_layers=4)
        total = sum(p.numel() * 4 for p in net.parameters())
        if scheme.startswith("DDP") or scheme == "ZeRO-1":
            model = DDP(net)
            params = list(model.parameters())
            opt = tx.optim.Adam(params, lr=1e-3) if scheme.startswith("DDP") else \
                ZeroRedundancyOptimizer(params, tx.optim.Adam, lr=1e-3)
        else:
            strategy = ShardingStrategy.SHARD_GRAD_OP if scheme == "ZeRO-2" else \
                ShardingStrategy.FULL_SHARD
            model = FSDP(net, sharding_strategy=strategy,
                         auto_wrap_policy=ModuleWrapPolicy({Block}))
            params = list(model.parameters())
            opt = tx.optim.Adam(params, lr=1e-3)
        times = []
        for step in range(STEPS):
            if step == STEPS - 1:
                dist.traffic(reset=True)
            dist.barrier()
            t0 = time.perf_counter()
            with tx.memory.track() as mem:
                opt.zero_grad()
                loss = F.cross_entropy(model(x).reshape(-1, 65), y.reshape(-1))
                loss.backward()
                opt.step()
            times.append(time.perf_counter() - t0)
        traffic = dist.traffic(reset=True)
        traffic.pop("barrier", None)
        rows[scheme] = dict(P=total, held=_held(params, opt), peak=mem.peak,
                            sent=_ring_bytes(traffic, world), step_ms=1e3 * min(times),
                            calls={k: v[0] for k, v in traffic.items()})
    with open(os.path.join(out, f"rank{rank}.json"), "w") as fh:
        json.dump(rows, fh)


THEORY = {"DDP (ZeRO-0)": "2(N-1)/N", "ZeRO-1": "2(N-1)/N + (N-1)/N",
          "ZeRO-2": "(N-1)/N + (N-1)/N", "ZeRO-3": "2(N-1)/N + (N-1)/N"}
FACTOR = {"DDP (ZeRO-0)": 2, "ZeRO-1": 3, "ZeRO-2": 2, "ZeRO-3": 3}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=4)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker)
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
        subprocess.run(["mpiexec", "--oversubscribe", "-n", str(args.n), sys.executable,
                        __file__, "--worker", out], check=True, env=env)
        ranks = []
        for r in range(args.n):
            with open(os.path.join(out, f"rank{r}.json")) as fh:
                ranks.append(json.load(fh))
    n = args.n
    print(f"CharGPT d=256, 4 layers, {n} ranks, batch {BATCH}x{CONTEXT} per rank, Adam; "
          "rank 0's numbers (MiB), sent = ring bytes per step")
    print("| scheme | params | grads | optim state | held total | peak in step | sent | "
          "theory sent (xP) | ms/step |")
    print("|---|---|---|---|---|---|---|---|---|")
    for scheme, row in ranks[0].items():
        p, g, s = (b / 2**20 for b in row["held"])
        theory = FACTOR[scheme] * (n - 1) / n * row["P"] / 2**20
        print(f"| {scheme} | {p:.2f} | {g:.2f} | {s:.2f} | {p + g + s:.2f} | "
              f"{row['peak'] / 2**20:.2f} | {row['sent'] / 2**20:.2f} | {THEORY[scheme]} = "
              f"{theory:.2f} | {row['step_ms']:.0f} |")


if __name__ == "__main__":
    main()
